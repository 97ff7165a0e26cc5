//! The thresholds that keep the research loop's directions on the question, checked with the
//! real embedder (all-MiniLM-L6-v2) on labelled pairs:
//!
//! * `data/direction_pairs.jsonl`: (query, proposed direction, related?) — hard negatives pair
//!   the query's subject with an unrelated sport or hobby, or with another topic of the user's
//!   history. [`node::ON_TOPIC`] drops follow-ups and knowledge gaps below it.
//! * `data/coverage_pairs.jsonl`: (pending task, learning, does the learning answer it?) —
//!   negatives are learnings on the same subject that answer another facet.
//!   [`reflect::COVERED`] is the cosine from which reflection may cancel a task as covered.
//!
//! Each test prints the sweep (`--nocapture`), the best threshold by F1 and the precision and
//! recall at the shipped constant, and fails when those drop.

use rudder_testkit as common;

use rudder::embed::{cosine, Embedder, FastEmbedder};
use rudder::research::{node, reflect};
use serde::Deserialize;

#[derive(Deserialize)]
struct DirectionPair {
    query: String,
    direction: String,
    related: bool,
}

#[derive(Deserialize)]
struct CoveragePair {
    task: String,
    learning: String,
    covered: bool,
}

fn read<T: for<'de> Deserialize<'de>>(name: &str) -> Vec<T> {
    let path = common::repo_root().join("data").join(name);
    std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// (precision, recall) of "cosine ≥ threshold" against the labels.
fn precision_recall(scored: &[(f32, bool)], threshold: f32) -> (f32, f32) {
    let tp = scored.iter().filter(|(s, l)| *s >= threshold && *l).count() as f32;
    let fp = scored
        .iter()
        .filter(|(s, l)| *s >= threshold && !*l)
        .count() as f32;
    let positives = scored.iter().filter(|(_, l)| *l).count() as f32;
    let precision = if tp + fp == 0.0 { 1.0 } else { tp / (tp + fp) };
    (precision, tp / positives.max(1.0))
}

/// The threshold (a midpoint between two neighbouring scores) with the best F-beta.
fn best_threshold(scored: &[(f32, bool)], beta: f32) -> (f32, f32, f32) {
    let mut sorted: Vec<f32> = scored.iter().map(|(s, _)| *s).collect();
    sorted.sort_by(f32::total_cmp);
    let mut best = (0.0, 0.0, 0.0, f32::MIN);
    for w in sorted.windows(2) {
        let t = (w[0] + w[1]) / 2.0;
        let (p, r) = precision_recall(scored, t);
        let b2 = beta * beta;
        let f = if p + r == 0.0 {
            0.0
        } else {
            (1.0 + b2) * p * r / (b2 * p + r)
        };
        if f > best.3 {
            best = (t, p, r, f);
        }
    }
    (best.0, best.1, best.2)
}

fn embedder() -> FastEmbedder {
    FastEmbedder::from_store(&common::store(), common::EMBED_MODEL, 1).unwrap()
}

fn scores(embedder: &FastEmbedder, pairs: &[(&str, &str, bool)]) -> Vec<(f32, bool)> {
    let mut texts: Vec<&str> = Vec::new();
    for (a, b, _) in pairs {
        texts.push(a);
        texts.push(b);
    }
    let v = embedder.embed(&texts).unwrap();
    pairs
        .iter()
        .enumerate()
        .map(|(i, (a, b, label))| {
            let s = cosine(&v[2 * i], &v[2 * i + 1]);
            println!("{s:.3} {label:5} {a} | {b}");
            (s, *label)
        })
        .collect()
}

#[test]
fn on_topic_threshold_separates_related_directions_from_hard_negatives() {
    let pairs: Vec<DirectionPair> = read("direction_pairs.jsonl");
    assert!(pairs.len() >= 40 && pairs.iter().filter(|p| !p.related).count() >= 15);
    let refs: Vec<(&str, &str, bool)> = pairs
        .iter()
        .map(|p| (p.query.as_str(), p.direction.as_str(), p.related))
        .collect();
    let scored = scores(&embedder(), &refs);
    let (best, bp, br) = best_threshold(&scored, 1.0);
    let (p, r) = precision_recall(&scored, node::ON_TOPIC);
    println!(
        "direction pairs: {} ({} related); best F1 threshold {best:.3} (P {bp:.2}, R {br:.2}); \
         ON_TOPIC {:.3}: P {p:.2}, R {r:.2}",
        scored.len(),
        scored.iter().filter(|(_, l)| *l).count(),
        node::ON_TOPIC
    );
    // Dropping a good direction costs the report a facet; keeping an off-topic one costs a
    // whole branch on something the user did not ask: both must stay rare.
    assert!(p >= 0.9, "precision {p:.2} at ON_TOPIC");
    assert!(r >= 0.9, "recall {r:.2} at ON_TOPIC");
}

#[test]
fn covered_threshold_cancels_only_tasks_a_learning_answers() {
    let pairs: Vec<CoveragePair> = read("coverage_pairs.jsonl");
    assert!(pairs.len() >= 20);
    let refs: Vec<(&str, &str, bool)> = pairs
        .iter()
        .map(|p| (p.task.as_str(), p.learning.as_str(), p.covered))
        .collect();
    let scored = scores(&embedder(), &refs);
    // Precision weighs more: a wrongly canceled direction is lost for good.
    let (best, bp, br) = best_threshold(&scored, 0.5);
    let (p, r) = precision_recall(&scored, reflect::COVERED);
    println!(
        "coverage pairs: {} ({} covered); best F0.5 threshold {best:.3} (P {bp:.2}, R {br:.2}); \
         COVERED {:.3}: P {p:.2}, R {r:.2}",
        scored.len(),
        scored.iter().filter(|(_, l)| *l).count(),
        reflect::COVERED
    );
    assert!(p >= 0.95, "precision {p:.2} at COVERED");
    assert!(r >= 0.8, "recall {r:.2} at COVERED");
}
