//! The llama.cpp backend with the real SmolLM2-135M GGUF.

use rudder_testkit as common;

use std::sync::OnceLock;

use rudder::llm::llama::LlamaLlm;
use rudder::llm::{
    complete_json, CancelToken, FinishReason, GenerationOptions, Llm, LlmError, Message,
    OutputFormat, Request,
};
use schemars::JsonSchema;
use serde::Deserialize;

/// One model for the tests that do not look at the KV cache; calls are serialised by its worker.
fn shared() -> &'static LlamaLlm {
    static LLM: OnceLock<LlamaLlm> = OnceLock::new();
    LLM.get_or_init(load)
}

fn load() -> LlamaLlm {
    let store = common::store();
    let path = store.ready_path(common::CHAT_MODEL).unwrap();
    LlamaLlm::load(common::CHAT_MODEL, &path, &common::llama_settings()).unwrap()
}

fn greedy(max_tokens: u32) -> GenerationOptions {
    GenerationOptions {
        max_tokens,
        temperature: 0.0,
        ..Default::default()
    }
}

#[test]
fn chat_answer_streams_and_is_not_empty() {
    let llm = shared();
    let request = Request {
        messages: vec![
            Message::system("You are a helpful assistant."),
            Message::user("What is the capital of France?"),
        ],
        options: greedy(48),
        format: OutputFormat::Text,
    };
    let mut pieces = Vec::new();
    let c = llm
        .complete(
            &request,
            &mut |p| pieces.push(p.to_string()),
            &CancelToken::new(),
        )
        .unwrap();
    assert!(!c.text.trim().is_empty(), "empty answer");
    assert!(pieces.len() > 1, "expected streaming, got {pieces:?}");
    assert_eq!(pieces.concat(), c.text);
    assert!(c.usage.prompt_tokens > 5);
    assert!(c.usage.generated_tokens >= pieces.len() as u64 / 2);
    assert!(c.timing.time_to_first_token <= c.timing.total);
}

/// Bounded fields keep every answer finite, so a small model cannot ramble past max_tokens.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // `kind` and `needs_followup` shape the schema; parsing them is the test
struct Card {
    #[schemars(length(max = 60))]
    title: String,
    #[schemars(length(max = 4), inner(length(max = 24)))]
    keywords: Vec<String>,
    kind: Kind,
    #[schemars(range(max = 100))]
    importance: u32,
    needs_followup: bool,
}

#[derive(Debug, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "lowercase")]
enum Kind {
    Fact,
    Opinion,
    Question,
}

