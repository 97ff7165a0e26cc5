//! The support judge's calibration (`rudder eval support`): the turned pairs are well formed
//! and turn their passages around in the passages' own words, the embedding matcher lets such
//! sentences through, and the calibration runs end to end with the real models.

use rudder_testkit as common;

use std::collections::{BTreeMap, BTreeSet};

use rudder::checks::text::content_words;
use rudder::checks::{SupportMatcher, SUPPORT_THRESHOLD};
use rudder::embed::FastEmbedder;
use rudder::history::NoProgress;
use rudder_eval::support_judge::{calibrate_support_judge, markdown, turned_pairs};
use rudder_eval::support_pairs;

#[test]
fn turned_pairs_turn_their_passages_around_in_their_own_words() {
    let pairs = turned_pairs();
    let mut by_group: BTreeMap<&str, Vec<_>> = BTreeMap::new();
    for p in &pairs {
        by_group.entry(&p.group).or_default().push(p);
    }
    assert!(by_group.len() >= 14, "{} passages", by_group.len());
    let shipped: BTreeSet<String> = support_pairs().into_iter().map(|p| p.group).collect();
    for (group, pairs) in &by_group {
        assert!(
            !shipped.contains(*group),
            "{group} is also a support pair group"
        );
        let passages: BTreeSet<&str> = pairs.iter().map(|p| p.passage.as_str()).collect();
        assert_eq!(passages.len(), 1, "{group}: one passage per group");
        assert_eq!(pairs.iter().filter(|p| p.supported).count(), 1, "{group}");
        assert!(
            pairs.iter().filter(|p| !p.supported).count() >= 3,
            "{group}"
        );
        // A turned sentence is made of the passage's words: what an embedding cannot tell.
        let passage = content_words(&pairs[0].passage);
        for p in pairs.iter().filter(|p| !p.supported) {
            let words = content_words(&p.sentence);
            let shared = words.intersection(&passage).count() as f64 / words.len() as f64;
            assert!(shared >= 0.6, "{group}: {shared:.2} of {:?}", p.sentence);
        }
    }
}

#[test]
fn the_embedding_matcher_lets_turned_sentences_through() {
    let models = common::store();
    let embedder = FastEmbedder::from_store(&models, common::EMBED_MODEL, 1).unwrap();
    let matcher = SupportMatcher::new(&embedder, SUPPORT_THRESHOLD);
    let turned: Vec<_> = turned_pairs()
        .into_iter()
        .filter(|p| !p.supported)
        .collect();
    let passed = turned
        .iter()
        .filter(|p| matcher.supports(&p.sentence, &p.passage).unwrap())
        .count();
    eprintln!(
        "{passed} of {} turned sentences pass the embedding",
        turned.len()
    );
    assert!(
        passed * 2 >= turned.len(),
        "only {passed} of {}: the pairs no longer show what the judge is for",
        turned.len()
    );
}

#[test]
fn the_support_judge_calibrates_with_the_real_models() {
    let models = common::store();
    let embedder = FastEmbedder::from_store(&models, common::EMBED_MODEL, 1).unwrap();
    let llm = common::small_model();
    // Six passages of the turned pairs (24 pairs): the whole file on one thread is a minute.
    let pairs: Vec<_> = turned_pairs()
        .into_iter()
        .take(24)
        .map(|p| (p, true))
        .collect();
    let report = calibrate_support_judge(&llm, &embedder, &pairs, &NoProgress).unwrap();
    assert_eq!(report.pairs, pairs.len());
    assert_eq!(
        report.positives,
        pairs.iter().filter(|(p, _)| p.supported).count()
    );
    assert_eq!(
        report.usage.calls as usize,
        pairs.len(),
        "one forward pass a pair"
    );
    assert!(report
        .judged
        .iter()
        .all(|j| (0.0..=1.0).contains(&j.probability)));
    assert!((0.0..=1.0).contains(&report.auc));
    assert_eq!(report.checks.len(), 3);
    // Embedding alone: its figures are those of the matcher at its threshold.
    let embedding = &report.checks[0];
    let turned = pairs.iter().filter(|(p, _)| !p.supported).count();
    assert_eq!(embedding.turned_sentences, turned);
    let matcher = SupportMatcher::new(&embedder, SUPPORT_THRESHOLD);
    let passed = pairs
        .iter()
        .filter(|(p, _)| !p.supported && matcher.supports(&p.sentence, &p.passage).unwrap())
        .count();
    assert_eq!(embedding.turned_passed, passed);
    // Both checks together never let through more than either alone.
    let both = &report.checks[2];
    assert!(both.turned_passed <= embedding.turned_passed.min(report.checks[1].turned_passed));
    let table = markdown(&report);
    assert!(table.contains("turned sentences let through"), "{table}");
}

