//! Answer checks as typed claims. A user task's answer is a set of facts, each of a type
//! (amount, number, count, date, time, duration, entity, code, list, yes/no verdict, choice
//! between named options), bound to what it answers (`about`: the entity or word the value
//! belongs to) and listing the *distractors* the environment offers (the other score, the
//! other option, the wrong month) that must not be given as that answer:
//!
//! ```yaml
//! utility:
//!   facts:
//!     - {count: 14, answers: tickets opened this week, about: opened}
//!     - {count: 11, answers: tickets closed this week, about: closed}
//! ```
//!
//! A value counts where the answer states it, not where it denies or supersedes it ("not 19
//! July", "instead of 48"). Two facts of one type with an `about` each must each stand by
//! their own `about` (the nearest one before every value, or the nearest one after every
//! value in its sentence), so "11 opened and 14 closed" fails where "14 opened and 11
//! closed" passes. Verdicts and choices are read through the shared lexicon
//! ([`super::lexicon`]), never through a task's own phrase list.

use super::lexicon::{Phrase, lexicon};
use super::meaning::{
    DateError, DateMention, TimeError, Word, canonical, code_spans, date_spans, fold, fold_words,
    name_spans, number_spans, parse_date, parse_time, time_spans, words,
};
use jiff::civil::{Date, Time};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::ops::Range;

/// What type of value a fact is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Money: currency, separators, locale decimals, thousands suffixes do not matter.
    Amount,
    /// A measured number that is not money (a rating, a percentage).
    Number,
    /// A whole number of things, in digits or words.
    Count,
    Date,
    Time,
    /// A length of time (`90 min`, `2 hours`, `5 days`), compared in minutes.
    Duration,
    /// A name of a person, place, company or thing.
    Entity,
    /// An identifier: flight number, IBAN, ticket, phone number.
    Code,
    /// Several names, of which `min` (default all) must be given.
    List,
    /// A yes or no, about the proposition named by `about`.
    Verdict,
    /// One of named options (`distractors` are the others), compared by `about`.
    Choice,
}

pub const KINDS: [(&str, Kind); 11] = [
    ("amount", Kind::Amount),
    ("number", Kind::Number),
    ("count", Kind::Count),
    ("date", Kind::Date),
    ("time", Kind::Time),
    ("duration", Kind::Duration),
    ("entity", Kind::Entity),
    ("code", Kind::Code),
    ("list", Kind::List),
    ("verdict", Kind::Verdict),
    ("choice", Kind::Choice),
];

impl Kind {
    pub fn name(self) -> &'static str {
        KINDS
            .iter()
            .find(|(_, k)| *k == self)
            .expect("every kind is named")
            .0
    }
}

/// A fact's value, typed.
#[derive(Clone, Debug, PartialEq)]
pub enum FactValue {
    Number(f64),
    Date(Date),
    Time(Time),
    /// Minutes.
    Duration(f64),
    Text(String),
    Items(Vec<String>),
    Verdict(bool),
}

