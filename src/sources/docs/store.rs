//! The SQLite store of the document library: roots (what the user added), documents, their
//! chunks, and the chunks' int8 embeddings. It is the source of truth; the Tantivy index and
//! the in-memory vectors are rebuilt from it.
//!
//! Opening, pragmas and migrations are the shared [`crate::retrieval::sqlite`], as for the
//! history store; this module holds the library's tables and queries.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use rusqlite::{params, Connection, OptionalExtension, Transaction};
use serde::Serialize;

use super::extract::Format;
use super::DocsError;
use crate::retrieval::sqlite::{self as db, Database, OpenError};
use crate::retrieval::QuantizedVector;

/// The documents database and its numbered migrations.
const DATABASE: Database = Database {
    label: "documents database",
    migrations: MIGRATIONS,
};

const MIGRATIONS: &[&str] = &[r#"
CREATE TABLE roots (
    path       TEXT PRIMARY KEY,    -- absolute path of a folder, a file, or a corpus file
    kind       TEXT NOT NULL,       -- folder | file | corpus
    name       TEXT,                -- corpus name
    sha256     TEXT,                -- corpus file digest when it was indexed
    added_at   INTEGER NOT NULL,    -- microseconds since the Unix epoch
    updated_at INTEGER NOT NULL
);

CREATE TABLE documents (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    path        TEXT NOT NULL UNIQUE, -- absolute path, or <corpus file>#<article title>
    root        TEXT NOT NULL,        -- the root it was indexed under
    format      TEXT NOT NULL,
    title       TEXT NOT NULL,
    description TEXT,                 -- corpus: description and topic
    url         TEXT,
    mtime_ns    INTEGER NOT NULL,
    size        INTEGER NOT NULL,
    sha256      TEXT NOT NULL,
    pages       INTEGER,
    indexed_at  INTEGER NOT NULL
);
CREATE INDEX documents_by_root ON documents(root);

CREATE TABLE chunks (
    id     INTEGER PRIMARY KEY AUTOINCREMENT,
    doc_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    idx    INTEGER NOT NULL,      -- 0-based position in the document
    page   INTEGER,               -- 1-based, for PDFs
    text   TEXT NOT NULL,
    UNIQUE (doc_id, idx)
);

-- One embedding per chunk (of the model that made it), int8 with a per-vector scale.
CREATE TABLE chunk_vectors (
    chunk_id INTEGER PRIMARY KEY REFERENCES chunks(id) ON DELETE CASCADE,
    model    TEXT NOT NULL,
    scale    REAL NOT NULL,
    vector   BLOB NOT NULL
);
CREATE INDEX chunk_vectors_by_model ON chunk_vectors(model);

CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"#];

/// The change-detection fields of a stored document.
#[derive(Debug, Clone)]
pub(crate) struct DocRow {
    pub id: i64,
    pub path: String,
    pub size: u64,
    pub mtime_ns: i64,
    pub sha256: String,
}

/// A document to insert.
pub(crate) struct NewDocument<'a> {
    pub path: &'a str,
    pub root: &'a str,
    pub format: Format,
    pub title: &'a str,
    pub description: Option<&'a str>,
    pub url: Option<&'a str>,
    pub mtime_ns: i64,
    pub size: u64,
    pub sha256: &'a str,
    pub pages: Option<u32>,
}

/// A chunk to insert.
pub(crate) struct NewChunk {
    pub page: Option<u32>,
    pub text: String,
}

/// A chunk with what a citation needs from its document.
#[derive(Debug, Clone)]
pub struct ChunkRow {
    pub id: i64,
    pub doc_id: i64,
    pub idx: u32,
    pub page: Option<u32>,
    pub text: String,
    pub path: String,
    pub title: String,
    pub description: Option<String>,
    pub url: Option<String>,
    /// The root the document was indexed under, and its kind (`folder`, `file`, `corpus`).
    pub root: String,
    pub root_kind: Option<String>,
}

