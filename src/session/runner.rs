//! The one way a research session runs: [`Session::start`] and [`Session::resume`], called
//! alike by the CLI, the desktop app and the bench. Each owns the whole sequence:
//!
//! 1. [`new_session_config`] resolves a run's settings from `settings.toml` plus the caller's
//!    explicit [`RunOverrides`], validated once ([`validate_research`]), and records the model
//!    that runs it ([`Session::chat_model`]);
//! 2. [`Runtime::open`] opens that chat model (or the configured server) and the embedder;
//! 3. `open_sources` opens the document library, the history and (only when the user
//!    switched it on) the web;
//! 4. `SessionRun::execute` prepares the brief with the query-aware profile, takes the
//!    session's lock, runs or resumes the loop, and writes `report.md`, `report.html` and
//!    `todo.md` next to the session.
//!
//! The faces keep only what is theirs: the CLI parses flags, renders the terminal and words
//! its remedies as commands; the app keeps its threads, channels and notifier. The evaluation
//! runs the same loop without a stored session ([`run_in_memory`]).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{RunLock, SessionConfig, SessionError, SessionId, SessionLog, SessionStatus};
use super::{SessionInfo, SessionStore, SourceChoice};
use crate::config::{Paths, ResearchDefaults, Settings};
use crate::embed::{Embedder, FastEmbedder};
use crate::history::History;
use crate::llm::Llm;
use crate::models::ModelStore;
use crate::profile::ProfileOptions;
use crate::research::steering::{Journal, Message};
use crate::research::{
    Brief, Envelope, EventSink, Interaction, MemoryJournal, Outcome, ResearchError,
    ResearchSettings, Researcher,
};
use crate::sources::docs::DocsSource;
use crate::sources::history::HistorySourceAdapter;
use crate::sources::Sources;

