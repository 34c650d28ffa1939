//! What a results folder has spent, as `run.json` keeps it across resumes and `merge`
//! sums it over shards. The caps and the admission of episodes against them are the
//! harness's (its runner's budget); this is the account.

use serde::{Deserialize, Serialize};

/// What a folder has spent, in `run.json`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Ledger {
    /// Dollars at the prices in force when each episode ran (0 for roles without one).
    pub spent_usd: f64,
    /// Prompt and completion tokens of every role, embeddings included.
    pub spent_tokens: u64,
    /// Episodes charged (errored and rerun ones each time they ran).
    pub episodes: u64,
    /// The most one episode has cost: the bound admission uses for the next one.
    pub max_episode_usd: f64,
    /// The most tokens one episode has cost.
    pub max_episode_tokens: u64,
    /// Some charged tokens were counted locally (a reply without `usage`, or a scripted
    /// role): the ledger is an estimate to that extent.
    #[serde(default)]
    pub estimated: bool,
    /// The caps of the last invocation that gave any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_usd: Option<f64>,
    /// The token cap of the last invocation that gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_tokens: Option<u64>,
}

impl Ledger {
    /// Charges one finished episode.
    pub fn charge(&mut self, usd: f64, tokens: u64, estimated: bool) {
        self.spent_usd += usd;
        self.spent_tokens += tokens;
        self.episodes += 1;
        self.max_episode_usd = self.max_episode_usd.max(usd);
        self.max_episode_tokens = self.max_episode_tokens.max(tokens);
        self.estimated |= estimated;
    }

    /// Adds another folder's ledger (a shard's, when merging).
    pub fn add(&mut self, o: &Ledger) {
        self.spent_usd += o.spent_usd;
        self.spent_tokens += o.spent_tokens;
        self.episodes += o.episodes;
        self.max_episode_usd = self.max_episode_usd.max(o.max_episode_usd);
        self.max_episode_tokens = self.max_episode_tokens.max(o.max_episode_tokens);
        self.estimated |= o.estimated;
    }
}

#[cfg(test)]
mod tests {
    use super::Ledger;

    #[test]
    fn shard_ledgers_add_up() {
        let mut a = Ledger::default();
        a.charge(0.5, 100, false);
        let mut b = Ledger::default();
        b.charge(0.25, 300, true);
        a.add(&b);
        assert_eq!(
            (a.spent_tokens, a.episodes, a.max_episode_tokens),
            (400, 2, 300)
        );
        assert!(a.estimated && (a.spent_usd - 0.75).abs() < 1e-12);
    }
}
