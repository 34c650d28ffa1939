//! `merge`: joins the records of shards (`run --shard k/n`) into one run directory, so
//! array jobs need no distribution layer of their own.
//!
//! Shards must come from one benchmark: the same run identity (every setting that decides
//! outcomes), the same error convention and the same split, with every shard present
//! unless `--partial`. The output is a new or empty folder or a run of its own, locked
//! like `run` locks it; the merged files are written into a temporary folder inside it
//! and renamed over the run's own files only when complete, so a failure half-way leaves
//! the output as it was, and nothing the merge did not write is moved or removed.
//! Records stream through the reader `report` uses: memory holds a 128-bit hash and an
//! offset per episode, never the records.

use super::CliError;
use crate::record::{self, key_hash128};
use crate::runner::files::{self, Folder, FolderLock, LockError};
use crate::runner::manifest::{self, Found};
use sieve_record::{EPISODES, Invocation, InvocationOutcome, Manifest, RUN_INFO, TRACES};
use std::collections::{BTreeSet, HashMap};
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

/// Refuses inputs (and an output run) that count errored episodes differently: their
/// rows would mix two conventions under one label.
fn check_conventions(all: &[(PathBuf, Manifest)]) -> Result<(), CliError> {
    let (first_dir, first) = &all[0];
    for (dir, m) in &all[1..] {
        if m.errors_as != first.errors_as {
            return Err(CliError::bad_input(format!(
                "{} counts errored episodes as `{}` and {} as `{}` (--errors-as): merged, their rows would mix two conventions. Rerun the shards with one --errors-as",
                first_dir.display(),
                first.errors_as.as_str(),
                dir.display(),
                m.errors_as.as_str()
            )));
        }
    }
    Ok(())
}

fn locked(e: LockError) -> CliError {
    match e {
        LockError::Busy(_) => CliError::Locked(e.to_string()),
        LockError::Io(..) => CliError::failed(e.to_string()),
    }
}

fn io(what: &str, p: &Path, e: std::io::Error) -> CliError {
    CliError::failed(format!("{what} {}: {e}", p.display()))
}

/// An output folder this merge created: removed again if the merge fails (only what the
/// merge put there, and the folder only when that leaves it empty).
struct Created(Option<PathBuf>);

impl Drop for Created {
    fn drop(&mut self) {
        if let Some(dir) = self.0.take() {
            let _ = std::fs::remove_file(dir.join(files::LOCK));
            let _ = std::fs::remove_dir(&dir);
        }
    }
}

/// Which record of each key the merge keeps: the first source holding the key (the
/// output's own records first), and within it the key's last record. Per key hash, the
/// source's index and the record's byte offset.
fn choose(sources: &[PathBuf]) -> Result<HashMap<u128, (usize, u64)>, CliError> {
    let mut chosen: HashMap<u128, (usize, u64)> = HashMap::new();
    for (i, dir) in sources.iter().enumerate() {
        let path = dir.join(EPISODES);
        record::for_each_record(
            &path,
            |p| {
                match p.record {
                    Ok(r) => {
                        let slot = chosen.entry(key_hash128(&r.key)).or_insert((i, p.offset));
                        if slot.0 == i {
                            slot.1 = p.offset;
                        }
                    }
                    Err(why) => eprintln!("{}", sieve_record::skipped_line(&path, p.line, &why)),
                }
                Ok(())
            },
            |e| io("cannot read", &path, e),
        )?;
    }
    Ok(chosen)
}

/// Copies the lines of `from` that start at `offsets` (sorted) to `to`.
fn copy_lines(from: &Path, offsets: &[u64], to: &mut impl Write) -> Result<(), CliError> {
    let mut next = offsets.iter().peekable();
    sieve_record::read_batches(
        from,
        1,
        |batches| {
            for (_, at, line) in batches.iter().flat_map(|b| b.lines()) {
                while next.next_if(|o| **o < at).is_some() {}
                if next.next_if(|o| **o == at).is_some() {
                    to.write_all(line)?;
                    if line.last() != Some(&b'\n') {
                        to.write_all(b"\n")?;
                    }
                }
            }
            Ok(())
        },
        |e| e,
    )
    .map_err(|e| io("cannot copy from", from, e))
}

/// Writes the chosen records and their traces (each key's last trace in the source its
/// record comes from) into `tmp`.
fn write_merged(
    sources: &[PathBuf],
    chosen: &HashMap<u128, (usize, u64)>,
    tmp: &Path,
) -> Result<(), CliError> {
    let create = |name: &str| {
        std::fs::File::create(tmp.join(name))
            .map(std::io::BufWriter::new)
            .map_err(|e| io("cannot create", tmp, e))
    };
    let (mut episodes, mut traces) = (create(EPISODES)?, create(TRACES)?);
    for (i, dir) in sources.iter().enumerate() {
        let mut offsets: Vec<u64> = chosen
            .values()
            .filter(|(s, _)| *s == i)
            .map(|(_, o)| *o)
            .collect();
        offsets.sort_unstable();
        copy_lines(&dir.join(EPISODES), &offsets, &mut episodes)?;
        let tpath = dir.join(TRACES);
        let mut last: HashMap<u128, u64> = HashMap::new();
        sieve_record::read_batches(
            &tpath,
            1,
            |batches| {
                for (n, at, line) in batches.iter().flat_map(|b| b.lines()) {
                    if line.iter().all(u8::is_ascii_whitespace) {
                        continue;
                    }
                    match sieve_record::key_of(line) {
                        Some(k) => {
                            let h = key_hash128(&k);
                            if chosen.get(&h).is_some_and(|(s, _)| *s == i) {
                                last.insert(h, at);
                            }
                        }
                        None => eprintln!(
                            "warning: {}:{n}: trace line skipped, not valid",
                            tpath.display()
                        ),
                    }
                }
                Ok(())
            },
            |e| io("cannot read", &tpath, e),
        )?;
        let mut offsets: Vec<u64> = last.into_values().collect();
        offsets.sort_unstable();
        copy_lines(&tpath, &offsets, &mut traces)?;
    }
    for (f, name) in [(episodes, EPISODES), (traces, TRACES)] {
        f.into_inner()
            .map_err(|e| e.into_error())
            .and_then(|f| f.sync_all())
            .map_err(|e| io("cannot write", &tmp.join(name), e))?;
    }
    Ok(())
}

