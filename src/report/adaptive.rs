//! Adaptive searches in a report: a folder `attack search` wrote (or merged), given to
//! `report` beside or instead of run folders. It brings its ASR@k curve (a figure of the
//! HTML report and of `--figures`) and its cost table, in the cost columns every table
//! uses. See docs/adaptive-attacks.md.

use super::columns::{Column, Grid, Show, Value};
use crate::model::{Component, CostMeter, CostTotals};
use crate::search::Outcomes;
use crate::search::output::{CURVE_JSON, CurveFile, RESULT, TARGETS};
use std::path::{Path, PathBuf};

/// One search folder as a report reads it.
#[derive(Clone, Debug)]
pub struct SearchDoc {
    pub dir: PathBuf,
    pub curve: CurveFile,
    /// Each optimisation target's results (one for a single-target search).
    pub searches: Vec<Outcomes>,
}

/// Whether `dir` is a search folder (an ASR@k curve and no episode records).
pub fn is_search(dir: &Path) -> bool {
    dir.join(CURVE_JSON).is_file() && !dir.join(crate::record::EPISODES).is_file()
}

fn outcomes(path: &Path) -> Result<Outcomes, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text)
        .map_err(|e| format!("{}: not a search's results: {e}", path.display()))
}

/// Reads a search folder: its curve and each target's results.
pub fn load(dir: &Path) -> Result<SearchDoc, String> {
    let curve = CurveFile::read(dir)?;
    let mut searches = Vec::new();
    let targets = dir.join(TARGETS);
    if targets.is_dir() {
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(&targets)
            .map_err(|e| format!("{}: {e}", targets.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.join(RESULT).is_file())
            .collect();
        dirs.sort();
        for d in dirs {
            searches.push(outcomes(&d.join(RESULT))?);
        }
    } else {
        searches.push(outcomes(&dir.join(RESULT))?);
    }
    Ok(SearchDoc {
        dir: dir.to_path_buf(),
        curve,
        searches,
    })
}

/// One row of the cost table: one search.
struct CostRow<'a> {
    unit: String,
    o: &'a Outcomes,
}

fn component_of<'m>(meter: &'m CostMeter, name: &str) -> Option<&'m CostTotals> {
    meter
        .by_component
        .iter()
        .find(|(c, _)| c.as_str() == name)
        .map(|(_, t)| t)
}

/// The searches' cost, one row each, in the columns every cost table uses
/// ([`super::tables::component_columns`]): calls and tokens of each victim component and
/// of the `attacker`, over the search (held-out scoring included).
pub fn cost_grid(searches: &[&Outcomes]) -> Grid {
    let rows: Vec<CostRow> = searches
        .iter()
        .map(|o| CostRow {
            unit: o.settings.unit.label(),
            o,
        })
        .collect();
    let mut present: Vec<Component> = searches
        .iter()
        .flat_map(|o| o.cost.by_component.keys().copied())
        .collect();
    present.sort();
    present.dedup();
    let mut columns: Vec<Column<CostRow>> = vec![
        Column::key(
            "unit",
            "Unit",
            "The search's optimisation unit.",
            |r: &CostRow| r.unit.clone(),
        ),
        Column::figure(
            "episodes",
            "Episodes",
            "Victim episodes the search ran (held-out scoring included).",
            Show::Default,
            |r: &CostRow| Value::Count((r.o.episodes + r.o.heldout_episodes) as u64),
        ),
        Column::figure(
            "queries",
            "Queries",
            "Attacker queries (proposals).",
            Show::Default,
            |r: &CostRow| Value::Count(r.o.queries as u64),
        ),
    ];
    columns.extend(super::tables::component_columns(
        &present,
        "over the search",
        0,
        |r: &CostRow, name| component_of(&r.o.cost, name).map(|t| t.tokens() as f64),
        |r: &CostRow, name| component_of(&r.o.cost, name).map(|t| t.calls as f64),
        |r: &CostRow, name| component_of(&r.o.cost, name).is_some_and(|t| t.estimated),
    ));
    // Each search is its own group: no row is marked best.
    let mut g = Grid::build("search-cost", "Adaptive search cost", columns, &rows, |r| {
        r.unit.clone()
    });
    if searches.iter().any(|o| o.simulated) {
        g.notes.push(
            "SIMULATED: some role is scripted; `~` marks tokens counted locally with cl100k_base, not reported by an endpoint.".into(),
        );
    }
    if searches
        .iter()
        .any(|o| o.settings.attacker == crate::search::attacker::SIM_ATTACKER)
    {
        g.notes.push(
            "attacker = sim-attacker (scripted, calls no model): one call per proposal, with the tokens an attacker model would spend on the same exchange (its prompt and the proposal between tags).".into(),
        );
    }
    g
}
