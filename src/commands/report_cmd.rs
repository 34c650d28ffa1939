//! `report` and `compare`: re-render and gate from records alone.

use super::CliError;
use crate::report::{self, compare::Thresholds};
use std::path::Path;

/// Re-renders a run's summary files from its `episodes.jsonl` and returns the table.
pub fn report(dir: &Path, opts: &report::TextOptions) -> Result<String, CliError> {
    let summary = report::from_dir(dir).map_err(CliError::bad_input)?;
    report::write_all(dir, &summary)
        .map_err(|e| CliError::failed(format!("writing summary: {e}")))?;
    let mut out = report::table(&summary, opts).map_err(CliError::bad_input)?;
    if summary.malformed_lines > 0 {
        out.push_str(&format!(
            "warning: {} malformed line(s) in episodes.jsonl were skipped\n",
            summary.malformed_lines
        ));
    }
    Ok(out)
}

/// Compares two runs; `Ok((text, failed))`.
pub fn compare(base: &Path, new: &Path, t: Thresholds) -> Result<(String, bool), CliError> {
    let b = report::load(base).map_err(CliError::bad_input)?;
    let n = report::load(new).map_err(CliError::bad_input)?;
    let c = report::compare::compare(&b, &n, t);
    Ok((c.text, c.failed))
}
