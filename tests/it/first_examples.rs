//! The first examples a new user runs (issue 40 item 4), each as the documentation
//! gives it: `attack search` with its defaults, the README's `--dry-run` without an API
//! key, the README's budgeted real-model line, `scripts/shard_local.sh` finding its
//! binary, and `calibrate --labelled` naming every label it cannot use.

use crate::common::*;

/// `attack search` without `--budget-episodes` sizes its budget from the seeds' cost,
/// so its defaults run; a budget below that cost is refused naming the minimum.
#[test]
fn attack_search_defaults_pay_for_the_seed_templates() {
    let tmp = tempfile::tempdir().unwrap();
    let tasks = [
        "--user-tasks",
        "user_task_0,user_task_1,user_task_2,user_task_3",
    ];
    let out = bench(tmp.path())
        .args([
            "attack",
            "search",
            "--suite",
            "banking",
            "--defense",
            "keyword_filter",
        ])
        .args(tasks)
        .args(["--out", "s"])
        .assert()
        .success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(text.contains("budget: "), "{text}");
    let refused = bench(tmp.path())
        .args([
            "attack",
            "search",
            "--suite",
            "banking",
            "--defense",
            "keyword_filter",
        ])
        .args(tasks)
        .args(["--budget-episodes", "10", "--out", "t"])
        .assert()
        .code(2);
    let err = String::from_utf8_lossy(&refused.get_output().stderr).into_owned();
    assert!(err.contains("the minimum is"), "{err}");
    assert!(err.contains("the default"), "{err}");
}

/// The README's `--dry-run` line sends nothing, so it needs no API key.
#[test]
fn a_dry_run_needs_no_api_key() {
    let tmp = tempfile::tempdir().unwrap();
    bench(tmp.path())
        .env_remove("OPENAI_BASE_URL")
        .args(["run", "--suite", "banking", "--attack", "important"])
        .args(["--model", "openai:gpt-4o-mini", "--dry-run"])
        .args(["--user-tasks", "user_task_0"])
        .assert()
        .success()
        .stdout(predicates::str::contains("nothing was sent"));
}

/// A dry run writes nothing: not the `--cache` folder it would fill, not a results
/// folder; and no role is shown as played by a model that does not play it.
#[test]
fn a_dry_run_writes_nothing_even_with_a_cache_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let out = bench(tmp.path())
        .env_remove("OPENAI_BASE_URL")
        .args(["run", "--suite", "banking", "--attack", "important"])
        .args(["--defense", "sieve", "--model", "openai:gpt-4o-mini"])
        .args(["--judge-model", "openai:gpt-4o", "--cache", "cache"])
        .args(["--user-tasks", "user_task_0", "--dry-run"])
        .assert()
        .success();
    let listed: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
    assert!(listed.is_empty(), "the dry run wrote {listed:?}");
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    let played_by = |role: &str| role_cells(&stdout, role)[1].clone();
    assert_eq!(played_by("judge"), "openai:gpt-4o", "{stdout}");
    assert_eq!(played_by("planner"), "openai:gpt-4o-mini", "{stdout}");
    assert_eq!(played_by("answer_judge"), "none", "{stdout}");
}

/// The cells of the dry run's role table row for `role` (Role, Played by, Calls, Prompt
/// tok, Compl tok, $): the table's columns are two spaces or more apart.
fn role_cells(stdout: &str, role: &str) -> Vec<String> {
    let cells = |l: &str| -> Vec<String> {
        l.split("  ")
            .map(|c| c.trim().to_string())
            .filter(|c| !c.is_empty())
            .collect()
    };
    stdout
        .lines()
        .map(cells)
        .find(|c| c.first().is_some_and(|first| first == role))
        .unwrap_or_else(|| panic!("no `{role}` row: {stdout}"))
}

/// MELON's masked run is metered as `detector` but is a run of the agent's model: the
/// dry run counts and prices it on the agent's model, not the judge's.
#[test]
fn a_dry_run_counts_melons_masked_run_on_the_agents_model() {
    let tmp = tempfile::tempdir().unwrap();
    let out = bench(tmp.path())
        .env_remove("OPENAI_BASE_URL")
        .args(["run", "--suite", "banking", "--attack", "important"])
        .args(["--defense", "melon", "--model", "openai:gpt-4o-mini"])
        .args(["--judge-model", "openai:gpt-4o"])
        .args(["--user-tasks", "user_task_0", "--dry-run"])
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    let masked = role_cells(&stdout, "detector (on the agent's model)");
    assert_eq!(masked[1], "openai:gpt-4o-mini", "{stdout}");
    assert_ne!(masked[2], "0", "the masked runs are counted: {stdout}");
    let detector = role_cells(&stdout, "detector");
    assert_eq!(
        detector[2], "0",
        "nothing left on the judge's model: {stdout}"
    );
}

