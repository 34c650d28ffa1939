//! The terminal table: plain aligned columns (no box drawing, so nothing wraps into
//! a mess), fitted to the terminal width, the best defense per column marked with `*`.

use super::abbrev;
use super::columns::{Grid, Show};
use super::escape;
use std::fmt::Write;

/// How to fit a table to the terminal.
#[derive(Clone, Debug, Default)]
pub struct TextOptions {
    /// Terminal width in columns.
    pub width: usize,
    /// Show every column (`--wide`), intervals included.
    pub wide: bool,
    /// Show these columns (`--columns`), after the key columns.
    pub columns: Option<Vec<String>>,
}

impl TextOptions {
    /// Width from `$COLUMNS`, else the terminal's, else 100 (when piped to a file).
    pub fn detect() -> TextOptions {
        let width = std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.parse().ok())
            .or_else(|| terminal_size::terminal_size().map(|(w, _)| w.0 as usize))
            .unwrap_or(DEFAULT_WIDTH);
        TextOptions {
            width,
            ..Default::default()
        }
    }
}

/// The table flags every command that prints a table takes.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct TableFlags {
    /// Show every column (intervals too), however wide the table gets.
    #[arg(long)]
    pub wide: bool,
    /// Show these columns after the row labels, comma-separated by id
    /// (e.g. `asr,ua,w_asr,eds`; ids are the CSV header, see docs/columns.md).
    #[arg(long, value_delimiter = ',', value_name = "IDS")]
    pub columns: Option<Vec<String>>,
    /// Fit the table to this many columns (default: $COLUMNS, else the terminal's, else 100).
    #[arg(long, value_name = "N")]
    pub width: Option<usize>,
}

impl TableFlags {
    pub fn options(&self) -> TextOptions {
        let mut o = TextOptions::detect();
        if let Some(w) = self.width {
            o.width = w;
        }
        o.wide = self.wide;
        o.columns = self.columns.clone();
        o
    }
}

/// The width assumed when output goes to a file or pipe.
pub const DEFAULT_WIDTH: usize = 100;

const GAP: &str = "  ";
const BEST: char = '*';

/// The columns the terminal shows for `opts`: `--columns` and `--wide` as asked;
/// otherwise the essentials, widened by extra columns while they fit and narrowed by
/// dropping essentials from the right while they do not.
pub fn fit(grid: &Grid, opts: &TextOptions) -> Result<(Grid, usize), super::ReportError> {
    let mut grid = grid.clone();
    strip_common_prefixes(&mut grid);
    let grid = &grid;
    if let Some(ids) = &opts.columns {
        return Ok((grid.pick(ids)?, 0));
    }
    let visible = |show: Show| {
        (0..grid.columns.len())
            .filter(|&i| grid.columns[i].show <= show)
            .collect::<Vec<_>>()
    };
    if opts.wide {
        return Ok((grid.select(&visible(Show::Extra)), 0));
    }
    // An alert a row raises (`!`, a gate's verdict) is shown however narrow the terminal.
    let mut keep: Vec<usize> = (0..grid.columns.len())
        .filter(|&i| grid.columns[i].show <= Show::Default || grid.raised(i))
        .collect();
    let fits_in =
        |g: &Grid, keep: &[usize]| max_line(&render_body(&g.select(keep), false)) <= opts.width;
    // Long row names cost width on every line: shorten them (with a legend) before any
    // essential figure is dropped.
    let abbreviated;
    let grid = if fits_in(grid, &keep) {
        grid
    } else {
        // The longest names first; shorter ones only while the table still does not fit.
        let mut g = abbrev::shorten(grid, abbrev::LONG_NAMES[0]).with_legend_note();
        for &limit in &abbrev::LONG_NAMES[1..] {
            if fits_in(&g, &keep) {
                break;
            }
            g = abbrev::shorten(grid, limit).with_legend_note();
        }
        abbreviated = g;
        &abbreviated
    };
    let fits = |keep: &[usize]| fits_in(grid, keep);
    let mut hidden = 0;
    while !fits(&keep) {
        match keep
            .iter()
            .rposition(|&i| grid.columns[i].show != Show::Key && !grid.raised(i))
        {
            Some(p) => {
                keep.remove(p);
                hidden += 1;
            }
            None => break,
        }
    }
    if hidden == 0 {
        for i in 0..grid.columns.len() {
            if grid.columns[i].show == Show::Extra {
                let mut more = keep.clone();
                more.push(i);
                if !keep.contains(&i) && fits(&more) {
                    keep = more;
                }
            }
        }
    }
    if grid.in_order {
        keep.sort_unstable();
    }
    Ok((grid.select(&keep), hidden))
}

