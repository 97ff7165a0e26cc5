//! Query-aware profiles from a synthetic user's history, with the real small model: expansion,
//! retrieval, per-session extraction, assembly, the cache and its invalidation when a cited
//! session is forgotten; what the user told Rudder (their statements, deleted statements,
//! sources switched off) applied to every later profile; and the measurements behind the
//! generic-phrase threshold.

use rudder_testkit as common;

use rudder::embed::{Embedder, FastEmbedder};
use rudder::history::{Filter, ForgetSelector, History, ImportOptions, NoProgress, SearchMode};
use rudder::llm::Llm;
use rudder::profile::extract::{Checks, GENERIC_THRESHOLD};
use rudder::profile::user_statements::statement_key;
use rudder::profile::{
    retrieve, Expanded, Expansion, ExpansionMode, ProfileOptions, Selection, Statement, You,
};
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
fn profile_with_the_real_model_cites_only_sessions_it_was_shown_and_nothing_generic() {
    let models = common::store();
    let embedder = FastEmbedder::from_store(&models, common::EMBED_MODEL, 1).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let mut history = history_of_a_synthetic_user(tmp.path(), &embedder);
    let llm = common::small_model();
    let with = Some((&embedder as &dyn Embedder, common::EMBED_MODEL));
    let query = "What should I focus on in my training this month?";

    // CoT expansion, then one extraction call per candidate.
    let options = ProfileOptions {
        expansion: ExpansionMode::Cot,
        candidates: 8,
        relevance_threshold: -1.0,
        style_probes: false,
        ..ProfileOptions::default()
    };
    let run = rudder::profile::query_profile(&llm, &mut history, with, query, &options).unwrap();
    assert!(!run.from_cache);
    assert_eq!(run.candidates.len(), 8);
    assert_eq!(run.selected.judged, 8, "every candidate is asked about");
    assert_eq!(run.expansions.len(), 1);
    assert!(run.expansions[0].text.len() > query.len(), "CoT adds text");
    let calls = run.generation_usage.calls;
    // Each kept phrase is judged for the question and the contrast questions (relevance).
    let judged = (run.selected.kept.len()
        * (1 + rudder::profile::relevance::CONTRAST_QUESTIONS.len())) as u64;
    assert!(
        (8..=16).contains(&(calls - judged)),
        "one call per candidate, at most one retry each: {calls} less {judged} judgements"
    );
    assert_eq!(run.usage.calls, calls + run.expansions[0].usage.calls);
    let candidate_ids: Vec<i64> = run.candidates.iter().map(|c| c.id).collect();
    let kept_ids: Vec<i64> = run.selected.kept.iter().map(|k| k.id).collect();
    for id in &kept_ids {
        assert!(candidate_ids.contains(id), "kept {id} is not a candidate");
    }
    let checks = Checks::new(Some(&embedder), query).unwrap();
    let (_, domain) = run.profile.statements()[0];
    assert!(
        domain.sessions.is_empty(),
        "the domain is not inferred from sessions"
    );
    // The standing constraints (the synthetic user's custom instructions) cite no session;
    // every inferred statement does.
    let standing: Vec<String> = You::load(history.store())
        .unwrap()
        .standing
        .into_iter()
        .map(|s| s.text)
        .collect();
    let mut carried = 0;
    for (criterion, s) in run.profile.statements().into_iter().skip(1) {
        if standing.contains(&s.text) {
            assert!(s.sessions.is_empty(), "{s:?}");
            carried += 1;
            continue;
        }
        assert!(!s.sessions.is_empty(), "{criterion}: {s:?} cites nothing");
        for id in &s.sessions {
            assert!(
                kept_ids.contains(id),
                "{s:?} cites {id}, which yielded no phrase"
            );
            assert!(history.get(*id).unwrap().is_some());
        }
        let generic = checks.genericness(&s.text).unwrap();
        assert!(generic < GENERIC_THRESHOLD, "{s:?} is generic ({generic})");
        assert!(!s.text.contains(['{', '}', '"']), "{s:?}");
        assert!(
            !s.text.contains("sodium"),
            "copied the prompt's example: {s:?}"
        );
    }
    assert!(carried <= rudder::profile::user_statements::MAX_STANDING);
    assert!(
        run.profile.statements().len() - carried
            <= 1 + rudder::profile::query_profile::MAX_STATEMENTS
                + rudder::profile::query_profile::MAX_STYLE_STATEMENTS,
        "domain plus at most six inferred, and two of how the user wants answers"
    );
    eprintln!("{}", run.profile.to_prompt_text());

    // The second call is served from the cache.
    let again = rudder::profile::query_profile(&llm, &mut history, with, query, &options).unwrap();
    assert!(again.from_cache);
    assert_eq!(again.profile, run.profile);
}

