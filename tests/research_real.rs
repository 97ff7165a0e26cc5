//! The research loop with the real small model (SmolLM2-135M through llama.cpp) and the real
//! embedder (all-MiniLM-L6-v2) over a real document library: a full run ends in a report whose
//! every citation resolves to an indexed chunk, and each model-driven step (checklist, persona
//! update, pause question, alignment, MMR) works with real models.

use rudder_testkit as common;

use rudder::embed::{Embedder, FastEmbedder};
use rudder::history::NoProgress;
use rudder::research::events::Collect;
use rudder::research::{
    align, mmr, persona, question, Brief, Event, NeverAsk, Persona, ResearchSettings, Researcher,
    Scripted,
};
use rudder::sources::docs::{DocsSource, Library};
use rudder::sources::{CitationTarget, Sources};

const DOCS: &[(&str, &str)] = &[
    ("green-tea.md", "# Green tea\n\nGreen tea is not oxidised. Brew it at 70 to 80 °C for two to three minutes; boiling water makes it bitter. Japanese sencha is steamed, Chinese longjing is pan-fired.\n"),
    ("black-tea.md", "# Black tea\n\nBlack tea is fully oxidised. Brew it with water just off the boil for three to five minutes. Assam and Darjeeling are the best known Indian black teas.\n"),
    ("caffeine.md", "# Caffeine in tea\n\nA cup of black tea holds about 40 to 70 mg of caffeine, green tea about 20 to 45 mg. Longer steeping extracts more caffeine and more tannins.\n"),
    ("storage.md", "# Storing tea\n\nKeep tea in an airtight, opaque container away from heat, light and smells. Green tea loses its aroma within months; black tea keeps for about two years.\n"),
    ("water.md", "# Water for tea\n\nSoft, filtered water gives a clearer cup. Very hard water dulls the taste and leaves a film on black tea.\n"),
];

fn library(dir: &std::path::Path, embedder: &FastEmbedder) -> Library {
    let files = dir.join("files");
    std::fs::create_dir_all(&files).unwrap();
    for (name, text) in DOCS {
        std::fs::write(files.join(name), text).unwrap();
    }
    let mut library = Library::open(&dir.join("docs")).unwrap();
    let report = library
        .add(
            &files,
            Some((embedder as &dyn Embedder, common::EMBED_MODEL)),
            &NoProgress,
        )
        .unwrap();
    assert_eq!(report.added as usize, DOCS.len());
    library
}

