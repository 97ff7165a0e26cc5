//! The research loop's logic with a scripted model: which directions get expanded after a
//! pause, that raising C0 never adds pauses, that every decision carries its numbers, and that
//! every citation in the report resolves.

use rudder_testkit::scripted;

use rudder::research::events::Collect;
use rudder::research::{
    Brief, Event, Interaction, NeverAsk, Origin, Outcome, PauseAnswer, ResearchSettings,
    Researcher, Scripted,
};
use rudder::sources::Sources;
use scripted::{BagOfWords, MemorySource, ScriptedLlm};

fn run(
    llm: &ScriptedLlm,
    settings: ResearchSettings,
    interaction: &mut dyn Interaction,
) -> (Outcome, Vec<Event>) {
    run_for(llm, settings, interaction, "A home cook who likes tea.")
}

fn run_for(
    llm: &ScriptedLlm,
    settings: ResearchSettings,
    interaction: &mut dyn Interaction,
    persona_text: &str,
) -> (Outcome, Vec<Event>) {
    run_over(
        MemorySource::tea(),
        llm,
        settings,
        interaction,
        persona_text,
    )
}

fn run_over(
    source: MemorySource,
    llm: &ScriptedLlm,
    settings: ResearchSettings,
    interaction: &mut dyn Interaction,
    persona_text: &str,
) -> (Outcome, Vec<Event>) {
    let brief = Brief {
        query: "How should I brew tea?".into(),
        persona_text: persona_text.into(),
        ..Brief::default()
    };
    run_brief(source, llm, settings, interaction, &brief)
}

fn run_brief(
    source: MemorySource,
    llm: &ScriptedLlm,
    settings: ResearchSettings,
    interaction: &mut dyn Interaction,
    brief: &Brief,
) -> (Outcome, Vec<Event>) {
    let mut sources = Sources::new();
    sources.push(Box::new(source));
    let mut events = Collect::default();
    let mut researcher = Researcher {
        llm,
        embedder: &BagOfWords,
        sources: &mut sources,
        interaction,
        events: &mut events,
        journal: &mut rudder::research::MemoryJournal::new(),
        settings,
        embed_model: "bag-of-words".into(),
    };
    let outcome = researcher.run(brief).unwrap();
    (outcome, events.0.into_iter().map(|e| e.event).collect())
}

fn settings(depth: u32, breadth: u32, c0: f32) -> ResearchSettings {
    let mut s = ResearchSettings {
        depth,
        breadth,
        ..ResearchSettings::default()
    };
    s.pause.base_cost = c0;
    s
}

#[test]
fn exactly_the_chosen_and_added_directions_are_expanded() {
    let llm = ScriptedLlm::new();
    let mut answers = Scripted::new(vec![PauseAnswer {
        chosen: vec![2],
        new_questions: vec!["What does good tea cost?".into()],
        text: String::new(),
    }]);
    // Light exploration weights let the alignment spread decide, so the root pauses.
    let mut s = settings(2, 3, 0.0);
    s.weights.lambda_explore = 0.1;
    s.weights.lambda_info = 0.1;
    let (outcome, events) = run(&llm, s, &mut answers);

    // What MMR offered at the root, and what was asked.
    let offered: Vec<String> = events
        .iter()
        .find_map(|e| match e {
            Event::CandidatesSelected {
                node: 0,
                candidates,
                selected,
            } => Some(
                selected
                    .iter()
                    .map(|&i| candidates[i].question.clone())
                    .collect(),
            ),
            _ => None,
        })
        .expect("candidates at the root");
    assert_eq!(offered.len(), 3);
    let decision = events
        .iter()
        .find_map(|e| match e {
            Event::PauseDecided {
                node: 0,
                decision,
                asked,
                ..
            } => Some((decision.clone(), *asked)),
            _ => None,
        })
        .unwrap();
    assert!(decision.0.ask && decision.1, "{}", decision.0.explain());
    assert_eq!(answers.asked[0].directions.len(), 3);

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
    assert_eq!(root_children.len(), 2, "{root_children:?}");
    assert_eq!(root_children[0].0, offered[1]);
    assert_eq!(
        root_children[1],
        ("What does good tea cost?".to_string(), Origin::User)
    );
    // Nothing that was offered but not chosen was researched anywhere.
    for q in [&offered[0], &offered[2]] {
        assert!(
            !outcome.tree.nodes.iter().any(|n| &n.question == q),
            "unchosen direction {q} was expanded"
        );
    }
    // The answer reached the persona.
    assert!(outcome
        .persona
        .checklist
        .contains(&"Covers brewing in depth".to_string()));
    assert!(events
        .iter()
        .any(|e| matches!(e, Event::PersonaUpdated { .. })));
    // Later pauses ran out of script and went on with every offered direction.
    for &d in outcome.tree.directions() {
        let node = &outcome.tree.nodes[d];
        assert!(node.children.len() <= 3);
        assert!(!node.children.is_empty());
    }
    assert_eq!(outcome.pauses as usize, answers.asked.len());
}