/// Errors of setting up or running a session.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The request itself is wrong (an empty question, a depth out of range, no source).
    #[error("{0}")]
    Invalid(String),
    #[error("research needs the embedding model `{name}`: {source}")]
    Embedder {
        name: String,
        #[source]
        source: crate::embed::EmbedError,
    },
    #[error(transparent)]
    Engine(#[from] crate::Error),
    #[error(transparent)]
    Settings(#[from] crate::config::ConfigError),
    #[error(transparent)]
    Llm(#[from] crate::llm::LlmError),
    #[error(transparent)]
    OpenModel(#[from] crate::llm::OpenError),
    #[error(transparent)]
    Models(#[from] crate::models::ModelError),
    #[error(transparent)]
    History(#[from] crate::history::HistoryError),
    #[error(transparent)]
    Docs(#[from] crate::sources::docs::DocsError),
    #[error(transparent)]
    Profile(#[from] crate::profile::ProfileError),
    #[error(transparent)]
    Session(#[from] SessionError),
    #[error(transparent)]
    Research(#[from] ResearchError),
    /// A new session would have nothing to search.
    #[error("nothing to research over: no documents, no imported history, and web search is off")]
    NothingToResearch,
    /// None of the sources a stored session chose has anything in it any more.
    #[error("session {0}: none of its sources is available any more")]
    SourcesGone(SessionId),
    #[error("session {0} has already finished")]
    Finished(SessionId),
    /// The model a stored session was started with cannot be opened.
    #[error("session {id} was started with model `{model}`: {source}")]
    SessionModel {
        id: SessionId,
        model: String,
        #[source]
        source: Box<RunError>,
    },
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl RunError {
    fn io(path: &Path, source: std::io::Error) -> Self {
        RunError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    /// What fixes it, when the person can (see [`crate::remedy`]).
    pub fn remedy(&self) -> Option<crate::remedy::Remedy> {
        use crate::remedy::Remedy;
        match self {
            RunError::Embedder { name, .. } => Some(Remedy::FetchModel(name.clone())),
            RunError::NothingToResearch => Some(Remedy::AddSources),
            RunError::Engine(e) => e.remedy(),
            RunError::OpenModel(e) => e.remedy(),
            RunError::Models(e) => e.remedy(),
            RunError::History(e) => e.remedy(),
            RunError::Docs(e) => e.remedy(),
            RunError::Session(e) => e.remedy(),
            RunError::Research(e) => e.remedy(),
            RunError::SessionModel { source, .. } => source.remedy(),
            _ => None,
        }
    }

    /// Whether the run ended because the user pressed stop (not a failure).
    pub fn is_stop(&self) -> bool {
        matches!(self, RunError::Research(ResearchError::Stopped))
    }
}

/// The knobs a caller may set for one run; `None` takes the saved setting. The CLI's flags and
/// the window's research form both become one of these, so neither holds defaults of its own.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunOverrides {
    pub depth: Option<u32>,
    pub breadth: Option<u32>,
    pub c0: Option<f32>,
    pub tol: Option<f32>,
    pub lambda_explore: Option<f32>,
    pub lambda_info: Option<f32>,
    pub clarify_turns: Option<u32>,
    pub always_ask: Option<bool>,
    /// The report's support judge threshold (`ResearchSettings::support_judge`; 0 turns the
    /// judge off). Not a saved default: it is calibrated per model.
    pub support_judge: Option<f32>,
    /// `ResearchSettings::fresh_evidence_pool` (1 turns off the preference for passages no
    /// other node took). Not a saved default: a knob for measuring it.
    pub fresh_evidence_pool: Option<usize>,
    /// `ResearchSettings::judge_learnings` (false leaves the judge to the report). Not a saved
    /// default: a knob for measuring it.
    pub judge_learnings: Option<bool>,
    /// The report's finding judge threshold (`ResearchSettings::finding_judge`; 0 turns the
    /// judge off). Not a saved default: it is calibrated per model.
    pub finding_judge: Option<f32>,
}

impl RunOverrides {
    /// The saved defaults with these overrides applied (not yet validated).
    pub fn apply(&self, saved: &ResearchDefaults) -> ResearchDefaults {
        ResearchDefaults {
            depth: self.depth.unwrap_or(saved.depth),
            breadth: self.breadth.unwrap_or(saved.breadth),
            c0: self.c0.unwrap_or(saved.c0),
            tol: self.tol.unwrap_or(saved.tol),
            lambda_explore: self.lambda_explore.unwrap_or(saved.lambda_explore),
            lambda_info: self.lambda_info.unwrap_or(saved.lambda_info),
            clarify_turns: self.clarify_turns.unwrap_or(saved.clarify_turns),
            always_ask: self.always_ask.unwrap_or(saved.always_ask),
        }
    }

    /// The loop's settings for a run: saved defaults, these overrides, validated.
    pub fn resolve(&self, saved: &ResearchDefaults) -> Result<ResearchSettings, RunError> {
        let chosen = self.apply(saved);
        let mut problems = validate_research(&chosen);
        if let Some(p) = self.support_judge.filter(|p| !(0.0..=1.0).contains(p)) {
            problems.push(format!(
                "the support judge threshold must be 0 to 1, not {p}"
            ));
        }
        if let Some(p) = self.finding_judge.filter(|p| !(0.0..=1.0).contains(p)) {
            problems.push(format!(
                "the finding judge threshold must be 0 to 1, not {p}"
            ));
        }
        if let Some(n) = self
            .fresh_evidence_pool
            .filter(|n| !(1..=MAX_FRESH_EVIDENCE_POOL).contains(n))
        {
            problems.push(format!(
                "the fresh evidence pool must be 1 to {MAX_FRESH_EVIDENCE_POOL}, not {n}"
            ));
        }
        if !problems.is_empty() {
            return Err(RunError::Invalid(problems.join("; ")));
        }
        let mut settings = chosen.to_settings();
        settings.support_judge = self.support_judge;
        settings.finding_judge = self.finding_judge;
        if let Some(n) = self.fresh_evidence_pool {
            settings.fresh_evidence_pool = n;
        }
        if let Some(on) = self.judge_learnings {
            settings.judge_learnings = on;
        }
        Ok(settings)
    }
}

/// The furthest down the ranking a node may look for fresh passages, in multiples of the
/// passages it reads.
pub const MAX_FRESH_EVIDENCE_POOL: usize = 10;

/// The deepest tree and the widest branching a run may ask for (each level multiplies the
/// model calls by the breadth).
pub const MAX_DEPTH: u32 = 6;
pub const MAX_BREADTH: u32 = 6;
/// The most clarifying questions before research.
pub const MAX_CLARIFY_TURNS: u32 = 5;

/// What is wrong with a set of research defaults, one sentence per problem (empty when they
/// are usable). The settings screen and every run check with this one function.
pub fn validate_research(r: &ResearchDefaults) -> Vec<String> {
    let mut problems = Vec::new();
    if r.depth > MAX_DEPTH {
        problems.push(format!("depth must be 0 to {MAX_DEPTH}, not {}", r.depth));
    }
    if !(1..=MAX_BREADTH).contains(&r.breadth) {
        problems.push(format!(
            "breadth must be 1 to {MAX_BREADTH}, not {}",
            r.breadth
        ));
    }
    if !(0.0..=1.0).contains(&r.c0) {
        problems.push(format!("C0 must be between 0 and 1, not {}", r.c0));
    }
    if !(r.tol > 0.0 && r.tol.is_finite()) {
        problems.push(format!("Tol must be above 0, not {}", r.tol));
    }
    for (name, v) in [("λ_exp", r.lambda_explore), ("λ_info", r.lambda_info)] {
        if !(v >= 0.0 && v.is_finite()) {
            problems.push(format!("{name} must be 0 or more, not {v}"));
        }
    }
    if r.clarify_turns > MAX_CLARIFY_TURNS {
        problems.push(format!(
            "at most {MAX_CLARIFY_TURNS} clarifying questions, not {}",
            r.clarify_turns
        ));
    }
    problems
}

/// What a face asks for when it starts a session.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NewSession {
    pub question: String,
    /// What the user wants the report to know about them.
    pub persona: String,
    pub sources: SourceChoice,
    pub overrides: RunOverrides,
}

/// The configuration a new session is stored with: the saved settings plus the request's
/// overrides, validated, and the model that will run it (`model`, from the runtime).
pub fn new_session_config(
    settings: &Settings,
    request: &NewSession,
    model: &str,
) -> Result<SessionConfig, RunError> {
    let question = request.question.trim();
    if question.is_empty() {
        return Err(RunError::Invalid("write a question to research".into()));
    }
    if !request.sources.history && !request.sources.docs && !web_on(settings) {
        return Err(RunError::Invalid(
            "choose at least one source: your history or your documents".into(),
        ));
    }
    Ok(SessionConfig {
        brief: Brief {
            query: question.to_string(),
            persona_text: request.persona.trim().to_string(),
            profile: String::new(),
            checklist: None,
            considered: Vec::new(),
        },
        settings: request.overrides.resolve(&settings.research)?,
        model: model.to_string(),
        sources: request.sources.clone(),
    })
}

/// Whether the user switched web search on.
pub fn web_on(settings: &Settings) -> bool {
    crate::sources::web::web_source_from_settings(settings).is_some()
}

/// The models a run uses.
pub struct Runtime {
    pub llm: Box<dyn Llm>,
    pub embedder: Arc<FastEmbedder>,
    /// The embedding model's name (sources find their stored vectors by it).
    pub embed_model: String,
}

impl Runtime {
    /// Opens the chat model (`model`, else the configured one) and the embedder (`embedder`
    /// when the caller already holds it loaded).
    pub fn open(
        paths: &Paths,
        settings: &Settings,
        model: Option<&str>,
        embedder: Option<Arc<FastEmbedder>>,
    ) -> Result<Self, RunError> {
        let store = ModelStore::open(paths)?;
        let embedder = match embedder {
            Some(e) => e,
            None => Arc::new(open_embedder(&store, settings)?),
        };
        let llm = crate::llm::open_chat(&store, settings, model)?;
        Ok(Self {
            llm,
            embedder,
            embed_model: settings.embed_model.clone(),
        })
    }

    /// Opens the runtime a stored session was started with: its model (unless `model` picks
    /// another), or the OpenAI-compatible server when that is what ran it.
    fn for_session(
        paths: &Paths,
        settings: &Settings,
        config: &SessionConfig,
        model: Option<&str>,
        embedder: Option<Arc<FastEmbedder>>,
    ) -> Result<Self, RunError> {
        let served_by_server = settings
            .openai
            .as_ref()
            .is_some_and(|s| s.model == config.model);
        let model = match model {
            Some(m) => Some(m),
            None if served_by_server || config.model.is_empty() => None,
            None => Some(config.model.as_str()),
        };
        Self::open(paths, settings, model, embedder)
    }

    pub fn model_name(&self) -> &str {
        self.llm.model_name()
    }

    pub fn models(&self) -> RunModels<'_> {
        RunModels {
            llm: self.llm.as_ref(),
            embedder: self.embedder.as_ref(),
            embed_model: &self.embed_model,
        }
    }
}

/// The configured embedding model, loaded.
pub fn open_embedder(store: &ModelStore, settings: &Settings) -> Result<FastEmbedder, RunError> {
    let name = &settings.embed_model;
    FastEmbedder::from_store(store, name, settings.llama.effective_threads()).map_err(|source| {
        RunError::Embedder {
            name: name.clone(),
            source,
        }
    })
}

/// A session's sources: the searched ones, and — apart, because a new run first builds the
/// profile from it — the history when it has sessions.
struct OpenedSources {
    sources: Sources,
    history: Option<History>,
}

impl OpenedSources {
    fn is_empty(&self) -> bool {
        self.sources.is_empty() && self.history.is_none()
    }
}

/// Opens the sources `choice` names that have something in them, and the web when the user
/// switched it on.
fn open_sources(
    paths: &Paths,
    settings: &Settings,
    choice: &SourceChoice,
) -> Result<OpenedSources, RunError> {
    let mut sources = Sources::new();
    if choice.docs && paths.docs_dir().exists() {
        let mut docs = DocsSource::open(&paths.docs_dir())?;
        docs.library_mut().release_writer()?;
        if docs.library().stats()?.store.documents > 0 {
            sources.push(Box::new(docs));
        }
    }
    let mut history = None;
    if choice.history && paths.history_dir().exists() {
        let h = History::open(&paths.history_dir())?;
        if h.stats()?.store.sessions > 0 {
            history = Some(h);
        }
    }
    if let Some(web) = crate::sources::web::web_source_from_settings(settings) {
        tracing::info!("web search is on: {}", crate::sources::web::WEB_DISCLOSURE);
        sources.push(Box::new(web));
    }
    Ok(OpenedSources { sources, history })
}

/// Builds the query-aware profile from `history` into `brief` (once: a brief that has one
/// keeps it). Returns the profile run when it built one (its cost is the caller's to count).
pub fn profile_brief(
    models: RunModels,
    history: &mut History,
    brief: &mut Brief,
    options: &ProfileOptions,
) -> Result<Option<crate::profile::ProfileRun>, RunError> {
    if !brief.profile.is_empty() {
        return Ok(None);
    }
    let run = crate::profile::query_profile(
        models.llm,
        history,
        Some((models.embedder, models.embed_model)),
        &brief.query,
        options,
    )?;
    brief.profile = run.profile.to_prompt_text();
    brief.considered = run
        .profile
        .considered
        .iter()
        .map(|s| s.text.clone())
        .collect();
    Ok(Some(run))
}

/// The user's own statements as a profile, when they made any.
fn said_profile(
    paths: &Paths,
    query: &str,
) -> Result<Option<crate::profile::QueryProfile>, RunError> {
    let Some(store) = History::open_store(&paths.history_dir())? else {
        return Ok(None);
    };
    let you = crate::profile::You::load(&store)?;
    Ok(you.said_profile(query))
}

/// One stored session driven to its report by this process.
struct SessionRun<'a> {
    paths: &'a Paths,
    id: SessionId,
    runtime: &'a Runtime,
    sources: OpenedSources,
    /// Set by another thread to stop at the next step boundary (resumable).
    stop: Option<Arc<AtomicBool>>,
}

impl SessionRun<'_> {
    /// Runs or resumes the session: builds the profile for a new one (stored with it, so a
    /// resumed run does not rebuild it), takes the lock, runs the loop, and writes its files.
    /// On an error the session is marked interrupted, ready to resume.
    fn execute(
        self,
        interaction: &mut dyn Interaction,
        events: &mut dyn EventSink,
        phase: &mut dyn FnMut(RunPhase),
    ) -> Result<Outcome, RunError> {
        let id = self.id;
        let store = SessionStore::open(&self.paths.sessions_db())?;
        let log = SessionLog::new(store, id);
        let mut config = log.config()?;
        let store = log.store;
        let committed = store.events(id)?;
        let OpenedSources {
            mut sources,
            history,
        } = self.sources;
        if let Some(mut history) = history {
            if committed.is_empty() && config.brief.profile.is_empty() {
                phase(RunPhase::BuildingProfile);
                profile_brief(
                    self.runtime.models(),
                    &mut history,
                    &mut config.brief,
                    &ProfileOptions::default(),
                )?;
                store.set_config(id, &serde_json::to_value(&config).unwrap_or_default())?;
            }
            history.release_writer()?;
            sources.push(Box::new(HistorySourceAdapter::new(history)));
        } else if committed.is_empty() && config.brief.profile.is_empty() {
            // A run that reads no history still carries what the user told Rudder.
            if let Some(profile) = said_profile(self.paths, &config.brief.query)? {
                config.brief.profile = profile.to_prompt_text();
                store.set_config(id, &serde_json::to_value(&config).unwrap_or_default())?;
            }
        }
        if sources.is_empty() {
            return Err(ResearchError::NoSources.into());
        }
        // One process drives a session at a time; the lock goes when this process does.
        let _lock = RunLock::acquire(&store, id)?;
        store.set_status(id, SessionStatus::Running)?;
        phase(RunPhase::Researching);
        let mut journal = Stoppable {
            log: SessionLog::new(store, id),
            stop: self.stop,
        };
        let result = Researcher {
            llm: self.runtime.llm.as_ref(),
            embedder: self.runtime.embedder.as_ref(),
            sources: &mut sources,
            interaction,
            events,
            journal: &mut journal,
            settings: config.settings,
            embed_model: self.runtime.embed_model.clone(),
        }
        .resume(&config.brief, &committed);
        let store = &journal.log.store;
        let outcome = match result {
            Ok(outcome) => outcome,
            Err(e) => {
                // The log keeps every finished step: the session resumes from there.
                let _ = store.set_status(id, SessionStatus::Interrupted);
                return Err(e.into());
            }
        };
        let _ = store.set_title(id, &outcome.report.title);
        write_session_files(self.paths, id, &config.brief.query, &outcome)?;
        Ok(outcome)
    }
}

/// Where a run is, for a face to show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunPhase {
    /// The session is stored and its models and sources are open; `events` is how much of
    /// it earlier runs already logged (0 for a new session).
    Opened { id: SessionId, events: u64 },
    /// Building the query-aware profile from history (a new session only).
    BuildingProfile,
    /// The loop runs.
    Researching,
}

impl RunPhase {
    pub fn describe(self) -> &'static str {
        match self {
            RunPhase::Opened { .. } => "models and sources are open",
            RunPhase::BuildingProfile => "building your profile for this question from history",
            RunPhase::Researching => "researching",
        }
    }
}

/// The one way a research session starts or resumes, whichever face asks: the CLI, the
/// window and the bench supply only how to reach the person (an [`Interaction`]), where the
/// events go (an [`EventSink`]) and what to show of the phases.
///
/// Both paths resolve the model the same way ([`Session::chat_model`]): the one the caller
/// picked, else the OpenAI-compatible server when one is configured, else the configured
/// local model. A session records that model, and a resumed session runs with it again.
pub struct Session {
    paths: Paths,
    settings: Settings,
    model: Option<String>,
    embedder: Option<Arc<FastEmbedder>>,
    runtime: Option<Runtime>,
    stop: Option<Arc<AtomicBool>>,
}

impl Session {
    /// Sessions over this data directory, with these (saved) settings.
    pub fn new(paths: &Paths, settings: &Settings) -> Self {
        Self {
            paths: paths.clone(),
            settings: settings.clone(),
            model: None,
            embedder: None,
            runtime: None,
            stop: None,
        }
    }

    /// Runs with this chat model instead of the configured one (the CLI's `--model`).
    pub fn with_model(mut self, model: Option<String>) -> Self {
        self.model = model;
        self
    }

    /// Uses an embedder the caller already holds loaded.
    pub fn with_embedder(mut self, embedder: Option<Arc<FastEmbedder>>) -> Self {
        self.embedder = embedder;
        self
    }

    /// Uses models the caller already opened (the bench times loading them apart).
    pub fn with_runtime(mut self, runtime: Runtime) -> Self {
        self.runtime = Some(runtime);
        self
    }

    /// Stops the run at its next step boundary once another thread sets this (resumable).
    pub fn with_stop(mut self, stop: Arc<AtomicBool>) -> Self {
        self.stop = Some(stop);
        self
    }

    /// The chat model a new session is recorded with and runs on.
    pub fn chat_model(&self) -> &str {
        if let Some(runtime) = &self.runtime {
            return runtime.model_name();
        }
        match (&self.model, &self.settings.openai) {
            (Some(model), _) => model,
            (None, Some(server)) => &server.model,
            (None, None) => &self.settings.chat_model,
        }
    }

    /// Validates and stores a new session without running it (the window returns its id at
    /// once and runs it on a thread with [`Session::resume`]).
    pub fn create(&self, request: &NewSession) -> Result<SessionId, RunError> {
        let config = new_session_config(&self.settings, request, self.chat_model())?;
        self.store_new(&config)
    }

    fn store_new(&self, config: &SessionConfig) -> Result<SessionId, RunError> {
        let store = SessionStore::open(&self.paths.sessions_db())?;
        Ok(SessionLog::create(store, config)?.id)
    }

    /// Starts a new session and runs it to its report. The models and sources are opened
    /// before anything is stored, so a missing model or an empty library leaves no session
    /// behind.
    pub fn start(
        self,
        request: &NewSession,
        interaction: &mut dyn Interaction,
        events: &mut dyn EventSink,
        phase: &mut dyn FnMut(RunPhase),
    ) -> Result<(SessionId, Outcome), RunError> {
        let config = new_session_config(&self.settings, request, self.chat_model())?;
        let opened;
        let runtime = match &self.runtime {
            Some(runtime) => runtime,
            None => {
                opened = Runtime::open(
                    &self.paths,
                    &self.settings,
                    self.model.as_deref(),
                    self.embedder.clone(),
                )?;
                &opened
            }
        };
        let sources = open_sources(&self.paths, &self.settings, &config.sources)?;
        if sources.is_empty() {
            return Err(RunError::NothingToResearch);
        }
        let id = self.store_new(&config)?;
        phase(RunPhase::Opened { id, events: 0 });
        let outcome = SessionRun {
            paths: &self.paths,
            id,
            runtime,
            sources,
            stop: self.stop.clone(),
        }
        .execute(interaction, events, phase)?;
        Ok((id, outcome))
    }

    /// The stored session `id`, unless it cannot be resumed (it has finished).
    pub fn resumable(&self, id: SessionId) -> Result<SessionInfo, RunError> {
        let info = SessionStore::open(&self.paths.sessions_db())?.info(id)?;
        if info.status == SessionStatus::Finished {
            return Err(RunError::Finished(id));
        }
        Ok(info)
    }

    /// Goes on with a stored session from its last committed step, with the model it was
    /// started with (unless [`Session::with_model`] picks another) and the sources it chose.
    pub fn resume(
        self,
        id: SessionId,
        interaction: &mut dyn Interaction,
        events: &mut dyn EventSink,
        phase: &mut dyn FnMut(RunPhase),
    ) -> Result<Outcome, RunError> {
        let info = self.resumable(id)?;
        let store = SessionStore::open(&self.paths.sessions_db())?;
        let config = SessionLog::new(store, id).config()?;
        let opened;
        let runtime = match &self.runtime {
            Some(runtime) => runtime,
            None => {
                opened = Runtime::for_session(
                    &self.paths,
                    &self.settings,
                    &config,
                    self.model.as_deref(),
                    self.embedder.clone(),
                )
                .map_err(|source| RunError::SessionModel {
                    id,
                    model: config.model.clone(),
                    source: Box::new(source),
                })?;
                &opened
            }
        };
        let sources = open_sources(&self.paths, &self.settings, &config.sources)?;
        if sources.is_empty() {
            return Err(RunError::SourcesGone(id));
        }
        phase(RunPhase::Opened {
            id,
            events: info.events,
        });
        SessionRun {
            paths: &self.paths,
            id,
            runtime,
            sources,
            stop: self.stop.clone(),
        }
        .execute(interaction, events, phase)
    }
}

/// The folder a session's files live in.
pub fn session_dir(paths: &Paths, id: SessionId) -> PathBuf {
    paths.sessions_dir().join(id.to_string())
}

/// `report.md`, `report.html` and `todo.md` next to the session.
fn write_session_files(
    paths: &Paths,
    id: SessionId,
    query: &str,
    outcome: &Outcome,
) -> Result<(), RunError> {
    let dir = session_dir(paths, id);
    std::fs::create_dir_all(&dir).map_err(|e| RunError::io(&dir, e))?;
    for (name, text) in [
        ("report.md", outcome.report.markdown.clone()),
        ("report.html", outcome.report.to_html()),
        ("todo.md", outcome.todo.render_markdown(query)),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|e| RunError::io(&path, e))?;
    }
    Ok(())
}

/// The models one run calls, borrowed (the evaluation meters its chat model by wrapping it).
#[derive(Clone, Copy)]
pub struct RunModels<'a> {
    pub llm: &'a dyn Llm,
    pub embedder: &'a dyn Embedder,
    pub embed_model: &'a str,
}

/// A run without a stored session (the evaluation): the same loop and settings, its events
/// kept in memory.
pub fn run_in_memory(
    models: RunModels,
    sources: &mut Sources,
    brief: &Brief,
    settings: ResearchSettings,
    interaction: &mut dyn Interaction,
    events: &mut dyn EventSink,
) -> Result<Outcome, RunError> {
    Ok(Researcher {
        llm: models.llm,
        embedder: models.embedder,
        sources,
        interaction,
        events,
        journal: &mut MemoryJournal::new(),
        settings,
        embed_model: models.embed_model.to_string(),
    }
    .run(brief)?)
}

/// The session log, refusing to go on once the user pressed stop: the check sits where the
/// loop looks for steering, at every step boundary, so the last step stays committed.
struct Stoppable {
    log: SessionLog,
    stop: Option<Arc<AtomicBool>>,
}

impl Journal for Stoppable {
    fn commit(&mut self, events: &[Envelope], applied: &[i64]) -> Result<(), ResearchError> {
        self.log.commit(events, applied)
    }

    fn pending_steering(&mut self) -> Result<Vec<Message>, ResearchError> {
        if self.stop.as_ref().is_some_and(|s| s.load(Ordering::SeqCst)) {
            return Err(ResearchError::Stopped);
        }
        self.log.pending_steering()
    }

    fn finish(&mut self, events: &[Envelope], applied: &[i64]) -> Result<bool, ResearchError> {
        self.log.finish(events, applied)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_replace_only_what_they_name_and_are_validated() {
        let saved = ResearchDefaults {
            breadth: 2,
            c0: 0.4,
            ..ResearchDefaults::default()
        };
        let o = RunOverrides {
            depth: Some(1),
            ..RunOverrides::default()
        };
        let s = o.resolve(&saved).unwrap();
        assert_eq!((s.depth, s.breadth), (1, 2));
        assert_eq!(s.pause.base_cost, 0.4);
        assert_eq!(s.support_judge, None, "the model's own threshold");
        let off = RunOverrides {
            support_judge: Some(0.0),
            ..RunOverrides::default()
        };
        assert_eq!(off.resolve(&saved).unwrap().support_judge, Some(0.0));
        assert_eq!(s.fresh_evidence_pool, 2, "the loop's default");
        let best_matches = RunOverrides {
            fresh_evidence_pool: Some(1),
            ..RunOverrides::default()
        };
        assert_eq!(best_matches.resolve(&saved).unwrap().fresh_evidence_pool, 1);
        assert!(s.judge_learnings, "learnings are judged at their nodes");
        let report_only = RunOverrides {
            judge_learnings: Some(false),
            ..RunOverrides::default()
        };
        assert!(!report_only.resolve(&saved).unwrap().judge_learnings);
        let bad = RunOverrides {
            depth: Some(9),
            c0: Some(1.5),
            support_judge: Some(1.5),
            fresh_evidence_pool: Some(0),
            ..RunOverrides::default()
        };
        let err = bad.resolve(&saved).unwrap_err().to_string();
        assert!(
            err.contains("fresh evidence pool must be 1 to 10, not 0"),
            "{err}"
        );
        assert!(err.contains("depth must be 0 to 6, not 9"), "{err}");
        assert!(err.contains("C0 must be between 0 and 1"), "{err}");
        assert!(
            err.contains("support judge threshold must be 0 to 1"),
            "{err}"
        );
    }

    #[test]
    fn saved_defaults_are_the_loops_defaults() {
        // One place for defaults: what settings.toml starts with is what the loop defines.
        let from_saved = RunOverrides::default()
            .resolve(&ResearchDefaults::default())
            .unwrap();
        assert_eq!(from_saved, ResearchSettings::default());
    }

    #[test]
    fn a_new_session_needs_a_question_and_a_source() {
        let settings = Settings::default();
        let mut request = NewSession {
            question: "  ".into(),
            ..NewSession::default()
        };
        assert!(new_session_config(&settings, &request, "m").is_err());
        request.question = " How is tea stored? ".into();
        request.sources = SourceChoice {
            history: false,
            docs: false,
            docs_dir: None,
        };
        let err = new_session_config(&settings, &request, "m").unwrap_err();
        assert!(err.to_string().contains("at least one source"), "{err}");
        request.sources.docs = true;
        let config = new_session_config(&settings, &request, "m").unwrap();
        assert_eq!(config.brief.query, "How is tea stored?");
        assert_eq!(config.model, "m");
    }
}
