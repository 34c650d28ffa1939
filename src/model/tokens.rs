//! Real token counts for prompts and replies that no endpoint measured (the scripted
//! model, endpoints without `usage`). Counts use the cl100k_base BPE.
//!
//! Each distinct text is tokenised once per run and remembered, so a long matrix of
//! episodes that share tool outputs and system prompts pays for each text once.
//!
//! A count is a pure function of the text, so the commands keep the counts between runs
//! ([`TokenCounter::cached`]): a file in the build's folder of the proof cache
//! (`suite::proof_cache`), read at start and extended when the counter is dropped. The BPE
//! tables take a good part of a scripted run's start to build; with counts on file they
//! are built only when a text is missing from it (the first time a text is seen), and
//! without a file they are built on a thread of their own while the run loads its
//! suites. The file changes no figure: a count read back is the count the tables give.

use super::ToolSchema;
use sieve_record::Message;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use tiktoken_rs::CoreBPE;

/// Per-message framing tokens in OpenAI's chat format.
const MESSAGE_OVERHEAD: u64 = 4;
/// Tokens that prime the assistant's reply.
const REPLY_PRIMER: u64 = 3;
/// The counts file's name in a build's cache folder, and its first bytes.
const FILE: &str = "tokens-cl100k_base.bin";
const MAGIC: &[u8; 8] = b"SBTOK1\n\0";
/// One entry on file: the text's key and its count, little-endian.
const ENTRY: usize = 16;
/// Beyond this many entries the file stops growing (about 64 MiB).
const MAX_ENTRIES: usize = 4 << 20;

/// A tokenizer with a memo of texts already counted.
pub struct TokenCounter {
    /// The tables, once built.
    bpe: OnceLock<CoreBPE>,
    /// The thread building them, when they are built ahead of the first count.
    loading: Mutex<Option<std::thread::JoinHandle<CoreBPE>>>,
    memo: Mutex<HashMap<u64, u64>>,
    /// Where the counts are kept between runs, and how many the memo held from it.
    file: Option<(PathBuf, usize)>,
}

impl std::fmt::Debug for TokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenCounter(cl100k_base)")
    }
}

fn key(text: &str) -> u64 {
    // SipHash with fixed keys: stable within one build, and the counts file belongs to
    // one build.
    let mut h = std::hash::DefaultHasher::new();
    text.hash(&mut h);
    text.len().hash(&mut h);
    h.finish()
}

fn build_tables() -> CoreBPE {
    tiktoken_rs::cl100k_base().expect("cl100k_base tables compiled in")
}

/// The counts in a file, or none when it is missing, foreign or damaged.
fn read_counts(path: &Path) -> HashMap<u64, u64> {
    let Ok(bytes) = std::fs::read(path) else {
        return HashMap::new();
    };
    let Some(body) = bytes.strip_prefix(MAGIC.as_slice()) else {
        return HashMap::new();
    };
    if body.len() % ENTRY != 0 {
        return HashMap::new();
    }
    body.chunks_exact(ENTRY)
        .map(|e| {
            let (k, n) = e.split_at(8);
            (
                u64::from_le_bytes(k.try_into().expect("8 bytes")),
                u64::from_le_bytes(n.try_into().expect("8 bytes")),
            )
        })
        .collect()
}

