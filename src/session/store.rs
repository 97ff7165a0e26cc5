//! The session database: one SQLite file holding every research session as an append-only
//! event log, plus a steering queue that any thread or process may write to.
//!
//! A session is a row in `sessions` (the query, the caller's settings as opaque JSON, a
//! status), its [`Envelope`]s in `events` (full JSON, 0-based contiguous `seq`), and the
//! user's steering messages in `steering`. The connection runs in WAL mode (readers never
//! block the runner) with `synchronous = FULL`, so a step that [`SessionStore::append`]
//! reported as written survives a SIGKILL or a power cut. Schema changes are numbered
//! migrations tracked in `user_version`.
//!
//! # Exactly-once steering
//!
//! A message is applied by the step that acts on it: [`SessionStore::append`] inserts the
//! step's events and sets the messages' `applied_seq` to the seq of the step's last event in
//! one `BEGIN IMMEDIATE` transaction. Marking only matches a message of this session that is
//! still unapplied; if any id fails to match, the whole step is rolled back. So a message is
//! applied by at most one step, and because the mark and the events commit together, a run
//! killed mid-step leaves the message pending for the resumed run: it is applied exactly once
//! in the log.
//!
//! # Finishing
//!
//! [`SessionStore::finish`] writes the last step and sets the status to finished only if no
//! message is left unapplied. It takes the write lock before it looks, and
//! [`SessionStore::enqueue_steering`] takes the same lock before it checks the status, so the
//! two serialise: either the message lands first and `finish` declines (the run goes on and
//! applies it), or `finish` commits first and the message is refused with
//! [`SessionError::Finished`]. No message is ever accepted into a session that will not read
//! it, and a finished session accepts no more events or messages.
//!
//! # No partial steps
//!
//! Every write goes through one SQLite transaction. Until `COMMIT`, its rows exist only as WAL
//! frames not followed by a commit frame, and SQLite's recovery ignores such frames, so a
//! process killed mid-transaction leaves the database as of the previous commit. Inside the
//! process, every early return (a gap, an unknown message id, an I/O error) drops the
//! [`rusqlite::Transaction`], which rolls back.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use rusqlite::{params, Connection, OptionalExtension, Transaction, TransactionBehavior};
use serde::{Deserialize, Serialize};

use crate::research::events::Envelope;

/// A research session's id (a row id, never reused).
pub type SessionId = i64;

/// How long a connection waits for another one's write lock before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Errors from the session store.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("session database {path}: {source}")]
    Sqlite {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    #[error("session database {path}: cannot create {dir}: {source}")]
    CreateDir {
        path: PathBuf,
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "session database {path}: schema version {found} is newer than this Rudder understands \
         ({known}); upgrade Rudder"
    )]
    NewerSchema {
        path: PathBuf,
        found: i64,
        known: i64,
    },
    #[error("no research session {0}")]
    NotFound(SessionId),
    #[error("research session {0} has already finished; start a new one")]
    Finished(SessionId),
    /// An appended event's seq does not continue the log.
    #[error("research session {session}: the next event must have seq {expected}, not {got}")]
    Gap {
        session: SessionId,
        expected: u64,
        got: u64,
    },
    /// A step named a steering message that is not one of this session's.
    #[error("research session {session} has no steering message {message}")]
    UnknownSteering { session: SessionId, message: i64 },
    /// A step named a steering message that an earlier step already applied.
    #[error(
        "research session {session}: steering message {message} was already applied by event {seq}"
    )]
    AlreadyApplied {
        session: SessionId,
        message: i64,
        seq: u64,
    },
    /// Steering messages can only be applied by a step that records at least one event.
    #[error("research session {session}: a step that applies steering messages needs an event")]
    AppliedWithoutEvents { session: SessionId },
    /// [`SessionStore::set_status`] to finished while messages wait.
    #[error(
        "research session {session} cannot finish: {pending} steering message(s) not applied yet"
    )]
    PendingSteering { session: SessionId, pending: u64 },
    /// A stored event no longer parses (or disagrees with its row).
    #[error("session database {path}: research session {session}, event {seq}: {message}")]
    Corrupt {
        path: PathBuf,
        session: SessionId,
        seq: u64,
        message: String,
    },
    /// A session or steering row holds a value this version cannot read.
    #[error("session database {path}: research session {session}: {message}")]
    CorruptSession {
        path: PathBuf,
        session: SessionId,
        message: String,
    },
    /// An event could not be turned into JSON.
    #[error("research session {session}: event {seq} cannot be stored: {message}")]
    Encode {
        session: SessionId,
        seq: u64,
        message: String,
    },
    #[error("a steering message cannot be empty")]
    EmptyMessage,
    /// Another process is running this session right now.
    #[error("research session {0} is running in another process")]
    Busy(SessionId),
    #[error("{path}: {source}")]
    Lock {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl SessionError {
    /// What fixes it: steering the session where it runs.
    pub fn remedy(&self) -> Option<crate::remedy::Remedy> {
        match self {
            SessionError::Busy(id) => Some(crate::remedy::Remedy::SteerElsewhere(*id)),
            _ => None,
        }
    }
}

pub type SessionResult<T> = Result<T, SessionError>;

/// Where a session stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum SessionStatus {
    /// A run is (or was last seen) working on it.
    Running,
    /// The run stopped before the end; it can be resumed.
    Interrupted,
    /// The report is written. Final: no more events or steering.
    Finished,
    /// The run stopped on an error.
    Failed,
}

