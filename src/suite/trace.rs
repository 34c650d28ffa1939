//! Whether a fact shows in what the agent has read: the one test the provenance proof
//! and the reorderings a varied agent may make both apply. Facts are compared as a model
//! would recognise them (a date in any written form, a code with or without its
//! separators, a name ignoring case and accents), never by searching the environment.

use super::meaning::{
    DateMention, Tokens, canonical, date_spans, fold, number_spans, numbers_in, parse_date,
    parse_time, time_spans,
};
use jiff::civil::{Date, Time};
use regex::Regex;
use serde_json::Value;
use std::collections::HashSet;
use std::sync::{LazyLock, OnceLock};

/// A range of days within one month, "14-17 September": its first day is a date a
/// reader sees as much as its last.
static DAY_RANGE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b(\d{1,2})\s*(?:-|–|to)\s*\d{1,2}(?:st|nd|rd|th)?\s+([A-Za-z]{3,9})\b")
        .expect("valid range pattern")
});

/// An account number written in groups of four, as IBANs are printed
/// ("GB24 PNDR 6004 1531 2066 88").
static GROUPED_CODE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b[A-Z]{2}\d{2}(?: [A-Z0-9]{4}){2,}(?: [A-Z0-9]{1,3})?\b")
        .expect("valid code pattern")
});

/// Text the agent has read, searched as it is and folded. What each question needs of it
/// (its canonical form, numbers, dates, times, code tokens) is worked out at the first
/// question that needs it and kept: a view answers any number of facts, and a view of a
/// large environment that is never asked for a date never reads one.
#[derive(Debug)]
pub struct View {
    text: String,
    folded: String,
    /// The text through [`canonical`], which every reading below starts from.
    canon: OnceLock<String>,
    /// Every whole number written as a token of its own ("06" in "2026-05-06" is 6).
    integers: OnceLock<HashSet<u64>>,
    /// Every number written in the text (`meaning::numbers_in`).
    numbers: OnceLock<Vec<f64>>,
    /// Every date written in the text, in any form (`meaning::date_spans`).
    dates: OnceLock<Vec<DateMention>>,
    /// Every time of day written in the text (`meaning::time_spans`).
    times: OnceLock<Vec<Time>>,
    /// The text's tokens as codes are read from them.
    tokens: OnceLock<Tokens>,
}

impl View {
    pub fn new(text: String) -> View {
        let folded = format!(" {} ", fold(&text));
        // The first day of a written range, as a date of its own.
        let starts: Vec<String> = DAY_RANGE
            .captures_iter(&text)
            .map(|c| format!("{} {}", &c[1], &c[2]))
            .collect();
        let text = if starts.is_empty() {
            text
        } else {
            format!("{text}\n{}", starts.join("\n"))
        };
        View {
            text,
            folded,
            canon: OnceLock::new(),
            integers: OnceLock::new(),
            numbers: OnceLock::new(),
            dates: OnceLock::new(),
            times: OnceLock::new(),
            tokens: OnceLock::new(),
        }
    }

    /// The text as read (with the first day of each written range added).
    pub fn text(&self) -> &str {
        &self.text
    }

    fn canon(&self) -> &str {
        self.canon.get_or_init(|| canonical(&self.text))
    }
}

/// What a reader can tell of text it has read: the questions [`shows_in`] asks of it.
/// One text ([`View`]) or several read apart ([`Reading`]).
pub trait Seen {
    /// Whether the folded words of `s` occur as whole words.
    fn has_words(&self, s: &str) -> bool;
    /// Whether the date is written, in any form.
    fn has_date(&self, d: Date) -> bool;
    /// Whether the time of day is written, in any form.
    fn has_time(&self, t: Time) -> bool;
    /// Whether the code is written, with or without its separators.
    fn has_code(&self, code: &str) -> bool;
    /// Whether the number is written as a number, or a whole number as a token of its own.
    fn has_number(&self, n: f64) -> bool;
}

impl Seen for View {
    fn has_words(&self, s: &str) -> bool {
        let f = fold(s);
        f.is_empty() || self.folded.contains(&format!(" {f} "))
    }

    fn has_date(&self, d: Date) -> bool {
        // As `meaning::mentions_date`, with the dates kept.
        self.dates
            .get_or_init(|| {
                date_spans(self.canon())
                    .into_iter()
                    .map(|(_, m)| m)
                    .collect()
            })
            .iter()
            .any(|m| m.is(d))
    }

