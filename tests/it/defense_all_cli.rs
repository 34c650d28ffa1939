//! `--defense all`: every registered defense runs on the same episodes and the main
//! table prints one row per defense.

use crate::common::*;
use sieve_bench::defense;

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
    // The rows `all` stands for, read from the registry: `expand` says which defenses
    // `all` runs, and each, built as `all` builds it, names its row (`pi_detector` runs
    // its default backend, so its row is `pi_detector:keywords`).
    let rows_of_all: Vec<String> = defense::expand("all")
        .iter()
        .map(|d| defense::build(d).unwrap().name().to_string())
        .collect();
    assert!(
        rows_of_all.contains(&"pi_detector:keywords".to_string()),
        "{rows_of_all:?}"
    );
    for name in &rows_of_all {
        assert!(
            table
                .lines()
                .any(|l| l.starts_with(&format!("{name} ")) || l.starts_with(&format!("{name}† "))),
            "no row for {name}:\n{table}"
        );
    }
    // Rows the scripted agent cannot represent say so in their label, and the footnote
    // says what.
    let marked: Vec<String> = rows_of_all
        .iter()
        .filter(|d| defense::sim_caveat(d).is_some())
        .map(|d| format!("{d}† "))
        .collect();
    assert!(marked.contains(&"dual_llm† ".to_string()), "{marked:?}");
    for marked in &marked {
        assert!(
            table.lines().any(|l| l.starts_with(marked.as_str())),
            "{marked}\n{table}"
        );
    }
    assert!(
        table.contains("† simulated rows of defenses whose effect on a real model the scripted agent cannot represent"),
        "{table}"
    );
    let s = summary(&out);
    // `all` runs the registry's defenses and nothing else.
    let ran: std::collections::BTreeSet<&str> = rows(&s)
        .iter()
        .map(|r| r["defense"].as_str().unwrap())
        .collect();
    let expected: std::collections::BTreeSet<&str> =
        rows_of_all.iter().map(String::as_str).collect();
    assert_eq!(ran, expected);
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