fn max_line(s: &str) -> usize {
    s.lines().map(|l| l.chars().count()).max().unwrap_or(0)
}

/// Renders a grid for the terminal: notes, the table, footnotes, each fitted to the width.
pub fn render(grid: &Grid, opts: &TextOptions) -> Result<String, super::ReportError> {
    let (shown, hidden) = fit(grid, opts)?;
    let mut out = String::new();
    let width = opts.width.max(40);
    for n in &shown.notes {
        out.push_str(&wrap(n, width, ""));
    }
    out.push_str(&render_body(&shown, opts.wide));
    let marked =
        (0..shown.rows.len()).any(|r| (0..shown.columns.len()).any(|c| shown.is_best(r, c)));
    if marked {
        out.push_str(&wrap(
            "* best defense in its column among rows of the same suite, attack and model.",
            width,
            "  ",
        ));
    }
    // Every column a reader could ask for that the table left out, by name.
    let left_out: Vec<&str> = grid
        .columns
        .iter()
        .filter(|c| c.show != Show::Key && c.show <= Show::Extra)
        .filter(|c| shown.column(&c.id).is_none())
        .map(|c| c.title.as_str())
        .collect();
    if opts.columns.is_none() && !left_out.is_empty() {
        let why = if hidden > 0 {
            format!(" ({hidden} essential one(s) to fit {} columns)", opts.width)
        } else {
            String::new()
        };
        out.push_str(&wrap(
            &format!(
                "Not shown{why}: {}; --wide shows all, --columns picks.",
                left_out.join(", ")
            ),
            width,
            "  ",
        ));
    }
    // A footnote that explains columns is printed when one of them is shown.
    for f in &shown.footnotes {
        let explains = super::footnote_columns(f);
        if explains.is_none_or(|ids| ids.iter().any(|id| shown.column(id).is_some())) {
            out.push_str(&wrap(f, width, "  "));
        }
    }
    Ok(out)
}

/// `dojo-style/banking`, `dojo-style/slack` → `banking`, `slack` with a note saying so:
/// a prefix every row shares says nothing and costs width.
fn strip_common_prefixes(grid: &mut Grid) {
    for c in 0..grid.columns.len() {
        if grid.columns[c].show != Show::Key {
            continue;
        }
        let prefixes: Vec<Option<&str>> = grid
            .rows
            .iter()
            .filter_map(|r| match &r[c] {
                super::columns::Value::Text(t) if t != crate::aggregate::metrics::ALL_SUITES => {
                    Some(t.split_once('/').map(|(p, _)| p))
                }
                _ => None,
            })
            .collect();
        let Some(Some(first)) = prefixes.first().copied() else {
            continue;
        };
        if !prefixes.iter().all(|p| *p == Some(first)) {
            continue;
        }
        let first = first.to_string();
        for r in &mut grid.rows {
            if let super::columns::Value::Text(t) = &mut r[c]
                && let Some(rest) = t.strip_prefix(&format!("{first}/"))
            {
                *t = rest.to_string();
            }
        }
        grid.notes.push(format!(
            "{}s: {first}/…",
            grid.columns[c].title.to_lowercase()
        ));
    }
}

