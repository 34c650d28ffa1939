//! SIEVE's call notes as plain data: each proposed call with the path it took through the
//! defense and, when escalated, its adjudication. SIEVE writes them into a record's
//! `notes.calls`; the aggregate reads them back with [`noted_calls`], so a renamed path is
//! a compiler error rather than a column gone to zero.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// The path a proposed call took through the defense.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallPath {
    /// Passed layer 1 and ran without any model call.
    Layer1,
    /// Escalated and approved by the adjudicator; ran.
    Approved,
    /// Escalated and blocked.
    Blocked,
    /// Escalated and fell in the gray band: counted as a block.
    AskedUser,
    /// Failed layer 1 under `layer1-only`: blocked without a judge.
    BlockedLayer1,
}

impl CallPath {
    pub fn executed(self) -> bool {
        matches!(self, CallPath::Layer1 | CallPath::Approved)
    }
}

/// One proposed call in the notes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CallNote {
    pub step: usize,
    pub tool: String,
    pub args: Value,
    pub path: CallPath,
    /// The node it matched (layer 1) or the node added for it (graph update).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// Each argument's source, when layer 1 passed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sources: Option<BTreeMap<String, String>>,
    /// Why layer 1 did not pass.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layer1: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub adjudication: Option<Adjudication>,
}

/// What the adjudicator decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Approve,
    AskUser,
    Block,
}

/// A parsed judge reply. `error` is set when the reply was unusable (score then 0).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JudgeReply {
    pub score: f64,
    pub reason: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The full record of one adjudication.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Adjudication {
    pub s_sem: Option<f64>,
    pub s_causal: Option<f64>,
    pub s_prov: f64,
    /// Where the least trusted argument came from (what set `s_prov`).
    pub provenance: String,
    pub risk: f64,
    pub s_align: f64,
    pub outcome: Outcome,
    /// What the agent read just before proposing the call (shown to the judge).
    pub trigger: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judge: Option<JudgeReply>,
}

/// What the aggregate reads of one call in a record's notes: its path and, when it was
/// adjudicated, its alignment score.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NotedCall {
    pub path: CallPath,
    pub s_align: Option<f64>,
}

/// The calls of a record's `notes.calls`, in order; `None` when the defense keeps no
/// per-call notes. Notes are free-form for other defenses (a plugin writes its own), so
/// an entry without one of [`CallPath`]'s paths is skipped rather than failing the record.
pub fn noted_calls(notes: &Value) -> Option<Vec<NotedCall>> {
    let calls = notes.get("calls")?.as_array()?;
    Some(
        calls
            .iter()
            .filter_map(|c| {
                let path = CallPath::deserialize(c.get("path")?).ok()?;
                let s_align = c
                    .get("adjudication")
                    .and_then(|a| a.get("s_align"))
                    .and_then(Value::as_f64);
                Some(NotedCall { path, s_align })
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn note(path: CallPath, adjudication: Option<Adjudication>) -> CallNote {
        CallNote {
            step: 1,
            tool: "send_money".into(),
            args: json!({"amount": 5}),
            path,
            node: None,
            sources: None,
            layer1: Some("no node".into()),
            adjudication,
        }
    }

    #[test]
    fn call_notes_read_back_as_written() {
        let adj = Adjudication {
            s_sem: Some(0.5),
            s_causal: None,
            s_prov: 1.0,
            provenance: "user".into(),
            risk: 0.25,
            s_align: 0.75,
            outcome: Outcome::AskUser,
            trigger: "read".into(),
            judge: Some(JudgeReply {
                score: 0.5,
                reason: "fits".into(),
                error: None,
            }),
        };
        let n = note(CallPath::AskedUser, Some(adj));
        let v = serde_json::to_value(&n).unwrap();
        assert_eq!(v["path"], json!("asked_user"));
        assert_eq!(v["adjudication"]["outcome"], json!("ask_user"));
        assert!(v.get("node").is_none() && v["adjudication"]["judge"].get("error").is_none());
        assert_eq!(serde_json::from_value::<CallNote>(v).unwrap(), n);
    }

    #[test]
    fn noted_calls_are_typed_and_foreign_entries_skipped() {
        assert_eq!(noted_calls(&json!({"mode": "x"})), None);
        assert_eq!(noted_calls(&Value::Null), None);
        let adjudicated = note(
            CallPath::Approved,
            Some(Adjudication {
                s_sem: None,
                s_causal: Some(0.9),
                s_prov: 0.5,
                provenance: "tool".into(),
                risk: 0.0,
                s_align: 0.8,
                outcome: Outcome::Approve,
                trigger: String::new(),
                judge: None,
            }),
        );
        let notes = json!({"calls": [
            note(CallPath::Layer1, None),
            {"step": 0, "tool": "t", "arguments": {}},
            {"path": "elsewhere"},
            adjudicated,
            note(CallPath::BlockedLayer1, None),
        ]});
        let calls = noted_calls(&notes).unwrap();
        assert_eq!(
            calls,
            [
                NotedCall {
                    path: CallPath::Layer1,
                    s_align: None
                },
                NotedCall {
                    path: CallPath::Approved,
                    s_align: Some(0.8)
                },
                NotedCall {
                    path: CallPath::BlockedLayer1,
                    s_align: None
                },
            ]
        );
        assert!(calls[0].path.executed() && calls[1].path.executed());
        assert!(!calls[2].path.executed());
    }
}
