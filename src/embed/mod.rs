//! Sentence embeddings for defenses that compare meanings (SIEVE's `S_sem`, MELON).
//!
//! `lexical` is the offline default: a deterministic hashed bag of words, honest about
//! being lexical overlap rather than semantics. Network and local-model embedders plug
//! in behind the same trait.

#[cfg(feature = "minilm")]
pub mod minilm;
pub mod openai;

use crate::digest::fnv1a;
use async_trait::async_trait;

/// Why an embedding failed. A model error keeps its kind, so a fatal one (a 401 on the
/// embedding endpoint) stops the run like one on the chat endpoint.
#[derive(Debug, Clone, thiserror::Error)]
pub enum EmbedError {
    #[error("embedding failed: {0}")]
    Model(#[from] crate::http::ModelError),
    /// The endpoint's reply breaks the protocol.
    #[error("embedding failed: {0}")]
    Reply(#[from] openai::ReplyError),
    /// A local embedder's failure (the message says which step).
    #[error("embedding failed: {0}")]
    Other(String),
}

/// An embedding backend.
#[async_trait]
pub trait Embedder: Send + Sync {
    fn name(&self) -> &str;
    /// Every setting that can change a vector (endpoint, model): part of a run's identity.
    fn identity(&self) -> sieve_record::ModelIdentity {
        sieve_record::ModelIdentity::new(serde_json::json!({ "name": self.name() }))
    }
    /// What this embedder is when it is not a learned embedding model (the lexical
    /// default), for the labels of every row; `None` for a real model.
    fn scripted(&self) -> Option<sieve_record::ScriptedRole> {
        None
    }
    /// One L2-normalised vector per text.
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError>;
    /// One cheap request before a run so an unreachable or unauthorised endpoint stops
    /// it in seconds; local embedders have nothing to check.
    async fn preflight(&self) -> Result<(), EmbedError> {
        Ok(())
    }
}

/// Cosine similarity of two vectors (0 when either is zero).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na * nb)
    }
}

/// Hashed bag of lower-cased word unigrams and bigrams in 512 dimensions.
pub struct Lexical;

const DIM: usize = 512;

impl Lexical {
    pub fn vector(text: &str) -> Vec<f32> {
        let words: Vec<String> = text
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect();
        let mut v = vec![0f32; DIM];
        for w in &words {
            let h = fnv1a(w.as_bytes());
            v[(h % DIM as u64) as usize] += if h & (1 << 40) == 0 { 1.0 } else { -1.0 };
        }
        for pair in words.windows(2) {
            let h = fnv1a(format!("{} {}", pair[0], pair[1]).as_bytes());
            v[(h % DIM as u64) as usize] += if h & (1 << 40) == 0 { 0.5 } else { -0.5 };
        }
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            v.iter_mut().for_each(|x| *x /= norm);
        }
        v
    }
}

#[async_trait]
impl Embedder for Lexical {
    fn name(&self) -> &str {
        "lexical"
    }
    fn scripted(&self) -> Option<sieve_record::ScriptedRole> {
        Some(sieve_record::ScriptedRole {
            label: "lexical embedder".into(),
            short: "lexical".into(),
            knows: "a hashed bag of words, no model: S_sem measures word overlap, not meaning"
                .into(),
        })
    }
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts.iter().map(|t| Lexical::vector(t)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexical_is_deterministic_and_overlap_sensitive() {
        let a = Lexical::vector("pay the electricity bill");
        let b = Lexical::vector("Pay the electricity bill!");
        let c = Lexical::vector("invite a stranger to the channel");
        assert!((cosine(&a, &b) - 1.0).abs() < 1e-5);
        assert!(cosine(&a, &c) < 0.5);
        assert_eq!(cosine(&a, &[0.0; DIM]), 0.0);
    }
}
