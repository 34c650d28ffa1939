//! The HTML report's figures as hand-written SVG: no plotting library, no fonts or
//! scripts from the network, so the page stays one self-contained file.

/// Text in HTML and SVG: the report's one HTML escaping layer.
pub use super::escape::html as esc;
use std::fmt::Write;

/// Series colours (colour-blind safe, Okabe–Ito).
pub const PALETTE: [&str; 8] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000",
];

/// The attributes that make an SVG element open the drill-down for its cell.
#[derive(Clone, Debug, Default)]
pub struct Link {
    pub suite: Option<String>,
    pub attack: Option<String>,
    pub defense: Option<String>,
    pub model: Option<String>,
}

impl Link {
    pub fn attrs(&self) -> String {
        let mut out = String::from(" class=\"drill\"");
        for (name, v) in [
            ("suite", &self.suite),
            ("attack", &self.attack),
            ("defense", &self.defense),
            ("model", &self.model),
        ] {
            if let Some(v) = v {
                write!(out, " data-{name}=\"{}\"", esc(v)).unwrap();
            }
        }
        out
    }
}

/// A defense on the security–utility plane.
#[derive(Clone, Debug)]
pub struct TradeoffPoint {
    pub label: String,
    /// 1 − ASR and its interval.
    pub security: f64,
    pub security_ci: [f64; 2],
    /// UA and its interval.
    pub utility: f64,
    pub utility_ci: [f64; 2],
    pub link: Link,
    /// A published figure, not this run's: a hollow diamond, no whiskers, never on the
    /// Pareto front.
    pub reference: bool,
}

/// Indices of the points no other point beats on both axes (ties do not dominate).
pub fn pareto_front(points: &[(f64, f64)]) -> Vec<usize> {
    (0..points.len())
        .filter(|&i| {
            let (x, y) = points[i];
            !points
                .iter()
                .enumerate()
                .any(|(j, &(a, b))| j != i && a >= x && b >= y && (a > x || b > y))
        })
        .collect()
}

const W: f64 = 560.0;
const H: f64 = 400.0;
const ML: f64 = 64.0;
const MR: f64 = 20.0;
const MT: f64 = 34.0;
const MB: f64 = 50.0;

/// A generous estimate of the width of `text` at `size` px in a sans-serif face, so the
/// boxes laid out from it hold the text a browser draws.
pub fn text_width(text: &str, size: f64) -> f64 {
    text.chars()
        .map(|c| match c {
            'i' | 'j' | 'l' | '.' | ',' | ':' | ';' | '\'' | '|' | '!' | ' ' => 0.36,
            'm' | 'w' | 'M' | 'W' | '@' | '%' | '—' | '–' => 0.95,
            c if c.is_uppercase() => 0.74,
            _ => 0.62,
        })
        .sum::<f64>()
        * size
        + 2.0
}

/// An axis-aligned box, for laying labels out without overlaps.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rect {
    pub x0: f64,
    pub y0: f64,
    pub x1: f64,
    pub y1: f64,
}

impl Rect {
    pub fn overlaps(&self, o: &Rect) -> bool {
        self.x0 < o.x1 && o.x0 < self.x1 && self.y0 < o.y1 && o.y0 < self.y1
    }
    fn inside(&self, o: &Rect) -> bool {
        self.x0 >= o.x0 && self.x1 <= o.x1 && self.y0 >= o.y0 && self.y1 <= o.y1
    }
}

/// The range an axis shows: the data's, widened to whole tenths and to at least 20
/// points, inside [0, 1].
pub fn zoom(values: impl IntoIterator<Item = f64>) -> [f64; 2] {
    let (mut lo, mut hi) = values
        .into_iter()
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(v), b.max(v))
        });
    if lo > hi {
        return [0.0, 1.0];
    }
    lo = ((lo.clamp(0.0, 1.0) - 0.02) * 10.0).floor() / 10.0;
    hi = ((hi.clamp(0.0, 1.0) + 0.02) * 10.0).ceil() / 10.0;
    let (mut lo, mut hi) = (lo.max(0.0), hi.min(1.0));
    while hi - lo < 0.2 - 1e-9 {
        if lo > 0.0 {
            lo = (lo - 0.1).max(0.0);
        }
        if hi - lo < 0.2 - 1e-9 && hi < 1.0 {
            hi = (hi + 0.1).min(1.0);
        }
    }
    [lo, hi]
}

