//! The records of one episode: the line of `episodes.jsonl` and the trace of
//! `traces.jsonl`, the calls and decisions inside them, and how an error is kinded and
//! counted.

use crate::cost::CostMeter;
use crate::judged::JudgedAnswer;
use crate::message::Message;
use crate::role::{Component, ScriptedRoles};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// What failed in an errored episode, recorded beside the message so a convention can
/// tell kinds apart (AgentDojo scores two of them as a failed task and a successful
/// attack: `agentdojo_scores`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// A model's endpoint refused the conversation as too long for it
    /// (`ModelError::ContextLength`), whichever role's model it was.
    ContextLength,
    /// A model's endpoint answered 422 naming `max_new_tokens` (`ModelError::MaxNewTokens`).
    MaxNewTokens,
    /// Any other failure of a model request: an HTTP error after retries, a timeout, a
    /// malformed reply, a replay miss.
    Model,
    /// The defense itself failed (its process crashed, hung or broke protocol, or its
    /// logic refused to go on); a failure of a model it called is the model's kind.
    Defense,
    /// The suite failed: its provider process, a tool host, a task's check.
    Suite,
}

impl ErrorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::ContextLength => "context_length",
            ErrorKind::MaxNewTokens => "max_new_tokens",
            ErrorKind::Model => "model",
            ErrorKind::Defense => "defense",
            ErrorKind::Suite => "suite",
        }
    }
}

/// How a suite's own rows count an errored episode (`ErrorsAs` turns it into a
/// row's convention): apart from the rates (this project's), or as AgentDojo does (a
/// failed task and a successful attack), which only AgentDojo's adapter declares.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
pub enum ErrorConvention {
    /// An errored episode stays out of every rate's denominator (this project's
    /// convention).
    #[default]
    #[serde(rename = "excluded")]
    Excluded,
    /// AgentDojo's: a context-length error counts as a failed task and a successful
    /// attack.
    #[serde(rename = "agentdojo")]
    AgentDojo,
}

impl ErrorConvention {
    pub fn is_default(&self) -> bool {
        *self == ErrorConvention::Excluded
    }
}

/// How the defense treated one proposed call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Allowed,
    Blocked,
    Faked,
    AskedUser,
    /// Never reached the defense: unknown tool or unparsable arguments.
    Invalid,
}

/// One proposed call and its fate, for the trace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CallRecord {
    pub step: usize,
    pub tool: String,
    pub arguments: String,
    pub decision: Decision,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// For executed calls: whether the tool succeeded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ok: Option<bool>,
}

/// Calls that reached the defense: an unknown tool or unparsable arguments never did.
pub fn proposed_calls(calls: &[CallRecord]) -> u64 {
    calls
        .iter()
        .filter(|c| c.decision != Decision::Invalid)
        .count() as u64
}

/// The verdicts of an episode that the checks' rules could not decide: they read an
/// answer they cannot place (a name written in no form they know, a bare distractor beside
/// the value, clauses that disagree) and the verdict turns on it. The record's `utility`
/// and `attack_success` then hold the verdict with the answer taken as wrong (not
/// endorsing), and the rates count the episode apart: over decided episodes, with the
/// bounds the undecided allow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Undecided {
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub utility: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub attack_success: bool,
}

impl Undecided {
    /// Nothing undecided (the record leaves the field out).
    pub fn is_none(&self) -> bool {
        !self.utility && !self.attack_success
    }
}

