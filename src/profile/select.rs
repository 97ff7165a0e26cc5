//! Selection: which retrieved entries carry signals that would change the answer to this
//! query (BESPOKE Table 22). The model is asked about every candidate, one entry per call
//! ([`super::extract`]): an entry is kept when it yields a phrase about the user. A cheaper
//! mode first drops the candidates whose embedding is not close enough to the query.

use serde::{Deserialize, Serialize};

use super::ProfileError;
use crate::embed::Embedder;
use crate::history::{Filter, History, Kind, SearchMode, StoredEntry};
use crate::llm::Usage;

/// Which candidates the model is asked about.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "lowercase")]
pub enum Selection {
    /// Every candidate, one extraction call each. `batch` is kept for settings and cached
    /// profiles written before extraction replaced batch judging; it no longer matters.
    Llm { batch: usize },
    /// Only candidates whose best chunk has cosine similarity ≥ `min_similarity` with the query.
    Embedding { min_similarity: f32 },
}

impl Default for Selection {
    fn default() -> Self {
        Selection::Llm { batch: 8 }
    }
}

/// A kept entry and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Kept {
    pub id: i64,
    /// The phrase it yielded about the user.
    pub signal: String,
    /// Indirectly related, but a decision-changing constraint (from batch judging; extraction
    /// does not tell this apart and leaves it false).
    pub adjacent: bool,
}

/// The selection's result and cost.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Selected {
    /// Entries that yielded a phrase, in retrieval order.
    pub kept: Vec<Kept>,
    /// Entries the model was asked about.
    pub judged: usize,
    /// Model use of the selection itself (none: the extraction calls are counted as
    /// generation).
    pub usage: Usage,
    pub seconds: f64,
}

/// How an entry is shown to the model: one line, its kind said plainly.
pub fn entry_line(s: &StoredEntry, max_chars: usize) -> String {
    let session = &s.entry;
    let mut text = match session.kind {
        Kind::Search => format!("Searched: {}", session.title),
        Kind::Visit => format!("Visited page: {}", session.title),
        Kind::Chat => {
            let mut t = format!("Chat \"{}\":", session.title);
            for turn in session.turns.iter().take(4) {
                t.push_str(&format!(" [{}] {}", turn.role.as_str(), turn.text));
            }
            t
        }
    };
    text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.chars().count() > max_chars {
        text = text.chars().take(max_chars).collect::<String>() + "…";
    }
    text
}

/// Entries as the prompts list them: `[n] one line`, numbered from 1.
pub(crate) fn numbered(sessions: &[StoredEntry], max_chars: usize) -> Vec<serde_json::Value> {
    sessions
        .iter()
        .enumerate()
        .map(|(i, s)| serde_json::json!({"number": i + 1, "text": entry_line(s, max_chars)}))
        .collect()
}

/// The candidates (already loaded, in retrieval order) the model is asked about: all of them,
/// or under [`Selection::Embedding`] those close enough to `query`.
pub fn prefilter(
    history: &mut History,
    embedder: Option<(&dyn Embedder, &str)>,
    query: &str,
    candidates: Vec<StoredEntry>,
    selection: Selection,
) -> Result<Vec<StoredEntry>, ProfileError> {
    let Selection::Embedding { min_similarity } = selection else {
        return Ok(candidates);
    };
    let Some(embedder) = embedder else {
        return Err(ProfileError::Invalid(
            "embedding-only selection needs the embedding model".into(),
        ));
    };
    // Cosine similarity of each candidate's best chunk, from the vector index.
    let scored = history.search(
        query,
        &Filter::default(),
        candidates.len().max(1) * 50,
        SearchMode::Vector,
        Some(embedder),
    )?;
    Ok(candidates
        .into_iter()
        .filter(|c| {
            scored
                .iter()
                .find(|h| h.id == c.id)
                .is_some_and(|h| h.score >= min_similarity)
        })
        .collect())
}
