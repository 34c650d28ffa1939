//! Helpers shared by the CLI tests.
#![allow(dead_code)]

use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The repository root, where suites/ and attacks/ live.
pub fn home() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The binary, run from a scratch directory with the repository as its home.
pub fn bench(cwd: &Path) -> Command {
    let mut c = Command::cargo_bin("sieve-bench").unwrap();
    c.current_dir(cwd)
        .env("SIEVE_BENCH_HOME", home())
        .env_remove("OPENAI_API_KEY");
    c
}

/// Runs `run` with extra args into `out` and returns summary.json.
pub fn run(cwd: &Path, out: &Path, args: &[&str]) -> Value {
    let mut c = bench(cwd);
    c.arg("run").args(args).arg("--out").arg(out).arg("--quiet");
    c.assert().success();
    summary(out)
}

pub fn summary(out: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap()
}

pub fn rows(summary: &Value) -> &Vec<Value> {
    summary["rows"].as_array().unwrap()
}

pub fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}
