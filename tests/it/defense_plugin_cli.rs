//! `--defense exec:<command>`: a plugin process decides, and a broken plugin costs only
//! the episodes it breaks. The plugins are Python scripts: without `python3` these tests
//! skip (unless SIEVE_BENCH_REQUIRE_TOOLS is set).

use crate::common::*;
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
    if !tool_present("python3") {
        return;
    }
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
    // user_task_0 pays a bill with send_money: the plugin refuses it when clean. Attacked,
    // the plugin withholds the bill that carried the payload, so the scripted agent,
    // which uses only what it was shown, has no IBAN to pay and proposes no payment.
    let blocked = |clean: bool| -> u64 {
        eps.iter()
            .filter(|e| e["user_task"] == "user_task_0")
            .filter(|e| e["injection_task"].is_null() == clean)
            .map(|e| e["blocked"].as_u64().unwrap())
            .sum()
    };
    assert_eq!(blocked(true), 1);
    assert_eq!(blocked(false), 0);
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
    if !tool_present("python3") {
        return;
    }
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
    if !tool_present("python3") {
        return;
    }
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
    if !tool_present("python3") {
        return;
    }
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
    if !tool_present("python3") {
        return;
    }
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

fn misbehaving(how: &str) -> String {
    format!("{} {how}", plugin("tests/fixtures/plugins/misbehave.py"))
}

#[test]
fn a_stray_reply_line_errors_its_episodes_instead_of_answering_the_next_hook() {
    if !tool_present("python3") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let eps = episodes(tmp.path(), &misbehaving("extra-line"), "60", 3);
    assert_every_episode_errors(&eps, "a stray or repeated line");
    for e in &eps {
        assert_eq!(
            e["blocked"], 0,
            "the stray `block` was taken as a verdict: {e}"
        );
    }
}

#[test]
fn a_reply_over_the_size_cap_errors_its_episodes() {
    if !tool_present("python3") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let mut c = bench(tmp.path());
    c.args([
        "run",
        "--suite",
        "banking",
        "--user-tasks",
        "user_task_0",
        "--injection-tasks",
        "injection_task_0",
        "--plugin-max-reply",
        "1",
        "--quiet",
        "--defense",
        &misbehaving("huge"),
        "--out",
    ])
    .arg(&out);
    c.assert().code(3);
    let eps = lines(&out.join("episodes.jsonl"));
    assert_eq!(eps.len(), 2);
    for e in eps {
        let e: Value = serde_json::from_str(&e).unwrap();
        let err = e["error"].as_str().unwrap_or_else(|| panic!("{e}"));
        assert!(
            err.contains("longer than the cap of 1048576 bytes"),
            "{err}"
        );
    }
    bench(tmp.path())
        .args(["run", "--suite", "banking", "--plugin-max-reply", "0"])
        .assert()
        .code(2);
}

#[test]
fn what_a_plugin_starts_ends_with_its_episode() {
    if !tool_present("python3") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let pids = tmp.path().join("pids");
    std::fs::create_dir(&pids).unwrap();
    let eps = episodes(
        tmp.path(),
        &misbehaving(&format!("spawn {}", pids.display())),
        "60",
        0,
    );
    assert_eq!(eps.len(), 6);
    let started: Vec<String> = std::fs::read_dir(&pids)
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect();
    assert_eq!(started.len(), 6, "one helper process per episode");
    for pid in started {
        assert!(
            gone(&pid),
            "process {pid}, started by the plugin, outlived its episode"
        );
    }
}

/// Whether a process is gone (or a zombie no one reaps).
fn gone(pid: &str) -> bool {
    for _ in 0..100 {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => return true,
            Ok(stat) if stat.split(") ").nth(1).is_some_and(|s| s.starts_with('Z')) => {
                return true;
            }
            Ok(_) => std::thread::sleep(std::time::Duration::from_millis(20)),
        }
    }
    false
}

#[test]
fn usage_a_meter_cannot_hold_is_an_error_not_a_wrapped_count() {
    if !tool_present("python3") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let eps = episodes(tmp.path(), &misbehaving("usage"), "60", 3);
    assert_every_episode_errors(&eps, "usage.prompt_tokens is 9223372036854775808");
}

#[test]
fn a_protocol_1_plugin_is_told_what_changed() {
    if !tool_present("python3") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let eps = episodes(tmp.path(), &misbehaving("v1"), "60", 3);
    assert_every_episode_errors(&eps, "protocol version 1; this harness speaks 2");
    assert!(eps[0]["error"].as_str().unwrap().contains("`id`"));
}

#[test]
fn plugin_timeouts_outside_their_range_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    for bad in ["1e30", "0", "-1", "NaN", "inf", "86401"] {
        bench(tmp.path())
            .args(["run", "--suite", "banking", "--quiet"])
            .arg(format!("--plugin-timeout={bad}"))
            .assert()
            .code(2)
            .stderr(predicates::str::contains("--plugin-timeout"));
    }
}

