//! Matching by meaning rather than spelling, for checks that judge a real model's words.
//!
//! A model says "19 June" where the reference says "2026-06-19", "1:40 pm" for "13:40",
//! "£1,500.00" for "1500", "Zurich" for "Zürich", "AA2301" for "AA 2301". Each function
//! here answers "does this text mention that value?" and normalises both sides the same
//! way, so a correct answer in other words passes and a close wrong one ("950" for "95")
//! fails. Calendar facts come from `jiff`, never from hand-written arithmetic.

pub use crate::text::{canonical, fold};
use jiff::civil::{Date, Time};
use regex::Regex;
use std::ops::Range;
use std::sync::LazyLock;
use unicode_normalization::UnicodeNormalization;

/// Whether `text` mentions the name or place `name` as whole words, ignoring case,
/// accents, whitespace and punctuation ("Café de Flore" = "cafe de flore";
/// "Rome" is not found in "Romeo").
pub fn mentions_name(text: &str, name: &str) -> bool {
    let needle = fold(name);
    if needle.is_empty() {
        return false;
    }
    let hay = format!(" {} ", fold(text));
    // The lexicon's equivalents count too ("Rd" for "Road"), as they do for entities.
    hay.contains(&format!(" {needle} ")) || !name_spans(&canonical(text), name).is_empty()
}

/// Whether `text` mentions the code (flight number, IBAN, booking reference, phone
/// number…) with or without spaces, hyphens, dots or slashes between its parts, in any
/// case. The code must start and end on a token boundary: "AA2301" is not in "AA23015".
pub fn mentions_code(text: &str, code: &str) -> bool {
    !code_spans(&canonical(text), code).is_empty()
}

/// Where [`mentions_code`] finds the code in `canon` (a text already passed through
/// [`canonical`]), as byte ranges.
pub fn code_spans(canon: &str, code: &str) -> Vec<Range<usize>> {
    Tokens::of(canon).code_spans(code)
}

/// A text's alphanumeric tokens as [`code_spans`] reads them (accents dropped, upper
/// case, with their byte ranges), in groups a code may span: tokens joined only by a
/// space, hyphen, dot or slash. Worked out once, a text answers any number of codes.
#[derive(Debug, Clone, Default)]
pub struct Tokens {
    /// Every token's characters, upper-cased, one token after another.
    letters: String,
    /// Each token: its share of `letters` and where the text holds it.
    tokens: Vec<(Range<usize>, Range<usize>)>,
    /// Each group: its tokens, as a range of `tokens`.
    groups: Vec<Range<usize>>,
}

impl Tokens {
    /// The tokens of `canon` (a text already passed through [`canonical`]).
    pub fn of(canon: &str) -> Tokens {
        // Tokens are alphanumeric runs (accents dropped); a code may span tokens joined by
        // these separators only, so a code is not assembled across a comma or a sentence.
        let mut out = Tokens::default();
        // The token being read: where its letters and its text begin.
        let mut begun: Option<(usize, usize)> = None;
        // The first token of the group being read.
        let mut group = 0;
        let close = |out: &mut Tokens, begun: &mut Option<(usize, usize)>, end: usize| {
            if let Some((letters, start)) = begun.take()
                && out.letters.len() > letters
            {
                out.tokens.push((letters..out.letters.len(), start..end));
            }
        };
        for (i, c) in canon.char_indices() {
            if c.is_alphanumeric() {
                // A token starts at its first character that has letters of its own.
                if begun.is_none_or(|(letters, _)| out.letters.len() <= letters) {
                    begun = Some((out.letters.len(), i));
                }
                if c.is_ascii() {
                    out.letters.push(c.to_ascii_uppercase());
                } else {
                    out.letters.extend(
                        c.nfkd()
                            .filter(|c| !unicode_normalization::char::is_combining_mark(*c))
                            .flat_map(char::to_uppercase),
                    );
                }
                continue;
            }
            close(&mut out, &mut begun, i);
            // `canonical` already made every dash `-` and every space ` `.
            if !matches!(c, ' ' | '-' | '.' | '/') {
                if out.tokens.len() > group {
                    out.groups.push(group..out.tokens.len());
                }
                group = out.tokens.len();
            }
        }
        close(&mut out, &mut begun, canon.len());
        if out.tokens.len() > group {
            out.groups.push(group..out.tokens.len());
        }
        out
    }

    /// Where the code stands among the tokens, as byte ranges of the text.
    pub fn code_spans(&self, code: &str) -> Vec<Range<usize>> {
        let want: String = code
            .chars()
            .filter(|c| c.is_alphanumeric())
            .flat_map(char::to_uppercase)
            .collect();
        if want.is_empty() {
            return Vec::new();
        }
        let mut out = Vec::new();
        for group in &self.groups {
            let tokens = &self.tokens[group.clone()];
            for first in 0..tokens.len() {
                // How much of the code the tokens from `first` on have spelled.
                let mut spelled = 0;
                for (letters, at) in &tokens[first..] {
                    if !want[spelled..].starts_with(&self.letters[letters.clone()]) {
                        break;
                    }
                    spelled += letters.len();
                    if spelled == want.len() {
                        out.push(tokens[first].1.start..at.end);
                        break;
                    }
                }
            }
        }
        out
    }
}

/// A word of a text with where it stands: its folded form ([`fold`]) and byte range.
#[derive(Clone, Debug)]
pub struct Word {
    pub span: Range<usize>,
    pub folded: String,
}

/// The words of `canon` (a text already passed through [`canonical`]): runs of letters
/// and digits, an apostrophe inside a word kept with it ("don't" is `dont`) except a
/// possessive `'s`, which is dropped ("Dev's" is `dev`).
pub fn words(canon: &str) -> Vec<Word> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    let chars: Vec<(usize, char)> = canon.char_indices().collect();
    for (k, &(i, c)) in chars.iter().enumerate() {
        let inner_apostrophe = c == '\''
            && start.is_some()
            && chars.get(k + 1).is_some_and(|(_, n)| n.is_alphanumeric());
        if c.is_alphanumeric() || inner_apostrophe {
            start.get_or_insert(i);
        } else if let Some(s) = start.take() {
            out.push(Word {
                span: s..i,
                folded: fold(possessive(&canon[s..i])),
            });
        }
    }
    if let Some(s) = start {
        out.push(Word {
            span: s..canon.len(),
            folded: fold(possessive(&canon[s..])),
        });
    }
    out.retain(|w| !w.folded.is_empty());
    out
}

