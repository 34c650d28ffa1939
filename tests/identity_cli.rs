//! Run identity, exit codes and the results folder's safety, through the binary.

mod common;
use common::*;
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

#[test]
fn seed_at_the_maximum_is_refused_not_silently_empty() {
    let tmp = tempfile::tempdir().unwrap();
    bench(tmp.path())
        .args([
            "run",
            "--suite",
            "banking",
            "--seed",
            "18446744073709551615",
        ])
        .arg("--out")
        .arg(tmp.path().join("o"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--seed"));
    bench(tmp.path())
        .args([
            "run",
            "--suite",
            "banking",
            "--seeds",
            "18446744073709551615",
        ])
        .arg("--out")
        .arg(tmp.path().join("o"))
        .assert()
        .code(2);
}
