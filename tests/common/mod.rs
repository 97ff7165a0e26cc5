//! Shared helpers for the integration tests.
//!
//! Tests run against the real models. `scripts/test.sh` fetches them once into `.models/` (or
//! wherever `RUDDER_TEST_MODELS_DIR` points); every test then uses a fresh data directory.
#![allow(dead_code)]

use std::path::PathBuf;

use rudder::models::ModelStore;

pub const CHAT_MODEL: &str = "smollm2-135m-instruct";
pub const EMBED_MODEL: &str = "all-minilm-l6-v2";

/// The shared directory holding the test models.
pub fn models_dir() -> PathBuf {
    std::env::var_os("RUDDER_TEST_MODELS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".models"))
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
             `RUDDER_MODELS_DIR={} cargo run -- models fetch {CHAT_MODEL} {EMBED_MODEL}`",
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
