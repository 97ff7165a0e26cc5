//! Researching one node (STEER *Search Result Processing*): its evidence goes to the model,
//! which extracts learnings — each tied to the numbered passages it rests on — tags the node's
//! facets (reusing tags seen before), and, unless the node is a leaf, proposes the follow-up
//! questions and the wild card its children are chosen from.

use serde::Deserialize;
use serde_json::json;

use super::persona::Persona;
use super::tree::FollowUp;
use super::ResearchError;
use crate::llm::{complete_schema, Completion, GenerationOptions, Llm, Message};
use crate::sources::Evidence;

/// Characters of each passage shown to the model.
pub const PASSAGE_CHARS: usize = 700;
/// Most learnings per node.
pub const MAX_LEARNINGS: usize = 4;

/// What the model found at a node.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Findings {
    /// (text, 0-based indices into the evidence).
    pub learnings: Vec<(String, Vec<usize>)>,
    pub tags: Vec<String>,
    /// Planner proposals, the wild card last (empty for leaves).
    pub follow_ups: Vec<FollowUp>,
}

#[derive(Debug, Deserialize)]
struct Draft {
    #[serde(default)]
    learnings: Vec<LearningDraft>,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    follow_up_questions: Vec<FollowUpDraft>,
    #[serde(default)]
    wild_card_question: Option<WildCardDraft>,
}

#[derive(Debug, Deserialize)]
struct LearningDraft {
    insight: String,
    sources: Vec<usize>,
}

#[derive(Debug, Deserialize)]
struct FollowUpDraft {
    question: String,
    confidence: u8,
    #[serde(default)]
    tags: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct WildCardDraft {
    question: String,
    confidence: u8,
}

/// The output schema. Source numbers are restricted to the passages shown, so a learning can
/// only cite evidence that exists; confidence is in tenths (0–10), which small models handle
/// better than decimals. Every string and list is bounded so the worst case fits `max_tokens`.
pub fn schema(evidence: usize, leaf: bool) -> serde_json::Value {
    let numbers: Vec<usize> = (1..=evidence).collect();
    let sources = if evidence == 0 {
        json!({"type": "array", "items": {"type": "integer"}, "maxItems": 0})
    } else {
        json!({"type": "array", "items": {"type": "integer", "enum": numbers}, "minItems": 1, "maxItems": 2})
    };
    let learning = json!({
        "type": "object",
        "properties": {
            "insight": {"type": "string", "minLength": 10, "maxLength": 200},
            "sources": sources,
        },
        "required": ["insight", "sources"],
    });
    let tag = json!({"type": "string", "minLength": 2, "maxLength": 24});
    let confidence = json!({"type": "integer", "enum": (0..=10).collect::<Vec<u8>>()});
    let mut properties = serde_json::Map::new();
    properties.insert(
        "learnings".into(),
        json!({
            "type": "array", "items": learning,
            "minItems": usize::from(evidence > 0),
            "maxItems": if evidence > 0 { MAX_LEARNINGS } else { 0 },
        }),
    );
    properties.insert(
        "tags".into(),
        json!({"type": "array", "items": tag, "minItems": 1, "maxItems": 3}),
    );
    let mut required = vec!["learnings", "tags"];
    if !leaf {
        properties.insert(
            "follow_up_questions".into(),
            json!({
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "question": {"type": "string", "minLength": 10, "maxLength": 120},
                        "confidence": confidence,
                        "tags": {"type": "array", "items": tag, "minItems": 1, "maxItems": 2},
                    },
                    "required": ["question", "confidence", "tags"],
                },
                "minItems": 5, "maxItems": 6,
            }),
        );
        properties.insert(
            "wild_card_question".into(),
            json!({
                "type": "object",
                "properties": {
                    "question": {"type": "string", "minLength": 10, "maxLength": 120},
                    "confidence": confidence,
                },
                "required": ["question", "confidence"],
            }),
        );
        required.extend(["follow_up_questions", "wild_card_question"]);
    }
    json!({"type": "object", "properties": properties, "required": required})
}

