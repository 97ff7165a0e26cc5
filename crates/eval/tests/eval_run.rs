//! The evaluation runner with the real small model as system, judge and simulated user: one
//! hand-written case, the `query-only` baseline and `rudder` at C0 = 0 (history imported and
//! profiled, pauses answered by the simulated user), every report judged, then the table and
//! the C0 plot. Small-model scores mean nothing; the test checks that the harness is whole and
//! that the numbers are in range and consistent.

use rudder_testkit as common;

use rudder::embed::{Embedder, FastEmbedder};
use rudder::history::NoProgress;
use rudder::sources::docs::Library;
use rudder_eval::cases::{CaseAspect, CasePersona, EvalCase};
use rudder_eval::replay::ReplayCache;
use rudder_eval::runner::{run_case, RunContext, System};
use rudder_eval::summary::{markdown_table, plot_against_c0};

fn case(dir: &std::path::Path) -> EvalCase {
    let history = dir.join("histories/c1/conversations.json");
    std::fs::create_dir_all(history.parent().unwrap()).unwrap();
    std::fs::copy(
        format!(
            "{}/../../tests/fixtures/history/chatgpt/conversations.json",
            env!("CARGO_MANIFEST_DIR")
        ),
        &history,
    )
    .unwrap();
    let aspect = |a: &str| CaseAspect {
        aspect: a.into(),
        evidence: "She drinks green tea every morning.".into(),
        reason: "It is her daily habit.".into(),
    };
    let text = "She is a 30-year-old nurse who drinks green tea every morning. She is careful \
                and likes practical advice.";
    EvalCase {
        id: "c1".into(),
        seed: 0,
        query_id: "q1".into(),
        query: "What is the best way to make green tea at home?".into(),
        persona: CasePersona {
            profile: text.into(),
            personality: String::new(),
            text: text.into(),
            first_sentence: "She is a 30-year-old nurse who drinks green tea every morning.".into(),
        },
        aspects: vec![
            aspect("Water temperature"),
            aspect("Steeping time"),
            aspect("Storing the leaves"),
        ],
        key_points: vec!["Use water below boiling".into()],
        history_file: "histories/c1/conversations.json".into(),
        history_conversations: 6,
        model: "hand-written".into(),
        prompts_version: "test".into(),
    }
}

#[test]
fn baseline_and_rudder_runs_are_judged_tabled_and_plotted() {
    let models = common::store();
    let embedder = FastEmbedder::from_store(&models, common::EMBED_MODEL, 1).unwrap();
    let llm = common::small_model();
    let dir = tempfile::tempdir().unwrap();
    let files = dir.path().join("files");
    std::fs::create_dir_all(&files).unwrap();
    for (name, text) in [
        (
            "brewing.md",
            "# Brewing green tea\n\nGreen tea is brewed with water at 70 to 80 °C for one to \
             two minutes. Boiling water makes it bitter.",
        ),
        (
            "storage.md",
            "# Storing tea\n\nKeep tea airtight, dark and cool. Opened green tea stays fresh \
             for about two months.",
        ),
    ] {
        std::fs::write(files.join(name), text).unwrap();
    }
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
    let case = case(dir.path());
    // As `rudder eval run` does: every call goes through a replay cache.
    let cache = ReplayCache::open(&llm, &dir.path().join("llm-cache.jsonl")).unwrap();
    let ctx = RunContext {
        llm: &cache,
        judge_llm: &cache,
        embedder: &embedder,
        embed_model: common::EMBED_MODEL.into(),
        docs_dir: docs,
        cases_dir: dir.path().to_path_buf(),
        work_dir: dir.path().join("work"),
        depth: 1,
        breadth: 1,
        clarify_turns: 0,
    };
    let mut records = Vec::new();
    for system in [System::QueryOnly, System::Rudder { c0: 0.0 }] {
        let out = run_case(&ctx, &case, system).unwrap();
        let r = &out.record;
        assert_eq!(r.system, system.name());
        assert!((0.0..=1.0).contains(&r.alignment), "{r:?}");
        assert!((0.0..=1.0).contains(&r.focus), "{r:?}");
        assert_eq!(out.per_aspect.len(), case.aspects.len());
        assert!(out.per_aspect.iter().all(|&s| s <= 2));
        let bespoke = r.bespoke.unwrap();
        assert!(
            bespoke.iter().all(|s| (1.0..=5.0).contains(s)),
            "{bespoke:?}"
        );
        assert!(r.llm_calls > 0 && r.prompt_tokens > 0 && r.seconds > 0.0);
        // The system's cost is its profile and research stages; judging is apart.
        let stages = r.stages;
        assert_eq!(r.llm_calls, stages.profile.calls + stages.research.calls);
        assert!((r.seconds - stages.profile.seconds - stages.research.seconds).abs() < 1e-6);
        assert!(
            stages.judge.calls >= 4,
            "alignment, key points, mapping, BESPOKE: {r:?}"
        );
        // A replayed call carries the cost of the run that made it (so a record does not
        // depend on the cache): the second system replays the baseline's identical report
        // calls (their prompts hold facts, not the persona) and may account more seconds than
        // it spent. The first system computes every call, at most `parallel` of them at once
        // (a report's paragraphs are drafted together), so its accounted seconds stay within
        // that many times its wall time.
        if records.is_empty() {
            let width = rudder::llm::Llm::parallelism(&llm) as f64;
            assert!(r.wall_seconds * width >= r.seconds, "{r:?}");
        }
        assert!(!out.report_markdown.is_empty());
        records.push(out.record);
    }
    assert_eq!(records[0].pauses, 0, "the baseline never pauses");
    assert_eq!(
        records[0].stages.profile.calls, 0,
        "the baseline has no history"
    );
    assert!(
        records[1].stages.profile.calls > 0,
        "rudder profiles the history"
    );

    // Run again: every call is replayed, and the record is the same, costs included.
    let computed = cache.stats().computed;
    let again = run_case(&ctx, &case, System::QueryOnly).unwrap();
    assert_eq!(cache.stats().computed, computed, "nothing ran twice");
    assert!(cache.stats().replayed > 0);
    let mut replayed = again.record.clone();
    replayed.wall_seconds = records[0].wall_seconds;
    assert_eq!(replayed, records[0]);
    assert_eq!(records[0].c0, None);
    assert_eq!(records[1].c0, Some(0.0));
    // The history was imported once for the case, and the profile used it.
    assert!(dir.path().join("work/c1/history").exists());

    let table = markdown_table(&records);
    assert!(table.contains("| query-only | 1 |"), "{table}");
    assert!(table.contains("| rudder (C0 = 0.0) | 1 |"), "{table}");
    let svg = dir.path().join("c0.svg");
    plot_against_c0(&records, &svg).unwrap();
    let svg = std::fs::read_to_string(svg).unwrap();
    assert_eq!(svg.matches("<circle").count(), 3, "one C0, three panels");
    eprintln!("{table}");
}
