//! The import and history screens, and the report viewer's "open the source" action.

use std::path::PathBuf;
use std::sync::Mutex;

use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};

use super::{App, AppError, AppResult, Notifier, Throttle};
use crate::embed::Embedder;
use crate::history::{
    Filter, ForgetSelector, History, HistorySource, ImportOptions, ImportReport, Kind, Progress,
    SearchHit, SearchMode,
};
use crate::sources::docs::Library;
use crate::sources::CitationTarget;

/// An `import-progress` event.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ImportProgress {
    /// What is being done: `reading`, `indexing`, `embedding`, …
    pub phase: String,
    pub done: u64,
    pub total: Option<u64>,
    /// The latest line worth showing (usually a file name).
    pub file: String,
}

/// What adding documents did, over every path given.
#[derive(Debug, Clone, Default, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct DocsSummary {
    pub added: u64,
    pub updated: u64,
    pub unchanged: u64,
    pub removed: u64,
    pub failed: u64,
    /// One line per failed file, naming the file and the place.
    pub errors: Vec<String>,
}

/// Counts for the import and history screens.
#[derive(Debug, Clone, Default, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct LibraryStats {
    pub history_sessions: u64,
    pub history_sources: Vec<SourceCount>,
    pub documents: u64,
    pub chunks: u64,
    /// The offline encyclopedia the window offers (absent when the manifest has none).
    pub corpus: Option<CorpusOffer>,
}

/// The corpus `corpus_add` installs when none is named: Wikipedia's vital articles.
pub const DEFAULT_CORPUS: &str = "wikipedia-vital-en";

/// An offline corpus the user can install into the document library.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct CorpusOffer {
    pub name: String,
    pub description: String,
    pub license: String,
    /// The download, in bytes.
    pub size_bytes: u64,
    /// Where it is downloaded from (the only network use, and only on request).
    pub source: String,
    /// Articles in the library from it; `None` when it is not installed.
    pub indexed_documents: Option<u64>,
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct SourceCount {
    pub source: String,
    pub sessions: u64,
}

/// History search filters as the window sends them (dates as `YYYY-MM-DD`).
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(optional_fields))]
#[serde(default)]
pub struct HistoryFilters {
    pub kind: Option<String>,
    pub source: Option<String>,
    pub since: Option<String>,
    pub until: Option<String>,
    pub limit: Option<usize>,
}

/// One history entry with its turns.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct HistoryEntryView {
    pub id: i64,
    pub title: String,
    pub source: String,
    pub kind: String,
    #[cfg_attr(feature = "ts", ts(type = "string | null"))]
    pub started_at: Option<DateTime<Utc>>,
    pub url: Option<String>,
    pub turns: Vec<TurnView>,
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct TurnView {
    pub role: String,
    pub text: String,
    #[cfg_attr(feature = "ts", ts(type = "string | null"))]
    pub at: Option<DateTime<Utc>>,
}

/// What to forget.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(optional_fields))]
#[serde(default)]
pub struct ForgetSelectorView {
    pub id: Option<i64>,
    pub source: Option<String>,
    pub since: Option<String>,
    pub until: Option<String>,
    pub all: bool,
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ForgetSummary {
    pub sessions_removed: u64,
}

/// A cited source, opened.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct SourceView {
    pub title: String,
    /// The passage (document chunk) or the whole entry's text (history); empty for the web.
    pub text: String,
    /// Where it is: a path with chunk and page, a history entry, or an address.
    pub location: String,
    pub url: Option<String>,
    /// Set for history citations, so the window can open the entry on its own screen.
    pub history_session: Option<i64>,
}

impl App {
    pub(super) fn history(&self) -> AppResult<History> {
        let dir = self.paths.history_dir();
        Ok(History::open(&dir)?)
    }

