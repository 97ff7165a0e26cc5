//! Research sessions driven from a window: each run goes on a background thread; its events
//! reach the window through the [`Notifier`] as they happen, replies to clarifying and pause
//! questions come back on a channel, steering goes through the session store (so a message is
//! never lost, even when the run is between processes), and stop ends the run at its next step
//! boundary, resumable.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{App, AppError, AppResult, Notifier};
use crate::clarify::ClarifyAnswer;
use crate::config::{Paths, Settings};
use crate::embed::{Embedder, FastEmbedder};
use crate::history::History;
use crate::models::ModelStore;
use crate::profile::ProfileOptions;
use crate::research::steering::{Journal, Message};
use crate::research::{
    Brief, ChannelInteraction, Envelope, Event, PauseAnswer, Reply, Report, ResearchError,
    ResearchSettings, ResearchState, Researcher,
};
use crate::session::{
    RunLock, SessionConfig, SessionId, SessionInfo, SessionLog, SessionStatus, SessionStore,
    SourceChoice,
};
use crate::sources::docs::DocsSource;
use crate::sources::history::HistorySourceAdapter;
use crate::sources::{CitationTarget, Sources};

/// What the research form sends; omitted numbers come from the saved settings.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ResearchRequest {
    pub question: String,
    pub persona: String,
    pub use_history: bool,
    pub use_docs: bool,
    pub depth: Option<u32>,
    pub breadth: Option<u32>,
    pub c0: Option<f32>,
    pub tol: Option<f32>,
    pub clarify_turns: Option<u32>,
    pub always_ask: Option<bool>,
}

/// A reply from the window to the question the run is waiting on.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ReplyView {
    Clarify {
        #[serde(default)]
        choices: Vec<usize>,
        #[serde(default)]
        text: String,
        #[serde(default)]
        skip: bool,
    },
    Pause {
        #[serde(default)]
        chosen: Vec<usize>,
        #[serde(default)]
        new_questions: Vec<String>,
        #[serde(default)]
        text: String,
    },
}

impl From<ReplyView> for Reply {
    fn from(r: ReplyView) -> Self {
        match r {
            ReplyView::Clarify {
                choices,
                text,
                skip,
            } => Reply::Clarify(ClarifyAnswer {
                choices,
                text,
                skip,
            }),
            ReplyView::Pause {
                chosen,
                new_questions,
                text,
            } => Reply::Pause(PauseAnswer {
                chosen,
                new_questions: new_questions
                    .into_iter()
                    .map(|q| q.trim().to_string())
                    .filter(|q| !q.is_empty())
                    .collect(),
                text,
            }),
        }
    }
}

/// A steering message as stored.
#[derive(Debug, Clone, Serialize)]
pub struct SteeringAck {
    pub id: i64,
    pub text: String,
}

/// A `research-state` event: where a run is.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunState {
    pub session: SessionId,
    /// `running`, `waiting` (for a reply), `finished`, `stopped` or `failed`.
    pub state: String,
    pub message: String,
}

/// A session for the sessions screen.
#[derive(Debug, Clone, Serialize)]
pub struct SessionRow {
    #[serde(flatten)]
    pub info: SessionInfo,
    /// This app drives it right now.
    pub live: bool,
}

/// A report for the viewer: sanitised HTML plus where each reference leads.
#[derive(Debug, Clone, Serialize)]
pub struct ReportView {
    pub session: SessionId,
    pub title: String,
    pub markdown: String,
    /// Sanitised (pulldown-cmark, then ammonia); citations link to `#ref-N`.
    pub html: String,
    pub references: Vec<ReferenceView>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ReferenceView {
    pub number: usize,
    pub title: String,
    pub target: CitationTarget,
    /// Where it is, in words.
    pub label: String,
}

/// A run this process drives.
pub(crate) struct LiveRun {
    replies: Option<Sender<Reply>>,
    stop: Arc<AtomicBool>,
}

impl App {
    fn store(&self) -> AppResult<SessionStore> {
        Ok(SessionStore::open(&sessions_db(&self.paths))?)
    }

