//! The user's local documents as a research source: Markdown, text, HTML, PDF and DOCX files
//! (and installed offline corpora such as the Wikipedia summaries), cut into passages, indexed
//! for BM25 and — with an embedding model — for semantic search, and cited by file, chunk and
//! page.
//!
//! [`Library`] lives in `Paths::docs_dir()`: a SQLite store (the source of truth: roots,
//! documents, chunks, int8 chunk embeddings) and a Tantivy index over the chunks. Adding a
//! folder again only reads what changed: same size and mtime, or same content hash, is
//! unchanged; files gone from disk are dropped. Each file is one SQLite transaction, so a
//! document is stored whole or not at all, and a file that cannot be read is reported (naming
//! the file and the place in it) without stopping the others.
//!
//! [`DocsSource`] wraps a library as a [`Source`] named `documents`.

pub mod chunk;
pub mod corpus;
pub mod extract;
mod index;
mod store;
mod vectors;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::text::one_line;

pub use extract::Format;
pub use store::{DocumentInfo, RootInfo, StoreCounts};

use super::{CitationTarget, Evidence, Source, SourceError};
use crate::embed::{EmbedError, Embedder};
use crate::progress::Progress;
use crate::retrieval::{reciprocal_rank_fusion, IndexError, QuantizedVector};
use index::TextIndex;
pub use store::ChunkRow;
use store::{DocRow, NewChunk, NewDocument, Store};
use vectors::VectorIndex;

/// Errors from the document library. Messages name the file and, where it helps, the place in
/// it: `notes/x.pdf: page 3: …`.
#[derive(Debug, thiserror::Error)]
pub enum DocsError {
    #[error("documents database {path}: {source}")]
    Sqlite {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    #[error("documents database {path}: {message}")]
    Corrupt { path: PathBuf, message: String },
    #[error("documents index {path}: {message}")]
    Index { path: PathBuf, message: String },
    /// A file (or corpus article) that could not be read or indexed.
    #[error("{}", located(.file, .place.as_deref(), .message))]
    File {
        file: String,
        /// `page 3`, `line 4, byte 17`, `word/document.xml: byte 812`.
        place: Option<String>,
        message: String,
    },
    #[error("embedding documents: {0}")]
    Embed(#[from] EmbedError),
    #[error("{0} is not in the document library")]
    NotInLibrary(String),
}

impl DocsError {
    /// What fixes it, when the person can (see [`crate::remedy`]).
    pub fn remedy(&self) -> Option<crate::remedy::Remedy> {
        match self {
            DocsError::NotInLibrary(_) => Some(crate::remedy::Remedy::ListDocuments),
            DocsError::Embed(e) => e.remedy(),
            _ => None,
        }
    }
}

fn located(file: &str, place: Option<&str>, message: &str) -> String {
    match place {
        Some(p) => format!("{file}: {p}: {message}"),
        None => format!("{file}: {message}"),
    }
}

impl From<IndexError> for DocsError {
    fn from(e: IndexError) -> Self {
        Self::Index {
            path: e.path,
            message: e.message,
        }
    }
}

impl DocsError {
    pub(crate) fn sqlite(path: &Path, source: rusqlite::Error) -> Self {
        Self::Sqlite {
            path: path.to_path_buf(),
            source,
        }
    }

    pub(crate) fn io(path: &Path, e: std::io::Error) -> Self {
        let message = match e.kind() {
            std::io::ErrorKind::NotFound => "no such file or directory".to_string(),
            std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
            _ => e.to_string(),
        };
        Self::File {
            file: path.display().to_string(),
            place: None,
            message,
        }
    }

    fn file(file: &str, message: impl Into<String>) -> Self {
        Self::File {
            file: file.to_string(),
            place: None,
            message: message.into(),
        }
    }
}

/// What happened to one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FileStatus {
    Added,
    Updated,
    Unchanged,
    /// It was in the library and is no longer on disk.
    Removed,
    Failed,
}

impl FileStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            FileStatus::Added => "added",
            FileStatus::Updated => "updated",
            FileStatus::Unchanged => "unchanged",
            FileStatus::Removed => "removed",
            FileStatus::Failed => "failed",
        }
    }
}

/// One line of an [`AddReport`].
#[derive(Debug, Clone, Serialize)]
pub struct FileReport {
    pub file: String,
    pub status: FileStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub format: Option<Format>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Chunks indexed now (0 when unchanged, removed or failed).
    pub chunks: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pages: Option<u32>,
    /// Why it failed, naming the file and the place: `x.pdf: page 3: …`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl FileReport {
    fn new(file: &str, status: FileStatus) -> Self {
        Self {
            file: file.to_string(),
            status,
            format: None,
            title: None,
            chunks: 0,
            pages: None,
            reason: None,
        }
    }

