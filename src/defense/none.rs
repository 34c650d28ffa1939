//! `none`: the undefended agent, the baseline every defense is measured against.

use super::{BuildError, BuildOptions, Entry, no_variant};
use super::{Defense, EpisodeDefense};
use sieve_record::Component;
use std::sync::Arc;

pub struct NoDefense;

struct NoEpisode;

impl EpisodeDefense for NoEpisode {}

/// How `list defenses` describes this defense and how `--defense none` builds it: its
/// line of [`super::REGISTRY`].
pub const ENTRY: Entry = Entry {
    name: "none",
    variants: "",
    mechanism: "the undefended agent",
    source: "baseline",
    sim_caveat: None,
    in_all: true,
    detector_model: Component::Judge,
    build: build_defense,
};

/// Builds this defense, which takes no variant.
fn build_defense(variant: Option<&str>, _: &BuildOptions) -> Result<Arc<dyn Defense>, BuildError> {
    no_variant(ENTRY.name, variant)?;
    Ok(Arc::new(NoDefense))
}

impl Defense for NoDefense {
    fn name(&self) -> &str {
        ENTRY.name
    }
    fn episode(&self) -> Box<dyn EpisodeDefense> {
        Box::new(NoEpisode)
    }
}
