//! The wire format of chat completions: the request body (messages, tools, sampling),
//! tools offered natively or described in the prompt, and the tolerant reply parser.
//!
//! The wire types are this project's own and deliberately tolerant: a tool call without
//! `type`, an unknown or missing `finish_reason`, `null` content, `reasoning_content`,
//! arguments sent as an object instead of a string, and a missing `usage` (then tokens are
//! counted locally and marked estimated) are all accepted. Arguments that are not valid
//! JSON are passed through untouched: the agent loop returns them to the model as a tool
//! error.

use crate::http::truncate;
use crate::model::ToolSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use sieve_record::{Message, Role, ToolCall};

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

/// A `--tool-format` that names no format.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown tool format `{0}`; use native or prompted")]
pub struct UnknownToolFormat(pub String);

impl std::str::FromStr for ToolFormat {
    type Err = UnknownToolFormat;
    fn from_str(s: &str) -> Result<Self, UnknownToolFormat> {
        match s {
            "native" => Ok(ToolFormat::Native),
            "prompted" => Ok(ToolFormat::Prompted),
            o => Err(UnknownToolFormat(o.to_string())),
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
    /// The model id the server says answered (an alias may resolve to a dated snapshot).
    #[serde(default)]
    model: Option<String>,
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
    /// The `model` the reply names, when it names one.
    pub served_model: Option<String>,
}

/// A chat-completion body that breaks the protocol; the backend makes it the episode's
/// `ModelError::Request`. `first` is the body's first bytes.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ReplyError {
    /// Not the shape of a chat completion.
    #[error("malformed reply ({why}), first bytes: {first:?}")]
    Malformed { why: String, first: String },
    /// A completion with no choice in it.
    #[error("reply has no choices, first bytes: {first:?}")]
    NoChoices { first: String },
}

/// Parses a chat-completion body. `Err` says how the body breaks the protocol.
pub fn parse_chat_body(
    body: &Value,
    format: ToolFormat,
    step: usize,
) -> Result<ParsedReply, ReplyError> {
    let first = || truncate(&body.to_string(), 200);
    let resp: WireResponse =
        serde_json::from_value(body.clone()).map_err(|e| ReplyError::Malformed {
            why: e.to_string(),
            first: first(),
        })?;
    let choice = resp
        .choices
        .and_then(|c| c.into_iter().next())
        .ok_or_else(|| ReplyError::NoChoices { first: first() })?;
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
        served_model: resp.model.filter(|m| !m.trim().is_empty()),
    })
}

/// The request body of a chat completion. `null` in `extra` removes a field: reasoning
/// models reject `max_tokens` and `temperature`
/// (`{"max_tokens": null, "max_completion_tokens": 4096}`).
#[allow(clippy::too_many_arguments)]
pub fn request_body(
    model: &str,
    messages: &[Message],
    tools: &[ToolSchema],
    format: ToolFormat,
    temperature: f64,
    max_tokens: u32,
    seed: Option<u64>,
    extra: &Map<String, Value>,
) -> Value {
    let (messages, tools) = match format {
        ToolFormat::Native => (wire_messages_native(messages), wire_tools(tools)),
        ToolFormat::Prompted => (wire_messages_prompted(messages, tools), Vec::new()),
    };
    let mut body = serde_json::to_value(WireRequest {
        model,
        messages,
        tools,
        temperature,
        max_tokens,
        seed,
        extra,
    })
    .expect("request serialises");
    if let Value::Object(m) = &mut body {
        m.retain(|_, v| !v.is_null());
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `--tool-format` takes the two names only; another is refused naming itself.
    #[test]
    fn a_tool_format_parses_from_its_name_only() {
        assert_eq!("native".parse::<ToolFormat>(), Ok(ToolFormat::Native));
        assert_eq!("prompted".parse::<ToolFormat>(), Ok(ToolFormat::Prompted));
        let e = "smoke-signals".parse::<ToolFormat>().unwrap_err();
        assert_eq!(e, UnknownToolFormat("smoke-signals".into()));
        assert_eq!(
            e.to_string(),
            "unknown tool format `smoke-signals`; use native or prompted"
        );
    }

    /// The model id a server says served the reply is kept; a blank one is not a name.
    #[test]
    fn the_served_model_is_read_from_the_reply() {
        let reply = |model: serde_json::Value| {
            parse_chat_body(
                &json!({"model": model, "choices": [{"message": {"content": "hi"}}]}),
                ToolFormat::Native,
                0,
            )
            .unwrap()
            .served_model
        };
        assert_eq!(
            reply(json!("gpt-4o-2024-08-06")).as_deref(),
            Some("gpt-4o-2024-08-06")
        );
        assert_eq!(reply(json!(" ")), None);
        assert_eq!(reply(serde_json::Value::Null), None);
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
