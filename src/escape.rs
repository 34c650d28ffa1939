//! One escaping layer per output format (the report writers' and the terminal's; a leaf
//! module, so messages of any layer can use it too). Names (suites, tasks, attacks, defenses,
//! models) and traces can hold text an attacker wrote: every writer passes each piece of
//! text it did not write itself through its format's function here, so that text is
//! shown as text and never read as markup, a formula, a command or a control sequence.

/// A control character a terminal could act on, or one that reorders what is shown
/// (bidirectional overrides and isolates).
pub fn is_control(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// `\u{1b}` for ESC: a control character made visible.
fn visible(c: char) -> String {
    format!("\\u{{{:x}}}", c as u32)
}

/// Text for one cell or line of a terminal table: every control character (line breaks
/// and tabs too, which would break the table's lines) shown as `\u{…}`.
pub fn terminal_cell(s: &str) -> String {
    if !s.chars().any(is_control) {
        return s.to_string();
    }
    s.chars()
        .map(|c| {
            if is_control(c) {
                visible(c)
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// Text for the terminal as a whole (a table, a message): line breaks and tabs kept,
/// every other control character shown as `\u{…}`, so no escape sequence reaches it.
pub fn terminal(s: &str) -> String {
    if !s.chars().any(|c| is_control(c) && c != '\n' && c != '\t') {
        return s.to_string();
    }
    s.chars()
        .map(|c| {
            if is_control(c) && c != '\n' && c != '\t' {
                visible(c)
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// Text inside HTML (element content or a quoted attribute value): the five markup
/// characters as entities, control characters other than white space as character
/// references (the page's script then reads back the very name the data holds).
pub fn html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // As a character reference: the page's script reads the same name back.
            c if c.is_control() && !matches!(c, '\n' | '\t' | '\r') => {
                out.push_str(&format!("&#x{:x};", c as u32))
            }
            c => out.push(c),
        }
    }
    out
}

/// JSON for a `<script type="application/json">` block: `<`, `>` and `&` as `\u003c`,
/// `\u003e` and `\u0026` (the same string to `JSON.parse`), so no text in it can close
/// the script (`</script`), open another (`<script`) or start a comment (`<!--`) that
/// would make the parser swallow the page's own script; U+2028 and U+2029 likewise.
/// These characters appear in JSON only inside strings, where the escapes mean them.
pub fn json_in_html(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// Text in a Markdown document or table cell: HTML's markup characters as entities (no
/// tag, comment or entity of the text's own is rendered), Markdown's link and cell
/// characters escaped with a backslash, and line breaks as spaces (a cell is one line,
/// and text never starts a line of its own, where it could become a heading or a list).
/// Emphasis and code characters stay: they can change a font, nothing else (a pipe in
/// a code span is escaped like any other).
pub fn markdown(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\\' | '|' | '[' | ']' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' | '\t' => out.push(' '),
            c if is_control(c) => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// Text in LaTeX: every special character escaped, line breaks as spaces (a break would
/// end a `%` comment line and start a live one; a blank line would end the paragraph),
/// control characters dropped, and characters pdflatex has no glyph for written as
/// `U+XXXX` so the document still compiles.
pub fn latex(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\textbackslash{}"),
            '&' | '%' | '$' | '#' | '_' | '{' | '}' => {
                out.push('\\');
                out.push(c);
            }
            '~' => out.push_str("\\textasciitilde{}"),
            '^' => out.push_str("\\textasciicircum{}"),
            '<' => out.push_str("\\textless{}"),
            '>' => out.push_str("\\textgreater{}"),
            '|' => out.push_str("\\textbar{}"),
            '–' => out.push_str("--"),
            '—' => out.push_str("---"),
            '×' => out.push_str("$\\times$"),
            '…' => out.push_str("\\ldots{}"),
            '·' => out.push_str("\\textperiodcentered{}"),
            'Δ' => out.push_str("$\\Delta$"),
            '†' => out.push_str("\\dag{}"),
            '−' => out.push_str("$-$"),
            '\n' | '\r' | '\t' => out.push(' '),
            c if is_control(c) => {}
            c if c.is_ascii() => out.push(c),
            // Latin-1 letters have glyphs in LaTeX's default UTF-8 input; others may not.
            c if ('\u{C0}'..='\u{FF}').contains(&c) && c != '\u{D7}' && c != '\u{F7}' => {
                out.push(c)
            }
            c => out.push_str(&format!("U+{:04X}", c as u32)),
        }
    }
    out
}

/// A CSV cell of text (the CSV writer adds quoting): a cell a spreadsheet would read as a
/// formula (starting with `=`, `+`, `-`, `@`, a tab or a carriage return) gets a leading
/// `'`, so it shows as the text it is.
pub fn csv_cell(s: &str) -> String {
    match s.chars().next() {
        Some('=' | '+' | '-' | '@' | '\t' | '\r') => format!("'{s}"),
        _ => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_format_neutralises_its_own_markup() {
        assert_eq!(terminal_cell("a\u{1b}[2Jb\nc"), "a\\u{1b}[2Jb\\u{a}c");
        assert_eq!(terminal("a\u{1b}]0;x\u{7}\nb"), "a\\u{1b}]0;x\\u{7}\nb");
        assert_eq!(terminal("\u{202E}abc"), "\\u{202e}abc");
        assert_eq!(
            html("<img src=x onerror='a'>&"),
            "&lt;img src=x onerror=&#39;a&#39;&gt;&amp;"
        );
        assert_eq!(
            json_in_html(r#"{"a":"<!--<script></script>&"}"#),
            r#"{"a":"\u003c!--\u003cscript\u003e\u003c/script\u003e\u0026"}"#
        );
        assert_eq!(
            markdown("<b>x</b> | [l](javascript:1)\n# h"),
            "&lt;b&gt;x&lt;/b&gt; \\| \\[l\\](javascript:1) # h"
        );
        assert_eq!(
            latex("50% \\input{/etc/hostname}\n\\x"),
            "50\\% \\textbackslash{}input\\{/etc/hostname\\} \\textbackslash{}x"
        );
        assert_eq!(latex("Müller 日"), "Müller U+65E5");
        for (s, want) in [
            ("=HYPERLINK(\"x\")", "'=HYPERLINK(\"x\")"),
            ("+1", "'+1"),
            ("-2", "'-2"),
            ("@SUM(A1)", "'@SUM(A1)"),
            ("\tx", "'\tx"),
            ("none", "none"),
        ] {
            assert_eq!(csv_cell(s), want);
        }
    }
}
