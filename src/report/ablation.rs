//! The ablation table's one definition: one row per attack, model and defense (SIEVE's
//! variants, `none`, `audit`), each figure beside its difference from that model's
//! `sieve` on the same episodes and the paired test of the ASR difference. `ablate`
//! prints and writes it (one model); `report` renders it in every format, for every
//! model its records hold (a model is compared with itself only).

use crate::aggregate::metrics::Row;
use crate::aggregate::pairs::{Pair, PairTable};
use crate::report::columns::{Better, Column, Grid, Show, Value};
use serde::Serialize;
use sieve_record::{ErrorPolicy, ErrorsAs};

/// The defense name of the reference row.
pub const REFERENCE: &str = "sieve";

/// One row of the ablation table. Rates are fractions in [0,1]; `d_*` = this − `sieve`
/// of the same model.
#[derive(Clone, Debug, Serialize)]
pub struct AblationRow {
    pub suite: String,
    pub attack: String,
    /// The row holds its attack's provenance-bypass tasks (as the summary row's
    /// `bypass`); `attack` is their row's name. Not written: `ablation.json` keeps its form.
    #[serde(skip)]
    pub bypass: bool,
    pub defense: String,
    /// The agent's model of the row (the summary row's). Not written: `ablation.json`
    /// is one model's, named once by [`Ablation::model`].
    #[serde(skip)]
    pub model: String,
    /// The roles no LLM played in this row, and what each knew.
    pub scripted_roles: Option<sieve_record::ScriptedRoles>,
    /// Their labels in one line (`scripted agent; scripted judge (judge_auc=0.9)`).
    pub scripted: String,
    /// When this variant's difference from `sieve` is fixed by a scripted role or by
    /// construction rather than measured, why (`defense::sieve::config::scripted_difference`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decided: Option<String>,
    pub n_clean: u64,
    pub n_attacked: u64,
    /// Errored episodes, outside the rates, of `episodes` in all.
    pub errors: u64,
    pub episodes: u64,
    pub too_many_errors: bool,
    /// Paired comparisons with `sieve` over the same episodes (this − sieve): ASR, UA, BU
    /// differences with 95% intervals and exact McNemar p-values.
    pub vs_reference: Vec<crate::aggregate::metrics::Paired>,
    pub asr: Option<f64>,
    pub w_asr: Option<f64>,
    pub bu: Option<f64>,
    pub ua: Option<f64>,
    pub eds: Option<f64>,
    pub escalation_rate: Option<f64>,
    pub judge_calls_per_episode: f64,
    pub tokens_per_episode: f64,
    pub calls_per_episode: f64,
    pub success_via_layer1: Option<u64>,
    pub success_via_adjudicator: Option<u64>,
    pub success_unchecked: Option<u64>,
    pub n_bypass_tagged: u64,
    pub bypass_tagged_success: u64,
    pub d_asr: Option<f64>,
    pub d_w_asr: Option<f64>,
    pub d_bu: Option<f64>,
    pub d_ua: Option<f64>,
    pub d_eds: Option<f64>,
    pub d_escalation_rate: Option<f64>,
    pub d_judge_calls_per_episode: Option<f64>,
    pub d_tokens_per_episode: Option<f64>,
    pub d_calls_per_episode: Option<f64>,
}

/// The whole ablation, as written to `ablation.json`.
#[derive(Clone, Debug, Serialize)]
pub struct Ablation {
    pub simulated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The agent's model (`ablate` runs one); a report of several models names them
    /// all, comma-separated, and each row carries its own.
    pub model: String,
    pub rows: Vec<AblationRow>,
    pub footnotes: Vec<String>,
}

