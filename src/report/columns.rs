//! The column model every report is built from: a report is a list of [`Column`]s over
//! its rows, turned once into a [`Grid`] of [`Value`]s; the terminal, Markdown, CSV, JSON,
//! LaTeX and HTML writers only render a grid. Adding a metric is adding one column.
//!
//! Values keep their meaning (a rate is a fraction with its interval) so each format
//! chooses its own presentation: percentages in tables, fractions in files.

/// One cell.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// No figure (an empty sample, a metric the defense does not have).
    Missing,
    Text(String),
    /// A fraction in [0, 1] with its 95% interval when it has one.
    Rate {
        v: f64,
        ci: Option<[f64; 2]>,
    },
    /// A figure shown with `decimals` places in tables.
    Num {
        v: f64,
        decimals: usize,
    },
    Count(u64),
    /// `k` of `n`, e.g. successes among episodes of a tagged kind.
    Part {
        k: u64,
        n: u64,
    },
    /// A multiple of a reference figure (`×1.4`).
    Factor(f64),
    /// A figure some of whose parts were estimated rather than measured (token counts of
    /// replies an endpoint sent without `usage`): tables show it as `~N`.
    Approx {
        v: f64,
        decimals: usize,
    },
    /// A signed difference (`+1.5`, never `-0.0`): of rates when `rate` (a fraction,
    /// shown in percentage points), else of figures shown with `decimals` places; with
    /// its 95% interval when it has one (a paired difference).
    Delta {
        v: f64,
        decimals: usize,
        rate: bool,
        ci: Option<[f64; 2]>,
    },
    /// A p-value, shown one way everywhere: `0.012`, `<0.001`.
    P(f64),
    /// A yes/no mark: tables show `!` for yes and nothing for no; files write `true` or
    /// `false`.
    Flag(bool),
}

impl Value {
    pub fn rate(v: Option<f64>, ci: Option<[f64; 2]>) -> Value {
        v.map_or(Value::Missing, |v| Value::Rate { v, ci })
    }

    pub fn num(v: Option<f64>, decimals: usize) -> Value {
        v.map_or(Value::Missing, |v| Value::Num { v, decimals })
    }

    /// A token figure: `~N` when `estimated` (some usage was counted locally).
    pub fn tokens(v: Option<f64>, estimated: bool) -> Value {
        match v {
            Some(v) if estimated => Value::Approx { v, decimals: 0 },
            _ => Value::num(v, 0),
        }
    }

    /// The number a column is ranked and plotted by.
    pub fn figure(&self) -> Option<f64> {
        match self {
            Value::Rate { v, .. }
            | Value::Num { v, .. }
            | Value::Approx { v, .. }
            | Value::Delta { v, .. }
            | Value::P(v)
            | Value::Factor(v) => Some(*v),
            Value::Count(c) => Some(*c as f64),
            Value::Part { k, n } if *n > 0 => Some(*k as f64 / *n as f64),
            _ => None,
        }
    }

    /// The cell as a table shows it: rates in percent, with the interval when asked.
    pub fn display(&self, with_ci: bool) -> String {
        match self {
            Value::Missing => "–".into(),
            Value::Text(s) => s.clone(),
            Value::Rate { v, ci } => match ci {
                Some([lo, hi]) if with_ci => {
                    format!("{:.1} [{:.1}–{:.1}]", v * 100.0, lo * 100.0, hi * 100.0)
                }
                _ => format!("{:.1}", v * 100.0),
            },
            Value::Num { v, decimals } => format!("{v:.decimals$}"),
            Value::Approx { v, decimals } => format!("~{v:.decimals$}"),
            Value::Count(c) => c.to_string(),
            Value::Part { k, n } => format!("{k}/{n}"),
            Value::Factor(f) => format!("×{f:.2}"),
            Value::Delta {
                v,
                decimals,
                rate,
                ci,
            } => {
                let s = |x: f64| signed(if *rate { x * 100.0 } else { x }, *decimals);
                match ci {
                    Some([lo, hi]) if with_ci => format!("{} [{}, {}]", s(*v), s(*lo), s(*hi)),
                    _ => s(*v),
                }
            }
            Value::P(p) => p_value(*p),
            Value::Flag(true) => "!".into(),
            Value::Flag(false) => String::new(),
        }
    }

