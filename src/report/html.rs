//! The self-contained HTML report: one file with the tables, SVG figures and a
//! per-episode drill-down (messages, calls, decisions, why) opened from any table cell
//! or figure mark. Nothing is fetched from the network: styles, script and data are
//! inline.

use super::Document;
use super::columns::{Grid, Show};
use super::plots::{self, Bar, Link, TradeoffPoint, esc};
use super::published::{BesideRow, Origin};
use crate::aggregate::metrics::Row;
use std::fmt::Write;

const STYLE: &str = r#"
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#222;display:flex}
main{flex:1;padding:16px 28px;min-width:0}
aside#drill{width:40%;max-width:720px;height:100vh;overflow:auto;position:sticky;top:0;border-left:1px solid #ccc;padding:12px 16px;background:#fafafa;box-sizing:border-box}
h1{font-size:22px;margin:4px 0 8px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ddd}
.note{color:#555;margin:2px 0}.sim{background:#fff3cd;border:1px solid #e0c36a;padding:6px 10px;border-radius:4px}
table{border-collapse:collapse;margin:6px 0 4px;font-variant-numeric:tabular-nums}
th,td{padding:3px 8px;border-bottom:1px solid #e5e5e5;white-space:nowrap}th{background:#f2f2f2;text-align:left}
td.num{text-align:right}td.best{font-weight:700;background:#e8f5e9}
td.drill,.drill{cursor:pointer}td.drill:hover{background:#e3f2fd}
.plots{display:flex;flex-wrap:wrap;gap:18px}.plots figure{margin:0}.plots figcaption{font-size:12px;color:#555;max-width:560px}
g.drill:hover circle.point,g.drill:hover rect{stroke:#000;stroke-width:1.5}
.ep{border:1px solid #ddd;border-radius:4px;margin:6px 0;background:#fff}.ep summary{padding:4px 8px;cursor:pointer}
.ep .body{padding:4px 10px}.msg{border-left:3px solid #bbb;margin:4px 0;padding:2px 8px;white-space:pre-wrap;font:12px/1.35 ui-monospace,monospace}
.msg.system{border-color:#999}.msg.user{border-color:#0072B2}.msg.assistant{border-color:#009E73}.msg.tool{border-color:#E69F00}
.tag{display:inline-block;padding:0 6px;border-radius:8px;font-size:11px;color:#fff}
.tag.attacked{background:#D55E00}.tag.defended{background:#009E73}.tag.clean{background:#0072B2}.tag.error{background:#555}
.foot{color:#555;font-size:12px}
"#;

/// Shows the episodes of the cell an element names (its `data-*` attributes; a missing
/// attribute or `all` matches any), each expandable to its trace and decisions.
const SCRIPT: &str = r#"
const EPISODES = JSON.parse(document.getElementById('episodes').textContent);
function el(tag, cls, text){const e=document.createElement(tag);if(cls)e.className=cls;if(text!==undefined)e.textContent=text;return e;}
function matches(ep, f){for(const k of ['suite','attack','defense','model']){const v=f[k];if(v&&v!=='all'&&ep[k]!==v)return false;}return true;}
function showCell(f){
  const panel=document.getElementById('drill');panel.innerHTML='';
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
document.body.dataset.episodes=String(EPISODES.length);
if(location.hash==='#selftest'){const c=document.querySelector('td.drill');if(c)c.click();}
"#;

fn key_value(grid: &Grid, row: usize, id: &str) -> Option<String> {
    grid.column(id).map(|c| grid.rows[row][c].display(false))
}

/// A grid as an HTML table whose cells open their drill-down.
fn table(grid: &Grid, notes_keys: &[(String, String)]) -> String {
    let mut s = String::new();
    writeln!(s, "<h2 id=\"{}\">{}</h2>", esc(&grid.id), esc(&grid.title)).unwrap();
    for n in &grid.notes {
        writeln!(s, "<p class=\"note\">{}</p>", esc(n)).unwrap();
    }
    s.push_str("<table><thead><tr>");
    for c in &grid.columns {
        write!(s, "<th title=\"{}\">{}</th>", esc(&c.doc), esc(&c.title)).unwrap();
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
                    .find(|(k, _)| k == id)
                    .map(|(_, v)| v.clone())
            });
        }
        let attrs = link.attrs().replace(" class=\"drill\"", "");
        s.push_str("<tr>");
        for (c, v) in row.iter().enumerate() {
            let mut class = vec!["drill"];
            if grid.columns[c].show != Show::Key {
                class.push("num");
            }
            if grid.is_best(r, c) {
                class.push("best");
            }
            write!(
                s,
                "<td class=\"{}\"{attrs}>{}</td>",
                class.join(" "),
                esc(&v.display(true))
            )
            .unwrap();
        }
        s.push_str("</tr>");
    }
    s.push_str("</tbody></table>");
    for f in &grid.footnotes {
        writeln!(s, "<p class=\"foot\">{}</p>", esc(f)).unwrap();
    }
    s
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

fn figure(svg: String, caption: &str) -> String {
    format!(
        "<figure>{svg}<figcaption>{}</figcaption></figure>",
        esc(caption)
    )
}

/// The figures: trade-off, token cost by role, suite × defense heat map, escalation
/// rates and SIEVE's alignment scores.
fn figures(doc: &Document) -> String {
    let mut models: Vec<&String> = doc.per_defense.iter().map(|r| &r.model).collect();
    models.dedup();
    let nm = models.len();
    let mut out = String::from("<h2 id=\"figures\">Figures</h2><div class=\"plots\">");
    out.push_str(&tradeoff_figure(&doc.per_defense, nm));
    out.push_str(&cost_figure(&doc.per_defense, nm));
    out.push_str(&heatmap_figure(doc, nm));
    out.push_str(&escalation_figure(&doc.per_defense, nm));
    out.push_str(&score_figures(doc, nm));
    if let Some(beside) = &doc.beside {
        out.push_str(&beside_figure(beside));
    }
    out.push_str("</div>");
    // The sweep table owns the `sweeps` anchor; this note has its own.
    if !doc.tables.iter().any(|g| g.id == "sweeps") {
        out.push_str("<p class=\"note\" id=\"sweep-curves\">Sweep curves appear when the runs hold a sweep of a threshold or weight; these runs hold none.</p>");
    }
    out
}

/// Security against utility under attack, one point per defense.
fn tradeoff_figure(per_defense: &[Row], nm: usize) -> String {
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
fn cost_figure(per_defense: &[Row], nm: usize) -> String {
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
        ),
        "Tokens per episode by role (agent, planner, judge, detector, embedding), clean and attacked episodes together.",
    )
}

/// ASR per suite and defense.
fn heatmap_figure(doc: &Document, nm: usize) -> String {
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
    let cols: Vec<&Row> = doc.per_defense.iter().collect();
    let col_names: Vec<String> = cols.iter().map(|r| label(r, nm)).collect();
    figure(
        plots::heatmap(
            "plot-heatmap",
            "ASR by suite and defense",
            &suites,
            &col_names,
            |r, c| {
                doc.per_suite
                    .iter()
                    .find(|x| {
                        x.suite == suites[r]
                            && x.defense == cols[c].defense
                            && x.model == cols[c].model
                    })
                    .and_then(|x| x.asr)
            },
            |r, c| Link {
                suite: Some(suites[r].clone()),
                attack: None,
                defense: Some(cols[c].defense.clone()),
                model: Some(cols[c].model.clone()),
            },
        ),
        "ASR (%) per suite and defense, attacks pooled. Click a cell for its episodes.",
    )
}

/// The share of proposed calls each defense sent to a judge.
fn escalation_figure(per_defense: &[Row], nm: usize) -> String {
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
        ),
        "Share of proposed tool calls sent to a semantic judge.",
    )
}

/// One histogram of S_align per defense that adjudicated calls.
fn score_figures(doc: &Document, nm: usize) -> String {
    let mut out = String::new();
    for (i, ((approved, blocked), r)) in doc.scores.iter().zip(&doc.per_defense).enumerate() {
        let a: u64 = approved.iter().sum();
        let b: u64 = blocked.iter().sum();
        if a + b == 0 {
            continue;
        }
        out.push_str(&figure(
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
fn beside_figure(rows: &[BesideRow]) -> String {
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

/// The whole page.
pub fn render(doc: &Document) -> String {
    let mut body = String::new();
    writeln!(body, "<h1>sieve-bench report</h1>").unwrap();
    for note in doc.summary.partial.iter().chain(&doc.summary.note) {
        writeln!(body, "<p class=\"sim\">{}</p>", esc(note)).unwrap();
    }
    writeln!(
        body,
        "<p class=\"note\">{} episode(s) from {}; {}. Click any table cell or figure mark to list its episodes on the right.</p>",
        doc.summary.episodes,
        doc.runs.iter().map(|d| esc(&d.display().to_string())).collect::<Vec<_>>().join(", "),
        esc(&doc.summary.generated_by)
    )
    .unwrap();
    body.push_str("<nav>");
    for g in &doc.tables {
        write!(body, "<a href=\"#{}\">{}</a> · ", esc(&g.id), esc(&g.title)).unwrap();
    }
    body.push_str("<a href=\"#figures\">Figures</a></nav>");
    body.push_str(&figures(doc));
    for g in &doc.tables {
        let mut shown = super::formats::readable(g);
        // Keys every row shares go above the table; cells still link with them.
        let before = shown.notes.len();
        shown.hoist_constant_keys();
        let hoisted: Vec<(String, String)> = shown.notes[before..]
            .iter()
            .filter_map(|n| n.split_once(": "))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        body.push_str(&table(&shown, &hoisted));
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