    /// Imports history exports (files, folders, `.zip`), then embeds what is new when the
    /// embedding model is installed. Each file is stored completely or not at all.
    pub fn import_paths(&self, paths: &[String]) -> AppResult<ImportReport> {
        let paths = non_empty_paths(paths)?;
        let progress = Forward::new(self.notifier.as_ref());
        let mut history = self.history()?;
        let embedder = self.embedder()?;
        let model = self.settings()?.embed_model;
        let (report, _) = history.import_then_embed(
            &paths,
            &ImportOptions::default(),
            embedder
                .as_deref()
                .map(|e| (e as &dyn Embedder, model.as_str())),
            &progress,
        )?;
        Ok(report)
    }

    /// Adds documents (files or folders) to the library. A bad file is reported and the others
    /// still go in.
    pub fn docs_add(&self, paths: &[String]) -> AppResult<DocsSummary> {
        let paths = non_empty_paths(paths)?;
        let progress = Forward::new(self.notifier.as_ref());
        let embedder = self.embedder()?;
        let model = self.settings()?.embed_model;
        let mut library = Library::open(&self.paths.docs_dir())?;
        let mut summary = DocsSummary::default();
        for path in &paths {
            let report = library.add(
                path,
                embedder
                    .as_deref()
                    .map(|e| (e as &dyn Embedder, model.as_str())),
                &progress,
            )?;
            summary.added += report.added;
            summary.updated += report.updated;
            summary.unchanged += report.unchanged;
            summary.removed += report.removed;
            summary.failed += report.failed;
            summary
                .errors
                .extend(report.files.iter().filter_map(|f| f.reason.clone()));
        }
        library.release_writer()?;
        Ok(summary)
    }

    /// Downloads the offline corpus (`model-progress` events), then indexes and embeds it
    /// into the document library (`import-progress` events). Interrupted, it carries on where
    /// it stopped the next time.
    pub fn corpus_add(&self, name: Option<&str>) -> AppResult<DocsSummary> {
        let name = name.unwrap_or(DEFAULT_CORPUS);
        let models = crate::models::ModelStore::open(&self.paths)?;
        let spec = models.get(name)?;
        if spec.role != crate::models::Role::Corpus {
            return Err(AppError::Invalid(format!("`{name}` is not a corpus")));
        }
        self.models_fetch(&[name.to_string()])?;
        let json = models.ready_path(name)?;
        let progress = Forward::new(self.notifier.as_ref());
        let embedder = self.embedder()?;
        let model = self.settings()?.embed_model;
        let mut library = Library::open(&self.paths.docs_dir())?;
        let report = library.add_corpus_json(
            &json,
            name,
            embedder
                .as_deref()
                .map(|e| (e as &dyn Embedder, model.as_str())),
            &progress,
        )?;
        library.release_writer()?;
        progress.send(true);
        Ok(DocsSummary {
            added: report.added,
            updated: report.updated,
            unchanged: report.unchanged,
            removed: report.removed,
            failed: report.failed,
            errors: report
                .files
                .iter()
                .filter_map(|f| f.reason.clone())
                .collect(),
        })
    }

    pub fn library_stats(&self) -> AppResult<LibraryStats> {
        let mut stats = LibraryStats::default();
        if self.paths.history_dir().exists() {
            let h = self.history()?.stats()?;
            stats.history_sessions = h.store.sessions;
            stats.history_sources = h
                .store
                .by_source
                .into_iter()
                .map(|(source, sessions)| SourceCount { source, sessions })
                .collect();
        }
        let mut indexed = None;
        if self.paths.docs_dir().exists() {
            let library = Library::open(&self.paths.docs_dir())?;
            let d = library.stats()?;
            stats.documents = d.store.documents;
            stats.chunks = d.store.chunks;
            indexed = library.corpus_root(DEFAULT_CORPUS)?.map(|r| r.documents);
        }
        let models = crate::models::ModelStore::open(&self.paths)?;
        if let Ok(spec) = models.get(DEFAULT_CORPUS) {
            stats.corpus = Some(CorpusOffer {
                name: spec.name.clone(),
                description: spec.description.clone(),
                license: spec.license.clone(),
                size_bytes: spec.total_size(),
                source: spec.files[0]
                    .sources
                    .first()
                    .map(|s| s.describe())
                    .unwrap_or_default(),
                indexed_documents: indexed,
            });
        }
        Ok(stats)
    }

