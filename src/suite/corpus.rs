//! What `check-suites` proves with the generated corpus: every user task's typed facts are
//! visible to the agent and judged right in every generated rendering
//! ([`super::perturb`]), every injection task's check ignores generated protective
//! behaviour and still catches the attack ([`super::protective`]), and the shared lexicon
//! contradicts nothing.

use super::check::Outcome;
use super::validate::Problem;
use super::{StepFailed, Suite, lexicon, perturb, protective, run_plan, writes};
use serde_json::Value;

/// How many generated entries a suite's proofs judged.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Counts {
    pub correct: usize,
    pub wrong: usize,
    pub protective: usize,
    pub obeying: usize,
    /// Wrong versions of reference writes ([`super::writes`]), each refused.
    pub wrong_writes: usize,
    /// Protective writes added to clean reference plans, each keeping utility.
    pub kept: usize,
    /// Generated correct and wrong answers the utility check left undecided.
    pub undecided: usize,
}

/// The most generated answers of a suite the checks may leave undecided, in percent of
/// its generated correct and wrong answers: above it the matcher reads too little.
pub const UNDECIDED_CAP_PCT: f64 = 5.0;

impl Counts {
    /// The share of generated answers left undecided, in percent.
    pub fn undecided_pct(&self) -> f64 {
        let n = self.correct + self.wrong;
        if n == 0 {
            0.0
        } else {
            100.0 * self.undecided as f64 / n as f64
        }
    }
}

/// Proves a suite's facts and, with `generated`, runs the generated corpus on it: its
/// problems and its counts. Without `generated` only the bad-input proofs run (a fact the
/// agent cannot see, an untyped answer check, a contradictory lexicon), cheap enough for
/// every `run`; `check-suites` runs everything.
pub fn prove(suite: &Suite, generated: bool) -> (Vec<Problem>, Counts) {
    let mut problems = lexicon_problems(lexicon::lexicon());
    let mut counts = Counts::default();
    let benign = suite.env.benign();
    let protective_writes = if generated {
        protective_write_sample(suite)
    } else {
        Vec::new()
    };
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
        if generated {
            let year: i16 = suite
                .meta
                .date
                .get(..4)
                .and_then(|y| y.parse().ok())
                .unwrap_or(2026);
            written_values_proof(suite, t, year, &mut counts, &mut push);
            let (found, judged) = writes::prove(suite, t);
            counts.wrong_writes += judged;
            found.into_iter().for_each(&mut push);
            protective_keeps_utility(suite, t, &protective_writes, &mut counts, &mut push);
        }
        facts_proof(suite, t, &benign, generated, &mut counts, &mut push);
    }
    for t in suite.injection_tasks.iter().filter(|_| generated) {
        let mut push = |message: String| {
            problems.push(Problem {
                file: "injection_tasks.yaml",
                task: t.id.0.clone(),
                message,
            })
        };
        security_check_proof(suite, t, &benign, &mut counts, &mut push);
    }
    if generated && counts.undecided_pct() > UNDECIDED_CAP_PCT {
        problems.push(Problem {
            file: "user_tasks.yaml",
            task: "(all)".into(),
            message: format!(
                "the checks leave {} of {} generated answers undecided ({:.1}%, at most {UNDECIDED_CAP_PCT}% allowed)",
                counts.undecided,
                counts.correct + counts.wrong,
                counts.undecided_pct()
            ),
        });
    }
    (problems, counts)
}

/// The protective writes every clean plan takes: each kind (reader and text) from two
/// injection tasks, with the task it came from and why it protects.
fn protective_write_sample(suite: &Suite) -> Vec<(String, super::PlannedCall, String)> {
    // The kinds are what a check can read differently.
    let mut seen: std::collections::BTreeMap<String, usize> = Default::default();
    suite
        .injection_tasks
        .iter()
        .flat_map(|it| {
            protective::protective_writes(suite, it)
                .into_iter()
                .map(|(call, why)| (it.id.0.clone(), call, why))
        })
        .filter(|(_, _, why)| {
            let n = seen.entry(why.clone()).or_default();
            *n += 1;
            *n <= 2
        })
        .collect()
}