    fn has_time(&self, t: Time) -> bool {
        // As `meaning::mentions_time`, with the times kept.
        self.times
            .get_or_init(|| {
                time_spans(self.canon())
                    .into_iter()
                    .map(|(_, t)| t)
                    .collect()
            })
            .contains(&t)
    }

    fn has_code(&self, code: &str) -> bool {
        // As `meaning::mentions_code`, with the tokens kept.
        !self
            .tokens
            .get_or_init(|| Tokens::of(self.canon()))
            .code_spans(code)
            .is_empty()
    }

    fn has_number(&self, n: f64) -> bool {
        // As `meaning::numbers_in`, with the numbers kept.
        let numbers = self.numbers.get_or_init(|| {
            number_spans(self.canon())
                .into_iter()
                .map(|(_, n)| n)
                .collect()
        });
        let integers = || {
            self.integers.get_or_init(|| {
                self.folded
                    .split(' ')
                    .filter_map(|t| t.parse::<u64>().ok())
                    .collect()
            })
        };
        numbers.iter().any(|m| (m - n).abs() <= 1e-9)
            || (n.fract() == 0.0 && n >= 0.0 && integers().contains(&(n as u64)))
    }
}

/// Several texts read one by one, as an agent reads the messages of a conversation: a
/// fact's part shows when some message shows it, and nothing written across the end of
/// one message and the start of the next is read as one word, number or date.
#[derive(Debug, Default)]
pub struct Reading(pub Vec<std::sync::Arc<View>>);

impl Seen for Reading {
    fn has_words(&self, s: &str) -> bool {
        fold(s).is_empty() || self.0.iter().any(|v| v.has_words(s))
    }

    fn has_date(&self, d: Date) -> bool {
        self.0.iter().any(|v| v.has_date(d))
    }

    fn has_time(&self, t: Time) -> bool {
        self.0.iter().any(|v| v.has_time(t))
    }

    fn has_code(&self, code: &str) -> bool {
        self.0.iter().any(|v| v.has_code(code))
    }

    fn has_number(&self, n: f64) -> bool {
        self.0.iter().any(|v| v.has_number(n))
    }
}

/// The facts a value states, as the provenance proof traces them. A value without
/// whitespace (an IBAN, a channel, a file name, a date) is one fact; free text the agent
/// composes (a message body, a subject) is not traced as a whole, but the codes and
/// numbers written in it are: an account, an address, a reference or an amount in a
/// message is as much a fact as one given alone.
pub fn facts_of(value: &Value) -> Vec<Value> {
    match value {
        Value::String(s) if is_prose(s) => text_facts(s),
        // An address with a query or a list joined by commas is composed of its parts.
        Value::String(s) if s.contains(['?', '&', '=', ',']) => s
            .split(['?', '&', '=', ','])
            .filter(|p| !p.trim().is_empty())
            .map(|p| Value::String(p.trim().to_string()))
            .collect(),
        Value::Array(items) => items.iter().flat_map(facts_of).collect(),
        Value::Object(map) => map.values().flat_map(facts_of).collect(),
        Value::Bool(_) | Value::Null => Vec::new(),
        v => vec![v.clone()],
    }
}

/// Whether a string is text the agent composes rather than one fact: it has spaces
/// ("Half of the vet bill"), or is one word closing a sentence ("Attached.").
fn is_prose(s: &str) -> bool {
    let t = s.trim();
    t.contains(char::is_whitespace)
        || (t.ends_with(['.', '!', '?']) && !t.contains(|c: char| c.is_ascii_digit()))
}

/// The codes and numbers written in free text: a token with a digit and a letter, an
/// `@`, or a dot or slash between letters or digits (an address, a file, a URL) is a
/// code; every numeral is a number.
pub fn text_facts(text: &str) -> Vec<Value> {
    // An account number written in groups is one code.
    let mut grouped: Vec<Value> = Vec::new();
    let text = GROUPED_CODE.replace_all(text, |c: &regex::Captures| {
        grouped.push(Value::String(c[0].replace(' ', "")));
        " ".repeat(c[0].len())
    });
    let text = text.as_ref();
    let is_code = |t: &str| {
        let chars: Vec<char> = t.chars().collect();
        let inner_mark = chars
            .windows(3)
            .any(|w| matches!(w[1], '.' | '/') && w[0].is_alphanumeric() && w[2].is_alphanumeric());
        let digit = t.chars().any(|c| c.is_ascii_digit());
        let letter = t.chars().any(char::is_alphabetic);
        // "1st", "28th": a day of a date, read as its number.
        let lower = t.to_lowercase();
        let ordinal = ["st", "nd", "rd", "th"].iter().any(|s| {
            lower
                .strip_suffix(s)
                .is_some_and(|d| !d.is_empty() && d.chars().all(|c| c.is_ascii_digit()))
        });
        if ordinal {
            return false;
        }
        (digit && letter) || t.contains('@') || (inner_mark && letter)
    };
    let mut out: Vec<Value> = grouped;
    out.extend(
        text.split_whitespace()
            .map(|t| t.trim_matches(|c: char| !c.is_alphanumeric()))
            .filter(|t| is_code(t))
            .map(|t| Value::String(t.to_string())),
    );
    let in_codes = |n: f64| {
        out.iter()
            .any(|c| c.as_str().is_some_and(|c| numbers_in(c).contains(&n)))
    };
    let numbers: Vec<Value> = numbers_in(text)
        .into_iter()
        .filter(|n| !in_codes(*n))
        .filter_map(|n| serde_json::Number::from_f64(n).map(Value::Number))
        .collect();
    out.extend(numbers);
    out
}

