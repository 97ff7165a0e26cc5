//! The simulated user and the judges of the evaluation harness (issue 8): the scoring math,
//! validation of model output, the user's rules (valid numbers only, a new question only when
//! aspects are uncovered), a simulated user steering a scripted research run, and one
//! structural run of everything with the real small model.

use rudder_testkit as common;
use rudder_testkit::scripted;

use common::Canned;
use rudder::clarify::ClarifyQuestion;
use rudder::llm::LlmError;
use rudder::research::events::Collect;
use rudder::research::{
    Brief, Interaction, MemoryJournal, Origin, PauseQuestion, ResearchSettings, Researcher,
};
use rudder::sources::Sources;
use rudder_eval::{Aspect, Exchange, Judge, JudgeSettings, PersonaCase, SimulatedUser};
use scripted::{BagOfWords, MemorySource, ScriptedLlm};
use serde_json::json;

fn aspect(title: &str) -> Aspect {
    Aspect {
        aspect: title.into(),
        evidence: format!("The persona mentions {title}."),
        reason: format!("{title} decides what the user does."),
    }
}

fn persona() -> PersonaCase {
    PersonaCase {
        text: "I am a retired teacher who brews tea for guests. I keep a tight budget and \
               worry about caffeine at night."
            .into(),
        aspects: vec![
            aspect("Cost of good tea"),
            aspect("Caffeine and sleep"),
            aspect("Brewing for several guests"),
        ],
    }
}

const QUERY: &str = "How should I brew tea?";

const REPORT: &str = "# Brewing tea at home\n\n\
    Green tea is brewed at 70 to 80 degrees for two minutes; black tea with boiling water for \
    four minutes [1].\n\n\
    ## Caffeine\n\nA cup of black tea has about 40 mg of caffeine, green tea about 25 mg; \
    herbal teas have none, so they suit the evening [2].\n\n\
    ## History\n\nTea has been drunk in China since the Tang dynasty [3].\n\n\
    ## References\n\n1. Tea guide\n2. Caffeine table\n3. Tea history";

fn pause_question() -> PauseQuestion {
    PauseQuestion {
        node: 0,
        introduction: "Which of these should I research next?".into(),
        directions: vec![
            "How water temperature changes the taste".into(),
            "What tea costs per cup".into(),
            "Where tea comes from".into(),
        ],
        questions: vec![
            "How does water temperature change tea?".into(),
            "How much does tea cost per cup?".into(),
            "Where is tea grown?".into(),
        ],
        why: "test".into(),
    }
}

#[test]
fn alignment_is_the_mean_score_over_twice_the_aspects() {
    let llm = Canned::new(|prompt| {
        assert!(prompt.contains("match") || prompt.contains("covers this aspect"));
        // The reference list is not shown to the judge.
        assert!(!prompt.contains("Caffeine table"), "{prompt}");
        json!({"evaluations": [
            {"reasoning": "Cost is covered in depth.", "score": 2},
            {"reasoning": "Caffeine is mentioned.", "score": 1},
            {"reasoning": "Guests are not covered.", "score": 0},
        ]})
        .to_string()
    });
    let judge = Judge::new(&llm);
    let a = judge.alignment(QUERY, REPORT, &persona().aspects).unwrap();
    assert_eq!(a.per_aspect, vec![2, 1, 0]);
    assert_eq!(a.score, 0.5);
    assert_eq!(a.reasoning.len(), 3);
    let spent = judge.accounting();
    assert_eq!(spent.usage.calls, 1);
    assert!(spent.usage.prompt_tokens > 0);
}

#[test]
fn out_of_range_and_missing_scores_are_clamped_and_padded() {
    // A server that ignores the schema: a 7, and one evaluation too few.
    let llm = Canned::new(|_| {
        json!({"evaluations": [{"reasoning": "", "score": 7}, {"reasoning": "", "score": 1}]})
            .to_string()
    });
    let a = Judge::new(&llm)
        .alignment(QUERY, REPORT, &persona().aspects)
        .unwrap();
    assert_eq!(a.per_aspect, vec![2, 1, 0]);
    assert_eq!(a.score, 0.5);
}