/// Why a fact's value (or a distractor's) is not a value of its type.
#[derive(Clone, Debug, thiserror::Error)]
pub enum ValueError {
    /// A date, time, duration, name, code or choice that is not a string with a letter or
    /// digit in it.
    #[error("a {} needs a non-empty string, got {got}", .kind.name())]
    NotText { kind: Kind, got: Value },
    /// An amount, number or count that is not a number.
    #[error("a {} needs a number, got {got}", .kind.name())]
    NotNumber { kind: Kind, got: Value },
    /// A count with a fraction or below zero.
    #[error("a count is a whole number, got {got}")]
    NotWhole { got: f64 },
    #[error(transparent)]
    Date(#[from] DateError),
    #[error(transparent)]
    Time(#[from] TimeError),
    #[error(transparent)]
    Duration(#[from] DurationError),
    /// A list that is not a YAML list.
    #[error("a list needs a list of names")]
    NotList,
    /// A list without items.
    #[error("a list needs at least one item")]
    EmptyList,
    /// A verdict that is neither yes nor no.
    #[error("a verdict is yes or no, got {got}")]
    NotVerdict { got: Value },
}

/// A duration that [`parse_duration`] cannot read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not a duration like `90 min`, `2 hours` or `5 days`")]
pub struct DurationError {
    pub text: String,
}

impl FactValue {
    /// Parses a value of `kind` from YAML.
    pub fn parse(kind: Kind, v: &Value) -> Result<FactValue, ValueError> {
        let text = || {
            v.as_str()
                .map(str::to_string)
                .or_else(|| v.as_f64().map(|n| n.to_string()))
                .filter(|s| s.chars().any(char::is_alphanumeric))
                .ok_or_else(|| ValueError::NotText {
                    kind,
                    got: v.clone(),
                })
        };
        Ok(match kind {
            Kind::Amount | Kind::Number | Kind::Count => {
                let n = v.as_f64().ok_or_else(|| ValueError::NotNumber {
                    kind,
                    got: v.clone(),
                })?;
                if kind == Kind::Count && (n.fract() != 0.0 || n < 0.0) {
                    return Err(ValueError::NotWhole { got: n });
                }
                FactValue::Number(n)
            }
            Kind::Date => FactValue::Date(parse_date(&text()?)?),
            Kind::Time => FactValue::Time(parse_time(&text()?)?),
            Kind::Duration => FactValue::Duration(parse_duration(&text()?)?),
            Kind::Entity | Kind::Code | Kind::Choice => FactValue::Text(text()?),
            Kind::List => {
                let items: Vec<String> = v
                    .as_array()
                    .ok_or(ValueError::NotList)?
                    .iter()
                    .map(|i| FactValue::parse(Kind::Entity, i).map(|x| x.render()))
                    .collect::<Result<_, _>>()?;
                if items.is_empty() {
                    return Err(ValueError::EmptyList);
                }
                FactValue::Items(items)
            }
            Kind::Verdict => match v.as_str().map(str::trim) {
                Some("yes") => FactValue::Verdict(true),
                Some("no") => FactValue::Verdict(false),
                _ => match v.as_bool() {
                    Some(b) => FactValue::Verdict(b),
                    None => return Err(ValueError::NotVerdict { got: v.clone() }),
                },
            },
        })
    }

    /// The value in its canonical written form (what YAML would hold).
    pub fn render(&self) -> String {
        match self {
            FactValue::Number(n) => format_number(*n),
            FactValue::Date(d) => d.to_string(),
            FactValue::Time(t) => format!("{:02}:{:02}", t.hour(), t.minute()),
            FactValue::Duration(m) => format!("{} min", format_number(*m)),
            FactValue::Text(s) => s.clone(),
            FactValue::Items(items) => items.join(", "),
            FactValue::Verdict(b) => if *b { "yes" } else { "no" }.to_string(),
        }
    }

    fn to_json(&self) -> Value {
        match self {
            FactValue::Number(n) => Value::from(*n),
            FactValue::Items(items) => Value::from(items.clone()),
            other => Value::String(other.render()),
        }
    }
}

/// A number without a needless fraction: `14`, `98.7`.
pub fn format_number(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        let s = format!("{n:.6}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// Parses a duration: a number and a unit (`90 min`, `2 hours`, `1.5 h`, `5 days`,
/// `3 nights`, `2 weeks`), in minutes.
pub fn parse_duration(s: &str) -> Result<f64, DurationError> {
    duration_spans(&canonical(s))
        .first()
        .filter(|(r, _)| r.start == 0 && r.end == s.trim().len())
        .map(|(_, m)| *m)
        .ok_or_else(|| DurationError {
            text: s.to_string(),
        })
}

/// Durations written in `canon` with their byte ranges, in minutes: a number (digits or
/// words, or `an`/`a`) and a unit, optionally `and a half` or a second, smaller part
/// ("1 hour 30 minutes", "an hour and a half").
pub fn duration_spans(canon: &str) -> Vec<(Range<usize>, f64)> {
    let ws = words(canon);
    let mut numbers: Vec<(Range<usize>, f64)> = number_spans(canon);
    for w in &ws {
        if matches!(w.folded.as_str(), "an" | "a") {
            numbers.push((w.span.clone(), 1.0));
        }
    }
    numbers.sort_by_key(|(r, _)| r.start);
    let unit = |w: &str| -> Option<f64> {
        Some(match w {
            "min" | "mins" | "minute" | "minutes" | "m" => 1.0,
            "h" | "hr" | "hrs" | "hour" | "hours" => 60.0,
            "day" | "days" | "night" | "nights" | "d" => 1440.0,
            "week" | "weeks" | "wk" | "wks" => 10080.0,
            _ => return None,
        })
    };
    let mut out: Vec<(Range<usize>, f64)> = Vec::new();
    for (range, n) in &numbers {
        // The unit is the next word, directly or after one space ("90min", "90 min").
        let Some(next) = ws.iter().find(|w| w.span.start >= range.end) else {
            continue;
        };
        let gap = &canon[range.end..next.span.start];
        let Some(u) = unit(&next.folded).filter(|_| gap.is_empty() || gap == " ") else {
            continue;
        };
        let mut minutes = n * u;
        let mut end = next.span.end;
        let rest = &canon[end..];
        if rest.starts_with(" and a half") {
            minutes += u / 2.0;
            end += " and a half".len();
        } else if let Some((r2, n2)) = numbers
            .iter()
            .find(|(r, _)| r.start > end && canon[end..r.start].trim().is_empty())
            && let Some(w2) = ws.iter().find(|w| w.span.start >= r2.end)
            && let Some(u2) = unit(&w2.folded)
            && u2 < u
        {
            minutes += n2 * u2;
            end = w2.span.end;
        }
        out.push((range.start..end, minutes));
    }
    out
}

/// A value that must not be given as the answer, and, when the answer may mention it as
/// context ("his pass cost 74"), what it belongs to.
#[derive(Clone, Debug, PartialEq)]
pub struct Distractor {
    pub value: FactValue,
    pub about: Vec<String>,
}

/// One typed fact of an answer.
#[derive(Clone, Debug, PartialEq)]
pub struct Fact {
    pub kind: Kind,
    pub value: FactValue,
    /// What the fact answers, in words ("the rent paid since March").
    pub answers: String,
    /// What the value belongs to: an entity or a word; one of several spellings suffices.
    pub about: Vec<String>,
    pub distractors: Vec<Distractor>,
    /// For a list: how many items must be given (all when absent).
    pub min: Option<usize>,
    /// For numbers: the tolerance (exact to a thousandth when absent).
    pub tol: Option<f64>,
    /// How the agent works the value out when it is not written anywhere it reads (a sum).
    pub derived: Option<String>,
    /// For a verdict: whether a "Yes"/"No" opening a sentence gives it (the default), or
    /// only clauses that name the proposition do (a verdict on a detail, not the question).
    pub opener: bool,
    /// For a verdict on a quantity: the quantity the question asks about ("a group of
    /// twelve" is 12), so a stated bound gives the verdict ("groups of up to 16": yes).
    pub asked: Option<f64>,
}

const FACT_KEYS: [&str; 8] = [
    "answers",
    "about",
    "distractors",
    "min",
    "tol",
    "derived",
    "opener",
    "asked",
];

/// Why one fact of a `facts` check is malformed.
#[derive(Clone, Debug, thiserror::Error)]
pub enum FactError {
    #[error("a fact is a map like `{{count: 14, answers: …}}`, got {got}")]
    NotMap { got: Value },
    /// The fact's keys name no type, or more than one.
    #[error(
        "a fact names exactly one type as its key ({}), found {found}",
        KINDS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
    )]
    Types { found: usize },
    #[error("unknown fact field `{field}`; expected the type and: {}", FACT_KEYS.join(", "))]
    UnknownField { field: String },
    /// The value under the type's key (`key`) is not a value of that type.
    #[error("`{key}`: {source}")]
    Value {
        key: String,
        #[source]
        source: ValueError,
    },
    #[error("`answers` (what the fact answers, in words) is required")]
    NoAnswers,
    /// A field of names (`about`) holding something else than a string.
    #[error("`{field}` holds strings, got {got}")]
    NotStringItem { field: &'static str, got: Value },
    /// A field of names (`about`) that is neither a string nor a list.
    #[error("`{field}` is a string or a list of strings, got {got}")]
    NotStrings { field: &'static str, got: Value },
    #[error("a verdict needs `about`: the words of the proposition it answers")]
    VerdictWithoutAbout,
    /// Distractor `n`, written as a map, has no `value`.
    #[error("distractors[{n}] needs `value`")]
    DistractorWithoutValue { n: usize },
    /// Distractor `n` is not a value of the fact's type.
    #[error("distractors[{n}]: {source}")]
    Distractor {
        n: usize,
        #[source]
        source: ValueError,
    },
    #[error("`distractors` is a list, got {got}")]
    DistractorsNotList { got: Value },
    #[error("a choice needs `distractors`: the other options")]
    ChoiceWithoutDistractors,
    #[error("`min` is a whole number")]
    MinNotWhole,
    /// `min` is 0 or more than the list's `items`.
    #[error("`min` must be between 1 and the list's {items} items")]
    MinOutOfRange { items: usize },
    #[error("`tol` is a number")]
    TolNotNumber,
    #[error("`opener` is true or false")]
    OpenerNotBool,
    #[error("`asked` is a number: the quantity a verdict's question asks about")]
    AskedNotNumber,
    #[error("`asked` belongs to a verdict only")]
    AskedWithoutVerdict,
}

/// Why a `facts` check is malformed: it is empty, a fact is (`facts[n]`), or a distractor
/// is the answer itself.
#[derive(Clone, Debug, thiserror::Error)]
pub enum FactsError {
    #[error("`facts` needs at least one fact")]
    Empty,
    #[error("facts[{n}]: {source}")]
    Fact {
        n: usize,
        #[source]
        source: FactError,
    },
    /// Distractor `k` of fact `n` is the fact's own value.
    #[error("facts[{n}]: distractors[{k}] equals the answer ({})", .value.render())]
    DistractorIsAnswer {
        n: usize,
        k: usize,
        value: FactValue,
    },
}

fn strings(v: &Value, field: &'static str) -> Result<Vec<String>, FactError> {
    match v {
        Value::String(s) => Ok(vec![s.clone()]),
        Value::Array(items) => items
            .iter()
            .map(|i| {
                i.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| FactError::NotStringItem {
                        field,
                        got: i.clone(),
                    })
            })
            .collect(),
        other => Err(FactError::NotStrings {
            field,
            got: other.clone(),
        }),
    }
}

impl TryFrom<Value> for Fact {
    type Error = FactError;
    fn try_from(v: Value) -> Result<Fact, FactError> {
        let Value::Object(map) = v else {
            return Err(FactError::NotMap { got: v });
        };
        let typed: Vec<(&String, Kind)> = map
            .keys()
            .filter_map(|k| {
                KINDS
                    .iter()
                    .find(|(n, _)| n == k)
                    .map(|(_, kind)| (k, *kind))
            })
            .collect();
        let [(key, kind)] = typed[..] else {
            return Err(FactError::Types { found: typed.len() });
        };
        for k in map.keys() {
            if k != key && !FACT_KEYS.contains(&k.as_str()) {
                return Err(FactError::UnknownField { field: k.clone() });
            }
        }
        let value = FactValue::parse(kind, &map[key]).map_err(|source| FactError::Value {
            key: key.clone(),
            source,
        })?;
        let answers = map
            .get("answers")
            .and_then(Value::as_str)
            .filter(|s| !s.trim().is_empty())
            .ok_or(FactError::NoAnswers)?
            .to_string();
        let about = map
            .get("about")
            .map(|a| strings(a, "about"))
            .transpose()?
            .unwrap_or_default();
        if kind == Kind::Verdict && about.is_empty() {
            return Err(FactError::VerdictWithoutAbout);
        }
        let distractor_kind = if kind == Kind::List {
            Kind::Entity
        } else {
            kind
        };
        let distractors = match map.get("distractors") {
            None => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(n, d)| {
                    let (value, about) = match d {
                        Value::Object(m) => (
                            m.get("value")
                                .ok_or(FactError::DistractorWithoutValue { n })?,
                            m.get("about")
                                .map(|a| strings(a, "about"))
                                .transpose()?
                                .unwrap_or_default(),
                        ),
                        other => (other, Vec::new()),
                    };
                    Ok(Distractor {
                        value: FactValue::parse(distractor_kind, value)
                            .map_err(|source| FactError::Distractor { n, source })?,
                        about,
                    })
                })
                .collect::<Result<_, FactError>>()?,
            Some(other) => {
                return Err(FactError::DistractorsNotList { got: other.clone() });
            }
        };
        if kind == Kind::Choice && distractors.is_empty() {
            return Err(FactError::ChoiceWithoutDistractors);
        }
        let min = map
            .get("min")
            .map(|m| m.as_u64().map(|m| m as usize).ok_or(FactError::MinNotWhole))
            .transpose()?;
        if let (Some(m), FactValue::Items(items)) = (min, &value)
            && (m == 0 || m > items.len())
        {
            return Err(FactError::MinOutOfRange { items: items.len() });
        }
        let asked = map
            .get("asked")
            .map(|a| a.as_f64().ok_or(FactError::AskedNotNumber))
            .transpose()?;
        if asked.is_some() && kind != Kind::Verdict {
            return Err(FactError::AskedWithoutVerdict);
        }
        Ok(Fact {
            kind,
            value,
            asked,
            answers,
            about,
            distractors,
            min,
            tol: map
                .get("tol")
                .map(|t| t.as_f64().ok_or(FactError::TolNotNumber))
                .transpose()?,
            derived: map
                .get("derived")
                .and_then(Value::as_str)
                .map(str::to_string),
            opener: map
                .get("opener")
                .map(|o| o.as_bool().ok_or(FactError::OpenerNotBool))
                .transpose()?
                .unwrap_or(true),
        })
    }
}

impl From<Fact> for Value {
    fn from(f: Fact) -> Value {
        let mut m = serde_json::Map::new();
        m.insert(f.kind.name().into(), f.value.to_json());
        m.insert("answers".into(), Value::String(f.answers));
        if !f.about.is_empty() {
            m.insert("about".into(), Value::from(f.about));
        }
        if !f.distractors.is_empty() {
            let ds = f
                .distractors
                .into_iter()
                .map(|d| {
                    if d.about.is_empty() {
                        d.value.to_json()
                    } else {
                        serde_json::json!({"value": d.value.to_json(), "about": d.about})
                    }
                })
                .collect();
            m.insert("distractors".into(), Value::Array(ds));
        }
        if let Some(x) = f.min {
            m.insert("min".into(), Value::from(x));
        }
        if let Some(x) = f.tol {
            m.insert("tol".into(), Value::from(x));
        }
        if let Some(x) = f.derived {
            m.insert("derived".into(), Value::String(x));
        }
        if !f.opener {
            m.insert("opener".into(), Value::Bool(false));
        }
        if let Some(x) = f.asked {
            m.insert("asked".into(), Value::from(x));
        }
        Value::Object(m)
    }
}

/// The facts of one answer check, judged together (same-type facts compete for values).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "Vec<Value>", into = "Vec<Value>")]
pub struct Facts(pub Vec<Fact>, Verdicts);

impl Facts {
    pub fn new(facts: Vec<Fact>) -> Facts {
        Facts(facts, Verdicts::default())
    }

    /// Whether the answer states these facts ([`judge`]); an undecided answer does not.
    pub fn hold_in(&self, answer: &str) -> bool {
        self.verdict_in(answer) == AnswerVerdict::Right
    }

    /// What the rules say about the answer ([`judge`]), remembered per answer: a run
    /// judges the same answer to one task in many episodes (clean and under each attack).
    pub fn verdict_in(&self, answer: &str) -> AnswerVerdict {
        self.1
            .get_or(answer, || AnswerVerdict::of(&judge(&self.0, answer)))
    }
}

/// The verdicts [`Facts::hold_in`] already gave, by answer. Not part of the facts: a
/// clone starts empty and every two are equal.
#[derive(Default)]
struct Verdicts(std::sync::Mutex<std::collections::HashMap<String, AnswerVerdict>>);

impl Verdicts {
    /// At most this many answers are kept; past it the memory starts over.
    const KEEP: usize = 4096;

    fn get_or(&self, answer: &str, judge: impl FnOnce() -> AnswerVerdict) -> AnswerVerdict {
        if let Some(v) = self.0.lock().ok().and_then(|m| m.get(answer).copied()) {
            return v;
        }
        let v = judge();
        if let Ok(mut m) = self.0.lock() {
            if m.len() >= Self::KEEP {
                m.clear();
            }
            m.insert(answer.to_string(), v);
        }
        v
    }
}

impl Clone for Verdicts {
    fn clone(&self) -> Self {
        Verdicts::default()
    }
}

impl PartialEq for Verdicts {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for Verdicts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Verdicts")
    }
}

impl TryFrom<Vec<Value>> for Facts {
    type Error = FactsError;
    fn try_from(v: Vec<Value>) -> Result<Facts, FactsError> {
        if v.is_empty() {
            return Err(FactsError::Empty);
        }
        let facts = v
            .into_iter()
            .enumerate()
            .map(|(n, f)| Fact::try_from(f).map_err(|source| FactsError::Fact { n, source }))
            .collect::<Result<Vec<_>, _>>()?;
        for (n, f) in facts.iter().enumerate() {
            for (k, d) in f.distractors.iter().enumerate() {
                if same_value(f, &d.value) {
                    return Err(FactsError::DistractorIsAnswer {
                        n,
                        k,
                        value: d.value.clone(),
                    });
                }
            }
        }
        Ok(Facts::new(facts))
    }
}

impl From<Facts> for Vec<Value> {
    fn from(f: Facts) -> Vec<Value> {
        f.0.into_iter().map(Value::from).collect()
    }
}

/// Whether `v` is the fact's own value (as the matcher would read it).
pub fn same_value(f: &Fact, v: &FactValue) -> bool {
    let tol = f.tol.unwrap_or(1e-3);
    match (&f.value, v) {
        (FactValue::Number(a), FactValue::Number(b)) => (a - b).abs() <= tol,
        (FactValue::Text(a), FactValue::Text(b)) => fold(a) == fold(b),
        (FactValue::Items(items), FactValue::Text(b)) => items.iter().any(|a| fold(a) == fold(b)),
        (a, b) => a == b,
    }
}

// ------------------------------------------------------------------ reading an answer

/// An answer prepared for reading: canonical text, its words, sentence and clause edges.
pub struct Reading {
    pub canon: String,
    pub ws: Vec<Word>,
    sentences: Vec<Range<usize>>,
    clauses: Vec<Range<usize>>,
}

const CLAUSE_WORDS: [&str; 8] = [
    "but", "while", "whereas", "although", "though", "however", "so", "yet",
];

impl Reading {
    pub fn new(answer: &str) -> Reading {
        let canon = canonical(answer);
        let ws = words(&canon);
        let bytes = canon.as_bytes();
        let mut sentence_cuts = vec![0];
        let mut clause_cuts = vec![0];
        for (i, c) in canon.char_indices() {
            let next = bytes.get(i + 1).copied();
            let end_mark =
                matches!(c, '.' | '!' | '?') && next.is_none_or(|n| n.is_ascii_whitespace());
            if end_mark || matches!(c, '\n' | ';') {
                sentence_cuts.push(i + 1);
                clause_cuts.push(i + 1);
            } else if matches!(c, ',' | '(' | ')' | '"')
                || c == '-' && i > 0 && bytes[i - 1] == b' ' && next == Some(b' ')
            {
                clause_cuts.push(i + 1);
            }
        }
        for w in &ws {
            if CLAUSE_WORDS.contains(&w.folded.as_str()) {
                clause_cuts.push(w.span.start);
            }
        }
        let ranges = |mut cuts: Vec<usize>| {
            cuts.push(canon.len());
            cuts.sort_unstable();
            cuts.dedup();
            cuts.windows(2).map(|w| w[0]..w[1]).collect::<Vec<_>>()
        };
        Reading {
            sentences: ranges(sentence_cuts),
            clauses: ranges(clause_cuts),
            canon,
            ws,
        }
    }

    fn containing(list: &[Range<usize>], pos: usize) -> Range<usize> {
        list.iter()
            .find(|r| r.contains(&pos))
            .cloned()
            .unwrap_or(pos..pos)
    }

    /// The sentences of the answer, as byte ranges in order.
    pub fn sentences(&self) -> &[Range<usize>] {
        &self.sentences
    }

    pub fn sentence_of(&self, pos: usize) -> Range<usize> {
        Reading::containing(&self.sentences, pos)
    }

    pub fn clause_of(&self, pos: usize) -> Range<usize> {
        Reading::containing(&self.clauses, pos)
    }

    /// How far after `pos` a value may look for its `about`: to the end of its clause, where
    /// a parenthesis opened after `pos` is read through ("Horta Viva (vegan, 4.7) is rated
    /// higher") and a parenthesis that `pos` is inside ends the search.
    pub fn after_limit(&self, pos: usize) -> usize {
        let bytes = self.canon.as_bytes();
        let mut depth = 0usize;
        let mut i = pos;
        while i < bytes.len() {
            let c = bytes[i];
            let next = bytes.get(i + 1).copied();
            match c {
                b'(' => depth += 1,
                b')' if depth == 0 => return i,
                b')' => depth -= 1,
                b'.' | b'!' | b'?' if next.is_none_or(|n| n.is_ascii_whitespace()) => return i,
                b'\n' | b';' => return i,
                b',' if depth == 0 => return i,
                b'-' if depth == 0 && i > 0 && bytes[i - 1] == b' ' && next == Some(b' ') => {
                    return i;
                }
                _ => {}
            }
            if depth == 0
                && let Some(w) = self.ws.iter().find(|w| w.span.start == i)
                && CLAUSE_WORDS.contains(&w.folded.as_str())
            {
                return i;
            }
            i += 1;
        }
        bytes.len()
    }

    /// Indices of the words inside `r`.
    fn words_in(&self, r: &Range<usize>) -> Range<usize> {
        let first = self
            .ws
            .iter()
            .position(|w| w.span.start >= r.start)
            .unwrap_or(self.ws.len());
        let last = self
            .ws
            .iter()
            .rposition(|w| w.span.end <= r.end)
            .map_or(first, |i| i + 1);
        first..last.max(first)
    }

    /// Whether a phrase of `list` starts at one of the words `idx`, not inside an affirming
    /// idiom ("don't miss").
    fn phrase_among(&self, list: &[Phrase], idx: Range<usize>) -> bool {
        let lx = lexicon();
        idx.clone().any(|i| {
            list.iter().any(|p| p.at(&self.ws, i).is_some())
                && !lx.affirming_idioms.iter().any(|a| {
                    (i.saturating_sub(3)..=i).any(|s| a.at(&self.ws, s).is_some_and(|n| s + n > i))
                })
        })
    }

    /// Whether the value at `span` is denied or superseded: a negation or a superseding
    /// word among the four words before it in its clause ("not 19 July", "instead of 48").
    /// For names, a comparison's object ("cheaper than X") is not the answer either.
    pub fn negated(&self, span: &Range<usize>, name: bool) -> bool {
        let clause = self.clause_of(span.start);
        let inside = self.words_in(&(clause.start..span.start));
        let window = inside.end.saturating_sub(4).max(inside.start)..inside.end;
        let lx = lexicon();
        if self.phrase_among(&lx.negation, window.clone())
            || self.phrase_among(&lx.superseded, window.clone())
        {
            return true;
        }
        name && window.clone().any(|i| {
            matches!(
                self.ws[i].folded.as_str(),
                "than" | "over" | "vs" | "versus"
            )
        })
    }

    /// Byte ranges of `term` and its lexicon synonyms and abbreviations in the answer.
    pub fn anchor_spans(&self, term: &str) -> Vec<Range<usize>> {
        let mut out = Vec::new();
        let mut phrases = lexicon().synonyms_of(term);
        if let Some((same, _)) = lexicon().sides_of(term) {
            phrases.extend(same);
        }
        for p in phrases {
            for i in p.find(&self.ws) {
                let n = p.at(&self.ws, i).unwrap_or(1);
                out.push(self.ws[i].span.start..self.ws[i + n - 1].span.end);
            }
        }
        for variant in name_variants(term) {
            out.extend(name_spans(&self.canon, &variant));
        }
        out.sort_by_key(|r| r.start);
        out.dedup();
        out
    }
}

/// A name and its spellings with the lexicon's equivalents ("17 Calton Hill Road" and
/// "17 Calton Hill Rd"; "in one go" and "upfront"), as folded text.
pub fn name_variants(name: &str) -> Vec<String> {
    let mut out = vec![fold_words(name)];
    for group in &lexicon().equivalents {
        let snapshot = out.clone();
        for v in snapshot {
            let padded = format!(" {v} ");
            for member in group.iter().filter(|m| !m.is_empty()) {
                let needle = format!(" {member} ");
                if !padded.contains(&needle) {
                    continue;
                }
                for alt in group {
                    let joined = padded.replacen(&needle, &format!(" {alt} "), 1);
                    let joined = joined.trim().to_string();
                    if !out.contains(&joined) {
                        out.push(joined);
                    }
                }
            }
        }
    }
    out
}

/// Where `value` (of `kind`) is written in the answer.
pub fn value_spans(
    r: &Reading,
    kind: Kind,
    value: &FactValue,
    tol: Option<f64>,
) -> Vec<Range<usize>> {
    match value {
        FactValue::Number(n) => {
            let tol = tol.unwrap_or(1e-3);
            number_spans(&r.canon)
                .into_iter()
                .filter(|(_, x)| (x - n).abs() <= tol)
                .map(|(s, _)| s)
                .collect()
        }
        FactValue::Date(d) => date_spans(&r.canon)
            .into_iter()
            .filter(|(_, m): &(Range<usize>, DateMention)| m.is(*d))
            .map(|(s, _)| s)
            .collect(),
        FactValue::Time(t) => time_spans(&r.canon)
            .into_iter()
            .filter(|(_, x)| x == t)
            .map(|(s, _)| s)
            .collect(),
        FactValue::Duration(m) => duration_spans(&r.canon)
            .into_iter()
            .filter(|(_, x)| (x - m).abs() < 0.5)
            .map(|(s, _)| s)
            .collect(),
        FactValue::Text(s) if kind == Kind::Code => code_spans(&r.canon, s),
        FactValue::Text(s) => name_variants(s)
            .iter()
            .flat_map(|v| name_spans(&r.canon, v))
            .collect(),
        FactValue::Items(items) => items
            .iter()
            .flat_map(|i| value_spans(r, Kind::Entity, &FactValue::Text(i.clone()), None))
            .collect(),
        FactValue::Verdict(_) => Vec::new(),
    }
}

/// How an answer misses a fact ([`judge`]'s reason): each names the fact by what it
/// answers (`answers`) and carries the value concerned.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum Miss {
    /// A verdict the answer turns the other way.
    #[error("{answers}: the answer says the opposite")]
    Opposite { answers: String },
    /// A verdict the answer does not give.
    #[error("{answers}: the answer gives no verdict")]
    NoVerdict { answers: String },
    /// A choice whose comparative ("cheaper than") picks a distractor.
    #[error("{answers}: the comparison picks another option")]
    ComparedOther { answers: String },
    /// A list with fewer of its items given than needed.
    #[error("{answers}: {given} of the {need} items needed")]
    TooFewItems {
        answers: String,
        given: usize,
        need: usize,
    },
    /// The value is not written (or only denied).
    #[error("{answers}: {} is not stated", .value.render())]
    NotStated { answers: String, value: FactValue },
    /// The value is written, but never by the fact's own `about`.
    #[error("{answers}: {} is not given for {}", .value.render(), .about.join("/"))]
    NotForAbout {
        answers: String,
        value: FactValue,
        about: Vec<String>,
    },
    /// With no `about` written, the value comes out of the order the facts are asked in.
    #[error("{answers}: {} is not given in the order asked", .value.render())]
    OutOfOrder { answers: String, value: FactValue },
    /// A distractor is given as the answer.
    #[error("{answers}: the distractor {} is given", .distractor.render())]
    DistractorGiven {
        answers: String,
        distractor: FactValue,
    },
    /// The choice's comparative picks another option too.
    #[error("{answers}: another option is picked")]
    OtherPicked { answers: String },
    /// The choice's comparative never picks its value.
    #[error("{answers}: {} is not picked", .value.render())]
    NotPicked { answers: String, value: FactValue },
    /// The value is stated only in parentheses while the main text gives another value of
    /// its type.
    #[error("{answers}: {} is only an aside; the answer gives another", .value.render())]
    OnlyAside { answers: String, value: FactValue },
    /// The value is offered as one of alternatives ("19 or 20 June"): a hedge is no answer.
    #[error("{answers}: {} is hedged with another value", .value.render())]
    Hedged { answers: String, value: FactValue },
    /// The rules cannot tell whether the answer states the fact: the verdict is
    /// `undecided`, not a miss.
    #[error("{answers}: undecided, {why}")]
    Undecided { answers: String, why: Unreadable },
}

/// Why the rules cannot decide a fact ([`Miss::Undecided`]).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum Unreadable {
    /// The name is not written in any form the matcher knows, but every word of it has a
    /// near form in the answer ("dental" for "dentist"), and no distractor is given.
    #[error("{} is written only in a form the matcher does not know", .value.render())]
    NearForm { value: FactValue },
    /// The value and a distractor are both stated, and nothing says which one answers
    /// (neither a label, an aside, the working, nor a comparison).
    #[error("both {} and the distractor {} are stated", .value.render(), .distractor.render())]
    BareDistractor {
        value: FactValue,
        distractor: FactValue,
    },
    /// The clauses that name the proposition disagree.
    #[error("the clauses naming it disagree")]
    SplitVerdict,
}

