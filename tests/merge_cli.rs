//! `merge` of shards: complete splits only, one identity, all or nothing.

mod common;
use common::*;
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
