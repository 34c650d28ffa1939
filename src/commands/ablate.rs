//! `ablate`: runs `none`, `audit` and every SIEVE variant on the same episodes, and
//! prints the ablation table: one row per defense with ASR, W-ASR, BU, UA, EDS, escalation
//! rate, judge calls, tokens and API calls per episode, each with its difference from
//! `sieve` (the `full` variant). Also written as CSV, JSON and Markdown.
//!
//! It is one `run` with several defenses, so it resumes like `run` does.

use super::run::{RunArgs, RunReport, run};
use super::{CliError, Paths};
use crate::aggregate::metrics::Row;
use crate::report::columns::{Better, Column, Grid, Show, Value};
use crate::report::formats;
use crate::report::text::TextOptions;
use serde::Serialize;
use std::fmt::Write;
use std::path::PathBuf;

/// `ablate`'s options: every `run` option, plus the variants to compare.
#[derive(clap::Args, Clone, Debug, Default, PartialEq)]
pub struct AblateArgs {
    /// Everything `run` takes; the ablation chooses the defenses itself.
    #[command(flatten)]
    pub run: RunArgs,
    /// Only these SIEVE variants (comma-separated; `full` is always run as the reference).
    #[arg(long, value_delimiter = ',')]
    pub variants: Option<Vec<String>>,
    /// Sensitivity sweeps, each `<setting>=<from>:<to>:<step>` with setting `threshold`,
    /// `w_sem`, `w_causal`, `w_prov` or `w_risk` (a weight is set and the others share the
    /// rest in proportion). One `sieve@<setting>=<x>` row per point, and the
    /// security-utility curve in `sweep.md` / `sweep.csv`. Repeatable.
    #[arg(long)]
    pub sweep: Vec<String>,
}

/// One sweep: a setting and its points, in order.
#[derive(Clone, Debug, PartialEq)]
pub struct Sweep {
    pub setting: String,
    pub points: Vec<f64>,
}

impl Sweep {
    /// Parses `threshold=0.3:0.7:0.05` (inclusive; the last point is kept when float
    /// steps land within 1e-9 of it).
    pub fn parse(spec: &str) -> Result<Sweep, String> {
        let bad = || format!("--sweep `{spec}`: expected <setting>=<from>:<to>:<step>");
        let (setting, range) = spec.split_once('=').ok_or_else(bad)?;
        let nums: Vec<f64> = range
            .split(':')
            .map(|x| x.trim().parse::<f64>().map_err(|_| bad()))
            .collect::<Result<_, _>>()?;
        let [from, to, step] = nums[..] else {
            return Err(bad());
        };
        if step.is_nan() || step <= 0.0 || to < from {
            return Err(format!("--sweep `{spec}`: needs from <= to and step > 0"));
        }
        let n = ((to - from) / step + 1e-9).floor() as usize;
        if n > 100 {
            return Err(format!("--sweep `{spec}`: {} points; at most 101", n + 1));
        }
        let points: Vec<f64> = (0..=n)
            .map(|k| ((from + k as f64 * step) * 1e6).round() / 1e6)
            .collect();
        let setting = setting.trim().to_string();
        // Validates the setting and the range through the defense's own parser.
        for p in &points {
            crate::defense::sieve::config::Override::parse(&format!("{setting}={p}"))
                .map_err(|e| format!("--sweep `{spec}`: {e}"))?;
        }
        Ok(Sweep { setting, points })
    }

    /// The defense name of each point.
    pub fn defenses(&self) -> Vec<String> {
        self.points
            .iter()
            .map(|p| format!("{REFERENCE}@{}={p}", self.setting))
            .collect()
    }
}

/// The defense name of the reference row.
pub const REFERENCE: &str = "sieve";

