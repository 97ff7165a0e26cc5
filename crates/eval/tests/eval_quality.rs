//! `rudder eval quality` end to end with the real small model and embedder on two planted-needs
//! users: the set written and imported through the real importers, both matchers calibrated,
//! retrieval of the planting sessions, two profiles, the three report systems on one question,
//! answer coverage on a hand-made Researchy-shaped question, then the table. SmolLM2's scores
//! mean nothing; the test checks that every stage ran, that the figures are in range and
//! consistent with their parts, and that the table states the sample.

use rudder_testkit as common;

use rudder::embed::{Embedder, FastEmbedder};
use rudder::history::NoProgress;
use rudder::sources::docs::Library;
use rudder_eval::quality::{self, QualityContext, QualityOptions, ReportSystem};
use rudder_eval::replay::ReplayCache;

/// A two-question Researchy-shaped split: queries.jsonl and key points.
fn researchy(dir: &std::path::Path) {
    let split = dir.join("researchy-dev");
    std::fs::create_dir_all(split.join("key_point")).unwrap();
    std::fs::write(
        split.join("queries.jsonl"),
        "{\"id\": \"q0\", \"query\": \"Why does green tea turn bitter?\"}\n",
    )
    .unwrap();
    std::fs::write(
        split.join("key_point/q0_aggregated.json"),
        r#"{"question": "Why does green tea turn bitter?", "key_points": [
            {"point_number": 1, "point_content": "Boiling water makes green tea bitter.", "original_point_number": [1]},
            {"point_number": 2, "point_content": "Steeping too long releases bitter compounds.", "original_point_number": [2]}]}"#,
    )
    .unwrap();
    std::fs::write(dir.join("profile.jsonl"), "\"She is a nurse.\"\n").unwrap();
    std::fs::write(dir.join("personality.jsonl"), "\"Calm.\"\n").unwrap();
}

