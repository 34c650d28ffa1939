//! What a run comes to: its report (status line and verdict), the summary written in
//! every format, the answer judge's agreement, and the tables `run` prints, all from one
//! read of the folder's records.

use super::config::RunConfig;
use crate::aggregate::pairs::PairTable;
use crate::commands::CliError;
use crate::report::{self, Grid, Summary, runs};
use crate::runner::RunOutcome;
use sieve_record::Manifest;
use std::path::{Path, PathBuf};

/// What `run` produced.
pub struct RunReport {
    pub out: PathBuf,
    pub outcome: RunOutcome,
    pub summary: Summary,
    /// `--max-error-rate`, in percent.
    pub max_error_rate: f64,
    /// The answer judge's agreement with the checks, as Markdown (judged runs only).
    pub judge_agreement: Option<String>,
    /// With more than two defenses: the paper's main table, one row per defense.
    pub main: Option<Grid>,
    /// With more than two defenses: every episode as paired tests need it (`ablate`
    /// pairs its rows with the reference's from these).
    pub pairs: Option<PairTable>,
}

impl RunReport {
    /// A line on what ran, for the terminal.
    pub fn status(&self) -> String {
        let o = &self.outcome;
        let mut s = format!(
            "{} episode(s) run, {} already recorded, {} errored; results in {}",
            o.ran,
            o.skipped,
            o.errored,
            self.out.display()
        );
        if o.dropped_partial_line {
            s.push_str("\nnote: a half-written last line from an interrupted run was dropped; that episode ran again");
        }
        s
    }

    /// How the run ended, as the command's result: a fatal stop, an interruption, or
    /// rows above `--max-error-rate` are errors with their own exit codes.
    pub fn verdict(&self) -> Result<(), CliError> {
        let o = &self.outcome;
        if let Some(f) = &o.fatal {
            return Err(CliError::failed(format!("run stopped: {f}")));
        }
        if o.interrupted {
            return Err(CliError::Interrupted);
        }
        if let Some(why) = &o.budget_stop {
            return Err(CliError::BudgetSpent(format!(
                "budget reached ({why}); every episode run is written, {} of the matrix not run. Rerun the same command with a higher budget to resume within it",
                o.planned.saturating_sub(o.skipped + o.ran)
            )));
        }
        let over: Vec<String> = self
            .summary
            .rows
            .iter()
            .filter(|r| r.too_many_errors)
            .map(|r| {
                format!(
                    "{}/{}/{} ({} of {} episodes errored)",
                    r.suite, r.attack, r.defense, r.errors, r.episodes
                )
            })
            .collect();
        if !over.is_empty() {
            return Err(CliError::TooManyErrors(format!(
                "error rate above --max-error-rate {}% in: {}. Their rates rest on the episodes that did not error; see the errors in episodes.jsonl, fix the cause and rerun the same command (errored episodes run again)",
                self.max_error_rate,
                over.join("; ")
            )));
        }
        Ok(())
    }
}

/// Writes the answer judge's agreement with the checks (`answer_judge.json`, `.md`) over
/// the folder's judged records (each key's last) and returns the Markdown; `None` when
/// no record was judged.
pub(super) fn write_agreement(
    out: &Path,
    mut records: Vec<sieve_record::EpisodeRecord>,
) -> Result<Option<String>, CliError> {
    records.sort_by(|a, b| a.key.cmp(&b.key));
    let Some(rep) = crate::aggregate::agreement::agreement(&records) else {
        return Ok(None);
    };
    let md = report::agreement::markdown(&rep);
    let json = serde_json::to_string_pretty(&rep).expect("agreement serialises");
    for (name, text) in [("answer_judge.json", json), ("answer_judge.md", md.clone())] {
        std::fs::write(out.join(name), text).map_err(|e| {
            CliError::failed(format!("cannot write {}: {e}", out.join(name).display()))
        })?;
    }
    Ok(Some(md))
}

