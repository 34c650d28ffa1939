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
