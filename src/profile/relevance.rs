//! Whether a statement about the user matters for a question, judged by probability.
//!
//! A grade the model writes ("relevance 3") is not calibrated: the 1.5B model grades a chicken
//! stock problem 2–3 out of 3 for a running-shoe question. The probability it gives to "yes"
//! when asked whether a careful advisor would take the fact into account is: one forward pass
//! per statement ([`crate::llm::probability_of_yes`]), no generation, with the fixed
//! instructions and the question as a prefix every statement of the question shares (the fact
//! comes last in `prompts/profile_relevance.md`, so llama.cpp reads only the fact again).
//!
//! Some statements draw a yes whatever the question; the same statement is asked about
//! [`CONTRAST_QUESTIONS`] too, where nothing personal matters, and the judge's score is how much
//! more the model says yes for this question ([`Judged::score`]). A statement is kept when its
//! score reaches [`RELEVANCE_THRESHOLD`], calibrated by `rudder eval relevance` on labelled
//! (question, statement) pairs.

use super::ProfileError;
use crate::llm::{map_concurrent, probability_of_yes, Llm, Message, Usage};

/// The lowest score ([`Judged::score`]) kept. Calibrated with qwen2.5-coder-1.5b-instruct by
/// `rudder eval relevance` on 212 labelled pairs (the planted set's needs against their own and
/// other users' questions, plus `crates/eval/data/relevance_pairs.jsonl`): best F1 on half the
/// questions at 0.248; on the other half precision 0.60, recall 0.61 (P(yes) alone: AUC 0.71,
/// held-out F1 0.46; with the contrast: AUC 0.76, F1 0.60). Other models shift the scale; the
/// threshold is a profile option so a bigger model can be calibrated and given its own.
pub const RELEVANCE_THRESHOLD: f32 = 0.25;

/// The prompt for one statement: the question first (shared), the statement last.
pub fn relevance_messages(query: &str, statement: &str) -> Result<Vec<Message>, ProfileError> {
    let prompt = crate::prompts::render(
        "profile_relevance",
        minijinja::context! { query, statement },
    )?;
    Ok(vec![Message::user(prompt)])
}

/// Questions where nothing about a person matters. A statement's P(yes) for them is its bias:
/// what the model says for that statement whatever the question ("is a complete novice with
/// computers" gets 0.8 for a training plan). Subtracting it (contextual calibration) lifts the
/// judge's AUC on the labelled pairs (see the README).
pub const CONTRAST_QUESTIONS: &[&str] = &[
    "What is the capital of Australia?",
    "How do I convert degrees Celsius to Fahrenheit?",
];

/// One statement's judgement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Judged {
    /// P(yes) for the question.
    pub probability: f32,
    /// The mean P(yes) for [`CONTRAST_QUESTIONS`].
    pub bias: f32,
}

impl Judged {
    /// What the threshold is compared with: how much more the model says yes for this
    /// question than for one where nothing personal matters.
    pub fn score(&self) -> f32 {
        self.probability - self.bias
    }
}

/// Judges each statement for `query`, in order, with what the calls cost: one forward pass for
/// the question and one per contrast question. The calls are independent and made as many at
/// once as the model serves.
pub fn relevance(
    llm: &dyn Llm,
    query: &str,
    statements: &[&str],
) -> Result<(Vec<Judged>, Usage), ProfileError> {
    let questions: Vec<&str> = std::iter::once(query)
        .chain(CONTRAST_QUESTIONS.iter().copied())
        .collect();
    let calls: Vec<(&str, &str)> = statements
        .iter()
        .flat_map(|s| questions.iter().map(move |q| (*q, *s)))
        .collect();
    let answers = map_concurrent(llm.parallelism(), &calls, |_, (question, statement)| {
        let messages = relevance_messages(question, statement)?;
        probability_of_yes(llm, messages).map_err(ProfileError::from)
    });
    let mut usage = Usage::default();
    let mut probabilities = Vec::with_capacity(calls.len());
    for answer in answers {
        let (p, completion) = answer?;
        usage += completion.usage;
        probabilities.push(p);
    }
    let judged = probabilities
        .chunks(questions.len())
        .map(|ps| Judged {
            probability: ps[0],
            bias: ps[1..].iter().sum::<f32>() / (ps.len() - 1) as f32,
        })
        .collect();
    Ok((judged, usage))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::ScriptedLlm;

    #[test]
    fn each_statement_is_one_call_with_the_question_before_the_fact() {
        let llm = ScriptedLlm::new(|prompt| {
            if !prompt.contains("running shoes") {
                // A contrast question: the statement's bias.
                r#"{"probabilities":[0.2,0.6]}"#.to_string()
            } else if prompt.ends_with("Has knee pain") {
                r#"{"probabilities":[0.6,0.2]}"#.to_string()
            } else {
                r#"{"probabilities":[0.1,0.7]}"#.to_string()
            }
        });
        let (judged, usage) = relevance(
            &llm,
            "Which running shoes should I buy?",
            &["Has knee pain", "Has a problem with chicken stock"],
        )
        .unwrap();
        assert_eq!(judged.len(), 2);
        assert!((judged[0].probability - 0.75).abs() < 1e-6, "{judged:?}");
        assert!((judged[0].bias - 0.25).abs() < 1e-6, "{judged:?}");
        assert!((judged[0].score() - 0.5).abs() < 1e-6, "{judged:?}");
        assert!(
            (judged[1].score() - (0.125 - 0.25)).abs() < 1e-6,
            "{judged:?}"
        );
        assert_eq!(usage.calls, 2 * (1 + CONTRAST_QUESTIONS.len()) as u64);
        let prompts = llm.prompts_with("running shoes");
        assert_eq!(prompts.len(), 2);
        let first = &prompts[0];
        let question = first.find("Which running shoes").unwrap();
        let fact = first.find("Has knee pain").unwrap();
        assert!(
            question < fact,
            "the fact must come last so the question is a shared prefix"
        );
        // The two statements' prompts for the question share everything up to the fact.
        let shared = first
            .chars()
            .zip(prompts[1].chars())
            .take_while(|(a, b)| a == b)
            .count();
        assert!(
            shared >= first.find("Fact:").unwrap(),
            "shared prefix {shared}"
        );
    }
}
