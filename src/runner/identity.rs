//! A run's identity: every setting that can change an episode's outcome, recorded in the
//! run's manifest (`run.json`) and compared on every rerun into the same folder, so
//! episodes recorded under other settings are never reused or mixed into one table.
//!
//! Per-episode data (the suite's files, the attack template) is fingerprinted on each
//! record instead (see `check_fresh` in the runner); this holds what the whole run shares.

use sha2::{Digest, Sha256};

use sieve_record::RunSettings;

/// A short content hash for identity fields.
pub fn short_hash(bytes: &[u8]) -> String {
    crate::digest::hex(&Sha256::digest(bytes)[..8])
}

/// A short hash of the whole identity: `run.json`'s `identity`, over the settings'
/// serialised form (field by field, so adding a setting with a default keeps old
/// folders' hashes comparable by their settings, not by a debug string).
pub fn fingerprint(settings: &RunSettings) -> String {
    short_hash(
        serde_json::to_string(settings)
            .expect("settings serialise")
            .as_bytes(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Settings as an older `run.json` holds them (no `extra`).
    fn settings() -> RunSettings {
        serde_json::from_value(json!({
            "harness_version": "0.1.0", "agent": {"name": "sim:obedient"},
            "planner": null, "judge": null, "embedder": "lexical", "max_steps": 30,
            "defense_config": "abc", "system_prompts": {"s/a": "1"}
        }))
        .unwrap()
    }

    #[test]
    fn the_fingerprint_follows_every_setting_and_nothing_else() {
        let a = settings();
        let h = fingerprint(&a);
        assert_eq!(h.len(), 16);
        assert!(h.bytes().all(|b| b.is_ascii_hexdigit()), "{h}");
        assert_eq!(
            fingerprint(&a.clone()),
            h,
            "the same settings, the same identity"
        );
        let mut b = a.clone();
        b.extra.insert("tool_descriptions".into(), json!("lure"));
        assert_ne!(fingerprint(&b), h);
        let mut c = a;
        c.max_steps = 31;
        assert_ne!(fingerprint(&c), h);
    }
}
