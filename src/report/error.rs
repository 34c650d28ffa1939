//! Why a report could not be built, by kind; `commands` maps each kind to its exit code.

use std::path::PathBuf;

/// A report's failure. The text of each message is the one the commands print.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A file of a run folder exists but could not be read (an I/O failure).
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file `--reference` names could not be read.
    #[error(
        "--reference: cannot read `{spec}` ({source}); give `{}` or a CSV file with the columns of {}",
        super::published::PUBLISHED_NAME,
        super::published::PUBLISHED_FILE
    )]
    ReadReference {
        spec: String,
        #[source]
        source: std::io::Error,
    },
    /// No run directory was given.
    #[error("report needs at least one run directory")]
    NoRun,
    /// A folder given as a run holds no records (nor, where a summary would do, a
    /// `summary.json`).
    #[error(
        "{} has {}: not a run directory",
        dir.display(),
        if *summary_would_do { format!("neither {} nor summary.json", sieve_record::EPISODES) } else { format!("no {}", sieve_record::EPISODES) }
    )]
    NotARun {
        dir: PathBuf,
        summary_would_do: bool,
    },
    /// Runs recorded under different settings: one report would mix two benchmarks.
    #[error("{0}")]
    Mismatch(String),
    /// A file's content is not what it should be; the message names the file, the row
    /// and the field.
    #[error("{0}")]
    Malformed(String),
    /// A name that is not there (a `--columns` entry, a `--pair` defense).
    #[error("{0}")]
    Unknown(String),
    /// Flags that cannot go together with these runs (`--significance` without records).
    #[error("{0}")]
    Usage(String),
}
