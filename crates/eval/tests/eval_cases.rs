//! The case builder (`rudder_eval::cases`): with a scripted LLM and a bag-of-words embedder
//! for the pipeline's rules (seeded reproducibility, the 0.65 near-duplicate filter, 5–8
//! aspects, the first-sentence rule, histories the real importer reads, errors naming the
//! file and line), and once with the real small model for the grammar's guarantees.

use rudder_testkit as common;

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rudder::embed::{cosine, Embedder};
use rudder::history::{Format, History, ImportOptions, NoProgress};
use rudder::llm::{CancelToken, Completion, FinishReason, Llm, LlmError, Request, Timing, Usage};
use rudder_eval::{build_cases, BuildOptions, EvalCase, EvalError, EvalSource};
use serde_json::json;

/// FNV-1a, for outputs that depend only on the prompt.
fn stable(text: &str) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in text.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x100000001b3);
    }
    h
}

/// Made-up words, distinct per `seed`, so two generated profiles share almost no vocabulary.
fn words(seed: u64, n: usize) -> Vec<String> {
    (0..n as u64)
        .map(|i| format!("w{:x}", stable(&format!("{seed}/{i}")) % 0xfffff))
        .collect()
}

fn distinct_profile(seed: u64) -> String {
    let w = words(seed, 14);
    format!(
        "She is a {} {} living in {}. She enjoys {} and {} with her {} {}. She studied {} at {} \
         and owns {} {} {} {} {}.",
        w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7], w[8], w[9], w[10], w[11], w[12], w[13]
    )
}

type ProfileFn = Box<dyn Fn(usize, &str) -> String + Send + Sync>;

/// Answers each case-builder prompt with valid JSON, recognised by its wording.
struct ScriptedLlm {
    /// (profile call number from 0, prompt) → profile text.
    profile: ProfileFn,
    /// Aspect counts for successive aspect calls; 6 once they run out.
    aspect_counts: Mutex<VecDeque<usize>>,
    calls: Mutex<Vec<&'static str>>,
}

impl ScriptedLlm {
    fn new() -> Self {
        Self::with_profiles(Box::new(|_, prompt| distinct_profile(stable(prompt))))
    }

    fn with_profiles(profile: ProfileFn) -> Self {
        Self {
            profile,
            aspect_counts: Mutex::new(VecDeque::new()),
            calls: Mutex::new(Vec::new()),
        }
    }

    fn count(&self, kind: &str) -> usize {
        self.calls
            .lock()
            .unwrap()
            .iter()
            .filter(|k| **k == kind)
            .count()
    }
}

impl Llm for ScriptedLlm {
    fn model_name(&self) -> &str {
        "scripted"
    }

    fn complete(
        &self,
        request: &Request,
        _on_text: &mut dyn FnMut(&str),
        _cancel: &CancelToken,
    ) -> Result<Completion, LlmError> {
        let prompt = &request.messages.last().unwrap().content;
        let h = stable(prompt);
        let (kind, value) = if prompt.contains("Generate a user profile") {
            let n = self.count("profile");
            ("profile", json!({ "profile": (self.profile)(n, prompt) }))
        } else if prompt.contains("Generate personality traits") {
            let w = words(h, 3);
            let text = format!(
                "Curious and {} about {}. Patient, but {}.",
                w[0], w[1], w[2]
            );
            ("personality", json!({ "personality": text }))
        } else if prompt.contains("specific aspects") {
            let n = self.aspect_counts.lock().unwrap().pop_front().unwrap_or(6);
            let aspects: Vec<_> = (0..n)
                .map(|i| {
                    json!({"aspect": format!("Aspect {i} {}", words(h, 1)[0]),
                           "evidence": "She studied it.", "reason": "It matters to her."})
                })
                .collect();
            ("aspects", json!({ "aspects": aspects }))
        } else if prompt.contains("past chatbot conversations") {
            let conversation = |title: &str, k: u64| {
                json!({"title": title, "turns": [
                    {"user": format!("I wonder about {}?", words(h + k, 1)[0]),
                     "assistant": "Here is a short answer."},
                    {"user": "Thanks, and more?", "assistant": "A little more."}
                ]})
            };
            (
                "history",
                json!({
                    "related": [conversation("Work question", 1), conversation("Study plan", 2)],
                    "unrelated": [conversation("Pasta dinner", 3), conversation("Trip to Porto", 4),
                                  conversation("Cat food", 5)]
                }),
            )
        } else {
            panic!("unexpected prompt: {prompt}");
        };
        self.calls.lock().unwrap().push(kind);
        Ok(Completion {
            text: value.to_string(),
            usage: Usage {
                prompt_tokens: 10,
                generated_tokens: 5,
                calls: 1,
                ..Usage::default()
            },
            timing: Timing::default(),
            finish: FinishReason::Stop,
        })
    }
}

