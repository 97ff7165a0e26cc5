//! The engine's application API: everything the desktop window can ask for, as plain calls
//! with serialisable results. The Tauri shell (`src-tauri/`) only turns these into commands
//! and forwards what a [`Notifier`] receives as window events; the CLI is the other face of
//! the same library. The IPC contract is written down in `docs/desktop-api.md`.
//!
//! * [`models`] — model status and fetching with progress.
//! * [`settings`] — the settings screen's view of `settings.toml`.
//! * [`library`] — import of history exports and documents, history search, forgetting, and
//!   opening a cited source.
//! * [`research`] — research sessions run on a background thread: start, answer, steer,
//!   stop, resume, list, report, export.
//! * [`you`] — what Rudder knows about the user, and their corrections to it.

pub mod interaction;
pub mod library;
pub mod models;
pub mod research;
pub mod settings;
pub mod you;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use crate::config::{Paths, Settings};
use crate::embed::FastEmbedder;
use crate::models::{ModelState, ModelStore};
use crate::research::Envelope;
use crate::session::SessionId;

pub use library::{
    CorpusOffer, ForgetSelectorView, ForgetSummary, HistoryEntryView, HistoryFilters,
    ImportProgress, LibraryStats, SourceView,
};
pub use models::{FetchSummary, ModelProgress, ModelRow};
pub use research::{ReplyView, ReportView, ResearchRequest, RunState, SessionRow, SteeringAck};
pub use settings::AppSettings;
pub use you::{
    EntryRef, InterestView, QueryProfileView, SayRequest, SourceSwitch, StatementView, YouView,
};

