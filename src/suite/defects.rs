//! Known defects of a benchmark version, as data: the tasks and pairs whose checks are
//! known to be broken (or that no agent can win), each with its reason and its source (an
//! issue or pull request of the benchmark, or this project's own finding). A bridged
//! suite's file is `suites/external/<package>/known-defects-<version>.toml`; a data
//! suite's is `known-defects.toml` in its folder. Episodes that fall under one carry its
//! id in their record (`known_defect`); tables mark rows holding them, and
//! `--exclude-known-defects` leaves them out and says how many.
//!
//! ```toml
//! [[defect]]
//! id = "banking-or-precedence"
//! suite = "banking"
//! injection_tasks = ["injection_task_0"]
//! reason = "..."
//! source = "AgentDojo issue #181"
//! ```
//!
//! An entry names `user_tasks` (every episode of them, clean or attacked: their utility
//! check is at fault), `injection_tasks` (every attacked episode with them: their security
//! check), or `pairs` (`[user task, injection task]`: those attacked episodes only).

use serde::Deserialize;
use std::path::{Path, PathBuf};

/// One known defect.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Defect {
    /// A short name, unique in the file; records carry it.
    pub id: String,
    /// The suite's own name (`banking`), without package and version.
    pub suite: String,
    #[serde(default)]
    pub user_tasks: Vec<String>,
    #[serde(default)]
    pub injection_tasks: Vec<String>,
    #[serde(default)]
    pub pairs: Vec<[String; 2]>,
    /// What is broken, in a sentence or two.
    pub reason: String,
    /// Where it is reported: an issue or PR number, or this project's check.
    pub source: String,
}

impl Defect {
    /// Whether an episode of `user_task` (attacked by `injection_task`) falls under it.
    pub fn covers(&self, user_task: &str, injection_task: Option<&str>) -> bool {
        self.user_tasks.iter().any(|u| u == user_task)
            || injection_task.is_some_and(|i| {
                self.injection_tasks.iter().any(|x| x == i)
                    || self.pairs.iter().any(|[u, x]| u == user_task && x == i)
            })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    defect: Vec<Defect>,
}

/// The known defects of one suite (those of its benchmark version's file naming it).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KnownDefects {
    pub defects: Vec<Defect>,
}

/// A known-defects file that cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DefectsError {
    #[error("{file}: cannot read: {message}")]
    Read { file: PathBuf, message: String },
    #[error("{file}: invalid known-defects file: {message}")]
    Parse { file: PathBuf, message: String },
    #[error("{file}: defect `{id}`: {problem}")]
    Entry {
        file: PathBuf,
        id: String,
        problem: String,
    },
}

impl KnownDefects {
    /// The defect an episode falls under, the first listed when several.
    pub fn find(&self, user_task: &str, injection_task: Option<&str>) -> Option<&Defect> {
        self.defects
            .iter()
            .find(|d| d.covers(user_task, injection_task))
    }

    /// Reads `file`'s entries for `suite` (its own name); no file means none known. Each
    /// entry must name something, and ids must be unique in the file.
    pub fn read(file: &Path, suite: &str) -> Result<KnownDefects, DefectsError> {
        let text = match std::fs::read_to_string(file) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(KnownDefects::default());
            }
            Err(e) => {
                return Err(DefectsError::Read {
                    file: file.to_path_buf(),
                    message: e.to_string(),
                });
            }
        };
        let parsed: File = toml::from_str(&text).map_err(|e| DefectsError::Parse {
            file: file.to_path_buf(),
            message: e.to_string(),
        })?;
        let mut seen = std::collections::BTreeSet::new();
        for d in &parsed.defect {
            let problem = |problem: &str| DefectsError::Entry {
                file: file.to_path_buf(),
                id: d.id.clone(),
                problem: problem.to_string(),
            };
            if !seen.insert(d.id.as_str()) {
                return Err(problem("the id is used twice"));
            }
            if let Err(why) = crate::ids::check_name(&d.id) {
                return Err(problem(&format!("field `id`: {why}")));
            }
            if d.user_tasks.is_empty() && d.injection_tasks.is_empty() && d.pairs.is_empty() {
                return Err(problem(
                    "names no `user_tasks`, `injection_tasks` or `pairs`",
                ));
            }
            if d.reason.trim().is_empty() || d.source.trim().is_empty() {
                return Err(problem("fields `reason` and `source` must not be empty"));
            }
        }
        Ok(KnownDefects {
            defects: parsed
                .defect
                .into_iter()
                .filter(|d| d.suite == suite)
                .collect(),
        })
    }
}

/// Where a bridged suite's benchmark version keeps its known defects.
pub fn external_file(suites_dir: &Path, package: &str, version: &str) -> PathBuf {
    suites_dir
        .join("external")
        .join(package)
        .join(format!("known-defects-{version}.toml"))
}

/// Where a data suite keeps its known defects.
pub const SUITE_FILE: &str = "known-defects.toml";

#[cfg(test)]
mod tests {
    use super::*;

    fn write(text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("d.toml");
        std::fs::write(&file, text).unwrap();
        (dir, file)
    }

    #[test]
    fn entries_cover_tasks_injection_tasks_and_pairs_of_their_suite() {
        let (_d, file) = write(
            r#"
[[defect]]
id = "a"
suite = "bank"
injection_tasks = ["i0"]
reason = "r"
source = "issue #1"

[[defect]]
id = "b"
suite = "bank"
user_tasks = ["u9"]
pairs = [["u1", "i5"]]
reason = "r"
source = "issue #2"

[[defect]]
id = "c"
suite = "other"
user_tasks = ["u1"]
reason = "r"
source = "s"
"#,
        );
        let k = KnownDefects::read(&file, "bank").unwrap();
        assert_eq!(k.defects.len(), 2);
        let id = |u, i| k.find(u, i).map(|d| d.id.as_str());
        assert_eq!(id("u1", Some("i0")), Some("a"));
        assert_eq!(
            id("u1", None),
            None,
            "an injection task's defect spares clean episodes"
        );
        assert_eq!(id("u9", None), Some("b"));
        assert_eq!(id("u1", Some("i5")), Some("b"));
        assert_eq!(id("u2", Some("i5")), None);
    }

    #[test]
    fn a_bad_file_is_refused_naming_file_and_entry() {
        let (_d, file) =
            write("[[defect]]\nid = \"x\"\nsuite = \"s\"\nreason = \"r\"\nsource = \"s\"\n");
        let e = KnownDefects::read(&file, "s").unwrap_err().to_string();
        assert!(
            e.contains("d.toml") && e.contains("defect `x`") && e.contains("names no"),
            "{e}"
        );
        let (_d, file) = write("[[defect]]\nid = \"x\"\nsuite = \"s\"\nreason = \"r\"\n");
        let e = KnownDefects::read(&file, "s").unwrap_err().to_string();
        assert!(e.contains("source"), "{e}");
        let missing = file.with_file_name("none.toml");
        assert_eq!(
            KnownDefects::read(&missing, "s").unwrap(),
            KnownDefects::default()
        );
    }
}
