//! `--defense all`: every registered defense runs on the same episodes and the main
//! table prints one row per defense.

mod common;
use common::*;

#[test]
fn every_defense_runs_without_error_and_the_main_table_prints() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let assert = bench(tmp.path())
        .args([
            "run",
            "--suite",
            "banking",
            "--user-tasks",
            "user_task_0,user_task_1",
            "--injection-tasks",
            "injection_task_0,injection_task_1",
            "--defense",
            "all",
            "--model",
            "sim:obedient",
            "--out",
        ])
        .arg(&out)
        .assert()
        .success();
    let stdout = String::from_utf8(assert.get_output().stdout.clone()).unwrap();
    let table = stdout
        .split("Main table")
        .nth(1)
        .expect("the main table prints");
    for name in [
        "none",
        "audit",
        "sieve",
        "spotlight",
        "sandwich",
        "tool_filter",
        "pi_detector",
        "plan_then_execute",
        "dual_llm",
        "melon",
        "ipiguard",
        "task_shield",
        "drift",
        "argus",
    ] {
        assert!(
            table.lines().any(|l| l.starts_with(&format!("{name} "))),
            "no row for {name}:\n{table}"
        );
    }
    assert!(
        table.contains("spotlight, sandwich work(s) only by persuading a real model"),
        "{table}"
    );
    let s = summary(&out);
    for r in rows(&s) {
        assert_eq!(r["errors"], 0, "{r}");
    }
    // The undefended obedient agent is always attacked; melon stops those episodes.
    let row = |d: &str| rows(&s).iter().find(|r| r["defense"] == d).unwrap().clone();
    assert_eq!(row("none")["asr"], 1.0);
    assert_eq!(row("melon")["asr"], 0.0);
    assert_eq!(
        row("melon")["ua"],
        0.0,
        "a stopped episode does not finish the task"
    );
}
