//! The HTML report in a real browser: headless Chromium loads the one-file page (no
//! network), runs its script, and the plots and the per-episode drill-down are there.
//! `.ci/run` installs Chromium from the distribution's packages and sets
//! SIEVE_BENCH_REQUIRE_TOOLS; elsewhere the tests skip when no browser is installed.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

fn chromium() -> Option<PathBuf> {
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        if let Ok(out) = Command::new("sh")
            .args(["-c", &format!("command -v {name}")])
            .output()
            && out.status.success()
        {
            return Some(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()));
        }
    }
    // Not found: skip, or fail where the browser is required.
    assert!(!tool_present("chromium"));
    None
}

/// The DOM after the page's script ran, at `url`.
fn dump_dom(browser: &Path, url: &str) -> String {
    dump_dom_at(browser, url, 1400)
}

/// [`dump_dom`] in a window `width` px wide.
fn dump_dom_at(browser: &Path, url: &str, width: u32) -> String {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--virtual-time-budget=5000",
        ])
        .arg(format!("--window-size={width},900"))
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("--dump-dom")
        .arg(url)
        .output()
        .expect("chromium runs");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn html_report_has_plots_and_a_drill_down_in_a_real_browser() {
    let Some(browser) = chromium() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("r");
    bench(tmp.path())
        .args(["run", "--suite", "banking,slack", "--attack", "important"])
        .args(["--defense", "none,sieve", "--quiet"])
        .args(["--user-tasks", "user_task_0,user_task_1"])
        .args(["--injection-tasks", "injection_task_0,injection_task_1"])
        .arg("--out")
        .arg(&run)
        .assert()
        .success();
    let page = tmp.path().join("report.html");
    bench(tmp.path())
        .args(["report", "--format", "html", "--out"])
        .arg(&page)
        .arg(&run)
        .assert()
        .success();
    let html = std::fs::read_to_string(&page).unwrap();
    // One file: nothing to fetch.
    for external in ["src=\"http", "href=\"http", "<link ", "@import"] {
        assert!(!html.contains(external), "page loads {external}");
    }
    let url = format!("file://{}", page.display());
    let dom = dump_dom(&browser, &url);
    for id in [
        "plot-tradeoff",
        "plot-cost",
        "plot-heatmap",
        "plot-escalation",
        "plot-scores-",
    ] {
        assert!(
            dom.contains(&format!("id=\"{id}")),
            "no {id} in the rendered page"
        );
    }
    assert!(dom.contains("class=\"pareto\"") || dom.contains("class=\"front\""));
    // The script ran over the embedded episodes.
    let n: usize = dom
        .split("data-episodes=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .and_then(|s| s.parse().ok())
        .expect("the page's script ran");
    assert!(n > 0, "no episode embedded for the drill-down");
    // Clicking a table cell (the page's self-test clicks the first) lists its episodes
    // with their messages and the defense's decisions.
    let dom = dump_dom(&browser, &format!("{url}#selftest"));
    let drill = dom.split("id=\"drill\"").nth(1).expect("drill panel");
    assert!(drill.contains("Episodes: "), "drill-down not opened");
    assert!(
        drill.contains("class=\"ep\""),
        "no episode in the drill-down"
    );
    assert!(
        drill.contains("class=\"msg "),
        "no messages in the drill-down"
    );
    assert!(
        drill.contains("Decisions"),
        "no decisions in the drill-down"
    );
}

/// A page rendered from a run whose names and traces carry markup, comment and script
/// openers: nothing of theirs runs, and the page's own script still shows the episodes.
#[test]
fn hostile_names_and_traces_stay_text_in_a_real_browser() {
    let tmp = tempfile::tempdir().unwrap();
    let run = hostile_run(tmp.path());
    let page = tmp.path().join("report.html");
    bench(tmp.path())
        .args(["report", "--format", "html", "--out"])
        .arg(&page)
        .arg(&run)
        .assert()
        .success();
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(!html.contains("<!--"), "a comment opener reached the page");
    assert!(!html.contains("<img"), "a tag of the text reached the page");
    assert_eq!(
        html.matches("<script").count(),
        2,
        "the page's two scripts only"
    );
    assert_eq!(html.matches("</script").count(), 2);
    let Some(browser) = chromium() else {
        return;
    };
    let dom = dump_dom(&browser, &format!("file://{}#selftest", page.display()));
    assert!(!dom.contains("data-pwned"), "text of the run executed");
    let drill = dom.split("id=\"drill\"").nth(1).expect("drill panel");
    assert!(
        drill.contains("class=\"ep\""),
        "the drill-down shows nothing"
    );
    assert!(
        drill.contains("&lt;!--&lt;script&gt;"),
        "the trace shows as text"
    );
}

/// What a reader sees, measured in the browser by a script appended to a copy of the
/// page: per table outside a disclosure, its box and content widths; per header, the
/// words broken across lines (a break after a hyphen, "No-|op", is where a hyphenated
/// word breaks, not inside a word); per figure, its
/// axis titles; every pair of text elements of one figure whose boxes intersect.
const MEASURE: &str = r#"<script>(function(){
const out={viewport:innerWidth,page:document.documentElement.scrollWidth,tables:[],figures:[],overlaps:[]};
for(const w of document.querySelectorAll('main .tablewrap')){if(w.closest('details'))continue;
 let h=w.previousElementSibling;while(h&&h.tagName!=='H2')h=h.previousElementSibling;
 out.tables.push({id:h?h.id:'',content:w.scrollWidth,box:w.clientWidth,right:w.getBoundingClientRect().right});}
out.broken=[];out.clipped=[];
for(const th of document.querySelectorAll('main th')){if(th.closest('details'))continue;
 const w=document.createTreeWalker(th,NodeFilter.SHOW_TEXT);let n;
 while((n=w.nextNode())){const re=/[^\s-]+-?/g;let m;while((m=re.exec(n.data))){
  const r=document.createRange();r.setStart(n,m.index);r.setEnd(n,m.index+m[0].length);
  const lines=new Set([...r.getClientRects()].map(x=>Math.round(x.top)));
  if(lines.size>1)out.broken.push(th.textContent+' ('+m[0]+')');}}}
for(const svg of document.querySelectorAll('svg.plot')){
 const box=svg.getBoundingClientRect();const holder=svg.parentElement.getBoundingClientRect();
 if(box.right>holder.right+0.5||box.right>innerWidth+0.5)out.clipped.push(svg.id+': the figure is wider than its box');
 for(const t of svg.querySelectorAll('text')){const r=t.getBoundingClientRect();if(!t.textContent.trim())continue;
  if(r.left<box.left-0.5||r.right>box.right+0.5||r.top<box.top-0.5||r.bottom>box.bottom+0.5)out.clipped.push(svg.id+': '+t.textContent);}
 const texts=[...svg.querySelectorAll('text')].filter(t=>t.textContent.trim()).map(t=>({s:t.textContent,r:t.getBoundingClientRect()}));
 const titles=c=>[...svg.querySelectorAll('text.axis-label.'+c)].filter(t=>t.textContent.trim()).length;
 out.figures.push({id:svg.id,x:titles('x'),y:titles('y')});
 for(let i=0;i<texts.length;i++)for(let j=i+1;j<texts.length;j++){const a=texts[i].r,b=texts[j].r;
  if(a.left<b.right-0.5&&b.left<a.right-0.5&&a.top<b.bottom-0.5&&b.top<a.bottom-0.5)out.overlaps.push(svg.id+': '+texts[i].s+' / '+texts[j].s);}}
document.body.setAttribute('data-measured',JSON.stringify(out));})();</script>"#;

