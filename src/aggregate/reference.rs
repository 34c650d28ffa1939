//! The in-memory aggregation this crate used before records streamed (kept verbatim,
//! for tests only): every record of a row in one slice, floats summed in key order. The
//! streaming [`super::Aggregate`] must give the same rows; `same_rows_as_the_reference`
//! checks it over real runs.

#![allow(dead_code)]

use crate::aggregate::metrics::*;
use crate::aggregate::tally::{self, Counted, Figure, Over, Sums, Tally};
use sieve_record::sieve::{CallPath, noted_calls};
use sieve_record::{Component, EpisodeRecord, ErrorsAs, agentdojo_scores};
use std::collections::BTreeMap;

fn cluster_of(r: &EpisodeRecord) -> ClusterKey {
    (
        r.suite.clone(),
        r.user_task.clone(),
        r.injection_task.clone(),
        r.attack.clone(),
    )
}

fn ci(r: Option<Rate>) -> (Option<f64>, Option<[f64; 2]>) {
    (r.map(|r| r.value), r.map(|r| [r.lo, r.hi]))
}

/// The lowest and highest rate of `outcome` over single seeds, when there are several.
fn seed_range(
    recs: &[&EpisodeRecord],
    outcome: &dyn Fn(&EpisodeRecord) -> bool,
) -> Option<[f64; 2]> {
    let mut by: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    for r in recs {
        let e = by.entry(r.seed).or_default();
        e.0 += 1;
        e.1 += u64::from(outcome(r));
    }
    if by.len() < 2 {
        return None;
    }
    let rates = by.values().map(|(n, k)| *k as f64 / *n as f64);
    Some([
        rates.clone().fold(f64::INFINITY, f64::min),
        rates.fold(f64::NEG_INFINITY, f64::max),
    ])
}

/// Computes one row from the clean and attacked records of a group, errors excluded
/// from the rates.
pub fn row(
    suite: &str,
    attack: &str,
    defense: &str,
    model: &str,
    clean: &[&EpisodeRecord],
    attacked: &[&EpisodeRecord],
) -> Row {
    row_with(
        suite,
        &AttackLabel::headline(attack),
        defense,
        model,
        clean,
        attacked,
        ErrorsAs::Excluded,
    )
}

/// Tokens and calls per episode of each component that was called.
fn per_component(
    all: &[&&EpisodeRecord],
    n_all: f64,
) -> (BTreeMap<String, f64>, BTreeMap<String, f64>) {
    let mut tokens_by_component = BTreeMap::new();
    let mut calls_by_component = BTreeMap::new();
    for c in Component::ALL {
        let t: u64 = all.iter().map(|r| r.cost.get(c).tokens()).sum();
        let k: u64 = all.iter().map(|r| r.cost.get(c).calls).sum();
        if k > 0 {
            tokens_by_component.insert(c.as_str().to_string(), t as f64 / n_all);
            calls_by_component.insert(c.as_str().to_string(), k as f64 / n_all);
        }
    }
    (tokens_by_component, calls_by_component)
}

fn distinct_seeds(records: &[&EpisodeRecord]) -> u64 {
    let mut seeds: Vec<u64> = records.iter().map(|r| r.seed).collect();
    seeds.sort_unstable();
    seeds.dedup();
    seeds.len() as u64
}

/// The per-episode metrics over counted records, each over the side it names.
fn tallies(
    clean: &[&EpisodeRecord],
    attacked: &[&EpisodeRecord],
    succeeded: &dyn Fn(&EpisodeRecord) -> bool,
    solved: &dyn Fn(&EpisodeRecord) -> bool,
) -> BTreeMap<Tally, Figure> {
    let by_cluster = |recs: &[&EpisodeRecord]| {
        let mut by: BTreeMap<ClusterKey, Sums> = BTreeMap::new();
        for r in recs {
            by.entry(cluster_of(r)).or_default().add(&Counted {
                record: r,
                succeeded: succeeded(r),
                solved: solved(r),
            });
        }
        by
    };
    let every: Vec<&EpisodeRecord> = clean.iter().chain(attacked).copied().collect();
    let mut out = BTreeMap::new();
    for (recs, side) in [
        (attacked, Over::Attacked),
        (clean, Over::Clean),
        (&every[..], Over::Every),
    ] {
        let by = by_cluster(recs);
        out.extend(tally::figures(by.values(), |o| o == side));
    }
    out
}

