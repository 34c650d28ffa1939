//! The settings of a run that decide outcomes, as `run.json` records them, and how two
//! of them differ. The harness resolves them from its flags and hashes them into the
//! run's identity (its runner); a rerun into the same folder is compared here, setting by
//! setting, so the refusal names the exact setting that changed.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// The settings of a run that decide outcomes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunSettings {
    /// The harness's version: its prompts, tools and loop.
    pub harness_version: String,
    /// Each role's model as resolved (endpoint, alias, tool format, sampling, caps,
    /// scripted knobs), from `ChatModel::identity`.
    pub agent: ModelIdentity,
    /// The planner's model as resolved (as `agent`).
    pub planner: ModelIdentity,
    /// The judge's model as resolved (as `agent`).
    pub judge: ModelIdentity,
    /// The embedder as resolved (`lexical`, an endpoint, MiniLM).
    pub embedder: ModelIdentity,
    /// `--max-steps`: the cap on agent turns.
    pub max_steps: usize,
    /// A hash of the defenses' configuration content (SIEVE config file, ad-hoc weights).
    pub defense_config: String,
    /// Per suite, a hash of the agent's system prompt. Reruns may add suites; a suite
    /// present in both must match.
    pub system_prompts: BTreeMap<String, String>,
    /// Settings added by other features (a flag's name → its resolved value). Reruns
    /// compare every key present in either.
    #[serde(default)]
    pub extra: BTreeMap<String, Value>,
}

/// A model (or embedder) as resolved: what `ChatModel::identity` gives, its name and every
/// setting of its backend that can change a reply. It is open-ended by nature, so it is
/// kept as the JSON the backend gave, behind this type: each backend has settings of its
/// own (an OpenAI endpoint's `extra_body` is whatever JSON the user passes), and folders
/// written before a backend's settings were recorded hold a bare name or `null`, which
/// must read, compare and hash exactly as they were written (the run identity is a hash
/// of the serialised settings). Two identities are compared setting by setting
/// ([`RunSettings::changes_from`] names the one that differs); the settings read out of
/// it are read here only ([`ModelIdentity::name`], [`ModelIdentity::model_name`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ModelIdentity {
    json: Value,
}

impl ModelIdentity {
    /// A backend's identity as it describes itself.
    pub fn new(json: Value) -> ModelIdentity {
        ModelIdentity { json }
    }

    /// The identity as JSON, as `run.json` holds it.
    pub fn as_json(&self) -> &Value {
        &self.json
    }

    /// The name the model was selected by (`openai:gpt-4o-mini`, `sim:obedient`), also
    /// from an older folder that recorded the bare name.
    pub fn name(&self) -> Option<&str> {
        match &self.json {
            Value::String(s) => Some(s),
            o => o.get("name")?.as_str(),
        }
    }

    /// The model id an LLM endpoint is asked for (its `model` setting, `gpt-4o-mini`);
    /// `None` for a backend that names no such model (the scripted one, an older
    /// folder's bare name).
    pub fn model_name(&self) -> Option<&str> {
        self.json.get("model")?.as_str()
    }
}

/// One setting that differs between the recorded run and this invocation.
#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    pub field: String,
    pub recorded: String,
    pub now: String,
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: recorded {}, now {}",
            self.field, self.recorded, self.now
        )
    }
}

fn show(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "(none)".into(),
        o => o.to_string(),
    }
}

/// The leaves of a JSON value as `path → value`, so a change names the exact setting
/// (`agent.temperature`) rather than the whole model.
fn leaves(prefix: &str, v: &Value, out: &mut BTreeMap<String, Value>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                leaves(&format!("{prefix}.{k}"), x, out);
            }
        }
        o => {
            out.insert(prefix.to_string(), o.clone());
        }
    }
}

impl RunSettings {
    /// Every setting that differs from `recorded`, named by its path.
    pub fn changes_from(&self, recorded: &RunSettings) -> Vec<Change> {
        let mut a = BTreeMap::new();
        let mut b = BTreeMap::new();
        let (rv, nv) = (
            serde_json::to_value(recorded).expect("settings serialise"),
            serde_json::to_value(self).expect("settings serialise"),
        );
        for (k, x) in rv.as_object().expect("object") {
            if k != "system_prompts" {
                leaves(k, x, &mut a);
            }
        }
        for (k, x) in nv.as_object().expect("object") {
            if k != "system_prompts" {
                leaves(k, x, &mut b);
            }
        }
        let mut changes = Vec::new();
        let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
        for k in keys {
            let (x, y) = (
                a.get(k).unwrap_or(&Value::Null),
                b.get(k).unwrap_or(&Value::Null),
            );
            if x != y {
                changes.push(Change {
                    field: k.clone(),
                    recorded: show(x),
                    now: show(y),
                });
            }
        }
        for (suite, h) in &self.system_prompts {
            if let Some(old) = recorded.system_prompts.get(suite)
                && old != h
            {
                changes.push(Change {
                    field: format!("system prompt of {suite}"),
                    recorded: old.clone(),
                    now: h.clone(),
                });
            }
        }
        changes
    }

