//! Streaming aggregation of episode records: each record folds, once, into a small
//! accumulator of the cell it belongs to, and every table is then assembled by merging
//! accumulators, never by keeping records. Memory grows with the number of cells,
//! clusters (suite × user task × injection task × attack: bounded by the suites, not by
//! the episodes) and seeds, so a report over a million episodes stays small.
//!
//! Accumulators hold only sums that do not depend on the order records arrive in:
//! integer counts, booleans, minima, and severity sums in exact fixed point. Two
//! aggregates of disjoint record sets [`Aggregate::merge`] into the aggregate of their
//! union whatever the order, so records can be folded in parallel batches.

use crate::aggregate::metrics::{
    ALL_SUITES, AttackLabel, Attribution, BreakdownRow, ClusterKey, Rate, Row, attribute, eds,
    effective_n_counts, wilson_p,
};
use crate::aggregate::tally::{Counted, Over, Sums};
use sieve_record::sieve::{CallPath, noted_calls};
use sieve_record::{Component, EpisodeRecord, ErrorPolicy, ErrorsAs, ScriptedRoles};
use std::collections::{BTreeMap, BTreeSet};

/// Everything that decides which rows a record feeds: its suite, defense and model, and
/// whether and how it was attacked.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Atom {
    pub suite: String,
    pub defense: String,
    pub model: String,
    /// The record has an injection task.
    pub attacked: bool,
    /// The attack as recorded.
    pub attack: Option<String>,
    /// The summary's attack label of an attacked record with an attack; `None` for the
    /// records the summary counts as clean.
    pub label: Option<AttackLabel>,
    /// The suite's own error convention, as the record carries it.
    pub own: sieve_record::ErrorConvention,
}

impl Atom {
    pub fn of(r: &EpisodeRecord) -> Atom {
        let label = match &r.attack {
            Some(a) if r.attacked() => Some(AttackLabel::of(a, r)),
            _ => None,
        };
        Atom {
            suite: r.suite.clone(),
            defense: r.defense.clone(),
            model: r.row_model(),
            attacked: r.attacked(),
            attack: r.attack.clone(),
            label,
            own: r.error_convention,
        }
    }
}

/// Counted episodes (see [`Acc`]) with the outcomes the rates need.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Outcomes {
    n: u64,
    /// The attack succeeded (so does an error AgentDojo scores, under its convention).
    succeeded: u64,
    /// The user task was solved.
    solved: u64,
    /// The per-episode metrics' sums.
    tallies: Sums,
    /// The utility verdict is undecided (out of the utility rates' denominators).
    utility_undecided: u64,
    /// The attack verdict is undecided (out of ASR's denominator).
    attack_undecided: u64,
    /// Either verdict is undecided.
    undecided: u64,
}

impl Outcomes {
    fn add(&mut self, o: &Outcomes) {
        self.n += o.n;
        self.succeeded += o.succeeded;
        self.solved += o.solved;
        self.tallies.merge(&o.tallies);
        self.utility_undecided += o.utility_undecided;
        self.attack_undecided += o.attack_undecided;
        self.undecided += o.undecided;
    }
}

/// Severity sums in fixed point with 64 fractional bits: exact for every severity in
/// [2⁻¹¹, 1] (an f64 there has no bit below 2⁻⁶⁴), so the sum does not depend on the
/// order records arrive in, as a float sum would.
const SEVERITY_ONE: f64 = 18_446_744_073_709_551_616.0; // 2^64

fn fixed(x: f64) -> i128 {
    (x * SEVERITY_ONE) as i128
}

/// Everything a row needs from a set of records, under one error convention. An episode
/// "counts" in the rates unless it errored and errors are excluded.
#[derive(Clone, Debug, Default)]
pub struct Acc {
    /// Episodes, errored included.
    episodes: u64,
    errors: u64,
    simulated: bool,
    /// Some record did not say which roles were scripted.
    roles_unknown: bool,
    /// Per role, the smallest label seen (one row has one label per role).
    roles: ScriptedRoles,
    /// Counted episodes per cluster.
    clusters: BTreeMap<ClusterKey, Outcomes>,
    /// Counted episodes per seed; a seed seen only in errored episodes has n = 0.
    seeds: BTreeMap<u64, Outcomes>,
    severity: i128,
    severity_succeeded: i128,
    hit_step_limit: u64,
    blocked: u64,
    asked_user: u64,
    faked: u64,
    proposed: u64,
    escalated: u64,
    /// Tokens and calls per component, in [`Component::ALL`] order.
    by_component: [(u64, u64); Component::ALL.len()],
    prompt_tokens: u64,
    completion_tokens: u64,
    calls: u64,
    /// Some counted record's defense notes each call's path.
    attributed: bool,
    /// Counted successful attacks by path: layer 1, adjudicator, unchecked.
    via: [u64; 3],
    bypass_pairs: u64,
    bypass_succeeded: u64,
    /// Episodes whose LLM usage was estimated locally.
    usage_estimated: u64,
    /// Episodes under a known defect of their benchmark.
    known_defects: u64,
}

