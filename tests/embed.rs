//! Embeddings with the real all-MiniLM-L6-v2 model and the real ONNX Runtime.

use rudder_testkit as common;

use std::sync::OnceLock;

use rudder::embed::{cosine, Embedder, FastEmbedder};

fn embedder() -> &'static FastEmbedder {
    static E: OnceLock<FastEmbedder> = OnceLock::new();
    E.get_or_init(|| FastEmbedder::from_store(&common::store(), common::EMBED_MODEL, 1).unwrap())
}

#[test]
fn related_sentences_are_closer_than_unrelated_ones() {
    let e = embedder();
    assert_eq!(e.dimensions(), 384);
    let v = e
        .embed(&[
            "How do I bake sourdough bread at home?",
            "A beginner's recipe for homemade sourdough loaves",
            "The stock market fell sharply after the interest rate decision",
        ])
        .unwrap();
    let related = cosine(&v[0], &v[1]);
    let unrelated = cosine(&v[0], &v[2]);
    assert!(related > 0.5, "related similarity {related}");
    assert!(
        related > unrelated + 0.3,
        "related {related} vs unrelated {unrelated}"
    );
    for x in &v {
        let norm: f32 = x.iter().map(|a| a * a).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-3, "not unit length: {norm}");
    }
}

#[test]
fn batching_does_not_change_vectors() {
    let e = embedder();
    let texts = [
        "short",
        "a somewhat longer sentence about the weather in Lisbon",
        "third text",
    ];
    let batch = e.embed(&texts).unwrap();
    for (i, t) in texts.iter().enumerate() {
        let single = e.embed(&[t]).unwrap().remove(0);
        let sim = cosine(&single, &batch[i]);
        assert!(sim > 0.999, "text {i}: batch vs single cosine {sim}");
    }
    assert!(e.embed(&[]).unwrap().is_empty());
}
