//! The pause question (STEER *Clarification Question Generation*): the candidate directions as
//! numbered one-sentence summaries the user can pick from, in the user's register.

use serde::Deserialize;
use serde_json::json;

use super::interaction::PauseQuestion;
use super::persona::Persona;
use super::ResearchError;
use crate::llm::{complete_schema, Completion, GenerationOptions, Llm, Message};

#[derive(Debug, Deserialize)]
struct Draft {
    introduction: String,
    directions: Vec<String>,
}

fn schema(directions: usize) -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {
            "introduction": {"type": "string", "minLength": 10, "maxLength": 200},
            "directions": {
                "type": "array",
                "items": {"type": "string", "minLength": 5, "maxLength": 160},
                "minItems": directions, "maxItems": directions,
            },
        },
        "required": ["introduction", "directions"],
    })
}

/// Writes the question for `questions` (the candidate follow-ups) at `node`.
pub fn generate(
    llm: &dyn Llm,
    query: &str,
    persona: &Persona,
    node: usize,
    questions: &[String],
    why: String,
) -> Result<(PauseQuestion, Completion), ResearchError> {
    let listed = questions
        .iter()
        .enumerate()
        .map(|(i, q)| format!("{}. {q}", i + 1))
        .collect::<Vec<_>>()
        .join("\n");
    let prompt = crate::prompts::render(
        "research_pause_question",
        minijinja::context! { query => query, persona => persona.text, directions => listed },
    )?;
    let max_tokens = 120 + 80 * questions.len() as u32;
    let (draft, completion): (Draft, _) = complete_schema(
        llm,
        vec![Message::user(prompt)],
        GenerationOptions::greedy(max_tokens),
        schema(questions.len()),
    )?
    .into_pair()?;
    let mut directions = draft.directions;
    directions.resize(questions.len(), String::new());
    // A summary the model left blank falls back to the question itself.
    for (d, q) in directions.iter_mut().zip(questions) {
        if d.trim().len() < 5 {
            *d = q.clone();
        }
    }
    Ok((
        PauseQuestion {
            node,
            introduction: draft.introduction.trim().to_string(),
            directions,
            questions: questions.to_vec(),
            why,
        },
        completion,
    ))
}