impl SessionStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            SessionStatus::Running => "running",
            SessionStatus::Interrupted => "interrupted",
            SessionStatus::Finished => "finished",
            SessionStatus::Failed => "failed",
        }
    }
}

impl fmt::Display for SessionStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for SessionStatus {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "running" => SessionStatus::Running,
            "interrupted" => SessionStatus::Interrupted,
            "finished" => SessionStatus::Finished,
            "failed" => SessionStatus::Failed,
            other => return Err(format!("unknown session status {other:?}")),
        })
    }
}

/// A session's summary, for listings.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct SessionInfo {
    pub id: SessionId,
    pub query: String,
    pub status: SessionStatus,
    #[cfg_attr(feature = "ts", ts(type = "string"))]
    pub created_at: DateTime<Utc>,
    /// The last event, steering message or status change.
    #[cfg_attr(feature = "ts", ts(type = "string"))]
    pub updated_at: DateTime<Utc>,
    /// Events stored.
    pub events: u64,
    /// Steering messages not applied yet.
    pub pending_steering: u64,
    pub title: Option<String>,
}

/// A message from the user to a running session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SteeringMessage {
    /// Increases in the order messages were received, across all sessions and processes.
    pub id: i64,
    pub session: SessionId,
    pub text: String,
    /// When it was stored (microsecond precision).
    pub received_at: DateTime<Utc>,
    /// The seq of the last event of the step that applied it; `None` while pending.
    pub applied_seq: Option<u64>,
}

