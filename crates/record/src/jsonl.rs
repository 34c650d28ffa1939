//! The files of a run folder: their names, the one streaming reader of its JSON-lines
//! files, and the writer that appends a record and its trace as each episode ends.
//! Episode records are one JSON line per finished episode, appended and flushed, so an
//! interrupted run loses nothing finished and resumes from the file.

use crate::episode::{EpisodeRecord, TraceRecord};
use serde::Deserialize;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, Read, Seek, SeekFrom, Write};
use std::path::Path;

/// The file names inside a run directory.
pub const EPISODES: &str = "episodes.jsonl";
pub const TRACES: &str = "traces.jsonl";
pub const RUN_INFO: &str = "run.json";

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
/// `traces.jsonl`: `report`, `compare`, `run`'s resume and `merge` all stream through it (the main
/// crate's `record::for_each_record` parses its batches in parallel).
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

/// Why a line of `episodes.jsonl` is not a record; the reader warns with it and skips
/// the line.
#[derive(Debug, thiserror::Error)]
pub enum LineError {
    #[error("not valid UTF-8")]
    NotUtf8,
    #[error("not a record: {0}")]
    NotARecord(#[source] serde_json::Error),
}

/// Parses one line of `episodes.jsonl`: `None` for a blank line, else the record or why
/// the line is not one.
pub fn parse_line(line: &[u8]) -> Option<Result<EpisodeRecord, LineError>> {
    if line.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    Some(
        std::str::from_utf8(line)
            .map_err(|_| LineError::NotUtf8)
            .and_then(|l| serde_json::from_str::<EpisodeRecord>(l).map_err(LineError::NotARecord)),
    )
}

/// One line of `episodes.jsonl`, parsed.
pub struct Parsed {
    /// The line's number (from 1).
    pub line: usize,
    /// Its byte offset in the file.
    pub offset: u64,
    /// The record, or why the line is not one.
    pub record: Result<EpisodeRecord, LineError>,
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

/// The `key` of a JSON line (a record or a trace), when it has one.
pub fn key_of(line: &[u8]) -> Option<String> {
    #[derive(Deserialize)]
    struct KeyOnly {
        key: String,
    }
    serde_json::from_slice::<KeyOnly>(line).ok().map(|k| k.key)
}

/// The warning for a line that is not a record.
pub fn skipped_line(path: &Path, line: usize, why: impl std::fmt::Display) -> String {
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
    fn batches_hold_whole_lines_with_their_numbers_and_offsets() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(EPISODES);
        let mut calls = 0;
        read_batches(
            &p,
            2,
            |_| {
                calls += 1;
                Ok::<_, ()>(())
            },
            |_| (),
        )
        .unwrap();
        assert_eq!(calls, 0, "a missing file has no lines");
        let mut text = String::new();
        let n = 3 * BATCH_BYTES / SAMPLE.len() + 7;
        for _ in 0..n {
            text.push_str(SAMPLE);
            text.push('\n');
        }
        std::fs::write(&p, &text).unwrap();
        let mut lines = Vec::new();
        read_batches(
            &p,
            2,
            |batches| {
                assert!(batches.len() <= 2);
                for b in &batches {
                    assert!(b.bytes.ends_with(b"\n"), "a batch ends at a line's end");
                    lines.extend(b.lines().map(|(n, at, l)| (n, at, l.len())));
                }
                Ok::<_, ()>(())
            },
            |_| (),
        )
        .unwrap();
        assert_eq!(lines.len(), n);
        for (i, (number, at, len)) in lines.iter().enumerate() {
            assert_eq!(
                (*number, *at as usize, *len),
                (i + 1, i * (SAMPLE.len() + 1), SAMPLE.len() + 1)
            );
        }
    }

    #[test]
    fn a_line_is_a_record_a_blank_or_a_kind_of_failure() {
        let r = parse_line(SAMPLE.as_bytes()).unwrap().unwrap();
        assert_eq!((r.key.as_str(), r.model.as_str()), ("k", "sim:obedient"));
        assert!(parse_line(b"  \r\n").is_none());
        let bad = parse_line(b"\xff\n").unwrap().unwrap_err();
        assert!(matches!(bad, LineError::NotUtf8));
        assert_eq!(bad.to_string(), "not valid UTF-8");
        let bad = parse_line(b"{not json\n").unwrap().unwrap_err();
        assert!(matches!(bad, LineError::NotARecord(_)));
        assert!(
            bad.to_string()
                .starts_with("not a record: key must be a string"),
            "{bad}"
        );
        assert_eq!(
            skipped_line(Path::new("r/episodes.jsonl"), 8, &bad),
            format!("warning: r/episodes.jsonl:8: line skipped, {bad}")
        );
    }

    #[test]
    fn the_writer_appends_the_trace_before_the_record() {
        let dir = tempfile::tempdir().unwrap();
        let record: EpisodeRecord = serde_json::from_str(SAMPLE).unwrap();
        let trace = TraceRecord {
            key: record.key.clone(),
            messages: vec![crate::Message::user("hi")],
            calls: Vec::new(),
            answer: "done".into(),
            payload: None,
        };
        let mut w = RecordWriter::open(&dir.path().join("run")).unwrap();
        w.write(&record, &trace).unwrap();
        w.write(&record, &trace).unwrap();
        let episodes = std::fs::read_to_string(dir.path().join("run").join(EPISODES)).unwrap();
        let traces = std::fs::read_to_string(dir.path().join("run").join(TRACES)).unwrap();
        assert_eq!(episodes.lines().count(), 2);
        assert_eq!(
            key_of(traces.lines().next().unwrap().as_bytes()).as_deref(),
            Some("k")
        );
        let back = parse_line(episodes.lines().next().unwrap().as_bytes())
            .unwrap()
            .unwrap();
        assert_eq!(back, record);
    }

    /// One record as `run` writes it.
    const SAMPLE: &str = r#"{"run_id":"r","key":"k","suite":"s/t","user_task":"u","injection_task":null,"attack":null,"defense":"none","model":"sim:obedient","simulated":true,"seed":0,"utility":true,"attack_success":null,"severity":null,"steps":1,"hit_step_limit":false,"proposed_calls":0,"blocked":0,"asked_user":0,"faked":0,"escalated":0,"approved":0,"cost":{},"latency_ms":0.0,"error":null,"version":"0"}"#;
}
