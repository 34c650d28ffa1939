//! The dual LLM under the scripted model (issue 36): the privileged agent passes the
//! values the scripted quarantined reader extracted by reference (`$VAR1.iban`), so a
//! task that only reads values and passes them on is done as without a defense, and one
//! that works a value out of data the agent never reads is not.

use crate::common::*;
use serde_json::Value;
use std::collections::BTreeMap;

#[test]
fn the_privileged_agent_passes_the_values_it_never_reads_by_reference() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    bench(tmp.path())
        .args([
            "run",
            "--suite",
            "banking",
            "--attack",
            "important",
            "--injection-tasks",
            "injection_task_0",
            "--defense",
            "none,dual_llm",
            "--model",
            "sim:obedient",
            "--quiet",
            "--out",
        ])
        .arg(&out)
        .assert()
        .success();
    let suite = sieve_bench::suite::load(&home().join("suites/dojo-style/banking")).unwrap();
    // A task with no `derived` note passes on values as the data writes them; one with
    // a note works a value out (a sum, a share, a date from "Friday").
    let worked_out: BTreeMap<String, bool> = suite
        .user_tasks
        .iter()
        .map(|t| (t.id.to_string(), !t.derived.is_empty()))
        .collect();
    let passing_on = worked_out.values().filter(|w| !**w).count();
    assert!(passing_on > 0 && passing_on < worked_out.len());
    // Clean episodes: user task → (solved, the defense's notes), per defense.
    let mut clean: BTreeMap<(String, String), (bool, Value)> = BTreeMap::new();
    for line in lines(&out.join("episodes.jsonl")) {
        let e: Value = serde_json::from_str(&line).unwrap();
        assert!(e["error"].is_null(), "{e}");
        if e["injection_task"].is_null() {
            clean.insert(
                (
                    e["defense"].as_str().unwrap().to_string(),
                    e["user_task"].as_str().unwrap().to_string(),
                ),
                (e["utility"] == true, e["notes"].clone()),
            );
        }
    }
    assert_eq!(clean.len(), 2 * worked_out.len());
    let solved = |d: &str, t: &str| clean[&(d.to_string(), t.to_string())].0;
    for (task, works_out) in &worked_out {
        if *works_out {
            // The privileged model never computes on values it does not see.
            assert!(!solved("dual_llm", task), "{task} works a value out");
        } else if solved("none", task) {
            assert!(solved("dual_llm", task), "{task} only passes values on");
        }
    }
    // So BU keeps at least none's BU times the share of tasks that work nothing out.
    let s = summary(&out);
    let bu = |d: &str| {
        rows(&s).iter().find(|r| r["defense"] == d).unwrap()["bu"]
            .as_f64()
            .unwrap()
    };
    let share = passing_on as f64 / worked_out.len() as f64;
    assert!(
        bu("dual_llm") >= bu("none") * share - 1e-9,
        "{} < {} × {share}",
        bu("dual_llm"),
        bu("none")
    );
    // The records show the references filled in, in calls and in answers, and none unknown.
    let notes: Vec<&Value> = clean
        .iter()
        .filter(|((d, _), _)| d == "dual_llm")
        .map(|(_, (_, n))| n)
        .collect();
    let total = |k: &str| notes.iter().map(|n| n[k].as_u64().unwrap()).sum::<u64>();
    assert!(total("substitutions") > total("answer_substitutions"));
    assert!(total("answer_substitutions") > 0);
    assert!(notes.iter().all(|n| n["errors"] == serde_json::json!([])));
}