/// A model that says of every item its first words, as a phrase about the user, and judges
/// every phrase relevant.
fn echo_model() -> common::Canned {
    common::Canned::new(|prompt| {
        if prompt.contains("Would a careful advisor") {
            return r#"{"probabilities":[0.9,0.1]}"#.to_string();
        }
        let item = prompt
            .lines()
            .rev()
            .find_map(|l| l.strip_prefix("Item: "))
            .unwrap_or("");
        let words: Vec<&str> = item
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.len() > 2)
            .skip(1)
            .take(5)
            .collect();
        serde_json::json!({"about_user": words.join(" "), "kind": "constraint", "relevance": 3})
            .to_string()
    })
}

#[test]
fn forgetting_a_cited_session_drops_the_cached_profile() {
    let models = common::store();
    let embedder = FastEmbedder::from_store(&models, common::EMBED_MODEL, 1).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let mut history = history_of_a_synthetic_user(tmp.path(), &embedder);
    let llm = echo_model();
    let with = Some((&embedder as &dyn Embedder, common::EMBED_MODEL));
    let query = "What should I focus on in my training this month?";
    // Embedding pre-filtering keeps every candidate at -1; each is then asked about once.
    let cheap = cheap_options();
    let first = rudder::profile::query_profile(&llm, &mut history, with, query, &cheap).unwrap();
    assert_eq!(first.selected.judged, 6);
    assert_eq!(
        llm.calls(),
        6 + first.usage.calls as usize - 6,
        "no other model calls"
    );
    assert_eq!(
        first.expansions[0].usage.calls, 0,
        "raw expansion calls no model"
    );
    assert!(!first.selected.kept.is_empty(), "{:?}", llm.prompts());
    let cited = first.profile.cited();
    for k in &first.selected.kept {
        assert!(
            cited.contains(&k.id),
            "six candidates fit under the cap: {k:?}"
        );
    }
    let forgotten = cited[0];
    history.forget(&ForgetSelector::Entry(forgotten)).unwrap();
    let cached = rudder::profile::cached_query_profile(&history, llm.model_name(), query, &cheap);
    assert!(
        cached.unwrap().is_none(),
        "forgetting a session the profile rests on drops the cached profile"
    );
    let rebuilt = rudder::profile::query_profile(&llm, &mut history, with, query, &cheap).unwrap();
    assert!(!rebuilt.from_cache);
    assert!(!rebuilt.profile.cited().contains(&forgotten));
}

/// Options that ask about six candidates with no other model call: raw expansion, and
/// embedding pre-filtering that keeps every candidate (-1).
fn cheap_options() -> ProfileOptions {
    ProfileOptions {
        expansion: ExpansionMode::Raw,
        candidates: 6,
        selection: Selection::Embedding {
            min_similarity: -1.0,
        },
        use_cache: true,
        // SmolLM2-135M's P(yes) is noise (it says "no" to most questions): keep every
        // statement, still judged, so the phrases these tests look at stay.
        relevance_threshold: -1.0,
        memory_candidates: rudder::profile::memory::MEMORY_CANDIDATES,
        // Six candidates and nothing else: the style reading has its own tests.
        style_probes: false,
        ..ProfileOptions::default()
    }
}

