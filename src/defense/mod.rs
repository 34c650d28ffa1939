//! Defenses: one trait with hooks into the agent loop, one module per defense.
//!
//! A [`Defense`] is shared by the whole run and makes a fresh [`EpisodeDefense`] for each
//! episode, which holds per-episode state (an intent graph, a cache of masked calls).
//! Each hook has a default that does nothing, so a defense implements only what it needs.

pub mod audit;
pub mod none;
pub mod sieve;

use crate::ids::ToolName;
use crate::model::sim::EpisodeScript;
use crate::model::{
    ChatReply, Component, CostMeter, Message, ModelError, Models, SimChannel, SimHint, ToolSchema,
};
use crate::suite::Suite;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;

/// A tool call the agent proposed, with arguments already parsed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProposedCall {
    pub id: String,
    pub tool: ToolName,
    pub args: Value,
    /// The agent step (model turn) that proposed it, from 0.
    pub step: usize,
}

/// A defense's decision on a proposed call.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// Execute it.
    Allow,
    /// Do not execute; tell the agent why.
    Block { reason: String },
    /// Do not execute; show the agent this result as if it had run.
    Fake { result: String },
    /// Would ask the user; no user exists in a benchmark, so it counts as a block and is
    /// reported apart.
    AskUser { reason: String },
}

/// A defense's decision on a tool output.
#[derive(Clone, Debug, PartialEq)]
pub enum OutputVerdict {
    /// Show the agent this (possibly rewritten) text.
    Pass(String),
    /// Show this text and end the episode (MELON's behaviour on detection).
    Stop(String),
}

/// Counters a defense keeps for the episode record.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DefenseStats {
    /// Proposed calls sent to a semantic judge.
    pub escalated: u64,
    /// Escalated calls the judge approved.
    pub approved: u64,
    /// Tool outputs flagged as injected.
    pub flagged_outputs: u64,
}

/// A defense failure (its planner unreachable, say): the episode is recorded as errored.
#[derive(Debug, thiserror::Error)]
pub enum DefenseError {
    #[error(transparent)]
    Model(#[from] ModelError),
    #[error("defense error: {0}")]
    Other(String),
}

/// What a hook may see and use.
pub struct DefenseCtx<'a> {
    pub suite: &'a Suite,
    pub user_prompt: &'a str,
    /// The tools offered to the agent; `start` may narrow them.
    pub tools: &'a mut Vec<ToolSchema>,
    /// The conversation so far.
    pub history: &'a [Message],
    pub models: &'a Models,
    pub script: Option<&'a Arc<EpisodeScript>>,
    pub meter: &'a mut CostMeter,
    pub stats: &'a mut DefenseStats,
}

impl DefenseCtx<'_> {
    /// Calls a model in a defense role and meters it. `sim_reply` is what a perfect model
    /// in this role would answer; only the scripted backend ever sees it.
    pub async fn ask(
        &mut self,
        component: Component,
        messages: &[Message],
        sim_hint: SimHint,
    ) -> Result<ChatReply, ModelError> {
        let model = match component {
            Component::Planner => &self.models.planner,
            _ => &self.models.judge,
        };
        let req = crate::model::ChatRequest {
            component,
            messages,
            tools: &[],
            json: true,
            sim: self.script.map(|s| SimChannel {
                script: s.clone(),
                hint: sim_hint,
            }),
        };
        let reply = model.chat(&req).await?;
        self.meter.record(component, &reply);
        Ok(reply)
    }

    /// Embeds texts with the run's embedder and meters it.
    pub async fn embed(&mut self, texts: &[String]) -> Result<Vec<Vec<f32>>, DefenseError> {
        let out = self
            .models
            .embedder
            .embed(texts)
            .await
            .map_err(|e| match e {
                crate::embed::EmbedError::Model(m) => DefenseError::Model(m),
                other => DefenseError::Other(other.to_string()),
            })?;
        let tokens: u64 = texts.iter().map(|t| self.models.tokens.count(t)).sum();
        self.meter.record_embedding(1, tokens);
        Ok(out)
    }
}

