//! `run.json`: the typed manifest of a results folder. It holds the run's identity (the
//! resolved settings every episode in the folder was recorded under), the version and
//! commit that produced it, every invocation into the folder with its times, what the
//! folder has spent, and which models served each role. Reading, writing and hashing it
//! are the harness's (its runner); this is the data.

use crate::errors_as::ErrorPolicy;
use crate::ledger::Ledger;
use crate::role::Component;
use crate::settings::RunSettings;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// One command that wrote into the folder.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Invocation {
    /// The command line, word by word.
    pub command: Vec<String>,
    /// When it started (RFC 3339, UTC).
    pub started: String,
    #[serde(default)]
    pub finished: Option<String>,
    #[serde(default)]
    pub ran: usize,
    #[serde(default)]
    pub errored: usize,
    /// What the command came to, as text: `running` while it lives, then `done`,
    /// `interrupted`, `stopped: <why>`, `refused: <why>`, or `merged <n> shard(s)` (with
    /// ` (partial: <k/n, …> missing)` when shards were left out).
    #[serde(default)]
    pub outcome: InvocationOutcome,
}

/// What one invocation into a folder came to, as `run.json` writes it: `running` while it
/// lives, then `done`, `interrupted`, `stopped: <why>` (a fatal error, or `budget`),
/// `refused: <why>`, or, for `merge`, `merged <n> shard(s)` with ` (partial: <k/n, …>
/// missing)` when some shard was left out. It is read and written as exactly that text,
/// so every `run.json` reads and round-trips byte for byte. A text this version does not
/// know (another version's, or none recorded: the empty string) is not refused: a
/// manifest is still the record of the folder's settings. It is kept as
/// [`InvocationOutcome::Other`] and counts as complete.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InvocationOutcome {
    /// The invocation is still running (or died without saying how it ended).
    Running,
    /// It ran to the end.
    Done,
    /// Ctrl-C stopped it; the episodes so far are recorded.
    Interrupted,
    /// A fatal error or the budget stopped it: why.
    Stopped(String),
    /// It was refused before any episode ran: why.
    Refused(String),
    /// `merge` of this many shards; `missing` names the shards left out (`--partial`).
    Merged {
        shards: usize,
        missing: Option<String>,
    },
    /// A text this version does not know, kept as read (`""`: none recorded).
    Other(String),
}

impl Default for InvocationOutcome {
    fn default() -> InvocationOutcome {
        InvocationOutcome::Other(String::new())
    }
}

impl InvocationOutcome {
    /// The invocation covers only part of what was asked: it was interrupted or stopped,
    /// or merged shards with some missing. A rerun of the same command completes it.
    pub fn is_partial(&self) -> bool {
        match self {
            InvocationOutcome::Interrupted | InvocationOutcome::Stopped(_) => true,
            InvocationOutcome::Merged { missing, .. } => missing.is_some(),
            InvocationOutcome::Running
            | InvocationOutcome::Done
            | InvocationOutcome::Refused(_)
            | InvocationOutcome::Other(_) => false,
        }
    }

    /// Reads the text `run.json` holds; what is not one of the forms above is `Other`.
    pub fn parse(text: &str) -> InvocationOutcome {
        let merged = |rest: &str| -> Option<InvocationOutcome> {
            let (n, rest) = rest.split_once(" shard(s)")?;
            let shards = n.parse().ok()?;
            let missing = if rest.is_empty() {
                None
            } else {
                let m = rest
                    .strip_prefix(" (partial: ")?
                    .strip_suffix(" missing)")?;
                Some(m.to_string())
            };
            Some(InvocationOutcome::Merged { shards, missing })
        };
        match text {
            "running" => InvocationOutcome::Running,
            "done" => InvocationOutcome::Done,
            "interrupted" => InvocationOutcome::Interrupted,
            _ => {
                if let Some(why) = text.strip_prefix("stopped: ") {
                    InvocationOutcome::Stopped(why.to_string())
                } else if let Some(why) = text.strip_prefix("refused: ") {
                    InvocationOutcome::Refused(why.to_string())
                } else if let Some(o) = text.strip_prefix("merged ").and_then(merged) {
                    o
                } else {
                    InvocationOutcome::Other(text.to_string())
                }
            }
        }
    }
}

