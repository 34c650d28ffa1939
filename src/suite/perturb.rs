//! The generated perturbation corpus for answers. From a user task's typed facts
//! ([`super::facts`]) it renders correct answers (formats, units, orders, markdown, lists,
//! chatter before and after, Unicode variants, the lexicon's synonyms) and wrong ones (each
//! number off by one and by ten percent, two facts of one type swapped, another entity of
//! the same type from the environment, the verdict negated, a partial list, a distractor
//! given). `check-suites` requires every correct one to pass the task's utility check
//! after the reference plan and every wrong one to fail it. Nothing here is written for a
//! task: every rendering follows from the facts' types, values and `about`.

use super::facts::{Fact, FactValue, Kind, Reading, format_number, value_spans};
use super::lexicon::lexicon;
use super::meaning::{TENS, UNITS, fold};
use jiff::ToSpan;
use serde_json::Value;

/// One generated answer and what it varies.
#[derive(Clone, Debug)]
pub struct Rendering {
    pub text: String,
    pub why: String,
}

const CHATTER_BEFORE: &str = "Sure - here is what I found.\n\n";
const CHATTER_AFTER: &str = "\n\nLet me know if you need anything else.";

/// Ways to write a value that keep it the same value.
pub fn value_forms(kind: Kind, v: &FactValue) -> Vec<(String, &'static str)> {
    match v {
        FactValue::Number(n) => number_forms(kind, *n),
        FactValue::Date(d) => {
            let month = d.strftime("%B").to_string();
            vec![
                (d.to_string(), "ISO date"),
                (format!("{} {month}", d.day()), "day and month, no year"),
                (format!("{month} {}, {}", d.day(), d.year()), "month first"),
                (format!("{}th of {month}", d.day()), "ordinal"),
                (d.strftime("%d/%m/%Y").to_string(), "day-first numeric"),
                (d.strftime("%A, %-d %B %Y").to_string(), "with weekday"),
                (format!("{}.{}.", d.day(), d.month()), "numeric, no year"),
            ]
        }
        FactValue::Time(t) => {
            let (h, m) = (t.hour(), t.minute());
            let h12 = if h % 12 == 0 { 12 } else { h % 12 };
            let mer = if h < 12 { "am" } else { "pm" };
            vec![
                (format!("{h:02}:{m:02}"), "24-hour"),
                (format!("{h12}:{m:02} {mer}"), "12-hour"),
                (format!("{h}.{m:02}"), "with a point"),
                (format!("{h}h{m:02}"), "with h"),
                (
                    format!("{h12}:{m:02}{}", mer.to_uppercase()),
                    "12-hour, capitals",
                ),
            ]
        }
        FactValue::Duration(min) => {
            let mut out = vec![(format!("{} minutes", format_number(*min)), "minutes")];
            if min % 60.0 == 0.0 && *min < 1440.0 {
                out.push((format!("{} hours", format_number(min / 60.0)), "hours"));
                out.push((format!("{} h", format_number(min / 60.0)), "h"));
            }
            if min % 1440.0 == 0.0 {
                out.push((format!("{} days", format_number(min / 1440.0)), "days"));
            }
            out
        }
        FactValue::Text(s) if kind == Kind::Code => {
            let compact: String = s.chars().filter(|c| c.is_alphanumeric()).collect();
            vec![
                (s.clone(), "as written"),
                (compact, "without separators"),
                (s.to_lowercase(), "lower case"),
                (s.replace(['-', ' '], "\u{2011}"), "non-breaking hyphens"),
            ]
        }
        FactValue::Text(s) => {
            let mut out = vec![(s.clone(), "as written"), (s.to_uppercase(), "upper case")];
            let plain = fold(s);
            if plain != s.to_lowercase() {
                out.push((plain, "without accents or punctuation"));
            }
            if let Some(alt) = super::facts::name_variants(s).get(1) {
                out.push((alt.clone(), "a lexicon equivalent"));
            }
            out
        }
        FactValue::Items(_) | FactValue::Verdict(_) => Vec::new(),
    }
}

