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
/// row, never gated against this one silently.
fn key(r: &Row) -> (&str, &str, &str, &str) {
    (&r.suite, &r.attack, &r.defense, &r.model)
}

/// The cell without the model, used only when no row of the same model exists.
fn cell(r: &Row) -> (&str, &str, &str) {
    (&r.suite, &r.attack, &r.defense)
}

/// The new run's row for `b`: the same model when there is one; otherwise the only row of
/// that cell under another model, which the caller reports as a model change.
fn counterpart<'a>(b: &Row, new: &'a [Row]) -> Option<&'a Row> {
    if let Some(n) = new.iter().find(|n| key(n) == key(b)) {
        return Some(n);
    }
    let mut same_cell = new.iter().filter(|n| cell(n) == cell(b));
    match (same_cell.next(), same_cell.next()) {
        (Some(n), None) => Some(n),
        _ => None,
    }
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
    let mut model_changes = std::collections::BTreeSet::new();
    for b in &base.rows {
        let Some(n) = counterpart(b, &new.rows) else {
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
        if n.model != b.model {
            model_changes.insert((b.model.clone(), n.model.clone()));
        }
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
    for (b, n) in &model_changes {
        writeln!(
            text,
            "warning: the models differ ({b} in the base run, {n} in the new one); \
             rows were paired by suite, attack and defense, so a change may come from the model"
        )
        .unwrap();
    }
    for r in &new.rows {
        if !base
            .rows
            .iter()
            .any(|b| counterpart(b, &new.rows).is_some_and(|n| std::ptr::eq(n, r)))
        {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(rows: Vec<Row>) -> Summary {
        Summary::new(rows, 1, 0)
    }

    fn row(model: &str, asr: f64) -> Row {
        Row {
            suite: "dojo-style/banking".into(),
            attack: "important_instructions".into(),
            defense: "none".into(),
            model: model.into(),
            asr: Some(asr),
            ..Row::default()
        }
    }

    #[test]
    fn a_model_change_is_paired_with_a_warning_and_still_gated() {
        let base = summary(vec![row("sim:oracle", 0.0)]);
        let new = summary(vec![row("sim:obedient", 1.0)]);
        let c = compare(
            &base,
            &new,
            Thresholds {
                max_asr_increase: Some(1.0),
                max_utility_drop: None,
            },
        );
        assert!(c.failed);
        assert!(c.text.contains("the models differ"), "{}", c.text);
        assert!(!c.text.contains("new row"), "{}", c.text);
    }

    #[test]
    fn the_same_model_is_preferred_over_another_one() {
        let base = summary(vec![row("m1", 0.5)]);
        let new = summary(vec![row("m2", 1.0), row("m1", 0.5)]);
        let c = compare(
            &base,
            &new,
            Thresholds {
                max_asr_increase: Some(0.0),
                max_utility_drop: None,
            },
        );
        assert!(!c.failed, "{}", c.text);
        assert!(!c.text.contains("the models differ"));
        assert!(c.text.contains("new row (not gated)"));
    }
}