impl std::fmt::Display for InvocationOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InvocationOutcome::Running => f.write_str("running"),
            InvocationOutcome::Done => f.write_str("done"),
            InvocationOutcome::Interrupted => f.write_str("interrupted"),
            InvocationOutcome::Stopped(why) => write!(f, "stopped: {why}"),
            InvocationOutcome::Refused(why) => write!(f, "refused: {why}"),
            InvocationOutcome::Merged {
                shards,
                missing: None,
            } => write!(f, "merged {shards} shard(s)"),
            InvocationOutcome::Merged {
                shards,
                missing: Some(m),
            } => write!(f, "merged {shards} shard(s) (partial: {m} missing)"),
            InvocationOutcome::Other(text) => f.write_str(text),
        }
    }
}

impl Serialize for InvocationOutcome {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for InvocationOutcome {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<InvocationOutcome, D::Error> {
        let text = String::deserialize(d)?;
        Ok(InvocationOutcome::parse(&text))
    }
}

/// A results folder's manifest, `run.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// The folder's run id.
    pub run_id: String,
    /// The sieve-bench version that first wrote the folder.
    pub crate_version: String,
    /// The commit of the source tree the binary was built from, when known.
    #[serde(default)]
    pub git_commit: Option<String>,
    /// A short hash of `settings`.
    pub identity: String,
    /// Every resolved setting that can change an outcome; a rerun under other settings is
    /// refused.
    pub settings: RunSettings,
    /// Which roles are scripted, and whether a scripted role reads the answer key.
    #[serde(default, deserialize_with = "null_as_default")]
    pub roles: RunRoles,
    /// Some role is scripted.
    pub simulated: bool,
    /// How errored episodes are counted in rates: `excluded` or `agentdojo` for every row,
    /// or `by_family` (each suite family's own); `excluded` when absent (folders written
    /// before the policy was recorded).
    #[serde(default = "crate::errors_as::recorded_before_policies")]
    pub errors_as: ErrorPolicy,
    /// Dollars per million prompt / completion tokens, when the run was priced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price_per_mtok: Option<[f64; 2]>,
    /// `(k, n)` when the folder holds shard k of n (`run --shard k/n`), for `merge`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<(usize, usize)>,
    /// When the first invocation started (RFC 3339, UTC).
    pub started: String,
    #[serde(default)]
    pub finished: Option<String>,
    /// Every command that wrote into the folder, oldest first.
    pub invocations: Vec<Invocation>,
    /// What the folder has spent, over every invocation (and, merged, every shard).
    #[serde(default)]
    pub budget: Ledger,
    /// A merged folder's ledgers by shard (`k/n`), so merging a shard again replaces
    /// its part instead of counting it twice; `budget` is their sum.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub budget_parts: BTreeMap<String, Ledger>,
    /// Per role played by an LLM: the model id requested and the ids the endpoint said
    /// served it (an alias resolves to a dated snapshot).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub served_models: BTreeMap<Component, Lineage>,
    /// Per suite (its qualified name): the utility a do-nothing and a read-only agent get
    /// with its checks, measured when the run started (absent in folders written before
    /// floors were).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub floors: BTreeMap<String, crate::floors::Floors>,
}

/// Which roles are scripted. Scripted planners and judges read the answer key, so beside
/// a real agent they are oracles and every row says so.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunRoles {
    /// The agent is a scripted model (`sim:…`).
    pub agent_scripted: bool,
    /// The planner is a scripted model.
    pub planner_scripted: bool,
    /// The judge is a scripted model.
    pub judge_scripted: bool,
    /// The labels rows carry for the scripted planner and judge (`oracle judge`, …).
    pub helper_labels: Vec<String>,
}

impl RunRoles {
    pub fn scripted_helpers(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        if self.planner_scripted {
            v.push("planner");
        }
        if self.judge_scripted {
            v.push("judge");
        }
        v
    }

    /// A real agent beside a scripted planner or judge.
    pub fn oracle_with_real_agent(&self) -> bool {
        !self.agent_scripted && (self.planner_scripted || self.judge_scripted)
    }

    /// "oracle planner", "oracle judge": what rows of such a run say.
    pub fn oracle_labels(&self) -> Vec<String> {
        self.helper_labels.clone()
    }

