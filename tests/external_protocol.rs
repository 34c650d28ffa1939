//! The external-suite protocol against a tiny provider written for these tests
//! (examples/toy_provider.rs, no Python): a suite served by another process runs through
//! the ordinary loop, and a provider that crashes, hangs or sends a malformed line fails
//! only the episode it was serving.

mod common;
use common::*;
use serde_json::Value;
use sieve_bench::external::Provider;
use std::path::{Path, PathBuf};

/// The toy provider binary, built once per test process (a no-op when it is fresh;
/// `cargo test --test external_protocol` alone does not build examples).
fn toy_binary() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let status = std::process::Command::new(env!("CARGO"))
                .args(["build", "--quiet", "--example", "toy_provider"])
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .status()
                .expect("cargo runs");
            assert!(status.success(), "cannot build the toy provider");
            let deps = std::env::current_exe().unwrap();
            let debug = deps.parent().unwrap().parent().unwrap();
            debug.join("examples").join("toy_provider")
        })
        .clone()
}

/// A suites folder whose only content is the toy provider's declaration.
fn toy_suites(root: &Path, timeout_secs: f64) -> PathBuf {
    let suites = root.join("suites");
    std::fs::create_dir_all(suites.join("external")).unwrap();
    std::fs::write(
        suites.join("external/toy.toml"),
        format!(
            "package = \"toy\"\ncommand = [{:?}]\nsetup = \"build the examples\"\ntimeout_secs = {timeout_secs}\n",
            toy_binary().display().to_string()
        ),
    )
    .unwrap();
    suites
}

fn records(out: &Path) -> Vec<Value> {
    lines(&out.join("episodes.jsonl"))
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn find<'a>(recs: &'a [Value], user_task: &str, injection: Option<&str>) -> &'a Value {
    recs.iter()
        .find(|r| r["user_task"] == user_task && r["injection_task"].as_str() == injection)
        .unwrap_or_else(|| panic!("no record for {user_task}/{injection:?}"))
}

#[tokio::test]
async fn a_described_suite_becomes_an_ordinary_suite() {
    let tmp = tempfile::tempdir().unwrap();
    let suites = toy_suites(tmp.path(), 10.0);
    let provider = Provider::open(&suites, "toy").unwrap();
    assert_eq!(provider.list().await.unwrap(), vec!["toy@v1/counter"]);
    let suite = provider.load("toy@v1/counter").await.unwrap();
    assert_eq!(suite.qualified_name(), "toy@v1/counter");
    assert_eq!(suite.user_tasks.len(), 4);
    assert_eq!(suite.injection_tasks[0].severity, 0.5);
    assert_eq!(
        suite.injectable[&sieve_bench::ids::TaskId::from("add_two")][0].as_str(),
        "note"
    );
    let read = suite.tools.get("read_note").unwrap();
    assert_eq!(read.kind, sieve_bench::tools::ToolKind::Read);
    let system = sieve_bench::agent::system_prompt(&suite);
    assert_eq!(system, "You are the toy suite's assistant.");
    // An unknown suite is the provider's refusal, named.
    let err = provider
        .load("toy@v1/nothing")
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("no suite"), "{err}");
}

#[test]
fn episodes_run_in_the_provider_and_its_verdicts_are_recorded() {
    let tmp = tempfile::tempdir().unwrap();
    let suites = toy_suites(tmp.path(), 10.0);
    for (model, success) in [("sim:oracle", false), ("sim:obedient", true)] {
        let out = tmp.path().join(model.replace(':', "-"));
        let mut c = bench(tmp.path());
        c.arg("--suites-dir").arg(&suites).arg("run").args([
            "--suite",
            "toy@v1/counter",
            "--user-tasks",
            "add_two",
            "--attack",
            "toy:shout,important",
            "--model",
            model,
            "--quiet",
        ]);
        c.arg("--out").arg(&out).assert().success();
        let recs = records(&out);
        assert_eq!(recs.len(), 3, "clean + two attacks");
        let clean = find(&recs, "add_two", None);
        assert_eq!(clean["utility"], true, "{clean}");
        assert_eq!(clean["suite"], "toy@v1/counter");
        for r in recs.iter().filter(|r| !r["injection_task"].is_null()) {
            assert_eq!(r["attack_success"], success, "{model}: {r}");
            assert_eq!(r["error"], Value::Null);
            assert_eq!(r["injected_vectors"][0], "note");
        }
    }
}

#[test]
fn crash_hang_and_malformed_line_fail_only_their_own_episode() {
    let tmp = tempfile::tempdir().unwrap();
    let suites = toy_suites(tmp.path(), 2.0);
    let out = tmp.path().join("o");
    let mut c = bench(tmp.path());
    c.arg("--suites-dir").arg(&suites).arg("run").args([
        "--suite",
        "toy@v1/counter",
        "--attack",
        "toy:shout",
        "--model",
        "sim:oracle",
        "--concurrency",
        "3",
        // Six of eight episodes error on purpose; the gate on error rates is not the point.
        "--max-error-rate",
        "100",
        "--quiet",
    ]);
    c.arg("--out").arg(&out).assert().success();
    let recs = records(&out);
    assert_eq!(
        recs.len(),
        8,
        "4 user tasks, clean and attacked, all recorded"
    );
    for injection in [None, Some("exfiltrate")] {
        let ok = find(&recs, "add_two", injection);
        assert_eq!(ok["error"], Value::Null, "{ok}");
        assert_eq!(ok["utility"], true, "{ok}");
        for (task, word) in [
            ("crashes", "crashed"),
            ("hangs", "hung"),
            ("garbles", "malformed"),
        ] {
            let r = find(&recs, task, injection);
            let err = r["error"].as_str().unwrap_or_else(|| panic!("{r}"));
            assert!(err.contains(word), "{task}: {err}");
            assert_eq!(r["utility"], false);
        }
    }
    // An error is its own outcome: a resumed run retries exactly the failed episodes.
    let summary = summary(&out);
    assert_eq!(rows(&summary)[0]["errors"], 6, "{summary}");
}

#[test]
fn a_missing_provider_says_what_to_run() {
    let tmp = tempfile::tempdir().unwrap();
    let suites = tmp.path().join("suites");
    std::fs::create_dir_all(suites.join("external")).unwrap();
    std::fs::write(
        suites.join("external/toy.toml"),
        "package = \"toy\"\ncommand = [\"/nonexistent/python\", \"x.py\"]\nsetup = \"scripts/setup_toy.sh\"\n",
    )
    .unwrap();
    let mut c = bench(tmp.path());
    c.arg("--suites-dir").arg(&suites).arg("run").args([
        "--suite",
        "toy@v1/counter",
        "--model",
        "sim:oracle",
        "--quiet",
    ]);
    c.arg("--out").arg(tmp.path().join("o"));
    let assert = c.assert().code(2);
    let err = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
    assert!(err.contains("scripts/setup_toy.sh"), "{err}");
    // A package with no provider file names the ones there are.
    let mut c = bench(tmp.path());
    c.arg("--suites-dir").arg(&suites).arg("run").args([
        "--suite",
        "other@v1/x",
        "--model",
        "sim:oracle",
        "--quiet",
    ]);
    c.arg("--out").arg(tmp.path().join("p"));
    let assert = c.assert().code(2);
    let err = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
    assert!(err.contains("known providers: toy"), "{err}");
}