/// The page measured by [`MEASURE`] in a window `width` px wide.
fn measure(browser: &Path, page: &Path, width: u32) -> serde_json::Value {
    let html = std::fs::read_to_string(page).unwrap();
    let copy = page.with_extension("measured.html");
    std::fs::write(&copy, html.replace("</body>", &format!("{MEASURE}</body>"))).unwrap();
    let dom = dump_dom_at(browser, &format!("file://{}", copy.display()), width);
    let raw = dom
        .split("data-measured=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .expect("the measuring script ran");
    let raw = raw
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    serde_json::from_str(&raw).unwrap()
}

/// Every figure has both axis titles and no two labels overlap; at 1400 px and at a
/// narrow 900 px no table is wider than its box and the page never scrolls sideways.
fn assert_readable(browser: &Path, page: &Path) -> Vec<String> {
    let mut ids = Vec::new();
    for width in [1400, 900] {
        let m = measure(browser, page, width);
        let viewport = m["viewport"].as_f64().unwrap();
        assert!(
            m["page"].as_f64().unwrap() <= viewport,
            "the page is wider than the {width} px window: {m}"
        );
        let tables = m["tables"].as_array().unwrap();
        assert!(!tables.is_empty(), "no table measured");
        for t in tables {
            assert!(
                t["content"].as_f64().unwrap() <= t["box"].as_f64().unwrap() + 1.0
                    && t["right"].as_f64().unwrap() <= viewport,
                "table {} is wider than the page at {width} px: {t}",
                t["id"]
            );
        }
        ids.clear();
        for f in m["figures"].as_array().unwrap() {
            assert!(
                f["x"].as_u64() == Some(1) && f["y"].as_u64() == Some(1),
                "figure {} lacks an axis title: {f}",
                f["id"]
            );
            ids.push(f["id"].as_str().unwrap().to_string());
        }
        let broken = m["broken"].as_array().unwrap();
        assert!(
            broken.is_empty(),
            "headers broken inside a word at {width} px: {broken:?}"
        );
        let clipped = m["clipped"].as_array().unwrap();
        assert!(
            clipped.is_empty(),
            "figure labels cut off at {width} px: {clipped:?}"
        );
        let overlaps = m["overlaps"].as_array().unwrap();
        assert!(
            overlaps.is_empty(),
            "overlapping labels at {width} px: {overlaps:?}"
        );
    }
    ids
}

/// Each figure written by `report --figures` is a standalone SVG file of the page's
/// figure (checked by structure here, by the browser's XML parser when one is present).
fn assert_figure_files(dir: &Path, html: &str) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for part in html.split("<svg id=\"").skip(1) {
        let id = part.split('"').next().unwrap();
        let file = dir.join(format!("{id}.svg"));
        let svg =
            std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("no {}: {e}", file.display()));
        assert!(svg.starts_with("<?xml"), "{id}.svg has no XML declaration");
        assert!(
            svg.contains("xmlns=\"http://www.w3.org/2000/svg\""),
            "{id}.svg has no SVG namespace"
        );
        assert_eq!(svg.matches("<svg").count(), 1, "{id}.svg holds one figure");
        files.push(file);
    }
    assert!(!files.is_empty(), "no figure in the page");
    assert_eq!(
        std::fs::read_dir(dir).unwrap().count(),
        files.len(),
        "one file per figure of the page"
    );
    files
}

