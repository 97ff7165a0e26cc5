//! The SQLite store: the source of truth for history. Tantivy and the vectors are indexes
//! rebuilt from it. Opening, pragmas and migrations are the shared
//! [`crate::retrieval::sqlite`]; this module holds history's tables and queries.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use rusqlite::{params, Connection, OptionalExtension, Transaction};
use serde::Serialize;

use super::entry::{Entry, HistorySource, Kind, Signal, SignalKind, Turn, TurnRole};
use crate::retrieval::sqlite::{self as db, Database, OpenError};
use crate::retrieval::QuantizedVector;

mod memory;
pub use memory::{MemoryRow, NewMemory, Remembering};

/// Errors from the history store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("history database {path}: {source}")]
    Sqlite {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    #[error("history database {path}: {message}")]
    Corrupt { path: PathBuf, message: String },
    /// SQLite says the file is damaged or is not a database. Rudder cannot repair it, but the
    /// exports it was imported from are the source, so nothing is lost by importing them again.
    #[error(
        "history database {path} is damaged ({error}): move it aside or delete it, then \
         import your history exports again (they are the source; nothing else is lost)"
    )]
    Damaged {
        path: PathBuf,
        error: rusqlite::Error,
    },
}

impl StoreError {
    /// What fixes it: a damaged database is rebuilt by importing the exports again.
    pub fn remedy(&self) -> Option<crate::remedy::Remedy> {
        match self {
            StoreError::Damaged { .. } => Some(crate::remedy::Remedy::Reimport),
            _ => None,
        }
    }
}

pub type StoreResult<T> = Result<T, StoreError>;

/// The history database: its numbered schema migrations (`user_version` records how many ran).
const DATABASE: Database = Database {
    label: "history database",
    migrations: MIGRATIONS,
};

const MIGRATIONS: &[&str] = &[
    r#"
CREATE TABLE sessions (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    source        TEXT NOT NULL,
    kind          TEXT NOT NULL,
    title         TEXT NOT NULL,
    url           TEXT,
    external_id   TEXT,
    started_at    INTEGER,            -- microseconds since the Unix epoch, UTC
    time_note     TEXT,
    content_hash  TEXT NOT NULL UNIQUE,
    origin        TEXT NOT NULL,      -- the file it was imported from
    imported_at   INTEGER NOT NULL,
    embedded_with TEXT                -- embedding model of its vectors; NULL = not embedded yet
);
CREATE INDEX sessions_by_time ON sessions(started_at);
CREATE UNIQUE INDEX sessions_by_external_id ON sessions(source, external_id)
    WHERE external_id IS NOT NULL;

CREATE TABLE turns (
    session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    idx        INTEGER NOT NULL,
    role       TEXT NOT NULL,
    text       TEXT NOT NULL,
    at         INTEGER,
    PRIMARY KEY (session_id, idx)
) WITHOUT ROWID;

-- One embedding per chunk of a session, int8-quantised with a per-vector scale.
CREATE TABLE chunk_vectors (
    session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    chunk      INTEGER NOT NULL,
    scale      REAL NOT NULL,
    vector     BLOB NOT NULL,
    PRIMARY KEY (session_id, chunk)
) WITHOUT ROWID;

CREATE TABLE signals (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    source       TEXT NOT NULL,
    kind         TEXT NOT NULL,
    text         TEXT NOT NULL,
    at           INTEGER,
    content_hash TEXT NOT NULL UNIQUE,
    origin       TEXT NOT NULL,
    imported_at  INTEGER NOT NULL
);
CREATE INDEX signals_by_source ON signals(source);

CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"#,
    r#"
-- Cached profiles (query-aware and general) and the sessions each one cites. A profile is
-- dropped as soon as a session it cites is forgotten, so no summary outlives its evidence.
CREATE TABLE profiles (
    key        TEXT PRIMARY KEY,
    kind       TEXT NOT NULL,       -- query | general
    query      TEXT,
    model      TEXT NOT NULL,
    body       TEXT NOT NULL,       -- JSON
    watermark  INTEGER,             -- general: the highest session id it has seen
    created_at INTEGER NOT NULL
);
CREATE TABLE profile_citations (
    profile_key TEXT NOT NULL,
    session_id  INTEGER NOT NULL,
    PRIMARY KEY (profile_key, session_id)
) WITHOUT ROWID;
CREATE INDEX profile_citations_by_session ON profile_citations(session_id);
CREATE TRIGGER forgetting_a_session_drops_the_profiles_citing_it
AFTER DELETE ON sessions BEGIN
    DELETE FROM profiles WHERE key IN
        (SELECT profile_key FROM profile_citations WHERE session_id = OLD.id);
    DELETE FROM profile_citations WHERE profile_key IN
        (SELECT profile_key FROM profile_citations WHERE session_id = OLD.id);
END;
"#,
    r#"
-- What the user told Rudder about themselves ("What Rudder knows about you"): statements in
-- their own words, inferred statements they deleted or corrected (kept out of every later
-- profile until restored), and sources that do not feed profiles. `history forget --all`
-- clears them with the rest.
CREATE TABLE user_statements (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    text       TEXT NOT NULL,
    criterion  TEXT NOT NULL,       -- emphasize | avoid | content depth | tone | explanation style
    replaces   TEXT,                -- the inferred statement it corrects
    created_at INTEGER NOT NULL
);
CREATE TABLE hidden_statements (
    key        TEXT PRIMARY KEY,    -- the statement's text, lower-cased, words only
    text       TEXT NOT NULL,
    sessions   TEXT NOT NULL,       -- JSON array of the session ids it rested on
    created_at INTEGER NOT NULL
);
CREATE TABLE unpersonalised_sources (
    source     TEXT PRIMARY KEY,
    created_at INTEGER NOT NULL
);
"#,
    r#"
-- The memory of the user (profile::memory): statements about the person read from history once,
-- each resting on the sessions it was read from. A statement goes with the last session it rests
-- on, so nothing in memory outlives its evidence.
CREATE TABLE memory_statements (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    key        TEXT NOT NULL UNIQUE,   -- the text, lower-cased, words only
    text       TEXT NOT NULL,
    kind       TEXT NOT NULL,          -- constraint | background | preference | presentation
    model      TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE TABLE memory_sources (
    statement_id INTEGER NOT NULL REFERENCES memory_statements(id) ON DELETE CASCADE,
    session_id   INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    PRIMARY KEY (statement_id, session_id)
) WITHOUT ROWID;
CREATE INDEX memory_sources_by_session ON memory_sources(session_id);
CREATE TRIGGER a_memory_goes_with_its_last_source
AFTER DELETE ON memory_sources BEGIN
    DELETE FROM memory_statements WHERE id = OLD.statement_id
        AND NOT EXISTS (SELECT 1 FROM memory_sources WHERE statement_id = OLD.statement_id);
END;
-- Sessions memory has been through, whether or not they said anything about the person: reading
-- resumes where it stopped, and an import adds only its new sessions. `by_model` is 0 for a
-- session the cheap check passed over (a visited page, a lookup).
CREATE TABLE memory_read (
    session_id INTEGER PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    by_model   INTEGER NOT NULL,
    model      TEXT NOT NULL
);
"#,
];

/// A statement the user made about themselves, in their own words.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UserStatement {
    pub id: i64,
    pub text: String,
    /// The profile criterion it belongs to (`emphasize`, `avoid`, `content depth`, `tone`,
    /// `explanation style`).
    pub criterion: String,
    /// The inferred statement it corrects, if it is a correction.
    pub replaces: Option<String>,
    pub created_at: DateTime<Utc>,
}