pub const FOOTNOTES: &[&str] = &[
    "One row per defense on the same episodes; Δ = difference from `sieve` (the full variant) of the same model, in percentage points for rates; p = exact McNemar p-value of the ASR difference (sign test over clusters of repeats).",
    "Esc % = proposed calls sent to the judge / proposed calls. Judge, Tok and Calls are per episode (clean and attacked).",
    "Err = errored episodes / all episodes (outside the rates; `!` = above --max-error-rate). Δ ASR paired: the difference over the same episodes, with its 95% interval (cluster-robust) where intervals are shown.",
    "Succ L1 / Adj / Unchk = successful attacks whose harmful call (the one whose effect the security check saw) passed layer 1 (provenance bypass) / was approved by the adjudicator / no call did it. Rows <attack>+provenance_bypass hold the tasks written to defeat SIEVE, left out of the headline rows; Bypass = successes / episodes on the pairs those tasks were designed for.",
    "Variants: no-X drops a term of S_align and renormalises the rest; layer1-only blocks every deviation; no-graph-update does not add approved calls to the graph; dynamic-prov takes S_prov from the per-tool trust table; sieve@<setting>=<x> is a sweep point.",
];

/// The table's footnotes: [`FOOTNOTES`], then one line per variant row whose difference
/// from `sieve` the simulation or the construction decides (the row's `decided`), then
/// one per model whose rows have no `sieve` row to be compared with.
pub fn footnotes(rows: &[AblationRow]) -> Vec<String> {
    let mut out: Vec<String> = FOOTNOTES.iter().map(|s| s.to_string()).collect();
    let mut seen: Vec<&str> = Vec::new();
    for r in rows {
        if let Some(why) = &r.decided
            && !seen.contains(&r.defense.as_str())
        {
            seen.push(&r.defense);
            out.push(format!("{}: not measured, {why}.", r.defense));
        }
    }
    let mut unreferenced: Vec<(&str, Vec<&str>)> = Vec::new();
    for r in rows.iter().filter(|r| !has_reference(rows, r)) {
        match unreferenced.iter_mut().find(|(m, _)| *m == r.model) {
            Some((_, attacks)) if attacks.contains(&r.attack.as_str()) => {}
            Some((_, attacks)) => attacks.push(&r.attack),
            None => unreferenced.push((&r.model, vec![&r.attack])),
        }
    }
    for (model, attacks) in unreferenced {
        let all = rows
            .iter()
            .filter(|r| r.model == model)
            .all(|r| attacks.contains(&r.attack.as_str()));
        let under = if all {
            String::new()
        } else {
            format!(" under {}", attacks.join(", "))
        };
        out.push(format!(
            "{model}: no Δ or paired p{under}, since this model has no `{REFERENCE}` row there to compare with (a model is compared with its own `{REFERENCE}` only)."
        ));
    }
    out
}

/// Whether `row`'s attack and model have a `sieve` row among `rows`.
fn has_reference(rows: &[AblationRow], row: &AblationRow) -> bool {
    rows.iter()
        .any(|r| r.defense == REFERENCE && r.attack == row.attack && r.model == row.model)
}

/// `a - b`, with float noise from different summation orders flushed to 0.
fn diff(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    let d = a? - b?;
    Some(if d.abs() < 1e-9 { 0.0 } else { d })
}