#[test]
fn focus_is_the_share_of_key_points_mapped_to_an_aspect() {
    let llm = Canned::new(|prompt| {
        if prompt.contains("identify the key points") {
            json!({"points": [
                {"content": "Green tea is brewed at 70 to 80 degrees."},
                {"content": "Tea has been drunk in China since the Tang dynasty."},
                {"content": "Herbal teas have no caffeine."},
                {"content": "Black tea has about 40 mg of caffeine."},
                {"content": "Black tea has about 40 mg of caffeine."},
            ]})
        } else {
            assert!(prompt.contains("4. Black tea has about 40 mg"), "{prompt}");
            json!({"points": [
                {"reasoning": "brewing", "verdict": 3},
                {"reasoning": "background", "verdict": 0},
                {"reasoning": "caffeine", "verdict": 2},
                {"reasoning": "caffeine", "verdict": 2},
            ]})
        }
        .to_string()
    });
    let judge = Judge::new(&llm);
    let f = judge.focus_kp(QUERY, REPORT, &persona().aspects).unwrap();
    // The repeated key point is counted once.
    assert_eq!(f.key_points.len(), 4);
    assert_eq!(f.mapped, vec![Some(2), None, Some(1), Some(1)]);
    assert_eq!(f.score, 0.75);
    assert_eq!(judge.accounting().usage.calls, 2);
}

#[test]
fn a_verdict_past_the_aspects_counts_as_none() {
    let llm = Canned::new(|prompt| {
        if prompt.contains("identify the key points") {
            json!({"points": [{"content": "One point."}, {"content": "Two points."}]})
        } else {
            json!({"points": [{"reasoning": "", "verdict": 9}, {"reasoning": "", "verdict": 1}]})
        }
        .to_string()
    });
    let f = Judge::new(&llm)
        .focus_kp(QUERY, REPORT, &persona().aspects)
        .unwrap();
    assert_eq!(f.mapped, vec![None, Some(0)]);
    assert_eq!(f.score, 0.5);
}

#[test]
fn checklist_agreement_scores_aspects_and_an_empty_checklist_costs_nothing() {
    let llm = Canned::new(|prompt| {
        assert!(prompt.contains("1. Covers the cost"), "{prompt}");
        json!({"evaluations": [
            {"reasoning": "item 1", "score": 2},
            {"reasoning": "item 2", "score": 2},
            {"reasoning": "none", "score": 0},
        ]})
        .to_string()
    });
    let judge = Judge::new(&llm);
    let checklist = vec!["Covers the cost".to_string(), "Covers caffeine".to_string()];
    let s = judge
        .checklist_agreement(QUERY, &checklist, &persona().aspects)
        .unwrap();
    assert!((s - 4.0 / 6.0).abs() < 1e-6, "{s}");
    assert_eq!(
        judge
            .checklist_agreement(QUERY, &[], &persona().aspects)
            .unwrap(),
        0.0
    );
    assert_eq!(llm.calls(), 1);
}

#[test]
fn bespoke_scores_are_validated_and_feedback_is_kept() {
    let llm = Canned::new(|prompt| {
        assert!(prompt.contains("retired teacher"), "{prompt}");
        let c = |s: i64, f: &str| json!({"feedback": f, "score": s});
        json!({
            "need_alignment": c(4, "Mostly what I asked."),
            "content_depth": c(3, "Needs numbers."),
            "tone": c(9, "Fine."),
            "explanation_style": c(0, "Hard to scan."),
        })
        .to_string()
    });
    let b = Judge::new(&llm)
        .bespoke(QUERY, REPORT, &persona().text)
        .unwrap();
    assert_eq!(
        (
            b.need_alignment,
            b.content_depth,
            b.tone,
            b.explanation_style
        ),
        (4, 3, 5, 1)
    );
    assert!(b.feedback.contains("Content depth: Needs numbers."));
    assert_eq!(b.mean(), 3.25);
}

#[test]
fn judges_need_aspects_and_report_unusable_output() {
    let llm = Canned::new(|_| "not json".into());
    let judge = Judge::new(&llm);
    assert!(matches!(
        judge.alignment(QUERY, REPORT, &[]),
        Err(rudder_eval::EvalError::JudgeInput { .. })
    ));
    // The canned model, like a grammar-constrained one, writes invalid JSON only when cut at
    // its token limit, and says so.
    assert!(matches!(
        judge.alignment(QUERY, REPORT, &persona().aspects),
        Err(rudder_eval::EvalError::Judge {
            source: LlmError::Cut { .. },
            ..
        })
    ));
    assert_eq!(judge.accounting().invalid_outputs, 1);
}

fn user_llm(answer: serde_json::Value) -> Canned {
    Canned::new(move |prompt| {
        assert!(prompt.contains("simulating a real user"));
        // The user sees the full persona and every aspect.
        assert!(prompt.contains("worry about caffeine at night"), "{prompt}");
        assert!(prompt.contains("3. Brewing for several guests"), "{prompt}");
        answer.to_string()
    })
}