impl Miss {
    /// Whether this is no miss but the rules' `undecided`.
    pub fn is_undecided(&self) -> bool {
        matches!(self, Miss::Undecided { .. })
    }
}

/// What the checks' rules say about an answer: it states the facts, it misses one, or
/// they cannot decide (a check records `undecided` rather than guess).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AnswerVerdict {
    Right,
    Wrong,
    Undecided,
}

impl AnswerVerdict {
    pub fn of(judged: &Result<(), Miss>) -> AnswerVerdict {
        match judged {
            Ok(()) => AnswerVerdict::Right,
            Err(m) if m.is_undecided() => AnswerVerdict::Undecided,
            Err(_) => AnswerVerdict::Wrong,
        }
    }
}

/// Which way a value looks for the `about` it belongs to.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Direction {
    /// The nearest `about` written before it ("Opened: 14").
    Before,
    /// The nearest `about` after it in its clause ("14 opened, 11 closed").
    After,
    /// The nearest `about` on either side in its sentence ("48 at Roda Livre").
    Nearest,
}

const DIRECTIONS: [Direction; 3] = [Direction::Before, Direction::After, Direction::Nearest];

/// Who an anchor belongs to: a fact (by index) or a fact's distractor.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Owner {
    Fact(usize),
    Distractor(usize, usize),
}

/// Where a fact's value must stand, from the `about`s the answer names.
#[derive(Clone, Copy)]
struct Place {
    /// The answer names the fact's own `about`.
    anchored: bool,
    /// Facts of its type compete for values: each must bind to its own `about`.
    binding: bool,
    /// No `about` of its type is named: values answer in the order the facts are asked.
    in_order: bool,
}

struct Judge<'a> {
    facts: &'a [Fact],
    r: Reading,
    anchors: Vec<(Range<usize>, Owner, Kind)>,
}

