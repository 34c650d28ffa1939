//! Adaptive searches in a report: a folder `attack search` wrote (or merged), given to
//! `report` beside or instead of run folders. It brings its ASR@k curve (a figure of the
//! HTML report and of `--figures`) and its cost table, in the cost columns every table
//! uses. See docs/adaptive-attacks.md.

use super::ReportError;
use super::columns::{Column, Grid, Show, Value};
use crate::search::Outcomes;
use crate::search::output::{CURVE_JSON, CurveFile, RESULT, TARGETS};
use sieve_record::{Component, CostMeter, CostTotals};
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
    dir.join(CURVE_JSON).is_file() && !dir.join(sieve_record::EPISODES).is_file()
}

/// A file of the search folder, as text: failing to read it is a read failure, as for a
/// run's files.
fn read(path: &Path) -> Result<String, ReportError> {
    std::fs::read_to_string(path).map_err(|source| ReportError::Read {
        path: path.to_path_buf(),
        source,
    })
}

fn outcomes(path: &Path) -> Result<Outcomes, ReportError> {
    serde_json::from_str(&read(path)?).map_err(|e| {
        ReportError::Malformed(format!("{}: not a search's results: {e}", path.display()))
    })
}

/// Reads a search folder: its curve and each target's results.
pub fn load(dir: &Path) -> Result<SearchDoc, ReportError> {
    let curve_path = dir.join(CURVE_JSON);
    let curve = CurveFile::parse(&read(&curve_path)?, &curve_path)
        .map_err(|e| ReportError::Malformed(e.to_string()))?;
    let mut searches = Vec::new();
    let targets = dir.join(TARGETS);
    if targets.is_dir() {
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(&targets)
            .map_err(|source| ReportError::Read {
                path: targets.clone(),
                source,
            })?
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A search folder's file that cannot be read is a read failure (exit 1, as a run's
    /// unreadable file); one that reads but is not a curve is malformed content.
    #[test]
    fn an_unreadable_search_file_is_a_read_failure_and_a_bad_one_malformed() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join(CURVE_JSON)).unwrap();
        assert!(matches!(load(tmp.path()), Err(ReportError::Read { .. })));
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join(CURVE_JSON), "[1, 2]").unwrap();
        let e = load(tmp.path()).unwrap_err();
        assert!(matches!(e, ReportError::Malformed(_)), "{e:?}");
        assert!(e.to_string().contains("not an ASR@k curve"), "{e}");
    }
}
