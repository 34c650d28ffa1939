//! Text folding every matcher shares: one normal form for dashes, spaces, quotes and
//! emphasis ([`canonical`]), and the case-, accent- and punctuation-folded words names
//! are compared by ([`fold`]). A leaf: tools, suites and attacks all fold text.

use unicode_normalization::UnicodeNormalization;

/// The one normal form every matcher reads, applied before anything else (before NFKD,
/// which would turn U+2011 into U+2010 and hide it from a separator list): every dash and
/// minus is `-`, every space (no-break, thin, narrow, ideographic) is ` `, curly quotes are
/// straight, zero-width characters and soft hyphens vanish, and markdown emphasis (`**`,
/// `__`, a lone `*` or `_` at a word's edge, backticks) is dropped, so `**No**` reads as `No`.
pub fn canonical(s: &str) -> String {
    if s.is_ascii() {
        return canonical_ascii(s);
    }
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    for (i, &c) in chars.iter().enumerate() {
        let mapped = match c {
            '\u{2010}'..='\u{2015}' | '\u{2212}' | '\u{fe58}' | '\u{fe63}' | '\u{ff0d}' => '-',
            '\u{a0}' | '\u{2000}'..='\u{200a}' | '\u{202f}' | '\u{205f}' | '\u{3000}' => ' ',
            '\u{2018}' | '\u{2019}' | '\u{201a}' | '\u{201b}' | '\u{2032}' => '\'',
            '\u{201c}' | '\u{201d}' | '\u{201e}' | '\u{201f}' | '\u{2033}' => '"',
            '\u{200b}'..='\u{200d}' | '\u{2060}' | '\u{feff}' | '\u{ad}' | '*' | '`' => continue,
            '_' => {
                let word = |j: Option<usize>| {
                    j.and_then(|j| chars.get(j))
                        .is_some_and(|c| c.is_alphanumeric())
                };
                if word(i.checked_sub(1)) && word(Some(i + 1)) {
                    '_'
                } else {
                    continue;
                }
            }
            c => c,
        };
        out.push(mapped);
    }
    out
}

/// Case-, accent-, whitespace- and punctuation-folded text: lowercase ASCII-ish words
/// separated by single spaces. Apostrophes vanish ("John's" → "johns"); other
/// punctuation separates words ("Saint-Tropez" → "saint tropez").
pub fn fold(s: &str) -> String {
    if s.is_ascii() {
        return fold_ascii(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut pending_space = false;
    for c in canonical(s).nfkd() {
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

/// Whether the byte at `i` is an underscore inside a word (`snake_case`), which
/// [`canonical`] keeps; any other underscore is emphasis and goes.
fn inner_underscore(b: &[u8], i: usize) -> bool {
    i > 0 && b[i - 1].is_ascii_alphanumeric() && b.get(i + 1).is_some_and(u8::is_ascii_alphanumeric)
}

/// [`canonical`] of ASCII text, where only the emphasis marks change (most text the
/// harness folds is ASCII, and collecting its characters first was most of the cost).
fn canonical_ascii(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'*' | b'`' => {}
            b'_' if !inner_underscore(b, i) => {}
            c => out.push(char::from(c)),
        }
    }
    out
}

/// [`fold`] of ASCII text: NFKD changes no ASCII character and none is a combining mark,
/// so folding is [`canonical_ascii`]'s choices and lower-casing, in one pass.
fn fold_ascii(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut pending_space = false;
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'*' | b'`' | b'\'' => {}
            b'_' if !inner_underscore(b, i) => {}
            c if c.is_ascii_alphanumeric() => {
                if pending_space && !out.is_empty() {
                    out.push(' ');
                }
                pending_space = false;
                out.push(char::from(c.to_ascii_lowercase()));
            }
            _ => pending_space = true,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// [`fold`] by the general path (canonical form, NFKD, marks dropped), whatever the text.
    fn fold_general(s: &str) -> String {
        // A non-ASCII character that folds to nothing and separates nothing keeps the
        // input off the ASCII path: a zero-width space vanishes in `canonical`.
        let forced = format!("\u{200b}{s}");
        assert!(!forced.is_ascii());
        fold(&forced)
    }

    proptest! {
        /// The ASCII paths give exactly what the general ones give: emphasis, inner and
        /// outer underscores, apostrophes, digits, punctuation and case.
        #[test]
        fn ascii_paths_agree_with_the_general_ones(s in "[a-zA-Z0-9 _*`'.,:;/@#\\n\\t-]{0,40}") {
            prop_assert_eq!(fold(&s), fold_general(&s));
            let general = canonical(&format!("\u{200b}{s}"));
            prop_assert_eq!(canonical(&s), general);
        }
    }

    #[test]
    fn folding_reads_names_as_words() {
        assert_eq!(
            fold("**John's** Saint-Tropez_trip"),
            "johns saint tropez trip"
        );
        assert_eq!(fold("_note_ a_b"), "note a b");
        assert_eq!(fold("Zoë Straße"), "zoe strasse");
    }
}
