//! Request/response cache for real endpoints: `--cache DIR` records every successful
//! reply, keyed by the SHA-256 of the canonical request JSON (keys sorted, no
//! whitespace), and `--replay` answers only from it.
//!
//! One file per request, `DIR/<first two hex digits>/<hash>.json`, written to a
//! temporary name and linked into place only if no entry exists yet, so concurrent
//! episodes, concurrent runs and a run killed mid-write never leave a half-written entry.
//! The first writer of a key wins; a writer that loses the race adopts the recorded reply
//! (see [`Cache::put`]), so the recorded run and its replay see the same reply for the
//! same request and a replay repeats every episode exactly.
//!
//! Entries hold the request body and the endpoint's reply body; never headers, so never
//! the API key.
//!
//! A third mode serves `run --batch` ([`Gather`]): a chat request the cache cannot answer
//! is not sent but gathered, and its episode is deferred to the next batch round; a
//! request the provider's batch refused answers with that refusal (an episode error).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// One recorded exchange.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Entry {
    pub key: String,
    /// The endpoint path the request went to (`chat/completions`, `embeddings`).
    pub path: String,
    pub request: Value,
    pub response: Value,
    /// Latency of the recorded call, replayed as is so replayed records match.
    #[serde(default)]
    pub latency_ms: f64,
}

/// A cache directory.
#[derive(Debug)]
pub struct Cache {
    dir: PathBuf,
    replay: bool,
    gather: Option<Arc<Gather>>,
}

/// The path whose misses a batch round gathers; other requests (embeddings) are sent.
pub const BATCH_PATH: &str = "chat/completions";

/// A request a batch round sends: what the cache would have recorded, without a reply.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Pending {
    pub key: String,
    pub path: String,
    pub request: Value,
}

/// The misses of one pass over a run (`run --batch`), and the requests an earlier round's
/// provider refused (by key, with its message).
#[derive(Debug, Default)]
pub struct Gather {
    gathered: Mutex<BTreeMap<String, Pending>>,
    refused: BTreeMap<String, String>,
}

impl PartialEq for Gather {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self, other)
    }
}

impl Gather {
    /// A gatherer that answers the keys of `refused` with their provider's message.
    pub fn new(refused: BTreeMap<String, String>) -> Gather {
        Gather {
            gathered: Mutex::default(),
            refused,
        }
    }

    /// What was gathered, one entry per distinct request.
    pub fn take(&self) -> Vec<Pending> {
        std::mem::take(&mut *self.gathered.lock().expect("gather lock"))
            .into_values()
            .collect()
    }

    fn defer(&self, p: Pending) {
        self.gathered
            .lock()
            .expect("gather lock")
            .entry(p.key.clone())
            .or_insert(p);
    }
}

/// What the cache says about a request it holds no reply for.
#[derive(Debug, PartialEq)]
pub enum Miss {
    /// Send it (and record the reply).
    Send,
    /// Replaying: nothing may be sent.
    Replay,
    /// Gathered for the next batch round: the episode waits.
    Deferred,
    /// The batch provider refused this request: its message.
    Refused(String),
}

