//! Semantic validation, what `check-suites` proves for every suite: each task is
//! solvable by its reference plan, each check can fail, each user task is injectable.

use super::check::{Check, Outcome};
use super::{Suite, run_plan};
use crate::envpath;
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
