//! Quality models for the scripted backend's non-agent roles (detectors, judges,
//! planners of the baseline defenses).
//!
//! A simulated classifier does not look up the right answer and return it: it draws a
//! continuous score whose separation between positive and negative items has a stated
//! ROC AUC (`judge_auc`), so it errs at a rate a reader can read off the row label. A
//! simulated planner keeps each step of the user task's reference plan with probability
//! `planner_recall`. `judge_auc=1` with `planner_recall=1` is the oracle, and every row
//! run with it says so. All draws come from the episode's seed and the item's key.

use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};

/// Default separation of a simulated classifier: good, not perfect. About 12% false
/// positives and 12% misses at the 0.5 threshold.
pub const DEFAULT_JUDGE_AUC: f64 = 0.95;
/// Default recall of a simulated planner: it finds every step of the reference plan.
pub const DEFAULT_PLANNER_RECALL: f64 = 1.0;

/// The knobs, as parsed from a `sim:` profile.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RoleQuality {
    pub judge_auc: f64,
    pub planner_recall: f64,
}

impl Default for RoleQuality {
    fn default() -> Self {
        RoleQuality {
            judge_auc: DEFAULT_JUDGE_AUC,
            planner_recall: DEFAULT_PLANNER_RECALL,
        }
    }
}

/// FNV-1a: stable across Rust versions, so seeded choices reproduce everywhere.
pub fn stable_hash(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

fn rng(seed: u64, key: &str) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed ^ stable_hash(key).rotate_left(17))
}

/// The inverse of the standard normal CDF (Acklam's rational approximation, relative
/// error within 2e-5 over the range used), for turning an AUC into a separation.
pub fn probit(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969683028665376e1,
        2.209460984245205e2,
        -2.759285104469687e2,
        1.38357751867269e2,
        -3.066479806614716e1,
        2.506628277459239,
    ];
    const B: [f64; 5] = [
        -5.447609879822406e1,
        1.615858368580409e2,
        -1.556989798598866e2,
        6.680131188771972e1,
        -1.328068155288572e1,
    ];
    const C: [f64; 6] = [
        -7.784894002430293e-3,
        -3.223964580411365e-1,
        -2.400758277161838,
        -2.549671010228496,
        4.374664141464968,
        2.938163982698783,
    ];
    const D: [f64; 4] = [
        7.784695709041462e-3,
        3.224671290700398e-1,
        2.445134137142996,
        3.754408661907416,
    ];
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < 0.02425 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.02425 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

/// A score in [0,1] for an item whose true class is `positive`, from a classifier of
/// ROC AUC `auc`: a latent normal shifted by ±d/2 with d = √2·Φ⁻¹(auc), squashed by the
/// logistic. At AUC 1 the score is exactly 1 or 0; at 0.5 it is independent of the class.
pub fn score(auc: f64, positive: bool, seed: u64, key: &str) -> f64 {
    if auc >= 1.0 {
        return if positive { 1.0 } else { 0.0 };
    }
    let d = std::f64::consts::SQRT_2 * probit(auc.max(0.5));
    let mut r = rng(seed, key);
    // Box–Muller.
    let (u1, u2): (f64, f64) = (r.random::<f64>().max(f64::MIN_POSITIVE), r.random());
    let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
    let latent = z + if positive { d / 2.0 } else { -d / 2.0 };
    1.0 / (1.0 + (-latent).exp())
}

/// Whether a planner of recall `recall` keeps the item with this key.
pub fn keeps(recall: f64, seed: u64, key: &str) -> bool {
    recall >= 1.0 || rng(seed, key).random::<f64>() < recall
}

/// Rounds a score to the nearest of `levels + 1` evenly spaced values (`levels` = 2 gives
/// 0, 0.5, 1), for prompts that ask for a coarse scale; 0 keeps two decimals.
pub fn quantise(score: f64, levels: u32) -> f64 {
    if levels == 0 {
        (score * 100.0).round() / 100.0
    } else {
        (score * levels as f64).round() / levels as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probit_matches_known_quantiles() {
        assert!((probit(0.975) - 1.959964).abs() < 1e-5);
        assert!((probit(0.5)).abs() < 1e-12);
        assert!((probit(0.01) + 2.326348).abs() < 2e-5);
    }

    /// The empirical AUC of drawn scores is the stated one.
    #[test]
    fn scores_have_the_stated_auc() {
        for auc in [0.6, 0.8, 0.95] {
            let pos: Vec<f64> = (0..600)
                .map(|i| score(auc, true, i, &format!("p{i}")))
                .collect();
            let neg: Vec<f64> = (0..600)
                .map(|i| score(auc, false, i, &format!("n{i}")))
                .collect();
            let wins: f64 = pos
                .iter()
                .flat_map(|p| neg.iter().map(move |n| if p > n { 1.0 } else { 0.0 }))
                .sum();
            let measured = wins / (pos.len() * neg.len()) as f64;
            assert!((measured - auc).abs() < 0.03, "auc {auc}: {measured}");
        }
        assert_eq!(score(1.0, true, 3, "x"), 1.0);
        assert_eq!(score(1.0, false, 3, "x"), 0.0);
        assert_eq!(score(0.9, true, 3, "x"), score(0.9, true, 3, "x"));
    }

    #[test]
    fn recall_keeps_the_stated_share() {
        let kept = (0..4000).filter(|i| keeps(0.7, *i, "k")).count();
        assert!((2650..2950).contains(&kept), "{kept}");
        assert!((0..50).all(|i| keeps(1.0, i, "k")));
        assert_eq!(quantise(0.74, 2), 0.5);
        assert_eq!(quantise(0.76, 2), 1.0);
        assert_eq!(quantise(0.123, 0), 0.12);
    }
}
