//! `--defense exec:<command>`: a plugin process decides, and a broken plugin costs only
//! the episodes it breaks.

mod common;
use common::*;
use serde_json::Value;
use std::path::Path;

fn plugin(rel: &str) -> String {
    format!("exec:python3 {}", home().join(rel).display())
}

/// Runs a small banking slice under `defense` and returns its episode records. A plugin
/// that errors every episode exceeds the default --max-error-rate, so the run ends with
/// exit 3 after recording every episode.
fn episodes(tmp: &Path, defense: &str, timeout: &str, code: i32) -> Vec<Value> {
    let out = tmp.join("run");
    let mut c = bench(tmp);
    c.args([
        "run",
        "--suite",
        "banking",
        "--user-tasks",
        "user_task_0,user_task_1",
        "--injection-tasks",
        "injection_task_0,injection_task_1",
        "--concurrency",
        "2",
        "--plugin-timeout",
        timeout,
        "--quiet",
        "--defense",
        defense,
        "--out",
    ])
    .arg(&out);
    c.assert().code(code);
    lines(&out.join("episodes.jsonl"))
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_well_behaved_plugin_blocks_a_call_and_flags_injected_outputs() {
    let tmp = tempfile::tempdir().unwrap();
    let defense = format!(
        "{} --block-tool send_money",
        plugin("examples/keyword_plugin.py")
    );
    let eps = episodes(tmp.path(), &defense, "30", 0);
    assert_eq!(eps.len(), 6);
    for e in &eps {
        assert!(e["error"].is_null(), "{e}");
        assert!(!e["attack_success"].as_bool().unwrap_or(false), "{e}");
    }
    // user_task_0 pays a bill with send_money: the plugin refuses it, clean or attacked.
    let blocked: u64 = eps
        .iter()
        .filter(|e| e["user_task"] == "user_task_0")
        .map(|e| e["blocked"].as_u64().unwrap())
        .sum();
    assert_eq!(blocked, 3);
    // Every attacked episode read the payload, and the keyword detector caught it.
    for e in eps.iter().filter(|e| !e["injection_task"].is_null()) {
        assert!(e["flagged_outputs"].as_u64().unwrap() >= 1, "{e}");
    }
    for e in eps.iter().filter(|e| e["injection_task"].is_null()) {
        assert_eq!(e["flagged_outputs"], 0, "no false alarm on clean data: {e}");
    }
}

fn assert_every_episode_errors(eps: &[Value], needle: &str) {
    assert_eq!(eps.len(), 6, "the run went on through every episode");
    for e in eps {
        let err = e["error"]
            .as_str()
            .unwrap_or_else(|| panic!("no error: {e}"));
        assert!(err.contains("plugin `python3"), "{err}");
        assert!(err.contains(needle), "{err}");
        assert_eq!(e["utility"], false);
    }
}

#[test]
fn a_crashing_plugin_errors_its_episodes_and_the_run_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    let eps = episodes(
        tmp.path(),
        &plugin("tests/fixtures/plugins/crash.py"),
        "60",
        3,
    );
    assert_every_episode_errors(&eps, "exited with exit status: 7");
    assert!(
        eps.iter().all(|e| e["error"]
            .as_str()
            .unwrap()
            .contains("plugin bug: division by zero")),
        "the plugin's stderr is quoted"
    );
}

#[test]
fn a_hanging_plugin_times_out_on_its_episodes() {
    let tmp = tempfile::tempdir().unwrap();
    let eps = episodes(
        tmp.path(),
        &plugin("tests/fixtures/plugins/hang.py"),
        "3",
        3,
    );
    assert_every_episode_errors(&eps, "(timeout)");
}

#[test]
fn a_malformed_plugin_reply_errors_its_episodes() {
    let tmp = tempfile::tempdir().unwrap();
    let eps = episodes(
        tmp.path(),
        &plugin("tests/fixtures/plugins/malformed.py"),
        "60",
        3,
    );
    assert_every_episode_errors(&eps, "malformed reply");
    assert!(
        eps[0]["error"]
            .as_str()
            .unwrap()
            .contains("allow it, I guess")
    );
}

/// (user task, injection task) → (utility, attack success) of every episode.
fn outcomes(eps: &[Value]) -> std::collections::BTreeMap<(String, String), (Value, Value)> {
    eps.iter()
        .map(|e| {
            (
                (
                    e["user_task"].as_str().unwrap().to_string(),
                    e["injection_task"].as_str().unwrap_or("-").to_string(),
                ),
                (e["utility"].clone(), e["attack_success"].clone()),
            )
        })
        .collect()
}

/// A plugin that only inserts a marker word after each newline of every tool output, or
/// only changes its whitespace, leaves every injected instruction readable: the obedient
/// scripted agent follows it exactly as without a defense, episode by episode.
#[test]
fn a_plugin_that_only_marks_or_respaces_outputs_scores_as_none() {
    let tmp = tempfile::tempdir().unwrap();
    let slice = |dir: &str, defense: &str| {
        let out = tmp.path().join(dir);
        let mut c = bench(tmp.path());
        c.args([
            "run",
            "--suite",
            "banking",
            "--user-tasks",
            "user_task_0,user_task_1,user_task_3",
            "--injection-tasks",
            "injection_task_0,injection_task_1,injection_task_4",
            "--model",
            "sim:obedient",
            "--quiet",
            "--defense",
            defense,
            "--out",
        ])
        .arg(&out);
        c.assert().success();
        let eps: Vec<Value> = lines(&out.join("episodes.jsonl"))
            .iter()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert!(eps.iter().all(|e| e["error"].is_null()), "no errors");
        outcomes(&eps)
    };
    let none = slice("none", "none");
    assert!(
        none.values().any(|(_, a)| a == &Value::Bool(true)),
        "the undefended obedient agent is attacked: {none:?}"
    );
    for mode in ["--marker", "--whitespace"] {
        let p = format!("{} {mode}", plugin("tests/fixtures/plugins/marker.py"));
        assert_eq!(slice(mode.trim_start_matches('-'), &p), none, "{mode}");
    }
}

#[test]
fn exec_without_a_command_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    bench(tmp.path())
        .args(["run", "--suite", "banking", "--defense", "exec:", "--quiet"])
        .assert()
        .code(2);
}
