//! Names and traces drawn from a hostile alphabet, rendered by the real writers of every
//! format (through [`crate::escape`]): nothing of theirs is markup, a formula, a command
//! or a control sequence, and every table and page keeps its structure.

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
/// control character is left in any row's cells, and each row is in every part.
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
        "$\\Delta$",
        "\\allowbreak{}",
        "\\dag{}",
        "$-$",
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
        // A wrapped label: `\parbox[t]{<width>}{\raggedright <text>}`, whatever width
        // the table narrowed its label column to.
        if let Some(inner) = c
            .strip_prefix("\\parbox[t]{")
            .and_then(|x| x.split_once("}{\\raggedright "))
            .filter(|(width, _)| width.ends_with("pt"))
            .and_then(|(_, x)| x.strip_suffix('}'))
        {
            c = inner.to_string();
        }
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
    // Data rows: lines ending a row that are not a header (the line before a
    // `\midrule`) or a caption; each appears once in every part the table is split into.
    let lines: Vec<&str> = tex.lines().collect();
    let rows: Vec<&str> = (0..lines.len())
        .filter(|&i| lines[i].ends_with("\\\\") && !lines[i].starts_with("\\caption"))
        .filter(|&i| !lines.get(i + 1).is_some_and(|n| n.starts_with("\\midrule")))
        .map(|i| lines[i])
        .collect();
    let parts = tex.matches("\\begin{tabular}").count() + tex.matches("\\begin{longtable}").count();
    assert_eq!(rows.len(), grid.rows.len() * parts, "{tex}");
    for line in &rows {
        let cells: Vec<&str> = line.trim_end_matches("\\\\").split(" & ").collect();
        assert!(cells.len() <= grid.columns.len(), "{line}");
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
        beside: None,
        searches: Vec::new(),
        coverage_note: None,
    };
    let page = report::html::render(&doc);
    assert_eq!(page.matches("<script").count(), 2, "{page}");
    assert_eq!(page.matches("</script").count(), 2, "{page}");
    assert!(!page.contains("<!--"), "{page}");
    // The table, and under its disclosure the same rows with every column.
    assert_eq!(
        page.matches("<tr>").count(),
        (summary.rows.len() + 1) * page.matches("<div class=\"tablewrap\">").count(),
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
        check_latex(&formats::latex(&essential, formats::LatexNotes::default()), &essential);

        let opts = TextOptions { width: 100, ..Default::default() };
        let table = report::table(&summary, &opts).unwrap();
        prop_assert!(
            !table.chars().any(|c| c != '\n' && crate::escape::is_control(c)),
            "{:?}", table
        );

        check_html(&summary, &names, &trace);
    }
}
