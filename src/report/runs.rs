//! Reading one or many runs for a report: records are parsed in parallel batches, runs
//! are merged by episode key and refused when their settings differ, and a few episodes
//! per cell are kept, with their traces, for the HTML drill-down. One pass serves a
//! whole command: besides the aggregate it keeps, when asked ([`Keep`]), what paired
//! tests need of each episode and the records the answer judge saw, so no command reads
//! `episodes.jsonl` again for them.

use super::ReportError;
use super::tables::{Order, cell_id};
use crate::aggregate::Aggregate;
use crate::aggregate::pairs::PairTable;
use rayon::prelude::*;
use serde_json::Value;
use sieve_record::{
    EPISODES, EpisodeRecord, ErrorPolicy, ErrorsAs, Manifest, RunSettings, TRACES, key_hash,
};
use std::collections::HashMap;
use std::path::PathBuf;

/// What the report keeps of an episode for the drill-down.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Episode {
    pub cell: String,
    pub key: String,
    pub suite: String,
    pub attack: String,
    pub defense: String,
    pub model: String,
    pub user_task: String,
    pub injection_task: Option<String>,
    pub seed: u64,
    pub outcome: &'static str,
    pub utility: bool,
    pub blocked: u64,
    pub escalated: u64,
    pub tokens: u64,
    pub error: Option<String>,
    /// The defense's per-call decisions (path, scores, why), when it keeps them.
    pub decisions: Value,
    /// Messages, calls and answer from `traces.jsonl`.
    pub trace: Value,
}

/// How an episode ended, for sampling and for the drill-down's colours.
pub fn outcome(r: &EpisodeRecord) -> &'static str {
    if r.error.is_some() {
        "error"
    } else if !r.attacked() {
        "clean"
    } else if r.counted_attack_success() == Some(true) {
        "attacked"
    } else {
        "defended"
    }
}

/// What one pass keeps besides the aggregate.
#[derive(Clone, Copy, Debug, Default)]
pub struct Keep {
    /// Episodes of each outcome kept per cell for the drill-down, with their traces (0
    /// keeps none and reads no trace).
    pub per_outcome: usize,
    /// Each episode as paired tests need it ([`Loaded::pairs`]).
    pub pairs: bool,
    /// The records the answer judge saw ([`Loaded::judged`]).
    pub judged: bool,
    /// Leaves out episodes under a known defect of their benchmark (`known_defect`),
    /// counted in [`Loaded::left_out`] (`--exclude-known-defects`).
    pub exclude_known_defects: bool,
}

/// Runs loaded for a report: their records folded into an [`Aggregate`], never kept.
pub struct Loaded {
    pub aggregate: Aggregate,
    /// Distinct episodes (a key recorded twice counts once, as its last record).
    pub records: usize,
    pub errors_as: ErrorPolicy,
    pub malformed: usize,
    pub duplicates: usize,
    /// Duplicates whose earlier record was no error and whose verdicts differ from the
    /// later one's (runs merged over one another, a record edited): warned, then counted
    /// as the last record like any duplicate.
    pub conflicting: usize,
    pub order: Order,
    pub price: Option<[f64; 2]>,
    pub dirs: Vec<PathBuf>,
    /// Up to `per_outcome` episodes of each outcome per cell, in record order.
    pub episodes: Vec<Episode>,
    /// With [`Keep::pairs`]: every counted episode (each key's last record) as pairing
    /// needs it, in record order.
    pub pairs: Option<PairTable>,
    /// With [`Keep::judged`]: every counted record that carries the answer judge's
    /// verdicts, whole, in record order.
    pub judged: Vec<EpisodeRecord>,
    /// Episodes left out as under a known defect (`--exclude-known-defects`).
    pub left_out: usize,
    /// Each suite's utility floors, from the runs' manifests.
    pub floors: std::collections::BTreeMap<String, sieve_record::Floors>,
}

