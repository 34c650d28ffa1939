//! `openai:<model>`: any OpenAI-compatible chat-completions endpoint (OpenAI, DeepSeek,
//! Together, vLLM, llama.cpp's server, Ollama's `/v1`…).
//!
//! The wire types are this project's own and deliberately tolerant: a tool call without
//! `type`, an unknown or missing `finish_reason`, `null` content, `reasoning_content`,
//! arguments sent as an object instead of a string, and a missing `usage` (then tokens are
//! counted locally and marked estimated) are all accepted. Arguments that are not valid
//! JSON are passed through untouched: the agent loop returns them to the model as a tool
//! error.
//!
//! Faults: 429, 408, 5xx, timeouts and dropped connections are retried with exponential
//! backoff and full jitter, honouring `Retry-After` (seconds or an HTTP date), up to
//! `max_retries` times. 401/403, and a 429 that says the quota is spent, are
//! [`ModelError::Fatal`] (the runner stops the whole run);
//! other 4xx fail the episode with the endpoint's message; a body that is not a
//! chat-completion reply fails the episode with its first bytes.
//!
//! The API key lives in a [`Secret`] whose `Debug` hides it, is sent in a header marked
//! sensitive, and is scrubbed from every error text; request bodies (which go to the
//! cache) never contain it. The `sim` side channel of a request is never read for
//! anything but the episode seed, and never serialised.

use super::cache::{self, Cache, Entry};
use super::tokens::TokenCounter;
use super::{
    ChatModel, ChatReply, ChatRequest, Message, ModelError, Role, ToolCall, ToolSchema, Usage,
};
use async_trait::async_trait;
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

/// A secret string (an API key). `Debug` never shows it.
#[derive(Clone)]
pub struct Secret(String);

impl Secret {
    pub fn new(s: impl Into<String>) -> Self {
        Secret(s.into())
    }
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

/// Removes the key, and anything that looks like a masked key (`sk-ab***yz`), from text
/// that may be shown or recorded.
pub fn redact(text: &str, key: Option<&Secret>) -> String {
    let mut out = match key {
        Some(k) if k.0.len() >= 4 => text.replace(&k.0, "[redacted]"),
        _ => text.to_string(),
    };
    if out.contains('*') {
        out = out
            .split_inclusive(char::is_whitespace)
            .map(|w| {
                let core = w.trim();
                if core.len() >= 8 && core.contains("**") {
                    let tail = &w[w.trim_end().len()..];
                    format!("[redacted]{tail}")
                } else {
                    w.to_string()
                }
            })
            .collect();
    }
    out
}

/// The user message of the pre-flight request (test servers recognise it).
pub const PREFLIGHT_PROMPT: &str = "Are you ready?";

/// How tools are offered to the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolFormat {
    /// The endpoint's native `tools` / `tool_calls`.
    #[default]
    Native,
    /// Tools described in the system prompt; calls parsed from a JSON block in the reply.
    Prompted,
}

impl std::str::FromStr for ToolFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "native" => Ok(ToolFormat::Native),
            "prompted" => Ok(ToolFormat::Prompted),
            o => Err(format!("unknown tool format `{o}`; use native or prompted")),
        }
    }
}

/// Transport settings of one endpoint.
#[derive(Clone, Debug)]
pub struct EndpointConfig {
    /// A label for messages (`openai`, or the name in `configs/models.toml`).
    pub name: String,
    /// Up to and including `/v1`, e.g. `https://api.openai.com/v1`.
    pub base_url: String,
    pub api_key: Option<Secret>,
    /// The variable the key came from, named in messages about bad credentials.
    pub api_key_env: String,
    pub request_timeout: Duration,
    pub max_retries: u32,
    /// First backoff delay; doubles per retry up to `backoff_cap`, with full jitter.
    pub backoff_base: Duration,
    pub backoff_cap: Duration,
    /// Longest `Retry-After` honoured as given.
    pub retry_after_cap: Duration,
    pub rpm: Option<u32>,
    pub tpm: Option<u32>,
}

impl EndpointConfig {
    pub fn new(base_url: impl Into<String>) -> Self {
        EndpointConfig {
            name: "openai".into(),
            base_url: base_url.into(),
            api_key: None,
            api_key_env: "OPENAI_API_KEY".into(),
            request_timeout: Duration::from_secs(120),
            max_retries: 6,
            backoff_base: Duration::from_millis(500),
            backoff_cap: Duration::from_secs(30),
            retry_after_cap: Duration::from_secs(300),
            rpm: None,
            tpm: None,
        }
    }
}