/// Tick values over `range` (fractions): every 10 points on a narrow range, every 20
/// on a wide one.
fn ticks(range: [f64; 2]) -> Vec<f64> {
    let step = if range[1] - range[0] > 0.55 { 0.2 } else { 0.1 };
    let mut out = Vec::new();
    let mut k = (range[0] / step).ceil() as i64;
    while k as f64 * step <= range[1] + 1e-9 {
        out.push(k as f64 * step);
        k += 1;
    }
    out
}

fn open_svg(id: &str, title: &str, w: f64, h: f64) -> String {
    format!(
        "<svg id=\"{id}\" class=\"plot\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {w:.0} {h:.0}\" width=\"{w:.0}\" height=\"{h:.0}\" font-family=\"system-ui,-apple-system,'Segoe UI',sans-serif\" role=\"img\" aria-label=\"{}\"><title>{}</title>",
        esc(title),
        esc(title)
    )
}

/// Security (1 − ASR) against utility under attack, one point per defense with its
/// interval whiskers; the Pareto front joined by a dashed line and ringed.
pub fn tradeoff(points: &[TradeoffPoint]) -> String {
    tradeoff_plot(
        "plot-tradeoff",
        "Security–utility trade-off: 1 − ASR against UA",
        points,
    )
}

/// Where each label of a scatter goes: beside its point where there is room (with a
/// leader line when it had to move away), else in a column right of the plot.
fn place_labels(
    points: &[(f64, f64)],
    labels: &[String],
    plot: Rect,
    size: f64,
) -> Vec<(Rect, bool)> {
    let mut taken: Vec<Rect> = points
        .iter()
        .map(|&(x, y)| Rect {
            x0: x - 6.0,
            y0: y - 6.0,
            x1: x + 6.0,
            y1: y + 6.0,
        })
        .collect();
    let h = size + 3.0;
    let mut out: Vec<Option<(Rect, bool)>> = vec![None; points.len()];
    // Crowded points first: they have the fewest places to go.
    let mut order: Vec<usize> = (0..points.len()).collect();
    let crowd = |i: usize| {
        points
            .iter()
            .filter(|p| (p.0 - points[i].0).abs() < 40.0 && (p.1 - points[i].1).abs() < 20.0)
            .count()
    };
    order.sort_by_key(|&i| std::cmp::Reverse(crowd(i)));
    for &i in &order {
        let (px, py) = points[i];
        let w = text_width(&labels[i], size);
        let mut found = None;
        'search: for (ring, r) in [8.0, 20.0, 34.0, 50.0, 70.0].into_iter().enumerate() {
            for (dx, dy) in [
                (1.0, 0.0),
                (-1.0, 0.0),
                (0.0, -1.0),
                (0.0, 1.0),
                (1.0, -1.0),
                (-1.0, -1.0),
                (1.0, 1.0),
                (-1.0, 1.0),
            ] {
                let cx = px + dx * r;
                let cy = py + dy * r * 0.6;
                let x0 = if dx > 0.0 {
                    cx
                } else if dx < 0.0 {
                    cx - w
                } else {
                    cx - w / 2.0
                };
                let y0 = if dy > 0.0 {
                    cy
                } else if dy < 0.0 {
                    cy - h
                } else {
                    cy - h / 2.0
                };
                let b = Rect {
                    x0,
                    y0,
                    x1: x0 + w,
                    y1: y0 + h,
                };
                if b.inside(&plot) && !taken.iter().any(|t| t.overlaps(&b)) {
                    found = Some((b, ring > 0));
                    break 'search;
                }
            }
        }
        if let Some((b, _)) = found {
            taken.push(b);
        }
        out[i] = found;
    }
    // The rest go in a column right of the plot, each in the free slot nearest its point.
    let gx = plot.x1 + 20.0;
    let mut slots: Vec<Rect> = Vec::new();
    let mut rest: Vec<usize> = (0..points.len()).filter(|&i| out[i].is_none()).collect();
    rest.sort_by(|a, b| points[*a].1.total_cmp(&points[*b].1));
    for i in rest {
        let w = text_width(&labels[i], size);
        let mut y0 = (points[i].1 - h / 2.0).max(plot.y0);
        while slots.iter().any(|s| s.y0 < y0 + h && y0 < s.y1) {
            y0 = slots
                .iter()
                .filter(|s| s.y0 < y0 + h && y0 < s.y1)
                .map(|s| s.y1)
                .fold(y0, f64::max);
        }
        let b = Rect {
            x0: gx,
            y0,
            x1: gx + w,
            y1: y0 + h,
        };
        slots.push(b);
        out[i] = Some((b, true));
    }
    out.into_iter()
        .map(|o| o.expect("every label placed"))
        .collect()
}

