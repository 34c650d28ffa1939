//! A search over several optimisation targets, and its shards.
//!
//! `--unit pairs` optimises one template per selected pair (user task × injection task),
//! `--unit vectors` one per injection vector the selected user tasks read (over its
//! readers × the injection tasks). The targets are listed in a fixed order (pairs by user
//! then injection task as the suite lists them; vectors by id) and numbered; each target
//! is an ordinary single-target search (its own identity, budget, seeded attacker and
//! resume) in `targets/<index>-<unit>/`. `--shard k/n` keeps the targets whose index is
//! `k` modulo `n`, so shards share no target and every target's search is the one the
//! unsharded run does; `attack merge` copies the shards' target folders into one and
//! writes the combined files, which then equal the unsharded search's.
//!
//! The combined curve pools the targets' development cells: at k queries each target
//! stands at its own point k (its last when it stopped earlier), ASR@k is the share of
//! all their cells its best template breaks, the static ASR likewise from each target's
//! best stock template, episodes and attacker tokens are summed.

use super::output::{self, CurveFile};
use super::{Outcomes, Point, SearchError, Settings, Unit};
use crate::attack::library::{self, Library};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The manifest of a search over several targets.
pub const MANIFEST: &str = "targets.json";

/// Which targets a multi-target search optimises.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Every selected pair, one template each.
    Pairs,
    /// Every injection vector the selected user tasks read, one template each.
    Vectors,
}

impl Kind {
    /// `pairs` or `vectors` (the `--unit` values naming several targets).
    pub fn parse(s: &str) -> Option<Kind> {
        match s {
            "pairs" => Some(Kind::Pairs),
            "vectors" => Some(Kind::Vectors),
            _ => None,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Kind::Pairs => "pairs",
            Kind::Vectors => "vectors",
        }
    }
}

/// Every target of `kind` in the suite under the settings' task filters, in order.
pub fn expand(suite: &crate::suite::Suite, settings: &Settings, kind: Kind) -> Vec<Unit> {
    let (uts, its) = super::selected(suite, settings);
    match kind {
        Kind::Pairs => uts
            .iter()
            .flat_map(|&u| {
                its.iter().map(move |&i| Unit::Pair {
                    user_task: suite.user_tasks[u].id.0.clone(),
                    injection_task: suite.injection_tasks[i].id.0.clone(),
                })
            })
            .collect(),
        Kind::Vectors => {
            let mut vectors: Vec<String> = uts
                .iter()
                .flat_map(|&u| suite.injectable[&suite.user_tasks[u].id].iter())
                .map(|v| v.0.clone())
                .collect();
            vectors.sort();
            vectors.dedup();
            if its.is_empty() {
                return Vec::new();
            }
            vectors
                .into_iter()
                .map(|vector| Unit::Vector { vector })
                .collect()
        }
    }
}

/// The targets of shard `k` of `n` (all of them without a shard), with their indices.
pub fn shard_of(units: Vec<Unit>, shard: Option<(usize, usize)>) -> Vec<(usize, Unit)> {
    units
        .into_iter()
        .enumerate()
        .filter(|(i, _)| shard.is_none_or(|(k, n)| i % n == k))
        .collect()
}

/// A target's folder name under `targets/`: its index and its unit, file-safe.
pub fn dir_name(index: usize, unit: &Unit) -> String {
    let slug: String = unit
        .label()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{index:04}-{slug}")
}

/// One target of a manifest.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TargetRef {
    pub index: usize,
    pub unit: String,
    pub dir: String,
}

/// What a multi-target folder holds: the identity shared by its targets, which shard,
/// and its targets.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TargetsManifest {
    pub kind: Kind,
    /// The search settings every target shares (all but the unit).
    pub identity: serde_json::Value,
    /// Targets of the whole (unsharded) search.
    pub total: usize,
    /// `[k, n]` for a shard; none for a whole or merged search.
    pub shard: Option<(usize, usize)>,
    pub targets: Vec<TargetRef>,
}

impl TargetsManifest {
    pub fn new(
        kind: Kind,
        settings: &Settings,
        total: usize,
        shard: Option<(usize, usize)>,
        targets: &[(usize, Unit)],
    ) -> TargetsManifest {
        let mut identity = serde_json::to_value(settings).expect("settings serialise");
        if let Some(m) = identity.as_object_mut() {
            m.remove("unit");
        }
        TargetsManifest {
            kind,
            identity,
            total,
            shard,
            targets: targets
                .iter()
                .map(|(i, u)| TargetRef {
                    index: *i,
                    unit: u.label(),
                    dir: dir_name(*i, u),
                })
                .collect(),
        }
    }