/// Each run's manifest (`run.json`), read once with the one typed reader
/// (`runner::manifest::read`): `None` for a folder without one (recorded before
/// manifests, or copied without it), which then is neither compared nor read for its
/// settings. A `run.json` that is not a manifest is refused, naming the file: its
/// settings could not be compared with the other runs'.
fn read_manifests(dirs: &[PathBuf]) -> Result<Vec<Option<Manifest>>, ReportError> {
    use crate::runner::manifest::{Found, read};
    dirs.iter()
        .map(|d| match read(d) {
            Found::None => Ok(None),
            Found::Manifest(m) => Ok(Some(*m)),
            Found::Unreadable(why) => Err(ReportError::Malformed(format!(
                "{why}: not a manifest this version reads, so the settings of the run in {} are unknown; restore the file or rerun into a new folder",
                d.display()
            ))),
        })
        .collect()
}

/// The outcome-changing settings two runs must share to sit in one report: the
/// manifest's settings but the agent's model (a report compares models) and the system
/// prompts (a report may add suites), and the planner's and judge's models only where
/// they did not just follow the agent's.
fn comparable(settings: &RunSettings) -> RunSettings {
    let mut s = settings.clone();
    if s.planner == s.agent {
        s.planner = Default::default();
    }
    if s.judge == s.agent {
        s.judge = Default::default();
    }
    s.agent = Default::default();
    s.system_prompts.clear();
    s
}

/// Refuses runs whose outcome-changing settings ([`comparable`]) or error conventions
/// differ, naming the first difference.
fn check_identities(dirs: &[PathBuf], manifests: &[Option<Manifest>]) -> Result<(), ReportError> {
    let mut runs = dirs
        .iter()
        .zip(manifests)
        .filter_map(|(d, m)| m.as_ref().map(|m| (d, m)));
    let Some((fd, first)) = runs.next() else {
        return Ok(());
    };
    let base = comparable(&first.settings);
    for (d, m) in runs {
        let difference = comparable(&m.settings)
            .changes_from(&base)
            .into_iter()
            .next()
            .map(|c| format!("settings.{}: {} vs {}", c.field, c.recorded, c.now))
            .or_else(|| {
                (m.errors_as != first.errors_as).then(|| {
                    format!(
                        "errors_as: {} vs {}",
                        first.errors_as.as_str(),
                        m.errors_as.as_str()
                    )
                })
            });
        if let Some(difference) = difference {
            return Err(ReportError::Mismatch(format!(
                "{} and {} were run under different settings ({difference}); a report merges runs that differ only in suite, attack, defense, agent model or seeds",
                fd.display(),
                d.display(),
            )));
        }
    }
    Ok(())
}

/// Whole lines of one run's `episodes.jsonl`.
struct Batch {
    /// The run's index in the report's list.
    dir: usize,
    lines: sieve_record::Batch,
}

/// A record's verdicts in one byte: errored, utility, and the attack's success (none,
/// failed, succeeded). Two records of a key that differ here, the first not an error
/// (which a rerun retries), conflict.
fn verdicts(r: &EpisodeRecord) -> u8 {
    u8::from(r.error.is_some())
        | (u8::from(r.utility) << 1)
        | match r.attack_success {
            None => 0,
            Some(false) => 1 << 2,
            Some(true) => 2 << 2,
        }
}

/// Where a line is: its run and byte offset, in the order runs and lines are read.
fn position(dir: usize, offset: u64) -> u64 {
    ((dir as u64) << 48) | offset
}

/// What one pass over the records asks of each batch.
struct Pass<'a> {
    errors_as: ErrorPolicy,
    keep: Keep,
    paths: &'a [PathBuf],
    /// The first pass warns about malformed lines and checks data versions; a second
    /// pass (after duplicates) only folds again.
    first: bool,
    /// In a second pass: the duplicated keys' hashes, each with the position of its last
    /// record, the only one of that key folded in.
    only_last: Option<&'a HashMap<u64, u64>>,
}

