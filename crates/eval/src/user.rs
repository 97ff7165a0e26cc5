//! The simulated user (STEER §3.1, Appendix L "User Agent"): answers the research loop's
//! pauses and clarifying questions from the FULL persona `P = (p_text, A)`, while the system
//! under test only knows the persona's first sentence and the synthetic history.
//!
//! At a pause it selects the directions that fit its aspects and, when it says some aspects
//! are still uncovered, may add one new follow-up question; to a clarifying question it
//! answers with option numbers and/or a short text, or skips. Every exchange is logged with
//! the aspects the user named, for the User Agent precision/recall analysis (STEER F.4).

use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::judge::{budget, Accounting};
use super::persona::{clip, format_aspects, PersonaCase};
use rudder::llm::{complete_schema, GenerationOptions, Llm, LlmError, Message};
use rudder::research::clarify::{ClarifyAnswer, ClarifyQuestion};
use rudder::research::{Interaction, PauseAnswer, PauseQuestion, ResearchError};

/// Longest new follow-up question the grammar allows, in characters.
pub const MAX_NEW_QUESTION_CHARS: usize = 200;
const COMMENT_CHARS: usize = 240;
const CLARIFY_ANSWER_CHARS: usize = 200;
// Prompt-side clipping, so the prompt stays well inside a 4096-token context.
const PERSONA_CHARS: usize = 1_500;
const ASPECT_DETAIL_CHARS: usize = 120;
const PROPOSAL_CHARS: usize = 1_500;
const HISTORY_ITEMS: usize = 8;
const HISTORY_ITEM_CHARS: usize = 160;

/// One question the simulated user answered, with what it said about its aspects.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Exchange {
    Pause {
        question: PauseQuestion,
        answer: PauseAnswer,
        /// Aspects (0-based) the user said no direction covers yet.
        uncovered: Vec<usize>,
        /// Direction numbers the model gave that were out of range or repeated, dropped.
        dropped: Vec<i64>,
        /// The model's output was unusable and the safe answer (go on with every direction)
        /// was given instead.
        fallback: bool,
    },
    Clarify {
        question: ClarifyQuestion,
        answer: ClarifyAnswer,
        /// Aspects (0-based) the user said the question is about.
        about: Vec<usize>,
        /// Option numbers the model gave that were out of range or repeated, dropped.
        dropped: Vec<i64>,
        /// The model's output was unusable and the user skipped instead.
        fallback: bool,
    },
}

/// A user simulated by an LLM from the full persona of a case.
pub struct SimulatedUser<'a> {
    llm: &'a dyn Llm,
    persona: PersonaCase,
    query: String,
    options: GenerationOptions,
    clarify: bool,
    log: Vec<Exchange>,
    /// Follow-up questions this user asked at earlier pauses (Appendix L's question history).
    asked: Vec<String>,
    /// Directions chosen at earlier pauses, so "uncovered" means uncovered so far.
    chosen: Vec<String>,
    accounting: Accounting,
}

#[derive(Debug, Deserialize)]
struct PauseDraft {
    #[serde(default)]
    comment: String,
    #[serde(default)]
    selected_directions: Vec<i64>,
    #[serde(default)]
    uncovered_aspects: Vec<i64>,
    #[serde(default)]
    new_follow_up_questions: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct ClarifyDraft {
    #[serde(default)]
    about_aspects: Vec<i64>,
    #[serde(default)]
    answer: String,
    #[serde(default)]
    choices: Vec<i64>,
    #[serde(default)]
    skip: bool,
}

/// Numbers `1..=n` as a JSON enum, so the grammar only offers valid numbers (a server that
/// ignores the enum is caught by [`valid_numbers`]).
fn number_enum(n: usize) -> serde_json::Value {
    json!({"type": "integer", "enum": (1..=n.max(1)).collect::<Vec<_>>()})
}

/// Keys are named so their alphabetical order (the grammar's order) is the order of thought:
/// a comment in the user's voice, the choice, what is still uncovered, and only then the new
/// question.
fn pause_schema(directions: usize, aspects: usize) -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {
            "comment": {"type": "string", "maxLength": COMMENT_CHARS},
            "new_follow_up_questions": {
                "type": "array", "maxItems": 1,
                "items": {"type": "string", "minLength": 10, "maxLength": MAX_NEW_QUESTION_CHARS},
            },
            "selected_directions": {
                "type": "array", "maxItems": directions.max(1),
                "items": number_enum(directions),
            },
            "uncovered_aspects": {
                "type": "array", "maxItems": aspects.max(1),
                "items": number_enum(aspects),
            },
        },
        "required": ["comment", "selected_directions", "uncovered_aspects", "new_follow_up_questions"],
    })
}

fn clarify_schema(options: usize, aspects: usize) -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {
            "about_aspects": {
                "type": "array", "maxItems": aspects.clamp(1, 4),
                "items": number_enum(aspects),
            },
            "answer": {"type": "string", "maxLength": CLARIFY_ANSWER_CHARS},
            "choices": {
                "type": "array", "maxItems": options.max(1),
                "items": number_enum(options),
            },
            "skip": {"type": "boolean"},
        },
        "required": ["about_aspects", "answer", "choices", "skip"],
    })
}

