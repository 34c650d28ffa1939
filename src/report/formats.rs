//! Grids as files: Markdown, CSV, JSON and LaTeX (booktabs). Tables show rates as
//! percentages; CSV and JSON carry fractions in [0, 1], cleaned of binary noise, with
//! `<id>_lo`/`<id>_hi` interval fields (documented in `docs/columns.md`).

use super::columns::{Grid, Show, Value, clean};
use super::escape;
use serde_json::{Map, Value as Json, json};
use std::fmt::Write;

/// The output formats of `report --format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Aligned text for a terminal.
    Table,
    /// GitHub-flavoured Markdown.
    Md,
    /// One CSV block per table (fractions).
    Csv,
    /// One JSON document (fractions).
    Json,
    /// LaTeX tabulars in booktabs layout.
    Latex,
    /// A self-contained HTML page with plots and the per-episode drill-down.
    Html,
}

/// The columns a document format shows: everything a reader needs, not the bookkeeping.
pub fn readable(grid: &Grid) -> Grid {
    let keep: Vec<usize> = (0..grid.columns.len())
        .filter(|&i| grid.columns[i].show <= Show::Extra)
        .collect();
    grid.select(&keep)
}

/// The columns a paper table shows: keys and essentials.
pub fn essential(grid: &Grid) -> Grid {
    let keep: Vec<usize> = (0..grid.columns.len())
        .filter(|&i| grid.columns[i].show <= Show::Default)
        .collect();
    grid.select(&keep)
}

/// A Markdown table, the best per column in bold.
pub fn markdown(grid: &Grid) -> String {
    let mut out = String::new();
    writeln!(out, "## {}\n", escape::markdown(&grid.title)).unwrap();
    for n in &grid.notes {
        writeln!(out, "{}  ", escape::markdown(n)).unwrap();
    }
    if !grid.notes.is_empty() {
        out.push('\n');
    }
    let titles: Vec<String> = grid
        .columns
        .iter()
        .map(|c| escape::markdown(&c.title))
        .collect();
    writeln!(out, "| {} |", titles.join(" | ")).unwrap();
    let aligns: Vec<&str> = grid
        .columns
        .iter()
        .map(|c| if c.show == Show::Key { "---" } else { "--:" })
        .collect();
    writeln!(out, "|{}|", aligns.join("|")).unwrap();
    for (r, row) in grid.rows.iter().enumerate() {
        let cells: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(c, v)| {
                // Figures are the writer's own; text may be anyone's.
                let s = match v {
                    Value::Text(t) => escape::markdown(t),
                    v => v.display(true),
                };
                if grid.is_best(r, c) {
                    format!("**{s}**")
                } else {
                    s
                }
            })
            .collect();
        writeln!(out, "| {} |", cells.join(" | ")).unwrap();
    }
    if !grid.footnotes.is_empty() {
        out.push('\n');
        for f in &grid.footnotes {
            writeln!(out, "- {}", escape::markdown(f)).unwrap();
        }
    }
    out
}

/// The file fields of one cell: a fraction (and its interval) for rates, the figure for
/// numbers, text as is; empty when missing.
fn fields(v: &Value, interval: bool) -> Vec<Json> {
    let f = |x: f64| json!(clean(x));
    let mut out = match v {
        Value::Missing => vec![Json::Null],
        Value::Text(s) => vec![
            // `simulated` and similar flags stay booleans in JSON.
            match s.as_str() {
                "true" => Json::Bool(true),
                "false" => Json::Bool(false),
                _ => Json::String(s.clone()),
            },
        ],
        Value::Rate { v, .. }
        | Value::Num { v, .. }
        | Value::Approx { v, .. }
        | Value::Delta { v, .. }
        | Value::P(v)
        | Value::Factor(v) => vec![f(*v)],
        Value::Count(c) => vec![json!(c)],
        Value::Flag(b) => vec![Json::Bool(*b)],
        Value::Part { k, n } if *n > 0 => vec![f(*k as f64 / *n as f64)],
        Value::Part { .. } => vec![Json::Null],
    };
    if interval {
        match v {
            Value::Rate {
                ci: Some([lo, hi]), ..
            } => out.extend([f(*lo), f(*hi)]),
            _ => out.extend([Json::Null, Json::Null]),
        }
    }
    out
}

