//! `merge` of shards: complete splits only, one identity, all or nothing.

use crate::common::*;
use predicates::prelude::*;

fn shard(cwd: &std::path::Path, out: &std::path::Path, k: &str, extra: &[&str]) {
    bench(cwd)
        .args([
            "run",
            "--suite",
            "banking",
            "--user-tasks",
            "user_task_0,user_task_1",
            "--quiet",
            "--shard",
            k,
        ])
        .args(extra)
        .arg("--out")
        .arg(out)
        .assert()
        .success();
}

#[test]
fn merge_refuses_missing_shards_other_splits_and_other_settings() {
    let tmp = tempfile::tempdir().unwrap();
    let p = |n: &str| tmp.path().join(n);
    shard(tmp.path(), &p("a0"), "0/2", &[]);
    shard(tmp.path(), &p("a1"), "1/2", &[]);
    shard(tmp.path(), &p("b1"), "1/3", &[]);
    shard(tmp.path(), &p("c1"), "1/2", &["--max-steps", "7"]);
    let merge = |inputs: &[&str], extra: &[&str]| {
        let mut c = bench(tmp.path());
        c.arg("merge").arg("--out").arg(p("m"));
        for i in inputs {
            c.arg(p(i));
        }
        c.args(extra).assert()
    };
    merge(&["a0"], &[])
        .code(2)
        .stderr(predicate::str::contains("shard(s) 1/2 missing"));
    assert!(!p("m").exists(), "nothing written");
    merge(&["a0", "b1"], &[])
        .code(2)
        .stderr(predicate::str::contains("different splits"));
    merge(&["a0", "c1"], &[])
        .code(2)
        .stderr(predicate::str::contains("max_steps"));
    assert!(!p("m").exists());
    merge(&["a0"], &["--partial"]).success();
    merge(&["a0", "a1"], &[]).success();
    let whole = lines(&p("m").join("episodes.jsonl")).len();
    let parts =
        lines(&p("a0").join("episodes.jsonl")).len() + lines(&p("a1").join("episodes.jsonl")).len();
    assert_eq!(whole, parts);
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(p("m").join("run.json")).unwrap()).unwrap();
    assert!(m["shard"].is_null());
    assert!(m["invocations"].as_array().unwrap().len() >= 3);
    // No temporary folders are left beside the output.
    let leftovers = std::fs::read_dir(tmp.path())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with(".merge")
        })
        .count();
    assert_eq!(leftovers, 0);
}