#[test]
fn invalid_direction_numbers_are_dropped() {
    let llm = user_llm(json!({
        "comment": "Cost matters most to me.",
        "selected_directions": [2, 7, 0, 2],
        "uncovered_aspects": [],
        "new_follow_up_questions": [],
    }));
    let mut user = SimulatedUser::new(&llm, persona(), QUERY);
    let answer = user.ask(&pause_question()).unwrap();
    assert_eq!(answer.chosen, vec![2]);
    assert_eq!(answer.text, "Cost matters most to me.");
    match &user.log()[0] {
        Exchange::Pause {
            dropped, fallback, ..
        } => {
            assert_eq!(dropped, &vec![7, 0, 2]);
            assert!(!fallback);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(user.accounting().usage.calls, 1);
}

#[test]
fn a_new_question_only_when_the_user_says_aspects_are_uncovered() {
    let covered = user_llm(json!({
        "comment": "", "selected_directions": [2], "uncovered_aspects": [],
        "new_follow_up_questions": ["How do I brew tea for ten guests at once?"],
    }));
    let mut user = SimulatedUser::new(&covered, persona(), QUERY);
    assert!(user
        .ask(&pause_question())
        .unwrap()
        .new_questions
        .is_empty());

    let uncovered = user_llm(json!({
        "comment": "", "selected_directions": [2], "uncovered_aspects": [3, 8],
        "new_follow_up_questions": ["How do I brew tea for ten guests at once?"],
    }));
    let mut user = SimulatedUser::new(&uncovered, persona(), QUERY);
    let first = user.ask(&pause_question()).unwrap();
    assert_eq!(
        first.new_questions,
        vec!["How do I brew tea for ten guests at once?"]
    );
    match &user.log()[0] {
        Exchange::Pause { uncovered, .. } => assert_eq!(uncovered, &vec![2]),
        other => panic!("{other:?}"),
    }
    // The same question again is not asked twice; the earlier one is in the prompt's history.
    let second = user.ask(&pause_question()).unwrap();
    assert!(second.new_questions.is_empty());
    let prompts = uncovered.prompts();
    assert!(prompts[1].contains("- How do I brew tea for ten guests at once?"));
    assert!(prompts[1].contains("- What tea costs per cup"));
}

#[test]
fn unusable_output_falls_back_to_going_on_and_to_skipping() {
    let llm = Canned::new(|_| "{\"comment\": \"cut off".into());
    let mut user = SimulatedUser::new(&llm, persona(), QUERY);
    assert!(user.ask(&pause_question()).unwrap().is_empty());
    let q = ClarifyQuestion {
        turn: 1,
        question: "Who do you brew for?".into(),
        options: vec!["Myself".into(), "Guests".into()],
        in_english: None,
    };
    assert!(user.clarify(&q).unwrap().skip);
    assert!(user.log().iter().all(|e| match e {
        Exchange::Pause { fallback, .. } | Exchange::Clarify { fallback, .. } => *fallback,
    }));
    assert_eq!(user.accounting().invalid_outputs, 2);
}

#[test]
fn clarifying_questions_get_valid_options_text_or_a_skip() {
    let q = ClarifyQuestion {
        turn: 1,
        question: "Who do you brew for?".into(),
        options: vec!["Myself".into(), "Guests".into(), "Both".into()],
        in_english: None,
    };
    let llm = user_llm(json!({
        "about_aspects": [3], "answer": "Mostly for my book club.", "choices": [2, 5], "skip": true,
    }));
    let mut user = SimulatedUser::new(&llm, persona(), QUERY);
    assert!(user.can_clarify());
    let a = user.clarify(&q).unwrap();
    assert_eq!(a.choices, vec![2]);
    assert_eq!(a.text, "Mostly for my book club.");
    assert!(!a.skip);
    match &user.log()[0] {
        Exchange::Clarify { about, dropped, .. } => {
            assert_eq!(about, &vec![2]);
            assert_eq!(dropped, &vec![5]);
        }
        other => panic!("{other:?}"),
    }

    let silent = user_llm(json!({"about_aspects": [], "answer": "", "choices": [], "skip": false}));
    let mut user = SimulatedUser::new(&silent, persona(), QUERY).with_clarification(false);
    assert!(!user.can_clarify());
    assert!(user.clarify(&q).unwrap().skip);
}

/// The simulated user steers a scripted research run: what it chose and added is what gets
/// researched, and every pause is in its log.
#[test]
fn a_simulated_user_steers_a_scripted_research_run() {
    let research_llm = ScriptedLlm::new();
    let user_model = user_llm(json!({
        "comment": "I care about what it costs.",
        "selected_directions": [1],
        "uncovered_aspects": [1],
        "new_follow_up_questions": ["How much does good tea cost per month?"],
    }));
    let mut user = SimulatedUser::new(&user_model, persona(), QUERY);
    let mut settings = ResearchSettings {
        depth: 2,
        breadth: 3,
        clarify_turns: 0,
        ..ResearchSettings::default()
    };
    settings.pause.always = true;
    let mut sources = Sources::new();
    sources.push(Box::new(MemorySource::tea()));
    let mut events = Collect::default();
    let outcome = Researcher {
        llm: &research_llm,
        embedder: &BagOfWords,
        sources: &mut sources,
        interaction: &mut user,
        events: &mut events,
        journal: &mut MemoryJournal::new(),
        settings,
        embed_model: "bag-of-words".into(),
    }
    .run(&Brief {
        query: QUERY.into(),
        persona_text: persona().first_sentence().into(),
        ..Brief::default()
    })
    .unwrap();

    assert!(outcome.pauses >= 1);
    let pauses: Vec<&Exchange> = user
        .log()
        .iter()
        .filter(|e| matches!(e, Exchange::Pause { .. }))
        .collect();
    assert_eq!(pauses.len() as u32, outcome.pauses);
    assert!(research_llm.count("question") as u32 >= outcome.pauses);
    let root_children: Vec<(String, Origin)> = outcome
        .tree
        .root()
        .children
        .iter()
        .map(|&c| {
            (
                outcome.tree.nodes[c].question.clone(),
                outcome.tree.nodes[c].origin,
            )
        })
        .collect();
    // Direction 1 and the user's own question, nothing else.
    assert_eq!(root_children.len(), 2, "{root_children:?}");
    assert_eq!(
        root_children[1],
        (
            "How much does good tea cost per month?".to_string(),
            Origin::User
        )
    );
    // The system was given only the first sentence of the persona.
    assert_eq!(
        persona().first_sentence(),
        "I am a retired teacher who brews tea for guests."
    );
}

/// The real small model judges a short report and answers a pause: only the invariants are
/// checked (a 135M model's judgments are not meaningful).
#[test]
fn the_small_model_judges_and_answers_within_bounds() {
    let llm = common::small_model();
    let judge = Judge::with_settings(
        &llm,
        JudgeSettings {
            max_key_points: 4,
            ..JudgeSettings::default()
        },
    );
    let aspects = persona().aspects;
    let a = judge.alignment(QUERY, REPORT, &aspects).unwrap();
    assert_eq!(a.per_aspect.len(), 3);
    assert!(a.per_aspect.iter().all(|&s| s <= 2));
    assert!((0.0..=1.0).contains(&a.score));

    let f = judge.focus_kp(QUERY, REPORT, &aspects).unwrap();
    assert!(f.key_points.len() <= 4);
    assert_eq!(f.mapped.len(), f.key_points.len());
    assert!(f.mapped.iter().flatten().all(|&m| m < 3));
    assert!((0.0..=1.0).contains(&f.score));

    let b = judge.bespoke(QUERY, REPORT, &persona().text).unwrap();
    for s in [
        b.need_alignment,
        b.content_depth,
        b.tone,
        b.explanation_style,
    ] {
        assert!((1..=5).contains(&s), "{b:?}");
    }
    let spent = judge.accounting();
    assert_eq!(spent.usage.calls, 3 + u64::from(!f.key_points.is_empty()));
    assert!(spent.usage.generated_tokens > 0 && spent.seconds > 0.0);

    let mut user = SimulatedUser::new(&llm, persona(), QUERY);
    let answer = user.ask(&pause_question()).unwrap();
    assert!(answer.chosen.iter().all(|&c| (1..=3).contains(&c)));
    assert!(answer.new_questions.len() <= 1);
    assert!(answer
        .new_questions
        .iter()
        .all(|q| q.chars().count() <= 200));
    assert_eq!(user.log().len(), 1);
    eprintln!(
        "alignment {:?} focus {:.2} ({} key points) bespoke {:?} user {:?}; judge {:?}; user {:?}",
        a.per_aspect,
        f.score,
        f.key_points.len(),
        (
            b.need_alignment,
            b.content_depth,
            b.tone,
            b.explanation_style
        ),
        answer,
        spent,
        user.log()[0]
    );
    eprintln!("user spent {:?}", user.accounting());
}
