//! Provider batch APIs (`run --batch`): the OpenAI Batch shape (a JSONL file uploaded to
//! `/files`, a batch made of it at `/batches`, results as output and error files) and the
//! Anthropic Message Batches shape (requests posted to `/messages/batches`, results as
//! JSONL at the batch's `results_url`).
//!
//! Requests are the cached chat requests ([`Pending`]): each line's `custom_id` is the
//! request's cache key, so a result is written back under the key it answers, and a
//! result whose `custom_id` names no request of the round is refused. The Anthropic shape
//! is translated both ways: an OpenAI chat request becomes Messages parameters (system
//! text apart, tool calls as `tool_use` blocks, tool results as `tool_result` blocks)
//! and a Messages reply becomes an OpenAI chat completion, so the cache, the replay and
//! the parser see one shape.

use super::Secret;
use super::cache::Pending;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

/// Which provider's batch API.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Shape {
    /// OpenAI Batch (`/files`, `/batches`).
    Openai,
    /// Anthropic Message Batches (`/messages/batches`).
    Anthropic,
}

impl Shape {
    /// The base URL used when none is given.
    pub fn default_url(self) -> &'static str {
        match self {
            Shape::Openai => "https://api.openai.com/v1",
            Shape::Anthropic => "https://api.anthropic.com/v1",
        }
    }

    /// The variable the key is read from when none is named.
    pub fn default_key_env(self) -> &'static str {
        match self {
            Shape::Openai => "OPENAI_API_KEY",
            Shape::Anthropic => "ANTHROPIC_API_KEY",
        }
    }
}

/// Why a batch call failed. Nothing is written into the cache after any of them, and the
/// round can be submitted again.
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    /// The provider refused the batch file or the batch as a whole.
    #[error("the provider rejected batch {id}: {why}")]
    Rejected { id: String, why: String },
    /// The batch passed its completion window before every request was answered.
    #[error("batch {0} expired before every request was answered; submit the round again")]
    Expired(String),
    /// A result names a request the round did not send.
    #[error("batch {id} returned a reply for request `{custom_id}`, which the round did not send")]
    UnknownReply { id: String, custom_id: String },
    /// A request the round sent has no result although the batch ended.
    #[error("batch {id} ended without a result for request `{custom_id}`")]
    MissingReply { id: String, custom_id: String },
    /// The transport or the provider failed (HTTP status, connection, malformed body).
    #[error("batch API {what}: {why}")]
    Http { what: String, why: String },
}

/// A batch's state when polled.
#[derive(Debug)]
pub enum Status {
    /// Not done: the provider's word for where it is.
    Pending(String),
    /// Done: every request's result, by cache key.
    Ended(BTreeMap<String, Reply>),
}

/// One request's result.
#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    /// An OpenAI chat completion body.
    Ok(Value),
    /// The provider's per-request error.
    Error(String),
}

/// A client of one provider's batch API.
pub struct Client {
    http: reqwest::Client,
    shape: Shape,
    base: String,
    key: Option<Secret>,
}

impl Client {
    pub fn new(shape: Shape, base: &str, key: Option<Secret>) -> Result<Client, BatchError> {
        let http =
            super::client(|b| b.timeout(std::time::Duration::from_secs(300))).map_err(|e| {
                BatchError::Http {
                    what: "client".into(),
                    why: e.to_string(),
                }
            })?;
        Ok(Client {
            http,
            shape,
            base: base.trim_end_matches('/').to_string(),
            key,
        })
    }

    pub fn shape(&self) -> Shape {
        self.shape
    }

    /// The batch file as the provider takes it: JSONL for OpenAI, the request list's
    /// JSON for Anthropic.
    pub fn batch_file(&self, pending: &[Pending]) -> String {
        match self.shape {
            Shape::Openai => pending
                .iter()
                .map(|p| {
                    let line = json!({
                        "custom_id": p.key,
                        "method": "POST",
                        "url": format!("/v1/{}", p.path),
                        "body": p.request,
                    });
                    format!("{line}\n")
                })
                .collect(),
            Shape::Anthropic => {
                let requests: Vec<Value> = pending
                    .iter()
                    .map(|p| json!({"custom_id": p.key, "params": to_anthropic(&p.request)}))
                    .collect();
                let mut s = json!({ "requests": requests }).to_string();
                s.push('\n');
                s
            }
        }
    }