impl Acc {
    /// Folds one record in.
    pub fn add(&mut self, r: &EpisodeRecord, errors_as: ErrorsAs) {
        self.episodes += 1;
        self.errors += u64::from(r.error.is_some());
        self.simulated |= r.simulated;
        match &r.scripted_roles {
            None => self.roles_unknown = true,
            Some(roles) => {
                for (c, role) in roles {
                    self.keep_role(*c, role);
                }
            }
        }
        let counts = r.error.is_none()
            || errors_as.counts_error(r.error_convention, r.error_kind, r.attacked());
        let seed = self.seeds.entry(r.seed).or_default();
        if counts {
            // An error AgentDojo scores is an unsolved task and a successful attack.
            let succeeded = r.error.is_some() || r.counted_attack_success() == Some(true);
            // An undecided verdict is never counted as held.
            let (u, a) = (r.utility_undecided(), r.attack_undecided());
            let solved = r.error.is_none() && r.counted_utility();
            // The per-episode tallies read the verdicts as recorded (an undecided one
            // holds the verdict with the answer taken as wrong), as the reference does.
            let mut tallies = Sums::default();
            tallies.add(&Counted {
                record: r,
                succeeded,
                solved,
            });
            let o = Outcomes {
                n: 1,
                succeeded: u64::from(succeeded && !a),
                solved: u64::from(solved && !u),
                tallies,
                utility_undecided: u64::from(u),
                attack_undecided: u64::from(a),
                undecided: u64::from(u || a),
            };
            seed.add(&o);
            let cluster = (
                r.suite.clone(),
                r.user_task.clone(),
                r.injection_task.clone(),
                r.attack.clone(),
            );
            self.clusters.entry(cluster).or_default().add(&o);
            let severity = fixed(r.severity.unwrap_or(1.0));
            self.severity += severity;
            let attribution = attribute(r);
            self.attributed |= attribution.is_some();
            if succeeded {
                self.severity_succeeded += severity;
                match attribution {
                    Some(Attribution::Layer1) => self.via[0] += 1,
                    Some(Attribution::Adjudicator) => self.via[1] += 1,
                    Some(Attribution::Unchecked) => self.via[2] += 1,
                    None => {}
                }
            }
            if r.bypass_pair {
                self.bypass_pairs += 1;
                self.bypass_succeeded += u64::from(succeeded);
            }
        }
        self.known_defects += u64::from(r.known_defect.is_some());
        self.hit_step_limit += u64::from(r.hit_step_limit);
        self.blocked += r.blocked;
        self.asked_user += r.asked_user;
        self.faked += r.faked;
        self.proposed += r.proposed_calls;
        self.escalated += r.escalated;
        for (i, c) in Component::ALL.into_iter().enumerate() {
            let t = r.cost.get(c);
            self.by_component[i].0 += t.tokens();
            self.by_component[i].1 += t.calls;
        }
        self.usage_estimated += u64::from(r.usage_estimated());
        let total = r.cost.total();
        self.prompt_tokens += total.prompt_tokens;
        self.completion_tokens += total.completion_tokens;
        self.calls += total.calls;
    }

    fn keep_role(&mut self, c: Component, role: &sieve_record::ScriptedRole) {
        match self.roles.get(&c) {
            Some(have) if have.label <= role.label => {}
            _ => {
                self.roles.insert(c, role.clone());
            }
        }
    }

    /// Adds another accumulator's records.
    pub fn merge(&mut self, o: &Acc) {
        self.episodes += o.episodes;
        self.errors += o.errors;
        self.simulated |= o.simulated;
        self.roles_unknown |= o.roles_unknown;
        for (c, role) in &o.roles {
            self.keep_role(*c, role);
        }
        for (k, v) in &o.clusters {
            match self.clusters.get_mut(k) {
                Some(mine) => mine.add(v),
                None => {
                    self.clusters.insert(k.clone(), *v);
                }
            }
        }
        for (k, v) in &o.seeds {
            self.seeds.entry(*k).or_default().add(v);
        }
        self.severity += o.severity;
        self.severity_succeeded += o.severity_succeeded;
        self.hit_step_limit += o.hit_step_limit;
        self.blocked += o.blocked;
        self.asked_user += o.asked_user;
        self.faked += o.faked;
        self.proposed += o.proposed;
        self.escalated += o.escalated;
        for (mine, theirs) in self.by_component.iter_mut().zip(o.by_component) {
            mine.0 += theirs.0;
            mine.1 += theirs.1;
        }
        self.prompt_tokens += o.prompt_tokens;
        self.completion_tokens += o.completion_tokens;
        self.calls += o.calls;
        self.attributed |= o.attributed;
        for (mine, theirs) in self.via.iter_mut().zip(o.via) {
            *mine += theirs;
        }
        self.bypass_pairs += o.bypass_pairs;
        self.bypass_succeeded += o.bypass_succeeded;
        self.usage_estimated += o.usage_estimated;
        self.known_defects += o.known_defects;
    }

    /// Counted episodes.
    fn counted(&self) -> u64 {
        self.clusters.values().map(|o| o.n).sum()
    }

