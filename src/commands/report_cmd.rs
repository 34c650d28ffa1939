//! `report` and `compare`: re-render and gate from records alone.

use super::CliError;
use crate::report::formats::{self, Format};
use crate::report::text::TableFlags;
use crate::report::{self, Document, compare::Thresholds, tables::TABLE_IDS};
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// `report`'s options.
#[derive(clap::Args, Clone, Debug)]
pub struct ReportArgs {
    /// Run directories (what `run --out` names). Several runs are merged by episode key
    /// into one report (e.g. two models); runs recorded with different settings are refused.
    /// A search folder (what `attack search --out` names, or `attack merge`) adds its
    /// ASR@k figure to the HTML report (and `--figures`) and its cost table.
    #[arg(required = true, value_name = "RUN")]
    pub runs: Vec<PathBuf>,
    /// Output format. Default: the terminal table; with one run and no --format, the
    /// run's summary.{json,csv,md} are also rewritten from its records.
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    /// Write to this file instead of standard output.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Tables to include, comma-separated: main, summary, per-suite, per-attack,
    /// ablation (when several SIEVE variants ran), sweeps (when sweep points ran),
    /// per-class (when context samples ran), efficiency, why, reference (with
    /// --reference). Default: summary (and per-class) for the terminal, summary for CSV,
    /// every table for md, json, latex, html; the reference table too when --reference
    /// is given (alone, for CSV).
    #[arg(long, value_delimiter = ',', value_name = "IDS")]
    pub tables: Option<Vec<String>>,
    /// Published AgentDojo results beside the run's rows of AgentDojo's own suites:
    /// `published` (reference/agentdojo-published.csv, the leaderboard's and the defense
    /// papers' figures with their sources) or a CSV file with the same columns. Rows match
    /// by attack (`agentdojo:<name>`) and defense; they are labelled, never pooled or ranked
    /// with the run's, and drawn as hollow points in the HTML figure.
    #[arg(long, value_name = "published|FILE")]
    pub reference: Option<String>,
    /// Leave out the episodes under a known defect of their benchmark (a broken check,
    /// an unwinnable pair: the suites' known-defects files); every table says how many.
    /// Without it, rows holding some are marked (Defects).
    #[arg(long)]
    pub exclude_known_defects: bool,
    /// Episodes of each outcome (attacked, defended, clean, error) kept per cell for the
    /// HTML drill-down.
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub episodes_per_cell: usize,
    /// Also write each figure of the HTML report as its own SVG file in DIR
    /// (`plot-tradeoff.svg`, `plot-heatmap.svg`, `plot-sweep-0.svg`, …), whatever the
    /// --format; DIR is created when missing.
    #[arg(long, value_name = "DIR")]
    pub figures: Option<PathBuf>,
    #[command(flatten)]
    pub table: TableFlags,
}

/// What a table that some runs lack needs, for the refusal naming it.
fn why_absent(id: &str) -> &'static str {
    match id {
        "ablation" => "it needs records of several SIEVE variants",
        "sweeps" => "it needs a sweep of a SIEVE threshold or weight, from `ablate --sweep`",
        "per-class" => "it needs episodes of context-aware samples, from `--attack context`",
        "reference" => "it needs `--reference published`",
        _ => "the records hold nothing it can show",
    }
}

/// The tables a format shows.
fn selected(
    doc: &Document,
    args: &ReportArgs,
    format: Format,
) -> Result<Vec<report::Grid>, CliError> {
    let reference = args.reference.is_some();
    let ids: Vec<String> = match &args.tables {
        Some(ids) => ids.clone(),
        None if format == Format::Csv && reference => vec!["reference".into()],
        None if format == Format::Csv => vec!["summary".into()],
        // The terminal shows what `run` printed: the summary, and the per-class table
        // when context samples ran (and the reference table when asked for).
        None if format == Format::Table => {
            vec!["summary".into(), "per-class".into(), "reference".into()]
        }
        None => TABLE_IDS.iter().map(|s| s.to_string()).collect(),
    };
    let mut out = Vec::new();
    for id in &ids {
        match doc.tables.iter().find(|g| &g.id == id) {
            Some(g) => out.push(g.clone()),
            None if TABLE_IDS.contains(&id.as_str()) && args.tables.is_none() => {}
            None if TABLE_IDS.contains(&id.as_str()) => {
                return Err(CliError::bad_input(format!(
                    "--tables: these runs have no `{id}` table ({})",
                    why_absent(id)
                )));
            }
            None => {
                return Err(CliError::bad_input(format!(
                    "--tables: no table `{id}`{}; tables: {}",
                    crate::suggest::did_you_mean(id, TABLE_IDS.iter().copied()),
                    TABLE_IDS.join(", ")
                )));
            }
        }
    }
    Ok(out)
}