#[test]
fn what_the_user_told_rudder_shapes_every_later_profile() {
    let models = common::store();
    let embedder = FastEmbedder::from_store(&models, common::EMBED_MODEL, 1).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let mut history = history_of_a_synthetic_user(tmp.path(), &embedder);
    let llm = echo_model();
    let with = Some((&embedder as &dyn Embedder, common::EMBED_MODEL));
    let query = "What should I focus on in my training this month?";
    let options = cheap_options();
    let first = rudder::profile::query_profile(&llm, &mut history, with, query, &options).unwrap();
    let victim: Statement = first
        .profile
        .statements()
        .into_iter()
        .find(|(c, _)| *c != "domain")
        .map(|(_, s)| s.clone())
        .expect("the echo model's phrases make statements");

    // The user corrects one inferred statement: it goes, their words come first.
    let said = "I train for a marathon in April";
    let store = history.store();
    store
        .hide_statement(&statement_key(&victim.text), &victim.text, &victim.sessions)
        .unwrap();
    store
        .add_user_statement(said, "emphasize", Some(&victim.text))
        .unwrap();
    let calls = llm.calls();
    let again = rudder::profile::query_profile(&llm, &mut history, with, query, &options).unwrap();
    assert!(
        again.from_cache,
        "a correction applies to the cached profile"
    );
    assert_eq!(llm.calls(), calls);
    assert!(
        again
            .profile
            .statements()
            .iter()
            .all(|(_, s)| s.text != victim.text),
        "{:?}",
        again.profile
    );
    assert_eq!(
        again.profile.need.emphasize[0],
        Statement {
            text: said.into(),
            sessions: Vec::new(),
            said: true
        }
    );
    assert!(again
        .profile
        .to_prompt_text()
        .contains(&format!("- They said: {said}\n")));

    // Every source the candidates came from is switched off: the profile is built again and
    // rests on none of their sessions, which stay in the history.
    let candidate_ids: Vec<i64> = first.candidates.iter().map(|c| c.id).collect();
    let mut sources: Vec<_> = history
        .get_many(&candidate_ids)
        .unwrap()
        .into_iter()
        .map(|s| s.entry.source)
        .collect();
    sources.sort_by_key(|s| s.as_str());
    sources.dedup();
    let sessions_before = history.store().count().unwrap();
    for s in &sources {
        history.store().set_source_personalised(*s, false).unwrap();
    }
    let rebuilt =
        rudder::profile::query_profile(&llm, &mut history, with, query, &options).unwrap();
    assert!(!rebuilt.from_cache, "other switches, another profile");
    for c in &rebuilt.candidates {
        let s = history.get(c.id).unwrap().unwrap();
        assert!(
            !sources.contains(&s.entry.source),
            "{c:?} is from a switched-off source"
        );
    }
    assert_eq!(rebuilt.profile.need.emphasize[0].text, said);
    assert_eq!(history.store().count().unwrap(), sessions_before);

    // Forgetting everything forgets what the user told Rudder too.
    history.forget(&ForgetSelector::All).unwrap();
    assert!(You::load(history.store()).unwrap().is_empty());
}

