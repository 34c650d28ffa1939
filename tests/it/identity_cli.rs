//! Run identity, exit codes and the results folder's safety, through the binary.

use crate::common::*;
use predicates::prelude::*;

#[test]
fn a_selection_with_no_episode_exits_4_and_says_why() {
    let tmp = tempfile::tempdir().unwrap();
    bench(tmp.path())
        .args([
            "run",
            "--suite",
            "banking",
            "--attack",
            "none",
            "--no-clean",
        ])
        .arg("--out")
        .arg(tmp.path().join("o"))
        .assert()
        .code(4)
        .stderr(predicate::str::contains("no episode to run"));
}

/// The largest seed is a seed like any other: one seed from it runs (and is recorded),
/// one more would run past it and is refused, and a seed count beyond the limit is
/// refused rather than panicking or running nothing.
#[test]
fn seeds_at_the_numeric_limits_run_or_are_refused_never_silently_empty() {
    let tmp = tempfile::tempdir().unwrap();
    let max = u64::MAX.to_string();
    let out = tmp.path().join("max");
    let s = run(
        tmp.path(),
        &out,
        &[
            "--suite",
            "banking",
            "--user-tasks",
            "user_task_0",
            "--injection-tasks",
            "injection_task_0",
            "--seed",
            &max,
        ],
    );
    assert!(s["episodes"].as_u64().unwrap() > 0, "{s}");
    let recorded = lines(&out.join("episodes.jsonl"));
    assert!(
        recorded
            .iter()
            .all(|l| l.contains(&format!("\"seed\":{max}"))),
        "{recorded:?}"
    );
    for (flags, needle) in [
        (vec!["--seed", max.as_str(), "--seeds", "2"], "--seed"),
        (vec!["--seeds", max.as_str()], "--seeds"),
        (vec!["--seeds", "18446744073709551616"], "--seeds"),
        (vec!["--seed=-1"], "--seed"),
    ] {
        bench(tmp.path())
            .args(["run", "--suite", "banking"])
            .args(&flags)
            .arg("--out")
            .arg(tmp.path().join("o"))
            .assert()
            .code(2)
            .stderr(predicate::str::contains(needle));
        assert!(
            !tmp.path().join("o").join("episodes.jsonl").exists(),
            "{flags:?}"
        );
    }
}

/// Runs one small banking matrix into `out` with extra flags.
fn small(
    cwd: &std::path::Path,
    out: &std::path::Path,
    extra: &[&str],
) -> assert_cmd::assert::Assert {
    bench(cwd)
        .args([
            "run",
            "--suite",
            "banking",
            "--user-tasks",
            "user_task_0",
            "--injection-tasks",
            "injection_task_0",
            "--quiet",
        ])
        .args(extra)
        .arg("--out")
        .arg(out)
        .assert()
}

#[test]
fn rerunning_with_any_changed_identity_field_is_refused_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("o");
    let config = tmp.path().join("sieve.toml");
    std::fs::copy(home().join("configs/sieve.toml"), &config).unwrap();
    let cfg = config.to_str().unwrap();
    let base = ["--defense", "sieve", "--sieve-config", cfg];
    small(tmp.path(), &out, &base).success();
    // The same command resumes.
    small(tmp.path(), &out, &base)
        .success()
        .stderr(predicate::str::contains(
            "0 episode(s) run, 2 already recorded",
        ));
    let cases: &[(&[&str], &str)] = &[
        (&["--judge-model", "sim:oracle"], "judge.name"),
        (&["--planner-model", "sim:oracle"], "planner.name"),
        (&["--max-steps", "5"], "max_steps"),
        (&["--model", "sim:p=0.5"], "agent.name"),
        (&["--model", "sim:obedient,judge_auc=0.8"], "agent.name"),
        (&["--weights", "w_causal=1"], "defense_config"),
    ];
    for (flags, field) in cases {
        let mut args = base.to_vec();
        args.extend_from_slice(flags);
        small(tmp.path(), &out, &args)
            .code(2)
            .stderr(predicate::str::contains(*field))
            .stderr(predicate::str::contains("--out"))
            .stderr(predicate::str::contains("--fresh"));
    }
    // The config's content, not its name or its comments, is the identity.
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, format!("# a new comment\n{text}")).unwrap();
    small(tmp.path(), &out, &base).success();
    std::fs::write(
        &config,
        text.replacen("threshold = 0.5", "threshold = 0.6", 1),
    )
    .unwrap();
    small(tmp.path(), &out, &base)
        .code(2)
        .stderr(predicate::str::contains("defense_config"));
    // --fresh starts over under the new settings; the manifest keeps every invocation.
    small(tmp.path(), &out, &[&base[..], &["--fresh"]].concat())
        .success()
        .stderr(predicate::str::contains(
            "2 episode(s) run, 0 already recorded",
        ));
    small(tmp.path(), &out, &base).success();
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).unwrap()).unwrap();
    assert_eq!(m["invocations"].as_array().unwrap().len(), 2);
    assert_eq!(m["crate_version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(m["settings"]["max_steps"], 30);
    assert_eq!(m["invocations"][1]["outcome"], "done");
    assert!(m["finished"].is_string());
}

/// The scripted agent's behaviour is part of its identity: episodes an older script
/// decided (a manifest naming another revision) are not resumed as if they were today's.
#[test]
fn episodes_of_an_older_scripted_agent_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("o");
    small(tmp.path(), &out, &[]).success();
    let path = out.join("run.json");
    let mut m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let now = m["settings"]["agent"]["script_revision"].as_u64().unwrap();
    m["settings"]["agent"]["script_revision"] = (now - 1).into();
    std::fs::write(&path, serde_json::to_string_pretty(&m).unwrap()).unwrap();
    small(tmp.path(), &out, &[])
        .code(2)
        .stderr(predicate::str::contains("agent.script_revision"));
}

