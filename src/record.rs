//! On-disk formats as plain data: the episode and trace records, the call records and
//! decisions inside them, and the file names of a run folder. Episode records are one
//! JSON line per finished episode, appended and flushed as each episode ends, so an
//! interrupted run loses nothing finished and resumes from the file. Every command reads
//! them through this module; nothing here knows how an episode runs.

use crate::model::{CostMeter, Message};
use crate::suite::ErrorConvention;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, Read, Seek, SeekFrom, Write};
use std::path::Path;

/// What failed in an errored episode, recorded beside the message so a convention can
/// tell kinds apart (AgentDojo scores two of them as a failed task and a successful
/// attack: `agentdojo_scores` in the metrics module).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// A model's endpoint refused the conversation as too long for it
    /// ([`ModelError::ContextLength`](crate::model::ModelError::ContextLength)), whichever role's model it was.
    ContextLength,
    /// A model's endpoint answered 422 naming `max_new_tokens` ([`ModelError::MaxNewTokens`](crate::model::ModelError::MaxNewTokens)).
    MaxNewTokens,
    /// Any other failure of a model request: an HTTP error after retries, a timeout, a
    /// malformed reply, a replay miss.
    Model,
    /// The defense itself failed (its process crashed, hung or broke protocol, or its
    /// logic refused to go on); a failure of a model it called is the model's kind.
    Defense,
    /// The suite failed: its provider process, a tool host, a task's check.
    Suite,
}

impl ErrorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::ContextLength => "context_length",
            ErrorKind::MaxNewTokens => "max_new_tokens",
            ErrorKind::Model => "model",
            ErrorKind::Defense => "defense",
            ErrorKind::Suite => "suite",
        }
    }
}

/// How the defense treated one proposed call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Allowed,
    Blocked,
    Faked,
    AskedUser,
    /// Never reached the defense: unknown tool or unparsable arguments.
    Invalid,
}

/// One proposed call and its fate, for the trace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CallRecord {
    pub step: usize,
    pub tool: String,
    pub arguments: String,
    pub decision: Decision,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// For executed calls: whether the tool succeeded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ok: Option<bool>,
}

/// Calls that reached the defense: an unknown tool or unparsable arguments never did.
pub fn proposed_calls(calls: &[CallRecord]) -> u64 {
    calls
        .iter()
        .filter(|c| c.decision != Decision::Invalid)
        .count() as u64
}

/// The file names inside a run directory.
pub const EPISODES: &str = "episodes.jsonl";
pub const TRACES: &str = "traces.jsonl";
pub const RUN_INFO: &str = "run.json";

