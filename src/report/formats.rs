//! Grids as files: Markdown, CSV, JSON and LaTeX (booktabs). Tables show rates as
//! percentages; CSV and JSON carry fractions in [0, 1], cleaned of binary noise, with
//! `<id>_lo`/`<id>_hi` interval fields (documented in `docs/columns.md`).

use super::abbrev;
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

/// The paper columns and every episode count (`n`, `n_*`): what `--wide` LaTeX shows.
pub fn essential_with_counts(grid: &Grid) -> Grid {
    let keep: Vec<usize> = (0..grid.columns.len())
        .filter(|&i| {
            let c = &grid.columns[i];
            c.show <= Show::Default
                || (c.show <= Show::Extra && (c.id == "n" || c.id.starts_with("n_")))
        })
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
            }
            | Value::Delta {
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
    let partial = grid.partial.then_some(super::PARTIAL_MARK);
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
        Some(Value::Delta {
            rate: true,
            ci: Some(_),
            ..
        }) if interval => "difference of fractions with 95% interval",
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

/// Figure columns one float holds at most: more are split into parts.
pub const MAX_DATA_COLUMNS: usize = 10;

/// Figure columns a part has at least (when the table has that many): a part of one
/// or two figures beside repeated labels reads as a fragment.
pub const MIN_DATA_COLUMNS: usize = 3;

/// The padding LaTeX puts around every column (`\tabcolsep`, 6 pt, on both sides).
const PAD_PT: f64 = 12.0;

/// The padding of a table that fits fewer parts with it: `\tabcolsep` of 4 pt.
const TIGHT_PAD_PT: f64 = 8.0;

/// A header may be this wide (in lines between its words) when its figures are
/// narrower, so it takes one or two lines; a table that fits fewer parts otherwise sets
/// its headers as narrow as their figures.
const HEADER_MIN_PT: f64 = 36.0;

/// The widest a label column starts at: longer names (a model with its settings, an
/// attack with its provenance-bypass suffix) wrap in a box this wide. Narrowed, down to
/// [`KEY_WRAP_MIN_PT`], when the labels leave too little room for the figures.
const KEY_WRAP_PT: f64 = 110.0;
const KEY_WRAP_MIN_PT: f64 = 34.0;

/// A generous estimate of `text`'s width in points at `\small` (9 pt Computer Modern).
fn latex_text_pt(text: &str) -> f64 {
    text.chars()
        .map(|c| match c {
            '0'..='9' => 4.6,
            '.' | ',' | ':' | ';' | '\'' | '|' | '!' | 'i' | 'l' | 'j' => 2.6,
            ' ' => 3.1,
            'm' | 'w' | 'M' | 'W' | '%' | '@' | '—' => 7.6,
            c if c.is_uppercase() => 6.9,
            '_' | '×' | 'Δ' | '–' | '+' | '=' | '<' | '>' | '~' | '^' => 5.6,
            '†' => 4.6,
            c if !c.is_ascii() => 7.6,
            _ => 4.8,
        })
        .sum()
}

/// Characters after which a name may break: its own separators.
fn breaks_after(c: char) -> bool {
    matches!(c, ',' | '_' | '+' | '=' | ':' | '/' | '@' | '-' | '.' | ';')
}

/// `text` escaped for LaTeX with a break allowed after each separator, and inside any
/// run of characters wider than `max_pt` (names have no spaces: without this a long one
/// runs past its box).
fn breakable(text: &str, max_pt: f64) -> String {
    let mut out = String::new();
    let mut run = String::new();
    // A break after a separator is written only when a non-space follows it.
    let mut pending = false;
    for c in text.chars() {
        if c == ' ' {
            run.clear();
            pending = false;
            out.push(' ');
            continue;
        }
        let mut next = run.clone();
        next.push(c);
        if pending || (!run.is_empty() && latex_text_pt(&next) > max_pt) {
            out.push_str("\\allowbreak{}");
            run.clear();
            pending = false;
        }
        run.push(c);
        out.push_str(&escape::latex(&c.to_string()));
        if breaks_after(c) {
            pending = true;
        }
    }
    out
}

/// A column header as lines no wider than `target` points where its words allow: it
/// breaks between words only, so a word wider than `target` (a name the table did not
/// shorten) is a line of its own and sets its column's width, which the layout counts.
fn header_lines(title: &str, target: f64) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in title.split_whitespace() {
        match lines.last_mut() {
            Some(line) if latex_text_pt(&format!("{line} {word}")) <= target => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines
}

/// What one cell shows: the figure, and with `--wide` its interval on a second line.
fn cell_lines(v: &Value, wide: bool) -> (String, Option<String>) {
    match v {
        Value::Rate {
            v,
            ci: Some([lo, hi]),
        } if wide => (
            format!("{:.1}", v * 100.0),
            Some(format!("[{:.1}, {:.1}]", lo * 100.0, hi * 100.0)),
        ),
        v => (v.display(false), None),
    }
}

/// How wide a cell is in points (an interval line is set smaller).
fn cell_pt(v: &Value, wide: bool) -> f64 {
    let (main, second) = cell_lines(v, wide);
    let second = second.map_or(0.0, |s| latex_text_pt(&s) * 0.8);
    latex_text_pt(&main).max(second) + 1.0
}

/// How closely a table is set: the padding around each column and the width a header
/// may take beyond its figures.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Spacing {
    pad: f64,
    header_min: f64,
}

impl Spacing {
    /// LaTeX's own padding, headers at least [`HEADER_MIN_PT`] wide.
    const NORMAL: Spacing = Spacing {
        pad: PAD_PT,
        header_min: HEADER_MIN_PT,
    };

    /// The settings tried in turn while a table takes more parts than it might: headers
    /// as narrow as their figures, then a narrower `\tabcolsep` too.
    const ALL: [Spacing; 3] = [
        Spacing::NORMAL,
        Spacing {
            pad: PAD_PT,
            header_min: 0.0,
        },
        Spacing {
            pad: TIGHT_PAD_PT,
            header_min: 0.0,
        },
    ];
}

/// A grid laid out for LaTeX: which cells are bold, how wide labels may get, whether
/// intervals show, how closely it is set.
#[derive(Clone)]
struct Layout {
    grid: Grid,
    bold: Vec<Vec<bool>>,
    wrap: f64,
    wide: bool,
    spacing: Spacing,
}

impl Layout {
    fn new(grid: Grid, bold: Vec<Vec<bool>>, wide: bool, spacing: Spacing) -> Layout {
        Layout {
            grid,
            bold,
            wrap: KEY_WRAP_PT,
            wide,
            spacing,
        }
    }

    fn is_key(&self, c: usize) -> bool {
        self.grid.columns[c].show == Show::Key
    }

    /// Text cells wrap at the label width; figures never do.
    fn wraps_cell(&self, v: &Value) -> bool {
        matches!(v, Value::Text(t) if latex_text_pt(t) + 1.0 > self.wrap)
    }

    /// The widest cell of a column, in points (a wrapped text cell counts its box).
    fn cells_pt(&self, c: usize) -> f64 {
        self.grid
            .rows
            .iter()
            .map(|r| {
                if self.wraps_cell(&r[c]) {
                    self.wrap
                } else {
                    cell_pt(&r[c], self.wide)
                }
            })
            .fold(0.0, f64::max)
    }

    /// A column's header lines: as wide as its cells, or the spacing's least header
    /// width when they are narrower (never wider than the label width), broken between
    /// words only.
    fn header(&self, c: usize) -> Vec<String> {
        let least = self.spacing.header_min;
        let target = self.cells_pt(c).max(least).min(self.wrap.max(least));
        header_lines(&self.grid.columns[c].title, target)
    }

    /// A column's width in points: its widest cell or header line, and the padding.
    fn column_pt(&self, c: usize) -> f64 {
        let header = self
            .header(c)
            .iter()
            .map(|l| latex_text_pt(l))
            .fold(0.0, f64::max);
        header.max(self.cells_pt(c)) + self.spacing.pad
    }

    /// The figure columns of the parts: as few parts as fit `width` (at most
    /// [`MAX_DATA_COLUMNS`] figures each), the figures spread evenly over them; `None`
    /// when no split leaves every part [`MIN_DATA_COLUMNS`] figures.
    fn split(&self, width: f64, least: usize) -> Option<Vec<Vec<usize>>> {
        let keys: f64 = (0..self.grid.columns.len())
            .filter(|&c| self.is_key(c))
            .map(|c| self.column_pt(c))
            .sum();
        let data: Vec<usize> = (0..self.grid.columns.len())
            .filter(|&c| !self.is_key(c))
            .collect();
        let widths: Vec<f64> = data.iter().map(|&c| self.column_pt(c)).collect();
        let n = data.len();
        if n == 0 {
            return Some(vec![Vec::new()]);
        }
        let least = least.min(n);
        for k in n.div_ceil(MAX_DATA_COLUMNS)..=n {
            if n / k < least {
                break;
            }
            let (size, extra) = (n / k, n % k);
            let mut parts = Vec::new();
            let mut at = 0;
            for p in 0..k {
                let len = size + usize::from(p < extra);
                parts.push(at..at + len);
                at += len;
            }
            if parts
                .iter()
                .all(|r| keys + widths[r.clone()].iter().sum::<f64>() <= width)
            {
                return Some(parts.into_iter().map(|r| data[r].to_vec()).collect());
            }
        }
        None
    }

    /// Narrows the labels until the figures split into parts of at least
    /// [`MIN_DATA_COLUMNS`]; the column sets of the parts, keys first in each.
    fn parts(&mut self, width: f64) -> Vec<Vec<usize>> {
        let keys: Vec<usize> = (0..self.grid.columns.len())
            .filter(|&c| self.is_key(c))
            .collect();
        let split = loop {
            if let Some(s) = self.split(width, MIN_DATA_COLUMNS) {
                break s;
            }
            if self.wrap <= KEY_WRAP_MIN_PT {
                // Nothing fits three figures a part: as few parts as fit.
                break self.split(width, 1).unwrap_or_else(|| {
                    (0..self.grid.columns.len())
                        .filter(|&c| !self.is_key(c))
                        .map(|c| vec![c])
                        .collect()
                });
            }
            self.wrap = (self.wrap - 8.0).max(KEY_WRAP_MIN_PT);
        };
        split
            .into_iter()
            .map(|d| keys.iter().copied().chain(d).collect())
            .collect()
    }

    /// Whether some part (its columns, keys included) is wider than `width` points.
    fn overflows(&self, parts: &[Vec<usize>], width: f64) -> bool {
        parts
            .iter()
            .any(|cols| cols.iter().map(|&c| self.column_pt(c)).sum::<f64>() > width)
    }
}

/// A grid as its LaTeX tables set it: the layout, its parts, and the names it shortened
/// (short, long).
struct Fitted {
    layout: Layout,
    parts: Vec<Vec<usize>>,
    legend: Vec<(String, String)>,
}

/// Lays `grid` out in as few parts as fit `width`, each step below tried only while it
/// saves a part (or lets a part fit at all), in this order of preference:
/// - long names shortened to their initials as the terminal shortens them
///   ([`abbrev`]), the longest names first, with a legend under the table;
/// - headers as narrow as their figures (more lines, never a word broken);
/// - a narrower `\tabcolsep`.
///
/// A main table with more attack columns than one float holds is turned on its side
/// after its names are shortened, so its rows read `ii ASR %`.
fn fitted(grid: &Grid, wide: bool, width: f64) -> Fitted {
    let mut names = vec![(grid.clone(), Vec::new())];
    for limit in abbrev::LONG_NAMES {
        let a = abbrev::shorten(grid, limit);
        // The same names as the limit before (or none shortened): nothing new to try.
        if !a.legend.is_empty() && names.last().is_none_or(|(_, l)| *l != a.legend) {
            names.push((a.grid, a.legend));
        }
    }
    let names: Vec<(Layout, Vec<(String, String)>)> = names
        .into_iter()
        .map(|(g, legend)| {
            let bold = bold_of(&g);
            let (g, bold) = if transposes(&g) {
                transpose(&g, &bold)
            } else {
                (g, bold)
            };
            (Layout::new(g, bold, wide, Spacing::NORMAL), legend)
        })
        .collect();
    let mut best: Option<((bool, usize), Fitted)> = None;
    'spacing: for spacing in Spacing::ALL {
        for (named, legend) in &names {
            let mut layout = Layout {
                spacing,
                ..named.clone()
            };
            let parts = layout.parts(width);
            let score = (layout.overflows(&parts, width), parts.len());
            if best.as_ref().is_none_or(|(b, _)| score < *b) {
                best = Some((
                    score,
                    Fitted {
                        layout,
                        parts,
                        legend: legend.clone(),
                    },
                ));
            }
            if score == (false, 1) {
                break 'spacing;
            }
        }
    }
    best.expect("the table as it is was tried").1
}