    fn failed(file: &str, error: &DocsError) -> Self {
        Self {
            reason: Some(error.to_string()),
            ..Self::new(file, FileStatus::Failed)
        }
    }
}

/// The outcome of [`Library::add`] or [`Library::add_corpus_json`].
#[derive(Debug, Clone, Default, Serialize)]
pub struct AddReport {
    /// The folder, file or corpus file that was added.
    pub root: String,
    /// Every file seen, with what happened to it. For a corpus, only the articles that failed.
    pub files: Vec<FileReport>,
    pub added: u64,
    pub updated: u64,
    pub unchanged: u64,
    pub removed: u64,
    pub failed: u64,
    /// Chunks indexed by this call.
    pub chunks: u64,
    /// Chunks embedded by this call.
    pub embedded: u64,
    pub seconds: f64,
}

impl AddReport {
    /// Whether at least one document is in the library for this root now.
    pub fn indexed_anything(&self) -> bool {
        self.added + self.updated + self.unchanged > 0
    }

    fn push(&mut self, file: FileReport) {
        match file.status {
            FileStatus::Added => self.added += 1,
            FileStatus::Updated => self.updated += 1,
            FileStatus::Unchanged => self.unchanged += 1,
            FileStatus::Removed => self.removed += 1,
            FileStatus::Failed => self.failed += 1,
        }
        self.chunks += file.chunks;
        self.files.push(file);
    }
}

/// What [`Library::remove`] removed.
#[derive(Debug, Clone, Serialize)]
pub struct RemoveReport {
    pub path: String,
    pub documents: u64,
    pub roots: u64,
}

/// Counts and sizes for `rudder docs stats`.
#[derive(Debug, Clone, Serialize)]
pub struct DocsStats {
    #[serde(flatten)]
    pub store: StoreCounts,
    /// Chunks in the BM25 index (equal to `chunks` when it is up to date).
    pub indexed_chunks: u64,
    pub database_bytes: u64,
    pub text_index_bytes: u64,
}

/// Files larger than this are not read.
pub const MAX_FILE_BYTES: u64 = 256 << 20;

const DB_FILE: &str = "docs.sqlite";
const TEXT_DIR: &str = "text-index";
/// Set in the store before the text index is changed, cleared once the change is committed:
/// still set at open means a crash in between, and the index is rebuilt.
const TEXT_PENDING: &str = "text_index_pending";
/// Corpus articles written per SQLite transaction (each article is whole in one).
const ARTICLES_PER_TRANSACTION: usize = 500;
/// The text index is committed at least this often while adding many files.
const COMMIT_EVERY: std::time::Duration = std::time::Duration::from_secs(3);

/// The document library: store plus indexes.
pub struct Library {
    dir: PathBuf,
    store: Store,
    text: TextIndex,
    /// Loaded on the first semantic search, dropped whenever vectors change.
    vectors: Option<(String, VectorIndex)>,
    text_pending: bool,
}

impl Library {
    /// Opens the library in `dir` (normally `Paths::docs_dir()`), creating it if needed. A text
    /// index that lost track of the store (a crash, a deleted folder) is rebuilt from it.
    pub fn open(dir: &Path) -> Result<Self, DocsError> {
        let store = Store::open(&dir.join(DB_FILE))?;
        let text = TextIndex::open(&dir.join(TEXT_DIR))?;
        let mut library = Self {
            dir: dir.to_path_buf(),
            store,
            text,
            vectors: None,
            text_pending: false,
        };
        let pending = library.store.meta(TEXT_PENDING)?.as_deref() == Some("1");
        let (stored, indexed) = (library.store.count_chunks()?, library.text.num_docs());
        // A recreated index (another analyzer or schema) is rebuilt even for an empty store.
        if pending || library.text.recreated() || stored != indexed {
            tracing::warn!(
                stored,
                indexed,
                "documents text index is out of date; rebuilding it"
            );
            // Another process may be adding right now and hold the index lock; then searching
            // what is indexed is the right thing to do.
            if let Err(e) = library.rebuild_text_index() {
                tracing::warn!("documents text index not rebuilt: {e}");
            }
        }
        Ok(library)
    }