/// Renders the report; returns what goes to standard output (empty with --out).
pub fn report(args: &ReportArgs) -> Result<String, CliError> {
    let per_cell = if args.format == Some(Format::Html) {
        args.episodes_per_cell
    } else {
        0
    };
    let reference = args
        .reference
        .as_deref()
        .map(report::published::load)
        .transpose()?;
    let doc = report::document_with(
        &args.runs,
        per_cell,
        reference.as_ref(),
        args.exclude_known_defects,
    )?;
    let format = args.format.unwrap_or(Format::Table);
    // A report reads runs and writes only where --out (and --figures) say: a run's own
    // summary files are `run`'s and `merge`'s, written under the folder's lock.
    if let Some(dir) = &args.figures {
        write_figures(&doc, dir)?;
    }
    let mut grids = selected(&doc, args, format)?;
    // A search folder brings its cost table (a CSV holds it only without runs).
    if !doc.searches.is_empty()
        && args.tables.is_none()
        && (format != Format::Csv || grids.is_empty())
    {
        let all: Vec<&crate::search::Outcomes> =
            doc.searches.iter().flat_map(|s| &s.searches).collect();
        grids.push(report::adaptive::cost_grid(&all));
    }
    let malformed = doc.summary.malformed_lines;
    let mut text = match format {
        Format::Table => {
            let opts = args.table.options();
            let mut out = String::new();
            for (i, g) in grids.iter().enumerate() {
                let mut g = g.clone();
                if g.id == "summary" {
                    g = report::summary_grid(&doc.summary);
                } else {
                    g.hoist_constant_keys();
                }
                if i > 0 {
                    out.push('\n');
                }
                if grids.len() > 1 {
                    writeln!(out, "{}", g.title).unwrap();
                }
                out.push_str(&crate::report::text::render(&g, &opts)?);
            }
            out
        }
        Format::Md => {
            let mut out = String::from("# sieve-bench report\n\n");
            for g in &grids {
                let mut g = formats::readable(g);
                g.hoist_constant_keys();
                out.push_str(&formats::markdown(&g));
                out.push('\n');
            }
            writeln!(
                out,
                "{} episodes; generated by {}.",
                doc.summary.episodes, doc.summary.generated_by
            )
            .unwrap();
            out
        }
        Format::Csv => {
            if grids.len() != 1 {
                return Err(CliError::bad_input(
                    "--format csv holds one table: name one with --tables",
                ));
            }
            formats::csv(&grids[0]).map_err(|e| CliError::failed(e.to_string()))?
        }
        Format::Json => {
            let j = serde_json::json!({
                "generated_by": doc.summary.generated_by,
                "simulated": doc.summary.simulated,
                "note": doc.summary.note,
                "partial": doc.summary.partial,
                "episodes": doc.summary.episodes,
                "runs": doc.runs,
                "tables": grids.iter().map(formats::json).collect::<Vec<_>>(),
            });
            serde_json::to_string_pretty(&j).expect("json") + "\n"
        }
        Format::Latex => latex(&doc, &grids, args.table.wide),
        Format::Html => {
            let mut d = doc;
            d.tables = grids;
            report::html::render(&d)
        }
    };
    let mut warn = String::new();
    if malformed > 0 {
        warn.push_str(&format!(
            "warning: {malformed} malformed line(s) in episodes.jsonl were skipped\n"
        ));
    }
    match &args.out {
        Some(path) => {
            refuse_run_file(path, &args.runs)?;
            // Through a temporary file and a rename: a full disk keeps the previous file.
            crate::runner::files::write_atomic(path, text.as_bytes())
                .map_err(|e| CliError::failed(format!("cannot write {}: {e}", path.display())))?;
            text = warn;
        }
        None => text.push_str(&warn),
    }
    Ok(text)
}

/// The LaTeX of the selected tables: each split to fit the text width, the page-wide
/// notes once, under the first. With `wide`, each rate's interval and the episode counts.
fn latex(doc: &Document, grids: &[report::Grid], wide: bool) -> String {
    let page_wide: Vec<&String> = doc
        .summary
        .partial
        .iter()
        .chain(&doc.summary.note)
        .collect();
    formats::latex_report(grids, &page_wide, doc.summary.note.is_some(), wide)
}

