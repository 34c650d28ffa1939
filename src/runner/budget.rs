//! Spending caps (`--budget-usd`, `--budget-tokens`) and the ledger of what a results
//! folder has spent, kept in its manifest across resumes and summed over shards by
//! `merge`.
//!
//! Admission: an episode is started only when what is spent, plus what the episodes in
//! flight and the next one could cost, stays within the cap. What an episode could cost
//! is its own cost under the scripted stand-in (the `--dry-run` estimate, made before a
//! budgeted run), scaled by the largest ratio of actual to estimated cost seen so far;
//! without an estimate, the most any episode of the folder has cost (the ledger keeps
//! it across resumes). The first episode of an invocation runs alone, to measure that
//! ratio; then no more episodes are in flight than have finished in this invocation
//! (the width doubles as costs are seen, up to `--concurrency`). An episode is never reserved at less than the costliest episode so far. A cap
//! below the first episode's cost is overrun by that one episode; otherwise the overrun
//! is at most what the episodes in flight spend above their reservations (with
//! `--concurrency 1`, one episode's excess over the costliest before it); nothing else
//! can overrun. Reported usage above what a request allowed (completion tokens over its
//! `max_tokens`) is an error for that call and charged nothing.
//! The ledger in `run.json` is a cache: on resume it is checked against the sum over the
//! folder's records and recomputed from them when it disagrees ([`Budget::reconcile`]).
//! Errored episodes spent what they spent and are charged; so is an episode a fatal error
//! stopped. The budget never changes an episode's outcome, so it is not part of the run's
//! identity: a folder stopped by its budget resumes under a higher one.

use sieve_record::{Component, CostMeter};
use std::collections::{BTreeMap, HashMap};

/// Dollars per million prompt and completion tokens, per role. Embedding tokens are
/// priced at the embedding role's input price.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Prices {
    pub by_role: BTreeMap<Component, [f64; 2]>,
}

impl Prices {
    /// The same prices for every role (`--price-per-mtok`).
    pub fn flat(input: f64, output: f64) -> Prices {
        Prices {
            by_role: Component::ALL
                .into_iter()
                .map(|c| (c, [input, output]))
                .collect(),
        }
    }

    /// The same prices times `f` (batch APIs charge half).
    pub fn scaled(mut self, f: f64) -> Prices {
        for p in self.by_role.values_mut() {
            p[0] *= f;
            p[1] *= f;
        }
        self
    }

    /// Dollars of one episode's cost under `defense` (as records name it): each
    /// component's tokens at the price of the role whose model served them
    /// ([`crate::defense::model_role`]: MELON's masked run is the agent's model's).
    pub fn dollars(&self, defense: &str, cost: &CostMeter) -> f64 {
        cost.by_component
            .iter()
            .map(|(c, t)| {
                let role = crate::defense::model_role(defense, *c);
                self.by_role.get(&role).map_or(0.0, |[i, o]| {
                    (t.prompt_tokens as f64 * i + t.completion_tokens as f64 * o) / 1e6
                })
            })
            .sum()
    }
}

use sieve_record::Ledger;

/// What the budget says about starting the next episode.
#[derive(Clone, Debug, PartialEq)]
pub enum Admission {
    Admit,
    /// Not now: wait for episodes in flight to finish (their cost decides).
    Wait,
    /// No further episode fits; the reason names the cap and what is left.
    Stop(String),
}

/// What one episode is expected to cost: dollars and tokens.
pub type Cost = (f64, u64);

/// The caps of a run and its ledger, updated as episodes finish.
#[derive(Clone, Debug, Default)]
pub struct Budget {
    pub limit_usd: Option<f64>,
    pub limit_tokens: Option<u64>,
    pub prices: Prices,
    /// The folder's ledger: what earlier invocations spent plus this one's so far.
    pub ledger: Ledger,
    /// Each episode's cost under the scripted stand-in (`--dry-run`'s estimate), by
    /// [`cell_key`]; empty when no estimate was made.
    pub expected: HashMap<String, Cost>,
    /// The largest ratio of an episode's actual cost to its expected cost seen so far.
    ratio: (f64, f64),
    /// What the episodes in flight were admitted at.
    in_flight: HashMap<String, Cost>,
    /// Episodes finished in this invocation.
    finished_here: u64,
}