/// The numbered schema migrations; `user_version` records how many have run.
const MIGRATIONS: &[&str] = &[r#"
CREATE TABLE sessions (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    query      TEXT NOT NULL,
    config     TEXT NOT NULL,       -- the caller's settings, JSON
    status     TEXT NOT NULL
               CHECK (status IN ('running', 'interrupted', 'finished', 'failed')),
    created_at INTEGER NOT NULL,    -- microseconds since the Unix epoch, UTC
    updated_at INTEGER NOT NULL,
    title      TEXT
);

CREATE TABLE events (
    session INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    seq     INTEGER NOT NULL CHECK (seq >= 0),
    at      INTEGER NOT NULL,       -- microseconds since the Unix epoch, UTC
    type    TEXT,                   -- the event's "type" tag, for listings
    body    TEXT NOT NULL,          -- the whole Envelope, JSON
    PRIMARY KEY (session, seq)
) WITHOUT ROWID;

CREATE TABLE steering (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    session     INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    text        TEXT NOT NULL,
    received_at INTEGER NOT NULL,   -- microseconds since the Unix epoch, UTC
    applied_seq INTEGER,            -- the event whose step applied it; NULL = pending
    FOREIGN KEY (session, applied_seq) REFERENCES events(session, seq)
        DEFERRABLE INITIALLY DEFERRED
);
CREATE INDEX steering_by_session ON steering(session, applied_seq);
"#];

/// The session database. One per thread or process; SQLite does the locking between them.
pub struct SessionStore {
    conn: Connection,
    path: PathBuf,
}

impl SessionStore {
    /// Opens (creating and migrating if needed) the database at `path`, creating its folder.
    /// Safe to call from several processes at once.
    pub fn open(path: &Path) -> SessionResult<Self> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| SessionError::CreateDir {
                path: path.to_path_buf(),
                dir: dir.to_path_buf(),
                source,
            })?;
        }
        let conn = Connection::open(path).at(path)?;
        let mut store = Self {
            conn,
            path: path.to_path_buf(),
        };
        store.configure()?;
        store.migrate()?;
        Ok(store)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn configure(&mut self) -> SessionResult<()> {
        let path = &self.path;
        self.conn.busy_timeout(BUSY_TIMEOUT).at(path)?;
        self.enable_wal()?;
        // `synchronous` and `foreign_keys` are per connection, so every opener sets them.
        self.conn
            .execute_batch(
                "PRAGMA synchronous = FULL;
                 PRAGMA foreign_keys = ON;
                 PRAGMA secure_delete = ON;",
            )
            .at(path)
    }

    /// Switches the file to WAL unless an earlier opener already did. The switch needs an
    /// exclusive lock and SQLite answers it with `SQLITE_BUSY` at once rather than through the
    /// busy handler, so when several processes open a new file together the losers wait here.
    fn enable_wal(&self) -> SessionResult<()> {
        let path = &self.path;
        let deadline = Instant::now() + BUSY_TIMEOUT;
        loop {
            let mode: String = self
                .conn
                .query_row("PRAGMA journal_mode", [], |r| r.get(0))
                .at(path)?;
            if mode.eq_ignore_ascii_case("wal") {
                return Ok(());
            }
            match self
                .conn
                .query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0))
            {
                Ok(mode) => {
                    if !mode.eq_ignore_ascii_case("wal") {
                        tracing::warn!(mode, "session database is not in WAL mode");
                    }
                    return Ok(());
                }
                Err(e) if is_busy(&e) && Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) => return Err(e).at(path),
            }
        }
    }

    fn migrate(&mut self) -> SessionResult<()> {
        let path = &self.path;
        let known = MIGRATIONS.len() as i64;
        let version = user_version(&self.conn, path)?;
        if version == known {
            return Ok(());
        }
        // Re-read under the write lock: another process may be migrating at the same time.
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .at(path)?;
        let version = user_version(&tx, path)?;
        if version > known {
            return Err(SessionError::NewerSchema {
                path: path.clone(),
                found: version,
                known,
            });
        }
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
            tx.execute_batch(sql).at(path)?;
            tx.pragma_update(None, "user_version", (i + 1) as i64)
                .at(path)?;
            tracing::info!(version = i + 1, "session database migrated");
        }
        tx.commit().at(path)
    }

    /// Starts a session with status running and returns its id. `config` is stored as is.
    pub fn create(&self, query: &str, config: &serde_json::Value) -> SessionResult<SessionId> {
        let now = Utc::now().timestamp_micros();
        self.conn
            .execute(
                "INSERT INTO sessions (query, config, status, created_at, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?4)",
                params![
                    query,
                    config.to_string(),
                    SessionStatus::Running.as_str(),
                    now
                ],
            )
            .at(&self.path)?;
        Ok(self.conn.last_insert_rowid())
    }

    /// The settings given to [`create`](Self::create).
    pub fn config(&self, id: SessionId) -> SessionResult<serde_json::Value> {
        let text: String = self
            .conn
            .query_row("SELECT config FROM sessions WHERE id = ?1", [id], |r| {
                r.get(0)
            })
            .optional()
            .at(&self.path)?
            .ok_or(SessionError::NotFound(id))?;
        serde_json::from_str(&text).map_err(|e| SessionError::CorruptSession {
            path: self.path.clone(),
            session: id,
            message: format!("settings are not valid JSON: {e}"),
        })
    }

    /// Replaces a session's stored settings, only while it has no events yet (the desktop app
    /// records the profile it built after creating the session).
    pub fn set_config(&self, id: SessionId, config: &serde_json::Value) -> SessionResult<()> {
        let changed = self
            .conn
            .execute(
                "UPDATE sessions SET config = ?2 WHERE id = ?1
                 AND NOT EXISTS (SELECT 1 FROM events WHERE session = ?1)",
                params![id, config.to_string()],
            )
            .at(&self.path)?;
        if changed == 0 {
            self.info(id)?;
            return Err(SessionError::CorruptSession {
                path: self.path.clone(),
                session: id,
                message: "its settings cannot change once it has events".into(),
            });
        }
        Ok(())
    }

    /// One session's summary.
    pub fn info(&self, id: SessionId) -> SessionResult<SessionInfo> {
        self.infos(Some(id))?
            .pop()
            .ok_or(SessionError::NotFound(id))
    }

    /// Every session, newest (most recently created) first.
    pub fn list(&self) -> SessionResult<Vec<SessionInfo>> {
        self.infos(None)
    }

    fn infos(&self, only: Option<SessionId>) -> SessionResult<Vec<SessionInfo>> {
        let path = &self.path;
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT s.id, s.query, s.status, s.created_at, s.updated_at, s.title,
                        (SELECT COUNT(*) FROM events e WHERE e.session = s.id),
                        (SELECT COUNT(*) FROM steering m
                          WHERE m.session = s.id AND m.applied_seq IS NULL)
                 FROM sessions s
                 WHERE ?1 IS NULL OR s.id = ?1
                 ORDER BY s.id DESC",
            )
            .at(path)?;
        let rows = stmt
            .query_map([only], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, i64>(3)?,
                    r.get::<_, i64>(4)?,
                    r.get::<_, Option<String>>(5)?,
                    r.get::<_, i64>(6)?,
                    r.get::<_, i64>(7)?,
                ))
            })
            .at(path)?;
        let mut out = Vec::new();
        for row in rows {
            let (id, query, status, created, updated, title, events, pending) = row.at(path)?;
            out.push(SessionInfo {
                id,
                query,
                status: parse_status(path, id, &status)?,
                created_at: time(path, id, created)?,
                updated_at: time(path, id, updated)?,
                events: events as u64,
                pending_steering: pending as u64,
                title,
            });
        }
        Ok(out)
    }

    /// Appends one step's events and marks the steering messages `applied` as applied by it,
    /// in one `BEGIN IMMEDIATE` transaction: all of it is written or none.
    ///
    /// The first event's seq must be the number of events already stored and the rest must
    /// follow on ([`SessionError::Gap`] otherwise). Every id in `applied` must be a pending
    /// message of this session ([`SessionError::UnknownSteering`],
    /// [`SessionError::AlreadyApplied`]); they get the seq of the last event in `events`,
    /// which must then not be empty. Refused with [`SessionError::Finished`] once the session
    /// has finished.
    pub fn append(
        &mut self,
        id: SessionId,
        events: &[Envelope],
        applied: &[i64],
    ) -> SessionResult<()> {
        let path = &self.path;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .at(path)?;
        write_step(&tx, path, id, events, applied)?;
        tx.commit().at(path)
    }

    /// Like [`append`](Self::append), then sets the status to finished — but only if no
    /// steering message is left unapplied once `applied` are marked. If one is, nothing at all
    /// is written and this returns `Ok(false)`: the run should apply it and try again.
    /// Holding the write lock from the check to the commit makes this atomic with respect to
    /// [`enqueue_steering`](Self::enqueue_steering) from any process.
    pub fn finish(
        &mut self,
        id: SessionId,
        events: &[Envelope],
        applied: &[i64],
    ) -> SessionResult<bool> {
        let path = &self.path;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .at(path)?;
        write_step(&tx, path, id, events, applied)?;
        if count_pending(&tx, path, id)? > 0 {
            tx.rollback().at(path)?;
            return Ok(false);
        }
        tx.execute(
            "UPDATE sessions SET status = ?2, updated_at = ?3 WHERE id = ?1",
            params![
                id,
                SessionStatus::Finished.as_str(),
                Utc::now().timestamp_micros()
            ],
        )
        .at(path)?;
        tx.commit().at(path)?;
        Ok(true)
    }

    /// Changes the status. Finished is final: any change away from it fails with
    /// [`SessionError::Finished`], and setting it while messages are pending fails with
    /// [`SessionError::PendingSteering`] (prefer [`finish`](Self::finish)).
    pub fn set_status(&self, id: SessionId, status: SessionStatus) -> SessionResult<()> {
        let path = &self.path;
        let tx = Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate).at(path)?;
        let current = status_of(&tx, path, id)?;
        if current == SessionStatus::Finished {
            return match status {
                SessionStatus::Finished => Ok(()),
                _ => Err(SessionError::Finished(id)),
            };
        }
        if status == SessionStatus::Finished {
            let pending = count_pending(&tx, path, id)?;
            if pending > 0 {
                return Err(SessionError::PendingSteering {
                    session: id,
                    pending,
                });
            }
        }
        tx.execute(
            "UPDATE sessions SET status = ?2, updated_at = ?3 WHERE id = ?1",
            params![id, status.as_str(), Utc::now().timestamp_micros()],
        )
        .at(path)?;
        tx.commit().at(path)
    }

    /// Sets the title shown in listings (trimmed; a blank one clears it). Allowed at any
    /// status, since titles are often written last.
    pub fn set_title(&self, id: SessionId, title: &str) -> SessionResult<()> {
        let title = Some(title.trim()).filter(|t| !t.is_empty());
        let changed = self
            .conn
            .execute(
                "UPDATE sessions SET title = ?2 WHERE id = ?1",
                params![id, title],
            )
            .at(&self.path)?;
        if changed == 0 {
            return Err(SessionError::NotFound(id));
        }
        Ok(())
    }

    /// The whole log, in seq order.
    pub fn events(&self, id: SessionId) -> SessionResult<Vec<Envelope>> {
        self.events_from(id, 0)
    }

    /// The events with seq `from` and later, in seq order (for following a live session).
    pub fn events_from(&self, id: SessionId, from: u64) -> SessionResult<Vec<Envelope>> {
        let path = &self.path;
        status_of(&self.conn, path, id)?;
        let from = i64::try_from(from).unwrap_or(i64::MAX);
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT seq, body FROM events WHERE session = ?1 AND seq >= ?2 ORDER BY seq",
            )
            .at(path)?;
        let rows = stmt
            .query_map(params![id, from], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
            })
            .at(path)?;
        let mut out = Vec::new();
        for row in rows {
            let (seq, body) = row.at(path)?;
            let seq = seq as u64; // CHECK (seq >= 0)
            let corrupt = |message: String| SessionError::Corrupt {
                path: path.clone(),
                session: id,
                seq,
                message,
            };
            let envelope: Envelope = serde_json::from_str(&body)
                .map_err(|e| corrupt(format!("the stored event does not parse: {e}")))?;
            if envelope.seq != seq {
                return Err(corrupt(format!(
                    "the stored event says it is event {}",
                    envelope.seq
                )));
            }
            out.push(envelope);
        }
        Ok(out)
    }

    /// How many events are stored; also the seq the next event must have.
    pub fn event_count(&self, id: SessionId) -> SessionResult<u64> {
        status_of(&self.conn, &self.path, id)?;
        next_seq(&self.conn, &self.path, id)
    }

    /// Stores a steering message at once, in its own `BEGIN IMMEDIATE` transaction, and
    /// returns it. Safe from any thread or process with its own store. The text is trimmed;
    /// a blank one is [`SessionError::EmptyMessage`]. A finished session refuses it with
    /// [`SessionError::Finished`].
    pub fn enqueue_steering(&self, id: SessionId, text: &str) -> SessionResult<SteeringMessage> {
        let text = text.trim();
        if text.is_empty() {
            return Err(SessionError::EmptyMessage);
        }
        let path = &self.path;
        let tx = Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate).at(path)?;
        if status_of(&tx, path, id)? == SessionStatus::Finished {
            return Err(SessionError::Finished(id));
        }
        // Read the clock under the lock, so that id order and time order agree.
        let now = Utc::now().timestamp_micros();
        tx.execute(
            "INSERT INTO steering (session, text, received_at) VALUES (?1, ?2, ?3)",
            params![id, text, now],
        )
        .at(path)?;
        let message = tx.last_insert_rowid();
        tx.execute(
            "UPDATE sessions SET updated_at = ?2 WHERE id = ?1",
            params![id, now],
        )
        .at(path)?;
        tx.commit().at(path)?;
        Ok(SteeringMessage {
            id: message,
            session: id,
            text: text.to_string(),
            received_at: time(path, id, now)?,
            applied_seq: None,
        })
    }

    /// The messages not applied yet, oldest first.
    pub fn pending_steering(&self, id: SessionId) -> SessionResult<Vec<SteeringMessage>> {
        self.steering_where(id, true)
    }

    /// Every message, applied or not, oldest first.
    pub fn steering(&self, id: SessionId) -> SessionResult<Vec<SteeringMessage>> {
        self.steering_where(id, false)
    }

    fn steering_where(
        &self,
        id: SessionId,
        pending_only: bool,
    ) -> SessionResult<Vec<SteeringMessage>> {
        let path = &self.path;
        status_of(&self.conn, path, id)?;
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT id, text, received_at, applied_seq FROM steering
                 WHERE session = ?1 AND (?2 = 0 OR applied_seq IS NULL)
                 ORDER BY id",
            )
            .at(path)?;
        let rows = stmt
            .query_map(params![id, pending_only], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, Option<i64>>(3)?,
                ))
            })
            .at(path)?;
        let mut out = Vec::new();
        for row in rows {
            let (message, text, received, applied) = row.at(path)?;
            out.push(SteeringMessage {
                id: message,
                session: id,
                text,
                received_at: time(path, id, received)?,
                // The foreign key to `events` keeps it a valid (non-negative) seq.
                applied_seq: applied.map(|s| s as u64),
            });
        }
        Ok(out)
    }

    /// Forgets a session with its events and messages.
    pub fn delete(&self, id: SessionId) -> SessionResult<()> {
        let changed = self
            .conn
            .execute("DELETE FROM sessions WHERE id = ?1", [id])
            .at(&self.path)?;
        if changed == 0 {
            return Err(SessionError::NotFound(id));
        }
        Ok(())
    }
}