/// Serialises a JSON value with object keys sorted at every level, without whitespace.
///
/// Written out rather than left to `serde_json::to_string`: this crate builds serde_json
/// with `preserve_order` (Cargo.toml), so a `Value`'s objects keep insertion order and
/// serde_json would not sort them; the same request built in another key order must
/// still have one cache key.
pub fn canonical(v: &Value) -> String {
    fn write(v: &Value, out: &mut String) {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                out.push('{');
                for (i, k) in keys.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&serde_json::to_string(k).expect("string serialises"));
                    out.push(':');
                    write(&m[k], out);
                }
                out.push('}');
            }
            Value::Array(a) => {
                out.push('[');
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write(x, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut s = String::new();
    write(v, &mut s);
    s
}

/// The cache key of a request sent to `path`: hex SHA-256 of `path` and the canonical body.
pub fn key(path: &str, request: &Value) -> String {
    let mut h = Sha256::new();
    h.update(path.as_bytes());
    h.update([0u8]);
    h.update(canonical(request).as_bytes());
    crate::digest::hex(&h.finalize())
}

/// Why a cache directory could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// `--replay` names a directory that is not there: nothing recorded to replay.
    #[error("--replay: cache directory {} does not exist", .0.display())]
    NoReplay(PathBuf),
    /// The directory could not be created (an I/O failure).
    #[error("cannot create cache directory {}: {source}", dir.display())]
    Create {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl Cache {
    /// Opens (and creates) a cache directory. In replay mode the directory must exist.
    pub fn open(dir: &Path, replay: bool) -> Result<Self, CacheError> {
        if replay {
            if !dir.is_dir() {
                return Err(CacheError::NoReplay(dir.to_path_buf()));
            }
        } else {
            std::fs::create_dir_all(dir).map_err(|source| CacheError::Create {
                dir: dir.to_path_buf(),
                source,
            })?;
        }
        Ok(Cache {
            dir: dir.to_path_buf(),
            replay,
            gather: None,
        })
    }

    /// The same cache gathering its chat misses for a batch round instead of sending them.
    pub fn gathering(mut self, gather: Arc<Gather>) -> Cache {
        self.gather = Some(gather);
        self
    }

    /// Whether nothing may be sent without asking the cache first: replaying, or
    /// gathering a batch round (so no pre-flight probe is sent either).
    pub fn replay(&self) -> bool {
        self.replay || self.gather.is_some()
    }

    /// What to do about a request to `path` the cache holds no reply for.
    pub fn miss(&self, key: &str, path: &str, request: &Value) -> Miss {
        match &self.gather {
            Some(g) if path == BATCH_PATH => match g.refused.get(key) {
                Some(m) => Miss::Refused(m.clone()),
                None => {
                    g.defer(Pending {
                        key: key.to_string(),
                        path: path.to_string(),
                        request: request.clone(),
                    });
                    Miss::Deferred
                }
            },
            _ if self.replay => Miss::Replay,
            _ => Miss::Send,
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path_of(&self, key: &str) -> PathBuf {
        self.dir.join(&key[..2]).join(format!("{key}.json"))
    }

    /// The recorded entry for `key`, if any. An unreadable entry counts as a miss.
    pub fn get(&self, key: &str) -> Option<Entry> {
        let text = std::fs::read_to_string(self.path_of(key)).ok()?;
        serde_json::from_str::<Entry>(&text)
            .ok()
            .filter(|e| e.key == key)
    }

    /// Records an entry unless the key already has one, and returns the entry the cache
    /// holds for the key: this one, or the one an earlier writer recorded. Callers use the
    /// returned reply, so two episodes that sent the same request see the same reply in
    /// the recorded run, as they will in the replay.
    pub fn put(&self, entry: &Entry) -> std::io::Result<Entry> {
        let path = self.path_of(&entry.key);
        let parent = path.parent().expect("entry path has a parent");
        std::fs::create_dir_all(parent)?;
        let mut text = serde_json::to_string_pretty(entry).map_err(std::io::Error::other)?;
        text.push('\n');
        let mut tmp = tempfile::NamedTempFile::new_in(parent)?;
        tmp.write_all(text.as_bytes())?;
        tmp.as_file().sync_all()?;
        match tmp.persist_noclobber(&path) {
            Ok(_) => Ok(entry.clone()),
            Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => {
                match self.get(&entry.key) {
                    Some(first) => Ok(first),
                    // An unreadable entry (another tool wrote it): replace it.
                    None => {
                        e.file.persist(&path).map_err(|e| e.error)?;
                        Ok(entry.clone())
                    }
                }
            }
            Err(e) => Err(e.error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn canonical_form_ignores_key_order() {
        let a = json!({"b": 1, "a": {"y": [1, {"d": 2, "c": 3}], "x": null}});
        let b = json!({"a": {"x": null, "y": [1, {"c": 3, "d": 2}]}, "b": 1});
        assert_eq!(canonical(&a), canonical(&b));
        assert_eq!(
            canonical(&a),
            r#"{"a":{"x":null,"y":[1,{"c":3,"d":2}]},"b":1}"#
        );
        assert_eq!(key("p", &a), key("p", &b));
        assert_ne!(key("p", &a), key("q", &a));
        assert_eq!(key("p", &a).len(), 64);
    }

    #[test]
    fn put_get_roundtrip_and_concurrent_writers() {
        let dir = tempfile::tempdir().unwrap();
        let cache = std::sync::Arc::new(Cache::open(dir.path(), false).unwrap());
        let req = json!({"model": "m", "messages": []});
        let k = key("chat/completions", &req);
        assert!(cache.get(&k).is_none());
        let entry = Entry {
            key: k.clone(),
            path: "chat/completions".into(),
            request: req,
            response: json!({"choices": []}),
            latency_ms: 12.5,
        };
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let (c, e) = (cache.clone(), entry.clone());
                std::thread::spawn(move || c.put(&e).unwrap())
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(cache.get(&k), Some(entry.clone()));
        // A later writer with another reply for the same request adopts the first.
        let other = Entry {
            response: json!({"choices": [{"other": true}]}),
            ..entry.clone()
        };
        assert_eq!(cache.put(&other).unwrap(), entry);
        assert_eq!(cache.get(&k), Some(entry));
        // No temporary files are left behind.
        let leftovers = std::fs::read_dir(dir.path().join(&k[..2]))
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .ends_with(".tmp")
            })
            .count();
        assert_eq!(leftovers, 0);
        assert!(Cache::open(&dir.path().join("missing"), true).is_err());
    }
}
