//! The embedding benchmark with the real all-MiniLM-L6-v2 model and the real ONNX Runtime.

#[path = "../../../tests/common/mod.rs"]
mod common;

use std::sync::OnceLock;

use rudder::embed::FastEmbedder;

fn embedder() -> &'static FastEmbedder {
    static E: OnceLock<FastEmbedder> = OnceLock::new();
    E.get_or_init(|| FastEmbedder::from_store(&common::store(), common::EMBED_MODEL, 1).unwrap())
}

#[test]
fn embedding_benchmark_reports_real_throughput() {
    let b = rudder_bench::bench_embed(embedder(), common::EMBED_MODEL, 32, 8).unwrap();
    assert_eq!((b.texts, b.dimensions, b.batch_size), (32, 384, 8));
    assert!(b.texts_per_s > 0.0 && b.texts_per_s.is_finite());
    assert!(b.mean_words_per_text > 2.0);
    let texts = rudder_bench::synthetic_texts(200);
    let unique: std::collections::HashSet<_> = texts.iter().collect();
    assert_eq!(unique.len(), 200, "synthetic texts must not repeat");
}
