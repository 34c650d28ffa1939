//! `openai:<model>`: any OpenAI-compatible chat-completions endpoint (OpenAI, DeepSeek,
//! Together, vLLM, llama.cpp's server, Ollama's `/v1`…).
//!
//! Two concerns live apart: [`crate::http`] (endpoint, retries, secret
//! redaction, rate limits, the cached POST; shared with the embedder) and [`wire`] (the
//! request and reply JSON, native and prompted tool calling). This module joins them
//! into a [`ChatModel`]. The `sim` side channel of a request is never read for anything
//! but the episode seed, and never serialised.

pub mod wire;

pub use wire::{
    ParsedReply, ToolFormat, UnknownToolFormat, parse_chat_body, parse_prompted_calls,
    prompted_tools_text,
};

use super::tokens::TokenCounter;
use super::{ChatModel, ChatReply, ChatRequest, ModelError, ToolSchema};
use crate::http::Endpoint;
use crate::http::cache::Cache;
use async_trait::async_trait;
use serde_json::{Map, Value, json};
use sieve_record::{Message, ModelIdentity, Role, Usage};
use std::sync::Arc;

/// The user message of the pre-flight request (test servers recognise it).
pub const PREFLIGHT_PROMPT: &str = "Are you ready?";

/// Generation settings of one `openai:` model.
#[derive(Clone, Debug)]
pub struct ChatOptions {
    pub model: String,
    pub max_tokens: u32,
    pub temperature: f64,
    /// Fixed sampling seed; `None` sends one derived from the episode seed.
    pub seed: Option<u64>,
    pub extra_body: Map<String, Value>,
    pub tool_format: ToolFormat,
}

impl ChatOptions {
    pub fn new(model: impl Into<String>) -> Self {
        ChatOptions {
            model: model.into(),
            max_tokens: 2048,
            temperature: 0.0,
            seed: None,
            extra_body: Map::new(),
            tool_format: ToolFormat::Native,
        }
    }
}

/// A chat model behind an OpenAI-compatible endpoint.
pub struct OpenAiModel {
    name: String,
    endpoint: Arc<Endpoint>,
    opts: ChatOptions,
    tokens: Arc<TokenCounter>,
    cache: Option<Arc<Cache>>,
}

impl OpenAiModel {
    pub fn new(
        name: impl Into<String>,
        endpoint: Arc<Endpoint>,
        opts: ChatOptions,
        tokens: Arc<TokenCounter>,
        cache: Option<Arc<Cache>>,
    ) -> Self {
        OpenAiModel {
            name: name.into(),
            endpoint,
            opts,
            tokens,
            cache,
        }
    }

    /// The request body for `req`; also what the cache key hashes.
    pub fn body(&self, req: &ChatRequest<'_>) -> Value {
        let seed = self.opts.seed.or(req.seed).map(|s| s & 0x7FFF_FFFF);
        wire::request_body(
            &self.opts.model,
            req.messages,
            req.tools,
            self.opts.tool_format,
            self.opts.temperature,
            self.opts.max_tokens,
            seed,
            &self.opts.extra_body,
        )
    }
}

const CHAT_PATH: &str = "chat/completions";

/// The most prompt tokens a request of `body` could hold: a token carries at least one
/// byte of the text sent, and a chat template adds far fewer than this margin.
const PROMPT_MARGIN: u64 = 4096;

/// Refuses reported usage above what the request allowed: more completion tokens than its
/// `max_tokens`, or more prompt tokens than the request has bytes (plus a template's
/// margin). A reply claiming more is an error for that call, so a budget is never charged
/// what a reply could not have cost (and a run is never stopped by such a claim).
fn check_usage(prompt: u64, completion: u64, body: &Value, max_tokens: u32) -> Result<(), String> {
    if completion > u64::from(max_tokens) {
        return Err(format!(
            "the reply's usage claims {completion} completion tokens where the request allowed at most {max_tokens} (max_tokens); refused"
        ));
    }
    let bytes = body.to_string().len() as u64;
    if prompt > bytes + PROMPT_MARGIN {
        return Err(format!(
            "the reply's usage claims {prompt} prompt tokens for a request of {bytes} bytes; refused"
        ));
    }
    Ok(())
}

#[async_trait]
impl ChatModel for OpenAiModel {
    fn name(&self) -> &str {
        &self.name
    }