/// The header, a rule and the rows; figures right-aligned, the best marked.
fn render_body(grid: &Grid, with_ci: bool) -> String {
    let ncol = grid.columns.len();
    let cells: Vec<Vec<String>> = grid
        .rows
        .iter()
        .map(|r| {
            r.iter()
                .map(|v| escape::terminal_cell(&v.display(with_ci)))
                .collect()
        })
        .collect();
    let titles: Vec<String> = grid
        .columns
        .iter()
        .map(|c| escape::terminal_cell(&c.title))
        .collect();
    let marks: Vec<bool> = (0..ncol)
        .map(|c| (0..grid.rows.len()).any(|r| grid.is_best(r, c)))
        .collect();
    let widths: Vec<usize> = (0..ncol)
        .map(|c| {
            let data = cells
                .iter()
                .map(|r| r[c].chars().count())
                .max()
                .unwrap_or(0)
                + usize::from(marks[c]);
            data.max(titles[c].chars().count())
        })
        .collect();
    let is_key = |c: usize| grid.columns[c].show == Show::Key;
    // Keys and labels (text that describes the row) read left to right; figures align
    // on their last digit.
    let left = |c: usize| is_key(c) || grid.columns[c].label;
    let line = |parts: Vec<String>| -> String {
        let mut l = parts.join(GAP);
        l.truncate(l.trim_end().len());
        l.push('\n');
        l
    };
    let mut out = String::new();
    out.push_str(&line(
        (0..ncol)
            .map(|c| {
                let t = &titles[c];
                if left(c) {
                    format!("{t:<w$}", w = widths[c])
                } else {
                    format!("{t:>w$}", w = widths[c])
                }
            })
            .collect(),
    ));
    let total = widths.iter().sum::<usize>() + GAP.len() * ncol.saturating_sub(1);
    writeln!(out, "{}", "─".repeat(total)).unwrap();
    // A rule between blocks of the first key (a new suite) guides the eye; useless
    // when that key is the only label.
    let first_key = (0..ncol)
        .find(|&c| is_key(c))
        .filter(|_| (0..ncol).filter(|&c| is_key(c)).count() > 1);
    for (r, row) in cells.iter().enumerate() {
        if let Some(k) = first_key
            && r > 0
            && cells[r - 1][k] != row[k]
            && ncol > 1
        {
            writeln!(out, "{}", "┈".repeat(total)).unwrap();
        }
        out.push_str(&line(
            (0..ncol)
                .map(|c| {
                    if left(c) {
                        format!("{:<w$}", row[c], w = widths[c])
                    } else if marks[c] {
                        let m = if grid.is_best(r, c) { BEST } else { ' ' };
                        format!("{:>w$}{m}", row[c], w = widths[c] - 1)
                    } else {
                        format!("{:>w$}", row[c], w = widths[c])
                    }
                })
                .collect(),
        ));
    }
    out
}