fn number_forms(kind: Kind, n: f64) -> Vec<(String, &'static str)> {
    let two = format!("{n:.2}");
    let plain = format_number(n);
    let mut out = vec![(plain.clone(), "plain")];
    let grouped = group_thousands(n, ',', '.');
    match kind {
        Kind::Amount => {
            out.push((format!("£{two}"), "currency sign"));
            out.push((format!("{grouped} EUR"), "thousands separator and code"));
            out.push((
                format!("EUR {}", group_thousands(n, '.', ',')),
                "German locale",
            ));
            out.push((
                group_thousands(n, '\u{202f}', ','),
                "French locale, narrow spaces",
            ));
            if n >= 1000.0 && ((n / 100.0).fract() == 0.0) {
                out.push((
                    format!("{}k", format_number(n / 1000.0)),
                    "thousands suffix",
                ));
            }
        }
        Kind::Number => {
            if n.fract() != 0.0 {
                out.push((plain.replace('.', ","), "decimal comma"));
            }
            out.push((format!("**{plain}**"), "bold"));
        }
        Kind::Count => {
            if let Some(w) = number_words(n) {
                out.push((w, "in words"));
            }
        }
        _ => {}
    }
    out
}

/// `n` with a thousands separator and a decimal mark (two decimals when it has a fraction).
fn group_thousands(n: f64, thousands: char, decimal: char) -> String {
    let whole = n.trunc().abs() as u64;
    let digits = whole.to_string();
    let mut grouped = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            grouped.push(thousands);
        }
        grouped.push(c);
    }
    let cents = ((n.abs() - n.abs().trunc()) * 100.0).round() as u64;
    if n.fract() != 0.0 {
        format!("{grouped}{decimal}{cents:02}")
    } else {
        grouped
    }
}

/// A whole number below a thousand in English words, from the words the reader parses.
pub fn number_words(n: f64) -> Option<String> {
    if n.fract() != 0.0 || !(0.0..1000.0).contains(&n) {
        return None;
    }
    let n = n as usize;
    let below_100 = |k: usize| match k {
        0..20 => UNITS[k].to_string(),
        _ if k.is_multiple_of(10) => TENS[k / 10 - 2].to_string(),
        _ => format!("{}-{}", TENS[k / 10 - 2], UNITS[k % 10]),
    };
    Some(match n {
        0..100 => below_100(n),
        _ if n.is_multiple_of(100) => format!("{} hundred", UNITS[n / 100]),
        _ => format!("{} hundred and {}", UNITS[n / 100], below_100(n % 100)),
    })
}

/// The label each fact's value is given under: its first `about` or what it answers,
/// whichever holds no fact's value or distractor (a label must not say the answer), else a
/// neutral "answer N".
fn labels(facts: &[Fact]) -> Vec<String> {
    let says_a_value = |text: &str| {
        let r = Reading::new(text);
        facts.iter().any(|f| {
            let kind = if f.kind == Kind::List {
                Kind::Entity
            } else {
                f.kind
            };
            !value_spans(&r, kind, &f.value, f.tol).is_empty()
                || f.distractors
                    .iter()
                    .any(|d| !value_spans(&r, kind, &d.value, f.tol).is_empty())
        })
    };
    facts
        .iter()
        .enumerate()
        .map(|(i, f)| {
            // An `about` is meant to name an entity, so the first stands when every one
            // does; what a fact answers is free text and is replaced when it says a value.
            f.about
                .iter()
                .chain(std::iter::once(&f.answers))
                .find(|c| !says_a_value(c))
                .or(f.about.first())
                .cloned()
                .unwrap_or_else(|| format!("answer {}", i + 1))
        })
        .collect()
}

/// How one fact is said, in one layout.
#[derive(Clone, Copy, PartialEq)]
enum Layout {
    /// "label: value"
    LabelFirst,
    /// "value (label)"
    ValueFirst,
}

/// A sentence stating a value written as `written` under label `l`.
fn clause(l: &str, written: &str, layout: Layout) -> String {
    match layout {
        Layout::LabelFirst => format!("{l}: {written}"),
        Layout::ValueFirst => format!("{written} ({l})"),
    }
}

