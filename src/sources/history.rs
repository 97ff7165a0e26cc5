//! The user's imported history as a research source: hybrid search over entries, each hit
//! cited by its entry id.
//!
//! History is evidence about the user, not about the world: what the user typed (a search, a
//! chat turn) and the pages they visited describe them and belong to the profile. Only what an
//! assistant answered in an earlier chat can stand as a passage, and the research loop cites
//! it as "your earlier conversation said …", never as a source of fact.

use super::{CitationTarget, Evidence, Source, SourceError};
use crate::embed::Embedder;
use crate::history::{Entry, Filter, History, Kind, SearchMode, TurnRole};

/// Characters of an entry's text handed to the model as one passage.
pub const PASSAGE_CHARS: usize = 900;

/// Entries searched per passage wanted: searches and visits match a query as well as chats
/// do but yield no passage, so the search looks further to fill `limit`.
const OVERFETCH: usize = 3;

/// The part of an entry that may stand as research evidence: the assistant turns of a chat,
/// joined. `None` for searches, visits, and chats without an assistant turn (the user's own
/// words are evidence about the user only).
pub fn evidence_text(session: &Entry) -> Option<String> {
    if session.kind != Kind::Chat {
        return None;
    }
    let text: Vec<&str> = session
        .turns
        .iter()
        .filter(|t| t.role == TurnRole::Assistant)
        .map(|t| t.text.trim())
        .filter(|t| !t.is_empty())
        .collect();
    (!text.is_empty()).then(|| text.join("\n"))
}

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

    /// Only entries this filter admits are searched.
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
        let hits = self.history.search(
            query,
            &self.filter,
            limit.saturating_mul(OVERFETCH),
            mode,
            embedder,
        )?;
        let ids: Vec<i64> = hits.iter().map(|h| h.id).collect();
        let sessions = self.history.get_many(&ids)?;
        let mut out = Vec::with_capacity(hits.len());
        for hit in hits {
            let Some(stored) = sessions.iter().find(|s| s.id == hit.id) else {
                continue;
            };
            let Some(text) = evidence_text(&stored.entry) else {
                continue;
            };
            if out.len() == limit {
                break;
            }
            let text = passage(&text, PASSAGE_CHARS);
            out.push(Evidence {
                target: CitationTarget::History {
                    session: hit.id,
                    url: stored.entry.url.clone(),
                    source: Some(stored.entry.source.as_str().to_string()),
                    day: stored
                        .entry
                        .started_at
                        .map(|t| t.format("%Y-%m-%d").to_string()),
                },
                title: stored.entry.title.clone(),
                text,
                score: hit.score,
            });
        }
        Ok(out)
    }
}

/// The first `max` characters of `text`, cut at a word boundary, with whitespace collapsed
/// within each paragraph and a line break between paragraphs (lines apart by a blank line). A
/// Markdown heading stays on its own line: collapsed into the paragraph after it, the model
/// read "… for a first half marathon Cushioning and knees Cushioning is the thickness …" as
/// one sentence and wrote it into a report.
pub fn passage(text: &str, max: usize) -> String {
    let mut out = String::with_capacity(max.min(text.len()));
    let mut chars = 0;
    let mut new_paragraph = false;
    for line in text.lines() {
        if line.trim().is_empty() {
            new_paragraph = true;
            continue;
        }
        for word in line.split_whitespace() {
            let n = word.chars().count();
            if chars + n + 1 > max && chars > 0 {
                out.push('…');
                return out;
            }
            if !out.is_empty() {
                out.push(if new_paragraph { '\n' } else { ' ' });
                chars += 1;
            }
            new_paragraph = false;
            out.push_str(word);
            chars += n;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{evidence_text, passage};
    use crate::history::{Entry, HistorySource, Kind, Turn};

    fn session(kind: Kind, turns: Vec<Turn>) -> Entry {
        Entry {
            source: HistorySource::Chatgpt,
            kind,
            title: "Running shoes".into(),
            url: None,
            external_id: None,
            started_at: None,
            time_note: None,
            turns,
        }
    }

    #[test]
    fn only_assistant_turns_of_a_chat_are_evidence() {
        let chat = session(
            Kind::Chat,
            vec![
                Turn::user("Which running shoes should I buy for my bad knee?", None),
                Turn::assistant("Cushioned shoes reduce the load on the knee.", None),
                Turn::user("And for trails?", None),
                Turn::assistant("Trail shoes have deeper lugs.", None),
            ],
        );
        let text = evidence_text(&chat).unwrap();
        assert_eq!(
            text,
            "Cushioned shoes reduce the load on the knee.\nTrail shoes have deeper lugs."
        );
        assert!(!text.contains("Which running shoes"));
        let asked_only = session(Kind::Chat, vec![Turn::user("Is tea healthy?", None)]);
        assert_eq!(evidence_text(&asked_only), None);
        let search = session(Kind::Search, vec![Turn::user("running shoes", None)]);
        assert_eq!(evidence_text(&search), None);
        let visit = session(Kind::Visit, vec![Turn::user("Shoe shop", None)]);
        assert_eq!(evidence_text(&visit), None);
    }

    #[test]
    fn passage_cuts_at_words_and_collapses_space_within_paragraphs() {
        assert_eq!(passage("a  b\nc\n\n \n d", 100), "a b c\nd");
        assert_eq!(passage("alpha beta gamma", 11), "alpha beta…");
        // A heading stays a line of its own, not the start of the next sentence.
        let chunk = "Cushioning and knees\n\nCushioning is the thickness of the midsole foam.";
        assert_eq!(
            passage(chunk, 200),
            "Cushioning and knees\nCushioning is the thickness of the midsole foam."
        );
        assert_eq!(passage(chunk, 32), "Cushioning and knees\nCushioning…");
    }
}