    fn simulated(&self) -> bool {
        false
    }
    fn identity(&self) -> ModelIdentity {
        ModelIdentity::new(serde_json::json!({
            "name": self.name,
            "base_url": self.endpoint.config().base_url,
            "model": self.opts.model,
            "tool_format": self.opts.tool_format,
            "temperature": self.opts.temperature,
            "max_tokens": self.opts.max_tokens,
            "seed": self.opts.seed,
            "extra_body": self.opts.extra_body,
        }))
    }

    async fn preflight(&self, tools: &[ToolSchema]) -> Result<Vec<String>, ModelError> {
        if self.cache.as_ref().is_some_and(|c| c.replay()) {
            return Ok(Vec::new());
        }
        let messages = [
            Message::system("You are a pre-flight check. Reply with the word ready."),
            Message::user(PREFLIGHT_PROMPT),
        ];
        let req = ChatRequest {
            component: sieve_record::Component::Agent,
            messages: &messages,
            tools,
            json: false,
            seed: None,
            sim: None,
        };
        let mut body = self.body(&req);
        body["max_tokens"] = json!(16);
        let Some(reply) = self
            .endpoint
            .probe(CHAT_PATH, &body, &format!("model {}", self.name))
            .await?
        else {
            return Ok(Vec::new());
        };
        let mut warnings = Vec::new();
        let reported = reply
            .pointer("/usage/prompt_tokens")
            .and_then(Value::as_u64);
        if self.opts.tool_format == ToolFormat::Native
            && !tools.is_empty()
            && let Some(p) = reported
        {
            let bare = self.tokens.prompt(&messages, &[]);
            let schemas = self.tokens.prompt(&messages, tools).saturating_sub(bare);
            if schemas >= 50 && p < bare + schemas / 2 {
                warnings.push(format!(
                    "{}: the server counted {p} prompt tokens for a request whose {} tool schema(s) alone take about {schemas}; it seems to drop the tools (a chat template without tool support?), so the model would never see them. Try --tool-format prompted",
                    self.name,
                    tools.len()
                ));
            }
        }
        Ok(warnings)
    }

    async fn chat(&self, req: &ChatRequest<'_>) -> Result<ChatReply, ModelError> {
        let body = self.body(req);
        let step = req
            .messages
            .iter()
            .filter(|m| m.role == Role::Assistant)
            .count();
        let posted = self
            .endpoint
            .cached_post(
                self.cache.as_deref(),
                CHAT_PATH,
                &body,
                || {
                    if self.endpoint.limits_tokens() {
                        self.tokens.prompt(req.messages, req.tools)
                    } else {
                        0
                    }
                },
                |k, c| {
                    format!(
                        "no recorded reply for request {k} ({} message(s), model {}) in {}",
                        req.messages.len(),
                        self.opts.model,
                        c.dir().display()
                    )
                },
            )
            .await?;
        let (resp, retries, latency_ms) = (posted.body, posted.retries, posted.latency_ms);
        let parsed = parse_chat_body(&resp, self.opts.tool_format, step)
            .map_err(|e| ModelError::Request(format!("{}: {e}", self.endpoint.config().name)))?;
        if let Some((p, c, _)) = parsed.usage {
            check_usage(p, c, &body, self.opts.max_tokens).map_err(|e| {
                ModelError::Request(format!("{}: {e}", self.endpoint.config().name))
            })?;
        }
        let usage = match parsed.usage {
            Some((p, c, r)) => Usage {
                prompt_tokens: p,
                completion_tokens: c,
                reasoning_tokens: r,
                estimated: false,
            },
            None => {
                let reasoning = self.tokens.count(&parsed.reasoning);
                Usage {
                    prompt_tokens: self.tokens.prompt(req.messages, req.tools),
                    completion_tokens: self.tokens.message(&parsed.message).saturating_sub(4)
                        + reasoning,
                    reasoning_tokens: reasoning,
                    estimated: true,
                }
            }
        };
        if self.endpoint.limits_tokens() {
            self.endpoint.charge_tokens(usage.completion_tokens).await;
        }
        Ok(ChatReply {
            message: parsed.message,
            usage,
            latency_ms,
            finish_reason: parsed.finish_reason,
            retries,
            served_model: parsed.served_model,
        })
    }
}