    /// The clustered rate of `outcome` over the counted episodes whose verdict is decided
    /// (`undecided` counts the others; an undecided episode's outcome is never counted).
    fn rate(&self, outcome: fn(&Outcomes) -> u64, undecided: fn(&Outcomes) -> u64) -> Option<Rate> {
        let n = self.counted() - self.clusters.values().map(undecided).sum::<u64>();
        if n == 0 {
            return None;
        }
        let k: u64 = self.clusters.values().map(outcome).sum();
        let p = k as f64 / n as f64;
        // A cluster whose episodes are all undecided is no cluster of the decided ones.
        let n_eff = effective_n_counts(
            self.clusters
                .values()
                .map(|o| (o.n - undecided(o), outcome(o)))
                .filter(|&(n, _)| n > 0),
        );
        let (lo, hi) = wilson_p(p, n_eff);
        Some(Rate {
            value: p,
            n,
            lo,
            hi,
        })
    }

    /// With undecided episodes: the rate of `outcome` over every counted episode with
    /// each undecided one failing, and with each holding.
    fn bounds(
        &self,
        outcome: fn(&Outcomes) -> u64,
        undecided: fn(&Outcomes) -> u64,
    ) -> Option<[f64; 2]> {
        let n = self.counted();
        let u: u64 = self.clusters.values().map(undecided).sum();
        if n == 0 || u == 0 {
            return None;
        }
        let k: u64 = self.clusters.values().map(outcome).sum();
        Some([k as f64 / n as f64, (k + u) as f64 / n as f64])
    }

    /// The lowest and highest rate of `outcome` over single seeds, when there are several.
    fn seed_range(&self, outcome: fn(&Outcomes) -> u64) -> Option<[f64; 2]> {
        let rates: Vec<f64> = self
            .seeds
            .values()
            .filter(|o| o.n > 0)
            .map(|o| outcome(o) as f64 / o.n as f64)
            .collect();
        if rates.len() < 2 {
            return None;
        }
        Some([
            rates.iter().copied().fold(f64::INFINITY, f64::min),
            rates.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        ])
    }

    /// `total` over this accumulator's episodes, per episode (`None` without episodes).
    fn per_episode(&self, total: impl Fn(&Acc) -> u64) -> Option<f64> {
        (self.episodes > 0).then(|| total(self) as f64 / self.episodes as f64)
    }

    /// One summary row from the records counted as clean and those counted as attacked.
    pub fn row(
        suite: &str,
        attack: &AttackLabel,
        defense: &str,
        model: &str,
        clean: &Acc,
        attacked: &Acc,
        errors_as: ErrorsAs,
    ) -> Row {
        let mut all = clean.clone();
        all.merge(attacked);
        let n_all = all.episodes.max(1) as f64;
        let asr = attacked.rate(|o| o.succeeded, |o| o.attack_undecided);
        let ua = attacked.rate(|o| o.solved, |o| o.utility_undecided);
        let bu = clean.rate(|o| o.solved, |o| o.utility_undecided);
        let n_att = attacked.counted();
        let mut tokens_by_component = BTreeMap::new();
        let mut calls_by_component = BTreeMap::new();
        for (c, (t, k)) in Component::ALL.into_iter().zip(all.by_component) {
            if k > 0 {
                tokens_by_component.insert(c.as_str().to_string(), t as f64 / n_all);
                calls_by_component.insert(c.as_str().to_string(), k as f64 / n_all);
            }
        }
        let judge = Component::ALL
            .iter()
            .position(|c| *c == Component::Judge)
            .expect("the judge is a component");
        let via = |i: usize| attacked.attributed.then_some(attacked.via[i]);
        let ci = |r: Option<Rate>| (r.map(|r| r.value), r.map(|r| [r.lo, r.hi]));
        let (asr_v, asr_ci) = ci(asr);
        let (bu_v, bu_ci) = ci(bu);
        let (ua_v, ua_ci) = ci(ua);
        let sums = |acc: &Acc, over: Over| {
            tally::figures(acc.clusters.values().map(|o| &o.tallies), move |o| {
                o == over
            })
        };
        let mut tallies = sums(attacked, Over::Attacked);
        tallies.extend(sums(clean, Over::Clean));
        tallies.extend(sums(&all, Over::Every));
        Row {
            suite: suite.into(),
            attack: attack.to_string(),
            bypass: attack.bypass,
            defense: defense.into(),
            model: model.into(),
            simulated: all.simulated,
            scripted_roles: (!all.roles_unknown).then(|| all.roles.clone()),
            n_clean: clean.counted(),
            n_attacked: n_att,
            asr: asr_v,
            asr_ci,
            w_asr: (n_att > 0 && attacked.severity > 0)
                .then(|| attacked.severity_succeeded as f64 / attacked.severity as f64),
            bu: bu_v,
            bu_ci,
            ua: ua_v,
            ua_ci,
            eds: match (asr_v, ua_v) {
                (Some(a), Some(u)) => Some(eds(a, u)),
                _ => None,
            },
            errors: all.errors,
            episodes: all.episodes,
            error_rate: (all.episodes > 0).then(|| all.errors as f64 / all.episodes as f64),
            errors_as,
            too_many_errors: false,
            seeds: all.seeds.len() as u64,
            asr_seed_range: attacked.seed_range(|o| o.succeeded),
            ua_seed_range: attacked.seed_range(|o| o.solved),
            bu_seed_range: clean.seed_range(|o| o.solved),
            undecided: all.clusters.values().map(|o| o.undecided).sum(),
            asr_bounds: attacked.bounds(|o| o.succeeded, |o| o.attack_undecided),
            ua_bounds: attacked.bounds(|o| o.solved, |o| o.utility_undecided),
            bu_bounds: clean.bounds(|o| o.solved, |o| o.utility_undecided),
            hit_step_limit: all.hit_step_limit,
            blocked: all.blocked,
            asked_user: all.asked_user,
            faked: all.faked,
            escalation_rate: (all.proposed > 0).then(|| all.escalated as f64 / all.proposed as f64),
            judge_calls_per_episode: all.by_component[judge].1 as f64 / n_all,
            tokens_per_episode: (all.prompt_tokens + all.completion_tokens) as f64 / n_all,
            prompt_tokens_per_episode: all.prompt_tokens as f64 / n_all,
            completion_tokens_per_episode: all.completion_tokens as f64 / n_all,
            calls_per_episode: all.calls as f64 / n_all,
            tokens_per_clean_episode: clean.per_episode(|a| a.prompt_tokens + a.completion_tokens),
            calls_per_clean_episode: clean.per_episode(|a| a.calls),
            tokens_per_attacked_episode: attacked
                .per_episode(|a| a.prompt_tokens + a.completion_tokens),
            calls_per_attacked_episode: attacked.per_episode(|a| a.calls),
            tokens_by_component,
            calls_by_component,
            success_via_layer1: via(0),
            success_via_adjudicator: via(1),
            success_unchecked: via(2),
            n_bypass_tagged: attacked.bypass_pairs,
            bypass_tagged_success: attacked.bypass_succeeded,
            token_overhead_vs_none: None,
            dollars_per_episode: None,
            usage_estimated: all.usage_estimated,
            known_defects: all.known_defects,
            floors: None,
            tallies,
        }
    }
}