    /// The directory holding the database and the index.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn mark_text_pending(&mut self) -> Result<(), DocsError> {
        if !self.text_pending {
            self.store.set_meta(TEXT_PENDING, "1")?;
            self.text_pending = true;
        }
        Ok(())
    }

    fn commit_text(&mut self) -> Result<(), DocsError> {
        self.text.commit()?;
        if self.text_pending {
            self.store.set_meta(TEXT_PENDING, "0")?;
            self.text_pending = false;
        }
        Ok(())
    }

    /// Rebuilds the BM25 index from the store.
    pub fn rebuild_text_index(&mut self) -> Result<u64, DocsError> {
        self.mark_text_pending()?;
        self.text.delete_all()?;
        let Self { store, text, .. } = self;
        let mut n = 0u64;
        let mut failure: Option<DocsError> = None;
        store.for_each_chunk(|row| {
            if failure.is_none() {
                let title = index_title(&row.title, row.description.as_deref());
                match index::add(text, row.id, row.doc_id, &title, &row.text) {
                    Ok(()) => n += 1,
                    Err(e) => failure = Some(e),
                }
            }
        })?;
        if let Some(e) = failure {
            return Err(e);
        }
        self.commit_text()?;
        self.text.purge_deleted()?;
        self.text.close_writer()?;
        Ok(n)
    }

    /// Indexes a folder (recursively) or a single file. Adding a root again re-reads only
    /// files whose size and mtime changed (and re-indexes only those whose content did), and
    /// drops files that are gone from disk. With an embedder, chunks without an embedding are
    /// embedded afterwards.
    pub fn add(
        &mut self,
        root: &Path,
        embedder: Option<(&dyn Embedder, &str)>,
        progress: &dyn Progress,
    ) -> Result<AddReport, DocsError> {
        let started = Instant::now();
        let root_path = resolve(root)?;
        let root_str = path_string(&root_path)?;
        let mut report = AddReport {
            root: root_str.clone(),
            ..Default::default()
        };
        let meta = match std::fs::metadata(&root_path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                // Added before and gone now: everything under it goes.
                let existing = self.store.file_docs_under(&root_str)?;
                if existing.is_empty() && self.store.root(&root_str)?.is_none() {
                    return Err(DocsError::io(root, e));
                }
                self.drop_documents(existing, &mut report)?;
                self.store.delete_roots_under(&root_str)?;
                self.text.close_writer()?;
                report.seconds = started.elapsed().as_secs_f64();
                return Ok(report);
            }
            Err(e) => return Err(DocsError::io(root, e)),
        };
        let (files, kind) = if meta.is_dir() {
            (collect_files(&root_path, &mut report), "folder")
        } else {
            (vec![root_path.clone()], "file")
        };
        let existing: HashMap<String, DocRow> = self
            .store
            .file_docs_under(&root_str)?
            .into_iter()
            .map(|d| (d.path.clone(), d))
            .collect();
        // Recorded before the first document is written, so that a process killed mid-way
        // leaves a root that `docs list` shows (and `docs remove` clears) with what it indexed.
        if self.store.root(&root_str)?.is_none() && !files.is_empty() {
            self.store.upsert_root(&root_str, kind, None, None)?;
        }
        progress.begin("indexing", Some(files.len() as u64));
        let mut seen: HashSet<String> = HashSet::new();
        let mut last_commit = Instant::now();
        for file in &files {
            let previous = file.to_str().and_then(|p| existing.get(p));
            let file_report = self.index_file(file, &root_str, previous)?;
            if let Some(reason) = &file_report.reason {
                progress.note(&format!("failed: {reason}"));
            }
            seen.insert(file_report.file.clone());
            report.push(file_report);
            progress.advance(1);
            if self.text.has_writer() && last_commit.elapsed() > COMMIT_EVERY {
                self.commit_text()?;
                last_commit = Instant::now();
            }
        }
        progress.end();
        let mut gone: Vec<DocRow> = existing
            .into_values()
            .filter(|d| !seen.contains(&d.path))
            .collect();
        gone.sort_by(|a, b| a.path.cmp(&b.path));
        self.drop_documents(gone, &mut report)?;
        self.commit_text()?;
        self.text.close_writer()?;
        // A root is remembered (for listing and re-adding) while it holds documents.
        if report.indexed_anything() {
            self.store.upsert_root(&root_str, kind, None, None)?;
        } else {
            self.store.delete_root(&root_str)?;
        }
        if let Some((embedder, model)) = embedder {
            report.embedded = self.embed_pending(embedder, model, progress)?;
        }
        report.seconds = started.elapsed().as_secs_f64();
        Ok(report)
    }

    /// Deletes documents (one transaction) and reports each as removed.
    fn drop_documents(
        &mut self,
        docs: Vec<DocRow>,
        report: &mut AddReport,
    ) -> Result<(), DocsError> {
        if docs.is_empty() {
            return Ok(());
        }
        self.mark_text_pending()?;
        let mut w = self.store.write()?;
        for d in &docs {
            w.delete_document(d.id)?;
        }
        w.commit()?;
        for d in docs {
            index::delete_doc(&mut self.text, d.id)?;
            report.push(FileReport::new(&d.path, FileStatus::Removed));
        }
        self.commit_text()?;
        self.vectors = None;
        Ok(())
    }

    /// Indexes one file. Problems with the file are reported in the result; only store and
    /// index failures are errors.
    fn index_file(
        &mut self,
        file: &Path,
        root: &str,
        previous: Option<&DocRow>,
    ) -> Result<FileReport, DocsError> {
        let path = match path_string(file) {
            Ok(p) => p,
            Err(e) => return Ok(FileReport::failed(&file.display().to_string(), &e)),
        };
        let prepared = match prepare_file(file, &path, previous) {
            Ok(p) => p,
            Err(e) => {
                let mut report = FileReport {
                    format: Format::of_path(file),
                    ..FileReport::failed(&path, &e)
                };
                // What is indexed no longer matches the file: it must not be cited.
                if let Some(prev) = previous {
                    self.mark_text_pending()?;
                    let mut w = self.store.write()?;
                    w.delete_document(prev.id)?;
                    w.commit()?;
                    index::delete_doc(&mut self.text, prev.id)?;
                    self.vectors = None;
                    if let Some(r) = report.reason.as_mut() {
                        r.push_str(" (its earlier version was removed from the library)");
                    }
                }
                return Ok(report);
            }
        };
        let Prepared::Changed {
            format,
            title,
            chunks,
            pages,
            size,
            mtime_ns,
            sha256,
        } = prepared
        else {
            if let (Prepared::Touched { size, mtime_ns }, Some(prev)) = (&prepared, previous) {
                self.store.touch(prev.id, *size, *mtime_ns)?;
            }
            return Ok(FileReport::new(&path, FileStatus::Unchanged));
        };
        self.mark_text_pending()?;
        let mut w = self.store.write()?;
        if let Some(prev) = previous {
            w.delete_document(prev.id)?;
        }
        let (doc_id, chunk_ids) = w.insert_document(
            &NewDocument {
                path: &path,
                root,
                format,
                title: &title,
                description: None,
                url: None,
                mtime_ns,
                size,
                sha256: &sha256,
                pages,
            },
            &chunks,
        )?;
        w.commit()?;
        if let Some(prev) = previous {
            index::delete_doc(&mut self.text, prev.id)?;
        }
        for (id, c) in chunk_ids.iter().zip(&chunks) {
            index::add(&mut self.text, *id, doc_id, &title, &c.text)?;
        }
        self.vectors = None;
        Ok(FileReport {
            format: Some(format),
            title: Some(title),
            chunks: chunks.len() as u64,
            pages,
            ..FileReport::new(
                &path,
                if previous.is_some() {
                    FileStatus::Updated
                } else {
                    FileStatus::Added
                },
            )
        })
    }

    /// Indexes a summaries corpus (a JSON object of title → `{title, extract, description,
    /// topic}`, as in the offline Wikipedia corpus) under the name `corpus`. Each article is a
    /// document `<json path>#<title>` with its Wikipedia URL. Running it again on the same
    /// file does nothing; on a changed file only changed articles are re-indexed.
    pub fn add_corpus_json(
        &mut self,
        json: &Path,
        corpus: &str,
        embedder: Option<(&dyn Embedder, &str)>,
        progress: &dyn Progress,
    ) -> Result<AddReport, DocsError> {
        let started = Instant::now();
        let json_path = std::fs::canonicalize(json).map_err(|e| DocsError::io(json, e))?;
        let path = path_string(&json_path)?;
        let meta = std::fs::metadata(&json_path).map_err(|e| DocsError::io(json, e))?;
        let bytes = std::fs::read(&json_path).map_err(|e| DocsError::io(json, e))?;
        let sha = hex::encode(Sha256::digest(&bytes));
        let mut report = AddReport {
            root: path.clone(),
            ..Default::default()
        };
        // This content already indexed, here or from another place (the models folder moved,
        // or another `RUDDER_MODELS_DIR`), is kept as it is; an older version of the corpus
        // elsewhere is dropped first, so a corpus is never in the library twice.
        let roots = self.store.roots()?;
        let same_corpus = |r: &RootInfo| {
            r.kind == "corpus" && (r.path == path || r.name.as_deref() == Some(corpus))
        };
        let same = roots.iter().find(|r| {
            same_corpus(r) && r.sha256.as_deref() == Some(sha.as_str()) && r.documents > 0
        });
        if let Some(root) = same {
            report.root = root.path.clone();
            report.unchanged = root.documents;
            if root.name.as_deref() != Some(corpus) {
                self.store
                    .upsert_root(&root.path, "corpus", Some(corpus), Some(&sha))?;
            }
            if let Some((embedder, model)) = embedder {
                report.embedded = self.embed_pending(embedder, model, progress)?;
            }
            report.seconds = started.elapsed().as_secs_f64();
            return Ok(report);
        }
        for old in roots.iter().filter(|r| same_corpus(r) && r.path != path) {
            self.remove(Path::new(&old.path))?;
        }
        let articles: serde_json::Map<String, serde_json::Value> =
            serde_json::from_slice(&bytes).map_err(|e| DocsError::File {
                file: path.clone(),
                place: Some(format!("line {}, column {}", e.line(), e.column())),
                message: format!("not a corpus file (a JSON object of articles): {e}"),
            })?;
        drop(bytes);
        let mtime_ns = mtime_ns(&meta);
        let existing: HashMap<String, DocRow> = self
            .store
            .corpus_docs(&path)?
            .into_iter()
            .map(|d| (d.path.clone(), d))
            .collect();
        progress.begin("indexing articles", Some(articles.len() as u64));
        let mut seen: HashSet<String> = HashSet::new();
        let mut batch: Vec<PreparedArticle> = Vec::new();
        for (key, value) in articles {
            progress.advance(1);
            let article: corpus::Article = match serde_json::from_value(value) {
                Ok(a) => a,
                Err(e) => {
                    let file = format!("{path}#{key}");
                    report.push(FileReport::failed(
                        &file,
                        &DocsError::file(&file, format!("not an article: {e}")),
                    ));
                    continue;
                }
            };
            let title = article
                .title
                .as_deref()
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .unwrap_or(key.trim())
                .to_string();
            let doc_path = format!("{path}#{title}");
            if !seen.insert(doc_path.clone()) {
                report.push(FileReport::failed(
                    &doc_path,
                    &DocsError::file(&doc_path, "a second article with the same title"),
                ));
                continue;
            }
            let summary = article.summary();
            let content_sha = {
                let mut h = Sha256::new();
                for part in [&title, summary.as_deref().unwrap_or(""), &article.extract] {
                    h.update(part.as_bytes());
                    h.update([0u8]);
                }
                hex::encode(h.finalize())
            };
            let previous = existing.get(&doc_path);
            if previous.is_some_and(|p| p.sha256 == content_sha) {
                report.unchanged += 1;
                continue;
            }
            let chunks: Vec<NewChunk> = chunk::chunk(&article.extract)
                .into_iter()
                .map(|text| NewChunk { page: None, text })
                .collect();
            if chunks.is_empty() {
                report.push(FileReport::failed(
                    &doc_path,
                    &DocsError::file(&doc_path, "the article has no text"),
                ));
                continue;
            }
            batch.push(PreparedArticle {
                previous: previous.map(|p| p.id),
                url: corpus::wikipedia_url(&title),
                size: article.extract.len() as u64,
                path: doc_path,
                title,
                summary,
                sha256: content_sha,
                chunks,
            });
            if batch.len() >= ARTICLES_PER_TRANSACTION {
                self.write_articles(&path, mtime_ns, std::mem::take(&mut batch), &mut report)?;
            }
        }
        self.write_articles(&path, mtime_ns, batch, &mut report)?;
        progress.end();
        let mut gone: Vec<DocRow> = existing
            .into_values()
            .filter(|d| !seen.contains(&d.path))
            .collect();
        gone.sort_by(|a, b| a.path.cmp(&b.path));
        let removed_before = report.files.len();
        self.drop_documents(gone, &mut report)?;
        // A corpus report lists failures only; removed articles are counted.
        report.files.truncate(removed_before);
        self.commit_text()?;
        self.text.close_writer()?;
        self.store
            .upsert_root(&path, "corpus", Some(corpus), Some(&sha))?;
        if let Some((embedder, model)) = embedder {
            report.embedded = self.embed_pending(embedder, model, progress)?;
        }
        report.seconds = started.elapsed().as_secs_f64();
        Ok(report)
    }

    /// Writes prepared corpus articles in one transaction, then queues them for the index.
    fn write_articles(
        &mut self,
        root: &str,
        mtime_ns: i64,
        batch: Vec<PreparedArticle>,
        report: &mut AddReport,
    ) -> Result<(), DocsError> {
        if batch.is_empty() {
            return Ok(());
        }
        self.mark_text_pending()?;
        let mut w = self.store.write()?;
        let mut written = Vec::with_capacity(batch.len());
        for a in &batch {
            if let Some(old) = a.previous {
                w.delete_document(old)?;
            }
            let ids = w.insert_document(
                &NewDocument {
                    path: &a.path,
                    root,
                    format: Format::Corpus,
                    title: &a.title,
                    description: a.summary.as_deref(),
                    url: Some(&a.url),
                    mtime_ns,
                    size: a.size,
                    sha256: &a.sha256,
                    pages: None,
                },
                &a.chunks,
            )?;
            written.push(ids);
        }
        w.commit()?;
        for (a, (doc_id, chunk_ids)) in batch.iter().zip(written) {
            if let Some(old) = a.previous {
                index::delete_doc(&mut self.text, old)?;
                report.updated += 1;
            } else {
                report.added += 1;
            }
            let title = index_title(&a.title, a.summary.as_deref());
            for (id, c) in chunk_ids.iter().zip(&a.chunks) {
                index::add(&mut self.text, *id, doc_id, &title, &c.text)?;
            }
            report.chunks += a.chunks.len() as u64;
        }
        self.vectors = None;
        Ok(())
    }

    /// Embeds every chunk that has no embedding from `model` yet. Resumable: interrupted work
    /// is picked up by the next call. Returns the number of chunks embedded.
    ///
    /// Chunks are read a window at a time, sorted by length and embedded in small batches:
    /// a batch is padded to its longest text, so mixing a title-only chunk with a 900-character
    /// one wastes most of the work (sorting roughly doubles throughput), and small batches keep
    /// the runtime's memory low.
    pub fn embed_pending(
        &mut self,
        embedder: &dyn Embedder,
        model: &str,
        progress: &dyn Progress,
    ) -> Result<u64, DocsError> {
        const WINDOW: usize = 512;
        const BATCH: usize = 16;
        let total = self.store.count_pending(model)?;
        if total == 0 {
            return Ok(0);
        }
        progress.begin("embedding", Some(total));
        let mut done = 0u64;
        let mut after = 0i64;
        loop {
            let rows = self.store.pending_chunks(model, after, WINDOW)?;
            let Some(last) = rows.last() else {
                break;
            };
            after = last.id;
            let mut texts: Vec<(i64, String)> =
                rows.iter().map(|r| (r.id, embedding_text(r))).collect();
            texts.sort_by_key(|(_, t)| t.len());
            let mut vectors: Vec<(i64, QuantizedVector)> = Vec::with_capacity(texts.len());
            for batch in texts.chunks(BATCH) {
                let refs: Vec<&str> = batch.iter().map(|(_, t)| t.as_str()).collect();
                let embedded = embedder.embed(&refs)?;
                vectors.extend(
                    batch
                        .iter()
                        .zip(embedded)
                        .map(|((id, _), v)| (*id, QuantizedVector::quantize(&v))),
                );
                progress.advance(batch.len() as u64);
            }
            self.store.put_vectors(model, &vectors)?;
            done += rows.len() as u64;
        }
        progress.end();
        self.vectors = None;
        Ok(done)
    }

    fn vector_index(&mut self, model: &str) -> Result<&VectorIndex, DocsError> {
        if !matches!(&self.vectors, Some((m, _)) if m == model) {
            let index = VectorIndex::load(&self.store, model)?;
            self.vectors = Some((model.to_string(), index));
        }
        Ok(&self.vectors.as_ref().expect("just loaded").1)
    }

    /// The best `limit` passages for `query`: BM25 and, with an embedder, semantic similarity
    /// fused by reciprocal rank, BM25's list first. Each is cited by path, chunk and page.
    pub fn search(
        &mut self,
        query: &str,
        limit: usize,
        embedder: Option<(&dyn Embedder, &str)>,
    ) -> Result<Vec<Evidence>, DocsError> {
        if limit == 0 || query.trim().is_empty() {
            return Ok(Vec::new());
        }
        let depth = (limit * 4).max(40);
        let bm25 = self.text.search(query, Vec::new(), depth)?;
        let ranked = match embedder {
            None => bm25,
            Some((embedder, model)) => {
                let query_vector = embedder.embed(&[query])?.pop().unwrap_or_default();
                let semantic = self.vector_index(model)?.search(&query_vector, depth);
                let bm25: Vec<i64> = bm25.iter().map(|h| h.0).collect();
                let semantic: Vec<i64> = semantic.iter().map(|h| h.0).collect();
                reciprocal_rank_fusion(&[bm25.as_slice(), semantic.as_slice()], limit)
            }
        };
        let top: Vec<(i64, f32)> = ranked.into_iter().take(limit).collect();
        let ids: Vec<i64> = top.iter().map(|h| h.0).collect();
        let rows = self.store.chunk_rows(&ids)?;
        let by_id: HashMap<i64, ChunkRow> = rows.into_iter().map(|r| (r.id, r)).collect();
        Ok(top
            .into_iter()
            .filter_map(|(id, score)| {
                let row = by_id.get(&id)?;
                Some(Evidence {
                    target: CitationTarget::Document {
                        path: row.path.clone(),
                        chunk: row.idx,
                        page: row.page,
                        url: row.url.clone(),
                        name: Some(row.shared_name()),
                    },
                    title: row.title.clone(),
                    text: row.text.clone(),
                    score,
                })
            })
            .collect())
    }

    /// Every document (corpus articles only with `include_corpora`), by path.
    pub fn list(&self, include_corpora: bool) -> Result<Vec<DocumentInfo>, DocsError> {
        self.store.documents(include_corpora)
    }

    /// The folders, files and corpora that were added, with their document counts.
    pub fn roots(&self) -> Result<Vec<RootInfo>, DocsError> {
        self.store.roots()
    }

    /// The root of the installed corpus called `name`, if any.
    pub fn corpus_root(&self, name: &str) -> Result<Option<RootInfo>, DocsError> {
        Ok(self
            .store
            .roots()?
            .into_iter()
            .find(|r| r.kind == "corpus" && r.name.as_deref() == Some(name)))
    }

    /// Removes a file, everything under a folder, or a corpus (by its file) from the library —
    /// the files themselves are not touched — and compacts the store and index so the removed
    /// text is gone from disk.
    pub fn remove(&mut self, target: &Path) -> Result<RemoveReport, DocsError> {
        let path = path_string(&resolve(target)?)?;
        let mut docs = self.store.file_docs_under(&path)?;
        docs.extend(self.store.corpus_docs(&path)?);
        let documents = docs.len() as u64;
        let mut scratch = AddReport::default();
        self.drop_documents(docs, &mut scratch)?;
        let roots = self.store.delete_roots_under(&path)?;
        if documents == 0 && roots == 0 {
            return Err(DocsError::NotInLibrary(path));
        }
        self.text.purge_deleted()?;
        self.text.close_writer()?;
        self.store.compact()?;
        Ok(RemoveReport {
            path,
            documents,
            roots,
        })
    }

    /// The chunk a document citation points at (`path`, 0-based `chunk`), if it is still stored.
    pub fn chunk_at(&self, path: &str, chunk: u32) -> Result<Option<ChunkRow>, DocsError> {
        self.store.chunk_at(path, chunk)
    }

    /// Counts and sizes.
    pub fn stats(&self) -> Result<DocsStats, DocsError> {
        let file_size = |p: PathBuf| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        Ok(DocsStats {
            store: self.store.counts()?,
            indexed_chunks: self.text.num_docs(),
            database_bytes: file_size(self.dir.join(DB_FILE))
                + file_size(self.dir.join(format!("{DB_FILE}-wal"))),
            text_index_bytes: crate::fsutil::dir_size(&self.dir.join(TEXT_DIR)),
        })
    }

    /// The SQLite file (for size reports and tests).
    pub fn database_path(&self) -> &Path {
        self.store.path()
    }

    /// Releases the index's write lock (a long-lived process calls this when done writing).
    pub fn release_writer(&mut self) -> Result<(), DocsError> {
        Ok(self.text.close_writer()?)
    }
}

