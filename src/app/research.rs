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

use super::interaction::{ChannelInteraction, Reply};
use super::{App, AppError, AppResult, Notifier};
use crate::clarify::ClarifyAnswer;
use crate::config::{Paths, Settings};
use crate::embed::FastEmbedder;
use crate::research::{Envelope, Event, PauseAnswer, Report, ResearchState};
use crate::session::export::export_session;
use crate::session::runner::{NewSession, RunError, RunOverrides, RunPhase, Session};
use crate::session::{
    list_sessions, RunLock, SessionId, SessionInfo, SessionStatus, SessionStore, SourceChoice,
};
use crate::sources::CitationTarget;

/// What the research form sends; omitted numbers come from the saved settings.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(optional_fields))]
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

impl ResearchRequest {
    /// The request as the session runner takes it: every number it leaves out comes from the
    /// saved settings.
    pub fn to_new_session(&self) -> NewSession {
        NewSession {
            question: self.question.clone(),
            persona: self.persona.clone(),
            sources: SourceChoice {
                history: self.use_history,
                docs: self.use_docs,
                docs_dir: None,
            },
            overrides: RunOverrides {
                depth: self.depth,
                breadth: self.breadth,
                c0: self.c0,
                tol: self.tol,
                clarify_turns: self.clarify_turns,
                always_ask: self.always_ask,
                ..RunOverrides::default()
            },
        }
    }
}

/// A reply from the window to the question the run is waiting on.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
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
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct SteeringAck {
    pub id: i64,
    pub text: String,
}

/// A `research-state` event: where a run is.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct RunState {
    pub session: SessionId,
    /// `running`, `waiting` (for a reply), `finished`, `stopped` or `failed`.
    #[cfg_attr(
        feature = "ts",
        ts(type = "\"running\" | \"waiting\" | \"finished\" | \"stopped\" | \"failed\"")
    )]
    pub state: String,
    pub message: String,
}

/// A session for the sessions screen.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct SessionRow {
    #[serde(flatten)]
    pub info: SessionInfo,
    /// This app drives it right now.
    pub live: bool,
}

/// A report for the viewer: sanitised HTML plus where each reference leads.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ReportView {
    pub session: SessionId,
    pub title: String,
    pub markdown: String,
    /// Sanitised (pulldown-cmark, then ammonia); citations link to `#ref-N`.
    pub html: String,
    pub references: Vec<ReferenceView>,
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
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
        Ok(SessionStore::open(&self.paths.sessions_db())?)
    }

    /// Creates a session and starts researching it on a background thread; returns its id
    /// at once. Progress and questions arrive as events.
    pub fn research_start(&self, request: &ResearchRequest) -> AppResult<SessionId> {
        let settings = self.settings()?;
        // The model is opened on the run's thread; the session records the one that will run
        // it (the server's when one is configured), as a session started from the CLI does.
        let id = Session::new(&self.paths, &settings).create(&request.to_new_session())?;
        self.spawn_run(id)?;
        Ok(id)
    }

    /// Continues a session that stopped (crash, stop, closed window) from its last step.
    pub fn session_resume(&self, id: SessionId) -> AppResult<()> {
        let settings = self.settings()?;
        match Session::new(&self.paths, &settings).resumable(id) {
            Err(RunError::Finished(_)) => Err(AppError::Invalid(format!(
                "session {id} has already finished; its report is ready"
            ))),
            Err(e) => Err(e.into()),
            Ok(_) => self.spawn_run(id),
        }
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
                        let stopped = e.is_stop() || stop.load(Ordering::SeqCst);
                        if let Ok(store) = SessionStore::open(&paths.sessions_db()) {
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
                            message: match (stopped, e.remedy()) {
                                (true, _) => "stopped; resume it from the sessions list".into(),
                                (false, Some(remedy)) => {
                                    format!("{e} — {}", super::remedy_in_the_window(&remedy))
                                }
                                (false, None) => {
                                    format!("{e} — resume it from the sessions list")
                                }
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
        for mut info in list_sessions(&store)? {
            let is_live = live.contains(&info.id);
            if is_live {
                // Still opening its models: it has not taken the session's lock yet.
                info.status = SessionStatus::Running;
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
        Ok(export_session(&self.store()?, id, dir)?)
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
                label: reference_label(&r.target),
            })
            .collect(),
    }
}

/// A reference as a reader names it: where it is, and its public address when it has one
/// (an encyclopedia article: its title and URL).
fn reference_label(target: &CitationTarget) -> String {
    let locator = target.locator();
    match target.link() {
        Some(url) if url != locator => format!("{locator} — {url}"),
        _ => locator,
    }
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
    fn run(self, mut interaction: ChannelInteraction) -> Result<String, RunError> {
        let id = self.id;
        self.state("running", "loading the models");
        let settings = Settings::load(&self.paths)?;
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
        let outcome = Session::new(&self.paths, &settings)
            .with_embedder(self.embedder.clone())
            .with_stop(self.stop.clone())
            .resume(id, &mut interaction, &mut sink, &mut |phase| {
                if !matches!(phase, RunPhase::Opened { .. }) {
                    self.state("running", phase.describe())
                }
            })?;
        Ok(outcome.report.title)
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
                url: None,
                source: None,
                day: None,
            }),
            "your history, session 7"
        );
        assert_eq!(
            CitationTarget::locator(&CitationTarget::History {
                session: 7,
                url: None,
                source: Some("chatgpt".into()),
                day: Some("2024-03-02".into()),
            }),
            "your chatgpt history, 2024-03-02"
        );
    }
}
