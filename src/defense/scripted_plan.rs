//! The one scripted planner of every plan-based defense (SIEVE, IPIGuard, DRIFT,
//! plan-then-execute, tool_filter, Task Shield's extraction, ARGUS's invariants).
//!
//! Each of these defenses asks its planner for a plan in its own format. Under `sim` the
//! scripted model answers all of them from the same [`ScriptedPlan`], built here with the
//! information a real planner has: the user's request and the setting it is shown (the
//! persona and today's date). The steps are the user task's reference plan (the planner's
//! recall of them is the `planner_recall` knob); each argument is bound to where a
//! planner that reads only the request can say it comes from:
//! - the request, when its value appears there ([`appears`]: word-bounded, numbers by
//!   value);
//! - the setting, when it appears only there;
//! - nothing to know, for an empty text, list or record;
//! - the output of the latest earlier step that shows it, when the user task's reference
//!   run on the clean environment shows it there (the value itself is never written in:
//!   the plan names the call that will produce it);
//! - unknown otherwise (a value the agent works out or composes, or one no earlier step
//!   shows). A defense writes an unknown argument as its format allows (IPIGuard's
//!   `{"unknown": …}`), or leaves it out.
//!
//! So no scripted planner binds a value the request does not contain; the answer key
//! decides only which steps the plan has. The scripted model then drops steps and plans
//! one twice by its stated quality ([`PlannerQuality::degrade`]), with the same draws for
//! every defense of an episode, and writes the result in the defense's format.
//!
//! [`PlannerQuality::degrade`]: crate::model::sim_roles::PlannerQuality::degrade

use super::DefenseCtx;
use super::sieve::layer1::appears;
use super::support::is_read;
use crate::model::SimHint;
use crate::model::sim_roles::{Binding, PlanStep, ScriptedPlan};
use serde_json::Value;

/// Whether a value carries nothing to know: an empty text, list or record.
fn empty(v: &Value) -> bool {
    match v {
        Value::String(s) => s.trim().is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.is_empty(),
        _ => false,
    }
}

/// The plan a planner that reads `request` and `setting` can make of the episode's user
/// task (empty without a script: a real model never gets this hint).
pub fn build(ctx: &DefenseCtx<'_>) -> ScriptedPlan {
    let Some(script) = ctx.script else {
        return ScriptedPlan::default();
    };
    let suite = ctx.suite;
    let request = ctx.user_prompt;
    let setting = suite.meta.setting();
    let mut env = suite.env.with(&suite.defaults(), &[]);
    let run = crate::suite::run_plan(&suite.tools, &mut env, &script.user_plan);
    let steps = script
        .user_plan
        .iter()
        .enumerate()
        .map(|(i, call)| {
            let args = call
                .args
                .as_object()
                .map(|m| {
                    m.iter()
                        .filter(|(_, v)| !v.is_null())
                        .map(|(k, v)| {
                            let binding = if empty(v) {
                                Binding::Empty(v.clone())
                            } else if appears(v, request) {
                                Binding::Request(v.clone())
                            } else if appears(v, &setting) {
                                Binding::Setting(v.clone())
                            } else if let Some(j) = (0..i.min(run.outputs.len()))
                                .rev()
                                .find(|&j| appears(v, &run.outputs[j]))
                            {
                                Binding::Output(j)
                            } else {
                                Binding::Unknown
                            };
                            (k.clone(), binding)
                        })
                        .collect()
                })
                .unwrap_or_default();
            PlanStep {
                index: i,
                tool: call.tool.as_str().to_string(),
                read_only: is_read(suite, call.tool.as_str()),
                args,
                extra: false,
            }
        })
        .collect();
    ScriptedPlan { steps }
}

/// The hint a plan-based defense sends with its planner request: the scripted plan, and
/// how the defense writes a plan.
pub fn hint(ctx: &DefenseCtx<'_>, render: fn(&ScriptedPlan) -> String) -> SimHint {
    SimHint::Plan {
        plan: build(ctx),
        render,
    }
}

/// The distinct tools of a plan, in order, as JSON strings (for formats that list tools).
pub fn tools(plan: &ScriptedPlan, only: impl Fn(&PlanStep) -> bool) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for s in plan.steps.iter().filter(|s| only(s)) {
        let t = Value::String(s.tool.clone());
        if !out.contains(&t) {
            out.push(t);
        }
    }
    out
}