/// Builds the ablation rows from a run's summary rows: per attack and model (in the
/// order they come), the aggregate suite row (`all` when several suites ran), one per
/// defense in `order`, each differenced against the `sieve` row of its attack and model.
pub fn rows(summary_rows: &[Row], order: &[String]) -> Vec<AblationRow> {
    let multi = summary_rows
        .iter()
        .any(|r| r.suite == crate::aggregate::metrics::ALL_SUITES);
    let picked: Vec<&Row> = summary_rows
        .iter()
        .filter(|r| !multi || r.suite == crate::aggregate::metrics::ALL_SUITES)
        .collect();
    let mut cells: Vec<(&str, &str)> = Vec::new();
    for r in &picked {
        let cell = (r.attack.as_str(), r.model.as_str());
        if !cells.contains(&cell) {
            cells.push(cell);
        }
    }
    let mut defenses: Vec<&String> = Vec::new();
    for d in order {
        if !defenses.contains(&d) {
            defenses.push(d);
        }
    }
    let mut out = Vec::new();
    for (attack, model) in cells {
        let of = |d: &str| {
            picked
                .iter()
                .find(|r| r.attack == attack && r.model == model && r.defense == d)
                .copied()
        };
        let reference = of(REFERENCE);
        for d in &defenses {
            let Some(r) = of(d) else { continue };
            let f = |pick: fn(&Row) -> Option<f64>| reference.and_then(|x| diff(pick(r), pick(x)));
            out.push(AblationRow {
                suite: r.suite.clone(),
                attack: r.attack.clone(),
                bypass: r.bypass,
                defense: r.defense.clone(),
                model: r.model.clone(),
                scripted_roles: r.scripted_roles.clone(),
                scripted: crate::aggregate::metrics::roles_text(r),
                decided: crate::defense::sieve::config::scripted_difference(
                    &crate::defense::DefenseSpec::parse(&r.defense),
                    r.scripted_roles.as_ref(),
                ),
                n_clean: r.n_clean,
                n_attacked: r.n_attacked,
                errors: r.errors,
                episodes: r.episodes,
                too_many_errors: r.too_many_errors,
                vs_reference: Vec::new(),
                asr: r.asr,
                w_asr: r.w_asr,
                bu: r.bu,
                ua: r.ua,
                eds: r.eds,
                escalation_rate: r.escalation_rate,
                judge_calls_per_episode: r.judge_calls_per_episode,
                tokens_per_episode: r.tokens_per_episode,
                calls_per_episode: r.calls_per_episode,
                success_via_layer1: r.success_via_layer1,
                success_via_adjudicator: r.success_via_adjudicator,
                success_unchecked: r.success_unchecked,
                n_bypass_tagged: r.n_bypass_tagged,
                bypass_tagged_success: r.bypass_tagged_success,
                d_asr: f(|r| r.asr),
                d_w_asr: f(|r| r.w_asr),
                d_bu: f(|r| r.bu),
                d_ua: f(|r| r.ua),
                d_eds: f(|r| r.eds),
                d_escalation_rate: f(|r| r.escalation_rate),
                d_judge_calls_per_episode: f(|r| Some(r.judge_calls_per_episode)),
                d_tokens_per_episode: f(|r| Some(r.tokens_per_episode)),
                d_calls_per_episode: f(|r| Some(r.calls_per_episode)),
            });
        }
    }
    out
}

/// A rate of a row, or its difference from the reference (missing on the reference).
type Pick = fn(&AblationRow) -> (Option<f64>, Option<f64>);

/// A figure column and its `Δ` column beside it; `decimals` of a figure, `None` for a
/// rate.
fn with_delta<'a>(
    id: &str,
    title: &str,
    doc: &str,
    show: Show,
    better: Better,
    decimals: Option<usize>,
    pick: Pick,
) -> [Column<'a, AblationRow>; 2] {
    // `None`: a rate, one decimal in percentage points.
    let rate = decimals.is_none();
    let decimals = decimals.unwrap_or(1);
    let value = move |r: &AblationRow| {
        let v = pick(r).0;
        if rate {
            Value::rate(v, None)
        } else {
            Value::num(v, decimals)
        }
    };
    [
        Column::figure(id, title, doc, show, value).better(better),
        Column::figure(
            format!("d_{id}"),
            "Δ",
            format!(
                "{title} of the row − that of `sieve` on the same episodes{}.",
                if rate { ", percentage points" } else { "" }
            ),
            show,
            move |r: &AblationRow| match pick(r).1 {
                Some(v) if r.defense != REFERENCE => Value::Delta {
                    v,
                    decimals,
                    rate,
                    ci: None,
                },
                _ => Value::Missing,
            },
        ),
    ]
}

/// A count column of the ablation (missing where the row has no such count).
fn count<'a>(
    id: &str,
    title: &str,
    doc: &str,
    show: Show,
    get: fn(&AblationRow) -> Option<u64>,
) -> Column<'a, AblationRow> {
    Column::figure(id, title, doc, show, move |r: &AblationRow| {
        get(r).map_or(Value::Missing, Value::Count)
    })
}

