//! What each row of a report covers, so rows of unequal coverage are never pooled as if
//! they were alike (issue 40 item 2). Runs given to `report` together (or one run of
//! a plugin beside another's rows) may cover different suites, or different tasks and
//! seeds of the same suites. Then:
//! - a summary row pooling "every suite" is labelled `all` only when it covers every
//!   suite its attack reached in any row; otherwise it names its suites (joined by `+`),
//!   or, when that is one suite, it is left out (the suite's own row is that figure);
//! - the pooled tables and figures (main, per attack, ablation, efficiency, why, the
//!   trade-off and cost figures) pool only the suites every defense × model ran, and
//!   say so; rows that ran different numbers of episodes on those suites (other tasks
//!   or seeds) are named with their episode counts.

use crate::aggregate::metrics::{ALL_SUITES, Row};
use std::collections::{BTreeMap, BTreeSet};

/// The suites of each row's per-suite rows, by (attack, defense, model).
fn suites_by(rows: &[Row]) -> BTreeMap<(&str, &str, &str), BTreeSet<&str>> {
    let mut by: BTreeMap<(&str, &str, &str), BTreeSet<&str>> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.suite != ALL_SUITES) {
        by.entry((&r.attack, &r.defense, &r.model))
            .or_default()
            .insert(&r.suite);
    }
    by
}

/// Relabels the summary's every-suite rows that cover fewer suites than their attack
/// reached in other rows: the suites they pool, joined by `+`; one suite: dropped.
pub fn label_subsets(rows: &mut Vec<Row>) {
    let by = suites_by(rows);
    let mut reached: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for ((a, _, _), s) in &by {
        reached.entry(a).or_default().extend(s.iter().copied());
    }
    let labels: Vec<Option<Option<String>>> = rows
        .iter()
        .map(|r| {
            if r.suite != ALL_SUITES {
                return None;
            }
            let mine = by.get(&(r.attack.as_str(), r.defense.as_str(), r.model.as_str()))?;
            let all = reached.get(r.attack.as_str())?;
            if mine.len() == all.len() {
                return None;
            }
            Some((mine.len() > 1).then(|| mine.iter().copied().collect::<Vec<_>>().join("+")))
        })
        .collect();
    let mut keep = labels.into_iter();
    rows.retain_mut(|r| match keep.next().flatten() {
        None => true,
        Some(None) => false,
        Some(Some(label)) => {
            r.suite = label;
            true
        }
    });
}

/// What the pooled views may pool: the suites every defense × model ran (`None`: all
/// of them, coverage being equal), and the note the pooled tables and figures carry.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Shared {
    pub suites: Option<BTreeSet<String>>,
    pub note: Option<String>,
}

/// A row of the pooled views: its defense and model.
type RowKey<'a> = (&'a str, &'a str);

