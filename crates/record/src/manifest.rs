//! `run.json`: the typed manifest of a results folder. It holds the run's identity (the
//! resolved settings every episode in the folder was recorded under), the version and
//! commit that produced it, every invocation into the folder with its times, what the
//! folder has spent, and which models served each role. Reading, writing and hashing it
//! are the harness's (its runner); this is the data.

use crate::ledger::Ledger;
use crate::role::Component;
use crate::settings::RunSettings;
use serde::{Deserialize, Serialize};
use serde_json::Value;
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
    /// `done`, `interrupted`, `stopped: <why>`, or `running` while it lives.
    #[serde(default)]
    pub outcome: String,
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
    #[serde(default)]
    pub roles: Value,
    /// Some role is scripted.
    pub simulated: bool,
    /// How errored episodes are counted in rates: `excluded` or `agentdojo` for every row,
    /// or `by_family` (each suite family's own; see `metrics::ErrorPolicy`).
    #[serde(default)]
    pub errors_as: String,
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
