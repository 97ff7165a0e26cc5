//! Where research evidence comes from: the user's local documents, their imported history, and
//! — only when the user configures it — a web search engine.
//!
//! Every piece of [`Evidence`] carries a [`CitationTarget`] that stays valid after the run: a
//! file path and chunk (and page for PDFs), a history session id, or a URL. Reports cite these
//! targets, so a citation always leads back to what the model actually read.

pub mod docs;
pub mod history;
pub mod web;

use serde::{Deserialize, Serialize};

use crate::embed::Embedder;

/// Errors from a source.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("history: {0}")]
    History(#[from] crate::history::HistoryError),
    #[error("{source_name}: {message}")]
    Other {
        source_name: String,
        message: String,
    },
}

/// Where a piece of evidence can be found again.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CitationTarget {
    /// A chunk of a local document. `path` is the file's absolute path (or, for a corpus,
    /// `<corpus file>#<article>`); `chunk` is 0-based; `page` is 1-based, for PDFs.
    Document {
        path: String,
        chunk: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        page: Option<u32>,
        /// A public address of the same text, when there is one (corpus articles).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        url: Option<String>,
        /// How a shared report names it: relative to the folder the user added, or the
        /// article's title (see [`docs::ChunkRow::shared_name`]). Absent in sessions stored
        /// before it existed; [`CitationTarget::display_name`] then falls back to the file name.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        name: Option<String>,
    },
    /// An imported history session.
    History {
        session: i64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        url: Option<String>,
        /// Where it was imported from (`chatgpt`, `chrome`, …) and the day it started
        /// (`YYYY-MM-DD`), so a reference names it for a reader. Absent in sessions stored
        /// before they existed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        source: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        day: Option<String>,
    },
    /// A web page found through the configured search engine.
    Web { url: String },
}

/// The last component of a path (the whole string when it has none).
pub fn file_name_of(path: &str) -> String {
    std::path::Path::new(path)
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.to_string())
}

impl CitationTarget {
    /// A stable identity: the same passage found twice is one citation.
    pub fn key(&self) -> String {
        match self {
            Self::Document { path, chunk, .. } => format!("doc:{path}#{chunk}"),
            Self::History { session, .. } => format!("history:{session}"),
            Self::Web { url } => format!("web:{url}"),
        }
    }

    /// The document's shareable name: never an absolute path or an internal file name.
    pub fn display_name(&self) -> Option<String> {
        match self {
            Self::Document {
                name: Some(name), ..
            } => Some(name.clone()),
            Self::Document { path, .. } => Some(match path.split_once('#') {
                // A corpus article: `<corpus file>#<title>`.
                Some((_, article)) => article.to_string(),
                None => file_name_of(path),
            }),
            _ => None,
        }
    }

    /// Where a reader goes to check it, in words, safe to share: `notes/a.pdf, page 3,
    /// passage 8`, `Printing press, passage 1`, `your chatgpt history, 2024-03-02`, or the URL.
    pub fn locator(&self) -> String {
        match self {
            Self::Document { chunk, page, .. } => {
                let mut out = self.display_name().unwrap_or_default();
                if let Some(p) = page {
                    out.push_str(&format!(", page {p}"));
                }
                out.push_str(&format!(", passage {}", chunk + 1));
                out
            }
            Self::History {
                session,
                source,
                day,
                ..
            } => {
                let whose = match source {
                    Some(s) => format!("your {s} history"),
                    None => "your history".to_string(),
                };
                match day {
                    Some(day) => format!("{whose}, {day}"),
                    None => format!("{whose}, session {session}"),
                }
            }
            Self::Web { url } => url.clone(),
        }
    }

    /// A public link for the report, when the target has one. Local files get none: a
    /// `file://` link would put the user's folders into a report they share.
    pub fn link(&self) -> Option<String> {
        match self {
            Self::Document { url, .. } => url.clone(),
            Self::History { url, .. } => url.clone(),
            Self::Web { url } => Some(url.clone()),
        }
    }

    /// Which kind of source it came from: `documents`, `history` or `web`.
    pub fn source_kind(&self) -> &'static str {
        match self {
            Self::Document { .. } => "documents",
            Self::History { .. } => "history",
            Self::Web { .. } => "web",
        }
    }
}

/// One retrieved passage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Evidence {
    pub target: CitationTarget,
    pub title: String,
    /// The passage itself, plain text, at most a few hundred words.
    pub text: String,
    /// The source's own relevance score (only comparable within one source).
    pub score: f32,
}

/// A searchable body of evidence.
pub trait Source: Send {
    /// Short name for logs and progress: `documents`, `history`, `web`.
    fn name(&self) -> &str;

    /// Up to `limit` passages for `query`, best first. `embedder` (with its model name) enables
    /// semantic search where the source supports it.
    fn search(
        &mut self,
        query: &str,
        limit: usize,
        embedder: Option<(&dyn Embedder, &str)>,
    ) -> Result<Vec<Evidence>, SourceError>;

    /// Whether a search sends anything off this machine. The loop states this to the user.
    fn is_remote(&self) -> bool {
        false
    }
}

/// Several sources searched together, their lists fused by reciprocal rank.
#[derive(Default)]
pub struct Sources {
    sources: Vec<Box<dyn Source>>,
}

impl Sources {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, source: Box<dyn Source>) {
        self.sources.push(source);
    }

    pub fn is_empty(&self) -> bool {
        self.sources.is_empty()
    }

    pub fn names(&self) -> Vec<String> {
        self.sources.iter().map(|s| s.name().to_string()).collect()
    }

    /// Whether any source sends queries off this machine.
    pub fn any_remote(&self) -> bool {
        self.sources.iter().any(|s| s.is_remote())
    }

    /// The best `limit` passages over all sources: each source contributes its own list, and
    /// the lists are fused by reciprocal rank (k = 60), so no source's score scale dominates.
    /// Duplicates (same target) count once, at their best rank.
    pub fn search(
        &mut self,
        query: &str,
        limit: usize,
        embedder: Option<(&dyn Embedder, &str)>,
    ) -> Result<Vec<Evidence>, SourceError> {
        let mut lists = Vec::with_capacity(self.sources.len());
        for source in &mut self.sources {
            lists.push(source.search(query, limit, embedder)?);
        }
        Ok(fuse(lists, limit))
    }
}

/// Reciprocal-rank fusion of several ranked lists (the shared
/// [`reciprocal_rank_fusion`](crate::retrieval::reciprocal_rank_fusion), keyed by citation
/// target); each passage keeps the text of its first occurrence and takes the fused score.
pub fn fuse(lists: Vec<Vec<Evidence>>, limit: usize) -> Vec<Evidence> {
    let keys: Vec<Vec<String>> = lists
        .iter()
        .map(|list| list.iter().map(|ev| ev.target.key()).collect())
        .collect();
    let refs: Vec<&[String]> = keys.iter().map(Vec::as_slice).collect();
    let fused = crate::retrieval::reciprocal_rank_fusion(&refs, limit);
    let mut first: std::collections::HashMap<String, Evidence> = std::collections::HashMap::new();
    for (ev, key) in lists.into_iter().flatten().zip(keys.into_iter().flatten()) {
        first.entry(key).or_insert(ev);
    }
    fused
        .into_iter()
        .filter_map(|(key, score)| {
            let mut ev = first.remove(&key)?;
            ev.score = score;
            Some(ev)
        })
        .collect()
}