#[test]
fn the_finding_judge_calibrates_with_the_real_models() {
    use rudder_eval::finding_judge::{calibrate_finding_judge, markdown, shipped_pairs};
    let models = common::store();
    let embedder = FastEmbedder::from_store(&models, common::EMBED_MODEL, 1).unwrap();
    let llm = common::small_model();
    // Two questions' pairs: the whole file on one thread is minutes.
    let pairs: Vec<_> = shipped_pairs()
        .into_iter()
        .filter(|p| p.group == "g01" || p.group == "u4-q1")
        .collect();
    assert!(pairs.iter().any(|p| p.bears) && pairs.iter().any(|p| !p.bears));
    let report = calibrate_finding_judge(&llm, &embedder, &pairs, &NoProgress).unwrap();
    assert_eq!(report.pairs, pairs.len());
    assert_eq!(
        report.usage.calls as usize,
        2 * pairs.len(),
        "two forward passes a pair: the question and the contrast question"
    );
    for s in &report.scored {
        assert!((0.0..=1.0).contains(&s.probability), "{s:?}");
        assert!((0.0..=1.0).contains(&s.bias), "{s:?}");
        assert!((-1.0..=1.0).contains(&s.cosine), "{s:?}");
    }
    // Two questions fall in different halves, so each half is measured.
    assert!(report.scores.iter().all(|s| (0.0..=1.0).contains(&s.auc)));
    assert!(report.scores[0].name.contains("used"));
    // The toddler-flight passages about aircraft share its words: the cosine cut keeps
    // some of them, which is what the judge is for.
    assert!(report.kept_by_cosine_cut >= 1, "{}", markdown(&report));
    assert!(report.of_them_refused_by_judge <= report.kept_by_cosine_cut);
    eprintln!("{}", markdown(&report));
}

#[test]
fn the_need_judge_calibrates_with_the_real_models() {
    use rudder_eval::need_judge::{calibrate_need_judge, markdown, shipped_pairs};
    let models = common::store();
    let embedder = FastEmbedder::from_store(&models, common::EMBED_MODEL, 1).unwrap();
    let llm = common::small_model();
    // Two needs of one question and two of another: the whole file on one thread is minutes.
    let groups = ["u0-q0-n0", "u0-q0-n1", "u7-q0-n0", "u7-q0-n2"];
    let pairs: Vec<_> = shipped_pairs()
        .into_iter()
        .filter(|p| groups.contains(&p.group.as_str()))
        .collect();
    assert!(pairs.iter().any(|p| p.bears) && pairs.iter().any(|p| !p.bears));
    let report = calibrate_need_judge(&llm, &embedder, &pairs, &NoProgress).unwrap();
    assert_eq!(report.pairs, pairs.len());
    // A pass for every pair, and one per finding for the reader of whom nothing is known.
    let findings: std::collections::BTreeSet<(&str, &str)> = pairs
        .iter()
        .map(|p| (p.query.as_str(), p.finding.as_str()))
        .collect();
    assert_eq!(
        report.usage.calls as usize,
        pairs.len() + findings.len(),
        "{}",
        markdown(&report)
    );
    for s in &report.scored {
        assert!((0.0..=1.0).contains(&s.probability), "{s:?}");
        assert!((0.0..=1.0).contains(&s.bias), "{s:?}");
        assert!((-1.0..=1.0).contains(&s.cosine), "{s:?}");
    }
    assert!(report.scores.iter().all(|s| (0.0..=1.0).contains(&s.auc)));
    // The cosine match alone finds few of the findings that bear on a need: the judge's
    // reason to be.
    let bearing = report.scored.iter().filter(|s| s.pair.bears).count();
    assert!(report.found_by_cosine < bearing, "{}", markdown(&report));
    eprintln!("{}", markdown(&report));
}
