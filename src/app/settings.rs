//! The settings screen: research defaults, the model and its runtime, and web search, as one
//! flat record; saving writes `settings.toml` atomically and keeps what the screen does not
//! show (context size, OpenAI-compatible server, web timeout).

use serde::{Deserialize, Serialize};

use super::{App, AppError, AppResult};
use crate::config::{GpuLayers, ResearchDefaults, Settings, WebSettings};
use crate::models::{ModelStore, Role};
use crate::sources::web::WEB_DISCLOSURE;

/// What the settings screen edits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct AppSettings {
    pub chat_model: String,
    /// The chat models the manifest knows (read-only).
    #[serde(default)]
    pub chat_models: Vec<String>,
    /// Generation threads; 0 means automatic (every physical core).
    pub threads: usize,
    /// Layers offloaded to the GPU; `None` fits them to the GPU's free memory, 0 keeps the
    /// model on the CPU.
    pub gpu_layers: Option<u32>,
    pub depth: u32,
    pub breadth: u32,
    pub c0: f32,
    pub tol: f32,
    pub lambda_explore: f32,
    pub lambda_info: f32,
    pub clarify_turns: u32,
    /// Ask at every branch, not only when the pause rule says it pays off.
    #[serde(default)]
    pub always_ask: bool,
    pub web_enabled: bool,
    pub searxng_url: String,
    /// What would leave the machine with web search on (read-only).
    #[serde(default)]
    pub web_disclosure: String,
}

impl App {
    pub fn settings_get(&self) -> AppResult<AppSettings> {
        let settings = self.settings()?;
        let store = ModelStore::open(&self.paths)?;
        Ok(view(&settings, &store))
    }

    /// Validates and saves; returns what was saved.
    pub fn settings_set(&self, new: &AppSettings) -> AppResult<AppSettings> {
        validate(new)?;
        let store = ModelStore::open(&self.paths)?;
        let chat = store.get(&new.chat_model)?;
        if chat.role != Role::Chat {
            return Err(AppError::Invalid(format!(
                "{} is not a chat model",
                new.chat_model
            )));
        }
        let mut settings = self.settings()?;
        settings.chat_model = new.chat_model.clone();
        settings.llama.threads = (new.threads > 0).then_some(new.threads);
        settings.llama.gpu_layers = GpuLayers::from_fixed(new.gpu_layers);
        settings.research = research_defaults(new);
        let url = new.searxng_url.trim().to_string();
        if new.web_enabled || !url.is_empty() || settings.web.is_some() {
            let web = settings.web.get_or_insert_with(WebSettings::default);
            web.enabled = new.web_enabled;
            web.searxng_url = url;
        }
        settings.save(&self.paths)?;
        Ok(view(&settings, &store))
    }
}

fn view(settings: &Settings, store: &ModelStore) -> AppSettings {
    let r = &settings.research;
    let web = settings.web.clone().unwrap_or_default();
    AppSettings {
        chat_model: settings.chat_model.clone(),
        chat_models: store
            .models()
            .iter()
            .filter(|m| m.role == Role::Chat)
            .map(|m| m.name.clone())
            .collect(),
        threads: settings.llama.threads.unwrap_or(0),
        gpu_layers: settings.llama.gpu_layers.fixed(),
        depth: r.depth,
        breadth: r.breadth,
        c0: r.c0,
        tol: r.tol,
        lambda_explore: r.lambda_explore,
        lambda_info: r.lambda_info,
        clarify_turns: r.clarify_turns,
        always_ask: r.always_ask,
        web_enabled: web.enabled,
        searxng_url: web.searxng_url,
        web_disclosure: WEB_DISCLOSURE.to_string(),
    }
}

/// The ranges the loop is defined for (the same check every run makes), and a web address
/// when web search is on.
pub fn validate(s: &AppSettings) -> AppResult<()> {
    let mut problems = crate::session::runner::validate_research(&research_defaults(s));
    if s.web_enabled {
        let url = s.searxng_url.trim();
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            problems.push(
                "web search needs the address of a SearxNG instance (http:// or https://)".into(),
            );
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(AppError::Invalid(problems.join("; ")))
    }
}

fn research_defaults(s: &AppSettings) -> ResearchDefaults {
    ResearchDefaults {
        depth: s.depth,
        breadth: s.breadth,
        c0: s.c0,
        tol: s.tol,
        lambda_explore: s.lambda_explore,
        lambda_info: s.lambda_info,
        clarify_turns: s.clarify_turns,
        always_ask: s.always_ask,
    }
}