impl ChunkRow {
    /// How a shared report names the document: the path relative to the folder the user added
    /// (starting with that folder's name), the file name for a file added alone, the article
    /// title for a corpus. Never the absolute path: a report is shared, and the path would show
    /// the user's home folder and Rudder's internal files.
    pub fn shared_name(&self) -> String {
        match self.root_kind.as_deref() {
            Some("corpus") => self.title.clone(),
            Some("folder") => {
                let root = std::path::Path::new(&self.root);
                let folder = root
                    .file_name()
                    .map(|f| f.to_string_lossy().into_owned())
                    .unwrap_or_default();
                match std::path::Path::new(&self.path).strip_prefix(root) {
                    Ok(rel) if folder.is_empty() => rel.to_string_lossy().into_owned(),
                    Ok(rel) => format!("{folder}/{}", rel.to_string_lossy()),
                    Err(_) => crate::sources::file_name_of(&self.path),
                }
            }
            _ => crate::sources::file_name_of(&self.path),
        }
    }
}

/// One row of the chunk queries above (`SELECT c.id, c.doc_id, c.idx, c.page, c.text, d.path,
/// d.title, d.description, d.url, d.root, rt.kind`).
fn chunk_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<ChunkRow> {
    Ok(ChunkRow {
        id: r.get(0)?,
        doc_id: r.get(1)?,
        idx: r.get::<_, i64>(2)? as u32,
        page: r.get::<_, Option<i64>>(3)?.map(|p| p as u32),
        text: r.get(4)?,
        path: r.get(5)?,
        title: r.get(6)?,
        description: r.get(7)?,
        url: r.get(8)?,
        root: r.get(9)?,
        root_kind: r.get(10)?,
    })
}

/// One document of the library, for listings.
#[derive(Debug, Clone, Serialize)]
pub struct DocumentInfo {
    pub id: i64,
    pub path: String,
    pub root: String,
    pub format: Format,
    pub title: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pages: Option<u32>,
    pub size: u64,
    pub modified: Option<DateTime<Utc>>,
    pub indexed_at: Option<DateTime<Utc>>,
    pub chunks: u64,
    pub embedded_chunks: u64,
}

/// What the user added: a folder, a file, or a corpus.
#[derive(Debug, Clone, Serialize)]
pub struct RootInfo {
    pub path: String,
    /// `folder`, `file` or `corpus`.
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    pub added_at: Option<DateTime<Utc>>,
    pub updated_at: Option<DateTime<Utc>>,
    pub documents: u64,
    pub chunks: u64,
}

/// Counts for `rudder docs stats`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct StoreCounts {
    pub roots: u64,
    pub documents: u64,
    pub by_format: std::collections::BTreeMap<String, u64>,
    pub chunks: u64,
    pub pages: u64,
    /// Chunks with an embedding, by embedding model.
    pub embedded: std::collections::BTreeMap<String, u64>,
    pub corpora: Vec<String>,
}

pub(crate) struct Store {
    conn: Connection,
    path: PathBuf,
}

fn now_micros() -> i64 {
    Utc::now().timestamp_micros()
}

fn from_micros(us: Option<i64>) -> Option<DateTime<Utc>> {
    us.and_then(DateTime::from_timestamp_micros)
}

/// The smallest string greater than every string that starts with `prefix`'s last character
/// replaced by its successor: `[prefix, upper)` is exactly the strings starting with `prefix`
/// when the prefix ends in an ASCII character (it always ends in `/` or `#` here).
fn prefix_upper(prefix: &str) -> String {
    let mut upper = prefix.to_string();
    if let Some(last) = upper.pop() {
        upper.push(char::from_u32(last as u32 + 1).unwrap_or(char::MAX));
    }
    upper
}