/// The shards of the split that are not among the inputs (`--partial`), if any.
fn missing(shards: &[(PathBuf, Manifest)]) -> Option<String> {
    let n = shards.iter().find_map(|(_, m)| m.shard.map(|s| s.1))?;
    let have: BTreeSet<usize> = shards
        .iter()
        .filter_map(|(_, m)| m.shard.map(|s| s.0))
        .collect();
    let gone: Vec<String> = (0..n)
        .filter(|k| !have.contains(k))
        .map(|k| format!("{k}/{n}"))
        .collect();
    (!gone.is_empty()).then(|| gone.join(", "))
}

/// Run folders with their manifests.
type Runs = Vec<(PathBuf, Manifest)>;

/// Reads the inputs: each a run directory with a manifest, each named once, each free
/// of a live run (held until the merge ends).
fn open_inputs(out: &Path, inputs: &[PathBuf]) -> Result<(Runs, Vec<FolderLock>), CliError> {
    let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let out_c = canonical(out);
    let mut shards: Vec<(PathBuf, Manifest)> = Vec::new();
    let mut seen = Vec::new();
    let mut held = Vec::new();
    for input in inputs {
        if !input.join(EPISODES).is_file() {
            return Err(CliError::bad_input(format!(
                "{} has no {EPISODES}: not a run directory",
                input.display()
            )));
        }
        let c = canonical(input);
        if seen.contains(&c) {
            continue;
        }
        if c != out_c {
            held.extend(FolderLock::hold_if_present(input).map_err(locked)?);
        }
        seen.push(c);
        shards.push((input.clone(), manifest_of(input)?));
    }
    Ok((shards, held))
}

/// A finished merge.
pub struct Merged {
    /// How many episodes the inputs added.
    pub added: usize,
    /// The output's lock, held until the caller has written the summary too.
    _lock: FolderLock,
}

/// Writes every input's episodes and traces (one per key, the output's own first) into
/// `out`.
pub fn merge(out: &Path, inputs: &[PathBuf], partial: bool) -> Result<Merged, CliError> {
    let (shards, _held) = open_inputs(out, inputs)?;
    check_shards(&shards, partial)?;
    let state = files::inspect(out).map_err(|e| io("cannot read", out, e))?;
    if let Folder::Foreign(holds) = &state {
        return Err(CliError::bad_input(files::not_a_run(out, holds, "merge")));
    }
    let mut created = Created(None);
    if state == Folder::Missing {
        std::fs::create_dir_all(out).map_err(|e| io("cannot create", out, e))?;
        created.0 = Some(out.to_path_buf());
    }
    let lock = FolderLock::acquire(out).map_err(locked)?;
    let existing = state == Folder::Run;
    let mut all = shards.clone();
    if existing {
        all.insert(0, (out.to_path_buf(), manifest_of(out)?));
        let changes = shards[0].1.settings.changes_from(&all[0].1.settings);
        if !changes.is_empty() {
            return Err(CliError::bad_input(format!(
                "{} holds episodes recorded under other settings than the shards'; merge into a new --out",
                out.display()
            )));
        }
    }
    check_conventions(&all)?;
    let sources: Vec<PathBuf> = all.iter().map(|(d, _)| d.clone()).collect();
    let chosen = choose(&sources)?;
    let added = chosen
        .values()
        .filter(|(s, _)| !(existing && *s == 0))
        .count();
    let tmp = tempfile::Builder::new()
        .prefix(".merge-")
        .tempdir_in(out)
        .map_err(|e| io("cannot create a temporary folder in", out, e))?;
    write_merged(&sources, &chosen, tmp.path())?;
    drop(chosen);
    // The merged manifest: the shards' settings, every invocation, and this merge.
    let mut merged = all[0].1.clone();
    for (_, m) in &all[1..] {
        merged.settings = merged.settings.merged_with(&m.settings);
        merged.invocations.extend(m.invocations.iter().cloned());
        merged.simulated |= m.simulated;
        merge_ledgers_and_lineage(&mut merged, m);
    }
    merged.identity = crate::runner::identity::fingerprint(&merged.settings);
    merged.shard = None;
    let now = manifest::now();
    merged.invocations.push(Invocation {
        command: std::env::args().collect(),
        started: now.clone(),
        finished: Some(now.clone()),
        ran: 0,
        errored: 0,
        outcome: InvocationOutcome::Merged {
            shards: shards.len(),
            missing: missing(&shards),
        },
    });
    merged.finished = Some(now);
    manifest::write(tmp.path(), &merged).map_err(|e| io("cannot write", tmp.path(), e))?;
    // Into place, one file at a time over the run's own: the traces before the records
    // that name them, the manifest last.
    for name in [TRACES, EPISODES, RUN_INFO] {
        std::fs::rename(tmp.path().join(name), out.join(name))
            .map_err(|e| io("cannot move into place", &out.join(name), e))?;
    }
    created.0 = None;
    Ok(Merged { added, _lock: lock })
}

#[cfg(test)]
mod tests {
    use super::*;
    use sieve_record::Ledger;

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