/// Writes every figure of the report as `DIR/<id>.svg`, a standalone SVG file.
fn write_figures(doc: &Document, dir: &Path) -> Result<(), CliError> {
    std::fs::create_dir_all(dir)
        .map_err(|e| CliError::failed(format!("cannot create {}: {e}", dir.display())))?;
    for f in report::html::figure_list(doc) {
        let path = dir.join(format!("{}.svg", f.id));
        let text = format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n{}\n", f.svg);
        crate::runner::files::write_atomic(&path, text.as_bytes())
            .map_err(|e| CliError::failed(format!("cannot write {}: {e}", path.display())))?;
    }
    Ok(())
}

/// `--out` naming a file a run folder's command writes (its records, its summary), in a
/// run that is read or any other: refused, as `run` and `merge` own those files.
fn refuse_run_file(path: &Path, runs: &[PathBuf]) -> Result<(), CliError> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let in_run =
        dir.join(sieve_record::RUN_INFO).is_file() || runs.iter().any(|r| same_dir(r, &dir));
    if in_run && crate::runner::files::RUN_FILES.contains(&name) {
        return Err(CliError::bad_input(format!(
            "--out {}: `{name}` is a file of the run in {}; `report` writes a report elsewhere and never over a run's own files",
            path.display(),
            dir.display()
        )));
    }
    Ok(())
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// Re-renders one run's summary files and returns the tables `run` prints (what `merge`
/// prints).
/// Rows whose error rate exceeds `max_error_rate` percent are marked `!`, as `run` marks them.
pub fn rerender(
    dir: &Path,
    max_error_rate: f64,
    opts: &report::TextOptions,
) -> Result<String, CliError> {
    let (mut summary, mut loaded) = report::read_run(dir, report::runs::Keep::default())?;
    summary.mark_error_rates(max_error_rate);
    report::write_all(dir, &summary)
        .map_err(|e| CliError::failed(format!("writing summary: {e}")))?;
    let main = super::run::summary::main_table(&summary, &mut loaded);
    let mut out = super::run::summary::tables_text(&summary, main.as_ref(), opts)?;
    if summary.malformed_lines > 0 {
        out.push_str(&format!(
            "warning: {} malformed line(s) in episodes.jsonl were skipped\n",
            summary.malformed_lines
        ));
    }
    Ok(out)
}

/// Compares two runs; `Ok((text, failed))`. `pairs` are `--pair BASE=NEW` specs.
pub fn compare(
    base: &Path,
    new: &Path,
    t: Thresholds,
    pairs: &[String],
) -> Result<(String, Option<String>), CliError> {
    compare_fitted(base, new, t, pairs, &report::TextOptions::detect())
}

/// [`compare`] with the table fitted to `opts`: the text, and why the gate failed when
/// it did.
pub fn compare_fitted(
    base: &Path,
    new: &Path,
    t: Thresholds,
    pairs: &[String],
    opts: &report::TextOptions,
) -> Result<(String, Option<String>), CliError> {
    let side = |dir: &Path| -> Result<report::compare::Side, CliError> {
        // A run's summary and its pair table from one read of its records; a committed
        // baseline without records has its summary.json alone, and no pairs.
        let keep = report::runs::Keep {
            pairs: true,
            ..Default::default()
        };
        let (summary, loaded) = report::load(dir, keep)?;
        Ok(report::compare::Side {
            summary,
            records: loaded.and_then(|l| l.pairs),
            name: dir.display().to_string(),
        })
    };
    refuse_other_origins(base, new)?;
    let b = side(base)?;
    let n = side(new)?;
    if b.summary.rows.is_empty() {
        return Err(CliError::bad_input(format!(
            "{}: the baseline has no rows, so nothing would be gated",
            base.display()
        )));
    }
    let defenses = |s: &report::compare::Side| {
        let mut d: Vec<String> = s.summary.rows.iter().map(|r| r.defense.clone()).collect();
        d.sort();
        d.dedup();
        d
    };
    let pairs = pairs
        .iter()
        .map(|p| report::compare::PairSpec::parse(p, &defenses(&b), &defenses(&n)))
        .collect::<Result<Vec<_>, _>>()?;
    let c = report::compare::compare(&b, &n, t, &pairs, opts)?;
    let failure = c.failure();
    let mut text = c.text;
    for w in served_model_warnings(base, new) {
        text.push_str(&w);
        text.push('\n');
    }
    Ok((text, failure))
}

