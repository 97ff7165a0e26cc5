//! Text generation: one [`Llm`] trait (the `rudder-llm` crate, re-exported here), two
//! backends.
//!
//! * [`llama`] runs a GGUF in process through llama.cpp (the `rudder-llama` crate, with the GPU
//!   features; the default, and nothing leaves the machine).
//! * [`openai`] talks to any OpenAI-compatible server (llama-server, Ollama, vLLM) for users who
//!   run a bigger model on another machine.
//!
//! [`open_chat`] picks between them from the settings. Structured output goes through
//! [`complete_schema`] (or [`complete_json`]); judgements through [`probability_of_yes`].

pub mod openai;

pub use rudder_llama as llama;
pub use rudder_llama::vulkan_shaders;
pub use rudder_llm::*;

/// Why the chat model could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The model to open is unknown, missing or damaged.
    #[error(transparent)]
    Model(#[from] crate::models::ModelError),
    #[error("`{name}` is a {role} model, not a chat model")]
    NotAChatModel { name: String, role: String },
    #[error(transparent)]
    Llm(#[from] LlmError),
}

impl OpenError {
    /// What fixes it, when the person can (see [`crate::remedy`]).
    pub fn remedy(&self) -> Option<crate::remedy::Remedy> {
        match self {
            OpenError::Model(e) => e.remedy(),
            _ => None,
        }
    }
}

/// Opens the chat model the settings name, or `model` when given: the OpenAI-compatible server
/// when one is configured and no local model was asked for, else the local GGUF (verified
/// before it is loaded).
pub fn open_chat(
    store: &crate::models::ModelStore,
    settings: &crate::config::Settings,
    model: Option<&str>,
) -> Result<Box<dyn Llm>, OpenError> {
    if let (Some(server), None) = (&settings.openai, model) {
        return Ok(Box::new(openai::OpenAiLlm::new(server)?));
    }
    let name = model.unwrap_or(&settings.chat_model);
    let spec = store.get(name)?;
    if spec.role != crate::models::Role::Chat {
        return Err(OpenError::NotAChatModel {
            name: name.to_string(),
            role: spec.role.to_string(),
        });
    }
    let path = store.ready_path(name)?;
    Ok(Box::new(llama::LlamaLlm::load(
        name,
        &path,
        &settings.llama,
    )?))
}
