//! What `check-suites` proves with the generated corpus: every user task's typed facts are
//! visible to the agent and judged right in every generated rendering
//! ([`super::perturb`]), every injection task's check ignores generated protective
//! behaviour and still catches the attack ([`super::protective`]), and the shared lexicon
//! contradicts nothing.

use super::check::Outcome;
use super::validate::Problem;
use super::{Suite, lexicon, perturb, protective, run_plan, visible};
use serde_json::Value;

/// How many generated entries a suite's proofs judged.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Counts {
    pub correct: usize,
    pub wrong: usize,
    pub protective: usize,
    pub obeying: usize,
}

/// Runs the generated corpus on a suite: its problems and its counts.
pub fn prove(suite: &Suite) -> (Vec<Problem>, Counts) {
    let mut problems = lexicon_problems(lexicon::lexicon());
    let mut counts = Counts::default();
    let benign = suite.env.benign();
    for t in &suite.user_tasks {
        let mut push = |message: String| {
            problems.push(Problem {
                file: "user_tasks.yaml",
                task: t.id.0.clone(),
                message,
            })
        };
        if t.utility.reads_answer_untyped() {
            push("field `utility`: reads the answer with `answer`/`answer_contains`; state what it must say as typed `facts`".into());
        }
        let fact_sets = t.utility.facts();
        if fact_sets.is_empty() {
            continue;
        }
        let seen = visible::agent_visible(suite, t);
        let mut env = benign.clone();
        let run = run_plan(&suite.tools, &mut env, &t.plan);
        if run.failure.is_some() {
            continue; // the reference-plan proof reports it
        }
        let judge = |answer: &str| {
            t.utility.eval(&Outcome {
                pre: &benign,
                post: &env,
                calls: &run.calls,
                answer,
            })
        };
        for facts in fact_sets {
            for (field, message) in perturb::unseen(&facts.0, &seen) {
                push(format!("field `utility.{field}`: {message}"));
            }
            for r in perturb::correct(&facts.0) {
                counts.correct += 1;
                if !judge(&r.text) {
                    push(format!(
                        "generated correct answer ({}) {:?} fails the utility check",
                        r.why, r.text
                    ));
                }
            }
            for r in perturb::wrong(&facts.0, &benign) {
                counts.wrong += 1;
                if judge(&r.text) {
                    push(format!(
                        "generated wrong answer ({}) {:?} passes the utility check",
                        r.why, r.text
                    ));
                }
            }
        }
    }
    for t in &suite.injection_tasks {
        let mut push = |message: String| {
            problems.push(Problem {
                file: "injection_tasks.yaml",
                task: t.id.0.clone(),
                message,
            })
        };
        let judge = |plan: &[super::PlannedCall], answer: &str| -> Result<bool, String> {
            let mut env: Value = benign.clone();
            let run = run_plan(&suite.tools, &mut env, plan);
            if let Some((i, e)) = run.failure {
                return Err(format!("step {i} fails: {e}"));
            }
            Ok(t.security.eval(&Outcome {
                pre: &benign,
                post: &env,
                calls: &run.calls,
                answer,
            }))
        };
        for b in protective::protective(suite, t) {
            counts.protective += 1;
            match judge(&b.plan, &b.answer) {
                Err(e) => push(format!("generated protective behaviour ({}): {e}", b.why)),
                Ok(true) => push(format!(
                    "generated protective behaviour ({}) counts as the attack: {}",
                    b.why,
                    describe(&b)
                )),
                Ok(false) => {}
            }
        }
        for b in protective::obeying(t) {
            counts.obeying += 1;
            match judge(&b.plan, &b.answer) {
                Err(e) => push(format!("the attack dressed as a warning ({}): {e}", b.why)),
                Ok(false) => push(format!(
                    "the attack dressed as a warning ({}) no longer trips the security check",
                    b.why
                )),
                Ok(true) => {}
            }
        }
    }
    (problems, counts)
}

/// A lexicon's contradictions as problems located at its file and field.
pub fn lexicon_problems(lx: &lexicon::Lexicon) -> Vec<Problem> {
    lx.contradictions()
        .into_iter()
        .map(|(field, message)| Problem {
            file: lexicon::FILE,
            task: "-".into(),
            message: format!("field `{field}`: {message}"),
        })
        .collect()
}

fn describe(b: &protective::Behaviour) -> String {
    let calls: Vec<String> = b
        .plan
        .iter()
        .map(|c| format!("{} {}", c.tool, c.args))
        .collect();
    format!("calls [{}], answer {:?}", calls.join("; "), b.answer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_contradictory_lexicon_is_a_located_problem() {
        let text = include_str!("lexicon.yaml").replacen("no: [no,", "no: [yes, no,", 1);
        let lx = lexicon::Lexicon::parse(&text).unwrap();
        let problems = lexicon_problems(&lx);
        assert_eq!(problems.len(), 1, "{problems:?}");
        let shown = problems[0].to_string();
        assert!(
            shown.starts_with("src/suite/lexicon.yaml: task `-`: field `yes/no`"),
            "{shown}"
        );
        assert!(lexicon_problems(lexicon::lexicon()).is_empty());
    }
}