/// The ablation's columns: the essentials with their difference from `sieve` and the
/// paired test of the ASR difference; costs and the attribution when there is room; in
/// files also what identifies the row and the counts behind its rates, so
/// `ablation.csv` holds every figure as a number. With `several_models` the model is a
/// key of the table, before the defense; else it is said once, above the table.
fn columns<'a>(several_models: bool, simulated: bool) -> Vec<Column<'a, AblationRow>> {
    let model = |show: Show| {
        Column::figure(
            "model",
            "Model",
            "The agent's model of the row.",
            show,
            |r: &AblationRow| Value::Text(r.model.clone()),
        )
    };
    let mut out = vec![
        Column::figure(
            "suite",
            "Suite",
            "The suite (`all`: every suite of the run pooled).",
            Show::File,
            |r: &AblationRow| Value::Text(r.suite.clone()),
        ),
        Column::key("attack", "Attack", "The attack.", |r: &AblationRow| {
            r.attack.clone()
        }),
    ];
    if several_models {
        out.push(model(Show::Key));
    }
    out.push(Column::key(
        "defense",
        "Defense",
        "The defense or SIEVE variant.",
        |r: &AblationRow| r.defense.clone(),
    ));
    if !several_models {
        out.push(model(Show::File));
    }
    out.extend([
        Column::figure(
            "simulated",
            "Simulated",
            "Whether a scripted role played any part of the run.",
            Show::File,
            move |_: &AblationRow| Value::Flag(simulated),
        ),
        Column::figure(
            "scripted_roles",
            "Scripted roles",
            "The roles no LLM played in this row, and how.",
            Show::File,
            |r: &AblationRow| Value::Text(r.scripted.clone()),
        ),
    ]);
    out.extend(with_delta(
        "asr",
        "ASR %",
        "Attack success rate.",
        Show::Default,
        Better::Lower,
        None,
        |r| (r.asr, r.d_asr),
    ));
    let paired = |r: &AblationRow| r.vs_reference.iter().find(|p| p.metric == "asr").cloned();
    out.push(Column::figure(
        "d_asr_paired_p",
        "p",
        "Exact McNemar p-value of the ASR difference from `sieve` over the same episodes.",
        Show::Default,
        move |r: &AblationRow| paired(r).map_or(Value::Missing, |p| Value::P(p.p_value)),
    ));
    out.push(
        Column::figure(
            "d_asr_paired",
            "Δ ASR paired",
            "The ASR difference from `sieve` paired over the same episodes, with its 95% interval (cluster-robust), percentage points.",
            Show::Extra,
            move |r: &AblationRow| {
                paired(r).map_or(Value::Missing, |p| Value::Delta {
                    v: p.diff,
                    decimals: 1,
                    rate: true,
                    ci: Some(p.ci),
                })
            },
        )
        .with_interval(),
    );
    out.extend(with_delta(
        "ua",
        "UA %",
        "Utility under attack.",
        Show::Default,
        Better::Higher,
        None,
        |r| (r.ua, r.d_ua),
    ));
    out.extend(with_delta(
        "bu",
        "BU %",
        "Benign utility.",
        Show::Default,
        Better::Higher,
        None,
        |r| (r.bu, r.d_bu),
    ));
    out.extend(with_delta(
        "escalation_rate",
        "Esc %",
        "Proposed calls sent to the judge ÷ proposed calls.",
        Show::Default,
        Better::Lower,
        None,
        |r| (r.escalation_rate, r.d_escalation_rate),
    ));
    out.extend(with_delta(
        "judge_calls_per_episode",
        "Judge/ep",
        "Judge calls per episode.",
        Show::Default,
        Better::Lower,
        Some(2),
        |r| (Some(r.judge_calls_per_episode), r.d_judge_calls_per_episode),
    ));
    out.extend(with_delta(
        "w_asr",
        "W-ASR %",
        "Severity-weighted ASR.",
        Show::Extra,
        Better::Lower,
        None,
        |r| (r.w_asr, r.d_w_asr),
    ));
    out.extend(with_delta(
        "eds",
        "EDS %",
        "Effective defense score.",
        Show::Extra,
        Better::Higher,
        None,
        |r| (r.eds, r.d_eds),
    ));
    out.extend(with_delta(
        "tokens_per_episode",
        "Tok/ep",
        "Tokens per episode.",
        Show::Extra,
        Better::Lower,
        Some(0),
        |r| (Some(r.tokens_per_episode), r.d_tokens_per_episode),
    ));
    out.extend(with_delta(
        "calls_per_episode",
        "Calls/ep",
        "API calls per episode.",
        Show::Extra,
        Better::Lower,
        Some(1),
        |r| (Some(r.calls_per_episode), r.d_calls_per_episode),
    ));
    out.push(count(
        "n_clean",
        "n clean",
        "Clean episodes.",
        Show::Extra,
        |r| Some(r.n_clean),
    ));
    out.push(count(
        "n_attacked",
        "n att",
        "Attacked episodes.",
        Show::Extra,
        |r| Some(r.n_attacked),
    ));
    out.push(Column::figure(
        "error_rate",
        "Err",
        "Errored episodes of all episodes.",
        Show::Extra,
        |r: &AblationRow| Value::Part {
            k: r.errors,
            n: r.episodes,
        },
    ));
    out.push(count(
        "errors",
        "Errors",
        "Errored episodes.",
        Show::File,
        |r| Some(r.errors),
    ));
    out.push(count(
        "episodes",
        "Episodes",
        "Episodes of the row, errored ones included.",
        Show::File,
        |r| Some(r.episodes),
    ));
    out.push(count(
        "success_via_layer1",
        "Succ L1",
        "Successful attacks whose harmful call passed layer 1.",
        Show::Extra,
        |r| r.success_via_layer1,
    ));
    out.push(count(
        "success_via_adjudicator",
        "Succ Adj",
        "Successful attacks whose harmful call the adjudicator approved.",
        Show::Extra,
        |r| r.success_via_adjudicator,
    ));
    out.push(count(
        "success_unchecked",
        "Succ Unchk",
        "Successful attacks no checked call carried out.",
        Show::Extra,
        |r| r.success_unchecked,
    ));
    out.push(Column::figure(
        "bypass",
        "Bypass",
        "Successes of the provenance-bypass tasks on the pairs they were designed for.",
        Show::Extra,
        |r: &AblationRow| {
            if r.n_bypass_tagged == 0 {
                Value::Missing
            } else {
                Value::Part {
                    k: r.bypass_tagged_success,
                    n: r.n_bypass_tagged,
                }
            }
        },
    ));
    out.push(count(
        "n_bypass_tagged",
        "Bypass n",
        "Episodes on the pairs the provenance-bypass tasks were designed for.",
        Show::File,
        |r| Some(r.n_bypass_tagged),
    ));
    out.push(count(
        "bypass_tagged_success",
        "Bypass k",
        "Successes among them.",
        Show::File,
        |r| Some(r.bypass_tagged_success),
    ));
    out.push(Column::too_many_errors(|r: &AblationRow| r.too_many_errors));
    out
}