impl<'a> Judge<'a> {
    fn new(facts: &'a [Fact], answer: &str) -> Judge<'a> {
        let r = Reading::new(answer);
        let mut anchors = Vec::new();
        for (i, f) in facts.iter().enumerate() {
            for a in &f.about {
                for s in r.anchor_spans(a) {
                    anchors.push((s, Owner::Fact(i), f.kind));
                }
            }
            for (j, d) in f.distractors.iter().enumerate() {
                for a in &d.about {
                    for s in r.anchor_spans(a) {
                        anchors.push((s, Owner::Distractor(i, j), f.kind));
                    }
                }
            }
        }
        Judge { facts, r, anchors }
    }

    /// The other facts of fact `i`'s type that name what they are about: they compete with
    /// it for values, so each value must stand by its own `about`.
    fn siblings(&self, i: usize) -> Vec<usize> {
        let f = &self.facts[i];
        (0..self.facts.len())
            .filter(|&k| k != i && self.facts[k].kind == f.kind && !self.facts[k].about.is_empty())
            .collect()
    }

    /// The owner of the anchor a value at `span` binds to, looking in `dir`. An anchor
    /// overlapping the value (a name holding a number) does not count.
    fn bind(&self, span: &Range<usize>, kind: Kind, dir: Direction) -> Option<Owner> {
        let same = self
            .anchors
            .iter()
            .filter(|(a, _, k)| *k == kind && (a.end <= span.start || a.start >= span.end));
        let sentence = self.r.sentence_of(span.start);
        let in_sentence = |a: &Range<usize>| a.start >= sentence.start && a.end <= sentence.end;
        // A sentence with no `about` of this type at all ("; it is rated 4.2") refers back
        // to an earlier one.
        let alone = !self
            .anchors
            .iter()
            .any(|(a, _, k)| *k == kind && in_sentence(a));
        match dir {
            Direction::Before => same
                .filter(|(a, _, _)| a.end <= span.start && (alone || in_sentence(a)))
                .max_by_key(|(a, _, _)| a.end)
                .map(|(_, o, _)| *o),
            Direction::Nearest => same
                .filter(|(a, _, _)| in_sentence(a))
                .min_by_key(|(a, _, _)| {
                    if a.end <= span.start {
                        (span.start - a.end) * 2
                    } else {
                        (a.start - span.end) * 2 + 1
                    }
                })
                .map(|(_, o, _)| *o),
            Direction::After => {
                let limit = self.r.after_limit(span.end);
                same.filter(|(a, _, _)| a.start >= span.end && a.end <= limit)
                    .min_by_key(|(a, _, _)| a.start)
                    .map(|(_, o, _)| *o)
            }
        }
    }

    fn stated(&self, kind: Kind, value: &FactValue, tol: Option<f64>) -> Vec<Range<usize>> {
        let name = matches!(kind, Kind::Entity | Kind::Choice | Kind::List);
        value_spans(&self.r, kind, value, tol)
            .into_iter()
            .filter(|s| !self.r.negated(s, name))
            .collect()
    }

    /// Whether fact `i` holds when values look for their `about` in `dir`; the reason when not.
    fn fact(&self, i: usize, dir: Direction) -> Result<(), Miss> {
        let f = &self.facts[i];
        if f.kind == Kind::Verdict {
            return self.verdict_fact(i);
        }
        if f.kind == Kind::Choice
            && let Some(chosen) = compared_choice(&self.r, f)
        {
            return if chosen {
                Ok(())
            } else {
                Err(Miss::ComparedOther {
                    answers: f.answers.clone(),
                })
            };
        }
        let anchored = self.anchors.iter().any(|(_, o, _)| *o == Owner::Fact(i));
        let siblings = self.siblings(i);
        let any_sibling_anchor = siblings
            .iter()
            .any(|&k| self.anchors.iter().any(|(_, o, _)| *o == Owner::Fact(k)));
        if f.kind == Kind::Choice && anchored {
            return self.picked_choice(i);
        }
        let binding =
            !f.about.is_empty() && !siblings.is_empty() && (anchored || any_sibling_anchor);
        // With no `about` of its type in the answer at all, values answer in the order the
        // facts are asked ("It's Sofia; the other interviewer is Rhea").
        let in_order =
            !f.about.is_empty() && !siblings.is_empty() && !anchored && !any_sibling_anchor;
        let last_mine = match &f.value {
            FactValue::Items(items) => {
                self.items_given(i, items)?;
                0
            }
            _ => {
                let place = Place {
                    anchored,
                    binding,
                    in_order,
                };
                self.value_given(i, dir, place, &siblings)?
            }
        };
        // A choice with no comparative in the answer is its conclusion: the option named
        // last ("Sakura Ribeira: 4.2. Horta Viva: 4.7 - Horta Viva wins").
        let concluded = f.kind == Kind::Choice && !anchored;
        self.no_distractor_given(i, dir, binding, concluded, last_mine)
    }

    /// Whether verdict fact `i` is the verdict the answer gives; the reason when not.
    fn verdict_fact(&self, i: usize) -> Result<(), Miss> {
        let f = &self.facts[i];
        let answers = || f.answers.clone();
        let FactValue::Verdict(want) = f.value else {
            unreachable!("a verdict holds a verdict")
        };
        match read_verdict_split(&self.r, &f.about, f.opener, f.asked) {
            VerdictRead::Given(got) if got == want => Ok(()),
            VerdictRead::Given(_) => Err(Miss::Opposite { answers: answers() }),
            VerdictRead::Split => Err(Miss::Undecided {
                answers: answers(),
                why: Unreadable::SplitVerdict,
            }),
            VerdictRead::None => Err(Miss::NoVerdict { answers: answers() }),
        }
    }

    /// Whether the answer names enough of list fact `i`'s `items`; the reason when not.
    fn items_given(&self, i: usize, items: &[String]) -> Result<(), Miss> {
        let f = &self.facts[i];
        let answers = || f.answers.clone();
        let given = items
            .iter()
            .filter(|item| {
                !self
                    .stated(Kind::Entity, &FactValue::Text((*item).clone()), None)
                    .is_empty()
            })
            .count();
        let need = f.min.unwrap_or(items.len());
        let near = items
            .iter()
            .filter(|item| {
                self.stated(Kind::Entity, &FactValue::Text((*item).clone()), None)
                    .is_empty()
                    && self.near_form(item)
            })
            .count();
        if given < need && given + near >= need && !self.distractor_stated(i) {
            return Err(Miss::Undecided {
                answers: answers(),
                why: Unreadable::NearForm {
                    value: f.value.clone(),
                },
            });
        }
        if given < need {
            return Err(Miss::TooFewItems {
                answers: answers(),
                given,
                need,
            });
        }
        Ok(())
    }

    /// Whether fact `i`'s single value is stated, for its own `about`, in the main text and
    /// without doubt; where its last statement ends when so, the reason when not.
    fn value_given(
        &self,
        i: usize,
        dir: Direction,
        place: Place,
        siblings: &[usize],
    ) -> Result<usize, Miss> {
        let f = &self.facts[i];
        let answers = || f.answers.clone();
        let mine = |s: &Range<usize>| self.bind(s, f.kind, dir) == Some(Owner::Fact(i));
        let spans = self.stated(f.kind, &f.value, f.tol);
        if spans.is_empty()
            && let FactValue::Text(name) = &f.value
            && matches!(f.kind, Kind::Entity | Kind::Choice)
            && self.near_form(name)
            && !self.distractor_stated(i)
        {
            return Err(Miss::Undecided {
                answers: answers(),
                why: Unreadable::NearForm {
                    value: f.value.clone(),
                },
            });
        }
        if spans.is_empty() {
            return Err(Miss::NotStated {
                answers: answers(),
                value: f.value.clone(),
            });
        }
        if place.binding && !spans.iter().any(mine) {
            return Err(Miss::NotForAbout {
                answers: answers(),
                value: f.value.clone(),
                about: f.about.clone(),
            });
        }
        if place.in_order && !self.in_asked_order(i, siblings) {
            return Err(Miss::OutOfOrder {
                answers: answers(),
                value: f.value.clone(),
            });
        }
        // A fact alone of its type, whose `about` the answer names: the value the
        // answer gives right after that `about` must be the fact's ("The average is
        // 6.5; Lindgren gave a 7" gives 6.5 for the average).
        if !place.binding && place.anchored && self.other_value_for_about(i) {
            return Err(Miss::NotForAbout {
                answers: answers(),
                value: f.value.clone(),
                about: f.about.clone(),
            });
        }
        // The value only in an aside while the main text gives another of its type
        // ("the pass at 148 (the 219 headphones were in March)").
        if !place.binding && self.only_aside(i, &spans) {
            return Err(Miss::OnlyAside {
                answers: answers(),
                value: f.value.clone(),
            });
        }
        if spans.iter().any(|s| self.hedged(f.kind, s)) {
            return Err(Miss::Hedged {
                answers: answers(),
                value: f.value.clone(),
            });
        }
        Ok(spans.iter().map(|s| s.end).max().unwrap_or(0))
    }

    /// Whether the answer gives none of fact `i`'s distractors as the answer; undecided
    /// when a distractor stands bare where the rules cannot tell what it answers.
    fn no_distractor_given(
        &self,
        i: usize,
        dir: Direction,
        binding: bool,
        concluded: bool,
        last_mine: usize,
    ) -> Result<(), Miss> {
        let f = &self.facts[i];
        let answers = || f.answers.clone();
        let mine = |s: &Range<usize>| self.bind(s, f.kind, dir) == Some(Owner::Fact(i));
        let my_spans = match &f.value {
            FactValue::Items(_) => Vec::new(),
            v => self.stated(f.kind, v, f.tol),
        };
        let mut undecided = None;
        for (j, d) in f.distractors.iter().enumerate() {
            let kind = if f.kind == Kind::List {
                Kind::Entity
            } else {
                f.kind
            };
            for s in self.stated(kind, &d.value, f.tol) {
                let own = !d.about.is_empty()
                    && DIRECTIONS
                        .iter()
                        .any(|dd| self.bind(&s, f.kind, *dd) == Some(Owner::Distractor(i, j)));
                let given = || {
                    Err(Miss::DistractorGiven {
                        answers: answers(),
                        distractor: d.value.clone(),
                    })
                };
                // Offered as an alternative to the value ("19 July (or 19 June)").
                if f.kind != Kind::List && self.hedged_with(&s, &my_spans) {
                    return given();
                }
                // A distractor by its own `about` is context ("his pass cost 74").
                if own {
                    continue;
                }
                if concluded {
                    if s.start >= last_mine {
                        return given();
                    }
                    continue;
                }
                // A list's extra item, or a value bound to a sibling's `about`.
                if f.kind == Kind::List || binding {
                    if f.kind == Kind::List || mine(&s) {
                        return given();
                    }
                    continue;
                }
                // One fact of its type: a distractor by the fact's own `about` is given as
                // the answer unless it is an aside (in parentheses, in the working, the
                // runner-up of a comparison); an aside is context; anything else leaves
                // the rules unable to say which value answers.
                let aside = self.aside(&s);
                let by_my_about = DIRECTIONS
                    .iter()
                    .any(|dd| self.bind(&s, f.kind, *dd) == Some(Owner::Fact(i)));
                if by_my_about && !aside {
                    return given();
                }
                if !aside && !by_my_about {
                    undecided.get_or_insert(Miss::Undecided {
                        answers: answers(),
                        why: Unreadable::BareDistractor {
                            value: f.value.clone(),
                            distractor: d.value.clone(),
                        },
                    });
                }
            }
        }
        undecided.map_or(Ok(()), Err)
    }
}

impl Judge<'_> {
    /// Whether the facts `mine` (of one kind) hold with values bound in `dir`: a miss of
    /// any decides; undecided when one is undecided and none misses.
    fn kind_one_way(&self, mine: &[usize], dir: Direction) -> Result<(), Miss> {
        let mut undecided = None;
        for &i in mine {
            match self.fact(i, dir) {
                Ok(()) => {}
                Err(m) if m.is_undecided() => {
                    undecided.get_or_insert(m);
                }
                Err(m) => return Err(m),
            }
        }
        undecided.map_or(Ok(()), Err)
    }