/// An episode's place in the matrix without the model (the dry run's stand-in has
/// another name than the real model).
pub fn cell_key(k: &super::JobKey) -> String {
    format!(
        "{}|{}|{}|{}|{}|{}",
        k.suite,
        k.user_task,
        k.injection_task.as_deref().unwrap_or("-"),
        k.attack.as_deref().unwrap_or("-"),
        k.defense,
        k.seed
    )
}

impl Budget {
    pub fn new(
        limit_usd: Option<f64>,
        limit_tokens: Option<u64>,
        prices: Prices,
        prior: Ledger,
    ) -> Budget {
        let mut ledger = prior;
        if limit_usd.is_some() || limit_tokens.is_some() {
            ledger.limit_usd = limit_usd;
            ledger.limit_tokens = limit_tokens;
        }
        Budget {
            limit_usd,
            limit_tokens,
            prices,
            ledger,
            ratio: (1.0, 1.0),
            ..Budget::default()
        }
    }

    pub fn limited(&self) -> bool {
        self.limit_usd.is_some() || self.limit_tokens.is_some()
    }

    /// What episode `key` could cost: its expected cost scaled by the largest overrun
    /// seen, else the most any episode has cost.
    fn bound(&self, key: &str) -> Cost {
        let costliest = (self.ledger.max_episode_usd, self.ledger.max_episode_tokens);
        match self.expected.get(key) {
            // Never below the costliest episode so far: an estimate scaled by the first
            // episodes' ratio can undershoot a long attacked episode, and with many in
            // flight each undershoot would add to the overrun.
            Some(&(usd, tok)) => (
                (usd * self.ratio.0).max(costliest.0).max(0.0),
                ((tok as f64 * self.ratio.1).ceil() as u64).max(costliest.1),
            ),
            None => costliest,
        }
    }

    /// Takes the folder's ledger from its records (`recorded`, summed over every line of
    /// `episodes.jsonl` at this invocation's prices) when the one in `run.json` disagrees
    /// with them: the file is a cache, and a ledger edited, reset or deleted must not
    /// lower what the folder has spent. Agreeing (the same episodes and tokens, and
    /// dollars that are not negative), the file's is kept: its dollars are at the prices
    /// in force when each episode ran. Returns why the file's was refused, if it was.
    pub fn reconcile(&mut self, recorded: &Ledger) -> Option<String> {
        let l = &self.ledger;
        let agrees = l.episodes >= recorded.episodes
            && l.spent_tokens >= recorded.spent_tokens
            && l.spent_usd.is_finite()
            && l.spent_usd >= 0.0
            && l.max_episode_usd.is_finite()
            && l.max_episode_usd >= 0.0
            && l.max_episode_tokens >= recorded.max_episode_tokens;
        if agrees {
            return None;
        }
        let why = format!(
            "the ledger in run.json ({} episodes, {} tokens, ${:.4}) disagrees with the records ({} episodes, {} tokens); it is recomputed from the records",
            l.episodes, l.spent_tokens, l.spent_usd, recorded.episodes, recorded.spent_tokens
        );
        self.ledger = Ledger {
            limit_usd: self.ledger.limit_usd,
            limit_tokens: self.ledger.limit_tokens,
            ..recorded.clone()
        };
        Some(why)
    }

