//! The main table splits each attack's headline from its provenance-bypass tasks, as the
//! summary does, in every format `report` writes.

use crate::common::*;
use serde_json::Value;
use std::path::Path;

const HEADLINE: &str = "important_instructions";
const BYPASS: &str = "important_instructions+provenance_bypass";

fn report(out: &Path, format: &str, tables: &str) -> String {
    let o = bench(out)
        .args(["report"])
        .arg(out)
        .args(["--tables", tables, "--format", format])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

fn table<'a>(doc: &'a Value, id: &str) -> &'a Value {
    doc["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == id)
        .unwrap_or_else(|| panic!("no {id} table"))
}

#[test]
fn main_table_splits_headline_and_bypass_columns_in_every_format() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    run(
        tmp.path(),
        &out,
        &[
            "--suite",
            "banking,slack",
            "--attack",
            "important",
            "--defense",
            "none,sieve",
        ],
    );
    let doc: Value = serde_json::from_str(&report(&out, "json", "main,summary")).unwrap();
    let summary = table(&doc, "summary")["rows"].as_array().unwrap();
    let main = table(&doc, "main")["rows"].as_array().unwrap();
    assert_eq!(main.len(), 2);
    let mut shown = Vec::new();
    for m in main {
        let defense = m["defense"].as_str().unwrap();
        for attack in [HEADLINE, BYPASS] {
            // Every suite pooled: the summary's `all` row of the same attack label.
            let want = summary
                .iter()
                .find(|r| r["suite"] == "all" && r["attack"] == attack && r["defense"] == defense)
                .unwrap_or_else(|| panic!("summary row all/{attack}/{defense}"));
            for f in ["asr", "ua"] {
                let got = &m[format!("{f}_{attack}")];
                assert!(got.is_number(), "{defense} {f}_{attack} is shown: {m}");
                let (g, w) = (got.as_f64().unwrap(), want[f].as_f64().unwrap());
                assert!((g - w).abs() < 1e-9, "{defense} {f}_{attack}: {g} vs {w}");
            }
            shown.push(m[format!("asr_{attack}")].as_f64().unwrap());
        }
    }
    // sieve's two ASRs differ here, so a pooled headline would show.
    let sieve = main.iter().find(|m| m["defense"] == "sieve").unwrap();
    let (h, b) = (
        sieve[format!("asr_{HEADLINE}")].as_f64().unwrap(),
        sieve[format!("asr_{BYPASS}")].as_f64().unwrap(),
    );
    assert!((h - b).abs() > 1e-6, "headline {h} and bypass {b} differ");

    // CSV: the same fractions under the same field names.
    let csv = report(&out, "csv", "main");
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |id: String| header.iter().position(|h| *h == id).unwrap();
    let sieve_line = lines.find(|l| l.starts_with("sieve,")).unwrap();
    // The model field is quoted and holds commas: count fields from the end.
    let fields: Vec<&str> = sieve_line.rsplitn(header.len() - 1, ',').collect();
    let field = |i: usize| -> f64 { fields[header.len() - 1 - i].parse().unwrap() };
    assert!((field(col(format!("asr_{HEADLINE}"))) - h).abs() < 1e-9);
    assert!((field(col(format!("asr_{BYPASS}"))) - b).abs() < 1e-9);

    // Every other format shows both columns with their figures.
    let pct = |x: f64| format!("{:.1}", x * 100.0);
    for format in ["table", "md", "latex", "html"] {
        let text = report(&out, format, "main");
        // Long headers break into lines (LaTeX) or at underscores (HTML): read them whole.
        let titled = match format {
            "table" => text.contains("ii+pb ASR %") && text.contains("ii ASR %"),
            // The terminal's short names, in headers set in lines between their words
            // (read with the line breaks and spaces taken out), and the legend under the
            // table spelling them out.
            "latex" => {
                let squeezed = |t: &str| {
                    t.replace("\\allowbreak{}", "")
                        .replace("\\\\", "")
                        .replace(['\n', ' '], "")
                };
                let plain = squeezed(&text);
                plain.contains(&squeezed("ii+pb ASR \\%"))
                    && plain.contains(&squeezed("ii ASR \\%"))
                    && plain.contains(&squeezed(
                        "ii+pb = important\\_instructions+provenance\\_bypass",
                    ))
            }
            "html" => text
                .replace("<wbr>", "")
                .contains(&format!("{BYPASS} ASR %")),
            _ => text.contains(&format!("{BYPASS} ASR %")),
        };
        assert!(titled, "{format} names the bypass column:\n{text}");
        for x in &shown {
            assert!(
                text.contains(&pct(*x)),
                "{format} shows {}:\n{text}",
                pct(*x)
            );
        }
    }
}
