//! Clarification's pure logic with a scripted LLM and a bag-of-words embedder: redundant and
//! off-topic candidates are replaced, failures end the dialogue, unusable output counts as an
//! attempt, replies parse, and the summary comes back. `clarify_real.rs` runs the same steps
//! with SmolLM2 and all-MiniLM-L6-v2.

use rudder_testkit as common;

use std::sync::Mutex;

use common::Canned;
use rudder::clarify::{
    self, ClarifyAnswer, ClarifyContext, ClarifyQuestion, ClarifySettings, ClarifyTurn,
    RejectReason,
};
use rudder::embed::{cosine, Embedder};
use rudder::llm::{FinishReason, LlmError};
use serde_json::json;

fn summary() -> String {
    json!({
        "brief": "I want a light tent for two people under 200 euros, for summer hikes.",
        "checklist_items": ["1. Covers tent weight", "Covers price under 200 euros", "Covers two-person models"],
    })
    .to_string()
}

/// Answers question prompts from a queue of outputs (the last one repeats) and summary prompts
/// with `summary`; records every prompt.
fn scripted_with_summary(questions: Vec<String>, summary: String) -> Canned {
    let questions = Mutex::new(questions);
    Canned::fallible(move |prompt| {
        if prompt.contains("ONE short clarifying question") {
            let mut queue = questions.lock().unwrap();
            Ok(if queue.len() > 1 {
                queue.remove(0)
            } else {
                queue[0].clone()
            })
        } else if prompt.contains("Rewrite their request so it says everything they want") {
            Ok(summary.clone())
        } else {
            Err(LlmError::Backend(format!("unscripted prompt: {prompt}")))
        }
    })
}

fn scripted(questions: Vec<String>) -> Canned {
    scripted_with_summary(questions, summary())
}

fn candidate(question: &str, options: &[&str]) -> String {
    json!({"question": question, "suggested_answers": options}).to_string()
}

/// A candidate cut off mid-JSON, as when `max_tokens` runs out.
fn truncated(question: &str, options: &[&str]) -> String {
    let full = candidate(question, options);
    full[..full.len() / 2].to_string()
}

/// Enough buckets that the fixtures' words (and the generic aspects') do not collide.
const BAG_OF_WORDS: rudder_testkit::scripted::HashedWords =
    rudder_testkit::scripted::HashedWords(4096);

const QUERY: &str = "Which tent should I buy for hiking?";

fn ctx() -> ClarifyContext<'static> {
    ClarifyContext {
        query: QUERY,
        profile: "Emphasize:\n- ultralight tent gear for hiking",
        persona_text: "A hiker.",
    }
}

fn question(turn: usize, text: &str, options: &[&str]) -> ClarifyQuestion {
    ClarifyQuestion {
        turn,
        question: text.into(),
        options: options.iter().map(|s| s.to_string()).collect(),
        in_english: None,
    }
}

const OFF_TOPIC: &str = "Favourite colour: red or blue?";

const EARLIER: &str = "How many people will sleep in the tent?";

fn earlier_turn() -> ClarifyTurn {
    let q = question(1, EARLIER, &["One", "Two", "A family of four"]);
    ClarifyTurn {
        answer: ClarifyAnswer::parse("2", &q),
        question: q,
    }
}

/// Settings whose relevance threshold suits the bag-of-words embedder.
fn settings() -> ClarifySettings {
    ClarifySettings {
        relevance_threshold: 0.2,
        ..ClarifySettings::default()
    }
}

#[test]
fn a_redundant_candidate_is_replaced_and_the_retry_prompt_avoids_it() {
    let llm = scripted(vec![
        candidate(EARLIER, &["One", "Two"]),
        candidate(
            "How heavy a tent can you carry on the hike?",
            &[
                "Under 1 kg tent",
                "1 to 2 kg tent",
                "Weight does not matter",
            ],
        ),
    ]);
    let p = clarify::propose(&llm, &BAG_OF_WORDS, &ctx(), &[earlier_turn()], &settings()).unwrap();
    let q = p.question.expect("the second candidate is asked");
    assert_eq!(q.turn, 2);
    assert_eq!(q.question, "How heavy a tent can you carry on the hike?");
    assert_eq!(q.options.len(), 3);
    assert_eq!(p.rejected.len(), 1);
    assert_eq!(p.rejected[0].question, EARLIER);
    match &p.rejected[0].reason {
        RejectReason::Redundant {
            similar_to,
            similarity,
        } => {
            assert_eq!(similar_to, EARLIER);
            assert!(*similarity > 0.92, "{similarity}");
        }
        other => panic!("expected redundant, got {other:?}"),
    }
    assert_eq!(p.completions.len(), 2);
    let prompts = llm.prompts();
    assert_eq!(prompts.len(), 2);
    // The first prompt shows the earlier turn with its answer; only the retry lists the
    // rejected candidate among those not to ask.
    assert!(
        prompts[0].contains(&format!("- {EARLIER} Answer: Two")),
        "{}",
        prompts[0]
    );
    assert!(!prompts[0].contains("Do not ask these either"));
    let retry = prompts[1].split("Do not ask these either").nth(1).unwrap();
    assert!(retry.contains(&format!("- {EARLIER}")), "{}", prompts[1]);
    // The query, the persona and the profile are in the prompt.
    assert!(prompts[0].contains(QUERY) && prompts[0].contains("A hiker."));
    assert!(prompts[0].contains("ultralight tent gear"));
}

