//! End-to-end behaviour of `run`, `report` and `compare` through the binary.

use crate::common::*;
use predicates::prelude::*;

#[test]
fn oracle_solves_everything_and_never_follows_injections_for_every_attack() {
    let tmp = tempfile::tempdir().unwrap();
    let s = run(
        tmp.path(),
        &tmp.path().join("o"),
        &[
            "--suite",
            "banking",
            "--attack",
            "all",
            "--model",
            "sim:oracle",
        ],
    );
    let rows = rows(&s);
    let attacks = std::fs::read_dir(home().join("attacks")).unwrap().count();
    // Banking has provenance-bypass tasks: each attack has a headline row and a row of
    // its own for them.
    assert_eq!(rows.len(), 2 * attacks, "two rows per attack");
    for r in rows {
        assert_eq!(r["bu"], 1.0, "{r}");
        assert_eq!(r["ua"], 1.0, "{r}");
        assert_eq!(r["asr"], 0.0, "{r}");
        assert_eq!(r["errors"], 0);
    }
    assert_eq!(s["simulated"], true);
}

#[test]
fn obedient_agent_without_defense_is_always_attacked() {
    let tmp = tempfile::tempdir().unwrap();
    let s = run(
        tmp.path(),
        &tmp.path().join("o"),
        &["--suite", "banking", "--attack", "important"],
    );
    let r = &rows(&s)[0];
    assert_eq!(r["asr"], 1.0, "{r}");
    assert_eq!(r["w_asr"], 1.0, "{r}");
    assert_eq!(r["defense"], "none");
    // The model name states the scripted roles' knobs too.
    assert!(
        r["model"]
            .as_str()
            .unwrap()
            .starts_with("sim:obedient,judge_auc=")
    );
    assert!(r["n_attacked"].as_u64().unwrap() > 0);
    assert!(
        r["tokens_per_episode"].as_f64().unwrap() > 100.0,
        "token counts are real prompt sizes"
    );
}

#[test]
fn probabilistic_agent_is_calibrated_and_reproducible() {
    let tmp = tempfile::tempdir().unwrap();
    let args = [
        "--suite",
        "banking",
        "--attack",
        "important",
        "--model",
        "sim:p=0.3",
        "--seeds",
        "2",
    ];
    let a = run(tmp.path(), &tmp.path().join("a"), &args);
    let b = run(tmp.path(), &tmp.path().join("b"), &args);
    let (ra, rb) = (&rows(&a)[0], &rows(&b)[0]);
    assert_eq!(ra, rb, "same command and seed, same figures");
    let asr = ra["asr"].as_f64().unwrap();
    let n = ra["n_attacked"].as_f64().unwrap();
    // Three standard errors around 0.3.
    let se = (0.3f64 * 0.7 / n).sqrt();
    assert!(
        (asr - 0.3).abs() < 3.0 * se + 1e-9,
        "asr {asr} over {n} episodes"
    );
    let c = run(
        tmp.path(),
        &tmp.path().join("c"),
        &[
            "--suite",
            "banking",
            "--attack",
            "important",
            "--model",
            "sim:p=0.3",
            "--seeds",
            "2",
            "--seed",
            "100",
        ],
    );
    assert_ne!(
        rows(&c)[0]["asr"],
        ra["asr"].clone(),
        "another seed draws differently (almost surely)"
    );
}

#[test]
fn rerun_resumes_and_drops_a_half_written_line() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    let args = ["--suite", "banking", "--attack", "important"];
    run(tmp.path(), &out, &args);
    let path = out.join("episodes.jsonl");
    let full = lines(&path);
    // Simulate a kill mid-write: drop the last two records, leave half of one.
    let mut text = full[..full.len() - 2].join("\n");
    text.push('\n');
    text.push_str(&full[full.len() - 2][..20]);
    std::fs::write(&path, text).unwrap();
    bench(tmp.path())
        .args([
            "run",
            "--suite",
            "banking",
            "--attack",
            "important",
            "--quiet",
            "--out",
        ])
        .arg(&out)
        .assert()
        .success()
        .stderr(predicate::str::contains("2 episode(s) run"))
        .stderr(predicate::str::contains("half-written"));
    let after = lines(&path);
    assert_eq!(after.len(), full.len());
    let mut keys: Vec<String> = after
        .iter()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["key"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), full.len(), "no episode recorded twice");
    // A third run has nothing to do.
    bench(tmp.path())
        .args([
            "run",
            "--suite",
            "banking",
            "--attack",
            "important",
            "--quiet",
            "--out",
        ])
        .arg(&out)
        .assert()
        .success()
        .stderr(predicate::str::contains("0 episode(s) run"));
}