    /// A choice whose comparative the answer uses: each use of it picks the option stated
    /// nearest before it in its sentence (else nearest after), and the fact's value must be
    /// picked and no other option ("Horta Viva - vegan, 4.7 (the higher)").
    fn picked_choice(&self, i: usize) -> Result<(), Miss> {
        let f = &self.facts[i];
        let mut options: Vec<(Range<usize>, bool)> = self
            .stated(f.kind, &f.value, f.tol)
            .into_iter()
            .map(|s| (s, true))
            .collect();
        for d in &f.distractors {
            options.extend(
                self.stated(f.kind, &d.value, f.tol)
                    .into_iter()
                    .map(|s| (s, false)),
            );
        }
        let mut picked = Vec::new();
        for (a, _, _) in self.anchors.iter().filter(|(_, o, _)| *o == Owner::Fact(i)) {
            let sentence = self.r.sentence_of(a.start);
            let inside = |s: &Range<usize>| s.start >= sentence.start && s.end <= sentence.end;
            let before = options
                .iter()
                .filter(|(s, _)| inside(s) && s.end <= a.start)
                .max_by_key(|(s, _)| s.end);
            let after = options
                .iter()
                .filter(|(s, _)| inside(s) && s.start >= a.end)
                .min_by_key(|(s, _)| s.start);
            if let Some((_, mine)) = before.or(after) {
                picked.push(*mine);
            }
        }
        match (picked.contains(&true), picked.contains(&false)) {
            (true, false) => Ok(()),
            (_, true) => Err(Miss::OtherPicked {
                answers: f.answers.clone(),
            }),
            // The comparative is used but neither option is named in a form the matcher
            // knows ("the full 486 at once is cheaper"), and no doubt is voiced.
            (false, false)
                if options.is_empty()
                    && !self.r.phrase_among(
                        &lexicon().uncertain,
                        self.r.words_in(&(0..self.r.canon.len())),
                    ) =>
            {
                Err(Miss::Undecided {
                    answers: f.answers.clone(),
                    why: Unreadable::NearForm {
                        value: f.value.clone(),
                    },
                })
            }
            (false, false) => Err(Miss::NotPicked {
                answers: f.answers.clone(),
                value: f.value.clone(),
            }),
        }
    }

    /// Whether any of fact `i`'s distractors is stated (not denied) in the answer.
    fn distractor_stated(&self, i: usize) -> bool {
        let f = &self.facts[i];
        let kind = if f.kind == Kind::List {
            Kind::Entity
        } else {
            f.kind
        };
        f.distractors
            .iter()
            .any(|d| !self.stated(kind, &d.value, f.tol).is_empty())
    }

    /// Whether every word of `name` that carries meaning is in the answer, some only in a
    /// near form: a word sharing its first four letters or more, and at least three fifths
    /// of the shorter of the two ("dental" for "dentist", "headphone" for "headphones").
    /// Such a name is neither stated nor clearly absent.
    fn near_form(&self, name: &str) -> bool {
        let want: Vec<String> = words(&canonical(name))
            .into_iter()
            .map(|w| w.folded)
            .filter(|w| w.chars().count() >= 4)
            .collect();
        if want.is_empty() {
            return false;
        }
        let close = |a: &str, b: &str| {
            let common = a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
            let shorter = a.chars().count().min(b.chars().count());
            common >= 4 && common * 5 >= shorter * 3
        };
        let mut near = false;
        for w in &want {
            if self.r.ws.iter().any(|a| &a.folded == w) {
                continue;
            }
            if !self.r.ws.iter().any(|a| close(&a.folded, w)) {
                return false;
            }
            near = true;
        }
        near
    }

    /// Values of `kind` written in the answer (not denied), with whether each is fact `i`'s.
    fn values_of_kind(&self, i: usize) -> Vec<(Range<usize>, bool)> {
        let f = &self.facts[i];
        let tol = f.tol.unwrap_or(1e-3);
        let all: Vec<(Range<usize>, bool)> = match (&f.value, f.kind) {
            (FactValue::Number(n), _) => {
                // Digits of a time, date or duration are not numbers of their own here.
                let canon = &self.r.canon;
                let mut other: Vec<Range<usize>> =
                    time_spans(canon).into_iter().map(|(s, _)| s).collect();
                other.extend(date_spans(canon).into_iter().map(|(s, _)| s));
                other.extend(duration_spans(canon).into_iter().map(|(s, _)| s));
                number_spans(canon)
                    .into_iter()
                    .filter(|(s, _)| !other.iter().any(|o| o.start < s.end && s.start < o.end))
                    .map(|(s, x)| (s, (x - n).abs() <= tol))
                    .collect()
            }
            (FactValue::Date(d), _) => date_spans(&self.r.canon)
                .into_iter()
                .map(|(s, m)| (s, m.is(*d)))
                .collect(),
            (FactValue::Time(t), _) => time_spans(&self.r.canon)
                .into_iter()
                .map(|(s, x)| (s, x == *t))
                .collect(),
            (FactValue::Duration(m), _) => duration_spans(&self.r.canon)
                .into_iter()
                .map(|(s, x)| (s, (x - m).abs() < 0.5))
                .collect(),
            _ => Vec::new(),
        };
        all.into_iter()
            .filter(|(s, _)| !self.r.negated(s, false))
            .collect()
    }

    /// Whether, right after an `about` of fact `i` (to the end of its clause), the answer
    /// gives values of the fact's type and none of them is the fact's.
    fn other_value_for_about(&self, i: usize) -> bool {
        let values = self.values_of_kind(i);
        if values.is_empty() {
            return false;
        }
        self.anchors
            .iter()
            .filter(|(_, o, _)| *o == Owner::Fact(i))
            .any(|(a, _, _)| {
                let limit = self.r.after_limit(a.end);
                // Values in parentheses are asides, not what the answer gives for it.
                let after: Vec<&(Range<usize>, bool)> = values
                    .iter()
                    .filter(|(s, _)| s.start >= a.end && s.end <= limit && !self.in_parens(s.start))
                    .collect();
                !after.is_empty() && !after.iter().any(|(_, mine)| *mine)
            })
    }

    /// Whether the text between two spans (in either order) only offers an alternative:
    /// "or", possibly with "maybe", "perhaps", "possibly", "either" and punctuation.
    fn alternative_between(&self, a: &Range<usize>, b: &Range<usize>) -> bool {
        let (first, second) = if a.start <= b.start { (a, b) } else { (b, a) };
        if first.end > second.start {
            return false;
        }
        let between = &self.r.canon[first.end..second.start];
        let ws: Vec<String> = words(between).into_iter().map(|w| w.folded).collect();
        let rest: String = between
            .chars()
            .filter(|c| !c.is_alphanumeric() && !c.is_whitespace())
            .collect();
        ws.iter().any(|w| w == "or")
            && ws.len() <= 3
            && ws
                .iter()
                .all(|w| matches!(w.as_str(), "or" | "maybe" | "perhaps" | "possibly"))
            && rest.chars().all(|c| matches!(c, '(' | ')' | ','))
    }

    /// Whether the distractor at `s` is offered as an alternative to one of `mine`.
    fn hedged_with(&self, s: &Range<usize>, mine: &[Range<usize>]) -> bool {
        mine.iter().any(|m| self.alternative_between(s, m))
    }

    /// Whether the value at `span` is offered as one of alternatives: "or" joins it to
    /// another number of its type ("19 or 20 June", "14:00 or 15:00", "either 5 or 6").
    fn hedged(&self, kind: Kind, span: &Range<usize>) -> bool {
        if !matches!(
            kind,
            Kind::Amount | Kind::Number | Kind::Count | Kind::Date | Kind::Time | Kind::Duration
        ) {
            return false;
        }
        let canon = &self.r.canon;
        let mut others: Vec<Range<usize>> =
            number_spans(canon).into_iter().map(|(s, _)| s).collect();
        others.extend(date_spans(canon).into_iter().map(|(s, _)| s));
        others.extend(time_spans(canon).into_iter().map(|(s, _)| s));
        others
            .iter()
            .filter(|o| o.end <= span.start || o.start >= span.end)
            .any(|o| self.alternative_between(o, span))
    }

    /// Whether the text before `pos` leaves a parenthesis open.
    fn in_parens(&self, pos: usize) -> bool {
        let before = &self.r.canon[..pos];
        before.matches('(').count() > before.matches(')').count()
    }

    /// Whether fact `i` (an amount, date or time) is stated only inside parentheses at
    /// `spans` while outside them the answer gives another value of its type (for an
    /// amount, one written as money: a currency next to it).
    fn only_aside(&self, i: usize, spans: &[Range<usize>]) -> bool {
        let f = &self.facts[i];
        if !matches!(f.kind, Kind::Amount | Kind::Date | Kind::Time)
            || spans.iter().any(|s| !self.in_parens(s.start))
        {
            return false;
        }
        let canon = &self.r.canon;
        let money = |s: &Range<usize>| {
            let before: String = canon[..s.start].chars().rev().take(5).collect::<String>();
            let after: String = canon[s.end..].chars().take(5).collect();
            let sign = |t: &str| t.chars().any(|c| matches!(c, '£' | '$' | '€' | '¥'));
            let code = |t: &str| {
                let t = t.to_ascii_uppercase();
                ["EUR", "GBP", "USD", "SEK", "CHF", "NOK", "DKK"]
                    .iter()
                    .any(|c| t.contains(c))
            };
            sign(&before) || sign(&after) || code(&before) || code(&after)
        };
        // Another fact's value of the type is no rival ("The Calton Stair (140-190 EUR)
        // and a car at 44 EUR").
        let others: Vec<&Fact> = self
            .facts
            .iter()
            .enumerate()
            .filter(|(k, g)| *k != i && g.kind == f.kind)
            .map(|(_, g)| g)
            .collect();
        let canon_values = self.values_of_kind(i);
        // A distractor stated is the distractors' rule's to judge.
        let distractor = |s: &Range<usize>| {
            f.distractors
                .iter()
                .any(|d| value_spans(&self.r, f.kind, &d.value, f.tol).contains(s))
        };
        canon_values.iter().any(|(s, mine)| {
            !mine
                && !self.in_parens(s.start)
                && !distractor(s)
                && (f.kind != Kind::Amount || money(s))
                && !others
                    .iter()
                    .any(|g| value_spans(&self.r, g.kind, &g.value, g.tol).contains(s))
        })
    }

    /// Whether the value at `s` is an aside rather than the answer: inside parentheses,
    /// part of the working (next to an arithmetic sign or word), or in a clause that
    /// compares ("than", a comparative: the runner-up).
    fn aside(&self, s: &Range<usize>) -> bool {
        let canon = &self.r.canon;
        let before = &canon[..s.start];
        if self.in_parens(s.start) {
            return true;
        }
        let prev = before.trim_end().chars().last();
        let next = canon[s.end..].trim_start().chars().next();
        let sign = |c: Option<char>| {
            c.is_some_and(|c| matches!(c, '+' | '-' | '=' | '*' | '/' | '\u{d7}'))
        };
        if sign(prev) || sign(next) {
            return true;
        }
        let arithmetic = |w: &str| matches!(w, "x" | "minus" | "plus" | "times" | "less" | "of");
        let prev_word = self.r.ws.iter().rev().find(|w| w.span.end <= s.start);
        let next_word = self.r.ws.iter().find(|w| w.span.start >= s.end);
        let adjacent = |w: &Word| {
            let gap = if w.span.end <= s.start {
                &canon[w.span.end..s.start]
            } else {
                &canon[s.end..w.span.start]
            };
            gap.chars().all(|c| !c.is_alphanumeric()) && gap.len() <= 3
        };
        if prev_word.is_some_and(|w| adjacent(w) && arithmetic(&w.folded) && w.folded != "of")
            || next_word.is_some_and(|w| {
                adjacent(w) && matches!(w.folded.as_str(), "x" | "minus" | "plus" | "times")
            })
        {
            return true;
        }
        let clause = self.r.clause_of(s.start);
        let idx = self.r.words_in(&clause);
        let lx = lexicon();
        idx.clone().any(|k| self.r.ws[k].folded == "than")
            || lx.comparisons.iter().any(|[up, down]| {
                idx.clone()
                    .any(|k| up.iter().chain(down).any(|p| p.at(&self.r.ws, k).is_some()))
            })
    }