    /// No figure, or a flag not raised: what an empty or alert column tests for.
    pub fn is_blank(&self) -> bool {
        matches!(self, Value::Missing | Value::Flag(false))
    }
}

/// `d` with its sign and `decimals` places; a difference that rounds to zero is `+0.0`,
/// never `-0.0`.
pub fn signed(d: f64, decimals: usize) -> String {
    let scale = 10f64.powi(decimals as i32);
    let r = (d * scale).round() / scale + 0.0;
    format!("{r:+.decimals$}")
}

/// A p-value as every table prints it: three decimals, `<0.001` below that.
pub fn p_value(p: f64) -> String {
    if p < 0.001 {
        "<0.001".into()
    } else {
        format!("{p:.3}")
    }
}

/// Rounds away binary noise (`0.9999999999999998` → `1`) for files: ten decimals are
/// far below any figure's precision and keep files stable across summation orders.
pub fn clean(v: f64) -> f64 {
    let r = (v * 1e10).round() / 1e10;
    if r == 0.0 { 0.0 } else { r }
}

/// Which way a column improves, for marking the best defense.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Better {
    Lower,
    Higher,
}

/// When the terminal table shows a column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Show {
    /// Identifies the row; always shown (unless every row has the same value).
    Key,
    /// One of the essentials; shown by default, dropped last when the terminal is narrow.
    Default,
    /// Added when the terminal has room, shown by `--wide`.
    Extra,
    /// Only in files (CSV, JSON): bookkeeping a reader of the table does not need.
    File,
}

/// What a column is, independent of its rows: the part every format reads.
#[derive(Clone, Debug)]
pub struct ColumnSpec {
    /// Machine name: CSV/JSON field and `--columns` name.
    pub id: String,
    /// Table header.
    pub title: String,
    /// One sentence for the column documentation (`docs/columns.md`).
    pub doc: String,
    pub show: Show,
    pub better: Option<Better>,
    /// Rates carry `<id>_lo` and `<id>_hi` fields in files.
    pub interval: bool,
    /// Left out of every table when no row has a value (a role no row scripted).
    pub drop_if_empty: bool,
    /// Shown by the terminal whatever its width whenever some row has a value (the `!`
    /// of a row above the error threshold, a gate's verdict).
    pub alert: bool,
    /// Text that describes the row rather than measures it (how a role was played):
    /// moved into a note, like a key, when every row has the same value.
    pub label: bool,
}

/// A column over rows of type `R`.
pub struct Column<'a, R> {
    pub spec: ColumnSpec,
    pub get: Box<dyn Fn(&R) -> Value + 'a>,
}

impl<'a, R> Column<'a, R> {
    fn new(
        id: impl Into<String>,
        title: impl Into<String>,
        doc: impl Into<String>,
        show: Show,
        get: impl Fn(&R) -> Value + 'a,
    ) -> Self {
        Column {
            spec: ColumnSpec {
                id: id.into(),
                title: title.into(),
                doc: doc.into(),
                show,
                better: None,
                interval: false,
                drop_if_empty: false,
                alert: false,
                label: false,
            },
            get: Box::new(get),
        }
    }

    /// A label column identifying the row.
    pub fn key(
        id: impl Into<String>,
        title: impl Into<String>,
        doc: impl Into<String>,
        get: impl Fn(&R) -> String + 'a,
    ) -> Self {
        Self::new(id, title, doc, Show::Key, move |r| Value::Text(get(r)))
    }

    /// A figure column.
    pub fn figure(
        id: impl Into<String>,
        title: impl Into<String>,
        doc: impl Into<String>,
        show: Show,
        get: impl Fn(&R) -> Value + 'a,
    ) -> Self {
        Self::new(id, title, doc, show, get)
    }

    pub fn better(mut self, b: Better) -> Self {
        self.spec.better = Some(b);
        self
    }