/// An inferred statement the user deleted (or corrected): no later profile carries it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HiddenStatement {
    pub key: String,
    pub text: String,
    pub sessions: Vec<i64>,
    pub created_at: DateTime<Utc>,
}

/// An entry as stored, with its id.
#[derive(Debug, Clone, Serialize)]
pub struct StoredEntry {
    pub id: i64,
    #[serde(flatten)]
    pub entry: Entry,
    pub content_hash: String,
    pub origin: String,
    pub imported_at: DateTime<Utc>,
}

/// A signal as stored.
#[derive(Debug, Clone, Serialize)]
pub struct StoredSignal {
    pub id: i64,
    #[serde(flatten)]
    pub signal: Signal,
    pub origin: String,
}

/// What happened to one record on insert.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inserted {
    Added(i64),
    /// Same content already stored.
    Duplicate,
    /// A newer copy of a conversation already stored under the same external id: the old
    /// entry `old` was deleted and the new one added as `new`.
    Replaced {
        old: i64,
        new: i64,
    },
}

/// Which entries to forget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ForgetSelector {
    Entry(i64),
    /// Everything from one source, optionally within a time range.
    Source {
        source: HistorySource,
        since: Option<DateTime<Utc>>,
        until: Option<DateTime<Utc>>,
    },
    /// Everything started in `[since, until)` (either end open).
    Range {
        since: Option<DateTime<Utc>>,
        until: Option<DateTime<Utc>>,
    },
    All,
}

/// Counts for `rudder history stats`.
#[derive(Debug, Clone, Serialize, Default)]
pub struct StoreStats {
    pub sessions: u64,
    pub by_source: std::collections::BTreeMap<String, u64>,
    pub by_kind: std::collections::BTreeMap<String, u64>,
    pub signals: u64,
    pub turns: u64,
    pub embedded_sessions: u64,
    pub vectors: u64,
    pub first: Option<DateTime<Utc>>,
    pub last: Option<DateTime<Utc>>,
}

/// The history database.
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

pub(crate) fn micros(t: Option<DateTime<Utc>>) -> Option<i64> {
    t.map(|t| t.timestamp_micros())
}

pub(crate) fn from_micros(us: Option<i64>) -> Option<DateTime<Utc>> {
    us.and_then(DateTime::from_timestamp_micros)
}

