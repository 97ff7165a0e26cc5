//! Rudder's engine: private, steerable deep research on your own machine.
//!
//! Everything that is not a window lives here; the `rudder` CLI and the desktop shell are two
//! thin faces of this library. The stages each have a module:
//!
//! * [`models`] — the model manifest, fetching (PyPI wheels, resumable HTTP, local files) and
//!   integrity checks.
//! * [`llm`] — text generation: llama.cpp in process, or an OpenAI-compatible server.
//! * [`embed`] — sentence embeddings through fastembed and ONNX Runtime.
//! * [`config`] — where state lives and the user's settings.
//!
//! Evaluation, benchmarks and the synthetic history generator are separate workspace crates
//! (`crates/eval`, `crates/bench`, `crates/synth`) that the desktop app and the `rudder`
//! binary do not link.

pub mod app;
pub mod checks;
pub mod config;
pub mod diagnose;
pub mod embed;
pub mod error;
pub mod fsutil;
pub mod history;
pub mod html;
pub mod llm;
pub mod models;
pub mod profile;
pub mod progress;
pub mod prompts;
pub mod remedy;
pub mod research;
pub mod retrieval;
pub mod session;
pub mod sources;
pub mod status;
#[cfg(test)]
pub(crate) mod test_support;
pub mod text;

pub use error::{Error, Result};
/// Clarification lives under the research loop it serves; this is the short path the desktop
/// app and the tests name it by.
pub use research::clarify;
