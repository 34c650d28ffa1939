//! Chat models: one trait for every backend, and the message types they exchange.
//!
//! The agent, and the planners and judges of defenses, all talk to a [`ChatModel`]. The
//! scripted `sim` backend needs to know the episode's reference plans; it gets them
//! through [`SimChannel`], a field that no network backend ever serialises.

pub mod answer_judge;
pub mod config;
pub mod openai;
pub mod sim;
pub mod sim_roles;
pub mod tokens;

pub use crate::http::ModelError;
// The plain data of messages and costs is the record crate's (on-disk formats): every
// module imports it from `sieve_record`, none through this one.
use sieve_record::{Component, CostMeter, Message, ScriptedRole, ScriptedRoles, Usage};

use crate::tools::ToolSchema;
use async_trait::async_trait;
use serde_json::Value;
use std::sync::Arc;

/// The side channel to the scripted model: what a perfect or obedient agent would
/// know. Never sent to a real endpoint.
#[derive(Clone, Debug)]
pub struct SimChannel {
    pub script: Arc<sim::EpisodeScript>,
    /// What this particular request asks of the scripted model, when not acting as agent.
    pub hint: SimHint,
}

/// What a non-agent request asks the scripted model.
#[derive(Clone, Debug)]
pub enum SimHint {
    /// Act as the agent. `named` holds the values the agent may name without reading
    /// them (a defense announced them by reference and fills the reference in itself):
    /// where the agent cannot read a value it needs, it writes the reference instead.
    Agent { named: Vec<NamedValue> },
    /// Answer with this exact text (a defense that knows what a perfect model in its
    /// role would say builds it, e.g. the intent graph of the reference plan).
    Reply(String),
    /// Judge whether this proposed call serves the user; the reply is JSON
    /// `{"score": <0..1>, "reason": ...}` drawn by the profile's judge quality.
    JudgeCall { tool: String, args: Value },
    /// Answer as a classifier of the profile's stated quality (`judge_auc`). `positive` is
    /// the item's true class (injected text, a harmful call); the model draws a score
    /// and replies `flagged` when it is at least 0.5, else `clear`, with `{score}`
    /// replaced by the score and `{inverse}` by 1 − score, rounded to `levels` steps
    /// (0 = two decimals). `key` names the item, so the same item draws the same score.
    Scored {
        positive: bool,
        key: String,
        levels: u32,
        flagged: String,
        clear: String,
    },
    /// A role only one defense has (a masked re-run of the agent, a quarantined reader):
    /// the defense scripts it itself ([`ScriptedReply`]) from the episode's answer key and
    /// the profile's stated quality, so this layer names no defense.
    Scripted(Arc<dyn ScriptedReply>),
    /// Plan: what a planner that reads only the request can plan (every plan-based
    /// defense builds it the same way), which the scripted planner degrades by its
    /// stated quality (`planner_recall`, `planner_extra`) and writes with `render`, the
    /// defense's own reply format.
    Plan {
        plan: sim_roles::ScriptedPlan,
        render: fn(&sim_roles::ScriptedPlan) -> String,
    },
}

/// A value the agent may name without reading it: `reference` (such as `$VAR1.iban`) is
/// what the agent writes, and whoever announced it fills `value` in before the call runs
/// or the answer is shown. A real model reads only what its messages say; the scripted
/// agent uses this to write the reference where it needs a value it was not shown.
#[derive(Clone, Debug, PartialEq)]
pub struct NamedValue {
    pub reference: String,
    pub value: Value,
}

/// What the scripted model lends a defense's own scripted role ([`SimHint::Scripted`]):
/// the episode's answer key and seed, the conversation of the request, and the profile's
/// stated detector quality.
pub struct ScriptedTurn<'a> {
    pub script: &'a sim::EpisodeScript,
    pub seed: u64,
    pub messages: &'a [Message],
    /// The profile's `judge_auc`: the quality every scripted detector has.
    pub judge_auc: f64,
}

/// A defense's scripted behaviour in a role only it has, behind the defense's own type:
/// the scripted model answers with [`ScriptedReply::reply`]; a real backend never calls it.
pub trait ScriptedReply: Send + Sync + std::fmt::Debug {
    fn reply(&self, turn: &ScriptedTurn<'_>) -> Message;
}

/// A request to a chat model.
#[derive(Clone, Debug)]
pub struct ChatRequest<'a> {
    pub component: Component,
    pub messages: &'a [Message],
    pub tools: &'a [ToolSchema],
    /// Ask for a JSON object reply (planners and judges).
    pub json: bool,
    /// The seed of the episode the call belongs to, set by the episode loop (`None`: a
    /// call outside any episode, such as the pre-flight check). Every backend draws from
    /// it: the scripted model its choices, an HTTP backend the request's `seed`.
    pub seed: Option<u64>,
    /// What only the scripted model needs: the episode's answer key and this request's
    /// hint. A real backend never reads it.
    pub sim: Option<SimChannel>,
}

/// A model's reply.
#[derive(Clone, Debug)]
pub struct ChatReply {
    pub message: Message,
    pub usage: Usage,
    pub latency_ms: f64,
    pub finish_reason: Option<String>,
    /// Transport retries spent on this call.
    pub retries: u32,
    /// The model id the endpoint says served the reply (`None`: scripted, or not said).
    pub served_model: Option<String>,
}