/// A report of 24 defenses (every registered defense and their variants) under three
/// attacks on three suites, as a reader sees it: tables fit the page at 1400 px and at
/// 900 px, every figure titles both axes, no labels overlap (the trade-off plot places
/// its 24 labels), the banner is shown once with a badge on each table, and each
/// figure is written on its own as SVG.
#[test]
fn a_report_of_24_defenses_reads_in_a_real_browser() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("r");
    let defenses = "all,spotlight:tagged,spotlight:datamark,spotlight:base64,sandwich:reminder,pi_detector:judge,sieve:no-sem,sieve:layer1-only,sieve@threshold=0.3,sieve@threshold=0.7,melon:threshold=0.5";
    bench(tmp.path())
        .args(["run", "--suite", "banking,slack,travel"])
        .args(["--attack", "important,tools,ignore", "--defense", defenses])
        .args(["--user-tasks", "user_task_0,user_task_1"])
        .args(["--injection-tasks", "injection_task_0", "--quiet", "--out"])
        .arg(&run)
        .assert()
        .success();
    let page = tmp.path().join("report.html");
    let figures = tmp.path().join("figures");
    bench(tmp.path())
        .args(["report", "--format", "html", "--out"])
        .arg(&page)
        .arg("--figures")
        .arg(&figures)
        .arg(&run)
        .assert()
        .success();
    let html = std::fs::read_to_string(&page).unwrap();
    let summary = summary(&run);
    let defenses: std::collections::BTreeSet<&str> = summary["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["defense"].as_str())
        .collect();
    assert_eq!(defenses.len(), 24, "{defenses:?}");
    // The banner once; a badge on each table pointing at it.
    assert_eq!(html.matches("SIMULATED: ").count(), 1, "banner repeated");
    assert_eq!(
        html.matches("class=\"badge\" href=\"#simulated\"").count(),
        html.matches("<div class=\"tablewrap\">").count()
            - html.matches("<details class=\"more\">").count()
    );
    let tradeoff = html
        .split("<svg id=\"plot-tradeoff\"")
        .nth(1)
        .and_then(|s| s.split("</svg>").next())
        .unwrap();
    assert_eq!(tradeoff.matches("class=\"label\"").count(), 24);
    let files = assert_figure_files(&figures, &html);
    let Some(browser) = chromium() else {
        return;
    };
    let ids = assert_readable(&browser, &page);
    for id in [
        "plot-tradeoff",
        "plot-cost",
        "plot-heatmap",
        "plot-escalation",
    ] {
        assert!(ids.iter().any(|i| i == id), "no {id} measured: {ids:?}");
    }
    // A figure's file opens on its own: the browser parses it as SVG.
    let dom = dump_dom(&browser, &format!("file://{}", files[0].display()));
    assert!(
        dom.contains("<svg") && !dom.contains("parsererror"),
        "{dom}"
    );
}

