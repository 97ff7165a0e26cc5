//! The user's own history: importers for every common export, a SQLite store (the source of
//! truth), a Tantivy BM25 index and int8 vectors over it, hybrid search by rank fusion, and
//! forgetting that leaves nothing behind.
//!
//! [`History`] is the one entry point the CLI and the desktop shell use.

pub mod entry;
pub mod import;
pub mod search;
pub mod store;
pub mod text_index;
pub mod vectors;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde::Serialize;

pub use entry::{Entry, HistorySource, Kind, Record, Signal, SignalKind, Turn, TurnRole};
pub use import::{Format, ImportError};
pub use search::{SearchHit, SearchMode};
pub use store::{
    CachedProfile, ForgetSelector, HiddenStatement, Inserted, MemoryRow, NewMemory, Remembering,
    StoreError, StoreStats, StoredEntry, StoredSignal, UserStatement,
};
pub use text_index::{Filter, IndexError};

use crate::embed::{EmbedError, Embedder};
use crate::retrieval::QuantizedVector;
use store::Store;
use text_index::TextIndex;
use vectors::VectorIndex;

/// Errors from the history layer (an import's per-file errors are reported, not raised).
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Index(#[from] IndexError),
    #[error("embedding history: {0}")]
    Embed(#[from] EmbedError),
    #[error("{0}")]
    Invalid(String),
}

impl HistoryError {
    /// What fixes it, when the person can (see [`crate::remedy`]).
    pub fn remedy(&self) -> Option<crate::remedy::Remedy> {
        match self {
            HistoryError::Store(e) => e.remedy(),
            HistoryError::Embed(e) => e.remedy(),
            _ => None,
        }
    }
}

pub type HistoryResult<T> = Result<T, HistoryError>;

pub use crate::progress::{NoProgress, Progress};

/// What happened to one input file.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct FileReport {
    pub file: String,
    /// The format used, when one was recognised.
    pub format: Option<Format>,
    pub added: u64,
    /// Conversations that were already stored in an older version and were replaced.
    pub updated: u64,
    pub duplicates: u64,
    pub signals: u64,
    /// Items the export holds but that could not be read (wrong types); the rest went in.
    pub skipped_items: u64,
    /// Messages longer than [`MAX_TURN_BYTES`], stored cut to that size.
    pub truncated_turns: u64,
    /// Why, for the first few skipped or cut items: `item 30000: title: invalid type…`.
    pub notes: Vec<String>,
    pub status: FileStatus,
}

/// The longest one message may be once stored. A pasted 200 MB log in a chat would otherwise
/// take a gigabyte of memory and hundreds of thousands of embedding chunks; its head is kept,
/// and the import report says it was cut.
pub const MAX_TURN_BYTES: usize = 1 << 20;

/// How many skip or cut reasons one file's report keeps; the counts cover the rest.
const MAX_NOTES: usize = 5;

impl FileReport {
    fn new(file: String, format: Option<Format>, status: FileStatus) -> Self {
        Self {
            file,
            format,
            added: 0,
            updated: 0,
            duplicates: 0,
            signals: 0,
            skipped_items: 0,
            truncated_turns: 0,
            notes: Vec::new(),
            status,
        }
    }

    fn note(&mut self, note: String) {
        if self.notes.len() < MAX_NOTES {
            self.notes
                .push(crate::history::import::clip(&note).into_owned());
        }
    }
}

/// Cuts every turn of `session` longer than [`MAX_TURN_BYTES`] at a character boundary.
/// Returns how many were cut.
fn cap_turns(session: &mut Entry) -> u64 {
    let mut cut = 0;
    for turn in &mut session.turns {
        if turn.text.len() > MAX_TURN_BYTES {
            let mut end = MAX_TURN_BYTES;
            while !turn.text.is_char_boundary(end) {
                end -= 1;
            }
            turn.text.truncate(end);
            cut += 1;
        }
    }
    cut
}

/// Outcome of one input file.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(tag = "status", content = "reason", rename_all = "kebab-case")]
pub enum FileStatus {
    Imported,
    /// Inside a folder or archive, and not a history file (e.g. Takeout's YouTube data).
    Skipped(String),
    /// Nothing from this file was stored.
    Failed(String),
}

