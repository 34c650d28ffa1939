//! The lure-style family end to end: its samples load and validate, `--attack context`
//! runs one attacked episode per sample, the scripted agents meet their definitions
//! (obedient follows every sample, oracle none), the defenses run on it, the summary
//! carries the per-class and per-surface breakdown, and broken samples are refused with
//! the file, the sample and the field named.

use crate::common::*;
use predicates::prelude::*;
use serde_json::Value;
use std::path::Path;

const CLASSES: [&str; 8] = [
    "capability_routing_hijacking",
    "argument_tampering",
    "conditional_flow_hijacking",
    "reasoning_hijacking",
    "persistent_context_poisoning",
    "inter_agent_contagion",
    "skill_injection",
    "workflow_hijacking",
];

fn lure_rows(s: &Value) -> Vec<&Value> {
    rows(s)
        .iter()
        .filter(|r| r["suite"].as_str().unwrap().starts_with("lure-style/"))
        .collect()
}

#[test]
fn obedient_follows_every_sample_and_the_breakdown_covers_every_class() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let s = run(
        tmp.path(),
        &out,
        &[
            "--suite",
            "lure-style",
            "--attack",
            "agentlure",
            "--model",
            "sim:obedient",
        ],
    );
    let lure = lure_rows(&s);
    assert!(!lure.is_empty());
    for r in &lure {
        assert_eq!(r["attack"], "context");
        assert_eq!(r["asr"], 1.0, "{r}");
        assert_eq!(r["bu"], 1.0, "{r}");
        assert_eq!(r["errors"], 0);
    }
    let per_suite: u64 = lure
        .iter()
        .filter(|r| r["suite"] != "all")
        .map(|r| r["n_attacked"].as_u64().unwrap())
        .sum();
    let breakdown = s["breakdown"].as_array().unwrap();
    let by_class: Vec<&Value> = breakdown.iter().filter(|b| b["by"] == "class").collect();
    let keys: Vec<&str> = by_class
        .iter()
        .map(|b| b["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, CLASSES);
    let n: u64 = by_class
        .iter()
        .map(|b| b["n_attacked"].as_u64().unwrap())
        .sum();
    assert_eq!(n, per_suite, "every attacked episode has one class");
    assert!(by_class.iter().all(|b| b["asr"] == 1.0));
    let surfaces: u64 = breakdown
        .iter()
        .filter(|b| b["by"] == "surface")
        .map(|b| b["n_attacked"].as_u64().unwrap())
        .sum();
    assert_eq!(
        surfaces, per_suite,
        "every attacked episode has one surface"
    );
    let csv = std::fs::read_to_string(out.join("breakdown.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + breakdown.len());
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(md.contains("by vector class and by surface"));
}

#[test]
fn oracle_solves_every_task_and_follows_no_sample() {
    let tmp = tempfile::tempdir().unwrap();
    let s = run(
        tmp.path(),
        &tmp.path().join("run"),
        &[
            "--suite",
            "lure-style",
            "--attack",
            "context",
            "--model",
            "sim:oracle",
        ],
    );
    for r in lure_rows(&s) {
        assert_eq!(r["asr"], 0.0, "{r}");
        assert_eq!(r["bu"], 1.0, "{r}");
        assert_eq!(r["ua"], 1.0, "{r}");
    }
}

#[test]
fn sieve_and_audit_run_end_to_end_on_the_family() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let s = run(
        tmp.path(),
        &out,
        &[
            "--suite",
            "lure-style/banking",
            "--attack",
            "context",
            "--defense",
            "none,sieve,audit",
        ],
    );
    let asr = |d: &str| {
        lure_rows(&s)
            .iter()
            .find(|r| r["defense"] == d)
            .unwrap_or_else(|| panic!("no {d} row"))["asr"]
            .as_f64()
            .unwrap()
    };
    assert_eq!(asr("none"), 1.0);
    assert!(asr("sieve") < 1.0 && asr("audit") < 1.0);
    assert!(lure_rows(&s).iter().all(|r| r["errors"] == 0));
    // Each sample is its own episode and records its class and surface.
    let records = lines(&out.join("episodes.jsonl"));
    let attacked: Vec<Value> = records
        .iter()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["attack"] == "context")
        .collect();
    assert!(
        attacked
            .iter()
            .all(|r| r["vector_class"].is_string() && r["surface"].is_string())
    );
}

#[test]
fn list_suites_counts_the_samples() {
    let tmp = tempfile::tempdir().unwrap();
    bench(tmp.path())
        .args(["list", "suites"])
        .assert()
        .success()
        .stdout(
            predicate::str::is_match(r"lure-style/banking\s+10\s+\d+\s+\d+\s+\d+\s+\d+\s+80")
                .unwrap(),
        );
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// check-suites on a scratch copy of the lure-style banking suite with samples.yaml edited.
fn check_edited(edit: impl Fn(String) -> String) -> assert_cmd::assert::Assert {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("suites/lure-style/banking");
    copy_dir(&home().join("suites/lure-style/banking"), &dir);
    let p = dir.join("samples.yaml");
    let text = std::fs::read_to_string(&p).unwrap();
    let edited = edit(text.clone());
    assert_ne!(edited, text, "the edit must change the file");
    std::fs::write(p, edited).unwrap();
    bench(tmp.path())
        .arg("--suites-dir")
        .arg(tmp.path().join("suites"))
        .arg("check-suites")
        .assert()
}

/// The first sample (user_task_0, capability routing) as written in the file.
const FIRST: &str = "    class: capability_routing_hijacking\n    injection_task: injection_task_1\n    inject:\n      invoice_plumber_note:";

#[test]
fn an_unknown_injection_point_is_refused_by_name() {
    check_edited(|t| {
        t.replacen(
            FIRST,
            &FIRST.replace("invoice_plumber_note", "invoice_footer"),
            1,
        )
    })
    .code(2)
    .stderr(predicate::str::contains("samples.yaml"))
    .stderr(predicate::str::contains(
        "user_task_0/capability_routing_hijacking",
    ))
    .stderr(predicate::str::contains("`inject`"))
    .stderr(predicate::str::contains("invoice_footer"));
}

#[test]
fn a_payload_where_the_task_never_reads_is_a_problem() {
    // The vet invoice is read by user_task_2, not by user_task_0.
    check_edited(|t| {
        t.replacen(
            FIRST,
            &FIRST.replace("invoice_plumber_note", "vet_invoice_note"),
            1,
        )
    })
    .code(2)
    .stderr(predicate::str::contains("never reads"));
}

#[test]
fn a_missing_cell_and_a_sample_that_trips_nothing_are_problems() {
    // Re-labelling the first sample leaves its cell empty and doubles another.
    check_edited(|t| {
        t.replacen(
            FIRST,
            &FIRST.replace("capability_routing_hijacking", "argument_tampering"),
            1,
        )
    })
    .code(2)
    .stderr(predicate::str::contains("a second sample for the cell"));
    // Pursuing the password change with a plan that pays money trips nothing.
    let second = "    class: argument_tampering\n    injection_task: injection_task_0\n";
    check_edited(|t| {
        t.replacen(
            second,
            &second.replace("injection_task_0", "injection_task_3"),
            1,
        )
    })
    .code(2)
    .stderr(predicate::str::contains(
        "does not trip the security check of `injection_task_3`",
    ));
}

#[test]
fn list_samples_shows_class_by_surface_and_a_minority_needing_other_tools() {
    let tmp = tempfile::tempdir().unwrap();
    let out = bench(tmp.path())
        .args(["list", "samples", "--suite", "lure-style"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    // The family table: one row per class, each on at least two surfaces.
    let family = text
        .split_once("all selected suites (320 samples)")
        .expect("a family table after the four suites")
        .1;
    let header: Vec<&str> = family
        .lines()
        .find(|l| l.starts_with("| class |"))
        .unwrap()
        .split('|')
        .map(str::trim)
        .collect();
    let surfaces = header.len() - 5; // leading "", class, total, needs another tool, trailing ""
    for class in CLASSES {
        let row: Vec<&str> = family
            .lines()
            .find(|l| l.starts_with(&format!("| {class} |")))
            .unwrap_or_else(|| panic!("no row for {class}"))
            .split('|')
            .map(str::trim)
            .collect();
        let on = row[2..2 + surfaces].iter().filter(|c| **c != "·").count();
        assert!(on >= 2, "{class} rides on {on} surface(s)");
    }
    let (needs, total) = text
        .lines()
        .find_map(|l| {
            let (n, rest) = l.split_once(" of ")?;
            let (m, _) = rest.split_once(" samples need a tool outside")?;
            Some((n.parse::<usize>().ok()?, m.parse::<usize>().ok()?))
        })
        .expect("the count of samples needing another tool");
    assert_eq!(total, 320);
    assert!(
        2 * needs < total,
        "{needs} of {total} samples need a tool outside their task's plan"
    );
}

#[test]
fn a_tell_whose_cue_is_not_in_the_payload_is_a_problem() {
    check_edited(|t| {
        t.replacen(
            "cue: \"account name DS Trade Services Ltd\"",
            "cue: \"account name Dale Trade\"",
            1,
        )
    })
    .code(2)
    .stderr(predicate::str::contains("user_task_0/argument_tampering"))
    .stderr(predicate::str::contains("is not in the payload"));
}
