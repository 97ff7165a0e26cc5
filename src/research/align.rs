//! Predicted alignment (STEER *Persona Alignment Evaluation*, batched): one call scores the
//! frontier node's findings and every candidate (its question plus the evidence a peek found)
//! against each checklist item, 0 / 1 / 2.

use serde::Deserialize;
use serde_json::json;

use super::persona::Persona;
use super::ResearchError;
use crate::llm::{complete_schema, Completion, GenerationOptions, Llm, Message};
use crate::sources::Evidence;

/// Characters of each expected-evidence passage shown per candidate.
const PEEK_CHARS: usize = 220;
/// Passages shown per candidate.
const PEEK_PASSAGES: usize = 3;

/// Scores per checklist item (each 0–2).
#[derive(Debug, Clone, PartialEq)]
pub struct AlignmentScores {
    pub current: Vec<u8>,
    pub candidates: Vec<Vec<u8>>,
}

#[derive(Debug, Deserialize)]
struct Draft {
    current_findings: Row,
    candidates: Vec<Row>,
}

#[derive(Debug, Deserialize)]
struct Row {
    scores: Vec<u8>,
}

/// The schema: exactly one score per checklist item, for the current findings and for each of
/// the `candidates`.
pub fn schema(items: usize, candidates: usize) -> serde_json::Value {
    let row = json!({
        "type": "object",
        "properties": {
            "scores": {
                "type": "array",
                "items": {"type": "integer", "enum": [0, 1, 2]},
                "minItems": items, "maxItems": items,
            }
        },
        "required": ["scores"],
    });
    json!({
        "type": "object",
        "properties": {
            "current_findings": row,
            "candidates": {"type": "array", "items": row, "minItems": candidates, "maxItems": candidates},
        },
        "required": ["current_findings", "candidates"],
    })
}

/// One candidate to score: its question and what a peek found for it.
pub struct CandidateView<'a> {
    pub question: &'a str,
    pub evidence: &'a [Evidence],
}

/// Scores the current findings and the candidates against the persona's checklist.
pub fn score(
    llm: &dyn Llm,
    persona: &Persona,
    current_findings: &[String],
    candidates: &[CandidateView<'_>],
) -> Result<(AlignmentScores, Completion), ResearchError> {
    let items = persona.checklist.len();
    let findings = if current_findings.is_empty() {
        "(nothing found yet)".to_string()
    } else {
        current_findings
            .iter()
            .map(|l| format!("- {}", super::tree::one_line(l, 220)))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let candidates_text = candidates
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let mut s = format!("Candidate {}: {}\nExpected evidence:", i + 1, c.question);
            if c.evidence.is_empty() {
                s.push_str(" (none found)");
            }
            for e in c.evidence.iter().take(PEEK_PASSAGES) {
                s.push_str(&format!(
                    "\n- {}: {}",
                    super::tree::one_line(&e.title, 80),
                    crate::sources::history::passage(&e.text, PEEK_CHARS)
                ));
            }
            s
        })
        .collect::<Vec<_>>()
        .join("\n\n");
    let prompt = crate::prompts::render(
        "research_align",
        minijinja::context! {
            persona => persona.text,
            checklist => persona.numbered_checklist(),
            items => items,
            findings => findings,
            candidates => candidates_text,
            count => candidates.len(),
        },
    )?;
    let max_tokens = (60 + (candidates.len() as u32 + 1) * (20 + 3 * items as u32)).max(120);
    let (draft, completion): (Draft, _) = complete_schema(
        llm,
        vec![Message::user(prompt)],
        GenerationOptions::greedy(max_tokens),
        schema(items, candidates.len()),
    )?
    .into_pair()?;
    let fit = |mut v: Vec<u8>| {
        v.resize(items, 0);
        v.iter_mut().for_each(|s| *s = (*s).min(2));
        v
    };
    let mut rows: Vec<Vec<u8>> = draft
        .candidates
        .into_iter()
        .map(|r| fit(r.scores))
        .collect();
    rows.resize(candidates.len(), vec![0; items]);
    Ok((
        AlignmentScores {
            current: fit(draft.current_findings.scores),
            candidates: rows,
        },
        completion,
    ))
}