#[test]
fn the_real_model_s_profile_puts_the_users_words_first() {
    let models = common::store();
    let embedder = FastEmbedder::from_store(&models, common::EMBED_MODEL, 1).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let mut history = history_of_a_synthetic_user(tmp.path(), &embedder);
    let llm = common::small_model();
    let with = Some((&embedder as &dyn Embedder, common::EMBED_MODEL));
    let query = "What should I focus on in my training this month?";
    let said = "Keep answers short";
    history
        .store()
        .add_user_statement(said, "content depth", None)
        .unwrap();
    let run =
        rudder::profile::query_profile(&llm, &mut history, with, query, &cheap_options()).unwrap();
    assert_eq!(run.selected.judged, 6, "the model read the candidates");
    assert_eq!(run.profile.content_depth[0].text, said);
    assert!(run.profile.content_depth[0].said);
    let inferred = run
        .profile
        .statements()
        .iter()
        .filter(|(_, s)| !s.sessions.is_empty())
        .count();
    assert!(
        inferred
            <= rudder::profile::query_profile::MAX_STATEMENTS
                + rudder::profile::query_profile::MAX_STYLE_STATEMENTS,
        "the user's words and standing constraints do not count against the inferred statements"
    );
    // Deleting whatever was inferred, and every standing constraint (deleting one of the
    // four carried lets the next one in), leaves only the user's words.
    let standing = You::load(history.store()).unwrap().standing;
    for s in &standing {
        history
            .store()
            .hide_statement(&statement_key(&s.text), &s.text, &[])
            .unwrap();
    }
    for (c, s) in run.profile.statements() {
        if !s.said && c != "domain" {
            history
                .store()
                .hide_statement(&statement_key(&s.text), &s.text, &s.sessions)
                .unwrap();
        }
    }
    let again =
        rudder::profile::query_profile(&llm, &mut history, with, query, &cheap_options()).unwrap();
    let left: Vec<&str> = again
        .profile
        .statements()
        .into_iter()
        .filter(|(c, _)| *c != "domain")
        .map(|(_, s)| s.text.as_str())
        .collect();
    assert_eq!(left, [said]);
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
        history.store().max_entry_id().unwrap(),
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

/// Generic phrasings the list does not hold word for word, and specific phrases about a user
/// (the planted needs of the quality evaluation among them), as extraction might word them.
const GENERIC: &[&str] = &[
    "wants correct and accurate information",
    "prefers to get specific criteria",
    "is interested in this topic",
    "would like a detailed answer",
    "likes explanations that are clear",
    "wants good recommendations",
    "wants to know more about it",
    "is looking for helpful information",
    "prefers relevant and useful information",
    "wants the best possible answer",
    "focuses on specific criteria",
    "avoids general preferences",
];
const SPECIFIC: &[&str] = &[
    "recovering from patellofemoral knee pain",
    "can spend at most $120 on shoes",
    "has wide feet with flat arches",
    "wants short answers in bullet points",
    "works rotating twelve-hour hospital shifts",
    "physio caps running at 25 km a week",
    "complete beginner with computers",
    "poor eyesight, needs a large bright screen",
    "budget around 600 pounds",
    "about 3,000 family photos scanned onto CDs",
    "wants step-by-step numbered instructions to print",
    "does not want a monthly subscription",
    "counts of invertebrates from 40 ponds",
    "works in R with tidyverse and glmmTMB",
    "has a latex allergy",
    "old electric deck oven running all day",
    "son has a severe peanut allergy",
    "flight under three hours because of the toddler",
    "wants a checklist to tick off",
    "workshop is a small single-car garage",
    "sensitive to strong fumes",
    "has ADHD and loses focus in long sessions",
    "writes Python daily",
    "mild tinnitus",
    "rents a flat, neighbours complained",
    "wants honest opinions, not balanced lists",
];

/// The generic-phrase check under all-MiniLM-L6-v2: every generic paraphrase reaches the
/// threshold and no specific phrase does. Prints the measurements behind the number.
#[test]
fn generic_threshold_separates_generic_from_specific_phrases() {
    let embedder = FastEmbedder::from_store(&common::store(), common::EMBED_MODEL, 1).unwrap();
    let checks = Checks::new(
        Some(&embedder),
        "Which running shoes should I buy for my first half marathon?",
    )
    .unwrap();
    let (mut lowest_generic, mut highest_specific) = (f32::MAX, f32::MIN);
    for (label, list) in [("generic", GENERIC), ("specific", SPECIFIC)] {
        for phrase in list {
            let g = checks.genericness(phrase).unwrap();
            eprintln!("  {label:<9} {g:.3} {phrase}");
            if label == "generic" {
                lowest_generic = lowest_generic.min(g);
            } else {
                highest_specific = highest_specific.max(g);
            }
        }
    }
    eprintln!(
        "generic: lowest {lowest_generic:.3}; specific: highest {highest_specific:.3}; \
         threshold {GENERIC_THRESHOLD}"
    );
    assert!(lowest_generic >= GENERIC_THRESHOLD, "{lowest_generic}");
    assert!(highest_specific < GENERIC_THRESHOLD, "{highest_specific}");
}

/// The relevance judge with the real model: one forward pass per statement and question, a
/// score in range, and the question read once: later statements reuse its prefix from the KV
/// cache, so the cached share of the prompt tokens is most of it.
#[test]
fn relevance_is_judged_in_one_pass_per_statement_with_the_question_cached() {
    let llm = common::small_model();
    let statements = [
        "Has patellofemoral knee pain",
        "Has a problem with chicken stock",
        "Set aside 120 dollars for sports gear",
    ];
    let (judged, usage) = rudder::profile::relevance::relevance(
        &llm,
        "Which running shoes should I buy for my first half marathon?",
        &statements,
    )
    .unwrap();
    assert_eq!(judged.len(), statements.len());
    let per_statement = 1 + rudder::profile::relevance::CONTRAST_QUESTIONS.len();
    assert_eq!(usage.calls, (statements.len() * per_statement) as u64);
    assert_eq!(usage.generated_tokens, 0, "no generation: {usage:?}");
    for j in &judged {
        assert!(
            (0.0..=1.0).contains(&j.probability) && (0.0..=1.0).contains(&j.bias),
            "{j:?}"
        );
        assert!((-1.0..=1.0).contains(&j.score()), "{j:?}");
    }
    // Which sequence a call lands on depends on thread timing, so under a loaded machine a
    // call may miss the prefix its sequence last held (0.48 seen with the suite running, 0.73
    // alone); without the cache the share is 0.
    assert!(
        usage.cached_tokens * 3 > usage.prompt_tokens,
        "the shared instructions and question should come from the cache: {usage:?}"
    );
    // With the real embedder, the knee and the budget are closer to lines about the runner's
    // situation than the chicken stock is.
    let embedder = FastEmbedder::from_store(&common::store(), common::EMBED_MODEL, 1).unwrap();
    let facets = [
        "my knees hurt after running".to_string(),
        "I can spend about 100 dollars on gear".to_string(),
    ];
    let mut judged = judged;
    rudder::profile::relevance::with_facets(&mut judged, &embedder, &facets, &statements).unwrap();
    let similarity: Vec<f32> = judged.iter().map(|j| j.facet_similarity.unwrap()).collect();
    assert!(
        similarity[0] > similarity[1] && similarity[2] > similarity[1],
        "{similarity:?}"
    );
    // What the person wrote is judged as what they told the model, one pass each too, and
    // the situation lines bring their budget closer than their cooking problem.
    let said = [
        "I have a problem with my chicken stock: cloudy stock.",
        "I set aside 120 dollars for sports gear this month and that is my hard ceiling.",
    ];
    let (mut judged, usage) = rudder::profile::relevance::relevance_by(
        &llm,
        rudder::profile::relevance::Judge::Said,
        "Which running shoes should I buy for my first half marathon?",
        &said,
    )
    .unwrap();
    assert_eq!(usage.calls, (said.len() * per_statement) as u64);
    assert_eq!(usage.generated_tokens, 0, "no generation: {usage:?}");
    let lines = rudder::profile::relevance::with_situation_lines(&[]);
    rudder::profile::relevance::with_facets(&mut judged, &embedder, &lines, &said).unwrap();
    assert!(
        judged[1].facet_similarity > judged[0].facet_similarity,
        "{judged:?}"
    );
}

#[test]
fn memory_read_with_the_real_model_is_faithful_resumable_and_feeds_the_profile() {
    let models = common::store();
    let embedder = FastEmbedder::from_store(&models, common::EMBED_MODEL, 1).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let mut history = history_of_a_synthetic_user(tmp.path(), &embedder);
    let llm = common::small_model();
    let total = history.store().count_unread_for_memory().unwrap();
    let options = rudder::profile::memory::RememberOptions {
        limit: Some(60),
        ..Default::default()
    };
    let first = rudder::profile::memory::remember(
        &llm,
        &mut history,
        Some(&embedder),
        &options,
        &NoProgress,
    )
    .unwrap();
    assert_eq!(first.read + first.skipped, 60, "{first:?}");
    assert!(first.read > 0 && first.skipped > 0, "{first:?}");
    assert_eq!(first.unread, total - 60);
    assert!(first.bursts * rudder::profile::memory::BURST_ITEMS >= first.read - first.chats);
    // Every statement carries only what its sessions say: no number or name they lack, and
    // some of their words.
    let memory = history.store().memory().unwrap();
    for m in &memory {
        let ids: Vec<i64> = m.sessions.iter().map(|(id, _)| *id).collect();
        let sources: Vec<String> = history
            .get_many(&ids)
            .unwrap()
            .iter()
            .map(|s| rudder::profile::select::entry_line(s, 4_000))
            .collect();
        assert!(
            sources.iter().any(|text| {
                rudder::profile::extract::unsupported_specific(&m.text, text).is_none()
            }),
            "{:?} is not faithful to {sources:?}",
            m.text
        );
        let checks = Checks::for_memory(Some(&embedder)).unwrap();
        assert!(
            checks.genericness(&m.text).unwrap() < GENERIC_THRESHOLD,
            "{:?}",
            m.text
        );
    }
    // Resumed: the next call reads on from where the first stopped.
    let second = rudder::profile::memory::remember(
        &llm,
        &mut history,
        Some(&embedder),
        &rudder::profile::memory::RememberOptions {
            limit: Some(10),
            ..Default::default()
        },
        &NoProgress,
    )
    .unwrap();
    assert_eq!(second.read + second.skipped, 10);
    assert_eq!(second.unread, total - 70);

    // A profile judges the remembered statements, and still asks about every candidate.
    let with = Some((&embedder as &dyn Embedder, common::EMBED_MODEL));
    let query = "What should I focus on in my training this month?";
    let run =
        rudder::profile::query_profile(&llm, &mut history, with, query, &cheap_options()).unwrap();
    let remembered = history.store().memory().unwrap().len();
    assert_eq!(
        run.memory_asked,
        remembered.min(rudder::profile::memory::MEMORY_CANDIDATES)
    );
    assert_eq!(run.selected.judged, run.candidates.len());
}

/// The small model's facet lines are often generic ("I live in a small town"); the situation
/// probes search each kind of personal fact as well. On the planted set's first user (a nurse
/// whose knee, budget and feet are in chats and searches that share no word with her
/// running-shoe question), they must bring more of those sessions among the 16 candidates than
/// the question and the model's lines do alone.
#[test]
fn situation_probes_bring_the_sessions_that_say_what_the_user_needs() {
    let models = common::store();
    let embedder = FastEmbedder::from_store(&models, common::EMBED_MODEL, 1).unwrap();
    let with = Some((&embedder as &dyn Embedder, common::EMBED_MODEL));
    let tmp = tempfile::tempdir().unwrap();
    let set = rudder_synth::planted::write_planted_set(0, &tmp.path().join("set")).unwrap();
    let user = &set.users[0];
    let mut history = History::open(&tmp.path().join("history")).unwrap();
    history
        .import(
            &[tmp.path().join("set").join(&user.export)],
            &ImportOptions::default(),
            &NoProgress,
        )
        .unwrap();
    history
        .embed_pending(&embedder, common::EMBED_MODEL, &NoProgress)
        .unwrap();
    let ids = history.ids_by_content_hash().unwrap();
    let question = &user.questions[0];
    let planted: std::collections::HashSet<i64> = question
        .needs
        .iter()
        .flat_map(|n| n.sessions.iter())
        .map(|h| ids[h])
        .collect();
    assert!(planted.len() >= 4, "{planted:?}");

    // The lines qwen2.5-coder-1.5b wrote for this question.
    let facets = Expanded {
        expansion: Expansion::Facets,
        text: format!(
            "{}\nI have a 5-year-old daughter\nI can afford $100\nI live in a small town\nI enjoy running",
            question.query
        ),
        usage: Default::default(),
        seconds: 0.0,
    };
    let found = |mode: ExpansionMode, expanded: &[Expanded], history: &mut History| {
        retrieve(history, with, expanded, mode, &Filter::default(), 16)
            .unwrap()
            .iter()
            .filter(|c| planted.contains(&c.id))
            .count()
    };
    let raw = Expanded {
        expansion: Expansion::Raw,
        text: question.query.clone(),
        usage: Default::default(),
        seconds: 0.0,
    };
    let by_question = found(ExpansionMode::Raw, &[raw], &mut history);
    let with_probes = found(
        ExpansionMode::Facets,
        std::slice::from_ref(&facets),
        &mut history,
    );
    assert!(
        with_probes >= 2 && with_probes > by_question,
        "planting sessions among 16 candidates: {with_probes} with the probes, {by_question} by the question alone"
    );

    // The same lines without the probes: each searched and the lists fused, as before them.
    let lists: Vec<Vec<i64>> = facets
        .text
        .lines()
        .map(|line| {
            history
                .search(line, &Filter::default(), 16, SearchMode::Hybrid, with)
                .unwrap()
                .into_iter()
                .map(|h| h.id)
                .collect()
        })
        .collect();
    let refs: Vec<&[i64]> = lists.iter().map(Vec::as_slice).collect();
    let lines_alone = rudder::retrieval::reciprocal_rank_fusion(&refs, 16)
        .into_iter()
        .filter(|(id, _)| planted.contains(id))
        .count();
    assert!(
        with_probes > lines_alone,
        "{with_probes} with the probes, {lines_alone} from the model's lines alone"
    );

    // A candidate is marked probe-only exactly when none of the question's own lines found it
    // (its phrases face a higher bar), and the probes bring some such sessions.
    let by_lines: std::collections::HashSet<i64> = lists.iter().flatten().copied().collect();
    let candidates = retrieve(
        &mut history,
        with,
        std::slice::from_ref(&facets),
        ExpansionMode::Facets,
        &Filter::default(),
        16,
    )
    .unwrap();
    for c in &candidates {
        assert_eq!(c.probe_only, !by_lines.contains(&c.id), "{c:?}");
    }
    assert!(candidates.iter().any(|c| c.probe_only), "{candidates:?}");

    // How she wants answers: each style line's best session joins the candidates once, read
    // for nothing else, and her "short answers in bullet points" sessions are among them all.
    let style = rudder::profile::retrieve::style_sessions(
        &mut history,
        with,
        &Filter::default(),
        &candidates,
    )
    .unwrap();
    assert!(
        !style.read.is_empty() && style.read.len() <= rudder::profile::retrieve::STYLE_PROBES.len(),
        "{style:?}"
    );
    for c in &style.added {
        assert!(c.style_only && c.probe_only, "{c:?}");
        assert!(!candidates.iter().any(|d| d.id == c.id), "{c:?}");
        assert!(style.read.contains(&c.id), "{c:?}");
    }
    for id in &style.read {
        let entry = history.get_many(&[*id]).unwrap().remove(0);
        assert_eq!(entry.entry.kind, rudder::history::Kind::Chat, "{entry:?}");
    }
    let tone: Vec<i64> = question
        .needs
        .iter()
        .filter(|n| n.kind == rudder_synth::planted::NeedKind::Tone)
        .flat_map(|n| n.sessions.iter())
        .map(|h| ids[h])
        .collect();
    assert!(!tone.is_empty());
    assert!(
        tone.iter().any(|id| style.read.contains(id)),
        "none of the sessions of her tone need {tone:?} among the style probes' {style:?}"
    );
}

/// Money named for one thing stays with the question about that thing and leaves another,
/// decided by the real embedder with no model call; money for anything asks the real model
/// once whether the question buys something (one forward pass, no generation).
#[test]
fn money_for_another_purpose_is_left_out_with_the_real_models() {
    use rudder::profile::extract::{Phrase, PhraseKind};
    use rudder::profile::money_fit::keep_money_for_the_question;
    let llm = common::small_model();
    let embedder = FastEmbedder::from_store(&common::store(), common::EMBED_MODEL, 1).unwrap();
    let phrase = |text: &str| Phrase::unjudged(1, text, PhraseKind::Constraint);
    let named = [
        "I can spend 200 euros on my ears this year.",
        "After paying the flour supplier I have roughly 2000 euros spare at most for improvements this year.",
        "Has knee pain",
    ];
    let run = |query: &str, texts: &[&str]| {
        let mut phrases: Vec<Phrase> = texts.iter().map(|t| phrase(t)).collect();
        let usage =
            keep_money_for_the_question(&llm, Some(&embedder), query, &mut phrases).unwrap();
        (
            phrases.into_iter().map(|p| p.text).collect::<Vec<_>>(),
            usage,
        )
    };
    let (kept, usage) = run("What earplugs should I use for band rehearsals?", &named);
    assert_eq!(kept, [named[0], named[2]]);
    assert_eq!(usage.calls, 0);
    let (kept, _) = run("How can I reduce energy costs at my bakery?", &named);
    assert_eq!(kept, [named[1], named[2]]);
    let (kept, _) = run(
        "Where should we go on a family holiday this summer?",
        &named,
    );
    assert_eq!(kept, [named[2]]);
    let (kept, usage) = run("Which laptop should I buy?", &["My budget is 600 pounds."]);
    assert_eq!(usage.calls, 1);
    assert_eq!(usage.generated_tokens, 0, "no generation: {usage:?}");
    // Kept exactly when the model's P(yes) that the question buys something reaches the bar.
    let (p, _) =
        rudder::profile::money_fit::question_spends(&llm, "Which laptop should I buy?").unwrap();
    assert!((0.0..=1.0).contains(&p), "{p}");
    assert_eq!(
        kept.len() == 1,
        p >= rudder::profile::money_fit::SPENDING_QUESTION_THRESHOLD,
        "P(yes) {p}"
    );
}