/// The numbers in `1..=n`, deduplicated in order, and the ones dropped.
fn valid_numbers(raw: &[i64], n: usize) -> (Vec<usize>, Vec<i64>) {
    let mut kept = Vec::new();
    let mut dropped = Vec::new();
    for &x in raw {
        match usize::try_from(x) {
            Ok(v) if (1..=n).contains(&v) && !kept.contains(&v) => kept.push(v),
            _ => dropped.push(x),
        }
    }
    (kept, dropped)
}

fn bulleted(items: &[String]) -> String {
    if items.is_empty() {
        return "(none yet)".into();
    }
    items
        .iter()
        .rev()
        .take(HISTORY_ITEMS)
        .rev()
        .map(|q| format!("- {}", clip(q, HISTORY_ITEM_CHARS)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Words of a question, lowercased, for "already asked" comparison.
fn normalized(q: &str) -> String {
    q.chars()
        .filter(|c| c.is_alphanumeric() || c.is_whitespace())
        .collect::<String>()
        .to_lowercase()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

impl<'a> SimulatedUser<'a> {
    /// A user with `persona` who asked `query`. Decoding is greedy, so a run is reproducible.
    pub fn new(llm: &'a dyn Llm, persona: PersonaCase, query: impl Into<String>) -> Self {
        Self {
            llm,
            persona,
            query: query.into(),
            options: GenerationOptions {
                temperature: 0.0,
                ..GenerationOptions::default()
            },
            clarify: true,
            log: Vec::new(),
            asked: Vec::new(),
            chosen: Vec::new(),
            accounting: Accounting::default(),
        }
    }

    /// Sampling settings for the user's calls (`max_tokens` is set per call).
    pub fn with_options(mut self, options: GenerationOptions) -> Self {
        self.options = options;
        self
    }

    /// Whether the user answers clarifying questions (on by default).
    pub fn with_clarification(mut self, on: bool) -> Self {
        self.clarify = on;
        self
    }

    /// Every exchange so far, in order.
    pub fn log(&self) -> &[Exchange] {
        &self.log
    }

    /// Tokens, calls and time the user's model spent.
    pub fn accounting(&self) -> Accounting {
        self.accounting
    }

    pub fn persona(&self) -> &PersonaCase {
        &self.persona
    }

    /// One grammar-constrained call, accounted. Output that does not parse is returned as
    /// an unusable-output error ([`LlmError::is_unusable_output`]) for the caller's fallback.
    fn call<T: serde::de::DeserializeOwned>(
        &mut self,
        prompt: String,
        schema: serde_json::Value,
        max_tokens: u32,
    ) -> Result<T, LlmError> {
        let options = GenerationOptions {
            max_tokens,
            ..self.options.clone()
        };
        let started = Instant::now();
        let (parsed, completion) =
            match complete_schema::<T>(self.llm, vec![Message::user(prompt)], options, schema) {
                Ok(reply) => (reply.parsed, reply.completion),
                Err(e) => {
                    self.accounting.seconds += started.elapsed().as_secs_f64();
                    return Err(e);
                }
            };
        // The call's own duration, so a completion replayed from a cache counts what it cost.
        self.accounting.seconds += completion.timing.total.as_secs_f64();
        self.accounting.usage += completion.usage;
        if parsed.is_err() {
            self.accounting.invalid_outputs += 1;
        }
        parsed
    }

    fn aspects_text(&self) -> String {
        format_aspects(&self.persona.aspects, ASPECT_DETAIL_CHARS)
    }

    fn answer_pause(&mut self, question: &PauseQuestion) -> Result<Exchange, ResearchError> {
        let n = question.directions.len();
        let a = self.persona.aspects.len();
        let prompt = crate::prompts::render(
            "eval_user_pause",
            minijinja::context! {
                persona => clip(&self.persona.text, PERSONA_CHARS),
                aspects => self.aspects_text(),
                chosen_before => bulleted(&self.chosen),
                asked_before => bulleted(&self.asked),
                query => clip(&self.query, 600),
                proposal => clip(&question.render(), PROPOSAL_CHARS),
                count => n,
                aspect_count => a,
            },
        )?;
        let max_tokens = budget(COMMENT_CHARS + MAX_NEW_QUESTION_CHARS, 40 + 4 * (n + a));
        let draft: PauseDraft = match self.call(prompt, pause_schema(n, a), max_tokens) {
            Ok(d) => d,
            Err(e) if e.is_unusable_output() => {
                tracing::warn!(
                    "simulated user: unusable pause answer, going on with every direction: {e}"
                );
                return Ok(Exchange::Pause {
                    question: question.clone(),
                    answer: PauseAnswer::default(),
                    uncovered: Vec::new(),
                    dropped: Vec::new(),
                    fallback: true,
                });
            }
            Err(e) => return Err(e.into()),
        };
        let (chosen, dropped) = valid_numbers(&draft.selected_directions, n);
        if !dropped.is_empty() {
            tracing::warn!(
                "simulated user: dropped direction numbers {dropped:?} (the question has {n})"
            );
        }
        let uncovered: Vec<usize> = valid_numbers(&draft.uncovered_aspects, a)
            .0
            .into_iter()
            .map(|v| v - 1)
            .collect();
        // Appendix L: at most one new question, and only when aspects remain uncovered (the
        // user said so), and never one it asked before or one the proposal already offers.
        let mut new_questions = Vec::new();
        if !uncovered.is_empty() {
            let known: Vec<String> = self
                .asked
                .iter()
                .chain(question.questions.iter())
                .chain(question.directions.iter())
                .map(|q| normalized(q))
                .collect();
            if let Some(q) = draft
                .new_follow_up_questions
                .iter()
                .map(|q| clip(q, MAX_NEW_QUESTION_CHARS))
                .find(|q| q.len() >= 10 && !known.contains(&normalized(q)))
            {
                new_questions.push(q);
            }
        }
        for &c in &chosen {
            if let Some(d) = question.directions.get(c - 1) {
                self.chosen.push(d.clone());
            }
        }
        self.asked.extend(new_questions.iter().cloned());
        Ok(Exchange::Pause {
            question: question.clone(),
            answer: PauseAnswer {
                chosen,
                new_questions,
                text: clip(&draft.comment, COMMENT_CHARS),
            },
            uncovered,
            dropped,
            fallback: false,
        })
    }

    fn answer_clarify(&mut self, question: &ClarifyQuestion) -> Result<Exchange, ResearchError> {
        let n = question.options.len();
        let a = self.persona.aspects.len();
        let prompt = crate::prompts::render(
            "eval_user_clarify",
            minijinja::context! {
                persona => clip(&self.persona.text, PERSONA_CHARS),
                aspects => self.aspects_text(),
                query => clip(&self.query, 600),
                question => clip(&question.render(), PROPOSAL_CHARS),
                count => n,
                aspect_count => a,
            },
        )?;
        let max_tokens = budget(CLARIFY_ANSWER_CHARS, 40 + 4 * (n + a));
        let skip = ClarifyAnswer {
            skip: true,
            ..ClarifyAnswer::default()
        };
        let draft: ClarifyDraft = match self.call(prompt, clarify_schema(n, a), max_tokens) {
            Ok(d) => d,
            Err(e) if e.is_unusable_output() => {
                tracing::warn!("simulated user: unusable clarification answer, skipping: {e}");
                return Ok(Exchange::Clarify {
                    question: question.clone(),
                    answer: skip,
                    about: Vec::new(),
                    dropped: Vec::new(),
                    fallback: true,
                });
            }
            Err(e) => return Err(e.into()),
        };
        let (choices, dropped) = valid_numbers(&draft.choices, n);
        let about: Vec<usize> = valid_numbers(&draft.about_aspects, a)
            .0
            .into_iter()
            .map(|v| v - 1)
            .collect();
        let text = clip(&draft.answer, CLARIFY_ANSWER_CHARS);
        // An answer wins over a skip flag: a user who said something meant it. Saying nothing
        // at all is a skip, so the dialogue never loops on empty answers.
        let answer = if choices.is_empty() && text.is_empty() {
            skip
        } else {
            if draft.skip {
                tracing::debug!("simulated user: answered and flagged skip; keeping the answer");
            }
            ClarifyAnswer {
                choices,
                text,
                skip: false,
            }
        };
        Ok(Exchange::Clarify {
            question: question.clone(),
            answer,
            about,
            dropped,
            fallback: false,
        })
    }
}

impl Interaction for SimulatedUser<'_> {
    fn can_clarify(&self) -> bool {
        self.clarify
    }

    fn ask(&mut self, question: &PauseQuestion) -> Result<PauseAnswer, ResearchError> {
        let exchange = self.answer_pause(question)?;
        let answer = match &exchange {
            Exchange::Pause { answer, .. } => answer.clone(),
            Exchange::Clarify { .. } => PauseAnswer::default(),
        };
        self.log.push(exchange);
        Ok(answer)
    }

    fn clarify(&mut self, question: &ClarifyQuestion) -> Result<ClarifyAnswer, ResearchError> {
        let exchange = self.answer_clarify(question)?;
        let answer = match &exchange {
            Exchange::Clarify { answer, .. } => answer.clone(),
            Exchange::Pause { .. } => ClarifyAnswer::default(),
        };
        self.log.push(exchange);
        Ok(answer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_out_of_range_and_repeats_are_dropped() {
        assert_eq!(
            valid_numbers(&[2, 0, 7, 2, -1, 3], 3),
            (vec![2, 3], vec![0, 7, 2, -1])
        );
    }

    #[test]
    fn questions_compare_without_case_or_punctuation() {
        assert_eq!(normalized("What  does it COST?"), "what does it cost");
    }
}