/// Errors of the application API. The shell shows them to the user as they read.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error(transparent)]
    Engine(#[from] crate::Error),
    #[error(transparent)]
    Settings(#[from] crate::config::ConfigError),
    #[error(transparent)]
    History(#[from] crate::history::HistoryError),
    #[error(transparent)]
    Docs(#[from] crate::sources::docs::DocsError),
    #[error(transparent)]
    Models(#[from] crate::models::ModelError),
    #[error(transparent)]
    Session(#[from] crate::session::SessionError),
    #[error(transparent)]
    Research(#[from] crate::research::ResearchError),
    #[error(transparent)]
    Embed(#[from] crate::embed::EmbedError),
    #[error(transparent)]
    Llm(#[from] crate::llm::LlmError),
    #[error(transparent)]
    OpenModel(#[from] crate::llm::OpenError),
    #[error(transparent)]
    Profile(#[from] crate::profile::ProfileError),
    #[error(transparent)]
    Run(#[from] crate::session::runner::RunError),
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A correction names an inferred statement that is not there.
    #[error("no inferred statement {0}")]
    UnknownStatement(String),
    /// The request itself is wrong (a bad date, an empty question, an unknown session).
    #[error("{0}")]
    Invalid(String),
}

impl AppError {
    /// What fixes it, when the person can (see [`crate::remedy`]).
    pub fn remedy(&self) -> Option<crate::remedy::Remedy> {
        match self {
            AppError::Engine(e) => e.remedy(),
            AppError::History(e) => e.remedy(),
            AppError::Docs(e) => e.remedy(),
            AppError::Models(e) => e.remedy(),
            AppError::Session(e) => e.remedy(),
            AppError::Research(e) => e.remedy(),
            AppError::Embed(e) => e.remedy(),
            AppError::OpenModel(e) => e.remedy(),
            AppError::Run(e) => e.remedy(),
            AppError::UnknownStatement(_) => Some(crate::remedy::Remedy::ListStatements),
            _ => None,
        }
    }

    /// The message the window shows: the error, and what to do about it in the window's
    /// terms (a screen to open), never a command line.
    pub fn for_window(&self) -> String {
        match self.remedy() {
            Some(remedy) => format!("{self} — {}", remedy_in_the_window(&remedy)),
            None => self.to_string(),
        }
    }
}

/// A remedy worded for the window.
pub fn remedy_in_the_window(remedy: &crate::remedy::Remedy) -> String {
    use crate::remedy::Remedy;
    match remedy {
        Remedy::FetchModel(name) => format!("fetch `{name}` on the Setup screen"),
        Remedy::ListModels => "the Setup screen lists the models Rudder knows".into(),
        Remedy::AddSources => {
            "add documents or import history on the Library screen, or switch on web search in \
             Settings"
                .into()
        }
        Remedy::ListDocuments => "the Library screen lists your documents".into(),
        Remedy::ListStatements => "the You screen lists what Rudder inferred".into(),
        Remedy::SteerElsewhere(_) => {
            "steer it in the window or terminal that runs it, or wait until it stops".into()
        }
        Remedy::Reimport => {
            "import your history exports again on the Library screen (they are the source)".into()
        }
    }
}

pub type AppResult<T> = Result<T, AppError>;

/// Where the API reports progress and research events; the desktop shell emits each as a
/// window event (`model-progress`, `import-progress`, `research-event`, `research-state`).
pub trait Notifier: Send + Sync + 'static {
    fn model_progress(&self, _progress: &ModelProgress) {}
    fn import_progress(&self, _progress: &ImportProgress) {}
    fn research_event(&self, _session: SessionId, _event: &Envelope) {}
    fn research_state(&self, _state: &RunState) {}
}

/// A notifier that drops everything (tests, scripts).
pub struct Silent;
impl Notifier for Silent {}

/// The application: one per process, shared by every window command.
pub struct App {
    paths: Paths,
    notifier: Arc<dyn Notifier>,
    /// Research runs this process drives, by session.
    runs: Arc<Mutex<HashMap<SessionId, research::LiveRun>>>,
    /// The embedding model, loaded on first use and kept (it takes a second to load).
    embedder: Mutex<Option<Arc<FastEmbedder>>>,
}

impl App {
    pub fn new(paths: Paths, notifier: Arc<dyn Notifier>) -> Self {
        Self {
            paths,
            notifier,
            runs: Arc::default(),
            embedder: Mutex::new(None),
        }
    }

    pub fn paths(&self) -> &Paths {
        &self.paths
    }

    fn settings(&self) -> AppResult<Settings> {
        Ok(Settings::load(&self.paths)?)
    }

    /// The embedding model when it is installed; `None` means keyword search only.
    fn embedder(&self) -> AppResult<Option<Arc<FastEmbedder>>> {
        let mut slot = self.embedder.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = slot.as_ref() {
            return Ok(Some(e.clone()));
        }
        let settings = self.settings()?;
        let store = ModelStore::open(&self.paths)?;
        if store.quick_state(&settings.embed_model) != ModelState::Present {
            return Ok(None);
        }
        let embedder = Arc::new(FastEmbedder::from_store(
            &store,
            &settings.embed_model,
            settings.llama.effective_threads(),
        )?);
        *slot = Some(embedder.clone());
        Ok(Some(embedder))
    }
}

/// A throttle for progress events: at most one every 100 ms, except the ones that must go.
struct Throttle(Mutex<Option<std::time::Instant>>);

impl Throttle {
    fn new() -> Self {
        Self(Mutex::new(None))
    }

    fn ready(&self) -> bool {
        let mut last = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let now = std::time::Instant::now();
        match *last {
            Some(t) if now.duration_since(t) < std::time::Duration::from_millis(100) => false,
            _ => {
                *last = Some(now);
                true
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_words_a_remedy_as_a_screen_never_a_command() {
        let missing = AppError::Models(crate::models::ModelError::Missing {
            model: "qwen".into(),
            path: "/nowhere/qwen.gguf".into(),
        });
        let shown = missing.for_window();
        assert!(
            shown.contains("fetch `qwen` on the Setup screen"),
            "{shown}"
        );
        assert!(!shown.contains("rudder "), "{shown}");
        let plain = AppError::Invalid("write a question to research".into());
        assert_eq!(plain.for_window(), "write a question to research");
    }
}
