//! Request/response cache for real endpoints: `--cache DIR` records every successful
//! reply, keyed by the SHA-256 of the canonical request JSON (keys sorted, no
//! whitespace), and `--replay` answers only from it.
//!
//! One file per request, `DIR/<first two hex digits>/<hash>.json`, written to a
//! temporary name and renamed into place, so concurrent episodes, concurrent runs and a
//! run killed mid-write never leave a half-written entry. Two writers racing for the
//! same key write the same request; whichever rename lands last wins, harmlessly.
//!
//! Entries hold the request body and the endpoint's reply body; never headers, so never
//! the API key.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

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
    counter: AtomicU64,
}

/// Serialises a JSON value with object keys sorted at every level, without whitespace.
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
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

impl Cache {
    /// Opens (and creates) a cache directory. In replay mode the directory must exist.
    pub fn open(dir: &Path, replay: bool) -> Result<Self, String> {
        if replay {
            if !dir.is_dir() {
                return Err(format!(
                    "--replay: cache directory {} does not exist",
                    dir.display()
                ));
            }
        } else {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("cannot create cache directory {}: {e}", dir.display()))?;
        }
        Ok(Cache {
            dir: dir.to_path_buf(),
            replay,
            counter: AtomicU64::new(0),
        })
    }

    /// Whether only recorded answers may be used.
    pub fn replay(&self) -> bool {
        self.replay
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

    /// Records an entry atomically (temporary file, then rename).
    pub fn put(&self, entry: &Entry) -> std::io::Result<()> {
        let path = self.path_of(&entry.key);
        let parent = path.parent().expect("entry path has a parent");
        std::fs::create_dir_all(parent)?;
        let tmp = parent.join(format!(
            ".{}.{}.{}.tmp",
            entry.key,
            std::process::id(),
            self.counter.fetch_add(1, Ordering::Relaxed)
        ));
        let mut text = serde_json::to_string_pretty(entry).map_err(std::io::Error::other)?;
        text.push('\n');
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, &path).inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
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