/// Computes one row under an error convention.
pub fn row_with(
    suite: &str,
    attack: &AttackLabel,
    defense: &str,
    model: &str,
    clean_all: &[&EpisodeRecord],
    attacked_all: &[&EpisodeRecord],
    errors_as: ErrorsAs,
) -> Row {
    let counts = |r: &&&EpisodeRecord| {
        r.error.is_none()
            || (errors_as == ErrorsAs::AgentDojo && agentdojo_scores(r.error_kind, r.attacked()))
    };
    let clean: Vec<&EpisodeRecord> = clean_all.iter().filter(counts).copied().collect();
    let attacked: Vec<&EpisodeRecord> = attacked_all.iter().filter(counts).copied().collect();
    let row = Row {
        suite: suite.into(),
        attack: attack.to_string(),
        bypass: attack.bypass,
        defense: defense.into(),
        model: model.into(),
        errors_as,
        too_many_errors: false,
        token_overhead_vs_none: None,
        dollars_per_episode: None,
        floors: None,
        ..outcome_figures(&clean, &attacked)
    };
    with_costs(row, clean_all, attacked_all)
}

/// A row's figures of what the counted episodes came to (ASR, utility, their intervals,
/// seed ranges and undecided bounds, attribution, tallies); every other field default.
fn outcome_figures(clean: &[&EpisodeRecord], attacked: &[&EpisodeRecord]) -> Row {
    // Under AgentDojo's convention an errored episode is unsolved and attacked.
    let succeeded =
        |r: &EpisodeRecord| r.error.is_some() || r.counted_attack_success() == Some(true);
    let solved = |r: &EpisodeRecord| r.error.is_none() && r.counted_utility();
    let n_clean = clean.len() as u64;
    let n_att = attacked.len() as u64;
    let sev_total: f64 = attacked.iter().map(|r| r.severity.unwrap_or(1.0)).sum();
    let sev_succ: f64 = attacked
        .iter()
        .filter(|r| succeeded(r))
        .map(|r| r.severity.unwrap_or(1.0))
        .sum::<f64>()
        + 0.0; // an empty f64 sum is -0.0, which would print as "-0.0"
    let obs =
        |recs: &[&EpisodeRecord], f: &dyn Fn(&EpisodeRecord) -> bool| -> Vec<(ClusterKey, bool)> {
            recs.iter().map(|r| (cluster_of(r), f(r))).collect()
        };
    let rate = |o: Vec<(ClusterKey, bool)>| {
        let refs: Vec<Obs<'_>> = o.iter().map(|(c, y)| (c, *y)).collect();
        clustered_rate(&refs)
    };
    // Rates are over the decided episodes; bounds over all of them.
    fn decided<'a>(
        recs: &[&'a EpisodeRecord],
        und: &dyn Fn(&EpisodeRecord) -> bool,
    ) -> Vec<&'a EpisodeRecord> {
        recs.iter().filter(|r| !und(r)).copied().collect()
    }
    let u_und = |r: &EpisodeRecord| r.utility_undecided();
    let a_und = |r: &EpisodeRecord| r.attack_undecided();
    let asr = rate(obs(&decided(attacked, &a_und), &succeeded));
    let ua = rate(obs(&decided(attacked, &u_und), &solved));
    let bu = rate(obs(&decided(clean, &u_und), &solved));
    let (undecided, asr_bounds, ua_bounds, bu_bounds) =
        undecided_bounds(clean, attacked, &succeeded, &solved);
    let successes: Vec<&&EpisodeRecord> = attacked.iter().filter(|r| succeeded(r)).collect();
    let attributed = attacked.iter().any(|r| attribute(r).is_some());
    let via = |a: Attribution| {
        attributed.then(|| successes.iter().filter(|r| attribute(r) == Some(a)).count() as u64)
    };
    let tagged: Vec<&&EpisodeRecord> = attacked.iter().filter(|r| r.bypass_pair).collect();
    let (asr_v, asr_ci) = ci(asr);
    let (bu_v, bu_ci) = ci(bu);
    let (ua_v, ua_ci) = ci(ua);
    Row {
        n_clean,
        n_attacked: n_att,
        asr: asr_v,
        asr_ci,
        w_asr: (n_att > 0 && sev_total > 0.0).then(|| sev_succ / sev_total),
        bu: bu_v,
        bu_ci,
        ua: ua_v,
        ua_ci,
        eds: match (asr_v, ua_v) {
            (Some(a), Some(u)) => Some(eds(a, u)),
            _ => None,
        },
        asr_seed_range: seed_range(attacked, &|r| succeeded(r) && !r.attack_undecided()),
        ua_seed_range: seed_range(attacked, &|r| solved(r) && !r.utility_undecided()),
        bu_seed_range: seed_range(clean, &|r| solved(r) && !r.utility_undecided()),
        undecided,
        asr_bounds,
        ua_bounds,
        bu_bounds,
        success_via_layer1: via(Attribution::Layer1),
        success_via_adjudicator: via(Attribution::Adjudicator),
        success_unchecked: via(Attribution::Unchecked),
        n_bypass_tagged: tagged.len() as u64,
        bypass_tagged_success: tagged.iter().filter(|r| succeeded(r)).count() as u64,
        tallies: tallies(clean, attacked, &succeeded, &solved),
        ..Row::default()
    }
}