    /// Leaves the column out of the grid when no row has a value.
    pub fn drop_if_empty(mut self) -> Self {
        self.spec.drop_if_empty = true;
        self
    }

    /// The `!` column: marks a row whose error rate exceeds the run's --max-error-rate,
    /// and stays on the terminal whenever a row is marked. One definition for every table.
    pub fn too_many_errors(flag: impl Fn(&R) -> bool + 'a) -> Self {
        Self::figure(
            "too_many_errors",
            "!",
            "`!` when the row's error rate exceeds the run's --max-error-rate: its rates rest on too few episodes.",
            Show::Extra,
            move |r: &R| Value::Flag(flag(r)),
        )
        .alert()
    }

    /// Marks a descriptive text column, hoisted into a note when constant.
    pub fn label(mut self) -> Self {
        self.spec.label = true;
        self
    }

    /// Keeps the column on the terminal, whatever its width, when a row has a value.
    pub fn alert(mut self) -> Self {
        self.spec.alert = true;
        self
    }

    /// Declares the `_lo`/`_hi` interval fields in files.
    pub fn with_interval(mut self) -> Self {
        self.spec.interval = true;
        self
    }
}

/// A key column [`Grid::hoist_constant_keys`] moved into a note: the column's id and the
/// value every row had.
#[derive(Clone, Debug, PartialEq)]
pub struct HoistedKey {
    pub id: String,
    pub value: Value,
}

/// A report table: its columns, evaluated over its rows once.
#[derive(Clone, Debug)]
pub struct Grid {
    /// Machine name (`main`, `per-suite`, …), also the HTML anchor.
    pub id: String,
    pub title: String,
    /// Lines above the table: the model, what is simulated.
    pub notes: Vec<String>,
    pub columns: Vec<ColumnSpec>,
    pub rows: Vec<Vec<Value>>,
    /// Rows with the same group are compared when marking the best per column.
    pub groups: Vec<String>,
    /// Per row, the episode cell it summarises (for the HTML drill-down), when it has one.
    pub links: Vec<Option<String>>,
    pub footnotes: Vec<String>,
    /// Columns the terminal adds when it has room take their declared place (else they
    /// follow the essentials).
    pub in_order: bool,
    /// The rows cover only the episodes finished so far (a note says so): a CSV, which
    /// has no notes, marks every row.
    pub partial: bool,
}

impl Grid {
    /// Evaluates `columns` over `rows`; `group` names the rows a row competes with.
    pub fn build<R>(
        id: &str,
        title: &str,
        columns: Vec<Column<'_, R>>,
        rows: &[R],
        group: impl Fn(&R) -> String,
    ) -> Grid {
        let columns: Vec<Column<'_, R>> = columns
            .into_iter()
            .filter(|c| !c.spec.drop_if_empty || rows.iter().any(|r| !(c.get)(r).is_blank()))
            .collect();
        Grid {
            id: id.into(),
            title: title.into(),
            notes: Vec::new(),
            rows: rows
                .iter()
                .map(|r| columns.iter().map(|c| (c.get)(r)).collect())
                .collect(),
            groups: rows.iter().map(group).collect(),
            links: vec![None; rows.len()],
            columns: columns.into_iter().map(|c| c.spec).collect(),
            footnotes: Vec::new(),
            in_order: false,
            partial: false,
        }
    }

    /// Adds the note of a partial run (`report::partial_note`) above the table, first
    /// when `first`, and marks the rows partial; nothing when the run is complete.
    pub fn note_partial(&mut self, note: Option<&String>, first: bool) {
        if let Some(n) = note {
            if first {
                self.notes.insert(0, n.clone());
            } else {
                self.notes.push(n.clone());
            }
            self.partial = true;
        }
    }

    /// Whether column `col` is an alert some row raises.
    pub fn raised(&self, col: usize) -> bool {
        self.columns[col].alert && self.rows.iter().any(|r| !r[col].is_blank())
    }