#[test]
fn report_rerenders_from_records_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    let before = run(
        tmp.path(),
        &out,
        &["--suite", "banking", "--attack", "important"],
    );
    std::fs::remove_file(out.join("summary.json")).unwrap();
    bench(tmp.path())
        .arg("report")
        .arg(&out)
        .assert()
        .success()
        .stdout(predicate::str::contains("SIMULATED"))
        .stdout(predicate::str::contains("important_instructions"));
    // It writes only where --out says: the run's summary is `run`'s (and `merge`'s).
    assert!(!out.join("summary.json").exists());
    let json = tmp.path().join("report.json");
    bench(tmp.path())
        .args(["report", "--format", "json", "--out"])
        .arg(&json)
        .arg(&out)
        .assert()
        .success();
    let text = std::fs::read_to_string(&json).unwrap();
    assert!(text.contains("important_instructions"), "{text}");
    assert!(before["rows"].as_array().is_some_and(|r| !r.is_empty()));
}

#[test]
fn compare_exit_codes_gate_on_asr_and_utility() {
    let tmp = tempfile::tempdir().unwrap();
    let (oracle, obedient) = (tmp.path().join("oracle"), tmp.path().join("obedient"));
    run(
        tmp.path(),
        &oracle,
        &[
            "--suite",
            "banking",
            "--attack",
            "important",
            "--model",
            "sim:oracle",
        ],
    );
    run(
        tmp.path(),
        &obedient,
        &["--suite", "banking", "--attack", "important"],
    );
    // Same run: passes.
    bench(tmp.path())
        .arg("compare")
        .arg(&oracle)
        .arg(&oracle)
        .args(["--max-asr-increase", "0"])
        .assert()
        .code(0);
    // ASR from 0 to 100: fails the gate.
    bench(tmp.path())
        .arg("compare")
        .arg(&oracle)
        .arg(&obedient)
        .args(["--max-asr-increase", "1.0"])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("FAIL"));
    // A generous threshold passes.
    bench(tmp.path())
        .arg("compare")
        .arg(&oracle)
        .arg(&obedient)
        .args(["--max-asr-increase", "100"])
        .assert()
        .code(0);
    // Without a threshold the same runs are compared, not gated.
    bench(tmp.path())
        .arg("compare")
        .arg(&oracle)
        .arg(&obedient)
        .assert()
        .code(0)
        .stdout(predicate::str::contains("+100.0"))
        .stdout(predicate::str::contains("compared only"));
    // A row the new run lacks is named as missing, not as a crossed threshold.
    let partial = tmp.path().join("partial");
    run(
        tmp.path(),
        &partial,
        &[
            "--suite",
            "banking",
            "--attack",
            "important",
            "--defense",
            "sieve",
        ],
    );
    bench(tmp.path())
        .arg("compare")
        .arg(&obedient)
        .arg(&partial)
        .args(["--max-asr-increase", "100", "--width", "100"])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("missing from the new run"))
        .stderr(predicate::str::contains("missing from the new run"))
        .stderr(predicate::str::contains("threshold").not());
    // Not a run directory: bad input.
    bench(tmp.path())
        .arg("compare")
        .arg(&oracle)
        .arg(tmp.path().join("nowhere"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("not a run directory"));
    // A run kept as its summary alone (the committed baseline) still compares.
    let kept = tmp.path().join("kept");
    std::fs::create_dir(&kept).unwrap();
    std::fs::copy(oracle.join("summary.json"), kept.join("summary.json")).unwrap();
    bench(tmp.path())
        .arg("compare")
        .arg(&kept)
        .arg(&obedient)
        .args(["--max-asr-increase", "1"])
        .assert()
        .code(1);
    bench(tmp.path())
        .arg("compare")
        .arg(&kept)
        .arg(&oracle)
        .args(["--max-asr-increase", "0"])
        .assert()
        .code(0);
    // With the records of both runs, a rise in every paired episode is significant.
    bench(tmp.path())
        .arg("compare")
        .arg(&oracle)
        .arg(&obedient)
        .args(["--significance", "0.05"])
        .assert()
        .code(1)
        .stdout(predicate::str::contains(
            "significant (McNemar p < 0.001, below 0.05",
        ));
    // The significance gate needs records: a summary alone is refused, naming the run.
    bench(tmp.path())
        .arg("compare")
        .arg(&kept)
        .arg(&obedient)
        .args(["--significance", "0.05"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("needs the episode records"))
        .stderr(predicate::str::contains("kept"));
    bench(tmp.path())
        .arg("compare")
        .arg(&oracle)
        .arg(&obedient)
        .args(["--significance", "1.5"])
        .assert()
        .code(2);
}

/// `--pair A=B` compares defense A of one run with defense B of another (here the same
/// run twice), per suite and attack, with paired tests.
#[test]
fn compare_pairs_any_two_defenses() {
    let tmp = tempfile::tempdir().unwrap();
    let r = tmp.path().join("r");
    run(
        tmp.path(),
        &r,
        &[
            "--suite",
            "banking",
            "--defense",
            "none,sieve",
            "--injection-tasks",
            "injection_task_0,injection_task_1",
        ],
    );
    // sieve lowers ASR against none: no regression, and the table says which pair.
    bench(tmp.path())
        .arg("compare")
        .arg(&r)
        .arg(&r)
        .args(["--pair", "none=sieve", "--significance", "0.05"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("p ASR"))
        .stdout(predicate::str::contains("gate: passed"));
    // The other way round ASR rises, significantly.
    bench(tmp.path())
        .arg("compare")
        .arg(&r)
        .arg(&r)
        .args(["--pair", "sieve=none", "--significance", "0.05"])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("sieve vs none: ASR +"));
    bench(tmp.path())
        .arg("compare")
        .arg(&r)
        .arg(&r)
        .args(["--pair", "sieve=audit"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("none, sieve"));
}

#[test]
fn unknown_names_list_the_valid_ones() {
    let tmp = tempfile::tempdir().unwrap();
    for (flag, value, expect) in [
        ("--suite", "bankingg", "available: all"),
        ("--attack", "sneaky", "important_instructions (important)"),
        ("--defense", "wall", "available: none"),
        ("--model", "gpt:x", "available: sim"),
        ("--user-tasks", "user_task_999", "no task `user_task_999`"),
    ] {
        let mut c = bench(tmp.path());
        c.args(["run", flag, value])
            .args(["--out"])
            .arg(tmp.path().join("x"));
        if flag != "--suite" {
            c.args(["--suite", "banking"]);
        }
        c.assert().code(2).stderr(predicate::str::contains(expect));
    }
}

#[test]
fn every_command_explains_itself() {
    let tmp = tempfile::tempdir().unwrap();
    for cmd in ["run", "check-suites", "list", "report", "compare"] {
        bench(tmp.path())
            .args([cmd, "--help"])
            .assert()
            .success()
            .stdout(predicate::str::contains("Usage"));
    }
    bench(tmp.path())
        .args(["run", "--help"])
        .assert()
        .stdout(predicate::str::contains("--max-steps"))
        .stdout(predicate::str::contains("resumes"));
}

#[test]
fn list_shows_suites_attacks_defenses_models() {
    let tmp = tempfile::tempdir().unwrap();
    bench(tmp.path())
        .args(["list", "suites"])
        .assert()
        .success()
        .stdout(predicate::str::contains("dojo-style/banking"));
    bench(tmp.path())
        .args(["list", "attacks"])
        .assert()
        .success()
        .stdout(predicate::str::contains("tool_knowledge"));
    bench(tmp.path())
        .args(["list", "defenses"])
        .assert()
        .success()
        .stdout(predicate::str::contains("none"));
    bench(tmp.path())
        .args(["list", "models"])
        .assert()
        .success()
        .stdout(predicate::str::contains("sim:oracle"));
}

#[test]
fn shards_partition_the_matrix_and_merge_back_to_the_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let whole = run(
        tmp.path(),
        &tmp.path().join("whole"),
        &["--suite", "banking", "--attack", "important"],
    );
    let mut sizes = 0;
    for k in 0..3 {
        let shard = format!("{k}/3");
        run(
            tmp.path(),
            &tmp.path().join(format!("s{k}")),
            &[
                "--suite",
                "banking",
                "--attack",
                "important",
                "--shard",
                &shard,
            ],
        );
        sizes += lines(&tmp.path().join(format!("s{k}/episodes.jsonl"))).len();
    }
    assert_eq!(
        sizes,
        lines(&tmp.path().join("whole/episodes.jsonl")).len(),
        "shards partition the matrix"
    );
    let merged = tmp.path().join("merged");
    bench(tmp.path())
        .args(["merge", "--out"])
        .arg(&merged)
        .args(["s0", "s1", "s2", "s1"].map(|s| tmp.path().join(s)))
        .assert()
        .success();
    assert_eq!(
        lines(&merged.join("episodes.jsonl")).len(),
        sizes,
        "a shard given twice is merged once"
    );
    assert_eq!(lines(&merged.join("traces.jsonl")).len(), sizes);
    assert_eq!(summary(&merged)["rows"], whole["rows"]);
}

#[cfg(unix)]
#[test]
fn ctrl_c_keeps_every_finished_episode_and_exits_130() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("big");
    // Far more episodes than can finish before the signal arrives.
    let mut child = KillOnDrop(Some(
        std::process::Command::new(assert_cmd::cargo::cargo_bin("sieve-bench"))
            .current_dir(tmp.path())
            .env("SIEVE_BENCH_HOME", home())
            .args([
                "run",
                "--suite",
                "all",
                "--attack",
                "important",
                "--seeds",
                "500",
                "--quiet",
                "--out",
            ])
            .arg(&out)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    ));
    let episodes = out.join("episodes.jsonl");
    // Generous: the machine running the tests may be loaded.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(180);
    while lines_or_empty(&episodes) < 20 {
        assert!(
            std::time::Instant::now() < deadline,
            "the run never started writing"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let output = child.0.take().unwrap().wait_with_output().unwrap();
    assert_eq!(
        output.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(String::from_utf8_lossy(&output.stderr).contains("resume"));
    let text = std::fs::read_to_string(&episodes).unwrap();
    assert!(
        text.ends_with('\n'),
        "no half-written line after a clean interrupt"
    );
    for line in text.lines() {
        serde_json::from_str::<serde_json::Value>(line).expect("every kept line is a whole record");
    }
    assert!(
        out.join("summary.json").is_file(),
        "the summary covers what finished"
    );
    let partial = summary(&out)["partial"].as_str().map(str::to_string);
    assert!(
        partial
            .as_deref()
            .is_some_and(|p| p.contains("interrupted")),
        "the summary says it is partial: {partial:?}"
    );
}

/// A child process killed when the test ends, a failed assertion included, so a run the
/// test started never outlives it.
struct KillOnDrop(Option<std::process::Child>);

impl std::ops::Deref for KillOnDrop {
    type Target = std::process::Child;
    fn deref(&self) -> &std::process::Child {
        self.0.as_ref().expect("not yet waited for")
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn lines_or_empty(p: &std::path::Path) -> usize {
    std::fs::read_to_string(p)
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

#[test]
fn resuming_over_records_of_an_edited_suite_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    // A private copy of the suites, so the test can edit one.
    let suites = tmp.path().join("suites");
    let copy = |from: &std::path::Path, to: &std::path::Path| {
        std::process::Command::new("cp")
            .arg("-r")
            .arg(from)
            .arg(to)
            .status()
            .unwrap()
    };
    assert!(copy(&home().join("suites"), &suites).success());
    let out = tmp.path().join("r");
    let args = [
        "run",
        "--suite",
        "banking",
        "--attack",
        "important",
        "--quiet",
        "--out",
    ];
    bench(tmp.path())
        .arg("--suites-dir")
        .arg(&suites)
        .args(args)
        .arg(&out)
        .assert()
        .success();
    let before = lines(&out.join("episodes.jsonl")).len();
    // Same data: resumes, nothing to do.
    bench(tmp.path())
        .arg("--suites-dir")
        .arg(&suites)
        .args(args)
        .arg(&out)
        .assert()
        .success();
    // Edited data: refused, and nothing is lost.
    let f = suites.join("dojo-style/banking/suite.yaml");
    let text = std::fs::read_to_string(&f).unwrap();
    std::fs::write(&f, format!("{text}\n# edited\n")).unwrap();
    bench(tmp.path())
        .arg("--suites-dir")
        .arg(&suites)
        .args(args)
        .arg(&out)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "other versions of: suite dojo-style/banking",
        ));
    assert_eq!(lines(&out.join("episodes.jsonl")).len(), before);
}

/// What every episode of a run did, by episode key without the model: the tools it
/// called, in order, and its last assistant message.
fn behaviour(out: &std::path::Path) -> std::collections::BTreeMap<String, String> {
    lines(&out.join("traces.jsonl"))
        .iter()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let key: Vec<&str> = v["key"].as_str().unwrap().split('|').collect();
            let messages = v["messages"].as_array().unwrap();
            let calls: Vec<&str> = messages
                .iter()
                .flat_map(|m| m["tool_calls"].as_array().into_iter().flatten())
                .map(|c| c["name"].as_str().unwrap())
                .collect();
            let last = messages
                .iter()
                .rev()
                .find(|m| m["role"] == "assistant")
                .unwrap()["content"]
                .as_str()
                .unwrap();
            (
                format!("{}|{}|{}", key[0], key[1], key[2]),
                format!("{} => {last}", calls.join(",")),
            )
        })
        .collect()
}

#[test]
fn varied_agent_solves_every_task_in_other_words_and_other_paths() {
    let tmp = tempfile::tempdir().unwrap();
    let args = |model: &'static str| {
        // The dojo-style family has a variant corpus for every user task.
        [
            "--suite",
            "dojo-style",
            "--attack",
            "important",
            "--injection-tasks",
            "injection_task_0",
            "--model",
            model,
        ]
    };
    let varied = run(
        tmp.path(),
        &tmp.path().join("v"),
        &args("sim:oracle,varied"),
    );
    for r in rows(&varied) {
        assert_eq!(r["bu"], 1.0, "{r}");
        assert_eq!(r["ua"], 1.0, "{r}");
        assert_eq!(r["asr"], 0.0, "{r}");
        assert!(r["model"].as_str().unwrap().contains(",varied"), "{r}");
    }
    run(tmp.path(), &tmp.path().join("r"), &args("sim:oracle"));
    let (v, r) = (
        behaviour(&tmp.path().join("v")),
        behaviour(&tmp.path().join("r")),
    );
    assert_eq!(v.len(), r.len());
    let differ = v.iter().filter(|(k, a)| r[*k] != **a).count();
    // Every user task has alternatives in the corpus, so nearly every episode answers in
    // words other than the reference or takes another path.
    assert!(differ * 10 >= v.len() * 9, "{differ} of {} differ", v.len());
}

