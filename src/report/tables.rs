//! The report's tables as column lists over summary rows: the summary itself, and the
//! paper's views of it (main, per suite, per attack, efficiency by role, why attacks
//! succeed). Each metric is one column here; every format renders these grids.

use super::columns::{Better, Column, Grid, Show, Value};
use crate::metrics::{ALL_SUITES, Rate, Row};
use crate::model::Component;

/// The order rows appear in: suites, attacks and defenses as the command line named
/// them (the micro-averaged `all` suite last); names it does not know follow in
/// alphabetical order.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Order {
    pub suites: Vec<String>,
    pub attacks: Vec<String>,
    pub defenses: Vec<String>,
}

impl Order {
    /// Appends another run's order, keeping first appearances.
    pub fn extend(&mut self, other: &Order) {
        for (mine, theirs) in [
            (&mut self.suites, &other.suites),
            (&mut self.attacks, &other.attacks),
            (&mut self.defenses, &other.defenses),
        ] {
            for n in theirs {
                if !mine.contains(n) {
                    mine.push(n.clone());
                }
            }
        }
    }

    fn rank(list: &[String], name: &str) -> (usize, String) {
        let i = if name == ALL_SUITES {
            usize::MAX
        } else {
            list.iter().position(|n| n == name).unwrap_or(list.len())
        };
        (i, name.to_string())
    }

    /// Sorts rows: suite, attack, defense, then model as first seen.
    pub fn sort(&self, rows: &mut [Row]) {
        let mut models: Vec<String> = Vec::new();
        for r in rows.iter() {
            if !models.contains(&r.model) {
                models.push(r.model.clone());
            }
        }
        rows.sort_by_cached_key(|r| {
            (
                Self::rank(&self.suites, &r.suite),
                Self::rank(&self.attacks, &r.attack),
                Self::rank(&self.defenses, &r.defense),
                Self::rank(&models, &r.model),
            )
        });
    }
}

/// The error rate with its interval: errored episodes ÷ all episodes of the row.
pub fn error_rate(r: &Row) -> Value {
    Rate::new(r.errors, r.episodes).map_or(Value::Missing, |x| Value::Rate {
        v: x.value,
        ci: Some([x.lo, x.hi]),
    })
}

/// One end of a per-seed range, as a rate column for files.
fn seed_end(range: Option<[f64; 2]>, i: usize) -> Value {
    Value::rate(range.map(|r| r[i]), None)
}

/// The identifying columns of a summary row.
fn key_columns<'a>() -> Vec<Column<'a, Row>> {
    vec![
        Column::key(
            "suite",
            "Suite",
            "Suite (`family/name`), or `all`: episodes of every suite pooled (micro-average).",
            |r: &Row| r.suite.clone(),
        ),
        Column::key(
            "attack",
            "Attack",
            "Attack template; `none` for a run without attacks.",
            |r: &Row| r.attack.clone(),
        ),
        Column::key(
            "defense",
            "Defense",
            "Defense as named on the command line.",
            |r: &Row| r.defense.clone(),
        ),
        Column::key(
            "model",
            "Model",
            "The agent's model as resolved (`sim:…` is the scripted agent).",
            |r: &Row| r.model.clone(),
        ),
    ]
}