#[test]
fn a_real_run_ends_in_a_report_whose_every_citation_resolves() {
    // Its assertions read what SmolLM2 wrote, which depends on the date in the prompts.
    rudder_testkit::pin_prompt_date();
    let models = common::store();
    let embedder = FastEmbedder::from_store(&models, common::EMBED_MODEL, 1).unwrap();
    let llm = common::small_model();
    let tmp = tempfile::tempdir().unwrap();
    let library = library(tmp.path(), &embedder);
    let mut sources = Sources::new();
    sources.push(Box::new(DocsSource::new(library)));
    let mut events = Collect::default();
    // C0 = 0 so the rule asks whenever pruning gains anything; the script picks direction 1.
    let mut answers = Scripted::new(vec![rudder::research::PauseAnswer::parse("1")]);
    let mut settings = ResearchSettings {
        depth: 1,
        breadth: 2,
        ..ResearchSettings::default()
    };
    settings.pause.base_cost = 0.0;
    let outcome = Researcher {
        llm: &llm,
        embedder: &embedder,
        sources: &mut sources,
        interaction: &mut answers,
        events: &mut events,
        journal: &mut rudder::research::MemoryJournal::new(),
        settings,
        embed_model: common::EMBED_MODEL.into(),
    }
    .run(&Brief {
        query: "How should I brew and store tea?".into(),
        persona_text: "A student who drinks tea every day.".into(),
        ..Brief::default()
    })
    .unwrap();

    let report = &outcome.report;
    assert!(!report.title.is_empty());
    assert!(!outcome.learnings.is_empty());
    // The real model reflected once, after the last level, and every node was a task.
    let reflections = events
        .0
        .iter()
        .filter(|e| matches!(e.event, Event::Reflected { level: Some(1), .. }))
        .count();
    let kinds: Vec<String> = events
        .0
        .iter()
        .map(|e| {
            let v = serde_json::to_value(&e.event).unwrap();
            format!(
                "{} {}",
                v["type"],
                v.get("level").cloned().unwrap_or_default()
            )
        })
        .collect();
    assert_eq!(reflections, 1, "{kinds:?}");
    assert_eq!(outcome.todo.tasks.len(), outcome.tree.nodes.len());
    assert!(outcome
        .todo
        .tasks
        .iter()
        .all(|t| t.status == rudder::research::TaskStatus::Completed));
    assert!(!report.references.is_empty(), "{}", report.markdown);
    for n in report.cited_numbers() {
        let r = &report.references[n - 1];
        assert_eq!(r.number, n);
        match &r.target {
            CitationTarget::Document { path, chunk, .. } => {
                assert!(std::path::Path::new(path).is_file(), "{path}");
                assert_eq!(*chunk, 0, "each fixture document is one chunk");
                let text = std::fs::read_to_string(path).unwrap();
                let evidence = &outcome.evidence[&r.key];
                // The cited passage is really in the cited file.
                let first_words: String = evidence
                    .text
                    .split_whitespace()
                    .take(4)
                    .collect::<Vec<_>>()
                    .join(" ");
                assert!(
                    text.split_whitespace()
                        .collect::<Vec<_>>()
                        .join(" ")
                        .contains(&first_words),
                    "{first_words:?} not in {path}"
                );
            }
            other => panic!("unexpected target {other:?}"),
        }
        assert!(report.markdown.contains(&format!("(#ref-{n})")));
    }
    // Every learning cites evidence that was shown to the model.
    for l in &outcome.learnings {
        assert!(!l.sources.is_empty());
        for k in &l.sources {
            assert!(outcome.evidence.contains_key(k), "{k}");
        }
    }
    // When the root proposed follow-ups that survive the planner's cuts (a 135M model may
    // only restate the question or drift off it, and such follow-ups are dropped), the
    // decision there was logged with its numbers.
    let root_decision = events.0.iter().find_map(|e| match &e.event {
        Event::PauseDecided {
            node: 0, decision, ..
        } => Some(decision.clone()),
        _ => None,
    });
    let root_candidates = events
        .0
        .iter()
        .find_map(|e| match &e.event {
            Event::CandidatesSelected {
                node: 0,
                candidates,
                ..
            } => Some(candidates.len()),
            _ => None,
        })
        .unwrap_or(0);
    if root_candidates == 0 {
        assert!(root_decision.is_none());
        // Only reflection can have added nodes: the knowledge gaps it found.
        assert!(outcome.tree.nodes[1..]
            .iter()
            .all(|n| n.origin == rudder::research::Origin::Gap));
    } else {
        let d = root_decision.expect("a pause decision at the root");
        assert!((1..=2).contains(&d.utilities.len()), "{d:?}");
        assert_eq!(d.ask, d.gain > d.cost);
        assert!(outcome.tree.nodes.len() >= 2, "{}", outcome.tree.render());
    }
    // Checklist, root research and the report, at least.
    assert!(outcome.usage.calls >= 3);
    assert_eq!(outcome.pauses as usize, answers.asked.len());
    let html = report.to_html();
    assert!(!html.contains("<script"));
}

#[test]
fn persona_question_alignment_and_mmr_work_with_the_real_models() {
    let models = common::store();
    let embedder = FastEmbedder::from_store(&models, common::EMBED_MODEL, 1).unwrap();
    let llm = common::small_model();

    let (items, _) = persona::infer_checklist(
        &llm,
        "A nurse who works night shifts.",
        "Is coffee bad for sleep?",
    )
    .unwrap();
    assert!((4..=6).contains(&items.len()), "{items:?}");
    assert!(items.iter().all(|i| (3..=120).contains(&i.chars().count())));

    let mut p = Persona {
        text: "A nurse who works night shifts.".into(),
        checklist: items.clone(),
    };
    let before = p.checklist.len();
    let (update, _) = persona::update(&llm, &mut p, "Selected directions:\n- How caffeine affects sleep after a night shift\nComment: I only have 20 minutes to read").unwrap();
    assert!(update.new_checklist_items.len() <= 2);
    assert!(p.checklist.len() <= before + 2);

    let questions = vec![
        "How long does caffeine stay in the body?".to_string(),
        "Does decaf coffee help sleep?".to_string(),
    ];
    let (q, _) = question::generate(
        &llm,
        "Is coffee bad for sleep?",
        &p,
        0,
        &questions,
        "why".into(),
    )
    .unwrap();
    assert_eq!(q.directions.len(), 2);
    assert!(q.directions.iter().all(|d| !d.trim().is_empty()));

    let views = [
        align::CandidateView {
            question: &questions[0],
            evidence: &[],
        },
        align::CandidateView {
            question: &questions[1],
            evidence: &[],
        },
    ];
    let (scores, _) = align::score(&llm, &p, &["Coffee has caffeine.".into()], &views).unwrap();
    assert_eq!(scores.current.len(), p.checklist.len());
    assert_eq!(scores.candidates.len(), 2);
    assert!(scores.candidates.iter().flatten().all(|&s| s <= 2));

    // MMR over real sentence embeddings skips the paraphrase.
    let candidates = [
        "How much caffeine is in a cup of coffee?",
        "What amount of caffeine does one cup of coffee contain?",
        "How do night shifts disrupt the body clock?",
    ];
    let e = embedder.embed(&candidates).unwrap();
    let picked = mmr::select(&[0.9, 0.85, 0.5], &e, 2, 0.0);
    assert_eq!(picked, vec![0, 2]);
}

