//! Query expansion for history retrieval (BESPOKE §4.4, Table 25).
//!
//! A research question rarely shares words with the history that says how this user wants it
//! answered. Two expansions bridge the gap: chain-of-thought (the model spells out the aspects
//! worth retrieving) and pseudo-history (HyDE: the model writes what a relevant past search or
//! chat message of this user might look like).

use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::ProfileError;
use crate::llm::{GenerationOptions, Llm, Message, OutputFormat, Request, Usage};

/// One way of turning the query into retrieval text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Expansion {
    /// The query as typed.
    Raw,
    /// Chain-of-thought aspects.
    Cot,
    /// A pseudo history entry (HyDE).
    Pseudo,
}

impl Expansion {
    pub const ALL: [Expansion; 3] = [Expansion::Raw, Expansion::Cot, Expansion::Pseudo];

    pub fn as_str(self) -> &'static str {
        match self {
            Expansion::Raw => "raw",
            Expansion::Cot => "cot",
            Expansion::Pseudo => "pseudo",
        }
    }

    fn prompt(self) -> Option<&'static str> {
        match self {
            Expansion::Raw => None,
            Expansion::Cot => Some("profile_expand_cot"),
            Expansion::Pseudo => Some("profile_expand_pseudo"),
        }
    }
}

/// An expansion's text and what it cost.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Expanded {
    pub expansion: Expansion,
    pub text: String,
    pub usage: Usage,
    pub seconds: f64,
}

/// Expansions are short: the retriever only needs the key words and a sentence or two.
const MAX_TOKENS: u32 = 96;

/// Expands `query` with `expansion` (the raw query costs nothing).
pub fn expand(llm: &dyn Llm, query: &str, expansion: Expansion) -> Result<Expanded, ProfileError> {
    let Some(template) = expansion.prompt() else {
        return Ok(Expanded {
            expansion,
            text: query.to_string(),
            usage: Usage::default(),
            seconds: 0.0,
        });
    };
    let prompt = crate::prompts::render(template, minijinja::context! { query })?;
    let request = Request {
        messages: vec![Message::user(prompt)],
        options: GenerationOptions {
            max_tokens: MAX_TOKENS,
            temperature: 0.0,
            ..GenerationOptions::default()
        },
        format: OutputFormat::Text,
    };
    let started = Instant::now();
    let completion = llm.complete_text(&request)?;
    let text = completion.text.trim();
    // A model that returns nothing useful must not leave retrieval with an empty query.
    let text = if text.is_empty() {
        query.to_string()
    } else {
        format!("{query}\n{text}")
    };
    Ok(Expanded {
        expansion,
        text,
        usage: completion.usage,
        seconds: started.elapsed().as_secs_f64(),
    })
}