/// An `ablate --sweep` run's report draws its curves under their own anchor, linked
/// from the navigation, with no id used twice.
#[test]
fn a_sweep_draws_its_curves_in_a_real_browser() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("ab");
    bench(tmp.path())
        .args(["ablate", "--suite", "banking", "--attack", "important"])
        .args(["--sweep", "threshold=0.3:0.7:0.2"])
        .args(["--user-tasks", "user_task_0,user_task_1"])
        .args(["--injection-tasks", "injection_task_0,injection_task_1"])
        .args(["--quiet", "--out"])
        .arg(&run)
        .assert()
        .success();
    // The sweep's points are rows of their own, and its curve is written as text too.
    let table: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("ablation.json")).unwrap()).unwrap();
    assert!(
        table["rows"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["defense"] == "sieve@threshold=0.5"),
        "no row for the sweep point 0.5"
    );
    let sweep = std::fs::read_to_string(run.join("sweep.md")).unwrap();
    assert!(sweep.contains("As threshold rises, ASR"), "{sweep}");
    assert!(run.join("sweep.csv").is_file() && run.join("summary.json").is_file());
    let page = tmp.path().join("report.html");
    let figures = tmp.path().join("figures");
    bench(tmp.path())
        .args(["report", "--format", "html", "--out"])
        .arg(&page)
        .arg("--figures")
        .arg(&figures)
        .arg(&run)
        .assert()
        .success();
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<a href=\"#sweep-curves\">"), "no nav link");
    assert!(!html.contains("these runs hold none"));
    assert_figure_files(&figures, &html);
    let Some(browser) = chromium() else {
        return;
    };
    let ids = assert_readable(&browser, &page);
    assert!(ids.iter().any(|i| i == "plot-sweep-0"), "{ids:?}");
    let dom = dump_dom(&browser, &format!("file://{}", page.display()));
    let curves = dom
        .split("<h2 id=\"sweep-curves\">")
        .nth(1)
        .expect("the sweep curves' own section");
    let svg = curves
        .split("<svg id=\"plot-sweep-0\"")
        .nth(1)
        .and_then(|s| s.split("</svg>").next())
        .expect("the threshold's curves");
    // ASR, UA and BU, each a line through the three swept values.
    let lines: Vec<&str> = svg
        .split("class=\"curve\" points=\"")
        .skip(1)
        .map(|s| s.split('"').next().unwrap())
        .collect();
    assert_eq!(lines.len(), 3, "{svg}");
    for l in lines {
        assert_eq!(l.split(' ').count(), 3, "{l}");
    }
    for tick in [">0.3<", ">0.5<", ">0.7<"] {
        assert!(svg.contains(tick), "no tick {tick}");
    }
    let mut seen = std::collections::BTreeSet::new();
    for id in dom
        .split(" id=\"")
        .skip(1)
        .map(|s| s.split('"').next().unwrap())
    {
        assert!(seen.insert(id), "id {id} used twice");
    }
}