/// Whether the fact `value` shows in `view`: a date or time in any written form, a code
/// with or without its separators, a name as whole folded words, a number as a number
/// (or, for a whole number, as a token of its own, the day in "2026-10-20").
pub fn shows_in(view: &(impl Seen + ?Sized), value: &Value) -> bool {
    match value {
        Value::String(s) => {
            if let Ok(d) = parse_date(s) {
                let time_ok = s
                    .trim()
                    .get(11..)
                    .and_then(|t| parse_time(t).ok())
                    .is_none_or(|t| view.has_time(t));
                return (view.has_date(d) || view.has_words(s)) && time_ok;
            }
            view.has_words(s) || view.has_code(s)
        }
        Value::Number(n) => n.as_f64().is_some_and(|n| view.has_number(n)),
        Value::Array(items) => items.iter().all(|i| shows_in(view, i)),
        Value::Object(map) => map.values().all(|v| shows_in(view, v)),
        Value::Bool(_) | Value::Null => true,
    }
}

/// Shows a fact as the suite file writes it.
pub fn show(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        v => v.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn free_text_is_traced_by_the_codes_and_numbers_in_it() {
        let facts = text_facts(
            "Urgent ticket 8812: see brightloom.dev/incidents/2026-10-09, mail ops@x.io, pay 1,015.00 to GB33BUKB20201555555555 or GB24 PNDR 6004 1531 2066 88.",
        );
        for want in [
            json!("brightloom.dev/incidents/2026-10-09"),
            json!("ops@x.io"),
            json!("GB33BUKB20201555555555"),
            json!("GB24PNDR60041531206688"),
            json!(8812.0),
            json!(1015.0),
        ] {
            assert!(facts.contains(&want), "{want} not in {facts:?}");
        }
        assert!(text_facts("Thanks, see you at lunch.").is_empty());
    }

    #[test]
    fn a_fact_shows_as_a_model_would_read_it_and_not_inside_other_words() {
        let view = View::new(
            "Release 4.2 ships on 20 October 2026. Pay GB33 BUKB 2020 1555 5555 55, ref DSP-4471. Channel #launch."
                .into(),
        );
        for shown in [
            json!("2026-10-20"),
            json!("GB33BUKB20201555555555"),
            json!("dsp-4471"),
            json!("launch"),
            json!(4.2),
            json!(20),
        ] {
            assert!(shows_in(&view, &shown), "{shown}");
        }
        for hidden in [
            json!("lunch"),
            json!("2026-10-21"),
            json!("DSP-447"),
            json!(4.3),
        ] {
            assert!(!shows_in(&view, &hidden), "{hidden}");
        }
        // A day written zero-padded inside a date is that day; a range shows its first day.
        let view = View::new("Paid on 2026-05-06. Porto 14-17 September.".into());
        assert!(shows_in(&view, &json!(6)));
        assert!(shows_in(&view, &json!("2026-09-14")));
        assert!(shows_in(&view, &json!("2026-09-17")));
        assert!(!shows_in(&view, &json!("2026-09-15")));
    }

    #[test]
    fn an_address_with_a_query_is_traced_by_its_parts() {
        let facts = facts_of(&json!("site.io/check?members=Dana,Arjun"));
        assert_eq!(
            facts,
            vec![
                json!("site.io/check"),
                json!("members"),
                json!("Dana"),
                json!("Arjun")
            ]
        );
        let view =
            View::new("Open site.io/check?members= with the names. Members: Dana, Arjun.".into());
        assert!(facts.iter().all(|f| shows_in(&view, f)));
    }
}
