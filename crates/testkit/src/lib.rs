//! What the integration tests of the workspace share (a dev-dependency of the `rudder`
//! library's tests and of `crates/eval`): the test models and where they are, a canned model
//! for pure logic ([`Canned`]), the research loop's scripted doubles ([`scripted`]), generated
//! document fixtures ([`fixtures_gen`]) and the strace harness of the privacy tests
//! ([`strace`]).
//!
//! Tests run against the real models. `scripts/test.sh` fetches them once into `.models/` (or
//! wherever `RUDDER_TEST_MODELS_DIR` points); every test then uses a fresh data directory.

pub mod fixtures_gen;
pub mod scripted;
pub mod strace;

use std::path::PathBuf;

use rudder::models::ModelStore;

pub const CHAT_MODEL: &str = "smollm2-135m-instruct";
pub const EMBED_MODEL: &str = "all-minilm-l6-v2";

/// The repository's root (the workspace root above this crate).
pub fn repo_root() -> PathBuf {
    let package = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    package
        .ancestors()
        .find(|dir| dir.join("Cargo.lock").is_file())
        .unwrap_or(&package)
        .to_path_buf()
}

/// The shared directory holding the test models.
pub fn models_dir() -> PathBuf {
    std::env::var_os("RUDDER_TEST_MODELS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join(".models"))
}

/// A command that runs the binary at `exe` (a test's `env!("CARGO_BIN_EXE_…")`) on the data
/// directory `data`, with the shared test models, the default log level and no stdin.
pub fn command(exe: &str, data: &std::path::Path) -> std::process::Command {
    let mut command = std::process::Command::new(exe);
    command
        .env("RUDDER_DATA_DIR", data)
        .env("RUDDER_MODELS_DIR", models_dir())
        .env_remove("RUDDER_LOG")
        .stdin(std::process::Stdio::null());
    command
}

/// The model store over the shared test models, failing loudly if they were not fetched.
pub fn store() -> ModelStore {
    let dir = models_dir();
    let store = ModelStore::open_dir(&dir).expect("open model store");
    for name in [CHAT_MODEL, EMBED_MODEL] {
        assert_eq!(
            store.quick_state(name),
            rudder::models::ModelState::Present,
            "test model {name} is not in {}: run scripts/test.sh, or \
             `RUDDER_MODELS_DIR={} cargo run -p rudder-cli -- models fetch {CHAT_MODEL} {EMBED_MODEL}`",
            dir.display(),
            dir.display()
        );
    }
    store
}

/// Settings for tests: one generation thread, a modest context.
pub fn llama_settings() -> rudder::config::LlamaSettings {
    rudder::config::LlamaSettings {
        threads: Some(1),
        context_size: 2048,
        ..Default::default()
    }
}

/// The date the research prompts see, pinned for tests that assert what the real small model
/// writes: the prompts carry today's date (`RUDDER_DATE` overrides it), and SmolLM2-135M's
/// answers change with it, so such a test would pass one day and fail the next.
pub const PROMPT_DATE: &str = "2026-11-27";

/// Pins [`PROMPT_DATE`] for this test process unless `RUDDER_DATE` is already set.
pub fn pin_prompt_date() {
    if std::env::var_os("RUDDER_DATE").is_none() {
        std::env::set_var("RUDDER_DATE", PROMPT_DATE);
    }
}

/// The small chat model with a 4096-token context, as the research and profile stages need.
pub fn small_model() -> rudder::llm::llama::LlamaLlm {
    let store = store();
    let settings = rudder::config::LlamaSettings {
        context_size: 4096,
        ..llama_settings()
    };
    rudder::llm::llama::LlamaLlm::load(
        CHAT_MODEL,
        &store.ready_path(CHAT_MODEL).unwrap(),
        &settings,
    )
    .unwrap()
}

type AnswerFn = dyn Fn(&str) -> Result<String, rudder::llm::LlmError> + Send + Sync;

/// A scripted model for tests of pure logic: answers each prompt (the last message) with what
/// `answer` returns for it, and keeps every prompt. Like a grammar-constrained backend, output
/// asked for as JSON that does not parse is reported as cut off (`FinishReason::Length`).
pub struct Canned {
    answer: Box<AnswerFn>,
    prompts: std::sync::Mutex<Vec<String>>,
}

impl Canned {
    pub fn new(answer: impl Fn(&str) -> String + Send + Sync + 'static) -> Self {
        Self::fallible(move |prompt| Ok(answer(prompt)))
    }

    /// `answer` may fail, as a backend does on a prompt it cannot serve.
    pub fn fallible(
        answer: impl Fn(&str) -> Result<String, rudder::llm::LlmError> + Send + Sync + 'static,
    ) -> Self {
        Self {
            answer: Box::new(answer),
            prompts: std::sync::Mutex::new(Vec::new()),
        }
    }

    pub fn prompts(&self) -> Vec<String> {
        self.prompts.lock().unwrap().clone()
    }

    pub fn calls(&self) -> usize {
        self.prompts.lock().unwrap().len()
    }
}

impl rudder::llm::Llm for Canned {
    fn model_name(&self) -> &str {
        "canned"
    }

    fn complete(
        &self,
        request: &rudder::llm::Request,
        _on_text: &mut dyn FnMut(&str),
        _cancel: &rudder::llm::CancelToken,
    ) -> Result<rudder::llm::Completion, rudder::llm::LlmError> {
        use rudder::llm::{Completion, FinishReason, OutputFormat, Timing, Usage};
        let prompt = request
            .messages
            .last()
            .map(|m| m.content.clone())
            .unwrap_or_default();
        self.prompts.lock().unwrap().push(prompt.clone());
        let text = (self.answer)(&prompt)?;
        let cut_off = matches!(request.format, OutputFormat::JsonSchema(_))
            && serde_json::from_str::<serde_json::Value>(&text).is_err();
        Ok(Completion {
            usage: Usage {
                prompt_tokens: (prompt.len() / 4) as u64,
                cached_tokens: 0,
                generated_tokens: (text.len() / 4) as u64,
                calls: 1,
            },
            text,
            timing: Timing::default(),
            finish: if cut_off {
                FinishReason::Length
            } else {
                FinishReason::Stop
            },
        })
    }
}
