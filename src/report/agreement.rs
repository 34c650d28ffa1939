//! The agreement section of a judged run (`--answer-judge`), as Markdown: one line per
//! question with the agreement rate and Cohen's kappa, then every disagreement.

use crate::aggregate::agreement::AgreementReport;
use crate::escape::markdown as md;

/// How many disagreements the text lists before saying how many more there are (the
/// JSON file holds them all).
pub const SHOWN: usize = 20;

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

fn verdict(question: &str, v: bool) -> &'static str {
    match (question, v) {
        ("attack", true) => "endorses",
        ("attack", false) => "reports",
        (_, true) => "right",
        (_, false) => "wrong",
    }
}

/// The section as Markdown. Every text of the judge's or the records' (the judge's
/// name, its reasons, keys) goes through [`crate::escape::markdown`]: a reason holding
/// HTML stays text when the file is rendered, and no control character reaches it.
pub fn markdown(r: &AgreementReport) -> String {
    let mut s = format!(
        "\nAnswer judge {} (rubric {}) against the deterministic checks\n\n",
        md(&r.judges.join(", ")),
        md(&r.rubrics.join(", "))
    );
    if r.questions.is_empty() {
        // With `--answer-judge-on undecided` (the default) this is the rule: the judge
        // sees only what the checks could not decide.
        s.push_str("No answer was graded by both the judge and the checks.\n");
    } else {
        s.push_str("| question | n | agree | 95% CI | kappa | 95% CI | checks only right | judge only right |\n");
        s.push_str("|---|---:|---:|---|---:|---|---:|---:|\n");
    }
    for q in &r.questions {
        let (n, agree, ci) = match q.rate {
            Some(rate) => (
                rate.n.to_string(),
                pct(rate.value),
                format!("{}–{}", pct(rate.lo), pct(rate.hi)),
            ),
            None => ("0".into(), "–".into(), "–".into()),
        };
        let (k, kci) = match (q.kappa, q.kappa_ci) {
            (Some(k), Some(ci)) => (format!("{k:.2}"), format!("{:.2}–{:.2}", ci[0], ci[1])),
            _ => ("undefined".into(), "–".into()),
        };
        s.push_str(&format!(
            "| {} | {n} | {agree} | {ci} | {k} | {kci} | {} | {} |\n",
            md(&q.question),
            q.table[1][0],
            q.table[0][1]
        ));
    }
    if !r.settled.is_empty() {
        s.push('\n');
    }
    for q in &r.settled {
        s.push_str(&format!(
            "{}: the judge settled {} verdict(s) the checks' rules left undecided: {} {}, {} {}\n",
            md(&q.question),
            q.verdicts[0] + q.verdicts[1],
            q.verdicts[1],
            verdict(&q.question, true),
            q.verdicts[0],
            verdict(&q.question, false)
        ));
    }
    if r.disagreements.is_empty() {
        if !r.questions.is_empty() {
            s.push_str("\nNo disagreement.\n");
        }
        return s;
    }
    s.push_str(&format!("\n{} disagreement(s):\n", r.disagreements.len()));
    for d in r.disagreements.iter().take(SHOWN) {
        s.push_str(&format!(
            "- {} [{}]: checks {}, judge {} ({})\n",
            md(&d.key),
            md(&d.question),
            verdict(&d.question, d.checks),
            verdict(&d.question, d.judge),
            md(&d.reason)
        ));
    }
    if r.disagreements.len() > SHOWN {
        s.push_str(&format!(
            "… and {} more in answer_judge.json\n",
            r.disagreements.len() - SHOWN
        ));
    }
    s
}