/// One endpoint: an HTTP client with its connection pool, and its rate limiters. Every
/// role and embedder that uses the same endpoint shares one, so limits hold per endpoint.
pub struct Endpoint {
    cfg: EndpointConfig,
    client: reqwest::Client,
    rpm: Option<DefaultDirectRateLimiter>,
    tpm: Option<DefaultDirectRateLimiter>,
    tpm_burst: u32,
    jitter_seq: AtomicU64,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint").field("cfg", &self.cfg).finish()
    }
}

/// A successful POST.
#[derive(Debug)]
pub struct Posted {
    pub body: Value,
    pub retries: u32,
    pub latency_ms: f64,
}

/// What one attempt produced.
enum Attempt {
    Done(Value),
    Retry {
        why: String,
        after: Option<Duration>,
    },
    Fail(ModelError),
}

/// Parses `Retry-After`: delta seconds (possibly fractional) or an HTTP date.
pub fn parse_retry_after(v: &str, now: SystemTime) -> Option<Duration> {
    let v = v.trim();
    if let Ok(s) = v.parse::<f64>() {
        return (s.is_finite() && s >= 0.0).then(|| Duration::from_secs_f64(s));
    }
    let when = httpdate::parse_http_date(v).ok()?;
    Some(when.duration_since(now).unwrap_or(Duration::ZERO))
}

fn truncate(s: &str, n: usize) -> String {
    if s.len() <= n {
        return s.to_string();
    }
    let mut end = n;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// The human message in an error body (`{"error": {"message": ...}}` and variants).
fn error_message(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    if let Ok(v) = serde_json::from_str::<Value>(&text) {
        let m = v
            .pointer("/error/message")
            .or_else(|| v.get("error").filter(|e| e.is_string()))
            .or_else(|| v.get("message"))
            .or_else(|| v.get("detail"));
        if let Some(m) = m {
            return truncate(m.as_str().map_or(&m.to_string(), |s| s), 500);
        }
    }
    let t = text.trim();
    if t.is_empty() {
        "(empty body)".into()
    } else {
        truncate(t, 500)
    }
}

/// Whether a 429 body says the account has no quota left (OpenAI's `insufficient_quota`),
/// as opposed to a rate limit that waiting lifts.
fn out_of_quota(body: &[u8]) -> bool {
    serde_json::from_slice::<Value>(body).is_ok_and(|v| {
        ["/error/code", "/error/type"]
            .iter()
            .any(|p| v.pointer(p).and_then(Value::as_str) == Some("insufficient_quota"))
    })
}

fn describe(e: &reqwest::Error) -> String {
    // Never print the URL's or headers' details beyond the kind of failure.
    let kind = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "connection failed"
    } else if e.is_body() || e.is_decode() {
        "connection dropped while reading the reply"
    } else if e.is_request() {
        "request failed"
    } else {
        "transport error"
    };
    let mut src = String::new();
    let mut cur: Option<&dyn std::error::Error> = std::error::Error::source(e);
    while let Some(s) = cur {
        src = s.to_string();
        cur = s.source();
    }
    if src.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}: {src}")
    }
}

