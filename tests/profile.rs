//! Query-aware profiles from a synthetic user's history, with the real small model: expansion,
//! retrieval, selection, generation, the cache and its invalidation when a cited session is
//! forgotten.

mod common;

use std::sync::Mutex;

use rudder::embed::{Embedder, FastEmbedder};
use rudder::history::{ForgetSelector, History, ImportOptions, NoProgress};
use rudder::llm::{Completion, FinishReason, Llm, LlmError, Request, Timing, Usage};
use rudder::profile::{ExpansionMode, ProfileOptions, Selection};
use rudder_synth::{write_export, SynthConfig};

fn history_of_a_synthetic_user(root: &std::path::Path, embedder: &FastEmbedder) -> History {
    let cfg = SynthConfig {
        seed: 5,
        sessions: 300,
        ..SynthConfig::default()
    };
    write_export(&cfg, &root.join("export")).unwrap();
    let mut history = History::open(&root.join("history")).unwrap();
    let report = history
        .import(
            &[root.join("export")],
            &ImportOptions::default(),
            &NoProgress,
        )
        .unwrap();
    assert!(report.added >= 290, "{report:?}");
    history
        .embed_pending(embedder, common::EMBED_MODEL, &NoProgress)
        .unwrap();
    history
}

#[test]
fn profile_with_the_real_model_cites_only_existing_candidates_and_forgetting_drops_it() {
    let models = common::store();
    let embedder = FastEmbedder::from_store(&models, common::EMBED_MODEL, 1).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let mut history = history_of_a_synthetic_user(tmp.path(), &embedder);
    let llm = common::small_model();
    let with = Some((&embedder as &dyn Embedder, common::EMBED_MODEL));
    let query = "What should I focus on in my training this month?";

    // LLM selection, CoT expansion: the full BESPOKE pipeline.
    let options = ProfileOptions {
        expansion: ExpansionMode::Cot,
        candidates: 8,
        ..ProfileOptions::default()
    };
    let run = rudder::profile::query_profile(&llm, &mut history, with, query, &options).unwrap();
    assert!(!run.from_cache);
    assert_eq!(run.candidates.len(), 8);
    assert_eq!(run.expansions.len(), 1);
    assert!(run.expansions[0].text.len() > query.len(), "CoT adds text");
    let candidate_ids: Vec<i64> = run.candidates.iter().map(|c| c.id).collect();
    for kept in &run.selected.kept {
        assert!(
            candidate_ids.contains(&kept.id),
            "kept {kept:?} is not a candidate"
        );
    }
    let kept_ids: Vec<i64> = run.selected.kept.iter().map(|k| k.id).collect();
    for id in run.profile.cited() {
        assert!(
            kept_ids.contains(&id),
            "cited {id} was not among the selected sessions"
        );
        assert!(history.get(id).unwrap().is_some());
    }
    // Schema-valid: the grammar bounds every list.
    assert!(run.profile.need.emphasize.len() <= 4);
    assert!(run.profile.tone.len() <= 3);
    assert!(
        run.usage.calls >= 3,
        "expansion + selection + generation: {:?}",
        run.usage
    );

    // The second call is served from the cache.
    let again = rudder::profile::query_profile(&llm, &mut history, with, query, &options).unwrap();
    assert!(again.from_cache);
    assert_eq!(again.profile, run.profile);

    // Embedding-only selection keeps candidates deterministically; forgetting one of them drops
    // the cached profile, and the rebuilt one no longer rests on it.
    let cheap = ProfileOptions {
        expansion: ExpansionMode::Raw,
        candidates: 6,
        selection: Selection::Embedding {
            min_similarity: -1.0,
        },
        use_cache: true,
    };
    let first = rudder::profile::query_profile(&llm, &mut history, with, query, &cheap).unwrap();
    assert_eq!(first.selected.kept.len(), 6);
    assert_eq!(
        first.expansions[0].usage.calls, 0,
        "raw expansion calls no model"
    );
    let forgotten = first.selected.kept[0].id;
    history.forget(&ForgetSelector::Session(forgotten)).unwrap();
    let cached = rudder::profile::cached_query_profile(&history, llm.model_name(), query, &cheap);
    assert!(
        cached.unwrap().is_none(),
        "forgetting a session the profile rests on drops the cached profile"
    );
    // The LLM-selected profile is dropped too if it cited the forgotten session, kept otherwise.
    let other =
        rudder::profile::cached_query_profile(&history, llm.model_name(), query, &options).unwrap();
    let rested_on_it = run.selected.kept.iter().any(|k| k.id == forgotten);
    assert_eq!(other.is_none(), rested_on_it);
}

#[test]
fn general_profile_is_built_once_and_refreshed_only_with_new_sessions() {
    let models = common::store();
    let embedder = FastEmbedder::from_store(&models, common::EMBED_MODEL, 1).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let mut history = history_of_a_synthetic_user(tmp.path(), &embedder);
    let llm = common::small_model();
    let (profile, usage) = rudder::profile::general_profile(&llm, &mut history, true).unwrap();
    assert_eq!(usage.calls, 1);
    assert_eq!(
        profile.watermark,
        history.store().max_session_id().unwrap(),
        "it has read up to the newest session"
    );
    for id in profile.cited() {
        assert!(history.get(id).unwrap().is_some());
    }
    // Nothing new: no model call.
    let (same, usage) = rudder::profile::general_profile(&llm, &mut history, true).unwrap();
    assert_eq!(usage.calls, 0);
    assert_eq!(same, profile);
}

/// A model that answers a selection prompt with more decisions than sessions, as a backend
/// without grammar support might.
struct OutOfRange {
    calls: Mutex<u32>,
}

impl Llm for OutOfRange {
    fn model_name(&self) -> &str {
        "scripted"
    }

    fn complete(
        &self,
        _request: &Request,
        _on_text: &mut dyn FnMut(&str),
        _cancel: &rudder::llm::CancelToken,
    ) -> Result<Completion, LlmError> {
        *self.calls.lock().unwrap() += 1;
        Ok(Completion {
            text: r#"{"decisions":[{"keep":false,"signal":"","adjacent":false},
                                   {"keep":true,"signal":"runs","adjacent":false},
                                   {"keep":false,"signal":"","adjacent":false},
                                   {"keep":true,"signal":"no such session","adjacent":true},
                                   {"keep":true,"signal":"nor this","adjacent":true}]}"#
                .into(),
            usage: Usage {
                calls: 1,
                ..Usage::default()
            },
            timing: Timing::default(),
            finish: FinishReason::Stop,
        })
    }
}

#[test]
fn selection_never_keeps_a_session_that_was_not_a_candidate() {
    let models = common::store();
    let embedder = FastEmbedder::from_store(&models, common::EMBED_MODEL, 1).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let mut history = history_of_a_synthetic_user(tmp.path(), &embedder);
    let candidates = history.get_many(&[3, 7, 11]).unwrap();
    let llm = OutOfRange {
        calls: Mutex::new(0),
    };
    let selected = rudder::profile::select(
        Some(&llm),
        &mut history,
        None,
        "anything",
        &candidates,
        Selection::Llm { batch: 8 },
    )
    .unwrap();
    assert_eq!(*llm.calls.lock().unwrap(), 1, "one batch");
    let kept: Vec<i64> = selected.kept.iter().map(|k| k.id).collect();
    assert_eq!(
        kept,
        vec![7],
        "only number 2 of the batch is real, and it counts once"
    );
}
