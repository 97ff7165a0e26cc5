//! The live persona `P̂ = (p_text, checklist)` (STEER §2.5): who the report is for and the
//! aspects they expect it to cover. Seeded from the query-aware profile (when the user has
//! history) and the query (*Persona Checklist Inference*), then grown from every pause answer
//! (*Persona Modeling*).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ResearchError;
use crate::llm::{complete_json, Completion, GenerationOptions, Llm, Message};

/// Most checklist items kept: alignment scoring costs grow with the checklist.
pub const MAX_CHECKLIST: usize = 10;

/// What the research is optimised for.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Persona {
    pub text: String,
    pub checklist: Vec<String>,
}

impl Persona {
    /// The checklist as a numbered list for prompts.
    pub fn numbered_checklist(&self) -> String {
        if self.checklist.is_empty() {
            return "(none yet)".into();
        }
        self.checklist
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{}. {c}", i + 1))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Adds the items that are not already there (case-insensitively), up to [`MAX_CHECKLIST`].
    /// Returns how many were added.
    pub fn add_items(&mut self, items: &[String]) -> usize {
        let mut added = 0;
        for item in items {
            // Models often number the items themselves ("1. …"); the list is numbered anyway.
            let item = item
                .trim()
                .trim_start_matches(|c: char| c.is_ascii_digit())
                .trim_start_matches(['.', ')', '-', ':'])
                .trim();
            if item.is_empty() || self.checklist.len() >= MAX_CHECKLIST {
                continue;
            }
            let lower = item.to_lowercase();
            if self.checklist.iter().any(|c| c.to_lowercase() == lower) {
                continue;
            }
            self.checklist.push(item.to_string());
            added += 1;
        }
        added
    }

    /// Appends new information to the text, unless it is empty or already there.
    pub fn add_text(&mut self, info: &str) -> bool {
        let info = info.trim();
        if info.is_empty() || self.text.contains(info) {
            return false;
        }
        if !self.text.is_empty() {
            self.text.push(' ');
        }
        self.text.push_str(info);
        true
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
struct ChecklistDraft {
    #[schemars(length(min = 4, max = 6))]
    checklist_items: Vec<Item>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(transparent)]
struct Item(#[schemars(length(min = 3, max = 120))] String);

/// *Persona Checklist Inference*: 4–6 aspects this user would expect the answer to cover.
pub fn infer_checklist(
    llm: &dyn Llm,
    persona_text: &str,
    query: &str,
) -> Result<(Vec<String>, Completion), ResearchError> {
    let prompt = crate::prompts::render(
        "persona_checklist",
        minijinja::context! { persona => persona_text, query => query },
    )?;
    let reply = complete_json::<ChecklistDraft>(
        llm,
        vec![Message::user(prompt)],
        GenerationOptions::greedy(900),
    )?;
    Ok((
        reply
            .value
            .checklist_items
            .into_iter()
            .map(|i| i.0)
            .collect(),
        reply.completion,
    ))
}

/// What a pause answer taught about the user.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PersonaUpdate {
    #[schemars(length(max = 300))]
    pub additional_persona_info: String,
    #[schemars(length(max = 2))]
    pub new_checklist_items: Vec<UpdateItem>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct UpdateItem(#[schemars(length(min = 3, max = 120))] pub String);

/// *Persona Modeling*: infers new persona information and checklist items from the user's
/// response and applies them. Returns what was inferred.
pub fn update(
    llm: &dyn Llm,
    persona: &mut Persona,
    user_response: &str,
) -> Result<(PersonaUpdate, Completion), ResearchError> {
    let prompt = crate::prompts::render(
        "persona_update",
        minijinja::context! {
            persona => persona.text,
            checklist => persona.numbered_checklist(),
            response => user_response,
        },
    )?;
    let reply = complete_json::<PersonaUpdate>(
        llm,
        vec![Message::user(prompt)],
        GenerationOptions::greedy(700),
    )?;
    apply(persona, &reply.value);
    Ok((reply.value, reply.completion))
}

/// Applies an inferred update to the persona.
pub fn apply(persona: &mut Persona, update: &PersonaUpdate) {
    persona.add_text(&update.additional_persona_info);
    let items: Vec<String> = update
        .new_checklist_items
        .iter()
        .map(|i| i.0.clone())
        .collect();
    persona.add_items(&items);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_are_deduplicated_and_capped() {
        let mut p = Persona::default();
        assert_eq!(
            p.add_items(&["Cost".into(), "cost".into(), " ".into(), "2. cost".into()]),
            1
        );
        assert_eq!(p.checklist, vec!["Cost"]);
        let many: Vec<String> = (0..20).map(|i| format!("item {i}")).collect();
        p.add_items(&many);
        assert_eq!(p.checklist.len(), MAX_CHECKLIST);
    }

    #[test]
    fn text_is_appended_once() {
        let mut p = Persona {
            text: "A nurse.".into(),
            checklist: vec![],
        };
        assert!(p.add_text("Prefers short answers."));
        assert!(!p.add_text("Prefers short answers."));
        assert_eq!(p.text, "A nurse. Prefers short answers.");
    }
}