impl Endpoint {
    pub fn new(cfg: EndpointConfig) -> Result<Self, String> {
        let url = reqwest::Url::parse(&cfg.base_url)
            .map_err(|e| format!("bad base URL `{}`: {e}", cfg.base_url))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!("base URL `{}` must be http or https", cfg.base_url));
        }
        let client = reqwest::Client::builder()
            .timeout(cfg.request_timeout)
            .connect_timeout(cfg.request_timeout.min(Duration::from_secs(30)))
            .pool_idle_timeout(Duration::from_secs(90))
            .user_agent(concat!("sieve-bench/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
        let quota = |n: u32| Quota::per_minute(NonZeroU32::new(n).expect("checked non-zero"));
        let rpm = cfg
            .rpm
            .filter(|n| *n > 0)
            .map(|n| RateLimiter::direct(quota(n)));
        let tpm = cfg
            .tpm
            .filter(|n| *n > 0)
            .map(|n| RateLimiter::direct(quota(n)));
        Ok(Endpoint {
            tpm_burst: cfg.tpm.unwrap_or(0),
            cfg,
            client,
            rpm,
            tpm,
            jitter_seq: AtomicU64::new(0),
        })
    }

    pub fn config(&self) -> &EndpointConfig {
        &self.cfg
    }

    /// Whether a tokens-per-minute budget applies (only then are prompts counted first).
    pub fn limits_tokens(&self) -> bool {
        self.tpm.is_some()
    }

    fn url(&self, path: &str) -> String {
        format!("{}/{}", self.cfg.base_url.trim_end_matches('/'), path)
    }

    fn scrub(&self, s: &str) -> String {
        redact(s, self.cfg.api_key.as_ref())
    }

    /// A reply with the API key redacted wherever the server echoed it, so it never
    /// reaches a trace, a cache entry or a record.
    fn scrub_value(&self, v: Value) -> Value {
        let Some(k) = &self.cfg.api_key else { return v };
        let text = v.to_string();
        if k.expose().len() < 4 || !text.contains(k.expose()) {
            return v;
        }
        serde_json::from_str(&text.replace(k.expose(), "[redacted]")).unwrap_or(v)
    }

    /// Waits for the request and token budgets (`tokens` = tokens this call will use).
    async fn admit(&self, tokens: u64) {
        if let Some(l) = &self.rpm {
            l.until_ready().await;
        }
        self.charge_tokens(tokens).await;
    }

    /// Charges tokens to the per-minute token budget (waits when it is spent).
    pub async fn charge_tokens(&self, tokens: u64) {
        if let Some(l) = &self.tpm {
            let n = tokens.clamp(1, self.tpm_burst.max(1) as u64) as u32;
            if let Some(n) = NonZeroU32::new(n) {
                let _ = l.until_n_ready(n).await;
            }
        }
    }

    fn backoff(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(ra) = retry_after {
            return ra.min(self.cfg.retry_after_cap);
        }
        let exp = self
            .cfg
            .backoff_base
            .saturating_mul(1u32.checked_shl(attempt.min(20)).unwrap_or(u32::MAX))
            .min(self.cfg.backoff_cap);
        let seq = self.jitter_seq.fetch_add(1, Ordering::Relaxed);
        let nanos = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let mut rng = ChaCha8Rng::seed_from_u64(nanos ^ seq.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        // "Full jitter" keeps half the delay as a floor so retries never hammer.
        exp.mul_f64(rng.random_range(0.5..=1.0))
    }

    async fn attempt(&self, url: &str, body: &[u8]) -> Attempt {
        let mut rb = self
            .client
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_vec());
        if let Some(k) = &self.cfg.api_key {
            match reqwest::header::HeaderValue::from_str(&format!("Bearer {}", k.expose())) {
                Ok(mut v) => {
                    v.set_sensitive(true);
                    rb = rb.header(reqwest::header::AUTHORIZATION, v);
                }
                Err(_) => {
                    return Attempt::Fail(ModelError::Fatal(format!(
                        "the API key in ${} contains characters not allowed in an HTTP header",
                        self.cfg.api_key_env
                    )));
                }
            }
        }
        let resp = match rb.send().await {
            Ok(r) => r,
            Err(e) => {
                return Attempt::Retry {
                    why: describe(&e),
                    after: None,
                };
            }
        };
        let status = resp.status();
        let retry_after = resp
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| parse_retry_after(v, SystemTime::now()));
        let bytes = match resp.bytes().await {
            Ok(b) => b,
            Err(e) => {
                return Attempt::Retry {
                    why: describe(&e),
                    after: None,
                };
            }
        };
        let code = status.as_u16();
        if status.is_success() {
            return match serde_json::from_slice::<Value>(&bytes) {
                Ok(v) if v.is_object() => Attempt::Done(v),
                _ => Attempt::Fail(ModelError::Request(format!(
                    "malformed reply from {} (HTTP {code}), first bytes: {:?}",
                    self.cfg.name,
                    truncate(&String::from_utf8_lossy(&bytes), 200)
                ))),
            };
        }
        let msg = error_message(&bytes);
        if code == 429 && out_of_quota(&bytes) {
            // Retrying cannot help, and every other episode would fail the same way.
            return Attempt::Fail(ModelError::Fatal(format!(
                "{} reports the account is out of quota (HTTP 429: {msg})",
                self.cfg.name
            )));
        }
        match code {
            401 | 403 => Attempt::Fail(ModelError::Fatal(format!(
                "{} rejected the credentials (HTTP {code}: {msg}); check ${} and --base-url",
                self.cfg.name, self.cfg.api_key_env
            ))),
            408 | 409 | 425 | 429 | 500..=599 => Attempt::Retry {
                why: format!("HTTP {code}: {msg}"),
                after: retry_after,
            },
            _ => Attempt::Fail(ModelError::Request(format!(
                "{} answered HTTP {code}: {msg}",
                self.cfg.name
            ))),
        }
    }

    /// One attempt, no retries, for the pre-flight check of `who` (a role and model).
    /// Anything that would fail every episode is fatal and names the URL: nothing
    /// listening, a 404 (with a `/v1` hint when the base URL lacks it), a 401/403, any
    /// other 4xx. A 429 or 5xx is transient: `Ok(None)`, the run goes on and retries.
    pub async fn probe(
        &self,
        path: &str,
        body: &Value,
        who: &str,
    ) -> Result<Option<Value>, ModelError> {
        let url = self.url(path);
        let bytes = serde_json::to_vec(body).expect("request serialises");
        let fatal = |m: String| {
            ModelError::Fatal(self.scrub(&format!("pre-flight of the {who} at {url}: {m}")))
        };
        match self.attempt(&url, &bytes).await {
            Attempt::Done(v) => Ok(Some(v)),
            Attempt::Retry { why, .. } if why.starts_with("HTTP ") => Ok(None),
            Attempt::Retry { why, .. } => Err(fatal(format!("cannot reach the server ({why})"))),
            Attempt::Fail(ModelError::Request(m)) if m.contains("HTTP 404") => {
                let base = self.cfg.base_url.trim_end_matches('/');
                let hint = if base.ends_with("/v1") {
                    "check --base-url and the model name".to_string()
                } else {
                    format!("did you mean --base-url {base}/v1 ?")
                };
                Err(fatal(format!("{m}; {hint}")))
            }
            // Any other client error would meet every request; a malformed 200 may be
            // this request's alone, so the run goes on and episodes say what failed.
            Attempt::Fail(ModelError::Request(m)) if m.contains("answered HTTP 4") => Err(fatal(m)),
            Attempt::Fail(ModelError::Request(_)) => Ok(None),
            Attempt::Fail(ModelError::Fatal(m)) => Err(fatal(m)),
            Attempt::Fail(e) => Err(e),
        }
    }

    /// POSTs a JSON body to `path` (relative to the base URL) with retries. `tokens` is
    /// the estimate charged to the token budget before sending.
    pub async fn post(&self, path: &str, body: &Value, tokens: u64) -> Result<Posted, ModelError> {
        let url = self.url(path);
        let bytes = serde_json::to_vec(body).expect("request serialises");
        let mut retries = 0u32;
        loop {
            self.admit(if retries == 0 { tokens } else { 0 }).await;
            let started = Instant::now();
            match self.attempt(&url, &bytes).await {
                Attempt::Done(v) => {
                    return Ok(Posted {
                        body: self.scrub_value(v),
                        retries,
                        latency_ms: started.elapsed().as_secs_f64() * 1000.0,
                    });
                }
                Attempt::Fail(e) => {
                    return Err(match e {
                        ModelError::Fatal(m) => ModelError::Fatal(self.scrub(&m)),
                        ModelError::Request(m) => ModelError::Request(self.scrub(&m)),
                        ModelError::ReplayMiss(m) => ModelError::ReplayMiss(m),
                    });
                }
                Attempt::Retry { why, after } => {
                    if retries >= self.cfg.max_retries {
                        return Err(ModelError::Request(self.scrub(&format!(
                            "{} failed after {} attempt(s), last: {why}",
                            self.cfg.name,
                            retries + 1
                        ))));
                    }
                    tokio::time::sleep(self.backoff(retries, after)).await;
                    retries += 1;
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------
// Wire types: requests.

#[derive(Serialize)]
struct WireRequest<'a> {
    model: &'a str,
    messages: Vec<Value>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Value>,
    temperature: f64,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    seed: Option<u64>,
    /// Passed through as given (vLLM's `chat_template_kwargs`, `top_p`…); a key here
    /// overrides the field of the same name above.
    #[serde(flatten)]
    extra: &'a Map<String, Value>,
}

fn wire_tools(tools: &[ToolSchema]) -> Vec<Value> {
    tools
        .iter()
        .map(|t| {
            json!({"type": "function", "function": {
                "name": t.name.as_str(), "description": t.description, "parameters": t.parameters}})
        })
        .collect()
}

fn wire_messages_native(messages: &[Message]) -> Vec<Value> {
    messages
        .iter()
        .map(|m| match m.role {
            Role::Assistant if !m.tool_calls.is_empty() => {
                let calls: Vec<Value> = m
                    .tool_calls
                    .iter()
                    .map(|c| {
                        json!({"id": c.id, "type": "function",
                               "function": {"name": c.name, "arguments": c.arguments}})
                    })
                    .collect();
                let content = if m.content.is_empty() {
                    Value::Null
                } else {
                    Value::String(m.content.clone())
                };
                json!({"role": "assistant", "content": content, "tool_calls": calls})
            }
            Role::Tool => json!({
                "role": "tool",
                "tool_call_id": m.tool_call_id.clone().unwrap_or_default(),
                "content": m.content,
            }),
            r => json!({"role": role_str(r), "content": m.content}),
        })
        .collect()
}

fn role_str(r: Role) -> &'static str {
    match r {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    }
}

// ---------------------------------------------------------------------------------
// Prompted tool calling.

/// The block appended to the system prompt when tools are described in text.
pub fn prompted_tools_text(tools: &[ToolSchema]) -> String {
    let mut s = String::from(
        "# Tools\nYou can call the tools below. To call one, reply with a single JSON block \
         and nothing after it, exactly in this form:\n```json\n{\"tool\": \"<tool name>\", \
         \"arguments\": {<argument name>: <value>, ...}}\n```\nTo call several tools at once, \
         put a JSON list of such objects in the block. The results come back in the next \
         message. When the task is done, reply with your final answer as plain text with no \
         JSON block.\n\nAvailable tools:\n",
    );
    for t in tools {
        s.push_str(&format!(
            "- `{}`: {}\n  parameters (JSON Schema): {}\n",
            t.name.as_str(),
            t.description.trim(),
            serde_json::to_string(&t.parameters).expect("schema serialises")
        ));
    }
    s
}

fn wire_messages_prompted(messages: &[Message], tools: &[ToolSchema]) -> Vec<Value> {
    let mut out = Vec::with_capacity(messages.len() + 1);
    let tools_text = (!tools.is_empty()).then(|| prompted_tools_text(tools));
    let mut placed = false;
    for m in messages {
        match m.role {
            Role::System => {
                let mut content = m.content.clone();
                if let (Some(t), false) = (&tools_text, placed) {
                    content.push_str("\n\n");
                    content.push_str(t);
                    placed = true;
                }
                out.push(json!({"role": "system", "content": content}));
            }
            Role::Assistant if !m.tool_calls.is_empty() => {
                let calls: Vec<Value> = m
                    .tool_calls
                    .iter()
                    .map(|c| {
                        let args = serde_json::from_str::<Value>(&c.arguments)
                            .unwrap_or_else(|_| Value::String(c.arguments.clone()));
                        json!({"tool": c.name, "arguments": args})
                    })
                    .collect();
                let block = if calls.len() == 1 {
                    calls.into_iter().next().expect("one call")
                } else {
                    Value::Array(calls)
                };
                let mut content = m.content.trim().to_string();
                if !content.is_empty() {
                    content.push_str("\n\n");
                }
                content.push_str(&format!("```json\n{block}\n```"));
                out.push(json!({"role": "assistant", "content": content}));
            }
            Role::Tool => out.push(json!({
                "role": "user",
                "content": format!(
                    "Result of tool `{}`:\n{}",
                    m.name.as_deref().unwrap_or("?"),
                    m.content
                ),
            })),
            r => out.push(json!({"role": role_str(r), "content": m.content})),
        }
    }
    if let (Some(t), false) = (tools_text, placed) {
        out.insert(0, json!({"role": "system", "content": t}));
    }
    out
}

/// Finds tool calls in a prompted reply: a fenced JSON block (```json or ```) or a reply
/// that is a JSON object/list as a whole. Each call is `{"tool"|"name": .., "arguments"|
/// "args"|"parameters": ..}`. Returns no calls when none parse.
pub fn parse_prompted_calls(content: &str, step_salt: usize) -> Vec<ToolCall> {
    let mut candidates: Vec<&str> = Vec::new();
    let mut rest = content;
    while let Some(start) = rest.find("```") {
        let after = &rest[start + 3..];
        let body_start = after.find('\n').map_or(0, |i| i + 1);
        let lang = after[..body_start].trim();
        let Some(end) = after[body_start..].find("```") else {
            break;
        };
        if lang.is_empty() || lang.eq_ignore_ascii_case("json") {
            candidates.push(&after[body_start..body_start + end]);
        }
        rest = &after[body_start + end + 3..];
    }
    let trimmed = content.trim();
    if candidates.is_empty() && (trimmed.starts_with('{') || trimmed.starts_with('[')) {
        candidates.push(trimmed);
    }
    let mut broken: Option<ToolCall> = None;
    for c in candidates {
        let Ok(v) = serde_json::from_str::<Value>(c.trim()) else {
            // A block that names a tool but is not JSON is a call with bad arguments: the
            // agent answers it with a tool error, as it does for native calls.
            if broken.is_none()
                && let Some(name) =
                    quoted_value_after(c, "\"tool\"").or_else(|| quoted_value_after(c, "\"name\""))
            {
                broken = Some(ToolCall {
                    id: format!("call_{step_salt}_0"),
                    name,
                    arguments: c.trim().to_string(),
                });
            }
            continue;
        };
        let items = match v {
            Value::Array(a) => a,
            o => vec![o],
        };
        let mut calls = Vec::new();
        for (i, it) in items.iter().enumerate() {
            let name = it
                .get("tool")
                .or_else(|| it.get("name"))
                .and_then(Value::as_str);
            let Some(name) = name else { continue };
            let args = it
                .get("arguments")
                .or_else(|| it.get("args"))
                .or_else(|| it.get("parameters"))
                .cloned()
                .unwrap_or_else(|| json!({}));
            let arguments = match args {
                Value::String(s) => s,
                v => v.to_string(),
            };
            calls.push(ToolCall {
                id: format!("call_{step_salt}_{i}"),
                name: name.to_string(),
                arguments,
            });
        }
        if !calls.is_empty() {
            return calls;
        }
    }
    broken.into_iter().collect()
}

/// The string after `key` and a colon in text that is not valid JSON: `"tool": "x"` → `x`.
fn quoted_value_after(text: &str, key: &str) -> Option<String> {
    let after = &text[text.find(key)? + key.len()..];
    let after = after.trim_start().strip_prefix(':')?.trim_start();
    let inner = after.strip_prefix('"')?;
    let name = &inner[..inner.find('"')?];
    (!name.is_empty() && name.len() <= 128).then(|| name.to_string())
}

// ---------------------------------------------------------------------------------
// Wire types: replies.

#[derive(Deserialize, Debug)]
struct WireResponse {
    #[serde(default)]
    choices: Option<Vec<WireChoice>>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize, Debug)]
struct WireChoice {
    #[serde(default)]
    message: Option<WireReplyMessage>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize, Debug, Default)]
