//! The first-run screen: which models are installed, and fetching them with progress.

use std::sync::Mutex;

use serde::Serialize;

use super::{App, AppResult, Notifier, Throttle};
use crate::models::FetchProgress;
use crate::models::{ModelState, ModelStore, Role};

/// One model of the manifest.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ModelRow {
    pub name: String,
    /// `chat`, `embed`, `runtime` or `corpus`.
    pub role: String,
    pub size_bytes: u64,
    /// `present`, `missing`, `incomplete` or `unknown` (sizes only, no hashing).
    pub state: String,
    pub license: String,
    pub description: String,
    /// The settings use it (the chat or the embedding model, or the runtime one of them needs).
    pub configured: bool,
}

/// What a fetch did, by model.
#[derive(Debug, Clone, Default, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct FetchSummary {
    pub fetched: Vec<String>,
    pub already_present: Vec<String>,
}

/// A `model-progress` event.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ModelProgress {
    pub name: String,
    /// The step under way (a file, or a PyPI package).
    pub file: String,
    pub done: u64,
    pub total: Option<u64>,
    pub finished: bool,
}

impl App {
    pub fn models_list(&self) -> AppResult<Vec<ModelRow>> {
        let settings = self.settings()?;
        let store = ModelStore::open(&self.paths)?;
        let configured = configured(&store, &[&settings.chat_model, &settings.embed_model]);
        Ok(store
            .models()
            .iter()
            .filter(|m| m.role != Role::Corpus)
            .map(|m| ModelRow {
                name: m.name.clone(),
                role: m.role.to_string(),
                size_bytes: m.total_size(),
                state: store.quick_state(&m.name).to_string(),
                license: m.license.clone(),
                description: m.description.clone(),
                configured: configured.contains(&m.name),
            })
            .collect())
    }

    /// Fetches `names`, or the configured chat and embedding models when empty. Idempotent:
    /// a model already present is left alone.
    pub fn models_fetch(&self, names: &[String]) -> AppResult<FetchSummary> {
        let settings = self.settings()?;
        let store = ModelStore::open(&self.paths)?;
        let names: Vec<String> = if names.is_empty() {
            vec![settings.chat_model.clone(), settings.embed_model.clone()]
        } else {
            names.to_vec()
        };
        let mut summary = FetchSummary::default();
        for name in &names {
            if store.quick_state(name) == ModelState::Present {
                summary.already_present.push(name.clone());
                continue;
            }
            let progress = Forward {
                name: name.clone(),
                step: Mutex::new((String::new(), None)),
                notifier: self.notifier.as_ref(),
                throttle: Throttle::new(),
            };
            let report = store.fetch(name, &progress)?;
            self.notifier.model_progress(&ModelProgress {
                name: name.clone(),
                file: String::new(),
                done: report.bytes,
                total: Some(report.bytes),
                finished: true,
            });
            if report.fetched > 0 {
                summary.fetched.push(name.clone());
            } else {
                summary.already_present.push(name.clone());
            }
        }
        // A new embedding model must be picked up by the next search.
        *self.embedder.lock().unwrap_or_else(|e| e.into_inner()) = None;
        Ok(summary)
    }
}

/// The configured models and what they require.
fn configured(store: &ModelStore, names: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    let mut queue: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    while let Some(name) = queue.pop() {
        if out.contains(&name) {
            continue;
        }
        if let Ok(spec) = store.get(&name) {
            queue.extend(spec.requires.iter().cloned());
        }
        out.push(name);
    }
    out
}

/// Fetch progress as `model-progress` events.
struct Forward<'a> {
    name: String,
    step: Mutex<(String, Option<u64>)>,
    notifier: &'a dyn Notifier,
    throttle: Throttle,
}

impl Forward<'_> {
    fn send(&self, done: u64, force: bool) {
        if !force && !self.throttle.ready() {
            return;
        }
        let (file, total) = self.step.lock().unwrap_or_else(|e| e.into_inner()).clone();
        self.notifier.model_progress(&ModelProgress {
            name: self.name.clone(),
            file,
            done,
            total,
            finished: false,
        });
    }
}

impl FetchProgress for Forward<'_> {
    fn begin(&self, label: &str, total: Option<u64>) {
        *self.step.lock().unwrap_or_else(|e| e.into_inner()) = (label.to_string(), total);
        self.send(0, true);
    }

    fn position(&self, done: u64) {
        self.send(done, false);
    }
}
