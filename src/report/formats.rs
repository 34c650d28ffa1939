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
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(grid.file_fields().iter().map(|f| escape::csv_cell(f)))?;
    for row in &grid.rows {
        w.write_record(row_fields(grid, row).iter().map(|j| match j {
            Json::Null => String::new(),
            Json::String(s) => escape::csv_cell(s),
            other => other.to_string(),
        }))?;
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

/// A `table` float with a booktabs `tabular` (`\toprule`, `\midrule`, `\bottomrule`),
/// the best per column in bold. Needs `\usepackage{booktabs}`.
pub fn latex(grid: &Grid) -> String {
    let mut out = String::new();
    let spec: String = grid
        .columns
        .iter()
        .map(|c| if c.show == Show::Key { 'l' } else { 'r' })
        .collect();
    // Comment lines too carry escaped text: a line break in a note would end the
    // comment and start a live line.
    writeln!(out, "% {}", escape::latex(&grid.title)).unwrap();
    for n in &grid.notes {
        writeln!(out, "% {}", escape::latex(n)).unwrap();
    }
    writeln!(out, "\\begin{{table}}[t]\n\\centering\n\\small").unwrap();
    writeln!(out, "\\begin{{tabular}}{{{spec}}}\n\\toprule").unwrap();
    let titles: Vec<String> = grid
        .columns
        .iter()
        .map(|c| escape::latex(&c.title))
        .collect();
    writeln!(out, "{} \\\\\n\\midrule", titles.join(" & ")).unwrap();
    let first_key = grid.columns.iter().position(|c| c.show == Show::Key);
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
                if grid.is_best(r, c) {
                    format!("\\textbf{{{s}}}")
                } else {
                    s
                }
            })
            .collect();
        writeln!(out, "{} \\\\", cells.join(" & ")).unwrap();
    }
    writeln!(out, "\\bottomrule\n\\end{{tabular}}").unwrap();
    let mut caption = escape::latex(&grid.title);
    for n in &grid.notes {
        caption.push_str(&format!("; {}", escape::latex(n)));
    }
    writeln!(
        out,
        "\\caption{{{caption}. Rates in \\%; bold: best defense per column.}}\n\\label{{tab:{}}}\n\\end{{table}}",
        grid.id
    )
    .unwrap();
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
        let l = latex(&essential(&grid()));
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