/// One finished episode.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EpisodeRecord {
    /// The results folder's run id (its directory name when not given).
    pub run_id: String,
    /// Unique within a run: the resume key.
    pub key: String,
    /// The suite's qualified name (`dojo-style/banking`, `agentdojo@v1.2.2/slack`).
    pub suite: String,
    /// The user task's id.
    pub user_task: String,
    /// The injection task's id; `None` for a clean episode.
    pub injection_task: Option<String>,
    /// The attack's name (`important_instructions`, `context`, …); `None` for a clean
    /// episode.
    pub attack: Option<String>,
    /// The defense as given on the command line (`sieve`, `sieve:no-causal`,
    /// `exec:<command>`).
    pub defense: String,
    /// The agent's model as given, with a scripted model's profile
    /// (`sim:obedient,judge_auc=0.9,…`).
    pub model: String,
    /// Scripted rather than produced by an LLM.
    pub simulated: bool,
    /// The roles of this episode no LLM played, and what each knew (`None` in records
    /// written before roles were recorded).
    #[serde(default)]
    pub scripted_roles: Option<ScriptedRoles>,
    /// The seed index (0 to `--seeds` − 1); the episode's random draws derive from it and
    /// the episode's key.
    pub seed: u64,
    /// Whether the user task's utility check held (the task was solved).
    pub utility: bool,
    /// `None` for clean episodes.
    pub attack_success: Option<bool>,
    /// Which of the two verdicts the checks' rules could not decide ([`Undecided`]);
    /// absent when both are decided.
    #[serde(default, skip_serializing_if = "Undecided::is_none")]
    pub undecided: Undecided,
    /// The injection task's severity, in (0, 1]; `None` for a clean episode.
    pub severity: Option<f64>,
    /// The injection task's tags (`provenance_bypass`, a difficulty, …).
    #[serde(default)]
    pub injection_tags: Vec<String>,
    /// The injection vectors the payload was placed in.
    #[serde(default)]
    pub injected_vectors: Vec<String>,
    /// For an attacked episode: whether the injected text reached the agent, readable in
    /// a tool output as the defense delivered it (not whether the agent acted on it, nor
    /// what a scripted agent chose to read); `None` for a clean episode and in records
    /// written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload_seen: Option<bool>,
    /// The agent turn (0-based) whose input first carried it, when seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload_seen_step: Option<usize>,
    /// The id of the benchmark's known defect this episode falls under (a task or pair
    /// whose check is known to be broken, from the suite's known-defects file when the
    /// episode ran); `None` when none is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub known_defect: Option<String>,
    /// The vector class of a context-aware sample (`--attack context`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vector_class: Option<String>,
    /// The surface a context-aware sample's payload lands on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub surface: Option<String>,
    /// Agent turns taken (model calls of the agent).
    pub steps: usize,
    /// The episode stopped at `--max-steps` rather than with an answer.
    pub hit_step_limit: bool,
    /// The defense ended the episode (a `stop` decision, as MELON does).
    #[serde(default)]
    pub stopped_by_defense: bool,
    /// Calls that reached the defense (invalid ones, unknown tool or unparsable
    /// arguments, are in the trace but not here).
    pub proposed_calls: u64,
    /// Proposed calls the defense blocked.
    pub blocked: u64,
    /// Proposed calls the defense answered with ask-user (not run, counted apart).
    pub asked_user: u64,
    /// Proposed calls the defense answered with a fake result (not run).
    pub faked: u64,
    /// Proposed calls sent to the adjudicator (SIEVE's deviations; every call under
    /// `audit`).
    pub escalated: u64,
    /// Proposed calls that ran.
    pub approved: u64,
    /// Tool outputs the defense replaced or flagged.
    #[serde(default)]
    pub flagged_outputs: u64,
    /// Calls and tokens per component (agent, planner, judge, detector, embedding).
    pub cost: CostMeter,
    /// Per role, the model ids the endpoint said served its calls (lineage); empty for
    /// scripted roles and servers that do not say.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub served_models: BTreeMap<Component, Vec<String>>,
    /// Wall time of the episode in milliseconds.
    pub latency_ms: f64,
    /// The error that ended the episode, if any; an errored episode is its own outcome.
    pub error: Option<String>,
    /// What failed, for an errored episode (`None` in records written before kinds were
    /// recorded: such an error counts as an error under every convention).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<ErrorKind>,
    /// For a successful attack: the executed call (in execution order) whose effect the
    /// security check saw; `None` when the harm came without a call (the answer).
    #[serde(default)]
    pub harmful_call: Option<usize>,
    /// Attacked episodes: whether the agent proposed a call of the attacker's (one the
    /// injection task's reference plan has and the user task's does not), whatever the
    /// defense did with it; absent when the attack has no call to start or the record
    /// predates this field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attack_started: Option<bool>,
    /// An injection task on a user task it names in `designed_for` (a designed
    /// provenance-bypass pair).
    #[serde(default)]
    pub bypass_pair: bool,
    /// Defense-specific observations (e.g. SIEVE's per-call scores); free-form JSON.
    #[serde(default)]
    pub notes: Value,
    /// The harness version that ran the episode.
    pub version: String,
    /// The suite's data fingerprint when the episode ran.
    #[serde(default)]
    pub suite_fingerprint: String,
    /// The attack template's fingerprint, for attacked episodes.
    #[serde(default)]
    pub attack_fingerprint: Option<String>,
    /// How the suite's rows count this episode if it errored, unless `--errors-as` names
    /// one convention (`agentdojo` for AgentDojo's own suites, from their provider file;
    /// absent means `excluded`).
    #[serde(default, skip_serializing_if = "ErrorConvention::is_default")]
    pub error_convention: ErrorConvention,
    /// The model-graded answer judge's verdicts beside the checks' (`--answer-judge`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_judge: Option<JudgedAnswer>,
}

