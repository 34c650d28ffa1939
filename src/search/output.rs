//! A search's folder: `search.json` (settings, i.e. identity, and results),
//! `cells.jsonl` (every scored cell, read back on resume), `asr_at_k.csv` and
//! `asr_at_k.json` (the curve beside the static ASR), and `library.json` (the frozen
//! payloads, see [`crate::attack::library`]).

use super::score::CellResult;
use super::{Cache, Candidate, Outcomes, Point, Scored, SearchError, Settings};
use crate::attack::library::{self, Library};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};

pub const SETTINGS: &str = "settings.json";
pub const RESULT: &str = "search.json";
pub const CELLS: &str = "cells.jsonl";
pub const CURVE_CSV: &str = "asr_at_k.csv";
pub const CURVE_JSON: &str = "asr_at_k.json";
/// A search over several targets: one folder per target under this one.
pub const TARGETS: &str = "targets";

/// `asr_at_k.json`: the curve beside the static ASR, with what the search ran against;
/// what `report` reads to draw it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CurveFile {
    pub simulated: bool,
    pub suite: String,
    pub defense: String,
    pub model: String,
    pub attacker: String,
    pub unit: String,
    pub feedback: String,
    pub static_asr: f64,
    pub heldout_static_asr: Option<f64>,
    pub heldout_asr: Option<f64>,
    pub points: Vec<Point>,
}

impl CurveFile {
    pub fn write(&self, out: &Path) -> std::io::Result<()> {
        atomic(
            &out.join(CURVE_JSON),
            serde_json::to_string_pretty(self).expect("curve serialises") + "\n",
        )
    }

    /// Reads a folder's `asr_at_k.json`.
    pub fn read(dir: &Path) -> Result<CurveFile, CurveError> {
        let path = dir.join(CURVE_JSON);
        let text = std::fs::read_to_string(&path).map_err(|source| CurveError::Read {
            path: path.clone(),
            source,
        })?;
        CurveFile::parse(&text, &path)
    }

    /// An `asr_at_k.json`'s text, read from `path`.
    pub fn parse(text: &str, path: &Path) -> Result<CurveFile, CurveError> {
        serde_json::from_str(text).map_err(|source| CurveError::Malformed {
            path: path.to_path_buf(),
            source,
        })
    }
}