impl Store {
    /// Opens (creating and migrating if needed) the database at `path`.
    pub fn open(path: &Path) -> StoreResult<Self> {
        let conn = DATABASE.open(path).map_err(|e| match e {
            OpenError::Sqlite(e) => sqlite(path, e),
            e => StoreError::Corrupt {
                path: path.to_path_buf(),
                message: e.to_string(),
            },
        })?;
        Ok(Self {
            conn,
            path: path.to_path_buf(),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn err(&self, e: rusqlite::Error) -> StoreError {
        sqlite(&self.path, e)
    }

    /// Starts a write transaction: one per imported file.
    pub fn write(&mut self) -> StoreResult<Writer<'_>> {
        let path = self.path.clone();
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(|e| sqlite(&path, e))?;
        Ok(Writer {
            tx,
            path,
            now: Utc::now().timestamp_micros(),
        })
    }

    /// One entry with its turns.
    pub fn get(&self, id: i64) -> StoreResult<Option<StoredEntry>> {
        let mut sessions = self.get_many(&[id])?;
        Ok(sessions.pop())
    }

    /// Several entries by id, in the order given; missing ids are left out.
    pub fn get_many(&self, ids: &[i64]) -> StoreResult<Vec<StoredEntry>> {
        let mut head = self
            .conn
            .prepare_cached(
                "SELECT id, source, kind, title, url, external_id, started_at, time_note,
                        content_hash, origin, imported_at
                 FROM sessions WHERE id = ?1",
            )
            .map_err(|e| self.err(e))?;
        let mut turns = self
            .conn
            .prepare_cached("SELECT role, text, at FROM turns WHERE session_id = ?1 ORDER BY idx")
            .map_err(|e| self.err(e))?;
        let mut out = Vec::with_capacity(ids.len());
        for &id in ids {
            let row = head
                .query_row([id], |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(2)?,
                        r.get::<_, String>(3)?,
                        r.get::<_, Option<String>>(4)?,
                        r.get::<_, Option<String>>(5)?,
                        r.get::<_, Option<i64>>(6)?,
                        r.get::<_, Option<String>>(7)?,
                        r.get::<_, String>(8)?,
                        r.get::<_, String>(9)?,
                        r.get::<_, i64>(10)?,
                    ))
                })
                .optional()
                .map_err(|e| self.err(e))?;
            let Some((id, source, kind, title, url, external_id, started, note, hash, origin, at)) =
                row
            else {
                continue;
            };
            let turn_rows = turns
                .query_map([id], |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, Option<i64>>(2)?,
                    ))
                })
                .map_err(|e| self.err(e))?;
            let mut session_turns = Vec::new();
            for t in turn_rows {
                let (role, text, at) = t.map_err(|e| self.err(e))?;
                session_turns.push(Turn {
                    role: if role == "assistant" {
                        TurnRole::Assistant
                    } else {
                        TurnRole::User
                    },
                    text,
                    at: from_micros(at),
                });
            }
            out.push(StoredEntry {
                id,
                entry: Entry {
                    source: self.parse_field(&source)?,
                    kind: self.parse_field(&kind)?,
                    title,
                    url,
                    external_id,
                    started_at: from_micros(started),
                    time_note: note,
                    turns: session_turns,
                },
                content_hash: hash,
                origin,
                imported_at: from_micros(Some(at)).unwrap_or_default(),
            });
        }
        Ok(out)
    }

    fn parse_field<T: std::str::FromStr<Err = String>>(&self, s: &str) -> StoreResult<T> {
        s.parse().map_err(|message| StoreError::Corrupt {
            path: self.path.clone(),
            message,
        })
    }

    /// Visits every entry in id order (for rebuilding indexes), `batch` at a time.
    pub fn for_each_entry(
        &self,
        batch: usize,
        mut f: impl FnMut(&[StoredEntry]) -> StoreResult<()>,
    ) -> StoreResult<()> {
        let mut after = 0i64;
        loop {
            let ids = self.ids_after(after, batch)?;
            if ids.is_empty() {
                return Ok(());
            }
            after = *ids.last().unwrap_or(&after);
            let sessions = self.get_many(&ids)?;
            f(&sessions)?;
        }
    }

    fn ids_after(&self, after: i64, limit: usize) -> StoreResult<Vec<i64>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT id FROM sessions WHERE id > ?1 ORDER BY id LIMIT ?2")
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![after, limit as i64], |r| r.get(0))
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    /// Ids of up to `limit` sessions after `after` not yet embedded with `model`. Walking by
    /// id keeps each batch a short range scan, with no index to maintain on every insert.
    pub fn ids_to_embed(&self, model: &str, after: i64, limit: usize) -> StoreResult<Vec<i64>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT id FROM sessions
                 WHERE id > ?3 AND (embedded_with IS NULL OR embedded_with <> ?1)
                 ORDER BY id LIMIT ?2",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![model, limit as i64, after], |r| r.get(0))
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    /// How many entries still lack vectors from `model`.
    pub fn count_to_embed(&self, model: &str) -> StoreResult<u64> {
        self.conn
            .query_row(
                "SELECT COUNT(*) FROM sessions WHERE embedded_with IS NULL OR embedded_with <> ?1",
                [model],
                |r| r.get::<_, i64>(0),
            )
            .map(|n| n as u64)
            .map_err(|e| self.err(e))
    }

    /// Stores the vectors of some entries (replacing older ones) in one transaction.
    pub fn put_vectors(
        &mut self,
        model: &str,
        vectors: &[(i64, Vec<QuantizedVector>)],
    ) -> StoreResult<()> {
        let path = self.path.clone();
        let tx = self.conn.transaction().map_err(|e| sqlite(&path, e))?;
        {
            let mut del = tx
                .prepare_cached("DELETE FROM chunk_vectors WHERE session_id = ?1")
                .map_err(|e| sqlite(&path, e))?;
            let mut ins = tx
                .prepare_cached(
                    "INSERT INTO chunk_vectors (session_id, chunk, scale, vector)
                     VALUES (?1, ?2, ?3, ?4)",
                )
                .map_err(|e| sqlite(&path, e))?;
            let mut mark = tx
                .prepare_cached("UPDATE sessions SET embedded_with = ?2 WHERE id = ?1")
                .map_err(|e| sqlite(&path, e))?;
            for (id, chunks) in vectors {
                // The entry may have been forgotten while it was being embedded.
                if mark
                    .execute(params![id, model])
                    .map_err(|e| sqlite(&path, e))?
                    == 0
                {
                    continue;
                }
                del.execute([id]).map_err(|e| sqlite(&path, e))?;
                for (i, v) in chunks.iter().enumerate() {
                    ins.execute(params![id, i as i64, v.scale as f64, v.to_blob()])
                        .map_err(|e| sqlite(&path, e))?;
                }
            }
        }
        tx.commit().map_err(|e| sqlite(&path, e))
    }

    /// Drops every vector, so the next embedding pass recomputes them all.
    pub fn clear_vectors(&mut self) -> StoreResult<()> {
        self.conn
            .execute_batch(
                "BEGIN; DELETE FROM chunk_vectors; UPDATE sessions SET embedded_with = NULL; COMMIT;",
            )
            .map_err(|e| self.err(e))
    }

    /// Visits every stored vector with its entry's filter fields, for loading the in-memory
    /// vector index. Only vectors made by `model` count.
    pub fn for_each_vector(
        &self,
        model: &str,
        mut f: impl FnMut(VectorRow<'_>),
    ) -> StoreResult<()> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT v.session_id, v.scale, v.vector, s.source, s.kind, s.started_at
                 FROM chunk_vectors v JOIN sessions s ON s.id = v.session_id
                 WHERE s.embedded_with = ?1
                 ORDER BY v.session_id, v.chunk",
            )
            .map_err(|e| self.err(e))?;
        let mut rows = stmt.query([model]).map_err(|e| self.err(e))?;
        while let Some(row) = rows.next().map_err(|e| self.err(e))? {
            let source: String = row.get(3).map_err(|e| self.err(e))?;
            let kind: String = row.get(4).map_err(|e| self.err(e))?;
            let blob = row.get_ref(2).map_err(|e| self.err(e))?;
            let bytes = blob.as_blob().map_err(|e| self.err(e.into()))?;
            f(VectorRow {
                session_id: row.get(0).map_err(|e| self.err(e))?,
                scale: row.get::<_, f64>(1).map_err(|e| self.err(e))? as f32,
                values: bytes,
                source: self.parse_field(&source)?,
                kind: self.parse_field(&kind)?,
                started_at: row.get(5).map_err(|e| self.err(e))?,
            });
        }
        Ok(())
    }

    /// Deletes the selected entries (their turns and vectors go with them) and, for a source
    /// or everything, the signals too. Returns the ids deleted. The freed pages are zeroed
    /// (`secure_delete`); call [`compact`](Self::compact) to also drop them from the file.
    pub fn forget(&mut self, selector: &ForgetSelector) -> StoreResult<Vec<i64>> {
        let path = self.path.clone();
        let tx = self.conn.transaction().map_err(|e| sqlite(&path, e))?;
        let (filter, args) = selector_sql(selector);
        let ids: Vec<i64> = {
            let mut stmt = tx
                .prepare(&format!(
                    "SELECT id FROM sessions WHERE {filter} ORDER BY id"
                ))
                .map_err(|e| sqlite(&path, e))?;
            let rows = stmt
                .query_map(rusqlite::params_from_iter(args.iter()), |r| r.get(0))
                .map_err(|e| sqlite(&path, e))?;
            rows.collect::<Result<_, _>>()
                .map_err(|e| sqlite(&path, e))?
        };
        tx.execute(
            &format!("DELETE FROM sessions WHERE {filter}"),
            rusqlite::params_from_iter(args.iter()),
        )
        .map_err(|e| sqlite(&path, e))?;
        match selector {
            ForgetSelector::All => {
                tx.execute_batch(
                    "DELETE FROM signals; DELETE FROM profiles; DELETE FROM profile_citations;
                     DELETE FROM user_statements; DELETE FROM hidden_statements;
                     DELETE FROM unpersonalised_sources; DELETE FROM memory_statements;
                     DELETE FROM memory_read;",
                )
                .map_err(|e| sqlite(&path, e))?;
            }
            ForgetSelector::Source {
                source,
                since: None,
                until: None,
            } => {
                tx.execute("DELETE FROM signals WHERE source = ?1", [source.as_str()])
                    .map_err(|e| sqlite(&path, e))?;
            }
            ForgetSelector::Range { since, until }
            | ForgetSelector::Source { since, until, .. } => {
                let (lo, hi) = (micros(*since), micros(*until));
                let source = match selector {
                    ForgetSelector::Source { source, .. } => Some(source.as_str()),
                    _ => None,
                };
                tx.execute(
                    "DELETE FROM signals WHERE at IS NOT NULL
                       AND (?1 IS NULL OR at >= ?1) AND (?2 IS NULL OR at < ?2)
                       AND (?3 IS NULL OR source = ?3)",
                    params![lo, hi, source],
                )
                .map_err(|e| sqlite(&path, e))?;
            }
            ForgetSelector::Entry(_) => {}
        }
        if !matches!(selector, ForgetSelector::Entry(_)) {
            // General profiles also read the signals, which this may have removed.
            tx.execute("DELETE FROM profiles WHERE kind = 'general'", [])
                .map_err(|e| sqlite(&path, e))?;
        }
        tx.commit().map_err(|e| sqlite(&path, e))?;
        Ok(ids)
    }

    /// Rewrites the database so that deleted content is not recoverable from the file or its
    /// write-ahead log.
    pub fn compact(&mut self) -> StoreResult<()> {
        db::compact(&self.conn).map_err(|e| self.err(e))
    }

    /// Counts by source and kind, and the time span.
    pub fn stats(&self) -> StoreResult<StoreStats> {
        let mut stats = StoreStats::default();
        let q = |sql: &str| -> StoreResult<Vec<(String, u64)>> {
            let mut stmt = self.conn.prepare(sql).map_err(|e| self.err(e))?;
            let rows = stmt
                .query_map([], |r| {
                    Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)? as u64))
                })
                .map_err(|e| self.err(e))?;
            rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
        };
        stats.by_source = q("SELECT source, COUNT(*) FROM sessions GROUP BY source")?
            .into_iter()
            .collect();
        stats.by_kind = q("SELECT kind, COUNT(*) FROM sessions GROUP BY kind")?
            .into_iter()
            .collect();
        stats.sessions = stats.by_source.values().sum();
        let one = |sql: &str| -> StoreResult<i64> {
            self.conn
                .query_row(sql, [], |r| r.get::<_, Option<i64>>(0))
                .map(|v| v.unwrap_or(0))
                .map_err(|e| self.err(e))
        };
        stats.signals = one("SELECT COUNT(*) FROM signals")? as u64;
        stats.turns = one("SELECT COUNT(*) FROM turns")? as u64;
        stats.vectors = one("SELECT COUNT(*) FROM chunk_vectors")? as u64;
        stats.embedded_sessions =
            one("SELECT COUNT(*) FROM sessions WHERE embedded_with IS NOT NULL")? as u64;
        let (first, last): (Option<i64>, Option<i64>) = self
            .conn
            .query_row(
                "SELECT MIN(started_at), MAX(started_at) FROM sessions",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(|e| self.err(e))?;
        stats.first = from_micros(first);
        stats.last = from_micros(last);
        Ok(stats)
    }

    /// Number of entries.
    pub fn count(&self) -> StoreResult<u64> {
        self.conn
            .query_row("SELECT COUNT(*) FROM sessions", [], |r| r.get::<_, i64>(0))
            .map(|n| n as u64)
            .map_err(|e| self.err(e))
    }

    /// All signals (custom instructions, memories).
    pub fn signals(&self) -> StoreResult<Vec<StoredSignal>> {
        let mut stmt = self
            .conn
            .prepare("SELECT id, source, kind, text, at, origin FROM signals ORDER BY id")
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, Option<i64>>(4)?,
                    r.get::<_, String>(5)?,
                ))
            })
            .map_err(|e| self.err(e))?;
        let mut out = Vec::new();
        for row in rows {
            let (id, source, kind, text, at, origin) = row.map_err(|e| self.err(e))?;
            out.push(StoredSignal {
                id,
                signal: Signal {
                    source: self.parse_field(&source)?,
                    kind: if kind == SignalKind::Memory.as_str() {
                        SignalKind::Memory
                    } else {
                        SignalKind::CustomInstructions
                    },
                    text,
                    at: from_micros(at),
                },
                origin,
            });
        }
        Ok(out)
    }

    /// A value from the `meta` table.
    pub fn meta(&self, key: &str) -> StoreResult<Option<String>> {
        db::meta(&self.conn, key).map_err(|e| self.err(e))
    }

    pub fn set_meta(&self, key: &str, value: &str) -> StoreResult<()> {
        db::set_meta(&self.conn, key, value).map_err(|e| self.err(e))
    }
}

