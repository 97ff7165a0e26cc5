//! Persisted research sessions: an append-only event log in SQLite, a steering queue any
//! thread or process can write to, and resume as a fold over the log
//! ([`crate::research::ResearchState`]).

pub mod store;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use store::{
    SessionError, SessionId, SessionInfo, SessionStatus, SessionStore, SteeringMessage,
};

use crate::research::events::Envelope;
use crate::research::steering::{Journal, Message};
use crate::research::{Brief, ResearchError, ResearchSettings};

/// Everything needed to run (or resume) a session besides its log.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SessionConfig {
    pub brief: Brief,
    pub settings: ResearchSettings,
    /// The generation model it was started with.
    pub model: String,
    pub sources: SourceChoice,
}

/// Which sources a session searches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SourceChoice {
    pub history: bool,
    pub docs: bool,
    /// A folder added to the library for this session.
    pub docs_dir: Option<PathBuf>,
}

impl Default for SourceChoice {
    fn default() -> Self {
        Self {
            history: true,
            docs: true,
            docs_dir: None,
        }
    }
}

impl From<SessionError> for ResearchError {
    fn from(e: SessionError) -> Self {
        ResearchError::Session(e.to_string())
    }
}

/// A session's log as the loop's [`Journal`].
pub struct SessionLog {
    pub store: SessionStore,
    pub id: SessionId,
}

impl SessionLog {
    pub fn new(store: SessionStore, id: SessionId) -> Self {
        Self { store, id }
    }

    /// Starts a new session.
    pub fn create(store: SessionStore, config: &SessionConfig) -> Result<Self, SessionError> {
        let value = serde_json::to_value(config).unwrap_or_default();
        let id = store.create(&config.brief.query, &value)?;
        Ok(Self { store, id })
    }

    /// The stored configuration of a session.
    pub fn config(&self) -> Result<SessionConfig, SessionError> {
        let value = self.store.config(self.id)?;
        serde_json::from_value(value).map_err(|e| SessionError::CorruptSession {
            path: self.store.path().to_path_buf(),
            session: self.id,
            message: format!("session settings: {e}"),
        })
    }
}

impl Journal for SessionLog {
    fn commit(&mut self, events: &[Envelope], applied: &[i64]) -> Result<(), ResearchError> {
        Ok(self.store.append(self.id, events, applied)?)
    }

    fn pending_steering(&mut self) -> Result<Vec<Message>, ResearchError> {
        Ok(self
            .store
            .pending_steering(self.id)?
            .into_iter()
            .map(|m| Message {
                id: m.id,
                text: m.text,
                received_at: m.received_at,
            })
            .collect())
    }

    fn finish(&mut self, events: &[Envelope], applied: &[i64]) -> Result<bool, ResearchError> {
        Ok(self.store.finish(self.id, events, applied)?)
    }
}
