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
const ML: f64 = 60.0;
const MR: f64 = 20.0;
const MT: f64 = 20.0;
const MB: f64 = 50.0;

fn open_svg(id: &str, title: &str, w: f64, h: f64) -> String {
    format!(
        "<svg id=\"{id}\" class=\"plot\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {w} {h}\" width=\"{w}\" height=\"{h}\" role=\"img\" aria-label=\"{}\"><title>{}</title>",
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

/// [`tradeoff`] under another id and title; reference points (published figures) are
/// hollow diamonds with no whiskers, left out of the Pareto front.
pub fn tradeoff_plot(id: &str, title: &str, points: &[TradeoffPoint]) -> String {
    let mut s = open_svg(id, title, W, H);
    let pw = W - ML - MR;
    let ph = H - MT - MB;
    let x = |v: f64| ML + v.clamp(0.0, 1.0) * pw;
    let y = |v: f64| MT + (1.0 - v.clamp(0.0, 1.0)) * ph;
    axes(
        &mut s,
        pw,
        ph,
        "UA (utility under attack)",
        "1 − ASR (security)",
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
    for (i, p) in points.iter().enumerate() {
        let c = PALETTE[i % PALETTE.len()];
        let (px, py) = (x(p.utility), y(p.security));
        if p.reference {
            write!(
                s,
                "<g class=\"reference\"><title>{} (published): 1−ASR {:.1}%, UA {:.1}%</title><path class=\"point reference\" d=\"M{px:.1},{:.1} L{:.1},{py:.1} L{px:.1},{:.1} L{:.1},{py:.1} Z\" fill=\"none\" stroke=\"{c}\" stroke-width=\"2\"/><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" font-style=\"italic\">{}</text></g>",
                esc(&p.label),
                p.security * 100.0,
                p.utility * 100.0,
                py - 6.0,
                px + 6.0,
                py + 6.0,
                px - 6.0,
                px + 9.0,
                py + 16.0 + 12.0 * (i % 2) as f64,
                esc(&p.label)
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
        // Labels of points near the right edge go to their left, inside the plot.
        let (lx, anchor) = if p.utility > 0.7 {
            (px - 10.0, "end")
        } else {
            (px + 10.0, "start")
        };
        write!(
            s,
            "<circle class=\"point\" cx=\"{px:.1}\" cy=\"{py:.1}\" r=\"5\" fill=\"{c}\"/><text x=\"{lx:.1}\" y=\"{:.1}\" font-size=\"12\" text-anchor=\"{anchor}\">{}</text></g>",
            py - 8.0 - 14.0 * (i % 2) as f64,
            esc(&p.label)
        )
        .unwrap();
    }
    s.push_str("</svg>");
    s
}

fn axes(s: &mut String, pw: f64, ph: f64, xlabel: &str, ylabel: &str) {
    for k in 0..=5 {
        let v = k as f64 / 5.0;
        let gx = ML + v * pw;
        let gy = MT + (1.0 - v) * ph;
        write!(
            s,
            "<line x1=\"{gx:.1}\" y1=\"{MT}\" x2=\"{gx:.1}\" y2=\"{:.1}\" stroke=\"#eee\"/><line x1=\"{ML}\" y1=\"{gy:.1}\" x2=\"{:.1}\" y2=\"{gy:.1}\" stroke=\"#eee\"/>",
            MT + ph,
            ML + pw
        )
        .unwrap();
        write!(
            s,
            "<text x=\"{gx:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\">{}%</text><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"end\">{}%</text>",
            MT + ph + 16.0,
            k * 20,
            ML - 6.0,
            gy + 4.0,
            k * 20
        )
        .unwrap();
    }
    write!(
        s,
        "<rect x=\"{ML}\" y=\"{MT}\" width=\"{pw}\" height=\"{ph}\" fill=\"none\" stroke=\"#333\"/><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"13\" text-anchor=\"middle\">{}</text><text transform=\"translate(16 {:.1}) rotate(-90)\" font-size=\"13\" text-anchor=\"middle\">{}</text>",
        ML + pw / 2.0,
        MT + ph + 38.0,
        esc(xlabel),
        MT + ph / 2.0,
        esc(ylabel)
    )
    .unwrap();
}

/// One horizontal bar, possibly stacked.
#[derive(Clone, Debug)]
pub struct Bar {
    pub label: String,
    /// (series, value) in stacking order.
    pub parts: Vec<(String, f64)>,
    pub link: Link,
}

/// Horizontal bars, stacked by series, with a legend; `unit` follows each total.
pub fn bars(id: &str, title: &str, bars: &[Bar], unit: &str, percent: bool) -> String {
    let row_h = 26.0;
    let label_w = 170.0;
    let legend_h = 24.0;
    let h = MT + legend_h + bars.len() as f64 * row_h + 30.0;
    let w = W + 120.0;
    let mut s = open_svg(id, title, w, h);
    let max = if percent {
        1.0
    } else {
        bars.iter()
            .map(|b| b.parts.iter().map(|p| p.1).sum::<f64>())
            .fold(0.0, f64::max)
            .max(1e-9)
    };
    let pw = w - label_w - 90.0;
    let mut series: Vec<&str> = Vec::new();
    for b in bars {
        for (name, _) in &b.parts {
            if !series.contains(&name.as_str()) {
                series.push(name);
            }
        }
    }
    if series.len() > 1 {
        for (i, name) in series.iter().enumerate() {
            let lx = label_w + i as f64 * 100.0;
            write!(
                s,
                "<rect x=\"{lx}\" y=\"{MT}\" width=\"12\" height=\"12\" fill=\"{}\"/><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\">{}</text>",
                PALETTE[i % PALETTE.len()],
                lx + 16.0,
                MT + 10.0,
                esc(name)
            )
            .unwrap();
        }
    }
    for (r, b) in bars.iter().enumerate() {
        let y = MT + legend_h + r as f64 * row_h;
        write!(
            s,
            "<g{}><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\" text-anchor=\"end\">{}</text>",
            b.link.attrs(),
            label_w - 8.0,
            y + 15.0,
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
                row_h - 8.0,
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
            y + 15.0,
            fmt_value(total, percent, unit)
        )
        .unwrap();
    }
    s.push_str("</svg>");
    s
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

/// A heat map of rates (rows × columns), each cell opening its drill-down.
pub fn heatmap(
    id: &str,
    title: &str,
    rows: &[String],
    cols: &[String],
    value: impl Fn(usize, usize) -> Option<f64>,
    link: impl Fn(usize, usize) -> Link,
) -> String {
    let cw = 90.0;
    let ch = 30.0;
    let lw = 170.0;
    // Column labels are slanted so long defense and model names do not overlap.
    let th = 110.0;
    let w = lw + cols.len() as f64 * cw + 80.0;
    let h = th + rows.len() as f64 * ch + 20.0;
    let mut s = open_svg(id, title, w, h);
    for (c, name) in cols.iter().enumerate() {
        write!(
            s,
            "<text transform=\"translate({:.1} {:.1}) rotate(-35)\" font-size=\"12\">{}</text>",
            lw + c as f64 * cw + cw / 2.0,
            th - 8.0,
            esc(name)
        )
        .unwrap();
    }
    for (r, name) in rows.iter().enumerate() {
        let y = th + r as f64 * ch;
        write!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\" text-anchor=\"end\">{}</text>",
            lw - 8.0,
            y + ch / 2.0 + 4.0,
            esc(name)
        )
        .unwrap();
        for c in 0..cols.len() {
            let x = lw + c as f64 * cw;
            let (fill, text) = match value(r, c) {
                Some(v) => (heat(v), format!("{:.1}", v * 100.0)),
                None => ("#f4f4f4".to_string(), "–".to_string()),
            };
            write!(
                s,
                "<g{}><rect class=\"cell\" x=\"{x:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{fill}\" stroke=\"#fff\"/><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\" text-anchor=\"middle\">{text}</text></g>",
                link(r, c).attrs(),
                cw,
                ch,
                x + cw / 2.0,
                y + ch / 2.0 + 4.0
            )
            .unwrap();
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
/// the approval threshold marked.
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
    let max = approved
        .iter()
        .map(|&a| a as f64 / ta)
        .chain(blocked.iter().map(|&b| b as f64 / tb))
        .fold(0.0, f64::max)
        .max(1e-9);
    write!(
        s,
        "<rect x=\"{ML}\" y=\"{MT}\" width=\"{pw}\" height=\"{ph}\" fill=\"none\" stroke=\"#333\"/>"
    )
    .unwrap();
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
            MT + 12.0
        )
        .unwrap();
    }
    for k in 0..=5 {
        let v = k as f64 / 5.0;
        write!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\">{v:.1}</text>",
            ML + v * pw,
            MT + ph + 16.0
        )
        .unwrap();
    }
    write!(
        s,
        "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"13\" text-anchor=\"middle\">S_align (share of each group's calls per bin)</text><rect x=\"{:.1}\" y=\"{:.1}\" width=\"12\" height=\"12\" fill=\"{}\"/><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\">approved ({})</text><rect x=\"{:.1}\" y=\"{:.1}\" width=\"12\" height=\"12\" fill=\"{}\"/><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\">blocked ({})</text>",
        ML + pw / 2.0,
        MT + ph + 38.0,
        ML + 10.0,
        MT + 8.0,
        PALETTE[2],
        ML + 26.0,
        MT + 18.0,
        approved.iter().sum::<u64>(),
        ML + 10.0,
        MT + 26.0,
        PALETTE[1],
        ML + 26.0,
        MT + 36.0,
        blocked.iter().sum::<u64>()
    )
    .unwrap();
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
