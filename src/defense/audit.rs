//! `audit`: SIEVE's adjudicator on every proposed call, with no planner and no layer 1 —
//! the always-on semantic audit the paper compares against. It shares the adjudicator,
//! weights, trust and risk tables with `sieve` (see [`super::sieve`]), so the two differ
//! only in which calls reach the judge.

use super::sieve::config::{SieveConfig, Weights};
use super::sieve::{Mode, SieveDefense};
use super::{BuildError, BuildOptions, Defense, Entry, no_variant};
use sieve_record::Component;
use std::sync::Arc;

/// Builds `audit` with the config's default weight set (or an ad-hoc one).
pub fn audit(config: Arc<SieveConfig>, weights: Option<Weights>) -> SieveDefense {
    SieveDefense::new(Mode::Audit, config, None, weights).expect("the default variant exists")
}

/// How `list defenses` describes this defense and how `--defense audit` builds it: its
/// line of [`super::REGISTRY`].
pub const ENTRY: Entry = Entry {
    name: "audit",
    variants: "",
    mechanism: "SIEVE's adjudicator on every proposed call (always-on semantic audit)",
    source: "SIEVE/CCA, arXiv 2512.06716",
    sim_caveat: None,
    in_all: true,
    detector_model: Component::Judge,
    build: build_defense,
};

/// Builds this defense, which takes no variant.
fn build_defense(
    variant: Option<&str>,
    opts: &BuildOptions,
) -> Result<Arc<dyn Defense>, BuildError> {
    no_variant(ENTRY.name, variant)?;
    Ok(Arc::new(audit(opts.sieve(), opts.weights)))
}
