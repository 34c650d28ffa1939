//! `check-suites`: proves every selected suite sound (see [`crate::suite::validate`]).

use super::{CliError, Paths, load_suites};
use crate::suite::validate::validate;
use std::fmt::Write;

/// Validates the suites and returns the report; any problem is an error (exit 2).
pub fn check_suites(paths: &Paths, selector: &str) -> Result<String, CliError> {
    let suites = load_suites(paths, selector)?;
    let mut out = String::new();
    let mut failed = Vec::new();
    for s in &suites {
        let problems = validate(s);
        let status = if problems.is_empty() { "ok" } else { "FAILED" };
        writeln!(
            out,
            "{:<24} {:>3} user tasks  {:>3} injection tasks  {:>3} tools  {:>3} vectors  {status}",
            s.qualified_name(),
            s.user_tasks.len(),
            s.injection_tasks.len(),
            s.tools.len(),
            s.vectors.len(),
        )
        .unwrap();
        for p in &problems {
            failed.push(format!("{}/{p}", s.dir.display()));
        }
    }
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