/// Words hashed into 256 dimensions.
const BAG_OF_WORDS: rudder_testkit::scripted::HashedWords =
    rudder_testkit::scripted::HashedWords(256);

/// A small evaluation folder: 5 questions with key points, 6 profiles, 4 personalities.
fn eval_dir(root: &Path) -> PathBuf {
    let dir = root.join("eval");
    let split = dir.join("researchy-dev");
    std::fs::create_dir_all(split.join("key_point")).unwrap();
    let questions = [
        ("101", "why do cats purr?"),
        ("202", "is nuclear power safe?"),
        ("303", "how did the printing press change europe?"),
        ("404", "should cities ban cars?"),
        ("505", "what makes a good teacher?"),
    ];
    let mut lines = String::new();
    for (id, query) in questions {
        lines.push_str(&json!({"id": id, "query": query}).to_string());
        lines.push('\n');
        let key_points = json!({"question": query, "key_points": [
            {"point_number": 1, "point_content": format!("First point about {query}"),
             "original_point_number": [1]},
            {"point_number": 2, "point_content": "Second point", "original_point_number": [2, 3]}
        ]});
        std::fs::write(
            split.join(format!("key_point/{id}_aggregated.json")),
            key_points.to_string(),
        )
        .unwrap();
    }
    std::fs::write(split.join("queries.jsonl"), lines).unwrap();
    let strings = |items: &[&str]| {
        items
            .iter()
            .map(|s| serde_json::to_string(s).unwrap() + "\n")
            .collect::<String>()
    };
    std::fs::write(
        dir.join("profile.jsonl"),
        strings(&[
            "She is a 34-year-old designer who hikes.",
            "He is a 22-year-old student of anthropology.",
            "She is a 45-year-old librarian with two girls.",
            "He is a retired sailor in Brest.",
            "She is a nurse working nights in Lyon.",
            "He is a chef who grows tomatoes.",
        ]),
    )
    .unwrap();
    std::fs::write(
        dir.join("personality.jsonl"),
        strings(&[
            "She values creativity.",
            "He is curious and open-minded.",
            "She is detail-oriented and rational.",
            "He is calm and patient.",
        ]),
    )
    .unwrap();
    dir
}

fn options(queries: usize, personas: usize, seed: u64) -> BuildOptions {
    BuildOptions {
        queries,
        personas_per_query: personas,
        seed,
        ..BuildOptions::default()
    }
}

fn build(
    llm: &dyn Llm,
    dir: &Path,
    options: &BuildOptions,
    out: &Path,
) -> Result<rudder_eval::BuildReport, EvalError> {
    let source = EvalSource::load(dir, "researchy-dev")?;
    build_cases(&source, llm, &BAG_OF_WORDS, options, out, &NoProgress)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn same_seed_gives_identical_cases_and_histories() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = eval_dir(tmp.path());
    let (a, b, c) = (
        tmp.path().join("a"),
        tmp.path().join("b"),
        tmp.path().join("c"),
    );
    let first = build(&ScriptedLlm::new(), &dir, &options(3, 2, 7), &a).unwrap();
    build(&ScriptedLlm::new(), &dir, &options(3, 2, 7), &b).unwrap();
    build(&ScriptedLlm::new(), &dir, &options(3, 2, 8), &c).unwrap();

    assert_eq!(first.cases.len(), 6);
    assert_eq!(read(&a.join("cases.jsonl")), read(&b.join("cases.jsonl")));
    assert_ne!(read(&a.join("cases.jsonl")), read(&c.join("cases.jsonl")));
    for case in &first.cases {
        assert_eq!(
            read(&a.join(&case.history_file)),
            read(&b.join(&case.history_file))
        );
        assert_eq!(case.seed, 7);
        assert_eq!(case.model, "scripted");
        assert!(case.prompts_version.starts_with("v1-"));
        assert_eq!(case.key_points.len(), 2);
        assert!(case.key_points[0].contains(&case.query));
    }
    // Each line is one case that reads back as it was written.
    let back = rudder_eval::read_eval_cases(&a.join("cases.jsonl")).unwrap();
    assert_eq!(back, first.cases);
    let ids: std::collections::HashSet<&str> = back.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids.len(), back.len(), "case ids are unique");
}