#[test]
fn an_unrelated_candidate_is_dropped() {
    let llm = scripted(vec![
        candidate(OFF_TOPIC, &["Red paint", "Blue paint"]),
        candidate(
            "Which season will you hike in with the tent?",
            &["Summer hiking", "All four seasons"],
        ),
    ]);
    let p = clarify::propose(&llm, &BAG_OF_WORDS, &ctx(), &[], &settings()).unwrap();
    assert_eq!(
        p.question.unwrap().question,
        "Which season will you hike in with the tent?"
    );
    assert_eq!(p.rejected.len(), 1);
    match p.rejected[0].reason {
        RejectReason::Unrelated { similarity } => assert!(similarity < 0.2, "{similarity}"),
        ref other => panic!("expected unrelated, got {other:?}"),
    }
    assert!(llm.prompts()[1].contains(&format!("- {OFF_TOPIC}")));
}

#[test]
fn a_restated_query_is_redundant_and_the_retry_names_an_aspect() {
    let llm = scripted(vec![
        candidate(QUERY, &["A dome tent", "A tunnel tent"]),
        candidate(
            "What will you use the tent for?",
            &["Summer hiking", "Winter camping"],
        ),
    ]);
    let p = clarify::propose(&llm, &BAG_OF_WORDS, &ctx(), &[], &settings()).unwrap();
    assert_eq!(
        p.question.unwrap().question,
        "What will you use the tent for?"
    );
    match &p.rejected[0].reason {
        RejectReason::Redundant { similar_to, .. } => assert_eq!(similar_to, QUERY),
        other => panic!("expected redundant, got {other:?}"),
    }
    // The first attempt leaves the choice to the model; the retry suggests one aspect with
    // an example question, a different one on each turn.
    let prompts = llm.prompts();
    assert!(!prompts[0].contains("A good question now"));
    assert!(
        prompts[1].contains("A good question now: \"What will you use it for?\""),
        "{}",
        prompts[1]
    );
    let llm = scripted(vec![candidate(EARLIER, &["One", "Two"])]);
    clarify::propose(&llm, &BAG_OF_WORDS, &ctx(), &[earlier_turn()], &settings()).unwrap();
    let prompts = llm.prompts();
    assert!(
        prompts[1].contains("\"How much detail do you want?\""),
        "{}",
        prompts[1]
    );
    assert!(
        prompts[2].contains("\"What is your budget?\""),
        "{}",
        prompts[2]
    );
}

#[test]
fn a_generic_question_is_relevant_through_the_aspects() {
    // No word in common with the query, but it is what any research can be clarified on.
    let q = question(1, "Who is the report for?", &["Me", "My manager"]);
    let r = clarify::relevance(&BAG_OF_WORDS, &ctx(), &q).unwrap();
    assert!(r > 0.99, "{r}");
    let llm = scripted(vec![candidate(
        "Who is the report for?",
        &["Me", "My manager"],
    )]);
    let p = clarify::propose(&llm, &BAG_OF_WORDS, &ctx(), &[], &settings()).unwrap();
    assert!(p.question.is_some() && p.rejected.is_empty());
}

