//! Reading one or many runs for a report: records are parsed in parallel batches, runs
//! are merged by episode key and refused when their settings differ, and a few episodes
//! per cell are kept, with their traces, for the HTML drill-down.

use super::ReportError;
use super::tables::{Order, cell_id};
use crate::aggregate::Aggregate;
use crate::aggregate::metrics::{ErrorPolicy, ErrorsAs};
use crate::record::key_hash;
use crate::record::{self, EPISODES, EpisodeRecord, RUN_INFO, TRACES};
use rayon::prelude::*;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

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
    } else if r.attack_success == Some(true) {
        "attacked"
    } else {
        "defended"
    }
}

/// Runs loaded for a report: their records folded into an [`Aggregate`], never kept.
pub struct Loaded {
    pub aggregate: Aggregate,
    /// Distinct episodes (a key recorded twice counts once, as its last record).
    pub records: usize,
    pub errors_as: ErrorPolicy,
    pub malformed: usize,
    pub duplicates: usize,
    pub order: Order,
    pub price: Option<[f64; 2]>,
    pub dirs: Vec<PathBuf>,
    /// Up to `per_outcome` episodes of each outcome per cell, in record order.
    pub episodes: Vec<Episode>,
}

fn read_info(dir: &Path) -> Option<Value> {
    let text = std::fs::read_to_string(dir.join(RUN_INFO)).ok()?;
    serde_json::from_str(&text).ok()
}

/// The outcome-changing settings two runs must share to sit in one report: everything
/// in the manifest's settings but the agent's model (a report compares models), and the
/// planner's and judge's models when they only followed the agent's.
fn identity(info: &Value) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    let settings = &info["settings"];
    if let Some(o) = settings.as_object() {
        for (k, v) in o {
            let follows_agent = (k == "planner" || k == "judge") && *v == settings["agent"];
            if k != "agent" && k != "system_prompts" && !follows_agent {
                out.insert(format!("settings.{k}"), v.clone());
            }
        }
    }
    out.insert("errors_as".into(), info["errors_as"].clone());
    out
}

/// Refuses runs whose outcome-changing settings differ, naming the first difference.
fn check_identities(dirs: &[PathBuf]) -> Result<(), ReportError> {
    let mut first: Option<(&Path, BTreeMap<String, Value>)> = None;
    for d in dirs {
        let Some(info) = read_info(d) else { continue };
        let id = identity(&info);
        match &first {
            None => first = Some((d, id)),
            Some((fd, fid)) => {
                let mut keys: Vec<&String> = fid.keys().chain(id.keys()).collect();
                keys.sort();
                keys.dedup();
                for k in keys {
                    let (a, b) = (fid.get(k), id.get(k));
                    if a != b {
                        let show =
                            |v: Option<&Value>| v.map_or("(absent)".into(), |v| v.to_string());
                        return Err(ReportError::Mismatch(format!(
                            "{} and {} were run under different settings ({k}: {} vs {}); a report merges runs that differ only in suite, attack, defense, agent model or seeds",
                            fd.display(),
                            d.display(),
                            show(a),
                            show(b)
                        )));
                    }
                }
            }
        }
    }
    Ok(())
}

/// Whole lines of one run's `episodes.jsonl`.
struct Batch {
    /// The run's index in the report's list.
    dir: usize,
    lines: record::Batch,
}

/// Where a line is: its run and byte offset, in the order runs and lines are read.
fn position(dir: usize, offset: u64) -> u64 {
    ((dir as u64) << 48) | offset
}