/// One row of the ablation table. Rates are fractions in [0,1]; `d_*` = this − `sieve`.
#[derive(Clone, Debug, Serialize)]
pub struct AblationRow {
    pub suite: String,
    pub attack: String,
    pub defense: String,
    /// The roles no LLM played in this row, and what each knew.
    pub scripted_roles: Option<crate::model::ScriptedRoles>,
    /// Their labels in one line (`scripted agent; scripted judge (judge_auc=0.9)`).
    pub scripted: String,
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

const FOOTNOTES: &[&str] = &[
    "One row per defense on the same episodes; Δ = difference from `sieve` (the full variant), in percentage points for rates; p = exact McNemar p-value of the ASR difference (sign test over clusters of repeats).",
    "Esc % = proposed calls sent to the judge / proposed calls. Judge, Tok and Calls are per episode (clean and attacked).",
    "Err = errored episodes / all episodes (outside the rates; `!` = above --max-error-rate). Δ ASR [95%]: the paired difference's interval over the same episodes (cluster-robust).",
    "Succ L1/Adj/Unchk = successful attacks whose harmful call (the one whose effect the security check saw) passed layer 1 (provenance bypass) / was approved by the adjudicator / no call did it. Rows <attack>+provenance_bypass hold the tasks written to defeat SIEVE, left out of the headline rows; Bypass = successes / episodes on the pairs those tasks were designed for.",
    "Variants: no-X drops a term of S_align and renormalises the rest; layer1-only blocks every deviation; no-graph-update does not add approved calls to the graph; dynamic-prov takes S_prov from the per-tool trust table; sieve@<setting>=<x> is a sweep point.",
];

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
                defense: r.defense.clone(),
                scripted_roles: r.scripted_roles.clone(),
                scripted: crate::aggregate::metrics::roles_text(r),
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
                Some(v) if r.defense != REFERENCE => Value::Delta { v, decimals, rate },
                _ => Value::Missing,
            },
        ),
    ]
}