/// Bins of the alignment-score histograms.
pub const SCORE_BINS: usize = 20;

/// S_align of adjudicated calls: counts per bin of approved and of blocked calls.
#[derive(Clone, Debug, PartialEq)]
pub struct Scores {
    pub approved: Vec<u64>,
    pub blocked: Vec<u64>,
}

impl Default for Scores {
    fn default() -> Self {
        Scores {
            approved: vec![0; SCORE_BINS],
            blocked: vec![0; SCORE_BINS],
        }
    }
}

impl Scores {
    fn add(&mut self, r: &EpisodeRecord) {
        let Some(calls) = noted_calls(&r.notes) else {
            return;
        };
        for c in calls {
            let Some(score) = c.s_align else {
                continue;
            };
            let bin = ((score.clamp(0.0, 1.0) * SCORE_BINS as f64) as usize).min(SCORE_BINS - 1);
            match c.path {
                CallPath::Approved => self.approved[bin] += 1,
                _ => self.blocked[bin] += 1,
            }
        }
    }

    fn merge(&mut self, o: &Scores) {
        for (a, b) in self.approved.iter_mut().zip(&o.approved) {
            *a += b;
        }
        for (a, b) in self.blocked.iter_mut().zip(&o.blocked) {
            *a += b;
        }
    }
}

/// A group of the breakdown: attack, defense, model, class (0) or surface (1), the
/// class's canonical position, the class or surface.
type BreakdownKey = (String, String, String, u8, usize, String);

/// Every record of a report, folded: accumulators per [`Atom`], per breakdown group, and
/// the alignment-score histograms per defense and model.
#[derive(Clone, Debug, Default)]
pub struct Aggregate {
    errors_as: ErrorPolicy,
    atoms: BTreeMap<Atom, Acc>,
    /// The breakdown counts errors as its own outcome whatever the run's convention.
    breakdown: BTreeMap<BreakdownKey, (Acc, BTreeSet<String>)>,
    scores: BTreeMap<(String, String), Scores>,
}

impl Aggregate {
    pub fn new(errors: impl Into<ErrorPolicy>) -> Self {
        Aggregate {
            errors_as: errors.into(),
            ..Default::default()
        }
    }

    /// Folds a set of records.
    pub fn of(records: &[EpisodeRecord], errors: impl Into<ErrorPolicy>) -> Self {
        let mut a = Aggregate::new(errors);
        for r in records {
            a.add(r);
        }
        a
    }

    pub fn errors_as(&self) -> ErrorPolicy {
        self.errors_as
    }