fn row_fields(grid: &Grid, row: &[Value]) -> Vec<Json> {
    row.iter()
        .zip(&grid.columns)
        .flat_map(|(v, c)| fields(v, c.interval))
        .collect()
}

/// A CSV table: a header of field names, then one line per row.
pub fn csv(grid: &Grid) -> Result<String, csv::Error> {
    // A CSV has no notes: rows of a partial run carry the mark in a column of their own,
    // so a spreadsheet or a script reading the file cannot take them for the whole.
    let partial = grid
        .notes
        .iter()
        .any(|n| n.starts_with(super::PARTIAL_MARK))
        .then_some(super::PARTIAL_MARK);
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut head: Vec<String> = grid
        .file_fields()
        .iter()
        .map(|f| escape::csv_cell(f))
        .collect();
    if partial.is_some() {
        head.push("partial".into());
    }
    w.write_record(&head)?;
    for row in &grid.rows {
        let mut cells: Vec<String> = row_fields(grid, row)
            .iter()
            .map(|j| match j {
                Json::Null => String::new(),
                Json::String(s) => escape::csv_cell(s),
                other => other.to_string(),
            })
            .collect();
        cells.extend(partial.map(str::to_string));
        w.write_record(&cells)?;
    }
    let bytes = w.into_inner().map_err(|e| e.into_error())?;
    Ok(String::from_utf8(bytes).expect("csv of utf-8 strings"))
}

/// A JSON object for one table: id, title, notes, the column documentation, and rows
/// as objects keyed by field name.
pub fn json(grid: &Grid) -> Json {
    let fields = grid.file_fields();
    let rows: Vec<Json> = grid
        .rows
        .iter()
        .map(|row| {
            let m: Map<String, Json> = fields.iter().cloned().zip(row_fields(grid, row)).collect();
            Json::Object(m)
        })
        .collect();
    json!({
        "id": grid.id,
        "title": grid.title,
        "notes": grid.notes,
        "columns": grid.columns.iter().map(|c| json!({
            "id": c.id, "title": c.title, "doc": c.doc,
            "unit": unit(c.interval, grid, &c.id),
        })).collect::<Vec<_>>(),
        "rows": rows,
        "footnotes": grid.footnotes,
    })
}

/// What a column's figures are, for the JSON column documentation.
fn unit(interval: bool, grid: &Grid, id: &str) -> &'static str {
    let col = grid.column(id).expect("own column");
    match grid
        .rows
        .iter()
        .map(|r| &r[col])
        .find(|v| **v != Value::Missing)
    {
        Some(Value::Rate { .. }) | Some(Value::Part { .. }) => {
            if interval {
                "fraction with 95% interval"
            } else {
                "fraction"
            }
        }
        Some(Value::Count(_)) => "count",
        Some(Value::Factor(_)) => "ratio",
        Some(Value::Delta { rate: true, .. }) => "difference of fractions",
        Some(Value::Delta { .. }) => "difference",
        Some(Value::P(_)) => "p-value",
        Some(Value::Flag(_)) => "true or false",
        Some(Value::Num { .. } | Value::Approx { .. }) => "number",
        Some(Value::Text(_)) => "text",
        _ => "",
    }
}

/// The text width of a one-column `article` at 10 pt (345 pt), the narrowest a
/// paper's tables commonly get; tables are split to fit it.
pub const TEXTWIDTH_PT: f64 = 345.0;

/// Rows above which a table is a `longtable` (it breaks across pages) rather than a
/// float (which would run off the page).
const LONG_ROWS: usize = 40;

