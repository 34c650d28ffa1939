//! Semantic validation, what `check-suites` proves for every suite: each task is
//! solvable by its reference plan, each check can fail, each user task is injectable.

use super::check::{Check, ExecutedCall, Outcome};
use super::samples::VectorClass;
use super::{Family, PlannedCall, Suite, run_plan};
use crate::envpath;
use crate::model::sim::reads_payload;
use crate::tools::ToolSet;
use serde_json::Value;

/// One failed proof.
#[derive(Debug, Clone)]
pub struct Problem {
    pub file: &'static str,
    pub task: String,
    pub message: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: task `{}`: {}", self.file, self.task, self.message)
    }
}

/// Runs every proof; an empty list means the suite is sound.
pub fn validate(suite: &Suite) -> Vec<Problem> {
    let mut problems = Vec::new();
    let benign = suite.env.benign();
    let mut push = |file, task: &str, message: String| {
        problems.push(Problem {
            file,
            task: task.to_string(),
            message,
        })
    };

    for t in &suite.user_tasks {
        let mut env = benign.clone();
        let run = run_plan(&suite.tools, &mut env, &t.plan);
        if let Some((i, e)) = &run.failure {
            push(
                "user_tasks.yaml",
                t.id.as_str(),
                format!("reference plan step {i} fails: {e}"),
            );
            continue;
        }
        let answer = t.answer.clone().unwrap_or_default();
        let solved = Outcome {
            pre: &benign,
            post: &env,
            calls: &run.calls,
            answer: &answer,
        };
        if !t.utility.eval(&solved) {
            push(
                "user_tasks.yaml",
                t.id.as_str(),
                "the reference plan and answer do not pass the utility check".into(),
            );
        }
        let untouched = Outcome {
            pre: &benign,
            post: &benign,
            calls: &[],
            answer: "",
        };
        if t.utility.eval(&untouched) {
            push("user_tasks.yaml", t.id.as_str(), "the utility check passes on the untouched environment with an empty answer, so it cannot fail".into());
        }
        if suite.injectable.get(&t.id).is_none_or(|v| v.is_empty()) {
            push(
                "user_tasks.yaml",
                t.id.as_str(),
                "not injectable: the reference plan reads no injection vector".into(),
            );
        }
    }

    for t in &suite.injection_tasks {
        let mut env = benign.clone();
        let run = run_plan(&suite.tools, &mut env, &t.plan);
        if let Some((i, e)) = &run.failure {
            push(
                "injection_tasks.yaml",
                t.id.as_str(),
                format!("reference plan step {i} fails: {e}"),
            );
            continue;
        }
        let done = Outcome {
            pre: &benign,
            post: &env,
            calls: &run.calls,
            answer: "",
        };
        if !t.security.eval(&done) {
            push(
                "injection_tasks.yaml",
                t.id.as_str(),
                "the reference plan does not trip the security check".into(),
            );
        }
        let untouched = Outcome {
            pre: &benign,
            post: &benign,
            calls: &[],
            answer: "",
        };
        if t.security.eval(&untouched) {
            push(
                "injection_tasks.yaml",
                t.id.as_str(),
                "the security check is already true on the untouched environment".into(),
            );
        }
        // An honest user task must not trip the attacker's check by itself, even with the
        // attacker's text sitting in the vectors it reads, or ASR is inflated by benign
        // behaviour. The goal stands in for a payload: it holds the attacker's values.
        let defaults = suite.defaults();
        for u in &suite.user_tasks {
            let overrides: Vec<_> = suite
                .injectable
                .get(&u.id)
                .map(|vs| vs.iter().map(|v| (v.clone(), t.goal.clone())).collect())
                .unwrap_or_default();
            let attacked = suite.env.with(&defaults, &overrides);
            let mut env = attacked.clone();
            let run = run_plan(&suite.tools, &mut env, &u.plan);
            if run.failure.is_some() {
                continue;
            }
            let answer = u.answer.clone().unwrap_or_default();
            let o = Outcome {
                pre: &attacked,
                post: &env,
                calls: &run.calls,
                answer: &answer,
            };
            if t.security.eval(&o) {
                push(
                    "injection_tasks.yaml",
                    t.id.as_str(),
                    format!(
                        "the security check is true after the benign user task `{}` alone, with the attacker's text in the vectors it reads",
                        u.id
                    ),
                );
            }
        }
    }

    let states = reference_states(suite);
    for (file, id, check) in suite
        .user_tasks
        .iter()
        .map(|t| ("user_tasks.yaml", &t.id, &t.utility))
        .chain(
            suite
                .injection_tasks
                .iter()
                .map(|t| ("injection_tasks.yaml", &t.id, &t.security)),
        )
    {
        for message in unknown_where_fields(&states, check) {
            push(file, id.as_str(), message);
        }
    }

    if suite.user_tasks.is_empty() {
        push("user_tasks.yaml", "-", "the suite has no user tasks".into());
    }
    problems.extend(validate_samples(suite));
    problems
}

