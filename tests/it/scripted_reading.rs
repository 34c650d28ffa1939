//! The scripted agent acts on what it is shown (issue 36): output rewrites a model reads
//! through change nothing, deleting the data costs the utility of the tasks that read it,
//! two templates are compared on the same draws, and a restated value is no instruction
//! to a simulated detector. Everything here is simulated (scripted roles); the rewriting
//! plugins are Python scripts, skipped without `python3` (unless SIEVE_BENCH_REQUIRE_TOOLS
//! is set).

use crate::common::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

fn rewrite(mode: &str) -> String {
    format!(
        "exec:python3 {} {mode}",
        home().join("tests/fixtures/plugins/rewrite.py").display()
    )
}

fn episodes(out: &Path) -> Vec<Value> {
    lines(&out.join("episodes.jsonl"))
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

type Outcomes = BTreeMap<(String, String, String), (Value, Value)>;

/// (user task, injection task, attack) → (utility, attack success) of every episode.
fn outcomes(eps: &[Value]) -> Outcomes {
    eps.iter()
        .map(|e| {
            let s = |k: &str| e[k].as_str().unwrap_or("-").to_string();
            (
                (s("user_task"), s("injection_task"), s("attack")),
                (e["utility"].clone(), e["attack_success"].clone()),
            )
        })
        .collect()
}

fn banking_slice(tmp: &Path, dir: &str, defense: &str, extra: &[&str]) -> Vec<Value> {
    let out = tmp.join(dir);
    let mut c = bench(tmp);
    c.args([
        "run",
        "--suite",
        "banking",
        "--user-tasks",
        "user_task_0,user_task_1,user_task_3,user_task_4,user_task_7",
        "--injection-tasks",
        "injection_task_0,injection_task_1,injection_task_4",
        "--model",
        "sim:obedient",
        "--quiet",
        "--defense",
        defense,
    ])
    .args(extra)
    .arg("--out")
    .arg(&out);
    c.assert().success();
    let eps = episodes(&out);
    assert!(
        eps.iter().all(|e| e["error"].is_null()),
        "no errors: {eps:?}"
    );
    eps
}

/// Zero-width spaces or soft hyphens between letters, and a re-wrap at 40 columns that
/// breaks words, keep every word in order as a model reads it: the obedient agent
/// follows and solves exactly as without a defense, episode by episode.
#[test]
fn rewrites_a_model_reads_through_score_as_none() {
    if !tool_present("python3") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let none = outcomes(&banking_slice(tmp.path(), "none", "none", &[]));
    assert!(
        none.values().any(|(_, a)| a == &Value::Bool(true)),
        "the undefended obedient agent is attacked: {none:?}"
    );
    assert!(
        none.values().any(|(u, _)| u == &Value::Bool(true)),
        "and solves tasks: {none:?}"
    );
    for mode in ["--zero-width", "--soft-hyphen", "--rewrap40"] {
        let got = outcomes(&banking_slice(tmp.path(), mode, &rewrite(mode), &[]));
        assert_eq!(got, none, "{mode}");
    }
}

/// Replacing every tool output with `[data omitted]` wins nothing for free: the tasks
/// whose calls or answer use what an output shows lose their utility, clean and
/// attacked alike, because the scripted agent cannot use what it was not shown.
#[test]
fn deleting_every_output_loses_the_utility_of_tasks_that_read_outputs() {
    if !tool_present("python3") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let none = outcomes(&banking_slice(tmp.path(), "none", "none", &[]));
    let omit = outcomes(&banking_slice(tmp.path(), "omit", &rewrite("--omit"), &[]));
    // Every one of these tasks reads a fact (an IBAN, an amount, a date) from an output.
    let solved = |o: &Outcomes, clean: bool| {
        o.iter()
            .filter(|((_, it, _), _)| (it == "-") == clean)
            .filter(|(_, (u, _))| u == &Value::Bool(true))
            .count()
    };
    for clean in [true, false] {
        let (n, d) = (solved(&none, clean), solved(&omit, clean));
        assert!(n > 0, "none solves some ({clean}): {none:?}");
        assert!(
            d * 2 < n,
            "deleting the data keeps {d} of {n} solved (clean: {clean}): {omit:?}"
        );
    }
}

/// A byte-identical copy of a template under another name meets the same draws: against
/// SIEVE (a scripted judge and planner that draw from the episode's seed) it scores
/// exactly what the original scores, episode by episode.
#[test]
fn a_template_copy_under_another_name_scores_as_the_original_against_sieve() {
    let tmp = tempfile::tempdir().unwrap();
    let attacks = tmp.path().join("attacks");
    std::fs::create_dir(&attacks).unwrap();
    for e in std::fs::read_dir(home().join("attacks")).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), attacks.join(e.file_name())).unwrap();
    }
    let original =
        std::fs::read_to_string(home().join("attacks/important_instructions.yaml")).unwrap();
    let copy = original
        .replace("name: important_instructions", "name: copied_instructions")
        .replace("aliases: [important]", "aliases: []");
    std::fs::write(attacks.join("copied_instructions.yaml"), copy).unwrap();
    let out = tmp.path().join("r");
    let mut c = bench(tmp.path());
    c.arg("--attacks-dir").arg(&attacks).args([
        "run",
        "--suite",
        "banking",
        "--attack",
        "important_instructions,copied_instructions",
        "--defense",
        "sieve",
        "--model",
        "sim:p=0.5",
        "--quiet",
        "--out",
    ]);
    c.arg(&out);
    c.assert().success();
    let by_attack = |name: &str| -> BTreeMap<(String, String), (Value, Value)> {
        outcomes(&episodes(&out))
            .into_iter()
            .filter(|((_, it, a), _)| a == name && it != "-")
            .map(|((u, i, _), v)| ((u, i), v))
            .collect()
    };
    let (a, b) = (
        by_attack("important_instructions"),
        by_attack("copied_instructions"),
    );
    assert!(a.len() >= 20, "{a:?}");
    assert_eq!(a, b);
    let s = summary(&out);
    let asr = |name: &str| {
        rows(&s)
            .iter()
            .find(|r| r["attack"] == name && r["defense"] == "sieve")
            .map(|r| r["asr"].clone())
            .unwrap()
    };
    assert_eq!(asr("important_instructions"), asr("copied_instructions"));
}

