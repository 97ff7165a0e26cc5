//! Persisted research sessions: an append-only event log in SQLite, a steering queue any
//! thread or process can write to, and resume as a fold over the log
//! ([`crate::research::ResearchState`]).

pub mod export;
pub mod runner;
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

/// Held while a process runs a session (an exclusive lock on `<id>/run.lock` next to the
/// database): a second process cannot drive the same session, and a session whose status is
/// still "running" but whose lock is free was stopped by a crash, a kill or a closed laptop.
/// The operating system drops the lock when the process dies, however it dies.
#[derive(Debug)]
pub struct RunLock {
    _file: std::fs::File,
}

impl RunLock {
    fn path(store: &SessionStore, id: SessionId) -> PathBuf {
        store
            .path()
            .parent()
            .unwrap_or_else(|| std::path::Path::new("."))
            .join(id.to_string())
            .join("run.lock")
    }

    fn open(store: &SessionStore, id: SessionId) -> Result<(std::fs::File, PathBuf), SessionError> {
        let path = Self::path(store, id);
        let lock_err = |source| SessionError::Lock {
            path: path.clone(),
            source,
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(lock_err)?;
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(lock_err)?;
        Ok((file, path))
    }

    /// Takes the lock, or fails with [`SessionError::Busy`].
    pub fn acquire(store: &SessionStore, id: SessionId) -> Result<Self, SessionError> {
        let (file, path) = Self::open(store, id)?;
        match file.try_lock() {
            Ok(()) => Ok(Self { _file: file }),
            Err(std::fs::TryLockError::WouldBlock) => Err(SessionError::Busy(id)),
            Err(std::fs::TryLockError::Error(source)) => Err(SessionError::Lock { path, source }),
        }
    }

    /// Whether some process is running the session now.
    pub fn is_held(store: &SessionStore, id: SessionId) -> bool {
        match Self::open(store, id) {
            Ok((file, _)) => matches!(file.try_lock(), Err(std::fs::TryLockError::WouldBlock)),
            Err(_) => false,
        }
    }
}

/// Every session, newest first. One still marked running that no process holds was stopped
/// by a crash, a kill or a closed laptop: it is listed as interrupted (and can be resumed).
pub fn list_sessions(store: &SessionStore) -> Result<Vec<SessionInfo>, SessionError> {
    let mut sessions = store.list()?;
    for s in &mut sessions {
        if s.status == SessionStatus::Running && !RunLock::is_held(store, s.id) {
            s.status = SessionStatus::Interrupted;
        }
    }
    Ok(sessions)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_process_runs_a_session_and_a_dead_one_leaves_it_free() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::open(&dir.path().join("sessions.sqlite")).unwrap();
        let log = SessionLog::create(store, &SessionConfig::default()).unwrap();
        assert!(!RunLock::is_held(&log.store, log.id));
        let lock = RunLock::acquire(&log.store, log.id).unwrap();
        assert!(RunLock::is_held(&log.store, log.id));
        assert!(matches!(
            RunLock::acquire(&log.store, log.id),
            Err(SessionError::Busy(id)) if id == log.id
        ));
        drop(lock);
        assert!(!RunLock::is_held(&log.store, log.id));
        // The stored configuration comes back as it went in.
        assert_eq!(log.config().unwrap(), SessionConfig::default());
    }
}