/// Verdict sentences: explicit openers from the lexicon and implicit statements.
fn verdict_forms(f: &Fact, yes: bool) -> Vec<(String, &'static str)> {
    let lx = lexicon();
    let about = f.about.first().cloned().unwrap_or_default();
    let mut out = Vec::new();
    if f.opener {
        let list = if yes { &lx.yes } else { &lx.no };
        for p in list.iter().filter(|p| !p.text.starts_with("there")).take(4) {
            out.push((format!("{}.", capitalise(&p.text)), "lexicon opener"));
        }
        let first = if yes { "Yes" } else { "No" };
        out.push((format!("**{first}**."), "bold opener"));
        out.push((format!("{first}, probably."), "hedged"));
    }
    if yes {
        out.push((format!("It is {about}."), "stated"));
    } else {
        out.push((format!("It is not {about}."), "negated statement"));
        out.push((format!("It is never {about}."), "never"));
        if let Some((_, other)) = lx.sides_of(&about)
            && let Some(o) = other.first()
        {
            out.push((format!("It is {}.", o.text), "the opposite state"));
        }
    }
    out
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
        .unwrap_or_default()
}

/// A choice stated: plainly, by comparison, and by the opposite comparison (those two
/// only when the choice names its comparative in `about`).
fn choice_forms(f: &Fact, chosen: &str, other: &str) -> Vec<(String, &'static str)> {
    let Some(about) = f.about.first() else {
        return vec![
            (format!("{chosen}."), "named"),
            (format!("**{chosen}**."), "bold"),
        ];
    };
    let mut out = vec![
        (format!("{chosen} ({about})."), "named with its comparative"),
        (format!("{chosen} is {about} than {other}."), "comparison"),
    ];
    if let Some((_, opposite)) = lexicon().sides_of(about)
        && let Some(o) = opposite.first()
    {
        out.push((
            format!("{other} is {} than {chosen}.", o.text),
            "the opposite comparison",
        ));
    }
    out
}

/// A list said three ways.
fn list_forms(items: &[String]) -> Vec<(String, &'static str)> {
    let joined = match items.len() {
        1 => items[0].clone(),
        n => format!("{} and {}", items[..n - 1].join(", "), items[n - 1]),
    };
    vec![
        (joined, "inline list"),
        (format!("\n- {}\n", items.join("\n- ")), "bullets"),
        (items.join("; "), "semicolons"),
    ]
}

/// The plain correct sentence for a fact (the first form of each kind).
fn plain(f: &Fact, l: &str, layout: Layout) -> String {
    written(f, l, &f.value, layout)
        .into_iter()
        .next()
        .map(|(s, _)| s)
        .unwrap_or_default()
}

/// Every way of stating fact `f` as having `value`, under label `l`.
fn written(f: &Fact, l: &str, value: &FactValue, layout: Layout) -> Vec<(String, &'static str)> {
    match value {
        FactValue::Verdict(b) => verdict_forms(f, *b),
        FactValue::Items(items) => list_forms(items)
            .into_iter()
            .map(|(s, why)| (format!("{}.", clause(l, &s, layout)), why))
            .collect(),
        FactValue::Text(v) if f.kind == Kind::Choice => {
            let other = f
                .distractors
                .first()
                .map(|d| d.value.render())
                .unwrap_or_default();
            choice_forms(f, v, &other)
        }
        v => value_forms(f.kind, v)
            .into_iter()
            .map(|(s, why)| (format!("{}.", clause(l, &s, layout)), why))
            .collect(),
    }
}

/// Joins fact sentences into one answer.
fn answer(parts: &[String]) -> String {
    parts.join(" ")
}

/// The correct renderings of a set of facts.
pub fn correct(facts: &[Fact]) -> Vec<Rendering> {
    let mut out = Vec::new();
    let ls = labels(facts);
    for layout in [Layout::LabelFirst, Layout::ValueFirst] {
        let base: Vec<String> = facts
            .iter()
            .zip(&ls)
            .map(|(f, l)| plain(f, l, layout))
            .collect();
        let lname = if layout == Layout::LabelFirst {
            "label first"
        } else {
            "value first"
        };
        // Every form of each fact, the others plain.
        for (i, f) in facts.iter().enumerate() {
            for (form, why) in written(f, &ls[i], &f.value, layout).into_iter().skip(1) {
                let mut parts = base.clone();
                parts[i] = form;
                out.push(Rendering {
                    text: answer(&parts),
                    why: format!("{}: {why} ({lname})", f.answers),
                });
            }
        }
        let plain_text = answer(&base);
        out.push(Rendering {
            text: plain_text.clone(),
            why: format!("plain ({lname})"),
        });
        let mut reversed = base.clone();
        reversed.reverse();
        out.push(Rendering {
            text: answer(&reversed),
            why: format!("facts in reverse order ({lname})"),
        });
        out.push(Rendering {
            text: format!("{CHATTER_BEFORE}{plain_text}{CHATTER_AFTER}"),
            why: format!("chatter before and after ({lname})"),
        });
        out.push(Rendering {
            text: format!("- {}", base.join("\n- ")),
            why: format!("as a bulleted list ({lname})"),
        });
        out.push(Rendering {
            text: plain_text
                .replace(' ', "\u{a0}")
                .replace('-', "\u{2011}")
                .replace('\'', "\u{2019}"),
            why: format!("no-break spaces, non-breaking hyphens, curly apostrophes ({lname})"),
        });
    }
    out
}

