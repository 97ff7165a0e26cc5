//! The user's imported history as a research source: hybrid search over sessions, each hit
//! cited by its session id.

use super::{CitationTarget, Evidence, Source, SourceError};
use crate::embed::Embedder;
use crate::history::{Filter, History, SearchMode};

/// Characters of a session's text handed to the model as one passage.
pub const PASSAGE_CHARS: usize = 900;

/// History as a [`Source`].
pub struct HistorySourceAdapter {
    history: History,
    filter: Filter,
}

impl HistorySourceAdapter {
    pub fn new(history: History) -> Self {
        Self {
            history,
            filter: Filter::default(),
        }
    }

    /// Only sessions this filter admits are searched.
    pub fn with_filter(mut self, filter: Filter) -> Self {
        self.filter = filter;
        self
    }

    pub fn history(&self) -> &History {
        &self.history
    }

    pub fn history_mut(&mut self) -> &mut History {
        &mut self.history
    }
}

impl Source for HistorySourceAdapter {
    fn name(&self) -> &str {
        "history"
    }

    fn search(
        &mut self,
        query: &str,
        limit: usize,
        embedder: Option<(&dyn Embedder, &str)>,
    ) -> Result<Vec<Evidence>, SourceError> {
        let mode = if embedder.is_some() {
            SearchMode::Hybrid
        } else {
            SearchMode::Bm25
        };
        let hits = self
            .history
            .search(query, &self.filter, limit, mode, embedder)?;
        let ids: Vec<i64> = hits.iter().map(|h| h.id).collect();
        let sessions = self.history.get_many(&ids)?;
        let mut out = Vec::with_capacity(hits.len());
        for hit in hits {
            let Some(stored) = sessions.iter().find(|s| s.id == hit.id) else {
                continue;
            };
            let text = passage(&stored.session.full_text(), PASSAGE_CHARS);
            out.push(Evidence {
                target: CitationTarget::History {
                    session: hit.id,
                    url: stored.session.url.clone(),
                },
                title: stored.session.title.clone(),
                text,
                score: hit.score,
            });
        }
        Ok(out)
    }
}

/// The first `max` characters of `text`, cut at a word boundary, with whitespace collapsed.
pub fn passage(text: &str, max: usize) -> String {
    let mut out = String::with_capacity(max.min(text.len()));
    let mut chars = 0;
    for word in text.split_whitespace() {
        let n = word.chars().count();
        if chars + n + 1 > max && chars > 0 {
            out.push('…');
            break;
        }
        if !out.is_empty() {
            out.push(' ');
            chars += 1;
        }
        out.push_str(word);
        chars += n;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::passage;

    #[test]
    fn passage_cuts_at_words_and_collapses_space() {
        assert_eq!(passage("a  b\n\nc", 100), "a b c");
        assert_eq!(passage("alpha beta gamma", 11), "alpha beta…");
    }
}