/// An attack asked for where the selection has no attacked episode is "nothing to run"
/// (exit 4), never a clean-only run that exits 0; an empty `--attack` is a bad value.
#[test]
fn an_attack_without_attacked_episodes_exits_4() {
    let tmp = tempfile::tempdir().unwrap();
    // A family without context-aware samples.
    bench(tmp.path())
        .args([
            "run",
            "--suite",
            "dojo-style/banking",
            "--attack",
            "context",
        ])
        .args(["--user-tasks", "user_task_0", "--quiet", "--out", "a"])
        .assert()
        .code(4)
        .stderr(predicates::str::contains("no context-aware samples"));
    // A suite without injection tasks.
    let suites = tmp.path().join("suites/dojo-style");
    std::fs::create_dir_all(&suites).unwrap();
    let copy = std::process::Command::new("cp")
        .arg("-r")
        .arg(home().join("suites/dojo-style/banking"))
        .arg(&suites)
        .status()
        .unwrap();
    assert!(copy.success());
    std::fs::write(suites.join("banking/injection_tasks.yaml"), "tasks: []\n").unwrap();
    bench(tmp.path())
        .arg("--suites-dir")
        .arg(tmp.path().join("suites"))
        .args(["run", "--suite", "banking", "--user-tasks", "user_task_0"])
        .args(["--quiet", "--out", "b"])
        .assert()
        .code(4)
        .stderr(predicates::str::contains("has no injection tasks"));
    // Clean episodes only, asked for: fine.
    bench(tmp.path())
        .arg("--suites-dir")
        .arg(tmp.path().join("suites"))
        .args(["run", "--suite", "banking", "--user-tasks", "user_task_0"])
        .args(["--attack", "none", "--quiet", "--out", "c"])
        .assert()
        .success();
    for empty in ["", " , "] {
        bench(tmp.path())
            .args(["run", "--suite", "banking", "--quiet", "--out", "d"])
            .arg(format!("--attack={empty}"))
            .assert()
            .code(2)
            .stderr(predicates::str::contains("--attack names no attack"));
    }
}