    /// Hybrid search (BM25 + embeddings when installed) over the imported history.
    pub fn history_search(
        &self,
        query: &str,
        filters: &HistoryFilters,
    ) -> AppResult<Vec<SearchHit>> {
        let filter = Filter {
            kinds: parse_list::<Kind>(filters.kind.as_deref(), "kind")?,
            sources: parse_list::<HistorySource>(filters.source.as_deref(), "source")?,
            since: parse_day(filters.since.as_deref(), false)?,
            until: parse_day(filters.until.as_deref(), true)?,
        };
        if !self.paths.history_dir().exists() {
            return Ok(Vec::new());
        }
        let embedder = self.embedder()?;
        let model = self.settings()?.embed_model;
        let mut history = self.history()?;
        let limit = filters.limit.unwrap_or(30).clamp(1, 200);
        let query = query.trim();
        if query.is_empty() {
            return Err(AppError::Invalid("type something to search for".into()));
        }
        Ok(history.search(
            query,
            &filter,
            limit,
            SearchMode::Hybrid,
            embedder
                .as_deref()
                .map(|e| (e as &dyn Embedder, model.as_str())),
        )?)
    }

    pub fn history_show(&self, id: i64) -> AppResult<HistoryEntryView> {
        let history = self.history()?;
        let stored = history.get(id)?.ok_or_else(|| {
            AppError::Invalid(format!(
                "no history entry {id} (it may have been forgotten)"
            ))
        })?;
        let s = stored.entry;
        Ok(HistoryEntryView {
            id,
            title: s.title,
            source: s.source.as_str().to_string(),
            kind: s.kind.as_str().to_string(),
            started_at: s.started_at,
            url: s.url,
            turns: s
                .turns
                .into_iter()
                .map(|t| TurnView {
                    role: t.role.as_str().to_string(),
                    text: t.text,
                    at: t.at,
                })
                .collect(),
        })
    }

    /// Removes entries from the database, the text index and the vectors, then compacts.
    pub fn history_forget(&self, selector: &ForgetSelectorView) -> AppResult<ForgetSummary> {
        let since = parse_day(selector.since.as_deref(), false)?;
        let until = parse_day(selector.until.as_deref(), true)?;
        let selector = if selector.all {
            ForgetSelector::All
        } else if let Some(id) = selector.id {
            ForgetSelector::Entry(id)
        } else if let Some(source) = selector.source.as_deref() {
            ForgetSelector::Source {
                source: source
                    .parse()
                    .map_err(|e: String| AppError::Invalid(format!("source: {e}")))?,
                since,
                until,
            }
        } else if since.is_some() || until.is_some() {
            ForgetSelector::Range { since, until }
        } else {
            return Err(AppError::Invalid(
                "say what to forget: an entry, a source, a date range, or everything".into(),
            ));
        };
        let mut history = self.history()?;
        let report = history.forget(&selector)?;
        Ok(ForgetSummary {
            sessions_removed: report.sessions,
        })
    }

