//! `compare`: a before/after table per suite × attack × defense, and the CI gate on
//! ASR increases and utility drops (in percentage points).

use super::Summary;
use crate::metrics::Row;
use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use std::fmt::Write;

/// Gate thresholds in percentage points; `None` disables that check.
#[derive(Clone, Copy, Debug, Default)]
pub struct Thresholds {
    pub max_asr_increase: Option<f64>,
    pub max_utility_drop: Option<f64>,
}

/// The comparison's text and whether the gate failed.
pub struct Comparison {
    pub text: String,
    pub failed: bool,
    pub violations: Vec<String>,
}

/// Rows match on suite, attack, defense and model: a run with another model is another
/// row, never gated against this one.
fn key(r: &Row) -> (String, String, String, String) {
    (
        r.suite.clone(),
        r.attack.clone(),
        r.defense.clone(),
        r.model.clone(),
    )
}

fn pts(v: Option<f64>) -> String {
    v.map_or("–".into(), |v| format!("{:.1}", v * 100.0))
}

fn delta(base: Option<f64>, new: Option<f64>) -> Option<f64> {
    let d = (new? - base?) * 100.0;
    // Equal rates print as +0.0, never -0.0 from a last-bit difference.
    Some(if d.abs() < 1e-9 { 0.0 } else { d })
}

fn fmt_delta(d: Option<f64>) -> String {
    d.map_or("–".into(), |d| format!("{d:+.1}"))
}

/// Compares two summaries row by row.
pub fn compare(base: &Summary, new: &Summary, t: Thresholds) -> Comparison {
    let mut table = Table::new();
    table.load_style(UTF8_FULL_CONDENSED);
    table.set_header(vec![
        "Suite", "Attack", "Defense", "ASR base", "ASR new", "Δ ASR", "UA base", "UA new", "Δ UA",
        "BU base", "BU new", "Δ BU", "Gate",
    ]);
    let mut violations = Vec::new();
    for b in &base.rows {
        let Some(n) = new.rows.iter().find(|n| key(n) == key(b)) else {
            violations.push(format!(
                "{}/{}/{}: missing from the new run",
                b.suite, b.attack, b.defense
            ));
            table.add_row(vec![
                b.suite.clone(),
                b.attack.clone(),
                b.defense.clone(),
                pts(b.asr),
                "missing".into(),
            ]);
            continue;
        };
        let d_asr = delta(b.asr, n.asr);
        let d_ua = delta(b.ua, n.ua);
        let d_bu = delta(b.bu, n.bu);
        let mut gate = Vec::new();
        // More errors hide outcomes: a row whose error rate rose fails whatever its rates.
        if let (Some(eb), Some(en)) = (b.error_rate, n.error_rate)
            && en > eb + 1e-9
        {
            gate.push(format!(
                "error rate {:.1}% > {:.1}% ({} of {} episodes errored)",
                en * 100.0,
                eb * 100.0,
                n.errors,
                n.episodes
            ));
        }
        if let (Some(max), Some(d)) = (t.max_asr_increase, d_asr)
            && d > max + 1e-9
        {
            gate.push(format!("ASR +{d:.1} > {max}"));
        }
        if let Some(max) = t.max_utility_drop {
            for (name, d) in [("UA", d_ua), ("BU", d_bu)] {
                if let Some(d) = d
                    && -d > max + 1e-9
                {
                    gate.push(format!("{name} {d:.1} < -{max}"));
                }
            }
        }
        for g in &gate {
            violations.push(format!("{}/{}/{}: {g}", b.suite, b.attack, b.defense));
        }
        table.add_row(vec![
            b.suite.clone(),
            b.attack.clone(),
            b.defense.clone(),
            pts(b.asr),
            pts(n.asr),
            fmt_delta(d_asr),
            pts(b.ua),
            pts(n.ua),
            fmt_delta(d_ua),
            pts(b.bu),
            pts(n.bu),
            fmt_delta(d_bu),
            if gate.is_empty() {
                "ok".into()
            } else {
                "FAIL".into()
            },
        ]);
    }
    let mut text = String::new();
    if base.simulated || new.simulated {
        writeln!(text, "{}", super::SIMULATED_NOTE).unwrap();
    }
    writeln!(text, "{table}").unwrap();
    for r in &new.rows {
        if !base.rows.iter().any(|b| key(b) == key(r)) {
            writeln!(
                text,
                "new row (not gated): {}/{}/{}",
                r.suite, r.attack, r.defense
            )
            .unwrap();
        }
    }
    if violations.is_empty() {
        writeln!(text, "gate: passed").unwrap();
    } else {
        writeln!(text, "gate: FAILED\n  {}", violations.join("\n  ")).unwrap();
    }
    Comparison {
        text,
        failed: !violations.is_empty(),
        violations,
    }
}