#[test]
fn a_misspelt_tool_in_the_sieve_config_and_a_repeated_weight_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("sieve.toml");
    let text = std::fs::read_to_string(home().join("configs/sieve.toml")).unwrap();
    let typo = text.replacen("\n[risk]\n", "\n[risk]\nsend_mony = 0.9\n", 1);
    assert_ne!(typo, text);
    std::fs::write(&config, typo).unwrap();
    bench(tmp.path())
        .args(["run", "--suite", "banking", "--quiet", "--out", "a"])
        .arg("--sieve-config")
        .arg(&config)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("[risk] names `send_mony`"))
        .stderr(predicates::str::contains("send_money"));
    bench(tmp.path())
        .args(["run", "--suite", "banking", "--quiet", "--out", "b"])
        .args(["--defense", "sieve", "--weights", "w_sem=0.2,w_sem=0.8"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("given twice"));
    bench(tmp.path())
        .args(["run", "--suite", "banking", "--quiet", "--out", "c"])
        .args(["--concurrency", "18446744073709551615"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "--concurrency must be at least 1 and at most",
        ));
}

/// The help block of `flag` in `help` (its line and the description lines under it).
fn flag_help(help: &str, flag: &str) -> String {
    let mut lines = help
        .lines()
        .skip_while(|l| !l.trim_start().starts_with(flag));
    let first = lines
        .next()
        .unwrap_or_else(|| panic!("no {flag} in:\n{help}"));
    std::iter::once(first)
        .chain(lines.take_while(|l| {
            // Up to the next flag or heading; clap puts a default on a line of its own
            // in some layouts.
            let t = l.trim_start();
            !t.starts_with('-') && (l.is_empty() || l.starts_with(' '))
        }))
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn model_and_concurrency_flags_are_one_definition_everywhere() {
    let tmp = tempfile::tempdir().unwrap();
    let help = |args: &[&str]| {
        let out = bench(tmp.path()).args(args).arg("--help").output().unwrap();
        assert!(out.status.success(), "{args:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let commands: [&[&str]; 4] = [
        &["run"],
        &["ablate"],
        &["attack", "search"],
        &["attack", "transfer"],
    ];
    for flag in ["--model <MODEL>", "--planner-model", "--judge-model"] {
        let blocks: Vec<String> = commands.iter().map(|c| flag_help(&help(c), flag)).collect();
        assert!(
            blocks.iter().all(|b| b == &blocks[0]),
            "{flag} reads differently: {blocks:#?}"
        );
    }
    let conc: Vec<String> = [&["run"][..], &["ablate"], &["calibrate"]]
        .iter()
        .map(|c| flag_help(&help(c), "--concurrency"))
        .collect();
    assert!(conc.iter().all(|b| b == &conc[0]), "{conc:#?}");
    // One parser refuses the same values with the same words, before anything runs.
    for c in [
        &["run", "--suite", "banking"][..],
        &["calibrate", "--answer-judge", "openai:j"],
    ] {
        let max = sieve_bench::commands::run::args::MAX_CONCURRENCY;
        for bad in ["0".to_string(), (max + 1).to_string(), "many".into()] {
            bench(tmp.path())
                .args(c)
                .args(["--concurrency", bad.as_str()])
                .assert()
                .code(2)
                .stderr(predicates::str::contains(format!(
                    "--concurrency must be at least 1 and at most {max} (each episode in flight may hold its own provider or plugin process), got `{bad}`"
                )));
        }
    }
    assert!(
        !tmp.path().join("results").exists(),
        "a refused flag wrote nothing"
    );
}