/// Every entry of a folder, sorted, for before/after comparisons.
fn entries(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn merge_never_removes_what_it_did_not_write() {
    let tmp = tempfile::tempdir().unwrap();
    let p = |n: &str| tmp.path().join(n);
    shard(tmp.path(), &p("results/run-a"), "0/2", &[]);
    shard(tmp.path(), &p("results/run-b"), "1/2", &[]);
    let merge = |out: &str, inputs: &[&str]| {
        let mut c = bench(tmp.path());
        c.args(["merge", "--partial", "--out", out]);
        for i in inputs {
            c.arg(p(i));
        }
        c.assert()
    };
    // A folder of other runs is not a run: refused, and every sibling stays.
    merge("results", &["results/run-a"])
        .code(2)
        .stderr(predicate::str::contains("run-b"));
    assert_eq!(entries(&p("results")), ["run-a", "run-b"]);
    assert!(p("results/run-b/episodes.jsonl").is_file());
    // `run` will not write a run into it either.
    bench(tmp.path())
        .args(["run", "--suite", "banking", "--quiet", "--out", "results"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("not a run folder"));
    assert_eq!(entries(&p("results")), ["run-a", "run-b"]);
    // A folder with a thesis in it: refused, the thesis untouched.
    std::fs::create_dir_all(p("thesis")).unwrap();
    std::fs::write(p("thesis/thesis.tex"), "chapter one").unwrap();
    merge("thesis", &["results/run-a"])
        .code(2)
        .stderr(predicate::str::contains("thesis.tex"));
    assert_eq!(entries(&p("thesis")), ["thesis.tex"]);
    // The working directory itself: refused, and no temporary copy left anywhere.
    merge(".", &["results/run-a"]).code(2);
    assert!(
        !entries(tmp.path()).iter().any(|e| e.starts_with(".merge")),
        "{:?}",
        entries(tmp.path())
    );
    // A run folder of its own, with a file of the user's beside its records: merged
    // into, its own episodes kept and the user's file left alone.
    merge("m", &["results/run-a"]).success();
    std::fs::write(p("m/notes.txt"), "mine").unwrap();
    let before = lines(&p("m/episodes.jsonl")).len();
    merge("m", &["results/run-b"]).success();
    assert_eq!(
        lines(&p("m/episodes.jsonl")).len(),
        before + lines(&p("results/run-b/episodes.jsonl")).len()
    );
    assert_eq!(std::fs::read_to_string(p("m/notes.txt")).unwrap(), "mine");
    assert!(!entries(&p("m")).iter().any(|e| e.starts_with(".merge")));
    assert!(!entries(tmp.path()).iter().any(|e| e.starts_with(".merge")));
}

#[test]
fn merge_takes_the_lock_of_a_live_run() {
    use sieve_bench::runner::files::FolderLock;
    let tmp = tempfile::tempdir().unwrap();
    let p = |n: &str| tmp.path().join(n);
    shard(tmp.path(), &p("s0"), "0/2", &[]);
    shard(tmp.path(), &p("s1"), "1/2", &[]);
    shard(tmp.path(), &p("m"), "0/2", &[]);
    let merge = |out: &str, inputs: &[&str]| {
        let mut c = bench(tmp.path());
        c.args(["merge", "--out", out]);
        for i in inputs {
            c.arg(p(i));
        }
        c.assert()
    };
    let before = std::fs::read(p("m/episodes.jsonl")).unwrap();
    // A run still writing into the output: exit 5, nothing moved.
    let live = FolderLock::acquire(&p("m")).unwrap();
    merge("m", &["s0", "s1"])
        .code(5)
        .stderr(predicate::str::contains("in use"));
    assert_eq!(std::fs::read(p("m/episodes.jsonl")).unwrap(), before);
    assert!(p("m/.lock").is_file(), "the live run's lock stays");
    drop(live);
    // A shard still being written: its records are not final, so it is refused too.
    let live = FolderLock::acquire(&p("s1")).unwrap();
    merge("n", &["s0", "s1"])
        .code(5)
        .stderr(predicate::str::contains("s1"));
    assert!(!p("n").exists(), "nothing created");
    drop(live);
    merge("n", &["s0", "s1"]).success();
}

#[test]
fn merge_refuses_shards_that_count_errors_differently() {
    let tmp = tempfile::tempdir().unwrap();
    let p = |n: &str| tmp.path().join(n);
    shard(tmp.path(), &p("s0"), "0/2", &["--errors-as", "excluded"]);
    shard(tmp.path(), &p("s1"), "1/2", &["--errors-as", "agentdojo"]);
    bench(tmp.path())
        .args(["merge", "--out"])
        .arg(p("m"))
        .arg(p("s0"))
        .arg(p("s1"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--errors-as"));
    assert!(!p("m").exists());
}

#[test]
fn merge_prints_runs_tables_fitted_to_the_width_with_the_alert_column() {
    // Three defenses, one of which errors every episode (a plugin that exits at once):
    // merge prints the summary and the main table as `run` does, every line within
    // --width, and keeps the `!` column for the flagged row however narrow.
    let tmp = tempfile::tempdir().unwrap();
    let defenses = "none,sieve,exec:exit 0";
    for k in ["0/2", "1/2"] {
        let out = tmp.path().join(format!("s{}", &k[..1]));
        bench(tmp.path())
            .args(["run", "--suite", "banking", "--attack", "important"])
            .args(["--user-tasks", "user_task_0,user_task_1"])
            .args(["--injection-tasks", "injection_task_0"])
            .args(["--defense", defenses, "--quiet", "--shard", k, "--out"])
            .arg(&out)
            .assert()
            .code(3);
    }
    let merged = bench(tmp.path())
        .args(["merge", "--width", "72", "--out"])
        .arg(tmp.path().join("all"))
        .arg(tmp.path().join("s0"))
        .arg(tmp.path().join("s1"))
        .assert()
        .success();
    let text = String::from_utf8(merged.get_output().stdout.clone()).unwrap();
    for line in text.lines().filter(|l| !l.starts_with(' ')) {
        assert!(line.chars().count() <= 72, "wider than 72: {line}\n{text}");
    }
    let header = text
        .lines()
        .find(|l| l.trim_start().starts_with("Attack") || l.trim_start().starts_with("Defense"))
        .unwrap_or_else(|| panic!("no table header:\n{text}"));
    assert!(header.contains('!'), "no `!` column: {header}\n{text}");
    // A narrow table may abbreviate the name, with a legend line `<short> = exec:exit 0`.
    let label = text
        .lines()
        .find_map(|l| {
            l.split("abbreviated:")
                .nth(1)?
                .split(';')
                .find_map(|pair| pair.trim().strip_suffix(" = exec:exit 0"))
        })
        .unwrap_or("exec:exit 0");
    assert!(
        text.lines()
            .any(|l| l.trim_start().starts_with(label) && l.contains('!')),
        "the failing defense's row is not flagged:\n{text}"
    );
    // The main table follows, as after `run` with more than two defenses.
    assert!(
        text.contains("Main table") || text.matches("exec:exit 0").count() >= 2,
        "{text}"
    );
}

#[test]
fn summary_csv_writes_too_many_errors_as_true_or_false() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    bench(tmp.path())
        .args(["run", "--suite", "banking", "--attack", "important"])
        .args([
            "--user-tasks",
            "user_task_0",
            "--injection-tasks",
            "injection_task_0",
        ])
        .args(["--defense", "none,exec:exit 0", "--quiet", "--out"])
        .arg(&out)
        .assert()
        .code(3);
    let mut csv = csv::Reader::from_path(out.join("summary.csv")).unwrap();
    let col = csv
        .headers()
        .unwrap()
        .iter()
        .position(|h| h == "too_many_errors")
        .unwrap();
    let values: Vec<String> = csv.records().map(|r| r.unwrap()[col].to_string()).collect();
    assert!(!values.is_empty());
    assert!(
        values.iter().all(|v| v == "true" || v == "false"),
        "{values:?}"
    );
    assert!(values.iter().any(|v| v == "true") && values.iter().any(|v| v == "false"));
}
