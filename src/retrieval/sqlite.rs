//! Opening a retrieval store's SQLite database: one set of pragmas and one migration runner
//! for history and documents alike.
//!
//! WAL mode (readers never block a writer), foreign keys (a session's turns and vectors, a
//! document's chunks, go with it), `secure_delete` (deleted text is overwritten in the file
//! rather than left in free pages) and numbered migrations recorded in `user_version`, each in
//! its own transaction, so a database is always at exactly one known version.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension};

/// How long a connection waits for another process's write lock before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a database could not be opened. Carries no path: each store wraps it in its own error,
/// which names the file.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("cannot create {}: {source}", dir.display())]
    CreateDir {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
    #[error(
        "schema version {found} is newer than this Rudder understands ({known}); upgrade Rudder"
    )]
    NewerSchema { found: i64, known: i64 },
}

/// A database kind: what logs call it and its migrations, oldest first. A released migration
/// is never edited; a schema change is a new one at the end.
pub struct Database {
    /// `history database`, `documents database`.
    pub label: &'static str,
    pub migrations: &'static [&'static str],
}

impl Database {
    /// Opens (creating the file and its folder if needed) and migrates the database at `path`.
    pub fn open(&self, path: &Path) -> Result<Connection, OpenError> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|source| OpenError::CreateDir {
                dir: dir.to_path_buf(),
                source,
            })?;
        }
        let mut conn = Connection::open(path)?;
        self.configure(&conn)?;
        self.migrate(&mut conn)?;
        Ok(conn)
    }

    fn configure(&self, conn: &Connection) -> Result<(), OpenError> {
        conn.busy_timeout(BUSY_TIMEOUT)?;
        let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            tracing::warn!(mode, "{} is not in WAL mode", self.label);
        }
        conn.execute_batch(
            "PRAGMA synchronous = NORMAL;
             PRAGMA foreign_keys = ON;
             PRAGMA secure_delete = ON;
             PRAGMA temp_store = MEMORY;
             PRAGMA cache_size = -65536;",
        )?;
        Ok(())
    }

    fn migrate(&self, conn: &mut Connection) -> Result<(), OpenError> {
        let found: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        let known = self.migrations.len() as i64;
        if found > known {
            return Err(OpenError::NewerSchema { found, known });
        }
        for (i, sql) in self.migrations.iter().enumerate().skip(found as usize) {
            let tx = conn.transaction()?;
            tx.execute_batch(sql)?;
            tx.pragma_update(None, "user_version", (i + 1) as i64)?;
            tx.commit()?;
            tracing::info!(version = i + 1, "{} migrated", self.label);
        }
        Ok(())
    }
}

/// A value from the `meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)` table every retrieval
/// store has.
pub fn meta(conn: &Connection, key: &str) -> rusqlite::Result<Option<String>> {
    conn.query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
        .optional()
}

/// Sets a value in the `meta` table.
pub fn set_meta(conn: &Connection, key: &str, value: &str) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (?1, ?2)
         ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        [key, value],
    )
    .map(|_| ())
}

/// Rewrites the database so deleted content is gone from the file and its write-ahead log,
/// and freed pages go back to the file system.
pub fn compact(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(
        "PRAGMA wal_checkpoint(TRUNCATE);
         VACUUM;
         PRAGMA wal_checkpoint(TRUNCATE);",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const DB: Database = Database {
        label: "test database",
        migrations: &[
            "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);",
            "CREATE TABLE t (x INTEGER);",
        ],
    };

    #[test]
    fn migrates_once_and_refuses_a_newer_schema() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/x.sqlite");
        let conn = DB.open(&path).unwrap();
        let version: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version, 2);
        set_meta(&conn, "k", "1").unwrap();
        set_meta(&conn, "k", "2").unwrap();
        assert_eq!(meta(&conn, "k").unwrap().as_deref(), Some("2"));
        assert_eq!(meta(&conn, "none").unwrap(), None);
        drop(conn);
        // Opening again runs nothing (the tables exist, a rerun would fail).
        let conn = DB.open(&path).unwrap();
        let fk: i64 = conn
            .query_row("PRAGMA foreign_keys", [], |r| r.get(0))
            .unwrap();
        assert_eq!(fk, 1);
        conn.pragma_update(None, "user_version", 9).unwrap();
        drop(conn);
        let err = DB.open(&path).unwrap_err();
        assert!(
            matches!(err, OpenError::NewerSchema { found: 9, known: 2 }),
            "{err}"
        );
        assert!(err.to_string().contains("newer"));
    }
}