/// Values of other facts and their distractors, which a wrong rendering must not
/// accidentally reuse.
fn taken(facts: &[Fact]) -> Vec<FactValue> {
    facts
        .iter()
        .flat_map(|f| {
            std::iter::once(f.value.clone()).chain(f.distractors.iter().map(|d| d.value.clone()))
        })
        .collect()
}

/// Wrong values for one fact: off by one and by ten percent, a day or a month off, an hour
/// off, a code with a digit changed, another entity of its type, the verdict negated.
fn wrong_values(
    f: &Fact,
    others: &[FactValue],
    siblings_in_env: &[String],
) -> Vec<(FactValue, String)> {
    let mut out: Vec<(FactValue, String)> = Vec::new();
    match &f.value {
        FactValue::Number(n) => {
            let decimals = format_number(*n).split('.').nth(1).map_or(0, str::len) as i32;
            let round = |x: f64| (x * 10f64.powi(decimals)).round() / 10f64.powi(decimals);
            for (x, why) in [
                (n + 1.0, "one more"),
                (n - 1.0, "one less"),
                (round(n * 1.1), "ten percent more"),
                (round(n * 0.9), "ten percent less"),
            ] {
                if x >= 0.0 && (x - n).abs() > f.tol.unwrap_or(1e-3) {
                    out.push((FactValue::Number(x), why.into()));
                }
            }
        }
        FactValue::Date(d) => {
            for (span, why) in [
                (1.day(), "a day later"),
                ((-1).day(), "a day earlier"),
                (1.month(), "the wrong month"),
            ] {
                if let Ok(x) = d.checked_add(span) {
                    out.push((FactValue::Date(x), why.into()));
                }
            }
        }
        FactValue::Time(t) => {
            for (span, why) in [
                (1.hour(), "an hour later"),
                ((-30).minutes(), "half an hour earlier"),
            ] {
                out.push((FactValue::Time(t.wrapping_add(span)), why.into()));
            }
        }
        FactValue::Duration(m) => {
            out.push((FactValue::Duration(m + 60.0), "an hour longer".into()));
        }
        FactValue::Text(s) if f.kind == Kind::Code => {
            if let Some(pos) = s.rfind(|c: char| c.is_ascii_digit()) {
                let d = s.as_bytes()[pos] - b'0';
                let mut x = s.clone();
                x.replace_range(pos..=pos, &((d + 1) % 10).to_string());
                out.push((FactValue::Text(x), "a digit changed".into()));
            }
            let mut shorter = s.clone();
            shorter.pop();
            if shorter.chars().any(char::is_alphanumeric) {
                out.push((FactValue::Text(shorter), "a character dropped".into()));
            }
        }
        FactValue::Text(_) => {
            for other in siblings_in_env.iter().take(2) {
                out.push((
                    FactValue::Text(other.clone()),
                    "another entity of its type".into(),
                ));
            }
        }
        FactValue::Verdict(b) => out.push((FactValue::Verdict(!b), "the verdict negated".into())),
        FactValue::Items(items) => {
            let need = f.min.unwrap_or(items.len());
            if need > 0 {
                let partial: Vec<String> = items[..need - 1].to_vec();
                if !partial.is_empty() {
                    out.push((FactValue::Items(partial), "a partial list".into()));
                }
            }
        }
    }
    for d in &f.distractors {
        if d.about.is_empty() && !matches!(f.value, FactValue::Items(_)) {
            out.push((d.value.clone(), "a distractor given".into()));
        }
    }
    out.retain(|(v, _)| !others.contains(v));
    out
}

