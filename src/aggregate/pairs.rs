//! What a paired comparison (exact McNemar in `compare` and `ablate`) needs of each
//! episode, without keeping the record: its cluster, seed and outcome bits, filed under
//! the cell ([`Atom`]) that decides which summary rows it belongs to.

use super::Atom;
use crate::aggregate::metrics::{ALL_SUITES, ClusterKey};
use sieve_record::EpisodeRecord;
use std::collections::{BTreeMap, HashMap};

/// One episode as pairing sees it: 24 bytes beside its table's shared cluster list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PairObs {
    /// Index into the table's clusters.
    cluster: u32,
    pub seed: u64,
    pub attacked: bool,
    pub errored: bool,
    /// What failed, when it errored (`None` also for older records).
    pub error_kind: Option<sieve_record::ErrorKind>,
    /// The security check held.
    pub attack_success: bool,
    pub utility: bool,
    /// The suite's own error convention, as the record carries it.
    pub own: sieve_record::ErrorConvention,
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
            t.add(r);
        }
        t
    }

    /// Files one episode after those already filed (the streaming load calls this for
    /// each record it counts: each key's last).
    pub fn add(&mut self, r: &EpisodeRecord) {
        let key = (
            r.suite.clone(),
            r.user_task.clone(),
            r.injection_task.clone(),
            r.attack.clone(),
        );
        let obs = PairObs {
            cluster: self.cluster_of(key),
            seed: r.seed,
            attacked: r.attacked(),
            errored: r.error.is_some(),
            error_kind: r.error_kind,
            attack_success: r.counted_attack_success() == Some(true),
            utility: r.counted_utility(),
            own: r.error_convention,
        };
        self.cells.entry(Atom::of(r)).or_default().push(obs);
    }

    /// Files another table's episodes after this one's (batches of records are filed
    /// apart, in parallel, then merged in the order they were read).
    pub fn merge(&mut self, other: PairTable) {
        let remap: Vec<u32> = other
            .clusters
            .into_iter()
            .map(|key| self.cluster_of(key))
            .collect();
        for (atom, obs) in other.cells {
            self.cells
                .entry(atom)
                .or_default()
                .extend(obs.into_iter().map(|o| PairObs {
                    cluster: remap[o.cluster as usize],
                    ..o
                }));
        }
    }

    /// The index of a cluster, added when new.
    fn cluster_of(&mut self, key: ClusterKey) -> u32 {
        if let Some(&i) = self.index.get(&key) {
            return i;
        }
        let i = u32::try_from(self.clusters.len()).expect("fewer than 2^32 clusters");
        self.index.insert(key.clone(), i);
        self.clusters.push(key);
        i
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
                    && k.label.as_ref().is_none_or(|l| l.named(attack))
            })
            .flat_map(|(_, obs)| obs.iter().map(|o| (&self.clusters[o.cluster as usize], *o)))
            .collect()
    }
}