/// A run the circuit breaker stopped writes a summary of what finished, marked partial
/// in every form (and so does one interrupted with Ctrl-C, see run_cli).
#[test]
fn a_stopped_run_marks_its_summary_partial() {
    if !tool_present("python3") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    bench(tmp.path())
        .args(["run", "--suite", "banking", "--concurrency", "2", "--quiet"])
        .arg("--defense")
        .arg(plugin("tests/fixtures/plugins/crash.py"))
        .arg("--out")
        .arg(&out)
        .assert()
        .code(1)
        .stderr(predicates::str::contains(
            "in a row failed with the same error",
        ));
    let s = summary(&out);
    let partial = s["partial"].as_str().unwrap_or_else(|| panic!("{s}"));
    assert!(partial.starts_with("PARTIAL"), "{partial}");
    assert!(partial.contains("stopped"), "{partial}");
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(md.contains("PARTIAL"), "{md}");
    // `report` rewrites the summary from the records and keeps the mark.
    let table = bench(tmp.path()).arg("report").arg(&out).assert().success();
    assert!(String::from_utf8_lossy(&table.get_output().stdout).contains("PARTIAL"));
}

/// A plugin line carrying the id a counting scheme would give the next request is not
/// taken as that request's answer (ids cannot be guessed): it errors its episode.
#[test]
fn a_stray_line_guessing_the_next_id_errors_its_episodes() {
    if !tool_present("python3") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let eps = episodes(tmp.path(), &misbehaving("next-id"), "60", 3);
    assert_every_episode_errors(&eps, "a stray or repeated line");
    for e in &eps {
        assert_eq!(e["blocked"], 0, "the guessed `block` was taken: {e}");
    }
}

/// A helper a plugin starts in a session of its own (`setsid`, out of the plugin's
/// process group) is found by the environment tag it inherited and killed too.
#[test]
fn what_a_plugin_starts_with_setsid_ends_too() {
    if !tool_present("python3") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let pids = tmp.path().join("pids");
    std::fs::create_dir(&pids).unwrap();
    let eps = episodes(
        tmp.path(),
        &misbehaving(&format!("setsid {}", pids.display())),
        "60",
        0,
    );
    assert_eq!(eps.len(), 6);
    let started: Vec<String> = std::fs::read_dir(&pids)
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect();
    assert_eq!(started.len(), 6);
    for pid in started {
        assert!(
            gone(&pid),
            "process {pid}, started with setsid, outlived the run"
        );
    }
}

/// Runs the 6-episode banking slice under the counting plugin and returns its records
/// and the process starts it counted.
fn counted(tmp: &Path, flags: &str, concurrency: &str, code: i32) -> (Vec<Value>, usize) {
    let dir = tmp.join("count");
    std::fs::create_dir_all(&dir).unwrap();
    let defense = format!(
        "{} {} {flags}",
        plugin("tests/fixtures/plugins/counting.py"),
        dir.display()
    );
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
        concurrency,
        "--max-error-rate",
        "100",
        "--quiet",
        "--defense",
        &defense,
        "--out",
    ])
    .arg(&out);
    c.assert().code(code);
    let eps = lines(&out.join("episodes.jsonl"))
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let starts = std::fs::read_to_string(dir.join("starts"))
        .unwrap()
        .lines()
        .count();
    (eps, starts)
}

#[test]
fn a_plugin_process_is_reused_across_episodes_one_per_worker() {
    if !tool_present("python3") {
        return;
    }
    for (concurrency, most) in [("1", 1), ("2", 2)] {
        let tmp = tempfile::tempdir().unwrap();
        let (eps, starts) = counted(tmp.path(), "", concurrency, 0);
        assert_eq!(eps.len(), 6);
        assert!(eps.iter().all(|e| e["error"].is_null()));
        assert!(
            (1..=most).contains(&starts),
            "{starts} process starts for 6 episodes at concurrency {concurrency}"
        );
    }
    // `"reuse": false` keeps one process per episode.
    let tmp = tempfile::tempdir().unwrap();
    let (eps, starts) = counted(tmp.path(), "--no-reuse", "1", 0);
    assert_eq!(eps.len(), 6);
    assert_eq!(starts, 6);
}

#[test]
fn a_plugin_crash_errors_only_the_episode_in_flight_and_restarts_it() {
    if !tool_present("python3") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (eps, starts) = counted(tmp.path(), "--crash-at 3", "1", 0);
    assert_eq!(eps.len(), 6);
    let errors: Vec<&str> = eps.iter().filter_map(|e| e["error"].as_str()).collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains("exit status: 7"), "{}", errors[0]);
    assert_eq!(starts, 2, "one start, one restart after the crash");
}
