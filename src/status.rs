//! A one-call summary of the engine's state, for the CLI and the desktop shell.

use serde::Serialize;

use crate::config::{Paths, Settings};
use crate::error::Result;
use crate::models::{ModelState, ModelStore};

/// What the engine is configured to use and whether it is ready.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct EngineStatus {
    pub data_dir: String,
    pub models_dir: String,
    /// Manifest name of the configured chat model.
    pub chat_model: String,
    /// Whether its file(s) are on disk with the right size.
    pub chat_model_present: bool,
    /// `present`, `missing`, `incomplete` or `unknown`.
    pub chat_model_state: String,
    pub embed_model: String,
    pub embed_model_present: bool,
    /// Generation threads that will be used.
    pub threads: usize,
    pub gpu_layers: u32,
}

/// Reads settings and checks the configured models without hashing them (cheap: a stat per file).
pub fn engine_status(paths: &Paths) -> Result<EngineStatus> {
    let settings = Settings::load(paths)?;
    let store = ModelStore::open(paths)?;
    let chat = store.quick_state(&settings.chat_model);
    let embed = store.quick_state(&settings.embed_model);
    Ok(EngineStatus {
        data_dir: paths.data_dir.display().to_string(),
        models_dir: paths.models_dir.display().to_string(),
        chat_model: settings.chat_model.clone(),
        chat_model_present: chat == ModelState::Present,
        chat_model_state: chat.to_string(),
        embed_model: settings.embed_model.clone(),
        embed_model_present: embed == ModelState::Present,
        threads: settings.llama.effective_threads(),
        gpu_layers: settings.llama.gpu_layers,
    })
}