    /// Creates a session and starts researching it on a background thread; returns its id
    /// at once. Progress and questions arrive as events.
    pub fn research_start(&self, request: &ResearchRequest) -> AppResult<SessionId> {
        let question = request.question.trim();
        if question.is_empty() {
            return Err(AppError::Invalid("write a question to research".into()));
        }
        let settings = self.settings()?;
        let d = &settings.research;
        let mut research = ResearchSettings {
            depth: request.depth.unwrap_or(d.depth).clamp(1, 6),
            breadth: request.breadth.unwrap_or(d.breadth).clamp(1, 6),
            clarify_turns: request.clarify_turns.unwrap_or(d.clarify_turns).min(5),
            ..ResearchSettings::default()
        };
        research.pause.base_cost = request.c0.unwrap_or(d.c0).clamp(0.0, 1.0);
        research.pause.tolerance = request.tol.unwrap_or(d.tol).max(0.1);
        research.pause.always = request.always_ask.unwrap_or(d.always_ask);
        research.weights.lambda_explore = d.lambda_explore;
        research.weights.lambda_info = d.lambda_info;
        let config = SessionConfig {
            brief: Brief {
                query: question.to_string(),
                persona_text: request.persona.trim().to_string(),
                profile: String::new(),
                checklist: None,
            },
            settings: research,
            model: settings.chat_model.clone(),
            sources: SourceChoice {
                history: request.use_history,
                docs: request.use_docs,
                docs_dir: None,
            },
        };
        if !config.sources.history && !config.sources.docs && !web_on(&settings) {
            return Err(AppError::Invalid(
                "choose at least one source: your history or your documents".into(),
            ));
        }
        let log = SessionLog::create(self.store()?, &config)?;
        let id = log.id;
        self.spawn_run(id)?;
        Ok(id)
    }

    /// Continues a session that stopped (crash, stop, closed window) from its last step.
    pub fn session_resume(&self, id: SessionId) -> AppResult<()> {
        let store = self.store()?;
        let info = store.info(id)?;
        if info.status == SessionStatus::Finished {
            return Err(AppError::Invalid(format!(
                "session {id} has already finished; its report is ready"
            )));
        }
        self.spawn_run(id)
    }