/// The evidence as the numbered list the prompts show.
pub fn numbered_evidence(evidence: &[Evidence], chars: usize) -> String {
    if evidence.is_empty() {
        return "(no passages found)".into();
    }
    evidence
        .iter()
        .enumerate()
        .map(|(i, e)| {
            format!(
                "[{}] {}\n{}",
                i + 1,
                super::tree::one_line(&e.title, 120),
                crate::sources::history::passage(&e.text, chars)
            )
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// Everything the node prompt needs.
pub struct NodeContext<'a> {
    pub query: &'a str,
    pub question: &'a str,
    pub persona: &'a Persona,
    pub seen_tags: &'a [String],
    /// Exclusions and focus the user asked for, one per line (may be empty).
    pub directives: &'a str,
    pub current_date: &'a str,
    pub leaf: bool,
}

/// Researches one node over its evidence.
pub fn research(
    llm: &dyn Llm,
    ctx: &NodeContext<'_>,
    evidence: &[Evidence],
) -> Result<(Findings, Completion), ResearchError> {
    let prompt = crate::prompts::render(
        "research_node",
        minijinja::context! {
            query => ctx.query,
            question => ctx.question,
            persona => ctx.persona.text,
            checklist => ctx.persona.numbered_checklist(),
            seen_tags => if ctx.seen_tags.is_empty() { "(none yet)".to_string() } else { ctx.seen_tags.join(", ") },
            directives => ctx.directives,
            evidence => numbered_evidence(evidence, PASSAGE_CHARS),
            current_date => ctx.current_date,
            leaf => ctx.leaf,
        },
    )?;
    // Worst case at one token per character: 4 learnings × 215, 6 follow-ups × 195, the wild
    // card, tags and the JSON around them.
    let max_tokens = if ctx.leaf { 1000 } else { 2300 };
    let (draft, completion): (Draft, _) = complete_schema(
        llm,
        vec![Message::user(prompt)],
        GenerationOptions::greedy(max_tokens),
        schema(evidence.len(), ctx.leaf),
    )?
    .into_pair()?;
    Ok((
        findings(draft, evidence.len(), &[ctx.query, ctx.question]),
        completion,
    ))
}

/// Turns the model's draft into findings: sources out of range, repeated learnings, repeated
/// follow-ups and follow-ups that merely restate `known` questions are dropped (small models
/// repeat themselves).
fn findings(draft: Draft, evidence: usize, known: &[&str]) -> Findings {
    let key = |s: &str| {
        s.chars()
            .filter(|c| c.is_alphanumeric())
            .flat_map(char::to_lowercase)
            .collect::<String>()
    };
    let mut seen_learnings = std::collections::HashSet::new();
    let learnings = draft
        .learnings
        .into_iter()
        .filter(|l| seen_learnings.insert(key(&l.insight)))
        .filter_map(|l| {
            let mut idx: Vec<usize> = l
                .sources
                .into_iter()
                .filter(|&n| n >= 1 && n <= evidence)
                .map(|n| n - 1)
                .collect();
            idx.dedup();
            let text = l.insight.trim().to_string();
            (!text.is_empty() && !idx.is_empty()).then_some((text, idx))
        })
        .collect();
    let clean_tags = |tags: Vec<String>| -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for t in tags {
            let t = super::utility::TagCounts::normalize(&t);
            if !t.is_empty() && !out.contains(&t) {
                out.push(t);
            }
        }
        out
    };
    let mut follow_ups: Vec<FollowUp> = Vec::new();
    let known: Vec<String> = known.iter().map(|k| key(k)).collect();
    let mut push = |f: FollowUp| {
        let q = key(&f.question);
        if q.len() >= 5 && !known.contains(&q) && !follow_ups.iter().any(|o| key(&o.question) == q)
        {
            follow_ups.push(f);
        }
    };
    for f in draft.follow_up_questions {
        push(FollowUp {
            question: f.question.trim().to_string(),
            confidence: f32::from(f.confidence.min(10)) / 10.0,
            tags: clean_tags(f.tags),
            wild_card: false,
        });
    }
    if let Some(w) = draft.wild_card_question {
        push(FollowUp {
            question: w.question.trim().to_string(),
            confidence: f32::from(w.confidence.min(10)) / 10.0,
            tags: Vec::new(),
            wild_card: true,
        });
    }
    Findings {
        learnings,
        tags: clean_tags(draft.tags),
        follow_ups,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_range_sources_and_duplicate_questions_are_dropped() {
        let draft: Draft = serde_json::from_value(json!({
            "learnings": [
                {"insight": "A real finding", "sources": [1, 9]},
                {"insight": "Cites nothing real", "sources": [7]},
                {"insight": "A real finding.", "sources": [2]},
            ],
            "tags": ["Side Effects", "side  effects", "cost"],
            "follow_up_questions": [
                {"question": "What does it cost?", "confidence": 8, "tags": ["Cost"]},
                {"question": "what does it cost?", "confidence": 3, "tags": []},
                {"question": "How is it made", "confidence": 9, "tags": []},
            ],
            "wild_card_question": {"question": "Who invented it?", "confidence": 4},
        }))
        .unwrap();
        let f = findings(draft, 2, &["How is it made?"]);
        assert_eq!(f.learnings, vec![("A real finding".to_string(), vec![0])]);
        assert_eq!(f.tags, vec!["side effects", "cost"]);
        assert_eq!(f.follow_ups.len(), 2);
        assert!(f.follow_ups[1].wild_card);
        assert!((f.follow_ups[0].confidence - 0.8).abs() < 1e-6);
    }

    #[test]
    fn leaf_schema_asks_for_no_follow_ups() {
        let s = schema(3, true).to_string();
        assert!(!s.contains("follow_up_questions"));
        let s = schema(0, false);
        assert_eq!(s["properties"]["learnings"]["maxItems"], 0);
    }
}