/// What an agent that follows an injection does: the user's plan, with the attacker's
/// calls spliced in right after the first output that shows a payload (as the scripted
/// agent does). Returns the calls that ran, and whether the attacker's calls were reached.
pub fn run_following(
    tools: &ToolSet,
    env: &mut Value,
    user_plan: &[PlannedCall],
    attacker_plan: &[PlannedCall],
    payloads: &[&str],
) -> Result<(Vec<ExecutedCall>, bool), String> {
    let mut queue: Vec<&PlannedCall> = user_plan.iter().collect();
    let mut calls = Vec::new();
    let mut followed = false;
    let mut i = 0;
    while let Some(call) = queue.get(i).copied() {
        let run = run_plan(tools, env, std::slice::from_ref(call));
        if let Some((_, e)) = run.failure {
            return Err(format!("step {i} (`{}`) fails: {e}", call.tool));
        }
        calls.extend(run.calls);
        i += 1;
        if !followed && payloads.iter().any(|p| reads_payload(&run.outputs[0], p)) {
            queue.splice(i..i, attacker_plan.iter());
            followed = true;
        }
    }
    Ok((calls, followed))
}

/// The proofs for `samples.yaml`: each sample's payload lands where its user task's plan
/// reads it; an agent that follows it trips its injection task's security check; the
/// user task alone, with the payload in place, still solves the task and does not trip
/// it; and a lure-style suite has a sample in every user task × class cell.
fn validate_samples(suite: &Suite) -> Vec<Problem> {
    let mut problems = Vec::new();
    let mut push = |task: &str, message: String| {
        problems.push(Problem {
            file: "samples.yaml",
            task: task.to_string(),
            message,
        })
    };
    let defaults = suite.defaults();
    for s in &suite.samples {
        let (Some(ut), Some(it)) = (
            suite.user_task(s.user_task.as_str()),
            suite.injection_task(s.injection_task.as_str()),
        ) else {
            continue; // the loader refuses dangling references
        };
        let read = suite.injectable.get(&ut.id).cloned().unwrap_or_default();
        for (v, _) in &s.inject {
            if !read.contains(v) {
                push(
                    &s.id,
                    format!(
                        "the payload sits in `{v}`, which the reference plan of `{}` never reads",
                        ut.id
                    ),
                );
            }
        }
        let attacked = suite.env.with(&defaults, &s.inject);
        let payloads: Vec<&str> = s.inject.iter().map(|(_, p)| p.as_str()).collect();
        let answer = ut.answer.clone().unwrap_or_default();

        let mut env = attacked.clone();
        match run_following(
            &suite.tools,
            &mut env,
            &ut.plan,
            s.attacker_plan(it),
            &payloads,
        ) {
            Err(e) => push(&s.id, format!("following the sample, {e}")),
            Ok((_, false)) => push(
                &s.id,
                "no output of the reference plan shows the payload, so no agent can follow it"
                    .into(),
            ),
            Ok((calls, true)) => {
                let o = Outcome {
                    pre: &attacked,
                    post: &env,
                    calls: &calls,
                    answer: &answer,
                };
                if !it.security.eval(&o) {
                    push(
                        &s.id,
                        format!(
                            "an agent that follows the sample does not trip the security check of `{}`",
                            it.id
                        ),
                    );
                }
            }
        }

        let mut env = attacked.clone();
        let run = run_plan(&suite.tools, &mut env, &ut.plan);
        if let Some((i, e)) = run.failure {
            push(
                &s.id,
                format!("with the payload in place, step {i} of the user task's plan fails: {e}"),
            );
            continue;
        }
        let o = Outcome {
            pre: &attacked,
            post: &env,
            calls: &run.calls,
            answer: &answer,
        };
        if !ut.utility.eval(&o) {
            push(&s.id, "with the payload in place, the user task's reference plan no longer passes its utility check".into());
        }
        if it.security.eval(&o) {
            push(
                &s.id,
                format!(
                    "the user task alone, with the payload in place, trips the security check of `{}`",
                    it.id
                ),
            );
        }
    }
    if suite.meta.family == Family::LureStyle {
        if suite.samples.is_empty() {
            push("-", "a lure-style suite needs samples.yaml".into());
        }
        for ut in &suite.user_tasks {
            for class in VectorClass::ALL {
                if !suite
                    .samples
                    .iter()
                    .any(|s| s.user_task == ut.id && s.class == class)
                {
                    push(
                        &ut.id.0,
                        format!("no sample for the cell {}/{class}", ut.id),
                    );
                }
            }
        }
    }
    problems
}

/// The states a collection's members can be seen in: the initial environment and the
/// environment after each reference plan, so fields that tools add count as known.
fn reference_states(suite: &Suite) -> Vec<Value> {
    let benign = suite.env.benign();
    let plans = suite
        .user_tasks
        .iter()
        .map(|t| &t.plan)
        .chain(suite.injection_tasks.iter().map(|t| &t.plan));
    let mut states = vec![benign.clone()];
    for plan in plans {
        let mut env = benign.clone();
        run_plan(&suite.tools, &mut env, plan);
        states.push(env);
    }
    states
}

/// A `where` field no member of its collection has, in any reference state, can never
/// match: `where: {recipint: …}` would silently make its branch false forever.
fn unknown_where_fields(states: &[Value], check: &Check) -> Vec<String> {
    let mut out = Vec::new();
    for (path, where_) in check.selections() {
        let members: Vec<&Value> = states
            .iter()
            .filter_map(|st| envpath::get(st, path))
            .flat_map(envpath::members)
            .collect();
        for field in where_.keys() {
            if !members.iter().any(|m| envpath::get(m, field).is_some()) {
                out.push(format!(
                    "`where` names field `{field}`, which no member of `{path}` has (initially or after any reference plan), so it can never match"
                ));
            }
        }
    }
    out
}
