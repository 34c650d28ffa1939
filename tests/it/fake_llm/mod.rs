//! A loopback OpenAI-compatible "LLM" for tests: it follows the user task's reference
//! plan (found by the user prompt in the request), and, when a tool result shows an
//! injection task's goal, carries that task's plan out first, like `sim:obedient` but over
//! HTTP, so every byte goes through the real backend.
#![allow(dead_code)]

use serde_json::{Value, json};
use sieve_bench::commands::Paths;
use sieve_bench::commands::run::args::RunArgs;
use sieve_bench::commands::run::args::{Concurrency, RoleModels};
use sieve_bench::model::config::ModelOptions;
use sieve_bench::model::openai::parse_prompted_calls;
use sieve_bench::suite::{PlannedCall, Suite};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use wiremock::{Request, Respond, ResponseTemplate};

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn paths() -> Paths {
    Paths::resolve(None, None, Some(repo()))
}

pub fn banking() -> Suite {
    sieve_bench::suite::load(&repo().join("suites/dojo-style/banking")).unwrap()
}

/// Requests for this model id get a judge's approval instead of an agent turn.
pub const JUDGE_MODEL: &str = "judge-model";

/// A fake endpoint following reference plans.
#[derive(Clone)]
pub struct PlanFollower {
    pub suites: Arc<Vec<Suite>>,
    /// Expect tool calls as JSON blocks in text (`--tool-format prompted`).
    pub prompted: bool,
    /// Demand this bearer key (else 401 that echoes the key it got, as some servers do).
    pub key: Option<String>,
    /// Report `usage` (else the client must estimate).
    pub usage: bool,
    /// Send arguments that are not JSON on the first tool call of each episode.
    pub bad_args_first: bool,
    /// Name this model as the one that served each reply (else the requested one), as
    /// an endpoint resolving an alias to a dated snapshot does.
    pub served_as: Option<String>,
    /// Meter `usage` with the cl100k tokenizer as an OpenAI server counts chat prompts
    /// (message contents and calls, tool schemas), else about four bytes a token.
    pub cl100k: bool,
    /// Report this many times the prompt tokens once a tool output has shown an
    /// injection (attacked episodes cost more than the estimate, as long ones do).
    pub inflate_injected: u64,
    /// Final answers by user task id in place of the reference answer.
    pub answers: Arc<std::collections::HashMap<String, String>>,
    pub calls: Arc<AtomicUsize>,
}

impl PlanFollower {
    pub fn new(suites: Vec<Suite>) -> Self {
        PlanFollower {
            suites: Arc::new(suites),
            prompted: false,
            key: None,
            usage: true,
            bad_args_first: false,
            served_as: None,
            cl100k: false,
            inflate_injected: 1,
            answers: Default::default(),
            calls: Arc::new(AtomicUsize::new(0)),
        }
    }
}

fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

impl Respond for PlanFollower {
    fn respond(&self, req: &Request) -> ResponseTemplate {
        let auth = req
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok());
        let (status, body) = self.reply(auth, &req.body);
        ResponseTemplate::new(status).set_body_json(body)
    }
}

