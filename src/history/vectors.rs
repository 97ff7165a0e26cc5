//! The semantic side of history search: every entry is cut into chunks, each chunk gets an
//! embedding, stored durably in SQLite as int8 and scanned exactly in memory (the shared
//! [`crate::retrieval::vectors`]); an entry scores as its best chunk.

use super::entry::{Entry, HistorySource, Kind};
use super::store::{Store, StoreResult};
use super::text_index::Filter;
use crate::retrieval::vectors::{top_k, Int8Matrix};

/// Characters per chunk: about 150 tokens, inside the 256-token window of small sentence
/// encoders such as all-MiniLM-L6-v2.
pub const CHUNK_CHARS: usize = 600;
/// Long conversations are embedded up to this many chunks; BM25 still sees all their text.
pub const MAX_CHUNKS: usize = 24;

/// Cuts an entry into the texts that get embedded. Every chunk starts with the title, so a
/// chunk from the middle of a chat still says what the chat was about.
pub fn chunks(session: &Entry) -> Vec<String> {
    let title = session.title.trim();
    let mut body = String::new();
    for turn in &session.turns {
        let text = turn.text.trim();
        if text.is_empty() || text == title {
            continue;
        }
        if !body.is_empty() {
            body.push('\n');
        }
        body.push_str(text);
    }
    if body.is_empty() {
        return vec![title.to_string()];
    }
    let budget = CHUNK_CHARS
        .saturating_sub(title.len().min(CHUNK_CHARS / 3))
        .max(200);
    let mut out = Vec::new();
    let mut rest = body.as_str();
    while !rest.is_empty() && out.len() < MAX_CHUNKS {
        let piece = take_chars_at_boundary(rest, budget);
        rest = rest[piece.len()..].trim_start();
        if title.is_empty() {
            out.push(piece.trim().to_string());
        } else {
            out.push(format!("{title}\n{}", piece.trim()));
        }
    }
    out
}

/// The longest prefix of at most `max` chars, cut at the last whitespace when there is one.
fn take_chars_at_boundary(s: &str, max: usize) -> &str {
    let end = s.char_indices().nth(max).map(|(i, _)| i).unwrap_or(s.len());
    if end == s.len() {
        return s;
    }
    match s[..end].rfind(char::is_whitespace) {
        Some(i) if i > end / 2 => &s[..i],
        _ => &s[..end],
    }
}

/// All stored vectors of one embedding model, in memory, for exact search: the shared int8
/// matrix, plus per row the entry it belongs to and that entry's filter fields.
#[derive(Default)]
pub struct VectorIndex {
    matrix: Int8Matrix,
    session_of: Vec<i64>,
    kinds: Vec<Kind>,
    sources: Vec<HistorySource>,
    times: Vec<Option<i64>>,
}

impl VectorIndex {
    /// Loads every vector `model` made from the store.
    pub fn load(store: &Store, model: &str) -> StoreResult<Self> {
        let mut index = VectorIndex::default();
        store.for_each_vector(model, |row| {
            if !index.matrix.push_blob(row.scale, row.values) {
                tracing::warn!(session = row.session_id, "vector of the wrong size skipped");
                return;
            }
            index.session_of.push(row.session_id);
            index.kinds.push(row.kind);
            index.sources.push(row.source);
            index.times.push(row.started_at);
        })?;
        Ok(index)
    }

    /// Number of chunk vectors.
    pub fn len(&self) -> usize {
        self.session_of.len()
    }

    pub fn is_empty(&self) -> bool {
        self.session_of.is_empty()
    }

    /// The `limit` sessions most similar to `query` (an L2-normalised embedding), as
    /// (entry id, cosine similarity), best first.
    pub fn search(&self, query: &[f32], filter: &Filter, limit: usize) -> Vec<(i64, f32)> {
        let Some(q) = self.matrix.query(query).filter(|_| limit > 0) else {
            return Vec::new();
        };
        // Best chunk per entry; chunks of an entry are contiguous (loaded in id order).
        let mut best: Vec<(i64, f32)> = Vec::new();
        let filtered = !filter.is_empty();
        for (i, &session) in self.session_of.iter().enumerate() {
            if filtered && !filter.admits(self.kinds[i], self.sources[i], self.times[i]) {
                continue;
            }
            let score = self.matrix.similarity(&q, i);
            match best.last_mut() {
                Some((id, s)) if *id == session => {
                    if score > *s {
                        *s = score;
                    }
                }
                _ => best.push((session, score)),
            }
        }
        top_k(best, limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::entry::Turn;
    use crate::retrieval::QuantizedVector;

    fn chat(title: &str, turns: &[&str]) -> Entry {
        Entry {
            source: HistorySource::Claude,
            kind: Kind::Chat,
            title: title.into(),
            url: None,
            external_id: None,
            started_at: None,
            time_note: None,
            turns: turns.iter().map(|t| Turn::user(*t, None)).collect(),
        }
    }

    #[test]
    fn short_session_is_one_chunk_long_chat_is_many() {
        let one = chunks(&chat("rust lifetimes", &["rust lifetimes"]));
        assert_eq!(one, vec!["rust lifetimes".to_string()]);
        let long_turn = "word ".repeat(1000);
        let many = chunks(&chat("essay", &[&long_turn]));
        assert!(many.len() > 5, "{}", many.len());
        assert!(many.iter().all(|c| c.starts_with("essay\n")));
        assert!(many.iter().all(|c| c.chars().count() <= CHUNK_CHARS + 10));
        let huge = "word ".repeat(100_000);
        assert_eq!(chunks(&chat("t", &[&huge])).len(), MAX_CHUNKS);
    }

    #[test]
    fn chunking_never_splits_a_char() {
        let text = "é".repeat(2000);
        for c in chunks(&chat("", &[&text])) {
            assert!(c.chars().all(|ch| ch == 'é'));
        }
    }

    #[test]
    fn search_scores_sessions_by_their_best_chunk() {
        let mut idx = VectorIndex::default();
        let mut push = |session: i64, v: [f32; 2], kind: Kind| {
            assert!(idx.matrix.push(&QuantizedVector::quantize(&v)));
            idx.session_of.push(session);
            idx.kinds.push(kind);
            idx.sources.push(HistorySource::Chatgpt);
            idx.times.push(None);
        };
        push(1, [0.0, 1.0], Kind::Chat);
        push(1, [1.0, 0.0], Kind::Chat);
        push(2, [0.6, 0.8], Kind::Search);
        push(3, [-1.0, 0.0], Kind::Search);
        let hits = idx.search(&[1.0, 0.0], &Filter::default(), 2);
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), vec![1, 2]);
        assert!((hits[0].1 - 1.0).abs() < 0.02);
        let only_search = Filter {
            kinds: vec![Kind::Search],
            ..Default::default()
        };
        let hits = idx.search(&[1.0, 0.0], &only_search, 5);
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), vec![2, 3]);
    }
}