/// [`tradeoff`] under another id and title; reference points (published figures) are
/// hollow diamonds with no whiskers, left out of the Pareto front. The axes zoom to the
/// data; labels that do not fit beside their point go right of the plot on a leader line.
/// More than 12 points get a larger plane, so their labels find room beside them.
pub fn tradeoff_plot(id: &str, title: &str, points: &[TradeoffPoint]) -> String {
    let (w, h) = [(W, H), (W + 240.0, H + 140.0)][usize::from(points.len() > 12)];
    let pw = w - ML - MR;
    let ph = h - MT - MB;
    let xr = zoom(
        points
            .iter()
            .flat_map(|p| [p.utility_ci[0], p.utility_ci[1], p.utility]),
    );
    let yr = zoom(
        points
            .iter()
            .flat_map(|p| [p.security_ci[0], p.security_ci[1], p.security]),
    );
    let x = move |v: f64| ML + (v.clamp(xr[0], xr[1]) - xr[0]) / (xr[1] - xr[0]) * pw;
    let y = move |v: f64| MT + (1.0 - (v.clamp(yr[0], yr[1]) - yr[0]) / (yr[1] - yr[0])) * ph;
    let mut s = String::new();
    axes(
        &mut s,
        pw,
        ph,
        [xr, yr],
        "UA (utility under attack, %)",
        "1 − ASR (security, %)",
    );
    let xy: Vec<(f64, f64)> = points.iter().map(|p| (p.utility, p.security)).collect();
    let ours: Vec<usize> = (0..points.len())
        .filter(|&i| !points[i].reference)
        .collect();
    let own_xy: Vec<(f64, f64)> = ours.iter().map(|&i| xy[i]).collect();
    let mut front: Vec<usize> = pareto_front(&own_xy).into_iter().map(|k| ours[k]).collect();
    front.sort_by(|a, b| xy[*a].0.total_cmp(&xy[*b].0));
    if front.len() > 1 {
        let path: Vec<String> = front
            .iter()
            .map(|&i| format!("{:.1},{:.1}", x(xy[i].0), y(xy[i].1)))
            .collect();
        write!(
            s,
            "<polyline class=\"pareto\" points=\"{}\" fill=\"none\" stroke=\"#555\" stroke-dasharray=\"5 4\"/>",
            path.join(" ")
        )
        .unwrap();
    }
    let at: Vec<(f64, f64)> = points
        .iter()
        .map(|p| (x(p.utility), y(p.security)))
        .collect();
    let labels: Vec<String> = points.iter().map(|p| p.label.clone()).collect();
    let plot = Rect {
        x0: ML + 2.0,
        y0: MT + 2.0,
        x1: ML + pw - 2.0,
        y1: MT + ph - 2.0,
    };
    let placed = place_labels(&at, &labels, plot, 12.0);
    let mut right = w;
    let mut bottom = h;
    for (i, p) in points.iter().enumerate() {
        let c = PALETTE[i % PALETTE.len()];
        let (px, py) = at[i];
        let (b, leader) = placed[i];
        right = right.max(b.x1 + 6.0);
        bottom = bottom.max(b.y1 + 6.0);
        let label = point_label(&p.label, p.reference, (px, py), b, leader);
        if p.reference {
            write!(
                s,
                "<g class=\"reference\"><title>{} (published): 1−ASR {:.1}%, UA {:.1}%</title><path class=\"point reference\" d=\"M{px:.1},{:.1} L{:.1},{py:.1} L{px:.1},{:.1} L{:.1},{py:.1} Z\" fill=\"none\" stroke=\"{c}\" stroke-width=\"2\"/>{label}</g>",
                esc(&p.label),
                p.security * 100.0,
                p.utility * 100.0,
                py - 6.0,
                px + 6.0,
                py + 6.0,
                px - 6.0,
            )
            .unwrap();
            continue;
        }
        write!(
            s,
            "<g{}><title>{}: 1−ASR {:.1}% [{:.1}–{:.1}], UA {:.1}% [{:.1}–{:.1}]</title>",
            p.link.attrs(),
            esc(&p.label),
            p.security * 100.0,
            p.security_ci[0] * 100.0,
            p.security_ci[1] * 100.0,
            p.utility * 100.0,
            p.utility_ci[0] * 100.0,
            p.utility_ci[1] * 100.0
        )
        .unwrap();
        write!(
            s,
            "<line class=\"whisker\" x1=\"{:.1}\" y1=\"{py:.1}\" x2=\"{:.1}\" y2=\"{py:.1}\" stroke=\"{c}\"/><line class=\"whisker\" x1=\"{px:.1}\" y1=\"{:.1}\" x2=\"{px:.1}\" y2=\"{:.1}\" stroke=\"{c}\"/>",
            x(p.utility_ci[0]),
            x(p.utility_ci[1]),
            y(p.security_ci[0]),
            y(p.security_ci[1])
        )
        .unwrap();
        if front.contains(&i) {
            write!(
                s,
                "<circle class=\"front\" cx=\"{px:.1}\" cy=\"{py:.1}\" r=\"9\" fill=\"none\" stroke=\"#555\"/>"
            )
            .unwrap();
        }
        write!(
            s,
            "<circle class=\"point\" cx=\"{px:.1}\" cy=\"{py:.1}\" r=\"5\" fill=\"{c}\"/>{label}</g>"
        )
        .unwrap();
    }
    let mut out = open_svg(id, title, right, bottom);
    out.push_str(&s);
    out.push_str("</svg>");
    out
}