/// `row` with the figures every episode counts in, errored or not: errors, seeds, the
/// defense's actions, tokens and calls.
fn with_costs(row: Row, clean_all: &[&EpisodeRecord], attacked_all: &[&EpisodeRecord]) -> Row {
    let everything: Vec<&EpisodeRecord> = clean_all
        .iter()
        .chain(attacked_all.iter())
        .copied()
        .collect();
    let errors = everything.iter().filter(|r| r.error.is_some()).count() as u64;
    let all: Vec<&&EpisodeRecord> = clean_all.iter().chain(attacked_all.iter()).collect();
    let n_all = all.len().max(1) as f64;
    let proposed: u64 = all.iter().map(|r| r.proposed_calls).sum();
    let escalated: u64 = all.iter().map(|r| r.escalated).sum();
    let (tokens_by_component, calls_by_component) = per_component(&all, n_all);
    let totals: Vec<_> = all.iter().map(|r| r.cost.total()).collect();
    Row {
        simulated: all.iter().any(|r| r.simulated),
        scripted_roles: union_roles(all.iter().map(|r| &r.scripted_roles)),
        errors,
        episodes: everything.len() as u64,
        error_rate: (!everything.is_empty()).then(|| errors as f64 / everything.len() as f64),
        seeds: distinct_seeds(&everything),
        hit_step_limit: all.iter().filter(|r| r.hit_step_limit).count() as u64,
        blocked: all.iter().map(|r| r.blocked).sum(),
        asked_user: all.iter().map(|r| r.asked_user).sum(),
        faked: all.iter().map(|r| r.faked).sum(),
        escalation_rate: (proposed > 0).then(|| escalated as f64 / proposed as f64),
        judge_calls_per_episode: all
            .iter()
            .map(|r| r.cost.get(Component::Judge).calls)
            .sum::<u64>() as f64
            / n_all,
        tokens_per_episode: totals.iter().map(|t| t.tokens()).sum::<u64>() as f64 / n_all,
        prompt_tokens_per_episode: totals.iter().map(|t| t.prompt_tokens).sum::<u64>() as f64
            / n_all,
        completion_tokens_per_episode: totals.iter().map(|t| t.completion_tokens).sum::<u64>()
            as f64
            / n_all,
        calls_per_episode: totals.iter().map(|t| t.calls).sum::<u64>() as f64 / n_all,
        tokens_per_clean_episode: per_episode(clean_all, |t| t.tokens()),
        calls_per_clean_episode: per_episode(clean_all, |t| t.calls),
        tokens_per_attacked_episode: per_episode(attacked_all, |t| t.tokens()),
        calls_per_attacked_episode: per_episode(attacked_all, |t| t.calls),
        tokens_by_component,
        calls_by_component,
        usage_estimated: all.iter().filter(|r| r.usage_estimated()).count() as u64,
        known_defects: all.iter().filter(|r| r.known_defect.is_some()).count() as u64,
        ..row
    }
}

