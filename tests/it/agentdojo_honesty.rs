//! Issue 39, AgentDojo's numbers honestly, against the toy provider (no Python, no
//! package): the utility floors, known defects as data, whether the payload was seen,
//! `--trace executed`, and the package's origin. CI runs the same against the real
//! package (scripts/ci_agentdojo.sh: the banking no-op floor of v1.2.2 is 5/16).

use crate::common::*;
use crate::external_protocol::toy_suites;
use serde_json::Value;
use std::path::Path;

fn records(out: &Path) -> Vec<Value> {
    lines(&out.join("episodes.jsonl"))
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn manifest(out: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).unwrap()).unwrap()
}

/// `run` over toy suites with the scripted oracle, no attack, into `out`.
fn run_toy(
    root: &Path,
    suites: &Path,
    suite: &str,
    out: &Path,
    extra: &[&str],
) -> assert_cmd::Command {
    let mut c = bench(root);
    c.env("SIEVE_BENCH_PROOF_CACHE", "off")
        .arg("--suites-dir")
        .arg(suites)
        .arg("run")
        .args(["--suite", suite, "--model", "sim:oracle", "--quiet"])
        .args(extra)
        .arg("--out")
        .arg(out);
    c
}

/// The trace suite's `add_once` makes a call that fails before the one that works, and its
/// check wants exactly one `add` in the package's trace: AgentDojo's trace (every call)
/// fails it, the executed-only trace passes it. The setting is in the run's identity.
#[test]
fn trace_executed_changes_a_trace_based_verdict() {
    let tmp = tempfile::tempdir().unwrap();
    let suites = toy_suites(tmp.path(), 10.0);
    let verdict = |out: &Path| {
        let recs = records(out);
        assert_eq!(recs.len(), 1, "{recs:?}");
        assert!(recs[0]["error"].is_null(), "{}", recs[0]);
        recs[0]["utility"].as_bool().unwrap()
    };
    let all = tmp.path().join("all");
    let args = ["--attack", "none", "--user-tasks", "add_once"];
    run_toy(tmp.path(), &suites, "toy@v1/trace", &all, &args)
        .assert()
        .success();
    assert!(
        !verdict(&all),
        "the failed call is in AgentDojo's trace: two adds"
    );
    assert!(manifest(&all)["settings"]["extra"].get("trace").is_none());
    let executed = tmp.path().join("executed");
    let mut with_flag = args.to_vec();
    with_flag.extend(["--trace", "executed"]);
    run_toy(tmp.path(), &suites, "toy@v1/trace", &executed, &with_flag)
        .assert()
        .success();
    assert!(verdict(&executed), "only the call that ran is in the trace");
    assert_eq!(
        manifest(&executed)["settings"]["extra"]["trace"],
        "executed"
    );
    // Another trace mode is another run: the folder refuses it.
    let out = run_toy(tmp.path(), &suites, "toy@v1/trace", &executed, &args)
        .assert()
        .code(2);
    let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(err.contains("extra.trace"), "{err}");
}

/// Seen % is defined by what the defense delivered: a defense that replaces every tool
/// output leaves no attacked episode that saw its payload, `none` leaves every one, on
/// this project's suites and on a bridged one alike.
#[test]
fn the_payload_is_seen_under_none_and_never_when_every_output_is_dropped() {
    if !tool_present("python3") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let suites = toy_suites(tmp.path(), 10.0);
    let drop = format!(
        "exec:python3 {}",
        home().join("tests/fixtures/plugins/drop.py").display()
    );
    let seen = |out: &Path| -> (usize, usize) {
        let recs = records(out);
        let attacked: Vec<&Value> = recs
            .iter()
            .filter(|r| !r["injection_task"].is_null())
            .collect();
        assert!(!attacked.is_empty());
        for r in &recs {
            assert!(r["error"].is_null(), "{r}");
            if r["injection_task"].is_null() {
                assert!(r.get("payload_seen").is_none(), "clean: {r}");
            }
        }
        let n = attacked
            .iter()
            .filter(|r| r["payload_seen"] == true)
            .count();
        (n, attacked.len())
    };
    for (name, defense, all) in [("none", "none", true), ("drop", drop.as_str(), false)] {
        // The bridged toy suite, with its provider's own attack.
        let out = tmp.path().join(format!("toy-{name}"));
        run_toy(
            tmp.path(),
            &suites,
            "toy@v1/counter",
            &out,
            &[
                "--attack",
                "toy:shout",
                "--user-tasks",
                "add_two",
                "--defense",
                defense,
            ],
        )
        .assert()
        .success();
        let (n, of) = seen(&out);
        assert_eq!(n, if all { of } else { 0 }, "toy, {name}");
        // The table's Seen %: 100 under none, 0 when every output is dropped.
        let s = summary(&out);
        let row = rows(&s)
            .iter()
            .find(|r| r["attack"] != "none")
            .expect("an attacked row");
        assert_eq!(
            row["tallies"]["seen"]["value"],
            if all { 1.0 } else { 0.0 },
            "{row}"
        );
        if all {
            for r in records(&out).iter().filter(|r| r["payload_seen"] == true) {
                assert_eq!(
                    r["payload_seen_step"], 1,
                    "the note is read at the first call: {r}"
                );
            }
        }
        // This project's banking suite.
        let out = tmp.path().join(format!("banking-{name}"));
        let mut c = bench(tmp.path());
        c.args([
            "run",
            "--suite",
            "banking",
            "--user-tasks",
            "user_task_0,user_task_1",
            "--injection-tasks",
            "injection_task_0,injection_task_1",
            "--model",
            "sim:oracle",
            "--defense",
            defense,
            "--quiet",
            "--out",
        ])
        .arg(&out)
        .assert()
        .success();
        let (n, of) = seen(&out);
        assert_eq!(n, if all { of } else { 0 }, "banking, {name}");
    }
}

