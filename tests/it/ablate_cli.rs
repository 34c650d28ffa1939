//! `ablate` end to end on the scripted agent: the comparisons the SIEVE issue asks the
//! table to show, read from the files it writes.

use crate::common::*;
use predicates::prelude::*;
use serde_json::Value;

/// The headline row of a defense (without the tasks written to defeat SIEVE).
fn row<'a>(rows: &'a [Value], defense: &str) -> &'a Value {
    rows.iter()
        .find(|r| r["defense"] == defense && r["attack"] == "important_instructions")
        .unwrap_or_else(|| panic!("no row for {defense}"))
}

/// The row of the provenance-bypass tasks.
fn bypass_row<'a>(rows: &'a [Value], defense: &str) -> &'a Value {
    rows.iter()
        .find(|r| {
            r["defense"] == defense && r["attack"] == "important_instructions+provenance_bypass"
        })
        .unwrap_or_else(|| panic!("no bypass row for {defense}"))
}

#[test]
fn ablation_table_runs_and_shows_what_sieve_does_and_misses() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("abl");
    let printed = bench(tmp.path())
        .env_remove("COLUMNS")
        .args([
            "ablate",
            "--suite",
            "banking",
            "--attack",
            "important",
            "--out",
        ])
        .arg(&out)
        .assert()
        .success()
        .stdout(predicate::str::contains("SIMULATED"))
        .stdout(predicate::str::contains("sieve:no-causal"))
        .get_output()
        .stdout
        .clone();
    // Piped, with no COLUMNS, the table is fitted to 100 columns like every table.
    let printed = String::from_utf8(printed).unwrap();
    for line in printed.lines() {
        assert!(line.chars().count() <= 100, "wider than 100: {line:?}");
    }
    for f in ["ablation.csv", "ablation.json", "ablation.md"] {
        assert!(out.join(f).is_file(), "{f} written");
    }
    let table: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("ablation.json")).unwrap()).unwrap();
    let rows = table["rows"].as_array().unwrap();
    // Every row names its scripted roles: `none` only the agent, `sieve` its scripted
    // planner and judge with their stated quality (not "oracle": they are not the key).
    assert_eq!(row(rows, "none")["scripted"], "scripted agent");
    let sieve = row(rows, "sieve")["scripted"].as_str().unwrap();
    assert!(sieve.contains("scripted judge (judge_auc="), "{sieve}");
    assert!(
        sieve.contains("scripted planner (planner_recall="),
        "{sieve}"
    );
    assert!(!sieve.contains("oracle"), "{sieve}");
    // ablation.csv is the table's grid written as every CSV: each figure a number (the
    // paired ASR difference with its interval, the counts behind every rate).
    let csv = std::fs::read_to_string(out.join("ablation.csv")).unwrap();
    let mut lines = csv.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    for f in [
        "suite",
        "scripted_roles",
        "asr",
        "d_asr",
        "d_asr_paired",
        "d_asr_paired_lo",
        "d_asr_paired_hi",
        "d_asr_paired_p",
        "n_clean",
        "n_attacked",
        "errors",
        "episodes",
        "success_via_layer1",
        "success_via_adjudicator",
        "success_unchecked",
        "n_bypass_tagged",
        "bypass_tagged_success",
    ] {
        assert!(head.contains(&f), "no {f} in {head:?}");
    }
    let at = |f: &str| head.iter().position(|h| *h == f).unwrap();
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let mut paired = 0;
    for rec in reader.records() {
        let rec = rec.unwrap();
        let num = |f: &str| rec[at(f)].parse::<f64>().ok();
        assert!(
            num("n_attacked").is_some() && num("episodes").is_some(),
            "{rec:?}"
        );
        if let (Some(lo), Some(d), Some(hi)) = (
            num("d_asr_paired_lo"),
            num("d_asr_paired"),
            num("d_asr_paired_hi"),
        ) {
            assert!(lo <= d + 1e-12 && d <= hi + 1e-12, "{rec:?}");
            paired += 1;
        }
    }
    assert!(paired > 0, "no row has a paired difference: {csv}");
    for d in [
        "none",
        "audit",
        "sieve",
        "sieve:no-sem",
        "sieve:no-causal",
        "sieve:no-prov",
        "sieve:no-risk",
        "sieve:layer1-only",
        "sieve:no-graph-update",
    ] {
        row(rows, d);
    }
    let (none, audit, sieve) = (row(rows, "none"), row(rows, "audit"), row(rows, "sieve"));
    let f = |r: &Value, k: &str| r[k].as_f64().unwrap();
    assert!(f(sieve, "asr") < f(none, "asr"), "sieve lowers ASR");
    assert!(
        f(audit, "judge_calls_per_episode") > f(sieve, "judge_calls_per_episode"),
        "audit judges more"
    );
    assert_eq!(
        f(row(rows, "sieve:layer1-only"), "judge_calls_per_episode"),
        0.0,
        "layer1-only never asks the judge"
    );
    assert_eq!(sieve["n_bypass_tagged"], 0, "headline rows leave them out");
    let bypass = bypass_row(rows, "sieve");
    assert!(
        bypass["n_bypass_tagged"].as_u64().unwrap() > 0,
        "the suite has designed bypass pairs"
    );
    assert!(
        bypass["bypass_tagged_success"].as_u64().unwrap() > 0,
        "and the bypass is measured, not hidden"
    );
    assert!(f(sieve, "d_asr").abs() < 1e-12, "full is the reference row");
    assert!((f(none, "d_asr") - (f(none, "asr") - f(sieve, "asr"))).abs() < 1e-12);
    // Every defense has its headline row and its bypass row, nothing else.
    let defenses: std::collections::BTreeSet<&str> = rows
        .iter()
        .map(|r| r["defense"].as_str().unwrap())
        .collect();
    assert_eq!(rows.len(), 2 * defenses.len(), "{defenses:?}");
    assert!(
        bypass["success_via_layer1"].as_u64().unwrap() > 0,
        "a bypass success is attributed to layer 1"
    );
    assert!(
        bypass_row(rows, "none")["success_via_layer1"].is_null(),
        "none has no layer 1 to attribute to"
    );
    let md = std::fs::read_to_string(out.join("ablation.md")).unwrap();
    assert!(
        md.contains("sieve:no-causal") && md.contains("SIMULATED"),
        "{md}"
    );
}
