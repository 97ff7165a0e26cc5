//! Whether a statement about the user matters for a question, judged by probability.
//!
//! A grade the model writes ("relevance 3") is not calibrated: the 1.5B model grades a chicken
//! stock problem 2–3 out of 3 for a running-shoe question. The probability it gives to "yes"
//! when asked whether a careful advisor would take the fact into account is: one forward pass
//! per statement ([`crate::llm::probability_of_yes`]), no generation, with the fixed
//! instructions and the question as a prefix every statement of the question shares (the fact
//! comes last in `prompts/profile_relevance.md`, so llama.cpp reads only the fact again).
//!
//! A statement is kept when its probability reaches [`RELEVANCE_THRESHOLD`], calibrated by
//! `rudder eval relevance` on labelled (question, statement) pairs.

use super::ProfileError;
use crate::llm::{map_concurrent, probability_of_yes, Llm, Message, Usage};

/// The lowest P(yes) kept. Calibrated with qwen2.5-coder-1.5b-instruct by `rudder eval
/// relevance` on 266 labelled pairs (the planted set's needs against their own and other
/// questions, plus `crates/eval/data/relevance_pairs.jsonl`): see the README for the held-out
/// precision and recall. Other models shift the scale; the value is a setting of the profile
/// options so a bigger model can be calibrated and given its own.
pub const RELEVANCE_THRESHOLD: f32 = 0.5;

/// The prompt for one statement: the question first (shared), the statement last.
pub fn relevance_messages(query: &str, statement: &str) -> Result<Vec<Message>, ProfileError> {
    let prompt = crate::prompts::render(
        "profile_relevance",
        minijinja::context! { query, statement },
    )?;
    Ok(vec![Message::user(prompt)])
}

/// P(yes) that each statement matters for `query`, in order, with what the calls cost. The
/// statements are independent calls, made as many at once as the model serves.
pub fn relevance(
    llm: &dyn Llm,
    query: &str,
    statements: &[&str],
) -> Result<(Vec<f32>, Usage), ProfileError> {
    let answers = map_concurrent(llm.parallelism(), statements, |_, statement| {
        let messages = relevance_messages(query, statement)?;
        probability_of_yes(llm, messages).map_err(ProfileError::from)
    });
    let mut usage = Usage::default();
    let mut out = Vec::with_capacity(statements.len());
    for answer in answers {
        let (p, completion) = answer?;
        usage += completion.usage;
        out.push(p);
    }
    Ok((out, usage))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::ScriptedLlm;

    #[test]
    fn each_statement_is_one_call_with_the_question_before_the_fact() {
        let llm = ScriptedLlm::new(|prompt| {
            if prompt.ends_with("Has knee pain") {
                r#"{"probabilities":[0.6,0.2]}"#.to_string()
            } else {
                r#"{"probabilities":[0.1,0.7]}"#.to_string()
            }
        });
        let (p, usage) = relevance(
            &llm,
            "Which running shoes should I buy?",
            &["Has knee pain", "Has a problem with chicken stock"],
        )
        .unwrap();
        assert_eq!(p.len(), 2);
        assert!((p[0] - 0.75).abs() < 1e-6, "{p:?}");
        assert!((p[1] - 0.125).abs() < 1e-6, "{p:?}");
        assert_eq!(usage.calls, 2);
        let prompts = llm.prompts();
        let first = &prompts[0];
        let question = first.find("Which running shoes").unwrap();
        let fact = first.find("Has knee pain").unwrap();
        assert!(question < fact, "the fact must come last so the question is a shared prefix");
        // The two prompts share everything up to the fact.
        let shared = first
            .chars()
            .zip(prompts[1].chars())
            .take_while(|(a, b)| a == b)
            .count();
        assert!(shared >= first.find("Fact:").unwrap(), "shared prefix {shared}");
    }
}