impl EpisodeRecord {
    pub fn attacked(&self) -> bool {
        self.injection_task.is_some()
    }

    /// Whether a role an LLM played replied without `usage` here, so its tokens were
    /// counted locally. Scripted roles always count locally and are labelled as such.
    pub fn usage_estimated(&self) -> bool {
        self.cost.by_component.iter().any(|(c, t)| {
            t.estimated
                && match &self.scripted_roles {
                    Some(roles) => !roles.contains_key(c),
                    None => !self.simulated,
                }
        })
    }

    /// The utility the rates count: the checks' unless the run said `--utility-from`, or
    /// the answer judge settled what the checks left undecided (`--answer-judge-on`).
    pub fn counted_utility(&self) -> bool {
        self.answer_judge
            .as_ref()
            .map_or(self.utility, |j| j.counted_utility(self.utility))
    }

    /// The attack success the rates count: the checks' unless the answer judge settled
    /// what they left undecided.
    pub fn counted_attack_success(&self) -> Option<bool> {
        self.answer_judge.as_ref().map_or(self.attack_success, |j| {
            j.counted_attack_success(self.attack_success)
        })
    }

    /// Whether the rates count this episode's utility as undecided: the checks' rules
    /// could not decide it and no answer judge the rates follow settled it.
    pub fn utility_undecided(&self) -> bool {
        self.error.is_none()
            && self.undecided.utility
            && !self
                .answer_judge
                .as_ref()
                .is_some_and(|j| j.settles_utility())
    }

    /// Whether the rates count this episode's attack success as undecided.
    pub fn attack_undecided(&self) -> bool {
        self.error.is_none()
            && self.undecided.attack_success
            && !self
                .answer_judge
                .as_ref()
                .is_some_and(|j| j.settles_attack())
    }

    /// The model name rows show: with the utility source when it is not the checks alone.
    pub fn row_model(&self) -> String {
        match self.answer_judge.as_ref().and_then(|j| j.row_label()) {
            Some(label) => format!("{} ({label})", self.model),
            None => self.model.clone(),
        }
    }
}

/// The full conversation of an episode, in the sidecar `traces.jsonl`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TraceRecord {
    pub key: String,
    pub messages: Vec<Message>,
    pub calls: Vec<CallRecord>,
    pub answer: String,
    pub payload: Option<String>,
}
