//! The self-contained HTML report: one file with the tables, SVG figures and a
//! per-episode drill-down (messages, calls, decisions, why) opened from any table cell
//! or figure mark. Nothing is fetched from the network: styles, script and data are
//! inline.

use super::Document;
use super::columns::{Grid, HoistedKey, Show, Value};
use super::plots::{self, Bar, Link, TradeoffPoint, esc};
use super::published::{BesideRow, Origin};
use crate::aggregate::metrics::Row;
use std::fmt::Write;

const STYLE: &str = r#"
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#222}
main{padding:16px 28px;max-width:100%;box-sizing:border-box}
aside#drill{display:none;position:fixed;top:0;right:0;width:min(720px,92vw);height:100vh;overflow:auto;border-left:1px solid #ccc;padding:12px 16px;background:#fafafa;box-sizing:border-box;box-shadow:-6px 0 18px rgba(0,0,0,.18);z-index:10}
aside#drill.open{display:block}button.close{float:right;font-size:18px;border:0;background:none;cursor:pointer}
.tablewrap{max-width:100%;overflow-x:auto}.badge{font-size:11px;font-weight:400;background:#fff3cd;border:1px solid #e0c36a;border-radius:8px;padding:0 6px;margin-left:8px;vertical-align:middle;text-decoration:none;color:#6b5500}
td small{display:block;color:#666;font-size:11px}td.wrap{white-space:normal;min-width:11em}
details.more{margin:2px 0 6px}details.more summary{cursor:pointer;color:#0a58ca;font-size:13px}
.plots figure a.svg{font-size:12px}
h1{font-size:22px;margin:4px 0 8px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ddd}
.note{color:#555;margin:2px 0}.sim{background:#fff3cd;border:1px solid #e0c36a;padding:6px 10px;border-radius:4px}
table{border-collapse:collapse;margin:6px 0 4px;font-variant-numeric:tabular-nums}
th,td{padding:3px 7px;border-bottom:1px solid #e5e5e5;white-space:nowrap}th{background:#f2f2f2;text-align:left;white-space:normal;vertical-align:bottom;overflow-wrap:normal;word-break:normal;hyphens:manual;min-width:3em}
td.num{text-align:right}td.best{font-weight:700;background:#e8f5e9}
td.drill,.drill{cursor:pointer}td.drill:hover{background:#e3f2fd}
.plots{display:flex;flex-wrap:wrap;gap:18px}.plots figure{margin:0;max-width:100%}.plots svg.plot{max-width:100%;height:auto}.plots figcaption{font-size:12px;color:#555;max-width:560px}
g.drill:hover circle.point,g.drill:hover rect{stroke:#000;stroke-width:1.5}
.ep{border:1px solid #ddd;border-radius:4px;margin:6px 0;background:#fff}.ep summary{padding:4px 8px;cursor:pointer}
.ep .body{padding:4px 10px}.msg{border-left:3px solid #bbb;margin:4px 0;padding:2px 8px;white-space:pre-wrap;font:12px/1.35 ui-monospace,monospace}
.msg.system{border-color:#999}.msg.user{border-color:#0072B2}.msg.assistant{border-color:#009E73}.msg.tool{border-color:#E69F00}
.tag{display:inline-block;padding:0 6px;border-radius:8px;font-size:11px;color:#fff}
.tag.attacked{background:#D55E00}.tag.defended{background:#009E73}.tag.clean{background:#0072B2}.tag.error{background:#555}
.foot{color:#555;font-size:12px}
/* Last, so that it overrides the rules above at narrow widths. */
@media (max-width:1100px){main{padding:10px 12px}th,td{padding:2px 4px;font-size:13px}th{min-width:0;font-size:11px;padding:2px 3px}td small{display:none}}
"#;

/// Shows the episodes of the cell an element names (its `data-*` attributes; a missing
/// attribute or `all` matches any), each expandable to its trace and decisions.
const SCRIPT: &str = r#"
const EPISODES = JSON.parse(document.getElementById('episodes').textContent);
function el(tag, cls, text){const e=document.createElement(tag);if(cls)e.className=cls;if(text!==undefined)e.textContent=text;return e;}
function matches(ep, f){for(const k of ['suite','attack','defense','model']){const v=f[k];if(v&&v!=='all'&&ep[k]!==v)return false;}return true;}
function showCell(f){
  const panel=document.getElementById('drill');panel.innerHTML='';panel.classList.add('open');
  const x=el('button','close','×');x.title='Close';x.onclick=ev=>{ev.stopPropagation();panel.classList.remove('open');};panel.appendChild(x);
  const what=['suite','attack','defense','model'].filter(k=>f[k]).map(k=>k+' '+f[k]).join(', ')||'every cell';
  panel.appendChild(el('h2',null,'Episodes: '+what));
  const eps=EPISODES.filter(e=>matches(e,f));
  panel.appendChild(el('p','note',eps.length+' sampled episode(s) (a few of each outcome per cell).'));
  for(const ep of eps){
    const d=el('details','ep');const s=el('summary');
    s.appendChild(el('span','tag '+ep.outcome,ep.outcome));
    s.appendChild(document.createTextNode(' '+ep.suite+' · '+ep.user_task+(ep.injection_task?' × '+ep.injection_task:'')+' · '+ep.attack+' · '+ep.defense+' · seed '+ep.seed+' · '+ep.tokens+' tok'));
    d.appendChild(s);const b=el('div','body');
    if(ep.error)b.appendChild(el('p',null,'error: '+ep.error));
    b.appendChild(el('p',null,'utility '+ep.utility+', blocked '+ep.blocked+', escalated '+ep.escalated));
    if(Array.isArray(ep.decisions)&&ep.decisions.length){
      b.appendChild(el('h4',null,'Decisions'));const t=el('table');
      const hr=el('tr');for(const h of ['step','tool','path','S_align','why'])hr.appendChild(el('th',null,h));t.appendChild(hr);
      for(const c of ep.decisions){const r=el('tr');const adj=c.adjudication||{};
        for(const v of [c.step,c.tool,c.path,adj.s_align!==undefined?adj.s_align.toFixed(3):'',c.layer1||adj.trigger||''])r.appendChild(el('td',null,String(v??'')));
        t.appendChild(r);}
      b.appendChild(t);
    }
    const tr=ep.trace||{};
    if(Array.isArray(tr.calls)&&tr.calls.length){
      b.appendChild(el('h4',null,'Calls'));const t=el('table');
      for(const c of tr.calls){const r=el('tr');for(const v of [c.step,c.tool,c.decision,c.arguments,c.reason||''])r.appendChild(el('td',null,typeof v==='string'?v:JSON.stringify(v)));t.appendChild(r);}
      b.appendChild(t);
    }
    if(Array.isArray(tr.messages)){
      b.appendChild(el('h4',null,'Messages'));
      for(const m of tr.messages){let txt=m.role+': '+(m.content||'');
        if(m.tool_calls&&m.tool_calls.length)txt+='\n→ '+m.tool_calls.map(c=>c.name+' '+c.arguments).join('\n→ ');
        b.appendChild(el('div','msg '+m.role,txt));}
    }
    if(tr.answer!==undefined)b.appendChild(el('p',null,'answer: '+tr.answer));
    d.appendChild(b);panel.appendChild(d);
  }
  const first=panel.querySelector('details');if(first)first.open=true;
}
function filterOf(node){const f={};for(const k of ['suite','attack','defense','model']){const v=node.getAttribute('data-'+k);if(v)f[k]=v;}return f;}
document.addEventListener('click',ev=>{const n=ev.target.closest('.drill');if(n)showCell(filterOf(n));});
document.addEventListener('keydown',ev=>{if(ev.key==='Escape')document.getElementById('drill').classList.remove('open');});
document.body.dataset.episodes=String(EPISODES.length);
if(location.hash==='#selftest'){const c=document.querySelector('td.drill');if(c)c.click();}
"#;

fn key_value(grid: &Grid, row: usize, id: &str) -> Option<String> {
    grid.column(id).map(|c| grid.rows[row][c].display(false))
}

/// A table of the page: its heading (with a badge linking to the banner when roles
/// were simulated), notes, the essential columns, and every readable column under a
/// disclosure; footnotes last.
fn table(grid: &Grid, notes_keys: &[HoistedKey], badge: bool, full: Option<&Grid>) -> String {
    let mut s = String::new();
    write!(s, "<h2 id=\"{}\">{}", esc(&grid.id), esc(&grid.title)).unwrap();
    if badge {
        s.push_str("<a class=\"badge\" href=\"#simulated\" title=\"Some roles were played by the scripted sim model, not an LLM: the banner at the top says which and what they knew.\">simulated roles</a>");
    }
    s.push_str("</h2>\n");
    for n in &grid.notes {
        writeln!(s, "<p class=\"note\">{}</p>", esc(n)).unwrap();
    }
    s.push_str(&table_markup(grid, notes_keys));
    if let Some(full) = full.filter(|f| f.columns.len() > grid.columns.len()) {
        write!(
            s,
            "<details class=\"more\"><summary>All columns ({} more)</summary>{}</details>",
            full.columns.len() - grid.columns.len(),
            table_markup(full, notes_keys)
        )
        .unwrap();
    }
    for f in &grid.footnotes {
        writeln!(s, "<p class=\"foot\">{}</p>", esc(f)).unwrap();
    }
    s
}

/// The role columns of a grid as one column naming the scripted roles by kind
/// (`scripted: agent, planner; lexical: embedder`); the banner says what each knows.
fn merge_roles(grid: &Grid) -> Grid {
    let roles: Vec<usize> = (0..grid.columns.len())
        .filter(|&i| grid.columns[i].id.starts_with("scripted_"))
        .collect();
    let Some(&first) = roles.first() else {
        return grid.clone();
    };
    let mut g = grid.clone();
    for row in &mut g.rows {
        let mut kinds: Vec<(String, Vec<String>)> = Vec::new();
        for &i in &roles {
            if let Value::Text(t) = &row[i] {
                let kind = t
                    .split_whitespace()
                    .next()
                    .unwrap_or("scripted")
                    .to_string();
                let role = grid.columns[i].title.to_lowercase();
                match kinds.iter_mut().find(|(k, _)| *k == kind) {
                    Some((_, v)) => v.push(role),
                    None => kinds.push((kind, vec![role])),
                }
            }
        }
        row[first] = if kinds.is_empty() {
            Value::Missing
        } else {
            Value::Text(
                kinds
                    .iter()
                    .map(|(k, v)| format!("{k}: {}", v.join(", ")))
                    .collect::<Vec<_>>()
                    .join("; "),
            )
        };
    }
    g.columns[first].id = "scripted_roles".into();
    g.columns[first].title = "Scripted roles".into();
    g.columns[first].doc = "The roles the scripted sim model played in this row, by how it played them; the banner at the top says what each knew.".into();
    let keep: Vec<usize> = (0..g.columns.len())
        .filter(|i| !roles[1..].contains(i))
        .collect();
    g.select(&keep)
}

/// A header's break points: after a name's own separators (`_ + / @ = :`), so a long
/// attack or defense name wraps there and never inside a word (a browser may also break
/// after a hyphen, as typesetting does).
fn header_breaks(title: &str) -> String {
    let mut out = String::new();
    for c in title.chars() {
        out.push(c);
        if matches!(c, '_' | '+' | '/' | '@' | '=' | ':') {
            out.push_str("<wbr>");
        }
    }
    out
}

/// A grid as an HTML table whose cells open their drill-down.
pub(super) fn table_markup(grid: &Grid, notes_keys: &[HoistedKey]) -> String {
    let mut s = String::from("<div class=\"tablewrap\"><table><thead><tr>");
    for c in &grid.columns {
        // Long attack names break after their underscores, so headers never set a
        // column's width.
        write!(
            s,
            "<th title=\"{}\">{}</th>",
            esc(&c.doc),
            header_breaks(&esc(&c.title))
        )
        .unwrap();
    }
    s.push_str("</tr></thead><tbody>");
    for (r, row) in grid.rows.iter().enumerate() {
        let mut link = Link::default();
        for (id, slot) in [
            ("suite", &mut link.suite),
            ("attack", &mut link.attack),
            ("defense", &mut link.defense),
            ("model", &mut link.model),
        ] {
            *slot = key_value(grid, r, id).or_else(|| {
                notes_keys
                    .iter()
                    .find(|k| k.id == id)
                    .map(|k| k.value.display(false))
            });
        }
        let attrs = link.attrs().replace(" class=\"drill\"", "");
        s.push_str("<tr>");
        for (c, v) in row.iter().enumerate() {
            let mut class = vec!["drill"];
            if grid.columns[c].id == "scripted_roles" {
                class.push("wrap");
            } else if grid.columns[c].show != Show::Key {
                class.push("num");
            }
            if grid.is_best(r, c) {
                class.push("best");
            }
            let tip = match v {
                Value::Rate { ci: Some(_), .. } => {
                    format!(" title=\"95% interval {}\"", esc(&v.display(true)))
                }
                _ => String::new(),
            };
            write!(
                s,
                "<td class=\"{}\"{attrs}{tip}>{}</td>",
                class.join(" "),
                cell(v)
            )
            .unwrap();
        }
        s.push_str("</tr>");
    }
    s.push_str("</tbody></table></div>");
    s
}

/// A cell's text; a rate's interval goes on a second, smaller line so the column
/// stays narrow.
fn cell(v: &Value) -> String {
    match v {
        Value::Rate {
            ci: Some([lo, hi]), ..
        } => format!(
            "{}<small>[{:.1}–{:.1}]</small>",
            esc(&v.display(false)),
            lo * 100.0,
            hi * 100.0
        ),
        v => esc(&v.display(true)),
    }
}

fn label(r: &Row, models: usize) -> String {
    if models > 1 {
        format!("{} · {}", r.defense, r.model)
    } else {
        r.defense.clone()
    }
}

fn link_of(r: &Row) -> Link {
    Link {
        suite: None,
        attack: None,
        defense: Some(r.defense.clone()),
        model: Some(r.model.clone()),
    }
}

/// One figure of the report: its SVG (standalone: it carries its namespace and font)
/// and caption.
#[derive(Clone, Debug)]
pub struct Figure {
    /// The SVG element's id, also the file name `report --figures` gives it.
    pub id: String,
    pub svg: String,
    pub caption: String,
}

fn figure(svg: String, caption: &str) -> Figure {
    let id = svg
        .split_once("id=\"")
        .and_then(|(_, rest)| rest.split_once('"'))
        .map(|(id, _)| id.to_string())
        .expect("every plot has an id");
    Figure {
        id,
        svg,
        caption: caption.to_string(),
    }
}

fn figure_html(f: &Figure) -> String {
    format!(
        "<figure id=\"fig-{}\">{}<figcaption>{}</figcaption></figure>",
        f.id,
        f.svg,
        esc(&f.caption)
    )
}

/// The figures: trade-off, token cost by role, suite × defense heat map, escalation
/// rates, SIEVE's alignment scores, the published results beside the run's, and the
/// sweep curves, in page order.
pub fn figure_list(doc: &Document) -> Vec<Figure> {
    let searches = doc
        .searches
        .iter()
        .enumerate()
        .map(|(i, s)| asr_at_k_figure(i, s));
    if doc.runs.is_empty() {
        return searches.collect();
    }
    let nm = model_count(&doc.per_defense);
    let mut out = vec![
        tradeoff_figure(&doc.per_defense, nm),
        cost_figure(&doc.per_defense, nm),
        heatmap_figure(doc, nm),
        escalation_figure(&doc.per_defense, nm),
    ];
    out.extend(score_figures(doc, nm));
    if let Some(beside) = &doc.beside {
        out.push(beside_figure(beside));
    }
    out.extend(searches);
    out.extend(sweep_figures(&doc.per_defense));
    out
}

/// A search's ASR@k: the best development ASR after k attacker queries, beside the
/// static ASR of the stock templates on the same cells (a flat reference line) and, for
/// a universal search, both scored on the held-out cells (markers at the last k).
fn asr_at_k_figure(i: usize, s: &super::adaptive::SearchDoc) -> Figure {
    let c = &s.curve;
    let link = Link {
        suite: Some(c.suite.clone()),
        attack: None,
        defense: Some(c.defense.clone()),
        model: Some(c.model.clone()),
    };
    let last = c.points.last().map_or(0.0, |p| p.k as f64);
    let mut series = vec![
        plots::Series {
            name: "ASR@k (dev)".into(),
            points: c
                .points
                .iter()
                .map(|p| (p.k as f64, p.asr, link.clone()))
                .collect(),
            // The best ASR so far: it holds between queries and jumps at a better one.
            step: true,
        },
        plots::Series {
            name: "static ASR (dev)".into(),
            points: [0.0, last]
                .into_iter()
                .map(|k| (k, c.static_asr, link.clone()))
                .collect(),
            step: false,
        },
    ];
    if let (Some(st), Some(ad)) = (c.heldout_static_asr, c.heldout_asr) {
        series.push(plots::Series {
            name: "held-out: static, adaptive".into(),
            points: vec![(last, st, link.clone()), (last, ad, link.clone())],
            step: false,
        });
    }
    let sim = if c.simulated { " (SIMULATED)" } else { "" };
    let title = format!("ASR@k against {} on {}{sim}", c.defense, c.suite);
    figure(
        plots::lines(
            &format!("plot-asr-at-k-{i}"),
            &title,
            &series,
            ["Attacker queries (k)", "Attack success rate (%)"],
        ),
        &format!(
            "{}Adaptive search ({}): attacker {} against {} + {}, unit {}, feedback {}; ASR@k is the best development ASR after k attacker queries; the static ASR is the best stock template's on the same cells (dashed){}. From {}.",
            if c.simulated {
                "SIMULATED: the attacker or a victim role is scripted. "
            } else {
                ""
            },
            c.suite,
            c.attacker,
            c.model,
            c.defense,
            c.unit,
            c.feedback,
            if c.heldout_asr.is_some() {
                "; the held-out markers are the best seed and the best template scored on held-out cells (the headline is their fresh-seed replay, in the summary)"
            } else {
                ""
            },
            s.dir.display()
        ),
    )
}

fn model_count(rows: &[Row]) -> usize {
    let mut models: Vec<&String> = rows.iter().map(|r| &r.model).collect();
    models.sort();
    models.dedup();
    models.len()
}

/// The figures section, then the sweep curves under their own anchor.
fn figures(doc: &Document) -> String {
    let all = figure_list(doc);
    let (sweeps, rest): (Vec<&Figure>, Vec<&Figure>) =
        all.iter().partition(|f| f.id.starts_with("plot-sweep-"));
    let mut out = String::from("<h2 id=\"figures\">Figures</h2><div class=\"plots\">");
    for f in rest {
        out.push_str(&figure_html(f));
    }
    out.push_str("</div>");
    if sweeps.is_empty() {
        out.push_str("<p class=\"note\" id=\"sweep-curves\">Sweep curves appear when the runs hold a sweep of a threshold or weight (`ablate --sweep`); these runs hold none.</p>");
    } else {
        out.push_str("<h2 id=\"sweep-curves\">Sweep curves</h2><div class=\"plots\">");
        for f in sweeps {
            out.push_str(&figure_html(f));
        }
        out.push_str("</div>");
    }
    out
}

/// One line plot per swept setting (and model): ASR, UA and BU at each point.
fn sweep_figures(per_defense: &[Row]) -> Vec<Figure> {
    let mut groups: Vec<(String, String)> = Vec::new();
    for r in per_defense {
        if let Some(p) = super::tables::sweep_point(r) {
            let g = (p.setting, r.model.clone());
            if !groups.contains(&g) {
                groups.push(g);
            }
        }
    }
    let nm = model_count(per_defense);
    groups
        .iter()
        .enumerate()
        .map(|(i, (setting, model))| {
            let mut points: Vec<(f64, &Row)> = per_defense
                .iter()
                .filter(|r| &r.model == model)
                .filter_map(|r| {
                    super::tables::sweep_point(r)
                        .filter(|p| &p.setting == setting)
                        .map(|p| (p.value, r))
                })
                .collect();
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            let metric = |name: &str, pick: fn(&Row) -> Option<f64>| plots::Series {
                name: name.to_string(),
                points: points
                    .iter()
                    .filter_map(|(v, r)| Some((*v, pick(r)?, link_of(r))))
                    .collect(),
                step: false,
            };
            let series: Vec<plots::Series> = [
                metric("ASR", |r| r.asr),
                metric("UA", |r| r.ua),
                metric("BU", |r| r.bu),
            ]
            .into_iter()
            .filter(|s| !s.points.is_empty())
            .collect();
            let of = if nm > 1 {
                format!(" ({model})")
            } else {
                String::new()
            };
            figure(
                plots::lines(
                    &format!("plot-sweep-{i}"),
                    &format!("SIEVE sweep of {setting}{of}"),
                    &series,
                    [setting.as_str(), "Rate (%)"],
                ),
                &format!(
                    "SIEVE's ASR, UA and BU at each swept value of {setting}{of}, every suite and attack pooled (the sweeps table has the intervals). Click a point for its episodes."
                ),
            )
        })
        .collect()
}

/// Security against utility under attack, one point per defense.
fn tradeoff_figure(per_defense: &[Row], nm: usize) -> Figure {
    let points: Vec<TradeoffPoint> = per_defense
        .iter()
        .filter_map(|r| {
            Some(TradeoffPoint {
                label: label(r, nm),
                security: 1.0 - r.asr?,
                security_ci: r.asr_ci.map(|[lo, hi]| [1.0 - hi, 1.0 - lo])?,
                utility: r.ua?,
                utility_ci: r.ua_ci?,
                link: link_of(r),
                reference: false,
            })
        })
        .collect();
    figure(
        plots::tradeoff(&points),
        "Security against utility under attack, every suite and attack pooled. Whiskers: 95% intervals. Ringed and joined by the dashed line: the Pareto front (no other defense is better on both axes). Click a point for its episodes.",
    )
}

/// Tokens per episode by role, one stacked bar per defense.
fn cost_figure(per_defense: &[Row], nm: usize) -> Figure {
    let cost: Vec<Bar> = per_defense
        .iter()
        .map(|r| Bar {
            label: label(r, nm),
            parts: r
                .tokens_by_component
                .iter()
                .map(|(k, v)| (k.clone(), *v))
                .collect(),
            link: link_of(r),
        })
        .collect();
    figure(
        plots::bars(
            "plot-cost",
            "Tokens per episode by role",
            &cost,
            " tok",
            false,
            ["Tokens per episode", "Defense"],
        ),
        "Tokens per episode by role (agent, planner, judge, detector, embedding), clean and attacked episodes together.",
    )
}

/// ASR per suite and defense.
fn heatmap_figure(doc: &Document, nm: usize) -> Figure {
    let suites: Vec<String> =
        doc.per_suite
            .iter()
            .map(|r| r.suite.clone())
            .fold(Vec::new(), |mut v, s| {
                if !v.contains(&s) {
                    v.push(s);
                }
                v
            });
    let defenses: Vec<&Row> = doc.per_defense.iter().collect();
    let names: Vec<String> = defenses.iter().map(|r| label(r, nm)).collect();
    let asr = |s: usize, d: usize| {
        doc.per_suite
            .iter()
            .find(|x| {
                x.suite == suites[s]
                    && x.defense == defenses[d].defense
                    && x.model == defenses[d].model
            })
            .and_then(|x| x.asr)
    };
    let link = |s: usize, d: usize| Link {
        suite: Some(suites[s].clone()),
        attack: None,
        defense: Some(defenses[d].defense.clone()),
        model: Some(defenses[d].model.clone()),
    };
    // The longer list runs down the page, so many defenses make a tall map, not a
    // wide one.
    let svg = if defenses.len() >= suites.len() {
        plots::heatmap(
            "plot-heatmap",
            "ASR by defense and suite",
            ["Defense", "Suite"],
            &names,
            &suites,
            |d, s| asr(s, d),
            |d, s| link(s, d),
        )
    } else {
        plots::heatmap(
            "plot-heatmap",
            "ASR by suite and defense",
            ["Suite", "Defense"],
            &suites,
            &names,
            asr,
            link,
        )
    };
    figure(
        svg,
        "ASR (%) per suite and defense, attacks pooled. Click a cell for its episodes.",
    )
}

/// The share of proposed calls each defense sent to a judge.
fn escalation_figure(per_defense: &[Row], nm: usize) -> Figure {
    let esc_bars: Vec<Bar> = per_defense
        .iter()
        .filter_map(|r| {
            Some(Bar {
                label: label(r, nm),
                parts: vec![("escalated".into(), r.escalation_rate?)],
                link: link_of(r),
            })
        })
        .collect();
    figure(
        plots::bars(
            "plot-escalation",
            "Escalation rate by defense",
            &esc_bars,
            "",
            true,
            ["Proposed calls sent to a judge (%)", "Defense"],
        ),
        "Share of proposed tool calls sent to a semantic judge.",
    )
}

/// One histogram of S_align per defense that adjudicated calls.
fn score_figures(doc: &Document, nm: usize) -> Vec<Figure> {
    let mut out = Vec::new();
    for (i, ((approved, blocked), r)) in doc.scores.iter().zip(&doc.per_defense).enumerate() {
        let a: u64 = approved.iter().sum();
        let b: u64 = blocked.iter().sum();
        if a + b == 0 {
            continue;
        }
        out.push(figure(
            plots::score_histogram(
                &format!("plot-scores-{i}"),
                &format!("S_align of adjudicated calls: {}", label(r, nm)),
                approved,
                blocked,
                None,
            ),
            &format!(
                "{}: distribution of the adjudicator's alignment score S_align for approved and blocked calls (each group normalised to its own total).",
                label(r, nm)
            ),
        ));
    }
    out
}

/// The run's rows of AgentDojo's suites and the published rows beside them on one
/// security–utility plane: the run's with whiskers, the published as hollow diamonds.
fn beside_figure(rows: &[BesideRow]) -> Figure {
    let points: Vec<TradeoffPoint> = rows
        .iter()
        .filter_map(|r| {
            let reference = r.origin == Origin::Published;
            let label = if reference {
                format!("{} · {} ({})", r.defense, r.model, r.source)
            } else {
                format!("{} · {}", r.defense, r.model)
            };
            let (asr, ua) = (r.asr?, r.ua?);
            Some(TradeoffPoint {
                label,
                security: 1.0 - asr,
                security_ci: r
                    .asr_ci
                    .map_or([1.0 - asr; 2], |[lo, hi]| [1.0 - hi, 1.0 - lo]),
                utility: ua,
                utility_ci: r.ua_ci.unwrap_or([ua; 2]),
                link: Link {
                    suite: None,
                    attack: (!reference).then(|| r.attack.clone()),
                    defense: (!reference).then(|| r.defense.clone()),
                    model: (!reference).then(|| r.model.clone()),
                },
                reference,
            })
        })
        .collect();
    figure(
        plots::tradeoff_plot(
            "plot-reference",
            "Beside published AgentDojo results: 1 − ASR against UA",
            &points,
        ),
        "This run's rows of AgentDojo's suites (filled, with 95% whiskers) and the published figures of the same attack and defense (hollow diamonds, labelled with their source; never part of the Pareto front). Published rows with no UA or no ASR are in the reference table only.",
    )
}

fn has_sweeps(doc: &Document) -> bool {
    doc.per_defense
        .iter()
        .any(|r| super::tables::sweep_point(r).is_some())
}

/// The whole page.
pub fn render(doc: &Document) -> String {
    let mut body = String::new();
    writeln!(body, "<h1>sieve-bench report</h1>").unwrap();
    // The page-wide notes (a partial run, the simulated roles) once, here; each table
    // carries a badge linking back.
    if let Some(partial) = &doc.summary.partial {
        writeln!(body, "<p class=\"sim\">{}</p>", esc(partial)).unwrap();
    }
    if let Some(note) = &doc.summary.note {
        writeln!(body, "<p class=\"sim\" id=\"simulated\">{}</p>", esc(note)).unwrap();
    }
    let page_wide = |n: &String| {
        Some(n) == doc.summary.note.as_ref()
            || Some(n) == doc.summary.partial.as_ref()
            || Some(n) == doc.coverage_note.as_ref()
    };
    if !doc.searches.is_empty() {
        writeln!(
            body,
            "<p class=\"note\">Adaptive search folder(s): {}.</p>",
            doc.searches
                .iter()
                .map(|d| esc(&d.dir.display().to_string()))
                .collect::<Vec<_>>()
                .join(", ")
        )
        .unwrap();
    }
    // A page of search folders alone has no run and no episode to speak of.
    let from = if doc.runs.is_empty() {
        String::new()
    } else {
        format!(
            "{} episode(s) from {}; ",
            doc.summary.episodes,
            doc.runs
                .iter()
                .map(|d| esc(&d.display().to_string()))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    writeln!(
        body,
        "<p class=\"note\">{from}generated by {}. Click any table cell or figure mark to list its episodes (Esc closes the list). Each figure's SVG is also written on its own by `report --figures DIR`.</p>",
        esc(&doc.summary.generated_by)
    )
    .unwrap();
    if let Some(note) = &doc.coverage_note {
        // Said once above everything it concerns: the pooled tables and the figures.
        writeln!(body, "<p class=\"sim\" id=\"coverage\">{}</p>", esc(note)).unwrap();
    }
    body.push_str("<nav>");
    for g in &doc.tables {
        write!(body, "<a href=\"#{}\">{}</a> · ", esc(&g.id), esc(&g.title)).unwrap();
    }
    body.push_str("<a href=\"#figures\">Figures</a>");
    if has_sweeps(doc) {
        body.push_str(" · <a href=\"#sweep-curves\">Sweep curves</a>");
    }
    body.push_str("</nav>");
    body.push_str(&figures(doc));
    for g in &doc.tables {
        let prepare = |g: Grid| {
            let mut g = merge_roles(&g);
            g.notes.retain(|n| !page_wide(n));
            // Keys every row shares go above the table; cells still link with them.
            let hoisted = g.hoist_constant_keys();
            (g, hoisted)
        };
        let (shown, hoisted) = prepare(super::formats::essential(g));
        let (full, _) = prepare(super::formats::readable(g));
        body.push_str(&table(
            &shown,
            &hoisted,
            doc.summary.note.is_some(),
            Some(&full),
        ));
    }
    for f in &doc.summary.footnotes {
        writeln!(body, "<p class=\"foot\">{}</p>", esc(f)).unwrap();
    }
    let data = super::escape::json_in_html(
        &serde_json::to_string(&doc.episodes).expect("episodes serialise"),
    );
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>sieve-bench report</title><style>{STYLE}</style></head>\n<body><main>{body}</main><aside id=\"drill\"><h2>Episodes</h2><p class=\"note\">Click a table cell or a figure mark.</p></aside>\n<script type=\"application/json\" id=\"episodes\">{data}</script>\n<script>{SCRIPT}</script></body></html>\n"
    )
}