struct WireReplyMessage {
    #[serde(default)]
    content: Option<Value>,
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(default)]
    reasoning: Option<Value>,
    #[serde(default)]
    tool_calls: Option<Vec<WireToolCall>>,
}

#[derive(Deserialize, Debug)]
struct WireToolCall {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<WireFunction>,
}

#[derive(Deserialize, Debug)]
struct WireFunction {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<Value>,
}

#[derive(Deserialize, Debug, Default)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens_details: Option<WireCompletionDetails>,
}

#[derive(Deserialize, Debug, Default)]
struct WireCompletionDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

/// Text of a `content` that may be a string, null, or a list of parts.
fn content_text(v: &Option<Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str).or(p.as_str()))
            .collect::<Vec<_>>()
            .join(""),
        Some(other) => other.to_string(),
    }
}

/// A parsed chat reply, before usage fallback.
#[derive(Debug)]
pub struct ParsedReply {
    pub message: Message,
    pub finish_reason: Option<String>,
    pub reasoning: String,
    /// (prompt, completion, reasoning) as the endpoint reported them.
    pub usage: Option<(u64, u64, u64)>,
}

/// Parses a chat-completion body. `Err` carries a description for the episode error.
pub fn parse_chat_body(
    body: &Value,
    format: ToolFormat,
    step: usize,
) -> Result<ParsedReply, String> {
    let first = || truncate(&body.to_string(), 200);
    let resp: WireResponse = serde_json::from_value(body.clone())
        .map_err(|e| format!("malformed reply ({e}), first bytes: {:?}", first()))?;
    let choice = resp
        .choices
        .and_then(|c| c.into_iter().next())
        .ok_or_else(|| format!("reply has no choices, first bytes: {:?}", first()))?;
    let msg = choice.message.unwrap_or_default();
    let content = content_text(&msg.content);
    let reasoning = msg
        .reasoning_content
        .or_else(|| {
            msg.reasoning
                .as_ref()
                .and_then(|r| r.as_str().map(String::from))
        })
        .unwrap_or_default();
    let mut tool_calls = Vec::new();
    for (i, c) in msg.tool_calls.unwrap_or_default().into_iter().enumerate() {
        let f = c.function.unwrap_or(WireFunction {
            name: None,
            arguments: None,
        });
        let arguments = match f.arguments {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) => s,
            Some(v) => v.to_string(),
        };
        tool_calls.push(ToolCall {
            id: c
                .id
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| format!("call_{step}_{i}")),
            name: f.name.unwrap_or_default(),
            arguments,
        });
    }
    if format == ToolFormat::Prompted && tool_calls.is_empty() {
        tool_calls = parse_prompted_calls(&content, step);
    }
    let usage = resp.usage.and_then(|u| {
        let (p, c) = (u.prompt_tokens?, u.completion_tokens?);
        let r = u
            .completion_tokens_details
            .and_then(|d| d.reasoning_tokens)
            .unwrap_or(0);
        Some((p, c, r))
    });
    Ok(ParsedReply {
        message: Message {
            role: Role::Assistant,
            content,
            tool_calls,
            tool_call_id: None,
            name: None,
        },
        finish_reason: choice.finish_reason,
        reasoning,
        usage,
    })
}

