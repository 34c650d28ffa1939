//! `merge`: joins the records of shards (`run --shard k/n`) into one run directory, so
//! array jobs need no distribution layer of their own.

use super::CliError;
use crate::runner::record::{self, EPISODES, TRACES};
use std::collections::HashSet;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

/// Appends each input's episodes and traces to `out`, skipping keys already there;
/// returns how many episodes were added.
pub fn merge(out: &Path, inputs: &[PathBuf]) -> Result<usize, CliError> {
    let io = |what: &str, p: &Path, e: std::io::Error| {
        CliError::failed(format!("{what} {}: {e}", p.display()))
    };
    std::fs::create_dir_all(out).map_err(|e| io("cannot create", out, e))?;
    for name in [EPISODES, TRACES] {
        record::drop_partial_tail(&out.join(name))
            .map_err(|e| io("cannot repair", &out.join(name), e))?;
    }
    let (existing, _) =
        record::read_records(&out.join(EPISODES)).map_err(|e| io("cannot read", out, e))?;
    let mut seen: HashSet<String> = record::recorded_keys(&existing);
    // Shards of one benchmark share their suite and attack data; refuse to mix versions.
    let mut versions: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    let mut check_version = |r: &record::EpisodeRecord, from: &Path| -> Result<(), CliError> {
        let mut pairs = vec![(format!("suite {}", r.suite), r.suite_fingerprint.clone())];
        if let (Some(a), Some(f)) = (&r.attack, &r.attack_fingerprint) {
            pairs.push((format!("attack {a}"), f.clone()));
        }
        for (what, fp) in pairs {
            let known = versions.entry(what.clone()).or_insert_with(|| fp.clone());
            if *known != fp {
                return Err(CliError::bad_input(format!(
                    "{}: {what} was recorded with another version of its data ({fp} vs {known}); shards of different versions cannot be merged",
                    from.display()
                )));
            }
        }
        Ok(())
    };
    for r in &existing {
        check_version(r, out)?;
    }
    // Read and check every shard before writing anything, so a bad shard leaves the
    // output untouched.
    let mut shards = Vec::new();
    for input in inputs {
        let path = input.join(EPISODES);
        if !path.is_file() {
            return Err(CliError::bad_input(format!(
                "{} has no {EPISODES}: not a run directory",
                input.display()
            )));
        }
        let (records, bad) =
            record::read_records(&path).map_err(|e| io("cannot read", &path, e))?;
        if bad > 0 {
            eprintln!(
                "warning: {bad} malformed line(s) in {} skipped",
                path.display()
            );
        }
        for r in &records {
            check_version(r, input)?;
        }
        shards.push((input, records));
    }
    let open = |name: &str| {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(out.join(name))
            .map_err(|e| io("cannot open", &out.join(name), e))
    };
    let (mut episodes, mut traces) = (open(EPISODES)?, open(TRACES)?);
    let mut added_keys: HashSet<String> = HashSet::new();
    for (input, records) in shards {
        let mut new_here = HashSet::new();
        for r in records {
            if seen.insert(r.key.clone()) {
                let line = serde_json::to_string(&r).expect("records serialise") + "\n";
                episodes
                    .write_all(line.as_bytes())
                    .map_err(|e| io("cannot write", out, e))?;
                new_here.insert(r.key);
            }
        }
        let tpath = input.join(TRACES);
        if let Ok(f) = std::fs::File::open(&tpath) {
            for line in BufReader::new(f).lines() {
                let line = line.map_err(|e| io("cannot read", &tpath, e))?;
                let key = serde_json::from_str::<serde_json::Value>(&line)
                    .ok()
                    .and_then(|v| v["key"].as_str().map(str::to_string));
                if let Some(k) = key
                    && new_here.contains(&k)
                {
                    traces
                        .write_all((line + "\n").as_bytes())
                        .map_err(|e| io("cannot write", out, e))?;
                }
            }
        }
        added_keys.extend(new_here);
    }
    Ok(added_keys.len())
}