/// One finished episode.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EpisodeRecord {
    /// The results folder's run id (its directory name when not given).
    pub run_id: String,
    /// Unique within a run: the resume key.
    pub key: String,
    /// The suite's qualified name (`dojo-style/banking`, `agentdojo@v1.2.2/slack`).
    pub suite: String,
    /// The user task's id.
    pub user_task: String,
    /// The injection task's id; `None` for a clean episode.
    pub injection_task: Option<String>,
    /// The attack's name (`important_instructions`, `context`, …); `None` for a clean
    /// episode.
    pub attack: Option<String>,
    /// The defense as given on the command line (`sieve`, `sieve:no-causal`,
    /// `exec:<command>`).
    pub defense: String,
    /// The agent's model as given, with a scripted model's profile
    /// (`sim:obedient,judge_auc=0.9,…`).
    pub model: String,
    /// Scripted rather than produced by an LLM.
    pub simulated: bool,
    /// The roles of this episode no LLM played, and what each knew (`None` in records
    /// written before roles were recorded).
    #[serde(default)]
    pub scripted_roles: Option<crate::model::ScriptedRoles>,
    /// The seed index (0 to `--seeds` − 1); the episode's random draws derive from it and
    /// the episode's key.
    pub seed: u64,
    /// Whether the user task's utility check held (the task was solved).
    pub utility: bool,
    /// `None` for clean episodes.
    pub attack_success: Option<bool>,
    /// The injection task's severity, in (0, 1]; `None` for a clean episode.
    pub severity: Option<f64>,
    /// The injection task's tags (`provenance_bypass`, a difficulty, …).
    #[serde(default)]
    pub injection_tags: Vec<String>,
    /// The injection vectors the payload was placed in.
    #[serde(default)]
    pub injected_vectors: Vec<String>,
    /// The vector class of a context-aware sample (`--attack context`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vector_class: Option<String>,
    /// The surface a context-aware sample's payload lands on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub surface: Option<String>,
    /// Agent turns taken (model calls of the agent).
    pub steps: usize,
    /// The episode stopped at `--max-steps` rather than with an answer.
    pub hit_step_limit: bool,
    /// The defense ended the episode (a `stop` decision, as MELON does).
    #[serde(default)]
    pub stopped_by_defense: bool,
    /// Calls that reached the defense (invalid ones, unknown tool or unparsable
    /// arguments, are in the trace but not here).
    pub proposed_calls: u64,
    /// Proposed calls the defense blocked.
    pub blocked: u64,
    /// Proposed calls the defense answered with ask-user (not run, counted apart).
    pub asked_user: u64,
    /// Proposed calls the defense answered with a fake result (not run).
    pub faked: u64,
    /// Proposed calls sent to the adjudicator (SIEVE's deviations; every call under
    /// `audit`).
    pub escalated: u64,
    /// Proposed calls that ran.
    pub approved: u64,
    /// Tool outputs the defense replaced or flagged.
    #[serde(default)]
    pub flagged_outputs: u64,
    /// Calls and tokens per component (agent, planner, judge, detector, embedding).
    pub cost: CostMeter,
    /// Per role, the model ids the endpoint said served its calls (lineage); empty for
    /// scripted roles and servers that do not say.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub served_models: std::collections::BTreeMap<crate::model::Component, Vec<String>>,
    /// Wall time of the episode in milliseconds.
    pub latency_ms: f64,
    /// The error that ended the episode, if any; an errored episode is its own outcome.
    pub error: Option<String>,
    /// What failed, for an errored episode (`None` in records written before kinds were
    /// recorded: such an error counts as an error under every convention).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<crate::record::ErrorKind>,
    /// For a successful attack: the executed call (in execution order) whose effect the
    /// security check saw; `None` when the harm came without a call (the answer).
    #[serde(default)]
    pub harmful_call: Option<usize>,
    /// An injection task on a user task it names in `designed_for` (a designed
    /// provenance-bypass pair).
    #[serde(default)]
    pub bypass_pair: bool,
    /// Defense-specific observations (e.g. SIEVE's per-call scores); free-form JSON.
    #[serde(default)]
    pub notes: Value,
    /// The harness version that ran the episode.
    pub version: String,
    /// The suite's data fingerprint when the episode ran.
    #[serde(default)]
    pub suite_fingerprint: String,
    /// The attack template's fingerprint, for attacked episodes.
    #[serde(default)]
    pub attack_fingerprint: Option<String>,
    /// How the suite's rows count this episode if it errored, unless `--errors-as` names
    /// one convention (`agentdojo` for AgentDojo's own suites, from their provider file;
    /// absent means `excluded`).
    #[serde(default, skip_serializing_if = "ErrorConvention::is_default")]
    pub error_convention: ErrorConvention,
    /// The model-graded answer judge's verdicts beside the checks' (`--answer-judge`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_judge: Option<crate::model::answer_judge::JudgedAnswer>,
}

impl EpisodeRecord {
    pub fn attacked(&self) -> bool {
        self.injection_task.is_some()
    }