/// A data-only attack restates a value and instructs nothing: a simulated detector that
/// knows each item's true class (`judge_auc=1`) flags none of its outputs, as a detector
/// that reads meaning would not.
#[test]
fn a_data_only_restatement_is_no_detector_positive() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    run(
        tmp.path(),
        &out,
        &[
            "--suite",
            "dojo-style/banking",
            "--attack",
            "data_only,important_instructions",
            "--defense",
            "pi_detector:judge",
            "--model",
            "sim:obedient,judge_auc=1",
        ],
    );
    let eps = episodes(&out);
    let flagged = |attack: &str| -> (usize, usize) {
        let of: Vec<&Value> = eps
            .iter()
            .filter(|e| e["attack"] == attack && !e["injection_task"].is_null())
            .collect();
        (
            of.iter()
                .filter(|e| e["flagged_outputs"].as_u64().unwrap() > 0)
                .count(),
            of.len(),
        )
    };
    let (d, n) = flagged("data_only");
    assert!(n >= 10, "banking derives data-only cases");
    assert_eq!(d, 0, "{d} of {n} data-only episodes flagged");
    // The instruction template is caught: the detector works.
    let (i, m) = flagged("important_instructions");
    assert!(i * 2 > m, "{i} of {m}");
}

/// A replacement that is not text, or that grows an output past the size cap, errors the
/// episode naming the hook: never a silent win.
#[test]
fn a_replacement_that_is_not_text_or_too_large_errors_naming_the_hook() {
    if !tool_present("python3") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    for (mode, needle) in [("--nul", "is not text"), ("--grow", "-byte cap")] {
        let out = tmp.path().join(mode);
        let mut c = bench(tmp.path());
        c.args([
            "run",
            "--suite",
            "banking",
            "--user-tasks",
            "user_task_0",
            "--attack",
            "none",
            "--quiet",
            "--defense",
            &rewrite(mode),
            "--out",
        ])
        .arg(&out);
        c.assert().code(3);
        for e in episodes(&out) {
            let err = e["error"].as_str().unwrap_or_else(|| panic!("{mode}: {e}"));
            assert!(err.contains("at hook `tool_output`"), "{err}");
            assert!(err.contains(needle), "{err}");
        }
    }
}