    fn spawn_run(&self, id: SessionId) -> AppResult<()> {
        let (interaction, replies) = ChannelInteraction::new();
        let stop = Arc::new(AtomicBool::new(false));
        {
            let mut runs = self.runs.lock().unwrap_or_else(|e| e.into_inner());
            if runs.contains_key(&id) {
                return Err(AppError::Invalid(format!(
                    "session {id} is already running"
                )));
            }
            if RunLock::is_held(&self.store()?, id) {
                return Err(AppError::Invalid(format!(
                    "session {id} is being run by another Rudder process"
                )));
            }
            runs.insert(
                id,
                LiveRun {
                    replies: Some(replies),
                    stop: stop.clone(),
                },
            );
        }
        let job = RunJob {
            id,
            paths: self.paths.clone(),
            notifier: self.notifier.clone(),
            embedder: self
                .embedder
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
            stop,
        };
        let runs = self.runs.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("research-{id}"))
            .spawn(move || {
                let notifier = job.notifier.clone();
                let stop = job.stop.clone();
                let paths = job.paths.clone();
                let result = job.run(interaction);
                runs.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
                let state = match result {
                    Ok(title) => RunState {
                        session: id,
                        state: "finished".into(),
                        message: title,
                    },
                    Err(e) => {
                        let stopped = stop.load(Ordering::SeqCst);
                        if let Ok(store) = SessionStore::open(&sessions_db(&paths)) {
                            let _ = store.set_status(id, SessionStatus::Interrupted);
                        }
                        if stopped {
                            tracing::info!(session = id, "research stopped by the user");
                        } else {
                            tracing::warn!(session = id, error = %e, "research stopped");
                        }
                        RunState {
                            session: id,
                            state: if stopped { "stopped" } else { "failed" }.into(),
                            message: if stopped {
                                "stopped; resume it from the sessions list".into()
                            } else {
                                format!("{e} — resume it from the sessions list")
                            },
                        }
                    }
                };
                notifier.research_state(&state);
            });
        if let Err(e) = spawned {
            self.runs
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&id);
            return Err(AppError::Invalid(format!("cannot start the research: {e}")));
        }
        Ok(())
    }

    /// Answers the question a live run is waiting on.
    pub fn research_reply(&self, id: SessionId, reply: ReplyView) -> AppResult<()> {
        let runs = self.runs.lock().unwrap_or_else(|e| e.into_inner());
        let run = runs
            .get(&id)
            .ok_or_else(|| AppError::Invalid(format!("session {id} is not running")))?;
        let sender = run
            .replies
            .as_ref()
            .ok_or_else(|| AppError::Invalid(format!("session {id} is stopping")))?;
        sender
            .send(reply.into())
            .map_err(|_| AppError::Invalid(format!("session {id} is no longer listening")))
    }

    /// Queues a steering message: stored at once, applied at the run's next step boundary
    /// (or when a stopped session is resumed).
    pub fn research_steer(&self, id: SessionId, text: &str) -> AppResult<SteeringAck> {
        let m = self.store()?.enqueue_steering(id, text)?;
        Ok(SteeringAck {
            id: m.id,
            text: m.text,
        })
    }

    /// Stops a live run at its next step boundary (at once when it waits for a reply).
    pub fn research_stop(&self, id: SessionId) -> AppResult<()> {
        let mut runs = self.runs.lock().unwrap_or_else(|e| e.into_inner());
        let run = runs
            .get_mut(&id)
            .ok_or_else(|| AppError::Invalid(format!("session {id} is not running")))?;
        run.stop.store(true, Ordering::SeqCst);
        // Dropping the sender wakes a run that waits for a reply.
        run.replies = None;
        Ok(())
    }

    /// Every session, newest first; one marked running that no process holds is shown as
    /// interrupted (it stopped with a crash or a kill and can be resumed).
    pub fn sessions_list(&self) -> AppResult<Vec<SessionRow>> {
        let store = self.store()?;
        let live: Vec<SessionId> = self
            .runs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .keys()
            .copied()
            .collect();
        let mut rows = Vec::new();
        for mut info in store.list()? {
            let is_live = live.contains(&info.id);
            if info.status == SessionStatus::Running
                && !is_live
                && !RunLock::is_held(&store, info.id)
            {
                info.status = SessionStatus::Interrupted;
            }
            rows.push(SessionRow {
                info,
                live: is_live,
            });
        }
        Ok(rows)
    }

    pub fn session_events(&self, id: SessionId) -> AppResult<Vec<Envelope>> {
        Ok(self.store()?.events(id)?)
    }

    pub fn session_report(&self, id: SessionId) -> AppResult<ReportView> {
        let events = self.store()?.events(id)?;
        let state = ResearchState::fold(&events);
        let report = state
            .report
            .ok_or_else(|| AppError::Invalid(format!("session {id} has no report yet")))?;
        Ok(report_view(id, &report))
    }

    /// Writes `report.md`, `report.html`, `todo.md`, `events.jsonl` and `session.json` into
    /// `dir`; returns the files written.
    pub fn session_export(&self, id: SessionId, dir: &Path) -> AppResult<Vec<PathBuf>> {
        export_session(&self.store()?, id, dir)
    }
}

/// The report with its references labelled for the viewer.
pub fn report_view(session: SessionId, report: &Report) -> ReportView {
    ReportView {
        session,
        title: report.title.clone(),
        markdown: report.markdown.clone(),
        html: crate::research::html::markdown_to_html_fragment(&report.markdown),
        references: report
            .references
            .iter()
            .map(|r| ReferenceView {
                number: r.number,
                title: r.title.clone(),
                target: r.target.clone(),
                label: r.target.locator(),
            })
            .collect(),
    }
}

/// Writes a session's report, plan, log and settings into `dir`.
pub fn export_session(store: &SessionStore, id: SessionId, dir: &Path) -> AppResult<Vec<PathBuf>> {
    let info = store.info(id)?;
    let events = store.events(id)?;
    let state = ResearchState::fold(&events);
    std::fs::create_dir_all(dir).map_err(|e| AppError::io(dir, e))?;
    let write = |name: &str, bytes: &[u8]| -> AppResult<PathBuf> {
        let path = dir.join(name);
        std::fs::write(&path, bytes).map_err(|e| AppError::io(&path, e))?;
        Ok(path)
    };
    let mut written = Vec::new();
    if let Some(report) = &state.report {
        written.push(write("report.md", report.markdown.as_bytes())?);
        written.push(write("report.html", report.to_html().as_bytes())?);
    }
    written.push(write(
        "todo.md",
        state.todo.render_markdown(&state.query).as_bytes(),
    )?);
    let mut log = String::new();
    for e in &events {
        log.push_str(&serde_json::to_string(e).unwrap_or_default());
        log.push('\n');
    }
    written.push(write("events.jsonl", log.as_bytes())?);
    let session = serde_json::json!({
        "session": info,
        "config": store.config(id)?,
        "steering": store.steering(id)?,
    });
    written.push(write(
        "session.json",
        serde_json::to_string_pretty(&session)
            .unwrap_or_default()
            .as_bytes(),
    )?);
    Ok(written)
}