/// `s` as its folded words joined by single spaces, possessives dropped: the form names
/// are compared in ("Arthur's Seat" is `arthur seat`).
pub fn fold_words(s: &str) -> String {
    words(&canonical(s))
        .into_iter()
        .map(|w| w.folded)
        .collect::<Vec<_>>()
        .join(" ")
}

/// A word without its possessive `'s` ("Dev's" is Dev).
fn possessive(w: &str) -> &str {
    w.strip_suffix("'s").unwrap_or(w)
}

/// Where the name (folded to words) stands in `canon` as a run of whole words, as byte
/// ranges: "Café de Flore" in "the CAFE DE FLORE." but not "Rome" in "Romeo".
pub fn name_spans(canon: &str, name: &str) -> Vec<Range<usize>> {
    let want: Vec<String> = words(&canonical(name))
        .into_iter()
        .flat_map(|w| w.folded.split(' ').map(str::to_string).collect::<Vec<_>>())
        .collect();
    if want.is_empty() {
        return Vec::new();
    }
    // A word may fold to several ("ﬁ" ligatures, "Saint-Tropez" is two words already).
    let ws: Vec<(Range<usize>, String)> = words(canon)
        .into_iter()
        .flat_map(|w| {
            w.folded
                .split(' ')
                .map(|p| (w.span.clone(), p.to_string()))
                .collect::<Vec<_>>()
        })
        .collect();
    (0..ws.len())
        .filter(|&i| {
            i + want.len() <= ws.len()
                && ws[i..i + want.len()]
                    .iter()
                    .zip(&want)
                    .all(|(w, x)| &w.1 == x)
        })
        .map(|i| ws[i].0.start..ws[i + want.len() - 1].0.end)
        .collect()
}

/// A numeral: digits with `.`, `,` or `'` between groups, or groups of three separated
/// by a space ("68 000", as Swedish and French write thousands; no-break spaces too).
static NUMBER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\d{1,3}(?: \d{3})+(?:[.,]\d+)?|\d+(?:[.,']\d+)*").expect("valid number pattern")
});

/// Reads one numeral's digits and separators as a value: the last of two different
/// separators is the decimal mark ("1.500,00" and "1,500.00" are both 1500); a comma or
/// apostrophe followed only by groups of three digits separates thousands; a single dot
/// is a decimal point; several dots separate thousands.
fn parse_numeral(s: &str) -> Option<f64> {
    // An apostrophe only ever separates thousands ("1'594.74", as the Swiss write): each
    // group after one is three digits, the last possibly followed by a decimal part.
    if s.contains('\'') {
        let mut groups = s.split('\'');
        let first = groups.next()?;
        let rest: Vec<&str> = groups.collect();
        let (last, middle) = rest.split_last()?;
        let three = |g: &str| g.len() == 3 && g.bytes().all(|b| b.is_ascii_digit());
        let tail_ok = last.len() >= 3
            && three(&last[..3])
            && (last.len() == 3
                || matches!(last.as_bytes()[3], b'.' | b',')
                    && last.len() > 4
                    && last[4..].bytes().all(|b| b.is_ascii_digit()));
        if first.is_empty() || !middle.iter().all(|g| three(g)) || !tail_ok {
            return None;
        }
        let joined: String = s.chars().filter(|c| *c != '\'').collect();
        let decimal = joined.replace(',', ".");
        return decimal.parse().ok();
    }
    let has = |c| s.contains(c);
    let cleaned = if has('.') && has(',') {
        let decimal = if s.rfind('.') > s.rfind(',') {
            '.'
        } else {
            ','
        };
        s.chars()
            .filter_map(|c| match c {
                c if c == decimal => Some('.'),
                '.' | ',' | '\'' => None,
                c => Some(c),
            })
            .collect::<String>()
    } else if has(',') || has('\'') {
        let groups: Vec<&str> = s.split([',', '\'']).collect();
        if groups[1..].iter().all(|g| g.len() == 3) {
            groups.concat()
        } else if groups.len() == 2 && !has('\'') {
            format!("{}.{}", groups[0], groups[1])
        } else {
            return None;
        }
    } else if s.matches('.').count() > 1 {
        let groups: Vec<&str> = s.split('.').collect();
        if !groups[1..].iter().all(|g| g.len() == 3) {
            return None;
        }
        groups.concat()
    } else {
        s.to_string()
    };
    cleaned.parse().ok()
}

/// Every number written in `text` as a whole token: currency signs and codes around it,
/// thousands separators and trailing zeros do not matter, and digits that belong to a
/// longer numeral, a word ("AA2301"), a time ("13:40") or a date ("2026-06-19") are not
/// numbers of their own. Two numerals joined by one hyphen or slash and nothing more are
/// a range or a score ("140-190 EUR" holds 140 and 190, "rated 4.4/5" holds 4.4); three
/// or more are a date or a phone number. Signs are ignored: debits are written many ways.
/// A scale after a numeral multiplies it ("2.5k", "68 thousand", "2.4 million"), and
/// numbers written in words count too ("fourteen", "twenty-three", "two hundred and five").
pub fn numbers_in(text: &str) -> Vec<f64> {
    number_spans(&canonical(text))
        .into_iter()
        .map(|(_, n)| n)
        .collect()
}

/// [`numbers_in`] with where each number stands, as byte ranges of `canon` (a text already
/// passed through [`canonical`]), in order of position.
pub fn number_spans(canon: &str) -> Vec<(Range<usize>, f64)> {
    let mut out = digit_spans(canon);
    out.extend(word_number_spans(canon));
    out.sort_by_key(|(r, _)| r.start);
    out
}