/// The README's budgeted line carries the price `--budget-usd` needs: accepted as
/// written, it stops at the (closed) endpoint.
#[test]
fn the_readme_budget_line_runs_as_written() {
    let readme = std::fs::read_to_string(home().join("README.md")).unwrap();
    let joined = readme.replace("\\\n", " ");
    let line = joined
        .lines()
        .find(|l| l.contains("--budget-usd 5"))
        .expect("the README's budget line");
    let words: Vec<&str> = line.split_whitespace().skip(1).collect();
    assert!(words.contains(&"--price-per-mtok"), "{line}");
    let tmp = tempfile::tempdir().unwrap();
    let accepted = |words: &[&str]| {
        bench(tmp.path())
            .env("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
            .env("OPENAI_API_KEY", "dummy-key-for-tests")
            .args(words)
            .args([
                "--user-tasks",
                "user_task_0",
                "--injection-tasks",
                "injection_task_0",
            ])
            .assert()
    };
    let code = accepted(&words).get_output().status.code();
    assert!(matches!(code, Some(1) | Some(3)), "exit {code:?}: {line}");
}

/// `scripts/shard_local.sh N` finds `sieve-bench` on PATH and says so; without any
/// binary it says how to build one instead of exiting 127 in silence.
#[test]
fn shard_local_finds_its_binary_and_shows_errors() {
    let bin = assert_cmd::cargo::cargo_bin("sieve-bench");
    let path_dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(&bin, path_dir.path().join("sieve-bench")).unwrap();
    let path = format!(
        "{}:{}",
        path_dir.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = std::process::Command::new("bash")
        .arg(home().join("scripts/shard_local.sh"))
        .arg("2")
        .env("PATH", &path)
        .env("SIEVE_BENCH_HOME", home())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(&format!(
            "binary: {}",
            path_dir.path().join("sieve-bench").display()
        )),
        "{stdout}"
    );
    assert!(stdout.contains("merged summary equals"), "{stdout}");
    // A checkout with no binary anywhere: the script says so and how to get one.
    let bare = tempfile::tempdir().unwrap();
    std::fs::create_dir(bare.path().join("scripts")).unwrap();
    std::fs::copy(
        home().join("scripts/shard_local.sh"),
        bare.path().join("scripts/shard_local.sh"),
    )
    .unwrap();
    let out = std::process::Command::new("bash")
        .arg(bare.path().join("scripts/shard_local.sh"))
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no sieve-bench binary") && err.contains("cargo build"),
        "{err}"
    );
}

/// `calibrate --labelled` names every label it cannot use and why, and refuses a file
/// none of whose labels it can use (the docs' example used to add nothing, silently).
#[test]
fn calibrate_names_every_label_it_cannot_use() {
    let tmp = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        std::fs::write(tmp.path().join(name), text).unwrap();
        format!("dojo-style/banking={}", tmp.path().join(name).display())
    };
    let useless = write(
        "useless.yaml",
        "user_tasks:\n  user_task_0:\n    correct: [Paid it.]\n    wrong: [Did not pay.]\n",
    );
    let calibrate = |labels: &str| {
        bench(tmp.path())
            .env("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
            .env("OPENAI_API_KEY", "dummy-key-for-tests")
            .args(["calibrate", "--answer-judge", "openai:judge"])
            .args(["--suite", "dojo-style/banking", "--corpus", "hand-written"])
            .args(["--labelled", labels])
            .assert()
    };
    let out = calibrate(&useless).code(2);
    let err = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    for field in ["user_task_0.correct[0]", "user_task_0.wrong[0]"] {
        assert!(err.contains(field), "{field} not named:\n{err}");
    }
    assert!(err.contains("reads no answer"), "{err}");
    // A file with one usable label: the rest are named, the run goes on to the judge
    // (here a closed port: exit 1).
    let mixed = write(
        "mixed.yaml",
        "user_tasks:\n  user_task_0:\n    correct: [Paid it.]\n  user_task_1:\n    correct: [Marta's 18.00 was her part of Dev's leaving gift.]\n",
    );
    let out = calibrate(&mixed).code(1);
    let err = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(err.contains("user_task_0.correct[0]"), "{err}");
    assert!(!err.contains("user_task_1"), "{err}");
}
