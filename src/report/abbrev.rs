//! Long names shortened to their initials (`important_instructions+provenance_bypass` →
//! `ii+pb`), with a legend that spells each one out. The terminal and LaTeX tables both
//! shorten names this way when a table would not fit otherwise, so a reader meets the
//! same short name, and the same legend, in either.

use super::columns::{Grid, Show, Value};

/// The lengths above which label values are shortened, tried in turn (the longest names
/// first, shorter ones only while the table still does not fit).
pub const LONG_NAMES: [usize; 5] = [24, 20, 16, 12, 10];

/// A name at the head of a figure title (`<attack> ASR %`) longer than this, and made of
/// several words, is shortened whatever the limit: it is as wide as its column. A single
/// word is shortened only past the limit, as a label is.
const LONG_TITLE_NAME: usize = 8;

/// What the legend line of a table starts with.
pub const LEGEND_PREFIX: &str = "abbreviated: ";

/// A grid with its long names shortened, and the pairs (short, long) it shortened.
#[derive(Clone, Debug)]
pub struct Abbreviated {
    pub grid: Grid,
    pub legend: Vec<(String, String)>,
}

impl Abbreviated {
    /// The legend as one line (see [`legend_line`]).
    pub fn legend_line(&self) -> Option<String> {
        legend_line(&self.legend)
    }

    /// The grid with the legend as its last note (how the terminal shows it).
    pub fn with_legend_note(self) -> Grid {
        let line = self.legend_line();
        let mut grid = self.grid;
        grid.notes.extend(line);
        grid
    }
}

/// The pairs (short, long) as one line, `abbreviated: ii = important_instructions; …`,
/// or `None` when there are none.
pub fn legend_line(pairs: &[(String, String)]) -> Option<String> {
    if pairs.is_empty() {
        return None;
    }
    let spelled: Vec<String> = pairs
        .iter()
        .map(|(short, long)| format!("{short} = {long}"))
        .collect();
    Some(format!("{LEGEND_PREFIX}{}", spelled.join("; ")))
}

/// Shortens every label value longer than `limit` characters, and the long name that
/// heads a figure title (the main table's `<attack> ASR %`: one of several words longer
/// than [`LONG_TITLE_NAME`], or any longer than `limit`), to its initials; one legend
/// for both, so a name shortened in a label and in a title reads the same.
pub fn shorten(grid: &Grid, limit: usize) -> Abbreviated {
    let mut grid = grid.clone();
    let mut legend: Vec<(String, String)> = Vec::new();
    for c in 0..grid.columns.len() {
        if grid.columns[c].show != Show::Key {
            continue;
        }
        for r in 0..grid.rows.len() {
            let Value::Text(t) = &grid.rows[r][c] else {
                continue;
            };
            if t.chars().count() <= limit {
                continue;
            }
            let short = short_for(t, &mut legend);
            grid.rows[r][c] = Value::Text(short);
        }
    }
    for c in 0..grid.columns.len() {
        if grid.columns[c].show == Show::Key {
            continue;
        }
        let title = grid.columns[c].title.clone();
        let Some((name, rest)) = title.split_once(' ') else {
            continue;
        };
        let len = name.chars().count();
        let words = name.contains(['_', '-', '+', ':', '/']);
        if !((len > LONG_TITLE_NAME && words) || len > limit) {
            continue;
        }
        let short = short_for(name, &mut legend);
        grid.columns[c].title = format!("{short} {rest}");
    }
    Abbreviated { grid, legend }
}

/// The short name of `long`: the one the legend already gives it, else a new one added
/// to the legend.
fn short_for(long: &str, legend: &mut Vec<(String, String)>) -> String {
    if let Some((short, _)) = legend.iter().find(|(_, l)| l == long) {
        return short.clone();
    }
    let short = unique_initials(long, legend);
    legend.push((short.clone(), long.to_string()));
    short
}