fn digit_spans(text: &str) -> Vec<(Range<usize>, f64)> {
    let chars_before = |i: usize| text[..i].chars().rev();
    let chars_after = |i: usize| text[i..].chars();
    let joined = |sep: Option<char>, next: Option<char>| {
        sep.is_some_and(|c| matches!(c, ':' | '/' | '-' | '.'))
            && next.is_some_and(|c| c.is_ascii_digit())
    };
    let found: Vec<regex::Match> = NUMBER.find_iter(text).collect();
    // (joined on the left, joined on the right, left sep, right sep) per numeral.
    let links: Vec<(bool, bool, Option<char>, Option<char>)> = found
        .iter()
        .map(|m| {
            let mut before = chars_before(m.start());
            let (b1, b2) = (before.next(), before.next());
            let mut after = chars_after(m.end());
            let (a1, a2) = (after.next(), after.next());
            (joined(b1, b2), joined(a1, a2), b1, a1)
        })
        .collect();
    let hyphen_pair = |left: usize| {
        found.get(left + 1).is_some_and(|next| {
            next.start() == found[left].end() + 1
                && matches!(links[left].3, Some('-' | '/'))
                && !links[left].0
                && !links[left + 1].1
        })
    };
    found
        .iter()
        .enumerate()
        .filter(|(i, m)| {
            let b1 = chars_before(m.start()).next();
            let a1 = chars_after(m.end()).next();
            if b1.is_some_and(char::is_alphanumeric) || a1.is_some_and(|c| c.is_ascii_digit()) {
                return false;
            }
            match (links[*i].0, links[*i].1) {
                (false, false) => true,
                (false, true) => hyphen_pair(*i),
                (true, false) => *i > 0 && hyphen_pair(i - 1),
                (true, true) => false,
            }
        })
        .filter_map(|(_, m)| {
            let compact: String = m.as_str().chars().filter(|c| *c != ' ').collect();
            let value = parse_numeral(&compact)?;
            let (scale, len) = scale_after(&text[m.end()..]);
            Some((m.start()..m.end() + len, value * scale))
        })
        .flat_map(|(span, value)| {
            // "2.850" is 2.85 in English and 2850 in German: both readings stand.
            let s = &text[span.clone()];
            let german = GERMAN_THOUSANDS
                .is_match(s)
                .then(|| (span.clone(), value * 1000.0));
            std::iter::once((span, value)).chain(german)
        })
        .collect()
}

/// One to three digits, a dot, three digits: a German thousands group or an English
/// decimal, which only the reader can tell apart.
static GERMAN_THOUSANDS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\d{1,3}\.\d{3}$").expect("valid pattern"));

/// A multiplier written right after a numeral: `k`/`K` directly ("2.5k"), or the words
/// thousand, million, billion after one space. Returns (factor, bytes it takes).
fn scale_after(rest: &str) -> (f64, usize) {
    let mut it = rest.char_indices();
    match it.next() {
        Some((_, 'k' | 'K')) if !rest[1..].starts_with(char::is_alphanumeric) => return (1e3, 1),
        Some((_, ' ')) => {}
        _ => return (1.0, 0),
    }
    let word: String = rest[1..]
        .chars()
        .take_while(|c| c.is_alphabetic())
        .collect();
    let factor = match word.to_lowercase().as_str() {
        "thousand" => 1e3,
        "million" | "mn" => 1e6,
        "billion" | "bn" => 1e9,
        _ => return (1.0, 0),
    };
    (factor, 1 + word.len())
}

/// Number words below twenty; [`TENS`] from twenty up. The reader parses them and the
/// perturbation corpus writes them (`perturb::number_words`).
pub(super) const UNITS: [&str; 20] = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
];
pub(super) const TENS: [&str; 8] = [
    "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety",
];

/// The value of one number word, and whether it is a scale (hundred, thousand, million).
fn number_word(w: &str) -> Option<(f64, bool)> {
    if let Some(i) = UNITS.iter().position(|u| *u == w) {
        return Some((i as f64, false));
    }
    if let Some(i) = TENS.iter().position(|t| *t == w) {
        return Some(((i as f64 + 2.0) * 10.0, false));
    }
    match w {
        "dozen" => Some((12.0, false)),
        "hundred" => Some((100.0, true)),
        "thousand" => Some((1e3, true)),
        "million" => Some((1e6, true)),
        _ => None,
    }
}

/// The runs of ASCII letters in `text`, with their byte ranges. A byte of a multi-byte
/// character is never an ASCII letter, so a run never splits a character.
fn ascii_words(text: &str) -> impl Iterator<Item = (Range<usize>, &str)> {
    let bytes = text.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < bytes.len() && !bytes[i].is_ascii_alphabetic() {
            i += 1;
        }
        let start = i;
        while i < bytes.len() && bytes[i].is_ascii_alphabetic() {
            i += 1;
        }
        (i > start).then(|| (start..i, &text[start..i]))
    })
}

/// Numbers written in words: runs of number words joined by spaces, hyphens or an `and`
/// after a scale ("two hundred and five"). "One" alone is a pronoun as often as a number
/// ("the one with hybrids"), so it counts only where a number is plainly meant.
fn word_number_spans(text: &str) -> Vec<(Range<usize>, f64)> {
    // ASCII lowercasing keeps byte offsets, so a word's range is the same in both.
    let lower = text.to_ascii_lowercase();
    let words: Vec<(Range<usize>, &str)> = ascii_words(&lower).collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let Some((first, _)) = number_word(words[i].1) else {
            i += 1;
            continue;
        };
        // Extend the run over adjacent number words.
        let mut j = i;
        let (mut total, mut current) = (0.0_f64, 0.0_f64);
        loop {
            let (v, scale) = number_word(words[j].1).expect("a number word");
            if scale {
                let base = if current == 0.0 { 1.0 } else { current };
                if v >= 1e3 {
                    total += base * v;
                    current = 0.0;
                } else {
                    current = base * v;
                }
            } else {
                current += v;
            }
            let last_scale = scale;
            let gap = |a: usize, b: usize| &text[words[a].0.end..words[b].0.start];
            let next = j + 1;
            if next < words.len()
                && matches!(gap(j, next), " " | "-")
                && number_word(words[next].1).is_some()
            {
                j = next;
                continue;
            }
            if last_scale
                && next + 1 < words.len()
                && words[next].1 == "and"
                && gap(j, next) == " "
                && gap(next, next + 1) == " "
                && number_word(words[next + 1].1).is_some_and(|(_, s)| !s)
            {
                j = next + 1;
                continue;
            }
            break;
        }
        let value = total + current;
        let single_one = i == j && first == 1.0;
        let before = text[..words[i].0.start].chars().next_back();
        let after = text[words[j].0.end..].chars().next();
        let glued = before.is_some_and(|c| c.is_alphanumeric() || c == '-')
            || after.is_some_and(|c| c.is_alphanumeric());
        if !(glued || single_one && one_is_pronoun(&words, i)) {
            out.push((words[i].0.start..words[j].0.end, value));
        }
        i = j + 1;
    }
    out
}