/// The report of one `import` call.
#[derive(Debug, Clone, Serialize, Default)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ImportReport {
    pub files: Vec<FileReport>,
    pub added: u64,
    pub updated: u64,
    pub duplicates: u64,
    pub signals: u64,
    pub failed_files: u64,
    pub seconds: f64,
}

impl ImportReport {
    /// Whether anything new was stored.
    pub fn stored_anything(&self) -> bool {
        self.added + self.updated + self.signals > 0
    }
}

/// Options for [`History::import`].
#[derive(Debug, Clone, Default)]
pub struct ImportOptions {
    /// Use this format for every file instead of detecting.
    pub format: Option<Format>,
}

/// What `forget` removed.
#[derive(Debug, Clone, Serialize)]
pub struct ForgetReport {
    pub sessions: u64,
    pub ids: Vec<i64>,
}

/// Counts and sizes for `rudder history stats`.
#[derive(Debug, Clone, Serialize)]
pub struct HistoryStats {
    #[serde(flatten)]
    pub store: StoreStats,
    pub indexed_sessions: u64,
    pub database_bytes: u64,
    pub text_index_bytes: u64,
}

/// The user's history: store plus indexes.
pub struct History {
    dir: PathBuf,
    store: Store,
    text: TextIndex,
    /// Loaded on first vector search, dropped whenever the store changes.
    vectors: Option<(String, VectorIndex)>,
}

const DB_FILE: &str = "history.sqlite";
const TEXT_DIR: &str = "text-index";
/// Private copies of browser databases while they are read; emptied as each import ends.
const SCRATCH_DIR: &str = "scratch";

impl History {
    /// The history database alone, without its indexes, when there is one: for reading and
    /// editing what the user told Rudder about themselves.
    pub fn open_store(dir: &Path) -> HistoryResult<Option<Store>> {
        let path = dir.join(DB_FILE);
        if !path.exists() {
            return Ok(None);
        }
        Ok(Some(Store::open(&path)?))
    }

    /// Opens the history in `dir` (normally `Paths::history_dir()`), creating it if needed. If
    /// the text index lost track of the store (a crash between the two commits, or a deleted
    /// index folder) it is rebuilt from SQLite.
    pub fn open(dir: &Path) -> HistoryResult<Self> {
        let store = Store::open(&dir.join(DB_FILE))?;
        let text = TextIndex::open(&dir.join(TEXT_DIR))?;
        let mut history = Self {
            dir: dir.to_path_buf(),
            store,
            text,
            vectors: None,
        };
        let (stored, indexed) = (history.store.count()?, history.text.num_docs());
        // A recreated index (another analyzer or schema) is rebuilt even when the store is
        // empty, so the two never disagree about what was indexed how.
        if history.text.recreated() || stored != indexed {
            tracing::warn!(
                stored,
                indexed,
                "history text index is out of date; rebuilding it"
            );
            // Another process may be importing right now (its store commit lands just before
            // its index commit): then it holds the index lock, and searching what is indexed
            // is the right thing to do.
            if let Err(e) = history.rebuild_text_index(&NoProgress) {
                tracing::warn!("text index not rebuilt: {e}");
            }
        }
        Ok(history)
    }

    /// The directory holding the database and indexes.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Every entry's id by its content hash: ids depend on import order, hashes do not, so
    /// labelled sets name entries by hash.
    pub fn ids_by_content_hash(&self) -> HistoryResult<HashMap<String, i64>> {
        let mut ids = HashMap::new();
        self.store.for_each_entry(512, |batch| {
            for s in batch {
                ids.insert(s.content_hash.clone(), s.id);
            }
            Ok(())
        })?;
        Ok(ids)
    }

