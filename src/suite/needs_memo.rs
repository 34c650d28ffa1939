//! What each task's plans and answers take from tool outputs ([`super::sight::needs`]),
//! remembered: every episode of a task asks the same question, and the answer is a pure
//! function of the suite's content, the task, the plan, the answer and the build. So it
//! is also kept between runs, beside the suite's proof (`suite::proof_cache`), in a file
//! keyed by the suite's fingerprint and the build: read when a run attaches it
//! ([`NeedsMemo::keep_in`]), extended when the memo is dropped. A missing, foreign or
//! damaged file is ignored (its answers are worked out again), so the file changes no
//! figure: an answer read back is the answer the suite gives.

use super::sight::Needs;
use crate::ids::TaskId;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// A question: the task, its plan as JSON, the answer.
pub type NeedsKey = (TaskId, String, String);

/// The first line of a kept file; another format is not read.
const FORMAT: &str = "sieve-bench needs 1";

/// The answers known so far, and the file they are kept in between runs, if any.
#[derive(Debug, Default)]
pub struct NeedsMemo {
    known: Mutex<HashMap<NeedsKey, Needs>>,
    /// The file, and how many answers the memo held once it was read.
    file: OnceLock<(PathBuf, usize)>,
}

/// One answer on file.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    task: TaskId,
    plan: String,
    answer: String,
    needs: Needs,
}

/// A kept file: its format line and its answers.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Kept {
    format: String,
    entries: Vec<Entry>,
}

impl NeedsMemo {
    /// The answer to `key`, when known.
    pub fn get(&self, key: &NeedsKey) -> Option<Needs> {
        self.lock().get(key).cloned()
    }

    /// Remembers the answer to `key`.
    pub fn insert(&self, key: NeedsKey, needs: Needs) {
        self.lock().insert(key, needs);
    }

    /// Reads the answers kept in `path` and keeps the memo's answers there from now on
    /// (written when the memo is dropped). Only the first file attached is used.
    pub fn keep_in(&self, path: PathBuf) {
        let mut known = self.lock();
        for (k, v) in read(&path) {
            known.entry(k).or_insert(v);
        }
        let _ = self.file.set((path, known.len()));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<NeedsKey, Needs>> {
        self.known.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for NeedsMemo {
    fn drop(&mut self) {
        let Some((path, had)) = self.file.get() else {
            return;
        };
        let known = self.known.get_mut().unwrap_or_else(|e| e.into_inner());
        if known.len() > *had {
            // Best effort: an answer not kept is only worked out again.
            let _ = write(path, known);
        }
    }
}

/// The answers in a kept file; none when it is missing, foreign or damaged.
fn read(path: &Path) -> HashMap<NeedsKey, Needs> {
    let Some(kept) = std::fs::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice::<Kept>(&b).ok())
        .filter(|k| k.format == FORMAT)
    else {
        return HashMap::new();
    };
    kept.entries
        .into_iter()
        .map(|e| ((e.task, e.plan, e.answer), e.needs))
        .collect()
}

/// Adds `known` to what the file holds now (another run may have added to it) and
/// replaces it whole: a reader sees the old file or the new one.
fn write(path: &Path, known: &HashMap<NeedsKey, Needs>) -> std::io::Result<()> {
    let mut all = read(path);
    for (k, v) in known {
        all.entry(k.clone()).or_insert_with(|| v.clone());
    }
    let mut entries: Vec<Entry> = all
        .into_iter()
        .map(|((task, plan, answer), needs)| Entry {
            task,
            plan,
            answer,
            needs,
        })
        .collect();
    entries.sort_by(|a, b| (&a.task, &a.plan, &a.answer).cmp(&(&b.task, &b.plan, &b.answer)));
    let kept = Kept {
        format: FORMAT.to_string(),
        entries,
    };
    let folder = path.parent().expect("a kept file lives in a folder");
    std::fs::create_dir_all(folder)?;
    let tmp = tempfile::NamedTempFile::new_in(folder)?;
    std::fs::write(
        tmp.path(),
        serde_json::to_vec(&kept).map_err(std::io::Error::other)?,
    )?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key(task: &str) -> NeedsKey {
        (TaskId::from(task), "[]".into(), "Done.".into())
    }

    fn some_needs() -> Needs {
        Needs {
            calls: vec![vec![("iban".into(), vec![json!("GB29NWBK60161331926819")])]],
            answer: vec![(json!(98.7), vec![json!(98.7), json!("2026-05-06")])],
        }
    }

    #[test]
    fn answers_are_kept_between_memos_and_merged_with_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b").join("needs.json");
        {
            let memo = NeedsMemo::default();
            memo.keep_in(path.clone());
            memo.insert(key("user_task_1"), some_needs());
        }
        {
            let memo = NeedsMemo::default();
            memo.keep_in(path.clone());
            assert_eq!(memo.get(&key("user_task_1")), Some(some_needs()));
            memo.insert(key("user_task_2"), Needs::default());
        }
        let all = read(&path);
        assert_eq!(all.len(), 2);
        assert_eq!(all[&key("user_task_1")], some_needs());
    }

    #[test]
    fn a_damaged_or_foreign_file_is_ignored_and_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("needs.json");
        std::fs::write(
            &path,
            b"{\"format\": \"sieve-bench needs 0\", \"entries\": []}",
        )
        .unwrap();
        assert!(read(&path).is_empty());
        std::fs::write(&path, b"{ not json").unwrap();
        {
            let memo = NeedsMemo::default();
            memo.keep_in(path.clone());
            assert_eq!(memo.get(&key("user_task_1")), None);
            memo.insert(key("user_task_1"), some_needs());
        }
        assert_eq!(read(&path)[&key("user_task_1")], some_needs());
    }

    #[test]
    fn a_memo_without_a_file_writes_nothing() {
        let memo = NeedsMemo::default();
        memo.insert(key("user_task_1"), some_needs());
        assert_eq!(memo.get(&key("user_task_1")), Some(some_needs()));
    }
}