    /// Index of a column by id.
    pub fn column(&self, id: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.id == id)
    }

    /// Whether cell (row, col) is the best of its group in its column: strictly better
    /// than some row of the group and no worse than any. Groups of one mark nothing.
    pub fn is_best(&self, row: usize, col: usize) -> bool {
        let Some(better) = self.columns[col].better else {
            return false;
        };
        let Some(mine) = self.rows[row][col].figure() else {
            return false;
        };
        let mut beats_one = false;
        for (i, other) in self.rows.iter().enumerate() {
            if i == row || self.groups[i] != self.groups[row] {
                continue;
            }
            let Some(theirs) = other[col].figure() else {
                continue;
            };
            let (a, b) = match better {
                Better::Lower => (mine, theirs),
                Better::Higher => (-mine, -theirs),
            };
            if a > b + 1e-12 {
                return false;
            }
            if a < b - 1e-12 {
                beats_one = true;
            }
        }
        beats_one
    }

    /// Keeps only the columns at `keep` (indices, in that order).
    pub fn select(&self, keep: &[usize]) -> Grid {
        Grid {
            columns: keep.iter().map(|&i| self.columns[i].clone()).collect(),
            rows: self
                .rows
                .iter()
                .map(|r| keep.iter().map(|&i| r[i].clone()).collect())
                .collect(),
            ..self.clone()
        }
    }

    /// Key columns whose value is the same in every row, moved into a note line
    /// (`model: sim:obedient`) so rows do not repeat it; returned as (column id, value),
    /// for formats that still need a row's key (the HTML drill-down's links).
    pub fn hoist_constant_keys(&mut self) -> Vec<HoistedKey> {
        let Some(first) = self.rows.first() else {
            return Vec::new();
        };
        let constant: Vec<bool> = (0..self.columns.len())
            .map(|i| {
                let c = &self.columns[i];
                (c.show == Show::Key || (c.label && first[i] != Value::Missing))
                    && self.rows.iter().all(|r| r[i] == first[i])
            })
            .collect();
        // A row needs one label: the defense (else the last key) stays when every key is
        // constant.
        let last_key = self
            .column("defense")
            .or_else(|| self.columns.iter().rposition(|c| c.show == Show::Key));
        let all_constant = (0..self.columns.len())
            .filter(|&i| self.columns[i].show == Show::Key)
            .all(|i| constant[i]);
        let mut keep = Vec::new();
        let mut hoisted = Vec::new();
        for (i, c) in self.columns.iter().enumerate() {
            if constant[i] && !(all_constant && Some(i) == last_key) {
                self.notes.push(format!(
                    "{}: {}",
                    c.title.to_lowercase(),
                    first[i].display(false)
                ));
                hoisted.push(HoistedKey {
                    id: c.id.clone(),
                    value: first[i].clone(),
                });
            } else {
                keep.push(i);
            }
        }
        *self = self.select(&keep);
        hoisted
    }

    /// Picks columns by `--columns` ids (key columns always stay first).
    pub fn pick(&self, ids: &[String]) -> Result<Grid, super::ReportError> {
        let mut keep: Vec<usize> = (0..self.columns.len())
            .filter(|&i| self.columns[i].show == Show::Key)
            .collect();
        for id in ids {
            match self.column(id) {
                Some(i) if !keep.contains(&i) => keep.push(i),
                Some(_) => {}
                None => {
                    let known: Vec<&str> = self.columns.iter().map(|c| c.id.as_str()).collect();
                    return Err(super::ReportError::Unknown(format!(
                        "--columns: no column `{id}` in the {} table{}; columns: {}",
                        self.id,
                        crate::suggest::did_you_mean(id, known.iter().copied()),
                        known.join(", ")
                    )));
                }
            }
        }
        Ok(self.select(&keep))
    }

    /// The field names a file format writes for each column, in order.
    pub fn file_fields(&self) -> Vec<String> {
        self.columns
            .iter()
            .flat_map(|c| {
                if c.interval {
                    vec![c.id.clone(), format!("{}_lo", c.id), format!("{}_hi", c.id)]
                } else {
                    vec![c.id.clone()]
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid() -> Grid {
        let rows = vec![
            ("a", "none", 0.9, 10.0),
            ("a", "x", 0.2, 30.0),
            ("b", "x", 0.5, 5.0),
        ];
        Grid::build(
            "t",
            "T",
            vec![
                Column::key("suite", "Suite", "", |r: &(&str, &str, f64, f64)| {
                    r.0.into()
                }),
                Column::key("defense", "Defense", "", |r: &(&str, &str, f64, f64)| {
                    r.1.into()
                }),
                Column::figure(
                    "asr",
                    "ASR %",
                    "",
                    Show::Default,
                    |r: &(&str, &str, f64, f64)| Value::rate(Some(r.2), None),
                )
                .better(Better::Lower),
                Column::figure(
                    "tok",
                    "Tok",
                    "",
                    Show::Default,
                    |r: &(&str, &str, f64, f64)| Value::num(Some(r.3), 0),
                )
                .better(Better::Lower),
            ],
            &rows,
            |r| r.0.to_string(),
        )
    }

    #[test]
    fn best_is_marked_within_its_group_only() {
        let g = grid();
        assert!(!g.is_best(0, 2));
        assert!(g.is_best(1, 2));
        // Alone in its group: nothing to beat.
        assert!(!g.is_best(2, 2));
        assert!(g.is_best(0, 3));
        // Key columns are never marked.
        assert!(!g.is_best(0, 0));
    }

    #[test]
    fn ties_mark_nothing() {
        let rows = [1.0, 1.0];
        let g = Grid::build(
            "t",
            "T",
            vec![
                Column::figure("x", "X", "", Show::Default, |r: &f64| {
                    Value::num(Some(*r), 0)
                })
                .better(Better::Higher),
            ],
            &rows,
            |_| String::new(),
        );
        assert!(!g.is_best(0, 0) && !g.is_best(1, 0));
    }

    #[test]
    fn pick_keeps_keys_and_suggests_on_typos() {
        let g = grid();
        let p = g.pick(&["tok".into()]).unwrap();
        let ids: Vec<&str> = p.columns.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["suite", "defense", "tok"]);
        let e = g.pick(&["tokk".into()]).unwrap_err().to_string();
        assert!(e.contains("did you mean `tok`"), "{e}");
    }

    #[test]
    fn constant_keys_move_to_notes() {
        let mut g = grid();
        g.rows.truncate(2);
        g.groups.truncate(2);
        g.hoist_constant_keys();
        assert_eq!(g.notes, ["suite: a"]);
        assert_eq!(g.columns[0].id, "defense");
    }

    #[test]
    fn files_get_clean_fractions() {
        assert_eq!(clean(0.9999999999999998), 1.0);
        assert_eq!(clean(1.0 / 3.0), 0.3333333333);
        assert!(clean(-1e-17).is_sign_positive());
        assert_eq!(
            Value::rate(Some(0.123), Some([0.1, 0.2])).display(true),
            "12.3 [10.0–20.0]"
        );
        assert_eq!(
            Value::rate(Some(0.123), Some([0.1, 0.2])).display(false),
            "12.3"
        );
    }

    #[test]
    fn differences_and_p_values_print_one_way() {
        let d = |v, rate| Value::Delta {
            v,
            decimals: 1,
            rate,
            ci: None,
        };
        assert_eq!(d(-0.0001, true).display(false), "+0.0");
        assert_eq!(d(0.015, true).display(false), "+1.5");
        assert_eq!(d(-2.25, false).display(false), "-2.3");
        let paired = Value::Delta {
            v: -0.02,
            decimals: 1,
            rate: true,
            ci: Some([-0.051, 0.004]),
        };
        assert_eq!(paired.display(false), "-2.0");
        assert_eq!(paired.display(true), "-2.0 [-5.1, +0.4]");
        assert_eq!(Value::P(0.0004).display(false), "<0.001");
        assert_eq!(Value::P(0.0123).display(false), "0.012");
        assert_eq!(Value::P(1.0).display(false), "1.000");
    }
}