fn bold_of(grid: &Grid) -> Vec<Vec<bool>> {
    (0..grid.rows.len())
        .map(|r| {
            (0..grid.columns.len())
                .map(|c| grid.is_best(r, c))
                .collect()
        })
        .collect()
}

/// Whether the main table reads better turned on its side: its attack columns are more
/// than one float holds and its defenses fewer than those columns, so the defenses
/// become the columns and each attack's ASR and UA a row.
fn transposes(grid: &Grid) -> bool {
    let data = grid.columns.iter().filter(|c| c.show != Show::Key).count();
    grid.id == "main" && data > MAX_DATA_COLUMNS && grid.rows.len() < data
}

/// The grid turned on its side: one row per figure column (its header the label), one
/// column per row (its labels joined as the header); bold follows its cell.
fn transpose(grid: &Grid, bold: &[Vec<bool>]) -> (Grid, Vec<Vec<bool>>) {
    let keys: Vec<usize> = (0..grid.columns.len())
        .filter(|&c| grid.columns[c].show == Show::Key)
        .collect();
    let data: Vec<usize> = (0..grid.columns.len())
        .filter(|&c| grid.columns[c].show != Show::Key)
        .collect();
    let mut label = grid.columns[keys.first().copied().unwrap_or(0)].clone();
    label.id = "figure".into();
    label.title = "Figure".into();
    label.show = Show::Key;
    label.better = None;
    let mut columns = vec![label];
    for (r, row) in grid.rows.iter().enumerate() {
        let mut spec = grid.columns[data[0]].clone();
        spec.id = format!("row{r}");
        spec.title = keys
            .iter()
            .map(|&k| row[k].display(false))
            .collect::<Vec<_>>()
            .join(" / ");
        spec.show = Show::Default;
        spec.better = None;
        columns.push(spec);
    }
    let rows: Vec<Vec<Value>> = data
        .iter()
        .map(|&c| {
            std::iter::once(Value::Text(grid.columns[c].title.clone()))
                .chain(grid.rows.iter().map(|r| r[c].clone()))
                .collect()
        })
        .collect();
    let bold_t = data
        .iter()
        .map(|&c| {
            std::iter::once(false)
                .chain((0..grid.rows.len()).map(|r| bold[r][c]))
                .collect()
        })
        .collect();
    let mut notes = grid.notes.clone();
    notes.push("defenses as columns".into());
    (
        Grid {
            id: grid.id.clone(),
            title: grid.title.clone(),
            notes,
            columns,
            groups: vec![String::new(); rows.len()],
            links: vec![None; rows.len()],
            rows,
            footnotes: grid.footnotes.clone(),
            in_order: grid.in_order,
            partial: grid.partial,
        },
        bold_t,
    )
}