/// The ablation as a grid: one row per attack, model and defense, the best per attack
/// and model marked. One model is named above the table; several are a key column.
pub fn grid(a: &Ablation) -> Grid {
    let several_models = a.rows.iter().any(|r| r.model != a.rows[0].model);
    let mut g = Grid::build(
        "ablate",
        "SIEVE ablation",
        columns(several_models, a.simulated),
        &a.rows,
        |r| format!("{}\u{1f}{}", r.attack, r.model),
    );
    g.notes.extend(a.note.clone());
    if !several_models {
        g.notes.push(format!(
            "model: {}{}",
            a.model,
            if a.simulated { " (simulated)" } else { "" }
        ));
    }
    g.footnotes = a.footnotes.clone();
    g.in_order = true;
    g
}

/// Fills each row's paired comparisons with its model's `sieve` over the same episodes,
/// under the error convention `errors_as` gives for the two rows' episodes; a row whose
/// model has no `sieve` row under its attack gets none.
pub fn pair_with_reference(
    rows: &mut [AblationRow],
    records: &PairTable,
    errors_as: impl Fn(&[Pair<'_>], &[Pair<'_>]) -> ErrorsAs,
) {
    let referenced: Vec<bool> = rows.iter().map(|r| has_reference(rows, r)).collect();
    for (r, referenced) in rows.iter_mut().zip(referenced) {
        // Within the row's model only: a model is never paired with another's episodes.
        let of = |d: &str| records.row(&r.suite, &r.attack, d, Some(&r.model));
        if referenced && r.defense != REFERENCE {
            let (base, new) = (of(REFERENCE), of(&r.defense));
            r.vs_reference =
                crate::aggregate::metrics::paired_all(&base, &new, errors_as(&base, &new));
        }
    }
}

