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
//! - worked out, for a date, time or number the agent works out from the request and
//!   the setting alone (nothing of it is read in a tool output, by
//!   [`crate::suite::sight::needs`]): a day named "Friday" or "tomorrow". The planner
//!   works it out as the agent does and writes it as a literal, as its instructions ask
//!   ("a date implied by today"). A count given to a read tool is the agent's choice, not
//!   implied, and stays unknown;
//! - the output of the latest earlier step that shows what a worked-out value is
//!   computed from, for one the agent computes from what it reads (half an invoice's
//!   total): the planner names the read the value comes from, as its instructions'
//!   example does ("an amount printed on a bill"). Layer 1 still finds a computed value
//!   in no output and sends the call to the adjudicator (docs/sieve.md);
//! - unknown otherwise (a text the agent composes, or a value no earlier step shows). A
//!   defense writes an unknown argument as its format allows (IPIGuard's
//!   `{"unknown": …}`), or leaves it out.
//!
//! So no scripted planner writes a value the request does not contain or imply; the
//! answer key decides only which steps the plan has. The scripted model then drops steps and plans
//! one twice by its stated quality ([`PlannerQuality::degrade`]), with the same draws for
//! every defense of an episode, and writes the result in the defense's format.
//!
//! [`PlannerQuality::degrade`]: crate::model::sim_roles::PlannerQuality::degrade

use super::DefenseCtx;
use super::sieve::layer1::appears;
use super::support::is_read;
use crate::model::SimHint;
use crate::model::sim_roles::{Binding, PlanStep, ScriptedPlan};
use crate::suite::meaning::{parse_date, parse_time};
use crate::suite::trace::{View, shows_in};
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

/// Whether a value is one the agent works out rather than composes: a number, or a date
/// or time (`2026-06-12`, `2026-06-12 10:00`, `10:00`). A number given to a read tool is
/// the agent's choice (how many transactions to list), not worked out.
fn is_worked_value(v: &Value, to_read_tool: bool) -> bool {
    match v {
        Value::Number(_) => !to_read_tool,
        Value::String(s) => !date_time_parts(s).is_empty(),
        _ => false,
    }
}

/// The parts of a string that is exactly a date (`2026-05-27`), a time (`13:30`) or a
/// date and a time (`2026-05-27 13:30`), as the tools take them; empty for any other.
fn date_time_parts(s: &str) -> Vec<Value> {
    let t = s.trim();
    let date = |d: &str| d.len() == 10 && parse_date(d).is_ok();
    let time = |h: &str| (4..=5).contains(&h.len()) && parse_time(h).is_ok();
    if date(t) || time(t) {
        return vec![Value::String(t.to_string())];
    }
    match t.split_once(' ') {
        Some((d, h)) if date(d) && time(h) => {
            vec![Value::String(d.to_string()), Value::String(h.to_string())]
        }
        _ => Vec::new(),
    }
}

/// Whether and from what the agent works a value out ([`worked_out`]).
enum Worked {
    /// Not a date, time or number the agent works out.
    No,
    /// From the request and the setting alone.
    FromRequest,
    /// From these facts, read in earlier outputs.
    FromReads(Vec<Value>),
}

/// For a value the planner finds neither in the request, the setting nor an earlier
/// output: [`Worked::No`] when it is not a worked-out value ([`is_worked_value`]);
/// [`Worked::FromRequest`] when the agent works it out from the request and setting
/// alone; [`Worked::FromReads`] with the facts it reads in `outputs` (those before its step) to
/// compute it: what the episode's needs say it takes from outputs (a `derived` note's
/// figures) and, for a date or time, its date and its time where an output shows them.
fn worked_out(
    v: &Value,
    to_read_tool: bool,
    needed: Option<&[Value]>,
    outputs: &[String],
) -> Worked {
    if !is_worked_value(v, to_read_tool) {
        return Worked::No;
    }
    let mut facts: Vec<Value> = needed.unwrap_or_default().to_vec();
    if let Some(s) = v.as_str() {
        let views: Vec<View> = outputs.iter().map(|o| View::new(o.clone())).collect();
        facts.extend(
            date_time_parts(s)
                .into_iter()
                .filter(|p| views.iter().any(|w| shows_in(w, p))),
        );
    }
    if facts.is_empty() {
        Worked::FromRequest
    } else {
        Worked::FromReads(facts)
    }
}

