//! SIEVE: an Intent Graph planned before the agent starts, a deterministic layer-1
//! check of every proposed call against it, and a tiered semantic adjudicator only for
//! the calls that deviate. Approved deviations join the graph (graph update).
//!
//! - [`planner`]: the one planner call per episode, and the reference graph the scripted
//!   planner degrades by its stated quality.
//! - [`graph`]: the Intent Graph (petgraph DAG), parsing and validation.
//! - [`layer1`]: control-flow and data-flow checks, and what "appears" means.
//! - [`adjudicator`]: `S_align` and the judge (shared with `audit`).
//! - [`config`]: `configs/sieve.toml`: variants, thresholds, trust and risk tables.
//!
//! Expected cost (the paper's): one planner call per episode; per proposed call nothing
//! when layer 1 passes, else one judge call and the embeddings of `S_sem`.
//!
//! Failure modes are fail-closed: a planner reply that cannot be parsed or validated is
//! recorded and every call of the episode escalates; an unusable judge reply scores 0.
//!
//! For reports, each episode's notes list every proposed call with the path it took
//! (`layer1`, `approved`, `blocked`, `asked_user`, `blocked_layer1`). The defense never
//! learns which calls or texts are the attacker's: attribution of a successful attack to
//! a path is done afterwards from the call whose effect the security check saw
//! (`aggregate::metrics::attribute`, a layer above this one).

pub mod adjudicator;
pub mod config;
pub mod graph;
pub mod layer1;
pub mod planner;

use crate::defense::{BuildError, BuildOptions, Entry};
use crate::defense::{
    Defense, DefenseCtx, DefenseError, EpisodeDefense, OutputVerdict, ProposedCall, Verdict,
};
use adjudicator::Adjudicator;
use sieve_record::Component;
use sieve_record::sieve::Outcome;
// The notes' types are the record crate's, so the aggregate reads them back typed.
use async_trait::async_trait;
use config::{SieveConfig, Variant, Weights};
use graph::IntentGraph;
use layer1::RunState;
use serde_json::{Value, json};
use sieve_record::sieve::{CallNote, CallPath};
use std::collections::HashMap;
use std::sync::Arc;

/// The two modes that share this machinery.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Planner + layer 1 + adjudicator on deviations.
    Sieve,
    /// The adjudicator on every call, no planner, no layer 1.
    Audit,
}

impl Mode {
    /// The registered defense this mode is (`sieve`, `audit`), as records name it.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Sieve => ENTRY.name,
            Mode::Audit => super::audit::ENTRY.name,
        }
    }
}

/// `sieve` / `sieve:<variant>` / `audit` as selected on the command line.
pub struct SieveDefense {
    name: String,
    mode: Mode,
    variant: Variant,
    config: Arc<SieveConfig>,
}

impl SieveDefense {
    /// `variant` is a name from the config (`None` = the first); `weights` replaces the
    /// variant's weights (an ad-hoc set).
    pub fn new(
        mode: Mode,
        config: Arc<SieveConfig>,
        variant: Option<&str>,
        weights: Option<Weights>,
    ) -> Result<SieveDefense, config::SieveConfigError> {
        let mut v = match variant {
            Some(n) => config.variant(n)?.clone(),
            None => config.variants[0].clone(),
        };
        let base = mode.name();
        let mut name = match variant {
            Some(n) if mode == Mode::Sieve && n != config.variants[0].name => {
                format!("{base}:{n}")
            }
            _ => base.to_string(),
        };
        if let Some(w) = weights {
            v.weights = w;
            name = format!(
                "{base}:adhoc({}/{}/{}/{})",
                r3(w.w_sem),
                r3(w.w_causal),
                r3(w.w_prov),
                r3(w.w_risk)
            );
        }
        if mode == Mode::Audit {
            // The always-on audit has no layer 1 to fall back on.
            v.layer1_only = false;
        }
        Ok(SieveDefense {
            name,
            mode,
            variant: v,
            config,
        })
    }
}

impl SieveDefense {
    /// One setting moved for a sensitivity sweep; the name says which
    /// (`sieve@threshold=0.35`).
    pub fn with_override(
        mut self,
        o: config::Override,
    ) -> Result<SieveDefense, config::SieveConfigError> {
        o.apply(&mut self.variant)?;
        self.name = format!("{}@{}", self.name, o.label());
        Ok(self)
    }
}

fn r3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// How `list defenses` describes this defense and how `--defense sieve` builds it: its
/// line of [`super::REGISTRY`].
pub const ENTRY: Entry = Entry {
    name: "sieve",
    variants: "<variant>][@<threshold|w_sem|w_causal|w_prov|w_risk>=<x>",
    mechanism: "intent graph + layer-1 control/data-flow checks + adjudicator on deviations",
    source: "SIEVE/CCA, arXiv 2512.06716",
    sim_caveat: None,
    in_all: true,
    detector_model: Component::Judge,
    build: build_defense,
};