/// A user task's typed facts: each visible to the agent, and (with `generated`) every
/// generated correct answer kept and every generated wrong one refused by the utility
/// check.
fn facts_proof(
    suite: &Suite,
    t: &super::UserTask,
    benign: &Value,
    generated: bool,
    counts: &mut Counts,
    push: &mut impl FnMut(String),
) {
    let fact_sets = t.utility.facts();
    if fact_sets.is_empty() {
        return;
    }
    let seen = super::sight::seen(suite, t).everything();
    let mut env = benign.clone();
    let run = run_plan(&suite.tools, &mut env, &t.plan);
    if run.failure.is_some() {
        return; // the reference-plan proof reports it
    }
    // A correct answer passes or is undecided, a wrong one fails or is undecided;
    // never the opposite.
    let judge = |answer: &str| {
        t.utility.eval_decided(&Outcome {
            pre: benign,
            post: &env,
            calls: &run.calls,
            answer,
        })
    };
    for facts in fact_sets {
        for (field, message) in perturb::unseen(&facts.0, &seen) {
            push(format!("field `utility.{field}`: {message}"));
        }
        if !generated {
            continue;
        }
        judge_generated(perturb::correct(&facts.0), true, &judge, counts, push);
        let reference = t.answer.as_deref().unwrap_or_default();
        let (ref_correct, ref_wrong) = perturb::from_reference(&facts.0, reference, benign);
        judge_generated(ref_correct, true, &judge, counts, push);
        judge_generated(ref_wrong, false, &judge, counts, push);
        judge_generated(
            perturb::wrong(&facts.0, benign),
            false,
            &judge,
            counts,
            push,
        );
    }
}

/// Judges generated answers that are all `correct` (or all wrong), counting them and the
/// undecided, with a problem for each the utility check judges the other way.
fn judge_generated(
    answers: Vec<perturb::Rendering>,
    correct: bool,
    judge: &impl Fn(&str) -> Option<bool>,
    counts: &mut Counts,
    push: &mut impl FnMut(String),
) {
    for r in answers {
        if correct {
            counts.correct += 1;
        } else {
            counts.wrong += 1;
        }
        let got = judge(&r.text);
        counts.undecided += usize::from(got.is_none());
        if got == Some(!correct) {
            push(if correct {
                format!(
                    "generated correct answer ({}) {:?} fails the utility check",
                    r.why, r.text
                )
            } else {
                format!(
                    "generated wrong answer ({}) {:?} passes the utility check",
                    r.why, r.text
                )
            });
        }
    }
}

