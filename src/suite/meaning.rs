//! Matching by meaning rather than spelling, for checks that judge a real model's words.
//!
//! A model says "19 June" where the reference says "2026-06-19", "1:40 pm" for "13:40",
//! "£1,500.00" for "1500", "Zurich" for "Zürich", "AA2301" for "AA 2301". Each function
//! here answers "does this text mention that value?" and normalises both sides the same
//! way, so a correct answer in other words passes and a close wrong one ("950" for "95")
//! fails. Calendar facts come from `jiff`, never from hand-written arithmetic.

use jiff::civil::{Date, Time};
use regex::Regex;
use std::sync::LazyLock;
use unicode_normalization::UnicodeNormalization;

/// Case-, accent-, whitespace- and punctuation-folded text: lowercase ASCII-ish words
/// separated by single spaces. Apostrophes vanish ("John's" → "johns"); other
/// punctuation separates words ("Saint-Tropez" → "saint tropez").
pub fn fold(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut pending_space = false;
    for c in s.nfkd() {
        if unicode_normalization::char::is_combining_mark(c) || matches!(c, '\'' | '’' | '`') {
            continue;
        }
        let expanded: &str = match c {
            'ß' => "ss",
            'æ' | 'Æ' => "ae",
            'œ' | 'Œ' => "oe",
            'ø' | 'Ø' => "o",
            'ł' | 'Ł' => "l",
            'đ' | 'Đ' => "d",
            'þ' | 'Þ' => "th",
            _ => "",
        };
        if !expanded.is_empty() || c.is_alphanumeric() {
            if pending_space && !out.is_empty() {
                out.push(' ');
            }
            pending_space = false;
            if expanded.is_empty() {
                out.extend(c.to_lowercase());
            } else {
                out.push_str(expanded);
            }
        } else {
            pending_space = true;
        }
    }
    out
}

/// Whether `text` mentions the name or place `name` as whole words, ignoring case,
/// accents, whitespace and punctuation ("Café de Flore" = "cafe de flore";
/// "Rome" is not found in "Romeo").
pub fn mentions_name(text: &str, name: &str) -> bool {
    let needle = fold(name);
    if needle.is_empty() {
        return false;
    }
    let hay = format!(" {} ", fold(text));
    hay.contains(&format!(" {needle} "))
}

/// Whether `text` mentions the code (flight number, IBAN, booking reference, phone
/// number…) with or without spaces, hyphens, dots or slashes between its parts, in any
/// case. The code must start and end on a token boundary: "AA2301" is not in "AA23015".
pub fn mentions_code(text: &str, code: &str) -> bool {
    let want: String = code
        .chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_uppercase)
        .collect();
    if want.is_empty() {
        return false;
    }
    // Tokens are alphanumeric runs; a code may span tokens joined by these separators
    // only, so a code is not assembled across a comma or a sentence.
    let folded: String = text
        .nfkd()
        .filter(|c| !unicode_normalization::char::is_combining_mark(*c))
        .collect();
    let mut groups: Vec<Vec<String>> = vec![Vec::new()];
    let mut token = String::new();
    for c in folded.chars() {
        if c.is_alphanumeric() {
            token.extend(c.to_uppercase());
            continue;
        }
        if !token.is_empty() {
            groups
                .last_mut()
                .expect("one group")
                .push(std::mem::take(&mut token));
        }
        if !matches!(c, ' ' | '-' | '.' | '/' | '\u{a0}' | '\u{2011}') {
            groups.push(Vec::new());
        }
    }
    if !token.is_empty() {
        groups.last_mut().expect("one group").push(token);
    }
    groups.iter().any(|tokens| {
        (0..tokens.len()).any(|start| {
            let mut joined = String::new();
            for t in &tokens[start..] {
                joined.push_str(t);
                if joined == want {
                    return true;
                }
                if joined.len() >= want.len() || !want.starts_with(&joined) {
                    break;
                }
            }
            false
        })
    })
}

/// A numeral: digits with `.`, `,` or `'` between groups, or groups of three separated
/// by a space ("68 000", as Swedish and French write thousands; no-break spaces too).
static NUMBER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\d{1,3}(?:[ \u{a0}\u{202f}]\d{3})+(?:[.,]\d+)?|\d+(?:[.,']\d+)*")
        .expect("valid number pattern")
});

/// Reads one numeral's digits and separators as a value: the last of two different
/// separators is the decimal mark ("1.500,00" and "1,500.00" are both 1500); a comma or
/// apostrophe followed only by groups of three digits separates thousands; a single dot
/// is a decimal point; several dots separate thousands.
fn parse_numeral(s: &str) -> Option<f64> {
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
pub fn numbers_in(text: &str) -> Vec<f64> {
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
            let compact: String = m
                .as_str()
                .chars()
                .filter(|c| !matches!(c, ' ' | '\u{a0}' | '\u{202f}'))
                .collect();
            parse_numeral(&compact)
        })
        .collect()
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
static DAY_MONTH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(\d{1,2})(?:st|nd|rd|th)?(?:\s+of)?\s+([a-z]{3,9})\.?(?:,?\s+(\d{4}))?\b")
        .expect("valid date pattern")
});
static MONTH_DAY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b([a-z]{3,9})\.?\s+(\d{1,2})(?:st|nd|rd|th)?\b(?:,?\s+(\d{4}))?")
        .expect("valid date pattern")
});

/// A date found in text; `year` is `None` when the text leaves it out ("19 June").
#[derive(Debug, PartialEq)]
struct Mention {
    year: Option<i16>,
    month: i8,
    day: i8,
}

