//! Opening a retrieval store's SQLite database: one set of pragmas and one migration runner
//! for history and documents alike.
//!
//! WAL mode (readers never block a writer), foreign keys (a session's turns and vectors, a
//! document's chunks, go with it), `secure_delete` (deleted text is overwritten in the file
//! rather than left in free pages) and numbered migrations recorded in `user_version`, each in
//! its own transaction, so a database is always at exactly one known version.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior};

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
        let mode = enable_wal(conn)?;
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
        let known = self.migrations.len() as i64;
        let version = |c: &Connection| -> rusqlite::Result<i64> {
            c.query_row("PRAGMA user_version", [], |r| r.get(0))
        };
        let found = version(conn)?;
        if found == known {
            return Ok(());
        }
        if found > known {
            return Err(OpenError::NewerSchema { found, known });
        }
        // Each migration under the write lock, with the version read again inside it: a second
        // process opening a new data directory at the same moment (the window and an import)
        // waits here and then finds the work done, instead of running it twice.
        loop {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let found = version(&tx)?;
            if found > known {
                return Err(OpenError::NewerSchema { found, known });
            }
            let Some(sql) = self.migrations.get(found as usize) else {
                return Ok(());
            };
            tx.execute_batch(sql)?;
            tx.pragma_update(None, "user_version", found + 1)?;
            tx.commit()?;
            tracing::info!(version = found + 1, "{} migrated", self.label);
        }
    }
}

/// Switches the file to WAL unless an earlier opener already did, and returns the journal mode.
/// The switch needs an exclusive lock, which SQLite refuses with `SQLITE_BUSY` at once rather
/// than through the busy handler, so when several processes open a new file together the
/// others wait here.
fn enable_wal(conn: &Connection) -> rusqlite::Result<String> {
    let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
    loop {
        let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
        if mode.eq_ignore_ascii_case("wal") {
            return Ok(mode);
        }
        match conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0)) {
            Ok(mode) => return Ok(mode),
            Err(e)
                if matches!(
                    e.sqlite_error_code(),
                    Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
                ) && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => return Err(e),
        }
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

    /// Two processes that open a new data directory together (the window and an import, say)
    /// both find version 0; the second must wait for the first's migration, not run it again
    /// ("table already exists").
    #[test]
    fn openers_of_a_new_database_migrate_it_once() {
        const OPENERS: usize = 3;
        for round in 0..20 {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join(format!("new-{round}.sqlite"));
            let start = std::sync::Arc::new(std::sync::Barrier::new(OPENERS));
            let openers: Vec<_> = (0..OPENERS)
                .map(|_| {
                    let (path, start) = (path.clone(), start.clone());
                    std::thread::spawn(move || {
                        start.wait();
                        DB.open(&path).map(|_| ()).map_err(|e| e.to_string())
                    })
                })
                .collect();
            for opener in openers {
                let opened = opener.join().unwrap();
                assert!(opened.is_ok(), "round {round}: {opened:?}");
            }
            let conn = Connection::open(&path).unwrap();
            let version: i64 = conn
                .query_row("PRAGMA user_version", [], |r| r.get(0))
                .unwrap();
            assert_eq!(version, 2, "round {round}");
        }
    }
}