    fn auth(&self, rb: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        let rb = match self.shape {
            Shape::Openai => rb,
            Shape::Anthropic => rb.header("anthropic-version", "2023-06-01"),
        };
        let Some(k) = &self.key else { return rb };
        let mut v = match self.shape {
            Shape::Openai => {
                reqwest::header::HeaderValue::from_str(&format!("Bearer {}", k.expose()))
            }
            Shape::Anthropic => reqwest::header::HeaderValue::from_str(k.expose()),
        }
        .unwrap_or_else(|_| reqwest::header::HeaderValue::from_static(""));
        v.set_sensitive(true);
        match self.shape {
            Shape::Openai => rb.header(reqwest::header::AUTHORIZATION, v),
            Shape::Anthropic => rb.header("x-api-key", v),
        }
    }

    async fn send(&self, what: &str, rb: reqwest::RequestBuilder) -> Result<Vec<u8>, BatchError> {
        let fail = |why: String| BatchError::Http {
            what: what.to_string(),
            why: super::redact(&why, self.key.as_ref()),
        };
        let resp = self
            .auth(rb)
            .send()
            .await
            .map_err(|e| fail(e.to_string()))?;
        let status = resp.status();
        let body = resp.bytes().await.map_err(|e| fail(e.to_string()))?;
        if !status.is_success() {
            let text = String::from_utf8_lossy(&body[..body.len().min(500)]).into_owned();
            return Err(fail(format!("HTTP {status}: {text}")));
        }
        Ok(body.to_vec())
    }

    async fn json(&self, what: &str, rb: reqwest::RequestBuilder) -> Result<Value, BatchError> {
        let body = self.send(what, rb).await?;
        serde_json::from_slice(&body).map_err(|e| BatchError::Http {
            what: what.to_string(),
            why: format!("not JSON ({e})"),
        })
    }

    /// Submits `file` (from [`Client::batch_file`]) and returns the batch id.
    pub async fn submit(&self, file: &str) -> Result<String, BatchError> {
        match self.shape {
            Shape::Openai => {
                let boundary = "sieve-bench-batch-boundary-7d1f";
                let mut body = Vec::new();
                body.extend_from_slice(
                    format!(
                        "--{boundary}\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"batch.jsonl\"\r\nContent-Type: application/jsonl\r\n\r\n"
                    )
                    .as_bytes(),
                );
                body.extend_from_slice(file.as_bytes());
                body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
                let uploaded = self
                    .json(
                        "upload of the batch file",
                        self.http
                            .post(format!("{}/files", self.base))
                            .header(
                                reqwest::header::CONTENT_TYPE,
                                format!("multipart/form-data; boundary={boundary}"),
                            )
                            .body(body),
                    )
                    .await?;
                let file_id = str_field(&uploaded, "id", "upload of the batch file")?;
                let batch = self
                    .json(
                        "creation of the batch",
                        json_body(
                            self.http.post(format!("{}/batches", self.base)),
                            &json!({
                                "input_file_id": file_id,
                                "endpoint": "/v1/chat/completions",
                                "completion_window": "24h",
                            }),
                        ),
                    )
                    .await?;
                let id = str_field(&batch, "id", "creation of the batch")?;
                if batch["status"] == "failed" {
                    return Err(BatchError::Rejected {
                        why: openai_errors(&batch),
                        id,
                    });
                }
                Ok(id)
            }
            Shape::Anthropic => {
                let body: Value = serde_json::from_str(file).map_err(|e| BatchError::Http {
                    what: "batch file".into(),
                    why: e.to_string(),
                })?;
                let rb = json_body(
                    self.http.post(format!("{}/messages/batches", self.base)),
                    &body,
                );
                match self.json("creation of the batch", rb).await {
                    Ok(v) => str_field(&v, "id", "creation of the batch"),
                    Err(BatchError::Http { why, .. }) if why.starts_with("HTTP 4") => {
                        Err(BatchError::Rejected {
                            id: "(none)".into(),
                            why,
                        })
                    }
                    Err(e) => Err(e),
                }
            }
        }
    }