#[test]
fn near_duplicate_profile_is_rejected_and_redrawn() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = eval_dir(tmp.path());
    let original = distinct_profile(1);
    // One word changed: the same person.
    let near = original.replacen("She is a", "She is one", 1);
    assert!(cosine(&bow(&original), &bow(&near)) > 0.65);
    let script = {
        let (original, near) = (original.clone(), near.clone());
        move |n: usize, _: &str| match n {
            0 => original.clone(),
            1 => near.clone(),
            _ => distinct_profile(2),
        }
    };
    let llm = ScriptedLlm::with_profiles(Box::new(script));
    let report = build(&llm, &dir, &options(1, 2, 0), &tmp.path().join("out")).unwrap();
    assert_eq!(report.rejected_profiles, 1);
    assert_eq!(llm.count("profile"), 3);
    let profiles: Vec<&str> = report
        .cases
        .iter()
        .map(|c| c.persona.profile.as_str())
        .collect();
    assert_eq!(
        profiles,
        vec![original.as_str(), distinct_profile(2).as_str()]
    );

    // A model that keeps writing the same person: the second persona is given up after the
    // allowed attempts instead of looping.
    let stuck = ScriptedLlm::with_profiles(Box::new(|_, _| distinct_profile(1)));
    let report = build(&stuck, &dir, &options(1, 2, 0), &tmp.path().join("stuck")).unwrap();
    assert_eq!(report.cases.len(), 1);
    assert_eq!(report.unfilled_personas, 1);
    assert_eq!(report.rejected_profiles, 4);
    assert_eq!(stuck.count("profile"), 5);
}

fn bow(text: &str) -> Vec<f32> {
    BAG_OF_WORDS.embed(&[text]).unwrap().remove(0)
}

#[test]
fn aspects_are_kept_between_five_and_eight() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = eval_dir(tmp.path());

    // Too few is retried; too many is cut to eight.
    let llm = ScriptedLlm::new();
    llm.aspect_counts.lock().unwrap().extend([4, 6, 11]);
    let report = build(&llm, &dir, &options(2, 1, 3), &tmp.path().join("ok")).unwrap();
    assert_eq!(report.retried_calls, 1);
    let counts: Vec<usize> = report.cases.iter().map(|c| c.aspects.len()).collect();
    assert_eq!(counts, vec![6, 8]);
    for aspect in report.cases.iter().flat_map(|c| &c.aspects) {
        assert!(!aspect.aspect.is_empty() && !aspect.evidence.is_empty());
        assert!(!aspect.reason.is_empty());
    }

    // Too few twice: an error naming the question.
    let llm = ScriptedLlm::new();
    llm.aspect_counts.lock().unwrap().extend([3, 2]);
    let err = build(&llm, &dir, &options(1, 1, 3), &tmp.path().join("bad")).unwrap_err();
    let message = err.to_string();
    let source = EvalSource::load(&dir, "researchy-dev").unwrap();
    assert!(
        source
            .queries
            .iter()
            .any(|q| message.contains(&format!("query {} ", q.id))),
        "{message}"
    );
    assert!(message.contains("aspects"), "{message}");
}

#[test]
fn system_sees_the_first_sentence_of_the_persona() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = eval_dir(tmp.path());
    let report = build(
        &ScriptedLlm::new(),
        &dir,
        &options(2, 1, 0),
        &tmp.path().join("o"),
    )
    .unwrap();
    for case in &report.cases {
        let p = &case.persona;
        assert_eq!(p.text, format!("{} {}", p.profile, p.personality));
        let expected = p.profile.split(". ").next().unwrap().to_string() + ".";
        assert_eq!(p.first_sentence, expected);
        assert!(p.text.starts_with(&p.first_sentence));
        assert!(!p.first_sentence.contains(&p.personality));
    }
}