/// The order of this run's suites, attacks and defenses, for the tables.
fn order_of(config: &RunConfig) -> report::Order {
    let selection = &config.selection;
    report::Order {
        suites: config.suites.iter().map(|s| s.qualified_name()).collect(),
        attacks: selection
            .templates
            .iter()
            .map(|a| a.name.clone())
            .chain(
                selection
                    .context
                    .then(|| crate::attack::CONTEXT.to_string()),
            )
            .chain(
                selection
                    .data_only
                    .then(|| crate::suite::data_only::ATTACK.to_string()),
            )
            .collect(),
        defenses: config
            .defenses
            .iter()
            .map(|d| d.name().to_string())
            .collect(),
    }
}

/// The folder's summary as this command line shows it: served-model footnotes, prices,
/// the error-rate flag and this command line's row order; written in every format. With
/// it, the folder's records as read (once) for the rest of what `run` reports: the
/// judged records, and with more than two defenses the pair table.
pub(super) fn summarise(
    config: &RunConfig,
    manifest: &Manifest,
) -> Result<(Summary, runs::Loaded), CliError> {
    let (out, args) = (config.out.as_path(), &config.args);
    let keep = runs::Keep {
        per_outcome: 0,
        pairs: config.defenses.len() > 2,
        judged: true,
        exclude_known_defects: args.exclude_known_defects,
    };
    let (mut summary, mut loaded) = report::read_run(out, keep)?;
    summary
        .footnotes
        .extend(crate::runner::manifest::lineage_notes(
            &manifest.served_models,
        ));
    if let Some((i, o)) = args.model_options.price_per_mtok {
        summary.apply_price(i, o);
    }
    summary.mark_error_rates(args.max_error_rate);
    // This command line's order, even when resuming a run recorded with another.
    let mut order_now = order_of(config);
    order_now.extend(&summary.order);
    summary.set_order(order_now);
    // The tables built from these records follow the order just written.
    loaded.order = summary.order.clone();
    report::write_all(out, &summary)
        .map_err(|e| CliError::failed(format!("writing summary to {}: {e}", out.display())))?;
    Ok((summary, loaded))
}

/// What `run` prints when it ends: the summary table and, for a comparison of three or
/// more defenses (e.g. `--defense all`), the paper's main table with one row per defense.
/// `--columns` names the summary's columns only, so it leaves the main table out.
pub fn summary_text(report: &RunReport, options: &report::TextOptions) -> Result<String, CliError> {
    let mut text = tables_text(&report.summary, report.main.as_ref(), options)?;
    if let Some(a) = &report.judge_agreement {
        text.push_str(a);
    }
    Ok(text)
}

/// The summary table of a run folder, and after it the paper's main table when there is
/// one ([`main_table`]), fitted to `options`: what `run` and `merge` print. `--columns`
/// names the summary's columns only, so it leaves the main table out.
pub fn tables_text(
    summary: &report::Summary,
    main: Option<&Grid>,
    options: &report::TextOptions,
) -> Result<String, CliError> {
    let mut text = report::table(summary, options)?;
    if let Some(main) = main
        && options.columns.is_none()
    {
        let rendered = report::text::render(main, options)?;
        text.push_str(&format!("\n{}\n{rendered}", main.title));
    }
    Ok(text)
}

/// The paper's main table of a run's records, one row per defense, when the summary
/// compares more than two defenses (e.g. `--defense all`); built from the records as
/// already read.
pub fn main_table(summary: &report::Summary, loaded: &mut runs::Loaded) -> Option<Grid> {
    let mut defenses: Vec<&str> = summary.rows.iter().map(|r| r.defense.as_str()).collect();
    defenses.sort();
    defenses.dedup();
    if defenses.len() <= 2 {
        return None;
    }
    let doc = report::document_of(loaded, Vec::new(), None);
    let mut main = doc.tables.into_iter().find(|g| g.id == "main")?;
    main.hoist_constant_keys();
    Some(main)
}
