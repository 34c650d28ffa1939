//! Reading one or many runs for a report: records are parsed in parallel batches, runs
//! are merged by episode key and refused when their settings differ, and a few episodes
//! per cell are kept, with their traces, for the HTML drill-down.

use super::tables::{Order, cell_id};
use crate::metrics::ErrorPolicy;
use crate::runner::record::{EPISODES, EpisodeRecord, RUN_INFO, TRACES, read_records};
use rayon::prelude::*;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::io::{BufRead, BufReader};
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

/// Runs loaded for a report.
pub struct Loaded {
    /// Every episode, sorted by key (so sums are in one order whatever the runs' order).
    pub records: Vec<EpisodeRecord>,
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
fn check_identities(dirs: &[PathBuf]) -> Result<(), String> {
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
                        return Err(format!(
                            "{} and {} were run under different settings ({k}: {} vs {}); a report merges runs that differ only in suite, attack, defense, agent model or seeds",
                            fd.display(),
                            d.display(),
                            show(a),
                            show(b)
                        ));
                    }
                }
            }
        }
    }
    Ok(())
}

fn key_hash(key: &str) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    key.hash(&mut h);
    h.finish()
}

/// Reads runs. `per_outcome` episodes of each outcome are kept per cell for the
/// drill-down (0 keeps none and skips the traces).
pub fn load(dirs: &[PathBuf], per_outcome: usize) -> Result<Loaded, String> {
    if dirs.is_empty() {
        return Err("report needs at least one run directory".into());
    }
    for d in dirs {
        if !d.join(EPISODES).is_file() {
            return Err(format!(
                "{} has no {EPISODES}: not a run directory",
                d.display()
            ));
        }
    }
    check_identities(dirs)?;
    let mut loaded = Loaded {
        records: Vec::new(),
        errors_as: ErrorPolicy::All(crate::metrics::ErrorsAs::Excluded),
        malformed: 0,
        duplicates: 0,
        order: Order::default(),
        price: None,
        dirs: dirs.to_vec(),
        episodes: Vec::new(),
    };
    // Data versions per suite and attack must agree across runs.
    let mut versions: HashMap<String, (String, PathBuf)> = HashMap::new();
    let mut kept: HashMap<(String, &'static str), usize> = HashMap::new();
    let mut wanted: HashMap<String, (PathBuf, usize)> = HashMap::new();
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
    // Runs are parsed in parallel; each keeps the last record of a key (a retried error).
    let read: Vec<Result<(Vec<EpisodeRecord>, usize), String>> = dirs
        .par_iter()
        .map(|d| {
            let path = d.join(EPISODES);
            read_records(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))
        })
        .collect();
    let mut index: HashMap<u64, usize> = HashMap::new();
    for (dir, result) in dirs.iter().zip(read) {
        let (records, bad) = result?;
        loaded.malformed += bad;
        for r in records {
            let mut pairs = vec![(format!("suite {}", r.suite), r.suite_fingerprint.clone())];
            if let (Some(a), Some(f)) = (&r.attack, &r.attack_fingerprint) {
                // A template has one version across every episode; a context-aware
                // attack is one hand-written sample per cell, each with its own version.
                let what = if a == crate::attack::CONTEXT {
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
                pairs.push((what, f.clone()));
            }
            for (what, fp) in pairs {
                let known = versions
                    .entry(what.clone())
                    .or_insert_with(|| (fp.clone(), dir.clone()));
                if known.0 != fp {
                    return Err(format!(
                        "{} and {} hold {what} in different versions ({} vs {fp}); rerun one of them",
                        known.1.display(),
                        dir.display(),
                        known.0
                    ));
                }
            }
            if per_outcome > 0 {
                let attack = r.attack.clone().unwrap_or_else(|| "none".into());
                let cell = cell_id(&r.suite, &attack, &r.defense, &r.model);
                let n = kept.entry((cell, outcome(&r))).or_default();
                if *n < per_outcome {
                    *n += 1;
                    wanted.insert(r.key.clone(), (dir.clone(), loaded.episodes.len()));
                    loaded.episodes.push(brief(&r));
                }
            }
            match index.get(&key_hash(&r.key)) {
                Some(&at) => {
                    loaded.duplicates += 1;
                    loaded.records[at] = r;
                }
                None => {
                    index.insert(key_hash(&r.key), loaded.records.len());
                    loaded.records.push(r);
                }
            }
        }
    }
    loaded
        .records
        .par_sort_unstable_by(|a, b| a.key.cmp(&b.key));
    if per_outcome > 0 {
        attach_traces(&mut loaded.episodes, &wanted)?;
    }
    Ok(loaded)
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
) -> Result<(), String> {
    #[derive(serde::Deserialize)]
    struct KeyOnly {
        key: String,
    }
    let mut dirs: Vec<&PathBuf> = wanted.values().map(|(d, _)| d).collect();
    dirs.sort();
    dirs.dedup();
    for dir in dirs {
        let path = dir.join(TRACES);
        let Ok(file) = std::fs::File::open(&path) else {
            continue;
        };
        for line in BufReader::new(file).lines() {
            let line = line.map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            let Ok(k) = serde_json::from_str::<KeyOnly>(&line) else {
                continue;
            };
            if let Some((d, i)) = wanted.get(&k.key)
                && d == dir
                && let Ok(mut v) = serde_json::from_str::<Value>(&line)
            {
                shorten(&mut v);
                if let Some(o) = v.as_object_mut() {
                    o.remove("key");
                }
                episodes[*i].trace = v;
            }
        }
    }
    Ok(())
}
