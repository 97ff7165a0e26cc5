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
//! * [`bench`] — measurements that back the performance claims.

pub mod app;
pub mod bench;
pub mod clarify;
pub mod config;
pub mod embed;
pub mod error;
pub mod eval;
pub mod fsutil;
pub mod history;
pub mod llm;
pub mod models;
pub mod profile;
pub mod prompts;
pub mod research;
pub mod retrieval;
pub mod session;
pub mod sources;
pub mod status;

pub use error::{Error, Result};