    /// Whether a role an LLM played replied without `usage` here, so its tokens were
    /// counted locally. Scripted roles always count locally and are labelled as such.
    pub fn usage_estimated(&self) -> bool {
        self.cost.by_component.iter().any(|(c, t)| {
            t.estimated
                && match &self.scripted_roles {
                    Some(roles) => !roles.contains_key(c),
                    None => !self.simulated,
                }
        })
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
/// Returns whether anything was cut. Reads only the file's tail, back to its last newline.
pub fn drop_partial_tail(path: &Path) -> std::io::Result<bool> {
    let Ok(mut f) = OpenOptions::new().read(true).write(true).open(path) else {
        return Ok(false);
    };
    let len = f.metadata()?.len();
    if len == 0 {
        return Ok(false);
    }
    let mut end = len;
    let mut chunk = vec![0u8; 64 * 1024];
    let mut first = true;
    while end > 0 {
        let start = end.saturating_sub(chunk.len() as u64);
        let buf = &mut chunk[..(end - start) as usize];
        f.seek(SeekFrom::Start(start))?;
        f.read_exact(buf)?;
        if first && buf.last() == Some(&b'\n') {
            return Ok(false);
        }
        first = false;
        if let Some(i) = buf.iter().rposition(|b| *b == b'\n') {
            f.set_len(start + i as u64 + 1)?;
            f.seek(SeekFrom::End(0))?;
            return Ok(true);
        }
        end = start;
    }
    f.set_len(0)?;
    Ok(true)
}

/// Lines are read in batches of about this many bytes; a few batches are in memory at
/// once, so memory does not grow with the file.
pub const BATCH_BYTES: usize = 1 << 20;

/// Whole lines of a JSON-lines file, as read.
pub struct Batch {
    /// Byte offset of the first line in its file.
    pub offset: u64,
    /// Number of the first line (from 1), for warnings.
    pub first_line: usize,
    pub bytes: Vec<u8>,
}

impl Batch {
    /// Each line with its number (from 1) and byte offset, newline included.
    pub fn lines(&self) -> impl Iterator<Item = (usize, u64, &[u8])> {
        let mut offset = self.offset;
        self.bytes
            .split_inclusive(|b| *b == b'\n')
            .enumerate()
            .map(move |(i, line)| {
                let at = offset;
                offset += line.len() as u64;
                (self.first_line + i, at, line)
            })
    }
}

/// Reads `path` in batches of whole lines and hands them to `f`, `group` at a time. A
/// missing file has no lines. This is the one reader of `episodes.jsonl` and
/// `traces.jsonl`: `report`, `compare`, `run`'s resume and `merge` all stream through it.
pub fn read_batches<E>(
    path: &Path,
    group: usize,
    mut f: impl FnMut(Vec<Batch>) -> Result<(), E>,
    io_error: impl Fn(std::io::Error) -> E,
) -> Result<(), E> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io_error(e)),
    };
    let mut reader = std::io::BufReader::with_capacity(1 << 20, file);
    let (mut offset, mut line) = (0u64, 1usize);
    let mut pending = Vec::with_capacity(group.max(1));
    loop {
        let mut bytes = Vec::with_capacity(BATCH_BYTES + (BATCH_BYTES >> 3));
        let mut lines = 0;
        while bytes.len() < BATCH_BYTES {
            if reader.read_until(b'\n', &mut bytes).map_err(&io_error)? == 0 {
                break;
            }
            lines += 1;
        }
        if bytes.is_empty() {
            break;
        }
        let len = bytes.len() as u64;
        pending.push(Batch {
            offset,
            first_line: line,
            bytes,
        });
        offset += len;
        line += lines;
        if pending.len() >= group.max(1) {
            f(std::mem::take(&mut pending))?;
        }
    }
    if !pending.is_empty() {
        f(pending)?;
    }
    Ok(())
}

/// Parses one line of `episodes.jsonl`: `None` for a blank line, else the record or why
/// the line is not one.
pub fn parse_line(line: &[u8]) -> Option<Result<EpisodeRecord, String>> {
    if line.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    Some(
        std::str::from_utf8(line)
            .map_err(|_| "not valid UTF-8".to_string())
            .and_then(|l| {
                serde_json::from_str::<EpisodeRecord>(l).map_err(|e| format!("not a record: {e}"))
            }),
    )
}

/// One line of `episodes.jsonl`, parsed.
pub struct Parsed {
    /// The line's number (from 1).
    pub line: usize,
    /// Its byte offset in the file.
    pub offset: u64,
    /// The record, or why the line is not one.
    pub record: Result<EpisodeRecord, String>,
}

/// Streams every record of `path` in file order to `f`, parsing batches in parallel: a
/// few batches are in memory at once, whatever the file's length. Blank lines are
/// skipped; a line that is not a record reaches `f` as an error (the caller warns). A
/// key recorded twice reaches `f` twice: the caller keeps the last.
pub fn for_each_record<E>(
    path: &Path,
    mut f: impl FnMut(Parsed) -> Result<(), E>,
    io_error: impl Fn(std::io::Error) -> E,
) -> Result<(), E> {
    use rayon::prelude::*;
    let group = rayon::current_num_threads().max(1) * 2;
    read_batches(
        path,
        group,
        |batches| {
            let parsed: Vec<Vec<Parsed>> = batches
                .par_iter()
                .map(|b| {
                    b.lines()
                        .filter_map(|(line, offset, bytes)| {
                            parse_line(bytes).map(|record| Parsed {
                                line,
                                offset,
                                record,
                            })
                        })
                        .collect()
                })
                .collect();
            for p in parsed.into_iter().flatten() {
                f(p)?;
            }
            Ok(())
        },
        io_error,
    )
}

