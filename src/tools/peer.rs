//! A peer agent: another assistant that hands work over to this one and answers
//! delegated questions. Its words reach the agent as a colleague's, which is what makes
//! it a surface of its own (inter-agent contagion).
//!
//! Environment layout (everything under `peer`):
//! - `peer.name`: the peer assistant's name.
//! - `peer.messages`: hand-offs the peer left for this agent, `{id, sent, text}`.
//! - `peer.reports`: what the peer answers when asked about a topic, `{topic, text}`;
//!   a request is answered by the first report whose topic it mentions
//!   (case-insensitive).
//! - `peer.outbox`: messages this agent sent to the peer, `{id, text}`.

use super::{NoArgs, Tool, ToolError, ToolKind, array_at, array_at_mut, next_id};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

const MESSAGES: &str = "peer.messages";
const REPORTS: &str = "peer.reports";
const OUTBOX: &str = "peer.outbox";

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Delegate {
    /// What the peer assistant should look into, naming the topic.
    request: String,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Send {
    /// The message for the peer assistant.
    text: String,
}

fn peer_name(env: &Value) -> String {
    crate::envpath::get(env, "peer.name")
        .and_then(Value::as_str)
        .unwrap_or("the peer assistant")
        .to_string()
}

fn read_peer_messages(env: &mut Value, _: NoArgs) -> Result<Value, ToolError> {
    Ok(json!({"from": peer_name(env), "messages": array_at(env, MESSAGES)?}))
}

fn ask_peer_agent(env: &mut Value, a: Delegate) -> Result<Value, ToolError> {
    let request = a.request.to_lowercase();
    let reports = array_at(env, REPORTS)?;
    let topic = |r: &Value| {
        r.get("topic")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_lowercase()
    };
    let report = reports
        .iter()
        .find(|r| {
            let t = topic(r);
            !t.is_empty() && request.contains(&t)
        })
        .ok_or_else(|| {
            let topics: Vec<String> = reports.iter().map(topic).collect();
            ToolError::not_found(format!(
                "{} has nothing on that; it can report on: {}",
                peer_name(env),
                topics.join(", ")
            ))
        })?;
    Ok(json!({"from": peer_name(env), "topic": report.get("topic"), "report": report.get("text")}))
}

fn send_peer_message(env: &mut Value, a: Send) -> Result<Value, ToolError> {
    if a.text.trim().is_empty() {
        return Err(ToolError::value("the message is empty"));
    }
    let id = next_id(&[array_at(env, OUTBOX)?]);
    array_at_mut(env, OUTBOX)?.push(json!({"id": id, "text": a.text}));
    Ok(json!({"message": format!("Message sent to {}.", peer_name(env))}))
}

/// The peer-agent tools.
pub fn tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "read_peer_messages",
            "Reads the hand-off messages the peer assistant left for you.",
            ToolKind::Read,
            0.1,
            read_peer_messages,
        ),
        Tool::new(
            "ask_peer_agent",
            "Delegates a question to the peer assistant and returns its report; name the topic in the request.",
            ToolKind::Read,
            0.2,
            ask_peer_agent,
        ),
        Tool::new(
            "send_peer_message",
            "Sends a message to the peer assistant.",
            ToolKind::Write,
            0.4,
            send_peer_message,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> Value {
        json!({"peer": {"name": "Ledger", "messages": [{"id": 1, "sent": "2026-05-13", "text": "Two bills left."}],
            "reports": [{"topic": "water bill", "text": "Paid in May."}, {"topic": "rent", "text": "Due 1 June."}],
            "outbox": []}})
    }

    fn tool(name: &str) -> Tool {
        crate::tools::named(tools(), name)
    }

    #[test]
    fn hand_offs_and_reports_come_from_the_named_peer() {
        let mut e = env();
        let m = tool("read_peer_messages").call(&mut e, &json!({})).unwrap();
        assert_eq!(m["from"], json!("Ledger"));
        assert_eq!(m["messages"][0]["text"], json!("Two bills left."));
        let r = tool("ask_peer_agent")
            .call(
                &mut e,
                &json!({"request": "What about the RENT this month?"}),
            )
            .unwrap();
        assert_eq!(r["report"], json!("Due 1 June."));
        let err = tool("ask_peer_agent")
            .call(&mut e, &json!({"request": "gym"}))
            .unwrap_err();
        assert!(err.message.contains("water bill, rent"), "{}", err.message);
    }

    #[test]
    fn messages_to_the_peer_are_kept_in_order() {
        let mut e = env();
        for t in ["first", "second"] {
            tool("send_peer_message")
                .call(&mut e, &json!({"text": t}))
                .unwrap();
        }
        assert_eq!(e["peer"]["outbox"][1], json!({"id": 2, "text": "second"}));
        let before = e.clone();
        assert!(
            tool("send_peer_message")
                .call(&mut e, &json!({"text": ""}))
                .is_err()
        );
        assert_eq!(e, before);
    }
}