/// The ablation's columns: the essentials with their difference from `sieve` and the
/// paired test of the ASR difference; costs and the attribution when there is room.
fn columns<'a>() -> Vec<Column<'a, AblationRow>> {
    let mut out = vec![
        Column::key("attack", "Attack", "The attack.", |r: &AblationRow| {
            r.attack.clone()
        }),
        Column::key(
            "defense",
            "Defense",
            "The defense or SIEVE variant.",
            |r: &AblationRow| r.defense.clone(),
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
    out.push(Column::figure(
        "d_asr_paired_ci",
        "Δ ASR [95%]",
        "The paired ASR difference's 95% interval (cluster-robust), percentage points.",
        Show::Extra,
        move |r: &AblationRow| {
            paired(r).map_or(Value::Missing, |p| {
                Value::Text(format!(
                    "[{}, {}]",
                    crate::report::columns::signed(p.ci[0] * 100.0, 1),
                    crate::report::columns::signed(p.ci[1] * 100.0, 1)
                ))
            })
        },
    ));
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
    out.push(Column::figure(
        "n",
        "n clean/att",
        "Clean and attacked episodes.",
        Show::Extra,
        |r: &AblationRow| Value::Text(format!("{}/{}", r.n_clean, r.n_attacked)),
    ));
    out.push(Column::figure(
        "errors",
        "Err",
        "Errored episodes of all episodes.",
        Show::Extra,
        |r: &AblationRow| Value::Part {
            k: r.errors,
            n: r.episodes,
        },
    ));
    out.push(Column::figure("success_via", "Succ L1/Adj/Unchk", "Successful attacks whose harmful call passed layer 1 / was approved by the adjudicator / was never checked.", Show::Extra, |r: &AblationRow| {
        match (r.success_via_layer1, r.success_via_adjudicator, r.success_unchecked) {
            (Some(a), Some(b), Some(c)) => Value::Text(format!("{a}/{b}/{c}")),
            _ => Value::Missing,
        }
    }));
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
    out.push(Column::too_many_errors(|r: &AblationRow| r.too_many_errors));
    out
}

/// The ablation as a grid: one row per attack and defense, the best per attack marked.
pub fn grid(a: &Ablation) -> Grid {
    let mut g = Grid::build("ablate", "SIEVE ablation", columns(), &a.rows, |r| {
        r.attack.clone()
    });
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

/// The terminal table, fitted to `opts` like `run`'s.
pub fn table(a: &Ablation, opts: &TextOptions) -> Result<String, String> {
    crate::report::text::render(&grid(a), opts)
}

/// `ablation.md`.
pub fn markdown(a: &Ablation) -> String {
    let mut out = String::from("# SIEVE ablation\n\n");
    let mut g = formats::readable(&grid(a));
    g.title = format!("Model {}", a.model);
    out.push_str(&formats::markdown(&g));
    out
}

/// `ablation.csv`: one flat row per defense, rates as fractions.
pub fn csv(a: &Ablation) -> Result<String, csv::Error> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let o = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v}"));
    let u = |v: Option<u64>| v.map_or(String::new(), |v| v.to_string());
    w.write_record([
        "suite",
        "attack",
        "defense",
        "model",
        "simulated",
        "scripted_roles",
        "n_clean",
        "n_attacked",
        "errors",
        "episodes",
        "asr",
        "w_asr",
        "bu",
        "ua",
        "eds",
        "escalation_rate",
        "judge_calls_per_episode",
        "tokens_per_episode",
        "calls_per_episode",
        "success_via_layer1",
        "success_via_adjudicator",
        "success_unchecked",
        "n_bypass_tagged",
        "bypass_tagged_success",
        "d_asr",
        "d_w_asr",
        "d_bu",
        "d_ua",
        "d_eds",
        "d_escalation_rate",
        "d_judge_calls_per_episode",
        "d_tokens_per_episode",
        "d_calls_per_episode",
        "d_asr_paired_lo",
        "d_asr_paired_hi",
        "d_asr_mcnemar_p",
    ])?;
    for r in &a.rows {
        let paired_asr = r.vs_reference.iter().find(|p| p.metric == "asr");
        let text = crate::escape::csv_cell;
        w.write_record([
            text(&r.suite),
            text(&r.attack),
            text(&r.defense),
            text(&a.model),
            a.simulated.to_string(),
            text(&r.scripted),
            r.n_clean.to_string(),
            r.n_attacked.to_string(),
            r.errors.to_string(),
            r.episodes.to_string(),
            o(r.asr),
            o(r.w_asr),
            o(r.bu),
            o(r.ua),
            o(r.eds),
            o(r.escalation_rate),
            format!("{}", r.judge_calls_per_episode),
            format!("{}", r.tokens_per_episode),
            format!("{}", r.calls_per_episode),
            u(r.success_via_layer1),
            u(r.success_via_adjudicator),
            u(r.success_unchecked),
            r.n_bypass_tagged.to_string(),
            r.bypass_tagged_success.to_string(),
            o(r.d_asr),
            o(r.d_w_asr),
            o(r.d_bu),
            o(r.d_ua),
            o(r.d_eds),
            o(r.d_escalation_rate),
            o(r.d_judge_calls_per_episode),
            o(r.d_tokens_per_episode),
            o(r.d_calls_per_episode),
            o(paired_asr.map(|p| p.ci[0])),
            o(paired_asr.map(|p| p.ci[1])),
            o(paired_asr.map(|p| p.p_value)),
        ])?;
    }
    let bytes = w.into_inner().map_err(|e| e.into_error())?;
    Ok(String::from_utf8(bytes).expect("csv of utf-8 strings"))
}

/// One point of a security-utility curve (headline rows only).
#[derive(Clone, Debug, Serialize)]
pub struct CurvePoint {
    pub value: f64,
    pub asr: Option<f64>,
    pub ua: Option<f64>,
    pub bu: Option<f64>,
    pub escalation_rate: Option<f64>,
    /// ASR on the provenance-bypass tasks' own row.
    pub bypass_asr: Option<f64>,
}

/// A sweep's curve, with the direction ASR and UA actually moved.
#[derive(Clone, Debug, Serialize)]
pub struct Curve {
    pub setting: String,
    pub attack: String,
    pub points: Vec<CurvePoint>,
}

/// `up`, `down`, `flat` or `not monotone`, for a sequence along the sweep.
pub fn direction(values: &[f64]) -> &'static str {
    let eps = 1e-12;
    let up = values.windows(2).all(|w| w[1] >= w[0] - eps);
    let down = values.windows(2).all(|w| w[1] <= w[0] + eps);
    match (up, down) {
        (true, true) => "flat",
        (true, false) => "never falls",
        (false, true) => "never rises",
        (false, false) => "not monotone",
    }
}

/// The curve of one sweep, from the ablation rows of its points (the first headline
/// attack).
pub fn curve(s: &Sweep, rows: &[AblationRow]) -> Curve {
    let attack = rows
        .iter()
        .map(|r| r.attack.as_str())
        .find(|a| !a.ends_with(crate::suite::BYPASS_TAG))
        .unwrap_or("")
        .to_string();
    let points = s
        .points
        .iter()
        .zip(s.defenses())
        .map(|(v, d)| {
            let row = rows.iter().find(|r| r.defense == d && r.attack == attack);
            let bypass = rows.iter().find(|r| {
                r.defense == d && r.attack == format!("{attack}+{}", crate::suite::BYPASS_TAG)
            });
            CurvePoint {
                value: *v,
                asr: row.and_then(|r| r.asr),
                ua: row.and_then(|r| r.ua),
                bu: row.and_then(|r| r.bu),
                escalation_rate: row.and_then(|r| r.escalation_rate),
                bypass_asr: bypass.and_then(|r| r.asr),
            }
        })
        .collect();
    Curve {
        setting: s.setting.clone(),
        attack,
        points,
    }
}

