//! Whether a gate's rows have the episodes to resolve the threshold it asks.
//!
//! `compare --max-asr-increase 1.0` on a row of 25 attacked episodes cannot tell a rise of
//! one point from noise: one episode is four points. A row is *sufficient* for a threshold
//! of `d` points when a one-sided test at level α (`--significance`, else 0.05) of two
//! independent proportions has at least 80% power to detect a change of exactly `d`
//! from the base run's rate, with the same number of independent episodes in each run
//! (Fleiss's sample size, without continuity correction):
//!
//! ```text
//! n = ( z_{1-α} · √(2 p̄ (1 − p̄)) + z_{power} · √(p₀(1 − p₀) + p₁(1 − p₁)) )² / d²
//! ```
//!
//! with p₀ the base rate, p₁ = p₀ + d (a rise of ASR; a drop of UA or BU is the same rise
//! of 1 − rate), and p̄ their mean. The episodes a row has are counted as independent
//! clusters: repeats of one task pair over seeds are not new evidence, so a row's count
//! is its episodes divided by its seeds. A threshold of 0 asks for any rise at all, which
//! every row resolves (a rise is at least one episode), so it needs no power. A rise the
//! base rate leaves no room for (p₀ + d > 1) can never happen, so it needs none either.

use crate::model::sim_roles::phi_inv;

/// The power a sufficient row must have against a change of exactly the threshold.
pub const POWER: f64 = 0.8;
/// The test level when `--significance` is not given.
pub const DEFAULT_ALPHA: f64 = 0.05;

/// Independent episodes each run needs to detect a rise of `d` (a fraction) from base
/// rate `p0` with a one-sided level-`alpha` test at power [`POWER`]. `None` when no
/// episode count is needed (`d` is 0, or the rise is impossible).
pub fn episodes_needed(p0: f64, d: f64, alpha: f64) -> Option<u64> {
    let p0 = p0.clamp(0.0, 1.0);
    if d <= 1e-12 || p0 + d > 1.0 + 1e-12 {
        return None;
    }
    let p1 = (p0 + d).min(1.0);
    let mean = 0.5 * (p0 + p1);
    let z_a = phi_inv(1.0 - alpha);
    let z_b = phi_inv(POWER);
    let root =
        z_a * (2.0 * mean * (1.0 - mean)).sqrt() + z_b * (p0 * (1.0 - p0) + p1 * (1.0 - p1)).sqrt();
    Some(((root * root) / (d * d)).ceil().max(1.0) as u64)
}

/// One gated metric of a row that lacks the episodes its threshold needs.
#[derive(Clone, Debug, PartialEq)]
pub struct Shortfall {
    /// `ASR`, `UA`, `BU`.
    pub metric: &'static str,
    /// The threshold, in points.
    pub threshold: f64,
    pub needed: u64,
    /// Independent episodes in the smaller of the two rows.
    pub have: u64,
}

impl std::fmt::Display for Shortfall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} threshold {} pts needs at least {} independent episodes per run, the rows have {}",
            self.metric, self.threshold, self.needed, self.have
        )
    }
}

/// The check of one metric: `base` the base run's rate (`None`: unknown, then the least
/// favourable 0.5), `rise` whether the gate watches a rise (ASR) or a drop (UA, BU),
/// `threshold` in points, `have` the independent episodes of the smaller row.
pub fn check(
    metric: &'static str,
    base: Option<f64>,
    rise: bool,
    threshold: f64,
    have: u64,
    alpha: f64,
) -> Option<Shortfall> {
    let p = base.unwrap_or(0.5);
    let p0 = if rise { p } else { 1.0 - p };
    let needed = episodes_needed(p0, threshold / 100.0, alpha)?;
    (have < needed).then_some(Shortfall {
        metric,
        threshold,
        needed,
        have,
    })
}

/// Independent episodes of a row: its count divided by its seeds (repeats of a task pair
/// over seeds are one cluster).
pub fn independent(n: u64, seeds: u64) -> u64 {
    n / seeds.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Textbook figures: detecting 0.5 → 0.6 with 80% power needs 388 per group
    /// two-sided at α = 0.05 (z = 1.96), 305 one-sided (z = 1.645).
    #[test]
    fn sample_sizes_match_the_textbook_formula() {
        let n = episodes_needed(0.5, 0.1, 0.05).unwrap();
        assert!((304..=306).contains(&n), "{n}");
        let two_sided = episodes_needed(0.5, 0.1, 0.025).unwrap();
        assert!((387..=389).contains(&two_sided), "{two_sided}");
        // A one-point rise from 0 needs hundreds of episodes; from 20% thousands.
        let from_zero = episodes_needed(0.0, 0.01, 0.05).unwrap();
        assert!((550..=700).contains(&from_zero), "{from_zero}");
        let from_20 = episodes_needed(0.2, 0.01, 0.05).unwrap();
        assert!(from_20 > 15_000, "{from_20}");
        // A stricter level needs more.
        assert!(
            episodes_needed(0.2, 0.05, 0.01).unwrap() > episodes_needed(0.2, 0.05, 0.05).unwrap()
        );
    }

    /// The table in docs/models.md and docs/real-model-runs.md ("How many episodes a gate
    /// needs"): rows are thresholds in points, columns base rates.
    #[test]
    fn the_documented_table_is_what_the_gate_computes() {
        let table: [(f64, [u64; 4]); 5] = [
            (1.0, [615, 6426, 20151, 30909]),
            (2.0, [305, 1743, 5128, 7725]),
            (5.0, [120, 343, 862, 1233]),
            (10.0, [58, 111, 231, 305]),
            (20.0, [27, 39, 64, 74]),
        ];
        for (d, row) in table {
            for (p0, want) in [0.0, 0.05, 0.2, 0.5].into_iter().zip(row) {
                let got = episodes_needed(p0, d / 100.0, DEFAULT_ALPHA).unwrap();
                assert!(
                    got.abs_diff(want) <= 1,
                    "{d} pts from {p0}: {got}, documented {want}"
                );
            }
        }
    }

    #[test]
    fn zero_thresholds_and_impossible_rises_need_nothing() {
        assert_eq!(episodes_needed(0.3, 0.0, 0.05), None);
        assert_eq!(episodes_needed(0.995, 0.01, 0.05), None);
        assert_eq!(check("ASR", Some(0.2), true, 0.0, 1, 0.05), None);
    }

    /// The issue's example: an ASR rise of 1 point on 25 episodes cannot be resolved.
    #[test]
    fn twenty_five_episodes_cannot_resolve_one_point() {
        let s = check("ASR", Some(0.0), true, 1.0, 25, 0.05).unwrap();
        assert_eq!((s.metric, s.have), ("ASR", 25));
        assert!(s.needed > 25);
        assert!(s.to_string().contains("needs at least"), "{s}");
        // A drop of utility from 100% is the same as a rise from 0.
        let u = check("BU", Some(1.0), false, 1.0, 25, 0.05).unwrap();
        assert_eq!(u.needed, s.needed);
        // Enough episodes resolve it.
        assert_eq!(check("ASR", Some(0.0), true, 1.0, s.needed, 0.05), None);
        assert_eq!(independent(100, 4), 25);
    }
}