/// The sessions database.
pub fn sessions_db(paths: &Paths) -> PathBuf {
    paths.sessions_dir().join("sessions.sqlite")
}

fn web_on(settings: &Settings) -> bool {
    crate::sources::web::web_source_from_settings(settings).is_some()
}

/// Everything a run's thread needs.
struct RunJob {
    id: SessionId,
    paths: Paths,
    notifier: Arc<dyn Notifier>,
    embedder: Option<Arc<FastEmbedder>>,
    stop: Arc<AtomicBool>,
}

impl RunJob {
    fn state(&self, state: &str, message: &str) {
        self.notifier.research_state(&RunState {
            session: self.id,
            state: state.into(),
            message: message.into(),
        });
    }

    /// Runs (or resumes) the session to its report; returns the report's title.
    fn run(self, interaction: ChannelInteraction) -> AppResult<String> {
        let id = self.id;
        self.state("running", "loading the models");
        let settings = Settings::load(&self.paths)?;
        let log = SessionLog::new(SessionStore::open(&sessions_db(&self.paths))?, id);
        let mut config: SessionConfig = log.config()?;
        let store = log.store;
        let events = store.events(id)?;
        let models = ModelStore::open(&self.paths)?;
        let embedder = match self.embedder.clone() {
            Some(e) => e,
            None => Arc::new(FastEmbedder::from_store(
                &models,
                &settings.embed_model,
                settings.llama.effective_threads(),
            )?),
        };
        let llm = crate::llm::open_chat(&models, &settings, Some(&config.model))?;
        let embed_model = settings.embed_model.clone();
        let mut sources = Sources::new();
        if config.sources.docs && self.paths.docs_dir().exists() {
            let docs = DocsSource::open(&self.paths.docs_dir())?;
            if docs.library().stats()?.store.documents > 0 {
                sources.push(Box::new(docs));
            }
        }
        if config.sources.history && self.paths.history_dir().exists() {
            let mut history = History::open(&self.paths.history_dir())?;
            if history.stats()?.store.sessions > 0 {
                // A new session builds its query-aware profile once and stores it, so a resumed
                // run does not rebuild it.
                if events.is_empty() && config.brief.profile.is_empty() {
                    self.state(
                        "running",
                        "building your profile for this question from history",
                    );
                    let run = crate::profile::query_profile(
                        llm.as_ref(),
                        &mut history,
                        Some((embedder.as_ref() as &dyn Embedder, embed_model.as_str())),
                        &config.brief.query,
                        &ProfileOptions::default(),
                    )?;
                    config.brief.profile = run.profile.to_prompt_text();
                    store.set_config(id, &serde_json::to_value(&config).unwrap_or_default())?;
                }
                history.release_writer()?;
                sources.push(Box::new(HistorySourceAdapter::new(history)));
            }
        }
        if let Some(web) = crate::sources::web::web_source_from_settings(&settings) {
            tracing::info!("web search is on: {}", crate::sources::web::WEB_DISCLOSURE);
            sources.push(Box::new(web));
        }
        if sources.is_empty() {
            return Err(ResearchError::NoSources.into());
        }
        let _lock = RunLock::acquire(&store, id)?;
        store.set_status(id, SessionStatus::Running)?;
        self.state("running", "researching");
        let mut journal = Stoppable {
            log: SessionLog::new(store, id),
            stop: self.stop.clone(),
        };
        let mut interaction = interaction;
        let notifier = self.notifier.clone();
        let mut sink = move |e: &Envelope| {
            notifier.research_event(id, e);
            let waiting = match &e.event {
                Event::ClarifyAsked { .. } => Some("a clarifying question is waiting for you"),
                Event::Question { .. } => Some("the research paused to ask you"),
                _ => None,
            };
            let resumed = matches!(
                e.event,
                Event::ClarifyAnswered { .. } | Event::Answer { .. }
            );
            if let Some(message) = waiting {
                notifier.research_state(&RunState {
                    session: id,
                    state: "waiting".into(),
                    message: message.into(),
                });
            } else if resumed {
                notifier.research_state(&RunState {
                    session: id,
                    state: "running".into(),
                    message: "researching".into(),
                });
            }
        };
        let outcome = Researcher {
            llm: llm.as_ref(),
            embedder: embedder.as_ref(),
            sources: &mut sources,
            interaction: &mut interaction,
            events: &mut sink,
            journal: &mut journal,
            settings: config.settings,
            embed_model,
        }
        .resume(&config.brief, &events)?;
        let store = &journal.log.store;
        let _ = store.set_title(id, &outcome.report.title);
        // The same files the CLI keeps next to the session.
        let dir = self.paths.sessions_dir().join(id.to_string());
        std::fs::create_dir_all(&dir).map_err(|e| AppError::io(&dir, e))?;
        for (name, text) in [
            ("report.md", outcome.report.markdown.clone()),
            ("report.html", outcome.report.to_html()),
            ("todo.md", outcome.todo.render_markdown(&config.brief.query)),
        ] {
            let path = dir.join(name);
            std::fs::write(&path, text).map_err(|e| AppError::io(&path, e))?;
        }
        Ok(outcome.report.title)
    }
}