/// A file read and cut, ready to store — or found unchanged.
enum Prepared {
    Unchanged,
    /// Same content, new size or mtime (a `touch`, a copy).
    Touched {
        size: u64,
        mtime_ns: i64,
    },
    Changed {
        format: Format,
        title: String,
        chunks: Vec<NewChunk>,
        pages: Option<u32>,
        size: u64,
        mtime_ns: i64,
        sha256: String,
    },
}

/// Reads, hashes, extracts and chunks one file. Every error names the file.
fn prepare_file(file: &Path, path: &str, previous: Option<&DocRow>) -> Result<Prepared, DocsError> {
    let Some(format) = Format::of_path(file) else {
        return Err(DocsError::file(
            path,
            format!("unsupported format (supported: {})", extract::SUPPORTED),
        ));
    };
    let meta = std::fs::metadata(file).map_err(|e| DocsError::io(file, e))?;
    if !meta.is_file() {
        return Err(DocsError::file(path, "not a regular file"));
    }
    let size = meta.len();
    let mtime_ns = mtime_ns(&meta);
    if previous.is_some_and(|p| p.size == size && p.mtime_ns == mtime_ns) {
        return Ok(Prepared::Unchanged);
    }
    if size > MAX_FILE_BYTES {
        return Err(DocsError::file(
            path,
            format!(
                "{} MB is more than the {} MB a document may have",
                size >> 20,
                MAX_FILE_BYTES >> 20
            ),
        ));
    }
    let bytes = std::fs::read(file).map_err(|e| DocsError::io(file, e))?;
    let sha256 = hex::encode(Sha256::digest(&bytes));
    if previous.is_some_and(|p| p.sha256 == sha256) {
        return Ok(Prepared::Touched { size, mtime_ns });
    }
    let extracted = extract::extract(&bytes, format).map_err(|e| DocsError::File {
        file: path.to_string(),
        place: e.place,
        message: e.message,
    })?;
    let mut chunks = Vec::new();
    for section in &extracted.sections {
        for text in chunk::chunk(&section.text) {
            chunks.push(NewChunk {
                page: section.page,
                text,
            });
        }
    }
    if chunks.is_empty() {
        return Err(DocsError::file(
            path,
            "no text to index (the file is empty)",
        ));
    }
    let title = extracted
        .title
        .map(|t| one_line(&t, 200))
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| {
            file.file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| path.to_string())
        });
    Ok(Prepared::Changed {
        format,
        title,
        chunks,
        pages: extracted.pages,
        size,
        mtime_ns,
        sha256,
    })
}