    /// Whether fact `i`'s value is first stated after every earlier sibling's and before
    /// every later one's.
    fn in_asked_order(&self, i: usize, siblings: &[usize]) -> bool {
        let first = |k: usize| {
            let f = &self.facts[k];
            self.stated(f.kind, &f.value, f.tol)
                .first()
                .map(|s| s.start)
        };
        let Some(me) = first(i) else {
            return false;
        };
        siblings.iter().all(|&k| match first(k) {
            None => true,
            Some(other) => (k < i) == (other < me),
        })
    }
}

/// Judges a set of facts against an answer: the facts of each type hold with their values
/// bound one way (all to the nearest `about` before them in their sentence, all to the
/// nearest after them in their clause, or all to the nearest on either side), so a swapped
/// pair fails however the answer is laid out. The reason of the first failure otherwise.
pub fn judge(facts: &[Fact], answer: &str) -> Result<(), Miss> {
    let j = Judge::new(facts, answer);
    let mut undecided: Option<Miss> = None;
    let mut kinds: Vec<Kind> = Vec::new();
    for f in facts {
        if !kinds.contains(&f.kind) {
            kinds.push(f.kind);
        }
    }
    for kind in kinds {
        let mine: Vec<usize> = (0..facts.len())
            .filter(|&i| facts[i].kind == kind)
            .collect();
        // The facts of a kind hold when they hold one way; undecided when one way reads
        // them undecided and none holds; the first way's miss otherwise.
        let mut first_miss: Option<Miss> = None;
        for dir in DIRECTIONS {
            match j.kind_one_way(&mine, dir) {
                Ok(()) => {
                    first_miss = None;
                    break;
                }
                Err(e) => {
                    if first_miss.as_ref().is_none_or(|m| !m.is_undecided()) && e.is_undecided() {
                        first_miss = Some(e);
                    } else {
                        first_miss.get_or_insert(e);
                    }
                }
            }
        }
        // A miss of one kind decides the answer; an undecided kind waits for the others.
        match first_miss {
            Some(m) if m.is_undecided() => {
                undecided.get_or_insert(m);
            }
            Some(m) => return Err(m),
            None => {}
        }
    }
    undecided.map_or(Ok(()), Err)
}

/// What an answer says on a proposition ([`read_verdict_split`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VerdictRead {
    Given(bool),
    /// Clauses naming it disagree and no concluding clause settles it.
    Split,
    None,
}

/// The verdict an answer gives on the proposition named by `about`, `None` when it gives
/// none or the rules cannot decide ([`read_verdict_split`]).
pub fn read_verdict(r: &Reading, about: &[String], opener: bool) -> Option<bool> {
    match read_verdict_split(r, about, opener, None) {
        VerdictRead::Given(v) => Some(v),
        _ => None,
    }
}

/// Words that open a concluding clause: where the clauses naming a proposition disagree,
/// the last conclusion decides.
const CONCLUDING: [&str; 5] = ["so", "therefore", "thus", "hence", "meaning"];

/// The verdict an answer gives on the proposition named by `about`: an explicit yes or no
/// opening a sentence; else the clauses that name the proposition or its opposite, each
/// turned around by a negation in it: a concluding clause's verdict ("so ...") when there
/// is one ([`VerdictRead::Split`] when two conclusions disagree), else the first's.
/// Doubt ("not sure") leaves no verdict. Given the quantity asked about, a clause that
/// bounds it ("groups of up to 16") gives its verdict by comparison ([`bounded_verdict`]).
pub fn read_verdict_split(
    r: &Reading,
    about: &[String],
    opener: bool,
    asked: Option<f64>,
) -> VerdictRead {
    let lx = lexicon();
    for sentence in r.sentences.iter().filter(|_| opener) {
        let idx = r.words_in(sentence);
        let mut i = idx.start;
        while i < idx.end && lx.chatter.iter().any(|p| p.at(&r.ws, i).is_some()) {
            i = idx.end; // a sentence of chatter ("No problem!") says nothing
        }
        if i >= idx.end {
            continue;
        }
        // "Short answer: no" and "Answer - yes" open with a label.
        if matches!(r.ws[i].folded.as_str(), "answer" | "short" | "verdict") {
            i = (i + 1..idx.end)
                .find(|&k| r.ws[k].folded != "answer")
                .unwrap_or(idx.end);
        }
        if i >= idx.end {
            continue;
        }
        let at = |list: &[Phrase]| list.iter().find_map(|p| p.at(&r.ws, i));
        if at(&lx.no).is_some() {
            return VerdictRead::Given(false);
        }
        // "There is no…" is not a yes: a negation right after the opener turns it.
        if let Some(n) = at(&lx.yes) {
            let turned = (i + n..(i + n + 2).min(idx.end))
                .any(|k| lx.negation.iter().any(|p| p.at(&r.ws, k).is_some()));
            if !turned {
                return VerdictRead::Given(true);
            }
        }
    }
    let whole = r.words_in(&(0..r.canon.len()));
    if r.phrase_among(&lx.uncertain, whole) {
        return VerdictRead::None;
    }
    let mut read: Vec<(bool, bool)> = Vec::new();
    for clause in &r.clauses {
        let idx = r.words_in(clause);
        let mut named = false;
        let mut opposite = false;
        for term in about {
            let same: Vec<Phrase> = lexicon().synonyms_of(term);
            let sides = lx.sides_of(term);
            let hit = |list: &[Phrase]| {
                idx.clone()
                    .any(|k| list.iter().any(|p| p.at(&r.ws, k).is_some()))
            };
            named |= hit(&same) || sides.as_ref().is_some_and(|(s, _)| hit(s));
            opposite |= sides.as_ref().is_some_and(|(_, o)| hit(o));
        }
        if let Some(x) = asked.filter(|_| named || opposite)
            && let Some(v) = bounded_verdict(r, idx.clone(), x)
        {
            let concluding = is_concluding(r, &idx);
            read.push((if opposite { !v } else { v }, concluding));
            continue;
        }
        if named || opposite {
            let negated = r.phrase_among(&lx.negation, idx.clone());
            // "Waived" denies "charged"; "not waived" affirms it.
            let concluding = is_concluding(r, &idx);
            read.push((if opposite { negated } else { !negated }, concluding));
        }
    }
    // A concluding clause settles a disagreement; otherwise the first clause naming the
    // proposition gives the verdict and the later ones its reasons ("You won't be charged;
    // well over 1,500 is paid in"). Two conclusions that disagree leave it undecided.
    let conclusions: Vec<bool> = read.iter().filter(|(_, c)| *c).map(|(v, _)| *v).collect();
    match (read.first(), conclusions.first()) {
        (None, _) => VerdictRead::None,
        (Some(_), Some(c)) if conclusions.iter().any(|x| x != c) => VerdictRead::Split,
        (Some(_), Some(c)) => VerdictRead::Given(*c),
        (Some((v, _)), None) => VerdictRead::Given(*v),
    }
}

/// Whether the clause of words `idx` opens with a concluding word ("so ...").
fn is_concluding(r: &Reading, idx: &Range<usize>) -> bool {
    idx.clone()
        .next()
        .is_some_and(|k| CONCLUDING.contains(&r.ws[k].folded.as_str()))
}

/// The verdict of a clause (words `idx`) that bounds a quantity ("up to 16", "no more than
/// ten") on the quantity `asked`: whether the bound admits it, turned around by a negation
/// outside the bound ("can't take more than 10"). `None` when the clause states no bound.
fn bounded_verdict(r: &Reading, idx: Range<usize>, asked: f64) -> Option<bool> {
    if idx.is_empty() {
        return None;
    }
    let lx = lexicon();
    let numbers = number_spans(&r.canon);
    let clause = r.ws[idx.start].span.start..r.ws[idx.end.checked_sub(1)?].span.end;
    for k in idx.clone() {
        for (phrase, bound) in &lx.bounds {
            let Some(n) = phrase.at(&r.ws, k) else {
                continue;
            };
            let after = k + n;
            // The number starts at one of the next two words ("a maximum of 16").
            let Some((_, limit)) = numbers.iter().find(|(span, _)| {
                clause.contains(&span.start)
                    && (after..(after + 2).min(idx.end)).any(|w| r.ws[w].span.start == span.start)
            }) else {
                continue;
            };
            let outside: Vec<usize> = idx.clone().filter(|w| !(k..after).contains(w)).collect();
            let negated = outside.iter().any(|&w| {
                lx.negation
                    .iter()
                    .any(|p| p.at(&r.ws, w).is_some_and(|m| w + m <= k || w >= after))
            });
            return Some(bound.admits(*limit, asked) != negated);
        }
    }
    None
}

