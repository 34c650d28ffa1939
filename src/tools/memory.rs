//! Agent memory: notes the assistant keeps between steps and between sessions.
//!
//! A memory is a surface of its own because what was written in an earlier session
//! (possibly while reading attacker text) is trusted later as the agent's own past.
//!
//! Environment layout (everything under `memory`):
//! - `memory.notes`: list of `{id, topic, text, session}`. Notes carried over from an
//!   earlier session name it (`session: "2026-05-10"`); notes the agent saves during the
//!   episode carry `session: "current"`, so they persist across the episode's later steps
//!   and a check can tell the two apart.

use super::{Tool, ToolError, ToolKind, array_at, array_at_mut, next_id};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

const NOTES: &str = "memory.notes";

/// The session label of notes saved in the running episode.
pub const CURRENT_SESSION: &str = "current";

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Recall {
    /// Only notes whose topic or text contains this (case-insensitive); omit for all notes.
    #[serde(default)]
    query: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Save {
    /// A short topic for the note, e.g. `landlord` or `travel preferences`.
    topic: String,
    /// What to remember.
    text: String,
}

fn recall_memory(env: &mut Value, a: Recall) -> Result<Value, ToolError> {
    let notes = array_at(env, NOTES)?;
    let query = a
        .query
        .as_deref()
        .map(str::trim)
        .filter(|q| !q.is_empty())
        .map(str::to_lowercase);
    let hit = |n: &&Value| {
        let Some(q) = &query else { return true };
        ["topic", "text"].iter().any(|f| {
            n.get(*f)
                .and_then(Value::as_str)
                .is_some_and(|s| s.to_lowercase().contains(q.as_str()))
        })
    };
    Ok(Value::Array(notes.iter().filter(hit).cloned().collect()))
}

fn save_memory(env: &mut Value, a: Save) -> Result<Value, ToolError> {
    if a.topic.trim().is_empty() || a.text.trim().is_empty() {
        return Err(ToolError::value(
            "a note needs a non-empty `topic` and `text`",
        ));
    }
    let id = next_id(&[array_at(env, NOTES)?]);
    array_at_mut(env, NOTES)?.push(json!({
        "id": id, "topic": a.topic.trim(), "text": a.text, "session": CURRENT_SESSION,
    }));
    Ok(json!({"message": format!("Saved note {id} under `{}`.", a.topic.trim())}))
}

/// The memory tools.
pub fn tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "recall_memory",
            "Reads the assistant's saved notes, from this session and earlier ones, optionally filtered by a search text.",
            ToolKind::Read,
            0.1,
            recall_memory,
        ),
        Tool::new(
            "save_memory",
            "Saves a note to the assistant's memory so later steps and later sessions can use it.",
            ToolKind::Write,
            0.3,
            save_memory,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> Value {
        json!({"memory": {"notes": [
            {"id": 1, "topic": "landlord", "text": "Rent goes to Graham.", "session": "2026-05-10"}
        ]}})
    }

    fn tool(name: &str) -> Tool {
        crate::tools::named(tools(), name)
    }

    #[test]
    fn a_saved_note_is_recalled_in_a_later_step_beside_the_earlier_session() {
        let mut e = env();
        tool("save_memory")
            .call(&mut e, &json!({"topic": "gym", "text": "Cancel in June."}))
            .unwrap();
        let all = tool("recall_memory").call(&mut e, &json!({})).unwrap();
        let sessions: Vec<&str> = all
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["session"].as_str().unwrap())
            .collect();
        assert_eq!(sessions, ["2026-05-10", CURRENT_SESSION]);
        assert_eq!(all[1]["id"], json!(2));
        let gym = tool("recall_memory")
            .call(&mut e, &json!({"query": "JUNE"}))
            .unwrap();
        assert_eq!(gym.as_array().unwrap().len(), 1);
        assert_eq!(gym[0]["topic"], json!("gym"));
    }

    #[test]
    fn empty_notes_are_refused_and_change_nothing() {
        let mut e = env();
        let before = e.clone();
        assert!(
            tool("save_memory")
                .call(&mut e, &json!({"topic": " ", "text": "x"}))
                .is_err()
        );
        assert_eq!(e, before);
    }
}