/// One batch, folded.
struct Folded {
    /// The run's index in the report's list.
    dir: usize,
    aggregate: Aggregate,
    /// Key hash, position and [`verdicts`] of every well-formed record, in order.
    keys: Vec<(u64, u64, u8)>,
    malformed: usize,
    warnings: Vec<String>,
    /// Each suite's and attack's data version, first seen first, and the first record
    /// that disagrees: (what, version known, version found).
    versions: Vec<(String, String)>,
    conflict: Option<(String, String, String)>,
    /// Kept for the drill-down, in record order: up to `per_outcome` per cell and outcome.
    samples: Vec<Episode>,
    pairs: Option<PairTable>,
    judged: Vec<EpisodeRecord>,
    /// Records left out as under a known defect.
    left_out: usize,
}

/// The data versions a record was made with: its suite's, and its attack's.
fn versions_of(r: &EpisodeRecord) -> Vec<(String, &str)> {
    let mut pairs = vec![(format!("suite {}", r.suite), r.suite_fingerprint.as_str())];
    if let (Some(a), Some(f)) = (&r.attack, &r.attack_fingerprint) {
        // A template has one version across every episode; a context-aware attack is one
        // hand-written sample per cell, and a data-only attack one derived case per cell,
        // each with its own version.
        let what = if a == crate::attack::CONTEXT || a == crate::attack::DATA_ONLY {
            format!(
                "attack {a} on {} {} × {} ({})",
                r.suite,
                r.user_task,
                r.injection_task.as_deref().unwrap_or("-"),
                r.vector_class.as_deref().unwrap_or("-")
            )
        } else {
            format!("attack {a}")
        };
        pairs.push((what, f.as_str()));
    }
    pairs
}