    /// Whether episode `key` may start now.
    pub fn admit(&self, key: &str) -> Admission {
        if !self.limited() {
            return Admission::Admit;
        }
        let l = &self.ledger;
        let (usd, tok) = self.bound(key);
        let held_usd: f64 = self.in_flight.values().map(|c| c.0).sum();
        let held_tok: u64 = self.in_flight.values().map(|c| c.1).sum();
        let running = !self.in_flight.is_empty();
        let mut over = Vec::new();
        if let Some(cap) = self.limit_usd
            && (l.spent_usd + held_usd + usd > cap + 1e-12 || l.spent_usd >= cap)
        {
            over.push(format!(
                "--budget-usd {cap}: ${:.4} spent, ${:.4} left, the next episode may cost ${usd:.4}",
                l.spent_usd,
                (cap - l.spent_usd).max(0.0),
            ));
        }
        if let Some(cap) = self.limit_tokens
            && (l.spent_tokens + held_tok + tok > cap || l.spent_tokens >= cap)
        {
            over.push(format!(
                "--budget-tokens {cap}: {} spent, {} left, the next episode may use {tok}",
                l.spent_tokens,
                cap.saturating_sub(l.spent_tokens),
            ));
        }
        if !over.is_empty() {
            return if running {
                Admission::Wait
            } else {
                Admission::Stop(over.join("; "))
            };
        }
        // Nothing measured yet: the first episode runs alone, to see how the model's
        // spending compares with the estimate.
        let measured =
            self.finished_here > 0 || (self.expected.is_empty() && self.ledger.episodes > 0);
        if !measured && running {
            return Admission::Wait;
        }
        // The run widens as its costs are seen: no more episodes in flight than have
        // finished in this invocation (1, 1, 2, 4, ... up to --concurrency), so a wave of
        // episodes costlier than the first ones measured is a few, not the whole width.
        if running && self.in_flight.len() as u64 >= self.finished_here.max(1) {
            return Admission::Wait;
        }
        Admission::Admit
    }

    /// Notes that episode `key` started.
    pub fn started(&mut self, key: &str) {
        let b = self.bound(key);
        self.in_flight.insert(key.to_string(), b);
    }

