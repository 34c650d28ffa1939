//! The HTML report in a real browser: headless Chromium loads the one-file page (no
//! network), runs its script, and the plots and the per-episode drill-down are there.
//! `.ci/run` installs Chromium from the distribution's packages and sets
//! SIEVE_BENCH_REQUIRE_TOOLS; elsewhere the tests skip when no browser is installed.

mod common;
use common::*;
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
