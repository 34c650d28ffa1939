//! The frozen payload library: every template an adaptive search scored, stored by
//! content (the SHA-256 of its text), with the operators or prompt that produced it, the
//! target it was found against and its scores. `--attack library:<file or folder>`
//! replays a library's entries as ordinary templates at no search cost; `attack
//! transfer` scores them against other defenses.
//!
//! File: `library.json` in a search's output folder (`{"name", "simulated", "entries":
//! [...]}`); an entry's attack name is `lib-<hash>`, so a replay's records say which
//! payload ran and its fingerprint is the template's, as for any template.

use super::{Attack, AttackError, mutate};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The file a search writes its library to.
pub const FILE: &str = "library.json";

/// The prefix of `--attack library:<path>`.
pub const PREFIX: &str = "library:";

/// What a payload was found against.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Target {
    pub suite: String,
    pub defense: String,
    pub model: String,
    /// The optimisation unit (`pair:..`, `vector:..`, `universal`).
    pub unit: String,
    /// The feedback tier (`binary`, `diagnosis`, `white-box`).
    pub feedback: String,
    /// The attacker (`sim-attacker`, or `openai:<model>`).
    pub attacker: String,
}

/// A payload's scores on the search's cells.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Scores {
    /// Success rate on the development cells (all cells for `pair` and `vector`).
    pub dev_asr: f64,
    pub dev_cells: usize,
    /// Success rate on the held-out cells (`universal` only, for the best payloads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heldout_asr: Option<f64>,
    #[serde(default)]
    pub heldout_cells: usize,
    /// The attacker query (0 for the seeds) that proposed it.
    pub query: usize,
}

/// One frozen payload.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// [`mutate::hash_text`] of the template.
    pub hash: String,
    pub template: String,
    /// Operators applied, oldest first; `seed:<attack>` for a stock template, or
    /// `attacker:<model>` for a model's proposal.
    pub ops: Vec<String>,
    pub target: Target,
    pub scores: Scores,
    /// [`Entry::seal`]: the hash of the whole entry (template, operators, target and
    /// scores), set when the entry joins a library and checked when one is loaded, so no
    /// field (a target's defense shown in the transfer table) is edited unnoticed.
    #[serde(default)]
    pub entry_hash: String,
}

impl Entry {
    /// The hash of every field of the entry but this one.
    pub fn seal(&self) -> String {
        let whole = serde_json::to_string(&(
            &self.hash,
            &self.template,
            &self.ops,
            &self.target,
            &self.scores,
        ))
        .expect("an entry serialises");
        mutate::hash_text(&whole)
    }

    /// The attack name a replay records.
    pub fn attack_name(&self) -> String {
        format!("lib-{}", self.hash)
    }

    /// The entry as an ordinary template.
    pub fn attack(&self) -> Attack {
        Attack {
            name: self.attack_name(),
            aliases: Vec::new(),
            family: "library".into(),
            description: format!("frozen payload; produced by {}", self.ops.join(" → ")),
            template: self.template.clone(),
            provider_attack: None,
        }
    }
}

/// A library file.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Library {
    pub name: String,
    /// Found by a scripted attacker or against a scripted agent.
    pub simulated: bool,
    pub entries: Vec<Entry>,
}

/// Diversity of a set of payloads.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Diversity {
    pub payloads: usize,
    pub distinct: usize,
    /// Operator families used by at least one payload.
    pub families: Vec<String>,
    /// Mean normalised edit distance over distinct pairs (0 when fewer than two).
    pub mean_edit_distance: f64,
}

impl Library {
    /// Adds an entry unless its hash is already stored (content addressing).
    pub fn insert(&mut self, mut entry: Entry) -> bool {
        if self.entries.iter().any(|e| e.hash == entry.hash) {
            return false;
        }
        entry.entry_hash = entry.seal();
        self.entries.push(entry);
        true
    }

    /// The entries as templates, in library order.
    pub fn attacks(&self) -> Vec<Attack> {
        self.entries.iter().map(Entry::attack).collect()
    }

    /// Diversity of the entries (or of `only`, a list of hashes, when given).
    pub fn diversity(&self, only: Option<&[String]>) -> Diversity {
        let chosen: Vec<&Entry> = self
            .entries
            .iter()
            .filter(|e| only.is_none_or(|o| o.contains(&e.hash)))
            .collect();
        let mut distinct: Vec<&str> = chosen.iter().map(|e| e.template.as_str()).collect();
        distinct.sort();
        distinct.dedup();
        let mut families: Vec<String> = chosen
            .iter()
            .flat_map(|e| {
                e.ops
                    .iter()
                    .filter(|o| !o.starts_with("seed:"))
                    .map(|o| o.split(':').next().unwrap_or(o).to_string())
            })
            .collect();
        families.sort();
        families.dedup();
        let mut sum = 0.0;
        let mut n = 0usize;
        for i in 0..distinct.len() {
            for j in i + 1..distinct.len() {
                sum += mutate::edit_distance(distinct[i], distinct[j]);
                n += 1;
            }
        }
        Diversity {
            payloads: chosen.len(),
            distinct: distinct.len(),
            families,
            mean_edit_distance: if n == 0 { 0.0 } else { sum / n as f64 },
        }
    }