/// Word-wraps `text` to `width` with `indent` on every line, control characters shown
/// as `\u{…}` (the terminal's escaping layer).
pub fn wrap(text: &str, width: usize, indent: &str) -> String {
    let text = escape::terminal_cell(text);
    let mut out = String::new();
    let mut line = String::from(indent);
    for word in text.split_whitespace() {
        let len = line.chars().count();
        if len > indent.len() && len + 1 + word.chars().count() > width {
            out.push_str(&line);
            out.push('\n');
            line = format!("{indent}{word}");
        } else {
            if len > indent.len() {
                line.push(' ');
            }
            line.push_str(word);
        }
    }
    if line.len() > indent.len() {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::columns::{Better, Column, Value};

    type R = (&'static str, &'static str, f64);

    fn grid() -> Grid {
        let rows: Vec<R> = vec![
            ("fam/alpha", "none", 0.9),
            ("fam/alpha", "guard", 0.1),
            ("fam/beta", "none", 0.5),
        ];
        Grid::build(
            "t",
            "T",
            vec![
                Column::key("suite", "Suite", "", |r: &R| r.0.into()),
                Column::key("defense", "Defense", "", |r: &R| r.1.into()),
                Column::figure("asr", "ASR %", "", Show::Default, |r: &R| {
                    Value::rate(Some(r.2), Some([r.2 / 2.0, r.2]))
                })
                .better(Better::Lower),
                Column::figure(
                    "long",
                    "A rather long extra column",
                    "",
                    Show::Extra,
                    |r: &R| Value::num(Some(r.2), 3),
                ),
            ],
            &rows,
            |r| r.0.into(),
        )
    }

    fn opts(width: usize) -> TextOptions {
        TextOptions {
            width,
            ..Default::default()
        }
    }

    #[test]
    fn extra_columns_appear_only_when_they_fit() {
        let wide = render(&grid(), &opts(100)).unwrap();
        assert!(wide.contains("A rather long extra column"), "{wide}");
        let narrow = render(&grid(), &opts(40)).unwrap();
        let header = narrow.lines().find(|l| l.contains("ASR %")).unwrap();
        assert!(!header.contains("A rather long"), "{narrow}");
        assert!(narrow.contains("Not shown: A rather long"), "{narrow}");
        assert!(narrow.contains("ASR %"));
        for l in narrow.lines() {
            assert!(l.chars().count() <= 40, "{l:?}");
        }
    }

    #[test]
    fn best_is_starred_and_prefix_hoisted() {
        let t = render(&grid(), &opts(100)).unwrap();
        assert!(t.contains("suites: fam/…"), "{t}");
        let guard = t.lines().find(|l| l.contains("guard")).unwrap();
        assert!(guard.contains("10.0*"), "{t}");
        let none = t
            .lines()
            .find(|l| l.starts_with("alpha") && l.contains("none"))
            .unwrap();
        assert!(!none.contains('*'), "{t}");
    }

    #[test]
    fn wide_shows_intervals_and_columns_picks() {
        let o = TextOptions {
            width: 30,
            wide: true,
            columns: None,
        };
        let t = render(&grid(), &o).unwrap();
        assert!(t.contains("90.0 [45.0–90.0]"), "{t}");
        let o = TextOptions {
            width: 100,
            wide: false,
            columns: Some(vec!["long".into()]),
        };
        let t = render(&grid(), &o).unwrap();
        assert!(t.contains("A rather long") && !t.contains("ASR"), "{t}");
    }

    #[test]
    fn a_raised_alert_stays_however_narrow() {
        let mut g = grid();
        g.columns.push(crate::report::columns::ColumnSpec {
            alert: true,
            ..g.columns[3].clone()
        });
        g.columns[4].id = "flag".into();
        g.columns[4].title = "!".into();
        for (i, r) in g.rows.iter_mut().enumerate() {
            r.push(if i == 1 {
                Value::Text("!".into())
            } else {
                Value::Missing
            });
        }
        let (shown, hidden) = fit(&g, &opts(20)).unwrap();
        assert!(hidden > 0);
        assert!(shown.column("flag").is_some(), "{:?}", shown.columns);
        // Not raised: dropped like any extra.
        for r in &mut g.rows {
            r[4] = Value::Missing;
        }
        assert!(fit(&g, &opts(20)).unwrap().0.column("flag").is_none());
    }

    #[test]
    fn narrow_terminals_drop_figures_and_say_so() {
        let t = render(&grid(), &opts(10)).unwrap();
        assert!(t.contains("Not shown (1 essential"), "{t}");
    }

    #[test]
    fn long_names_are_abbreviated_with_a_legend_before_figures_drop() {
        let mut g = grid();
        for (i, r) in g.rows.iter_mut().enumerate() {
            r[1] = Value::Text(if i == 0 {
                "important_instructions+provenance_bypass".into()
            } else {
                "important_instructions_quoting+provenance_bypass".into()
            });
        }
        let (shown, hidden) = fit(&g, &opts(40)).unwrap();
        assert_eq!(hidden, 0, "{:?}", shown.notes);
        let legend = shown
            .notes
            .iter()
            .find(|n| n.starts_with("abbreviated"))
            .unwrap();
        assert!(
            legend.contains("ii+pb = important_instructions+provenance_bypass"),
            "{legend}"
        );
        assert!(
            legend.contains("iiq+pb = important_instructions_quoting+provenance_bypass"),
            "{legend}"
        );
    }

    #[test]
    fn long_names_heading_figure_columns_share_the_legend() {
        let rows: Vec<R> = vec![("fam/alpha", "none", 0.9), ("fam/alpha", "guard", 0.1)];
        let per_attack = |a: &'static str| {
            Column::figure(
                format!("asr_{a}"),
                format!("{a} ASR %"),
                "",
                Show::Default,
                move |r: &R| Value::rate(Some(r.2), None),
            )
        };
        let g = Grid::build(
            "main",
            "Main",
            vec![
                Column::key("defense", "Defense", "", |r: &R| r.1.into()),
                per_attack("important_instructions"),
                per_attack("tool_knowledge"),
                per_attack("direct"),
            ],
            &rows,
            |_| String::new(),
        );
        let wide = fit(&g, &opts(100)).unwrap().0;
        assert!(wide.column("asr_tool_knowledge").is_some());
        assert_eq!(
            wide.columns[1].title, "important_instructions ASR %",
            "fits: kept"
        );
        let (narrow, hidden) = fit(&g, &opts(44)).unwrap();
        assert_eq!(hidden, 0, "{:?}", narrow.columns);
        let titles: Vec<&str> = narrow.columns.iter().map(|c| c.title.as_str()).collect();
        assert_eq!(titles, ["Defense", "ii ASR %", "tk ASR %", "direct ASR %"]);
        let legend = narrow.notes.join(" ");
        assert!(
            legend.contains("ii = important_instructions")
                && legend.contains("tk = tool_knowledge"),
            "{legend}"
        );
    }

    #[test]
    fn wrap_respects_width() {
        let w = wrap("one two three four five six", 10, "  ");
        assert!(w.lines().all(|l| l.chars().count() <= 10), "{w}");
        assert_eq!(w.split_whitespace().count(), 6);
    }
}