/// Whether the word "one" at `i` is a pronoun or determiner rather than the number 1.
fn one_is_pronoun(words: &[(Range<usize>, &str)], i: usize) -> bool {
    let prev = i.checked_sub(1).map(|p| words[p].1);
    let next = words.get(i + 1).map(|w| w.1);
    matches!(
        prev,
        Some(
            "the"
                | "this"
                | "that"
                | "which"
                | "each"
                | "any"
                | "no"
                | "every"
                | "another"
                | "only"
                | "a"
        )
    ) || matches!(
        next,
        None | Some("of" | "with" | "that" | "which" | "who" | "is" | "was" | "s" | "you" | "i")
    )
}

/// Whether `text` mentions the number `want` (within `tol`, exact when `None`).
pub fn mentions_number(text: &str, want: f64, tol: Option<f64>) -> bool {
    let tol = tol.unwrap_or(1e-9);
    numbers_in(text).iter().any(|n| (n - want).abs() <= tol)
}

const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// Month number from an English month name or its common abbreviation ("Sep", "Sept").
fn month_number(word: &str) -> Option<i8> {
    let w = word.to_lowercase();
    let w = w.trim_end_matches('.');
    if w.len() < 3 {
        return None;
    }
    MONTHS
        .iter()
        .position(|m| *m == w || (m.starts_with(w) && (w.len() == 3 || w == "sept")))
        .map(|i| i as i8 + 1)
}

static NUMERIC_DATE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:^|[^\d])(\d{1,4})([-/.])(\d{1,2})([-/.])(\d{1,4})(?:$|[^\d])")
        .expect("valid date pattern")
});
/// Day and month without a year: `19/06`, `6/19`, `19.06.`; not part of a longer numeral,
/// a score (`4.4/5`), a time or a range.
static SHORT_DATE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:^|[^\d/.:,-])(\d{1,2})([/.])(\d{1,2})(\.)?(?:$|[^\d/:-])")
        .expect("valid date pattern")
});
static DAY_MONTH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(\d{1,2})(?:st|nd|rd|th)?(?:\s+of)?\s+([a-z]{3,9})\.?(?:,?\s+(\d{4}))?\b")
        .expect("valid date pattern")
});
static MONTH_DAY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b([a-z]{3,9})\.?\s+(\d{1,2})(?:st|nd|rd|th)?\b(?:,?\s+(\d{4}))?")
        .expect("valid date pattern")
});

/// A date found in text; `year` is `None` when the text leaves it out ("19 June").
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DateMention {
    year: Option<i16>,
    month: i8,
    day: i8,
}

impl DateMention {
    fn new(year: Option<i16>, month: i8, day: i8) -> Option<DateMention> {
        // Reject impossible dates through the calendar, not by hand (a leap year's 29 February).
        Date::new(year.unwrap_or(2024), month, day).ok()?;
        Some(DateMention { year, month, day })
    }

    /// The year, when the text gives one.
    pub fn year(&self) -> Option<i16> {
        self.year
    }

    pub fn month(&self) -> i8 {
        self.month
    }

    pub fn day(&self) -> i8 {
        self.day
    }

    /// Whether this mention is the date `d`: same day and month, and the same year when
    /// the text gives one.
    pub fn is(&self, d: Date) -> bool {
        self.month == d.month() && self.day == d.day() && self.year.is_none_or(|y| y == d.year())
    }
}

/// Every date written in `text`: ISO (`2026-06-19`), day-first and month-first numeric
/// (`19/06/2026`, `06/19/2026`, `19.06.2026`; an ambiguous one counts both ways), numeric
/// without a year (`19/06`, `6/19`, `19.06.`), and written months (`19 June`, `19th of June
/// 2026`, `June 19, 2026`, `Jun 19`), weekday names allowed anywhere around them. Each with
/// its byte range in `canon` (a text already passed through [`canonical`]).
pub fn date_spans(canon: &str) -> Vec<(Range<usize>, DateMention)> {
    let mut found = Vec::new();
    for c in NUMERIC_DATE.captures_iter(canon) {
        if c[2] != c[4] {
            continue;
        }
        let span = c.get(1).expect("group").start()..c.get(5).expect("group").end();
        let (a, b, z) = (&c[1], &c[3], &c[5]);
        let num = |s: &str| s.parse::<i16>().ok();
        let (Some(x), Some(y), Some(w)) = (num(a), num(b), num(z)) else {
            continue;
        };
        let mut push = |m: Option<DateMention>| found.extend(m.map(|m| (span.clone(), m)));
        if a.len() == 4 {
            push(DateMention::new(Some(x), y as i8, w as i8));
        } else if z.len() == 4 {
            push(DateMention::new(Some(w), y as i8, x as i8));
            push(DateMention::new(Some(w), x as i8, y as i8));
        }
    }
    for c in SHORT_DATE.captures_iter(canon) {
        // "19.06" is as likely a price as a date: a dot needs the closing dot ("19.06.").
        if &c[2] == "." && c.get(4).is_none() {
            continue;
        }
        let end = c.get(4).unwrap_or(c.get(3).expect("group")).end();
        let span = c.get(1).expect("group").start()..end;
        let (Ok(x), Ok(y)) = (c[1].parse::<i8>(), c[3].parse::<i8>()) else {
            continue;
        };
        found.extend(DateMention::new(None, y, x).map(|m| (span.clone(), m)));
        if &c[2] == "/" {
            found.extend(DateMention::new(None, x, y).map(|m| (span.clone(), m)));
        }
    }
    for c in DAY_MONTH.captures_iter(canon) {
        let (Ok(day), Some(month)) = (c[1].parse::<i8>(), month_number(&c[2])) else {
            continue;
        };
        let year = c.get(3).and_then(|y| y.as_str().parse().ok());
        let span = c.get(0).expect("match").range();
        found.extend(DateMention::new(year, month, day).map(|m| (span, m)));
    }
    for c in MONTH_DAY.captures_iter(canon) {
        let (Some(month), Ok(day)) = (month_number(&c[1]), c[2].parse::<i8>()) else {
            continue;
        };
        let year = c.get(3).and_then(|y| y.as_str().parse().ok());
        let span = c.get(0).expect("match").range();
        found.extend(DateMention::new(year, month, day).map(|m| (span, m)));
    }
    found.sort_by_key(|(r, _)| r.start);
    found
}

