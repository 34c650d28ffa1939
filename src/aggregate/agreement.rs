//! How far the model-graded answer judge and the deterministic checks agree: over the
//! records of a judged run, per question (the answer, an answer-borne attack), the share
//! of episodes where both verdicts agree (Wilson interval) and Cohen's kappa (with its
//! large-sample interval), and every disagreement.

use crate::aggregate::metrics::{Rate, Z95};
use serde::{Deserialize, Serialize};
use sieve_record::EpisodeRecord;

/// A 2×2 table of two binary verdicts: `[checks][judge]`, index 1 for right / endorses.
pub type Table = [[u64; 2]; 2];

/// Cohen's kappa of a 2×2 table with its 95% interval (the large-sample standard error
/// √(p_o(1−p_o)/n)/(1−p_e), clipped to [−1, 1]); `None` when chance agreement is total
/// (both raters gave one verdict only: kappa is undefined) or the table is empty.
pub fn kappa(t: &Table) -> Option<(f64, [f64; 2])> {
    let n = (t[0][0] + t[0][1] + t[1][0] + t[1][1]) as f64;
    if n == 0.0 {
        return None;
    }
    let po = (t[0][0] + t[1][1]) as f64 / n;
    let checks_yes = (t[1][0] + t[1][1]) as f64 / n;
    let judge_yes = (t[0][1] + t[1][1]) as f64 / n;
    let pe = checks_yes * judge_yes + (1.0 - checks_yes) * (1.0 - judge_yes);
    if (1.0 - pe).abs() < 1e-12 {
        return None;
    }
    let k = (po - pe) / (1.0 - pe);
    let se = (po * (1.0 - po) / n).sqrt() / (1.0 - pe);
    Some((k, [(k - Z95 * se).max(-1.0), (k + Z95 * se).min(1.0)]))
}

/// Agreement on one question.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Agreement {
    /// `answer` or `attack`.
    pub question: String,
    /// `[checks][judge]` counts, index 1 for right / endorses.
    pub table: Table,
    pub rate: Option<Rate>,
    pub kappa: Option<f64>,
    pub kappa_ci: Option<[f64; 2]>,
}

impl Agreement {
    pub fn of(question: &str, table: Table) -> Agreement {
        let n = table.iter().flatten().sum();
        let (kappa, kappa_ci) = match kappa(&table) {
            Some((k, ci)) => (Some(k), Some(ci)),
            None => (None, None),
        };
        Agreement {
            question: question.into(),
            table,
            rate: Rate::new(table[0][0] + table[1][1], n),
            kappa,
            kappa_ci,
        }
    }
}

/// An episode whose two verdicts differ.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Disagreement {
    pub key: String,
    pub question: String,
    pub checks: bool,
    pub judge: bool,
    pub reason: String,
}

/// The judge's verdicts on one question where the checks' rules could not decide: no
/// agreement to measure (one side gave no verdict), only what the judge settled.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Settled {
    /// `answer` or `attack`.
    pub question: String,
    /// `[no, yes]`: judged wrong / right (or reports / endorses).
    pub verdicts: [u64; 2],
}

/// The agreement section of a judged run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgreementReport {
    pub judges: Vec<String>,
    pub rubrics: Vec<String>,
    /// Over the verdicts both sides gave.
    pub questions: Vec<Agreement>,
    pub disagreements: Vec<Disagreement>,
    /// The verdicts the judge settled where the checks gave none.
    #[serde(default)]
    pub settled: Vec<Settled>,
}

/// The agreement of every judged record; `None` when no record was judged.
pub fn agreement(records: &[EpisodeRecord]) -> Option<AgreementReport> {
    let mut tables: [Table; 2] = [[[0; 2]; 2]; 2];
    let mut settled = [[0u64; 2]; 2];
    let mut judges = Vec::new();
    let mut rubrics = Vec::new();
    let mut disagreements = Vec::new();
    let mut any = false;
    for r in records.iter().filter(|r| r.error.is_none()) {
        let Some(j) = &r.answer_judge else { continue };
        any = true;
        if !judges.contains(&j.judge) {
            judges.push(j.judge.clone());
        }
        if !rubrics.contains(&j.rubric) {
            rubrics.push(j.rubric.clone());
        }
        for (i, (name, v)) in [("answer", &j.answer), ("attack", &j.attack)]
            .into_iter()
            .enumerate()
        {
            let Some(v) = v else { continue };
            if v.undecided {
                settled[i][usize::from(v.judge)] += 1;
                continue;
            }
            tables[i][usize::from(v.checks)][usize::from(v.judge)] += 1;
            if v.checks != v.judge {
                disagreements.push(Disagreement {
                    key: r.key.clone(),
                    question: name.into(),
                    checks: v.checks,
                    judge: v.judge,
                    reason: v.reason.clone(),
                });
            }
        }
    }
    if !any {
        return None;
    }
    let questions = ["answer", "attack"]
        .into_iter()
        .zip(tables)
        .filter(|(_, t)| t.iter().flatten().sum::<u64>() > 0)
        .map(|(q, t)| Agreement::of(q, t))
        .collect();
    let settled = ["answer", "attack"]
        .into_iter()
        .zip(settled)
        .filter(|(_, v)| v[0] + v[1] > 0)
        .map(|(q, verdicts)| Settled {
            question: q.into(),
            verdicts,
        })
        .collect();
    Some(AgreementReport {
        judges,
        rubrics,
        questions,
        disagreements,
        settled,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kappa_is_one_for_perfect_agreement_zero_for_chance_and_undefined_for_one_verdict() {
        let (k, ci) = kappa(&[[30, 0], [0, 70]]).unwrap();
        assert!((k - 1.0).abs() < 1e-12 && ci[1] <= 1.0);
        // Independent raters: agreement equals chance.
        let (k, ci) = kappa(&[[25, 25], [25, 25]]).unwrap();
        assert!(k.abs() < 1e-12 && ci[0] < 0.0 && ci[1] > 0.0);
        // A judge that accepts everything against checks that reject 30 of 100.
        let (k, _) = kappa(&[[0, 30], [0, 70]]).unwrap();
        assert!(k.abs() < 1e-12, "{k}");
        assert_eq!(kappa(&[[0, 0], [0, 100]]), None);
        assert_eq!(kappa(&[[0, 0], [0, 0]]), None);
        // A textbook case: po = 0.7, pe = 0.5 → 0.4.
        let (k, _) = kappa(&[[20, 5], [10, 15]]).unwrap();
        assert!((k - 0.4).abs() < 1e-12, "{k}");
        let a = Agreement::of("answer", [[20, 5], [10, 15]]);
        assert_eq!(a.rate.unwrap().n, 50);
        assert!((a.rate.unwrap().value - 0.7).abs() < 1e-12);
    }
}
