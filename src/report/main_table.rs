//! The paper's main-table layout: one row per defense; for each attack its ASR and UA;
//! then clean utility (BU), tokens and API calls per episode, and the token overhead
//! against `none`. Built from the summary rows of all suites together (the `all` rows
//! when several suites ran), so it is a view of the same figures, never a new count.
//!
//! The table is data ([`MainTable`]: header, cells, footnotes); the renderers below only
//! lay it out, so other report formats can drive the same definition.

use crate::metrics::Row;
use comfy_table::{Cell, CellAlignment, ContentArrangement, Table, presets::UTF8_FULL_CONDENSED};
use std::collections::BTreeMap;
use std::fmt::Write;

/// A laid-out main table.
#[derive(Clone, Debug, PartialEq)]
pub struct MainTable {
    /// What the figures cover: suites, model.
    pub caption: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
    pub footnotes: Vec<String>,
}

/// The marker on rows of defenses that only persuade a real model, in simulated runs.
pub const PERSUASION_MARK: &str = "†";

fn pct(v: Option<f64>) -> String {
    v.map_or("–".into(), |v| format!("{:.1}", v * 100.0))
}

/// Where a defense sorts: registry order first, anything else (plugins, SIEVE
/// variants) after, by name.
fn order(defense: &str) -> (usize, String) {
    let base = defense.split_once(':').map_or(defense, |(n, _)| n);
    let i = crate::defense::REGISTRY
        .iter()
        .position(|e| e.name == base)
        .unwrap_or(usize::MAX);
    (i, defense.to_string())
}

/// Builds the table when the rows hold at least two defenses; `None` otherwise (the
/// summary table already says everything about one).
pub fn build(rows: &[Row]) -> Option<MainTable> {
    let multi_suite = rows.iter().any(|r| r.suite == "all");
    let rows: Vec<&Row> = rows
        .iter()
        .filter(|r| !multi_suite || r.suite == "all")
        .collect();
    let suites: Vec<&str> = {
        let mut s: Vec<&str> = rows.iter().map(|r| r.suite.as_str()).collect();
        s.dedup();
        s
    };
    let models: Vec<&str> = {
        let mut m: Vec<&str> = rows.iter().map(|r| r.model.as_str()).collect();
        m.sort();
        m.dedup();
        m
    };
    let mut attacks: Vec<&str> = rows
        .iter()
        .filter(|r| r.n_attacked > 0)
        .map(|r| r.attack.as_str())
        .collect();
    attacks.sort();
    attacks.dedup();
    // (defense, model) → its rows, one per attack.
    let mut by: BTreeMap<((usize, String), String), Vec<&Row>> = BTreeMap::new();
    for r in &rows {
        by.entry((order(&r.defense), r.model.clone()))
            .or_default()
            .push(r);
    }
    let defenses: Vec<&str> = {
        let mut d: Vec<&str> = rows.iter().map(|r| r.defense.as_str()).collect();
        d.sort();
        d.dedup();
        d
    };
    if defenses.len() < 2 {
        return None;
    }
    let simulated = rows.iter().any(|r| r.simulated);
    let show_model = models.len() > 1;

    // Per-episode cost over all of a defense's episodes (clean ones once).
    let cost = |rs: &[&Row]| -> (f64, f64) {
        let (mut tok, mut calls, mut n) = (0.0, 0.0, 0.0);
        for r in rs {
            let k = (r.n_attacked + r.n_clean) as f64;
            tok += r.tokens_per_episode * k;
            calls += r.calls_per_episode * k;
            n += k;
        }
        if n == 0.0 {
            (0.0, 0.0)
        } else {
            (tok / n, calls / n)
        }
    };
    let none_tokens: BTreeMap<&str, f64> = by
        .iter()
        .filter(|(((_, d), _), _)| d == "none")
        .map(|((_, m), rs)| (m.as_str(), cost(rs).0))
        .collect();

    let mut header = vec!["Defense".to_string()];
    if show_model {
        header.push("Model".into());
    }
    for a in &attacks {
        header.push(format!("{a} ASR %"));
        header.push(format!("{a} UA %"));
    }
    header.extend(
        ["BU %", "Tok/ep", "Calls/ep", "Overhead ×none", "Err"]
            .iter()
            .map(|s| s.to_string()),
    );

    let mut any_persuasion = false;
    let mut out_rows = Vec::new();
    for (((_, defense), model), rs) in &by {
        let mut name = defense.clone();
        if simulated && crate::defense::persuasion_only(defense) {
            name.push_str(PERSUASION_MARK);
            any_persuasion = true;
        }
        let mut cells = vec![name];
        if show_model {
            cells.push(model.clone());
        }
        for a in &attacks {
            let r = rs.iter().find(|r| r.attack == *a);
            cells.push(pct(r.and_then(|r| r.asr)));
            cells.push(pct(r.and_then(|r| r.ua)));
        }
        let bu = rs.iter().find_map(|r| r.bu);
        let (tok, calls) = cost(rs);
        let overhead = none_tokens
            .get(model.as_str())
            .filter(|n| **n > 0.0)
            .map_or("–".to_string(), |n| format!("{:.2}", tok / n));
        // An episode's errors are counted once per attack row it belongs to; clean
        // episodes are shared by every attack row, so take the largest row's count
        // for them and add the attacked ones.
        let errors: u64 = rs.iter().map(|r| r.errors).max().unwrap_or(0);
        cells.extend([
            pct(bu),
            format!("{tok:.0}"),
            format!("{calls:.1}"),
            overhead,
            errors.to_string(),
        ]);
        out_rows.push(cells);
    }

    let mut footnotes = vec![
        "ASR / UA per attack; BU on clean episodes; Tok/ep and Calls/ep over every episode of the defense, all components (agent, planner, judge, detector, embedding); Overhead ×none = Tok/ep ÷ none's Tok/ep with the same model.".to_string(),
        "Err = errored episodes (outside every rate) in the defense's largest attack row.".to_string(),
    ];
    if any_persuasion {
        footnotes.push(format!(
            "{PERSUASION_MARK} works only by persuading a real model (delimiters, a repeated request); the scripted sim agent ignores prompt wording, so this row shows the defense's cost, not its effect."
        ));
    }
    let caption = format!(
        "Main table: {} episodes of {}, model {}{}",
        if multi_suite { "all suites'" } else { "the" },
        if multi_suite {
            "every selected suite".to_string()
        } else {
            suites.first().copied().unwrap_or("?").to_string()
        },
        models.join(", "),
        if simulated { " (SIMULATED)" } else { "" }
    );
    Some(MainTable {
        caption,
        header,
        rows: out_rows,
        footnotes,
    })
}