/// Runs of unequal coverage in one report (a banking-only run of one defense beside a
/// two-suite run of two), as a reader sees it at 900 and 1400 px: the pooled tables and
/// figures say they pooled only the shared suite, no row of the banking-only defense is
/// labelled `all`, no header breaks inside a word, no figure label is cut off.
#[test]
fn a_report_of_runs_of_unequal_coverage_reads_in_a_real_browser() {
    let tmp = tempfile::tempdir().unwrap();
    let (wide, narrow) = (tmp.path().join("wide"), tmp.path().join("narrow"));
    run(
        tmp.path(),
        &wide,
        &[
            "--suite",
            "banking,slack",
            "--attack",
            "important",
            "--defense",
            "none,sieve",
            "--user-tasks",
            "user_task_0,user_task_1",
        ],
    );
    run(
        tmp.path(),
        &narrow,
        &[
            "--suite",
            "banking",
            "--attack",
            "important",
            "--defense",
            "audit",
            "--user-tasks",
            "user_task_0,user_task_1",
        ],
    );
    let json = bench(tmp.path())
        .args(["report", "--format", "json"])
        .arg(&wide)
        .arg(&narrow)
        .assert()
        .success();
    let doc: serde_json::Value = serde_json::from_slice(&json.get_output().stdout).unwrap();
    let tables = doc["tables"].as_array().unwrap();
    let table = |id: &str| {
        tables
            .iter()
            .find(|t| t["id"] == id)
            .unwrap_or_else(|| panic!("no {id} table"))
    };
    for row in table("summary")["rows"].as_array().unwrap() {
        assert!(
            !(row["defense"] == "audit" && row["suite"] == "all"),
            "a banking-only row labelled all: {row}"
        );
    }
    let notes = table("main")["notes"].to_string();
    assert!(
        notes.contains("UNEQUAL COVERAGE") && notes.contains("every row ran (dojo-style/banking)"),
        "{notes}"
    );
    // The main table's `none` row pools banking only, as the audit row does.
    let summary = summary(&wide);
    let banking_none_asr = rows(&summary)
        .iter()
        .find(|r| {
            r["suite"] == "dojo-style/banking"
                && r["defense"] == "none"
                && r["attack"] == "important_instructions"
        })
        .map(|r| r["asr"].clone())
        .unwrap();
    let main_none = table("main")["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["defense"] == "none")
        .unwrap()
        .clone();
    assert_eq!(
        main_none["asr_important_instructions"], banking_none_asr,
        "{main_none}"
    );
    let page = tmp.path().join("report.html");
    bench(tmp.path())
        .args(["report", "--format", "html", "--out"])
        .arg(&page)
        .arg(&wide)
        .arg(&narrow)
        .assert()
        .success();
    let html = std::fs::read_to_string(&page).unwrap();
    assert_eq!(html.matches("id=\"coverage\"").count(), 1, "the note once");
    let Some(browser) = chromium() else {
        return;
    };
    assert_readable(&browser, &page);
}

/// A report of a search folder alone says nothing of runs it has not got, and draws
/// ASR@k as the step it is (the best so far holds between queries).
#[test]
fn a_search_page_draws_a_step_and_names_no_empty_run() {
    let tmp = tempfile::tempdir().unwrap();
    let search = tmp.path().join("s");
    bench(tmp.path())
        .args([
            "attack",
            "search",
            "--suite",
            "banking",
            "--defense",
            "keyword_filter",
        ])
        .args([
            "--user-tasks",
            "user_task_0,user_task_1,user_task_2,user_task_3",
        ])
        .arg("--out")
        .arg(&search)
        .assert()
        .success();
    let page = tmp.path().join("search.html");
    bench(tmp.path())
        .args(["report", "--format", "html", "--out"])
        .arg(&page)
        .arg(&search)
        .assert()
        .success();
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(!html.contains("episode(s) from ;"), "an empty run list");
    assert!(!html.contains("0 episode(s)"), "episodes of no run");
    let curve = html
        .split("<polyline class=\"curve\" points=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .expect("the ASR@k curve");
    let points: Vec<(f64, f64)> = curve
        .split(' ')
        .map(|p| {
            let (x, y) = p.split_once(',').unwrap();
            (x.parse().unwrap(), y.parse().unwrap())
        })
        .collect();
    // A step: every segment is level or upright, never a slope.
    for w in points.windows(2) {
        assert!(
            (w[0].0 - w[1].0).abs() < 0.05 || (w[0].1 - w[1].1).abs() < 0.05,
            "a sloped segment {w:?} in {curve}"
        );
    }
    let Some(browser) = chromium() else {
        return;
    };
    let dom = dump_dom(&browser, &format!("file://{}", page.display()));
    assert!(dom.contains("plot-asr-at-k-0"), "no ASR@k figure");
}