    /// The convention of a row over these atoms, by the policy.
    fn convention<'a>(&self, atoms: impl Iterator<Item = &'a Atom>) -> ErrorsAs {
        self.errors_as.for_suites(atoms.map(|k| k.own))
    }

    /// Episodes folded in.
    pub fn episodes(&self) -> u64 {
        self.atoms.values().map(|a| a.episodes).sum()
    }

    /// Folds one record in.
    pub fn add(&mut self, r: &EpisodeRecord) {
        let atom = Atom::of(r);
        // Each record counts by its own suite's convention under the policy.
        let errors_as = self.errors_as.per_record();
        match self.atoms.get_mut(&atom) {
            Some(acc) => acc.add(r, errors_as),
            None => {
                let mut acc = Acc::default();
                acc.add(r, errors_as);
                self.atoms.insert(atom, acc);
            }
        }
        self.add_breakdown(r);
        let dm = (r.defense.clone(), r.row_model());
        self.scores.entry(dm).or_default().add(r);
    }

    fn add_breakdown(&mut self, r: &EpisodeRecord) {
        use crate::suite::samples::VectorClass;
        let (true, Some(class), Some(attack)) = (r.attacked(), &r.vector_class, &r.attack) else {
            return;
        };
        let order = VectorClass::ALL
            .iter()
            .position(|v| v.as_str() == class)
            .unwrap_or(VectorClass::ALL.len());
        let mut keys = vec![(0u8, order, class.clone())];
        if let Some(surface) = &r.surface {
            keys.push((1, 0, surface.clone()));
        }
        for (by, order, key) in keys {
            let k = (
                attack.clone(),
                r.defense.clone(),
                r.row_model(),
                by,
                order,
                key,
            );
            let (acc, suites) = self.breakdown.entry(k).or_default();
            acc.add(r, ErrorsAs::Excluded);
            if !suites.contains(&r.suite) {
                suites.insert(r.suite.clone());
            }
        }
    }

    /// Adds another aggregate's records (folded under the same convention).
    pub fn merge(&mut self, o: Aggregate) {
        for (k, v) in o.atoms {
            match self.atoms.get_mut(&k) {
                Some(mine) => mine.merge(&v),
                None => {
                    self.atoms.insert(k, v);
                }
            }
        }
        for (k, (acc, suites)) in o.breakdown {
            let (mine, my_suites) = self.breakdown.entry(k).or_default();
            mine.merge(&acc);
            my_suites.extend(suites);
        }
        for (k, v) in o.scores {
            self.scores.entry(k).or_default().merge(&v);
        }
    }

    /// The merged accumulator of the atoms `keep` selects.
    fn pool(&self, keep: impl Fn(&Atom) -> bool) -> Acc {
        let mut acc = Acc::default();
        for (_, a) in self.atoms.iter().filter(|(k, _)| keep(k)) {
            acc.merge(a);
        }
        acc
    }

    /// One row over the atoms of `defense` and `model` that `keep` selects, attacked
    /// records (with an injection task) on the attacked side; `None` when none is there.
    pub fn pooled_row(
        &self,
        suite: &str,
        attack: &AttackLabel,
        defense: &str,
        model: &str,
        keep: impl Fn(&Atom) -> bool,
    ) -> Option<Row> {
        let mine = |k: &Atom| k.defense == defense && k.model == model && keep(k);
        let clean = self.pool(|k| mine(k) && !k.attacked);
        let attacked = self.pool(|k| mine(k) && k.attacked);
        if clean.episodes + attacked.episodes == 0 {
            return None;
        }
        Some(Acc::row(
            suite,
            attack,
            defense,
            model,
            &clean,
            &attacked,
            self.convention(self.atoms.keys().filter(|k| mine(k))),
        ))
    }

    /// The summary: one row per suite × attack × defense × model, plus an `all` row per
    /// attack × defense × model micro-averaged over episodes when several suites ran.
    /// Clean episodes are shared by every attack row of their suite, defense and model.
    pub fn summarise(&self) -> Vec<Row> {
        let clean_of = |k: &Atom| k.label.is_none();
        let attacks = self.labels();
        let attacks: Vec<&AttackLabel> = attacks.iter().collect();
        let mut suites: Vec<&str> = self.atoms.keys().map(|k| k.suite.as_str()).collect();
        suites.sort();
        suites.dedup();
        let mut dm: Vec<(&str, &str)> = self
            .atoms
            .keys()
            .map(|k| (k.defense.as_str(), k.model.as_str()))
            .collect();
        dm.sort();
        dm.dedup();
        let none = AttackLabel::none();
        let labels: Vec<&AttackLabel> = if attacks.is_empty() {
            vec![&none]
        } else {
            attacks.clone()
        };
        let reached = |suite: &str, defense: &str, model: &str, attack: &AttackLabel| {
            self.atoms.keys().any(|k| {
                k.suite == suite
                    && k.defense == defense
                    && k.model == model
                    && k.label.as_ref() == Some(attack)
            })
        };
        let mut rows = Vec::new();
        let mut add_rows = |suite_label: &str, suite_set: &[&str]| {
            for &attack in &labels {
                for &(defense, model) in &dm {
                    // A suite this attack never reached (the samples of `context` exist
                    // only in lure-style suites) adds nothing to its row, not even clean
                    // episodes: they would repeat the BU of the attacks that do apply.
                    let set: Vec<&str> = suite_set
                        .iter()
                        .copied()
                        .filter(|s| attacks.is_empty() || reached(s, defense, model, attack))
                        .collect();
                    let here = |k: &Atom| {
                        k.defense == defense && k.model == model && set.contains(&k.suite.as_str())
                    };
                    let clean = self.pool(|k| here(k) && clean_of(k));
                    let attacked = self.pool(|k| here(k) && k.label.as_ref() == Some(attack));
                    if clean.episodes + attacked.episodes == 0 {
                        continue;
                    }
                    let errors_as =
                        self.convention(self.atoms.keys().filter(|k| {
                            here(k) && (clean_of(k) || k.label.as_ref() == Some(attack))
                        }));
                    rows.push(Acc::row(
                        suite_label,
                        attack,
                        defense,
                        model,
                        &clean,
                        &attacked,
                        errors_as,
                    ));
                }
            }
        };
        for &s in &suites {
            add_rows(s, &[s]);
        }
        if suites.len() > 1 {
            add_rows(ALL_SUITES, &suites);
        }
        set_overheads(&mut rows);
        rows
    }

    /// The attack labels of the attacked records, in the order of their names.
    pub fn labels(&self) -> Vec<AttackLabel> {
        let mut labels: Vec<AttackLabel> =
            self.atoms.keys().filter_map(|k| k.label.clone()).collect();
        labels.sort_by_cached_key(AttackLabel::to_string);
        labels.dedup();
        labels
    }

    /// The attack labels of `rows` (this aggregate's summary rows, or some of them), in
    /// their order, each once; a run without attacks has none.
    pub fn labels_of(&self, rows: &[Row]) -> Vec<AttackLabel> {
        let known = self.labels();
        let mut out: Vec<AttackLabel> = Vec::new();
        for r in rows {
            if let Some(l) = known
                .iter()
                .find(|l| l.bypass == r.bypass && l.named(&r.attack))
                && !out.contains(l)
            {
                out.push(l.clone());
            }
        }
        out
    }

    /// The per-class and per-surface breakdown of the attacked episodes that carry a
    /// vector class (the samples of `--attack context`); empty for template-only runs.
    /// Classes come in their canonical order, surfaces alphabetically.
    pub fn breakdown(&self) -> Vec<BreakdownRow> {
        self.breakdown
            .iter()
            .map(|((attack, defense, model, by, _, key), (acc, suites))| {
                let r = Acc::row(
                    "",
                    &AttackLabel::headline(attack),
                    defense,
                    model,
                    &Acc::default(),
                    acc,
                    ErrorsAs::Excluded,
                );
                BreakdownRow {
                    by: if *by == 0 { "class" } else { "surface" }.into(),
                    key: key.clone(),
                    suite: if suites.len() == 1 {
                        suites.iter().next().expect("one suite").clone()
                    } else {
                        ALL_SUITES.into()
                    },
                    attack: attack.clone(),
                    defense: defense.clone(),
                    model: model.clone(),
                    simulated: r.simulated,
                    n_attacked: r.n_attacked,
                    asr: r.asr,
                    asr_ci: r.asr_ci,
                    w_asr: r.w_asr,
                    ua: r.ua,
                    ua_ci: r.ua_ci,
                    errors: r.errors,
                }
            })
            .collect()
    }

    /// The alignment-score histograms of one defense and model.
    pub fn scores(&self, defense: &str, model: &str) -> Scores {
        self.scores
            .get(&(defense.to_string(), model.to_string()))
            .cloned()
            .unwrap_or_default()
    }
}