/// What the LaTeX of a report says once: the simulation note as a table note of the
/// first table, a short "simulated roles" mark on every caption; `--wide`: intervals.
#[derive(Clone, Copy, Debug, Default)]
pub struct LatexNotes<'a> {
    /// The note's text, under this table (the first of the report), marked `*`.
    pub footnote: Option<&'a str>,
    /// Some roles were scripted: every caption says so in two words.
    pub simulated: bool,
    /// Each rate's 95% interval under it (`--wide`).
    pub wide: bool,
}

/// Booktabs tables (`\toprule`, `\midrule`, `\bottomrule`) of a grid, split into as
/// many tables as it takes to fit [`TEXTWIDTH_PT`] (at most [`MAX_DATA_COLUMNS`] and,
/// where the table has them, at least [`MIN_DATA_COLUMNS`] figures a part), each with a
/// short caption (its title, the grid's notes, the part); a float, or a `longtable`
/// when it is long. Long labels wrap in their column; headers break between words only;
/// where that saves a part, long names are shortened as on the terminal (a legend under
/// each part) and the table is set closer (see [`fitted`]); a main table with more
/// attack columns than one float holds is turned on its side. The best per column in
/// bold. Needs `\usepackage{booktabs}` and `\usepackage{longtable}`.
pub fn latex(grid: &Grid, notes: LatexNotes<'_>) -> String {
    let Fitted {
        layout,
        parts,
        legend,
    } = fitted(grid, notes.wide, TEXTWIDTH_PT);
    let grid = &layout.grid;
    let mut out = String::new();
    // Comment lines too carry escaped text: a line break in a note would end the
    // comment and start a live line.
    writeln!(out, "% {}", escape::latex(&grid.title)).unwrap();
    for (k, cols) in parts.iter().enumerate() {
        let mut caption = escape::latex(&grid.title);
        // Model names are long and have no spaces: they may break at their separators.
        for n in &grid.notes {
            write!(caption, "; {}", breakable(n, TEXTWIDTH_PT / 2.0)).unwrap();
        }
        if parts.len() > 1 {
            write!(caption, " (part {} of {})", k + 1, parts.len()).unwrap();
        }
        let short = caption.clone();
        if notes.simulated {
            caption.push_str("; simulated roles");
        }
        let note = notes.footnote.filter(|_| k == 0);
        if note.is_some() {
            // A mark of its own: `\footnotemark` in a caption counts twice (the caption
            // is set once to measure it) and floats away from its text.
            caption.push_str("\\textsuperscript{*}");
        }
        let label = if k == 0 {
            format!("tab:{}", grid.id)
        } else {
            format!("tab:{}-{}", grid.id, k + 1)
        };
        let caption = format!(
            "\\caption[{short}]{{{caption}. Rates in \\%{}; bold: best defense per column.}}\\label{{{label}}}",
            if layout.wide {
                ", 95\\% interval below"
            } else {
                ""
            }
        );
        // Under every part: the legend of its shortened names (each part is read on its
        // own), ragged right so long names without spaces never overrun the line; under
        // the first, the report's note.
        let legend = abbrev::legend_line(&part_legend(grid, cols, &legend)).map(|l| {
            format!(
                "\\begingroup\\footnotesize\\raggedright\\noindent {}\\par\\endgroup",
                breakable(&l, TEXTWIDTH_PT / 2.0)
            )
        });
        let note = note.map(|n| {
            format!(
                "{{\\footnotesize\\textsuperscript{{*}}\\,{}\\par}}",
                breakable(n, TEXTWIDTH_PT / 2.0)
            )
        });
        let under: Vec<String> = legend.into_iter().chain(note).collect();
        let under = (!under.is_empty()).then(|| under.join("\n"));
        out.push_str(&latex_table(&layout, cols, &caption, under.as_deref()));
    }
    out
}

