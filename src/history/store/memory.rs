//! The memory tables: statements about the person with the entries they rest on, and which
//! entries have been read ([`crate::profile::memory`] decides what to store).

use chrono::{DateTime, Utc};
use rusqlite::{params, OptionalExtension};
use serde::Serialize;

use super::{from_micros, sqlite, Store, StoreResult};

/// A statement to remember, read from one entry.
#[derive(Debug, Clone, PartialEq)]
pub struct NewMemory {
    /// The statement it is stored under: its own key, or an equivalent statement's to merge
    /// with.
    pub key: String,
    pub text: String,
    /// `constraint`, `background`, `preference` or `presentation`.
    pub kind: String,
    pub session: i64,
}

/// A remembered statement with the entries it rests on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemoryRow {
    pub id: i64,
    pub key: String,
    pub text: String,
    pub kind: String,
    pub model: String,
    /// The entries it was read from, oldest first, with their sources.
    pub sessions: Vec<(i64, String)>,
    /// When the earliest and the latest of those entries started (when known).
    pub first_seen: Option<DateTime<Utc>>,
    pub last_seen: Option<DateTime<Utc>>,
}

/// What storing one read did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Remembering {
    /// New statements.
    pub added: usize,
    /// Statements that gained an entry.
    pub strengthened: usize,
}

impl Store {
    /// Up to `limit` entries not yet read into memory, oldest first (reading in time order
    /// keeps a burst of related searches together).
    pub fn unread_for_memory(&self, limit: usize) -> StoreResult<Vec<i64>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT id FROM sessions
                 WHERE NOT EXISTS (SELECT 1 FROM memory_read WHERE session_id = sessions.id)
                 ORDER BY started_at IS NULL, started_at, id LIMIT ?1",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([limit as i64], |r| r.get(0))
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    /// How many entries are not yet read into memory.
    pub fn count_unread_for_memory(&self) -> StoreResult<u64> {
        self.conn
            .query_row(
                "SELECT COUNT(*) FROM sessions
                 WHERE NOT EXISTS (SELECT 1 FROM memory_read WHERE session_id = sessions.id)",
                [],
                |r| r.get::<_, i64>(0),
            )
            .map(|n| n as u64)
            .map_err(|e| self.err(e))
    }

    /// Stores what reading `read` found, in one transaction: the entries are marked read
    /// (`skipped` ones as passed over by the cheap check) and each statement is added or, when
    /// its key is already there, gains the entry. An entry forgotten meanwhile is left out,
    /// with whatever was read from it.
    pub fn remember(
        &mut self,
        model: &str,
        read: &[i64],
        skipped: &[i64],
        found: &[NewMemory],
    ) -> StoreResult<Remembering> {
        let path = self.path.clone();
        let err = |e| sqlite(&path, e);
        let tx = self.conn.transaction().map_err(err)?;
        let mut out = Remembering::default();
        let now = Utc::now().timestamp_micros();
        let marked = read
            .iter()
            .map(|id| (id, 1))
            .chain(skipped.iter().map(|id| (id, 0)));
        for (id, by_model) in marked {
            tx.execute(
                "INSERT OR IGNORE INTO memory_read (session_id, by_model, model)
                 SELECT id, ?2, ?3 FROM sessions WHERE id = ?1",
                params![id, by_model, model],
            )
            .map_err(err)?;
        }
        for m in found {
            let exists: bool = tx
                .query_row(
                    "SELECT EXISTS(SELECT 1 FROM sessions WHERE id = ?1)",
                    [m.session],
                    |r| r.get(0),
                )
                .map_err(err)?;
            if !exists {
                continue;
            }
            let id: Option<i64> = tx
                .query_row(
                    "SELECT id FROM memory_statements WHERE key = ?1",
                    [&m.key],
                    |r| r.get(0),
                )
                .optional()
                .map_err(err)?;
            let id = match id {
                Some(id) => {
                    let added = tx
                        .execute(
                            "INSERT OR IGNORE INTO memory_sources (statement_id, session_id)
                             VALUES (?1, ?2)",
                            params![id, m.session],
                        )
                        .map_err(err)?;
                    out.strengthened += added;
                    continue;
                }
                None => {
                    tx.execute(
                        "INSERT INTO memory_statements (key, text, kind, model, created_at)
                         VALUES (?1, ?2, ?3, ?4, ?5)",
                        params![m.key, m.text, m.kind, model, now],
                    )
                    .map_err(err)?;
                    out.added += 1;
                    tx.last_insert_rowid()
                }
            };
            tx.execute(
                "INSERT INTO memory_sources (statement_id, session_id) VALUES (?1, ?2)",
                params![id, m.session],
            )
            .map_err(err)?;
        }
        tx.commit().map_err(err)?;
        Ok(out)
    }

    /// Every remembered statement, the best supported first (most entries, then the most
    /// recently seen).
    pub fn memory(&self) -> StoreResult<Vec<MemoryRow>> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT m.id, m.key, m.text, m.kind, m.model, s.id, s.source, s.started_at
                 FROM memory_statements m
                 JOIN memory_sources ms ON ms.statement_id = m.id
                 JOIN sessions s ON s.id = ms.session_id
                 ORDER BY m.id, s.started_at, s.id",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, i64>(5)?,
                    r.get::<_, String>(6)?,
                    r.get::<_, Option<i64>>(7)?,
                ))
            })
            .map_err(|e| self.err(e))?;
        let mut out: Vec<MemoryRow> = Vec::new();
        for row in rows {
            let (id, key, text, kind, model, session, source, started) =
                row.map_err(|e| self.err(e))?;
            let started = from_micros(started);
            match out.last_mut() {
                Some(last) if last.id == id => {
                    last.sessions.push((session, source));
                    last.first_seen = last.first_seen.or(started);
                    last.last_seen = started.or(last.last_seen);
                }
                _ => out.push(MemoryRow {
                    id,
                    key,
                    text,
                    kind,
                    model,
                    sessions: vec![(session, source)],
                    first_seen: started,
                    last_seen: started,
                }),
            }
        }
        out.sort_by(|a, b| {
            b.sessions
                .len()
                .cmp(&a.sessions.len())
                .then(b.last_seen.cmp(&a.last_seen))
                .then(a.id.cmp(&b.id))
        });
        Ok(out)
    }

    /// Changes whenever the memory does (a statement added or strengthened, an entry read or
    /// forgotten): part of the query-profile cache key.
    pub fn memory_version(&self) -> StoreResult<String> {
        self.conn
            .query_row(
                "SELECT (SELECT COUNT(*) FROM memory_statements),
                        (SELECT COALESCE(MAX(id), 0) FROM memory_statements),
                        (SELECT COUNT(*) FROM memory_sources),
                        (SELECT COUNT(*) FROM memory_read)",
                [],
                |r| {
                    Ok(format!(
                        "{}:{}:{}:{}",
                        r.get::<_, i64>(0)?,
                        r.get::<_, i64>(1)?,
                        r.get::<_, i64>(2)?,
                        r.get::<_, i64>(3)?
                    ))
                },
            )
            .map_err(|e| self.err(e))
    }

    /// Deletes one remembered statement (its sources go with it); false when there was none.
    pub fn forget_memory(&self, key: &str) -> StoreResult<bool> {
        self.conn
            .execute("DELETE FROM memory_statements WHERE key = ?1", [key])
            .map(|n| n > 0)
            .map_err(|e| self.err(e))
    }
}