/// The session log, refusing to go on once the user pressed stop: the check sits where the
/// loop looks for steering, at every step boundary, so the last step stays committed.
struct Stoppable {
    log: SessionLog,
    stop: Arc<AtomicBool>,
}

impl Stoppable {
    fn check(&self) -> Result<(), ResearchError> {
        if self.stop.load(Ordering::SeqCst) {
            Err(ResearchError::Stopped)
        } else {
            Ok(())
        }
    }
}

impl Journal for Stoppable {
    fn commit(&mut self, events: &[Envelope], applied: &[i64]) -> Result<(), ResearchError> {
        self.log.commit(events, applied)
    }

    fn pending_steering(&mut self) -> Result<Vec<Message>, ResearchError> {
        self.check()?;
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
    fn replies_become_engine_answers_without_blank_questions() {
        let r: ReplyView = serde_json::from_str(
            r#"{"kind":"pause","chosen":[2],"new_questions":["  ","What about tea?"],"text":""}"#,
        )
        .unwrap();
        match Reply::from(r) {
            Reply::Pause(a) => {
                assert_eq!(a.chosen, [2]);
                assert_eq!(a.new_questions, ["What about tea?"]);
            }
            other => panic!("expected a pause answer, got {other:?}"),
        }
        let r: ReplyView = serde_json::from_str(r#"{"kind":"clarify","skip":true}"#).unwrap();
        assert!(matches!(Reply::from(r), Reply::Clarify(a) if a.skip && a.choices.is_empty()));
    }

    #[test]
    fn labels_say_where_a_reference_is() {
        let doc = CitationTarget::Document {
            path: "/home/u/notes/tea.pdf".into(),
            chunk: 2,
            page: Some(4),
            url: None,
            name: None,
        };
        assert_eq!(CitationTarget::locator(&doc), "tea.pdf, page 4, passage 3");
        let corpus = CitationTarget::Document {
            path: "/data/wiki.json#Printing press".into(),
            chunk: 0,
            page: None,
            url: None,
            name: None,
        };
        assert_eq!(
            CitationTarget::locator(&corpus),
            "Printing press, passage 1"
        );
        let named = CitationTarget::Document {
            path: "/home/u/notes/tea/green.md".into(),
            chunk: 0,
            page: None,
            url: None,
            name: Some("notes/tea/green.md".into()),
        };
        assert_eq!(
            CitationTarget::locator(&named),
            "notes/tea/green.md, passage 1"
        );
        assert_eq!(
            CitationTarget::locator(&CitationTarget::History {
                session: 7,
                url: None
            }),
            "your history, session 7"
        );
    }
}
