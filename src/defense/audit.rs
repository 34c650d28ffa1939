//! `audit`: SIEVE's adjudicator on every proposed call, with no planner and no layer 1 —
//! the always-on semantic audit the paper compares against. It shares the adjudicator,
//! weights, trust and risk tables with `sieve` (see [`super::sieve`]), so the two differ
//! only in which calls reach the judge.

use super::sieve::config::{SieveConfig, Weights};
use super::sieve::{Mode, SieveDefense};
use std::sync::Arc;

/// Builds `audit` with the config's default weight set (or an ad-hoc one).
pub fn audit(config: Arc<SieveConfig>, weights: Option<Weights>) -> SieveDefense {
    SieveDefense::new(Mode::Audit, config, None, weights).expect("the default variant exists")
}
