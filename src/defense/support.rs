//! What several baselines share: variant options, reading JSON out of a model reply,
//! describing tools in prompts, and the sim hints built from the episode script.
//!
//! The script-reading helpers ([`injected_call`], [`carries_payload`], [`instruction_quotes`])
//! only ever feed a [`SimHint`]: the scripted model turns them into an answer of its
//! profile's stated quality. No defense decision reads them.

use crate::model::SimHint;
use crate::model::sim::EpisodeScript;
use crate::suite::check::loose_eq;
use crate::tools::ToolSchema;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write;

/// Why a defense's variant (the part after `name:`) was refused: nothing was run.
#[derive(Debug, thiserror::Error)]
pub enum VariantError {
    /// A variant the defense does not have (`takes`: the ones it has).
    #[error("defense `{defense}` has no variant `{variant}`; it takes {takes}")]
    UnknownVariant {
        defense: String,
        variant: String,
        takes: &'static str,
    },
    /// An option key the defense does not have.
    #[error("defense `{defense}` has no option `{key}`; it takes {allowed}")]
    UnknownOption {
        defense: String,
        key: String,
        allowed: String,
    },
    /// A number option outside its range, or no number.
    #[error("defense `{defense}`: `{key}` must be a number in [{lo}, {hi}], got `{got}`")]
    OutOfRange {
        defense: String,
        key: String,
        lo: f64,
        hi: f64,
        got: String,
    },
    /// Options that cannot go together, or an option's value that is not usable (a URL
    /// that does not parse).
    #[error("{0}")]
    Invalid(String),
    /// The machine could not build what the variant needs (an HTTP client).
    #[error("{0}")]
    Setup(String),
}

/// Parses a variant such as `judge,threshold=0.7` into flags and `key=value` pairs,
/// refusing keys not in `allowed`.
pub fn options(
    defense: &str,
    variant: Option<&str>,
    allowed: &[&str],
) -> Result<BTreeMap<String, String>, VariantError> {
    let mut out = BTreeMap::new();
    for part in variant
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
    {
        let (k, v) = part.split_once('=').unwrap_or((part, ""));
        if !allowed.contains(&k) {
            return Err(VariantError::UnknownOption {
                defense: defense.to_string(),
                key: k.to_string(),
                allowed: allowed.join(", "),
            });
        }
        out.insert(k.to_string(), v.to_string());
    }
    Ok(out)
}

/// A number option in [lo, hi], or its default.
pub fn number(
    defense: &str,
    opts: &BTreeMap<String, String>,
    key: &str,
    default: f64,
    lo: f64,
    hi: f64,
) -> Result<f64, VariantError> {
    match opts.get(key) {
        None => Ok(default),
        Some(v) => v
            .parse::<f64>()
            .ok()
            .filter(|x| (lo..=hi).contains(x))
            .ok_or_else(|| VariantError::OutOfRange {
                defense: defense.to_string(),
                key: key.to_string(),
                lo,
                hi,
                got: v.clone(),
            }),
    }
}

/// The JSON object in a model reply: the whole text, or the part between the first `{`
/// and the last `}` (models wrap JSON in prose or code fences).
pub fn json_object(text: &str) -> Option<serde_json::Map<String, Value>> {
    let t = text.trim();
    if let Ok(Value::Object(m)) = serde_json::from_str(t) {
        return Some(m);
    }
    let (a, b) = (t.find('{')?, t.rfind('}')?);
    match serde_json::from_str(t.get(a..=b)?) {
        Ok(Value::Object(m)) => Some(m),
        _ => None,
    }
}

/// A number in [0,1] under `key` of a JSON reply.
pub fn unit_number(reply: &str, key: &str) -> Option<f64> {
    json_object(reply)?
        .get(key)?
        .as_f64()
        .filter(|x| (0.0..=1.0).contains(x))
}

/// A list of strings under `key` of a JSON reply.
pub fn string_list(reply: &str, key: &str) -> Option<Vec<String>> {
    json_object(reply)?
        .get(key)?
        .as_array()?
        .iter()
        .map(|v| v.as_str().map(str::to_string))
        .collect()
}

/// The request as a defense's planner is shown it: the setting (persona, today's date)
/// when the suite gives one, then the user's request. Every planner prompt starts with
/// it, so every planner has the same information.
pub fn request_block(ctx: &super::DefenseCtx<'_>) -> String {
    let setting = ctx.suite.meta.setting();
    let request = ctx.user_prompt.trim();
    if setting.is_empty() {
        format!("## The user's request\n{request}")
    } else {
        format!("{setting}\n\n## The user's request\n{request}")
    }
}