/// A point's label in its box, with a leader line from the point when it moved away;
/// published points' labels in italics.
fn point_label(text: &str, reference: bool, (px, py): (f64, f64), b: Rect, leader: bool) -> String {
    let style = if reference {
        " font-style=\"italic\""
    } else {
        ""
    };
    let line = if leader {
        let lx = if b.x0 >= px { b.x0 } else { b.x1 };
        format!(
            "<line class=\"leader\" x1=\"{px:.1}\" y1=\"{py:.1}\" x2=\"{lx:.1}\" y2=\"{:.1}\" stroke=\"#999\" stroke-width=\"0.7\"/>",
            (b.y0 + b.y1) / 2.0
        )
    } else {
        String::new()
    };
    format!(
        "{line}<text class=\"label\" x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\"{style}>{}</text>",
        b.x0 + 1.0,
        b.y1 - 4.0,
        esc(text)
    )
}

/// Grid lines, ticks and axis titles of a plot over `ranges` ([x, y], fractions shown
/// as percentages).
fn axes(s: &mut String, pw: f64, ph: f64, ranges: [[f64; 2]; 2], xlabel: &str, ylabel: &str) {
    let [xr, yr] = ranges;
    for v in ticks(xr) {
        let gx = ML + (v - xr[0]) / (xr[1] - xr[0]) * pw;
        write!(
            s,
            "<line x1=\"{gx:.1}\" y1=\"{MT}\" x2=\"{gx:.1}\" y2=\"{:.1}\" stroke=\"#eee\"/><text class=\"tick\" x=\"{gx:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\">{:.0}</text>",
            MT + ph,
            MT + ph + 19.0,
            v * 100.0
        )
        .unwrap();
    }
    for v in ticks(yr) {
        let gy = MT + (1.0 - (v - yr[0]) / (yr[1] - yr[0])) * ph;
        write!(
            s,
            "<line x1=\"{ML}\" y1=\"{gy:.1}\" x2=\"{:.1}\" y2=\"{gy:.1}\" stroke=\"#eee\"/><text class=\"tick\" x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"end\">{:.0}</text>",
            ML + pw,
            ML - 6.0,
            gy + 4.0,
            v * 100.0
        )
        .unwrap();
    }
    axis_titles(s, ML, MT, pw, ph, xlabel, ylabel);
}

/// The frame of a plot area and the titles of its two axes.
fn axis_titles(s: &mut String, x0: f64, y0: f64, pw: f64, ph: f64, xlabel: &str, ylabel: &str) {
    write!(
        s,
        "<rect x=\"{x0:.1}\" y=\"{y0:.1}\" width=\"{pw:.1}\" height=\"{ph:.1}\" fill=\"none\" stroke=\"#333\"/><text class=\"axis-label x\" x=\"{:.1}\" y=\"{:.1}\" font-size=\"13\" text-anchor=\"middle\">{}</text><text class=\"axis-label y\" transform=\"translate(16 {:.1}) rotate(-90)\" font-size=\"13\" text-anchor=\"middle\">{}</text>",
        x0 + pw / 2.0,
        y0 + ph + 40.0,
        esc(xlabel),
        y0 + ph / 2.0,
        esc(ylabel)
    )
    .unwrap();
}