    /// What a citation points at, read back from the library or the history.
    pub fn source_open(&self, target: &CitationTarget) -> AppResult<SourceView> {
        match target {
            CitationTarget::Document {
                path,
                chunk,
                page,
                url,
                ..
            } => {
                let library = Library::open(&self.paths.docs_dir())?;
                let row = library.chunk_at(path, *chunk)?.ok_or_else(|| {
                    AppError::Invalid(format!(
                        "{path}: passage {} is no longer in the document library (the file \
                         changed or was removed)",
                        chunk + 1
                    ))
                })?;
                let mut location = row.shared_name();
                if let Some(p) = page.or(row.page) {
                    location.push_str(&format!(", page {p}"));
                }
                location.push_str(&format!(", passage {}", chunk + 1));
                Ok(SourceView {
                    title: row.title,
                    text: row.text,
                    location,
                    url: url.clone().or(row.url),
                    history_session: None,
                })
            }
            CitationTarget::History { session, url, .. } => {
                let s = self.history_show(*session)?;
                let text = s
                    .turns
                    .iter()
                    .map(|t| format!("[{}] {}", t.role, t.text))
                    .collect::<Vec<_>>()
                    .join("\n\n");
                Ok(SourceView {
                    title: s.title,
                    text,
                    location: format!("history entry {session} ({}, {})", s.source, s.kind),
                    url: url.clone().or(s.url),
                    history_session: Some(*session),
                })
            }
            CitationTarget::Web { url } => Ok(SourceView {
                title: url.clone(),
                text: String::new(),
                location: "a web search result".into(),
                url: Some(url.clone()),
                history_session: None,
            }),
        }
    }
}

fn non_empty_paths(paths: &[String]) -> AppResult<Vec<PathBuf>> {
    let out: Vec<PathBuf> = paths
        .iter()
        .map(|p| p.trim())
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .collect();
    if out.is_empty() {
        return Err(AppError::Invalid(
            "choose at least one file or folder".into(),
        ));
    }
    for p in &out {
        if !p.exists() {
            return Err(AppError::Invalid(format!(
                "{}: no such file or folder",
                p.display()
            )));
        }
    }
    Ok(out)
}

fn parse_list<T: std::str::FromStr>(value: Option<&str>, what: &str) -> AppResult<Vec<T>>
where
    T::Err: std::fmt::Display,
{
    match value
        .map(str::trim)
        .filter(|v| !v.is_empty() && *v != "any")
    {
        None => Ok(Vec::new()),
        Some(v) => v
            .parse()
            .map(|t| vec![t])
            .map_err(|e| AppError::Invalid(format!("{what}: {e}"))),
    }
}

/// `YYYY-MM-DD` as the start of that day (UTC), or the start of the next day for an `until`
/// (so the day itself is included).
fn parse_day(value: Option<&str>, end_of_day: bool) -> AppResult<Option<DateTime<Utc>>> {
    let Some(v) = value.map(str::trim).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    let day = NaiveDate::parse_from_str(v, "%Y-%m-%d")
        .map_err(|_| AppError::Invalid(format!("{v:?} is not a date (YYYY-MM-DD)")))?;
    let day = if end_of_day {
        day.succ_opt().unwrap_or(day)
    } else {
        day
    };
    Ok(day.and_hms_opt(0, 0, 0).map(|t| t.and_utc()))
}

/// History and document progress as `import-progress` events (reading history into memory
/// too).
pub(crate) struct Forward<'a> {
    notifier: &'a dyn Notifier,
    state: Mutex<ImportProgress>,
    throttle: Throttle,
}

impl<'a> Forward<'a> {
    pub(crate) fn new(notifier: &'a dyn Notifier) -> Self {
        Self {
            notifier,
            state: Mutex::new(ImportProgress {
                phase: String::new(),
                done: 0,
                total: None,
                file: String::new(),
            }),
            throttle: Throttle::new(),
        }
    }

    fn send(&self, force: bool) {
        if force || self.throttle.ready() {
            let p = self.state.lock().unwrap_or_else(|e| e.into_inner()).clone();
            self.notifier.import_progress(&p);
        }
    }
}

impl Progress for Forward<'_> {
    fn begin(&self, what: &str, total: Option<u64>) {
        {
            let mut p = self.state.lock().unwrap_or_else(|e| e.into_inner());
            p.phase = what.to_string();
            p.total = total;
            p.done = 0;
        }
        self.send(true);
    }

    fn advance(&self, n: u64) {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).done += n;
        self.send(false);
    }

    fn note(&self, line: &str) {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).file = line.to_string();
        self.send(false);
    }

    fn end(&self) {
        self.send(true);
    }
}