impl PlanFollower {
    /// The status and JSON body answering a request with this `Authorization` and body.
    pub fn reply(&self, auth: Option<&str>, body: &[u8]) -> (u16, Value) {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if let Some(k) = &self.key {
            let got = auth.unwrap_or("");
            if got != format!("Bearer {k}") {
                return (
                    401,
                    json!({"error": {
                    "message": format!("Incorrect API key provided: {}", got.trim_start_matches("Bearer ")),
                    "type": "invalid_request_error"}}),
                );
            }
        }
        let body: Value = match serde_json::from_slice(body) {
            Ok(b) => b,
            Err(_) => return (400, json!({"error": {"message": "bad json"}})),
        };
        if body["model"] == JUDGE_MODEL {
            // A defense's judge: approve, in the JSON the adjudicator expects.
            return (
                200,
                json!({"choices": [{"message": {"role": "assistant",
                    "content": "{\"score\": 1.0, \"reason\": \"The call serves the user's request.\"}"},
                    "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 100, "completion_tokens": 12}}),
            );
        }
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        let user = messages
            .iter()
            .find(|m| m["role"] == "user")
            .and_then(|m| m["content"].as_str())
            .unwrap_or("");
        if user == sieve_bench::model::openai::PREFLIGHT_PROMPT {
            let mut reply = json!({"choices": [{"message": {"role": "assistant", "content": "ready"},
                "finish_reason": "stop"}]});
            if self.usage {
                let prompt = body.to_string().len() as u64 / 4;
                reply["usage"] = json!({"prompt_tokens": prompt, "completion_tokens": 1});
            }
            return (200, reply);
        }
        let Some((suite, ut)) = self.suites.iter().find_map(|s| {
            s.user_tasks
                .iter()
                .find(|t| t.prompt == user)
                .map(|t| (s, t))
        }) else {
            return (400, json!({"error": {"message": "unknown task"}}));
        };
        let mut queue: Vec<&PlannedCall> = ut.plan.iter().collect();
        let mut pos = 0;
        let mut injected = false;
        for m in &messages {
            match m["role"].as_str() {
                Some("assistant") => {
                    pos += if self.prompted {
                        parse_prompted_calls(m["content"].as_str().unwrap_or(""), 0).len()
                    } else {
                        m["tool_calls"].as_array().map_or(0, |a| a.len())
                    }
                }
                Some("tool") | Some("user") => {
                    let content = squash(m["content"].as_str().unwrap_or(""));
                    if !injected
                        && let Some(it) = suite
                            .injection_tasks
                            .iter()
                            .find(|it| content.contains(&squash(&it.goal)))
                    {
                        let at = pos.min(queue.len());
                        queue.splice(at..at, it.plan.iter());
                        injected = true;
                    }
                }
                _ => {}
            }
        }
        let (message, finish) = match queue.get(pos) {
            Some(call) => {
                let args = if self.bad_args_first && pos == 0 {
                    "{\"file_path\": oops".to_string()
                } else {
                    call.args.to_string()
                };
                if self.prompted {
                    (
                        json!({"role": "assistant", "content": format!(
                            "Next step.\n```json\n{{\"tool\": \"{}\", \"arguments\": {}}}\n```",
                            call.tool.as_str(), args)}),
                        "stop",
                    )
                } else {
                    (
                        // No `type` on the call and null content, as some servers send.
                        json!({"role": "assistant", "content": null, "tool_calls": [
                            {"id": format!("call_{pos}"),
                             "function": {"name": call.tool.as_str(), "arguments": args}}]}),
                        "tool_calls",
                    )
                }
            }
            None => (
                json!({"role": "assistant", "content": self.answers.get(ut.id.as_str()).or(ut.answer.as_ref()).cloned().unwrap_or_else(|| "Done.".into()),
                       "reasoning_content": "All steps are done."}),
                "stop",
            ),
        };
        let mut reply = json!({
            "id": "chatcmpl-test", "object": "chat.completion",
            "model": self.served_as.as_deref().map_or(body["model"].clone(), Value::from),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        });
        if self.usage {
            let (prompt, completion) = if self.cl100k {
                (
                    cl100k_prompt(&body),
                    cl100k_message(&reply["choices"][0]["message"]),
                )
            } else {
                (body.to_string().len() as u64 / 4, 17)
            };
            let prompt = if injected {
                prompt * self.inflate_injected
            } else {
                prompt
            };
            reply["usage"] = json!({"prompt_tokens": prompt, "completion_tokens": completion,
                "total_tokens": prompt + completion});
        }
        (200, reply)
    }
}

fn bpe() -> &'static tiktoken_rs::CoreBPE {
    static BPE: std::sync::OnceLock<tiktoken_rs::CoreBPE> = std::sync::OnceLock::new();
    BPE.get_or_init(|| tiktoken_rs::cl100k_base().unwrap())
}

fn count(s: &str) -> u64 {
    bpe().encode_ordinary(s).len() as u64
}

/// A chat message's tokens: four of framing, the content, each call's name and arguments.
fn cl100k_message(m: &Value) -> u64 {
    let calls: u64 = m["tool_calls"].as_array().map_or(0, |cs| {
        cs.iter()
            .map(|c| {
                count(c["function"]["name"].as_str().unwrap_or(""))
                    + count(c["function"]["arguments"].as_str().unwrap_or(""))
                    + 3
            })
            .sum()
    });
    4 + count(m["content"].as_str().unwrap_or("")) + calls
}

/// A chat request's prompt tokens: its messages, its tools' function definitions, and
/// three that prime the reply.
fn cl100k_prompt(body: &Value) -> u64 {
    let messages: u64 = body["messages"]
        .as_array()
        .map_or(0, |ms| ms.iter().map(cl100k_message).sum());
    let tools = body["tools"].as_array().map_or(0, |ts| {
        let functions: Vec<&Value> = ts.iter().map(|t| &t["function"]).collect();
        count(&serde_json::to_string(&functions).unwrap())
    });
    messages + tools + 3
}

/// `run` arguments for the banking suite against `base_url`.
pub fn run_args(out: &Path, base_url: &str, model_options: ModelOptions) -> RunArgs {
    RunArgs {
        suite: "banking".into(),
        models: RoleModels::agent("openai:test-model"),
        concurrency: Concurrency { n: 4 },
        max_steps: 10,
        out: Some(out.to_path_buf()),
        results_dir: out.to_path_buf(),
        model_options: ModelOptions {
            base_url: Some(base_url.to_string()),
            api_key_env: Some("SIEVE_BENCH_TEST_UNSET_KEY".into()),
            backoff_base: Some(std::time::Duration::from_millis(10)),
            ..model_options
        },
        ..RunArgs::default()
    }
}

pub fn read_jsonl(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}