/// The report's ablation table, as `ablate` prints it, when a model's records hold
/// several SIEVE variants (`per_defense`: the rows of each defense and model, every suite
/// and attack pooled; `summary_rows`: the report's summary rows): each figure beside its difference from that model's `sieve`, and with
/// `pairs` (one run's pair table and error policy) the paired p of the ASR difference
/// over the same episodes (a report of `runs` runs has none when they are several).
pub fn report_table(
    summary_rows: &[Row],
    per_defense: &[Row],
    simulated: bool,
    pairs: Option<(&PairTable, ErrorPolicy)>,
    runs: usize,
) -> Option<Grid> {
    let sieves = |model: &str| {
        per_defense
            .iter()
            .filter(|r| r.model == model && r.defense.starts_with(REFERENCE))
            .count()
    };
    let mut order: Vec<String> = Vec::new();
    let mut models: Vec<&str> = Vec::new();
    for r in per_defense {
        if !order.contains(&r.defense) {
            order.push(r.defense.clone());
        }
        if !models.contains(&r.model.as_str()) {
            models.push(&r.model);
        }
    }
    if !models.iter().any(|m| sieves(m) > 1) {
        return None;
    }
    let mut picked = rows(summary_rows, &order);
    if let Some((records, policy)) = pairs {
        pair_with_reference(&mut picked, records, |base, new| {
            policy.for_suites(base.iter().chain(new).map(|(_, o)| o.own))
        });
    }
    let mut notes = footnotes(&picked);
    if pairs.is_none() && runs > 1 {
        notes.push(
            "p and Δ ASR paired are left out: they pair the episodes of one run, and this report reads several.".into(),
        );
    }
    let a = Ablation {
        simulated,
        // The banner is added to every table.
        note: None,
        model: models.join(", "),
        rows: picked,
        footnotes: notes,
    };
    let mut g = grid(&a);
    g.id = "ablation".into();
    let against = if models.len() > 1 {
        "each model's own sieve"
    } else {
        "sieve"
    };
    g.title = match pairs {
        Some(_) => format!("Ablation (every suite pooled; Δ and paired p against {against})"),
        None => format!("Ablation (every suite pooled; Δ against {against})"),
    };
    Some(g)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aggregate::metrics::summarise;
    use serde_json::json;
    use sieve_record::EpisodeRecord;

    /// An attacked episode of user task `u` under `defense` and `model`.
    fn rec(model: &str, defense: &str, u: usize, success: bool) -> EpisodeRecord {
        serde_json::from_value(json!({
            "run_id": "r", "key": format!("{model}-{defense}-{u}"),
            "suite": "dojo-style/banking", "user_task": format!("user_task_{u}"),
            "injection_task": "injection_task_0", "attack": "important_instructions",
            "defense": defense, "model": model, "simulated": false, "seed": 0,
            "utility": true, "attack_success": success, "severity": 1.0, "steps": 1,
            "hit_step_limit": false, "proposed_calls": 1, "blocked": 0, "asked_user": 0,
            "faked": 0, "escalated": 0, "approved": 0, "cost": {}, "latency_ms": 0.0,
            "error": null, "version": "t"
        }))
        .unwrap()
    }

    /// Model `a`'s sieve stops 8 of 10 attacks and `b`'s 4: the variant that lets 8
    /// through is 60 points worse than `a`'s sieve and no worse than `b`'s. Model `c`
    /// ran no `sieve`: its rows have no difference, and a footnote says why.
    #[test]
    fn each_model_is_compared_with_its_own_sieve_only() {
        let runs: &[(&str, &str, usize)] = &[
            ("a", "none", 10),
            ("a", "sieve", 2),
            ("a", "sieve:no-causal", 8),
            ("b", "none", 10),
            ("b", "sieve", 8),
            ("b", "sieve:no-causal", 8),
            ("c", "none", 10),
            ("c", "sieve:no-causal", 5),
        ];
        let records: Vec<EpisodeRecord> = runs
            .iter()
            .flat_map(|(m, d, k)| (0..10).map(move |u| rec(m, d, u, u < *k)))
            .collect();
        let order: Vec<String> = ["none", "sieve", "sieve:no-causal"]
            .map(String::from)
            .to_vec();
        let mut rows = rows(&summarise(&records), &order);
        let pairs = PairTable::of(&records);
        pair_with_reference(&mut rows, &pairs, |_, _| ErrorsAs::default());
        let row = |m: &str, d: &str| {
            rows.iter()
                .find(|r| r.model == m && r.defense == d)
                .unwrap_or_else(|| panic!("no {m} {d} row"))
        };
        let close = |x: Option<f64>, y: f64| x.is_some_and(|x| (x - y).abs() < 1e-9);
        let asr_pair = |r: &AblationRow| r.vs_reference.iter().find(|p| p.metric == "asr").cloned();

        let a = row("a", "sieve:no-causal");
        assert!(close(a.d_asr, 0.6), "{:?}", a.d_asr);
        let paired = asr_pair(a).expect("a's variant is paired with a's sieve");
        assert_eq!(paired.n_pairs, 10, "a's ten episodes, not b's too");
        assert!((paired.diff - 0.6).abs() < 1e-9, "{paired:?}");
        let b = row("b", "sieve:no-causal");
        assert!(close(b.d_asr, 0.0), "{:?}", b.d_asr);
        assert!(asr_pair(b).is_some_and(|p| p.diff.abs() < 1e-9 && p.n_pairs == 10));
        assert!(close(row("b", "none").d_asr, 0.2));
        for d in ["none", "sieve:no-causal"] {
            let c = row("c", d);
            assert_eq!((c.d_asr, c.vs_reference.len()), (None, 0), "{d}");
        }

        let notes = footnotes(&rows);
        let why: Vec<&String> = notes.iter().filter(|n| n.contains("no Δ")).collect();
        assert_eq!(why.len(), 1, "{notes:?}");
        assert!(
            why[0].starts_with("c: ") && why[0].contains("no `sieve` row"),
            "{why:?}"
        );

        // One table: the model is a key beside the defense, each model's rows compete
        // among themselves, and every Δ cell is the row's own.
        let g = grid(&Ablation {
            simulated: false,
            note: None,
            model: "a, b, c".into(),
            rows: rows.clone(),
            footnotes: notes,
        });
        let model = g.column("model").unwrap();
        assert_eq!(g.columns[model].show, Show::Key);
        assert!(model < g.column("defense").unwrap());
        assert!(
            !g.notes.iter().any(|n| n.starts_with("model:")),
            "{:?}",
            g.notes
        );
        let d_asr = g.column("d_asr").unwrap();
        let cells: Vec<(String, String)> = g
            .rows
            .iter()
            .map(|r| (r[model].display(false), r[d_asr].display(false)))
            .collect();
        let want = [
            ("a", "+80.0"),
            ("a", "–"),
            ("a", "+60.0"),
            ("b", "+20.0"),
            ("b", "–"),
            ("b", "+0.0"),
            ("c", "–"),
            ("c", "–"),
        ]
        .map(|(m, d)| (m.to_string(), d.to_string()));
        assert_eq!(cells, want);
        assert_ne!(g.groups[0], g.groups[3], "a's rows do not compete with b's");
    }

    /// One model (what `ablate` runs) keeps the table `ablate` has always printed: the
    /// model named once above it, a file-only column.
    #[test]
    fn one_model_is_named_above_the_table() {
        let records: Vec<EpisodeRecord> = [("sieve", 2), ("sieve:no-causal", 8)]
            .iter()
            .flat_map(|(d, k)| (0..10).map(move |u| rec("m", d, u, u < *k)))
            .collect();
        let order = vec!["sieve".to_string(), "sieve:no-causal".to_string()];
        let g = grid(&Ablation {
            simulated: false,
            note: None,
            model: "m".into(),
            rows: rows(&summarise(&records), &order),
            footnotes: Vec::new(),
        });
        assert_eq!(g.columns[g.column("model").unwrap()].show, Show::File);
        assert!(g.notes.contains(&"model: m".to_string()), "{:?}", g.notes);
    }
}
