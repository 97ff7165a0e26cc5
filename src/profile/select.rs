//! Selection: which retrieved sessions carry signals that would change the answer to this
//! query (BESPOKE Table 22). The LLM judges candidates in small batches with grammar-constrained
//! output whose session numbers can only name sessions of that batch; a cheaper mode keeps the
//! candidates whose embedding is close enough to the query.

use serde::{Deserialize, Serialize};

use super::ProfileError;
use crate::embed::Embedder;
use crate::history::{Filter, History, Kind, SearchMode, StoredSession};
use crate::llm::{Llm, Usage};

/// How candidates are judged.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "lowercase")]
pub enum Selection {
    /// LLM relevance judgments, `batch` sessions per call.
    Llm { batch: usize },
    /// Keep candidates whose best chunk has cosine similarity ≥ `min_similarity` with the query.
    Embedding { min_similarity: f32 },
}

impl Default for Selection {
    fn default() -> Self {
        Selection::Llm { batch: 8 }
    }
}

/// A kept session and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Kept {
    pub id: i64,
    /// The signal it carries, in a few words.
    pub signal: String,
    /// Indirectly related, but a decision-changing constraint.
    pub adjacent: bool,
}

/// The selection's result and cost.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Selected {
    pub kept: Vec<Kept>,
    pub judged: usize,
    pub usage: Usage,
    pub seconds: f64,
}

/// How a session is shown to the model: one line, its kind said plainly.
pub fn session_line(s: &StoredSession, max_chars: usize) -> String {
    let session = &s.session;
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

/// Sessions as the prompts list them: `[n] one line`, numbered from 1.
pub(crate) fn numbered(sessions: &[StoredSession], max_chars: usize) -> Vec<serde_json::Value> {
    sessions
        .iter()
        .enumerate()
        .map(|(i, s)| serde_json::json!({"number": i + 1, "text": session_line(s, max_chars)}))
        .collect()
}

#[derive(Deserialize)]
struct Judgement {
    decisions: Vec<Decision>,
}

#[derive(Deserialize)]
struct Decision {
    keep: bool,
    signal: String,
    adjacent: bool,
}

/// The output schema for a batch of `n` sessions: exactly one decision per session, in the
/// order they were listed. Asking for a verdict on every session (as BESPOKE judges each one)
/// keeps a small model from answering with an empty list by default.
fn judgement_schema(n: usize) -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "decisions": {
                "type": "array",
                "minItems": n,
                "maxItems": n,
                "items": {
                    "type": "object",
                    "properties": {
                        "keep": {"type": "boolean"},
                        "signal": {"type": "string", "maxLength": 60},
                        "adjacent": {"type": "boolean"}
                    },
                    "required": ["keep", "signal", "adjacent"],
                    "additionalProperties": false
                }
            }
        },
        "required": ["decisions"],
        "additionalProperties": false
    })
}

/// Judges `candidates` (already loaded, in retrieval order) for `query`.
pub fn select(
    llm: Option<&dyn Llm>,
    history: &mut History,
    embedder: Option<(&dyn Embedder, &str)>,
    query: &str,
    candidates: &[StoredSession],
    selection: Selection,
) -> Result<Selected, ProfileError> {
    let started = std::time::Instant::now();
    let mut out = Selected {
        judged: candidates.len(),
        ..Selected::default()
    };
    match selection {
        Selection::Embedding { min_similarity } => {
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
            for c in candidates {
                if let Some(hit) = scored.iter().find(|h| h.id == c.id) {
                    if hit.score >= min_similarity {
                        out.kept.push(Kept {
                            id: c.id,
                            signal: format!("similarity {:.2}", hit.score),
                            adjacent: false,
                        });
                    }
                }
            }
        }
        Selection::Llm { batch } => {
            let Some(llm) = llm else {
                return Err(ProfileError::Invalid(
                    "LLM selection needs a chat model".into(),
                ));
            };
            for chunk in candidates.chunks(batch.max(1)) {
                let sessions = numbered(chunk, 300);
                let prompt = crate::prompts::render(
                    "profile_select",
                    minijinja::context! { query, sessions },
                )?;
                let (judgement, completion): (Judgement, _) = crate::llm::complete_schema(
                    llm,
                    vec![crate::llm::Message::user(prompt)],
                    crate::llm::GenerationOptions::greedy(40 * chunk.len() as u32 + 32),
                    judgement_schema(chunk.len()),
                )?
                .into_pair()?;
                out.usage += completion.usage;
                // The grammar allows exactly one decision per listed session; zipping keeps
                // that true for any backend: extra decisions name no session.
                for (d, s) in judgement.decisions.iter().zip(chunk) {
                    if !d.keep || out.kept.iter().any(|kept| kept.id == s.id) {
                        continue;
                    }
                    out.kept.push(Kept {
                        id: s.id,
                        signal: d.signal.trim().to_string(),
                        adjacent: d.adjacent,
                    });
                }
            }
        }
    }
    out.seconds = started.elapsed().as_secs_f64();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_asks_for_one_decision_per_session() {
        let schema = judgement_schema(3);
        assert_eq!(schema["properties"]["decisions"]["minItems"], 3);
        assert_eq!(schema["properties"]["decisions"]["maxItems"], 3);
    }
}