/// Sets each row's token overhead against `none` on the same suite, attack and model,
/// from clean episodes ([`metrics::cost_base`]).
pub fn set_overheads(rows: &mut [Row]) {
    metrics::set_overheads(rows);
}

pub mod agreement;
pub mod metrics;
pub mod pairs;
#[cfg(test)]
pub(crate) mod reference;
pub mod tally;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::Paths;
    use crate::commands::run::{
        args::{RoleModels, RunArgs},
        run,
    };
    use crate::record::for_each_record;
    use sieve_record::{EPISODES, RUN_INFO};
    use std::path::{Path, PathBuf};

    /// A real sim run: two suites (one with context-aware samples) under `important`
    /// and `context`, `none` and `sieve`, two seeds, an agent that follows half the
    /// injections; then every eleventh record turned into an error (no fixture run has
    /// any) and a few recorded again with another outcome, later in the file.
    async fn real_run(dir: &Path) -> Vec<EpisodeRecord> {
        let paths = Paths::resolve(None, None, Some(PathBuf::from(env!("CARGO_MANIFEST_DIR"))));
        let out = dir.join("run");
        run(
            &paths,
            RunArgs {
                suite: "dojo-style/banking,lure-style/slack".into(),
                attack: "important,context".into(),
                defense: "none,sieve".into(),
                models: RoleModels::agent("sim:p=0.5"),
                seeds: 2,
                user_tasks: Some((0..4).map(|i| format!("user_task_{i}")).collect()),
                out: Some(out.clone()),
                quiet: true,
                ..RunArgs::default()
            },
        )
        .await
        .expect("the sim run succeeds");
        let mut records = Vec::new();
        for_each_record(
            &out.join(EPISODES),
            |p| {
                records.push(p.record.expect("a well-formed record"));
                Ok(())
            },
            |e| panic!("{e}"),
        )
        .unwrap();
        assert!(records.len() > 300, "{}", records.len());
        for (i, r) in records.iter_mut().enumerate() {
            if i % 11 == 3 {
                r.error = Some("synthetic: the model request failed".into());
                // Both a kind AgentDojo scores and one it does not.
                r.error_kind = Some(if i % 2 == 0 {
                    sieve_record::ErrorKind::ContextLength
                } else {
                    sieve_record::ErrorKind::Model
                });
                r.utility = false;
            }
            // Verdicts the rules left undecided (no fixture run has any either).
            if i % 13 == 5 {
                r.undecided.utility = true;
                r.utility = false;
            }
            if i % 17 == 6 && r.attacked() {
                r.undecided.attack_success = true;
                r.attack_success = Some(false);
            }
        }
        let mut lines: Vec<String> = records
            .iter()
            .map(|r| serde_json::to_string(r).unwrap())
            .collect();
        // Recorded again (a retried error): the last record of a key is the one counted.
        for r in records.iter_mut().step_by(37) {
            r.error = None;
            r.error_kind = None;
            r.utility = !r.utility;
            lines.push(serde_json::to_string(r).unwrap());
        }
        let merged = dir.join("merged");
        std::fs::create_dir_all(&merged).unwrap();
        std::fs::write(merged.join(EPISODES), lines.join("\n") + "\n").unwrap();
        std::fs::copy(out.join(RUN_INFO), merged.join(RUN_INFO)).unwrap();
        records
    }

    fn undecided_rec(k: usize, utility: bool, undecided: bool) -> EpisodeRecord {
        let mut r: EpisodeRecord = serde_json::from_value(serde_json::json!({
            "run_id": "r", "key": format!("k{k}"), "suite": "dojo-style/banking",
            "user_task": format!("user_task_{k}"), "injection_task": null, "attack": null,
            "defense": "none", "model": "m", "simulated": false, "seed": 0,
            "utility": utility, "attack_success": null, "severity": null, "steps": 1,
            "hit_step_limit": false, "proposed_calls": 1, "blocked": 0, "asked_user": 0,
            "faked": 0, "escalated": 0, "approved": 0, "cost": {}, "latency_ms": 0.0,
            "error": null, "version": "t"
        }))
        .unwrap();
        r.undecided.utility = undecided;
        r
    }

    /// Ten clean episodes: six solved, two failed, two undecided. BU is over the eight
    /// decided (75%), its bounds over all ten (60% to 80%), the undecided share 20%, and
    /// the table shows the `Und %` column only when some row has undecided episodes.
    #[test]
    fn rates_are_over_decided_episodes_with_the_bounds_the_undecided_allow() {
        let mut records: Vec<EpisodeRecord> =
            (0..10).map(|k| undecided_rec(k, k < 6, k >= 8)).collect();
        let rows = crate::aggregate::metrics::summarise(&records);
        let row = &rows[0];
        assert_eq!(row.undecided, 2);
        assert!((row.bu.unwrap() - 0.75).abs() < 1e-12, "{row:?}");
        assert_eq!(row.bu_bounds, Some([0.6, 0.8]));
        let table = |rows: &[Row]| {
            let cols = crate::report::tables::summary_columns();
            crate::report::columns::Grid::build("main", "t", cols, rows, |_| String::new())
                .columns
                .iter()
                .map(|c| c.id.clone())
                .collect::<Vec<_>>()
        };
        assert!(table(&rows).contains(&"undecided".to_string()));
        assert_eq!(
            crate::report::tables::undecided_share(row),
            crate::report::columns::Value::Rate { v: 0.2, ci: None }
        );
        // Decided everywhere: no column, no bounds, BU over all.
        for r in &mut records {
            r.undecided.utility = false;
        }
        let rows = crate::aggregate::metrics::summarise(&records);
        assert_eq!((rows[0].undecided, rows[0].bu_bounds), (0, None));
        assert!((rows[0].bu.unwrap() - 0.6).abs() < 1e-12);
        assert!(!table(&rows).contains(&"undecided".to_string()));
    }

    /// Rows equal field by field; W-ASR, whose severities the reference summed as floats
    /// in key order and the stream sums exactly, within 1e-12.
    fn assert_same<T: Clone + PartialEq + std::fmt::Debug>(
        new: &[T],
        reference: &[T],
        w_asr: impl Fn(&mut T) -> &mut Option<f64>,
    ) {
        assert_eq!(new.len(), reference.len());
        for (n, r) in new.iter().zip(reference) {
            let mut n = n.clone();
            let mut r = r.clone();
            let (a, b) = (*w_asr(&mut n), *w_asr(&mut r));
            assert_eq!(a.is_some(), b.is_some(), "{n:?}");
            if let (Some(a), Some(b)) = (a, b) {
                assert!((a - b).abs() < 1e-12, "W-ASR {a} vs {b}");
                *w_asr(&mut n) = Some(b);
            }
            assert_eq!(n, r);
        }
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn same_rows_as_the_in_memory_reference_over_a_real_run() {
        let dir = tempfile::tempdir().unwrap();
        let records = real_run(dir.path()).await;
        assert!(records.iter().any(|r| r.vector_class.is_some()));
        assert!(records.iter().any(|r| r.notes.get("calls").is_some()));
        for errors_as in [ErrorsAs::Excluded, ErrorsAs::AgentDojo] {
            let agg = Aggregate::of(&records, errors_as);
            let rows = agg.summarise();
            let want = reference::summarise_with(&records, errors_as);
            assert!(rows.iter().any(|r| r.errors > 0 && r.seeds == 2));
            assert!(rows.iter().any(|r| r.asr_seed_range.is_some()));
            assert!(rows.iter().any(|r| r.success_via_layer1.is_some()));
            assert!(
                rows.iter()
                    .any(|r| r.undecided > 0 && r.ua_bounds.is_some())
            );
            assert!(rows.iter().any(|r| r.asr_bounds.is_some()));
            assert_same(&rows, &want, |r| &mut r.w_asr);
            let views = crate::report::tables::views(&agg, &rows, &Default::default());
            let [per_defense, per_suite, per_attack] = reference::views(&records, errors_as, &want);
            let sorted = |mut v: Vec<Row>| {
                crate::report::tables::Order::default().sort(&mut v);
                v
            };
            for (new, old) in [
                (views.per_defense, per_defense),
                (views.per_suite, per_suite),
                (views.per_attack, per_attack),
            ] {
                let mut old = sorted(old);
                // The reference's views set overheads after pooling, as `views` does.
                crate::aggregate::set_overheads(&mut old);
                assert_same(&new, &old, |r| &mut r.w_asr);
            }
            for (d, m) in [("none", "sim:p=0.5"), ("sieve", "sim:p=0.5")] {
                let s = agg.scores(d, m);
                assert_eq!((s.approved, s.blocked), reference::scores(&records, d, m));
            }
        }
        // Paired comparisons (McNemar) over the compact pair table, as over the records.
        let table = pairs::PairTable::of(&records);
        let rows = Aggregate::of(&records, ErrorsAs::Excluded).summarise();
        let mut compared = 0;
        for r in rows.iter().filter(|r| r.defense == "sieve") {
            for errors_as in [ErrorsAs::Excluded, ErrorsAs::AgentDojo] {
                let of = |d: &str| reference::row_records(&records, &r.suite, &r.attack, d, None);
                let want = reference::paired_all(&of("none"), &of("sieve"), errors_as);
                let got = crate::aggregate::metrics::paired_all(
                    &table.row(&r.suite, &r.attack, "none", None),
                    &table.row(&r.suite, &r.attack, "sieve", Some(&r.model)),
                    errors_as,
                );
                assert_eq!(got, want, "{} {}", r.suite, r.attack);
                compared += usize::from(got.iter().any(|p| p.a_higher + p.b_higher > 0));
            }
        }
        assert!(compared > 2, "{compared}");
        let breakdown = Aggregate::of(&records, ErrorsAs::AgentDojo).breakdown();
        assert!(!breakdown.is_empty());
        assert_same(&breakdown, &reference::breakdown(&records), |r| {
            &mut r.w_asr
        });
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn reading_runs_in_parallel_batches_counts_each_key_once_as_its_last_record() {
        let dir = tempfile::tempdir().unwrap();
        let records = real_run(dir.path()).await;
        let keep = crate::report::runs::Keep {
            pairs: true,
            ..Default::default()
        };
        let loaded = crate::report::runs::load(&[dir.path().join("merged")], keep).unwrap();
        assert!(loaded.duplicates > 0);
        assert_eq!(loaded.records, records.len());
        // The pair table filed in the same pass keeps each key's last record too.
        let read = loaded.pairs.clone().unwrap();
        let all = pairs::PairTable::of(&records);
        let sorted = |t: &pairs::PairTable| {
            let mut v: Vec<_> = t
                .row(ALL_SUITES, "important_instructions", "sieve", None)
                .into_iter()
                .map(|(c, o)| (c.clone(), o.seed, o.errored, o.utility, o.attack_success))
                .collect();
            v.sort();
            v
        };
        assert!(sorted(&read).len() > 50);
        assert_eq!(sorted(&read), sorted(&all));
        let want = reference::summarise_with(&records, ErrorsAs::Excluded);
        assert_same(&loaded.aggregate.summarise(), &want, |r| &mut r.w_asr);
    }

    #[test]
    fn merging_in_any_order_gives_the_same_rows_bit_for_bit() {
        use rand::seq::SliceRandom;
        use rand::{SeedableRng, rngs::StdRng};
        let dir = tempfile::tempdir().unwrap();
        let records = tokio::runtime::Runtime::new()
            .unwrap()
            .block_on(real_run(dir.path()));
        let whole = Aggregate::of(&records, ErrorsAs::Excluded);
        let mut rng = StdRng::seed_from_u64(7);
        for _ in 0..3 {
            let mut shuffled = records.clone();
            shuffled.shuffle(&mut rng);
            let mut parts: Vec<Aggregate> = shuffled
                .chunks(41)
                .map(|c| Aggregate::of(c, ErrorsAs::Excluded))
                .collect();
            parts.shuffle(&mut rng);
            let mut merged = Aggregate::new(ErrorsAs::Excluded);
            for p in parts {
                merged.merge(p);
            }
            assert_eq!(merged.summarise(), whole.summarise());
            assert_eq!(merged.breakdown(), whole.breakdown());
        }
    }
}
