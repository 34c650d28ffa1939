//! `--defense all`: every registered defense runs on the same episodes and the main
//! table prints one row per defense.

use crate::common::*;

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
        "pi_detector:keywords",
        "plan_then_execute",
        "dual_llm",
        "melon",
        "ipiguard",
        "task_shield",
        "drift",
        "argus",
    ] {
        assert!(
            table
                .lines()
                .any(|l| l.starts_with(&format!("{name} ")) || l.starts_with(&format!("{name}† "))),
            "no row for {name}:\n{table}"
        );
    }
    // Rows the scripted agent cannot represent say so in their label, and the footnote
    // says what.
    for marked in ["spotlight† ", "sandwich† ", "dual_llm† "] {
        assert!(
            table.lines().any(|l| l.starts_with(marked)),
            "{marked}\n{table}"
        );
    }
    assert!(
        table.contains("† simulated rows of defenses whose effect on a real model the scripted agent cannot represent"),
        "{table}"
    );
    let s = summary(&out);
    for r in rows(&s) {
        assert_eq!(r["errors"], 0, "{r}");
    }
    // The undefended obedient agent is always attacked.
    let row = |d: &str| rows(&s).iter().find(|r| r["defense"] == d).unwrap().clone();
    assert_eq!(row("none")["asr"], 1.0);
}

/// ASR of `defense` in a run's summary.
fn asr(s: &serde_json::Value, defense: &str) -> f64 {
    rows(s)
        .iter()
        .find(|r| r["defense"] == defense)
        .unwrap_or_else(|| panic!("no row for {defense}"))["asr"]
        .as_f64()
        .unwrap()
}

/// MELON's masked run and dual_llm's quarantined reader are scripted roles of stated
/// quality, not the scripted follower itself: at `judge_auc=1` they catch every
/// injection, at a coin (`judge_auc=0.5`) their rows score as `none`.
#[test]
fn melon_and_dual_llm_fall_to_none_as_their_reader_falls_to_chance() {
    let tmp = tempfile::tempdir().unwrap();
    let slice = |auc: &str| {
        run(
            tmp.path(),
            &tmp.path().join(format!("auc{auc}")),
            &[
                "--suite",
                "banking",
                "--user-tasks",
                "user_task_0,user_task_1,user_task_2,user_task_3,user_task_4",
                "--injection-tasks",
                "injection_task_0,injection_task_1,injection_task_2,injection_task_3",
                "--defense",
                "none,melon,dual_llm",
                "--model",
                &format!("sim:obedient,judge_auc={auc}"),
            ],
        )
    };
    let coin = slice("0.5");
    let none = asr(&coin, "none");
    assert!(none > 0.5, "the obedient agent is attacked: {none}");
    for d in ["melon", "dual_llm"] {
        let a = asr(&coin, d);
        assert!(
            (a - none).abs() <= 0.05,
            "{d} at judge_auc=0.5: {a} vs none {none}"
        );
    }
    let key = slice("1");
    assert_eq!(asr(&key, "melon"), 0.0);
    assert_eq!(asr(&key, "dual_llm"), 0.0);
    let stopped = rows(&key).iter().find(|r| r["defense"] == "melon").unwrap();
    assert!(
        stopped["ua"].as_f64().unwrap() < 0.5,
        "a stopped episode does not finish the task: {stopped}"
    );
}