#[test]
fn grammar_json_parses_for_twenty_prompts() {
    let llm = shared();
    let prompts = [
        "Describe the Eiffel Tower.",
        "Is coffee good for health?",
        "How do vaccines work?",
        "Summarise the causes of World War I.",
        "What is a black hole?",
        "Should I learn Rust or Go?",
        "Explain photosynthesis to a child.",
        "What are the risks of social media for teenagers?",
        "Why is the sky blue?",
        "Compare electric and petrol cars.",
        "What is inflation?",
        "How do I start running as a beginner?",
        "What did the Romans eat?",
        "Is nuclear power safe?",
        "How does a search engine rank pages?",
        "What is the best way to learn a language?",
        "Why do cats purr?",
        "What causes earthquakes?",
        "Who invented the printing press?",
        "What is machine learning?",
    ];
    let mut failures = Vec::new();
    for (i, prompt) in prompts.iter().enumerate() {
        let messages = vec![
            Message::system("Turn the user's topic into a JSON note card."),
            Message::user(*prompt),
        ];
        let options = GenerationOptions {
            max_tokens: 400,
            temperature: 0.8,
            seed: i as u32,
            ..Default::default()
        };
        match complete_json::<Card>(llm, messages, options) {
            Ok(s) => {
                assert!(s.value.title.chars().count() <= 60);
                assert!(s.value.keywords.len() <= 4);
                assert!(s.value.importance <= 100);
                assert_eq!(s.completion.finish, FinishReason::Stop);
            }
            Err(e) => failures.push(format!("{prompt}: {e}")),
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures: {failures:#?}",
        failures.len()
    );
}

#[test]
fn kv_prefix_is_reused_and_gives_the_same_answer() {
    // A private instance: the cache must not be disturbed by other tests.
    let llm = load();
    let system = Message::system(
        "You are Rudder, a research assistant. The user studies marine biology, prefers short \
         answers with sources, and dislikes speculation. Always answer in one sentence.",
    );
    let ask = |q: &str| Request {
        messages: vec![system.clone(), Message::user(q)],
        options: greedy(24),
        format: OutputFormat::Text,
    };
    let first = llm.complete_text(&ask("What do octopuses eat?")).unwrap();
    assert_eq!(first.usage.cached_tokens, 0);
    let other = llm.complete_text(&ask("How deep do whales dive?")).unwrap();
    assert!(
        other.usage.cached_tokens >= 30,
        "system prompt not reused: {:?}",
        other.usage
    );
    assert!(other.usage.cached_tokens < other.usage.prompt_tokens);
    // Going back to the first question reuses the prefix again and, decoding greedily, must
    // produce exactly the answer computed from scratch.
    let again = llm.complete_text(&ask("What do octopuses eat?")).unwrap();
    assert!(again.usage.cached_tokens >= 30);
    assert_eq!(again.text, first.text);
}

#[test]
fn cancellation_stops_generation() {
    let llm = shared();
    let cancel = CancelToken::new();
    let request = Request {
        messages: vec![Message::user("Write a very long story about the sea.")],
        options: GenerationOptions {
            max_tokens: 400,
            ..Default::default()
        },
        format: OutputFormat::Text,
    };
    let mut seen = 0;
    let c = llm
        .complete(
            &request,
            &mut |_| {
                seen += 1;
                if seen == 3 {
                    cancel.cancel();
                }
            },
            &cancel,
        )
        .unwrap();
    assert_eq!(c.finish, FinishReason::Cancelled);
    assert!(c.usage.generated_tokens <= 4, "{:?}", c.usage);
}

#[test]
fn a_prompt_larger_than_the_context_is_an_error() {
    let llm = shared();
    let huge = "word ".repeat(5000);
    let err = llm
        .complete_text(&Request {
            messages: vec![Message::user(huge)],
            options: greedy(8),
            format: OutputFormat::Text,
        })
        .unwrap_err();
    assert!(
        matches!(err, LlmError::ContextOverflow { n_ctx: 2048, .. }),
        "{err}"
    );
    // The worker survives and still answers.
    let ok = llm
        .complete_text(&Request {
            messages: vec![Message::user("Say hello.")],
            options: greedy(8),
            format: OutputFormat::Text,
        })
        .unwrap();
    assert!(ok.usage.generated_tokens > 0);
}

/// Four callers at once: their calls are decoded together, each under its own grammar, and
/// every one gets a complete answer.
#[test]
fn concurrent_calls_are_decoded_together_each_under_its_own_grammar() {
    #[derive(Debug, Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct City {
        name: String,
        country: String,
    }
    let store = common::store();
    let path = store.ready_path(common::CHAT_MODEL).unwrap();
    let settings = rudder::config::LlamaSettings {
        parallel: 4,
        ..common::llama_settings()
    };
    let llm = LlamaLlm::load(common::CHAT_MODEL, &path, &settings).unwrap();
    assert_eq!(llm.parallelism(), 4);
    let cities = ["Paris", "Tokyo", "Lima", "Oslo", "Cairo", "Quito"];
    let answers = rudder::llm::map_concurrent(llm.parallelism(), &cities, |_, city| {
        complete_json::<City>(
            &llm,
            vec![Message::user(format!(
                "Describe the city of {city} as JSON."
            ))],
            greedy(40),
        )
    });
    assert_eq!(answers.len(), cities.len());
    for (city, answer) in cities.iter().zip(&answers) {
        let answer = answer.as_ref().unwrap_or_else(|e| panic!("{city}: {e}"));
        assert!(answer.completion.usage.generated_tokens > 0, "{city}");
    }
    assert!(
        llm.peak_concurrency() >= 2,
        "calls never overlapped: peak {}",
        llm.peak_concurrency()
    );
}

/// A prompt prefix another sequence already read is copied into the new call's sequence, not
/// read again, even while that sequence is busy.
#[test]
fn a_shared_prefix_is_copied_between_sequences() {
    let store = common::store();
    let path = store.ready_path(common::CHAT_MODEL).unwrap();
    let settings = rudder::config::LlamaSettings {
        parallel: 3,
        ..common::llama_settings()
    };
    let llm = LlamaLlm::load(common::CHAT_MODEL, &path, &settings).unwrap();
    let system = Message::system(
        "You are Rudder, a research assistant. The user studies marine biology, prefers short \
         answers with sources, and dislikes speculation. Always answer in one sentence.",
    );
    let ask = |q: &str| Request {
        messages: vec![system.clone(), Message::user(q)],
        options: greedy(16),
        format: OutputFormat::Text,
    };
    let first = llm.complete_text(&ask("What do octopuses eat?")).unwrap();
    assert_eq!(first.usage.cached_tokens, 0);
    let questions = ["How deep do whales dive?", "Why do corals bleach?"];
    let answers = rudder::llm::map_concurrent(2, &questions, |_, q| llm.complete_text(&ask(q)));
    for (q, answer) in questions.iter().zip(answers) {
        let answer = answer.unwrap();
        assert!(
            answer.usage.cached_tokens >= 30,
            "{q}: system prompt not reused: {:?}",
            answer.usage
        );
    }
}

#[test]
fn the_offload_plan_reads_the_real_model_and_says_where_it_runs() {
    use rudder::config::GpuLayers;
    use rudder::llm::llama::offload::{self, Workload};

    let store = common::store();
    let path = store.ready_path(common::CHAT_MODEL).unwrap();
    // SmolLM2-135M: 30 blocks of 576 dimensions, 9 query and 3 KV heads, 49,152 tokens.
    let shape = offload::model_shape(&path).unwrap();
    assert_eq!(
        (
            shape.n_layer,
            shape.n_embd,
            shape.n_head,
            shape.n_head_kv,
            shape.n_vocab
        ),
        (30, 576, 9, 3, 49_152)
    );
    assert_eq!(shape.weight_bytes, std::fs::metadata(&path).unwrap().len());

    // What this build sees: a CPU build sees no GPU, and the loaded model says so.
    let devices = offload::gpu_devices().unwrap();
    let info = shared().info();
    assert_eq!(info.gpu_layers, info.offload.layers);
    if devices.is_empty() {
        assert_eq!(
            (info.offload.backend.as_str(), info.offload.layers),
            ("CPU", 0)
        );
        assert!(
            info.offload.reason.contains("no GPU"),
            "{}",
            info.offload.reason
        );
    }
    // The real shape on a recorded 4 GB laptop GPU: the whole small model fits.
    let gpu = offload::GpuDevice {
        index: 0,
        name: "CUDA0".into(),
        description: "NVIDIA GeForce GTX 1650".into(),
        backend: "CUDA".into(),
        memory_total: 4 << 30,
        memory_free: 3 << 30,
        integrated: false,
    };
    let workload = Workload {
        model: shape,
        n_ctx_total: 4 * 4096,
        n_batch: 512,
    };
    let plan = offload::plan(GpuLayers::Auto, &[gpu], Some(&workload));
    assert_eq!(plan.layers, 31, "{}", plan.reason);
}

/// One forward pass gives P(yes): probabilities in range, no text generated, the same answer
/// twice, and the mass follows the prompt. (SmolLM2-135M knows too little to judge facts: it
/// says "no" to "Is Paris the capital of France?"; the judging is measured with the 1.5B model
/// in `rudder eval relevance`.)
#[test]
fn probability_of_yes_reads_the_first_tokens_probabilities() {
    let llm = shared();
    let say = |word: &str| {
        vec![
            Message::system("Reply with the single word the user gives."),
            Message::user(format!("Say {word}.")),
        ]
    };
    let answer = rudder::llm::choice_probabilities(llm, say("yes"), &["yes", "no"]).unwrap();
    let probabilities = &answer.value.probabilities;
    assert_eq!(probabilities.len(), 2);
    assert!(probabilities.iter().all(|p| (0.0..=1.0).contains(p)));
    assert!(probabilities.iter().sum::<f32>() <= 1.0 + 1e-4);
    assert_eq!(answer.completion.usage.generated_tokens, 0);
    assert_eq!(answer.completion.usage.calls, 1);
    let (yes, _) = rudder::llm::probability_of_yes(llm, say("yes")).unwrap();
    let (again, _) = rudder::llm::probability_of_yes(llm, say("yes")).unwrap();
    let (no, _) = rudder::llm::probability_of_yes(llm, say("no")).unwrap();
    assert!(
        (yes - again).abs() < 1e-3,
        "not deterministic: {yes} then {again}"
    );
    assert!(
        yes > 0.5 && no < 0.5,
        "P(yes): told yes {yes}, told no {no}"
    );
}

#[test]
fn a_text_generation_stuck_in_a_loop_is_cut_off() {
    // SmolLM2 continues a pattern like this one for as long as it may; the backend stops it
    // once 48 tokens repeat one short pattern.
    let pattern = "1.".repeat(120);
    let request = Request {
        messages: vec![
            Message::system("Copy the user's text exactly, character by character."),
            Message::user(format!("Text: {pattern}")),
        ],
        options: greedy(800),
        format: OutputFormat::Text,
    };
    let completion = shared().complete_text(&request).unwrap();
    let generated = completion.usage.generated_tokens;
    eprintln!("{generated} tokens: {}", completion.text);
    assert!(
        completion.text.contains("1.1.1.1.1.1"),
        "the model did not loop, so the test shows nothing: {:?}",
        completion.text
    );
    assert!(
        generated < 200,
        "{generated} tokens generated: the loop was not cut off ({:?})",
        completion.text
    );
    assert_eq!(completion.finish, FinishReason::Length);
}