/// Why a check's expected date is not one. Both kinds print the same text (the calendar's
/// own reason follows it); the kind says whether the writing or the day is wrong.
#[derive(Clone, Debug, thiserror::Error)]
pub enum DateError {
    /// Not written as `YYYY-MM-DD` at all ("June 19").
    #[error("`{text}` is not a date YYYY-MM-DD: {source}")]
    Form {
        text: String,
        #[source]
        source: jiff::Error,
    },
    /// Written as `YYYY-MM-DD`, but no such day is on the calendar ("2026-02-30").
    #[error("`{text}` is not a date YYYY-MM-DD: {source}")]
    Calendar {
        text: String,
        #[source]
        source: jiff::Error,
    },
}

/// Parses the date a check expects: `YYYY-MM-DD`, optionally followed by a time.
pub fn parse_date(s: &str) -> Result<Date, DateError> {
    let head = s.trim().get(..10).unwrap_or(s.trim());
    head.parse::<Date>().map_err(|source| {
        let text = s.to_string();
        // Compared as bytes: the text may hold any characters.
        let dashed = head.len() == 10
            && head.bytes().enumerate().all(|(i, b)| match i {
                4 | 7 => b == b'-',
                _ => b.is_ascii_digit(),
            });
        if dashed {
            DateError::Calendar { text, source }
        } else {
            DateError::Form { text, source }
        }
    })
}

/// Whether `text` mentions the date `want` in any common form. A mention without a year
/// ("19 June") counts; one with another year does not.
pub fn mentions_date(text: &str, want: Date) -> bool {
    date_spans(&canonical(text)).iter().any(|(_, m)| m.is(want))
}

static CLOCK: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(\d{1,2})(?:([:h.])(\d{2})(?::\d{2})?)?(\s*([ap])\.?\s?m\.?)?")
        .expect("valid time pattern")
});

/// Why a check's expected time is not one.
#[derive(Clone, Debug, thiserror::Error)]
pub enum TimeError {
    /// Not written as `HH:MM` ("1 pm").
    #[error("`{text}` is not a time HH:MM")]
    Form { text: String },
    /// Written as `HH:MM`, but not a time of day ("25:00").
    #[error("`{text}` is not a time HH:MM: {source}")]
    Range {
        text: String,
        #[source]
        source: jiff::Error,
    },
}

/// Parses the time a check expects: `HH:MM` in 24-hour form.
pub fn parse_time(s: &str) -> Result<Time, TimeError> {
    let form = || TimeError::Form {
        text: s.to_string(),
    };
    let t = s.trim();
    let (h, m) = t.split_once(':').ok_or_else(form)?;
    let hour: i8 = h.parse().map_err(|_| form())?;
    let minute: i8 = m.get(..2).unwrap_or(m).parse().map_err(|_| form())?;
    Time::new(hour, minute, 0, 0).map_err(|source| TimeError::Range {
        text: s.to_string(),
        source,
    })
}

/// Every clock time written in `text`: `13:40`, `1:40 pm`, `1.40 p.m.`, `13h40`, `1 pm`,
/// `noon`, `midnight`. A bare number without minutes or am/pm is not a time, nor is a
/// dotted number without am/pm (a price).
/// A range whose meridiem is written once, at its end ("1-2:30 pm").
static SHARED_MERIDIEM: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:^|[^\w:.,])(\d{1,2})(?::(\d{2}))?\s*(?:-|–|to)\s*(\d{1,2})(?::\d{2})?\s*([ap])\.?\s?m\b")
        .expect("valid time range pattern")
});

/// Every clock time in `canon` (a text already passed through [`canonical`]) with its
/// byte range: `13:40`, `1:40 pm`, `1.40 p.m.`, `13h40`, `1 pm`, `noon`, `midnight`, and
/// `14.30` written with a point (but not next to a currency or a percent sign, where it is
/// a price). A bare number without minutes or am/pm is not a time.
pub fn time_spans(canon: &str) -> Vec<(Range<usize>, Time)> {
    let mut found = Vec::new();
    // ASCII lowercasing keeps byte offsets, so ranges stay ranges of `canon`.
    let lower = canon.to_ascii_lowercase();
    // The start of "1-2:30 pm" takes the end's meridiem when it is not later than the end
    // ("11-2 pm" starts at 11 am, which the 24-hour reading below already finds or not).
    for c in SHARED_MERIDIEM.captures_iter(&lower) {
        let hour = |m: &str| m.parse::<i8>().ok().filter(|h| (1..=12).contains(h));
        let (Some(start), Some(end)) = (hour(&c[1]), hour(&c[3])) else {
            continue;
        };
        if start % 12 > end % 12 {
            continue;
        }
        let minute = c.get(2).map_or(Some(0), |m| m.as_str().parse::<i8>().ok());
        let pm = &c[4] == "p";
        let h24 = start % 12 + if pm { 12 } else { 0 };
        if let Some(Ok(t)) = minute.map(|m| Time::new(h24, m, 0, 0)) {
            let span = c.get(1).expect("group").start()
                ..c.get(2).map_or(c.get(1).expect("group").end(), |m| m.end());
            found.push((span, t));
        }
    }
    for (word, t) in [("noon", 12), ("midday", 12), ("midnight", 0)] {
        for m in lower.match_indices(word) {
            let edge = |c: Option<char>| c.is_none_or(|c| !c.is_alphanumeric());
            if edge(lower[..m.0].chars().next_back())
                && edge(lower[m.0 + word.len()..].chars().next())
            {
                found.push((m.0..m.0 + word.len(), Time::constant(t, 0, 0, 0)));
            }
        }
    }
    for c in CLOCK.captures_iter(&lower) {
        let whole = c.get(0).expect("match");
        let before = lower[..whole.start()].chars().next_back();
        if before.is_some_and(|b| b.is_alphanumeric() || matches!(b, ':' | '.' | ',')) {
            continue;
        }
        // "9 amazing" has no meridiem; "1340" and "13:40:5" are not clock times.
        let next = lower[whole.end()..].chars().next();
        let mut meridiem = c.get(5).map(|m| m.as_str() == "p");
        if meridiem.is_some() && next.is_some_and(char::is_alphabetic) {
            meridiem = None;
        }
        let end = match (meridiem, c.get(4)) {
            (None, Some(m)) => m.start(),
            _ => whole.end(),
        };
        let next = lower[end..].chars().next();
        if next.is_some_and(|n| n.is_ascii_digit() || n == ':') {
            continue;
        }
        let Ok(mut hour) = c[1].parse::<i8>() else {
            continue;
        };
        let minute = c.get(3).map(|m| m.as_str().parse::<i8>().unwrap_or(-1));
        let sep = c.get(2).map(|m| m.as_str());
        if minute.is_none() && meridiem.is_none() {
            continue;
        }
        if sep == Some(".") && meridiem.is_none() && looks_like_price(&lower, whole.start(), end) {
            continue;
        }
        match meridiem {
            Some(_) if !(1..=12).contains(&hour) => continue,
            Some(true) if hour != 12 => hour += 12,
            Some(false) if hour == 12 => hour = 0,
            _ => {}
        }
        if let Ok(t) = Time::new(hour, minute.unwrap_or(0), 0, 0) {
            found.push((whole.start()..end, t));
        }
    }
    found.sort_by_key(|(r, _)| r.start);
    found
}