/// A generous estimate of `text`'s width in points at `\small` (9 pt Computer Modern).
fn latex_text_pt(text: &str) -> f64 {
    text.chars()
        .map(|c| match c {
            '0'..='9' => 4.6,
            '.' | ',' | ':' | ';' | '\'' | '|' | '!' | 'i' | 'l' | 'j' => 2.6,
            ' ' => 3.1,
            'm' | 'w' | 'M' | 'W' | '%' | '@' | '—' => 7.6,
            c if c.is_uppercase() => 6.9,
            '_' | '×' | 'Δ' | '–' => 5.4,
            _ => 4.8,
        })
        .sum()
}

/// A column header as lines no wider than `target` points where its words allow
/// (breaking at spaces and after underscores), so a long title does not set its
/// column's width.
fn header_lines(title: &str, target: f64) -> Vec<String> {
    let mut tokens: Vec<String> = Vec::new();
    for word in title.split(' ') {
        let mut rest = word;
        while let Some(at) = rest.find('_') {
            tokens.push(rest[..=at].to_string());
            rest = &rest[at + 1..];
        }
        tokens.push(format!("{rest} "));
    }
    let mut lines: Vec<String> = vec![String::new()];
    for t in tokens {
        let line = lines.last_mut().expect("one line at least");
        let joined = format!("{line}{t}");
        if !line.is_empty() && latex_text_pt(joined.trim_end()) > target {
            lines.push(t);
        } else {
            *line = joined;
        }
    }
    lines.iter().map(|l| l.trim_end().to_string()).collect()
}

/// The widest cell of a column, in points.
fn latex_cells_pt(grid: &Grid, c: usize) -> f64 {
    grid.rows
        .iter()
        .map(|r| latex_text_pt(&r[c].display(false)) + 1.0)
        .fold(0.0, f64::max)
}

/// A column's header lines: as wide as its cells, or 36 pt when they are narrower.
fn latex_header(grid: &Grid, c: usize) -> Vec<String> {
    header_lines(&grid.columns[c].title, latex_cells_pt(grid, c).max(36.0))
}

/// The widest a key column gets: longer names (a model with its settings) wrap in a
/// box this wide, breaking after commas.
const KEY_WRAP_PT: f64 = 110.0;

/// A column's width in points (its widest cell or header line, and the padding).
fn latex_column_pt(grid: &Grid, c: usize) -> f64 {
    let header = latex_header(grid, c)
        .iter()
        .map(|l| latex_text_pt(l))
        .fold(0.0, f64::max);
    let cells = latex_cells_pt(grid, c);
    let cells = if wraps(grid, c) { KEY_WRAP_PT } else { cells };
    header.max(cells) + 12.0
}

/// Whether a key column's names are too long to stay on one line.
fn wraps(grid: &Grid, c: usize) -> bool {
    grid.columns[c].show == Show::Key && latex_cells_pt(grid, c) > KEY_WRAP_PT
}

/// The column sets of the tables a grid is split into so each fits `width` points:
/// every part repeats the key columns, the figures fill parts in their order.
pub fn latex_parts(grid: &Grid, width: f64) -> Vec<Vec<usize>> {
    let keys: Vec<usize> = (0..grid.columns.len())
        .filter(|&c| grid.columns[c].show == Show::Key)
        .collect();
    let key_w: f64 = keys.iter().map(|&c| latex_column_pt(grid, c)).sum();
    let mut parts: Vec<Vec<usize>> = Vec::new();
    let mut current = keys.clone();
    let mut used = key_w;
    for c in (0..grid.columns.len()).filter(|c| !keys.contains(c)) {
        let w = latex_column_pt(grid, c);
        if used + w > width && current.len() > keys.len() {
            parts.push(std::mem::replace(&mut current, keys.clone()));
            used = key_w;
        }
        current.push(c);
        used += w;
    }
    if current.len() > keys.len() || parts.is_empty() {
        parts.push(current);
    }
    parts
}