    /// Polls batch `id` once; when it ended, fetches every result. `sent` are the keys
    /// the round sent: a result for another key, or a key with no result, is an error.
    pub async fn poll(&self, id: &str, sent: &[String]) -> Result<Status, BatchError> {
        let results = match self.shape {
            Shape::Openai => {
                let b = self
                    .json(
                        "status of the batch",
                        self.http.get(format!("{}/batches/{id}", self.base)),
                    )
                    .await?;
                match b["status"].as_str().unwrap_or("") {
                    "completed" => {}
                    "failed" => {
                        return Err(BatchError::Rejected {
                            id: id.into(),
                            why: openai_errors(&b),
                        });
                    }
                    "expired" => return Err(BatchError::Expired(id.into())),
                    "cancelled" | "cancelling" => {
                        return Err(BatchError::Rejected {
                            id: id.into(),
                            why: "it was cancelled".into(),
                        });
                    }
                    other => return Ok(Status::Pending(progress(other, &b["request_counts"]))),
                }
                let mut lines = Vec::new();
                for field in ["output_file_id", "error_file_id"] {
                    if let Some(file) = b[field].as_str() {
                        let body = self
                            .send(
                                "download of the results",
                                self.http.get(format!("{}/files/{file}/content", self.base)),
                            )
                            .await?;
                        lines.extend(jsonl(&body)?);
                    }
                }
                lines
                    .into_iter()
                    .map(|l| {
                        let key = l["custom_id"].as_str().unwrap_or("").to_string();
                        let resp = &l["response"];
                        let reply = if resp["status_code"] == 200 {
                            Reply::Ok(resp["body"].clone())
                        } else {
                            Reply::Error(error_text(if l["error"].is_null() {
                                &resp["body"]
                            } else {
                                &l["error"]
                            }))
                        };
                        (key, reply)
                    })
                    .collect::<Vec<_>>()
            }
            Shape::Anthropic => {
                let b = self
                    .json(
                        "status of the batch",
                        self.http
                            .get(format!("{}/messages/batches/{id}", self.base)),
                    )
                    .await?;
                match b["processing_status"].as_str().unwrap_or("") {
                    "ended" => {}
                    other => return Ok(Status::Pending(progress(other, &b["request_counts"]))),
                }
                let url = str_field(&b, "results_url", "status of the batch")?;
                let body = self
                    .send("download of the results", self.http.get(url))
                    .await?;
                let mut out = Vec::new();
                for l in jsonl(&body)? {
                    let key = l["custom_id"].as_str().unwrap_or("").to_string();
                    let r = &l["result"];
                    let reply = match r["type"].as_str().unwrap_or("") {
                        "succeeded" => Reply::Ok(from_anthropic(&r["message"])),
                        "expired" => return Err(BatchError::Expired(id.into())),
                        "canceled" => Reply::Error("the request was cancelled".into()),
                        _ => Reply::Error(error_text(&r["error"])),
                    };
                    out.push((key, reply));
                }
                out
            }
        };
        let mut by_key = BTreeMap::new();
        for (key, reply) in results {
            if !sent.contains(&key) {
                return Err(BatchError::UnknownReply {
                    id: id.into(),
                    custom_id: short(&key),
                });
            }
            by_key.insert(key, reply);
        }
        if let Some(missing) = sent.iter().find(|k| !by_key.contains_key(*k)) {
            return Err(BatchError::MissingReply {
                id: id.into(),
                custom_id: missing.clone(),
            });
        }
        Ok(Status::Ended(by_key))
    }
}

/// At most 300 characters of a provider's text.
fn short(s: &str) -> String {
    match s.char_indices().nth(300) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

fn json_body(rb: reqwest::RequestBuilder, v: &Value) -> reqwest::RequestBuilder {
    rb.header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(v.to_string())
}

fn str_field(v: &Value, field: &str, what: &str) -> Result<String, BatchError> {
    v[field]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| BatchError::Http {
            what: what.into(),
            why: format!("the reply has no `{field}`"),
        })
}

fn progress(state: &str, counts: &Value) -> String {
    if counts.is_object() {
        format!("{state} ({counts})")
    } else {
        state.to_string()
    }
}

fn openai_errors(b: &Value) -> String {
    let msgs: Vec<String> = b["errors"]["data"]
        .as_array()
        .map(|a| a.iter().map(error_text).collect())
        .unwrap_or_default();
    if msgs.is_empty() {
        "no reason given".into()
    } else {
        msgs.join("; ")
    }
}

/// The message of a provider's error object, wherever it nests it.
fn error_text(e: &Value) -> String {
    for v in [
        &e["error"]["message"],
        &e["message"],
        &e["error"]["error"]["message"],
    ] {
        if let Some(s) = v.as_str() {
            return short(s);
        }
    }
    short(&e.to_string())
}

fn jsonl(body: &[u8]) -> Result<Vec<Value>, BatchError> {
    String::from_utf8_lossy(body)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            serde_json::from_str(l).map_err(|e| BatchError::Http {
                what: "results".into(),
                why: format!("a line is not JSON ({e})"),
            })
        })
        .collect()
}