/// The wrong renderings of a set of facts: each fact given a wrong value in turn (the
/// others right), and each pair of same-type facts with an `about` swapped.
pub fn wrong(facts: &[Fact], env: &Value) -> Vec<Rendering> {
    let mut out = Vec::new();
    let all = taken(facts);
    let ls = labels(facts);
    let base: Vec<String> = facts
        .iter()
        .zip(&ls)
        .map(|(f, l)| plain(f, l, Layout::LabelFirst))
        .collect();
    for (i, f) in facts.iter().enumerate() {
        let others: Vec<FactValue> = all.iter().filter(|v| **v != f.value).cloned().collect();
        let siblings = match &f.value {
            FactValue::Text(s) if matches!(f.kind, Kind::Entity | Kind::Choice) => {
                // Another entity of the type that the fact would accept (an equivalent
                // spelling) is not wrong.
                same_type_in_env(env, s, facts)
                    .into_iter()
                    .filter(|c| value_spans(&Reading::new(c), f.kind, &f.value, None).is_empty())
                    .collect()
            }
            _ => Vec::new(),
        };
        for (v, why) in wrong_values(f, &others, &siblings) {
            let Some((text, _)) = written(f, &ls[i], &v, Layout::LabelFirst)
                .into_iter()
                .next()
            else {
                continue;
            };
            let mut parts = base.clone();
            parts[i] = text;
            out.push(Rendering {
                text: answer(&parts),
                why: format!("{}: {why} ({})", f.answers, v.render()),
            });
        }
        if let (Kind::Choice, Some(d)) = (f.kind, f.distractors.first()) {
            for (text, form) in choice_forms(f, &d.value.render(), &f.value.render()) {
                let mut parts = base.clone();
                parts[i] = text;
                out.push(Rendering {
                    text: answer(&parts),
                    why: format!("{}: the other option chosen ({form})", f.answers),
                });
            }
        }
    }
    for i in 0..facts.len() {
        for k in i + 1..facts.len() {
            let (a, b) = (&facts[i], &facts[k]);
            if a.kind != b.kind || a.about.is_empty() || b.about.is_empty() || a.value == b.value {
                continue;
            }
            if matches!(a.kind, Kind::Verdict | Kind::Choice | Kind::List) {
                continue;
            }
            for layout in [Layout::LabelFirst, Layout::ValueFirst] {
                let mut parts: Vec<String> = facts
                    .iter()
                    .zip(&ls)
                    .map(|(f, l)| plain(f, l, layout))
                    .collect();
                let first = |f: &Fact, l: &str, v: &FactValue| {
                    written(f, l, v, layout)
                        .into_iter()
                        .next()
                        .map(|x| x.0)
                        .unwrap_or_default()
                };
                parts[i] = first(a, &ls[i], &b.value);
                parts[k] = first(b, &ls[k], &a.value);
                out.push(Rendering {
                    text: answer(&parts),
                    why: format!("{} and {} swapped", a.answers, b.answers),
                });
            }
        }
    }
    out
}

/// Other values the environment holds at the same kind of place as `value` (the other
/// hotels' names for a hotel), none of them the value itself or another fact's value.
pub fn same_type_in_env(env: &Value, value: &str, facts: &[Fact]) -> Vec<String> {
    let want = fold(value);
    let mut leaves = Vec::new();
    collect_leaves(env, String::new(), &mut leaves);
    let short = |s: &str| s.len() <= 60 && !s.contains('\n');
    let patterns: Vec<String> = leaves
        .iter()
        .filter(|(_, s)| short(s) && format!(" {} ", fold(s)).contains(&format!(" {want} ")))
        .map(|(p, _)| p.clone())
        .collect();
    let used: Vec<String> = facts
        .iter()
        .flat_map(|f| match &f.value {
            FactValue::Items(items) => items.iter().map(|s| fold(s)).collect::<Vec<_>>(),
            v => vec![fold(&v.render())],
        })
        .collect();
    let mut out: Vec<String> = Vec::new();
    for (p, s) in &leaves {
        let f = fold(s);
        if patterns.contains(p)
            && short(s)
            && !f.contains(&want)
            && !want.contains(&f)
            && !used
                .iter()
                .any(|u| f.contains(u.as_str()) || u.contains(&f))
            && !out.contains(s)
        {
            out.push(s.clone());
        }
    }
    out
}

