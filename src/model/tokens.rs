//! Real token counts for prompts and replies that no endpoint measured (the scripted
//! model, endpoints without `usage`). Counts use the cl100k_base BPE.
//!
//! Each distinct text is tokenised once per run and remembered, so a long matrix of
//! episodes that share tool outputs and system prompts pays for each text once.
//!
//! Building the BPE tables takes a good part of a scripted run's start, so
//! [`TokenCounter::new`] starts it on a thread of its own and the first count waits for
//! it: the tables are built while the run loads its suites.

use super::{Message, ToolSchema};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Mutex, OnceLock};
use tiktoken_rs::CoreBPE;

/// Per-message framing tokens in OpenAI's chat format.
const MESSAGE_OVERHEAD: u64 = 4;
/// Tokens that prime the assistant's reply.
const REPLY_PRIMER: u64 = 3;

/// A tokenizer with a memo of texts already counted.
pub struct TokenCounter {
    /// The tables, once built.
    bpe: OnceLock<CoreBPE>,
    /// The thread building them, until the first count takes its result.
    loading: Mutex<Option<std::thread::JoinHandle<CoreBPE>>>,
    memo: Mutex<HashMap<u64, u64>>,
}

impl std::fmt::Debug for TokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenCounter(cl100k_base)")
    }
}

fn key(text: &str) -> u64 {
    // SipHash with fixed keys: a memo key only, never persisted.
    let mut h = std::hash::DefaultHasher::new();
    text.hash(&mut h);
    text.len().hash(&mut h);
    h.finish()
}

impl TokenCounter {
    /// Starts building the tables in the background. They come from data compiled into
    /// the binary, so building them cannot fail on one machine and not another; a
    /// thread that cannot be started is the error here.
    pub fn new() -> Result<Self, String> {
        let loading = std::thread::Builder::new()
            .name("tokenizer".into())
            .spawn(|| tiktoken_rs::cl100k_base().expect("cl100k_base tables compiled in"))
            .map_err(|e| format!("cannot load tokenizer: {e}"))?;
        Ok(TokenCounter {
            bpe: OnceLock::new(),
            loading: Mutex::new(Some(loading)),
            memo: Mutex::new(HashMap::new()),
        })
    }

    fn bpe(&self) -> &CoreBPE {
        self.bpe.get_or_init(|| {
            let handle = self
                .loading
                .lock()
                .expect("tokenizer loader poisoned")
                .take()
                .expect("the tables are built once");
            handle
                .join()
                .expect("building the tokenizer tables panicked")
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
}