/// Validates and writes one step inside `tx`; the caller commits. Any error leaves `tx` to be
/// dropped, which rolls back whatever this wrote.
fn write_step(
    tx: &Transaction<'_>,
    path: &Path,
    id: SessionId,
    events: &[Envelope],
    applied: &[i64],
) -> SessionResult<()> {
    if status_of(tx, path, id)? == SessionStatus::Finished {
        return Err(SessionError::Finished(id));
    }
    if events.is_empty() && !applied.is_empty() {
        return Err(SessionError::AppliedWithoutEvents { session: id });
    }
    let next = next_seq(tx, path, id)?;
    for (expected, envelope) in (next..).zip(events) {
        if envelope.seq != expected {
            return Err(SessionError::Gap {
                session: id,
                expected,
                got: envelope.seq,
            });
        }
    }
    let mut insert = tx
        .prepare_cached(
            "INSERT INTO events (session, seq, at, type, body) VALUES (?1, ?2, ?3, ?4, ?5)",
        )
        .at(path)?;
    for envelope in events {
        let (kind, body) = encode(id, envelope)?;
        insert
            .execute(params![
                id,
                envelope.seq as i64, // continues the stored seqs, which fit in i64
                envelope.at.timestamp_micros(),
                kind,
                body
            ])
            .at(path)?;
    }
    if let Some(last) = events.last() {
        let mut mark = tx
            .prepare_cached(
                "UPDATE steering SET applied_seq = ?3
                 WHERE id = ?1 AND session = ?2 AND applied_seq IS NULL",
            )
            .at(path)?;
        for &message in applied {
            if mark
                .execute(params![message, id, last.seq as i64])
                .at(path)?
                != 1
            {
                return Err(not_applicable(tx, path, id, message)?);
            }
        }
    }
    tx.execute(
        "UPDATE sessions SET updated_at = ?2 WHERE id = ?1",
        params![id, Utc::now().timestamp_micros()],
    )
    .at(path)?;
    Ok(())
}