impl sieve_record::MeteredCall for ChatReply {
    fn usage(&self) -> Usage {
        self.usage
    }
    fn latency_ms(&self) -> f64 {
        self.latency_ms
    }
    fn retries(&self) -> u64 {
        u64::from(self.retries)
    }
    fn truncated(&self) -> bool {
        self.finish_reason.as_deref() == Some("length")
    }
    fn served_model(&self) -> Option<&str> {
        self.served_model.as_deref()
    }
}

/// A chat backend.
#[async_trait]
pub trait ChatModel: Send + Sync {
    /// The name reports show (`sim:obedient`, `openai:gpt-4o`).
    fn name(&self) -> &str;
    /// Whether replies are scripted rather than produced by an LLM; reports say so.
    fn simulated(&self) -> bool;
    /// Whether this model reads [`sim::EpisodeScript::alternatives`] (a `varied` scripted
    /// agent); episodes find a task's alternatives only for a model that does.
    fn reads_alternatives(&self) -> bool {
        false
    }
    /// Every resolved setting of this model that can change a reply (endpoint, model
    /// alias, tool format, sampling, caps, scripted knobs): part of a run's identity.
    /// The name alone is enough for backends with no other settings.
    fn identity(&self) -> sieve_record::ModelIdentity {
        sieve_record::ModelIdentity::new(serde_json::json!({ "name": self.name() }))
    }
    /// The part of this model's identity that seeds an episode's random draws: the name
    /// of the model that answers, without settings a comparison varies. Two runs whose
    /// agents give the same `seed_name` meet the same draws on the same episode (common
    /// random numbers), so their differences come from what differs, not from luck. An
    /// LLM backend is its name; the scripted model is `sim` whatever its profile.
    fn seed_name(&self) -> &str {
        self.name()
    }
    /// What this backend is when it plays `role` without being an LLM (the scripted
    /// model), for the labels of every row; `None` for a real model.
    fn scripted(&self, _role: Component) -> Option<ScriptedRole> {
        None
    }
    async fn chat(&self, req: &ChatRequest<'_>) -> Result<ChatReply, ModelError>;
    /// One cheap request before a run, offering `tools`, so a wrong URL, a missing `/v1`
    /// or a bad key stops the run in seconds instead of failing every episode. Returns
    /// warnings (e.g. the server seems to drop tool schemas); backends with nothing to
    /// reach have nothing to check.
    async fn preflight(&self, _tools: &[ToolSchema]) -> Result<Vec<String>, ModelError> {
        Ok(Vec::new())
    }
}

/// Parses `--model` values with default settings (`sim:…`, or `openai:<model>` with the
/// base URL and key from `OPENAI_BASE_URL` / `OPENAI_API_KEY`). Runs with flags and
/// named endpoints use [`config::ModelFactory`].
pub fn parse_model_spec(
    spec: &str,
    tokens: Arc<tokens::TokenCounter>,
) -> Result<Arc<dyn ChatModel>, config::ModelConfigError> {
    config::ModelFactory::new(config::ModelOptions::default(), Default::default(), tokens)?
        .chat(spec)
}

/// The models an episode may use, by role. Defenses' planners and judges default to the
/// agent's model.
#[derive(Clone)]
pub struct Models {
    pub agent: Arc<dyn ChatModel>,
    pub planner: Arc<dyn ChatModel>,
    pub judge: Arc<dyn ChatModel>,
    pub embedder: Arc<dyn crate::embed::Embedder>,
    pub tokens: Arc<tokens::TokenCounter>,
}

impl Models {
    /// Whether any role is scripted: then every report must say the results are simulated.
    pub fn any_simulated(&self) -> bool {
        self.agent.simulated() || self.planner.simulated() || self.judge.simulated()
    }

    /// Whether any role reads the user task's alternatives ([`ChatModel::reads_alternatives`]).
    pub fn read_alternatives(&self) -> bool {
        self.agent.reads_alternatives()
            || self.planner.reads_alternatives()
            || self.judge.reads_alternatives()
    }

    /// The chat model that plays `role` (defenses' detectors ask the judge's model);
    /// `None` for embeddings, which have their own backend.
    pub fn chat_for(&self, role: Component) -> Option<&Arc<dyn ChatModel>> {
        match role {
            Component::Agent => Some(&self.agent),
            Component::Planner => Some(&self.planner),
            Component::Judge | Component::Detector => Some(&self.judge),
            // Embeddings have their own backend; the answer judge and the search's
            // attacker are no roles of an episode.
            Component::Embedding | Component::AnswerJudge | Component::Attacker => None,
        }
    }

    /// The roles of an episode that no LLM played: the agent always, every other role
    /// only when the episode's costs show it was used (a `none` row has no judge).
    /// `model_of` names the role whose model served a role's requests (the defense's:
    /// MELON's masked run, metered as `detector`, is the agent's model).
    pub fn scripted_roles(
        &self,
        cost: &CostMeter,
        model_of: impl Fn(Component) -> Component,
    ) -> ScriptedRoles {
        Component::ALL
            .into_iter()
            .filter(|&c| c == Component::Agent || cost.get(c).calls > 0)
            .filter_map(|c| {
                let role = match self.chat_for(model_of(c)) {
                    Some(m) => m.scripted(c),
                    None if c == Component::Embedding => self.embedder.scripted(),
                    // The answer judge is always an LLM (`--answer-judge` refuses `sim`).
                    None => None,
                };
                role.map(|r| (c, r))
            })
            .collect()
    }
}
