//! A one-call summary of the engine's state, for the CLI and the desktop shell.

use serde::Serialize;

use crate::config::{Paths, Settings};
use crate::error::Result;
use crate::llm::llama::offload::{self, OffloadPlan, Recommendation, RunMemory};
use crate::llm::llama::plan_offload;
use crate::models::{ModelState, ModelStore, Role};

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
    /// `gpu_layers` in settings: `auto` or a number.
    pub gpu_layers_setting: String,
    /// Where the chat model's layers will run, and why.
    pub offload: OffloadPlan,
    /// The chat model this machine runs best, by the memory it would run from (the GPU's free
    /// memory when offloading, else the RAM and cores).
    pub recommendation: Option<Recommendation>,
    /// What this build lacks for the GPU found and what a faster build would give (a Vulkan
    /// build without the cooperative-matrix and integer-dot shaders; CUDA on NVIDIA); `None`
    /// when there is nothing to say.
    pub gpu_build_note: Option<String>,
}

/// Reads settings and checks the configured models without hashing them (cheap: a stat per file).
pub fn engine_status(paths: &Paths) -> Result<EngineStatus> {
    let settings = Settings::load(paths)?;
    let store = ModelStore::open(paths)?;
    let chat = store.quick_state(&settings.chat_model);
    let embed = store.quick_state(&settings.embed_model);
    let planned = offload_status(&store, &settings, chat == ModelState::Present);
    Ok(EngineStatus {
        data_dir: paths.data_dir.display().to_string(),
        models_dir: paths.models_dir.display().to_string(),
        chat_model: settings.chat_model.clone(),
        chat_model_present: chat == ModelState::Present,
        chat_model_state: chat.to_string(),
        embed_model: settings.embed_model.clone(),
        embed_model_present: embed == ModelState::Present,
        threads: settings.llama.effective_threads(),
        gpu_layers_setting: settings.llama.gpu_layers.to_string(),
        recommendation: recommendation(&store, &planned),
        gpu_build_note: crate::llm::vulkan_shaders::build_note(
            planned.device.as_ref().map(|d| d.description.as_str()),
        ),
        offload: planned,
    })
}

fn recommendation(store: &ModelStore, plan: &OffloadPlan) -> Option<Recommendation> {
    let memory = match &plan.device {
        Some(d) => RunMemory::Gpu {
            description: d.description.clone(),
            free: d.memory_free,
        },
        None => RunMemory::Cpu {
            ram: offload::system_memory()?,
            cores: crate::config::physical_cores(),
        },
    };
    let chat: Vec<(String, u64)> = store
        .models()
        .iter()
        .filter(|m| m.role == Role::Chat)
        .map(|m| (m.name.clone(), m.total_size()))
        .collect();
    offload::recommend(&chat, &memory)
}

/// The offload plan for the configured chat model; with the model not on disk yet, what the
/// plan would use. Reading the devices or the model's header may fail: the plan then says why.
fn offload_status(store: &ModelStore, settings: &Settings, present: bool) -> OffloadPlan {
    let parallel = settings.llama.effective_parallel();
    let path = store
        .get(&settings.chat_model)
        .ok()
        .and_then(|spec| spec.files.first().map(|f| store.file_path(f)))
        .filter(|_| present);
    let planned = match path {
        Some(path) => plan_offload(&path, &settings.llama, parallel),
        None => offload::gpu_devices()
            .map(|devices| offload::plan(settings.llama.gpu_layers, &devices, None)),
    };
    planned.unwrap_or_else(|e| OffloadPlan {
        backend: "CPU".into(),
        device: None,
        layers: 0,
        layers_total: 0,
        needed_bytes: None,
        reason: format!("cannot plan the GPU offload: {e}"),
    })
}