#[test]
fn after_every_attempt_fails_there_is_no_question() {
    // The model keeps repeating the earlier question: three attempts, then the dialogue ends.
    let llm = scripted(vec![candidate(EARLIER, &["One", "Two"])]);
    let p = clarify::propose(&llm, &BAG_OF_WORDS, &ctx(), &[earlier_turn()], &settings()).unwrap();
    assert!(p.question.is_none());
    assert_eq!(p.rejected.len(), 3);
    assert_eq!(p.completions.len(), 3);
    assert!(p
        .rejected
        .iter()
        .all(|r| matches!(r.reason, RejectReason::Redundant { .. })));
    let custom = ClarifySettings {
        attempts: 1,
        ..settings()
    };
    let p = clarify::propose(&llm, &BAG_OF_WORDS, &ctx(), &[earlier_turn()], &custom).unwrap();
    assert!(p.question.is_none());
    assert_eq!(p.completions.len(), 1);
}

#[test]
fn truncated_output_counts_as_an_attempt() {
    let good = candidate(
        "What will you mainly use the tent for when hiking?",
        &["Weekend hiking trips", "Long treks"],
    );
    let llm = scripted(vec![
        truncated("What will you use the tent for?", &["Hiking", "Camping"]),
        good,
    ]);
    let p = clarify::propose(&llm, &BAG_OF_WORDS, &ctx(), &[], &settings()).unwrap();
    assert!(p.question.is_some());
    assert!(
        p.rejected.is_empty(),
        "unusable output is not a rejected question"
    );
    assert_eq!(p.completions.len(), 2);
    assert_eq!(p.completions[0].finish, FinishReason::Length);
    // Greedy decoding would cut off the same way again: the retry asks for shorter text.
    let prompts = llm.prompts();
    assert!(!prompts[0].contains("under 120 characters"));
    assert!(
        prompts[1].contains("under 120 characters"),
        "{}",
        prompts[1]
    );

    // Only unusable output: no question and no error.
    let llm = scripted(vec![truncated("What for?", &["Hiking", "Camping"])]);
    let p = clarify::propose(&llm, &BAG_OF_WORDS, &ctx(), &[], &settings()).unwrap();
    assert!(p.question.is_none());
    assert_eq!(p.completions.len(), 3);
    // Options that collapse to fewer than two distinct ones are unusable too.
    let llm = scripted(vec![candidate(
        "Which tent size do you need for hiking?",
        &["1. Small", "small"],
    )]);
    let p = clarify::propose(&llm, &BAG_OF_WORDS, &ctx(), &[], &settings()).unwrap();
    assert!(p.question.is_none());
}

#[test]
fn no_question_after_the_last_turn_or_a_skip() {
    let llm = scripted(vec![candidate("Never asked?", &["a", "b"])]);
    let one_turn = ClarifySettings {
        max_turns: 1,
        ..settings()
    };
    let p = clarify::propose(&llm, &BAG_OF_WORDS, &ctx(), &[earlier_turn()], &one_turn).unwrap();
    assert!(p.question.is_none() && p.completions.is_empty());
    let mut skipped = earlier_turn();
    skipped.answer = ClarifyAnswer::parse("skip", &skipped.question);
    let p = clarify::propose(&llm, &BAG_OF_WORDS, &ctx(), &[skipped], &settings()).unwrap();
    assert!(p.question.is_none() && p.completions.is_empty());
    assert!(llm.prompts().is_empty());
}

#[test]
fn replies_parse_into_choices_free_text_and_skips() {
    let q = question(1, "Who is it for?", &["Me", "My team", "A client"]);
    let a = ClarifyAnswer::parse("2", &q);
    assert_eq!(
        (a.choices.clone(), a.text.as_str(), a.skip),
        (vec![2], "", false)
    );
    assert_eq!(a.describe(&q), "My team");

    let a = ClarifyAnswer::parse(" 1, 3 ", &q);
    assert_eq!(a.choices, vec![1, 3]);
    assert_eq!(a.describe(&q), "Me; A client");
    assert_eq!(ClarifyAnswer::parse("1 and 3", &q).choices, vec![1, 3]);

    // Out of range numbers are ignored; repeated ones count once.
    let a = ClarifyAnswer::parse("0, 4, 2, 2", &q);
    assert_eq!(a.choices, vec![2]);
    let a = ClarifyAnswer::parse("7", &q);
    assert!(a.choices.is_empty() && a.is_empty() && !a.is_skip());
    assert_eq!(a.describe(&q), "");

    // Numbers then words: both kept.
    let a = ClarifyAnswer::parse("2 - but only the designers", &q);
    assert_eq!(a.choices, vec![2]);
    assert_eq!(a.text, "but only the designers");
    assert_eq!(a.describe(&q), "My team. but only the designers");

    // Free text, even with numbers inside, stays free text.
    let a = ClarifyAnswer::parse("For my 3 kids", &q);
    assert!(a.choices.is_empty());
    assert_eq!(a.text, "For my 3 kids");
    assert_eq!(a.describe(&q), "For my 3 kids");

    for reply in ["skip", "SKIP", " Skip. ", "", "   \n"] {
        let a = ClarifyAnswer::parse(reply, &q);
        assert!(a.is_skip(), "{reply:?}");
        assert!(a.choices.is_empty() && a.text.is_empty());
        assert_eq!(a.describe(&q), "(skipped)");
    }
    // "skip" inside a sentence is an answer.
    let a = ClarifyAnswer::parse("skip the theory", &q);
    assert!(!a.is_skip());
    assert_eq!(a.text, "skip the theory");
}