fn pct(v: Option<f64>) -> String {
    v.map_or("–".into(), |v| format!("{:.1}", v * 100.0))
}

/// `sweep.md`: one table per sweep and the direction each figure moved.
pub fn sweep_markdown(a: &Ablation, curves: &[Curve]) -> String {
    use crate::escape::markdown as md;
    let mut out = String::from("# SIEVE sensitivity sweeps\n\n");
    if let Some(n) = &a.note {
        writeln!(out, "> **{}**\n", md(n)).unwrap();
    }
    writeln!(out, "Model: {}\n", md(&a.model)).unwrap();
    for c in curves {
        writeln!(out, "## {} ({})\n", md(&c.setting), md(&c.attack)).unwrap();
        let header = [
            c.setting.as_str(),
            "ASR %",
            "UA %",
            "BU %",
            "Esc %",
            "Bypass-task ASR %",
        ];
        let rows = c.points.iter().map(|p| {
            [
                format!("{}", p.value),
                pct(p.asr),
                pct(p.ua),
                pct(p.bu),
                pct(p.escalation_rate),
                pct(p.bypass_asr),
            ]
        });
        out.push_str(&crate::report::md_table(&header, rows));
        let seq = |f: fn(&CurvePoint) -> Option<f64>| -> Vec<f64> {
            c.points.iter().filter_map(f).collect()
        };
        writeln!(
            out,
            "\nAs {} rises, ASR {} and UA {}.\n",
            c.setting,
            direction(&seq(|p| p.asr)),
            direction(&seq(|p| p.ua))
        )
        .unwrap();
    }
    out
}

/// `sweep.csv`: setting, value and the curve's figures as fractions.
pub fn sweep_csv(curves: &[Curve]) -> Result<String, csv::Error> {
    let o = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v}"));
    let text = crate::escape::csv_cell;
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record([
        "setting",
        "attack",
        "value",
        "asr",
        "ua",
        "bu",
        "escalation_rate",
        "bypass_asr",
    ])?;
    for c in curves {
        for p in &c.points {
            w.write_record([
                text(&c.setting),
                text(&c.attack),
                format!("{}", p.value),
                o(p.asr),
                o(p.ua),
                o(p.bu),
                o(p.escalation_rate),
                o(p.bypass_asr),
            ])?;
        }
    }
    let bytes = w.into_inner().map_err(|e| e.into_error())?;
    Ok(String::from_utf8(bytes).expect("csv of utf-8 strings"))
}

/// What `ablate` produced.
pub struct AblateReport {
    pub run: RunReport,
    pub ablation: Ablation,
}

/// The defenses an ablation runs, in table order.
pub fn defenses(
    config: &crate::defense::sieve::config::SieveConfig,
    only: Option<&[String]>,
) -> Result<Vec<String>, CliError> {
    if let Some(only) = only
        && let Some(bad) = only.iter().find(|v| config.variant(v).is_err())
    {
        return Err(CliError::bad_input(
            config.variant(bad).err().unwrap_or_default(),
        ));
    }
    let first = &config.variants[0].name;
    let mut out = vec![
        "none".to_string(),
        "audit".to_string(),
        REFERENCE.to_string(),
    ];
    for v in &config.variants {
        if &v.name == first {
            continue;
        }
        if only.is_none_or(|o| o.contains(&v.name)) {
            out.push(format!("sieve:{}", v.name));
        }
    }
    Ok(out)
}

/// Default output directory: a function of the command line, so reruns resume.
pub fn default_out(a: &AblateArgs) -> PathBuf {
    let mut id = super::run::default_run_id(&RunArgs {
        defense: "ablate".into(),
        ..a.run.clone()
    });
    if let Some(v) = &a.variants {
        id.push_str(&format!("__only-{}", v.join("-")));
    }
    a.run.results_dir.join(id)
}

/// Runs the ablation and writes `ablation.{csv,json,md}` next to the run's files.
/// What an ablation runs: its `run` arguments, folder, defense order and sweeps.
pub struct AblationPlan {
    pub run_args: RunArgs,
    pub out: PathBuf,
    pub order: Vec<String>,
    pub sweeps: Vec<Sweep>,
}