    /// Reads a library from a file, or from a folder's `library.json`.
    pub fn load(path: &Path) -> Result<Library, AttackError> {
        let file: PathBuf = if path.is_dir() {
            path.join(FILE)
        } else {
            path.to_path_buf()
        };
        let err = |message: String| AttackError::Invalid {
            file: file.clone(),
            message,
        };
        let text = crate::bounded::read_to_string(&file, crate::bounded::MAX_INPUT_BYTES).map_err(
            |source| AttackError::Read {
                file: file.clone(),
                what: "cannot read the payload library: ",
                source,
                advice: "",
            },
        )?;
        let lib: Library = serde_json::from_str(&text)
            .map_err(|e| err(format!("invalid payload library: {e}")))?;
        for (i, e) in lib.entries.iter().enumerate() {
            if mutate::hash_text(&e.template) != e.hash {
                return Err(err(format!(
                    "entry {i}: `hash` {} is not the hash of its template ({}); the library was edited",
                    e.hash,
                    mutate::hash_text(&e.template)
                )));
            }
            if e.entry_hash != e.seal() {
                return Err(err(format!(
                    "entry {i} ({}): `entry_hash` `{}` is not the hash of the entry ({}); a field of it (its target, scores or operators) was edited",
                    e.hash,
                    e.entry_hash,
                    e.seal()
                )));
            }
            e.attack()
                .validate(&file)
                .map_err(|x| err(format!("entry {i} ({}): {}", e.hash, x.problem())))?;
        }
        if lib.entries.is_empty() {
            return Err(err("the payload library has no entry".into()));
        }
        Ok(lib)
    }

    /// The library as the pretty JSON a file holds.
    pub fn to_text(&self) -> String {
        serde_json::to_string_pretty(self).expect("library serialises") + "\n"
    }

    /// Writes the library as pretty JSON (a search writes [`Library::to_text`] through
    /// a temporary file instead).
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        std::fs::write(path, self.to_text())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(template: &str, ops: &[&str]) -> Entry {
        Entry {
            hash: mutate::hash_text(template),
            template: template.into(),
            ops: ops.iter().map(|s| s.to_string()).collect(),
            target: Target {
                suite: "banking".into(),
                defense: "keyword_filter".into(),
                model: "sim:obedient".into(),
                unit: "universal".into(),
                feedback: "binary".into(),
                attacker: "sim-attacker".into(),
            },
            scores: Scores::default(),
            entry_hash: String::new(),
        }
    }

    #[test]
    fn stores_by_content_reports_diversity_and_round_trips() {
        let mut lib = Library {
            name: "t".into(),
            simulated: true,
            entries: Vec::new(),
        };
        assert!(lib.insert(entry("TODO: {goal}", &["seed:direct"])));
        assert!(!lib.insert(entry("TODO: {goal}", &["seed:direct", "x"])));
        assert!(lib.insert(entry("Reminder: {goal}", &["seed:direct", "lexicon:a→b"])));
        let d = lib.diversity(None);
        assert_eq!((d.payloads, d.distinct), (2, 2));
        assert_eq!(d.families, vec!["lexicon"]);
        assert!(d.mean_edit_distance > 0.0 && d.mean_edit_distance < 1.0);
        let dir = tempfile::tempdir().unwrap();
        lib.save(&dir.path().join(FILE)).unwrap();
        assert_eq!(Library::load(dir.path()).unwrap(), lib);
        assert_eq!(
            lib.attacks()[1].name,
            format!("lib-{}", lib.entries[1].hash)
        );
    }

    #[test]
    fn an_edited_library_is_refused_with_the_entry_named() {
        let mut lib = Library::default();
        let mut e = entry("TODO: {goal}", &["seed:direct"]);
        e.template = "TODO now: {goal}".into();
        lib.entries.push(e);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lib.json");
        lib.save(&path).unwrap();
        let err = Library::load(&path).unwrap_err().to_string();
        assert!(err.contains("lib.json") && err.contains("entry 0"), "{err}");
    }

    #[test]
    fn an_edited_target_is_refused_as_the_whole_entry_is_hashed() {
        let mut lib = Library::default();
        lib.insert(entry("TODO: {goal}", &["seed:direct"]));
        lib.entries[0].target.defense = "=HYPERLINK(\"http://x\")".into();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lib.json");
        lib.save(&path).unwrap();
        let err = Library::load(&path).unwrap_err().to_string();
        assert!(
            err.contains("entry 0") && err.contains("entry_hash"),
            "{err}"
        );
    }
}
