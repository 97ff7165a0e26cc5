//! Whether money a statement about the reader states is for what this question asks about.
//!
//! A budget is the need a report can meet most exactly (prices are compared in code), and so
//! the one whose misuse a reader sees at once: Tomasz's "2000 euros spare at most for
//! improvements this year", written about his bakery, priced his family holiday, and Harold's
//! pension money "for something for myself" appeared in the profile of a statistics question.
//! The relevance judge does not part them: on the planted set, budgets scored 0.53–0.91 for
//! their own questions and 0.43–0.60 for other users' (`memory::SAID_BUDGET_MARGIN`).
//!
//! Two small checks part them instead:
//! - where the statement names what the money is for ([`crate::checks::money::purpose`]:
//!   "sports gear", "ears", "improvements"), that purpose must lie close to the question
//!   ([`PURPOSE_COSINE`]);
//! - where it names nothing particular ("My budget is 300 euros", "something for myself"),
//!   the question must be one whose answer has the reader buy, book or pay for something: the
//!   model's P(yes) to that (`prompts/profile_question_spends.md`, one forward pass per
//!   question, asked only when such a statement is there) must reach
//!   [`SPENDING_QUESTION_THRESHOLD`].

use super::extract::Phrase;
use super::ProfileError;
use crate::checks::money;
use crate::embed::{cosine, Embedder};
use crate::llm::{probability_of_yes, Llm, Message, Usage};

/// The lowest cosine (all-MiniLM-L6-v2) between what the money is for and the question.
/// Read off the planted set's purposes and questions: their own questions lay at 0.16
/// ("improvements", reducing a bakery's energy costs), 0.28 ("sports gear", running shoes)
/// and 0.44 ("ears", earplugs); other questions at -0.05 to 0.11 ("improvements", a family
/// holiday: 0.00; "sports gear", a laptop: 0.10), with "sports gear" for earplugs (0.18) and
/// fieldwork equipment (0.37) the exceptions that pass.
pub const PURPOSE_COSINE: f32 = 0.15;

/// The lowest P(yes) that a question's answer has the reader buy, book or pay for something.
/// Read off 25 questions with qwen2.5-coder-1.5b (the planted set's 16, five research
/// questions, four more): those that buy, book or pay lay at 0.59 (a family holiday) to 0.89
/// (an e-bike), with fixing old photos' backups 0.63 and finishing a walnut table 0.67; those
/// that do not at 0.23 (the fall of Rome) to 0.54 (which programming language to learn next),
/// with a technical interview 0.44 and a statistics question 0.32. Learning the guitar (0.56)
/// lies on the bar.
pub const SPENDING_QUESTION_THRESHOLD: f32 = 0.55;

/// The model's P(yes) that answering `query` has the reader buy, book or pay for something.
pub fn question_spends(llm: &dyn Llm, query: &str) -> Result<(f32, Usage), ProfileError> {
    let prompt = crate::prompts::render("profile_question_spends", minijinja::context! { query })?;
    let (p, completion) = probability_of_yes(llm, vec![Message::user(prompt)])?;
    Ok((p, completion.usage))
}

/// Why a statement's money is not for this question, or None when it may be.
#[derive(Debug, Clone, PartialEq)]
pub enum ForAnother {
    /// The statement names what the money is for, and it lies far from the question.
    Purpose { purpose: String, cosine: f32 },
    /// The money is for anything, and the question buys nothing.
    QuestionBuysNothing { probability: f32 },
}