/// Every column of the summary, in display order.
pub fn summary_columns<'a>() -> Vec<Column<'a, Row>> {
    let mut c = key_columns();
    c.extend([
        Column::figure(
            "simulated",
            "Simulated",
            "true when some role of the row was the scripted `sim` model, not an LLM.",
            Show::File,
            |r: &Row| Value::Text(r.simulated.to_string()),
        ),
        Column::figure(
            "n_attacked",
            "n",
            "Attacked episodes: the denominator of ASR and UA.",
            Show::Default,
            |r: &Row| Value::Count(r.n_attacked),
        ),
        Column::figure(
            "asr",
            "ASR %",
            "Attack success rate: attacked episodes whose security check held ÷ attacked episodes.",
            Show::Default,
            |r: &Row| Value::rate(r.asr, r.asr_ci),
        )
        .better(Better::Lower)
        .with_interval(),
        Column::figure(
            "ua",
            "UA %",
            "Utility under attack: attacked episodes whose user task was still solved ÷ attacked episodes.",
            Show::Default,
            |r: &Row| Value::rate(r.ua, r.ua_ci),
        )
        .better(Better::Higher)
        .with_interval(),
        Column::figure(
            "bu",
            "BU %",
            "Benign utility: clean episodes solved ÷ clean episodes.",
            Show::Default,
            |r: &Row| Value::rate(r.bu, r.bu_ci),
        )
        .better(Better::Higher)
        .with_interval(),
        Column::figure(
            "error_rate",
            "Err %",
            "Errored episodes ÷ all episodes of the row (clean and attacked), with its 95% Wilson interval.",
            Show::Default,
            error_rate,
        )
        .better(Better::Lower)
        .with_interval(),
        Column::figure(
            "tokens_per_episode",
            "Tok/ep",
            "Tokens (prompt + completion, every role and embeddings) per episode.",
            Show::Default,
            |r: &Row| Value::num(Some(r.tokens_per_episode), 0),
        )
        .better(Better::Lower),
        Column::figure(
            "calls_per_episode",
            "Calls/ep",
            "Model and embedding API calls per episode, every role.",
            Show::Default,
            |r: &Row| Value::num(Some(r.calls_per_episode), 1),
        )
        .better(Better::Lower),
        Column::figure(
            "n_clean",
            "n clean",
            "Clean (no attack) episodes: the denominator of BU.",
            Show::Extra,
            |r: &Row| Value::Count(r.n_clean),
        ),
        Column::figure(
            "w_asr",
            "W-ASR %",
            "Severity-weighted ASR: Σ severity × success ÷ Σ severity over attacked episodes (this project's definition).",
            Show::Extra,
            |r: &Row| Value::rate(r.w_asr, None),
        )
        .better(Better::Lower),
        Column::figure(
            "eds",
            "EDS %",
            "Effective defense score: harmonic mean of (1 − ASR) and UA, 0 when either is 0 (this project's definition).",
            Show::Extra,
            |r: &Row| Value::rate(r.eds, None),
        )
        .better(Better::Higher),
        Column::figure(
            "token_overhead_vs_none",
            "×none",
            "Tokens per episode ÷ those of `none` on the same suite, attack and model.",
            Show::Extra,
            |r: &Row| r.token_overhead_vs_none.map_or(Value::Missing, Value::Factor),
        ),
        Column::figure(
            "escalation_rate",
            "Esc %",
            "Proposed tool calls sent to a semantic judge ÷ proposed calls.",
            Show::Extra,
            |r: &Row| Value::rate(r.escalation_rate, None),
        ),
        Column::figure(
            "judge_calls_per_episode",
            "Judge/ep",
            "Judge model calls per episode.",
            Show::Extra,
            |r: &Row| Value::num(Some(r.judge_calls_per_episode), 2),
        ),
        Column::figure(
            "too_many_errors",
            "!",
            "`!` when the row's error rate exceeds the run's --max-error-rate: its rates rest on too few episodes.",
            Show::Extra,
            |r: &Row| {
                if r.too_many_errors {
                    Value::Text("!".into())
                } else {
                    Value::Missing
                }
            },
        ),
        Column::figure(
            "errors",
            "Err",
            "Errored episodes (their own outcome, outside the rates' denominators unless errors_as is agentdojo).",
            Show::File,
            |r: &Row| Value::Count(r.errors),
        ),
        Column::figure(
            "episodes",
            "Episodes",
            "All of the row's episodes, errored included: the error rate's n.",
            Show::File,
            |r: &Row| Value::Count(r.episodes),
        ),
        Column::figure(
            "errors_as",
            "Errors as",
            "How errored episodes count in rates: excluded (their own outcome) or agentdojo (utility false, attack succeeded).",
            Show::File,
            |r: &Row| Value::Text(r.errors_as.as_str().into()),
        ),
        Column::figure(
            "seeds",
            "Seeds",
            "Distinct seeds among the row's episodes.",
            Show::Extra,
            |r: &Row| Value::Count(r.seeds),
        ),
        Column::figure(
            "hit_step_limit",
            "Step cap",
            "Episodes that reached --max-steps.",
            Show::Extra,
            |r: &Row| Value::Count(r.hit_step_limit),
        ),
        Column::figure(
            "blocked",
            "Blocked",
            "Tool calls the defense blocked, over all episodes of the row.",
            Show::Extra,
            |r: &Row| Value::Count(r.blocked),
        ),
        Column::figure(
            "asked_user",
            "Asked",
            "Tool calls the defense referred to the user (counted as blocks too).",
            Show::File,
            |r: &Row| Value::Count(r.asked_user),
        ),
        Column::figure(
            "faked",
            "Faked",
            "Tool calls answered with a fake result.",
            Show::File,
            |r: &Row| Value::Count(r.faked),
        ),
        Column::figure(
            "prompt_tokens_per_episode",
            "Prompt tok/ep",
            "Prompt tokens per episode (embedding inputs included).",
            Show::File,
            |r: &Row| Value::num(Some(r.prompt_tokens_per_episode), 0),
        ),
        Column::figure(
            "completion_tokens_per_episode",
            "Compl tok/ep",
            "Completion tokens per episode.",
            Show::File,
            |r: &Row| Value::num(Some(r.completion_tokens_per_episode), 0),
        ),
        Column::figure(
            "success_via_layer1",
            "Succ L1",
            "sieve/audit: successful attacks whose injected call passed layer 1 (provenance bypass).",
            Show::Extra,
            |r: &Row| r.success_via_layer1.map_or(Value::Missing, Value::Count),
        ),
        Column::figure(
            "success_via_adjudicator",
            "Succ Adj",
            "sieve/audit: successful attacks whose injected call the adjudicator approved.",
            Show::Extra,
            |r: &Row| r.success_via_adjudicator.map_or(Value::Missing, Value::Count),
        ),
        Column::figure(
            "success_unchecked",
            "Succ Unchk",
            "sieve/audit: successful attacks no check saw.",
            Show::Extra,
            |r: &Row| r.success_unchecked.map_or(Value::Missing, Value::Count),
        ),
        Column::figure(
            "n_bypass_tagged",
            "n bypass",
            "Attacked episodes on injection tasks tagged provenance_bypass.",
            Show::File,
            |r: &Row| Value::Count(r.n_bypass_tagged),
        ),
        Column::figure(
            "bypass_tagged_success",
            "Bypass",
            "Successful attacks among the provenance_bypass-tagged episodes.",
            Show::Extra,
            |r: &Row| {
                if r.n_bypass_tagged == 0 {
                    Value::Missing
                } else {
                    Value::Part {
                        k: r.bypass_tagged_success,
                        n: r.n_bypass_tagged,
                    }
                }
            },
        ),
        Column::figure(
            "asr_seed_lo",
            "ASR seed min",
            "With several seeds: the lowest ASR over single seeds.",
            Show::File,
            |r: &Row| seed_end(r.asr_seed_range, 0),
        ),
        Column::figure(
            "asr_seed_hi",
            "ASR seed max",
            "With several seeds: the highest ASR over single seeds.",
            Show::File,
            |r: &Row| seed_end(r.asr_seed_range, 1),
        ),
        Column::figure(
            "ua_seed_lo",
            "UA seed min",
            "With several seeds: the lowest UA over single seeds.",
            Show::File,
            |r: &Row| seed_end(r.ua_seed_range, 0),
        ),
        Column::figure(
            "ua_seed_hi",
            "UA seed max",
            "With several seeds: the highest UA over single seeds.",
            Show::File,
            |r: &Row| seed_end(r.ua_seed_range, 1),
        ),
        Column::figure(
            "bu_seed_lo",
            "BU seed min",
            "With several seeds: the lowest BU over single seeds.",
            Show::File,
            |r: &Row| seed_end(r.bu_seed_range, 0),
        ),
        Column::figure(
            "bu_seed_hi",
            "BU seed max",
            "With several seeds: the highest BU over single seeds.",
            Show::File,
            |r: &Row| seed_end(r.bu_seed_range, 1),
        ),
        Column::figure(
            "dollars_per_episode",
            "$/ep",
            "Dollars per episode at the run's --price-per-mtok (empty when unpriced).",
            Show::Extra,
            |r: &Row| Value::num(r.dollars_per_episode, 4),
        )
        .better(Better::Lower),
    ]);
    c
}