/// What the LaTeX of a report says once: the simulation note as a footnote to the
/// first table, a short "simulated roles" mark on every caption.
#[derive(Clone, Copy, Debug, Default)]
pub struct LatexNotes<'a> {
    /// The footnote's text, on this table (the first of the report).
    pub footnote: Option<&'a str>,
    /// Some roles were scripted: every caption says so in two words.
    pub simulated: bool,
}

/// Booktabs tables (`\toprule`, `\midrule`, `\bottomrule`) of a grid, split into as
/// many tables as it takes to fit [`TEXTWIDTH_PT`], each with a short caption (its title,
/// the grid's notes, the part); a float, or a `longtable` when it is long. The best per
/// column in bold. Needs `\usepackage{booktabs}` and `\usepackage{longtable}`.
pub fn latex(grid: &Grid, notes: LatexNotes<'_>) -> String {
    let parts = latex_parts(grid, TEXTWIDTH_PT);
    let mut out = String::new();
    // Comment lines too carry escaped text: a line break in a note would end the
    // comment and start a live line.
    writeln!(out, "% {}", escape::latex(&grid.title)).unwrap();
    for (k, cols) in parts.iter().enumerate() {
        let part = grid.select(cols);
        let mut caption = escape::latex(&grid.title);
        // Model names are long and have no spaces: they may break after a comma.
        for n in &grid.notes {
            write!(
                caption,
                "; {}",
                escape::latex(n).replace(',', ",\\allowbreak{}")
            )
            .unwrap();
        }
        if parts.len() > 1 {
            write!(caption, " (part {} of {})", k + 1, parts.len()).unwrap();
        }
        let short = caption.clone();
        if notes.simulated {
            caption.push_str("; simulated roles");
        }
        let footnote = notes.footnote.filter(|_| k == 0);
        if footnote.is_some() {
            caption.push_str("\\protect\\footnotemark");
        }
        let label = if k == 0 {
            format!("tab:{}", grid.id)
        } else {
            format!("tab:{}-{}", grid.id, k + 1)
        };
        let caption = format!(
            "\\caption[{short}]{{{caption}. Rates in \\%; bold: best defense per column.}}\\label{{{label}}}"
        );
        out.push_str(&latex_table(&part, &caption));
        if let Some(f) = footnote {
            writeln!(out, "\\footnotetext{{{}}}", escape::latex(f)).unwrap();
        }
    }
    out
}