/// Whether a dotted numeral at `start..end` of lowercase text sits next to a currency or a
/// percent sign, so "EUR 14.30" and "14.30 €" are prices, not times.
fn looks_like_price(lower: &str, start: usize, end: usize) -> bool {
    const MONEY: [&str; 12] = [
        "eur", "usd", "gbp", "sek", "chf", "dkk", "nok", "€", "$", "£", "%", "percent",
    ];
    let before = lower[..start].trim_end();
    let after = lower[end..].trim_start();
    MONEY
        .iter()
        .any(|m| before.ends_with(m) || after.starts_with(m))
        || after.starts_with("out of")
        || after.starts_with('/')
}

/// Whether `text` mentions the clock time `want` in 12- or 24-hour form.
pub fn mentions_time(text: &str, want: Time) -> bool {
    time_spans(&canonical(text)).iter().any(|(_, t)| *t == want)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn date(s: &str) -> Date {
        parse_date(s).unwrap()
    }

    fn time(s: &str) -> Time {
        parse_time(s).unwrap()
    }

    #[test]
    fn numbers_are_whole_tokens() {
        assert!(mentions_number("You spent 95 EUR.", 95.0, None));
        assert!(!mentions_number("The rent went up to 950 EUR.", 95.0, None));
        assert!(!mentions_number("We own 60 depots.", 6.0, None));
        assert!(!mentions_number("Flight AA2301 departs", 2301.0, None));
        assert!(!mentions_number("1950", 95.0, None));
        assert!(!mentions_number("95.5", 95.0, None));
    }

    #[test]
    fn numbers_normalise_currency_separators_and_zeros() {
        assert!(mentions_number("It costs £1,500.00 in total", 1500.0, None));
        assert!(mentions_number("€1.500,00", 1500.0, None));
        assert!(mentions_number("1500", 1500.0, None));
        assert!(mentions_number("$1'500", 1500.0, None));
        assert!(mentions_number("USD 1500.0", 1500.0, None));
        assert!(mentions_number("195.95.", 195.95, None));
        assert!(mentions_number("a 12,5 % rise", 12.5, None));
        assert!(mentions_number("-50.00 was debited", 50.0, None));
        assert!(mentions_number("(2,850)", 2850.0, None));
        assert!(!mentions_number("£1,500.01", 1500.0, None));
        assert!(mentions_number("£1,500.01", 1500.0, Some(0.05)));
        assert!(!mentions_number("15,000", 15.0, None));
    }

    #[test]
    fn numbers_inside_dates_and_times_are_not_numbers() {
        assert!(!mentions_number("meet at 13:40", 13.0, None));
        assert!(!mentions_number("meet at 13:40", 40.0, None));
        assert!(!mentions_number("on 2026-06-19", 19.0, None));
        assert!(!mentions_number("on 19/06/2026", 19.0, None));
        assert!(mentions_number("room 19, floor 2", 19.0, None));
        assert!(mentions_number("The answer is 6.", 6.0, None));
        assert!(!mentions_number("call 0117-496-0321", 496.0, None));
        assert!(!mentions_number("09:00-18:00", 18.0, None));
    }

    #[test]
    fn a_hyphenated_or_slashed_pair_is_two_numbers() {
        assert!(mentions_number("140-190 EUR a night", 140.0, None));
        assert!(mentions_number("140-190 EUR a night", 190.0, None));
        assert!(mentions_number("from 140–190 EUR", 190.0, None));
        assert!(!mentions_number("140-190 EUR a night", 14.0, None));
        assert!(!mentions_number("2026-06-19", 2026.0, None));
        assert!(mentions_number("rated 4.4/5", 4.4, None));
        assert!(!mentions_number("on 19/06/2026", 6.0, None));
    }

    #[test]
    fn dates_in_every_common_form() {
        let d = date("2026-06-19");
        for yes in [
            "2026-06-19",
            "on 2026-06-19 10:00",
            "19 June",
            "19 june 2026",
            "19th of June",
            "June 19, 2026",
            "Friday, June 19th",
            "Fri 19 Jun 2026",
            "19/06/2026",
            "06/19/2026",
            "19.06.2026",
            "2026/06/19",
            "Sept 3 is wrong but June 19 is right",
        ] {
            assert!(mentions_date(yes, d), "{yes}");
        }
        for no in [
            "20 June",
            "June 1",
            "June 19, 2025",
            "2026-06-18",
            "19/07/2026",
            "119 June",
            "June 190",
            "19 Juneteenth",
            "",
        ] {
            assert!(!mentions_date(no, d), "{no}");
        }
        assert!(mentions_date("Sept 3", date("2026-09-03")));
        assert!(!mentions_date("31 February", date("2026-03-03")));
    }

    #[test]
    fn a_range_shares_its_meridiem_and_space_groups_thousands() {
        assert!(mentions_time("1-2:30 pm on Teams", time("13:00")));
        assert!(mentions_time("from 9 to 11 am", time("09:00")));
        assert!(!mentions_time("11-2 pm", time("23:00")));
        assert!(mentions_number("SEK 68 000 a year", 68000.0, None));
        assert!(mentions_number("12 840 queries", 12840.0, None));
        assert!(!mentions_number("SEK 68 000 a year", 68.0, None));
        assert!(!mentions_number("flight LH 2420", 420.0, None));
    }

    #[test]
    fn times_in_twelve_and_twenty_four_hour_form() {
        let t = time("13:40");
        for yes in [
            "13:40",
            "1:40 pm",
            "1:40pm",
            "1.40 p.m.",
            "at 13h40",
            "13:40:00",
            "(1:40 PM)",
            "at 13.40",
            "**13:40**",
        ] {
            assert!(mentions_time(yes, t), "{yes}");
        }
        for no in [
            "1:40 am",
            "13:45",
            "1:40",
            "3:40 pm",
            "113:40",
            "1340",
            "EUR 13.40",
            "13.40 €",
        ] {
            assert!(!mentions_time(no, t), "{no}");
        }
        assert!(mentions_time("starts at 9 am", time("09:00")));
        assert!(mentions_time("starts at 9am", time("09:00")));
        assert!(!mentions_time("costs 9 euros", time("09:00")));
        assert!(mentions_time("lunch at noon", time("12:00")));
        assert!(mentions_time("12:30 am", time("00:30")));
        assert!(mentions_time("12 pm", time("12:00")));
        assert!(mentions_time("from 9:00 to 10:30", time("10:30")));
        assert!(mentions_time("from 9:00 to 10:30", time("09:00")));
    }

    #[test]
    fn names_ignore_case_accents_spacing_punctuation() {
        assert!(mentions_name(
            "We stayed at the CAFE DE FLORE.",
            "Café de Flore"
        ));
        assert!(mentions_name("Zurich", "Zürich"));
        assert!(mentions_name("Zürich", "zurich"));
        assert!(mentions_name("Saint Tropez", "Saint-Tropez"));
        assert!(mentions_name("St Johns Wood", "St. John's Wood"));
        assert!(mentions_name("le  Grand\tHotel", "Le Grand Hotel"));
        assert!(mentions_name("Straße", "Strasse"));
        assert!(!mentions_name("Romeo", "Rome"));
        assert!(!mentions_name("Le Grand", "Le Grand Hotel"));
        assert!(!mentions_name("Zagreb", "Zürich"));
        assert!(!mentions_name("anything", ""));
    }

    #[test]
    fn codes_with_or_without_spaces_and_hyphens() {
        assert!(mentions_code("flight AA 2301", "AA2301"));
        assert!(mentions_code("flight AA2301", "AA 2301"));
        assert!(mentions_code("flight aa-2301.", "AA 2301"));
        assert!(mentions_code(
            "IBAN GB29 NWBK 6016 1331 9268 19",
            "GB29NWBK60161331926819"
        ));
        assert!(!mentions_code("flight AA23015", "AA2301"));
        assert!(!mentions_code("flight BAA2301", "AA2301"));
        assert!(!mentions_code("AA, 2301", "AA2301"));
        assert!(!mentions_code("AA 2310", "AA2301"));
        assert!(!mentions_code("anything", " - "));
    }

    #[test]
    fn expected_values_parse_or_say_why() {
        assert!(parse_date("2026-02-30").is_err());
        assert!(parse_date("June 19").is_err());
        assert_eq!(parse_date("2026-06-19 10:00").unwrap(), date("2026-06-19"));
        assert!(parse_time("25:00").is_err());
        assert!(parse_time("1 pm").is_err());
        assert_eq!(parse_time("09:05").unwrap(), Time::constant(9, 5, 0, 0));
    }

    #[test]
    fn a_date_that_is_not_one_says_whether_the_writing_or_the_day_is_wrong() {
        let e = parse_date("2026-02-30").unwrap_err();
        assert!(
            matches!(&e, DateError::Calendar { text, .. } if text == "2026-02-30"),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "`2026-02-30` is not a date YYYY-MM-DD: parsed date is not valid: parameter 'day' for `2026-02` is invalid, must be in range `1..=28`"
        );
        let e = parse_date("June 19").unwrap_err();
        assert!(
            matches!(&e, DateError::Form { text, .. } if text == "June 19"),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "`June 19` is not a date YYYY-MM-DD: failed to parse four digit integer as year: invalid digit, expected 0-9 but got J"
        );
        // The calendar's reason is the error's source, not only part of its text.
        let source = std::error::Error::source(&e).expect("jiff's reason");
        assert!(e.to_string().ends_with(&source.to_string()));
    }

    proptest::proptest! {
        /// Any text is a date, or an error of one kind or the other, never a panic; a
        /// `dddd-dd-dd` text that is no date is the calendar's kind.
        #[test]
        fn any_text_parses_or_is_refused_by_kind(s in "\\PC{0,14}", y in 0u32..10000, m in 0u32..100, d in 0u32..100) {
            let _ = parse_date(&s);
            let _ = parse_time(&s);
            let dashed = format!("{y:04}-{m:02}-{d:02}");
            if let Err(e) = parse_date(&dashed) {
                proptest::prop_assert!(matches!(e, DateError::Calendar { .. }), "{dashed}: {e:?}");
            }
        }
    }

    #[test]
    fn a_time_that_is_not_one_says_whether_the_writing_or_the_hour_is_wrong() {
        let e = parse_time("1 pm").unwrap_err();
        assert!(
            matches!(&e, TimeError::Form { text } if text == "1 pm"),
            "{e:?}"
        );
        assert_eq!(e.to_string(), "`1 pm` is not a time HH:MM");
        let e = parse_time("25:00").unwrap_err();
        assert!(
            matches!(&e, TimeError::Range { text, .. } if text == "25:00"),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "`25:00` is not a time HH:MM: parameter 'hour' is not in the required range of 0..=23"
        );
    }

    #[test]
    fn canonical_text_has_one_dash_one_space_and_no_emphasis() {
        assert_eq!(canonical("DSN\u{2011}44817"), "DSN-44817");
        assert_eq!(canonical("1\u{202f}234,50\u{a0}EUR"), "1 234,50 EUR");
        assert_eq!(
            canonical("**No** \u{2014} it's `closed`"),
            "No - it's closed"
        );
        assert_eq!(canonical("_Yes_, file_name.txt"), "Yes, file_name.txt");
        assert_eq!(canonical("don\u{2019}t\u{200b}"), "don't");
        for dash in ['\u{2010}', '\u{2011}', '\u{2012}', '\u{2013}', '\u{2212}'] {
            assert!(mentions_code(
                &format!("ref BW{dash}2026{dash}04"),
                "BW-2026-04"
            ));
        }
    }

    #[test]
    fn numbers_in_words_with_scales_and_locale_decimals() {
        assert!(mentions_number("fourteen tickets", 14.0, None));
        assert!(mentions_number("Twenty-three percent", 23.0, None));
        assert!(mentions_number("two hundred and five", 205.0, None));
        assert!(mentions_number("sixty-eight thousand SEK", 68000.0, None));
        assert!(mentions_number("about 2.5k", 2500.0, None));
        assert!(mentions_number("68k SEK", 68000.0, None));
        assert!(mentions_number("2.4 million", 2_400_000.0, None));
        assert!(mentions_number("1 234,50 EUR", 1234.5, None));
        assert!(mentions_number("1\u{202f}234,50 EUR", 1234.5, None));
        assert!(mentions_number("1.234,50", 1234.5, None));
        assert!(mentions_number("CHF 1'594.74", 1594.74, None));
        assert!(mentions_number("1'234'567", 1234567.0, None));
        assert!(!mentions_number("1'59.74", 159.74, None));
        assert!(mentions_number("a dozen", 12.0, None));
        assert!(!mentions_number("the one with hybrids", 1.0, None));
        assert!(mentions_number("one ticket", 1.0, None));
        assert!(!mentions_number("someone", 1.0, None));
        assert!(!mentions_number("fourteenth", 14.0, None));
        assert!(!mentions_number("2.5kg", 2500.0, None));
    }

    #[test]
    fn dates_without_a_year_written_with_numbers() {
        let d = date("2026-06-19");
        for yes in ["on 19/06", "on 6/19", "on 19.06.", "19.6."] {
            assert!(mentions_date(yes, d), "{yes}");
        }
        for no in ["costs 19.06", "rated 4.4/5", "19/07", "119/06"] {
            assert!(!mentions_date(no, d), "{no}");
        }
    }

    #[test]
    fn spans_point_at_the_value() {
        let c = canonical("Opened: 14. Closed: eleven.");
        let n = number_spans(&c);
        assert_eq!(n.len(), 2);
        assert_eq!(&c[n[0].0.clone()], "14");
        assert_eq!(&c[n[1].0.clone()], "eleven");
        assert_eq!(n[1].1, 11.0);
        let c = canonical("Flight AA 2301 at 13:40");
        assert_eq!(&c[code_spans(&c, "AA2301")[0].clone()], "AA 2301");
        assert_eq!(&c[time_spans(&c)[0].0.clone()], "13:40");
        assert_eq!(&c[name_spans(&c, "aa")[0].clone()], "AA");
        let c = canonical("see you on 19 June");
        assert_eq!(&c[date_spans(&c)[0].0.clone()], "19 June");
    }

    mod props {
        use super::super::*;
        use proptest::prelude::*;

        proptest! {
            #[test]
            fn an_integer_is_found_in_digits_and_with_separators(n in 0u32..10_000_000) {
                let plain = n.to_string();
                let said = format!("It is {plain}.");
                prop_assert!(mentions_number(&said, n as f64, None));
                let grouped = plain.as_bytes().rchunks(3).rev()
                    .map(|c| std::str::from_utf8(c).unwrap()).collect::<Vec<_>>();
                for sep in [",", " ", "\u{202f}", "\u{a0}"] {
                    let text = format!("total {} EUR", grouped.join(sep));
                    prop_assert!(mentions_number(&text, n as f64, None), "{}", text);
                }
                prop_assert!(!mentions_number(&said, n as f64 + 1.0, None));
            }

            #[test]
            fn an_amount_in_either_locale_is_the_same_amount(cents in 0u64..100_000_000) {
                let whole = cents / 100;
                let frac = cents % 100;
                let v = cents as f64 / 100.0;
                let en = format!("{whole}.{frac:02}");
                let de = format!("{whole},{frac:02}");
                let (en, de) = (format!("Paid £{en}."), format!("Bezahlt {de} €"));
                prop_assert!(mentions_number(&en, v, Some(1e-6)));
                prop_assert!(mentions_number(&de, v, Some(1e-6)));
            }

            #[test]
            fn a_code_survives_any_dash_or_space_between_its_parts(
                head in "[A-Z]{2,3}", tail in "[0-9]{3,6}",
                sep in prop::sample::select(vec!["", " ", "-", "\u{2011}", "\u{2010}", "\u{2013}", "\u{a0}", "\u{202f}"]),
            ) {
                let code = format!("{head}{tail}");
                let (good, longer) = (format!("ref {head}{sep}{tail}."), format!("ref {head}{sep}{tail}9."));
                prop_assert!(mentions_code(&good, &code));
                prop_assert!(!mentions_code(&longer, &code));
            }

            #[test]
            fn a_time_in_any_common_form(h in 0i8..24, m in 0i8..60) {
                let t = Time::new(h, m, 0, 0).unwrap();
                let (h12, pm) = (if h % 12 == 0 { 12 } else { h % 12 }, h >= 12);
                let forms = [
                    format!("at {h:02}:{m:02}"),
                    format!("at {h}.{m:02}"),
                    format!("at {h12}:{m:02} {}", if pm { "pm" } else { "am" }),
                    format!("at **{h}:{m:02}**"),
                ];
                for f in forms {
                    prop_assert!(mentions_time(&f, t), "{}", f);
                }
                let other = Time::new((h + 1) % 24, m, 0, 0).unwrap();
                let said = format!("at {h:02}:{m:02}");
                prop_assert!(!mentions_time(&said, other));
            }

            #[test]
            fn a_date_with_or_without_year(day in 1i8..=28, month in 1i8..=12) {
                let d = Date::new(2026, month, day).unwrap();
                let name = MONTHS[month as usize - 1];
                for f in [
                    format!("{day} {name}"),
                    format!("{name} {day}, 2026"),
                    format!("{day:02}/{month:02}/2026"),
                    format!("{day}.{month}."),
                    format!("2026-{month:02}-{day:02}"),
                ] {
                    prop_assert!(mentions_date(&f, d), "{}", f);
                }
                let other_year = format!("{day} {name} 2025");
                prop_assert!(!mentions_date(&other_year, d));
            }

            #[test]
            fn canonical_never_panics_and_is_idempotent(s in "\\PC{0,40}") {
                let once = canonical(&s);
                prop_assert_eq!(canonical(&once), once.clone());
                let _ = numbers_in(&s);
                let _ = date_spans(&once);
                let _ = time_spans(&once);
            }
        }
    }
}