/// `text`'s initials, numbered when the legend already uses them for another name.
fn unique_initials(text: &str, legend: &[(String, String)]) -> String {
    // A list of settings (a model spec `sim:oracle,judge_auc=0.9,…`) has no words to take
    // initials of: it keeps its head, which names it, and says the rest was cut.
    let base = match text.split_once(',') {
        Some((head, _)) if text.contains('=') => format!("{head}…"),
        _ => initials(text),
    };
    let mut short = base.clone();
    let mut n = 1;
    while legend.iter().any(|(s, _)| *s == short) {
        n += 1;
        short = format!("{base}{n}");
    }
    short
}

/// The first letter of every word, keeping the `+`, `/`, `:`, `@` and `=` that join parts.
fn initials(text: &str) -> String {
    let mut out = String::new();
    let mut word_start = true;
    for ch in text.chars() {
        if matches!(ch, '+' | '/' | ':' | '@' | '=') {
            out.push(ch);
            word_start = true;
        } else if matches!(ch, '_' | '-' | ' ' | ',') {
            word_start = true;
        } else if word_start {
            out.push(ch);
            word_start = false;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::columns::Column;

    #[test]
    fn initials_keep_the_joints_and_settings_keep_their_head() {
        assert_eq!(
            initials("important_instructions+provenance_bypass"),
            "ii+pb"
        );
        assert_eq!(initials("sieve:no-sem@threshold=0.4"), "s:ns@t=0");
        // A model's settings list keeps its head rather than becoming initials.
        assert_eq!(
            unique_initials("sim:oracle,judge_auc=0,pr=0,pe=0", &[]),
            "sim:oracle…"
        );
        let taken = [("ii".to_string(), "important_instructions".to_string())];
        assert_eq!(unique_initials("ignore_instructions", &taken), "ii2");
    }

    #[test]
    fn labels_and_titles_share_one_legend() {
        type R = (&'static str, f64);
        let rows: Vec<R> = vec![("important_instructions", 0.5), ("none", 0.1)];
        let g = Grid::build(
            "t",
            "T",
            vec![
                Column::key("attack", "Attack", "", |r: &R| r.0.into()),
                Column::figure(
                    "asr_ii",
                    "important_instructions ASR %",
                    "",
                    Show::Default,
                    |r: &R| Value::rate(Some(r.1), None),
                ),
                Column::figure("asr", "ASR %", "", Show::Default, |r: &R| {
                    Value::rate(Some(r.1), None)
                }),
            ],
            &rows,
            |_| String::new(),
        );
        let a = shorten(&g, 10);
        assert_eq!(a.grid.rows[0][0], Value::Text("ii".into()));
        assert_eq!(a.grid.rows[1][0], Value::Text("none".into()), "short: kept");
        assert_eq!(a.grid.columns[1].title, "ii ASR %");
        assert_eq!(a.grid.columns[2].title, "ASR %");
        assert_eq!(
            a.legend_line().as_deref(),
            Some("abbreviated: ii = important_instructions")
        );
        let noted = a.with_legend_note();
        assert_eq!(noted.notes, ["abbreviated: ii = important_instructions"]);
        // A long title word of no parts is shortened past the limit only; a title of
        // one short word never.
        let titled = |t: &str| {
            let mut g = g.select(&[1]);
            g.columns[0].title = t.into();
            g
        };
        let lone = "verylongattackname ASR %";
        assert_eq!(shorten(&titled(lone), 24).grid.columns[0].title, lone);
        assert_eq!(shorten(&titled(lone), 12).grid.columns[0].title, "v ASR %");
        let path = "library:results/search ASR %";
        assert_eq!(
            shorten(&titled(path), 24).grid.columns[0].title,
            "l:r/s ASR %"
        );
        assert_eq!(
            shorten(&titled("direct ASR %"), 10).grid.columns[0].title,
            "direct ASR %"
        );
        // Nothing long: no legend.
        assert!(shorten(&g.select(&[2]), 10).legend_line().is_none());
    }
}