    /// The SQLite store, for read access by other stages (profiles).
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Write access to the store for the profile cache (profiles live beside the entries
    /// they cite, so forgetting can drop them).
    pub fn store_mut_for_profiles(&mut self) -> &mut Store {
        &mut self.store
    }

    /// Write access to the store; the loaded vector index is dropped, as the writes may make
    /// it stale (the history benchmark in `crates/bench` copies vectors in bulk with it).
    pub fn store_mut(&mut self) -> &mut Store {
        self.vectors = None;
        &mut self.store
    }

    /// Imports files, folders and zip archives. Each file is one transaction: it is stored
    /// completely or not at all, and the report says which and why.
    pub fn import(
        &mut self,
        paths: &[PathBuf],
        options: &ImportOptions,
        progress: &dyn Progress,
    ) -> HistoryResult<ImportReport> {
        let started = std::time::Instant::now();
        let explicit: HashSet<String> = paths.iter().map(|p| p.display().to_string()).collect();
        let swept = import::scratch_copies_in(&self.dir.join(SCRATCH_DIR));
        if swept > 0 {
            tracing::info!(
                swept,
                "removed database copies left by an interrupted import"
            );
        }
        let collected = import::collect(paths);
        let mut report = ImportReport::default();
        for refused in collected.refused {
            report.files.push(FileReport::new(
                refused.file().to_string(),
                None,
                FileStatus::Failed(refused.to_string()),
            ));
        }
        progress.begin("importing", None);
        for file in &collected.files {
            let explicitly_named = !file.in_zip() && explicit.contains(file.display());
            let file_report = self.import_one(file, options, explicitly_named, progress)?;
            if let FileStatus::Failed(reason) = &file_report.status {
                progress.note(&format!("failed: {reason}"));
            }
            report.files.push(file_report);
        }
        progress.end();
        for f in &report.files {
            report.added += f.added;
            report.updated += f.updated;
            report.duplicates += f.duplicates;
            report.signals += f.signals;
            if matches!(f.status, FileStatus::Failed(_)) {
                report.failed_files += 1;
            }
        }
        if report.added + report.updated > 0 {
            self.vectors = None;
        }
        report.seconds = started.elapsed().as_secs_f64();
        Ok(report)
    }

    fn import_one(
        &mut self,
        file: &import::InputFile,
        options: &ImportOptions,
        explicitly_named: bool,
        progress: &dyn Progress,
    ) -> HistoryResult<FileReport> {
        let mut report = FileReport::new(
            file.display().to_string(),
            options.format,
            FileStatus::Imported,
        );
        let format = match options.format {
            Some(f) => Some(f),
            None => match import::detect(file) {
                Ok(import::Detected::Format(f)) => Some(f),
                Ok(import::Detected::Sqlite) => None,
                Ok(import::Detected::NotHistory) if !explicitly_named => {
                    report.status = FileStatus::Skipped("not a history export".into());
                    return Ok(report);
                }
                Ok(import::Detected::NotHistory) => {
                    report.status = FileStatus::Failed(
                        ImportError::UnknownFormat {
                            file: file.display().to_string(),
                        }
                        .to_string(),
                    );
                    return Ok(report);
                }
                Ok(import::Detected::Empty) if !explicitly_named => {
                    report.status = FileStatus::Skipped("empty".into());
                    return Ok(report);
                }
                Ok(import::Detected::Empty) => {
                    report.status = FileStatus::Failed(
                        ImportError::Empty {
                            file: file.display().to_string(),
                        }
                        .to_string(),
                    );
                    return Ok(report);
                }
                Err(e) => {
                    report.status = FileStatus::Failed(e.to_string());
                    return Ok(report);
                }
            },
        };
        let origin = file.display().to_string();
        let Self { store, text, .. } = self;
        let mut writer = store.write()?;
        let mut records = 0u64;
        // Skipped items count as records for progress, but a file of nothing else is empty.
        let mut skipped = 0u64;
        let mut store_error: Option<HistoryError> = None;
        let result = {
            let mut sink = |record: Record| -> Result<(), ImportError> {
                records += 1;
                if records.is_multiple_of(1024) {
                    progress.advance(1024);
                }
                let outcome: HistoryResult<()> = (|| {
                    match record {
                        Record::Entry(mut s) => {
                            let cut = cap_turns(&mut s);
                            if cut > 0 {
                                report.truncated_turns += cut;
                                report.note(format!(
                                    "{:?}: {cut} message(s) over {} MB cut to that size",
                                    s.title,
                                    MAX_TURN_BYTES >> 20
                                ));
                            }
                            let hash = s.content_hash();
                            match writer.insert_entry(&s, &hash, &origin)? {
                                Inserted::Added(id) => {
                                    text_index::add(text, id, &s)?;
                                    report.added += 1;
                                }
                                Inserted::Replaced { old, new } => {
                                    text.delete_key(old)?;
                                    text_index::add(text, new, &s)?;
                                    report.updated += 1;
                                }
                                Inserted::Duplicate => report.duplicates += 1,
                            }
                        }
                        Record::Signal(sig) => {
                            if writer.insert_signal(&sig, &origin)? {
                                report.signals += 1;
                            }
                        }
                        Record::Skipped { place, reason } => {
                            skipped += 1;
                            report.skipped_items += 1;
                            report.note(format!("{place}: {reason}"));
                        }
                    }
                    Ok(())
                })();
                outcome.map_err(|e| {
                    let message = e.to_string();
                    store_error = Some(e);
                    ImportError::Store {
                        file: origin.clone(),
                        message,
                    }
                })
            };
            import::parse_file_in(file, format, &self.dir.join(SCRATCH_DIR), &mut sink)
        };
        progress.advance(records % 1024);
        if let Some(e) = store_error {
            drop(writer);
            text.rollback()?;
            return Err(e);
        }
        match result {
            Ok(format) if records == skipped => {
                drop(writer);
                text.rollback()?;
                report.format = Some(format);
                report.status = FileStatus::Failed(
                    ImportError::Empty {
                        file: file.display().to_string(),
                    }
                    .to_string(),
                );
            }
            Ok(format) => {
                report.format = Some(format);
                writer.commit()?;
                text.commit()?;
            }
            Err(e) => {
                drop(writer);
                text.rollback()?;
                report.added = 0;
                report.updated = 0;
                report.duplicates = 0;
                report.signals = 0;
                report.skipped_items = 0;
                report.truncated_turns = 0;
                report.notes.clear();
                report.status = FileStatus::Failed(e.to_string());
            }
        }
        Ok(report)
    }

    /// Embeds every entry that has no vectors from `model` yet, `batch` entries per store
    /// transaction. Resumable: interrupted work is picked up by the next call.
    pub fn embed_pending(
        &mut self,
        embedder: &dyn Embedder,
        model: &str,
        progress: &dyn Progress,
    ) -> HistoryResult<u64> {
        self.embed_at_most(embedder, model, u64::MAX, progress)
    }

    /// Like [`embed_pending`](Self::embed_pending), but stops after about `max_sessions`.
    pub fn embed_at_most(
        &mut self,
        embedder: &dyn Embedder,
        model: &str,
        max_sessions: u64,
        progress: &dyn Progress,
    ) -> HistoryResult<u64> {
        const SESSIONS_PER_BATCH: usize = 64;
        let total = self.store.count_to_embed(model)?.min(max_sessions);
        if total == 0 {
            return Ok(0);
        }
        progress.begin("embedding", Some(total));
        let mut done = 0u64;
        let mut after = 0i64;
        while done < total {
            let want = (total - done).min(SESSIONS_PER_BATCH as u64) as usize;
            let ids = self.store.ids_to_embed(model, after, want)?;
            let Some(&last) = ids.last() else {
                break;
            };
            after = last;
            let sessions = self.store.get_many(&ids)?;
            let mut texts = Vec::new();
            let mut owners = Vec::new();
            for s in &sessions {
                for chunk in vectors::chunks(&s.entry) {
                    texts.push(chunk);
                    owners.push(s.id);
                }
            }
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            let embedded = embedder.embed(&refs)?;
            let mut per_session: Vec<(i64, Vec<QuantizedVector>)> = Vec::new();
            for (owner, v) in owners.into_iter().zip(embedded) {
                let q = QuantizedVector::quantize(&v);
                match per_session.last_mut() {
                    Some((id, list)) if *id == owner => list.push(q),
                    _ => per_session.push((owner, vec![q])),
                }
            }
            // Entries forgotten between the read and now are skipped by put_vectors; ids that
            // got no chunk at all still have to be marked, or the loop would never end.
            for id in &ids {
                if !per_session.iter().any(|(s, _)| s == id) {
                    per_session.push((*id, Vec::new()));
                }
            }
            self.store.put_vectors(model, &per_session)?;
            done += ids.len() as u64;
            progress.advance(ids.len() as u64);
        }
        progress.end();
        self.vectors = None;
        Ok(done)
    }

    /// The vector index for `model`, loading it from the store on first use.
    pub fn vector_index(&mut self, model: &str) -> HistoryResult<&VectorIndex> {
        let stale = !matches!(&self.vectors, Some((m, _)) if m == model);
        if stale {
            let index = VectorIndex::load(&self.store, model)?;
            self.vectors = Some((model.to_string(), index));
        }
        Ok(&self.vectors.as_ref().expect("just loaded").1)
    }

    /// BM25 search only.
    pub fn search_text(
        &self,
        query: &str,
        filter: &Filter,
        limit: usize,
    ) -> HistoryResult<Vec<(i64, f32)>> {
        Ok(text_index::search(&self.text, query, filter, limit)?)
    }

    /// One entry with its turns.
    pub fn get(&self, id: i64) -> HistoryResult<Option<StoredEntry>> {
        Ok(self.store.get(id)?)
    }

    /// Several entries, in the order given.
    pub fn get_many(&self, ids: &[i64]) -> HistoryResult<Vec<StoredEntry>> {
        Ok(self.store.get_many(ids)?)
    }

    /// The stored profile signals.
    pub fn signals(&self) -> HistoryResult<Vec<StoredSignal>> {
        Ok(self.store.signals()?)
    }

    /// Counts and sizes.
    pub fn stats(&self) -> HistoryResult<HistoryStats> {
        Ok(HistoryStats {
            store: self.store.stats()?,
            indexed_sessions: self.text.num_docs(),
            database_bytes: file_size(&self.dir.join(DB_FILE))
                + file_size(&self.dir.join(format!("{DB_FILE}-wal"))),
            text_index_bytes: crate::fsutil::dir_size(&self.dir.join(TEXT_DIR)),
        })
    }

    /// Forgets entries everywhere: SQLite (turns and vectors with them), the text index and
    /// the in-memory vectors; then compacts both so the text is not recoverable from disk.
    pub fn forget(&mut self, selector: &ForgetSelector) -> HistoryResult<ForgetReport> {
        if let ForgetSelector::Range {
            since: None,
            until: None,
        } = selector
        {
            return Err(HistoryError::Invalid(
                "a date range needs --since or --until (use --all to forget everything)".into(),
            ));
        }
        let ids = self.store.forget(selector)?;
        if matches!(selector, ForgetSelector::All) {
            self.text.delete_all()?;
        } else {
            for &id in &ids {
                self.text.delete_key(id)?;
            }
        }
        self.text.commit()?;
        self.text.purge_deleted()?;
        self.text.close_writer()?;
        self.store.compact()?;
        self.vectors = None;
        Ok(ForgetReport {
            sessions: ids.len() as u64,
            ids,
        })
    }

    /// Rebuilds the text index from SQLite.
    pub fn rebuild_text_index(&mut self, progress: &dyn Progress) -> HistoryResult<u64> {
        let total = self.store.count()?;
        progress.begin("indexing text", Some(total));
        self.text.delete_all()?;
        let Self { store, text, .. } = self;
        let mut n = 0u64;
        store.for_each_entry(1000, |batch| {
            for s in batch {
                text_index::add(text, s.id, &s.entry).map_err(|e| StoreError::Corrupt {
                    path: e.path.clone(),
                    message: e.message.clone(),
                })?;
            }
            n += batch.len() as u64;
            progress.advance(batch.len() as u64);
            Ok(())
        })?;
        self.text.commit()?;
        self.text.purge_deleted()?;
        self.text.close_writer()?;
        progress.end();
        Ok(n)
    }

    /// Drops every vector so the next [`embed_pending`](Self::embed_pending) recomputes them.
    pub fn clear_vectors(&mut self) -> HistoryResult<()> {
        self.store.clear_vectors()?;
        self.vectors = None;
        Ok(())
    }

    /// Imports (as [`import`](Self::import)), releases the text index's writer, then embeds
    /// what is new when an embedder is given (`(embedder, its model's name)`): what the CLI's
    /// import and the window's both do. The writer goes first so that another process can
    /// write while the embedding runs. Returns the report and how many entries were embedded.
    pub fn import_then_embed(
        &mut self,
        paths: &[PathBuf],
        options: &ImportOptions,
        embedder: Option<(&dyn Embedder, &str)>,
        progress: &dyn Progress,
    ) -> HistoryResult<(ImportReport, u64)> {
        let report = self.import(paths, options, progress)?;
        self.release_writer()?;
        let embedded = match embedder {
            Some((embedder, model)) if report.stored_anything() => {
                self.embed_pending(embedder, model, progress)?
            }
            _ => 0,
        };
        Ok((report, embedded))
    }

    /// Releases the text index's write lock (call when a long-lived process is done writing).
    pub fn release_writer(&mut self) -> HistoryResult<()> {
        Ok(self.text.close_writer()?)
    }
}

fn file_size(path: &Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}