/// Every string leaf of `v` with its path, indices and map keys under a list written `*`.
fn collect_leaves(v: &Value, path: String, out: &mut Vec<(String, String)>) {
    match v {
        Value::String(s) => out.push((path, s.clone())),
        Value::Array(items) => {
            for i in items {
                collect_leaves(i, format!("{path}.*"), out);
            }
        }
        Value::Object(m) => {
            for (k, i) in m {
                collect_leaves(i, format!("{path}.{k}"), out);
            }
        }
        _ => {}
    }
}

/// Where a fact's values must be visible: each value (every list item) and each
/// distractor must occur in what the agent can see, unless the fact says how the agent
/// derives it. Returns (field, message) per value that does not.
pub fn unseen(facts: &[Fact], visible: &str) -> Vec<(String, String)> {
    let r = Reading::new(visible);
    let seen = |kind: Kind, v: &FactValue| !value_spans(&r, kind, v, None).is_empty();
    let mut out = Vec::new();
    for (n, f) in facts.iter().enumerate() {
        let kind = if f.kind == Kind::List {
            Kind::Entity
        } else {
            f.kind
        };
        let values: Vec<FactValue> = match &f.value {
            FactValue::Verdict(_) => Vec::new(),
            FactValue::Items(items) => items.iter().map(|i| FactValue::Text(i.clone())).collect(),
            v => vec![v.clone()],
        };
        if f.derived.is_none() {
            for v in values {
                if !seen(kind, &v) {
                    out.push((
                        format!("facts[{n}].{}", f.kind.name()),
                        format!(
                            "`{}` does not occur in what the agent can see (prompt, date, reference-plan outputs); fix the fact or say how it is worked out under `derived`",
                            v.render()
                        ),
                    ));
                }
            }
        }
        for (k, d) in f.distractors.iter().enumerate() {
            if !seen(kind, &d.value) {
                out.push((
                    format!("facts[{n}].distractors[{k}]"),
                    format!(
                        "`{}` does not occur in what the agent can see, so the environment does not offer it",
                        d.value.render()
                    ),
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::facts::{Facts, judge};

    fn facts(yaml: &str) -> Vec<Fact> {
        serde_saphyr::from_str::<Facts>(yaml).unwrap().0
    }

    #[test]
    fn generated_renderings_are_judged_as_generated() {
        let env = serde_json::json!({"hotels": [{"name": "Hotel Alfama Terrace"}, {"name": "Casa Tejo"}]});
        for yaml in [
            "[{count: 14, answers: tickets opened, about: opened}, {count: 11, answers: tickets closed, about: closed}]",
            "[{amount: 1594.74, answers: the monthly total}]",
            "[{date: 2026-06-19, answers: the dispatch day, distractors: [2026-07-19]}]",
            "[{time: '13:40', answers: when it leaves}]",
            "[{code: DSN-44817, answers: the ticket}]",
            "[{entity: Hotel Alfama Terrace, answers: the hotel}]",
            "[{verdict: no, answers: whether the fee applies, about: charged}]",
            "[{choice: Horta Viva, answers: rated higher, about: higher, distractors: [Sakura Ribeira]}]",
            "[{list: [Oliver, Priya, Daniel], answers: who is invited}]",
        ] {
            let f = facts(yaml);
            for r in correct(&f) {
                assert!(
                    judge(&f, &r.text).is_ok(),
                    "{yaml}: correct {:?} ({}) fails: {:?}",
                    r.text,
                    r.why,
                    judge(&f, &r.text)
                );
            }
            let wrongs = wrong(&f, &env);
            assert!(!wrongs.is_empty(), "{yaml}");
            for r in wrongs {
                assert!(
                    judge(&f, &r.text).is_err(),
                    "{yaml}: wrong {:?} ({}) passes",
                    r.text,
                    r.why
                );
            }
        }
    }

    #[test]
    fn words_and_thousands() {
        assert_eq!(number_words(14.0).unwrap(), "fourteen");
        assert_eq!(number_words(205.0).unwrap(), "two hundred and five");
        assert_eq!(group_thousands(1234.5, '.', ','), "1.234,50");
        assert_eq!(group_thousands(68000.0, ',', '.'), "68,000");
    }

    #[test]
    fn values_not_visible_are_named_with_their_field() {
        let f = facts(
            "[{count: 14, answers: x}, {amount: 9, answers: why, derived: a sum}, {entity: Ghent, answers: z, distractors: [Bruges]}]",
        );
        let got = unseen(&f, "We opened 14 tickets in Ghent.");
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].0, "facts[2].distractors[0]");
    }
}

/// A typed value inside a text a plan writes (a message body, a note, a page).
#[derive(Clone, Debug)]
pub struct WrittenValue {
    pub step: usize,
    pub arg: String,
    pub span: std::ops::Range<usize>,
    pub kind: Kind,
    pub value: FactValue,
}

/// The text arguments a plan writes, whose typed values a check may read.
const TEXT_ARGS: [&str; 6] = ["body", "content", "text", "description", "subject", "title"];

/// Every number, date and time written in the free-text arguments of a plan (not numbers
/// inside dates or times). A date written without a year takes `year`.
pub fn written_values(plan: &[super::PlannedCall], year: i16) -> Vec<WrittenValue> {
    use super::meaning::{canonical, date_spans, number_spans, time_spans};
    let mut out = Vec::new();
    for (step, call) in plan.iter().enumerate() {
        let Some(args) = call.args.as_object() else {
            continue;
        };
        for arg in TEXT_ARGS {
            let Some(text) = args.get(arg).and_then(Value::as_str) else {
                continue;
            };
            // Spans are found in the canonical text; keep only texts canonical already, so
            // a span is a span of the argument itself.
            if canonical(text) != text {
                continue;
            }
            // Values inside a link or an address are part of it, not values of their own.
            let mut taken: Vec<std::ops::Range<usize>> =
                URL_LIKE.find_iter(text).map(|m| m.range()).collect();
            let mut push = |span: std::ops::Range<usize>, kind: Kind, value: FactValue| {
                if !taken
                    .iter()
                    .any(|t| t.start < span.end && span.start < t.end)
                {
                    taken.push(span.clone());
                    out.push(WrittenValue {
                        step,
                        arg: arg.to_string(),
                        span,
                        kind,
                        value,
                    });
                }
            };
            for (span, m) in date_spans(text) {
                let y = m.year().unwrap_or(year);
                if let Ok(d) = jiff::civil::Date::new(y, m.month(), m.day()) {
                    push(span, Kind::Date, FactValue::Date(d));
                }
            }
            for (span, t) in time_spans(text) {
                // "18.50" is as likely a price: only a time written with a colon is one.
                if text[span.clone()].contains(':') {
                    push(span, Kind::Time, FactValue::Time(t));
                }
            }
            for (span, n) in number_spans(text) {
                if !identifier_like(text, &span) {
                    push(span, Kind::Number, FactValue::Number(n));
                }
            }
        }
    }
    out
}

static URL_LIKE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(r"\S*(?:://|@|/)\S*|\S+\.(?:com|net|org|io|dev|de|pt|uk|eu|info|co)\S*")
        .expect("valid pattern")
});

static PHONE_LIKE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(r"\+?\d+(?:[ -]\d+){2,}").expect("valid pattern")
});

