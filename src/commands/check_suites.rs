//! `check-suites`: proves every selected suite sound (see [`crate::suite::validate`]) and
//! renders every attack template against every injection task, so a broken attack fails
//! here rather than in the middle of a run.

use super::{CliError, Paths, load_suites};
use crate::attack::{AttackContext, load_all};
use crate::suite::validate::validate;
use std::fmt::Write;

/// Validates the suites and attacks and returns the report; any problem is an error (exit 2).
pub fn check_suites(paths: &Paths, selector: &str) -> Result<String, CliError> {
    let suites = load_suites(paths, selector)?;
    let attacks = load_all(&paths.attacks).map_err(|e| CliError::bad_input(e.to_string()))?;
    let mut out = String::new();
    let mut failed = Vec::new();
    for s in &suites {
        let problems = validate(s);
        let status = if problems.is_empty() { "ok" } else { "FAILED" };
        writeln!(
            out,
            "{:<24} {:>3} user tasks  {:>3} injection tasks  {:>3} tools  {:>3} vectors  {:>3} variants  {status}",
            s.qualified_name(),
            s.user_tasks.len(),
            s.injection_tasks.len(),
            s.tools.len(),
            s.vectors.len(),
            s.variants.len(),
        )
        .unwrap();
        for p in &problems {
            failed.push(format!("{}/{p}", s.dir.display()));
        }
        let task = s.user_tasks.first().map_or("", |t| t.prompt.as_str());
        for a in &attacks {
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