/// A row of legend swatches starting at (`x`, `y`), each entry as wide as its text.
fn legend(s: &mut String, x: f64, y: f64, entries: &[(&str, &str)]) -> f64 {
    let mut lx = x;
    for (name, colour) in entries {
        write!(
            s,
            "<rect x=\"{lx:.1}\" y=\"{:.1}\" width=\"12\" height=\"12\" fill=\"{colour}\"/><text class=\"legend\" x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\">{}</text>",
            y,
            lx + 16.0,
            y + 10.0,
            esc(name)
        )
        .unwrap();
        lx += 16.0 + text_width(name, 12.0) + 14.0;
    }
    lx
}

/// One horizontal bar, possibly stacked.
#[derive(Clone, Debug)]
pub struct Bar {
    pub label: String,
    /// (series, value) in stacking order.
    pub parts: Vec<(String, f64)>,
    pub link: Link,
}

/// Horizontal bars, stacked by series: the legend above the plot, the value axis below
/// it with ticks and `value_label`, the category axis titled `category_label`; `unit`
/// follows each total.
pub fn bars(
    id: &str,
    title: &str,
    bars: &[Bar],
    unit: &str,
    percent: bool,
    axis: [&str; 2],
) -> String {
    let [value_label, category_label] = axis;
    let row_h = 24.0;
    let label_w = bars
        .iter()
        .map(|b| text_width(&b.label, 12.0))
        .fold(60.0, f64::max)
        + 34.0;
    let top = MT;
    let total_w = 80.0;
    let pw = (W + 60.0 - label_w - total_w).max(260.0);
    let ph = bars.len().max(1) as f64 * row_h + 6.0;
    let w = label_w + pw + total_w;
    let h = top + ph + MB;
    let mut s = open_svg(id, title, w, h);
    let mut series: Vec<&str> = Vec::new();
    for b in bars {
        for (name, _) in &b.parts {
            if !series.contains(&name.as_str()) {
                series.push(name);
            }
        }
    }
    let max = if percent {
        1.0
    } else {
        nice_max(
            bars.iter()
                .map(|b| b.parts.iter().map(|p| p.1).sum::<f64>())
                .fold(0.0, f64::max),
        )
    };
    // Value axis: grid lines and ticks under the bars.
    for k in 0..=5 {
        let v = max * k as f64 / 5.0;
        let gx = label_w + pw * k as f64 / 5.0;
        write!(
            s,
            "<line x1=\"{gx:.1}\" y1=\"{top}\" x2=\"{gx:.1}\" y2=\"{:.1}\" stroke=\"#eee\"/><text class=\"tick\" x=\"{gx:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\">{}</text>",
            top + ph,
            top + ph + 19.0,
            tick_value(v, percent)
        )
        .unwrap();
    }
    if series.len() > 1 {
        let entries: Vec<(&str, &str)> = series
            .iter()
            .enumerate()
            .map(|(i, n)| (*n, PALETTE[i % PALETTE.len()]))
            .collect();
        legend(&mut s, label_w, 8.0, &entries);
    }
    for (r, b) in bars.iter().enumerate() {
        let y = top + 4.0 + r as f64 * row_h;
        write!(
            s,
            "<g{}><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\" text-anchor=\"end\">{}</text>",
            b.link.attrs(),
            label_w - 8.0,
            y + 14.0,
            esc(&b.label)
        )
        .unwrap();
        let mut x = label_w;
        for (name, v) in &b.parts {
            let bw = v / max * pw;
            let si = series.iter().position(|n| n == name).unwrap_or(0);
            write!(
                s,
                "<rect class=\"bar\" x=\"{x:.1}\" y=\"{y:.1}\" width=\"{bw:.1}\" height=\"{:.1}\" fill=\"{}\"><title>{}: {}</title></rect>",
                row_h - 6.0,
                PALETTE[si % PALETTE.len()],
                esc(name),
                fmt_value(*v, percent, unit)
            )
            .unwrap();
            x += bw;
        }
        let total: f64 = b.parts.iter().map(|p| p.1).sum();
        write!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\">{}</text></g>",
            x + 6.0,
            y + 14.0,
            fmt_value(total, percent, unit)
        )
        .unwrap();
    }
    write!(
        s,
        "<rect x=\"{label_w:.1}\" y=\"{top}\" width=\"{pw:.1}\" height=\"{ph:.1}\" fill=\"none\" stroke=\"#333\"/><text class=\"axis-label x\" x=\"{:.1}\" y=\"{:.1}\" font-size=\"13\" text-anchor=\"middle\">{}</text><text class=\"axis-label y\" transform=\"translate(16 {:.1}) rotate(-90)\" font-size=\"13\" text-anchor=\"middle\">{}</text>",
        label_w + pw / 2.0,
        top + ph + 40.0,
        esc(value_label),
        top + ph / 2.0,
        esc(category_label)
    )
    .unwrap();
    s.push_str("</svg>");
    s
}