/// A key's 64-bit hash. Deduplication keeps one hash per distinct episode (a set of
/// about 16 bytes an episode, the table's slack included), not the keys: two keys with
/// one hash would count as one episode, about 3 in 10⁸ for a million episodes.
pub fn key_hash(key: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    key.hash(&mut h);
    h.finish()
}

/// A key's 128-bit hash, for what must never confuse two episodes (`merge` keeps one
/// record per hash): two keys in 10²⁷ share one among a million episodes.
pub fn key_hash128(key: &str) -> u128 {
    use sha2::{Digest, Sha256};
    let d = Sha256::digest(key.as_bytes());
    u128::from_le_bytes(d[..16].try_into().expect("16 bytes"))
}

/// The `key` of a JSON line (a record or a trace), when it has one.
pub fn key_of(line: &[u8]) -> Option<String> {
    #[derive(Deserialize)]
    struct KeyOnly {
        key: String,
    }
    serde_json::from_slice::<KeyOnly>(line).ok().map(|k| k.key)
}

/// The warning for a line that is not a record.
pub fn skipped_line(path: &Path, line: usize, why: &str) -> String {
    format!("warning: {}:{line}: line skipped, {why}", path.display())
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
        // A torn line longer than the tail it reads at once, and a file with no newline.
        let long = "x".repeat(200_000);
        std::fs::write(&p, format!("{{\"a\":1}}\n{long}")).unwrap();
        assert!(drop_partial_tail(&p).unwrap());
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "{\"a\":1}\n");
        std::fs::write(&p, &long).unwrap();
        assert!(drop_partial_tail(&p).unwrap());
        assert_eq!(std::fs::read(&p).unwrap().len(), 0);
    }

    #[test]
    fn records_stream_in_file_order_with_their_lines_and_offsets() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(EPISODES);
        assert!(
            for_each_record(&p, |_| Err(()), |_| ()).is_ok(),
            "a missing file has no records"
        );
        let line = |key: &str| {
            let mut r: serde_json::Value = serde_json::from_str(SAMPLE).unwrap();
            r["key"] = key.into();
            r.to_string() + "\n"
        };
        // Enough lines for several batches, a blank one and a broken one.
        let mut text = String::new();
        let n = 3 * BATCH_BYTES / SAMPLE.len() + 7;
        for i in 0..n {
            text.push_str(&line(&format!("k{i}")));
            if i == 5 {
                text.push_str("\n{not json\n");
            }
        }
        std::fs::write(&p, &text).unwrap();
        let mut seen = Vec::new();
        let mut bad = Vec::new();
        for_each_record(
            &p,
            |parsed| {
                match parsed.record {
                    Ok(r) => {
                        let at = parsed.offset as usize;
                        assert!(text[at..].starts_with("{\"run_id\""));
                        seen.push(r.key);
                    }
                    Err(_) => bad.push(parsed.line),
                }
                Ok::<_, ()>(())
            },
            |_| (),
        )
        .unwrap();
        assert_eq!(seen.len(), n);
        assert!(seen.iter().enumerate().all(|(i, k)| *k == format!("k{i}")));
        assert_eq!(bad, [8], "line 7 is blank, line 8 broken");
    }

    /// One record as `run` writes it.
    const SAMPLE: &str = r#"{"run_id":"r","key":"k","suite":"s/t","user_task":"u","injection_task":null,"attack":null,"defense":"none","model":"sim:obedient","simulated":true,"seed":0,"utility":true,"attack_success":null,"severity":null,"steps":1,"hit_step_limit":false,"proposed_calls":0,"blocked":0,"asked_user":0,"faked":0,"escalated":0,"approved":0,"cost":{},"latency_ms":0.0,"error":null,"version":"0"}"#;
}
