//! Episode records: one JSON line per finished episode, appended and flushed as each
//! episode ends, so an interrupted run loses nothing finished and resumes from the file.

use crate::agent::CallRecord;
use crate::model::{CostMeter, Message};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::path::Path;

/// The file names inside a run directory.
pub const EPISODES: &str = "episodes.jsonl";
pub const TRACES: &str = "traces.jsonl";
pub const RUN_INFO: &str = "run.json";

/// One finished episode.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EpisodeRecord {
    pub run_id: String,
    /// Unique within a run: the resume key.
    pub key: String,
    pub suite: String,
    pub user_task: String,
    pub injection_task: Option<String>,
    pub attack: Option<String>,
    pub defense: String,
    pub model: String,
    /// Scripted rather than produced by an LLM.
    pub simulated: bool,
    /// The roles of this episode no LLM played, and what each knew (`None` in records
    /// written before roles were recorded).
    #[serde(default)]
    pub scripted_roles: Option<crate::model::ScriptedRoles>,
    pub seed: u64,
    pub utility: bool,
    /// `None` for clean episodes.
    pub attack_success: Option<bool>,
    pub severity: Option<f64>,
    #[serde(default)]
    pub injection_tags: Vec<String>,
    #[serde(default)]
    pub injected_vectors: Vec<String>,
    /// The vector class of a context-aware sample (`--attack context`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vector_class: Option<String>,
    /// The surface a context-aware sample's payload lands on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub surface: Option<String>,
    pub steps: usize,
    pub hit_step_limit: bool,
    #[serde(default)]
    pub stopped_by_defense: bool,
    pub proposed_calls: u64,
    pub blocked: u64,
    pub asked_user: u64,
    pub faked: u64,
    pub escalated: u64,
    pub approved: u64,
    #[serde(default)]
    pub flagged_outputs: u64,
    pub cost: CostMeter,
    pub latency_ms: f64,
    pub error: Option<String>,
    /// What failed, for an errored episode (`None` in records written before kinds were
    /// recorded: such an error counts as an error under every convention).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<crate::agent::ErrorKind>,
    /// For a successful attack: the executed call (in execution order) whose effect the
    /// security check saw; `None` when the harm came without a call (the answer).
    #[serde(default)]
    pub harmful_call: Option<usize>,
    /// An injection task on a user task it names in `designed_for` (a designed
    /// provenance-bypass pair).
    #[serde(default)]
    pub bypass_pair: bool,
    #[serde(default)]
    pub notes: Value,
    pub version: String,
    /// The suite's data fingerprint when the episode ran.
    #[serde(default)]
    pub suite_fingerprint: String,
    /// The attack template's fingerprint, for attacked episodes.
    #[serde(default)]
    pub attack_fingerprint: Option<String>,
    /// The model-graded answer judge's verdicts beside the checks' (`--answer-judge`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_judge: Option<crate::model::answer_judge::JudgedAnswer>,
}

impl EpisodeRecord {
    pub fn attacked(&self) -> bool {
        self.injection_task.is_some()
    }

    /// The utility the rates count: the checks' unless the run said `--utility-from`.
    pub fn counted_utility(&self) -> bool {
        self.answer_judge
            .as_ref()
            .map_or(self.utility, |j| j.counted_utility(self.utility))
    }

    /// The model name rows show: with the utility source when it is not the checks alone.
    pub fn row_model(&self) -> String {
        match self
            .answer_judge
            .as_ref()
            .and_then(|j| j.utility_from.row_label())
        {
            Some(label) => format!("{} ({label})", self.model),
            None => self.model.clone(),
        }
    }
}

/// The full conversation of an episode, in the sidecar `traces.jsonl`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TraceRecord {
    pub key: String,
    pub messages: Vec<Message>,
    pub calls: Vec<CallRecord>,
    pub answer: String,
    pub payload: Option<String>,
}

/// Cuts a half-written last line (a run killed mid-write) so appends stay well-formed.
/// Returns whether anything was cut.
pub fn drop_partial_tail(path: &Path) -> std::io::Result<bool> {
    let Ok(mut f) = OpenOptions::new().read(true).write(true).open(path) else {
        return Ok(false);
    };
    let len = f.metadata()?.len();
    if len == 0 {
        return Ok(false);
    }
    let mut data = Vec::new();
    std::io::Read::read_to_end(&mut f, &mut data)?;
    if data.last() == Some(&b'\n') {
        return Ok(false);
    }
    let keep = data.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    f.set_len(keep as u64)?;
    f.seek(SeekFrom::End(0))?;
    Ok(true)
}

/// Reads every well-formed record, one per key: a key recorded twice (a retried error,
/// a duplicated line) counts once, as its last record. A line that is not valid UTF-8 or
/// not a record is skipped with a warning naming the file and line, never failing the
/// whole file; the count of skipped lines is returned.
pub fn read_records(path: &Path) -> std::io::Result<(Vec<EpisodeRecord>, usize)> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Vec::new(), 0)),
        Err(e) => return Err(e),
    };
    let mut out: Vec<EpisodeRecord> = Vec::new();
    let mut index: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut bad = 0;
    for (i, line) in bytes.split(|b| *b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let parsed = std::str::from_utf8(line)
            .map_err(|_| "not valid UTF-8".to_string())
            .and_then(|l| {
                serde_json::from_str::<EpisodeRecord>(l).map_err(|e| format!("not a record: {e}"))
            });
        match parsed {
            Ok(r) => match index.get(&r.key) {
                Some(&at) => out[at] = r,
                None => {
                    index.insert(r.key.clone(), out.len());
                    out.push(r);
                }
            },
            Err(why) => {
                bad += 1;
                eprintln!("warning: {}:{}: line skipped, {why}", path.display(), i + 1);
            }
        }
    }
    Ok((out, bad))
}

/// The keys already recorded, for resume.
pub fn recorded_keys(records: &[EpisodeRecord]) -> HashSet<String> {
    records.iter().map(|r| r.key.clone()).collect()
}

/// Appends records and traces, one line each, flushed per episode.
pub struct RecordWriter {
    episodes: File,
    traces: File,
}

impl RecordWriter {
    pub fn open(dir: &Path) -> std::io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let open = |name: &str| {
            OpenOptions::new()
                .create(true)
                .append(true)
                .open(dir.join(name))
        };
        Ok(RecordWriter {
            episodes: open(EPISODES)?,
            traces: open(TRACES)?,
        })
    }

    /// Writes the trace first, then the record: a record on disk always has its trace.
    pub fn write(&mut self, record: &EpisodeRecord, trace: &TraceRecord) -> std::io::Result<()> {
        let mut t = serde_json::to_string(trace).map_err(std::io::Error::other)?;
        t.push('\n');
        self.traces.write_all(t.as_bytes())?;
        self.traces.flush()?;
        let mut r = serde_json::to_string(record).map_err(std::io::Error::other)?;
        r.push('\n');
        self.episodes.write_all(r.as_bytes())?;
        self.episodes.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partial_tail_is_dropped_and_complete_lines_kept() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.jsonl");
        std::fs::write(&p, "{\"a\":1}\n{\"a\":2}\n{\"a\":").unwrap();
        assert!(drop_partial_tail(&p).unwrap());
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "{\"a\":1}\n{\"a\":2}\n"
        );
        assert!(!drop_partial_tail(&p).unwrap());
        assert!(!drop_partial_tail(&dir.path().join("missing")).unwrap());
    }
}