impl MainTable {
    /// The terminal rendering.
    pub fn terminal(&self) -> String {
        let mut t = Table::new();
        t.load_style(UTF8_FULL_CONDENSED)
            .set_content_arrangement(ContentArrangement::Disabled);
        t.set_header(self.header.iter().map(Cell::new));
        for r in &self.rows {
            t.add_row(r.iter().enumerate().map(|(i, c)| {
                let cell = Cell::new(c);
                if i == 0 {
                    cell
                } else {
                    cell.set_alignment(CellAlignment::Right)
                }
            }));
        }
        let mut out = format!("{}\n{t}\n", self.caption);
        for f in &self.footnotes {
            writeln!(out, "  {f}").unwrap();
        }
        out
    }

    /// The Markdown rendering.
    pub fn markdown(&self) -> String {
        let mut out = format!(
            "## {}\n\n| {} |\n|{}\n",
            self.caption,
            self.header.join(" | "),
            "---|".repeat(self.header.len())
        );
        for r in &self.rows {
            writeln!(out, "| {} |", r.join(" | ")).unwrap();
        }
        out.push('\n');
        for f in &self.footnotes {
            writeln!(out, "- {f}").unwrap();
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(defense: &str, attack: &str, asr: f64, tok: f64) -> Row {
        let mut r: Row = serde_json::from_value(serde_json::json!({
            "suite": "all", "attack": attack, "defense": defense, "model": "sim:obedient",
            "simulated": true, "n_clean": 10, "n_attacked": 30, "asr": asr, "asr_ci": null,
            "w_asr": null, "bu": 0.9, "bu_ci": null, "ua": 0.5, "ua_ci": null, "eds": null,
            "errors": 0, "hit_step_limit": 0, "blocked": 0, "asked_user": 0, "faked": 0,
            "escalation_rate": null, "judge_calls_per_episode": 0.0,
            "tokens_per_episode": tok, "prompt_tokens_per_episode": tok,
            "completion_tokens_per_episode": 0.0, "calls_per_episode": 2.0,
            "tokens_by_component": {}, "calls_by_component": {},
            "token_overhead_vs_none": null
        }))
        .unwrap();
        r.asr = Some(asr);
        r
    }

    #[test]
    fn one_row_per_defense_with_asr_and_ua_per_attack_and_overhead() {
        let rows = vec![
            row("spotlight", "direct", 0.5, 150.0),
            row("none", "important", 1.0, 100.0),
            row("none", "direct", 0.8, 100.0),
            row("spotlight", "important", 0.9, 150.0),
            // Per-suite rows are left out when an `all` row exists.
            Row {
                suite: "banking".into(),
                ..row("none", "direct", 0.0, 1.0)
            },
        ];
        let t = build(&rows).unwrap();
        assert_eq!(
            t.header[..5],
            [
                "Defense",
                "direct ASR %",
                "direct UA %",
                "important ASR %",
                "important UA %"
            ]
        );
        assert_eq!(t.rows.len(), 2);
        assert_eq!(t.rows[0][0], "none", "registry order");
        assert_eq!(
            t.rows[1][0], "spotlight†",
            "persuasion-only rows marked when simulated"
        );
        assert_eq!(t.rows[1][1], "50.0");
        assert_eq!(t.rows[1][3], "90.0");
        assert_eq!(t.rows[1][8], "1.50", "overhead ×none");
        assert!(t.footnotes.iter().any(|f| f.starts_with('†')));
        assert!(t.caption.contains("SIMULATED"));
        assert!(t.markdown().contains("| spotlight† | 50.0 |"));
        assert!(build(&rows[1..3]).is_none(), "one defense: no main table");
    }
}
