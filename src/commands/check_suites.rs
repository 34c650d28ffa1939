//! `check-suites`: proves every selected suite sound (see [`crate::suite::validate`]) and
//! renders every attack template against every injection task, so a broken attack fails
//! here rather than in the middle of a run.

use super::{CliError, Paths, load_suites};
use crate::attack::{AttackContext, load_all};
use crate::suite::validate::validate_counted;
use rayon::prelude::*;
use std::fmt::Write;

/// Validates the suites and attacks and returns the report; any problem is an error (exit 2).
pub fn check_suites(paths: &Paths, selector: &str) -> Result<String, CliError> {
    let suites = load_suites(paths, selector)?;
    let attacks = load_all(&paths.attacks)?;
    // Each suite's proofs replay every reference plan and alternative against its own
    // environment: independent CPU-bound work, so suites are checked in parallel and
    // reported in the order they were selected.
    let checked: Vec<(String, Vec<String>)> = suites
        .par_iter()
        .map(|s| check_one(s, &attacks, paths))
        .collect();
    let mut out = String::new();
    let mut failed = Vec::new();
    for (line, problems) in checked {
        out.push_str(&line);
        failed.extend(problems);
    }
    writeln!(
        out,
        "{} attack template(s) rendered for every injection task",
        attacks.len()
    )
    .unwrap();
    if failed.is_empty() {
        writeln!(out, "all {} suite(s) valid", suites.len()).unwrap();
        Ok(out)
    } else {
        Err(CliError::bad_input(format!(
            "{out}{} problem(s):\n  {}",
            failed.len(),
            failed.join("\n  ")
        )))
    }
}

/// One suite's status line and its problems (suite soundness, then attack rendering).
fn check_one(
    s: &crate::suite::Suite,
    attacks: &[crate::attack::Attack],
    paths: &Paths,
) -> (String, Vec<String>) {
    let (problems, generated) = validate_counted(s);
    let status = if problems.is_empty() { "ok" } else { "FAILED" };
    let mut line = format!(
        "{:<24} {:>3} user tasks  {:>3} injection tasks  {:>3} tools  {:>3} vectors  {:>3} variants  {status}
{:<24} generated: {} correct, {} wrong, {} wrong writes, {} protective, {} protective writes kept, {} obeying; undecided {:.1}% ({} of {} answers)
",
        s.qualified_name(),
        s.user_tasks.len(),
        s.injection_tasks.len(),
        s.tools.len(),
        s.vectors.len(),
        s.variants.len(),
        "",
        generated.correct,
        generated.wrong,
        generated.wrong_writes,
        generated.protective,
        generated.kept,
        generated.obeying,
        generated.undecided_pct(),
        generated.undecided,
        generated.correct + generated.wrong,
    );
    if !s.samples.is_empty() {
        use crate::suite::sample_proofs::{Reach, facts};
        let f = facts(s);
        let other = f
            .iter()
            .filter(|x| x.reach == Some(Reach::OtherTools))
            .count();
        let told = f.iter().filter(|x| x.tell.is_some()).count();
        line.push_str(&format!(
            "{:<24} {:>3} samples: {other} need a tool outside their task's plan, {told} name a tell (`list samples`)\n",
            "", f.len()
        ));
    }
    let mut failed: Vec<String> = problems
        .iter()
        .map(|p| format!("{}/{p}", s.dir.display()))
        .collect();
    let task = s.user_tasks.first().map_or("", |t| t.prompt.as_str());
    for a in attacks {
        for it in &s.injection_tasks {
            let ctx = AttackContext {
                goal: &it.goal,
                user: &s.meta.user,
                model: "AI assistant",
                task,
                plan: &it.plan,
            };
            if let Some(problem) = a.render_problem(&ctx) {
                failed.push(format!(
                    "{}: attack `{}` on injection task `{}`: {problem}",
                    paths.attacks.display(),
                    a.name,
                    it.id
                ));
            }
        }
    }
    (line, failed)
}