#[test]
fn raising_c0_never_increases_pauses() {
    // Alignment spread across candidates and light exploration weights make ΔEV vary across
    // nodes, so the sweep crosses real decision boundaries. The script answers with nothing
    // (go on with every direction), so the tree is the same whatever is asked.
    let mut pauses = Vec::new();
    for step in 0..=10 {
        let c0 = step as f32 / 10.0;
        let llm = ScriptedLlm::with_alignment(Box::new(|i, n| vec![[2, 1, 0][i % 3]; n]));
        let mut s = settings(3, 2, c0);
        s.weights.lambda_explore = 0.1;
        s.weights.lambda_info = 0.1;
        let mut answers = Scripted::new(Vec::new());
        let (outcome, _) = run(&llm, s, &mut answers);
        pauses.push(outcome.pauses);
    }
    for w in pauses.windows(2) {
        assert!(w[1] <= w[0], "pauses by C0 0.0..1.0: {pauses:?}");
    }
    assert!(
        pauses[0] > pauses[10],
        "the sweep should change behaviour: {pauses:?}"
    );
}

#[test]
fn every_decision_is_logged_with_its_numbers() {
    let llm = ScriptedLlm::new();
    let (outcome, events) = run(&llm, settings(2, 3, 0.7), &mut NeverAsk);
    let decisions: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::PauseDecided {
                decision,
                candidates,
                asked,
                ..
            } => Some((decision.clone(), candidates.clone(), *asked)),
            _ => None,
        })
        .collect();
    // Root plus each of its three children is a frontier node at D = 2.
    assert_eq!(decisions.len(), 4);
    for (d, candidates, asked) in &decisions {
        assert!(!asked, "never-ask must not ask");
        assert_eq!(d.utilities.len(), candidates.len());
        assert_eq!(d.radii.len(), candidates.len());
        let gain: f32 = (0..candidates.len())
            .filter(|i| !d.could_be_best.contains(i))
            .map(|i| d.execution_costs[i] - d.utilities[i])
            .sum();
        assert!((gain - d.gain).abs() < 1e-5);
        assert_eq!(d.ask, d.gain > d.cost);
        for c in candidates {
            let u = &c.utility;
            assert!((u.total - (u.delta_align + 0.5 * u.explore + 0.5 * u.info_gain)).abs() < 1e-5);
        }
    }
    assert_eq!(outcome.pauses, 0);
    // Three directions, each with three children: 1 + 3 + 9 nodes.
    assert_eq!(outcome.tree.nodes.len(), 13);
    assert_eq!(llm.count("node"), 13);
    assert_eq!(llm.count("align"), 4);
    // One heading call per written section (two when the first is refused), one title call
    // (or two), one summary call (or two), and at least one paragraph call per section.
    let sections = outcome
        .report
        .sections
        .iter()
        .filter(|s| s.heading != rudder::research::report::NEEDS_HEADING)
        .count();
    // Three directions over the same five passages: a direction whose learnings all repeat
    // ones placed earlier in the report gets no section of its own, and a finding reads under
    // the section whose question it answers, so the directions' findings can share one.
    assert!((1..=3).contains(&sections), "{sections} sections");
    assert!((sections..=2 * sections).contains(&llm.count("heading")));
    assert!((1..=2).contains(&llm.count("title")));
    assert!(llm.count("paragraph") >= sections);
    // The opening answer: one call (two when refused).
    assert!((1..=2).contains(&llm.count("summary")));
    // The support judge (a model no calibration covers judges at 0.5) read the sentences the
    // embedding accepted, and its calls are accounted with the others.
    assert!(llm.count("support") > 0);
    assert_eq!(
        outcome.usage.calls as usize,
        llm.calls.lock().unwrap().len()
    );
}