/// Two runs of the same package name and version from different distributions (a fork)
/// are not paired by `compare`; the same origin is.
#[test]
fn compare_refuses_runs_of_different_package_origins() {
    let tmp = tempfile::tempdir().unwrap();
    let suites = toy_suites(tmp.path(), 10.0);
    let run_from = |origin: &str, out: &str| {
        let out = tmp.path().join(out);
        let mut c = run_toy(
            tmp.path(),
            &suites,
            "toy@v1/counter",
            &out,
            &["--attack", "none", "--user-tasks", "add_two"],
        );
        c.env("TOY_ORIGIN", origin).assert().success();
        out
    };
    let upstream = run_from("aaaaaaaaaaaaaaaa", "upstream");
    let again = run_from("aaaaaaaaaaaaaaaa", "again");
    let fork = run_from("bbbbbbbbbbbbbbbb@git+https://example.org/fork.git", "fork");
    assert_eq!(
        manifest(&fork)["settings"]["extra"]["packages"]["toy"]["origin"]["source_url"],
        "git+https://example.org/fork.git"
    );
    bench(tmp.path())
        .arg("compare")
        .arg(&upstream)
        .arg(&again)
        .assert()
        .success();
    let out = bench(tmp.path())
        .arg("compare")
        .arg(&upstream)
        .arg(&fork)
        .assert()
        .code(2);
    let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(
        err.contains("different distributions of `toy`")
            && err.contains("RECORD aaaaaaaaaaaa")
            && err.contains("example.org/fork.git"),
        "{err}"
    );
}

/// The floors of a bridged suite come from its own checks: in the toy trace suite a
/// do-nothing agent solves `leave_it`, a read-only one also `say_it`; run.json keeps them.
#[test]
fn floors_are_measured_for_a_bridged_suite_and_kept_in_run_json() {
    let tmp = tempfile::tempdir().unwrap();
    let suites = toy_suites(tmp.path(), 10.0);
    let out = tmp.path().join("floors");
    run_toy(
        tmp.path(),
        &suites,
        "toy@v1/trace",
        &out,
        &["--attack", "none"],
    )
    .assert()
    .success();
    let f = &manifest(&out)["floors"]["toy@v1/trace"];
    assert_eq!(
        (f["no_op"]["solved"].as_u64(), f["no_op"]["tasks"].as_u64()),
        (Some(1), Some(3)),
        "{f}"
    );
    assert_eq!(f["read_only"]["solved"], 2, "{f}");
}

/// A known-defects file for the toy's version marks the pair's episode in its record.
#[test]
fn a_known_defect_is_recorded_on_its_episodes() {
    let tmp = tempfile::tempdir().unwrap();
    let suites = toy_suites(tmp.path(), 10.0);
    std::fs::create_dir_all(suites.join("external/toy")).unwrap();
    std::fs::write(
        suites.join("external/toy/known-defects-v1.toml"),
        "[[defect]]\nid = \"broken-send\"\nsuite = \"counter\"\npairs = [[\"add_two\", \"exfiltrate\"]]\nreason = \"its check reads nothing\"\nsource = \"toy issue #1\"\n",
    )
    .unwrap();
    let out = tmp.path().join("defects");
    run_toy(
        tmp.path(),
        &suites,
        "toy@v1/counter",
        &out,
        &["--attack", "toy:shout", "--user-tasks", "add_two"],
    )
    .assert()
    .success();
    let recs = records(&out);
    for r in &recs {
        let expected = if r["injection_task"] == "exfiltrate" {
            Value::from("broken-send")
        } else {
            Value::Null
        };
        assert_eq!(
            r.get("known_defect").cloned().unwrap_or(Value::Null),
            expected,
            "{r}"
        );
    }
}

/// `list suites` shows each of this project's suites' floors beside its counts.
#[test]
fn list_suites_shows_the_floors() {
    let tmp = tempfile::tempdir().unwrap();
    let out = bench(tmp.path())
        .env("SIEVE_BENCH_PROOF_CACHE", "off")
        .args(["list", "suites"])
        .assert()
        .success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    assert!(
        text.contains("no-op") && text.contains("read-only"),
        "{text}"
    );
    let banking = text
        .lines()
        .find(|l| l.starts_with("dojo-style/banking"))
        .expect("banking is listed");
    let fractions = banking
        .split_whitespace()
        .filter(|w| w.contains('/') && !w.contains("style"))
        .count();
    assert_eq!(fractions, 2, "{banking}");
}