/// The smallest 1, 2 or 5 times a power of ten at or above `v` (an axis end).
fn nice_max(v: f64) -> f64 {
    if v <= 0.0 || !v.is_finite() {
        return 1.0;
    }
    let p = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * p)
        .find(|m| *m >= v * (1.0 - 1e-9))
        .unwrap_or(10.0 * p)
}

fn tick_value(v: f64, percent: bool) -> String {
    if percent {
        format!("{:.0}", v * 100.0)
    } else if v >= 10.0 || v == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

fn fmt_value(v: f64, percent: bool, unit: &str) -> String {
    if percent {
        format!("{:.1}%", v * 100.0)
    } else if v >= 100.0 {
        format!("{v:.0}{unit}")
    } else {
        format!("{v:.2}{unit}")
    }
}

/// A heat map of rates (rows × columns), each cell opening its drill-down. Column
/// labels are horizontal, each column as wide as its label.
pub fn heatmap(
    id: &str,
    title: &str,
    axis: [&str; 2],
    rows: &[String],
    cols: &[String],
    value: impl Fn(usize, usize) -> Option<f64>,
    link: impl Fn(usize, usize) -> Link,
) -> String {
    let ch = 24.0;
    let lw = rows
        .iter()
        .map(|r| text_width(r, 12.0))
        .fold(40.0, f64::max)
        + 12.0
        + 24.0;
    let widths: Vec<f64> = cols
        .iter()
        .map(|c| (text_width(c, 12.0) + 12.0).max(56.0))
        .collect();
    let th = 50.0;
    let w = lw + widths.iter().sum::<f64>() + 10.0;
    let h = th + rows.len() as f64 * ch + 10.0;
    let mut s = open_svg(id, title, w, h);
    let [row_axis, col_axis] = axis;
    write!(
        s,
        "<text class=\"axis-label x\" x=\"{:.1}\" y=\"16\" font-size=\"13\" text-anchor=\"middle\">{}</text><text class=\"axis-label y\" transform=\"translate(16 {:.1}) rotate(-90)\" font-size=\"13\" text-anchor=\"middle\">{}</text>",
        lw + widths.iter().sum::<f64>() / 2.0,
        esc(col_axis),
        th + rows.len() as f64 * ch / 2.0,
        esc(row_axis)
    )
    .unwrap();
    let mut x = lw;
    for (name, cw) in cols.iter().zip(&widths) {
        write!(
            s,
            "<text class=\"col-label\" x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\" text-anchor=\"middle\">{}</text>",
            x + cw / 2.0,
            th - 10.0,
            esc(name)
        )
        .unwrap();
        x += cw;
    }
    for (r, name) in rows.iter().enumerate() {
        let y = th + r as f64 * ch;
        write!(
            s,
            "<text class=\"row-label\" x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\" text-anchor=\"end\">{}</text>",
            lw - 8.0,
            y + ch / 2.0 + 4.0,
            esc(name)
        )
        .unwrap();
        let mut x = lw;
        for (c, cw) in widths.iter().enumerate() {
            let (fill, text) = match value(r, c) {
                Some(v) => (heat(v), format!("{:.1}", v * 100.0)),
                None => ("#f4f4f4".to_string(), "–".to_string()),
            };
            write!(
                s,
                "<g{}><rect class=\"cell\" x=\"{x:.1}\" y=\"{y:.1}\" width=\"{cw:.1}\" height=\"{ch:.1}\" fill=\"{fill}\" stroke=\"#fff\"/><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\" text-anchor=\"middle\">{text}</text></g>",
                link(r, c).attrs(),
                x + cw / 2.0,
                y + ch / 2.0 + 4.0
            )
            .unwrap();
            x += cw;
        }
    }
    s.push_str("</svg>");
    s
}

/// White (0) to deep red (1).
fn heat(v: f64) -> String {
    let v = v.clamp(0.0, 1.0);
    let g = (255.0 - 180.0 * v) as u8;
    let b = (255.0 - 200.0 * v) as u8;
    format!("#ff{g:02x}{b:02x}")
}

/// Two histograms over [0, 1] sharing bins: approved and blocked calls' scores, with
/// the approval threshold marked; the y-axis is each group's share of its calls, the
/// legend above the plot.
pub fn score_histogram(
    id: &str,
    title: &str,
    approved: &[u64],
    blocked: &[u64],
    threshold: Option<f64>,
) -> String {
    let mut s = open_svg(id, title, W, H);
    let pw = W - ML - MR;
    let ph = H - MT - MB;
    let bins = approved.len().max(1);
    let total = |h: &[u64]| h.iter().sum::<u64>().max(1) as f64;
    let (ta, tb) = (total(approved), total(blocked));
    let top = approved
        .iter()
        .map(|&a| a as f64 / ta)
        .chain(blocked.iter().map(|&b| b as f64 / tb))
        .fold(0.0, f64::max);
    let max = nice_max(top).min(1.0);
    for k in 0..=5 {
        let v = max * k as f64 / 5.0;
        let gy = MT + ph - ph * k as f64 / 5.0;
        write!(
            s,
            "<line x1=\"{ML}\" y1=\"{gy:.1}\" x2=\"{:.1}\" y2=\"{gy:.1}\" stroke=\"#eee\"/><text class=\"tick\" x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"end\">{}</text>",
            ML + pw,
            ML - 6.0,
            gy + 4.0,
            tick_value(v, true)
        )
        .unwrap();
    }
    let bw = pw / bins as f64;
    for (series, hist, t, colour, offset) in [
        ("approved", approved, ta, PALETTE[2], 0.0),
        ("blocked", blocked, tb, PALETTE[1], bw / 2.0),
    ] {
        for (i, &n) in hist.iter().enumerate() {
            let frac = n as f64 / t;
            let bh = frac / max * ph;
            write!(
                s,
                "<rect class=\"bar {series}\" x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{bh:.1}\" fill=\"{colour}\" opacity=\"0.85\"><title>{series}, S_align {:.2}–{:.2}: {n} call(s)</title></rect>",
                ML + i as f64 * bw + offset,
                MT + ph - bh,
                bw / 2.0,
                i as f64 / bins as f64,
                (i + 1) as f64 / bins as f64
            )
            .unwrap();
        }
    }
    if let Some(th) = threshold {
        let tx = ML + th.clamp(0.0, 1.0) * pw;
        write!(
            s,
            "<line x1=\"{tx:.1}\" y1=\"{MT}\" x2=\"{tx:.1}\" y2=\"{:.1}\" stroke=\"#000\" stroke-dasharray=\"4 3\"/><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\">threshold {th}</text>",
            MT + ph,
            tx + 4.0,
            MT - 4.0
        )
        .unwrap();
    }
    for k in 0..=5 {
        let v = k as f64 / 5.0;
        write!(
            s,
            "<text class=\"tick\" x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\">{v:.1}</text>",
            ML + v * pw,
            MT + ph + 19.0
        )
        .unwrap();
    }
    let a = format!("approved ({})", approved.iter().sum::<u64>());
    let b = format!("blocked ({})", blocked.iter().sum::<u64>());
    legend(&mut s, ML, 8.0, &[(&a, PALETTE[2]), (&b, PALETTE[1])]);
    axis_titles(
        &mut s,
        ML,
        MT,
        pw,
        ph,
        "S_align",
        "Share of the group's calls (%)",
    );
    s.push_str("</svg>");
    s
}

/// One series of a line plot: (x, y) points in x order, each opening its drill-down.
#[derive(Clone, Debug)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64, Link)>,
    /// Drawn as a step (the value holds until the next point), as a best-so-far curve
    /// is; otherwise the points are joined by straight lines.
    pub step: bool,
}

