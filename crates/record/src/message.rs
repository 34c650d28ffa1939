//! The messages of a conversation, as models exchange them and traces keep them.

use serde::{Deserialize, Serialize};

/// Who wrote a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

/// A tool call as the model proposed it. `arguments` is the raw JSON text, because a
/// real model may send text that does not parse: that is the agent's error to report,
/// not a reason to lose the call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// One chat message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For `Role::Tool`: the call this message answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// For `Role::Tool`: the tool that produced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl Message {
    pub fn system(content: impl Into<String>) -> Self {
        Self::text(Role::System, content)
    }
    pub fn user(content: impl Into<String>) -> Self {
        Self::text(Role::User, content)
    }
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::text(Role::Assistant, content)
    }
    pub fn text(role: Role, content: impl Into<String>) -> Self {
        Message {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            name: None,
        }
    }
    pub fn tool_result(call: &ToolCall, content: impl Into<String>) -> Self {
        Message {
            role: Role::Tool,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: Some(call.id.clone()),
            name: Some(call.name.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_serialise_without_empty_parts() {
        let call = ToolCall {
            id: "c1".into(),
            name: "send".into(),
            arguments: "{\"to\":1}".into(),
        };
        assert_eq!(
            serde_json::to_string(&Message::user("hi")).unwrap(),
            r#"{"role":"user","content":"hi"}"#
        );
        let m = Message::tool_result(&call, "ok");
        let text = serde_json::to_string(&m).unwrap();
        assert_eq!(
            text,
            r#"{"role":"tool","content":"ok","tool_call_id":"c1","name":"send"}"#
        );
        assert_eq!(serde_json::from_str::<Message>(&text).unwrap(), m);
    }
}