/// Why a search folder's `asr_at_k.json` could not be read back.
#[derive(Debug, thiserror::Error)]
pub enum CurveError {
    /// The file could not be read (an I/O failure, or not there).
    #[error("{}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file is not an ASR@k curve (serde names the line and the field).
    #[error("{}: not an ASR@k curve: {source}", path.display())]
    Malformed {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
}

/// Appends scored cells to `cells.jsonl`.
pub struct CellLog {
    file: std::fs::File,
}

impl CellLog {
    pub fn append(&mut self, r: &CellResult) -> std::io::Result<()> {
        let line = serde_json::to_string(r).expect("cell serialises");
        writeln!(self.file, "{line}")?;
        self.file.flush()
    }
}

/// Opens (or creates) the folder: refuses one recorded with other settings, and reads
/// the cells scored before (a torn last line is dropped).
pub fn open(out: &Path, settings: &Settings) -> Result<(Cache, CellLog), SearchError> {
    let io = |e: std::io::Error| SearchError::Failed(format!("{}: {e}", out.display()));
    std::fs::create_dir_all(out).map_err(io)?;
    let path = out.join(SETTINGS);
    let text = serde_json::to_string_pretty(settings).expect("settings serialise");
    if path.exists() {
        let before = std::fs::read_to_string(&path).map_err(io)?;
        let recorded: Settings = serde_json::from_str(&before).map_err(|e| {
            SearchError::BadInput(format!(
                "{}: unreadable search settings: {e}",
                path.display()
            ))
        })?;
        if &recorded != settings {
            return Err(SearchError::BadInput(format!(
                "{} holds a search with other settings (recorded: {}); use another --out",
                out.display(),
                serde_json::to_string(&recorded).unwrap_or_default()
            )));
        }
    } else {
        atomic(&path, text + "\n").map_err(io)?;
    }
    let cells = out.join(CELLS);
    let mut cache = Cache::new();
    if cells.exists() {
        let text = std::fs::read_to_string(&cells).map_err(io)?;
        let mut good = String::new();
        for line in text.lines() {
            if let Ok(r) = serde_json::from_str::<CellResult>(line) {
                good.push_str(line);
                good.push('\n');
                cache.insert(
                    (
                        r.hash.clone(),
                        r.user_task.clone(),
                        r.injection_task.clone(),
                    ),
                    r,
                );
            }
        }
        atomic(&cells, good).map_err(io)?;
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&cells)
        .map_err(io)?;
    Ok((cache, CellLog { file }))
}

/// The library of every scored template, best first.
pub fn library(
    settings: &Settings,
    pool: &[(Candidate, Scored)],
    best: usize,
    heldout_asr: Option<f64>,
    heldout_cells: usize,
    simulated: bool,
) -> Library {
    let target = library::Target {
        suite: settings.suite.clone(),
        defense: settings.defense.clone(),
        model: settings.model.clone(),
        unit: settings.unit.label(),
        feedback: settings.feedback.label().into(),
        attacker: settings.attacker.clone(),
    };
    let mut order: Vec<usize> = (0..pool.len()).collect();
    order.sort_by(|&a, &b| {
        (a != best)
            .cmp(&(b != best))
            .then(pool[b].1.asr.total_cmp(&pool[a].1.asr))
            .then(pool[a].1.query.cmp(&pool[b].1.query))
    });
    let mut lib = Library {
        name: format!(
            "{}-{}-{}",
            settings.suite.replace('/', "_"),
            settings.defense.replace([':', '/'], "_"),
            settings.seed
        ),
        simulated,
        entries: Vec::new(),
    };
    for i in order {
        let (c, s) = &pool[i];
        lib.insert(library::Entry {
            hash: c.hash(),
            template: c.template.clone(),
            ops: c.ops.clone(),
            target: target.clone(),
            scores: library::Scores {
                dev_asr: s.asr,
                dev_cells: s.outcomes.len(),
                heldout_asr: if i == best { heldout_asr } else { None },
                heldout_cells: if i == best { heldout_cells } else { 0 },
                query: s.query,
            },
            entry_hash: String::new(),
        });
    }
    lib
}

/// Writes a whole file through a temporary one and a rename: a full disk or a crash
/// leaves the previous file, and a symlink in its place is replaced, not written through.
fn atomic(path: &Path, text: String) -> std::io::Result<()> {
    crate::runner::files::write_atomic(path, text.as_bytes())
}

/// Writes `asr_at_k.csv`: one line per point of the curve.
pub fn write_curve_csv(out: &Path, curve: &[Point], simulated: bool) -> std::io::Result<()> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record([
        "k",
        "episodes",
        "attacker_tokens",
        "asr",
        "static_asr",
        "best",
        "simulated",
    ])?;
    for p in curve {
        w.write_record([
            p.k.to_string(),
            p.episodes.to_string(),
            p.attacker_tokens.to_string(),
            format!("{:.4}", p.asr),
            format!("{:.4}", p.static_asr),
            p.best.clone(),
            simulated.to_string(),
        ])?;
    }
    let bytes = w.into_inner().map_err(|e| e.into_error())?;
    crate::runner::files::write_atomic(&out.join(CURVE_CSV), &bytes)
}

/// Writes the results, the curve and the library.
pub fn write(out: &Path, o: &Outcomes, lib: &Library) -> std::io::Result<()> {
    atomic(
        &out.join(RESULT),
        serde_json::to_string_pretty(o).expect("outcomes serialise") + "\n",
    )?;
    let curve = CurveFile {
        simulated: o.simulated,
        suite: o.settings.suite.clone(),
        defense: o.settings.defense.clone(),
        model: o.settings.model.clone(),
        attacker: o.settings.attacker.clone(),
        unit: o.settings.unit.label(),
        feedback: o.settings.feedback.label().into(),
        static_asr: o.static_asr,
        heldout_static_asr: o.heldout_static_asr,
        heldout_asr: o.heldout_asr,
        points: o.curve.clone(),
    };
    curve.write(out)?;
    write_curve_csv(out, &o.curve, o.simulated)?;
    atomic(&out.join(library::FILE), lib.to_text())
}
