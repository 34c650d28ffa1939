//! `openai:<model>` embeddings through an OpenAI-compatible `/embeddings` endpoint,
//! sharing the chat models' endpoint (connection pool, limits, retries) and cache.

use super::{EmbedError, Embedder};
use crate::http::Endpoint;
use crate::http::cache::Cache;
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;

const PATH: &str = "embeddings";

/// An embedder behind an OpenAI-compatible endpoint.
pub struct OpenAiEmbedder {
    name: String,
    model: String,
    endpoint: Arc<Endpoint>,
    cache: Option<Arc<Cache>>,
}

impl OpenAiEmbedder {
    pub fn new(
        name: impl Into<String>,
        model: impl Into<String>,
        endpoint: Arc<Endpoint>,
        cache: Option<Arc<Cache>>,
    ) -> Self {
        OpenAiEmbedder {
            name: name.into(),
            model: model.into(),
            endpoint,
            cache,
        }
    }
}

#[derive(Deserialize)]
struct WireEmbeddings {
    data: Vec<WireEmbedding>,
}

#[derive(Deserialize)]
struct WireEmbedding {
    #[serde(default)]
    index: Option<usize>,
    embedding: Vec<f32>,
}

/// An `/embeddings` reply that breaks the protocol.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ReplyError {
    /// Not the shape of an embeddings reply (`first`: its first bytes).
    #[error("malformed embeddings reply ({why}), first bytes: {first:?}")]
    Malformed { why: String, first: String },
    /// Another number of vectors than inputs.
    #[error("asked for {asked} embeddings, got {got}")]
    Count { asked: usize, got: usize },
    /// An index out of range or given twice.
    #[error("embeddings reply has a bad index {0}")]
    Index(usize),
}

/// Parses an `/embeddings` reply into one L2-normalised vector per input, in input order.
pub fn parse_embeddings(body: &Value, n: usize) -> Result<Vec<Vec<f32>>, ReplyError> {
    let w: WireEmbeddings = serde_json::from_value(body.clone()).map_err(|e| {
        let mut first = body.to_string();
        // At a character boundary: a byte count can fall inside a character.
        first.truncate(first.floor_char_boundary(200));
        ReplyError::Malformed {
            why: e.to_string(),
            first,
        }
    })?;
    if w.data.len() != n {
        return Err(ReplyError::Count {
            asked: n,
            got: w.data.len(),
        });
    }
    let mut out: Vec<Option<Vec<f32>>> = vec![None; n];
    for (i, d) in w.data.into_iter().enumerate() {
        let at = d.index.unwrap_or(i);
        if at >= n || out[at].is_some() {
            return Err(ReplyError::Index(at));
        }
        let mut v = d.embedding;
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            v.iter_mut().for_each(|x| *x /= norm);
        }
        out[at] = Some(v);
    }
    Ok(out.into_iter().map(|v| v.expect("all filled")).collect())
}

#[async_trait]
impl Embedder for OpenAiEmbedder {
    fn name(&self) -> &str {
        &self.name
    }
    fn identity(&self) -> sieve_record::ModelIdentity {
        sieve_record::ModelIdentity::new(
            json!({ "name": self.name, "model": self.model, "base_url": self.endpoint.config().base_url }),
        )
    }

    async fn preflight(&self) -> Result<(), EmbedError> {
        if self.cache.as_ref().is_some_and(|c| c.replay()) {
            return Ok(());
        }
        let body = json!({"model": self.model, "input": ["pre-flight"]});
        self.endpoint
            .probe(PATH, &body, &format!("embedder {}", self.name))
            .await?;
        Ok(())
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let body = json!({"model": self.model, "input": texts});
        let posted = self
            .endpoint
            .cached_post(
                self.cache.as_deref(),
                PATH,
                &body,
                || texts.iter().map(|t| t.len() as u64 / 4 + 1).sum(),
                |key, _| format!("no recorded embeddings for request {key}"),
            )
            .await
            .map_err(EmbedError::Model)?;
        let vectors = parse_embeddings(&posted.body, texts.len())?;
        Ok(vectors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_out_of_order_and_normalises() {
        let body = json!({"data": [
            {"index": 1, "embedding": [0.0, 2.0]},
            {"index": 0, "embedding": [3.0, 4.0]}
        ]});
        let v = parse_embeddings(&body, 2).unwrap();
        assert_eq!(v[0], vec![0.6, 0.8]);
        assert_eq!(v[1], vec![0.0, 1.0]);
        assert!(parse_embeddings(&body, 3).is_err());
        assert!(parse_embeddings(&json!({"oops": 1}), 1).is_err());
    }

    #[test]
    fn a_malformed_reply_is_quoted_without_cutting_a_character() {
        // The quoted text is `{"oops":"` (9 bytes), the padding, then 3-byte `€`s: some
        // of these paddings put byte 200 inside a `€`.
        for pad in 185..195 {
            let body = json!({"oops": format!("{}€€€", "a".repeat(pad))});
            let e = parse_embeddings(&body, 1).unwrap_err().to_string();
            assert!(e.starts_with("malformed embeddings reply"), "{e}");
        }
    }
}