/// The legend entries a part needs: those whose short name its headers or label cells
/// show (a name inside another, `ii` in `ii+pb`, is kept: one entry too many, never
/// one too few).
fn part_legend(grid: &Grid, cols: &[usize], legend: &[(String, String)]) -> Vec<(String, String)> {
    let shown: Vec<&str> = cols
        .iter()
        .flat_map(|&c| {
            std::iter::once(grid.columns[c].title.as_str()).chain(grid.rows.iter().filter_map(
                move |r| match &r[c] {
                    Value::Text(t) => Some(t.as_str()),
                    _ => None,
                },
            ))
        })
        .collect();
    legend
        .iter()
        .filter(|(short, _)| shown.iter().any(|t| t.contains(short.as_str())))
        .cloned()
        .collect()
}

/// A report's LaTeX: `grids` as paper tables (with `wide`, each rate's interval and the
/// episode counts), the page-wide notes (`page_wide`: partial, simulated) said once,
/// under the first table; `simulated` marks every caption.
pub fn latex_report(grids: &[Grid], page_wide: &[&String], simulated: bool, wide: bool) -> String {
    let mut out = String::from(
        "% sieve-bench report: booktabs tables, long ones as longtable; \\usepackage{booktabs,longtable} in the preamble (and \\extrafloats{100} when including every table).\n",
    );
    let footnote = (!page_wide.is_empty()).then(|| {
        page_wide
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    });
    for (i, g) in grids.iter().enumerate() {
        let mut g = if wide {
            essential_with_counts(g)
        } else {
            essential(g)
        };
        g.notes.retain(|n| !page_wide.contains(&n));
        g.hoist_constant_keys();
        let notes = LatexNotes {
            footnote: footnote.as_deref().filter(|_| i == 0),
            simulated,
            wide,
        };
        out.push_str(&latex(&g, notes));
        out.push('\n');
    }
    out
}

