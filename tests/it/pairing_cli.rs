//! Comparisons across settings are paired: an episode's random draws depend on its suite,
//! task pair, attack, agent model and seed index only, so a defense meets the same draws
//! whatever other defense runs beside it and whatever quality is given to a scripted role
//! it never consults.

use crate::common::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// Each episode's outcome by its place in the matrix (the key without the model, which
/// names the knobs that differ between the runs compared).
fn outcomes(out: &Path, defense: &str) -> Outcomes {
    let mut by = BTreeMap::new();
    for line in lines(&out.join("episodes.jsonl")) {
        let r: Value = serde_json::from_str(&line).unwrap();
        if r["defense"] != defense {
            continue;
        }
        let place = format!(
            "{}|{}|{}|{}|{}",
            r["suite"], r["user_task"], r["injection_task"], r["attack"], r["seed"]
        );
        let outcome = (
            r["utility"].as_bool().unwrap(),
            r["attack_success"].as_bool(),
            r["blocked"].as_u64().unwrap(),
        );
        assert!(r["error"].is_null(), "{line}");
        by.insert(place, outcome);
    }
    assert!(!by.is_empty(), "{defense} ran in {}", out.display());
    by
}

type Outcomes = BTreeMap<String, (bool, Option<bool>, u64)>;

/// Asserts two runs gave every episode the same outcome, naming the first few that differ.
fn assert_same(a: &Outcomes, b: &Outcomes, what: &str) {
    assert_eq!(
        a.keys().collect::<Vec<_>>(),
        b.keys().collect::<Vec<_>>(),
        "{what}: the same episodes ran"
    );
    let differ: Vec<String> = a
        .iter()
        .filter(|(k, o)| b[*k] != **o)
        .map(|(k, o)| format!("{k}: {o:?} vs {:?}", b[k]))
        .collect();
    assert!(
        differ.is_empty(),
        "{what}: {} of {} episodes differ, e.g. {:?}",
        differ.len(),
        a.len(),
        &differ[..differ.len().min(3)]
    );
}

fn run_with(tmp: &Path, name: &str, model: &str, defense: &str, extra: &[&str]) -> Value {
    let mut args = vec![
        "--suite",
        "banking",
        "--attack",
        "important",
        "--defense",
        defense,
        "--model",
        model,
    ];
    args.extend_from_slice(extra);
    run(tmp, &tmp.join(name), &args)
}

#[test]
fn layer1_only_meets_the_same_draws_whatever_the_judge_it_never_asks() {
    let tmp = tempfile::tempdir().unwrap();
    // layer1-only blocks every deviation without asking the judge; only the planner's
    // draws (same knobs in both runs) can move it.
    let d = "sieve:layer1-only";
    run_with(tmp.path(), "a", "sim:obedient,judge_auc=0.6", d, &[]);
    run_with(tmp.path(), "b", "sim:obedient,judge_auc=0.95", d, &[]);
    let (a, b) = (
        outcomes(&tmp.path().join("a"), d),
        outcomes(&tmp.path().join("b"), d),
    );
    assert_same(&a, &b, "layer1-only at judge_auc 0.6 and 0.95");
    // The planner does miss nodes here, so the runs are not trivially perfect.
    assert!(a.values().any(|o| !o.0), "some episode loses utility");
}

#[test]
fn a_defenses_clean_episodes_do_not_depend_on_the_agents_obedience() {
    let tmp = tempfile::tempdir().unwrap();
    // On clean episodes the obedience knob has nothing to act on; audit's judge draws
    // must be the same under both profiles.
    run_with(tmp.path(), "o", "sim:oracle", "audit", &[]);
    run_with(tmp.path(), "b", "sim:obedient", "audit", &[]);
    let clean = |m: Outcomes| {
        m.into_iter()
            .filter(|(_, o)| o.1.is_none())
            .collect::<BTreeMap<_, _>>()
    };
    let (o, b) = (
        clean(outcomes(&tmp.path().join("o"), "audit")),
        clean(outcomes(&tmp.path().join("b"), "audit")),
    );
    assert!(!o.is_empty());
    assert_same(
        &o,
        &b,
        "audit's clean episodes under sim:oracle and sim:obedient",
    );
    assert!(
        o.values().any(|x| x.2 > 0),
        "the judge blocks some benign call, so the draws matter"
    );
}

#[test]
fn a_defense_beside_others_meets_the_draws_it_meets_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let m = "sim:p=0.5";
    run_with(tmp.path(), "alone", m, "audit", &[]);
    run_with(tmp.path(), "beside", m, "none,audit,sieve", &[]);
    assert_same(
        &outcomes(&tmp.path().join("alone"), "audit"),
        &outcomes(&tmp.path().join("beside"), "audit"),
        "audit alone and beside none and sieve",
    );
    // A p=0.3 agent follows in a subset of the episodes a p=0.5 one does (one uniform
    // draw per episode compared with p), so undefended ASR is monotone in p, pair by pair.
    run_with(tmp.path(), "p3", "sim:p=0.3", "none", &[]);
    let (lo, hi) = (
        outcomes(&tmp.path().join("p3"), "none"),
        outcomes(&tmp.path().join("beside"), "none"),
    );
    for (k, o) in &lo {
        if o.1 == Some(true) {
            assert_eq!(hi[k].1, Some(true), "{k} follows at p=0.3 but not at p=0.5");
        }
    }
}