/// Builds this defense from its variant (the text after `sieve:`).
fn build_defense(
    variant: Option<&str>,
    opts: &BuildOptions,
) -> Result<Arc<dyn Defense>, BuildError> {
    // `--weights` gives plain `sieve` an ad-hoc set; named variants keep theirs.
    let weights = if variant.is_none() {
        opts.weights
    } else {
        None
    };
    Ok(Arc::new(SieveDefense::new(
        Mode::Sieve,
        opts.sieve(),
        variant,
        weights,
    )?))
}

impl Defense for SieveDefense {
    fn name(&self) -> &str {
        &self.name
    }
    fn episode(&self) -> Box<dyn EpisodeDefense> {
        Box::new(self.new_episode())
    }
}

impl SieveDefense {
    /// A fresh episode state.
    pub fn new_episode(&self) -> SieveEpisode {
        SieveEpisode {
            mode: self.mode,
            variant: self.variant.clone(),
            config_source: self.config.source.clone(),
            adj: Adjudicator {
                weights: self.variant.weights,
                threshold: self.variant.threshold,
                gray_band: self.variant.gray_band,
                provenance: self.variant.provenance,
                trust: self.config.trust.clone(),
                risk: self.config.risk.clone(),
            },
            graph: None,
            planner_error: None,
            planner_simulated: None,
            judge_simulated: false,
            state: RunState::default(),
            pending: HashMap::new(),
            last_node: None,
            done: Vec::new(),
            calls: Vec::new(),
            judge_errors: Vec::new(),
        }
    }
}

/// One episode's state.
pub struct SieveEpisode {
    mode: Mode,
    variant: Variant,
    config_source: String,
    adj: Adjudicator,
    graph: Option<IntentGraph>,
    planner_error: Option<String>,
    planner_simulated: Option<bool>,
    judge_simulated: bool,
    state: RunState,
    /// Executed call id → the node whose output it produces.
    pending: HashMap<String, String>,
    /// The node whose output the agent read last (the parent of approved nodes).
    last_node: Option<String>,
    /// Executed actions so far, as text, for the judge.
    done: Vec<String>,
    calls: Vec<CallNote>,
    judge_errors: Vec<String>,
}

impl SieveEpisode {
    /// The graph, for tests.
    pub fn graph(&self) -> Option<&IntentGraph> {
        self.graph.as_ref()
    }

    /// Runs the planner and parses its reply; on failure records it and stays fail-closed.
    async fn plan(&mut self, ctx: &mut DefenseCtx<'_>) -> Result<(), DefenseError> {
        let msgs = planner::planner_messages(ctx.suite, ctx.user_prompt, ctx.tools);
        let hint = crate::defense::scripted_plan::hint(ctx, planner::render);
        let reply = ctx.ask(Component::Planner, &msgs, hint).await?;
        self.accept_plan(&reply.message.content, ctx);
        Ok(())
    }

    /// Parses a planner reply against the offered tools.
    fn accept_plan(&mut self, text: &str, ctx: &DefenseCtx<'_>) {
        let result = IntentGraph::parse(text, &ctx.suite.tools).and_then(|g| {
            // Only tools offered to the agent may be planned (a defense may narrow them).
            match g
                .graph
                .node_weights()
                .find(|n| !ctx.tools.iter().any(|t| t.name.as_str() == n.tool))
            {
                Some(n) => Err(graph::PlanError::NotOffered {
                    node: n.id.clone(),
                    tool: n.tool.clone(),
                }),
                None => Ok(g),
            }
        });
        match result {
            Ok(g) => self.graph = Some(g),
            Err(e) => {
                self.planner_error = Some(e.to_string());
                self.graph = None;
            }
        }
    }

    fn note(&mut self, call: &ProposedCall, path: CallPath) -> CallNote {
        CallNote {
            step: call.step,
            tool: call.tool.as_str().to_string(),
            args: call.args.clone(),
            path,
            node: None,
            sources: None,
            layer1: None,
            adjudication: None,
        }
    }

    fn allow(&mut self, call: &ProposedCall, node: Option<String>) {
        if let Some(n) = node {
            self.state.spend(&n);
            self.pending.insert(call.id.clone(), n);
        }
        self.done.push(adjudicator::action_text(call));
    }