impl Store {
    /// The user's own statements, oldest first.
    pub fn user_statements(&self) -> StoreResult<Vec<UserStatement>> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT id, text, criterion, replaces, created_at FROM user_statements ORDER BY id",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], |r| {
                Ok(UserStatement {
                    id: r.get(0)?,
                    text: r.get(1)?,
                    criterion: r.get(2)?,
                    replaces: r.get(3)?,
                    created_at: from_micros(Some(r.get(4)?)).unwrap_or_default(),
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    /// Stores a statement of the user's; returns its id.
    pub fn add_user_statement(
        &self,
        text: &str,
        criterion: &str,
        replaces: Option<&str>,
    ) -> StoreResult<i64> {
        self.conn
            .execute(
                "INSERT INTO user_statements (text, criterion, replaces, created_at)
                 VALUES (?1, ?2, ?3, ?4)",
                params![text, criterion, replaces, Utc::now().timestamp_micros()],
            )
            .map_err(|e| self.err(e))?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Deletes one of the user's statements; false when there was none with that id.
    pub fn remove_user_statement(&self, id: i64) -> StoreResult<bool> {
        self.conn
            .execute("DELETE FROM user_statements WHERE id = ?1", [id])
            .map(|n| n > 0)
            .map_err(|e| self.err(e))
    }

    /// The inferred statements the user deleted, oldest first.
    pub fn hidden_statements(&self) -> StoreResult<Vec<HiddenStatement>> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT key, text, sessions, created_at FROM hidden_statements ORDER BY created_at",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], |r| {
                let sessions: String = r.get(2)?;
                Ok(HiddenStatement {
                    key: r.get(0)?,
                    text: r.get(1)?,
                    sessions: serde_json::from_str(&sessions).unwrap_or_default(),
                    created_at: from_micros(Some(r.get(3)?)).unwrap_or_default(),
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    /// Keeps an inferred statement out of later profiles (under `key`, its normalised text).
    pub fn hide_statement(&self, key: &str, text: &str, sessions: &[i64]) -> StoreResult<()> {
        let sessions = serde_json::to_string(sessions).unwrap_or_else(|_| "[]".into());
        self.conn
            .execute(
                "INSERT INTO hidden_statements (key, text, sessions, created_at)
                 VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT(key) DO UPDATE SET text = excluded.text, sessions = excluded.sessions",
                params![key, text, sessions, Utc::now().timestamp_micros()],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Lets a deleted statement back into profiles; false when it was not hidden.
    pub fn restore_statement(&self, key: &str) -> StoreResult<bool> {
        self.conn
            .execute("DELETE FROM hidden_statements WHERE key = ?1", [key])
            .map(|n| n > 0)
            .map_err(|e| self.err(e))
    }

    /// The sources whose entries do not feed profiles.
    pub fn unpersonalised_sources(&self) -> StoreResult<Vec<HistorySource>> {
        let mut stmt = self
            .conn
            .prepare("SELECT source FROM unpersonalised_sources ORDER BY source")
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], |r| r.get::<_, String>(0))
            .map_err(|e| self.err(e))?;
        let mut out = Vec::new();
        for row in rows {
            let name = row.map_err(|e| self.err(e))?;
            out.push(self.parse_field(&name)?);
        }
        Ok(out)
    }

    /// Switches personalisation from `source` off (`excluded`) or back on. Its entries stay
    /// searchable either way.
    pub fn set_source_personalised(
        &self,
        source: HistorySource,
        personalised: bool,
    ) -> StoreResult<()> {
        let sql = if personalised {
            "DELETE FROM unpersonalised_sources WHERE source = ?1"
        } else {
            "INSERT OR IGNORE INTO unpersonalised_sources (source, created_at) VALUES (?1, ?2)"
        };
        let mut args: Vec<rusqlite::types::Value> = vec![source.as_str().to_string().into()];
        if !personalised {
            args.push(Utc::now().timestamp_micros().into());
        }
        self.conn
            .execute(sql, rusqlite::params_from_iter(args))
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// The newest cached profiles of a kind (`query` or `general`), newest first.
    pub fn recent_profiles(&self, kind: &str, limit: usize) -> StoreResult<Vec<CachedProfile>> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT body, watermark, created_at FROM profiles WHERE kind = ?1
                 ORDER BY created_at DESC LIMIT ?2",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![kind, limit as i64], cached_profile_row)
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }
}

/// A cached profile.
#[derive(Debug, Clone)]
pub struct CachedProfile {
    pub body: String,
    pub watermark: Option<i64>,
    pub created_at: DateTime<Utc>,
}

/// A `body, watermark, created_at` row of `profiles`.
fn cached_profile_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<CachedProfile> {
    Ok(CachedProfile {
        body: r.get(0)?,
        watermark: r.get(1)?,
        created_at: from_micros(Some(r.get(2)?)).unwrap_or_default(),
    })
}

impl Store {
    /// A cached profile by key.
    pub fn profile(&self, key: &str) -> StoreResult<Option<CachedProfile>> {
        self.conn
            .query_row(
                "SELECT body, watermark, created_at FROM profiles WHERE key = ?1",
                [key],
                cached_profile_row,
            )
            .optional()
            .map_err(|e| self.err(e))
    }

    /// Stores a profile with the entries it cites (replacing an older one under `key`). A
    /// cited entry that no longer exists makes the profile stale at once: it is not stored.
    #[allow(clippy::too_many_arguments)]
    pub fn put_profile(
        &mut self,
        key: &str,
        kind: &str,
        query: Option<&str>,
        model: &str,
        body: &str,
        watermark: Option<i64>,
        cited: &[i64],
    ) -> StoreResult<bool> {
        let path = self.path.clone();
        let tx = self.conn.transaction().map_err(|e| sqlite(&path, e))?;
        tx.execute("DELETE FROM profiles WHERE key = ?1", [key])
            .map_err(|e| sqlite(&path, e))?;
        tx.execute(
            "DELETE FROM profile_citations WHERE profile_key = ?1",
            [key],
        )
        .map_err(|e| sqlite(&path, e))?;
        for id in cited {
            let exists: bool = tx
                .query_row(
                    "SELECT EXISTS(SELECT 1 FROM sessions WHERE id = ?1)",
                    [id],
                    |r| r.get(0),
                )
                .map_err(|e| sqlite(&path, e))?;
            if !exists {
                tx.commit().map_err(|e| sqlite(&path, e))?;
                return Ok(false);
            }
        }
        tx.execute(
            "INSERT INTO profiles (key, kind, query, model, body, watermark, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                key,
                kind,
                query,
                model,
                body,
                watermark,
                Utc::now().timestamp_micros()
            ],
        )
        .map_err(|e| sqlite(&path, e))?;
        for id in cited {
            tx.execute(
                "INSERT OR IGNORE INTO profile_citations (profile_key, session_id) VALUES (?1, ?2)",
                params![key, id],
            )
            .map_err(|e| sqlite(&path, e))?;
        }
        tx.commit().map_err(|e| sqlite(&path, e))?;
        Ok(true)
    }

    /// The highest entry id (0 when empty).
    pub fn max_entry_id(&self) -> StoreResult<i64> {
        self.conn
            .query_row("SELECT COALESCE(MAX(id), 0) FROM sessions", [], |r| {
                r.get(0)
            })
            .map_err(|e| self.err(e))
    }

    /// Up to `limit` session ids above `after`, spread evenly over that range (for digests of
    /// a large history).
    pub fn spread_ids(&self, after: i64, limit: usize) -> StoreResult<Vec<i64>> {
        let mut stmt = self
            .conn
            .prepare("SELECT id FROM sessions WHERE id > ?1 ORDER BY id")
            .map_err(|e| self.err(e))?;
        let all: Vec<i64> = stmt
            .query_map([after], |r| r.get(0))
            .map_err(|e| self.err(e))?
            .collect::<Result<_, _>>()
            .map_err(|e| self.err(e))?;
        if all.len() <= limit {
            return Ok(all);
        }
        let step = all.len() as f64 / limit as f64;
        Ok((0..limit)
            .map(|i| all[(i as f64 * step) as usize])
            .collect())
    }
}

/// One row handed out by [`Store::for_each_vector`].
pub struct VectorRow<'a> {
    pub session_id: i64,
    pub scale: f32,
    pub values: &'a [u8],
    pub source: HistorySource,
    pub kind: Kind,
    pub started_at: Option<i64>,
}

fn selector_sql(selector: &ForgetSelector) -> (String, Vec<rusqlite::types::Value>) {
    use rusqlite::types::Value;
    let range = |since: &Option<DateTime<Utc>>,
                 until: &Option<DateTime<Utc>>,
                 clauses: &mut Vec<String>,
                 args: &mut Vec<Value>| {
        if let Some(s) = since {
            args.push(Value::Integer(s.timestamp_micros()));
            clauses.push(format!("started_at >= ?{}", args.len()));
        }
        if let Some(u) = until {
            args.push(Value::Integer(u.timestamp_micros()));
            clauses.push(format!("started_at < ?{}", args.len()));
        }
    };
    let mut clauses = Vec::new();
    let mut args = Vec::new();
    match selector {
        ForgetSelector::Entry(id) => {
            args.push(Value::Integer(*id));
            clauses.push("id = ?1".to_string());
        }
        ForgetSelector::Source {
            source,
            since,
            until,
        } => {
            args.push(Value::Text(source.as_str().to_string()));
            clauses.push("source = ?1".to_string());
            range(since, until, &mut clauses, &mut args);
        }
        ForgetSelector::Range { since, until } => {
            range(since, until, &mut clauses, &mut args);
        }
        ForgetSelector::All => {}
    }
    if clauses.is_empty() {
        ("1 = 1".into(), args)
    } else {
        (clauses.join(" AND "), args)
    }
}

fn sqlite(path: &Path, source: rusqlite::Error) -> StoreError {
    let path = path.to_path_buf();
    match source.sqlite_error_code() {
        Some(rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase) => {
            StoreError::Damaged {
                path,
                error: source,
            }
        }
        _ => StoreError::Sqlite { path, source },
    }
}

/// A write transaction over the store. Dropping it without [`commit`](Self::commit) rolls
/// everything back.
pub struct Writer<'a> {
    tx: Transaction<'a>,
    path: PathBuf,
    now: i64,
}

impl Writer<'_> {
    /// Inserts an entry unless its content is already stored.
    pub fn insert_entry(&mut self, s: &Entry, hash: &str, origin: &str) -> StoreResult<Inserted> {
        let path = &self.path;
        let mut replaced = None;
        if let Some(ext) = &s.external_id {
            let existing: Option<(i64, String)> = self
                .tx
                .prepare_cached(
                    "SELECT id, content_hash FROM sessions WHERE source = ?1 AND external_id = ?2",
                )
                .and_then(|mut st| {
                    st.query_row(params![s.source.as_str(), ext], |r| {
                        Ok((r.get(0)?, r.get(1)?))
                    })
                    .optional()
                })
                .map_err(|e| sqlite(path, e))?;
            if let Some((old, old_hash)) = existing {
                if old_hash == hash {
                    return Ok(Inserted::Duplicate);
                }
                self.tx
                    .execute("DELETE FROM sessions WHERE id = ?1", [old])
                    .map_err(|e| sqlite(path, e))?;
                replaced = Some(old);
            }
        }
        let changed = self
            .tx
            .prepare_cached(
                "INSERT OR IGNORE INTO sessions
                   (source, kind, title, url, external_id, started_at, time_note, content_hash,
                    origin, imported_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            )
            .and_then(|mut st| {
                st.execute(params![
                    s.source.as_str(),
                    s.kind.as_str(),
                    s.title,
                    s.url,
                    s.external_id,
                    micros(s.started_at),
                    s.time_note,
                    hash,
                    origin,
                    self.now,
                ])
            })
            .map_err(|e| sqlite(path, e))?;
        if changed == 0 {
            return Ok(Inserted::Duplicate);
        }
        let id = self.tx.last_insert_rowid();
        {
            let mut st = self
                .tx
                .prepare_cached(
                    "INSERT INTO turns (session_id, idx, role, text, at) VALUES (?1, ?2, ?3, ?4, ?5)",
                )
                .map_err(|e| sqlite(path, e))?;
            for (i, t) in s.turns.iter().enumerate() {
                st.execute(params![id, i as i64, t.role.as_str(), t.text, micros(t.at)])
                    .map_err(|e| sqlite(path, e))?;
            }
        }
        Ok(match replaced {
            Some(old) => Inserted::Replaced { old, new: id },
            None => Inserted::Added(id),
        })
    }

    /// Inserts a signal unless the same text is already stored. Returns whether it was new.
    pub fn insert_signal(&mut self, s: &Signal, origin: &str) -> StoreResult<bool> {
        let n = self
            .tx
            .prepare_cached(
                "INSERT OR IGNORE INTO signals (source, kind, text, at, content_hash, origin,
                   imported_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )
            .and_then(|mut st| {
                st.execute(params![
                    s.source.as_str(),
                    s.kind.as_str(),
                    s.text,
                    micros(s.at),
                    s.content_hash(),
                    origin,
                    self.now
                ])
            })
            .map_err(|e| sqlite(&self.path, e))?;
        Ok(n > 0)
    }

    pub fn commit(self) -> StoreResult<()> {
        let path = self.path;
        self.tx.commit().map_err(|e| sqlite(&path, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chat(ext: &str, text: &str) -> Entry {
        Entry {
            source: HistorySource::Chatgpt,
            kind: Kind::Chat,
            title: "t".into(),
            url: None,
            external_id: Some(ext.into()),
            started_at: DateTime::from_timestamp(1_700_000_000, 0),
            time_note: None,
            turns: vec![Turn::user(text, None), Turn::assistant("answer", None)],
        }
    }

    #[test]
    fn insert_dedup_replace_and_forget() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("h.sqlite")).unwrap();
        let a = chat("c1", "hello");
        let mut w = store.write().unwrap();
        let first = w.insert_entry(&a, &a.content_hash(), "f").unwrap();
        let Inserted::Added(id) = first else {
            panic!("{first:?}")
        };
        assert_eq!(
            w.insert_entry(&a, &a.content_hash(), "f").unwrap(),
            Inserted::Duplicate
        );
        let grown = chat("c1", "hello again");
        let r = w.insert_entry(&grown, &grown.content_hash(), "f").unwrap();
        assert!(
            matches!(r, Inserted::Replaced { old, .. } if old == id),
            "{r:?}"
        );
        w.commit().unwrap();
        assert_eq!(store.count().unwrap(), 1);
        assert!(store.get(id).unwrap().is_none());
        let all = store.forget(&ForgetSelector::All).unwrap();
        assert_eq!(all.len(), 1);
        assert_eq!(store.count().unwrap(), 0);
        let turns: i64 = store
            .conn
            .query_row("SELECT COUNT(*) FROM turns", [], |r| r.get(0))
            .unwrap();
        assert_eq!(turns, 0, "turns cascade with their session");
    }

    #[test]
    fn rollback_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("h.sqlite")).unwrap();
        {
            let mut w = store.write().unwrap();
            let a = chat("c1", "hello");
            w.insert_entry(&a, &a.content_hash(), "f").unwrap();
        }
        assert_eq!(store.count().unwrap(), 0);
    }

    #[test]
    fn newer_schema_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.sqlite");
        drop(Store::open(&path).unwrap());
        let conn = Connection::open(&path).unwrap();
        conn.pragma_update(None, "user_version", 99).unwrap();
        drop(conn);
        let err = Store::open(&path).err().unwrap().to_string();
        assert!(err.contains("newer"), "{err}");
    }

    /// A damaged file is not a riddle: the error names it and says what the user can do.
    #[test]
    fn a_damaged_database_says_how_to_recover() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.sqlite");
        std::fs::write(
            &path,
            "not a database, only text that took its place\n".repeat(200),
        )
        .unwrap();
        let err = Store::open(&path)
            .err()
            .expect("a damaged file does not open");
        assert!(matches!(err, StoreError::Damaged { .. }), "{err:?}");
        let message = err.to_string();
        assert!(message.contains(&path.display().to_string()), "{message}");
        assert!(
            message.contains("import your history exports again"),
            "{message}"
        );
        // One statement of the cause, no chain that repeats it.
        assert!(std::error::Error::source(&err).is_none());
    }
}