    /// The roles that are scripted, by name (`agent`, `planner`, `judge`).
    pub fn scripted(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        if self.agent_scripted {
            v.push("agent");
        }
        v.extend(self.scripted_helpers());
        v
    }
}

/// A field written as `null` reads as its default, as an absent one does.
fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// The model a role asked for and the models that answered.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Lineage {
    /// The model id the role asked for.
    pub requested: String,
    /// The model ids the endpoint said answered.
    pub served: BTreeSet<String>,
}

impl Lineage {
    /// Whether some reply came from a model other than the one requested.
    pub fn differs(&self) -> bool {
        self.served.iter().any(|s| s != &self.requested)
    }
}

#[cfg(test)]
mod tests {
    use super::InvocationOutcome;

    #[test]
    fn every_outcome_reads_back_as_the_text_it_was_written_as() {
        let all = [
            InvocationOutcome::Running,
            InvocationOutcome::Done,
            InvocationOutcome::Interrupted,
            InvocationOutcome::Stopped("budget".into()),
            InvocationOutcome::Stopped("model error: 401: unauthorised".into()),
            InvocationOutcome::Refused("a setting changed".into()),
            InvocationOutcome::Merged {
                shards: 3,
                missing: None,
            },
            InvocationOutcome::Merged {
                shards: 2,
                missing: Some("1/3".into()),
            },
            InvocationOutcome::Other("something newer".into()),
            InvocationOutcome::Other(String::new()),
        ];
        for o in all {
            let text = serde_json::to_string(&o).unwrap();
            let back: InvocationOutcome = serde_json::from_str(&text).unwrap();
            assert_eq!(back, o, "{text}");
            assert_eq!(serde_json::to_string(&back).unwrap(), text);
        }
        assert_eq!(
            serde_json::to_string(&InvocationOutcome::Merged {
                shards: 2,
                missing: Some("1/3, 2/3".into())
            })
            .unwrap(),
            r#""merged 2 shard(s) (partial: 1/3, 2/3 missing)""#
        );
    }

    /// A manifest as older versions wrote it: no `errors_as`, `roles` null, an outcome
    /// this version does not know. It reads, and writes back every value it held.
    #[test]
    fn an_older_manifest_reads_and_keeps_what_it_held() {
        use crate::{ErrorPolicy, ErrorsAs, Manifest};
        let old = serde_json::json!({
            "run_id": "r", "crate_version": "0.1.0", "identity": "abc",
            "settings": {"harness_version": "0.1.0", "agent": {"name": "sim:obedient"},
                "planner": null, "judge": "sim", "embedder": "lexical", "max_steps": 30,
                "defense_config": "d", "system_prompts": {"s/a": "1"}},
            "roles": null, "simulated": true, "started": "t",
            "invocations": [{"command": ["x"], "started": "t", "outcome": "resumed later"}],
        });
        let m: Manifest = serde_json::from_value(old.clone()).unwrap();
        assert_eq!(m.errors_as, ErrorPolicy::All(ErrorsAs::Excluded));
        assert_eq!(m.roles, Default::default());
        assert_eq!(
            m.invocations[0].outcome,
            InvocationOutcome::Other("resumed later".into())
        );
        let back = serde_json::to_value(&m).unwrap();
        for k in ["agent", "planner", "judge", "embedder", "system_prompts"] {
            assert_eq!(back["settings"][k], old["settings"][k], "{k} as written");
        }
        assert_eq!(back["invocations"][0]["outcome"], "resumed later");
        // A policy this version does not know is refused, not read as another.
        let mut bad = old;
        bad["errors_as"] = "agentdjo".into();
        assert!(serde_json::from_value::<Manifest>(bad).is_err());
    }

    #[test]
    fn only_an_interrupted_stopped_or_partly_merged_invocation_is_partial() {
        let partial: Vec<bool> = [
            "done",
            "running",
            "interrupted",
            "stopped: budget",
            "refused: x",
            "merged 2 shard(s)",
            "merged 2 shard(s) (partial: 2/3 missing)",
            "",
            "mystery",
        ]
        .into_iter()
        .map(|t| InvocationOutcome::parse(t).is_partial())
        .collect();
        assert_eq!(
            partial,
            [false, false, true, true, false, false, true, false, false]
        );
    }
}