#[test]
fn a_folder_with_episodes_but_no_manifest_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("o");
    small(tmp.path(), &out, &[]).success();
    std::fs::remove_file(out.join("run.json")).unwrap();
    small(tmp.path(), &out, &[])
        .code(2)
        .stderr(predicate::str::contains("unknown"));
}

#[test]
fn a_second_run_into_a_locked_folder_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("o");
    std::fs::create_dir_all(&out).unwrap();
    let lock = sieve_bench::runner::files::FolderLock::acquire(&out).unwrap();
    small(tmp.path(), &out, &[])
        .code(5)
        .stderr(predicate::str::contains("in use by another run"));
    assert!(!out.join("episodes.jsonl").exists());
    drop(lock);
    small(tmp.path(), &out, &[]).success();
}

#[test]
fn two_concurrent_runs_into_one_folder_never_both_write() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("o");
    let spawn = || {
        std::process::Command::new(assert_cmd::cargo::cargo_bin("sieve-bench"))
            .current_dir(tmp.path())
            .env("SIEVE_BENCH_HOME", home())
            .args(["run", "--suite", "banking", "--quiet", "--out"])
            .arg(&out)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn(), spawn());
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    let codes = [a.status.code(), b.status.code()];
    // Either one was refused while the other ran, or they ran one after the other (the
    // second then found everything recorded); never both writing every episode.
    let lines = lines(&out.join("episodes.jsonl"));
    let mut keys: Vec<String> = lines
        .iter()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["key"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    let n = keys.len();
    keys.sort();
    keys.dedup();
    assert_eq!(
        keys.len(),
        n,
        "a key was written twice; exit codes {codes:?}"
    );
    assert!(codes.contains(&Some(0)), "{codes:?}");
    assert!(
        codes.iter().all(|c| *c == Some(0) || *c == Some(5)),
        "{codes:?}"
    );
}

#[test]
fn duplicate_defenses_are_dropped_not_double_counted() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("o");
    small(tmp.path(), &out, &["--defense", "none,none,sieve,sieve"]).success();
    let s = summary(&out);
    let none = rows(&s).iter().find(|r| r["defense"] == "none").unwrap();
    assert_eq!(none["n_attacked"], 1);
    assert_eq!(lines(&out.join("episodes.jsonl")).len(), 4);
}

#[test]
fn a_broken_line_in_the_middle_still_reports_with_a_warning() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("o");
    small(tmp.path(), &out, &["--defense", "none"]).success();
    let path = out.join("episodes.jsonl");
    let mut bytes = std::fs::read(&path).unwrap();
    let first_end = bytes.iter().position(|b| *b == b'\n').unwrap() + 1;
    // A cut multi-byte character and a line that is not JSON, between two good lines.
    let mut broken = b"{\"key\": \"caf\xc3\n".to_vec();
    broken.extend_from_slice(b"not json\n");
    bytes.splice(first_end..first_end, broken);
    std::fs::write(&path, bytes).unwrap();
    bench(tmp.path())
        .arg("report")
        .arg(&out)
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "episodes.jsonl:2: line skipped, not valid UTF-8",
        ))
        .stderr(predicate::str::contains(
            "episodes.jsonl:3: line skipped, not a record",
        ));
    assert_eq!(summary(&out)["episodes"], 2);
    // Resume reads the same file and runs nothing again.
    small(tmp.path(), &out, &["--defense", "none"])
        .success()
        .stderr(predicate::str::contains(
            "0 episode(s) run, 2 already recorded",
        ));
}