/// The coverage of the summary's per-suite rows: which suites the pooled views may use,
/// and what to say about it.
pub fn shared(rows: &[Row]) -> Shared {
    let mut suites: BTreeMap<(&str, &str), BTreeSet<&str>> = BTreeMap::new();
    // Per (defense, model) and suite: attacked episodes over its attacks, and the clean
    // episodes (repeated on every attack's row of the suite: counted once).
    let mut counts: BTreeMap<RowKey<'_>, BTreeMap<&str, (u64, u64)>> = BTreeMap::new();
    for r in rows
        .iter()
        .filter(|r| r.suite != ALL_SUITES && !r.suite.contains('+'))
    {
        suites
            .entry((&r.defense, &r.model))
            .or_default()
            .insert(&r.suite);
        let c = counts
            .entry((&r.defense, &r.model))
            .or_default()
            .entry(&r.suite)
            .or_default();
        c.0 += r.n_attacked;
        c.1 = c.1.max(r.n_clean);
    }
    let episodes: BTreeMap<RowKey<'_>, BTreeMap<&str, u64>> = counts
        .into_iter()
        .map(|(k, by)| (k, by.into_iter().map(|(s, (a, c))| (s, a + c)).collect()))
        .collect();
    if suites.len() < 2 {
        return Shared::default();
    }
    let union: BTreeSet<&str> = suites.values().flatten().copied().collect();
    let common: BTreeSet<&str> = suites.values().skip(1).fold(
        suites.values().next().cloned().unwrap_or_default(),
        |acc, s| acc.intersection(s).copied().collect(),
    );
    let name = |(d, m): &(&str, &str)| format!("{d} ({m})");
    let mut notes = Vec::new();
    let mut pooled = None;
    if common.len() < union.len() {
        if common.is_empty() {
            let each: Vec<String> = suites
                .iter()
                .map(|(k, s)| {
                    format!(
                        "{}: {}",
                        name(k),
                        s.iter().copied().collect::<Vec<_>>().join(", ")
                    )
                })
                .collect();
            notes.push(format!(
                "UNEQUAL COVERAGE: no suite is common to every row, so each row pools only its own suites and the rows are not comparable: {}.",
                each.join("; ")
            ));
        } else {
            notes.push(format!(
                "UNEQUAL COVERAGE: the rows ran different suites; pooled over the {} suite(s) every row ran ({}), {} of {}; the per-suite table has the rest.",
                common.len(),
                common.iter().copied().collect::<Vec<_>>().join(", "),
                common.len(),
                union.len()
            ));
            pooled = Some(common.iter().map(|s| s.to_string()).collect());
        }
    }
    // On the shared suites, unequal episode counts mean other tasks, injection tasks or
    // seeds: say which rows ran how many.
    let counts: BTreeMap<String, u64> = episodes
        .iter()
        .map(|(k, by_suite)| {
            (
                name(k),
                by_suite
                    .iter()
                    .filter(|(s, _)| common.contains(*s))
                    .map(|(_, n)| n)
                    .sum(),
            )
        })
        .collect();
    let distinct: BTreeSet<u64> = counts.values().copied().collect();
    if !common.is_empty() && distinct.len() > 1 {
        let each: Vec<String> = counts.iter().map(|(k, n)| format!("{k} {n}")).collect();
        notes.push(format!(
            "UNEQUAL COVERAGE: on the suites they share the rows ran different numbers of episodes (other tasks, injection tasks or seeds), so their pooled figures are not over the same episodes: {}.",
            each.join(", ")
        ));
    }
    Shared {
        suites: pooled,
        note: (!notes.is_empty()).then(|| notes.join(" ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(suite: &str, attack: &str, defense: &str, n: u64) -> Row {
        Row {
            suite: suite.into(),
            attack: attack.into(),
            defense: defense.into(),
            model: "sim:obedient".into(),
            n_attacked: n,
            n_clean: n / 10,
            ..Row::default()
        }
    }

    /// A banking-only row beside rows over two suites: its every-suite row is not
    /// labelled `all` (one suite: dropped), and the pooled views keep banking only.
    #[test]
    fn a_subset_row_is_never_all_and_pooling_keeps_the_shared_suites() {
        let mut rows = vec![
            row("banking", "important", "none", 100),
            row("slack", "important", "none", 100),
            row(ALL_SUITES, "important", "none", 200),
            row("banking", "important", "plugin", 100),
            row(ALL_SUITES, "important", "plugin", 100),
        ];
        label_subsets(&mut rows);
        let all: Vec<&str> = rows
            .iter()
            .filter(|r| r.suite == ALL_SUITES)
            .map(|r| r.defense.as_str())
            .collect();
        assert_eq!(all, ["none"]);
        let s = shared(&rows);
        assert_eq!(
            s.suites,
            Some(["banking".to_string()].into_iter().collect())
        );
        assert!(s.note.unwrap().contains("every row ran (banking), 1 of 2"));
        // Equal coverage: nothing to say, nothing restricted.
        let equal = vec![
            row("banking", "important", "none", 100),
            row("banking", "important", "sieve", 100),
        ];
        assert_eq!(shared(&equal), Shared::default());
    }

    /// Rows over three suites beside one over two: its every-suite row names them.
    #[test]
    fn a_row_over_some_suites_names_them() {
        let mut rows = vec![
            row("a", "x", "none", 10),
            row("b", "x", "none", 10),
            row("c", "x", "none", 10),
            row(ALL_SUITES, "x", "none", 30),
            row("a", "x", "p", 10),
            row("b", "x", "p", 10),
            row(ALL_SUITES, "x", "p", 20),
        ];
        label_subsets(&mut rows);
        assert!(rows.iter().any(|r| r.defense == "p" && r.suite == "a+b"));
        // Same suites, other task counts: named with their episodes.
        let rows = vec![row("a", "x", "none", 10), row("a", "x", "p", 30)];
        let note = shared(&rows).note.unwrap();
        assert!(note.contains("different numbers of episodes"), "{note}");
    }
}
