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

/// Names and texts an attacker could put in a run's records (a shared results folder, a
/// provider's or plugin's text): markup of every output format, formulas, a LaTeX
/// command behind a line break, terminal control sequences, and comment and script
/// openers that would swallow an HTML page's script.
pub const HOSTILE_SUITE: &str =
    "dojo-style/=HYPERLINK(\"http://x\")<img src=x onerror=\"document.body.dataset.pwned=1\">";
pub const HOSTILE_ATTACK: &str = "+cmd|' /C calc'!A0 <!--";
pub const HOSTILE_MODEL: &str =
    "sim:obedient\n\\input{/etc/hostname}\n% \u{1b}[2J\u{1b}]0;pwned\u{7}";
pub const HOSTILE_TRACE: &str = "<!--<script>document.body.dataset.pwned=2</script> </script><script>document.body.dataset.pwned=3</script>";

/// A small real run whose records and traces were then rewritten with the hostile names
/// and texts above, as a folder shared by someone else could hold them.
pub fn hostile_run(cwd: &Path) -> PathBuf {
    let out = cwd.join("hostile");
    run(
        cwd,
        &out,
        &[
            "--suite",
            "banking",
            "--attack",
            "important",
            "--defense",
            "none,sieve",
            "--user-tasks",
            "user_task_0,user_task_1",
            "--injection-tasks",
            "injection_task_0",
        ],
    );
    let rewrite = |name: &str, f: &dyn Fn(&mut Value)| {
        let path = out.join(name);
        let text: Vec<String> = lines(&path)
            .iter()
            .map(|l| {
                let mut v: Value = serde_json::from_str(l).unwrap();
                f(&mut v);
                v.to_string()
            })
            .collect();
        std::fs::write(&path, text.join("\n") + "\n").unwrap();
    };
    rewrite("episodes.jsonl", &|r| {
        r["suite"] = HOSTILE_SUITE.into();
        r["model"] = HOSTILE_MODEL.into();
        if !r["attack"].is_null() {
            r["attack"] = HOSTILE_ATTACK.into();
        }
        r["user_task"] = Value::from(format!("<b>{}</b>", r["user_task"].as_str().unwrap()));
    });
    rewrite("traces.jsonl", &|t| {
        for m in t["messages"].as_array_mut().unwrap() {
            m["content"] = HOSTILE_TRACE.into();
        }
        t["answer"] = HOSTILE_TRACE.into();
    });
    std::fs::remove_file(out.join("summary.json")).unwrap();
    out
}

/// Whether an external tool (`pdflatex`, `chromium`) runs here. Tests that need one skip
/// without it, unless SIEVE_BENCH_REQUIRE_TOOLS is set (CI sets it after installing
/// both), when its absence fails them.
pub fn tool_present(name: &str) -> bool {
    let found = std::process::Command::new("sh")
        .args(["-c", &format!("command -v {name}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var_os("SIEVE_BENCH_REQUIRE_TOOLS").is_none(),
            "{name} is required here (SIEVE_BENCH_REQUIRE_TOOLS is set) but not installed"
        );
        eprintln!("{name} is not installed: its part of this test is skipped");
    }
    found
}