/// The tools as a prompt lists them.
pub fn describe_tools(tools: &[ToolSchema], suite: &crate::suite::Suite) -> String {
    let mut s = String::new();
    for t in tools {
        let kind = suite
            .tools
            .get(t.name.as_str())
            .map_or("", |x| match x.kind {
                crate::tools::ToolKind::Read => " [reads]",
                crate::tools::ToolKind::Write => " [changes data]",
            });
        let _ = writeln!(
            s,
            "- {}{kind}: {}\n  arguments: {}",
            t.name.as_str(),
            t.description.trim(),
            t.parameters.get("properties").unwrap_or(&Value::Null)
        );
    }
    s
}

/// Whether a tool is read-only in the suite's tool table (unknown tools are not).
pub fn is_read(suite: &crate::suite::Suite, tool: &str) -> bool {
    suite
        .tools
        .get(tool)
        .is_some_and(|t| t.kind == crate::tools::ToolKind::Read)
}

/// A call written the way prompts and embeddings see it: `tool(a=1, b="x")`.
pub fn call_text(tool: &str, args: &Value) -> String {
    let inner = args
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default();
    format!("{tool}({inner})")
}

/// For the sim hint only: whether a call carries out the injection task's plan and not
/// the user's (the true class a simulated judge's score is drawn for).
pub fn injected_call(script: Option<&EpisodeScript>, tool: &str, args: &Value) -> bool {
    let Some(s) = script else { return false };
    let m = |c: &crate::suite::PlannedCall| c.tool.as_str() == tool && loose_eq(&c.args, args);
    // A data-only attack's call is the user's own with a value read in the data: no
    // injected call to a detector that reads meaning.
    s.injection
        .as_ref()
        .filter(|i| i.substitution.is_none())
        .is_some_and(|i| i.plan.iter().any(m))
        && !s.user_plan.iter().any(m)
}

/// For the sim hint only: whether an instruction the episode injected is readable in
/// `text` (the true class a simulated detector's score is drawn for).
pub fn carries_payload(script: Option<&EpisodeScript>, text: &str) -> bool {
    script
        .and_then(|s| s.injection.as_ref())
        .is_some_and(|i| i.readable_in(text))
}

/// For the sim hint only: the injected instructions as `text` renders them (each
/// readable occurrence, from its first word to its last), what a detector that found
/// them would quote.
pub fn instruction_quotes(script: Option<&EpisodeScript>, text: &str) -> Vec<String> {
    let mut quotes: Vec<String> = Vec::new();
    for i in script
        .and_then(|s| s.injection.as_ref())
        .map_or(&[][..], |i| &i.instructions)
    {
        for span in i.spans_in(text) {
            let q = text[span].to_string();
            if !quotes.contains(&q) {
                quotes.push(q);
            }
        }
    }
    quotes
}

/// For the sim hint only: a detector that quotes the injected text it found. Fires when
/// the text carries a readable instruction; its quotes are the instruction as the text
/// renders it, or (a false alarm) the text's first line. `field` names the reply's list,
/// `key` the memo of the draw.
pub fn quoting_hint(
    script: Option<&EpisodeScript>,
    text: &str,
    key: String,
    field: &str,
) -> SimHint {
    let quotes = instruction_quotes(script, text);
    let positive = !quotes.is_empty();
    let quoted: Vec<String> = if positive {
        quotes
    } else {
        vec![text.lines().next().unwrap_or("").to_string()]
    };
    scored(
        positive,
        key,
        0,
        serde_json::json!({ field: quoted }).to_string(),
        serde_json::json!({ field: [] }).to_string(),
    )
}

/// A classifier hint: `positive` is the true class; the reply texts may use `{score}`.
pub fn scored(positive: bool, key: String, levels: u32, flagged: String, clear: String) -> SimHint {
    SimHint::Scored {
        positive,
        key,
        levels,
        flagged,
        clear,
    }
}

#[cfg(test)]
pub mod testing {
    //! A scripted model that replays fixed replies, and a context to call hooks with.

    use crate::defense::{DefenseCtx, DefenseStats};
    use crate::model::sim::EpisodeScript;
    use crate::model::{ChatModel, ChatReply, ChatRequest, ModelError, Models};
    use crate::suite::Suite;
    use crate::tools::ToolSchema;
    use async_trait::async_trait;
    use sieve_record::{CostMeter, Message, Usage};
    use std::sync::{Arc, Mutex};