    fn read(dir: &Path) -> Result<Option<TargetsManifest>, SearchError> {
        let path = dir.join(MANIFEST);
        if !path.exists() {
            return Ok(None);
        }
        let text = std::fs::read_to_string(&path)
            .map_err(|e| SearchError::Failed(format!("{}: {e}", path.display())))?;
        serde_json::from_str(&text).map(Some).map_err(|e| {
            SearchError::BadInput(format!(
                "{}: not a multi-target search manifest: {e}",
                path.display()
            ))
        })
    }

    /// Refuses a folder that holds another multi-target search (other targets, shard
    /// or settings), or a single-target search; a folder of the same one resumes. A new
    /// folder gets the manifest at once, so an interrupted search is claimed too.
    pub fn claim(&self, out: &Path) -> Result<(), SearchError> {
        match TargetsManifest::read(out)? {
            Some(before) if &before != self => Err(SearchError::BadInput(format!(
                "{} holds another search over several targets ({} of {}{}); use another --out",
                out.display(),
                before.kind.label(),
                before.total,
                before
                    .shard
                    .map_or(String::new(), |(k, n)| format!(", shard {k}/{n}"))
            ))),
            Some(_) => Ok(()),
            None if out.join(output::SETTINGS).exists() => Err(SearchError::BadInput(format!(
                "{} holds a single-target search; use another --out",
                out.display()
            ))),
            None => {
                let io = |e: std::io::Error| SearchError::Failed(format!("{}: {e}", out.display()));
                std::fs::create_dir_all(out).map_err(io)?;
                std::fs::write(
                    out.join(MANIFEST),
                    serde_json::to_string_pretty(self).expect("manifest serialises") + "\n",
                )
                .map_err(io)
            }
        }
    }
}

/// The combined curve of the targets' searches (in target order).
pub fn combine(kind: Kind, outcomes: &[Outcomes]) -> CurveFile {
    let cells: usize = outcomes.iter().map(|o| o.dev_cells).sum::<usize>().max(1);
    let kmax = outcomes
        .iter()
        .map(|o| o.curve.len())
        .max()
        .unwrap_or(1)
        .max(1)
        - 1;
    let points = (0..=kmax)
        .map(|k| {
            let at = |o: &Outcomes| o.curve[k.min(o.curve.len() - 1)].clone();
            let pts: Vec<(Point, usize)> = outcomes.iter().map(|o| (at(o), o.dev_cells)).collect();
            let pooled = |f: fn(&Point) -> f64| {
                pts.iter().map(|(p, n)| f(p) * *n as f64).sum::<f64>() / cells as f64
            };
            Point {
                k,
                episodes: pts.iter().map(|(p, _)| p.episodes).sum(),
                attacker_tokens: pts.iter().map(|(p, _)| p.attacker_tokens).sum(),
                asr: pooled(|p| p.asr),
                static_asr: pooled(|p| p.static_asr),
                best: String::new(),
            }
        })
        .collect();
    let first = outcomes.first().map(|o| &o.settings);
    let field = |f: fn(&Settings) -> String| first.map(f).unwrap_or_default();
    CurveFile {
        simulated: outcomes.iter().any(|o| o.simulated),
        suite: field(|s| s.suite.clone()),
        defense: field(|s| s.defense.clone()),
        model: field(|s| s.model.clone()),
        attacker: field(|s| s.attacker.clone()),
        unit: kind.label().into(),
        feedback: field(|s| s.feedback.label().into()),
        static_asr: outcomes
            .iter()
            .map(|o| o.static_asr * o.dev_cells as f64)
            .sum::<f64>()
            / cells as f64,
        heldout_static_asr: None,
        heldout_asr: None,
        points,
    }
}

/// Reads each target's results, in manifest order.
pub fn read_targets(out: &Path, manifest: &TargetsManifest) -> Result<Vec<Outcomes>, SearchError> {
    manifest
        .targets
        .iter()
        .map(|t| {
            let path = out.join(output::TARGETS).join(&t.dir).join(output::RESULT);
            let text = std::fs::read_to_string(&path).map_err(|e| {
                SearchError::BadInput(format!(
                    "{}: {e} (target {} has not finished)",
                    path.display(),
                    t.unit
                ))
            })?;
            serde_json::from_str(&text).map_err(|e| {
                SearchError::BadInput(format!("{}: not a search's results: {e}", path.display()))
            })
        })
        .collect()
}