/// Rates (y, fractions) against a setting (x, its own units): one line per series with
/// its points marked, the legend above the plot, both axes titled.
pub fn lines(id: &str, title: &str, series: &[Series], axis: [&str; 2]) -> String {
    let [xlabel, ylabel] = axis;
    let mut s = open_svg(id, title, W, H);
    let pw = W - ML - MR;
    let ph = H - MT - MB;
    let xs: Vec<f64> = series
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.0))
        .collect();
    let (mut x0, mut x1) = xs
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
            (a.min(v), b.max(v))
        });
    if x0 > x1 {
        (x0, x1) = (0.0, 1.0);
    }
    if x1 - x0 < 1e-9 {
        (x0, x1) = (x0 - 0.5, x1 + 0.5);
    }
    let pad = (x1 - x0) * 0.04;
    let (x0, x1) = (x0 - pad, x1 + pad);
    let yr = [0.0, 1.0];
    let x = |v: f64| ML + (v - x0) / (x1 - x0) * pw;
    let y = |v: f64| MT + (1.0 - v.clamp(0.0, 1.0)) * ph;
    for v in ticks(yr) {
        let gy = y(v);
        write!(
            s,
            "<line x1=\"{ML}\" y1=\"{gy:.1}\" x2=\"{:.1}\" y2=\"{gy:.1}\" stroke=\"#eee\"/><text class=\"tick\" x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"end\">{:.0}</text>",
            ML + pw,
            ML - 6.0,
            gy + 4.0,
            v * 100.0
        )
        .unwrap();
    }
    // Ticks at the swept values, thinned so their labels never meet.
    let mut values: Vec<f64> = xs.clone();
    values.sort_by(f64::total_cmp);
    values.dedup_by(|a, b| (*a - *b).abs() < 1e-12);
    let mut last_end = f64::NEG_INFINITY;
    for v in values {
        let label = format!("{}", super::columns::clean(v));
        let gx = x(v);
        let half = text_width(&label, 11.0) / 2.0;
        if gx - half < last_end + 4.0 {
            continue;
        }
        last_end = gx + half;
        write!(
            s,
            "<line x1=\"{gx:.1}\" y1=\"{MT}\" x2=\"{gx:.1}\" y2=\"{:.1}\" stroke=\"#eee\"/><text class=\"tick\" x=\"{gx:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\">{label}</text>",
            MT + ph,
            MT + ph + 19.0
        )
        .unwrap();
    }
    for (i, l) in series.iter().enumerate() {
        let c = PALETTE[i % PALETTE.len()];
        let mut path: Vec<String> = Vec::new();
        for (k, p) in l.points.iter().enumerate() {
            if l.step && k > 0 {
                // The earlier value holds up to this point's x, then the line rises.
                path.push(format!("{:.1},{:.1}", x(p.0), y(l.points[k - 1].1)));
            }
            path.push(format!("{:.1},{:.1}", x(p.0), y(p.1)));
        }
        // Dashes tell apart lines that coincide (UA on BU when no attack costs utility).
        let dash = ["", " stroke-dasharray=\"7 4\"", " stroke-dasharray=\"2 3\""][i % 3];
        write!(
            s,
            "<polyline class=\"curve\" points=\"{}\" fill=\"none\" stroke=\"{c}\" stroke-width=\"2\"{dash}/>",
            path.join(" ")
        )
        .unwrap();
        for (px, py, link) in &l.points {
            write!(
                s,
                "<g{}><title>{} at {}: {:.1}%</title><circle class=\"point\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"4\" fill=\"{c}\"/></g>",
                link.attrs(),
                esc(&l.name),
                super::columns::clean(*px),
                py * 100.0,
                x(*px),
                y(*py)
            )
            .unwrap();
        }
    }
    let entries: Vec<(&str, &str)> = series
        .iter()
        .enumerate()
        .map(|(i, l)| (l.name.as_str(), PALETTE[i % PALETTE.len()]))
        .collect();
    legend(&mut s, ML, 8.0, &entries);
    axis_titles(&mut s, ML, MT, pw, ph, xlabel, ylabel);
    s.push_str("</svg>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pareto_front_keeps_the_undominated() {
        let pts = [(0.9, 0.1), (0.5, 0.9), (0.4, 0.5), (0.9, 0.1), (0.95, 0.05)];
        let f = pareto_front(&pts);
        // (0.4, 0.5) is beaten by (0.5, 0.9); equal points do not beat each other.
        assert_eq!(f, vec![0, 1, 3, 4]);
    }

    #[test]
    fn svg_text_is_escaped_and_cells_link() {
        let link = Link {
            suite: Some("a<b".into()),
            ..Default::default()
        };
        let svg = heatmap(
            "h",
            "T&T",
            ["rows", "columns"],
            &["r".into()],
            &["c".into()],
            |_, _| Some(0.5),
            |_, _| link.clone(),
        );
        assert!(svg.contains("data-suite=\"a&lt;b\""), "{svg}");
        assert!(svg.contains("T&amp;T"));
        assert!(svg.contains("50.0"));
    }
}