#[test]
fn what_this_means_for_you_is_written_only_for_a_reader_rudder_knows() {
    let needs_section = |outcome: &Outcome| {
        outcome
            .report
            .sections
            .iter()
            .any(|s| s.heading == rudder::research::report::NEEDS_HEADING)
    };
    // No history, no profile, nothing said: the checklist the question alone suggests is not
    // something to tell this reader.
    let (anonymous, _) = run_for(&ScriptedLlm::new(), settings(1, 2, 0.7), &mut NeverAsk, "");
    assert!(!anonymous.persona.checklist.is_empty());
    assert!(!needs_section(&anonymous), "{}", anonymous.report.markdown);
    // A reader who said something about themselves that bears on the question.
    let told = Brief {
        query: "How should I brew tea?".into(),
        persona_text: "I brew tea with a cheap electric kettle.".into(),
        ..Brief::default()
    };
    let (known, _) = run_brief(
        MemorySource::tea(),
        &ScriptedLlm::new(),
        settings(1, 2, 0.7),
        &mut NeverAsk,
        &told,
    );
    assert!(needs_section(&known), "{}", known.report.markdown);
    assert!(
        needs_text(&known).contains("kettle"),
        "{}",
        known.report.markdown
    );
}

/// The tea question for a reader known only by their profile, researched one level deep.
fn run_with_profile(llm: &ScriptedLlm, profile: &str) -> (Outcome, Vec<Event>) {
    let brief = Brief {
        query: "How should I brew tea?".into(),
        profile: profile.into(),
        ..Brief::default()
    };
    run_brief(
        MemorySource::tea(),
        llm,
        settings(1, 2, 0.7),
        &mut NeverAsk,
        &brief,
    )
}

