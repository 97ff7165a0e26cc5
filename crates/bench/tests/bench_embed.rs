//! The embedding benchmark with the real all-MiniLM-L6-v2 model and the real ONNX Runtime, and
//! the memory benchmark with the real small chat model.

use rudder_testkit as common;

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

#[test]
fn memory_benchmark_reads_a_synthetic_history_with_the_real_model() {
    let dir = tempfile::tempdir().unwrap();
    let llm = common::small_model();
    let b = rudder_bench::memory::bench_memory(
        dir.path(),
        40,
        3,
        &llm,
        (embedder(), common::EMBED_MODEL),
        &rudder::history::NoProgress,
    )
    .unwrap();
    assert!(b.sessions >= 35, "{b:?}");
    assert_eq!(b.read + b.skipped, b.sessions as usize, "{b:?}");
    assert!(
        b.bursts >= (b.read - b.chats).div_ceil(rudder::profile::memory::BURST_ITEMS),
        "{b:?}"
    );
    assert!(b.prompt_tokens > 0 && b.sessions_per_second > 0.0, "{b:?}");
    assert!((b.minutes_per_thousand - b.seconds / 60.0 * 1000.0 / b.sessions as f64).abs() < 1e-6);
}
