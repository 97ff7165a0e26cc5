//! Hybrid history search: BM25 and embedding similarity, fused by reciprocal rank (the shared
//! [`crate::retrieval::fusion`]), BM25's list first.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::entry::{HistorySource, Kind};
use super::text_index::Filter;
use super::{History, HistoryResult};
use crate::embed::Embedder;
use crate::retrieval::reciprocal_rank_fusion;

/// Which retrievers to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SearchMode {
    Bm25,
    Vector,
    Hybrid,
}

/// One search result.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct SearchHit {
    pub id: i64,
    /// The fused score (or the single retriever's score in a single mode).
    pub score: f32,
    /// 1-based rank in the BM25 list, if it was there.
    pub bm25_rank: Option<usize>,
    /// 1-based rank in the vector list, if it was there.
    pub vector_rank: Option<usize>,
    pub kind: Kind,
    pub source: HistorySource,
    pub title: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub url: Option<String>,
    #[cfg_attr(feature = "ts", ts(type = "string | null"))]
    pub started_at: Option<DateTime<Utc>>,
    /// A short plain-text excerpt.
    pub snippet: String,
}

impl History {
    /// Searches history. `embedder` and `model` are needed for the vector and hybrid modes; in
    /// hybrid mode without them (or with no vectors stored yet) the search is BM25 only.
    pub fn search(
        &mut self,
        query: &str,
        filter: &Filter,
        limit: usize,
        mode: SearchMode,
        embedder: Option<(&dyn Embedder, &str)>,
    ) -> HistoryResult<Vec<SearchHit>> {
        // Each retriever contributes a deeper list than asked for, so fusion has overlap to
        // work with.
        let depth = (limit * 4).max(50);
        let bm25: Vec<(i64, f32)> = if mode == SearchMode::Vector {
            Vec::new()
        } else {
            self.search_text(query, filter, depth)?
        };
        let vector: Vec<(i64, f32)> = match (mode, embedder) {
            (SearchMode::Bm25, _) => Vec::new(),
            (_, Some((embedder, model))) => {
                let index = self.vector_index(model)?;
                if index.is_empty() {
                    Vec::new()
                } else {
                    let q = embedder.embed(&[query])?;
                    let q = q.into_iter().next().unwrap_or_default();
                    self.vector_index(model)?.search(&q, filter, depth)
                }
            }
            (SearchMode::Vector, None) => {
                return Err(super::HistoryError::Invalid(
                    "vector search needs the embedding model".into(),
                ))
            }
            (SearchMode::Hybrid, None) => Vec::new(),
        };
        let ranked: Vec<(i64, f32)> = match mode {
            SearchMode::Bm25 => bm25.iter().take(limit).copied().collect(),
            SearchMode::Vector => vector.iter().take(limit).copied().collect(),
            SearchMode::Hybrid => {
                let a: Vec<i64> = bm25.iter().map(|h| h.0).collect();
                let b: Vec<i64> = vector.iter().map(|h| h.0).collect();
                reciprocal_rank_fusion(&[a.as_slice(), b.as_slice()], limit)
            }
        };
        let rank_in =
            |list: &[(i64, f32)], id: i64| list.iter().position(|h| h.0 == id).map(|p| p + 1);
        let ids: Vec<i64> = ranked.iter().map(|h| h.0).collect();
        let mut sessions: HashMap<i64, _> = self
            .get_many(&ids)?
            .into_iter()
            .map(|s| (s.id, s))
            .collect();
        let mut hits = Vec::with_capacity(ranked.len());
        for (id, score) in ranked {
            // An entry forgotten by another process since the index was read is skipped.
            let Some(stored) = sessions.remove(&id) else {
                continue;
            };
            let s = &stored.entry;
            hits.push(SearchHit {
                id,
                score,
                bm25_rank: rank_in(&bm25, id),
                vector_rank: rank_in(&vector, id),
                kind: s.kind,
                source: s.source,
                title: s.title.clone(),
                url: s.url.clone(),
                started_at: s.started_at,
                snippet: snippet(&s.full_text(), query, 160),
            });
        }
        Ok(hits)
    }
}

/// About `max` chars of `text` around the first word of `query` it contains (or its start),
/// on one line.
pub fn snippet(text: &str, query: &str, max: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_whitespace() { ' ' } else { c })
        .collect();
    let lower = flat.to_lowercase();
    // Byte offsets differ between `flat` and `lower` only for rare case mappings; fall back to
    // the start when they do.
    let start = query
        .split_whitespace()
        .filter(|w| w.chars().count() > 2)
        .filter_map(|w| lower.find(&w.to_lowercase()))
        .min()
        .filter(|_| lower.len() == flat.len())
        .unwrap_or(0);
    let begin = flat[..start]
        .char_indices()
        .rev()
        .nth(max / 4)
        .map(|(i, _)| i)
        .unwrap_or(0);
    let mut out: String = flat[begin..].chars().take(max).collect();
    if begin > 0 {
        out.insert(0, '…');
    }
    if flat[begin..].chars().count() > max {
        out.push('…');
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snippet_centres_on_a_query_word() {
        let text = format!(
            "{} sourdough starter feeding {}",
            "x ".repeat(300),
            "y ".repeat(300)
        );
        let s = snippet(&text, "starter", 80);
        assert!(s.contains("starter"), "{s}");
        assert!(s.starts_with('…') && s.ends_with('…'), "{s}");
        assert_eq!(snippet("short text", "zzz", 80), "short text");
    }
}