/// One booktabs table of the layout's columns `cols` under `caption` (a
/// `\caption…\label…` line), `note` set under it.
fn latex_table(layout: &Layout, cols: &[usize], caption: &str, note: Option<&str>) -> String {
    let grid = &layout.grid;
    let mut out = String::new();
    let spec: String = cols
        .iter()
        .map(|&c| if layout.is_key(c) { 'l' } else { 'r' })
        .collect();
    let titles: Vec<String> = cols
        .iter()
        .map(|&c| {
            let lines: Vec<String> = layout.header(c).iter().map(|l| escape::latex(l)).collect();
            let align = if layout.is_key(c) { 'l' } else { 'r' };
            if lines.len() > 1 {
                format!("\\shortstack[{align}]{{{}}}", lines.join("\\\\"))
            } else {
                lines.concat()
            }
        })
        .collect();
    let long = grid.rows.len() > LONG_ROWS;
    // A closer table says so where its size is set (both are local to the table).
    let size = if layout.spacing.pad == PAD_PT {
        "\\small".to_string()
    } else {
        format!(
            "\\small\\setlength{{\\tabcolsep}}{{{}pt}}",
            layout.spacing.pad / 2.0
        )
    };
    if long {
        writeln!(
            out,
            "\\begingroup{size}\n\\begin{{longtable}}{{{spec}}}\n{caption}\\\\\n\\toprule"
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
        writeln!(out, "\\begin{{table}}[tbp]\n\\centering\n{size}").unwrap();
        writeln!(out, "\\begin{{tabular}}{{{spec}}}\n\\toprule").unwrap();
        writeln!(out, "{} \\\\\n\\midrule", titles.join(" & ")).unwrap();
    }
    // A space between groups of rows sharing their first key (when there is another).
    let keys: Vec<usize> = cols.iter().copied().filter(|&c| layout.is_key(c)).collect();
    let first_key = keys.first().copied().filter(|_| keys.len() > 1);
    for (r, row) in grid.rows.iter().enumerate() {
        if let Some(k) = first_key
            && r > 0
            && grid.rows[r - 1][k] != row[k]
        {
            writeln!(out, "\\addlinespace").unwrap();
        }
        let cells: Vec<String> = cols
            .iter()
            .map(|&c| {
                let v = &row[c];
                if layout.wraps_cell(v) {
                    return format!(
                        "\\parbox[t]{{{:.0}pt}}{{\\raggedright {}}}",
                        layout.wrap,
                        breakable(&v.display(false), layout.wrap - 2.0)
                    );
                }
                let (main, second) = cell_lines(v, layout.wide);
                let mut s = escape::latex(&main);
                if layout.bold[r][c] {
                    s = format!("\\textbf{{{s}}}");
                }
                match second {
                    Some(ci) => format!(
                        "\\shortstack[r]{{{s}\\\\{{\\scriptsize {}}}}}",
                        escape::latex(&ci)
                    ),
                    None => s,
                }
            })
            .collect();
        writeln!(out, "{} \\\\", cells.join(" & ")).unwrap();
    }
    if long {
        writeln!(out, "\\end{{longtable}}\n\\endgroup").unwrap();
        if let Some(n) = note {
            writeln!(out, "{n}").unwrap();
        }
    } else {
        writeln!(
            out,
            "\\bottomrule\n\\end{{tabular}}\n{caption}\n{}\\end{{table}}",
            note.map(|n| format!("{n}\n")).unwrap_or_default()
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
    fn only_a_partial_grid_marks_its_csv_rows() {
        // A note's wording decides nothing: a note that merely starts like the mark does
        // not make the rows partial, the grid's flag does.
        let mut g = grid();
        g.notes.push(format!(
            "{}-like note of a defense's name",
            super::super::PARTIAL_MARK
        ));
        assert!(
            !csv(&g)
                .unwrap()
                .lines()
                .next()
                .unwrap()
                .ends_with(",partial")
        );
        g.note_partial(
            Some(&"these rows cover only part of the run".to_string()),
            true,
        );
        assert_eq!(g.notes[0], "these rows cover only part of the run");
        let t = csv(&g).unwrap();
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[0].ends_with(",partial"), "{t}");
        assert!(lines[1..].iter().all(|l| l.ends_with(",PARTIAL")), "{t}");
        g.note_partial(None, false);
        assert_eq!(g.notes.len(), 3, "a complete run adds no note");
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
    fn headers_break_between_words_only() {
        let long = "important_instructions+provenance_bypass ASR %";
        assert_eq!(
            header_lines(long, 20.0),
            ["important_instructions+provenance_bypass", "ASR", "%"]
        );
        assert_eq!(header_lines("ii+pb ASR %", 36.0), ["ii+pb", "ASR %"]);
        assert_eq!(header_lines("ii ASR %", 200.0), ["ii ASR %"]);
    }

    /// The README's paper run's main table: nine figures under long attack names. The
    /// names shorten as on the terminal, the table closes up, and it is one float whose
    /// legend spells the short names out.
    type MainRow = (&'static str, f64);

    /// Three defense rows of a main table: a key column, then ASR and UA per attack.
    fn main_rows_and_columns(attacks: &[&str]) -> (Vec<MainRow>, Vec<Column<'static, MainRow>>) {
        let rows: Vec<MainRow> = vec![("none", 1.0), ("sieve", 0.172), ("audit", 0.148)];
        let mut columns = vec![Column::key("defense", "Defense", "", |r: &MainRow| {
            r.0.into()
        })];
        for a in attacks {
            for m in ["ASR", "UA"] {
                columns.push(Column::figure(
                    format!("{m}_{a}"),
                    format!("{a} {m} %"),
                    "",
                    Show::Default,
                    |r: &MainRow| Value::rate(Some(r.1), None),
                ));
            }
        }
        (rows, columns)
    }

    #[test]
    fn a_main_table_of_long_attack_names_is_one_float_with_a_legend() {
        let (rows, mut columns) = main_rows_and_columns(&[
            "important_instructions",
            "important_instructions+provenance_bypass",
        ]);
        for (id, title) in [
            ("bu", "BU %"),
            ("err", "Err %"),
            ("tok", "Tok/ep"),
            ("calls", "Calls/ep"),
            ("x", "×none"),
        ] {
            columns.push(Column::figure(
                id,
                title,
                "",
                Show::Default,
                |r: &MainRow| Value::num(Some(r.1 * 100.0), 1),
            ));
        }
        let g = Grid::build("main", "Main", columns, &rows, |_| String::new());
        let l = latex(&g, LatexNotes::default());
        assert_eq!(l.matches("\\begin{tabular}").count(), 1, "{l}");
        assert!(l.contains("\\shortstack[r]{ii+pb\\\\ASR\\\\\\%}"), "{l}");
        let header = l
            .lines()
            .take_while(|line| *line != "\\midrule")
            .last()
            .unwrap();
        assert!(!header.contains("import"), "{header}");
        let legend = l.replace("\\allowbreak{}", "");
        assert!(
            legend.contains(
                "abbreviated: ii = important\\_instructions; ii+pb = important\\_instructions+provenance\\_bypass\\par"
            ),
            "{l}"
        );
        // Closed up only as far as it takes: a table of short names keeps LaTeX's spacing.
        assert!(!latex(&essential(&grid()), LatexNotes::default()).contains("tabcolsep"));
    }

    /// Attack names of one word or a library path, too long for a header, cannot break
    /// inside it: they are shortened too rather than leave parts of two figures.
    #[test]
    fn long_single_word_attack_names_are_shortened_not_split_two_a_part() {
        let (rows, columns) = main_rows_and_columns(&[
            "library:results/mysearchlibrary",
            "library:results/othersearch",
            "verylongattacknamewithout",
            "direct",
        ]);
        let g = Grid::build("main", "Main", columns, &rows, |_| String::new());
        let f = fitted(&g, false, TEXTWIDTH_PT);
        assert!(!f.layout.overflows(&f.parts, TEXTWIDTH_PT));
        assert!(
            f.parts.iter().all(|p| p.len() > MIN_DATA_COLUMNS),
            "{:?}",
            f.parts
        );
        let l = latex(&g, LatexNotes::default()).replace("\\allowbreak{}", "");
        assert!(l.contains("v = verylongattacknamewithout"), "{l}");
        assert!(l.contains("l:r/m = library:results/mysearchlibrary"), "{l}");
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