// ---------------------------------------------------------------------------------
// The model.

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
        let seed = self
            .opts
            .seed
            .or_else(|| req.sim.as_ref().map(|s| s.script.seed))
            .map(|s| s & 0x7FFF_FFFF);
        let (messages, tools) = match self.opts.tool_format {
            ToolFormat::Native => (wire_messages_native(req.messages), wire_tools(req.tools)),
            ToolFormat::Prompted => (wire_messages_prompted(req.messages, req.tools), Vec::new()),
        };
        let mut body = serde_json::to_value(WireRequest {
            model: &self.opts.model,
            messages,
            tools,
            temperature: self.opts.temperature,
            max_tokens: self.opts.max_tokens,
            seed,
            extra: &self.opts.extra_body,
        })
        .expect("request serialises");
        // `null` in the extra body removes a field: reasoning models reject `max_tokens`
        // and `temperature` (`{"max_tokens": null, "max_completion_tokens": 4096}`).
        if let Value::Object(m) = &mut body {
            m.retain(|_, v| !v.is_null());
        }
        body
    }
}

const CHAT_PATH: &str = "chat/completions";

#[async_trait]
impl ChatModel for OpenAiModel {
    fn name(&self) -> &str {
        &self.name
    }

    fn simulated(&self) -> bool {
        false
    }
    fn identity(&self) -> Value {
        serde_json::json!({
            "name": self.name,
            "base_url": self.endpoint.config().base_url,
            "model": self.opts.model,
            "tool_format": self.opts.tool_format,
            "temperature": self.opts.temperature,
            "max_tokens": self.opts.max_tokens,
            "seed": self.opts.seed,
            "extra_body": self.opts.extra_body,
        })
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
            component: super::Component::Agent,
            messages: &messages,
            tools,
            json: false,
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
        let key = self.cache.as_ref().map(|_| cache::key(CHAT_PATH, &body));
        let hit = match (&self.cache, &key) {
            (Some(c), Some(k)) => c.get(k),
            _ => None,
        };
        let fresh = hit.is_none();
        let (resp, retries, latency_ms) = match (hit, &self.cache, &key) {
            (Some(e), _, _) => (e.response, 0, e.latency_ms),
            (None, Some(c), Some(k)) if c.replay() => {
                return Err(ModelError::ReplayMiss(format!(
                    "no recorded reply for request {k} ({} message(s), model {}) in {}",
                    req.messages.len(),
                    self.opts.model,
                    c.dir().display()
                )));
            }
            _ => {
                let estimate = if self.endpoint.limits_tokens() {
                    self.tokens.prompt(req.messages, req.tools)
                } else {
                    0
                };
                let posted = self.endpoint.post(CHAT_PATH, &body, estimate).await?;
                (posted.body, posted.retries, posted.latency_ms)
            }
        };
        // Record before parsing: if another episode recorded this request first, use
        // its reply, so this run and its replay see the same one.
        let resp = match (fresh, &self.cache, &key) {
            (true, Some(c), Some(k)) => {
                let entry = Entry {
                    key: k.clone(),
                    path: CHAT_PATH.into(),
                    request: body,
                    response: resp,
                    latency_ms,
                };
                match c.put(&entry) {
                    Ok(recorded) => recorded.response,
                    Err(e) => {
                        eprintln!("warning: cannot write cache entry {k}: {e}");
                        entry.response
                    }
                }
            }
            _ => resp,
        };
        let parsed = parse_chat_body(&resp, self.opts.tool_format, step)
            .map_err(|e| ModelError::Request(format!("{}: {e}", self.endpoint.cfg.name)))?;
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
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_seconds_and_dates() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(parse_retry_after("3", now), Some(Duration::from_secs(3)));
        assert_eq!(
            parse_retry_after("0.25", now),
            Some(Duration::from_millis(250))
        );
        let later = httpdate::fmt_http_date(now + Duration::from_secs(7));
        assert_eq!(parse_retry_after(&later, now), Some(Duration::from_secs(7)));
        let past = httpdate::fmt_http_date(now - Duration::from_secs(7));
        assert_eq!(parse_retry_after(&past, now), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-1", now), None);
    }

    #[test]
    fn redaction_removes_key_and_masked_keys() {
        let k = Secret::new("sk-test-abcdef123456");
        let s = redact(
            "Incorrect API key provided: sk-test-***********3456. Key sk-test-abcdef123456 bad",
            Some(&k),
        );
        assert!(!s.contains("abcdef"), "{s}");
        assert!(!s.contains("3456"), "{s}");
        assert_eq!(format!("{k:?}"), "Secret([redacted])");
    }

    #[test]
    fn tolerant_parsing() {
        let body = json!({
            "choices": [{
                "message": {"content": null, "reasoning_content": "think",
                    "tool_calls": [{"function": {"name": "get_balance", "arguments": {"x": 1}}},
                                   {"id": "c2", "function": {"name": "f", "arguments": "{bad"}}]},
                "finish_reason": "abort"
            }]
        });
        let p = parse_chat_body(&body, ToolFormat::Native, 3).unwrap();
        assert_eq!(p.message.content, "");
        assert_eq!(p.message.tool_calls[0].id, "call_3_0");
        assert_eq!(p.message.tool_calls[0].arguments, r#"{"x":1}"#);
        assert_eq!(p.message.tool_calls[1].arguments, "{bad");
        assert_eq!(p.finish_reason.as_deref(), Some("abort"));
        assert_eq!(p.reasoning, "think");
        assert!(p.usage.is_none());
        assert!(parse_chat_body(&json!({"object": "error"}), ToolFormat::Native, 0).is_err());
        let u = parse_chat_body(
            &json!({"choices": [{"message": {"content": "hi"}}],
                    "usage": {"prompt_tokens": 5, "completion_tokens": 2,
                              "completion_tokens_details": {"reasoning_tokens": 1}}}),
            ToolFormat::Native,
            0,
        )
        .unwrap();
        assert_eq!(u.usage, Some((5, 2, 1)));
        assert_eq!(u.finish_reason, None);
    }

    #[test]
    fn prompted_calls_are_found_in_blocks() {
        let c = parse_prompted_calls(
            "I will check.\n```json\n{\"tool\": \"get_balance\", \"arguments\": {}}\n```",
            1,
        );
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].name, "get_balance");
        assert_eq!(c[0].arguments, "{}");
        let c = parse_prompted_calls(
            "```\n[{\"name\": \"a\", \"args\": {\"x\": 1}}, {\"tool\": \"b\"}]\n```",
            0,
        );
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].arguments, r#"{"x":1}"#);
        let c = parse_prompted_calls(r#"{"tool": "a", "arguments": "{\"x\": 2}"}"#, 0);
        assert_eq!(c[0].arguments, r#"{"x": 2}"#);
        assert!(parse_prompted_calls("The balance is 10.", 0).is_empty());
        // Broken JSON that names a tool: a call whose arguments the agent will reject.
        let c = parse_prompted_calls(
            "```json\n{\"tool\": \"send_money\", \"arguments\": {\"amount\": 5,}}\n```",
            2,
        );
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].name, "send_money");
        assert!(serde_json::from_str::<Value>(&c[0].arguments).is_err());
        assert!(parse_prompted_calls("```json\n{not json at all\n```", 0).is_empty());
        assert!(parse_prompted_calls("```python\nprint(1)\n```", 0).is_empty());
    }
}