/// The undecided episodes of a row and, where there are some, the bounds of ASR, UA and
/// BU they allow (each undecided one failing, each holding).
#[allow(clippy::type_complexity)]
fn undecided_bounds(
    clean: &[&EpisodeRecord],
    attacked: &[&EpisodeRecord],
    succeeded: &dyn Fn(&EpisodeRecord) -> bool,
    solved: &dyn Fn(&EpisodeRecord) -> bool,
) -> (u64, Option<[f64; 2]>, Option<[f64; 2]>, Option<[f64; 2]>) {
    let u_und = |r: &EpisodeRecord| r.utility_undecided();
    let a_und = |r: &EpisodeRecord| r.attack_undecided();
    let bounds = |recs: &[&EpisodeRecord],
                  f: &dyn Fn(&EpisodeRecord) -> bool,
                  und: &dyn Fn(&EpisodeRecord) -> bool| {
        let n = recs.len() as f64;
        let u = recs.iter().filter(|r| und(r)).count() as f64;
        let k = recs.iter().filter(|r| !und(r) && f(r)).count() as f64;
        (u > 0.0).then(|| [k / n, (k + u) / n])
    };
    let undecided = clean
        .iter()
        .chain(attacked)
        .filter(|r| u_und(r) || a_und(r))
        .count() as u64;
    (
        undecided,
        bounds(attacked, succeeded, &a_und),
        bounds(attacked, solved, &u_und),
        bounds(clean, solved, &u_und),
    )
}

/// `total` of the records' costs, per record (`None` without records).
fn per_episode(
    recs: &[&EpisodeRecord],
    total: impl Fn(&sieve_record::CostTotals) -> u64,
) -> Option<f64> {
    (!recs.is_empty()).then(|| {
        recs.iter().map(|r| total(&r.cost.total())).sum::<u64>() as f64 / recs.len() as f64
    })
}

/// Summarises records: one row per suite × attack × defense × model, plus an `all` row
/// per attack × defense × model micro-averaged over episodes when several suites ran.
/// Clean episodes are shared by every attack row of their suite, defense and model.
pub fn summarise(records: &[EpisodeRecord]) -> Vec<Row> {
    summarise_with(records, ErrorsAs::Excluded)
}

