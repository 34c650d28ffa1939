//! One escaping layer per output format. Names (suites, tasks, attacks, defenses,
//! models) and traces can hold text an attacker wrote: every writer passes each piece of
//! text it did not write itself through its format's function here, so that text is
//! shown as text and never read as markup, a formula, a command or a control sequence.

/// A control character a terminal could act on, or one that reorders what is shown
/// (bidirectional overrides and isolates).
fn is_control(c: char) -> bool {
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

/// Names and traces drawn from a hostile alphabet, rendered by the real writers of every
/// format: nothing of theirs is markup, a formula, a command or a control sequence, and
/// every table and page keeps its structure.
#[cfg(test)]
mod props {
    use crate::report::columns::Grid;
    use crate::report::runs::Episode;
    use crate::report::{self, Document, Summary, formats, text::TextOptions};
    use proptest::prelude::*;

    fn hostile() -> impl Strategy<Value = String> {
        let pieces = prop::sample::select(vec![
            "<",
            ">",
            "&",
            "\"",
            "'",
            "\\",
            "%",
            "$",
            "#",
            "_",
            "{",
            "}",
            "~",
            "^",
            "|",
            "[",
            "]",
            "`",
            "*",
            "=",
            "+",
            "-",
            "@",
            "\n",
            "\r",
            "\t",
            "\u{1b}",
            "\u{7}",
            "\u{202e}",
            "\u{2028}",
            "é",
            "日",
            " ",
            "a",
            "/",
            ":",
            "<!--",
            "-->",
            "</script",
            "<script>",
            "\\input{/etc/hostname}",
            "=HYPERLINK(",
            "&amp;",
            "]]>",
            "%\n\\x",
            "\u{1b}[2J",
        ]);
        prop::collection::vec(pieces, 1..10).prop_map(|v| v.concat())
    }

    fn summary(names: &[[String; 4]]) -> Summary {
        let rows = names
            .iter()
            .enumerate()
            .map(|(i, [s, a, d, m])| {
                let mut r = report::tests::row(d, 0.1 * i as f64, true);
                (r.suite, r.attack, r.model) = (s.clone(), a.clone(), m.clone());
                r
            })
            .collect();
        Summary::new(rows, 10, 0)
    }

    /// Markdown: no `<` at all (every one is an entity), and every table line has its
    /// header's number of cell separators.
    fn check_markdown(md: &str, rows: usize) {
        assert!(!md.contains('<'), "{md}");
        // Cell separators: pipes not escaped by a backslash.
        let pipes = |l: &str| {
            let (mut n, mut escaped) = (0, false);
            for c in l.chars() {
                match c {
                    '\\' => escaped = !escaped,
                    '|' if !escaped => n += 1,
                    _ => escaped = false,
                }
                if c == '|' {
                    escaped = false;
                }
            }
            n
        };
        let table: Vec<&str> = md.lines().filter(|l| l.starts_with('|')).collect();
        assert_eq!(table.len(), rows + 2, "{md}");
        assert!(table.iter().all(|l| pipes(l) == pipes(table[0])), "{md}");
    }

    /// LaTeX: after removing the escapes the writer emits, no special character or
    /// control character is left in any row's cells, and each row has every cell.
    fn check_latex(tex: &str, grid: &Grid) {
        const ESCAPES: &[&str] = &[
            "\\textbackslash{}",
            "\\textasciitilde{}",
            "\\textasciicircum{}",
            "\\textless{}",
            "\\textgreater{}",
            "\\textbar{}",
            "\\ldots{}",
            "\\textperiodcentered{}",
            "$\\times$",
            "\\&",
            "\\%",
            "\\$",
            "\\#",
            "\\_",
            "\\{",
            "\\}",
        ];
        let plain = |cell: &str| {
            let mut c = cell.trim().to_string();
            if let Some(inner) = c
                .strip_prefix("\\textbf{")
                .and_then(|x| x.strip_suffix('}'))
            {
                c = inner.to_string();
            }
            for e in ESCAPES {
                c = c.replace(e, "");
            }
            c
        };
        let rows: Vec<&str> = tex
            .lines()
            .filter(|l| l.ends_with("\\\\") && !l.contains("\\midrule"))
            .collect();
        assert_eq!(rows.len(), grid.rows.len() + 1, "{tex}");
        for line in &rows {
            let cells: Vec<&str> = line.trim_end_matches("\\\\").split(" & ").collect();
            assert_eq!(cells.len(), grid.columns.len(), "{line}");
            for cell in cells {
                let p = plain(cell);
                assert!(
                    !p.contains(['\\', '&', '%', '$', '#', '_', '{', '}', '~', '^']),
                    "live LaTeX in {cell:?}"
                );
                assert!(!p.chars().any(char::is_control), "{cell:?}");
            }
        }
        for line in tex.lines() {
            let live = line.trim_start();
            assert!(
                live.starts_with('%') || live.starts_with('\\') || line.ends_with("\\\\"),
                "a line the text started: {line:?}"
            );
        }
    }

    fn episode(text: &str, names: &[String; 4]) -> Episode {
        Episode {
            cell: text.into(),
            key: text.into(),
            suite: names[0].clone(),
            attack: names[1].clone(),
            defense: names[2].clone(),
            model: names[3].clone(),
            user_task: text.into(),
            injection_task: Some(text.into()),
            seed: 0,
            outcome: "attacked",
            utility: false,
            blocked: 0,
            escalated: 0,
            tokens: 1,
            error: Some(text.into()),
            decisions: serde_json::json!([{"step": 0, "tool": text, "path": text}]),
            trace: serde_json::json!({
                "messages": [{"role": "tool", "content": text}],
                "calls": [{"step": 0, "tool": text, "arguments": {text: text}}],
                "answer": text,
            }),
        }
    }

    /// HTML: the page's two scripts only, no comment opener, the table's rows intact, and
    /// the embedded data the same JSON as the episodes.
    fn check_html(summary: &Summary, names: &[[String; 4]], trace: &str) {
        let grid = report::summary_grid(summary);
        let episodes: Vec<Episode> = names.iter().map(|n| episode(trace, n)).collect();
        let doc = Document {
            summary: summary.clone(),
            tables: vec![grid],
            per_defense: summary.rows.clone(),
            per_suite: summary.rows.clone(),
            scores: vec![(vec![1; 20], vec![1; 20]); summary.rows.len()],
            episodes: episodes.clone(),
            runs: vec![trace.into()],
            duplicates: 0,
        };
        let page = report::html::render(&doc);
        assert_eq!(page.matches("<script").count(), 2, "{page}");
        assert_eq!(page.matches("</script").count(), 2, "{page}");
        assert!(!page.contains("<!--"), "{page}");
        assert_eq!(
            page.matches("<tr>").count(),
            summary.rows.len() + 1,
            "header and one line per row"
        );
        let open = "<script type=\"application/json\" id=\"episodes\">";
        let data = page
            .split(open)
            .nth(1)
            .unwrap()
            .split("</script>")
            .next()
            .unwrap();
        let parsed: serde_json::Value = serde_json::from_str(data).unwrap();
        assert_eq!(parsed, serde_json::to_value(&episodes).unwrap());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        #[test]
        fn hostile_text_is_inert_in_every_format(
            names in prop::collection::vec(
                (hostile(), hostile(), hostile(), hostile()).prop_map(|(a, b, c, d)| [a, b, c, d]),
                1..4,
            ),
            trace in hostile(),
        ) {
            let summary = summary(&names);
            let rows = summary.rows.len();
            check_markdown(&report::markdown(&summary), rows);
            let grid = formats::readable(&report::summary_grid(&summary));
            check_markdown(&formats::markdown(&grid), rows);

            let csv = report::csv(&summary).unwrap();
            let mut reader = csv::Reader::from_reader(csv.as_bytes());
            let header = reader.headers().unwrap().len();
            let records: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
            prop_assert_eq!(records.len(), rows);
            for r in &records {
                prop_assert_eq!(r.len(), header);
                for cell in r.iter().filter(|c| c.parse::<f64>().is_err()) {
                    prop_assert!(!cell.starts_with(['=', '+', '-', '@', '\t', '\r']), "{:?}", cell);
                }
            }

            let essential = formats::essential(&report::summary_grid(&summary));
            check_latex(&formats::latex(&essential), &essential);

            let opts = TextOptions { width: 100, ..Default::default() };
            let table = report::table(&summary, &opts).unwrap();
            prop_assert!(
                !table.chars().any(|c| c != '\n' && super::is_control(c)),
                "{:?}", table
            );

            check_html(&summary, &names, &trace);
        }
    }
}
