//! The CLI's commands as library functions, so `main.rs` only parses and dispatches and
//! tests can call them directly.

pub mod ablate;
pub mod check_suites;
pub mod list;
pub mod merge;
pub mod report_cmd;
pub mod run;

use std::path::{Path, PathBuf};

/// Exit code for bad input (malformed suite, unknown name, bad flag value).
pub const EXIT_BAD_INPUT: i32 = 2;

/// An error that carries its exit code to `main`.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct CliError {
    pub code: i32,
    pub message: String,
}

impl CliError {
    pub fn bad_input(message: impl Into<String>) -> Self {
        CliError {
            code: EXIT_BAD_INPUT,
            message: message.into(),
        }
    }
}

/// Where suites, attacks and configs are read from: explicit flags win, then
/// `SIEVE_BENCH_HOME`, then the working directory.
#[derive(Clone, Debug)]
pub struct Paths {
    pub suites: PathBuf,
    pub attacks: PathBuf,
    pub configs: PathBuf,
}

impl Paths {
    pub fn resolve(
        suites: Option<PathBuf>,
        attacks: Option<PathBuf>,
        home: Option<PathBuf>,
    ) -> Self {
        let home = home.unwrap_or_else(|| PathBuf::from("."));
        Paths {
            suites: suites.unwrap_or_else(|| home.join("suites")),
            attacks: attacks.unwrap_or_else(|| home.join("attacks")),
            configs: home.join("configs"),
        }
    }

    pub fn suites_dir(&self) -> Result<&Path, CliError> {
        if self.suites.is_dir() {
            Ok(&self.suites)
        } else {
            Err(CliError::bad_input(format!(
                "suites directory {} does not exist; run from the repository root, or pass --suites-dir or set SIEVE_BENCH_HOME",
                self.suites.display()
            )))
        }
    }
}

/// Loads the selected suites, failing with every located error before anything runs.
pub fn load_suites(paths: &Paths, selector: &str) -> Result<Vec<crate::suite::Suite>, CliError> {
    let refs = crate::suite::select(paths.suites_dir()?, selector).map_err(CliError::bad_input)?;
    let mut suites = Vec::new();
    let mut errors = Vec::new();
    for r in refs {
        match crate::suite::load(&r.dir) {
            Ok(s) => suites.push(s),
            Err(e) => errors.push(e.to_string()),
        }
    }
    if errors.is_empty() {
        Ok(suites)
    } else {
        Err(CliError::bad_input(format!(
            "invalid suite:\n  {}",
            errors.join("\n  ")
        )))
    }
}