#[test]
fn the_quality_evaluation_runs_every_stage_on_two_users() {
    let models = common::store();
    let embedder = FastEmbedder::from_store(&models, common::EMBED_MODEL, 1).unwrap();
    let llm = common::small_model();
    let dir = tempfile::tempdir().unwrap();

    let files = dir.path().join("files");
    std::fs::create_dir_all(&files).unwrap();
    std::fs::write(
        files.join("tea.md"),
        "# Green tea\n\nGreen tea is brewed with water at 70 to 80 °C for one to two minutes. \
         Boiling water and long steeping make it bitter.",
    )
    .unwrap();
    let docs = dir.path().join("docs");
    let mut library = Library::open(&docs).unwrap();
    library
        .add(
            &files,
            Some((&embedder as &dyn Embedder, common::EMBED_MODEL)),
            &NoProgress,
        )
        .unwrap();
    drop(library);
    let eval_dir = dir.path().join("eval");
    researchy(&eval_dir);

    let set = quality::open_or_write_set(&dir.path().join("set"), 0).unwrap();
    let users: Vec<String> = set.users.iter().take(2).map(|u| u.id.clone()).collect();
    let cache = ReplayCache::open(&llm, &dir.path().join("llm-cache.jsonl")).unwrap();
    let ctx = QualityContext {
        llm: &cache,
        embedder: &embedder,
        embed_model: common::EMBED_MODEL.into(),
        set_dir: dir.path().join("set"),
        docs_dir: docs,
        eval_dir: Some(eval_dir),
        work_dir: dir.path().join("work"),
        progress: &NoProgress,
    };
    let options = QualityOptions {
        users: users.clone(),
        questions: Vec::new(),
        profile_questions: 2,
        report_questions: 1,
        systems: ReportSystem::ALL.to_vec(),
        researchy_questions: 1,
        // The test's library is one tea note, not the Wikipedia corpus.
        grounded_questions: 0,
        foreign_questions: 1,
        memory: true,
        // The profiles judge what memory holds, as `--memory-candidates 24` asks.
        memory_candidates: rudder::profile::memory::MEMORY_CANDIDATES,
        // A part of each history: the stage runs and its sessions reach the profiles, at a
        // fraction of reading 350 sessions a user with the model on one thread.
        memory_limit: Some(24),
        probe_only_margin: None,
        depth: 0,
        breadth: 1,
        support_judge: None,
        finding_judge: None,
        // The guides' default sample is u0-q0 and u1-q0: the users' first questions, as above.
        guides: true,
    };
    let records = quality::run_quality(&ctx, &set, &options).unwrap();
    assert!(records.failures.is_empty(), "{:#?}", records.failures);

    // The sample: round-robin over the two users, reports on the first profile question.
    assert_eq!(records.sample.users, users);
    let first_questions: Vec<String> = set
        .users
        .iter()
        .take(2)
        .map(|u| u.questions[0].id.clone())
        .collect();
    assert_eq!(records.sample.profile, first_questions);
    assert_eq!(records.sample.report, first_questions[..1]);
    assert!(records.sample.guides);
    // The guides narrow every stage to the questions they cover, retrieval too.
    assert_eq!(records.sample.retrieval, first_questions);
    let questions = first_questions.len();

    // Calibrated matchers: a threshold and held-out figures in range, on real pairs.
    for c in [&records.calibration.need, &records.calibration.support] {
        assert!(c.held_out.pairs >= 50 && c.calibration.pairs >= 50, "{c:?}");
        for v in [c.held_out.precision, c.held_out.recall, c.held_out.f1] {
            assert!((0.0..=1.0).contains(&v), "{c:?}");
        }
    }

    let retrieval = records.retrieval.as_ref().expect("retrieval ran");
    assert_eq!(retrieval.modes.len(), 5, "raw, CoT, pseudo, facets, fused");
    assert_eq!(retrieval.scored, questions);
    for m in &retrieval.modes {
        assert!((0.0..=1.0).contains(&m.ndcg_at_10) && (0.0..=1.0).contains(&m.recall_at_20));
    }

    assert_eq!(records.profiles.len(), 2);
    for p in &records.profiles {
        assert!((0.0..=1.0).contains(&p.need_recall));
        assert_eq!(
            p.need_recall,
            p.needs_stated.len() as f64 / p.needs as f64,
            "{p:?}"
        );
        assert!(p.cited_planted <= p.cited_sessions);
        assert!(p.cost.calls > 0, "the profile called the model: {p:?}");
    }

    assert_eq!(records.reports.len(), 3);
    for system in ReportSystem::ALL {
        let r = records
            .reports
            .iter()
            .find(|r| r.system == system)
            .unwrap_or_else(|| panic!("no {} report", system.name()));
        assert!(!r.markdown.is_empty());
        assert!((0.0..=1.0).contains(&r.need_uptake));
        let h = &r.hygiene;
        assert!(h.words > 0 && h.repeated <= h.sentences && h.supported <= h.cited);
        assert_eq!(h.cited + h.uncited, h.sentences, "{h:?}");
        // #12's floor for the test model: nothing that looks broken, little repetition.
        assert!(
            h.debris.is_empty(),
            "{}: {:?}\n{}",
            system.name(),
            h.debris,
            r.markdown
        );
        assert!(
            h.repetition() <= 0.10,
            "{}: {h:?}\n{}",
            system.name(),
            r.markdown
        );
        assert!(r.cost.values().map(|c| c.calls).sum::<u64>() > 0, "{r:?}");
        let f = &r.findings;
        assert_eq!(f.placed + f.missing.len(), f.distinct, "{f:?}");
        let c = &r.consistency;
        assert!(c.summary_in_body <= c.summary_sentences, "{c:?}");
        assert!(c.false_not_covered.len() <= c.not_covered, "{c:?}");
        assert!(r
            .needs_met_by_form
            .iter()
            .all(|id| r.needs_addressed.contains(id)));
    }
    // The oracle hands the first user's needs over as what they said, her "short answers in
    // bullet points" among them: the report is written so, and says why.
    let oracle = records
        .reports
        .iter()
        .find(|r| r.system == ReportSystem::Oracle)
        .unwrap();
    if oracle.markdown.contains("\n## ") {
        assert!(
            oracle
                .markdown
                .contains("*Written as you like answers: short, in bullet points"),
            "{}",
            oracle.markdown
        );
    }
    // A style holds for every question its user asks: the first user's profiles are scored
    // against her tone need's forms.
    for p in records.profiles.iter().chain(&records.foreign_profiles) {
        if p.user == set.users[0].id {
            assert_eq!(p.style_asked, ["bullets", "short"], "{p:?}");
        }
        assert!(!p.style_given || !p.style_asked.is_empty(), "{p:?}");
    }

    // Each user's history was read into memory up to the limit, before the profiles.
    assert_eq!(records.memory.len(), 2, "{:?}", records.memory);
    for m in &records.memory {
        assert!(m.read > 0 && m.read + m.skipped <= 24, "{m:?}");
        assert!(m.cost.calls > 0, "{m:?}");
    }

    // False personalisation: the first user asks the second user's first question with their
    // own history, scored against the first user's needs (tone needs aside).
    assert_eq!(records.foreign.len(), 1);
    let foreign = &records.foreign[0];
    assert_eq!(
        foreign.question,
        format!("{}@{}", set.users[1].questions[0].id, set.users[0].id)
    );
    assert_eq!(foreign.system, ReportSystem::History);
    assert!(foreign.needs > 0 && foreign.needs_addressed.len() <= foreign.needs);
    assert!(foreign
        .needs_named_not_covered
        .iter()
        .all(|id| !foreign.needs_addressed.contains(id)));
    assert!(records.false_personalisation().is_some());
    // Its profile is scored against the same needs, and cites only the user's sessions.
    assert_eq!(records.foreign_profiles.len(), 1);
    let profile = &records.foreign_profiles[0];
    assert_eq!(profile.question, foreign.question);
    assert_eq!(profile.needs, foreign.needs);
    assert!(profile.cited_planted <= profile.cited_sessions);
    assert!(records.profile_false_personalisation().is_some());

    assert_eq!(records.coverage.len(), 1);
    let c = &records.coverage[0];
    assert_eq!(c.key_points, 2);
    assert!(c.covered.iter().all(|&i| i < 2));

    let table = quality::table::markdown(&records);
    for needle in [
        "addresses the need",
        "supported by the passage",
        "| facets |",
        "| fused |",
        "need recall",
        "| no-history |",
        "| history |",
        "| oracle |",
        "key-point recall",
        "finding coverage",
        "Cost per stage",
        "False personalisation",
        "False personalisation in profiles",
        "**Answer style:**",
        // The reports searched the guides beside the library.
        "the Wikipedia corpus and the guides",
        &first_questions[0],
    ] {
        assert!(table.contains(needle), "{needle:?} missing from\n{table}");
    }
}
