//! The ablation table's one definition: one row per attack and defense (SIEVE's
//! variants, `none`, `audit`), each figure beside its difference from `sieve` on the same
//! episodes and the paired test of the ASR difference. `ablate` prints and writes it;
//! `report` renders it in every format.

use crate::aggregate::metrics::Row;
use crate::aggregate::pairs::{Pair, PairTable};
use crate::report::columns::{Better, Column, Grid, Show, Value};
use serde::Serialize;
use sieve_record::ErrorsAs;

/// The defense name of the reference row.
pub const REFERENCE: &str = "sieve";

/// One row of the ablation table. Rates are fractions in [0,1]; `d_*` = this − `sieve`.
#[derive(Clone, Debug, Serialize)]
pub struct AblationRow {
    pub suite: String,
    pub attack: String,
    /// The row holds its attack's provenance-bypass tasks (as the summary row's
    /// `bypass`); `attack` is their row's name. Not written: `ablation.json` keeps its form.
    #[serde(skip)]
    pub bypass: bool,
    pub defense: String,
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
    pub model: String,
    pub rows: Vec<AblationRow>,
    pub footnotes: Vec<String>,
}

pub const FOOTNOTES: &[&str] = &[
    "One row per defense on the same episodes; Δ = difference from `sieve` (the full variant), in percentage points for rates; p = exact McNemar p-value of the ASR difference (sign test over clusters of repeats).",
    "Esc % = proposed calls sent to the judge / proposed calls. Judge, Tok and Calls are per episode (clean and attacked).",
    "Err = errored episodes / all episodes (outside the rates; `!` = above --max-error-rate). Δ ASR paired: the difference over the same episodes, with its 95% interval (cluster-robust) where intervals are shown.",
    "Succ L1 / Adj / Unchk = successful attacks whose harmful call (the one whose effect the security check saw) passed layer 1 (provenance bypass) / was approved by the adjudicator / no call did it. Rows <attack>+provenance_bypass hold the tasks written to defeat SIEVE, left out of the headline rows; Bypass = successes / episodes on the pairs those tasks were designed for.",
    "Variants: no-X drops a term of S_align and renormalises the rest; layer1-only blocks every deviation; no-graph-update does not add approved calls to the graph; dynamic-prov takes S_prov from the per-tool trust table; sieve@<setting>=<x> is a sweep point.",
];

/// The table's footnotes: [`FOOTNOTES`], then one line per variant row whose difference
/// from `sieve` the simulation or the construction decides (the row's `decided`).
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
    out
}

/// `a - b`, with float noise from different summation orders flushed to 0.
fn diff(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    let d = a? - b?;
    Some(if d.abs() < 1e-9 { 0.0 } else { d })
}

/// Builds the ablation rows from a run's summary rows: per attack, the aggregate suite
/// row (`all` when several suites ran), one per defense in `order`.
pub fn rows(summary_rows: &[Row], order: &[String]) -> Vec<AblationRow> {
    let multi = summary_rows
        .iter()
        .any(|r| r.suite == crate::aggregate::metrics::ALL_SUITES);
    let picked: Vec<&Row> = summary_rows
        .iter()
        .filter(|r| !multi || r.suite == crate::aggregate::metrics::ALL_SUITES)
        .collect();
    let mut attacks: Vec<&str> = picked.iter().map(|r| r.attack.as_str()).collect();
    attacks.dedup();
    let mut out = Vec::new();
    for attack in attacks {
        let of = |d: &str| {
            picked
                .iter()
                .find(|r| r.attack == attack && r.defense == d)
                .copied()
        };
        let reference = of(REFERENCE);
        for d in order {
            let Some(r) = of(d) else { continue };
            let f = |pick: fn(&Row) -> Option<f64>| reference.and_then(|x| diff(pick(r), pick(x)));
            out.push(AblationRow {
                suite: r.suite.clone(),
                attack: r.attack.clone(),
                bypass: r.bypass,
                defense: r.defense.clone(),
                scripted_roles: r.scripted_roles.clone(),
                scripted: crate::aggregate::metrics::roles_text(r),
                decided: crate::defense::sieve::config::scripted_difference(
                    &r.defense,
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
/// `ablation.csv` holds every figure as a number.
fn columns<'a>(model: &'a str, simulated: bool) -> Vec<Column<'a, AblationRow>> {
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
        Column::key(
            "defense",
            "Defense",
            "The defense or SIEVE variant.",
            |r: &AblationRow| r.defense.clone(),
        ),
        Column::figure(
            "model",
            "Model",
            "The agent's model of the run.",
            Show::File,
            move |_: &AblationRow| Value::Text(model.to_string()),
        ),
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
    ];
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

/// The ablation as a grid: one row per attack and defense, the best per attack marked.
pub fn grid(a: &Ablation) -> Grid {
    let mut g = Grid::build(
        "ablate",
        "SIEVE ablation",
        columns(&a.model, a.simulated),
        &a.rows,
        |r| r.attack.clone(),
    );
    g.notes.extend(a.note.clone());
    g.notes.push(format!(
        "model: {}{}",
        a.model,
        if a.simulated { " (simulated)" } else { "" }
    ));
    g.footnotes = a.footnotes.clone();
    g.in_order = true;
    g
}

/// Fills each row's paired comparisons with `sieve` over the same episodes, under the
/// error convention `errors_as` gives for the two rows' episodes.
pub fn pair_with_reference(
    rows: &mut [AblationRow],
    records: &PairTable,
    errors_as: impl Fn(&[Pair<'_>], &[Pair<'_>]) -> ErrorsAs,
) {
    for r in rows {
        // Every model of the run: ablate runs one.
        let of = |d: &str| records.row(&r.suite, &r.attack, d, None);
        if r.defense != REFERENCE {
            let (base, new) = (of(REFERENCE), of(&r.defense));
            r.vs_reference =
                crate::aggregate::metrics::paired_all(&base, &new, errors_as(&base, &new));
        }
    }
}
