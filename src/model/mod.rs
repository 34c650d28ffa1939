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
pub use crate::role::{Component, ScriptedRole, ScriptedRoles};

use crate::tools::ToolSchema;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;

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
    /// Act as the agent.
    Agent,
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
    /// MELON's masked run: the conversation holds tool outputs but no user task. The
    /// scripted model, a detector of the profile's `judge_auc`, reproduces the injection
    /// task's calls when it reads an injected instruction and catches it, and otherwise
    /// only summarises.
    Masked,
    /// A quarantined reader of the profile's quality (`judge_auc`) turning a text into
    /// values. `carries` is whether an injected instruction is readable in the text; the
    /// reader keeps it out of what it relays in a seeded `2·judge_auc − 1` share of such
    /// texts and replies `kept`, and is manipulated into relaying it otherwise and replies
    /// `relayed`. A text that carries none gets `kept`. `key` names the draw.
    Quarantined {
        carries: bool,
        key: String,
        kept: String,
        relayed: String,
    },
    /// Plan: what a planner that reads only the request can plan (every plan-based
    /// defense builds it the same way), which the scripted planner degrades by its
    /// stated quality (`planner_recall`, `planner_extra`) and writes with `render`, the
    /// defense's own reply format.
    Plan {
        plan: sim_roles::ScriptedPlan,
        render: fn(&sim_roles::ScriptedPlan) -> String,
    },
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

/// Token usage of one call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    #[serde(default)]
    pub reasoning_tokens: u64,
    /// Counted locally with a tokenizer rather than reported by the endpoint.
    #[serde(default)]
    pub estimated: bool,
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
    fn identity(&self) -> serde_json::Value {
        serde_json::json!({ "name": self.name() })
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

/// Cost of one component over an episode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CostTotals {
    /// Model (or classifier, or embedding) requests.
    pub calls: u64,
    /// Prompt tokens over those requests.
    pub prompt_tokens: u64,
    /// Completion tokens over those requests.
    pub completion_tokens: u64,
    #[serde(default)]
    pub reasoning_tokens: u64,
    #[serde(default)]
    pub latency_ms: f64,
    #[serde(default)]
    pub retries: u64,
    /// Some counts came from the local tokenizer rather than the endpoint.
    #[serde(default)]
    pub estimated: bool,
    /// Replies cut at the completion token cap (`finish_reason: "length"`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub truncated: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl CostTotals {
    pub fn tokens(&self) -> u64 {
        self.prompt_tokens.saturating_add(self.completion_tokens)
    }
    /// Adds another total; counts saturate rather than wrap (an endpoint or plugin can
    /// report any number).
    pub fn add(&mut self, o: &CostTotals) {
        self.calls = self.calls.saturating_add(o.calls);
        self.prompt_tokens = self.prompt_tokens.saturating_add(o.prompt_tokens);
        self.completion_tokens = self.completion_tokens.saturating_add(o.completion_tokens);
        self.reasoning_tokens = self.reasoning_tokens.saturating_add(o.reasoning_tokens);
        self.latency_ms += o.latency_ms;
        self.retries = self.retries.saturating_add(o.retries);
        self.estimated |= o.estimated;
        self.truncated = self.truncated.saturating_add(o.truncated);
    }
}

/// Per-episode cost, split by component so a defense's overhead is visible apart from
/// the agent's own spending.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CostMeter {
    /// Per component (keys `agent`, `planner`, `judge`, `detector`, `embedding`,
    /// `answer_judge`, and `attacker` in a search's cost), its calls and tokens.
    #[serde(flatten)]
    pub by_component: std::collections::BTreeMap<Component, CostTotals>,
    /// The model ids endpoints said served each component's calls (lineage). Not part of
    /// the serialised cost: the runner moves it to the record's `served_models`.
    #[serde(skip)]
    pub served: std::collections::BTreeMap<Component, std::collections::BTreeSet<String>>,
}

impl CostMeter {
    pub fn record(&mut self, component: Component, reply: &ChatReply) {
        self.by_component
            .entry(component)
            .or_default()
            .add(&CostTotals {
                calls: 1,
                prompt_tokens: reply.usage.prompt_tokens,
                completion_tokens: reply.usage.completion_tokens,
                reasoning_tokens: reply.usage.reasoning_tokens,
                latency_ms: reply.latency_ms,
                retries: reply.retries as u64,
                estimated: reply.usage.estimated,
                truncated: u64::from(reply.finish_reason.as_deref() == Some("length")),
            });
        if let Some(m) = &reply.served_model {
            self.served.entry(component).or_default().insert(m.clone());
        }
    }

    /// Records calls that did not go through a [`ChatModel`] (a classifier endpoint, a
    /// plugin's own model use), with the usage they report.
    pub fn record_usage(&mut self, component: Component, calls: u64, usage: Usage) {
        self.by_component
            .entry(component)
            .or_default()
            .add(&CostTotals {
                calls,
                prompt_tokens: usage.prompt_tokens,
                completion_tokens: usage.completion_tokens,
                reasoning_tokens: usage.reasoning_tokens,
                estimated: usage.estimated,
                ..Default::default()
            });
    }

    /// Records embedding calls (one API call embeds a batch).
    pub fn record_embedding(&mut self, calls: u64, tokens: u64) {
        self.by_component
            .entry(Component::Embedding)
            .or_default()
            .add(&CostTotals {
                calls,
                prompt_tokens: tokens,
                ..Default::default()
            });
    }

    /// Adds another meter's totals, component by component.
    pub fn add(&mut self, o: &CostMeter) {
        for (c, t) in &o.by_component {
            self.by_component.entry(*c).or_default().add(t);
        }
    }

    pub fn total(&self) -> CostTotals {
        let mut t = CostTotals::default();
        for c in self.by_component.values() {
            t.add(c);
        }
        t
    }

    pub fn get(&self, c: Component) -> CostTotals {
        self.by_component.get(&c).copied().unwrap_or_default()
    }
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
    pub fn scripted_roles(&self, cost: &CostMeter) -> ScriptedRoles {
        Component::ALL
            .into_iter()
            .filter(|&c| c == Component::Agent || cost.get(c).calls > 0)
            .filter_map(|c| {
                let role = match self.chat_for(c) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meter_counts_saturate_instead_of_wrapping() {
        let mut m = CostMeter::default();
        let huge = Usage {
            prompt_tokens: u64::MAX / 2 + 1,
            completion_tokens: 1,
            reasoning_tokens: 0,
            estimated: false,
        };
        m.record_usage(Component::Judge, u64::MAX, huge);
        m.record_usage(Component::Judge, 1, huge);
        let t = m.get(Component::Judge);
        assert_eq!((t.calls, t.prompt_tokens), (u64::MAX, u64::MAX));
        assert_eq!(m.total().tokens(), u64::MAX);
    }
}