/// A defense's state for one episode.
#[async_trait]
pub trait EpisodeDefense: Send {
    /// Before the first model call: plan, filter tools.
    async fn start(&mut self, _ctx: &mut DefenseCtx<'_>) -> Result<(), DefenseError> {
        Ok(())
    }
    /// Text appended to the system prompt.
    fn system_prompt(&self) -> Option<String> {
        None
    }
    /// Rewrites the conversation sent to the agent model (e.g. repeat the user prompt).
    fn agent_view(&self, _messages: &[Message]) -> Option<Vec<Message>> {
        None
    }
    /// Decides on a proposed call.
    async fn review_call(
        &mut self,
        _call: &ProposedCall,
        _ctx: &mut DefenseCtx<'_>,
    ) -> Result<Verdict, DefenseError> {
        Ok(Verdict::Allow)
    }
    /// Reviews a tool output (of an executed call) before the agent reads it.
    async fn review_output(
        &mut self,
        _call: &ProposedCall,
        output: String,
        _ctx: &mut DefenseCtx<'_>,
    ) -> Result<OutputVerdict, DefenseError> {
        Ok(OutputVerdict::Pass(output))
    }
    /// Defense-specific facts for the episode record (e.g. why a call passed).
    fn notes(&self) -> Value {
        Value::Null
    }
}

/// A defense as selected on the command line.
pub trait Defense: Send + Sync {
    /// The name in reports (`sieve:no-causal`).
    fn name(&self) -> &str;
    fn episode(&self) -> Box<dyn EpisodeDefense>;
}

/// Names accepted by `--defense`, for help and error messages. `sieve:<variant>` takes
/// any variant of the SIEVE config (`list defenses` shows them).
pub const NAMES: &[&str] = &[
    "none",
    "audit",
    "sieve",
    "sieve:<variant>",
    "sieve[:<variant>]@<threshold|w_sem|w_causal|w_prov|w_risk>=<x>",
];

/// What defenses may be configured with beyond their name.
#[derive(Clone, Default)]
pub struct BuildOptions {
    /// SIEVE's config (variants, trust and risk tables); the built-in one when `None`.
    pub sieve_config: Option<Arc<sieve::config::SieveConfig>>,
    /// An ad-hoc weight set for `sieve` and `audit` (`--weights`).
    pub weights: Option<sieve::config::Weights>,
}

/// Builds a defense from its command-line name.
pub fn build(spec: &str) -> Result<Arc<dyn Defense>, String> {
    build_with(spec, &BuildOptions::default())
}

/// Builds a defense from its command-line name and options.
pub fn build_with(spec: &str, opts: &BuildOptions) -> Result<Arc<dyn Defense>, String> {
    let config = || {
        opts.sieve_config
            .clone()
            .unwrap_or_else(|| Arc::new(sieve::config::SieveConfig::builtin()))
    };
    // `sieve[:variant]@setting=value`: one setting moved, a point of a sweep.
    let (spec, tweak) = match spec.split_once('@') {
        Some((s, t)) if s.trim().starts_with("sieve") => (
            s.trim(),
            Some(sieve::config::Override::parse(t).map_err(|e| format!("`{spec}`: {e}"))?),
        ),
        _ => (spec, None),
    };
    let (name, variant) = match spec.split_once(':') {
        Some((n, v)) => (n, Some(v.trim())),
        None => (spec, None),
    };
    match (name, variant) {
        ("none", None) => Ok(Arc::new(none::NoDefense)),
        ("audit", None) => Ok(Arc::new(audit::audit(config(), opts.weights))),
        ("sieve", v) => {
            // `--weights` gives plain `sieve` an ad-hoc set; named variants keep theirs.
            let weights = if v.is_none() { opts.weights } else { None };
            let d = sieve::SieveDefense::new(sieve::Mode::Sieve, config(), v, weights)?;
            Ok(Arc::new(match tweak {
                Some(t) => d.with_override(t)?,
                None => d,
            }))
        }
        _ => Err(format!(
            "unknown defense `{spec}`{}; available: {}",
            crate::suggest::did_you_mean(name, NAMES.iter().copied()),
            NAMES.join(", ")
        )),
    }
}