/// Drops from `phrases` every statement whose amount of money is for something other than
/// what `query` asks about (see the module docs), logging each with its reason; statements
/// that state no amount are kept untouched. Without an embedder, a named purpose cannot be
/// compared and is kept. Returns the model calls' cost (at most one call per question).
pub fn keep_money_for_the_question(
    llm: &dyn Llm,
    embedder: Option<&dyn Embedder>,
    query: &str,
    phrases: &mut Vec<Phrase>,
) -> Result<Usage, ProfileError> {
    let mut usage = Usage::default();
    let mut spends: Option<f32> = None;
    let mut query_vector: Option<Vec<f32>> = None;
    let mut kept = Vec::with_capacity(phrases.len());
    for phrase in std::mem::take(phrases) {
        if money::prices(&phrase.text).is_empty() {
            kept.push(phrase);
            continue;
        }
        let another = match money::purpose(&phrase.text) {
            Some(purpose) => match embedder {
                Some(e) => {
                    if query_vector.is_none() {
                        query_vector = e.embed(&[query]).map_err(ProfileError::from)?.pop();
                    }
                    let q = query_vector.as_deref().unwrap_or_default();
                    let p = e
                        .embed(&[purpose.as_str()])
                        .map_err(ProfileError::from)?
                        .pop()
                        .unwrap_or_default();
                    let c = cosine(q, &p);
                    (c < PURPOSE_COSINE).then_some(ForAnother::Purpose { purpose, cosine: c })
                }
                None => None,
            },
            None => {
                let probability = match spends {
                    Some(p) => p,
                    None => {
                        let (p, cost) = question_spends(llm, query)?;
                        usage += cost;
                        spends = Some(p);
                        p
                    }
                };
                (probability < SPENDING_QUESTION_THRESHOLD)
                    .then_some(ForAnother::QuestionBuysNothing { probability })
            }
        };
        match another {
            Some(reason) => {
                tracing::debug!(statement = %phrase.text, ?reason, "money for another purpose: left out")
            }
            None => kept.push(phrase),
        }
    }
    *phrases = kept;
    Ok(usage)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::extract::PhraseKind;
    use crate::test_support::{ScriptedLlm, WordsEmbedder};

    fn phrase(text: &str) -> Phrase {
        Phrase::unjudged(1, text, PhraseKind::Constraint)
    }

    fn texts(phrases: &[Phrase]) -> Vec<&str> {
        phrases.iter().map(|p| p.text.as_str()).collect()
    }

    /// A model that says the question buys something with `p_yes`.
    fn spends(p_yes: f32) -> ScriptedLlm {
        ScriptedLlm::new(move |_| format!(r#"{{"probabilities":[{p_yes},{}]}}"#, 1.0 - p_yes))
    }

    #[test]
    fn money_named_for_another_thing_is_left_out_and_for_this_one_kept() {
        let llm = spends(0.9);
        let mut phrases = vec![
            phrase("Has knee pain"),
            phrase("I can spend 200 euros on new running shoes this year."),
            phrase("I have roughly 2000 euros spare for oven improvements this year."),
        ];
        let usage = keep_money_for_the_question(
            &llm,
            Some(&WordsEmbedder),
            "Which running shoes should I buy?",
            &mut phrases,
        )
        .unwrap();
        assert_eq!(
            texts(&phrases),
            [
                "Has knee pain",
                "I can spend 200 euros on new running shoes this year."
            ]
        );
        // A named purpose costs no model call.
        assert_eq!(usage.calls, 0);
        assert!(llm.prompts_with("").is_empty());
    }

    #[test]
    fn money_for_anything_is_kept_only_when_the_question_buys_something() {
        let statements = [
            "My budget is 300 euros.",
            "I have 600 pounds I can spend on something for myself.",
            "Prefers short answers",
        ];
        let run = |p_yes: f32| {
            let llm = spends(p_yes);
            let mut phrases: Vec<Phrase> = statements.iter().map(|t| phrase(t)).collect();
            let usage = keep_money_for_the_question(
                &llm,
                Some(&WordsEmbedder),
                "Which statistical approach should I use?",
                &mut phrases,
            )
            .unwrap();
            // One call for the question, however many statements ask it.
            assert_eq!(usage.calls, 1);
            phrases.into_iter().map(|p| p.text).collect::<Vec<_>>()
        };
        assert_eq!(run(0.3), ["Prefers short answers"]);
        assert_eq!(run(0.8).len(), 3);
    }

    #[test]
    fn statements_without_money_cost_nothing_and_stay() {
        let llm = spends(0.1);
        let mut phrases = vec![phrase("Has knee pain"), phrase("Runs 20 km a week")];
        let usage =
            keep_money_for_the_question(&llm, None, "Which laptop should I buy?", &mut phrases)
                .unwrap();
        assert_eq!(phrases.len(), 2);
        assert_eq!(usage.calls, 0);
    }
}