/// What one pass over the records asks of each batch.
struct Pass<'a> {
    errors_as: ErrorPolicy,
    per_outcome: usize,
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
    /// Key hash and position of every well-formed record, in order.
    keys: Vec<(u64, u64)>,
    malformed: usize,
    warnings: Vec<String>,
    /// Each suite's and attack's data version, first seen first, and the first record
    /// that disagrees: (what, version known, version found).
    versions: Vec<(String, String)>,
    conflict: Option<(String, String, String)>,
    /// Kept for the drill-down, in record order: up to `per_outcome` per cell and outcome.
    samples: Vec<Episode>,
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
    };
    let mut versions: HashMap<String, String> = HashMap::new();
    let mut kept: HashMap<(String, &'static str), usize> = HashMap::new();
    for (number, offset, line) in batch.lines.lines() {
        let at = position(batch.dir, offset);
        let r = match record::parse_line(line) {
            None => continue,
            Some(Ok(r)) => r,
            Some(Err(why)) => {
                out.malformed += 1;
                if pass.first {
                    out.warnings.push(record::skipped_line(
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
        out.keys.push((hash, at));
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
        if pass.per_outcome > 0 {
            let attack = r.attack.as_deref().unwrap_or("none");
            let cell = cell_id(&r.suite, attack, &r.defense, &r.model);
            let n = kept.entry((cell, outcome(&r))).or_default();
            if *n < pass.per_outcome {
                *n += 1;
                out.samples.push(brief(&r));
            }
        }
        out.aggregate.add(&r);
    }
    out
}

/// Reads runs. `per_outcome` episodes of each outcome are kept per cell for the
/// drill-down (0 keeps none and skips the traces). Records are parsed and folded in
/// parallel batches and merged in the order they were read; a key recorded more than
/// once (a retried error, runs merged over one another) counts once, as its last record.
/// No run at all (a report of search folders alone).
pub fn empty() -> Loaded {
    Loaded {
        aggregate: Aggregate::default(),
        records: 0,
        errors_as: ErrorPolicy::All(ErrorsAs::Excluded),
        malformed: 0,
        duplicates: 0,
        order: Order::default(),
        price: None,
        dirs: Vec::new(),
        episodes: Vec::new(),
    }
}

pub fn load(dirs: &[PathBuf], per_outcome: usize) -> Result<Loaded, ReportError> {
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
    check_identities(dirs)?;
    let mut loaded = empty();
    loaded.dirs = dirs.to_vec();
    for dir in dirs {
        if let Some(info) = read_info(dir) {
            loaded.errors_as = ErrorPolicy::from_name(info["errors_as"].as_str().unwrap_or(""));
            if let Some(p) = info
                .get("price_per_mtok")
                .and_then(|p| serde_json::from_value::<[f64; 2]>(p.clone()).ok())
            {
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
    let mut pass = Pass {
        errors_as: loaded.errors_as,
        per_outcome,
        paths: dirs,
        first: true,
        only_last: None,
    };
    // Data versions per suite and attack must agree across runs.
    let mut versions: HashMap<String, (String, usize)> = HashMap::new();
    let mut seen: HashSet<u64> = HashSet::new();
    let mut duplicated: HashMap<u64, u64> = HashMap::new();
    let (aggregate, samples) = fold_all(dirs, &pass, |f| {
        loaded.malformed += f.malformed;
        for w in &f.warnings {
            eprintln!("{w}");
        }
        for (hash, at) in &f.keys {
            if !seen.insert(*hash) {
                loaded.duplicates += 1;
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
    let (aggregate, samples) = if duplicated.is_empty() {
        (aggregate, samples)
    } else {
        drop(aggregate);
        pass.first = false;
        pass.only_last = Some(&duplicated);
        fold_all(dirs, &pass, |_| Ok(()))?
    };
    loaded.aggregate = aggregate;
    if per_outcome > 0 {
        let mut wanted: HashMap<String, (PathBuf, usize)> = HashMap::new();
        for (dir, e) in samples {
            wanted.insert(e.key.clone(), (dirs[dir].clone(), loaded.episodes.len()));
            loaded.episodes.push(e);
        }
        attach_traces(&mut loaded.episodes, &wanted)?;
    }
    Ok(loaded)
}

/// One pass over every run's records: batches folded in parallel, then merged in the
/// order they were read, each first shown to `see`. Returns the aggregate and the kept
/// drill-down episodes with their run's index.
fn fold_all(
    dirs: &[PathBuf],
    pass: &Pass<'_>,
    mut see: impl FnMut(&Folded) -> Result<(), ReportError>,
) -> Result<(Aggregate, Vec<(usize, Episode)>), ReportError> {
    let mut aggregate = Aggregate::new(pass.errors_as);
    let mut samples = Vec::new();
    let mut kept: HashMap<(String, &'static str), usize> = HashMap::new();
    let group = rayon::current_num_threads().max(1) * 2;
    for (i, dir) in dirs.iter().enumerate() {
        let path = dir.join(EPISODES);
        let cannot = |source: std::io::Error| ReportError::Read {
            path: path.clone(),
            source,
        };
        record::read_batches(
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
                        if *n < pass.per_outcome {
                            *n += 1;
                            samples.push((i, e));
                        }
                    }
                    aggregate.merge(f.aggregate);
                }
                Ok(())
            },
            cannot,
        )?;
    }
    Ok((aggregate, samples))
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
        record::read_batches(
            &path,
            1,
            |batches| {
                for (_, _, line) in batches.iter().flat_map(|b| b.lines()) {
                    let Some(key) = record::key_of(line) else {
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
