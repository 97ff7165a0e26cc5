//! The relevance judge's calibration (`rudder eval relevance`): the labelled pairs are well
//! formed and numerous enough, and the calibration runs end to end with the real model.

use rudder_testkit as common;

use std::collections::BTreeSet;

use rudder::history::NoProgress;
use rudder::profile::relevance::Judge;
use rudder_eval::relevance::{
    calibrate_relevance, markdown, planted_pairs, said_pairs, said_sentences, shipped_pairs,
};

#[test]
fn the_pairs_cover_every_planted_question_with_both_labels() {
    let dir = tempfile::tempdir().unwrap();
    let set = rudder_synth::planted::write_planted_set(0, dir.path()).unwrap();
    let planted = planted_pairs(&set);
    let shipped = shipped_pairs();
    assert!(shipped.len() >= 30, "{}", shipped.len());
    assert!(
        planted.len() + shipped.len() >= 200,
        "the issue asks for at least 200 labelled pairs: {} + {}",
        planted.len(),
        shipped.len()
    );
    let questions: BTreeSet<&str> = set
        .users
        .iter()
        .flat_map(|u| &u.questions)
        .map(|q| q.id.as_str())
        .collect();
    for q in &questions {
        let of_q: Vec<_> = planted.iter().filter(|p| p.group == *q).collect();
        assert!(of_q.iter().any(|p| p.relevant), "{q} has no relevant pair");
        assert!(
            of_q.iter().any(|p| !p.relevant),
            "{q} has no irrelevant pair"
        );
    }
    // A need is never both relevant and irrelevant to the same question.
    for p in planted.iter().filter(|p| p.relevant) {
        assert!(!planted
            .iter()
            .any(|o| !o.relevant && o.query == p.query && o.statement == p.statement));
    }
    // Shipped groups do not collide with planted question ids (the halves split by group).
    for p in &shipped {
        assert!(!questions.contains(p.group.as_str()), "{}", p.group);
    }
}

#[test]
fn calibration_runs_with_the_real_model() {
    let llm = common::small_model();
    let pairs: Vec<_> = shipped_pairs().into_iter().take(12).collect();
    let embedder =
        rudder::embed::FastEmbedder::from_store(&common::store(), common::EMBED_MODEL, 1).unwrap();
    let report =
        calibrate_relevance(&llm, Some(&embedder), &pairs, Judge::Statement, &NoProgress).unwrap();
    assert_eq!(report.pairs, 12);
    assert_eq!(report.scored.len(), 12);
    assert!(report.positives > 0 && report.positives < 12);
    for s in &report.scored {
        assert!((s.score - (s.probability - s.bias)).abs() < 1e-6, "{s:?}");
    }
    for auc in [report.auc, report.auc_without_contrast] {
        assert!((0.0..=1.0).contains(&auc));
    }
    // With an embedder, every pair also has its similarity to the question's facet lines,
    // and both other scores are calibrated.
    for s in &report.scored {
        let f = s.facet_similarity.expect("an embedder was given");
        assert!((-1.0..=1.0).contains(&f), "{s:?}");
    }
    assert_eq!(report.others.len(), 5);
    for s in &report.scored {
        let with_situation = s.situation_similarity.expect("an embedder was given");
        assert!(
            with_situation >= s.facet_similarity.unwrap() - 1e-6,
            "{s:?}"
        );
    }
    let table = markdown(&report);
    assert!(
        table.contains("held out") && table.contains("AUC"),
        "{table}"
    );
}

#[test]
fn what_the_planted_users_said_gives_labelled_pairs_for_the_judge() {
    let dir = tempfile::tempdir().unwrap();
    let set = rudder_synth::planted::write_planted_set(0, &dir.path().join("set")).unwrap();
    let said = said_sentences(
        &set,
        &dir.path().join("set"),
        &dir.path().join("work"),
        &NoProgress,
    )
    .unwrap();
    assert_eq!(said.len(), set.users.len());
    let pairs = said_pairs(&set, &said);
    assert!(pairs.len() >= 200, "{}", pairs.len());
    let budget = "I can spend 200 euros on my ears this year.";
    let earplugs = set
        .users
        .iter()
        .flat_map(|u| &u.questions)
        .find(|q| q.query.contains("earplugs"))
        .unwrap();
    assert!(pairs
        .iter()
        .any(|p| p.relevant && p.statement == budget && p.group == earplugs.id));
    // The same sentence is not relevant to another user's question.
    assert!(pairs
        .iter()
        .any(|p| !p.relevant && p.statement == budget && p.group != earplugs.id));
    for question in set.users.iter().flat_map(|u| &u.questions).take(8) {
        let of_q: Vec<_> = pairs.iter().filter(|p| p.group == question.id).collect();
        assert!(of_q.iter().any(|p| p.relevant), "{}", question.id);
        assert!(of_q.iter().any(|p| !p.relevant), "{}", question.id);
    }
}
