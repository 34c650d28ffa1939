//! What a paired comparison (exact McNemar in `compare` and `ablate`) needs of each
//! episode, without keeping the record: its cluster, seed and outcome bits, filed under
//! the cell ([`Atom`]) that decides which summary rows it belongs to.

use super::Atom;
use crate::aggregate::metrics::{ALL_SUITES, ClusterKey};
use crate::record::EpisodeRecord;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// One episode as pairing sees it: 24 bytes beside its table's shared cluster list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PairObs {
    /// Index into the table's clusters.
    cluster: u32,
    pub seed: u64,
    pub attacked: bool,
    pub errored: bool,
    /// What failed, when it errored (`None` also for older records).
    pub error_kind: Option<crate::record::ErrorKind>,
    /// The security check held.
    pub attack_success: bool,
    pub utility: bool,
    /// The suite's own error convention, as the record carries it.
    pub own: crate::suite::ErrorConvention,
}

/// An episode with its cluster, as [`crate::aggregate::metrics::paired`] takes it.
pub type Pair<'a> = (&'a ClusterKey, PairObs);

/// The episodes of a run as pairing needs them.
#[derive(Clone, Debug, Default)]
pub struct PairTable {
    clusters: Vec<ClusterKey>,
    index: HashMap<ClusterKey, u32>,
    cells: BTreeMap<Atom, Vec<PairObs>>,
}

impl PairTable {
    pub fn of(records: &[EpisodeRecord]) -> Self {
        let mut t = PairTable::default();
        for r in records {
            let (atom, obs) = t.observe(r);
            t.cells.entry(atom).or_default().push(obs);
        }
        t
    }

    fn observe(&mut self, r: &EpisodeRecord) -> (Atom, PairObs) {
        let key = (
            r.suite.clone(),
            r.user_task.clone(),
            r.injection_task.clone(),
            r.attack.clone(),
        );
        let cluster = match self.index.get(&key) {
            Some(&i) => i,
            None => {
                let i = u32::try_from(self.clusters.len()).expect("fewer than 2^32 clusters");
                self.index.insert(key.clone(), i);
                self.clusters.push(key);
                i
            }
        };
        let obs = PairObs {
            cluster,
            seed: r.seed,
            attacked: r.attacked(),
            errored: r.error.is_some(),
            error_kind: r.error_kind,
            attack_success: r.attack_success == Some(true),
            utility: r.counted_utility(),
            own: r.error_convention,
        };
        (Atom::of(r), obs)
    }

    /// Streams a run's `episodes.jsonl` through the one record reader, keeping each key's
    /// last record. Malformed lines are skipped silently: the summary read beside this
    /// one warns about them.
    pub fn read(path: &Path) -> std::io::Result<PairTable> {
        // The reader takes a missing file for an empty one; here it is an error.
        std::fs::metadata(path)?;
        let mut t = PairTable::default();
        // Each episode's cell and observation in file order, and, per key hash, the
        // position of its last record (16 bytes an episode, not the keys).
        let mut atoms: Vec<Atom> = Vec::new();
        let mut atom_ids: HashMap<Atom, u32> = HashMap::new();
        let mut seen: Vec<(u32, PairObs)> = Vec::new();
        let mut last: HashMap<u64, usize> = HashMap::new();
        crate::record::for_each_record(
            path,
            |p| {
                let Ok(r) = p.record else {
                    return Ok(());
                };
                let (atom, obs) = t.observe(&r);
                let id = match atom_ids.get(&atom) {
                    Some(&i) => i,
                    None => {
                        let i = atoms.len() as u32;
                        atom_ids.insert(atom.clone(), i);
                        atoms.push(atom);
                        i
                    }
                };
                last.insert(crate::record::key_hash(&r.key), seen.len());
                seen.push((id, obs));
                Ok(())
            },
            |e| e,
        )?;
        let mut keep = vec![false; seen.len()];
        for i in last.into_values() {
            keep[i] = true;
        }
        for ((id, obs), kept) in seen.into_iter().zip(keep) {
            if kept {
                t.cells
                    .entry(atoms[id as usize].clone())
                    .or_default()
                    .push(obs);
            }
        }
        Ok(t)
    }

    /// The episodes a summary row is computed from: the row's suite (every suite for
    /// [`ALL_SUITES`]), defense and model (any when `None`); the clean episodes every
    /// attack's row shares, and the attacked ones under the row's attack label.
    pub fn row(
        &self,
        suite: &str,
        attack: &str,
        defense: &str,
        model: Option<&str>,
    ) -> Vec<Pair<'_>> {
        self.cells
            .iter()
            .filter(|(k, _)| {
                k.defense == defense
                    && (suite == ALL_SUITES || k.suite == suite)
                    && model.is_none_or(|m| k.model == m)
                    && k.label.as_deref().is_none_or(|l| l == attack)
            })
            .flat_map(|(_, obs)| obs.iter().map(|o| (&self.clusters[o.cluster as usize], *o)))
            .collect()
    }
}