    /// These settings with the suites of `recorded` this run does not touch, so the
    /// manifest keeps every suite the folder holds.
    pub fn merged_with(&self, recorded: &RunSettings) -> RunSettings {
        let mut s = self.clone();
        for (k, v) in &recorded.system_prompts {
            s.system_prompts
                .entry(k.clone())
                .or_insert_with(|| v.clone());
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn settings() -> RunSettings {
        RunSettings {
            harness_version: "0.1.0".into(),
            agent: ModelIdentity::new(
                json!({"name": "openai:m", "temperature": 0.0, "max_tokens": 2048}),
            ),
            planner: ModelIdentity::new(json!({"name": "sim:obedient"})),
            judge: ModelIdentity::new(json!({"name": "sim:obedient"})),
            embedder: ModelIdentity::new(json!({"name": "lexical"})),
            max_steps: 30,
            defense_config: "abc".into(),
            system_prompts: BTreeMap::from([("s/a".into(), "1".into())]),
            extra: BTreeMap::new(),
        }
    }

    #[test]
    fn each_change_is_named_by_its_path() {
        let old = settings();
        assert!(old.changes_from(&old).is_empty());
        let mut new = old.clone();
        new.agent =
            ModelIdentity::new(json!({"name": "openai:m", "temperature": 0.7, "max_tokens": 2048}));
        new.max_steps = 10;
        new.judge = ModelIdentity::new(json!({"name": "openai:j"}));
        let names: Vec<String> = new
            .changes_from(&old)
            .into_iter()
            .map(|c| c.field)
            .collect();
        assert_eq!(names, ["agent.temperature", "judge.name", "max_steps"]);
        let c = &new.changes_from(&old)[0];
        assert_eq!((c.recorded.as_str(), c.now.as_str()), ("0.0", "0.7"));
    }

    #[test]
    fn an_identity_names_its_model_and_serialises_as_given() {
        let openai = ModelIdentity::new(
            json!({"name": "openai:m", "base_url": "http://h/v1", "model": "gpt-x", "seed": null}),
        );
        assert_eq!(openai.name(), Some("openai:m"));
        assert_eq!(openai.model_name(), Some("gpt-x"));
        assert_eq!(
            serde_json::to_string(&openai).unwrap(),
            r#"{"name":"openai:m","base_url":"http://h/v1","model":"gpt-x","seed":null}"#
        );
        let sim = ModelIdentity::new(json!({"name": "sim:obedient", "script_revision": 3}));
        assert_eq!((sim.name(), sim.model_name()), (Some("sim:obedient"), None));
        // Older folders: a bare name, or nothing.
        let bare: ModelIdentity = serde_json::from_str(r#""openai:m""#).unwrap();
        assert_eq!((bare.name(), bare.model_name()), (Some("openai:m"), None));
        assert_eq!(serde_json::to_string(&bare).unwrap(), r#""openai:m""#);
        let none: ModelIdentity = serde_json::from_str("null").unwrap();
        assert_eq!((none.name(), none.model_name()), (None, None));
    }

    #[test]
    fn suites_may_be_added_but_not_changed_and_extras_compare_both_ways() {
        let old = settings();
        let mut new = old.clone();
        new.system_prompts = BTreeMap::from([("s/b".into(), "2".into())]);
        assert!(new.changes_from(&old).is_empty());
        assert_eq!(new.merged_with(&old).system_prompts.len(), 2);
        new.system_prompts.insert("s/a".into(), "9".into());
        assert_eq!(new.changes_from(&old)[0].field, "system prompt of s/a");
        let mut extra = old.clone();
        extra
            .extra
            .insert("tool_descriptions".into(), json!("lure"));
        assert_eq!(extra.changes_from(&old)[0].field, "extra.tool_descriptions");
        assert_eq!(old.changes_from(&extra).len(), 1);
    }
}