    /// Replies with the queued texts in order, then with the last one forever; records
    /// every request's messages.
    pub struct Canned {
        pub replies: Mutex<Vec<String>>,
        pub seen: Mutex<Vec<Vec<Message>>>,
    }

    impl Canned {
        pub fn new(replies: &[&str]) -> Arc<Canned> {
            Arc::new(Canned {
                replies: Mutex::new(replies.iter().map(|s| s.to_string()).collect()),
                seen: Mutex::new(Vec::new()),
            })
        }
    }

    #[async_trait]
    impl ChatModel for Canned {
        fn name(&self) -> &str {
            "canned"
        }
        fn simulated(&self) -> bool {
            true
        }
        async fn chat(&self, req: &ChatRequest<'_>) -> Result<ChatReply, ModelError> {
            self.seen.lock().unwrap().push(req.messages.to_vec());
            let mut q = self.replies.lock().unwrap();
            let text = if q.len() > 1 {
                q.remove(0)
            } else {
                q.first().cloned().unwrap_or_default()
            };
            Ok(ChatReply {
                message: Message::assistant(text),
                usage: Usage {
                    prompt_tokens: 10,
                    completion_tokens: 2,
                    ..Usage::default()
                },
                latency_ms: 0.0,
                finish_reason: None,
                retries: 0,
                served_model: None,
            })
        }
    }

    pub fn models(model: Arc<dyn ChatModel>) -> Models {
        Models {
            agent: model.clone(),
            planner: model.clone(),
            judge: model,
            embedder: Arc::new(crate::embed::Lexical),
            tokens: Arc::new(crate::model::tokens::TokenCounter::new().unwrap()),
        }
    }

    pub fn banking() -> Suite {
        crate::suite::load(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("suites/dojo-style/banking"),
        )
        .unwrap()
    }

    /// Everything a hook context borrows, owned in one place.
    pub struct Bench {
        pub suite: Suite,
        pub tools: Vec<ToolSchema>,
        pub history: Vec<Message>,
        pub models: Models,
        pub script: Arc<EpisodeScript>,
        /// The episode's seed, carried by every model call a hook makes.
        pub seed: u64,
        pub meter: CostMeter,
        pub stats: DefenseStats,
        pub prompt: String,
    }

    impl Bench {
        /// The banking suite's first user task, with a model that replays `replies`.
        pub fn new(replies: &[&str]) -> Bench {
            let suite = banking();
            let ut = &suite.user_tasks[0];
            let script = Arc::new(EpisodeScript {
                user_plan: ut.plan.clone(),
                answer: String::new(),
                injection: None,
                alternatives: Vec::new(),
                needs: Vec::new(),
            });
            Bench {
                tools: suite.tools.schemas(),
                prompt: ut.prompt.clone(),
                history: Vec::new(),
                models: models(Canned::new(replies)),
                script,
                seed: 1,
                meter: CostMeter::default(),
                stats: DefenseStats::default(),
                suite,
            }
        }

        pub fn ctx(&mut self) -> DefenseCtx<'_> {
            DefenseCtx {
                suite: &self.suite,
                user_prompt: &self.prompt,
                tools: &mut self.tools,
                history: &self.history,
                models: &self.models,
                seed: self.seed,
                script: Some(&self.script),
                meter: &mut self.meter,
                stats: &mut self.stats,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_json_wrapped_in_prose_and_refuses_bad_options() {
        assert_eq!(
            unit_number("Sure! ```json\n{\"score\": 0.25}\n```", "score"),
            Some(0.25)
        );
        assert_eq!(unit_number("{\"score\": 3}", "score"), None);
        assert_eq!(unit_number("no json here", "score"), None);
        assert_eq!(
            string_list("{\"tools\": [\"a\", \"b\"]}", "tools"),
            Some(vec!["a".into(), "b".into()])
        );
        assert_eq!(string_list("{\"tools\": [\"a\", 1]}", "tools"), None);
        let o = options("x", Some("judge, threshold=0.7"), &["judge", "threshold"]).unwrap();
        assert_eq!(o["threshold"], "0.7");
        assert!(options("x", Some("bogus"), &["judge"]).is_err());
        assert!(number("x", &o, "threshold", 0.5, 0.0, 0.6).is_err());
        assert_eq!(
            call_text("send_money", &serde_json::json!({"amount": 5, "to": "x"})),
            "send_money(amount=5, to=\"x\")"
        );
    }
}
