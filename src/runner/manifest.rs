//! Reading and writing `run.json`, the typed manifest of a results folder (its type,
//! [`Manifest`], is the record crate's: the run's identity, the version and commit that
//! produced it, every invocation into the folder, its ledger and served models), and the
//! facts of this build and moment a new invocation records in it.

use std::collections::BTreeMap;
use std::path::Path;

use sieve_record::{Lineage, Manifest};

/// Lines saying where a served model differs from the requested one, per role.
pub fn lineage_notes(served: &BTreeMap<sieve_record::Component, Lineage>) -> Vec<String> {
    served
        .iter()
        .filter(|(_, l)| l.differs())
        .map(|(c, l)| {
            format!(
                "the {} asked for model `{}`; the endpoint said `{}` served it",
                c.as_str(),
                l.requested,
                l.served.iter().cloned().collect::<Vec<_>>().join("`, `")
            )
        })
        .collect()
}

/// What reading a folder's manifest found.
pub enum Found {
    None,
    Manifest(Box<Manifest>),
    /// A `run.json` this version cannot read as a manifest (an older format).
    Unreadable(String),
}

/// Reads `run.json` in `dir`.
pub fn read(dir: &Path) -> Found {
    let path = dir.join(sieve_record::RUN_INFO);
    let Ok(bytes) = std::fs::read(&path) else {
        return Found::None;
    };
    match serde_json::from_slice::<Manifest>(&bytes) {
        Ok(m) => Found::Manifest(Box::new(m)),
        Err(e) => Found::Unreadable(format!("{}: {e}", path.display())),
    }
}

/// Writes `run.json` atomically.
pub fn write(dir: &Path, m: &Manifest) -> std::io::Result<()> {
    let text = serde_json::to_string_pretty(m).map_err(std::io::Error::other)? + "\n";
    super::files::write_atomic(&dir.join(sieve_record::RUN_INFO), text.as_bytes())
}

/// The current time as RFC 3339 UTC.
pub fn now() -> String {
    jiff::Timestamp::now().to_string()
}

/// The git commit this binary was built from (recorded by `build.rs`), or `None` when it
/// was built outside a git checkout.
pub fn git_commit() -> Option<String> {
    option_env!("SIEVE_BENCH_GIT_COMMIT").map(str::to_string)
}

#[cfg(test)]
mod tests {
    /// The committed baseline's `run.json` (what CI compares against) reads as a typed
    /// manifest and writes back byte for byte: the types changed nothing on disk.
    #[test]
    fn the_baseline_manifest_reads_and_writes_back_unchanged() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("results/baseline");
        let text = std::fs::read_to_string(dir.join(sieve_record::RUN_INFO)).unwrap();
        let super::Found::Manifest(m) = super::read(&dir) else {
            panic!("results/baseline/run.json does not read as a manifest");
        };
        let again = serde_json::to_string_pretty(&m).unwrap() + "\n";
        assert!(again == text, "written back:\n{again}");
        assert_eq!(
            crate::runner::identity::fingerprint(&m.settings),
            m.identity,
            "the identity hashes the settings as they were"
        );
    }

    #[test]
    fn the_commit_is_the_builds_not_the_checkouts() {
        // Fixed at compile time: a full hash, or nothing outside a git checkout. Nothing
        // is run at run time, so a checkout moved since the build cannot change it.
        if let Some(c) = super::git_commit() {
            assert!(
                c.len() == 40 && c.bytes().all(|b| b.is_ascii_hexdigit()),
                "{c}"
            );
        }
    }
}