/// Why steering message `message` could not be marked as applied in session `id`.
fn not_applicable(
    conn: &Connection,
    path: &Path,
    id: SessionId,
    message: i64,
) -> SessionResult<SessionError> {
    let row: Option<(i64, Option<i64>)> = conn
        .query_row(
            "SELECT session, applied_seq FROM steering WHERE id = ?1",
            [message],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()
        .at(path)?;
    Ok(match row {
        Some((session, Some(seq))) if session == id => SessionError::AlreadyApplied {
            session: id,
            message,
            seq: seq as u64,
        },
        _ => SessionError::UnknownSteering {
            session: id,
            message,
        },
    })
}

/// The event's `type` tag (if it has one) and the envelope as JSON text.
fn encode(id: SessionId, envelope: &Envelope) -> SessionResult<(Option<String>, String)> {
    let value = serde_json::to_value(envelope).map_err(|e| SessionError::Encode {
        session: id,
        seq: envelope.seq,
        message: e.to_string(),
    })?;
    let kind = value
        .get("event")
        .and_then(|e| e.get("type"))
        .and_then(|t| t.as_str())
        .map(str::to_string);
    Ok((kind, value.to_string()))
}

fn status_of(conn: &Connection, path: &Path, id: SessionId) -> SessionResult<SessionStatus> {
    let status: String = conn
        .query_row("SELECT status FROM sessions WHERE id = ?1", [id], |r| {
            r.get(0)
        })
        .optional()
        .at(path)?
        .ok_or(SessionError::NotFound(id))?;
    parse_status(path, id, &status)
}

fn next_seq(conn: &Connection, path: &Path, id: SessionId) -> SessionResult<u64> {
    conn.query_row(
        "SELECT COALESCE(MAX(seq) + 1, 0) FROM events WHERE session = ?1",
        [id],
        |r| r.get::<_, i64>(0),
    )
    .map(|n| n as u64)
    .at(path)
}

fn count_pending(conn: &Connection, path: &Path, id: SessionId) -> SessionResult<u64> {
    conn.query_row(
        "SELECT COUNT(*) FROM steering WHERE session = ?1 AND applied_seq IS NULL",
        [id],
        |r| r.get::<_, i64>(0),
    )
    .map(|n| n as u64)
    .at(path)
}

fn user_version(conn: &Connection, path: &Path) -> SessionResult<i64> {
    conn.query_row("PRAGMA user_version", [], |r| r.get(0))
        .at(path)
}

fn parse_status(path: &Path, id: SessionId, s: &str) -> SessionResult<SessionStatus> {
    s.parse().map_err(|message| SessionError::CorruptSession {
        path: path.to_path_buf(),
        session: id,
        message,
    })
}

fn time(path: &Path, id: SessionId, micros: i64) -> SessionResult<DateTime<Utc>> {
    DateTime::from_timestamp_micros(micros).ok_or_else(|| SessionError::CorruptSession {
        path: path.to_path_buf(),
        session: id,
        message: format!("timestamp {micros} is out of range"),
    })
}

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

/// Attaches the database path to SQLite errors.
trait InDb<T> {
    fn at(self, path: &Path) -> SessionResult<T>;
}

impl<T> InDb<T> for rusqlite::Result<T> {
    fn at(self, path: &Path) -> SessionResult<T> {
        self.map_err(|source| SessionError::Sqlite {
            path: path.to_path_buf(),
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::research::events::Event;

    #[test]
    fn status_text_matches_serde_and_parses_back() {
        for status in [
            SessionStatus::Running,
            SessionStatus::Interrupted,
            SessionStatus::Finished,
            SessionStatus::Failed,
        ] {
            assert_eq!(status.as_str().parse::<SessionStatus>(), Ok(status));
            assert_eq!(
                serde_json::to_value(status).unwrap(),
                serde_json::Value::from(status.as_str())
            );
        }
        assert!("done".parse::<SessionStatus>().is_err());
    }

    #[test]
    fn encode_keeps_the_type_tag_and_the_whole_envelope() {
        let envelope = Envelope {
            seq: 4,
            at: Utc::now(),
            event: Event::ReportSection {
                index: 1,
                heading: "Costs".into(),
            },
        };
        let (kind, body) = encode(1, &envelope).unwrap();
        assert_eq!(kind.as_deref(), Some("report_section"));
        assert_eq!(serde_json::from_str::<Envelope>(&body).unwrap(), envelope);
    }

    #[test]
    fn a_failed_step_rolls_back_what_it_wrote() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = SessionStore::open(&dir.path().join("s.sqlite")).unwrap();
        let id = store.create("q", &serde_json::json!({})).unwrap();
        let node = |seq| Envelope {
            seq,
            at: Utc::now(),
            event: Event::NodeStarted { id: 0 },
        };
        // The events are inserted before the unknown message id is found.
        let err = store.append(id, &[node(0), node(1)], &[42]).unwrap_err();
        assert!(
            matches!(err, SessionError::UnknownSteering { .. }),
            "{err:?}"
        );
        let rows: i64 = store
            .conn
            .query_row("SELECT COUNT(*) FROM events", [], |r| r.get(0))
            .unwrap();
        assert_eq!(rows, 0);
        assert!(store.conn.is_autocommit(), "no transaction left open");
    }
}