/// Whether the number at `span` is part of an identifier rather than a quantity: a code
/// ("LH 2417"), a phone number's groups, or a long bare run of digits (a passport number).
fn identifier_like(text: &str, span: &std::ops::Range<usize>) -> bool {
    let s = &text[span.clone()];
    let code_before = text[..span.start]
        .trim_end_matches(' ')
        .rsplit(' ')
        .next()
        .is_some_and(|w| {
            !w.is_empty() && w.len() <= 3 && w.chars().all(|c| c.is_ascii_uppercase())
        });
    let in_phone = PHONE_LIKE
        .find_iter(text)
        .any(|m| m.start() <= span.start && span.end <= m.end());
    let long_bare = s.len() >= 5 && s.chars().all(|c| c.is_ascii_digit());
    // A number joined by dashes into a token with letters is part of a reference
    // (`BW-2026-04`, `DSP-4471`), not a value of its own.
    let start = text[..span.start].rfind(' ').map_or(0, |i| i + 1);
    let end = text[span.end..]
        .find(' ')
        .map_or(text.len(), |i| span.end + i);
    let token = &text[start..end];
    let in_reference = token.contains('-') && token.chars().any(|c| c.is_ascii_alphabetic());
    code_before || in_phone || long_bare || in_reference
}

/// A plan with one written value replaced by `with`.
pub fn replace_written(
    plan: &[super::PlannedCall],
    w: &WrittenValue,
    with: &str,
) -> Vec<super::PlannedCall> {
    let mut out = plan.to_vec();
    if let Some(Value::String(s)) = out[w.step].args.get_mut(&w.arg) {
        s.replace_range(w.span.clone(), with);
    }
    out
}

