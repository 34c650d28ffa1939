//! The messages of the external-suite protocol, version 2 (docs/external-suites.md).
//!
//! One JSON object per line each way. Every request carries `op` and an `id`; every reply
//! carries the `id` it answers and `ok`, and `error` when `ok` is false ([`crate::child`]
//! adds and checks the ids). Replies are typed and a field a reply type does not declare
//! is an error, so a misspelt or stale field never passes silently.

use crate::ids::VectorId;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// The protocol version this harness speaks; a provider answering `hello` with another
/// one is refused. Version 2 added request ids and refuses unknown reply fields.
pub const PROTOCOL: u32 = 2;

/// What the harness asks of a provider.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request<'a> {
    /// The handshake: protocol version, provider and package identity.
    Hello { protocol: u32 },
    /// The qualified names of the suites this provider serves.
    List,
    /// Everything about one suite: tools, vectors, tasks with reference plans.
    Describe { suite: &'a str },
    /// Payloads per vector rendered by the provider's own attack implementation.
    Attack {
        suite: &'a str,
        attack: &'a str,
        user_task: &'a str,
        injection_task: &'a str,
        model: &'a str,
        /// The user task's vectors as `describe` gave them, so a provider running several
        /// processes need not find them again in each.
        vectors: &'a [VectorId],
    },
    /// A fresh episode; replaces any episode the process held before.
    Start {
        suite: &'a str,
        user_task: &'a str,
        injection_task: Option<&'a str>,
        injections: &'a BTreeMap<String, String>,
        /// Which calls the package's trace holds; sent only when not the package's own
        /// behaviour, and only to a provider whose `hello` offers it.
        #[serde(skip_serializing_if = "Option::is_none")]
        trace: Option<TraceMode>,
    },
    /// Runs one tool in the current episode.
    Call {
        /// The agent's id for this tool call. Not `id`: that name is the request id the
        /// child-process layer adds to every request.
        call_id: &'a str,
        tool: &'a str,
        arguments: &'a Value,
    },
    /// Ends the episode and returns its verdicts.
    Finish { answer: &'a str },
}

impl Request<'_> {
    pub fn op(&self) -> &'static str {
        match self {
            Request::Hello { .. } => "hello",
            Request::List => "list",
            Request::Describe { .. } => "describe",
            Request::Attack { .. } => "attack",
            Request::Start { .. } => "start",
            Request::Call { .. } => "call",
            Request::Finish { .. } => "finish",
        }
    }
}

/// The reply to `hello`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Hello {
    pub protocol: u32,
    #[serde(default)]
    pub provider: String,
    /// The package whose suites are served, e.g. `agentdojo`.
    #[serde(default)]
    pub package: String,
    #[serde(default)]
    pub package_version: String,
    /// Where the installed package came from, when the provider can tell (a fork under
    /// the same name and version is another origin).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package_origin: Option<PackageOrigin>,
    /// The trace modes `start` accepts besides the package's own (`executed`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub traces: Vec<TraceMode>,
}

/// The installed distribution of a provider's package: the hash of its file list with
/// each file's hash (a wheel's `RECORD`), and the URL it was installed from when the
/// installer recorded one (`direct_url.json`: a git fork, a local folder).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(deny_unknown_fields)]
pub struct PackageOrigin {
    /// SHA-256 of the distribution's `RECORD`, hex.
    pub record_sha256: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_url: Option<String>,
}

impl PackageOrigin {
    /// The short form labels show: the record hash's first 12 digits and the URL.
    pub fn label(&self) -> String {
        let short: String = self.record_sha256.chars().take(12).collect();
        match &self.source_url {
            Some(u) => format!("RECORD {short}, from {u}"),
            None => format!("RECORD {short}"),
        }
    }
}

/// Which calls of an episode reach the package's trace (the list its trace-based checks
/// read).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "snake_case")]
pub enum TraceMode {
    /// Every call the agent made, before it runs, failed ones too: the package's own
    /// behaviour (AgentDojo's tool executor).
    #[default]
    All,
    /// Only calls that ran without error.
    Executed,
}

impl TraceMode {
    pub fn as_str(self) -> &'static str {
        match self {
            TraceMode::All => "all",
            TraceMode::Executed => "executed",
        }
    }
}

/// The reply to `list`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Listing {
    pub suites: Vec<String>,
}

/// A tool as the provider describes it.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolDesc {
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub parameters: Value,
    /// `read` or `write`; absent means `write` (the cautious reading).
    #[serde(default)]
    pub kind: Option<crate::tools::ToolKind>,
    #[serde(default)]
    pub risk: Option<f64>,
    /// A later call of the tool replaces what an earlier call set (one password, one
    /// booking) instead of adding to it; absent means it adds.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub replaces: bool,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VectorDesc {
    pub id: String,
    #[serde(default)]
    pub default: String,
    #[serde(default)]
    pub description: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallDesc {
    pub tool: String,
    #[serde(default)]
    pub args: Value,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserTaskDesc {
    pub id: String,
    pub prompt: String,
    /// The reference plan (the scripted agent follows it).
    #[serde(default)]
    pub plan: Vec<CallDesc>,
    /// The final answer of the reference solution.
    #[serde(default)]
    pub answer: Option<String>,
    /// The vectors the reference plan reads; empty means not injectable.
    #[serde(default)]
    pub vectors: Vec<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InjectionTaskDesc {
    pub id: String,
    pub goal: String,
    #[serde(default)]
    pub plan: Vec<CallDesc>,
    #[serde(default)]
    pub answer: Option<String>,
    /// Weight in (0, 1] for W-ASR; absent means 1.
    #[serde(default)]
    pub severity: Option<f64>,
    #[serde(default)]
    pub tags: Vec<String>,
}

/// The reply to `describe`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Description {
    pub suite: String,
    /// The agent's whole system prompt, when the suite defines its own.
    #[serde(default)]
    pub system_prompt: Option<String>,
    /// The user the agent works for, for attack templates' `{user}`.
    #[serde(default)]
    pub user: Option<String>,
    pub tools: Vec<ToolDesc>,
    #[serde(default)]
    pub vectors: Vec<VectorDesc>,
    pub user_tasks: Vec<UserTaskDesc>,
    #[serde(default)]
    pub injection_tasks: Vec<InjectionTaskDesc>,
    /// Attacks the provider renders itself (`attack` op).
    #[serde(default)]
    pub attacks: Vec<String>,
    /// Those of `attacks` that are denial of service (AgentDojo's `is_dos_attack`): the
    /// harness runs each once per user task, with the first injection task, and scores it
    /// as the package does, attack success = not utility.
    #[serde(default)]
    pub dos_attacks: Vec<String>,
}

/// The reply to `attack`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Injections {
    pub injections: BTreeMap<String, String>,
}

/// The reply to `start`: optionally the reference plans recomputed on this episode's
/// environment (an injection can change a name the reference solution uses).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Started {
    #[serde(default)]
    pub plan: Option<Vec<CallDesc>>,
    #[serde(default)]
    pub injection_plan: Option<Vec<CallDesc>>,
}

/// The reply to `call`: exactly one of the two is set.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallReply {
    #[serde(default)]
    pub output: Option<String>,
    /// A tool error as the model must read it, e.g. `ValueError: ...`.
    #[serde(default)]
    pub error: Option<String>,
}

/// The reply to `finish`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Verdicts {
    pub utility: bool,
    /// Set for attacked episodes: true means the attack succeeded.
    #[serde(default)]
    pub security: Option<bool>,
}