#[test]
fn a_run_that_never_asks_still_logs_its_decisions() {
    let models = common::store();
    let embedder = FastEmbedder::from_store(&models, common::EMBED_MODEL, 1).unwrap();
    let llm = common::small_model();
    let tmp = tempfile::tempdir().unwrap();
    let mut sources = Sources::new();
    sources.push(Box::new(DocsSource::new(library(tmp.path(), &embedder))));
    let mut events = Collect::default();
    let outcome = Researcher {
        llm: &llm,
        embedder: &embedder,
        sources: &mut sources,
        interaction: &mut NeverAsk,
        events: &mut events,
        journal: &mut rudder::research::MemoryJournal::new(),
        settings: ResearchSettings {
            depth: 1,
            breadth: 1,
            ..ResearchSettings::default()
        },
        embed_model: common::EMBED_MODEL.into(),
    }
    .run(&Brief {
        query: "How much caffeine is in tea?".into(),
        ..Brief::default()
    })
    .unwrap();
    use rudder::research::Event;
    let logged: Vec<&Event> = events.0.iter().map(|e| &e.event).collect();
    let names: Vec<String> = logged
        .iter()
        .map(|e| {
            format!("{e:?}")
                .split([' ', '{', '('])
                .next()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert!(
        matches!(logged.first(), Some(Event::Started { .. })),
        "{names:?}"
    );
    assert!(
        matches!(logged.last(), Some(Event::Finished { .. })),
        "{names:?}"
    );
    assert!(
        logged
            .iter()
            .any(|e| matches!(e, Event::ReportWritten { .. })),
        "{names:?}"
    );
    // Every node of the tree was researched, and the log says so.
    let researched = logged
        .iter()
        .filter(|e| matches!(e, Event::NodeResearched { .. }))
        .count();
    assert_eq!(researched, outcome.tree.nodes.len(), "{names:?}");
    // Each node above the last level is a frontier: what it chose to follow is logged, even
    // when that is nothing.
    let inner = outcome.tree.nodes.iter().filter(|n| n.depth < 1).count();
    let chosen = logged
        .iter()
        .filter(|e| matches!(e, Event::CandidatesSelected { .. }))
        .count();
    assert_eq!(chosen, inner, "{names:?}");
    // Wherever it kept directions it weighed asking: the decision is logged, and with NeverAsk
    // it never asked.
    let frontiers = logged
        .iter()
        .filter(|e| matches!(e, Event::CandidatesSelected { selected, .. } if !selected.is_empty()))
        .count();
    let decisions: Vec<bool> = logged
        .iter()
        .filter_map(|e| match e {
            Event::PauseDecided { asked, .. } => Some(*asked),
            _ => None,
        })
        .collect();
    assert_eq!(decisions.len(), frontiers, "{names:?}");
    assert!(decisions.iter().all(|asked| !asked), "{decisions:?}");
    assert!(!logged.iter().any(|e| matches!(e, Event::Question { .. })));
    assert_eq!(outcome.pauses, 0);
    // The report says something the sources say, citing them, not just the question back.
    let report = &outcome.report;
    assert!(
        !report.references.is_empty() && report.cited_numbers().contains(&1),
        "{}",
        report.markdown
    );
}

/// The tea documents as the evidence one node reads.
fn tea_evidence() -> Vec<rudder::sources::Evidence> {
    DOCS.iter()
        .map(|(name, text)| rudder::sources::Evidence {
            target: CitationTarget::Document {
                path: format!("/corpus/{name}"),
                chunk: 0,
                page: None,
                url: None,
                name: None,
            },
            title: text.lines().next().unwrap().trim_start_matches("# ").into(),
            text: text.lines().skip(2).collect::<Vec<_>>().join(" "),
            score: 1.0,
        })
        .collect()
}

/// The real embedder and SmolLM2.
fn real_models() -> (FastEmbedder, rudder::llm::llama::LlamaLlm) {
    let models = common::store();
    let embedder = FastEmbedder::from_store(&models, common::EMBED_MODEL, 1).unwrap();
    (embedder, common::small_model())
}

/// A leaf node on the tea question, with the support judge at `support_judge`.
fn tea_node(
    persona: &Persona,
    support_judge: Option<f32>,
) -> rudder::research::node::NodeContext<'_> {
    rudder::research::node::NodeContext {
        query: "How should I brew tea?",
        question: "How should I brew tea?",
        persona,
        seen_tags: &[],
        directives: "",
        current_date: "2026-11-22",
        leaf: true,
        support_judge,
        known: Default::default(),
    }
}

/// A need of the reader looked up in the tea documents with the real models: the sentence found
/// is a whole sentence of the passage it cites, and a bar no score can reach finds nothing
/// after the same judge calls.
#[test]
fn a_need_is_looked_up_in_the_documents_with_the_real_models() {
    let (embedder, llm) = real_models();
    let evidence = tea_evidence();
    let query = "How should I brew tea?";
    let label = "you sleep badly after an evening cup of caffeine";
    let look_up = |threshold| {
        rudder::research::sentence_for_need(
            &llm,
            &embedder,
            query,
            label,
            &evidence,
            &[],
            threshold,
        )
        .unwrap()
    };
    // SmolLM2's P(yes) barely depends on the need, so the score is about the cosine.
    let (found, completions) = look_up(0.01);
    let found = found.expect("a tea sentence close to caffeine and sleep");
    println!("{} ({:.2})", found.sentence, found.score);
    assert!(
        evidence[found.passage].text.contains(&found.sentence),
        "{found:?}"
    );
    assert!(rudder::checks::text::finding_form(&found.sentence).is_none());
    // Two forward passes (the need and a reader of whom nothing is known) per sentence judged,
    // at most three sentences.
    assert!(
        [2, 4, 6].contains(&completions.len()),
        "{} calls",
        completions.len()
    );
    let (none, again) = look_up(2.5);
    assert_eq!(none, None);
    assert_eq!(again.len(), completions.len());
}

/// The support judge at a node, with the real model: a judge no passage can satisfy (a
/// threshold above 1) refuses every learning the model words itself, each after one forward
/// pass, and the node falls back to quoting its passages, which the judge does not read.
#[test]
fn a_node_whose_judge_refuses_every_learning_quotes_its_passages() {
    use rudder::research::node;

    let (embedder, llm) = real_models();
    let evidence = tea_evidence();
    let persona = Persona::default();
    let ctx = tea_node(&persona, Some(1.01));
    let (findings, completions) = node::research(&llm, &embedder, &ctx, &evidence).unwrap();
    // The node's own calls come first (the retry continues the first), then one judge call,
    // the probabilities of a single forward pass, for each learning the embedding accepted.
    let is_judge = |c: &&rudder::llm::Completion| c.text.starts_with(r#"{"probabilities""#);
    let written = completions.iter().take_while(|c| !is_judge(c)).count();
    let judged = completions.iter().skip(written).filter(is_judge).count();
    assert!((1..=2).contains(&written), "{written} node calls");
    assert_eq!(
        written + judged,
        completions.len(),
        "the judge's calls come last"
    );
    for (text, sources) in &findings.learnings {
        let passage = &evidence[sources[0]].text;
        assert!(
            passage.contains(text.as_str()),
            "a learning in the model's words passed a judge that refuses all: {text}"
        );
    }
    println!(
        "{written} node call(s), {judged} judge call(s), kept: {:?}",
        findings.learnings
    );
}

/// One node with SmolLM2 over real passages: whatever the small model writes, every learning
/// the node keeps is a declarative sentence that a passage it cites supports.
#[test]
fn a_real_node_keeps_only_supported_findings() {
    use rudder::checks::{text::finding_form, SupportMatcher, SUPPORT_THRESHOLD};
    use rudder::research::node;

    let (embedder, llm) = real_models();
    let evidence = tea_evidence();
    let persona = Persona::default();
    let ctx = tea_node(&persona, None);
    let (findings, completions) = node::research(&llm, &embedder, &ctx, &evidence).unwrap();
    assert!(!completions.is_empty() && completions.len() <= 2);
    for c in &completions {
        println!("model wrote: {}", c.text);
    }
    // SmolLM2-135M often writes debris as learnings: when the first call's learnings did not
    // all survive, the node asked once more.
    let first: serde_json::Value = serde_json::from_str(&completions[0].text).unwrap_or_default();
    let proposed = first["learnings"].as_array().map_or(0, Vec::len);
    if findings.learnings.len() < proposed {
        assert_eq!(completions.len(), 2, "a refused learning is retried once");
    }
    let matcher = SupportMatcher::new(&embedder, SUPPORT_THRESHOLD);
    for (text, sources) in &findings.learnings {
        assert_eq!(finding_form(text), None, "{text}");
        assert!(
            sources.iter().any(|&i| {
                let e = &evidence[i];
                let shown = format!("{}\n{}", e.title, e.text);
                matcher.supports(text, &shown).unwrap()
            }),
            "unsupported: {text}"
        );
    }
    println!(
        "{} calls, kept: {:?}",
        completions.len(),
        findings.learnings
    );
}