/// Adds `memo` to what the file holds now (another process may have added to it) and
/// replaces it whole. Best effort: a count not kept is only counted again.
fn write_counts(path: &Path, memo: &HashMap<u64, u64>) -> std::io::Result<()> {
    let mut all = read_counts(path);
    for (k, n) in memo {
        if all.len() >= MAX_ENTRIES {
            break;
        }
        all.insert(*k, *n);
    }
    let mut bytes = Vec::with_capacity(MAGIC.len() + all.len() * ENTRY);
    bytes.extend_from_slice(MAGIC);
    for (k, n) in &all {
        bytes.extend_from_slice(&k.to_le_bytes());
        bytes.extend_from_slice(&n.to_le_bytes());
    }
    let folder = path.parent().expect("the file lives in a folder");
    std::fs::create_dir_all(folder)?;
    let tmp = tempfile::NamedTempFile::new_in(folder)?;
    std::fs::write(tmp.path(), &bytes)?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Why a token counter could not be made.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// The thread that builds the tokenizer's tables could not be started.
    #[error("cannot load tokenizer: {0}")]
    Spawn(#[source] std::io::Error),
}

impl TokenCounter {
    /// A counter with no counts on file: its tables are built in the background at once.
    pub fn new() -> Result<Self, TokenError> {
        Self::with_file(None)
    }

    /// A counter that keeps its counts in the build's folder of the proof cache `dir`
    /// (see the module's comment); without a folder or a build id, [`TokenCounter::new`].
    pub fn cached(dir: Option<&Path>, build: Option<&str>) -> Result<Self, TokenError> {
        let path = dir
            .zip(build)
            .map(|(d, b)| crate::suite::proof_cache::build_folder(d, b).join(FILE));
        Self::with_file(path)
    }

    fn with_file(path: Option<PathBuf>) -> Result<Self, TokenError> {
        let memo = path.as_deref().map(read_counts).unwrap_or_default();
        // Counts on file: the tables wait for a text the file lacks. None: they are built
        // now, on a thread of their own, while the caller loads its suites.
        let loading = if memo.is_empty() {
            let handle = std::thread::Builder::new()
                .name("tokenizer".into())
                .spawn(build_tables)
                .map_err(TokenError::Spawn)?;
            Some(handle)
        } else {
            None
        };
        let known = memo.len();
        Ok(TokenCounter {
            bpe: OnceLock::new(),
            loading: Mutex::new(loading),
            memo: Mutex::new(memo),
            file: path.map(|p| (p, known)),
        })
    }

    fn bpe(&self) -> &CoreBPE {
        self.bpe.get_or_init(|| {
            let handle = self
                .loading
                .lock()
                .expect("tokenizer loader poisoned")
                .take();
            match handle {
                Some(h) => h.join().expect("building the tokenizer tables panicked"),
                None => build_tables(),
            }
        })
    }

    /// Tokens in a text.
    pub fn count(&self, text: &str) -> u64 {
        if text.is_empty() {
            return 0;
        }
        let k = key(text);
        if let Some(n) = self.memo.lock().expect("token memo poisoned").get(&k) {
            return *n;
        }
        let n = self.bpe().encode_ordinary(text).len() as u64;
        self.memo.lock().expect("token memo poisoned").insert(k, n);
        n
    }

    /// Tokens of one message as sent in a prompt (or produced as a reply).
    pub fn message(&self, m: &Message) -> u64 {
        let mut n = MESSAGE_OVERHEAD + self.count(&m.content);
        for c in &m.tool_calls {
            n += self.count(&c.name) + self.count(&c.arguments) + 3;
        }
        n
    }

    /// Tokens of a whole prompt: messages, tool schemas and the reply primer.
    pub fn prompt(&self, messages: &[Message], tools: &[ToolSchema]) -> u64 {
        let msgs: u64 = messages.iter().map(|m| self.message(m)).sum();
        msgs + self.tools(tools) + REPLY_PRIMER
    }

    /// Tokens of the tool schemas as JSON.
    pub fn tools(&self, tools: &[ToolSchema]) -> u64 {
        if tools.is_empty() {
            return 0;
        }
        // Within a run a tool name always has the same schema, so the names identify
        // the list and the JSON is serialised once per distinct list.
        let names: String = tools
            .iter()
            .map(|t| t.name.as_str())
            .collect::<Vec<_>>()
            .join("\u{1}");
        let k = key(&names) ^ 0x9e37_79b9_7f4a_7c15;
        if let Some(n) = self.memo.lock().expect("token memo poisoned").get(&k) {
            return *n;
        }
        let text = serde_json::to_string(tools).expect("schemas serialise");
        let n = self.bpe().encode_ordinary(&text).len() as u64;
        self.memo.lock().expect("token memo poisoned").insert(k, n);
        n
    }
}

impl Drop for TokenCounter {
    /// Keeps the counts of texts first seen in this run for the next one.
    fn drop(&mut self) {
        let Some((path, known)) = &self.file else {
            return;
        };
        let memo = self
            .memo
            .get_mut()
            .map(|m| &*m)
            .unwrap_or_else(|e| e.into_inner());
        if memo.len() > *known {
            let _ = write_counts(path, memo);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_real_tokens_and_memoises() {
        let t = TokenCounter::new().unwrap();
        assert_eq!(t.count(""), 0);
        assert_eq!(t.count("hello world"), 2);
        assert_eq!(t.count("hello world"), 2);
        let m = Message::user("hello world");
        assert_eq!(t.message(&m), 2 + MESSAGE_OVERHEAD);
        assert_eq!(t.prompt(&[m], &[]), 2 + MESSAGE_OVERHEAD + REPLY_PRIMER);
    }

    #[test]
    fn counts_are_kept_between_runs_and_equal_the_tables_own() {
        let dir = tempfile::tempdir().unwrap();
        let texts = [
            "hello world",
            "Transfer 100.00 to GB29NWBK60161331926819.",
            "ünïcödé",
        ];
        let fresh: Vec<u64> = {
            let t = TokenCounter::cached(Some(dir.path()), Some("b1")).unwrap();
            texts.iter().map(|x| t.count(x)).collect()
        };
        let path = crate::suite::proof_cache::build_folder(dir.path(), "b1").join(FILE);
        assert_eq!(read_counts(&path).len(), texts.len());
        // Read back: the same counts, and no tables were needed for them.
        let t = TokenCounter::cached(Some(dir.path()), Some("b1")).unwrap();
        let again: Vec<u64> = texts.iter().map(|x| t.count(x)).collect();
        assert_eq!(again, fresh);
        assert!(t.bpe.get().is_none(), "every count came from the file");
        // A new text still gets its real count.
        assert_eq!(
            t.count("hello world hello"),
            TokenCounter::new().unwrap().count("hello world hello")
        );
        // Another build starts afresh.
        let other = TokenCounter::cached(Some(dir.path()), Some("b2")).unwrap();
        assert!(other.memo.lock().unwrap().is_empty());
    }

    #[test]
    fn a_damaged_counts_file_is_ignored_and_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = crate::suite::proof_cache::build_folder(dir.path(), "b").join(FILE);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        for junk in [&b"not ours"[..], &b"SBTOK1\n\0\x01\x02"[..]] {
            std::fs::write(&path, junk).unwrap();
            {
                let t = TokenCounter::cached(Some(dir.path()), Some("b")).unwrap();
                assert!(t.memo.lock().unwrap().is_empty());
                assert_eq!(t.count("hello world"), 2);
            }
            assert_eq!(
                read_counts(&path).values().copied().collect::<Vec<_>>(),
                vec![2]
            );
        }
    }
}