    /// Charges a finished episode's cost (also one a fatal error stopped: what ran was
    /// paid for) and learns how far actual spending runs above the estimate.
    pub fn finished(&mut self, key: &str, defense: &str, cost: &CostMeter) {
        self.in_flight.remove(key);
        self.finished_here += 1;
        let total = cost.total();
        let usd = self.prices.dollars(defense, cost);
        if let Some(&(e_usd, e_tok)) = self.expected.get(key) {
            if e_usd > 0.0 {
                self.ratio.0 = self.ratio.0.max(usd / e_usd);
            }
            if e_tok > 0 {
                self.ratio.1 = self.ratio.1.max(total.tokens() as f64 / e_tok as f64);
            }
        }
        self.ledger.charge(usd, total.tokens(), total.estimated);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sieve_record::CostTotals;

    fn cost(prompt: u64, completion: u64) -> CostMeter {
        let mut c = CostMeter::default();
        c.by_component.insert(
            Component::Agent,
            CostTotals {
                calls: 1,
                prompt_tokens: prompt,
                completion_tokens: completion,
                ..Default::default()
            },
        );
        c
    }

    #[test]
    fn prices_apply_per_role() {
        let mut p = Prices::flat(1.0, 2.0);
        assert!((p.dollars("none", &cost(1_000_000, 500_000)) - 2.0).abs() < 1e-12);
        p.by_role.remove(&Component::Agent);
        assert_eq!(p.dollars("none", &cost(1_000_000, 0)), 0.0);
    }

    /// MELON's masked run is metered as `detector` but runs on the agent's model: it is
    /// charged at the agent's price, another defense's detector at the judge's.
    #[test]
    fn a_detector_request_is_priced_on_the_model_that_served_it() {
        let mut p = Prices::default();
        p.by_role.insert(Component::Agent, [1.0, 0.0]);
        p.by_role.insert(Component::Judge, [10.0, 0.0]);
        let mut c = CostMeter::default();
        c.by_component.insert(
            Component::Detector,
            CostTotals {
                calls: 1,
                prompt_tokens: 1_000_000,
                ..Default::default()
            },
        );
        assert!((p.dollars("melon", &c) - 1.0).abs() < 1e-12);
        assert!((p.dollars("melon:threshold=0.5", &c) - 1.0).abs() < 1e-12);
        assert!((p.dollars("dual_llm", &c) - 10.0).abs() < 1e-12);
    }

    #[test]
    fn admission_measures_first_then_keeps_in_flight_within_the_cap() {
        let mut b = Budget::new(None, Some(1000), Prices::default(), Ledger::default());
        b.expected = (0..6).map(|i| (format!("e{i}"), (0.0, 250))).collect();
        assert_eq!(b.admit("e0"), Admission::Admit);
        b.started("e0");
        assert_eq!(
            b.admit("e1"),
            Admission::Wait,
            "the first episode runs alone"
        );
        b.finished("e0", "none", &cost(200, 50));
        // One finished: one in flight at a time.
        assert_eq!(b.admit("e1"), Admission::Admit);
        b.started("e1");
        assert_eq!(
            b.admit("e2"),
            Admission::Wait,
            "as many in flight as finished"
        );
        b.finished("e1", "none", &cost(200, 50));
        // 500 spent, 250 expected each: two more fit (two finished), a third does not.
        for k in ["e2", "e3"] {
            assert_eq!(b.admit(k), Admission::Admit, "{k}");
            b.started(k);
        }
        assert_eq!(b.admit("e4"), Admission::Wait);
        for k in ["e2", "e3"] {
            b.finished(k, "none", &cost(200, 50));
        }
        match b.admit("e4") {
            Admission::Stop(why) => assert!(why.contains("1000 spent, 0 left"), "{why}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(b.ledger.spent_tokens, 1000);
        assert_eq!(b.ledger.limit_tokens, Some(1000));
    }

    /// A model that spends twice the estimate doubles every later bound.
    #[test]
    fn overruns_of_the_estimate_scale_later_bounds() {
        let mut b = Budget::new(None, Some(850), Prices::default(), Ledger::default());
        b.expected = (0..5).map(|i| (format!("e{i}"), (0.0, 100))).collect();
        b.started("e0");
        b.finished("e0", "none", &cost(150, 50));
        assert_eq!(b.bound("e1").1, 200, "twice the estimate");
        b.started("e1");
        b.finished("e1", "none", &cost(50, 50));
        assert_eq!(
            b.bound("e2").1,
            200,
            "the costliest so far bounds every later one"
        );
        b.finished_here = 8;
        for k in ["e2", "e3"] {
            // 300 spent + 200 per episode in flight + 200 for this one ≤ 850.
            assert_eq!(b.admit(k), Admission::Admit, "{k}");
            b.started(k);
        }
        assert_eq!(b.admit("e4"), Admission::Wait, "300 + 2 × 200 + 200 > 850");
    }

    #[test]
    fn a_resumed_ledger_continues_within_what_remains() {
        let prior = Ledger {
            spent_usd: 0.9,
            episodes: 3,
            max_episode_usd: 0.3,
            ..Ledger::default()
        };
        let b = Budget::new(Some(1.0), None, Prices::default(), prior.clone());
        assert!(matches!(b.admit("x"), Admission::Stop(_)), "0.1 left < 0.3");
        let mut b = Budget::new(Some(1.5), None, Prices::default(), prior);
        assert_eq!(b.admit("x"), Admission::Admit);
        b.started("x");
        b.finished_here = 2;
        assert_eq!(b.admit("y"), Admission::Admit);
        b.started("y");
        assert_eq!(b.admit("z"), Admission::Wait);
        let unlimited = Budget::new(None, None, Prices::default(), Ledger::default());
        assert_eq!(unlimited.admit("x"), Admission::Admit);
    }

    #[test]
    fn a_ledger_below_the_records_is_recomputed_from_them() {
        let recorded = Ledger {
            spent_usd: 0.5,
            spent_tokens: 5000,
            episodes: 10,
            max_episode_usd: 0.1,
            max_episode_tokens: 900,
            ..Ledger::default()
        };
        for tampered in [
            Ledger {
                spent_usd: -100.0,
                ..recorded.clone()
            },
            Ledger::default(),
            Ledger {
                spent_tokens: 10,
                ..recorded.clone()
            },
        ] {
            let mut b = Budget::new(Some(1.0), None, Prices::default(), tampered);
            let why = b.reconcile(&recorded).expect("refused");
            assert!(why.contains("disagrees with the records"), "{why}");
            assert_eq!(b.ledger.spent_tokens, 5000);
            assert_eq!(b.ledger.spent_usd, 0.5);
            assert_eq!(b.ledger.limit_usd, Some(1.0));
        }
        // Agreeing (dollars at the prices of their day kept), nothing changes.
        let kept = Ledger {
            spent_usd: 0.7,
            ..recorded.clone()
        };
        let mut b = Budget::new(Some(1.0), None, Prices::default(), kept);
        assert_eq!(b.reconcile(&recorded), None);
        assert_eq!(b.ledger.spent_usd, 0.7);
    }
}
