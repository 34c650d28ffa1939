//! `merge`: joins the records of shards (`run --shard k/n`) into one run directory, so
//! array jobs need no distribution layer of their own.
//!
//! Shards must come from one benchmark: the same run identity (every setting that decides
//! outcomes) and the same split, with every shard present unless `--partial`. The merged
//! folder is built beside the output under a temporary name and renamed into place only
//! when complete, so a failure half-way leaves the output as it was.

use super::CliError;
use crate::runner::manifest::{self, Found, Invocation, Manifest};
use crate::runner::record::{self, EPISODES, RUN_INFO, TRACES};
use std::collections::{BTreeSet, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Adds a shard's ledger (replacing the part an earlier merge took from the same shard)
/// and its served models to the merged manifest.
fn merge_ledgers_and_lineage(merged: &mut Manifest, m: &Manifest) {
    if merged.budget_parts.is_empty() && merged.shard.is_some() {
        let key = shard_key(merged);
        merged.budget_parts.insert(key, merged.budget.clone());
    }
    if m.budget_parts.is_empty() {
        merged.budget_parts.insert(shard_key(m), m.budget.clone());
    } else {
        merged.budget_parts.extend(m.budget_parts.clone());
    }
    merged.budget = Default::default();
    for l in merged.budget_parts.values() {
        merged.budget.add(l);
    }
    for (c, l) in &m.served_models {
        let e = merged.served_models.entry(*c).or_insert_with(|| l.clone());
        e.served.extend(l.served.iter().cloned());
    }
}

fn shard_key(m: &Manifest) -> String {
    m.shard
        .map_or_else(|| m.run_id.clone(), |(k, n)| format!("{k}/{n}"))
}

/// Reads a run folder's manifest, refusing folders without a readable one.
fn manifest_of(dir: &Path) -> Result<Manifest, CliError> {
    match manifest::read(dir) {
        Found::Manifest(m) => Ok(*m),
        Found::None => Err(CliError::bad_input(format!(
            "{} has no {RUN_INFO}: its settings are unknown, so it cannot be merged",
            dir.display()
        ))),
        Found::Unreadable(why) => Err(CliError::bad_input(format!(
            "{why}: not a manifest this version reads, so the folder cannot be merged"
        ))),
    }
}

/// Checks that the inputs are shards of one benchmark and, unless `partial`, all of it.
fn check_shards(inputs: &[(PathBuf, Manifest)], partial: bool) -> Result<(), CliError> {
    let (first_dir, first) = &inputs[0];
    for (dir, m) in &inputs[1..] {
        let changes = m.settings.changes_from(&first.settings);
        if !changes.is_empty() {
            return Err(CliError::bad_input(format!(
                "{} and {} were recorded under other settings; shards of different runs cannot be merged:\n  {}",
                first_dir.display(),
                dir.display(),
                changes
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("\n  ")
            )));
        }
    }
    let splits: BTreeSet<usize> = inputs
        .iter()
        .filter_map(|(_, m)| m.shard.map(|s| s.1))
        .collect();
    if splits.len() > 1 || (splits.len() == 1 && inputs.iter().any(|(_, m)| m.shard.is_none())) {
        return Err(CliError::bad_input(format!(
            "the inputs come from different splits ({}); merge the shards of one --shard k/n split",
            inputs
                .iter()
                .map(|(d, m)| format!(
                    "{}: {}",
                    d.display(),
                    m.shard
                        .map_or("whole matrix".into(), |(k, n)| format!("{k}/{n}"))
                ))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    if let Some(&n) = splits.first() {
        let have: BTreeSet<usize> = inputs
            .iter()
            .filter_map(|(_, m)| m.shard.map(|s| s.0))
            .collect();
        let missing: Vec<String> = (0..n)
            .filter(|k| !have.contains(k))
            .map(|k| format!("{k}/{n}"))
            .collect();
        if !missing.is_empty() && !partial {
            return Err(CliError::bad_input(format!(
                "shard(s) {} missing: a merge without them would report rows of part of the matrix as the whole. Add them, or pass --partial to merge what is here",
                missing.join(", ")
            )));
        }
    }
    Ok(())
}

/// Writes every input's episodes and traces (one per key, the output's own first) into
/// `out`; returns how many episodes the inputs added.
pub fn merge(out: &Path, inputs: &[PathBuf], partial: bool) -> Result<usize, CliError> {
    let io = |what: &str, p: &Path, e: std::io::Error| {
        CliError::failed(format!("{what} {}: {e}", p.display()))
    };
    let mut shards = Vec::new();
    for input in inputs {
        if !input.join(EPISODES).is_file() {
            return Err(CliError::bad_input(format!(
                "{} has no {EPISODES}: not a run directory",
                input.display()
            )));
        }
        shards.push((input.clone(), manifest_of(input)?));
    }
    let existing = out.join(EPISODES).is_file();
    let mut all = shards.clone();
    if existing {
        all.insert(0, (out.to_path_buf(), manifest_of(out)?));
    }
    check_shards(&shards, partial)?;
    if existing {
        let changes = shards[0].1.settings.changes_from(&all[0].1.settings);
        if !changes.is_empty() {
            return Err(CliError::bad_input(format!(
                "{} holds episodes recorded under other settings than the shards'; merge into a new --out",
                out.display()
            )));
        }
    }
    // Read everything before writing anything.
    let mut sources = Vec::new();
    for (dir, _) in &all {
        let (records, _) =
            record::read_records(&dir.join(EPISODES)).map_err(|e| io("cannot read", dir, e))?;
        sources.push((dir.clone(), records));
    }
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&parent).map_err(|e| io("cannot create", &parent, e))?;
    let tmp = tempfile::Builder::new()
        .prefix(".merge-")
        .tempdir_in(&parent)
        .map_err(|e| io("cannot create a temporary folder in", &parent, e))?;
    let (mut episodes, mut traces) = {
        let open = |name: &str| {
            std::fs::File::create(tmp.path().join(name))
                .map_err(|e| io("cannot create", tmp.path(), e))
        };
        (open(EPISODES)?, open(TRACES)?)
    };
    let mut seen: HashSet<String> = HashSet::new();
    let mut added = 0;
    for (i, (dir, records)) in sources.into_iter().enumerate() {
        let mut new_here = HashSet::new();
        for r in records {
            if seen.insert(r.key.clone()) {
                let line = serde_json::to_string(&r).expect("records serialise") + "\n";
                episodes
                    .write_all(line.as_bytes())
                    .map_err(|e| io("cannot write", tmp.path(), e))?;
                new_here.insert(r.key);
            }
        }
        if !(existing && i == 0) {
            added += new_here.len();
        }
        let tpath = dir.join(TRACES);
        let bytes = match std::fs::read(&tpath) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(io("cannot read", &tpath, e)),
        };
        for (n, line) in bytes.split(|b| *b == b'\n').enumerate() {
            if line.is_empty() {
                continue;
            }
            let key = std::str::from_utf8(line)
                .ok()
                .and_then(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                .and_then(|v| v["key"].as_str().map(str::to_string));
            match key {
                Some(k) if new_here.remove(&k) => {
                    traces
                        .write_all(line)
                        .and_then(|_| traces.write_all(b"\n"))
                        .map_err(|e| io("cannot write", tmp.path(), e))?;
                }
                Some(_) => {}
                None => eprintln!(
                    "warning: {}:{}: trace line skipped, not valid",
                    tpath.display(),
                    n + 1
                ),
            }
        }
    }
    for f in [&episodes, &traces] {
        f.sync_all()
            .map_err(|e| io("cannot write", tmp.path(), e))?;
    }
    // The merged manifest: the shards' settings, every invocation, and this merge.
    let mut merged = all[0].1.clone();
    for (_, m) in &all[1..] {
        merged.settings = merged.settings.merged_with(&m.settings);
        merged.invocations.extend(m.invocations.iter().cloned());
        merged.simulated |= m.simulated;
        merge_ledgers_and_lineage(&mut merged, m);
    }
    merged.identity = merged.settings.fingerprint();
    merged.shard = None;
    let now = manifest::now();
    merged.invocations.push(Invocation {
        command: std::env::args().collect(),
        started: now.clone(),
        finished: Some(now.clone()),
        ran: 0,
        errored: 0,
        outcome: format!("merged {} shard(s)", shards.len()),
    });
    merged.finished = Some(now);
    manifest::write(tmp.path(), &merged).map_err(|e| io("cannot write", tmp.path(), e))?;
    // Into place: the old output (if any) moves aside, the new one in, the old one goes.
    let tmp = tmp.keep();
    if out.exists() {
        let old = parent.join(format!(
            ".merge-old-{}",
            out.file_name()
                .map_or("out".into(), |n| n.to_string_lossy().to_string())
        ));
        let _ = std::fs::remove_dir_all(&old);
        std::fs::rename(out, &old).map_err(|e| io("cannot move aside", out, e))?;
        std::fs::rename(&tmp, out).map_err(|e| io("cannot move into place", out, e))?;
        let _ = std::fs::remove_dir_all(&old);
    } else {
        std::fs::rename(&tmp, out).map_err(|e| io("cannot move into place", out, e))?;
    }
    Ok(added)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::budget::Ledger;

    fn shard(k: usize, tokens: u64) -> Manifest {
        let mut budget = Ledger::default();
        budget.charge(0.0, tokens, false);
        serde_json::from_value::<Manifest>(serde_json::json!({
            "run_id": "r", "crate_version": "0", "identity": "i",
            "settings": {"harness_version": "0", "agent": null, "planner": null, "judge": null,
                "embedder": null, "max_steps": 1, "defense_config": "", "system_prompts": {}},
            "simulated": true, "started": "t", "invocations": [],
            "shard": [k, 2], "budget": budget,
        }))
        .unwrap()
    }

    /// Shards' ledgers add up, and merging a shard again replaces its part.
    #[test]
    fn ledgers_add_over_shards_and_a_remerged_shard_counts_once() {
        let mut merged = shard(0, 100);
        merge_ledgers_and_lineage(&mut merged, &shard(1, 50));
        assert_eq!(merged.budget.spent_tokens, 150);
        merged.shard = None;
        merge_ledgers_and_lineage(&mut merged, &shard(1, 70));
        assert_eq!(
            merged.budget.spent_tokens, 170,
            "shard 1 replaced, not added"
        );
        assert_eq!(merged.budget_parts.len(), 2);
    }
}