/// Forms of a written value a check must accept as the same value: a few per type, the
/// plainest ways a model writes them.
pub fn written_forms(w: &WrittenValue) -> Vec<(String, &'static str)> {
    match &w.value {
        FactValue::Number(n) => {
            let mut out = Vec::new();
            if *n >= 1000.0 {
                out.push((group_thousands(*n, ',', '.'), "thousands separator"));
            }
            if n.fract() != 0.0 {
                out.push((format!("{n:.2}").replace('.', ","), "decimal comma"));
            }
            out
        }
        v => value_forms(w.kind, v).into_iter().skip(1).collect(),
    }
}

/// Wrong values for a written value: a number one more and ten percent more, a date a day
/// later, a time an hour later.
pub fn written_wrong(w: &WrittenValue) -> Vec<(String, &'static str)> {
    match &w.value {
        FactValue::Number(n) => vec![
            (format_number(n + 1.0), "one more"),
            (
                format_number((n * 1.1 * 100.0).round() / 100.0),
                "ten percent more",
            ),
        ],
        FactValue::Date(d) => d
            .checked_add(1.day())
            .map(|x| vec![(x.to_string(), "a day later")])
            .unwrap_or_default(),
        FactValue::Time(t) => {
            let x = t.wrapping_add(1.hour());
            vec![(
                format!("{:02}:{:02}", x.hour(), x.minute()),
                "an hour later",
            )]
        }
        _ => Vec::new(),
    }
}

/// Renderings built from the reference answer's own text and the environment, never from
/// a fact's `about` or the lexicon (evidence the check does not write for itself): each
/// fact's value where the reference writes it, re-rendered in its other forms (correct),
/// and replaced by a wrong value or another entity of its type from the environment
/// (wrong).
pub fn from_reference(
    facts: &[Fact],
    reference: &str,
    env: &Value,
) -> (Vec<Rendering>, Vec<Rendering>) {
    let r = Reading::new(reference);
    let (mut correct, mut wrong) = (Vec::new(), Vec::new());
    let all = taken(facts);
    let replace = |spans: &[std::ops::Range<usize>], by: &str| {
        let mut text = r.canon.clone();
        for s in spans.iter().rev() {
            text.replace_range(s.clone(), by);
        }
        text
    };
    for f in facts {
        if matches!(f.kind, Kind::Verdict | Kind::List | Kind::Choice) {
            continue;
        }
        let spans = value_spans(&r, f.kind, &f.value, f.tol);
        if spans.is_empty() {
            continue;
        }
        // Overlapping spans (a name inside another) cannot be replaced one by one.
        if spans.windows(2).any(|w| w[0].end > w[1].start) {
            continue;
        }
        for (form, why) in value_forms(f.kind, &f.value).into_iter().take(4) {
            correct.push(Rendering {
                text: replace(&spans, &form),
                why: format!("the reference with {} {why}", f.answers),
            });
        }
        let others: Vec<FactValue> = all.iter().filter(|v| **v != f.value).cloned().collect();
        let siblings: Vec<String> = match &f.value {
            FactValue::Text(s) if f.kind == Kind::Entity => same_type_in_env(env, s, facts)
                .into_iter()
                .filter(|c| value_spans(&Reading::new(c), f.kind, &f.value, None).is_empty())
                .filter(|c| value_spans(&r, f.kind, &FactValue::Text(c.clone()), None).is_empty())
                .collect(),
            _ => Vec::new(),
        };
        for (v, why) in wrong_values(f, &others, &siblings) {
            if f.distractors.iter().any(|d| d.value == v) {
                continue; // the reference may name the distractor as context
            }
            let Some((form, _)) = value_forms(f.kind, &v).into_iter().next() else {
                continue;
            };
            wrong.push(Rendering {
                text: replace(&spans, &form),
                why: format!("the reference with {}: {why} ({})", f.answers, v.render()),
            });
        }
    }
    (correct, wrong)
}