/// For a choice compared by a comparative ("X is cheaper than Y", "Y is pricier than X"):
/// whether the comparison picks the fact's value (`None` when no comparison names it).
fn compared_choice(r: &Reading, f: &Fact) -> Option<bool> {
    let (same, other) = f.about.iter().find_map(|a| lexicon().sides_of(a))?;
    let mine = value_spans(r, f.kind, &f.value, None);
    let theirs: Vec<Range<usize>> = f
        .distractors
        .iter()
        .flat_map(|d| value_spans(r, f.kind, &d.value, None))
        .collect();
    for (k, w) in r.ws.iter().enumerate() {
        if w.folded != "than" {
            continue;
        }
        let sentence = r.sentence_of(w.span.start);
        let before = k.saturating_sub(3)..k;
        let hit = |list: &[Phrase]| {
            before
                .clone()
                .any(|i| list.iter().any(|p| p.at(&r.ws, i).is_some()))
        };
        let direction = if hit(&same) {
            true
        } else if hit(&other) {
            false
        } else {
            continue;
        };
        let last_before = |spans: &[Range<usize>]| {
            spans
                .iter()
                .filter(|s| s.end <= w.span.start && s.start >= sentence.start)
                .map(|s| s.end)
                .max()
        };
        let first_after = |spans: &[Range<usize>]| {
            spans
                .iter()
                .filter(|s| s.start >= w.span.end && s.end <= sentence.end)
                .map(|s| s.start)
                .min()
        };
        let subject_is_mine = match (last_before(&mine), last_before(&theirs)) {
            (Some(a), Some(b)) => a > b,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => continue,
        };
        let object_is_mine = match (first_after(&mine), first_after(&theirs)) {
            (Some(a), Some(b)) => a < b,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => !subject_is_mine,
        };
        if subject_is_mine == object_is_mine {
            continue;
        }
        return Some(subject_is_mine == direction);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(yaml: &str) -> Vec<Fact> {
        let f: Facts = serde_saphyr::from_str(yaml).unwrap();
        f.0
    }

    fn ok(yaml: &str, answer: &str) -> bool {
        judge(&facts(yaml), answer).is_ok()
    }

    const TICKETS: &str = "[{count: 14, answers: opened, about: opened}, {count: 11, answers: closed, about: closed}]";

    #[test]
    fn a_remembered_verdict_is_the_judges_for_each_answer() {
        let f: Facts = serde_saphyr::from_str(TICKETS).unwrap();
        let answers = [
            "Opened: 14. Closed: 11.",
            "Opened: 11. Closed: 14.",
            "14 and 11.",
            "",
        ];
        for round in 0..2 {
            for a in answers {
                assert_eq!(f.hold_in(a), judge(&f.0, a).is_ok(), "round {round}: {a}");
            }
        }
        // A clone judges afresh and agrees.
        let g = f.clone();
        assert_eq!(g, f);
        assert!(g.hold_in(answers[0]) && !g.hold_in(answers[1]));
    }

    #[test]
    fn two_counts_must_not_be_swapped() {
        for yes in [
            "This week 14 tickets were opened and 11 were closed.",
            "Opened: 14. Closed: 11.",
            "- **Opened:** fourteen\n- **Closed:** eleven",
            "There were 14 new tickets and 11 got resolved.",
            "11 closed, 14 opened.",
            // With no `about` written at all, values answer in the order asked.
            "14 and 11.",
        ] {
            assert!(ok(TICKETS, yes), "{yes}");
        }
        for no in [
            "This week 11 tickets were opened and 14 were closed.",
            "Opened: 11. Closed: 14.",
            "11 and 14.",
            "11 tickets opened and 14 closed.",
            "Opened: 15. Closed: 11.",
        ] {
            assert!(!ok(TICKETS, no), "{no}");
        }
    }

    #[test]
    fn a_distractor_with_its_own_about_is_context_not_the_answer() {
        let f = "[{amount: 14, answers: what Jonas owes, about: owe, distractors: [{value: 74, about: cost}, {value: 60, about: [sent, paid]}]}]";
        assert!(ok(
            f,
            "Jonas still owes you 14.00 - his pass cost 74.00 and he sent you 60.00."
        ));
        assert!(ok(
            f,
            "His pass cost 74 and he paid 60, so 14 is still outstanding."
        ));
        assert!(!ok(f, "Jonas still owes you 60.00; he paid 14."));
        assert!(!ok(f, "He owes 74."));
        let bare = "[{date: 2026-06-19, answers: dispatch day, distractors: [2026-07-19]}]";
        assert!(ok(bare, "It now ships on 19 June, not 19 July."));
        assert!(!ok(bare, "It ships on 19 July."));
        assert!(!ok(bare, "It ships on 19 July (or 19 June)."));
    }

    fn verdict(yaml: &str, answer: &str) -> AnswerVerdict {
        AnswerVerdict::of(&judge(&facts(yaml), answer))
    }

    #[test]
    fn a_stated_bound_gives_the_verdict_on_the_quantity_asked() {
        let fits = "- {verdict: yes, asked: 12, answers: whether twelve fit, about: [group, take]}";
        for (answer, want) in [
            ("They take groups of up to sixteen.", AnswerVerdict::Right),
            ("Groups of at most 10 only.", AnswerVerdict::Wrong),
            (
                "They can take a maximum of 12 in a group.",
                AnswerVerdict::Right,
            ),
            (
                "They can't take a group of more than 10.",
                AnswerVerdict::Wrong,
            ),
            (
                "They take no more than eight per group.",
                AnswerVerdict::Wrong,
            ),
            (
                "Bookings for a group need at least 15 people.",
                AnswerVerdict::Wrong,
            ),
            (
                "They take any group of fewer than 20.",
                AnswerVerdict::Right,
            ),
            // No bound stated: the clause's own words decide, as before.
            ("Yes, they can take the group.", AnswerVerdict::Right),
            ("They cannot take a group that size.", AnswerVerdict::Wrong),
        ] {
            assert_eq!(verdict(fits, answer), want, "{answer}");
        }
        let wrong = serde_json::json!({"count": 3, "asked": 2, "answers": "x"});
        assert!(matches!(
            Fact::try_from(wrong),
            Err(FactError::AskedWithoutVerdict)
        ));
    }

    #[test]
    fn a_correct_answer_that_shows_its_working_passes() {
        let owe = "[{amount: 14, answers: what Jonas owes, about: owe, distractors: [{value: 74, about: [cost, pass]}, {value: 60, about: [sent, paid]}]}]";
        for yes in [
            "**£14.00** is still outstanding (pass £74.00, repaid £60.00 on 6 May).",
            "74 - 60 = 14, so Jonas still owes you 14.",
            "He still owes you £14 (£74 minus the £60 he returned).",
        ] {
            assert_eq!(verdict(owe, yes), AnswerVerdict::Right, "{yes}");
        }
        // The distractor given for the fact's own `about` is still the wrong answer.
        assert_eq!(
            verdict(owe, "Jonas still owes you 60.00; he paid 14."),
            AnswerVerdict::Wrong
        );
        // The runner-up named beside a bare distractor: context, not the answer.
        let flight = "[{code: SK2548, answers: the flight, distractors: [U22071]}]";
        assert_eq!(
            verdict(
                flight,
                "SK 2548 - it lands at 10:05. easyJet's U2 2071 costs more."
            ),
            AnswerVerdict::Right
        );
        // Both stated and nothing says which answers: the rules do not guess.
        assert_eq!(
            verdict(flight, "SK 2548. U2 2071."),
            AnswerVerdict::Undecided
        );
        let avg = "[{number: 7, answers: the average, about: average, distractors: [{value: 5, about: [lowest]}]}]";
        assert_eq!(
            verdict(avg, "Average: (5 + 7 + 9) / 3 = 7. Lowest: 5."),
            AnswerVerdict::Right
        );
    }

    #[test]
    fn a_hedge_is_not_a_pass() {
        let date = "[{date: 2026-06-20, answers: dispatch day}]";
        for hedge in [
            "It ships on 19 or 20 June.",
            "It ships on 20 or 21 June.",
            "Either 20 June or 21 June.",
        ] {
            assert_ne!(verdict(date, hedge), AnswerVerdict::Right, "{hedge}");
        }
        assert_eq!(verdict(date, "It ships on 20 June."), AnswerVerdict::Right);
        let amount = "[{amount: 14, answers: what is owed, distractors: [15]}]";
        assert_eq!(verdict(amount, "14 or 15."), AnswerVerdict::Wrong);
        assert_eq!(
            verdict(amount, "About 14 or maybe 16."),
            AnswerVerdict::Wrong
        );
    }

    #[test]
    fn about_binds_a_fact_alone_of_its_type() {
        let avg = "[{number: 7, answers: the average survey score, about: average}, {entity: Skerry, answers: the lowest}]";
        for no in [
            "The average score is 6.5; the lowest came from Skerry (5), and Lindgren gave a 7.",
            "The average score is 6.8 - Skerry gave the lowest (5); Lindgren and Nordvik scored 7.",
        ] {
            assert_eq!(verdict(avg, no), AnswerVerdict::Wrong, "{no}");
        }
        assert_eq!(
            verdict(
                avg,
                "The average score is 7.0; the lowest is Skerry with 5."
            ),
            AnswerVerdict::Right
        );
    }

    #[test]
    fn the_value_only_in_an_aside_beside_another_is_not_the_answer() {
        let f = "[{amount: 219, answers: what it cost}]";
        assert_eq!(
            verdict(
                f,
                "The biggest was the pass at £148. (The £219 headphones were in March.)"
            ),
            AnswerVerdict::Wrong
        );
        assert_eq!(
            verdict(f, "The Verity headphones (£219, on 17 April)."),
            AnswerVerdict::Right
        );
        assert_eq!(
            verdict(f, "You bought 2 things that day (£219 the headphones)."),
            AnswerVerdict::Right
        );
    }

    #[test]
    fn what_the_rules_cannot_read_is_undecided_not_wrong() {
        let dentist = "[{entity: dentist, answers: the first appointment}]";
        assert_eq!(
            verdict(dentist, "Friday starts with a dental check-up at 8:00."),
            AnswerVerdict::Undecided
        );
        assert_eq!(
            verdict(dentist, "Friday starts with the sprint review."),
            AnswerVerdict::Wrong
        );
        // Another fact missed decides the answer whatever is undecided.
        let two =
            "[{entity: dentist, answers: the first appointment}, {time: '08:00', answers: when}]";
        assert_eq!(
            verdict(two, "A dental check-up at 9:00."),
            AnswerVerdict::Wrong
        );
        // A concluding clause settles the verdict; two that disagree leave it undecided.
        let open = "[{verdict: yes, answers: whether it is open, about: open}]";
        assert_eq!(
            verdict(
                open,
                "It was open, so it is closed now, so it is open again."
            ),
            AnswerVerdict::Undecided
        );
        assert_eq!(
            verdict(open, "It was closed last week, so it is open now."),
            AnswerVerdict::Right
        );
    }

    #[test]
    fn verdicts_through_the_lexicon() {
        let f = "[{verdict: no, answers: whether the fee applies, about: [pay, charged]}]";
        for yes in [
            "No.",
            "Short answer: no.",
            "**No** - it is waived because your salary covers it.",
            "You won't have to pay it.",
            "Nope, you will not be charged.",
            "Sure! Short answer: no.",
            "The fee is waived every month.",
        ] {
            assert!(ok(f, yes), "{yes}: {:?}", judge(&facts(f), yes));
        }
        for no in [
            "Yes, you will have to pay it.",
            "You will be charged 3.50.",
            "I'm not sure.",
            "",
        ] {
            assert!(!ok(f, no), "{no}");
        }
        let open = "[{verdict: yes, answers: open at 20:00, about: open}]";
        assert!(ok(open, "Yes - it's open until 23:00."));
        assert!(ok(open, "It opens at 19:00, so you're fine."));
        assert!(!ok(open, "It is closed on Saturdays."));
        assert!(!ok(open, "It is not open then."));
    }

    #[test]
    fn choices_read_comparisons_both_ways() {
        let f = "[{choice: Horta Viva, answers: rated higher, about: higher, distractors: [Sakura Ribeira]}]";
        assert!(ok(f, "Horta Viva is rated higher than Sakura Ribeira."));
        assert!(ok(f, "Sakura Ribeira is rated lower than Horta Viva."));
        assert!(ok(f, "Horta Viva has the higher rating."));
        assert!(!ok(f, "Sakura Ribeira is rated higher than Horta Viva."));
        assert!(!ok(f, "Horta Viva is rated lower than Sakura Ribeira."));
        assert!(!ok(f, "Sakura Ribeira."));
    }

    #[test]
    fn lists_need_every_item_unless_min_says_otherwise() {
        let f = "[{list: [Oliver Grant, Priya Nair, Daniel Osei], answers: who is invited}]";
        assert!(ok(f, "- Oliver Grant\n- Priya Nair\n- Daniel Osei"));
        assert!(!ok(f, "Oliver Grant and Priya Nair."));
        let some = "[{list: [river, tram, quiet], answers: what guests say, min: 1}]";
        assert!(ok(some, "Guests love the river views."));
        assert!(!ok(some, "Guests love the breakfast."));
    }

    #[test]
    fn bad_facts_are_refused_with_the_reason() {
        for (bad, why) in [
            ("[{count: 1.5, answers: x}]", "whole number"),
            ("[{count: 3}]", "`answers`"),
            ("[{count: 3, amount: 2, answers: x}]", "exactly one type"),
            ("[{verdict: maybe, answers: x, about: y}]", "yes or no"),
            ("[{verdict: yes, answers: x}]", "needs `about`"),
            ("[{choice: A, answers: x}]", "other options"),
            (
                "[{count: 3, answers: x, distractors: [3]}]",
                "equals the answer",
            ),
            (
                "[{count: 3, answers: x, colour: red}]",
                "unknown fact field",
            ),
            ("[{list: [a, b], answers: x, min: 3}]", "between 1"),
        ] {
            let err = serde_saphyr::from_str::<Facts>(bad)
                .unwrap_err()
                .to_string();
            assert!(err.contains(why), "{bad}: {err}");
        }
        let round: Facts = serde_saphyr::from_str(TICKETS).unwrap();
        let back: Facts = serde_json::from_value(serde_json::to_value(&round).unwrap()).unwrap();
        assert_eq!(round, back);
    }

    #[test]
    fn a_malformed_value_says_what_its_type_needs() {
        use serde_json::json;
        let e = parse_duration("soon").unwrap_err();
        assert_eq!(
            e,
            DurationError {
                text: "soon".into()
            }
        );
        assert_eq!(
            e.to_string(),
            "`soon` is not a duration like `90 min`, `2 hours` or `5 days`"
        );
        let refused = |kind: Kind, v: Value| FactValue::parse(kind, &v).unwrap_err();
        let e = refused(Kind::Duration, json!("90 minutes or so"));
        assert!(
            matches!(&e, ValueError::Duration(d) if d.text == "90 minutes or so"),
            "{e:?}"
        );
        let e = refused(Kind::Count, json!(1.5));
        assert!(
            matches!(e, ValueError::NotWhole { got } if got == 1.5),
            "{e:?}"
        );
        assert_eq!(e.to_string(), "a count is a whole number, got 1.5");
        let e = refused(Kind::Amount, json!("lots"));
        assert!(
            matches!(&e, ValueError::NotNumber { kind: Kind::Amount, got } if got == "lots"),
            "{e:?}"
        );
        assert_eq!(e.to_string(), "a amount needs a number, got \"lots\"");
        let e = refused(Kind::Entity, json!(" - "));
        assert!(
            matches!(
                &e,
                ValueError::NotText {
                    kind: Kind::Entity,
                    ..
                }
            ),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "a entity needs a non-empty string, got \" - \""
        );
        let e = refused(Kind::List, json!("Oliver"));
        assert!(matches!(e, ValueError::NotList), "{e:?}");
        assert_eq!(e.to_string(), "a list needs a list of names");
        let e = refused(Kind::List, json!([]));
        assert!(matches!(e, ValueError::EmptyList), "{e:?}");
        assert_eq!(e.to_string(), "a list needs at least one item");
        let e = refused(Kind::Verdict, json!("maybe"));
        assert!(
            matches!(&e, ValueError::NotVerdict { got } if got == "maybe"),
            "{e:?}"
        );
        assert_eq!(e.to_string(), "a verdict is yes or no, got \"maybe\"");
        let e = refused(Kind::Date, json!("2026-02-30"));
        assert!(
            matches!(&e, ValueError::Date(DateError::Calendar { .. })),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            parse_date("2026-02-30").unwrap_err().to_string()
        );
        let e = refused(Kind::Time, json!("noon"));
        assert!(
            matches!(&e, ValueError::Time(TimeError::Form { .. })),
            "{e:?}"
        );
        assert_eq!(e.to_string(), "`noon` is not a time HH:MM");
    }

    #[test]
    fn a_malformed_fact_names_the_field_and_keeps_the_value_error_as_its_source() {
        use serde_json::json;
        let refused = |v: Value| Fact::try_from(v).unwrap_err();
        let e = refused(json!({"count": 1.5, "answers": "x"}));
        assert!(
            matches!(&e, FactError::Value { key, source: ValueError::NotWhole { .. } } if key == "count"),
            "{e:?}"
        );
        assert_eq!(e.to_string(), "`count`: a count is a whole number, got 1.5");
        assert_eq!(
            std::error::Error::source(&e).map(ToString::to_string),
            Some("a count is a whole number, got 1.5".to_string())
        );
        let cases = [
            (
                json!([1]),
                "a fact is a map like `{count: 14, answers: …}`, got [1]",
            ),
            (
                json!({"count": 3, "amount": 2, "answers": "x"}),
                "a fact names exactly one type as its key (amount, number, count, date, time, duration, entity, code, list, verdict, choice), found 2",
            ),
            (
                json!({"count": 3, "answers": "x", "colour": "red"}),
                "unknown fact field `colour`; expected the type and: answers, about, distractors, min, tol, derived, opener, asked",
            ),
            (
                json!({"count": 3}),
                "`answers` (what the fact answers, in words) is required",
            ),
            (
                json!({"count": 3, "answers": "x", "about": 3}),
                "`about` is a string or a list of strings, got 3",
            ),
            (
                json!({"count": 3, "answers": "x", "about": ["a", 3]}),
                "`about` holds strings, got 3",
            ),
            (
                json!({"verdict": "yes", "answers": "x"}),
                "a verdict needs `about`: the words of the proposition it answers",
            ),
            (
                json!({"count": 3, "answers": "x", "distractors": [{"about": "y"}]}),
                "distractors[0] needs `value`",
            ),
            (
                json!({"count": 3, "answers": "x", "distractors": [4, "five"]}),
                "distractors[1]: a count needs a number, got \"five\"",
            ),
            (
                json!({"count": 3, "answers": "x", "distractors": 4}),
                "`distractors` is a list, got 4",
            ),
            (
                json!({"choice": "A", "answers": "x"}),
                "a choice needs `distractors`: the other options",
            ),
            (
                json!({"list": ["a", "b"], "answers": "x", "min": -1}),
                "`min` is a whole number",
            ),
            (
                json!({"list": ["a", "b"], "answers": "x", "min": 3}),
                "`min` must be between 1 and the list's 2 items",
            ),
            (
                json!({"amount": 3, "answers": "x", "tol": "small"}),
                "`tol` is a number",
            ),
            (
                json!({"verdict": "no", "answers": "x", "about": "y", "opener": "no"}),
                "`opener` is true or false",
            ),
        ];
        for (v, text) in cases {
            assert_eq!(refused(v.clone()).to_string(), text, "{v}");
        }
        assert!(matches!(
            refused(json!({"count": 3, "answers": "x", "distractors": [4, "five"]})),
            FactError::Distractor {
                n: 1,
                source: ValueError::NotNumber {
                    kind: Kind::Count,
                    ..
                }
            }
        ));
        assert!(matches!(
            refused(json!({"list": ["a", "b"], "answers": "x", "min": 3})),
            FactError::MinOutOfRange { items: 2 }
        ));
    }

    #[test]
    fn a_malformed_facts_check_names_the_fact_by_its_place() {
        use serde_json::json;
        let e = Facts::try_from(Vec::new()).unwrap_err();
        assert!(matches!(e, FactsError::Empty), "{e:?}");
        assert_eq!(e.to_string(), "`facts` needs at least one fact");
        let e = Facts::try_from(vec![
            json!({"count": 3, "answers": "x"}),
            json!({"count": 4}),
        ])
        .unwrap_err();
        assert!(
            matches!(
                e,
                FactsError::Fact {
                    n: 1,
                    source: FactError::NoAnswers
                }
            ),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "facts[1]: `answers` (what the fact answers, in words) is required"
        );
        let e = Facts::try_from(vec![
            json!({"amount": 3, "answers": "x", "distractors": [2, 3.0]}),
        ])
        .unwrap_err();
        assert!(
            matches!(
                &e,
                FactsError::DistractorIsAnswer { n: 0, k: 1, value: FactValue::Number(v) } if *v == 3.0
            ),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "facts[0]: distractors[1] equals the answer (3)"
        );
        // Read from YAML, the suite loader sees the same words.
        let err = serde_saphyr::from_str::<Facts>("[{count: 3, answers: x, distractors: [3]}]")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("facts[0]: distractors[0] equals the answer (3)"),
            "{err}"
        );
    }

    #[test]
    fn a_missed_fact_says_how_the_answer_misses_it() {
        let miss = |yaml: &str, answer: &str| judge(&facts(yaml), answer).unwrap_err();
        let n = FactValue::Number;
        let cases = [
            (
                miss(TICKETS, "Opened: 15. Closed: 11."),
                Miss::NotStated {
                    answers: "opened".into(),
                    value: n(14.0),
                },
                "opened: 14 is not stated",
            ),
            (
                miss(TICKETS, "Opened: 11. Closed: 14."),
                Miss::NotForAbout {
                    answers: "opened".into(),
                    value: n(14.0),
                    about: vec!["opened".into()],
                },
                "opened: 14 is not given for opened",
            ),
            (
                miss(TICKETS, "11 and 14."),
                Miss::OutOfOrder {
                    answers: "opened".into(),
                    value: n(14.0),
                },
                "opened: 14 is not given in the order asked",
            ),
            (
                miss(
                    "[{verdict: no, answers: whether the fee applies, about: [pay, charged]}]",
                    "Yes, you will have to pay it.",
                ),
                Miss::Opposite {
                    answers: "whether the fee applies".into(),
                },
                "whether the fee applies: the answer says the opposite",
            ),
            (
                miss(
                    "[{verdict: no, answers: whether the fee applies, about: [pay, charged]}]",
                    "I'm not sure.",
                ),
                Miss::NoVerdict {
                    answers: "whether the fee applies".into(),
                },
                "whether the fee applies: the answer gives no verdict",
            ),
            (
                miss(
                    "[{date: 2026-06-19, answers: dispatch day, distractors: [2026-07-19]}]",
                    "It ships on 19 July (or 19 June).",
                ),
                Miss::Hedged {
                    answers: "dispatch day".into(),
                    value: FactValue::Date(jiff::civil::date(2026, 6, 19)),
                },
                "dispatch day: 2026-06-19 is hedged with another value",
            ),
            (
                miss(
                    "[{list: [Oliver Grant, Priya Nair, Daniel Osei], answers: who is invited}]",
                    "Oliver Grant and Priya Nair.",
                ),
                Miss::TooFewItems {
                    answers: "who is invited".into(),
                    given: 2,
                    need: 3,
                },
                "who is invited: 2 of the 3 items needed",
            ),
        ];
        for (got, want, text) in cases {
            assert_eq!(got, want);
            assert_eq!(got.to_string(), text);
        }
        let choice = "[{choice: Horta Viva, answers: rated higher, about: higher, distractors: [Sakura Ribeira]}]";
        let cases = [
            (
                "Sakura Ribeira is rated higher than Horta Viva.",
                Miss::ComparedOther {
                    answers: "rated higher".into(),
                },
                "rated higher: the comparison picks another option",
            ),
            (
                "Sakura Ribeira has the higher rating.",
                Miss::OtherPicked {
                    answers: "rated higher".into(),
                },
                "rated higher: another option is picked",
            ),
            (
                "The higher rating is unclear.",
                Miss::NotPicked {
                    answers: "rated higher".into(),
                    value: FactValue::Text("Horta Viva".into()),
                },
                "rated higher: Horta Viva is not picked",
            ),
        ];
        for (answer, want, text) in cases {
            let got = miss(choice, answer);
            assert_eq!(got, want, "{answer}");
            assert_eq!(got.to_string(), text, "{answer}");
        }
    }

    #[test]
    fn durations_in_minutes() {
        assert_eq!(parse_duration("90 min").unwrap(), 90.0);
        assert_eq!(parse_duration("2 hours").unwrap(), 120.0);
        let r = Reading::new("It takes an hour and a half, then 1 hour 30 minutes back.");
        let got: Vec<f64> = duration_spans(&r.canon)
            .into_iter()
            .map(|(_, m)| m)
            .collect();
        assert!(got.iter().filter(|m| **m == 90.0).count() >= 2, "{got:?}");
    }

    mod props {
        use super::super::*;
        use crate::suite::perturb::value_forms;
        use proptest::prelude::*;

        fn pair(a: u32, b: u32) -> Vec<Fact> {
            let yaml = format!(
                "[{{count: {a}, answers: opened, about: opened}}, {{count: {b}, answers: closed, about: closed}}]"
            );
            serde_saphyr::from_str::<Facts>(&yaml).unwrap().0
        }

        proptest! {
            #[test]
            fn a_pair_of_counts_is_read_in_place_and_refused_swapped(a in 0u32..5000, b in 0u32..5000) {
                prop_assume!(a != b);
                let f = pair(a, b);
                let right = [
                    format!("Opened: {a}. Closed: {b}."),
                    format!("{a} tickets were opened and {b} were closed."),
                    format!("- closed: {b}\n- opened: {a}"),
                ];
                for text in right {
                    prop_assert!(judge(&f, &text).is_ok(), "{} {:?}", text, judge(&f, &text));
                }
                let swapped = [
                    format!("Opened: {b}. Closed: {a}."),
                    format!("{b} tickets were opened and {a} were closed."),
                ];
                for text in swapped {
                    prop_assert!(judge(&f, &text).is_err(), "{}", text);
                }
            }

            #[test]
            fn every_form_of_an_amount_is_the_amount_and_one_off_is_not(cents in 1u64..10_000_000) {
                let v = cents as f64 / 100.0;
                let yaml = format!("[{{amount: {v}, answers: the total}}]");
                let f = serde_saphyr::from_str::<Facts>(&yaml).unwrap().0;
                for (form, why) in value_forms(Kind::Amount, &FactValue::Number(v)) {
                    let text = format!("The total is {form}.");
                    prop_assert!(judge(&f, &text).is_ok(), "{} ({})", text, why);
                }
                let off = format!("The total is {}.", format_number(v + 1.0));
                prop_assert!(judge(&f, &off).is_err(), "{}", off);
            }

            #[test]
            fn judging_never_panics(text in "\\PC{0,80}") {
                let f = pair(3, 4);
                let _ = judge(&f, &text);
                let v: Vec<Fact> = serde_saphyr::from_str::<Facts>(
                    "[{verdict: no, answers: whether open, about: [open]}, {choice: A, answers: which, about: cheaper, distractors: [B]}]",
                ).unwrap().0;
                let _ = judge(&v, &text);
            }
        }
    }
}