/// The `run` arguments an ablation runs with (its defenses, its folder), and the folder
/// and defense order: what `ablate` runs and `ablate --dry-run` estimates.
pub fn ablation_run_args(paths: &Paths, args: &AblateArgs) -> Result<AblationPlan, CliError> {
    if args.run.defense != RunArgs::default().defense {
        return Err(CliError::bad_input(
            "ablate chooses its defenses (none, audit, sieve and its variants); use --variants to pick variants, or `run --defense` for others",
        ));
    }
    if args.run.weights.is_some() {
        return Err(CliError::bad_input(
            "ablate compares the configured weight sets; --weights would rename the reference row. Add a variant to the SIEVE config instead",
        ));
    }
    let options = super::run::defense_options(
        paths,
        args.run.sieve_config.as_deref(),
        args.run.weights.as_deref(),
    )?;
    let config = options.sieve_config.clone().expect("always set");
    let mut order = defenses(&config, args.variants.as_deref())?;
    let sweeps: Vec<Sweep> = args
        .sweep
        .iter()
        .map(|s| Sweep::parse(s))
        .collect::<Result<_, _>>()
        .map_err(CliError::bad_input)?;
    for s in &sweeps {
        for d in s.defenses() {
            if !order.contains(&d) {
                order.push(d);
            }
        }
    }
    let out = args.run.out.clone().unwrap_or_else(|| default_out(args));
    let mut run_args = args.run.clone();
    run_args.defense = order.join(",");
    run_args.out = Some(out.clone());
    Ok(AblationPlan {
        run_args,
        out,
        order,
        sweeps,
    })
}