#[test]
fn a_question_renders_with_numbered_options_and_a_hint() {
    let q = question(2, "Who is it for?", &["Me", "My team"]);
    let shown = q.render();
    assert!(shown.starts_with("Question 2: Who is it for?"), "{shown}");
    assert!(shown.contains("  1. Me\n  2. My team\n"), "{shown}");
    assert!(shown.contains("skip") && shown.contains("Enter"), "{shown}");
}

#[test]
fn summarise_returns_the_brief_and_checklist() {
    let llm = scripted(vec![]);
    let q1 = question(1, EARLIER, &["One", "Two"]);
    let q2 = question(2, "What is your budget?", &["Under 200 euros", "Any"]);
    let turns = vec![
        ClarifyTurn {
            answer: ClarifyAnswer::parse("2, for summer hikes", &q1),
            question: q1,
        },
        ClarifyTurn {
            answer: ClarifyAnswer::parse("1", &q2),
            question: q2,
        },
    ];
    let (refined, completion) = clarify::summarise(&llm, &ctx(), &turns).unwrap();
    assert_eq!(
        refined.brief,
        "I want a light tent for two people under 200 euros, for summer hikes."
    );
    assert_eq!(
        refined.checklist,
        vec![
            "Covers tent weight",
            "Covers price under 200 euros",
            "Covers two-person models"
        ]
    );
    assert_eq!(completion.usage.calls, 1);
    let prompt = &llm.prompts()[0];
    assert!(
        prompt.contains(&format!("- {EARLIER} Answer: Two. for summer hikes")),
        "{prompt}"
    );
    assert!(prompt.contains("- What is your budget? Answer: Under 200 euros"));

    // Nothing answered: the brief is the query itself, the checklist still comes back.
    let mut skipped = earlier_turn();
    skipped.answer = ClarifyAnswer::parse("", &skipped.question);
    let (refined, _) = clarify::summarise(&llm, &ctx(), &[skipped]).unwrap();
    assert_eq!(refined.brief, QUERY);
    assert_eq!(refined.checklist.len(), 3);
    assert!(llm.prompts()[1].contains("(none answered)"));
    let (refined, _) = clarify::summarise(&llm, &ctx(), &[]).unwrap();
    assert_eq!(refined.brief, QUERY);
}

#[test]
fn an_unusable_summary_falls_back_to_the_query_and_answers() {
    let llm = scripted_with_summary(vec![], r#"{"brief": "I want a li"#.into());
    let (refined, completion) = clarify::summarise(&llm, &ctx(), &[earlier_turn()]).unwrap();
    assert_eq!(
        refined.brief,
        format!("{QUERY} ({EARLIER} Two)"),
        "nothing the user said is lost"
    );
    assert!(refined.checklist.is_empty());
    // Tried twice, the second time asking for shorter text; both calls are accounted.
    assert_eq!(completion.usage.calls, 2);
    let prompts = llm.prompts();
    assert!(!prompts[0].contains("Keep every text short"));
    assert!(prompts[1].contains("Keep every text short"));
}

#[test]
fn the_bag_of_words_cosine_separates_the_scripted_candidates() {
    // Guards the fixtures above: the redundant candidate is a copy, the off-topic one shares
    // no words with the query or the generic aspects, the on-topic ones do.
    let e = BAG_OF_WORDS.embed(&[EARLIER, EARLIER]).unwrap();
    assert!(cosine(&e[0], &e[1]) > 0.99);
    let relevance = |q: &str, options: &[&str]| {
        clarify::relevance(&BAG_OF_WORDS, &ctx(), &question(1, q, options)).unwrap()
    };
    let off = relevance(OFF_TOPIC, &["Red paint", "Blue paint"]);
    assert!(off < 0.2, "{off}");
    let on = relevance(
        "Which season will you hike in with the tent?",
        &["Summer hiking", "All four seasons"],
    );
    assert!(on >= 0.2, "{on}");
}
