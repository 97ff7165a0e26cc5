//! Query expansion for history retrieval (BESPOKE §4.4, Table 25).
//!
//! A research question rarely shares words with the history that says how this user wants it
//! answered. Two expansions bridge the gap: chain-of-thought (the model spells out the aspects
//! worth retrieving) and pseudo-history (HyDE: the model writes what a relevant past search or
//! chat message of this user might look like). A third, facet probes, targets what a
//! research question shares least with: the user's situation (a knee injury, a budget, a
//! toddler) — the model writes a few short first-person lines about it, and each line is
//! searched on its own.

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
    /// Short first-person lines about the user's situation, one search each.
    Facets,
}

impl Expansion {
    pub const ALL: [Expansion; 4] = [
        Expansion::Raw,
        Expansion::Cot,
        Expansion::Pseudo,
        Expansion::Facets,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Expansion::Raw => "raw",
            Expansion::Cot => "cot",
            Expansion::Pseudo => "pseudo",
            Expansion::Facets => "facets",
        }
    }

    fn prompt(self) -> Option<&'static str> {
        match self {
            Expansion::Raw => None,
            Expansion::Cot => Some("profile_expand_cot"),
            Expansion::Pseudo => Some("profile_expand_pseudo"),
            Expansion::Facets => Some("profile_expand_facets"),
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

impl Expanded {
    /// The facet lines of a facet expansion (the question, its first line, left out); empty
    /// for the others.
    pub fn facets(&self) -> Vec<String> {
        if self.expansion != Expansion::Facets {
            return Vec::new();
        }
        facet_lines(&self.text.lines().skip(1).collect::<Vec<_>>().join("\n"))
    }
}

/// Expansions are short: the retriever only needs the key words and a sentence or two.
const MAX_TOKENS: u32 = 96;

/// Most facet lines searched.
const MAX_FACETS: usize = 6;

/// The usable lines of a facet expansion: bullets and numbers stripped, 2–16 words each, no
/// repeats, at most [`MAX_FACETS`].
pub fn facet_lines(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in text.lines() {
        let line = line
            .trim()
            .trim_start_matches(|c: char| {
                c.is_ascii_digit() || matches!(c, '-' | '*' | '•' | '.' | ')')
            })
            .trim()
            .trim_matches('"');
        let words = line.split_whitespace().count();
        let key = line.to_lowercase();
        if (2..=16).contains(&words) && !out.iter().any(|o| o.to_lowercase() == key) {
            out.push(line.to_string());
        }
        if out.len() == MAX_FACETS {
            break;
        }
    }
    out
}

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
    let text = match expansion {
        Expansion::Facets => facet_lines(&completion.text).join("\n"),
        _ => completion.text.trim().to_string(),
    };
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facet_lines_are_cleaned_bounded_and_unique() {
        let text = "1. my knee hurts after long runs\n- budget is $120 max\n\nok\n* my knee hurts after long runs\n\"wide feet flat arches\"\na b c d e f g h i j k l m n o p q r";
        assert_eq!(
            facet_lines(text),
            vec![
                "my knee hurts after long runs",
                "budget is $120 max",
                "wide feet flat arches"
            ]
        );
    }
}