/// The arguments of a step whose values the request (or setting) states: what a plan
/// can fix. Empty values fix nothing and are left out.
pub fn stated(step: &PlanStep) -> serde_json::Map<String, Value> {
    step.args
        .iter()
        .filter_map(|(k, b)| match b {
            Binding::Request(v) | Binding::Setting(v) => Some((k.clone(), v.clone())),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::defense::sieve::graph::{IntentGraph, Source};
    use crate::defense::{DefenseStats, build};
    use crate::model::sim::{EpisodeScript, SimModel, SimProfile};
    use crate::model::tokens::TokenCounter;
    use crate::model::{
        ChatModel, ChatReply, ChatRequest, Component, CostMeter, ModelError, Models,
    };
    use async_trait::async_trait;
    use std::sync::{Arc, Mutex};

    /// A model that records what it answered as planner.
    struct Recorder {
        inner: SimModel,
        planned: Mutex<Vec<String>>,
    }

    #[async_trait]
    impl ChatModel for Recorder {
        fn name(&self) -> &str {
            self.inner.name()
        }
        fn simulated(&self) -> bool {
            true
        }
        async fn chat(&self, req: &ChatRequest<'_>) -> Result<ChatReply, ModelError> {
            let reply = self.inner.chat(req).await?;
            if req.component == Component::Planner {
                self.planned
                    .lock()
                    .unwrap()
                    .push(reply.message.content.clone());
            }
            Ok(reply)
        }
    }

    /// Every scalar argument value of a plan (list elements one by one).
    fn scalars(v: &Value, out: &mut Vec<Value>) {
        match v {
            Value::Array(a) => a.iter().for_each(|x| scalars(x, out)),
            Value::Object(m) => m.values().for_each(|x| scalars(x, out)),
            Value::String(s) if s.trim().is_empty() => {}
            Value::Null | Value::Bool(_) => {}
            other => out.push(other.clone()),
        }
    }

    /// Over every user task of every own suite and every plan-based defense, with a
    /// perfect and a default-quality scripted planner: no planner reply writes a value of
    /// the reference plan that the request and setting do not show, and every argument
    /// SIEVE's graph binds to `user` is one the request shows.
    #[tokio::test]
    async fn no_scripted_planner_binds_a_value_absent_from_the_request() {
        let tokens = Arc::new(TokenCounter::new().unwrap());
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("suites");
        let defenses = [
            "sieve",
            "ipiguard",
            "drift",
            "plan_then_execute",
            "tool_filter",
            "task_shield",
            "argus",
        ];
        let mut checked = 0;
        for family in ["dojo-style", "lure-style"] {
            let mut dirs: Vec<_> = std::fs::read_dir(root.join(family))
                .unwrap()
                .map(|e| e.unwrap().path())
                .collect();
            dirs.sort();
            for dir in dirs {
                let suite = crate::suite::load(&dir).unwrap();
                let setting = suite.meta.setting();
                for ut in &suite.user_tasks {
                    let mut secrets = Vec::new();
                    for c in &ut.plan {
                        scalars(&c.args, &mut secrets);
                    }
                    secrets.retain(|v| !appears(v, &ut.prompt) && !appears(v, &setting));
                    for profile in [
                        "oracle,planner_recall=1,planner_extra=0",
                        "oracle,planner_extra=1",
                    ] {
                        let recorder = Arc::new(Recorder {
                            inner: SimModel::new(
                                SimProfile::parse(profile).unwrap(),
                                tokens.clone(),
                            ),
                            planned: Mutex::new(Vec::new()),
                        });
                        let models = Models {
                            agent: recorder.clone(),
                            planner: recorder.clone(),
                            judge: recorder.clone(),
                            embedder: Arc::new(crate::embed::Lexical),
                            tokens: tokens.clone(),
                        };
                        let script = Arc::new(EpisodeScript {
                            user_plan: ut.plan.clone(),
                            answer: String::new(),
                            injection: None,
                            alternatives: Vec::new(),
                            needs: Vec::new(),
                        });
                        for name in defenses {
                            let mut tools = suite.tools.schemas();
                            let (mut meter, mut stats) =
                                (CostMeter::default(), DefenseStats::default());
                            let mut ctx = DefenseCtx {
                                suite: &suite,
                                user_prompt: &ut.prompt,
                                tools: &mut tools,
                                history: &[],
                                models: &models,
                                seed: 11,
                                script: Some(&script),
                                meter: &mut meter,
                                stats: &mut stats,
                            };
                            let mut e = build(name).unwrap().episode();
                            e.start(&mut ctx).await.unwrap();
                            let replies = std::mem::take(&mut *recorder.planned.lock().unwrap());
                            assert!(!replies.is_empty(), "{name} asked no planner");
                            for reply in &replies {
                                for v in &secrets {
                                    assert!(
                                        !appears(v, reply),
                                        "{}/{} {name} ({profile}): the planner wrote {v}, which the request does not show:\n{reply}",
                                        suite.meta.name,
                                        ut.id
                                    );
                                }
                            }
                            if name == "sieve" {
                                let g = IntentGraph::parse(&replies[0], &suite.tools).unwrap();
                                for n in g.graph.node_weights() {
                                    let i: usize =
                                        n.id.trim_start_matches("extra_")
                                            .trim_start_matches('n')
                                            .parse()
                                            .unwrap();
                                    for (k, src) in &n.args {
                                        if *src == Source::User {
                                            let v = &ut.plan[i].args[k];
                                            assert!(
                                                appears(v, &ut.prompt),
                                                "{}/{}: `{k}` = {v} bound to user",
                                                suite.meta.name,
                                                ut.id
                                            );
                                        }
                                    }
                                }
                            }
                            checked += 1;
                        }
                    }
                }
            }
        }
        assert!(checked > 1500, "{checked}");
    }
}