/// Runs of a bridged package from different distributions (a fork under the same name
/// and version, another release) measure different code: `compare` refuses to pair them,
/// naming the package and both origins from each run's `run.json`. A run without
/// `run.json` (a committed summary) or recorded before origins were is not refused.
fn refuse_other_origins(base: &Path, new: &Path) -> Result<(), CliError> {
    use crate::commands::run::extra::{PackageRecord, packages};
    use crate::runner::manifest::{Found, read};
    let recorded = |dir: &Path| match read(dir) {
        Found::Manifest(m) => packages(&m.settings)
            .map_err(|e| CliError::bad_input(format!("{}: run.json: {e}", dir.display()))),
        _ => Ok(Vec::new()),
    };
    let (b, n) = (recorded(base)?, recorded(new)?);
    for (package, theirs) in &b {
        if let Some((_, ours)) = n.iter().find(|(p, _)| p == package)
            && ours != theirs
        {
            let show = |r: &PackageRecord| match &r.origin {
                Some(o) => format!("{}, {}", r.version, o.label()),
                None => format!("{}, origin not recorded", r.version),
            };
            return Err(CliError::bad_input(format!(
                "{} and {} ran different distributions of `{package}` (base: {}; new: {}): their rows measure different code and are not paired",
                base.display(),
                new.display(),
                show(theirs),
                show(ours)
            )));
        }
    }
    Ok(())
}

/// Warnings where the two runs' manifests say different models served a role (an
/// alias that moved to another snapshot between them, say).
fn served_model_warnings(base: &Path, new: &Path) -> Vec<String> {
    use crate::runner::manifest::{Found, read};
    let served = |dir: &Path| match read(dir) {
        Found::Manifest(m) => m.served_models,
        _ => Default::default(),
    };
    let (b, n) = (served(base), served(new));
    let mut roles: Vec<_> = b.keys().chain(n.keys()).copied().collect();
    roles.sort();
    roles.dedup();
    let show = |l: Option<&sieve_record::Lineage>| {
        l.filter(|l| !l.served.is_empty())
            .map_or("not recorded".to_string(), |l| {
                l.served.iter().cloned().collect::<Vec<_>>().join(", ")
            })
    };
    roles
        .into_iter()
        .filter(|c| b.get(c).map(|l| &l.served) != n.get(c).map(|l| &l.served))
        .map(|c| {
            format!(
                "warning: the served models differ for the {}: {} in the base run, {} in the new one (from each run.json); a change may come from the model",
                c.as_str(),
                show(b.get(&c)),
                show(n.get(&c))
            )
        })
        .collect()
}

/// A `compare` flag's value that its parser refuses (clap prints it after the flag's
/// name), holding the value as given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompareFlagError {
    #[error("`{0}` is not a significance level (a number in (0, 1), e.g. 0.05)")]
    Alpha(String),
    #[error("`{0}` is not a threshold in percentage points (finite, >= 0)")]
    Points(String),
}

/// Parses a significance level: a probability strictly between 0 and 1.
pub fn parse_alpha(s: &str) -> Result<f64, CompareFlagError> {
    s.trim()
        .parse::<f64>()
        .ok()
        .filter(|v| *v > 0.0 && *v < 1.0)
        .ok_or_else(|| CompareFlagError::Alpha(s.to_string()))
}

/// Parses a threshold in percentage points: a finite number, at least 0 (NaN would
/// make every comparison false and pass every gate).
pub fn parse_points(s: &str) -> Result<f64, CompareFlagError> {
    s.trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
        .ok_or_else(|| CompareFlagError::Points(s.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each refusal keeps the value as given and the words clap prints after the flag.
    #[test]
    fn compare_flags_refuse_with_their_kind_and_words() {
        assert_eq!(parse_alpha(" 0.05 ").unwrap(), 0.05);
        for bad in ["1", "0", "nan", "five"] {
            let e = parse_alpha(bad).unwrap_err();
            assert_eq!(e, CompareFlagError::Alpha(bad.into()));
        }
        assert_eq!(
            parse_alpha("1").unwrap_err().to_string(),
            "`1` is not a significance level (a number in (0, 1), e.g. 0.05)"
        );
        assert_eq!(parse_points("0").unwrap(), 0.0);
        for bad in ["-1", "NaN", "inf", ""] {
            let e = parse_points(bad).unwrap_err();
            assert_eq!(e, CompareFlagError::Points(bad.into()));
        }
        assert_eq!(
            parse_points("-1").unwrap_err().to_string(),
            "`-1` is not a threshold in percentage points (finite, >= 0)"
        );
    }
}
