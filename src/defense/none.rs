//! `none`: the undefended agent, the baseline every defense is measured against.

use super::{Defense, EpisodeDefense};

pub struct NoDefense;

struct NoEpisode;

impl EpisodeDefense for NoEpisode {}

impl Defense for NoDefense {
    fn name(&self) -> &str {
        "none"
    }
    fn episode(&self) -> Box<dyn EpisodeDefense> {
        Box::new(NoEpisode)
    }
}