#[test]
fn history_file_imports_with_the_real_importer() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = eval_dir(tmp.path());
    let out = tmp.path().join("out");
    let report = build(&ScriptedLlm::new(), &dir, &options(2, 1, 5), &out).unwrap();
    for case in &report.cases {
        assert_eq!(case.history_conversations, 5);
        assert_eq!(
            case.history_file,
            format!("histories/{}/conversations.json", case.id)
        );
        let history_dir = tempfile::tempdir().unwrap();
        let mut history = History::open(history_dir.path()).unwrap();
        let imported = history
            .import(
                &[out.join(&case.history_file)],
                &ImportOptions::default(),
                &NoProgress,
            )
            .unwrap();
        assert_eq!(imported.failed_files, 0, "{:?}", imported.files);
        assert_eq!(imported.added, 5, "{:?}", imported.files);
        assert_eq!(imported.files[0].format, Some(Format::Chatgpt));
        assert_eq!(history.stats().unwrap().indexed_sessions, 5);
    }
    // Every conversation happened before the fixed cutoff.
    let export: serde_json::Value =
        serde_json::from_str(&read(&out.join(&report.cases[0].history_file))).unwrap();
    for conversation in export.as_array().unwrap() {
        let updated = conversation["update_time"].as_f64().unwrap();
        assert!(updated < rudder_eval::cases::HISTORY_CUTOFF_UNIX as f64);
    }
}

#[test]
fn malformed_query_line_names_file_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = eval_dir(tmp.path());
    let queries = dir.join("researchy-dev/queries.jsonl");
    let mut text = read(&queries);
    text.push_str("\n{\"id\": \"606\", \"query\": \n");
    std::fs::write(&queries, text).unwrap();
    let err = EvalSource::load(&dir, "researchy-dev").unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains("researchy-dev/queries.jsonl:7:"),
        "{message}"
    );
    assert!(matches!(err, EvalError::BadCase { line: 7, .. }));
}

/// SmolLM2-135M and all-MiniLM-L6-v2: one case for one question. Greedy, grammar-constrained
/// output from a tiny model says little about quality; what must hold is the structure.
#[test]
fn real_small_model_builds_one_case() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = eval_dir(tmp.path());
    let out = tmp.path().join("out");
    let llm = common::small_model();
    let embedder =
        rudder::embed::FastEmbedder::from_store(&common::store(), common::EMBED_MODEL, 1).unwrap();
    let source = EvalSource::load(&dir, "researchy-dev").unwrap();
    let started = std::time::Instant::now();
    let report = build_cases(
        &source,
        &llm,
        &embedder,
        &options(1, 1, 0),
        &out,
        &NoProgress,
    )
    .expect("one case from the small model");
    eprintln!(
        "real case in {:.1}s, {} calls, {} tokens generated, {} retried",
        started.elapsed().as_secs_f64(),
        report.usage.calls,
        report.usage.generated_tokens,
        report.retried_calls
    );
    assert_eq!(report.cases.len(), 1);
    let case: &EvalCase = &report.cases[0];
    eprintln!("{}", serde_json::to_string(case).unwrap());
    assert_eq!(case.model, common::CHAT_MODEL);
    assert!((5..=8).contains(&case.aspects.len()));
    assert!(case.persona.profile.len() >= 60);
    assert!(!case.persona.personality.is_empty());
    assert!(case.persona.text.starts_with(&case.persona.first_sentence));
    assert!(!case.persona.first_sentence.is_empty());
    assert!((4..=6).contains(&case.history_conversations));
    let history_dir = tempfile::tempdir().unwrap();
    let mut history = History::open(history_dir.path()).unwrap();
    let imported = history
        .import(
            &[out.join(&case.history_file)],
            &ImportOptions::default(),
            &NoProgress,
        )
        .unwrap();
    assert_eq!(imported.added as usize, case.history_conversations);
}