/// [`summarise`] under an error convention.
pub fn summarise_with(records: &[EpisodeRecord], errors_as: ErrorsAs) -> Vec<Row> {
    type Key = (String, String, String); // suite, defense, model
    let mut clean: BTreeMap<Key, Vec<&EpisodeRecord>> = BTreeMap::new();
    let mut attacked: BTreeMap<(Key, AttackLabel), Vec<&EpisodeRecord>> = BTreeMap::new();
    // Records arrive in completion order, which concurrency makes arbitrary; summing
    // floats in key order makes the figures bit-identical across reruns.
    let mut sorted: Vec<&EpisodeRecord> = records.iter().collect();
    sorted.sort_by(|a, b| a.key.cmp(&b.key));
    for r in sorted {
        let k = (r.suite.clone(), r.defense.clone(), r.model.clone());
        match &r.attack {
            Some(a) if r.attacked() => attacked
                .entry((k, AttackLabel::of(a, r)))
                .or_default()
                .push(r),
            _ => clean.entry(k).or_default().push(r),
        }
    }
    let attacks: Vec<AttackLabel> = {
        let mut a: Vec<AttackLabel> = attacked.keys().map(|(_, a)| a.clone()).collect();
        a.sort_by_cached_key(AttackLabel::to_string);
        a.dedup();
        a
    };
    let suites: Vec<String> = {
        let mut s: Vec<String> = records.iter().map(|r| r.suite.clone()).collect();
        s.sort();
        s.dedup();
        s
    };
    let mut dm: Vec<(String, String)> = records
        .iter()
        .map(|r| (r.defense.clone(), r.model.clone()))
        .collect();
    dm.sort();
    dm.dedup();
    let attack_labels: Vec<AttackLabel> = if attacks.is_empty() {
        vec![AttackLabel::none()]
    } else {
        attacks.clone()
    };

    let mut rows = Vec::new();
    let mut add_rows = |suite_label: &str, suite_set: &[String]| {
        for attack in &attack_labels {
            for (defense, model) in &dm {
                let mut c: Vec<&EpisodeRecord> = Vec::new();
                let mut a: Vec<&EpisodeRecord> = Vec::new();
                for s in suite_set {
                    let k = (s.clone(), defense.clone(), model.clone());
                    // A suite this attack never reached (the samples of `context` exist
                    // only in lure-style suites) adds nothing to its row, not even clean
                    // episodes: they would repeat the BU of the attacks that do apply.
                    if !attacks.is_empty() && !attacked.contains_key(&(k.clone(), attack.clone())) {
                        continue;
                    }
                    if let Some(v) = clean.get(&k) {
                        c.extend(v.iter().copied());
                    }
                    if let Some(v) = attacked.get(&(k, attack.clone())) {
                        a.extend(v.iter().copied());
                    }
                }
                if c.is_empty() && a.is_empty() {
                    continue;
                }
                rows.push(row_with(
                    suite_label,
                    attack,
                    defense,
                    model,
                    &c,
                    &a,
                    errors_as,
                ));
            }
        }
    };
    for s in &suites {
        add_rows(s, std::slice::from_ref(s));
    }
    if suites.len() > 1 {
        add_rows(ALL_SUITES, &suites);
    }
    // Overhead against `none` where the run has it.
    super::metrics::set_overheads(&mut rows);
    rows
}