/// An OpenAI chat request as Anthropic Messages parameters.
pub fn to_anthropic(req: &Value) -> Value {
    let mut system = Vec::new();
    let mut messages: Vec<Value> = Vec::new();
    let mut push = |role: &str, block: Value| match messages.last_mut() {
        Some(last) if last["role"] == role => {
            last["content"]
                .as_array_mut()
                .expect("content is a list")
                .push(block);
        }
        _ => messages.push(json!({"role": role, "content": [block]})),
    };
    for m in req["messages"].as_array().into_iter().flatten() {
        let text = m["content"].as_str().unwrap_or("");
        match m["role"].as_str().unwrap_or("") {
            "system" => system.push(text.to_string()),
            "assistant" => {
                if !text.is_empty() {
                    push("assistant", json!({"type": "text", "text": text}));
                }
                for c in m["tool_calls"].as_array().into_iter().flatten() {
                    let input: Value = c["function"]["arguments"]
                        .as_str()
                        .and_then(|a| serde_json::from_str(a).ok())
                        .unwrap_or_else(|| json!({}));
                    push(
                        "assistant",
                        json!({"type": "tool_use", "id": c["id"], "name": c["function"]["name"], "input": input}),
                    );
                }
            }
            "tool" => push(
                "user",
                json!({"type": "tool_result", "tool_use_id": m["tool_call_id"], "content": text}),
            ),
            _ => push("user", json!({"type": "text", "text": text})),
        }
    }
    let mut p = Map::new();
    p.insert("model".into(), req["model"].clone());
    p.insert(
        "max_tokens".into(),
        req.get("max_tokens")
            .or_else(|| req.get("max_completion_tokens"))
            .cloned()
            .unwrap_or(json!(1024)),
    );
    if !system.is_empty() {
        p.insert("system".into(), json!(system.join("\n\n")));
    }
    p.insert("messages".into(), Value::Array(messages));
    if let Some(t) = req.get("temperature") {
        p.insert("temperature".into(), t.clone());
    }
    if let Some(tools) = req["tools"].as_array() {
        let tools: Vec<Value> = tools
            .iter()
            .map(|t| {
                let f = &t["function"];
                json!({"name": f["name"], "description": f["description"], "input_schema": f["parameters"]})
            })
            .collect();
        p.insert("tools".into(), Value::Array(tools));
    }
    Value::Object(p)
}

/// An Anthropic Messages reply as an OpenAI chat completion.
pub fn from_anthropic(m: &Value) -> Value {
    let mut text = String::new();
    let mut calls = Vec::new();
    for b in m["content"].as_array().into_iter().flatten() {
        match b["type"].as_str().unwrap_or("") {
            "text" => text.push_str(b["text"].as_str().unwrap_or("")),
            "tool_use" => calls.push(json!({
                "id": b["id"],
                "type": "function",
                "function": {"name": b["name"], "arguments": b["input"].to_string()},
            })),
            _ => {}
        }
    }
    let finish = match m["stop_reason"].as_str() {
        Some("tool_use") => "tool_calls",
        Some("max_tokens") => "length",
        _ => "stop",
    };
    let mut message = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text) }});
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls);
    }
    let (i, o) = (
        m["usage"]["input_tokens"].as_u64().unwrap_or(0),
        m["usage"]["output_tokens"].as_u64().unwrap_or(0),
    );
    json!({
        "id": m["id"],
        "object": "chat.completion",
        "model": m["model"],
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": i, "completion_tokens": o, "total_tokens": i + o},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chat_request_translates_to_messages_and_back() {
        let req = json!({
            "model": "m", "max_tokens": 50, "temperature": 0.0,
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "pay the bill"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{\"f\":\"bill.txt\"}"}},
                    {"id": "c2", "type": "function", "function": {"name": "balance", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "100"},
                {"role": "tool", "tool_call_id": "c2", "content": "5"}],
            "tools": [{"type": "function", "function": {"name": "read", "description": "d", "parameters": {"type": "object"}}}],
        });
        let p = to_anthropic(&req);
        assert_eq!(p["system"], "be brief");
        let msgs = p["messages"].as_array().unwrap();
        assert_eq!(msgs.len(), 3, "{p}");
        assert_eq!(msgs[1]["content"][0]["input"]["f"], "bill.txt");
        assert_eq!(
            msgs[2]["content"].as_array().unwrap().len(),
            2,
            "tool results merged"
        );
        assert_eq!(p["tools"][0]["input_schema"]["type"], "object");
        let reply = from_anthropic(&json!({
            "id": "msg_1", "model": "m", "stop_reason": "tool_use",
            "content": [{"type": "text", "text": "ok"}, {"type": "tool_use", "id": "t1", "name": "read", "input": {"f": "x"}}],
            "usage": {"input_tokens": 7, "output_tokens": 3},
        }));
        assert_eq!(reply["choices"][0]["finish_reason"], "tool_calls");
        assert_eq!(
            reply["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"],
            "{\"f\":\"x\"}"
        );
        assert_eq!(reply["usage"]["total_tokens"], 10);
    }
}