struct PreparedArticle {
    previous: Option<i64>,
    path: String,
    title: String,
    summary: Option<String>,
    url: String,
    size: u64,
    sha256: String,
    chunks: Vec<NewChunk>,
}

/// What the BM25 title field holds: the title, plus a corpus article's description and topic.
fn index_title(title: &str, description: Option<&str>) -> String {
    match description {
        Some(d) => format!("{title}\n{d}"),
        None => title.to_string(),
    }
}

/// What gets embedded for a chunk: its document's title (and description) then the text, so
/// a chunk from the middle of a document still says what the document is about.
fn embedding_text(row: &ChunkRow) -> String {
    match &row.description {
        Some(d) => format!("{} ({d})\n{}", row.title, row.text),
        None => format!("{}\n{}", row.title, row.text),
    }
}

/// The files a folder holds that the library reads: recursively, in name order, skipping
/// hidden files and folders, `node_modules`, editor backups and Office lock files. Symlinked
/// files are read; symlinked folders are not followed. Unreadable folders are reported.
fn collect_files(root: &Path, report: &mut AddReport) -> Vec<PathBuf> {
    fn skipped(name: &std::ffi::OsStr) -> bool {
        let n = name.to_string_lossy();
        n.starts_with('.') || n.starts_with("~$") || n.ends_with('~') || n == "node_modules"
    }
    let mut out = Vec::new();
    let walker = walkdir::WalkDir::new(root)
        .follow_links(false)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| e.depth() == 0 || !skipped(e.file_name()));
    for entry in walker {
        match entry {
            Ok(e) => {
                let t = e.file_type();
                let is_file = t.is_file()
                    || (t.is_symlink() && std::fs::metadata(e.path()).is_ok_and(|m| m.is_file()));
                if is_file && Format::of_path(e.path()).is_some() {
                    out.push(e.into_path());
                }
            }
            Err(err) => {
                let file = err.path().unwrap_or(root).display().to_string();
                let message = err
                    .io_error()
                    .map(|e| match e.kind() {
                        std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
                        _ => e.to_string(),
                    })
                    .unwrap_or_else(|| err.to_string());
                report.push(FileReport::failed(
                    &file,
                    &DocsError::file(&file, format!("cannot read: {message}")),
                ));
            }
        }
    }
    out
}

