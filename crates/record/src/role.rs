//! The parts of an episode that call a model or an embedder, each metered apart, and
//! what a role not played by an LLM is labelled and knows. Models, embedders and records
//! all name roles.

use serde::{Deserialize, Serialize};

/// What a model call is for; costs are metered per component.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Component {
    /// The agent's own model calls.
    Agent,
    /// Planner calls of plan-based defenses.
    Planner,
    /// Adjudicator or judge calls.
    Judge,
    /// Classifier, detector, isolator and segmenter calls (and plugins' own model calls by
    /// default).
    Detector,
    /// Embedding requests.
    Embedding,
    /// The model-graded answer judge (`--answer-judge`): scores the episode, not a
    /// defense's role.
    AnswerJudge,
    /// The attacker of `attack search`: proposes injection templates. Metered by the
    /// search, never inside an episode, so not in [`Component::ALL`].
    Attacker,
}

impl Component {
    /// Every component an episode meters, in role order.
    pub const ALL: [Component; 6] = [
        Component::Agent,
        Component::Planner,
        Component::Judge,
        Component::Detector,
        Component::Embedding,
        Component::AnswerJudge,
    ];
    pub fn as_str(self) -> &'static str {
        match self {
            Component::Agent => "agent",
            Component::Planner => "planner",
            Component::Judge => "judge",
            Component::Detector => "detector",
            Component::Embedding => "embedding",
            Component::AnswerJudge => "answer_judge",
            Component::Attacker => "attacker",
        }
    }
}

/// A role filled by something other than an LLM (the scripted `sim` model, the lexical
/// embedder): the short label every row carries, and what it knows, for the banner.
/// A label says "oracle" whenever the role reads the answer key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScriptedRole {
    /// `scripted agent`, `oracle judge`, `lexical embedder`, ….
    pub label: String,
    /// The label without the role's name, for a table column named after the role:
    /// `scripted`, `oracle`, `lexical`, ….
    pub short: String,
    /// What it knows and does, in one sentence.
    pub knows: String,
}

/// The scripted roles of an episode or a row, in role order (agent first).
pub type ScriptedRoles = std::collections::BTreeMap<Component, ScriptedRole>;