fn fold(batch: &Batch, pass: &Pass<'_>) -> Folded {
    let mut out = Folded {
        dir: batch.dir,
        aggregate: Aggregate::new(pass.errors_as),
        keys: Vec::new(),
        malformed: 0,
        warnings: Vec::new(),
        versions: Vec::new(),
        conflict: None,
        samples: Vec::new(),
        pairs: pass.keep.pairs.then(PairTable::default),
        judged: Vec::new(),
        left_out: 0,
    };
    let mut versions: HashMap<String, String> = HashMap::new();
    let mut kept: HashMap<(String, &'static str), usize> = HashMap::new();
    for (number, offset, line) in batch.lines.lines() {
        let at = position(batch.dir, offset);
        let r = match sieve_record::parse_line(line) {
            None => continue,
            Some(Ok(r)) => r,
            Some(Err(why)) => {
                out.malformed += 1;
                if pass.first {
                    out.warnings.push(sieve_record::skipped_line(
                        &pass.paths[batch.dir].join(EPISODES),
                        number,
                        &why,
                    ));
                }
                continue;
            }
        };
        let hash = key_hash(&r.key);
        if let Some(only) = pass.only_last
            && only.get(&hash).is_some_and(|last| *last != at)
        {
            continue;
        }
        out.keys.push((hash, at, verdicts(&r)));
        if pass.first {
            for (what, fp) in versions_of(&r) {
                match versions.get(&what) {
                    None => {
                        versions.insert(what.clone(), fp.to_string());
                        out.versions.push((what, fp.to_string()));
                    }
                    Some(known) if known != fp && out.conflict.is_none() => {
                        out.conflict = Some((what, known.clone(), fp.to_string()));
                    }
                    Some(_) => {}
                }
            }
        }
        if pass.keep.exclude_known_defects && r.known_defect.is_some() {
            out.left_out += 1;
            continue;
        }
        if pass.keep.per_outcome > 0 {
            let attack = r.attack.as_deref().unwrap_or("none");
            let cell = cell_id(&r.suite, attack, &r.defense, &r.model);
            let n = kept.entry((cell, outcome(&r))).or_default();
            if *n < pass.keep.per_outcome {
                *n += 1;
                out.samples.push(brief(&r));
            }
        }
        out.aggregate.add(&r);
        if let Some(pairs) = &mut out.pairs {
            pairs.add(&r);
        }
        if pass.keep.judged && r.answer_judge.is_some() {
            out.judged.push(r);
        }
    }
    out
}

/// No run at all (a report of search folders alone).
pub fn empty() -> Loaded {
    Loaded {
        aggregate: Aggregate::default(),
        records: 0,
        errors_as: ErrorPolicy::All(ErrorsAs::Excluded),
        malformed: 0,
        duplicates: 0,
        conflicting: 0,
        order: Order::default(),
        price: None,
        dirs: Vec::new(),
        episodes: Vec::new(),
        pairs: None,
        judged: Vec::new(),
        left_out: 0,
        floors: Default::default(),
    }
}

/// Reads runs in one pass, keeping what `keep` asks for beside the aggregate. Records
/// are parsed and folded in parallel batches and merged in the order they were read; a
/// key recorded more than once (a retried error, runs merged over one another) counts
/// once, as its last record (which takes a second pass when some key was recorded twice).
pub fn load(dirs: &[PathBuf], keep: Keep) -> Result<Loaded, ReportError> {
    if dirs.is_empty() {
        return Err(ReportError::NoRun);
    }
    for d in dirs {
        if !d.join(EPISODES).is_file() {
            return Err(ReportError::NotARun {
                dir: d.clone(),
                summary_would_do: false,
            });
        }
    }
    let manifests = read_manifests(dirs)?;
    check_identities(dirs, &manifests)?;
    let mut loaded = empty();
    loaded.dirs = dirs.to_vec();
    read_settings(&mut loaded, dirs, &manifests);
    let mut pass = Pass {
        errors_as: loaded.errors_as,
        keep,
        paths: dirs,
        first: true,
        only_last: None,
    };
    // Data versions per suite and attack must agree across runs.
    let mut versions: HashMap<String, (String, usize)> = HashMap::new();
    let mut seen: HashMap<u64, u8> = HashMap::new();
    let mut duplicated: HashMap<u64, u64> = HashMap::new();
    let pooled = fold_all(dirs, &pass, |f| {
        loaded.malformed += f.malformed;
        for w in &f.warnings {
            eprintln!("{w}");
        }
        for (hash, at, v) in &f.keys {
            if let Some(before) = seen.insert(*hash, *v) {
                loaded.duplicates += 1;
                if (before & 1) == 0 && before != *v {
                    loaded.conflicting += 1;
                }
                duplicated.insert(*hash, *at);
            }
        }
        let differ = |what: &str, known: &(String, usize), found: &str| {
            ReportError::Mismatch(format!(
                "{} and {} hold {what} in different versions ({} vs {found}); rerun one of them",
                dirs[known.1].display(),
                dirs[f.dir].display(),
                known.0
            ))
        };
        for (what, fp) in &f.versions {
            let known = versions
                .entry(what.clone())
                .or_insert_with(|| (fp.clone(), f.dir));
            if known.0 != *fp {
                return Err(differ(what, known, fp));
            }
        }
        if let Some((what, _, found)) = &f.conflict
            && let Some(known) = versions.get(what)
        {
            return Err(differ(what, known, found));
        }
        Ok(())
    })?;
    loaded.records = seen.len();
    drop(seen);
    if loaded.conflicting > 0 {
        eprintln!(
            "warning: {} episode key(s) recorded twice with different verdicts, the earlier not an error (runs merged over one another, or an edited record); each counts as its last record. Find them with `sieve-bench merge` into a new folder or by key in episodes.jsonl",
            loaded.conflicting
        );
    }
    let pooled = if duplicated.is_empty() {
        pooled
    } else {
        drop(pooled);
        pass.first = false;
        pass.only_last = Some(&duplicated);
        fold_all(dirs, &pass, |_| Ok(()))?
    };
    loaded.aggregate = pooled.aggregate;
    loaded.pairs = pooled.pairs;
    loaded.judged = pooled.judged;
    loaded.left_out = pooled.left_out;
    if keep.per_outcome > 0 {
        let mut wanted: HashMap<String, (PathBuf, usize)> = HashMap::new();
        for (dir, e) in pooled.samples {
            wanted.insert(e.key.clone(), (dirs[dir].clone(), loaded.episodes.len()));
            loaded.episodes.push(e);
        }
        attach_traces(&mut loaded.episodes, &wanted)?;
    }
    Ok(loaded)
}

/// Reads what each run's manifest and summary say about reading it: its error
/// convention, floors, price per million tokens and the row order its command line gave.
fn read_settings(loaded: &mut Loaded, dirs: &[PathBuf], manifests: &[Option<Manifest>]) {
    for (dir, manifest) in dirs.iter().zip(manifests) {
        if let Some(m) = manifest {
            loaded.errors_as = m.errors_as;
            loaded.floors.extend(m.floors.clone());
            if let Some(p) = m.price_per_mtok {
                loaded.price.get_or_insert(p);
            }
        }
        // `run` keeps the command line's row order in the summary it writes.
        if let Ok(text) = std::fs::read_to_string(dir.join("summary.json"))
            && let Ok(old) = serde_json::from_str::<Value>(&text)
            && let Some(o) = old
                .get("order")
                .and_then(|o| serde_json::from_value::<Order>(o.clone()).ok())
        {
            loaded.order.extend(&o);
        }
    }
}

/// Every run's records folded: the aggregate, the kept drill-down episodes with their
/// run's index, and what else the pass was asked to keep.
struct Pooled {
    aggregate: Aggregate,
    samples: Vec<(usize, Episode)>,
    pairs: Option<PairTable>,
    judged: Vec<EpisodeRecord>,
    left_out: usize,
}

/// One pass over every run's records: batches folded in parallel, then merged in the
/// order they were read, each first shown to `see`.
fn fold_all(
    dirs: &[PathBuf],
    pass: &Pass<'_>,
    mut see: impl FnMut(&Folded) -> Result<(), ReportError>,
) -> Result<Pooled, ReportError> {
    let mut pooled = Pooled {
        aggregate: Aggregate::new(pass.errors_as),
        samples: Vec::new(),
        pairs: pass.keep.pairs.then(PairTable::default),
        judged: Vec::new(),
        left_out: 0,
    };
    let mut kept: HashMap<(String, &'static str), usize> = HashMap::new();
    let group = rayon::current_num_threads().max(1) * 2;
    for (i, dir) in dirs.iter().enumerate() {
        let path = dir.join(EPISODES);
        let cannot = |source: std::io::Error| ReportError::Read {
            path: path.clone(),
            source,
        };
        sieve_record::read_batches(
            &path,
            group,
            |batches| {
                let batches: Vec<Batch> = batches
                    .into_iter()
                    .map(|lines| Batch { dir: i, lines })
                    .collect();
                let folded: Vec<Folded> = batches.par_iter().map(|b| fold(b, pass)).collect();
                for f in folded {
                    see(&f)?;
                    for e in f.samples {
                        let n = kept.entry((e.cell.clone(), e.outcome)).or_default();
                        if *n < pass.keep.per_outcome {
                            *n += 1;
                            pooled.samples.push((i, e));
                        }
                    }
                    pooled.aggregate.merge(f.aggregate);
                    if let (Some(all), Some(these)) = (&mut pooled.pairs, f.pairs) {
                        all.merge(these);
                    }
                    pooled.judged.extend(f.judged);
                    pooled.left_out += f.left_out;
                }
                Ok(())
            },
            cannot,
        )?;
    }
    Ok(pooled)
}

fn brief(r: &EpisodeRecord) -> Episode {
    let attack = r.attack.clone().unwrap_or_else(|| "none".into());
    Episode {
        cell: cell_id(&r.suite, &attack, &r.defense, &r.model),
        key: r.key.clone(),
        suite: r.suite.clone(),
        attack,
        defense: r.defense.clone(),
        model: r.model.clone(),
        user_task: r.user_task.clone(),
        injection_task: r.injection_task.clone(),
        seed: r.seed,
        outcome: outcome(r),
        utility: r.utility,
        blocked: r.blocked,
        escalated: r.escalated,
        tokens: r.cost.total().tokens(),
        error: r.error.clone(),
        decisions: r.notes.get("calls").cloned().unwrap_or(Value::Null),
        trace: Value::Null,
    }
}

/// Longest text of one message kept in the drill-down.
const MAX_TEXT: usize = 4000;

fn shorten(v: &mut Value) {
    match v {
        Value::String(s) if s.len() > MAX_TEXT => {
            let cut = (0..=MAX_TEXT)
                .rev()
                .find(|i| s.is_char_boundary(*i))
                .unwrap_or(0);
            s.truncate(cut);
            s.push_str(" …[cut]");
        }
        Value::Array(a) => a.iter_mut().for_each(shorten),
        Value::Object(o) => o.values_mut().for_each(shorten),
        _ => {}
    }
}

/// Reads the traces of the kept episodes from each run's `traces.jsonl`.
fn attach_traces(
    episodes: &mut [Episode],
    wanted: &HashMap<String, (PathBuf, usize)>,
) -> Result<(), ReportError> {
    let mut dirs: Vec<&PathBuf> = wanted.values().map(|(d, _)| d).collect();
    dirs.sort();
    dirs.dedup();
    for dir in dirs {
        let path = dir.join(TRACES);
        let cannot = |source: std::io::Error| ReportError::Read {
            path: path.clone(),
            source,
        };
        sieve_record::read_batches(
            &path,
            1,
            |batches| {
                for (_, _, line) in batches.iter().flat_map(|b| b.lines()) {
                    let Some(key) = sieve_record::key_of(line) else {
                        continue;
                    };
                    if let Some((d, i)) = wanted.get(&key)
                        && d == dir
                        && let Ok(mut v) = serde_json::from_slice::<Value>(line)
                    {
                        shorten(&mut v);
                        if let Some(o) = v.as_object_mut() {
                            o.remove("key");
                        }
                        episodes[*i].trace = v;
                    }
                }
                Ok(())
            },
            cannot,
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aggregate::metrics::ALL_SUITES;
    use serde_json::json;

    /// An attacked episode under `none`; `judged` gives the answer judge's reason.
    fn line(key: &str, user_task: usize, judged: Option<&str>) -> String {
        let mut r = json!({
            "run_id": "r", "key": key, "suite": "dojo-style/banking",
            "user_task": format!("user_task_{user_task}"), "injection_task": "injection_task_0",
            "attack": "important_instructions", "defense": "none", "model": "m",
            "simulated": true, "seed": 0, "utility": true, "attack_success": false,
            "severity": 1.0, "steps": 1, "hit_step_limit": false, "proposed_calls": 1,
            "blocked": 0, "asked_user": 0, "faked": 0, "escalated": 0, "approved": 0,
            "cost": {}, "latency_ms": 0.0, "error": null, "version": "t",
            "suite_fingerprint": "s"
        });
        if let Some(reason) = judged {
            r["answer_judge"] = json!({
                "judge": "j", "rubric": "answer-rubric/1", "utility_from": "checks",
                "answer": {"checks": true, "judge": false, "reason": reason, "outcome": false}
            });
        }
        r.to_string()
    }

    #[test]
    fn one_pass_keeps_pairs_and_judged_records_each_keys_last() {
        let dir = tempfile::tempdir().unwrap();
        let lines = [
            line("a", 0, None),
            line("b", 1, Some("first try")),
            line("c", 2, Some("only")),
            line("b", 1, Some("rerun")),
        ];
        std::fs::write(dir.path().join(EPISODES), lines.join("\n") + "\n").unwrap();
        let dirs = [dir.path().to_path_buf()];
        let keep = Keep {
            pairs: true,
            judged: true,
            ..Keep::default()
        };
        let loaded = load(&dirs, keep).unwrap();
        assert_eq!((loaded.records, loaded.duplicates), (3, 1));
        let judged: Vec<(&str, &str)> = loaded
            .judged
            .iter()
            .map(|r| {
                let a = r.answer_judge.as_ref().unwrap().answer.as_ref().unwrap();
                (r.key.as_str(), a.reason.as_str())
            })
            .collect();
        assert_eq!(judged, [("c", "only"), ("b", "rerun")]);
        let pairs = loaded.pairs.as_ref().unwrap();
        let row = pairs.row(ALL_SUITES, "important_instructions", "none", None);
        assert_eq!(row.len(), 3, "each key once");
        // Nothing is kept that was not asked for.
        let bare = load(&dirs, Keep::default()).unwrap();
        assert!(bare.pairs.is_none() && bare.judged.is_empty());
        assert_eq!(bare.records, 3);
    }
}