/// An absolute, symlink-resolved path; for a path that no longer exists, its nearest existing
/// ancestor is resolved and the rest appended.
fn resolve(path: &Path) -> Result<PathBuf, DocsError> {
    if let Ok(p) = std::fs::canonicalize(path) {
        return Ok(p);
    }
    let absolute = std::path::absolute(path).map_err(|e| DocsError::io(path, e))?;
    let mut tail = Vec::new();
    let mut current = absolute.as_path();
    loop {
        if let Ok(mut resolved) = std::fs::canonicalize(current) {
            for part in tail.iter().rev() {
                resolved.push(part);
            }
            return Ok(resolved);
        }
        match (current.parent(), current.file_name()) {
            (Some(parent), Some(name)) => {
                tail.push(name.to_os_string());
                current = parent;
            }
            _ => return Ok(absolute),
        }
    }
}

fn path_string(path: &Path) -> Result<String, DocsError> {
    path.to_str().map(str::to_string).ok_or_else(|| {
        DocsError::file(
            &path.display().to_string(),
            "the path is not valid UTF-8; rename it to index it",
        )
    })
}

fn mtime_ns(meta: &std::fs::Metadata) -> i64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

/// The document library as a research [`Source`] named `documents`.
pub struct DocsSource {
    library: Library,
}

impl DocsSource {
    pub fn new(library: Library) -> Self {
        Self { library }
    }

    /// Opens the library in `dir` (normally `Paths::docs_dir()`).
    pub fn open(dir: &Path) -> Result<Self, DocsError> {
        Ok(Self::new(Library::open(dir)?))
    }

    pub fn library(&self) -> &Library {
        &self.library
    }

    pub fn library_mut(&mut self) -> &mut Library {
        &mut self.library
    }

    pub fn into_library(self) -> Library {
        self.library
    }
}

impl Source for DocsSource {
    fn name(&self) -> &str {
        "documents"
    }

    fn search(
        &mut self,
        query: &str,
        limit: usize,
        embedder: Option<(&dyn Embedder, &str)>,
    ) -> Result<Vec<Evidence>, SourceError> {
        self.library
            .search(query, limit, embedder)
            .map_err(|e| SourceError::Other {
                source_name: "documents".into(),
                message: e.to_string(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_file_and_place() {
        let e = DocsError::File {
            file: "/a/x.pdf".into(),
            place: Some("page 3".into()),
            message: "bad font".into(),
        };
        assert_eq!(e.to_string(), "/a/x.pdf: page 3: bad font");
    }
}