/// The per-class and per-surface breakdown of the attacked episodes that carry a vector
/// class (the samples of `--attack context`); empty for template-only runs. Classes come
/// in their canonical order, surfaces alphabetically.
pub fn breakdown(records: &[EpisodeRecord]) -> Vec<BreakdownRow> {
    use crate::suite::samples::VectorClass;
    type Key = (String, String, String, u8, usize, String); // attack, defense, model, by, order, key
    let class_order = |c: &str| {
        VectorClass::ALL
            .iter()
            .position(|v| v.as_str() == c)
            .unwrap_or(VectorClass::ALL.len())
    };
    let mut sorted: Vec<&EpisodeRecord> = records.iter().filter(|r| r.attacked()).collect();
    sorted.sort_by(|a, b| a.key.cmp(&b.key));
    let mut groups: BTreeMap<Key, Vec<&EpisodeRecord>> = BTreeMap::new();
    for r in sorted {
        let (Some(class), Some(attack)) = (&r.vector_class, &r.attack) else {
            continue;
        };
        let base = (attack.clone(), r.defense.clone(), r.model.clone());
        groups
            .entry((
                base.0.clone(),
                base.1.clone(),
                base.2.clone(),
                0,
                class_order(class),
                class.clone(),
            ))
            .or_default()
            .push(r);
        if let Some(surface) = &r.surface {
            groups
                .entry((base.0, base.1, base.2, 1, 0, surface.clone()))
                .or_default()
                .push(r);
        }
    }
    groups
        .into_iter()
        .map(|((attack, defense, model, by, _, key), rs)| {
            let mut suites: Vec<&str> = rs.iter().map(|r| r.suite.as_str()).collect();
            suites.sort();
            suites.dedup();
            let r = row("", &attack, &defense, &model, &[], &rs);
            BreakdownRow {
                by: if by == 0 { "class" } else { "surface" }.into(),
                key,
                suite: if suites.len() == 1 {
                    suites[0].to_string()
                } else {
                    ALL_SUITES.into()
                },
                attack,
                defense,
                model,
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

/// The three pooled views (per defense, per suite, per attack), without their order.
pub fn views(
    records: &[EpisodeRecord],
    errors_as: ErrorsAs,
    summary_rows: &[Row],
) -> [Vec<Row>; 3] {
    let mut dm: Vec<(String, String)> = Vec::new();
    let mut attacks: Vec<AttackLabel> = Vec::new();
    let mut suites: Vec<String> = Vec::new();
    let labels: Vec<AttackLabel> = records
        .iter()
        .filter_map(|r| {
            r.attack
                .as_ref()
                .filter(|_| r.attacked())
                .map(|a| AttackLabel::of(a, r))
        })
        .collect();
    for r in summary_rows {
        let k = (r.defense.clone(), r.model.clone());
        if !dm.contains(&k) {
            dm.push(k);
        }
        if let Some(l) = labels.iter().find(|l| l.to_string() == r.attack)
            && !attacks.contains(l)
        {
            attacks.push(l.clone());
        }
        if r.suite != ALL_SUITES && !suites.contains(&r.suite) {
            suites.push(r.suite.clone());
        }
    }
    let pooled = |label_suite: &str,
                  label_attack: &AttackLabel,
                  d: &str,
                  m: &str,
                  keep: &dyn Fn(&EpisodeRecord) -> bool|
     -> Option<Row> {
        let mine: Vec<&EpisodeRecord> = records
            .iter()
            .filter(|r| r.defense == d && r.model == m && keep(r))
            .collect();
        if mine.is_empty() {
            return None;
        }
        let (attacked, clean): (Vec<&EpisodeRecord>, Vec<&EpisodeRecord>) =
            mine.into_iter().partition(|r| r.attacked());
        Some(row_with(
            label_suite,
            label_attack,
            d,
            m,
            &clean,
            &attacked,
            errors_as,
        ))
    };
    let per_defense = dm
        .iter()
        .filter_map(|(d, m)| {
            pooled(
                ALL_SUITES,
                &AttackLabel::headline(ALL_SUITES),
                d,
                m,
                &|_| true,
            )
        })
        .collect();
    let mut per_suite = Vec::new();
    for su in &suites {
        for (d, m) in &dm {
            per_suite.extend(pooled(su, &AttackLabel::headline(ALL_SUITES), d, m, &|r| {
                &r.suite == su
            }));
        }
    }
    let mut per_attack = Vec::new();
    for a in &attacks {
        for (d, m) in &dm {
            // By attack label: the bypass tasks make their own row; clean episodes from
            // the suites the label reached.
            let reached: Vec<&str> = summary_rows
                .iter()
                .filter(|r| {
                    r.attack == a.to_string()
                        && &r.defense == d
                        && &r.model == m
                        && r.suite != ALL_SUITES
                })
                .map(|r| r.suite.as_str())
                .collect();
            per_attack.extend(pooled(ALL_SUITES, a, d, m, &|r| match &r.attack {
                Some(at) if r.attacked() => &AttackLabel::of(at, r) == a,
                _ => !r.attacked() && reached.contains(&r.suite.as_str()),
            }));
        }
    }
    [per_defense, per_suite, per_attack]
}

/// S_align of the adjudicated calls of one defense and model: (approved, blocked) bins.
pub fn scores(records: &[EpisodeRecord], defense: &str, model: &str) -> (Vec<u64>, Vec<u64>) {
    const SCORE_BINS: usize = 20;
    let mut approved = vec![0; SCORE_BINS];
    let mut blocked = vec![0; SCORE_BINS];
    for e in records
        .iter()
        .filter(|e| e.defense == defense && e.model == model)
    {
        let Some(calls) = noted_calls(&e.notes) else {
            continue;
        };
        for c in calls {
            let Some(score) = c.s_align else {
                continue;
            };
            let bin = ((score.clamp(0.0, 1.0) * SCORE_BINS as f64) as usize).min(SCORE_BINS - 1);
            match c.path {
                CallPath::Approved => approved[bin] += 1,
                _ => blocked[bin] += 1,
            }
        }
    }
    (approved, blocked)
}

/// The key that pairs an episode across defenses: its cluster and seed.
fn pair_key(r: &EpisodeRecord) -> (ClusterKey, u64) {
    (cluster_of(r), r.seed)
}

/// Pairs the episodes of two rows and compares `outcome` (None: the episode does not
/// count, e.g. errored). Returns `None` when no episode is in both.
pub fn paired(
    metric: &str,
    a: &[&EpisodeRecord],
    b: &[&EpisodeRecord],
    outcome: impl Fn(&EpisodeRecord) -> Option<bool>,
) -> Option<Paired> {
    let a_by: BTreeMap<_, bool> = a
        .iter()
        .filter_map(|r| Some((pair_key(r), outcome(r)?)))
        .collect();
    let mut per_cluster: BTreeMap<ClusterKey, Vec<f64>> = BTreeMap::new();
    for r in b {
        let Some(yb) = outcome(r) else { continue };
        let Some(&ya) = a_by.get(&pair_key(r)) else {
            continue;
        };
        per_cluster
            .entry(cluster_of(r))
            .or_default()
            .push(f64::from(u8::from(yb)) - f64::from(u8::from(ya)));
    }
    let n: usize = per_cluster.values().map(Vec::len).sum();
    if n == 0 {
        return None;
    }
    let nf = n as f64;
    let diff = per_cluster.values().flatten().sum::<f64>() / nf;
    let var = per_cluster
        .values()
        .map(|d| d.iter().map(|x| x - diff).sum::<f64>().powi(2))
        .sum::<f64>()
        / (nf * nf);
    let half = Z95 * var.sqrt();
    let (mut a_higher, mut b_higher) = (0, 0);
    for d in per_cluster.values() {
        let s: f64 = d.iter().sum();
        if s < 0.0 {
            a_higher += 1;
        } else if s > 0.0 {
            b_higher += 1;
        }
    }
    Some(Paired {
        metric: metric.to_string(),
        n_pairs: n as u64,
        diff: if diff.abs() < 1e-12 { 0.0 } else { diff },
        ci: [(diff - half).max(-1.0), (diff + half).min(1.0)],
        a_higher,
        b_higher,
        p_value: mcnemar_exact(a_higher, b_higher),
    })
}

/// The paired ASR, UA and BU comparisons of two sets of records (rows B − A), under an
/// error convention.
pub fn paired_all(a: &[&EpisodeRecord], b: &[&EpisodeRecord], errors_as: ErrorsAs) -> Vec<Paired> {
    let counts = |r: &EpisodeRecord| {
        r.error.is_none()
            || (errors_as == ErrorsAs::AgentDojo && agentdojo_scores(r.error_kind, r.attacked()))
    };
    let (a_att, a_clean): (Vec<&EpisodeRecord>, Vec<&EpisodeRecord>) =
        a.iter().copied().partition(|r| r.attacked());
    let (b_att, b_clean): (Vec<&EpisodeRecord>, Vec<&EpisodeRecord>) =
        b.iter().copied().partition(|r| r.attacked());
    let success = |r: &EpisodeRecord| {
        counts(r).then(|| r.error.is_some() || r.counted_attack_success() == Some(true))
    };
    let utility = |r: &EpisodeRecord| counts(r).then(|| r.error.is_none() && r.counted_utility());
    [
        paired("asr", &a_att, &b_att, success),
        paired("ua", &a_att, &b_att, utility),
        paired("bu", &a_clean, &b_clean, utility),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The records a summary row is computed from, as [`summarise_with`] groups them: the
/// row's suite (every suite for [`ALL_SUITES`]), defense and model (any when `None`);
/// the clean episodes every attack's row shares, and the attacked ones under the row's
/// attack label.
pub fn row_records<'a>(
    records: &'a [EpisodeRecord],
    suite: &str,
    attack: &str,
    defense: &str,
    model: Option<&str>,
) -> Vec<&'a EpisodeRecord> {
    records
        .iter()
        .filter(|r| {
            r.defense == defense
                && (suite == ALL_SUITES || r.suite == suite)
                && model.is_none_or(|m| r.model == m)
                && match &r.attack {
                    Some(a) if r.attacked() => AttackLabel::of(a, r).to_string() == attack,
                    _ => true,
                }
        })
        .collect()
}
