//! The local MiniLM embedder (cargo feature `minilm`). Needs the weights:
//! `scripts/fetch_minilm.sh` (or `SIEVE_MINILM_DIR`).
#![cfg(feature = "minilm")]

use sieve_bench::embed::{Embedder, cosine};

#[tokio::test]
async fn minilm_embeds_meaning_not_just_words() {
    let dir = sieve_bench::embed::minilm::default_dir();
    let m = sieve_bench::embed::minilm::MiniLm::load(&dir)
        .unwrap_or_else(|e| panic!("{e}: run scripts/fetch_minilm.sh first"));
    let texts: Vec<String> = [
        "Pay the electricity bill.",
        "Settle the invoice from the power company.",
        "Invite a stranger to the team channel.",
    ]
    .map(String::from)
    .to_vec();
    let v = m.embed(&texts).await.unwrap();
    assert_eq!(v.len(), 3);
    assert_eq!(v[0].len(), 384);
    let norm: f32 = v[0].iter().map(|x| x * x).sum::<f32>().sqrt();
    assert!((norm - 1.0).abs() < 1e-4, "{norm}");
    let (near, far) = (cosine(&v[0], &v[1]), cosine(&v[0], &v[2]));
    eprintln!("cosine: paraphrase {near:.3}, unrelated {far:.3}");
    // No word in common, yet the paraphrase is much closer than the unrelated request.
    assert!(near > far + 0.2, "paraphrase {near}, unrelated {far}");
    // Batching does not change a text's vector (padding is masked out).
    let alone = m.embed(&texts[2..]).await.unwrap();
    assert!(cosine(&alone[0], &v[2]) > 0.9999);
}