/// Rows compete for "best" with the other defenses of their suite, attack and model.
fn defense_group(r: &Row) -> String {
    format!("{}\u{1f}{}\u{1f}{}", r.suite, r.attack, r.model)
}

/// The summary: one row per suite × attack × defense × model.
pub fn summary(rows: &[Row]) -> Grid {
    let mut columns = summary_columns();
    if rows.iter().all(|r| r.dollars_per_episode.is_none()) {
        columns.retain(|c| c.spec.id != "dollars_per_episode");
    }
    let mut g = Grid::build("summary", "Summary", columns, rows, defense_group);
    g.links = rows
        .iter()
        .map(|r| Some(cell_id(&r.suite, &r.attack, &r.defense, &r.model)))
        .collect();
    g
}

/// The drill-down anchor of a suite × attack × defense × model cell.
pub fn cell_id(suite: &str, attack: &str, defense: &str, model: &str) -> String {
    let raw = format!("{suite}|{attack}|{defense}|{model}");
    let mut id = String::from("cell-");
    for c in raw.chars() {
        if c.is_ascii_alphanumeric() {
            id.push(c);
        } else {
            id.push_str(&format!("_{:x}", c as u32));
        }
    }
    id
}

/// Efficiency by role: tokens and calls per episode of each component.
pub fn efficiency(rows: &[Row]) -> Grid {
    let mut columns = key_columns();
    for comp in Component::ALL {
        let name = comp.as_str();
        if rows.iter().any(|r| r.calls_by_component.contains_key(name)) {
            columns.push(
                Column::figure(
                    format!("tokens_{name}"),
                    format!("{name} tok"),
                    format!("Tokens per episode spent by the {name}."),
                    Show::Default,
                    move |r: &Row| Value::num(r.tokens_by_component.get(name).copied(), 0),
                )
                .better(Better::Lower),
            );
            columns.push(Column::figure(
                format!("calls_{name}"),
                format!("{name} calls"),
                format!("API calls per episode made by the {name}."),
                Show::Default,
                move |r: &Row| Value::num(r.calls_by_component.get(name).copied(), 2),
            ));
        }
    }
    columns.push(Column::figure(
        "token_overhead_vs_none",
        "×none",
        "Tokens per episode ÷ those of `none` on the same suite, attack and model.",
        Show::Default,
        |r: &Row| {
            r.token_overhead_vs_none
                .map_or(Value::Missing, Value::Factor)
        },
    ));
    Grid::build(
        "efficiency",
        "Efficiency by role",
        columns,
        rows,
        defense_group,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_follows_the_command_line_and_puts_all_last() {
        let mk = |s: &str, d: &str| {
            let mut r = crate::report::tests::row(d, 0.5, true);
            r.suite = s.into();
            r
        };
        let mut rows = vec![
            mk(ALL_SUITES, "none"),
            mk("f/b", "sieve"),
            mk("f/a", "none"),
            mk("f/b", "none"),
            mk("f/a", "sieve"),
        ];
        let order = Order {
            suites: vec!["f/b".into(), "f/a".into()],
            attacks: vec![],
            defenses: vec!["sieve".into(), "none".into()],
        };
        order.sort(&mut rows);
        let got: Vec<(String, String)> = rows
            .iter()
            .map(|r| (r.suite.clone(), r.defense.clone()))
            .collect();
        let want = [
            ("f/b", "sieve"),
            ("f/b", "none"),
            ("f/a", "sieve"),
            ("f/a", "none"),
            (ALL_SUITES, "none"),
        ];
        assert_eq!(
            got,
            want.map(|(a, b)| (a.to_string(), b.to_string())).to_vec()
        );
    }

    #[test]
    fn cell_ids_are_unique_and_html_safe() {
        let a = cell_id("f/a", "x", "sieve:no_sem", "sim:p=0.5");
        assert!(
            a.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        );
        assert_ne!(a, cell_id("f/a", "x", "sieve:no-sem", "sim:p=0.5"));
    }
}