impl Store {
    pub fn open(path: &Path) -> Result<Self, DocsError> {
        let conn = DATABASE.open(path).map_err(|e| match e {
            OpenError::CreateDir { dir, source } => DocsError::io(&dir, source),
            OpenError::Sqlite(e) => DocsError::sqlite(path, e),
            e @ OpenError::NewerSchema { .. } => DocsError::Corrupt {
                path: path.to_path_buf(),
                message: e.to_string(),
            },
        })?;
        Ok(Self {
            conn,
            path: path.to_path_buf(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn err(&self, e: rusqlite::Error) -> DocsError {
        DocsError::sqlite(&self.path, e)
    }

    /// Starts a write transaction (one per file; one per batch of corpus articles).
    pub fn write(&mut self) -> Result<Writer<'_>, DocsError> {
        let path = self.path.clone();
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(|e| DocsError::sqlite(&path, e))?;
        Ok(Writer { tx, path })
    }

    fn doc_rows(&self, sql: &str, args: impl rusqlite::Params) -> Result<Vec<DocRow>, DocsError> {
        let mut stmt = self.conn.prepare_cached(sql).map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(args, |r| {
                Ok(DocRow {
                    id: r.get(0)?,
                    path: r.get(1)?,
                    size: r.get::<_, i64>(2)? as u64,
                    mtime_ns: r.get(3)?,
                    sha256: r.get(4)?,
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    /// Documents read from files at `path` or below it (corpus articles excluded).
    pub fn file_docs_under(&self, path: &str) -> Result<Vec<DocRow>, DocsError> {
        let dir = format!("{}/", path.trim_end_matches('/'));
        self.doc_rows(
            "SELECT id, path, size, mtime_ns, sha256 FROM documents
             WHERE format != 'corpus' AND (path = ?1 OR (path >= ?2 AND path < ?3))",
            params![path, dir, prefix_upper(&dir)],
        )
    }

    /// The articles of the corpus file at `path`.
    pub fn corpus_docs(&self, path: &str) -> Result<Vec<DocRow>, DocsError> {
        let prefix = format!("{path}#");
        self.doc_rows(
            "SELECT id, path, size, mtime_ns, sha256 FROM documents
             WHERE format = 'corpus' AND path >= ?1 AND path < ?2",
            params![prefix, prefix_upper(&prefix)],
        )
    }

    /// Records a new size and mtime for a document whose content did not change.
    pub fn touch(&self, id: i64, size: u64, mtime_ns: i64) -> Result<(), DocsError> {
        self.conn
            .execute(
                "UPDATE documents SET size = ?2, mtime_ns = ?3 WHERE id = ?1",
                params![id, size as i64, mtime_ns],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Chunks by id, with their documents; ids that are gone are left out.
    pub fn chunk_rows(&self, ids: &[i64]) -> Result<Vec<ChunkRow>, DocsError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT c.id, c.doc_id, c.idx, c.page, c.text, d.path, d.title, d.description, d.url,
                        d.root, rt.kind
                 FROM chunks c JOIN documents d ON d.id = c.doc_id
                 LEFT JOIN roots rt ON rt.path = d.root WHERE c.id = ?1",
            )
            .map_err(|e| self.err(e))?;
        let mut out = Vec::with_capacity(ids.len());
        for &id in ids {
            let row = stmt
                .query_row([id], chunk_row)
                .optional()
                .map_err(|e| self.err(e))?;
            out.extend(row);
        }
        Ok(out)
    }

    /// Chunk `idx` (0-based) of the document stored at `path`, as a citation names it.
    pub fn chunk_at(&self, path: &str, idx: u32) -> Result<Option<ChunkRow>, DocsError> {
        let id: Option<i64> = self
            .conn
            .query_row(
                "SELECT c.id FROM chunks c JOIN documents d ON d.id = c.doc_id
                 WHERE d.path = ?1 AND c.idx = ?2",
                rusqlite::params![path, idx as i64],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.err(e))?;
        Ok(match id {
            Some(id) => self.chunk_rows(&[id])?.pop(),
            None => None,
        })
    }

    /// Visits every chunk with its document's title and description (to rebuild the index).
    pub fn for_each_chunk(&self, mut f: impl FnMut(&ChunkRow)) -> Result<(), DocsError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT c.id, c.doc_id, c.idx, c.page, c.text, d.path, d.title, d.description, d.url,
                        d.root, rt.kind
                 FROM chunks c JOIN documents d ON d.id = c.doc_id
                 LEFT JOIN roots rt ON rt.path = d.root ORDER BY c.id",
            )
            .map_err(|e| self.err(e))?;
        let mut rows = stmt.query([]).map_err(|e| self.err(e))?;
        while let Some(r) = rows.next().map_err(|e| self.err(e))? {
            let row = chunk_row(r).map_err(|e| self.err(e))?;
            f(&row);
        }
        Ok(())
    }

    fn count(&self, sql: &str, args: impl rusqlite::Params) -> Result<u64, DocsError> {
        self.conn
            .query_row(sql, args, |r| r.get::<_, i64>(0))
            .map(|n| n as u64)
            .map_err(|e| self.err(e))
    }

    pub fn count_chunks(&self) -> Result<u64, DocsError> {
        self.count("SELECT count(*) FROM chunks", [])
    }

    /// Chunks with no embedding from `model`, after chunk id `after`, in id order.
    pub fn pending_chunks(
        &self,
        model: &str,
        after: i64,
        limit: usize,
    ) -> Result<Vec<ChunkRow>, DocsError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT c.id, c.doc_id, c.idx, c.page, c.text, d.path, d.title, d.description, d.url,
                        d.root, rt.kind
                 FROM chunks c JOIN documents d ON d.id = c.doc_id
                 LEFT JOIN roots rt ON rt.path = d.root
                 LEFT JOIN chunk_vectors v ON v.chunk_id = c.id AND v.model = ?1
                 WHERE v.chunk_id IS NULL AND c.id > ?2 ORDER BY c.id LIMIT ?3",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![model, after, limit as i64], chunk_row)
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    pub fn count_pending(&self, model: &str) -> Result<u64, DocsError> {
        self.count(
            "SELECT count(*) FROM chunks c
             LEFT JOIN chunk_vectors v ON v.chunk_id = c.id AND v.model = ?1
             WHERE v.chunk_id IS NULL",
            [model],
        )
    }

    /// Stores embeddings (replacing another model's); chunks deleted meanwhile are skipped.
    pub fn put_vectors(
        &mut self,
        model: &str,
        vectors: &[(i64, QuantizedVector)],
    ) -> Result<(), DocsError> {
        let path = self.path.clone();
        let tx = self
            .conn
            .transaction()
            .map_err(|e| DocsError::sqlite(&path, e))?;
        {
            let mut ins = tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO chunk_vectors (chunk_id, model, scale, vector)
                     SELECT ?1, ?2, ?3, ?4 WHERE EXISTS (SELECT 1 FROM chunks WHERE id = ?1)",
                )
                .map_err(|e| DocsError::sqlite(&path, e))?;
            for (id, v) in vectors {
                ins.execute(params![id, model, v.scale as f64, v.to_blob()])
                    .map_err(|e| DocsError::sqlite(&path, e))?;
            }
        }
        tx.commit().map_err(|e| DocsError::sqlite(&path, e))
    }

    /// Visits every vector of `model` as (chunk id, scale, int8 values).
    pub fn for_each_vector(
        &self,
        model: &str,
        mut f: impl FnMut(i64, f32, &[u8]),
    ) -> Result<(), DocsError> {
        let mut stmt = self
            .conn
            .prepare("SELECT chunk_id, scale, vector FROM chunk_vectors WHERE model = ?1 ORDER BY chunk_id")
            .map_err(|e| self.err(e))?;
        let mut rows = stmt.query([model]).map_err(|e| self.err(e))?;
        while let Some(r) = rows.next().map_err(|e| self.err(e))? {
            let id: i64 = r.get(0).map_err(|e| self.err(e))?;
            let scale: f64 = r.get(1).map_err(|e| self.err(e))?;
            let bytes = r
                .get_ref(2)
                .and_then(|v| v.as_blob().map_err(Into::into))
                .map_err(|e| self.err(e))?;
            f(id, scale as f32, bytes);
        }
        Ok(())
    }

    fn root_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RootInfo> {
        Ok(RootInfo {
            path: r.get(0)?,
            kind: r.get(1)?,
            name: r.get(2)?,
            sha256: r.get(3)?,
            added_at: from_micros(r.get(4)?),
            updated_at: from_micros(r.get(5)?),
            documents: r.get::<_, i64>(6)? as u64,
            chunks: r.get::<_, i64>(7)? as u64,
        })
    }

    /// Roots with the documents under them: a corpus's articles (`<path>#…`), or the files at
    /// or below a folder or file (whichever root they were first added under).
    const ROOT_SELECT: &'static str = "WITH bounds AS (
            SELECT r.*,
                   CASE WHEN r.kind = 'corpus' THEN r.path || '#' ELSE rtrim(r.path, '/') || '/' END AS lo,
                   CASE WHEN r.kind = 'corpus' THEN r.path || '$' ELSE rtrim(r.path, '/') || '0' END AS hi
            FROM roots r)
         SELECT r.path, r.kind, r.name, r.sha256, r.added_at, r.updated_at,
            (SELECT count(*) FROM documents d
             WHERE (d.path = r.path AND r.kind != 'corpus') OR (d.path >= r.lo AND d.path < r.hi)),
            (SELECT count(*) FROM chunks c JOIN documents d ON d.id = c.doc_id
             WHERE (d.path = r.path AND r.kind != 'corpus') OR (d.path >= r.lo AND d.path < r.hi))
         FROM bounds r";

    pub fn roots(&self) -> Result<Vec<RootInfo>, DocsError> {
        let mut stmt = self
            .conn
            .prepare(&format!(
                "{} ORDER BY r.kind = 'corpus', r.path",
                Self::ROOT_SELECT
            ))
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], Self::root_from_row)
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    pub fn root(&self, path: &str) -> Result<Option<RootInfo>, DocsError> {
        self.conn
            .query_row(
                &format!("{} WHERE r.path = ?1", Self::ROOT_SELECT),
                [path],
                Self::root_from_row,
            )
            .optional()
            .map_err(|e| self.err(e))
    }

    pub fn upsert_root(
        &self,
        path: &str,
        kind: &str,
        name: Option<&str>,
        sha256: Option<&str>,
    ) -> Result<(), DocsError> {
        let now = now_micros();
        self.conn
            .execute(
                "INSERT INTO roots (path, kind, name, sha256, added_at, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?5)
                 ON CONFLICT(path) DO UPDATE SET kind = ?2, name = ?3, sha256 = ?4, updated_at = ?5",
                params![path, kind, name, sha256, now],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Forgets one root (its documents are not touched).
    pub fn delete_root(&self, path: &str) -> Result<(), DocsError> {
        self.conn
            .execute("DELETE FROM roots WHERE path = ?1", [path])
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Deletes the roots at `path` or below it; returns how many.
    pub fn delete_roots_under(&self, path: &str) -> Result<u64, DocsError> {
        let dir = format!("{}/", path.trim_end_matches('/'));
        self.conn
            .execute(
                "DELETE FROM roots WHERE path = ?1 OR (path >= ?2 AND path < ?3)",
                params![path, dir, prefix_upper(&dir)],
            )
            .map(|n| n as u64)
            .map_err(|e| self.err(e))
    }

    /// Every document, by path, with chunk counts.
    pub fn documents(&self, include_corpora: bool) -> Result<Vec<DocumentInfo>, DocsError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT d.id, d.path, d.root, d.format, d.title, d.description, d.url, d.pages,
                        d.size, d.mtime_ns, d.indexed_at,
                        (SELECT count(*) FROM chunks c WHERE c.doc_id = d.id),
                        (SELECT count(*) FROM chunks c JOIN chunk_vectors v ON v.chunk_id = c.id
                         WHERE c.doc_id = d.id)
                 FROM documents d WHERE ?1 OR d.format != 'corpus' ORDER BY d.path",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([include_corpora], |r| {
                let format: String = r.get(3)?;
                Ok(DocumentInfo {
                    id: r.get(0)?,
                    path: r.get(1)?,
                    root: r.get(2)?,
                    format: format.parse().unwrap_or(Format::Text),
                    title: r.get(4)?,
                    description: r.get(5)?,
                    url: r.get(6)?,
                    pages: r.get::<_, Option<i64>>(7)?.map(|p| p as u32),
                    size: r.get::<_, i64>(8)? as u64,
                    modified: DateTime::from_timestamp_nanos(r.get::<_, i64>(9)?).into(),
                    indexed_at: from_micros(r.get(10)?),
                    chunks: r.get::<_, i64>(11)? as u64,
                    embedded_chunks: r.get::<_, i64>(12)? as u64,
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    pub fn counts(&self) -> Result<StoreCounts, DocsError> {
        let mut c = StoreCounts {
            roots: self.count("SELECT count(*) FROM roots", [])?,
            documents: self.count("SELECT count(*) FROM documents", [])?,
            chunks: self.count_chunks()?,
            pages: self.count("SELECT coalesce(sum(pages), 0) FROM documents", [])?,
            ..Default::default()
        };
        let mut stmt = self
            .conn
            .prepare("SELECT format, count(*) FROM documents GROUP BY format")
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
            .map_err(|e| self.err(e))?;
        for row in rows {
            let (format, n) = row.map_err(|e| self.err(e))?;
            c.by_format.insert(format, n as u64);
        }
        let mut stmt = self
            .conn
            .prepare("SELECT model, count(*) FROM chunk_vectors GROUP BY model")
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
            .map_err(|e| self.err(e))?;
        for row in rows {
            let (model, n) = row.map_err(|e| self.err(e))?;
            c.embedded.insert(model, n as u64);
        }
        let mut stmt = self
            .conn
            .prepare(
                "SELECT name FROM roots WHERE kind = 'corpus' AND name IS NOT NULL ORDER BY name",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], |r| r.get::<_, String>(0))
            .map_err(|e| self.err(e))?;
        for row in rows {
            c.corpora.push(row.map_err(|e| self.err(e))?);
        }
        Ok(c)
    }

    pub fn meta(&self, key: &str) -> Result<Option<String>, DocsError> {
        db::meta(&self.conn, key).map_err(|e| self.err(e))
    }

    pub fn set_meta(&self, key: &str, value: &str) -> Result<(), DocsError> {
        db::set_meta(&self.conn, key, value).map_err(|e| self.err(e))
    }

    /// Returns freed pages to the file system and folds the WAL back in.
    pub fn compact(&mut self) -> Result<(), DocsError> {
        db::compact(&self.conn).map_err(|e| self.err(e))
    }
}

/// One write transaction.
pub(crate) struct Writer<'a> {
    tx: Transaction<'a>,
    path: PathBuf,
}

impl Writer<'_> {
    fn err(&self, e: rusqlite::Error) -> DocsError {
        DocsError::sqlite(&self.path, e)
    }

    /// Deletes a document with its chunks and vectors.
    pub fn delete_document(&mut self, id: i64) -> Result<(), DocsError> {
        self.tx
            .execute("DELETE FROM documents WHERE id = ?1", [id])
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Inserts a document and its chunks; returns its id and the chunks' ids, in order.
    pub fn insert_document(
        &mut self,
        doc: &NewDocument<'_>,
        chunks: &[NewChunk],
    ) -> Result<(i64, Vec<i64>), DocsError> {
        self.tx
            .prepare_cached(
                "INSERT INTO documents (path, root, format, title, description, url, mtime_ns,
                                        size, sha256, pages, indexed_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            )
            .and_then(|mut s| {
                s.execute(params![
                    doc.path,
                    doc.root,
                    doc.format.as_str(),
                    doc.title,
                    doc.description,
                    doc.url,
                    doc.mtime_ns,
                    doc.size as i64,
                    doc.sha256,
                    doc.pages.map(i64::from),
                    now_micros(),
                ])
            })
            .map_err(|e| self.err(e))?;
        let id = self.tx.last_insert_rowid();
        let mut ids = Vec::with_capacity(chunks.len());
        let mut stmt = self
            .tx
            .prepare_cached("INSERT INTO chunks (doc_id, idx, page, text) VALUES (?1, ?2, ?3, ?4)")
            .map_err(|e| DocsError::sqlite(&self.path, e))?;
        for (i, c) in chunks.iter().enumerate() {
            stmt.execute(params![id, i as i64, c.page.map(i64::from), c.text])
                .map_err(|e| DocsError::sqlite(&self.path, e))?;
            ids.push(self.tx.last_insert_rowid());
        }
        Ok((id, ids))
    }

    pub fn commit(self) -> Result<(), DocsError> {
        let path = self.path;
        self.tx.commit().map_err(|e| DocsError::sqlite(&path, e))
    }
}