/// The needs section's text, or "" when the report has none.
fn needs_text(outcome: &Outcome) -> String {
    outcome
        .report
        .sections
        .iter()
        .filter(|s| s.heading == rudder::research::report::NEEDS_HEADING)
        .flat_map(|s| s.paragraphs.iter().map(|p| p.text.clone()))
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn a_checklist_the_model_guessed_from_a_profile_is_not_called_the_readers_needs() {
    // Rudder knows the reader from their history only: the checklist the model guessed from
    // the question and the profile steers the research, and the report does not tell them it
    // is theirs. What the profile says that bears on the question is.
    let llm = ScriptedLlm::new();
    let (outcome, events) = run_with_profile(
        &llm,
        "Emphasize:\n- They said: I brew tea with a cheap electric kettle.\n",
    );
    assert_eq!(llm.count("checklist"), 1);
    let guessed = events
        .iter()
        .find_map(|e| match e {
            Event::PersonaSeeded { guessed, .. } => Some(guessed.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(guessed, outcome.persona.checklist);
    assert!(!guessed.is_empty());
    let needs = needs_text(&outcome);
    assert!(needs.contains("kettle"), "{}", outcome.report.markdown);
    // A need is named where its paragraph opens ("For the cost, …", "On the cost: …") or in
    // the sentence listing what the sources do not cover.
    let not_covered = needs
        .split(rudder::research::report::NOT_COVERED_OPENING)
        .nth(1)
        .unwrap_or("");
    for item in &guessed {
        let label = rudder::research::report::need_label(item);
        assert!(
            !needs.contains(&format!("For {label}")) && !needs.contains(&format!("On {label}:")),
            "{label} in {needs}"
        );
        assert!(!not_covered.contains(&label), "{label} in {not_covered}");
    }
}

#[test]
fn only_a_checklist_the_user_gave_is_named_as_not_covered() {
    let not_covered = |outcome: &Outcome| {
        needs_text(outcome)
            .split(rudder::research::report::NOT_COVERED_OPENING)
            .nth(1)
            .unwrap_or("")
            .to_string()
    };
    // The clarification's summary turns the answer into checklist items the model wrote
    // ("Covers brewing for guests"): they steer the research, and the report does not call
    // them the user's unanswered topics.
    let mut interaction = rudder::research::Scripted::new(Vec::new()).with_clarifications(vec![
        rudder::research::interaction::ScriptedClarification::Reply("2".into()),
    ]);
    let mut clarified = settings(1, 2, 0.7);
    clarified.clarify_turns = 1;
    let brief = Brief {
        query: "How should I brew tea?".into(),
        ..Brief::default()
    };
    let (outcome, _) = run_brief(
        MemorySource::tea(),
        &ScriptedLlm::new(),
        clarified,
        &mut interaction,
        &brief,
    );
    assert!(outcome
        .persona
        .checklist
        .iter()
        .any(|c| c.contains("brewing for guests")));
    assert!(
        !outcome.report.markdown.contains("brewing for guests"),
        "{}",
        outcome.report.markdown
    );
    // The same topic in the checklist the user gave is theirs, and named when nothing covers
    // it.
    let brief = Brief {
        query: "How should I brew tea?".into(),
        checklist: Some(vec!["Covers brewing for guests".into()]),
        ..Brief::default()
    };
    let (outcome, _) = run_brief(
        MemorySource::tea(),
        &ScriptedLlm::new(),
        settings(1, 2, 0.7),
        &mut NeverAsk,
        &brief,
    );
    assert!(
        not_covered(&outcome).contains("brewing for guests"),
        "{}",
        outcome.report.markdown
    );
}

#[test]
fn a_statement_of_the_users_becomes_a_need_only_for_a_question_it_bears_on() {
    // A sentence of their custom instructions and one they told Rudder: every profile carries
    // both, whatever the question; only the kettle bears on brewing tea.
    let llm = ScriptedLlm::new();
    let (outcome, _) = run_with_profile(
        &llm,
        "Emphasize:\n- I cook most evenings and bake bread on weekends.\n\
         - They said: I brew tea with a cheap electric kettle.\n",
    );
    // Each statement against the question and the two contrast questions.
    assert_eq!(llm.count("relevance"), 6);
    let needs = needs_text(&outcome);
    assert!(needs.contains("kettle"), "{}", outcome.report.markdown);
    assert!(!needs.contains("bake bread"), "{}", outcome.report.markdown);
    assert!(!outcome.report.markdown.contains("bake bread"));
}

#[test]
fn a_fact_the_relevance_judge_left_out_is_a_need_where_the_documents_show_it_matters() {
    // What the history says of the reader that the relevance judge did not keep: looked up in
    // the documents before the report, and a need only where a sentence matters for it.
    let llm = ScriptedLlm::new();
    let mut source = MemorySource::tea();
    source.0.push((
        "Brewing temperature".into(),
        "People with a sore throat should brew tea below 65 degrees. Brewing tea at a lower \
         temperature keeps its sweetness."
            .into(),
    ));
    let brief = Brief {
        query: "How should I brew tea?".into(),
        profile: "Emphasize:\n- I brew tea with a cheap electric kettle.\n".into(),
        considered: vec![
            "Has a sore throat every winter".into(),
            "Plays chess online most days".into(),
        ],
        ..Brief::default()
    };
    let mut settings = settings(1, 2, 0.7);
    settings.need_lookup = Some(0.37);
    let (outcome, _) = run_brief(source, &llm, settings, &mut NeverAsk, &brief);
    let looked_up: Vec<&str> = outcome
        .tree
        .nodes
        .iter()
        .filter(|n| n.origin == Origin::Need)
        .map(|n| n.question.as_str())
        .collect();
    assert!(
        looked_up.iter().any(|q| q.contains("sore throat")),
        "{looked_up:?}"
    );
    assert!(
        !looked_up.iter().any(|q| q.contains("chess")),
        "{looked_up:?}"
    );
    assert!(
        outcome
            .report
            .markdown
            .contains("People with a sore throat should brew tea below 65 degrees"),
        "{}",
        outcome.report.markdown
    );
    assert!(
        !outcome.report.markdown.contains("chess"),
        "{}",
        outcome.report.markdown
    );
    assert!(llm.count("need judge") > 0);
}

#[test]
fn every_citation_in_the_report_resolves() {
    let llm = ScriptedLlm::new();
    let (outcome, _) = run(&llm, settings(1, 2, 0.7), &mut NeverAsk);
    let report = &outcome.report;
    let cited = report.cited_numbers();
    assert!(!cited.is_empty());
    for n in &cited {
        let r = report
            .references
            .iter()
            .find(|r| r.number == *n)
            .unwrap_or_else(|| panic!("citation [{n}] has no reference"));
        assert!(outcome.evidence.contains_key(&r.key), "{}", r.key);
        assert!(report.markdown.contains(&format!("(#ref-{n})")));
        assert!(report.markdown.contains(&format!("id=\"ref-{n}\"")));
    }
    // Numbered 1..=n in order, each used.
    let numbers: Vec<usize> = report.references.iter().map(|r| r.number).collect();
    assert_eq!(numbers, (1..=numbers.len()).collect::<Vec<_>>());
    assert_eq!(cited, numbers);
    // The HTML export keeps the links and anchors.
    let html = report.to_html();
    assert!(html.contains("href=\"#ref-1\""), "{html}");
    assert!(html.contains("id=\"ref-1\""), "{html}");
}

#[test]
fn no_sources_is_a_clear_error() {
    let llm = ScriptedLlm::new();
    let mut sources = Sources::new();
    let mut events = Collect::default();
    let err = Researcher {
        llm: &llm,
        embedder: &BagOfWords,
        sources: &mut sources,
        interaction: &mut NeverAsk,
        events: &mut events,
        journal: &mut rudder::research::MemoryJournal::new(),
        settings: ResearchSettings::default(),
        embed_model: "x".into(),
    }
    .run(&Brief {
        query: "q".into(),
        ..Brief::default()
    })
    .unwrap_err();
    assert!(err.to_string().contains("no sources"), "{err}");
    // The engine names the remedy; each face words it (a command, a screen).
    assert_eq!(
        rudder::diagnose::remedy_of(&err),
        Some(rudder::remedy::Remedy::AddSources)
    );
}

#[test]
fn the_query_aware_profile_seeds_the_persona() {
    let llm = ScriptedLlm::new();
    let mut sources = Sources::new();
    sources.push(Box::new(MemorySource::tea()));
    let mut events = Collect::default();
    let outcome = Researcher {
        llm: &llm,
        embedder: &BagOfWords,
        sources: &mut sources,
        interaction: &mut NeverAsk,
        events: &mut events,
        journal: &mut rudder::research::MemoryJournal::new(),
        settings: settings(0, 1, 0.7),
        embed_model: "bag-of-words".into(),
    }
    .run(&Brief {
        query: "How should I brew tea?".into(),
        persona_text: "A student.".into(),
        profile: "Emphasize:\n- cheap options\nTone:\n- casual".into(),
        checklist: None,
        considered: Vec::new(),
    })
    .unwrap();
    let seeded = events
        .0
        .iter()
        .find_map(|e| match &e.event {
            Event::PersonaSeeded {
                persona,
                from_profile,
                ..
            } => Some((persona.clone(), *from_profile)),
            _ => None,
        })
        .unwrap();
    assert!(seeded.1);
    assert!(seeded.0.text.starts_with("A student."), "{}", seeded.0.text);
    assert!(seeded.0.text.contains("cheap options"), "{}", seeded.0.text);
    assert_eq!(seeded.0.checklist.len(), 4);
    assert_eq!(outcome.persona.text, seeded.0.text);
}

#[test]
fn unfinished_model_output_loses_a_step_not_the_run() {
    // Every report writer is cut off mid-JSON.
    let mut llm = ScriptedLlm::new();
    llm.truncate = vec!["paragraph", "heading", "title", "need"];
    let (outcome, _) = run(&llm, settings(1, 2, 0.7), &mut NeverAsk);
    let report = &outcome.report;
    // The findings stay, in their own words and still cited (the scripted ones repeat each
    // other, so some are left out as repeats); the title falls back to the question.
    assert!(!report.summary.citations.is_empty());
    assert!(report.sections.iter().any(|s| s.direction.is_some()));
    assert!(report.sections.iter().all(|s| !s.paragraphs.is_empty()));
    // Each call was asked once more, then given up.
    assert_eq!(llm.count("title"), 2);
    assert_eq!(report.title, "How should I brew tea?");
    let cited = report.cited_numbers();
    assert!(!cited.is_empty());
    assert!(cited.iter().all(|n| *n <= report.references.len()));
    for r in &report.references {
        assert!(outcome.evidence.contains_key(&r.key));
    }

    let mut llm = ScriptedLlm::new();
    llm.truncate = vec!["node"];
    let (outcome, _) = run(&llm, settings(1, 2, 0.7), &mut NeverAsk);
    // The root yields nothing (so no follow-ups), and the run still ends in a report.
    assert_eq!(outcome.tree.nodes.len(), 1);
    assert!(outcome.learnings.is_empty());
    assert!(outcome.report.markdown.contains("No evidence"));
}

#[test]
fn off_topic_follow_ups_are_never_planned() {
    let llm = ScriptedLlm::new();
    let (outcome, events) = run(&llm, settings(2, 2, 1.0), &mut NeverAsk);
    // The model proposed it at every node that plans …
    let proposed = events
        .iter()
        .filter(|e| match e {
            Event::NodeResearched { follow_ups, .. } => {
                follow_ups.iter().any(|f| f.question.contains("football"))
            }
            _ => false,
        })
        .count();
    assert!(proposed >= 1);
    // … with the highest confidence, yet it is never a candidate nor a node.
    for e in &events {
        if let Event::CandidatesSelected { candidates, .. } = e {
            assert!(!candidates.is_empty());
            assert!(candidates.iter().all(|c| !c.question.contains("football")));
        }
    }
    assert!(outcome.tree.nodes.len() > 1);
    assert!(outcome
        .tree
        .nodes
        .iter()
        .all(|n| !n.question.contains("football")));
}

/// A model that serves several calls at once gets a level's nodes researched together; calls
/// finish in an order of their own, yet the log is committed in node order and the research is
/// the one a one-call-at-a-time model produces.
#[test]
fn a_level_is_researched_together_and_logged_in_node_order() {
    let mut one = ScriptedLlm::new();
    one.delay = std::time::Duration::from_millis(5);
    let (sequential, _) = run(&one, settings(2, 3, f32::INFINITY), &mut NeverAsk);
    assert_eq!(one.peak.load(std::sync::atomic::Ordering::SeqCst), 1);

    let logs: Vec<(Outcome, Vec<Event>, usize)> = (0..2)
        .map(|_| {
            let mut many = ScriptedLlm::new();
            many.parallel = 3;
            many.delay = std::time::Duration::from_millis(5);
            let (outcome, events) = run(&many, settings(2, 3, f32::INFINITY), &mut NeverAsk);
            let peak = many.peak.load(std::sync::atomic::Ordering::SeqCst);
            (outcome, events, peak)
        })
        .collect();
    for (_, _, peak) in &logs {
        assert!((2..=3).contains(peak), "calls in flight at once: {peak}");
    }
    // Nodes are committed in the order they were started (the plan's priority order), which
    // is the order a one-call-at-a-time model researches them in.
    let ids = |events: &[Event], started: bool| -> Vec<usize> {
        events
            .iter()
            .filter_map(|e| match e {
                Event::NodeStarted { id } if started => Some(*id),
                Event::NodeResearched { id, .. } if !started => Some(*id),
                _ => None,
            })
            .collect()
    };
    let (_, sequential_events) = run(&one, settings(2, 3, f32::INFINITY), &mut NeverAsk);
    assert_eq!(ids(&logs[0].1, false), ids(&logs[0].1, true));
    assert_eq!(ids(&logs[0].1, false), ids(&sequential_events, false));
    // Two concurrent runs log the same events (timing aside) …
    fn untimed(value: &mut serde_json::Value) {
        match value {
            serde_json::Value::Object(map) => {
                map.retain(|k, _| k != "created_at" && k != "updated_at");
                map.values_mut().for_each(untimed);
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(untimed),
            _ => {}
        }
    }
    let kinds = |events: &[Event]| -> Vec<serde_json::Value> {
        events
            .iter()
            .filter(|e| !matches!(e, Event::Usage { .. } | Event::Finished { .. }))
            .map(|e| {
                let mut v = serde_json::to_value(e).unwrap();
                untimed(&mut v);
                v
            })
            .collect()
    };
    assert_eq!(kinds(&logs[0].1), kinds(&logs[1].1));
    // … and reach the tree and report of the sequential run.
    let questions =
        |o: &Outcome| -> Vec<String> { o.tree.nodes.iter().map(|n| n.question.clone()).collect() };
    assert_eq!(questions(&logs[0].0), questions(&sequential));
    assert_eq!(logs[0].0.report.markdown, sequential.report.markdown);
}

/// A node reads passages no other node took before ones another did: directions chosen
/// together peek at different passages, so the research reads more of what the sources hold
/// than when every node takes its best matches.
#[test]
fn nodes_read_passages_no_other_node_took_first() {
    // The distinct passages the root and the two directions under it read.
    let distinct_read = |pool: usize| {
        let mut s = settings(1, 2, 0.7);
        // Three passages a node: the best matches of three nodes are four of the six tea
        // passages; with a head of three, the floor (the least close of them) lets the rest in.
        s.evidence_per_node = 3;
        s.fresh_evidence_pool = pool;
        let (_, events) = run(&ScriptedLlm::new(), s, &mut NeverAsk);
        let reads: Vec<Vec<String>> = events
            .iter()
            .filter_map(|e| match e {
                Event::NodeResearched { sources, .. } => {
                    Some(sources.iter().map(|e| e.target.key()).collect())
                }
                _ => None,
            })
            .take(3)
            .collect();
        assert_eq!(reads.len(), 3, "{reads:?}");
        let distinct: std::collections::BTreeSet<&String> = reads.iter().flatten().collect();
        println!("pool {pool}: {reads:?}");
        distinct.len()
    };
    let best_matches = distinct_read(1);
    let fresh_first = distinct_read(3);
    assert!(
        fresh_first > best_matches,
        "fresh first read {fresh_first} distinct passages, best matches {best_matches}"
    );
    assert!(fresh_first >= 5, "{fresh_first}");
}

/// A passage from further down the ranking is read in place of one another node took only
/// when it is as close to the node's question, and to the research question, as the best
/// matches the node would read anyway: one that shares a word of the question and nothing
/// else of it is never read, however fresh.
#[test]
fn a_fresh_passage_below_the_relevance_floor_is_not_read() {
    // Three passages on brewing tea for three nodes of two passages each: every node but the
    // first must read a passage another took, or the brewery.
    let mut source = MemorySource::tea();
    source
        .0
        .retain(|(title, _)| ["Green tea", "Black tea", "Tea safety"].contains(&title.as_str()));
    source.0.push((
        "Brewery".into(),
        "A brewery makes beer from malt and hops; Bavaria has many. How big is one?".into(),
    ));
    let mut s = settings(1, 2, 0.7);
    s.evidence_per_node = 2;
    s.fresh_evidence_pool = 4;
    let (_, events) = run_over(
        source,
        &ScriptedLlm::new(),
        s,
        &mut NeverAsk,
        "A home cook.",
    );
    let read: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            Event::NodeResearched { sources, .. } => Some(sources.clone()),
            _ => None,
        })
        .flatten()
        .map(|e| e.title)
        .collect();
    assert!(read.len() >= 6, "{read:?}");
    assert!(!read.iter().any(|t| t == "Brewery"), "{read:?}");
    let distinct: std::collections::BTreeSet<&String> = read.iter().collect();
    assert_eq!(distinct.len(), 3, "every tea passage is read: {read:?}");
}

/// A question asked in French is researched in English, the language the checks read (the
/// session log keeps both), and its report is translated back: French labels, the question as
/// asked, and each text the (scripted) model could not translate left as written and counted.
#[test]
fn a_question_in_french_is_researched_in_english_and_reported_in_french() {
    let asked = "Comment faut-il infuser le thé à la maison ?";
    let brief = Brief {
        query: asked.into(),
        ..Brief::default()
    };
    let (outcome, events) = run_brief(
        MemorySource::tea(),
        &ScriptedLlm::new(),
        settings(1, 2, f32::INFINITY),
        &mut NeverAsk,
        &brief,
    );
    let started = events
        .iter()
        .find_map(|e| match e {
            Event::Started { query, asked, .. } => Some((query.clone(), asked.clone())),
            _ => None,
        })
        .unwrap();
    assert_eq!(started, ("How should I brew tea?".into(), asked.into()));
    assert_eq!(outcome.tree.nodes[0].question, "How should I brew tea?");
    assert!(
        !outcome.learnings.is_empty(),
        "the English question finds the tea passages"
    );
    let report = &outcome.report;
    assert_eq!(report.query, asked);
    assert_eq!(report.language, "fra");
    assert!(
        report.markdown.contains(&format!("*Question:* {asked}")),
        "{}",
        report.markdown
    );
    assert!(
        report.markdown.contains("## Références"),
        "{}",
        report.markdown
    );
    assert!(
        report.untranslated > 0,
        "the scripted model translates only the question"
    );
    assert!(
        report.markdown.contains("restent en anglais"),
        "{}",
        report.markdown
    );
}

/// The French tea question, clarified once with `reply`: the scripted model, the interaction
/// (what the user was asked) and the log.
fn clarified_in_french(reply: &str) -> (ScriptedLlm, rudder::research::Scripted, Vec<Event>) {
    let brief = Brief {
        query: "Comment faut-il infuser le thé à la maison ?".into(),
        ..Brief::default()
    };
    let mut interaction = rudder::research::Scripted::new(Vec::new()).with_clarifications(vec![
        rudder::research::interaction::ScriptedClarification::Reply(reply.into()),
    ]);
    let mut settings = settings(1, 2, f32::INFINITY);
    settings.clarify_turns = 1;
    let llm = ScriptedLlm::new();
    let (_, events) = run_brief(
        MemorySource::tea(),
        &llm,
        settings,
        &mut interaction,
        &brief,
    );
    (llm, interaction, events)
}

#[test]
fn a_question_in_french_gets_its_clarifying_question_in_french() {
    let (llm, interaction, events) = clarified_in_french("1");
    let asked = &interaction.clarify_asked[0];
    assert_eq!(
        asked.question,
        "Infusez-vous du thé pour vous-même chaque jour, ou pour des invités ?"
    );
    // "Both" has no translation the scripted model knows; one word may read the same.
    assert_eq!(asked.options, ["Pour moi", "Pour des invités", "Both"]);
    // The log holds what the user was shown.
    assert!(events.iter().any(|e| matches!(
        e,
        Event::ClarifyAsked { question, .. } if question == asked
    )));
    // The research reads the English the options were proposed in: the summary is told the
    // user chose "For myself", not "Pour moi".
    let english = asked
        .in_english
        .as_ref()
        .expect("the English wording is kept");
    assert_eq!(english.options, ["For myself", "For guests", "Both"]);
    let summary = llm.prompts_of("clarify_summary");
    assert_eq!(summary.len(), 1);
    assert!(
        summary[0]
            .contains("Do you brew tea for yourself every day, or for guests? Answer: For myself"),
        "{}",
        summary[0]
    );
    assert!(!summary[0].contains("Pour moi"), "{}", summary[0]);
}

#[test]
fn an_answer_written_in_french_reaches_the_summary_in_english() {
    let (llm, _, events) = clarified_in_french("Pour des invités");
    // The log keeps the answer as the user wrote it …
    assert!(events.iter().any(|e| matches!(
        e,
        Event::ClarifyAnswered { answer, .. } if answer.text == "Pour des invités"
    )));
    // … and the summary reads it in English.
    let summary = llm.prompts_of("clarify_summary");
    assert!(summary[0].contains("Answer: For guests"), "{}", summary[0]);
}