/// The facts argument `arg` of the reference plan's step `step` takes from tool outputs
/// (the episode's needs, [`crate::suite::sight::needs`]); `None` when it takes none. A
/// suite without needs (served by a provider) reads none.
fn read_facts<'a>(
    script: &'a crate::model::sim::EpisodeScript,
    step: usize,
    arg: &str,
) -> Option<&'a [Value]> {
    script
        .needs
        .first()?
        .calls
        .get(step)?
        .iter()
        .find(|(a, _)| a == arg)
        .map(|(_, facts)| facts.as_slice())
}

/// The latest of `outputs` that shows every fact, else the latest that shows any.
fn latest_showing(outputs: &[String], facts: &[Value]) -> Option<usize> {
    let views: Vec<View> = outputs.iter().map(|o| View::new(o.clone())).collect();
    let latest = |all: bool| {
        (0..views.len()).rev().find(|&j| {
            let shown = |f: &Value| shows_in(&views[j], f);
            if all {
                facts.iter().all(shown)
            } else {
                facts.iter().any(shown)
            }
        })
    };
    latest(true).or_else(|| latest(false))
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
                                let before = &run.outputs[..i.min(run.outputs.len())];
                                let to_read = is_read(suite, call.tool.as_str());
                                match worked_out(v, to_read, read_facts(script, i, k), before) {
                                    Worked::No => Binding::Unknown,
                                    Worked::FromRequest => Binding::WorkedOut(v.clone()),
                                    Worked::FromReads(facts) => latest_showing(before, &facts)
                                        .map_or(Binding::Unknown, Binding::Output),
                                }
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

/// The arguments of a step whose values the request (or setting) states or implies:
/// what a plan can fix. Empty values fix nothing and are left out.
pub fn stated(step: &PlanStep) -> serde_json::Map<String, Value> {
    step.args
        .iter()
        .filter_map(|(k, b)| match b {
            Binding::Request(v) | Binding::Setting(v) | Binding::WorkedOut(v) => {
                Some((k.clone(), v.clone()))
            }
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
    use crate::model::{ChatModel, ChatReply, ChatRequest, ModelError, Models};
    use async_trait::async_trait;
    use sieve_record::{Component, CostMeter};
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

    /// The SIEVE graph the perfect scripted planner writes for a user task of an own suite.
    async fn graph_of(family: &str, suite: &str, task: &str) -> IntentGraph {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("suites");
        let suite = crate::suite::load(&root.join(family).join(suite)).unwrap();
        let ut = suite
            .user_tasks
            .iter()
            .find(|t| t.id.as_str() == task)
            .unwrap();
        let answer = ut.answer.clone().unwrap_or_default();
        let tokens = Arc::new(TokenCounter::new().unwrap());
        let sim = Arc::new(SimModel::new(
            SimProfile::parse("oracle,planner_recall=1,planner_extra=0").unwrap(),
            tokens.clone(),
        ));
        let models = Models {
            agent: sim.clone(),
            planner: sim.clone(),
            judge: sim,
            embedder: Arc::new(crate::embed::Lexical),
            tokens,
        };
        let script = Arc::new(EpisodeScript {
            user_plan: ut.plan.clone(),
            answer: answer.clone(),
            injection: None,
            alternatives: Vec::new(),
            needs: vec![crate::suite::sight::needs(&suite, ut, &ut.plan, &answer)],
        });
        let mut tools = suite.tools.schemas();
        let (mut meter, mut stats) = (CostMeter::default(), DefenseStats::default());
        let ctx = DefenseCtx {
            suite: &suite,
            user_prompt: &ut.prompt,
            tools: &mut tools,
            history: &[],
            models: &models,
            seed: 3,
            script: Some(&script),
            meter: &mut meter,
            stats: &mut stats,
        };
        let plan = super::build(&ctx);
        IntentGraph::parse(&crate::defense::sieve::planner::render(&plan), &suite.tools).unwrap()
    }

    /// "Tomorrow" is worked out from today's date and written down; an amount computed
    /// from an invoice is bound to the read that shows the invoice (layer 1 still sends
    /// it to the adjudicator: no output holds the computed figure).
    #[tokio::test]
    async fn implied_dates_are_written_and_computed_amounts_name_their_read() {
        let g = graph_of("dojo-style", "workspace", "user_task_3").await;
        let day = g.candidates("get_day_calendar_events").next().unwrap();
        assert_eq!(
            day.args["day"],
            Source::Literal(serde_json::json!("2026-05-20"))
        );
        let g = graph_of("lure-style", "banking", "user_task_2").await;
        let pay = g.candidates("send_money").next().unwrap();
        let Source::Node(read) = &pay.args["amount"] else {
            panic!("the computed amount is not bound to a read: {:?}", pay.args);
        };
        let tool = &g.node(read).unwrap().tool;
        assert!(tool == "read_file" || tool == "get_document", "{tool}");
        // Not a count the agent chooses, nor a text it composes.
        for n in g.graph.node_weights() {
            if n.tool == "get_most_recent_transactions" {
                assert!(!n.args.contains_key("n"), "{:?}", n.args);
            }
        }
    }

    /// The values of a user task's reference plan a planner may not write (each scalar of
    /// an argument the request and setting do not show, unless the agent works it out
    /// without reading a tool output: a date, time or number nothing of which an earlier
    /// output shows and the needs take from none), the task's needs, and how many values
    /// the agent works out.
    fn secrets_of(
        suite: &crate::suite::Suite,
        ut: &crate::suite::UserTask,
    ) -> (Vec<Value>, crate::suite::sight::Needs, usize) {
        let answer = ut.answer.clone().unwrap_or_default();
        let needs = crate::suite::sight::needs(suite, ut, &ut.plan, &answer);
        let mut env = suite.env.with(&suite.defaults(), &[]);
        let run = crate::suite::run_plan(&suite.tools, &mut env, &ut.plan);
        let mut secrets = Vec::new();
        let mut implied = Vec::new();
        for (i, c) in ut.plan.iter().enumerate() {
            let reads = is_read(suite, c.tool.as_str());
            let before: Vec<View> = run.outputs[..i.min(run.outputs.len())]
                .iter()
                .map(|o| View::new(o.clone()))
                .collect();
            for (k, v) in c.args.as_object().into_iter().flatten() {
                // Read: what the needs say it takes from outputs, or a date or time an
                // earlier output shows part of.
                let read = needs.calls[i].iter().any(|(a, f)| a == k && !f.is_empty())
                    || v.as_str().is_some_and(|s| {
                        date_time_parts(s)
                            .iter()
                            .any(|p| before.iter().any(|w| shows_in(w, p)))
                    });
                if is_worked_value(v, reads) && !read {
                    implied.push(v.clone());
                } else {
                    scalars(v, &mut secrets);
                }
            }
        }
        // A value implied where it is first used may be read back later (a reservation's
        // time in its confirmation): it is the planner's own.
        let setting = suite.meta.setting();
        secrets
            .retain(|v| !appears(v, &ut.prompt) && !appears(v, &setting) && !implied.contains(v));
        (secrets, needs, implied.len())
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
    /// the reference plan that the request and setting do not show, except a date, time
    /// or number the agent works out without reading any tool output (what `sight::needs`
    /// finds it takes from outputs: nothing), and every argument SIEVE's graph binds to
    /// `user` is one the request shows.
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
        let mut worked_out_values = 0;
        for family in ["dojo-style", "lure-style"] {
            let mut dirs: Vec<_> = std::fs::read_dir(root.join(family))
                .unwrap()
                .map(|e| e.unwrap().path())
                .collect();
            dirs.sort();
            for dir in dirs {
                let suite = crate::suite::load(&dir).unwrap();
                for ut in &suite.user_tasks {
                    let (secrets, needs, implied) = secrets_of(&suite, ut);
                    worked_out_values += implied;
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
                            needs: vec![needs.clone()],
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
        assert!(
            worked_out_values > 0,
            "no value was worked out from a request"
        );
    }
}
