//! On-disk formats: the `sieve-record` crate (`crates/record`) owns them as plain data,
//! the episode and trace records, call records and decisions, messages, costs, error
//! kinds, the run folder's file names, the streaming JSONL reader and the record writer,
//! and this module re-exports it. What needs this crate's dependencies stays here:
//! parsing a file's batches in parallel, and the 128-bit key hash `merge` keeps.

use sieve_record::{Parsed, parse_line, read_batches};
use std::path::Path;

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

/// A key's 128-bit hash, for what must never confuse two episodes (`merge` keeps one
/// record per hash): two keys in 10²⁷ share one among a million episodes.
pub fn key_hash128(key: &str) -> u128 {
    use sha2::{Digest, Sha256};
    let d = Sha256::digest(key.as_bytes());
    u128::from_le_bytes(d[..16].try_into().expect("16 bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sieve_record::{BATCH_BYTES, EPISODES};

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