/// Writes the combined files: the manifest, the pooled curve (`asr_at_k.json`,
/// `asr_at_k.csv`) and the union of the targets' libraries (`library.json`).
pub fn write_combined(
    out: &Path,
    manifest: &TargetsManifest,
    outcomes: &[Outcomes],
) -> Result<CurveFile, SearchError> {
    let io = |e: std::io::Error| SearchError::Failed(format!("{}: {e}", out.display()));
    crate::runner::files::write_atomic(
        &out.join(MANIFEST),
        (serde_json::to_string_pretty(manifest).expect("manifest serialises") + "\n").as_bytes(),
    )
    .map_err(io)?;
    let curve = combine(manifest.kind, outcomes);
    curve.write(out).map_err(io)?;
    output::write_curve_csv(out, &curve.points, curve.simulated).map_err(io)?;
    let mut lib = Library {
        name: format!(
            "{}-{}-{}-{}",
            curve.suite.replace('/', "_"),
            curve.defense.replace([':', '/'], "_"),
            manifest.identity["seed"],
            manifest.kind.label()
        ),
        simulated: curve.simulated,
        entries: Vec::new(),
    };
    for t in &manifest.targets {
        let path = out.join(output::TARGETS).join(&t.dir).join(library::FILE);
        let part = Library::load(&path).map_err(|e| SearchError::BadInput(e.to_string()))?;
        for e in part.entries {
            lib.insert(e);
        }
    }
    crate::runner::files::write_atomic(&out.join(library::FILE), lib.to_text().as_bytes())
        .map_err(io)?;
    Ok(curve)
}

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        if e.file_type()?.is_file() {
            std::fs::copy(e.path(), to.join(e.file_name()))?;
        }
    }
    Ok(())
}

/// Merges shard folders into `out`: their manifests must share the kind, identity and
/// number of targets, and together hold every target once (a target two shards hold must
/// have the same results in both). Returns the merged manifest and the targets' results.
pub fn merge(
    out: &Path,
    shards: &[PathBuf],
) -> Result<(TargetsManifest, Vec<Outcomes>), SearchError> {
    let bad = SearchError::BadInput;
    let mut merged: Option<TargetsManifest> = None;
    let mut from: Vec<(TargetRef, PathBuf)> = Vec::new();
    for dir in shards {
        let m = TargetsManifest::read(dir)?.ok_or_else(|| {
            bad(format!(
                "{} holds no {MANIFEST}: not a search over several targets (--unit pairs or vectors)",
                dir.display()
            ))
        })?;
        let all = merged.get_or_insert_with(|| TargetsManifest {
            shard: None,
            targets: Vec::new(),
            ..m.clone()
        });
        if (all.kind, &all.identity, all.total) != (m.kind, &m.identity, m.total) {
            return Err(bad(format!(
                "{}: another search ({} of {} targets, settings {}) than the first shard's",
                dir.display(),
                m.kind.label(),
                m.total,
                m.identity
            )));
        }
        for t in m.targets {
            let src = dir.join(output::TARGETS).join(&t.dir);
            match from.iter().find(|(f, _)| f.index == t.index) {
                Some((_, first)) => {
                    let read = |d: &Path| std::fs::read(d.join(output::RESULT)).ok();
                    if read(first) != read(&src) {
                        return Err(bad(format!(
                            "target {} differs between {} and {}",
                            t.unit,
                            first.display(),
                            src.display()
                        )));
                    }
                }
                None => from.push((t, src)),
            }
        }
    }
    let mut manifest = merged.ok_or_else(|| bad("attack merge needs shard folders".into()))?;
    from.sort_by_key(|(t, _)| t.index);
    let missing: Vec<usize> = (0..manifest.total)
        .filter(|i| !from.iter().any(|(t, _)| t.index == *i))
        .collect();
    if !missing.is_empty() {
        return Err(bad(format!(
            "the shards hold {} of {} targets; missing target indices {missing:?} (run their shards first)",
            from.len(),
            manifest.total
        )));
    }
    manifest.targets = from.iter().map(|(t, _)| t.clone()).collect();
    manifest.claim(out)?;
    for (t, src) in &from {
        copy_dir(src, &out.join(output::TARGETS).join(&t.dir))
            .map_err(|e| SearchError::Failed(format!("{}: {e}", src.display())))?;
    }
    let outcomes = read_targets(out, &manifest)?;
    Ok((manifest, outcomes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_partition_the_targets_by_index() {
        let units: Vec<Unit> = (0..7)
            .map(|i| Unit::Vector {
                vector: format!("v{i}"),
            })
            .collect();
        let mut seen: Vec<usize> = (0..3)
            .flat_map(|k| {
                shard_of(units.clone(), Some((k, 3)))
                    .into_iter()
                    .map(|(i, _)| i)
            })
            .collect();
        seen.sort();
        assert_eq!(seen, (0..7).collect::<Vec<_>>());
        assert_eq!(shard_of(units.clone(), None).len(), 7);
        assert_eq!(
            dir_name(
                3,
                &Unit::parse("pair:user_task_0,injection_task_1").unwrap()
            ),
            "0003-pair_user_task_0_injection_task_1"
        );
    }
}