/// One booktabs table of `grid`'s columns under `caption` (a `\caption…\label…` line).
fn latex_table(grid: &Grid, caption: &str) -> String {
    let mut out = String::new();
    let spec: String = grid
        .columns
        .iter()
        .map(|c| if c.show == Show::Key { 'l' } else { 'r' })
        .collect();
    let titles: Vec<String> = (0..grid.columns.len())
        .map(|i| {
            let c = &grid.columns[i];
            let lines: Vec<String> = latex_header(grid, i)
                .iter()
                .map(|l| escape::latex(l))
                .collect();
            let align = if c.show == Show::Key { 'l' } else { 'r' };
            if lines.len() > 1 {
                format!("\\shortstack[{align}]{{{}}}", lines.join("\\\\"))
            } else {
                lines.concat()
            }
        })
        .collect();
    let long = grid.rows.len() > LONG_ROWS;
    if long {
        writeln!(
            out,
            "\\begingroup\\small\n\\begin{{longtable}}{{{spec}}}\n{caption}\\\\\n\\toprule"
        )
        .unwrap();
        writeln!(
            out,
            "{} \\\\\n\\midrule\n\\endfirsthead\n\\toprule\n{} \\\\\n\\midrule\n\\endhead\n\\bottomrule\n\\endfoot",
            titles.join(" & "),
            titles.join(" & ")
        )
        .unwrap();
    } else {
        writeln!(out, "\\begin{{table}}[tbp]\n\\centering\n\\small").unwrap();
        writeln!(out, "\\begin{{tabular}}{{{spec}}}\n\\toprule").unwrap();
        writeln!(out, "{} \\\\\n\\midrule", titles.join(" & ")).unwrap();
    }
    // A space between groups of rows sharing their first key (when there is another).
    let keys = grid.columns.iter().filter(|c| c.show == Show::Key).count();
    let first_key = grid
        .columns
        .iter()
        .position(|c| c.show == Show::Key)
        .filter(|_| keys > 1);
    for (r, row) in grid.rows.iter().enumerate() {
        if let Some(k) = first_key
            && r > 0
            && grid.rows[r - 1][k] != row[k]
        {
            writeln!(out, "\\addlinespace").unwrap();
        }
        let cells: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(c, v)| {
                let s = escape::latex(&v.display(false));
                if wraps(grid, c) {
                    return format!(
                        "\\parbox[t]{{{KEY_WRAP_PT}pt}}{{\\raggedright {}}}",
                        s.replace(',', ",\\allowbreak{}")
                    );
                }
                if grid.is_best(r, c) {
                    format!("\\textbf{{{s}}}")
                } else {
                    s
                }
            })
            .collect();
        writeln!(out, "{} \\\\", cells.join(" & ")).unwrap();
    }
    if long {
        writeln!(out, "\\end{{longtable}}\n\\endgroup").unwrap();
    } else {
        writeln!(
            out,
            "\\bottomrule\n\\end{{tabular}}\n{caption}\n\\end{{table}}"
        )
        .unwrap();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::columns::{Better, Column};

    type R = (&'static str, f64, Option<[f64; 2]>);

    fn grid() -> Grid {
        let rows: Vec<R> = vec![
            ("no_ne", 0.9999999999999998, Some([0.8, 1.0])),
            ("a&b", 0.1, None),
        ];
        let mut g = Grid::build(
            "main",
            "Main",
            vec![
                Column::key("defense", "Defense", "d", |r: &R| r.0.into()),
                Column::figure("asr", "ASR %", "a", Show::Default, |r: &R| {
                    Value::rate(Some(r.1), r.2)
                })
                .better(Better::Lower)
                .with_interval(),
                Column::figure("n", "n", "c", Show::File, |_: &R| Value::Count(3)),
            ],
            &rows,
            |_| String::new(),
        );
        g.notes.push("model: sim:obedient".into());
        g
    }

    #[test]
    fn csv_has_fractions_and_interval_fields() {
        let t = csv(&grid()).unwrap();
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "defense,asr,asr_lo,asr_hi,n");
        assert_eq!(lines[1], "no_ne,1.0,0.8,1.0,3");
        assert_eq!(lines[2], "a&b,0.1,,,3");
    }

    #[test]
    fn json_rows_are_keyed_by_field() {
        let j = json(&grid());
        assert_eq!(j["rows"][0]["asr"], json!(1.0));
        assert_eq!(j["rows"][1]["asr_lo"], Json::Null);
        assert_eq!(j["columns"][1]["unit"], "fraction with 95% interval");
    }

    #[test]
    fn markdown_bolds_the_best_and_shows_percent() {
        let m = markdown(&grid());
        assert!(m.contains("| **10.0** |"), "{m}");
        assert!(m.contains("100.0 [80.0–100.0]"), "{m}");
    }

    #[test]
    fn latex_is_booktabs_and_escaped() {
        let l = latex(&essential(&grid()), LatexNotes::default());
        for part in [
            "\\toprule",
            "\\midrule",
            "\\bottomrule",
            "{lr}",
            "no\\_ne",
            "a\\&b",
        ] {
            assert!(l.contains(part), "{part} in {l}");
        }
        assert!(l.contains("\\textbf{10.0}"), "{l}");
        // Every row has as many cells as the column spec.
        for line in l.lines().filter(|l| l.ends_with("\\\\")) {
            assert_eq!(line.matches(" & ").count(), 1, "{line}");
        }
    }
}