    /// Decides a call through layer 1 and, for deviations, the adjudicator.
    pub async fn decide(
        &mut self,
        call: &ProposedCall,
        ctx: &mut DefenseCtx<'_>,
    ) -> Result<Verdict, DefenseError> {
        let tool = call.tool.as_str();
        let mut layer1_reason = None;
        if self.mode == Mode::Sieve {
            match &self.graph {
                Some(g) => match layer1::check(g, tool, &call.args, ctx.user_prompt, &self.state) {
                    layer1::Check::Pass { node, sources } => {
                        let mut n = self.note(call, CallPath::Layer1);
                        n.node = Some(node.clone());
                        n.sources = Some(sources);
                        self.calls.push(n);
                        self.allow(call, Some(node));
                        return Ok(Verdict::Allow);
                    }
                    layer1::Check::Fail { reason } => layer1_reason = Some(reason),
                },
                None => {
                    layer1_reason = Some(format!(
                        "no valid plan (fail-closed): {}",
                        self.planner_error.as_deref().unwrap_or("planner gave none")
                    ))
                }
            }
            if self.variant.layer1_only {
                let reason = format!(
                    "the action is not part of the plan made for this request ({})",
                    layer1_reason.as_deref().unwrap_or("")
                );
                let mut n = self.note(call, CallPath::BlockedLayer1);
                n.layer1 = layer1_reason;
                self.calls.push(n);
                return Ok(Verdict::Block { reason });
            }
        }
        ctx.stats.escalated += 1;
        let adj = self.adj.adjudicate(ctx, call, &self.done).await?;
        if let Some(e) = adj.judge.as_ref().and_then(|j| j.error.as_ref()) {
            self.judge_errors.push(e.clone());
        }
        let verdict = match adj.outcome {
            Outcome::Approve => {
                ctx.stats.approved += 1;
                let node = match (&mut self.graph, self.variant.graph_update) {
                    (Some(g), true) if self.mode == Mode::Sieve => {
                        Some(g.add_approved(tool, &call.args, self.last_node.as_deref()))
                    }
                    _ => None,
                };
                let mut n = self.note(call, CallPath::Approved);
                n.node = node.clone();
                n.layer1 = layer1_reason;
                n.adjudication = Some(adj);
                self.calls.push(n);
                self.allow(call, node);
                return Ok(Verdict::Allow);
            }
            Outcome::AskUser => Verdict::AskUser {
                reason: adjudicator::refusal(&adj, self.variant.threshold),
            },
            Outcome::Block => Verdict::Block {
                reason: adjudicator::refusal(&adj, self.variant.threshold),
            },
        };
        let path = if adj.outcome == Outcome::AskUser {
            CallPath::AskedUser
        } else {
            CallPath::Blocked
        };
        let mut n = self.note(call, path);
        n.layer1 = layer1_reason;
        n.adjudication = Some(adj);
        self.calls.push(n);
        Ok(verdict)
    }

    /// Records an executed call's output for data-flow checks.
    pub fn observe_output(&mut self, call_id: &str, output: &str) {
        if let Some(node) = self.pending.remove(call_id) {
            self.state.record(&node, output.to_string());
            self.last_node = Some(node);
        }
    }
}

#[async_trait]
impl EpisodeDefense for SieveEpisode {
    async fn start(&mut self, ctx: &mut DefenseCtx<'_>) -> Result<(), DefenseError> {
        self.judge_simulated = ctx.models.judge.simulated();
        if self.mode == Mode::Sieve {
            self.planner_simulated = Some(ctx.models.planner.simulated());
            self.plan(ctx).await?;
        }
        Ok(())
    }

    async fn review_call(
        &mut self,
        call: &ProposedCall,
        ctx: &mut DefenseCtx<'_>,
    ) -> Result<Verdict, DefenseError> {
        self.decide(call, ctx).await
    }

    async fn review_output(
        &mut self,
        call: &ProposedCall,
        output: String,
        _ctx: &mut DefenseCtx<'_>,
    ) -> Result<OutputVerdict, DefenseError> {
        self.observe_output(&call.id, &output);
        Ok(OutputVerdict::Pass(output))
    }

    fn notes(&self) -> Value {
        let w = &self.variant.weights;
        let mut notes = json!({
            "mode": self.mode.name(),
            "variant": self.variant.name,
            "weights": {"w_sem": w.w_sem, "w_causal": w.w_causal, "w_prov": w.w_prov, "w_risk": w.w_risk},
            "threshold": self.variant.threshold,
            "gray_band": self.variant.gray_band,
            "layer1_only": self.variant.layer1_only,
            "graph_update": self.variant.graph_update,
            "provenance": self.variant.provenance,
            "config": self.config_source,
            "judge": {
                "simulated": self.judge_simulated,
                "errors": self.judge_errors,
            },
            "calls": self.calls,
        });
        if self.mode == Mode::Sieve {
            notes["planner"] = json!({
                "simulated": self.planner_simulated,
                "ok": self.graph.is_some(),
                "error": self.planner_error,
                "graph": self.graph.as_ref().map(IntentGraph::to_json),
            });
        }
        notes
    }
}

#[cfg(test)]
mod tests;