pub async fn ablate(paths: &Paths, args: AblateArgs) -> Result<AblateReport, CliError> {
    let AblationPlan {
        run_args,
        out,
        order,
        sweeps,
    } = ablation_run_args(paths, &args)?;
    let report = run(paths, run_args).await?;
    let simulated = report.summary.simulated;
    let mut ablation_rows = rows(&report.summary.rows, &order);
    let records = crate::aggregate::pairs::PairTable::read(&out.join(crate::record::EPISODES))
        .map_err(|e| CliError::failed(format!("cannot read {}: {e}", out.display())))?;
    for r in &mut ablation_rows {
        // Every model of the run: ablate runs one.
        let of = |d: &str| records.row(&r.suite, &r.attack, d, None);
        if r.defense != REFERENCE {
            let (base, new) = (of(REFERENCE), of(&r.defense));
            let errors_as = args
                .run
                .error_policy()
                .for_suites(base.iter().chain(&new).map(|(_, o)| o.own));
            r.vs_reference = crate::aggregate::metrics::paired_all(&base, &new, errors_as);
        }
    }
    let ablation = Ablation {
        simulated,
        note: crate::report::simulated_note(&report.summary.rows),
        // The resolved name, which states the scripted roles' knobs.
        model: report
            .summary
            .rows
            .first()
            .map_or_else(|| args.run.model.clone(), |r| r.model.clone()),
        rows: ablation_rows,
        footnotes: FOOTNOTES.iter().map(|s| s.to_string()).collect(),
    };
    let write = |name: &str, text: String| {
        std::fs::write(out.join(name), text).map_err(|e| {
            CliError::failed(format!("cannot write {}: {e}", out.join(name).display()))
        })
    };
    write(
        "ablation.json",
        serde_json::to_string_pretty(&ablation).expect("json") + "\n",
    )?;
    write(
        "ablation.csv",
        csv(&ablation).map_err(|e| CliError::failed(e.to_string()))?,
    )?;
    write("ablation.md", markdown(&ablation))?;
    if !sweeps.is_empty() {
        let curves: Vec<Curve> = sweeps.iter().map(|s| curve(s, &ablation.rows)).collect();
        write("sweep.md", sweep_markdown(&ablation, &curves))?;
        write(
            "sweep.csv",
            sweep_csv(&curves).map_err(|e| CliError::failed(e.to_string()))?,
        )?;
    }
    Ok(AblateReport {
        run: report,
        ablation,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweeps_parse_into_inclusive_points_and_buildable_defenses() {
        let s = Sweep::parse("threshold=0.3:0.7:0.05").unwrap();
        assert_eq!(s.points.len(), 9);
        assert_eq!((s.points[0], s.points[8]), (0.3, 0.7));
        assert_eq!(s.points[1], 0.35);
        for d in s.defenses() {
            assert_eq!(crate::defense::build(&d).unwrap().name(), d);
        }
        let w = Sweep::parse("w_causal=0.1:0.9:0.2").unwrap();
        assert_eq!(w.points, vec![0.1, 0.3, 0.5, 0.7, 0.9]);
        for bad in [
            "threshold",
            "threshold=0.3:0.7",
            "threshold=0.7:0.3:0.1",
            "threshold=0.3:0.7:0",
            "w_foo=0.1:0.2:0.1",
            "threshold=0.5:1.5:0.5",
        ] {
            assert!(Sweep::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(direction(&[0.3, 0.2, 0.2, 0.1]), "never rises");
        assert_eq!(direction(&[0.1, 0.2, 0.15]), "not monotone");
        assert_eq!(direction(&[0.1, 0.1]), "flat");
    }

    #[test]
    fn ablation_runs_every_variant_after_the_baselines() {
        let c = crate::defense::sieve::config::SieveConfig::builtin();
        let all = defenses(&c, None).unwrap();
        assert_eq!(&all[..3], &["none", "audit", "sieve"]);
        assert!(all.contains(&"sieve:no-causal".to_string()));
        assert!(all.contains(&"sieve:layer1-only".to_string()));
        assert_eq!(all.len(), 3 + c.variants.len() - 1);
        let some = defenses(&c, Some(&["no-sem".to_string()])).unwrap();
        assert_eq!(some, vec!["none", "audit", "sieve", "sieve:no-sem"]);
        assert!(defenses(&c, Some(&["no-such".to_string()])).is_err());
        // Every name the ablation uses builds.
        for d in all {
            crate::defense::build(&d).unwrap();
        }
    }
}

#[cfg(test)]
mod end_to_end {
    use super::*;

    /// The end-to-end criteria on banking with the obedient scripted agent.
    #[tokio::test(flavor = "multi_thread")]
    async fn ablate_runs_and_sieve_beats_none_with_fewer_judge_calls_than_audit() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::resolve(None, None, Some(PathBuf::from(".")));
        let run = RunArgs {
            suite: "banking".into(),
            concurrency: 4,
            out: Some(dir.path().to_path_buf()),
            results_dir: dir.path().to_path_buf(),
            ..RunArgs::default()
        };
        let report = ablate(
            &paths,
            AblateArgs {
                run,
                variants: None,
                sweep: vec!["threshold=0.3:0.7:0.2".into()],
            },
        )
        .await
        .unwrap();
        let rows = &report.ablation.rows;
        // Headline rows leave out the tasks written to defeat SIEVE; those get their own.
        let headline = |d: &str| {
            rows.iter()
                .find(|r| r.defense == d && !r.attack.ends_with(crate::suite::BYPASS_TAG))
                .unwrap()
        };
        let tagged = |d: &str| {
            rows.iter()
                .find(|r| r.defense == d && r.attack.ends_with(crate::suite::BYPASS_TAG))
                .unwrap()
        };
        let (none, audit, sieve) = (headline("none"), headline("audit"), headline("sieve"));
        let variants = crate::defense::sieve::config::SieveConfig::builtin()
            .variants
            .len();
        assert_eq!(rows.len(), 2 * (2 + variants + 3));
        assert!(sieve.asr.unwrap() < none.asr.unwrap());
        assert!(audit.judge_calls_per_episode > sieve.judge_calls_per_episode);
        assert_eq!(sieve.n_bypass_tagged, 0);
        let bypass = tagged("sieve");
        assert!(bypass.n_bypass_tagged > 0);
        assert!(bypass.bypass_tagged_success > 0, "the bypass is measured");
        assert!(bypass.success_via_layer1.unwrap() > 0);
        assert_eq!(none.success_via_layer1, None);
        // The sweep's points are rows of their own, and its curve is written.
        assert!(headline("sieve@threshold=0.5").asr.is_some());
        let sweep = std::fs::read_to_string(dir.path().join("sweep.md")).unwrap();
        assert!(sweep.contains("As threshold rises, ASR"), "{sweep}");
        for f in [
            "ablation.csv",
            "ablation.json",
            "ablation.md",
            "summary.json",
            "sweep.csv",
        ] {
            assert!(dir.path().join(f).is_file(), "{f}");
        }
        let md = std::fs::read_to_string(dir.path().join("ablation.md")).unwrap();
        assert!(md.contains("sieve:no-causal") && md.contains("SIMULATED"));
    }
}
