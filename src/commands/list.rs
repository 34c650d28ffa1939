//! `list`: what can be selected on the command line.

use super::{CliError, Paths, load_suites};
use std::fmt::Write;

/// Lists suites with their counts.
pub fn list_suites(paths: &Paths) -> Result<String, CliError> {
    let suites = load_suites(paths, "all")?;
    let mut out = String::new();
    writeln!(
        out,
        "{:<24} {:>10} {:>15} {:>6} {:>8} {:>15}",
        "suite", "user tasks", "injection tasks", "tools", "vectors", "attacked pairs"
    )
    .unwrap();
    for s in &suites {
        writeln!(
            out,
            "{:<24} {:>10} {:>15} {:>6} {:>8} {:>15}",
            s.qualified_name(),
            s.user_tasks.len(),
            s.injection_tasks.len(),
            s.tools.len(),
            s.vectors.len(),
            s.user_tasks.len() * s.injection_tasks.len()
        )
        .unwrap();
    }
    Ok(out)
}