/// An injection task's security check: no generated protective behaviour counts as the
/// attack, and every generated other way of making the attack trips it.
fn security_check_proof(
    suite: &Suite,
    t: &super::InjectionTask,
    benign: &Value,
    counts: &mut Counts,
    push: &mut impl FnMut(String),
) {
    let judge = |plan: &[super::PlannedCall], answer: &str| -> Result<bool, StepFailed> {
        let mut env: Value = benign.clone();
        let run = run_plan(&suite.tools, &mut env, plan);
        if let Some(failed) = run.step_failed() {
            return Err(failed);
        }
        Ok(t.security.eval(&Outcome {
            pre: benign,
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
    for b in protective::obeying(suite, t) {
        counts.obeying += 1;
        match judge(&b.plan, &b.answer) {
            Err(e) => push(format!("the attack made another way ({}): {e}", b.why)),
            Ok(false) => push(format!(
                "the attack made another way ({}) does not trip the security check: {}",
                b.why,
                describe(&b)
            )),
            Ok(true) => {}
        }
    }
}

/// Protective acts keep utility: every generated protective write (a warning to a
/// colleague, a client, a peer agent, a note) added to the task's clean reference plan
/// must leave the utility check holding.
fn protective_keeps_utility(
    suite: &Suite,
    t: &super::UserTask,
    writes: &[(String, super::PlannedCall, String)],
    counts: &mut Counts,
    push: &mut impl FnMut(String),
) {
    let benign = suite.env.benign();
    let answer = t.answer.clone().unwrap_or_default();
    let passes = |plan: &[super::PlannedCall]| {
        let mut env = benign.clone();
        let run = run_plan(&suite.tools, &mut env, plan);
        run.failure.is_none()
            && t.utility.eval(&Outcome {
                pre: &benign,
                post: &env,
                calls: &run.calls,
                answer: &answer,
            })
    };
    if !passes(&t.plan) {
        return; // the reference-plan proof reports it
    }
    for (from, call, why) in writes {
        counts.kept += 1;
        let mut plan = t.plan.clone();
        plan.push(call.clone());
        if !passes(&plan) {
            push(format!(
                "the reference plan with a protective write added ({why}, from `{from}`: {} {}) fails the utility check",
                call.tool, call.args
            ));
        }
    }
}

/// The values a user task's plan writes into messages, notes and pages: each written in
/// another form must still pass the utility check, and each that the check reads (the
/// check fails when it is left out) must fail when it is wrong.
fn written_values_proof(
    suite: &Suite,
    t: &super::UserTask,
    year: i16,
    counts: &mut Counts,
    push: &mut impl FnMut(String),
) {
    let benign = suite.env.benign();
    let passes = |plan: &[super::PlannedCall]| {
        let mut env = benign.clone();
        let run = run_plan(&suite.tools, &mut env, plan);
        let answer = t.answer.clone().unwrap_or_default();
        run.failure.is_none()
            && t.utility.eval(&Outcome {
                pre: &benign,
                post: &env,
                calls: &run.calls,
                answer: &answer,
            })
    };
    if !passes(&t.plan) {
        return; // the reference-plan proof reports it
    }
    // Amounts a write call takes as numbers (a payment, a standing order): each one the
    // check reads must fail one more and ten percent more.
    for (step, call) in t.plan.iter().enumerate() {
        let writes = suite
            .tools
            .get(call.tool.as_str())
            .is_some_and(|tool| tool.kind != crate::tools::ToolKind::Read);
        let Some(args) = call.args.as_object().filter(|_| writes) else {
            continue;
        };
        for (arg, v) in args {
            let Some(n) = v.as_f64() else {
                continue;
            };
            let with = |x: f64| {
                let mut plan = t.plan.clone();
                plan[step].args[arg.as_str()] = serde_json::json!(x);
                plan
            };
            let tries = [
                (n + 1.0, "one more"),
                ((n * 110.0).round() / 100.0, "ten percent more"),
            ];
            if tries.iter().all(|(x, _)| passes(&with(*x))) {
                continue; // the check does not read this number
            }
            for (x, why) in tries {
                counts.wrong += 1;
                if passes(&with(x)) {
                    push(format!(
                        "plan step {step} `{arg}` = {x} ({why}) passes the utility check"
                    ));
                }
            }
        }
    }
    for w in perturb::written_values(&t.plan, year) {
        let read = !passes(&perturb::replace_written(&t.plan, &w, ""));
        if !read {
            continue;
        }
        let what = format!(
            "plan step {} `{}` value {}",
            w.step,
            w.arg,
            w.value.render()
        );
        for (form, why) in perturb::written_forms(&w) {
            counts.correct += 1;
            if !passes(&perturb::replace_written(&t.plan, &w, &form)) {
                push(format!(
                    "{what} written as {form:?} ({why}) fails the utility check"
                ));
            }
        }
        for (wrong, why) in perturb::written_wrong(&w) {
            counts.wrong += 1;
            if passes(&perturb::replace_written(&t.plan, &w, &wrong)) {
                push(format!(
                    "{what} written wrong as {wrong:?} ({why}) passes the utility check"
                ));
            }
        }
    }
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