impl Mention {
    fn new(year: Option<i16>, month: i8, day: i8) -> Option<Mention> {
        // Reject impossible dates through the calendar, not by hand (a leap year's 29 February).
        Date::new(year.unwrap_or(2024), month, day).ok()?;
        Some(Mention { year, month, day })
    }

    fn is(&self, d: Date) -> bool {
        self.month == d.month() && self.day == d.day() && self.year.is_none_or(|y| y == d.year())
    }
}

/// Every date written in `text`: ISO (`2026-06-19`), day-first and month-first numeric
/// (`19/06/2026`, `06/19/2026`, `19.06.2026`; an ambiguous one counts both ways), and
/// written months (`19 June`, `19th of June 2026`, `June 19, 2026`, `Jun 19`), weekday
/// names allowed anywhere around them.
fn dates_in(text: &str) -> Vec<Mention> {
    let mut found = Vec::new();
    for c in NUMERIC_DATE.captures_iter(text) {
        if c[2] != c[4] {
            continue;
        }
        let (a, b, z) = (&c[1], &c[3], &c[5]);
        let num = |s: &str| s.parse::<i16>().ok();
        let (Some(x), Some(y), Some(w)) = (num(a), num(b), num(z)) else {
            continue;
        };
        if a.len() == 4 {
            found.extend(Mention::new(Some(x), y as i8, w as i8));
        } else if z.len() == 4 {
            found.extend(Mention::new(Some(w), y as i8, x as i8));
            found.extend(Mention::new(Some(w), x as i8, y as i8));
        }
    }
    for c in DAY_MONTH.captures_iter(text) {
        let (Ok(day), Some(month)) = (c[1].parse::<i8>(), month_number(&c[2])) else {
            continue;
        };
        let year = c.get(3).and_then(|y| y.as_str().parse().ok());
        found.extend(Mention::new(year, month, day));
    }
    for c in MONTH_DAY.captures_iter(text) {
        let (Some(month), Ok(day)) = (month_number(&c[1]), c[2].parse::<i8>()) else {
            continue;
        };
        let year = c.get(3).and_then(|y| y.as_str().parse().ok());
        found.extend(Mention::new(year, month, day));
    }
    found
}

/// Parses the date a check expects: `YYYY-MM-DD`, optionally followed by a time.
pub fn parse_date(s: &str) -> Result<Date, String> {
    let head = s.trim().get(..10).unwrap_or(s.trim());
    head.parse::<Date>()
        .map_err(|e| format!("`{s}` is not a date YYYY-MM-DD: {e}"))
}

/// Whether `text` mentions the date `want` in any common form. A mention without a year
/// ("19 June") counts; one with another year does not.
pub fn mentions_date(text: &str, want: Date) -> bool {
    dates_in(text).iter().any(|m| m.is(want))
}

static CLOCK: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(\d{1,2})(?:([:h.])(\d{2})(?::\d{2})?)?(\s*([ap])\.?\s?m\.?)?")
        .expect("valid time pattern")
});

/// Parses the time a check expects: `HH:MM` in 24-hour form.
pub fn parse_time(s: &str) -> Result<Time, String> {
    let t = s.trim();
    let (h, m) = t
        .split_once(':')
        .ok_or_else(|| format!("`{s}` is not a time HH:MM"))?;
    let hour: i8 = h
        .parse()
        .map_err(|_| format!("`{s}` is not a time HH:MM"))?;
    let minute: i8 = m
        .get(..2)
        .unwrap_or(m)
        .parse()
        .map_err(|_| format!("`{s}` is not a time HH:MM"))?;
    Time::new(hour, minute, 0, 0).map_err(|e| format!("`{s}` is not a time HH:MM: {e}"))
}

/// Every clock time written in `text`: `13:40`, `1:40 pm`, `1.40 p.m.`, `13h40`, `1 pm`,
/// `noon`, `midnight`. A bare number without minutes or am/pm is not a time, nor is a
/// dotted number without am/pm (a price).
/// A range whose meridiem is written once, at its end ("1-2:30 pm").
static SHARED_MERIDIEM: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:^|[^\w:.,])(\d{1,2})(?::(\d{2}))?\s*(?:-|–|to)\s*(\d{1,2})(?::\d{2})?\s*([ap])\.?\s?m\b")
        .expect("valid time range pattern")
});

fn times_in(text: &str) -> Vec<Time> {
    let mut found = Vec::new();
    // The start of "1-2:30 pm" takes the end's meridiem when it is not later than the end
    // ("11-2 pm" starts at 11 am, which the 24-hour reading below already finds or not).
    for c in SHARED_MERIDIEM.captures_iter(&text.to_lowercase()) {
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
            found.push(t);
        }
    }
    if mentions_name(text, "noon") || mentions_name(text, "midday") {
        found.push(Time::constant(12, 0, 0, 0));
    }
    if mentions_name(text, "midnight") {
        found.push(Time::constant(0, 0, 0, 0));
    }
    let lower = text.to_lowercase();
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
        if minute.is_none() && meridiem.is_none() || sep == Some(".") && meridiem.is_none() {
            continue;
        }
        match meridiem {
            Some(_) if !(1..=12).contains(&hour) => continue,
            Some(true) if hour != 12 => hour += 12,
            Some(false) if hour == 12 => hour = 0,
            _ => {}
        }
        if let Ok(t) = Time::new(hour, minute.unwrap_or(0), 0, 0) {
            found.push(t);
        }
    }
    found
}

/// Whether `text` mentions the clock time `want` in 12- or 24-hour form.
pub fn mentions_time(text: &str, want: Time) -> bool {
    times_in(text).contains(&want)
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
        ] {
            assert!(mentions_time(yes, t), "{yes}");
        }
        for no in [
            "1:40 am", "13:45", "1:40", "3:40 pm", "113:40", "1340", "13.40",
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
}
