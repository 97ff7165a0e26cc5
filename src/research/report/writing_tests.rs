//! The writer's logic with a scripted model and a bag-of-words embedder: learnings placed
//! once, a refused paragraph asked again with its reasons, the learnings' own words when the
//! model cannot write, and the needs the sources do not cover said in one plain sentence.

use std::collections::BTreeMap;

use super::prose::Fact;
use super::*;
use crate::checks::text::{heading_debris, is_content, near_duplicates, split_sentences};
use crate::research::tree::{FollowUp, Origin};

use crate::test_support::{ScriptedLlm as Script, WordsEmbedder as Words};

const PARAGRAPH: &str = "You write one paragraph of a research report";
const SUMMARY: &str = "You write the opening of a research report";
const NEED: &str = "You tell one reader what research facts mean";
const RETRY: &str = "Your last answer had these problems";
const JUDGE: &str = "You check a report against its source";
const FINDING_JUDGE: &str = "You decide which findings belong";

/// The facts a prompt lists, without their numbers.
fn facts_of(prompt: &str) -> Vec<String> {
    let after = prompt.split_once("Facts").map(|(_, r)| r).unwrap_or("");
    after
        .lines()
        .skip(1)
        .map_while(|l| l.split_once(". ").map(|(_, t)| t.to_string()))
        .collect()
}

fn json_text(field: &str, text: &str) -> String {
    serde_json::json!({ field: text }).to_string()
}

/// A model that copies the facts back as its prose, and names things plainly.
fn faithful(prompt: &str) -> String {
    if prompt.contains(PARAGRAPH) || prompt.contains(NEED) || prompt.contains(SUMMARY) {
        json_text("text", &facts_of(prompt).join(" "))
    } else if prompt.contains("\"heading\"") {
        let first = facts_of(prompt).first().cloned().unwrap_or_default();
        let words: Vec<&str> = first.split_whitespace().take(2).collect();
        json_text("heading", &words.join(" "))
    } else {
        json_text("title", "Brewing tea at home")
    }
}

struct Fixture {
    tree: Tree,
    learnings: Vec<Learning>,
    evidence: BTreeMap<String, Evidence>,
}

/// A root with two directions; each learning cites a passage that says exactly it.
fn fixture(directions: &[(&str, &[&str])]) -> Fixture {
    let mut tree = Tree::new("How should I brew tea?");
    let mut learnings = Vec::new();
    let mut evidence = BTreeMap::new();
    for (question, texts) in directions {
        let node = tree.add_child(
            0,
            &FollowUp {
                question: question.to_string(),
                confidence: 0.9,
                tags: Vec::new(),
                wild_card: false,
            },
            Origin::Planned,
        );
        for text in *texts {
            let id = learnings.len();
            let key = format!("doc{id}");
            evidence.insert(
                key.clone(),
                Evidence {
                    target: CitationTarget::Document {
                        path: format!("/notes/{key}.md"),
                        chunk: 0,
                        page: None,
                        url: None,
                        name: Some(format!("{key}.md")),
                    },
                    title: format!("Notes {id}"),
                    text: format!("{text} This passage is about tea."),
                    score: 1.0,
                },
            );
            learnings.push(Learning {
                id,
                node,
                text: text.to_string(),
                sources: vec![key],
            });
            tree.nodes[node].learnings.push(id);
        }
    }
    Fixture {
        tree,
        learnings,
        evidence,
    }
}

const GREEN: &[&str] = &[
    "Green tea is brewed at 70 to 80 degrees for two minutes.",
    "Japanese sencha is steamed soon after picking to keep it green.",
    "Matcha is whisked from powdered shade-grown leaves.",
];
const BLACK: &[&str] = &[
    "Black tea is brewed with boiling water for four minutes.",
    // The first green-tea learning again, in other words.
    "For two minutes, green tea is brewed at 70 to 80 degrees.",
    "Assam black tea is grown in the lowlands of India.",
    "Ceylon black tea comes from Sri Lanka's hill estates.",
];

fn write_with(llm: &dyn Llm, f: &Fixture, needs: &[String]) -> (Report, Vec<Completion>) {
    write_judged(llm, f, needs, None)
}

fn write_judged(
    llm: &dyn Llm,
    f: &Fixture,
    needs: &[String],
    support_judge: Option<f32>,
) -> (Report, Vec<Completion>) {
    write_asked(llm, f, needs, support_judge, "")
}

fn write_asked(
    llm: &dyn Llm,
    f: &Fixture,
    needs: &[String],
    support_judge: Option<f32>,
    asked: &str,
) -> (Report, Vec<Completion>) {
    write_full(
        llm,
        f,
        needs,
        &[],
        support_judge,
        asked,
        &AnswerStyle::default(),
    )
}

fn write_full(
    llm: &dyn Llm,
    f: &Fixture,
    needs: &[String],
    aspects: &[String],
    support_judge: Option<f32>,
    asked: &str,
    style: &AnswerStyle,
) -> (Report, Vec<Completion>) {
    let persona = Persona::default();
    let input = ReportInput {
        asked,
        needs,
        unanticipated_needs: &[],
        aspects,
        support_judge,
        style,
        ..tea_input(f, &persona)
    };
    write(llm, &Words, &input, &mut |_, _| {}).unwrap()
}

/// How a reader Rudder knows nothing about gets answers.
static PLAIN: AnswerStyle = AnswerStyle {
    form: Form::Paragraphs,
    short: false,
    plain: false,
    because: Vec::new(),
};

/// The writer's input for the tea fixture: no reader, no judges, plain paragraphs.
fn tea_input<'a>(f: &'a Fixture, persona: &'a Persona) -> ReportInput<'a> {
    ReportInput {
        query: "How should I brew tea?",
        asked: "",
        persona,
        profile: "",
        needs: &[],
        unanticipated_needs: &[],
        aspects: &[],
        tree: &f.tree,
        learnings: &f.learnings,
        evidence: &f.evidence,
        current_date: "2025-05-01",
        support_judge: None,
        finding_judge: None,
        need_judge: None,
        style: &PLAIN,
    }
}

/// The writer's plan for a fixture, before anything is written.
fn plan_of(f: &Fixture) -> outline::Outline {
    let persona = Persona::default();
    outline::outline(&tea_input(f, &persona), &Words, &|_| Vec::new(), &|_, _| {
        Vec::new()
    })
    .unwrap()
}

/// Every sentence and heading of a report, with what the quality evaluation checks.
fn assert_clean(report: &Report) {
    assert!(
        !report.summary.text.trim().is_empty(),
        "no opening answer:\n{}",
        report.markdown
    );
    for h in std::iter::once(&report.title).chain(report.sections.iter().map(|s| &s.heading)) {
        assert!(heading_debris(h).is_none(), "heading debris: {h}");
    }
    let paragraphs: Vec<&Paragraph> = std::iter::once(&report.summary)
        .chain(report.sections.iter().flat_map(|s| s.paragraphs.iter()))
        .collect();
    let sentences: Vec<String> = paragraphs
        .iter()
        .flat_map(|p| split_sentences(&p.text))
        .collect();
    for s in &sentences {
        assert!(
            sentence_debris(s).is_none(),
            "debris: {s}\n{}",
            report.markdown
        );
    }
    // The summary restates the body: its sentences are compared with one another, the body's
    // with the body's (as `rudder eval quality` counts repetition).
    let content = |ps: &[&Paragraph]| -> Vec<String> {
        ps.iter()
            .flat_map(|p| split_sentences(&p.text))
            .filter(|s| is_content(s))
            .collect()
    };
    let mut repeated: Vec<String> = Vec::new();
    for part in [content(&paragraphs[..1]), content(&paragraphs[1..])] {
        let refs: Vec<&str> = part.iter().map(String::as_str).collect();
        repeated.extend(
            refs.iter()
                .zip(near_duplicates(&refs))
                .filter(|(_, d)| *d)
                .map(|(s, _)| s.to_string()),
        );
    }
    assert!(
        repeated.is_empty(),
        "repeated: {repeated:?}\n{}",
        report.markdown
    );
    assert!(report.closing.is_empty());
    for n in report.cited_numbers() {
        assert!(report.references.iter().any(|r| r.number == n));
    }
}

#[test]
fn learnings_that_say_the_same_are_placed_once() {
    let f = fixture(&[
        ("How is green tea brewed?", GREEN),
        ("What about black tea?", BLACK),
    ]);
    let llm = Script::new(faithful);
    let (report, completions) = write_with(&llm, &f, &[]);
    assert_clean(&report);
    assert!(
        !report.markdown.contains("For two minutes"),
        "{}",
        report.markdown
    );
    // Every other learning is in the body once, the paraphrase's citation with it.
    let body: String = report
        .sections
        .iter()
        .flat_map(|s| s.paragraphs.iter())
        .map(|p| p.text.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    for text in GREEN
        .iter()
        .chain(BLACK)
        .filter(|t| !t.starts_with("For two"))
    {
        assert_eq!(body.matches(text).count(), 1, "{text}\n{}", report.markdown);
    }
    let first = &report.sections[0].paragraphs[0];
    assert!(first.text.contains(GREEN[0]), "{}", report.markdown);
    let paraphrase = report
        .references
        .iter()
        .find(|r| r.key.contains("doc4"))
        .expect("the merged paraphrase is cited");
    assert!(
        first.citations.contains(&paraphrase.number),
        "{}",
        report.markdown
    );
    // Six findings: the summary opens with the strongest of each direction, which the
    // sections state too (the green one cites its merged paraphrase too).
    assert_eq!(report.summary.citations.len(), 3);
    for sentence in split_sentences(&report.summary.text) {
        assert!(body.contains(&sentence), "{sentence}\n{}", report.markdown);
    }
    assert_eq!(report.sections.len(), 2);
    assert_eq!(report.title, "Brewing tea at home");
    // Nothing was refused: one call per paragraph, heading and title.
    assert_eq!(llm.prompts_with(RETRY).len(), 0);
    assert_eq!(completions.len(), llm.prompts().len());
}

#[test]
fn a_refused_paragraph_is_asked_again_with_the_reasons() {
    let f = fixture(&[("How is green tea brewed?", GREEN)]);
    let llm = Script::new(|prompt| {
        if prompt.contains(PARAGRAPH) && !prompt.contains(RETRY) {
            // An invented claim, and a repeat of it.
            json_text(
                "text",
                "Tea was first brewed on the moon by astronauts in 2020. Tea was first \
                 brewed on the moon by astronauts in 2020.",
            )
        } else {
            faithful(prompt)
        }
    });
    let (report, _) = write_with(&llm, &f, &[]);
    assert_clean(&report);
    assert!(!report.markdown.contains("moon"), "{}", report.markdown);
    let retries = llm.prompts_with(RETRY);
    assert!(!retries.is_empty());
    assert!(retries[0].contains("\"Tea was first brewed on the moon by astronauts in 2020.\""));
    assert!(
        retries[0].contains("the facts do not say"),
        "{}",
        retries[0]
    );
    // Asked once more, not again.
    assert_eq!(
        llm.prompts_with(PARAGRAPH).len(),
        2 * llm
            .prompts_with(PARAGRAPH)
            .iter()
            .filter(|p| !p.contains(RETRY))
            .count()
    );
}

#[test]
fn a_sentence_that_turns_its_passage_around_is_refused_by_the_judge() {
    let f = fixture(&[("How is green tea brewed?", GREEN)]);
    // The words of the sencha fact, its order of events turned around: the bag-of-words
    // embedder cannot tell them apart, the judge can.
    const TURNED: &str = "Japanese sencha is picked soon after steaming to keep it green.";
    let llm = Script::new(|prompt| {
        if prompt.contains(JUDGE) {
            let p = if prompt.ends_with(TURNED) { 0.1 } else { 0.9 };
            format!(r#"{{"probabilities":[{p},{}]}}"#, 1.0 - p)
        } else if prompt.contains(PARAGRAPH) && !prompt.contains(RETRY) {
            let facts: Vec<String> = facts_of(prompt)
                .into_iter()
                .map(|f| if f == GREEN[1] { TURNED.to_string() } else { f })
                .collect();
            json_text("text", &facts.join(" "))
        } else {
            faithful(prompt)
        }
    });
    let (report, completions) = write_judged(&llm, &f, &[], Some(0.5));
    assert_clean(&report);
    assert!(!report.markdown.contains(TURNED), "{}", report.markdown);
    assert!(report.markdown.contains(GREEN[1]), "{}", report.markdown);
    let retries = llm.prompts_with(RETRY);
    assert!(
        retries
            .iter()
            .any(|r| r.contains(TURNED) && r.contains("turns around what the passage says")),
        "{retries:#?}"
    );
    // Every judged sentence is one call, accounted with the others.
    let judged = llm.prompts_with(JUDGE).len();
    assert!(judged >= GREEN.len(), "{judged}");
    assert_eq!(completions.len(), llm.prompts().len());

    // Off, the same model's turned sentence passes on the embedding match alone.
    let (report, _) = write_judged(&llm, &f, &[], None);
    assert!(report.markdown.contains(TURNED), "{}", report.markdown);
}

/// The tea fixture written with the finding judge at `threshold`.
fn write_with_finding_judge(
    llm: &dyn Llm,
    f: &Fixture,
    threshold: f32,
) -> (Report, Vec<Completion>) {
    let persona = Persona::default();
    let input = ReportInput {
        finding_judge: Some(threshold),
        ..tea_input(f, &persona)
    };
    write(llm, &Words, &input, &mut |_, _| {}).unwrap()
}

/// Findings that share a word of "How should I brew tea?" and say nothing about how to brew
/// it: close enough for the embedding cuts, not so close that closeness alone keeps them.
const TEA_PARTY: &[&str] = &[
    "Tea parties gather guests each afternoon.",
    "The Boston Tea Party dumped tea cargo.",
];

/// A model whose finding judge says yes to brewing findings and no to tea-party ones, and that
/// answers the contrast question with a middling yes for every finding.
fn judging_tea_parties(prompt: &str) -> String {
    if prompt.contains(FINDING_JUDGE) {
        let p = if prompt.contains(crate::checks::judge::FINDING_CONTRAST_QUESTION) {
            0.3
        } else if TEA_PARTY.iter().any(|b| prompt.ends_with(b)) {
            0.35
        } else {
            0.9
        };
        format!(r#"{{"probabilities":[{p},{}]}}"#, 1.0 - p)
    } else {
        faithful(prompt)
    }
}

/// The green-tea findings, and `findings` as a node looked up for a need of the reader.
fn with_a_need_node(question: &str, findings: &[&str]) -> Fixture {
    let mut f = fixture(&[("How is green tea brewed?", GREEN), (question, findings)]);
    f.tree.nodes[2].origin = Origin::Need;
    f
}

#[test]
fn a_finding_looked_up_for_a_need_stays_though_the_question_alone_finds_it_off() {
    // The tea-party findings were looked up for a need of the reader: the judge of the
    // question alone says no to them, and they stay.
    let f = with_a_need_node("Looked up for you: you host tea parties", TEA_PARTY);
    let llm = Script::new(judging_tea_parties);
    let (report, _) = write_with_finding_judge(&llm, &f, 0.19);
    assert_clean(&report);
    for finding in GREEN.iter().chain(TEA_PARTY) {
        assert!(report.markdown.contains(finding), "{}", report.markdown);
    }
}

/// Looked up for the reader and far from the question, in a section of its own: it stays,
/// and the debug log's line on it (computed only when the log is on) does not look for a
/// score the judge never gave.
#[test]
fn a_looked_up_finding_far_from_the_question_stays_with_the_debug_log_on() {
    let f = with_a_need_node("Looked up for you: you own a kyusu", KYUSU);
    let llm = Script::new(|prompt| {
        if prompt.contains(FINDING_JUDGE) && KYUSU.iter().any(|k| prompt.ends_with(k)) {
            r#"{"probabilities":[0.1,0.9]}"#.to_string()
        } else {
            judging_tea_parties(prompt)
        }
    });
    let debug = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_test_writer()
        .finish();
    let (report, _) =
        tracing::subscriber::with_default(debug, || write_with_finding_judge(&llm, &f, 0.19));
    assert_clean(&report);
    for finding in GREEN.iter().chain(KYUSU) {
        assert!(report.markdown.contains(finding), "{}", report.markdown);
    }
}

#[test]
fn a_finding_the_model_finds_off_the_question_is_left_out() {
    let f = fixture(&[
        ("How is green tea brewed?", GREEN),
        ("How should tea parties brew tea?", TEA_PARTY),
    ]);
    let llm = Script::new(judging_tea_parties);
    // Without the judge, the embedding cuts keep them: they share the question's words.
    let (report, _) = write_with(&llm, &f, &[]);
    assert!(
        report.markdown.contains(TEA_PARTY[0]),
        "{}",
        report.markdown
    );
    let llm = Script::new(judging_tea_parties);
    let (report, completions) = write_with_finding_judge(&llm, &f, 0.19);
    assert_clean(&report);
    for party in TEA_PARTY {
        assert!(!report.markdown.contains(party), "{}", report.markdown);
    }
    for tea in GREEN {
        assert!(report.markdown.contains(tea), "{}", report.markdown);
    }
    // Each distinct finding is asked about twice (the question, the contrast question), and
    // the calls are accounted with the writer's.
    assert_eq!(
        llm.prompts_with(FINDING_JUDGE).len(),
        2 * (GREEN.len() + TEA_PARTY.len())
    );
    assert_eq!(completions.len(), llm.prompts().len());

    // When every finding is off the question, nothing is placed, and the report says the
    // sources hold nothing on it instead of printing tea parties.
    let parties = fixture(&[("How should tea parties brew tea?", TEA_PARTY)]);
    let (report, _) = write_with_finding_judge(&llm, &parties, 0.19);
    assert!(report.sections.is_empty(), "{}", report.markdown);
    assert!(
        report.summary.text.starts_with(
            "The sources searched hold nothing found to answer this question: the 2 findings"
        ),
        "{}",
        report.summary.text
    );
    assert_eq!(report.off_question.len(), 2, "{:?}", report.off_question);
}

/// A finding on another thing that shares nothing with the question but a judge's yes (as the
/// 1.5B judge says yes to "A chainsaw is a portable handheld power saw" for a table saw).
const TEAK: &str = "Teak wood is oiled once a year for garden furniture.";

#[test]
fn a_finding_whose_passage_names_nothing_the_question_asks_about_is_left_out() {
    let fixture_with_teak = |passage: &str| {
        let mut f = fixture(&[
            ("How is green tea brewed?", GREEN),
            ("What is teak?", &[TEAK]),
        ]);
        let key = f.learnings[GREEN.len()].sources[0].clone();
        let e = f.evidence.get_mut(&key).unwrap();
        e.title = "Teak".into();
        e.text = passage.to_string();
        f
    };
    // The judge says yes to it. Its passage, which also speaks of tea, keeps it.
    let llm = Script::new(judging_tea_parties);
    let f = fixture_with_teak(&format!("{TEAK} Tea chests were once made of it."));
    let (report, _) = write_with_finding_judge(&llm, &f, 0.19);
    assert!(report.markdown.contains(TEAK), "{}", report.markdown);
    // A passage that never names tea, while the others do: on another thing, left out.
    let llm = Script::new(judging_tea_parties);
    let mut f = fixture_with_teak(TEAK);
    let (report, _) = write_with_finding_judge(&llm, &f, 0.19);
    assert_clean(&report);
    assert!(!report.markdown.contains(TEAK), "{}", report.markdown);
    assert!(
        report.off_question.iter().any(|o| o.contains("Teak wood")),
        "{:?}",
        report.off_question
    );
    for tea in GREEN {
        assert!(report.markdown.contains(tea), "{}", report.markdown);
    }
    // A passage of a document whose other passage names tea is on it.
    let mut same_document = fixture_with_teak(TEAK);
    let key = same_document.learnings[GREEN.len()].sources[0].clone();
    same_document.evidence.get_mut(&key).unwrap().title = "Notes 0".into();
    let llm = Script::new(judging_tea_parties);
    let (report, _) = write_with_finding_judge(&llm, &same_document, 0.19);
    assert!(report.markdown.contains(TEAK), "{}", report.markdown);
    // Looked up for a need of the reader, it stays: the question alone does not show why.
    f.tree.nodes[2].origin = Origin::Need;
    let llm = Script::new(judging_tea_parties);
    let (report, _) = write_with_finding_judge(&llm, &f, 0.19);
    assert!(report.markdown.contains(TEAK), "{}", report.markdown);
}

/// Findings on the question that share no word with it: far from it by the embedding.
const KYUSU: &[&str] = &[
    "Kyusu pots hold about 300 millilitres for two cups.",
    "Kyusu pots have a side handle and a fine clay filter.",
];

#[test]
fn a_finding_the_model_finds_on_the_question_stays_though_its_section_is_far() {
    let f = fixture(&[
        ("How is green tea brewed?", GREEN),
        ("Which kyusu pots suit one person?", KYUSU),
    ]);
    // By the embedding alone the kyusu section is about something else, and goes.
    let llm = Script::new(judging_tea_parties);
    let (report, _) = write_with(&llm, &f, &[]);
    assert!(!report.markdown.contains(KYUSU[0]), "{}", report.markdown);
    // The model, asked, finds the findings help answer the question: they stay.
    let llm = Script::new(judging_tea_parties);
    let (report, _) = write_with_finding_judge(&llm, &f, 0.19);
    assert_clean(&report);
    for kyusu in KYUSU {
        assert!(report.markdown.contains(kyusu), "{}", report.markdown);
    }
}

/// A stray passage from another subject, which the model judges just over the finding judge's
/// threshold (0.22 against 0.19).
const PONDS: &str = "Mixed models add a random intercept for each pond.";

#[test]
fn a_far_finding_the_judge_barely_passes_goes_with_its_section() {
    let f = fixture(&[
        ("How is green tea brewed?", GREEN),
        ("Which kyusu pots suit one person?", KYUSU),
        ("Which models suit pond counts?", &[PONDS]),
    ]);
    let llm = Script::new(|prompt: &str| {
        if prompt.contains(FINDING_JUDGE)
            && !prompt.contains(crate::checks::judge::FINDING_CONTRAST_QUESTION)
            && prompt.ends_with(PONDS)
        {
            r#"{"probabilities":[0.52,0.48]}"#.to_string()
        } else {
            judging_tea_parties(prompt)
        }
    });
    let (report, _) = write_with_finding_judge(&llm, &f, 0.19);
    assert_clean(&report);
    assert!(!report.markdown.contains(PONDS), "{}", report.markdown);
    assert!(
        report
            .off_question
            .iter()
            .any(|o| o.contains("random intercept")),
        "{:?}",
        report.off_question
    );
    // The kyusu findings, as far from the question, score well above the bar and stay.
    for kyusu in KYUSU {
        assert!(report.markdown.contains(kyusu), "{}", report.markdown);
    }
}

#[test]
fn a_model_that_cannot_judge_findings_leaves_them_to_the_embedding_cuts() {
    // The scripted model writes prose for every prompt, the judge's included: no yes/no
    // probabilities, so the judge steps aside and the tea report is written as without it.
    let f = fixture(&[("How is green tea brewed?", GREEN)]);
    let llm = Script::new(faithful);
    let (report, _) = write_with_finding_judge(&llm, &f, 0.19);
    for tea in GREEN {
        assert!(report.markdown.contains(tea), "{}", report.markdown);
    }
}

#[test]
fn a_finding_in_its_own_words_is_judged_too() {
    // A learning that turned its passage around when it was learned: the model cannot write,
    // so each finding would go into the report in its own words.
    const TURNED: &str = "Japanese sencha is picked soon after steaming to keep it green.";
    let mut f = fixture(&[("How is green tea brewed?", GREEN)]);
    f.learnings[1].text = TURNED.to_string();
    let llm = Script::new(|prompt| {
        if prompt.contains(JUDGE) {
            let p = if prompt.ends_with(TURNED) { 0.1 } else { 0.9 };
            format!(r#"{{"probabilities":[{p},{}]}}"#, 1.0 - p)
        } else if prompt.contains("\"heading\"") || prompt.contains("\"title\"") {
            json_text("heading", "The brewing of the")
        } else {
            json_text("text", "} ] {\"text\": the tea (from: Notes 1")
        }
    });
    let (report, _) = write_judged(&llm, &f, &[], Some(0.5));
    assert!(!report.markdown.contains(TURNED), "{}", report.markdown);
    for text in [GREEN[0], GREEN[2]] {
        assert!(
            report.markdown.contains(text),
            "{text}\n{}",
            report.markdown
        );
    }
    assert!(llm.prompts_with(JUDGE).iter().any(|p| p.ends_with(TURNED)));
    // Off, the learning is printed as it was learned.
    let (report, _) = write_judged(&llm, &f, &[], None);
    assert!(report.markdown.contains(TURNED), "{}", report.markdown);
}

#[test]
fn a_model_without_probabilities_leaves_the_embedding_check_alone() {
    let f = fixture(&[("How is green tea brewed?", GREEN)]);
    // The judge's prompt is answered like any other: with text, not probabilities.
    let llm = Script::new(faithful);
    let (judged, _) = write_judged(&llm, &f, &[], Some(0.5));
    let (plain, _) = write_with(&llm, &f, &[]);
    assert_eq!(judged.markdown, plain.markdown);
    // Asked once, then not again.
    assert_eq!(llm.prompts_with(JUDGE).len(), 1);
}

#[test]
fn a_model_that_cannot_write_leaves_the_learnings_own_words() {
    let f = fixture(&[
        ("How is green tea brewed?", GREEN),
        ("What about black tea?", BLACK),
    ]);
    // Debris for every answer: JSON inside the text, a cut-off heading.
    let llm = Script::new(|prompt| {
        if prompt.contains("\"heading\"") || prompt.contains("\"title\"") {
            json_text("heading", "The brewing of the")
        } else {
            json_text("text", "} ] {\"text\": the tea (from: Notes 1")
        }
    });
    let (report, _) = write_with(&llm, &f, &[]);
    assert_clean(&report);
    for text in GREEN {
        assert!(
            report.markdown.contains(text),
            "{text}\n{}",
            report.markdown
        );
    }
    // Each paragraph cites the learnings it states; headings fall back to the questions.
    assert!(report
        .sections
        .iter()
        .all(|s| s.paragraphs.iter().all(|p| !p.citations.is_empty())));
    assert_eq!(report.sections[0].heading, "How is green tea brewed");
    assert_eq!(report.title, "How should I brew tea?");
}

/// Green and black tea, and three asks of the reader: one a finding answers (Assam), two
/// nothing does.
fn tea_and_three_asks() -> (Fixture, Vec<String>) {
    let f = fixture(&[
        ("How is green tea brewed?", GREEN),
        ("What about black tea?", BLACK),
    ]);
    let asks = [
        "Covers where black tea is grown in India",
        "Covers flying cars",
        "Covers electric bicycles",
    ];
    (f, asks.map(String::from).to_vec())
}

/// The clean report's needs section, whose first paragraph answers the Assam need.
fn needs_section_answering_assam(report: &Report) -> &Section {
    assert_clean(report);
    let section = report.sections.last().unwrap();
    assert_eq!(section.heading, NEEDS_HEADING);
    assert!(
        section.paragraphs[0].text.contains("Assam"),
        "{}",
        report.markdown
    );
    section
}

#[test]
fn needs_get_their_findings_or_one_plain_sentence() {
    let (f, needs) = tea_and_three_asks();
    let llm = Script::new(faithful);
    let (report, _) = write_with(&llm, &f, &needs);
    // The Assam learning answers the first need, here and nowhere else.
    let section = needs_section_answering_assam(&report);
    assert!(!section.paragraphs[0].citations.is_empty());
    assert_eq!(
        report.markdown.matches("Assam").count(),
        1,
        "{}",
        report.markdown
    );
    let last = section.paragraphs.last().unwrap();
    assert_eq!(
        last.text,
        "The sources found do not cover: flying cars; electric bicycles."
    );
    assert!(last.citations.is_empty());
    assert!(report.markdown.contains("## What this means for you"));
}

#[test]
fn a_budget_gets_the_prices_in_its_currency_said_in_code_with_how_each_stands_to_it() {
    const PRICES: &[&str] = &[
        "A glass teapot to brew tea costs 60 euros.",
        "A class on how to brew tea costs 15 euros a month.",
        "Loose tea to brew at home costs about 10 to 20 euros a packet.",
        "Assam black tea is grown in the lowlands of India.",
    ];
    let f = fixture(&[
        ("How is green tea brewed?", GREEN),
        ("What does tea cost?", PRICES),
    ]);
    let needs = vec!["you have a budget of 25 euros for tea".to_string()];
    let need_calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = need_calls.clone();
    let llm = Script::new(move |prompt: &str| {
        if prompt.contains(NEED) {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        faithful(prompt)
    });
    let (report, _) = write_with(&llm, &f, &needs);
    assert_clean(&report);
    let section = report.sections.last().unwrap();
    assert_eq!(section.heading, NEEDS_HEADING, "{}", report.markdown);
    // Within first, then above; the rate (per month) is no price to compare, and stays in
    // the body with the other findings. No call writes the budget's paragraph.
    assert_eq!(
        section.paragraphs[0].text,
        "Within your budget of 25 euros: Loose tea to brew at home costs about 10 to 20 euros a \
         packet. Above your budget of 25 euros: A glass teapot to brew tea costs 60 euros.",
        "{}",
        report.markdown
    );
    assert_eq!(section.paragraphs[0].citations.len(), 2);
    assert_eq!(need_calls.load(std::sync::atomic::Ordering::SeqCst), 0);
    assert_eq!(report.markdown.matches("glass teapot").count(), 1);
    assert!(report.markdown.contains(PRICES[1]), "{}", report.markdown);
    assert!(
        !report.markdown.contains("do not cover"),
        "{}",
        report.markdown
    );

    // With no price in its currency, the budget is named as not covered, said plainly.
    let uncovered = |report: &Report| {
        assert!(
            report
                .markdown
                .contains("The sources found do not cover: your budget of 25 euros."),
            "{}",
            report.markdown
        );
    };
    let f = fixture(&[("How is green tea brewed?", GREEN)]);
    uncovered(&write_with(&llm, &f, &needs).0);
    // So too when the need judge gives it a finding that names no price: that finding stays
    // in the body, not said as if it met the budget.
    let report = judged_for_needs(&needs, Some(0.2));
    assert_clean(&report);
    uncovered(&report);
    assert!(
        report.markdown.contains("70 to 80 degrees"),
        "{}",
        report.markdown
    );
    assert!(
        !report.markdown.contains("Since you have a budget"),
        "{}",
        report.markdown
    );
}

#[test]
fn a_price_learned_twice_in_the_same_words_is_said_once_for_the_budget() {
    // A node learned a guide's whole list; the price in it was also looked up on its own.
    const LIST: &str = "- A set of door seals costs 100 euros.\n- Green tea is brewed at 80 \
                        degrees for two minutes.";
    const SEALS: &str = "A set of door seals costs 100 euros.";
    let f = fixture(&[("What does tea cost?", &[LIST, SEALS])]);
    let needs = vec!["you have a budget of 150 euros for tea".to_string()];
    let (report, _) = write_with(&Script::new(faithful), &f, &needs);
    assert_clean(&report);
    let section = report.sections.last().unwrap();
    assert_eq!(section.heading, NEEDS_HEADING, "{}", report.markdown);
    assert_eq!(
        section.paragraphs[0].text,
        "Within your budget of 150 euros: A set of door seals costs 100 euros.",
        "{}",
        report.markdown
    );
}

#[test]
fn a_price_for_a_reader_with_a_budget_stays_whatever_the_judge_and_the_report_still_opens() {
    // A tea-party finding that gives a price: the judge says no to both tea-party findings,
    // but the price is kept for the reader with a budget in euros; "you have a budget" says
    // the same with less and is not named as uncovered. Every finding kept goes to the
    // budget, and the opening restates it.
    const PRICED_PARTY: &[&str] = &[
        "Tea parties gather guests each afternoon.",
        "A tea party set costs 40 euros.",
    ];
    let f = fixture(&[("How should tea parties brew tea?", PRICED_PARTY)]);
    let judge = |prompt: &str| -> String {
        if prompt.contains(FINDING_JUDGE) {
            let p = if prompt.contains(crate::checks::judge::FINDING_CONTRAST_QUESTION) {
                0.3
            } else {
                0.35
            };
            format!(r#"{{"probabilities":[{p},{}]}}"#, 1.0 - p)
        } else {
            faithful(prompt)
        }
    };
    let persona = Persona::default();
    let needs = vec![
        "you have a budget".to_string(),
        "you can spend 50 euros on tea things".to_string(),
    ];
    let input = ReportInput {
        needs: &needs,
        finding_judge: Some(0.19),
        ..tea_input(&f, &persona)
    };
    let (report, _) = write(&Script::new(judge), &Words, &input, &mut |_, _| {}).unwrap();
    assert_clean(&report);
    assert!(
        !report.markdown.contains(PRICED_PARTY[0]),
        "{}",
        report.markdown
    );
    let section = report.sections.last().unwrap();
    assert_eq!(
        section
            .paragraphs
            .iter()
            .map(|p| p.text.as_str())
            .collect::<Vec<_>>(),
        ["Within your budget of 50 euros: A tea party set costs 40 euros."],
        "{}",
        report.markdown
    );
    assert!(
        report.summary.text.contains("40 euros"),
        "{}",
        report.markdown
    );
}

#[test]
fn a_need_the_question_does_not_anticipate_is_answered_but_never_named_as_uncovered() {
    // The Assam need and flying cars are needs the question's facet lines do not anticipate:
    // the Assam finding still answers the first; the second is left unsaid, not printed back
    // to the reader as something the sources lack.
    let (f, needs) = tea_and_three_asks();
    let unanticipated = [needs[0].clone(), needs[1].clone()];
    let llm = Script::new(faithful);
    let persona = Persona::default();
    let input = ReportInput {
        needs: &needs,
        unanticipated_needs: &unanticipated,
        ..tea_input(&f, &persona)
    };
    let (report, _) = write(&llm, &Words, &input, &mut |_, _| {}).unwrap();
    let section = needs_section_answering_assam(&report);
    assert_eq!(
        section.paragraphs.last().unwrap().text,
        "The sources found do not cover: electric bicycles.",
        "{}",
        report.markdown
    );
    assert!(
        !report.markdown.contains("flying cars"),
        "{}",
        report.markdown
    );
}

#[test]
fn topics_asked_for_keep_their_findings_in_the_body_and_only_uncovered_ones_are_named() {
    // The same three as the needs above, given as topics the report should cover (a
    // clarification's checklist): the Assam finding stays in its section.
    let (f, aspects) = tea_and_three_asks();
    let llm = Script::new(faithful);
    let (report, _) = write_full(&llm, &f, &[], &aspects, None, "", &AnswerStyle::default());
    assert_clean(&report);
    let (last, body) = report.sections.split_last().unwrap();
    assert_eq!(last.heading, NEEDS_HEADING);
    assert_eq!(
        last.paragraphs
            .iter()
            .map(|p| p.text.as_str())
            .collect::<Vec<_>>(),
        ["The sources found do not cover: flying cars; electric bicycles."]
    );
    assert!(
        body.iter()
            .flat_map(|s| &s.paragraphs)
            .any(|p| p.text.contains("Assam")),
        "{}",
        report.markdown
    );
}

#[test]
fn a_section_whose_findings_are_not_about_the_question_is_left_out() {
    const FOOTBALL: &[&str] = &[
        "Football matches are played by two sides of eleven players.",
        "The World Cup final drew a record crowd in Qatar.",
    ];
    let f = fixture(&[
        ("How is green tea brewed?", GREEN),
        ("What else happened?", FOOTBALL),
    ]);
    let llm = Script::new(faithful);
    let (report, _) = write_with(&llm, &f, &[]);
    assert_clean(&report);
    for text in FOOTBALL {
        assert!(!report.markdown.contains(text), "{}", report.markdown);
    }
    assert!(report.markdown.contains(GREEN[0]), "{}", report.markdown);
}

#[test]
fn a_finding_on_something_else_inside_a_section_that_stays_is_left_out() {
    // A drifted follow-up found one passage on the question and one on something else.
    const DRIFTED: &[&str] = &[
        "To brew tea well, warm the pot and brew tea leaves in fresh water.",
        "Football matches are played by two sides of eleven players.",
    ];
    let mut f = fixture(&[("How is tea brewed in England?", DRIFTED)]);
    // Its passage is about football too.
    f.evidence.get_mut("doc1").unwrap().text = DRIFTED[1].to_string();
    let llm = Script::new(faithful);
    let (report, _) = write_with(&llm, &f, &[]);
    assert_clean(&report);
    assert!(report.markdown.contains(DRIFTED[0]), "{}", report.markdown);
    assert!(!report.markdown.contains(DRIFTED[1]), "{}", report.markdown);
    assert!(
        !report.references.iter().any(|r| r.key == "doc1"),
        "the left-out finding's passage is not cited: {}",
        report.markdown
    );
}

#[test]
fn a_finding_reads_under_the_section_whose_question_it_answers() {
    // A follow-up that drifted ("What else happened?") found facts on green tea. Five
    // findings: the opening restates, so every finding stays in the body too.
    const STRAY: &str = "Green tea leaves are brewed in water below boiling.";
    const STRAYS: &[&str] = &[
        STRAY,
        "Brewed green tea turns bitter in water that is too hot.",
    ];
    let f = fixture(&[
        ("How is green tea brewed?", GREEN),
        ("What else happened?", STRAYS),
    ]);
    let plan = plan_of(&f);
    let stray = f.learnings.iter().position(|l| l.text == STRAY).unwrap();
    let home = plan
        .sections
        .iter()
        .find(|s| s.paragraphs.iter().flatten().any(|&l| l == stray))
        .map(|s| s.question.as_str());
    assert!(plan.summary_restates, "{plan:#?}");
    assert_eq!(home, Some("How is green tea brewed?"), "{plan:#?}");
    assert!(
        plan.sections
            .iter()
            .all(|s| s.question != "What else happened?"),
        "{plan:#?}"
    );
}

#[test]
fn the_opening_does_not_start_from_a_finding_that_leans_on_another() {
    const LEANING: &[&str] = &[
        "It is brewed at 70 to 80 degrees for two minutes, tea experts say about green tea.",
        "Green tea is steamed or pan-fired soon after picking, and tea is brewed from it.",
    ];
    let f = fixture(&[("How is green tea brewed?", LEANING)]);
    let plan = plan_of(&f);
    assert_eq!(plan.summary, vec![1], "{plan:#?}");
}

#[test]
fn a_finding_that_leans_on_another_follows_one_or_is_left_out() {
    const GREEN_THEN: &[&str] = &[
        "This is why it is brewed at 70 to 80 degrees for two minutes, tea makers say.",
        "Green tea is steamed or pan-fired soon after picking, and tea is brewed from it.",
    ];
    const ALONE: &[&str] = &["This was the first tea brewed with cold water."];
    let f = fixture(&[
        ("How is green tea brewed?", GREEN_THEN),
        ("What came first in tea brewing?", ALONE),
    ]);
    let plan = plan_of(&f);
    let placed: Vec<usize> = plan
        .sections
        .iter()
        .flat_map(|s| s.paragraphs.iter().flatten().copied())
        .chain(plan.summary.iter().copied())
        .collect();
    // The lone one is left out, with the reason.
    assert!(!placed.contains(&2), "{plan:#?}");
    assert!(plan
        .unplaced
        .iter()
        .any(|(l, why)| *l == 2 && why.contains("leans")));
    // The other cites its own passage, which no other finding cites: left out too.
    assert!(!placed.contains(&0), "{plan:#?}");
    assert!(placed.contains(&1), "{plan:#?}");
}

#[test]
fn a_finding_that_leans_on_another_is_read_right_after_it() {
    const FACTS: &[&str] = &[
        "Green tea is steamed or pan-fired soon after picking, and tea is brewed from it.",
        "Black tea is brewed with boiling water for four minutes.",
        "Assam black tea is grown in the lowlands of India.",
        "Ceylon black tea comes from Sri Lanka's hill estates.",
        "This keeps green tea leaves green, tea makers say.",
        "Oolong tea is brewed at 90 degrees, tea shops say.",
    ];
    let mut f = fixture(&[("How is tea brewed?", FACTS)]);
    // The leaning finding (4) comes from the first one's passage.
    f.learnings[4].sources = f.learnings[0].sources.clone();
    let plan = plan_of(&f);
    let order: Vec<usize> = plan
        .sections
        .iter()
        .flat_map(|s| s.paragraphs.concat())
        .collect();
    let at = |l: usize| order.iter().position(|&x| x == l);
    assert_eq!(at(4).map(|i| i - 1), at(0), "{plan:#?}");
    // And never opens a paragraph.
    for s in &plan.sections {
        for p in &s.paragraphs {
            assert_ne!(p.first(), Some(&4), "{plan:#?}");
        }
    }
}

#[test]
fn a_detail_of_the_passage_does_not_stand_in_for_the_fact() {
    let f = fixture(&[("How is green tea brewed?", GREEN)]);
    // Prose that the passages support but that states none of the facts.
    let llm = Script::new(|prompt| {
        if prompt.contains(PARAGRAPH) {
            json_text("text", "This passage is about tea.")
        } else {
            faithful(prompt)
        }
    });
    let (report, _) = write_with(&llm, &f, &[]);
    for text in GREEN {
        assert!(
            report.markdown.contains(text),
            "{text}\n{}",
            report.markdown
        );
    }
}

/// A detail the model adds from a passage stays when it is about the question or a fact of
/// its paragraph, and is left out, without asking again, when it is about something else.
#[test]
fn a_detail_on_something_else_is_left_out_and_one_on_the_fact_stays() {
    const ON_FACT: &str = "Ceylon tea is picked by hand on the hill estates.";
    const ELSEWHERE: &str = "Porcelain kilns in Jingdezhen fired imperial vases.";
    let mut f = fixture(&[
        ("How is green tea brewed?", GREEN),
        ("How is black tea brewed?", BLACK),
    ]);
    let ceylon = f.evidence.get_mut("doc6").unwrap();
    ceylon.text = format!("{} {ON_FACT} {ELSEWHERE}", BLACK[3]);
    let llm = Script::new(|prompt| {
        if prompt.contains(PARAGRAPH) && prompt.contains(BLACK[3]) {
            let mut text = facts_of(prompt).join(" ");
            text.push_str(&format!(" {ON_FACT} {ELSEWHERE}"));
            json_text("text", &text)
        } else {
            faithful(prompt)
        }
    });
    let (report, completions) = write_with(&llm, &f, &[]);
    assert!(report.markdown.contains(ON_FACT), "{}", report.markdown);
    assert!(
        !report.markdown.contains("Porcelain"),
        "{}",
        report.markdown
    );
    assert!(report.markdown.contains(BLACK[3]), "{}", report.markdown);
    // Left out silently: no paragraph was asked again for it.
    let retries = completions.len() - write_with(&Script::new(faithful), &f, &[]).1.len();
    assert_eq!(retries, 0, "{}", report.markdown);
}

#[test]
fn when_no_section_is_about_the_question_the_closest_one_stays() {
    const FOOTBALL: &[&str] = &[
        "Football matches are played by two sides of eleven players.",
        "The World Cup final drew a record crowd in Qatar.",
    ];
    let f = fixture(&[("What else happened?", FOOTBALL)]);
    let llm = Script::new(faithful);
    let (report, _) = write_with(&llm, &f, &[]);
    assert!(!report.references.is_empty(), "{}", report.markdown);
    assert_ne!(report.summary.text, NO_EVIDENCE, "{}", report.markdown);
}

/// A paragraph the model opens with "It …" is asked again: the word points back to nothing
/// before it.
#[test]
fn a_paragraph_that_opens_on_a_word_pointing_back_is_asked_again() {
    let f = fixture(&[("How is green tea brewed?", GREEN)]);
    let llm = Script::new(|prompt| {
        if prompt.contains(PARAGRAPH) && !prompt.contains(RETRY) {
            let facts = facts_of(prompt);
            let first = match facts[0].split_once(" is ") {
                Some((_, rest)) => format!("It is {rest}"),
                None => format!("It says {}", facts[0]),
            };
            json_text(
                "text",
                &[first]
                    .into_iter()
                    .chain(facts.into_iter().skip(1))
                    .collect::<Vec<_>>()
                    .join(" "),
            )
        } else {
            faithful(prompt)
        }
    });
    let (report, _) = write_with(&llm, &f, &[]);
    assert_clean(&report);
    let retries = llm.prompts_with(RETRY);
    assert!(
        retries
            .iter()
            .any(|r| r.contains("points back to nothing before it")),
        "{retries:?}"
    );
    for paragraph in report.markdown.split("\n\n") {
        assert!(!paragraph.starts_with("It "), "{}", report.markdown);
    }
}

/// A question asked in French gets its report written and checked in the sources' English,
/// then translated text by text; a text no translation of which passes the checks stays as
/// written, and the report says how many did. The labels are French.
#[test]
fn a_question_in_french_gets_a_report_in_french() {
    const TRANSLATE: &str = "You translate one text into French";
    let french: BTreeMap<&str, &str> = [
        (
            GREEN[0],
            "Le thé vert est infusé entre 70 et 80 degrés pendant deux minutes.",
        ),
        (
            GREEN[1],
            "Le sencha japonais est étuvé peu après la cueillette pour rester vert.",
        ),
        (
            GREEN[2],
            "Le matcha est fouetté à partir de feuilles cultivées à l'ombre et réduites en poudre.",
        ),
        ("Brewing tea at home", "Infuser le thé chez soi"),
    ]
    .into_iter()
    .collect();
    let f = fixture(&[("How is green tea brewed?", GREEN)]);
    let llm = Script::new(move |prompt| {
        if !prompt.contains(TRANSLATE) {
            return faithful(prompt);
        }
        let text = prompt
            .split_once("Text:\n")
            .map(|(_, t)| t.lines().next().unwrap_or(""))
            .unwrap_or("");
        // Sentence by sentence from the table; what it lacks comes back untranslated.
        let out: Vec<String> = split_sentences(text)
            .iter()
            .map(|s| french.get(s.as_str()).map_or(s.clone(), |t| t.to_string()))
            .collect();
        json_text("text", &out.join(" "))
    });
    let query = "Comment faut-il préparer le thé vert à la maison ?";
    let (report, _) = write_asked(&llm, &f, &[], None, query);
    assert_eq!(report.language, "fra");
    let md = &report.markdown;
    assert!(md.starts_with("# Infuser le thé chez soi\n"), "{md}");
    assert!(md.contains("*Question:* Comment faut-il"), "{md}");
    assert!(md.contains("## Références"), "{md}");
    assert!(
        md.contains("Le thé vert est infusé entre 70 et 80 degrés"),
        "{md}"
    );
    assert!(!md.contains("Green tea is brewed at 70"), "{md}");
    // The heading ("Green tea", two words) reads the same in both languages and passes; no
    // text was left in English, so the note says only where the report comes from.
    assert_eq!(report.untranslated, 0, "{md}");
    assert!(
        md.contains("*Traduit par le modèle local depuis l'anglais"),
        "{md}"
    );
    let asked = llm.prompts_with(TRANSLATE);
    assert!(asked.iter().all(|p| p.contains("into French")));
}

/// A translation that drops a number is refused and asked again with the reason; a text that
/// still fails stays as written, and the report counts it.
#[test]
fn a_translation_that_fails_its_checks_leaves_the_text_as_written() {
    const TRANSLATE: &str = "You translate one text into French";
    let f = fixture(&[("How is green tea brewed?", &GREEN[..1])]);
    let llm = Script::new(|prompt| {
        if prompt.contains(TRANSLATE) {
            json_text(
                "text",
                "Le thé vert est infusé pendant quelques minutes à feu doux, comme il se doit.",
            )
        } else {
            faithful(prompt)
        }
    });
    let (report, _) = write_asked(
        &llm,
        &f,
        &[],
        None,
        "Comment faut-il préparer le thé vert à la maison ?",
    );
    assert!(report.markdown.contains(GREEN[0]), "{}", report.markdown);
    assert!(report.untranslated >= 1);
    assert!(
        report.markdown.contains("restent en anglais"),
        "{}",
        report.markdown
    );
    let retries: Vec<String> = llm
        .prompts_with(TRANSLATE)
        .into_iter()
        .filter(|p| p.contains("Your last answer had these problems"))
        .collect();
    assert!(
        retries
            .iter()
            .any(|p| p.contains("it leaves out the number(s) 70, 80")),
        "{retries:?}"
    );
}

#[test]
fn a_reader_who_wants_short_bullet_points_gets_them_with_every_finding() {
    let f = fixture(&[
        ("How is green tea brewed?", GREEN),
        ("What about black tea?", BLACK),
    ]);
    let profile =
        "Domain: hobby — tea\nExplanation style:\n- Wants short bullet points from now on\n";
    let style = answer_style(profile, &[]);
    let styled_llm = Script::new(faithful);
    let (styled, _) = write_full(&styled_llm, &f, &[], &[], None, "", &style);
    let plain_llm = Script::new(faithful);
    let (plain, _) = write_full(&plain_llm, &f, &[], &[], None, "", &AnswerStyle::default());
    assert_clean(&styled);
    assert_eq!(styled.style.form, Form::Bullets);
    // The same findings, in the same words: only the form differs.
    assert_eq!(styled.cited_numbers(), plain.cited_numbers());
    let body: Vec<&str> = styled
        .markdown
        .lines()
        .skip_while(|l| !l.starts_with("## "))
        .take_while(|l| !l.starts_with("## References"))
        .filter(|l| !l.is_empty() && !l.starts_with("## "))
        .collect();
    assert!(body.len() >= 3, "{}", styled.markdown);
    assert!(
        body.iter().all(|l| l.starts_with("- ")),
        "{}",
        styled.markdown
    );
    assert!(
        styled
            .markdown
            .contains("short, in bullet points (“Wants short bullet points from now on”)"),
        "{}",
        styled.markdown
    );
    assert!(!plain.markdown.contains("\n- "), "{}", plain.markdown);
    // The paragraphs were asked for a short sentence per fact, without the passages around.
    let asked: Vec<String> = styled_llm
        .prompts()
        .into_iter()
        .filter(|p| p.contains(PARAGRAPH))
        .collect();
    assert!(!asked.is_empty());
    for p in &asked {
        assert!(p.contains("one short sentence for each fact"), "{p}");
        assert!(!p.contains("What the sources say around them"), "{p}");
    }
}

#[test]
fn a_long_sentence_for_a_reader_who_wants_short_answers_is_asked_again() {
    // A 27-word finding: copied whole, it is too long for a bullet read at a glance.
    const LONG: &str = "Gyokuro green tea is shaded for about three weeks before the spring \
                        harvest, which raises its theanine and gives the brewed cup its sweet \
                        and savoury taste.";
    const SHORT: &str =
        "Gyokuro green tea is shaded three weeks before harvest, which raises its theanine.";
    let f = fixture(&[("How is green tea brewed?", &[GREEN[0], LONG])]);
    let style = answer_style("Tone:\n- Wants short bullet points from now on\n", &[]);
    assert!(style.short);
    let llm = Script::new(|prompt| {
        if prompt.contains(PARAGRAPH) || prompt.contains(SUMMARY) {
            let facts = facts_of(prompt);
            let texts: Vec<String> = facts
                .into_iter()
                .map(|f| {
                    if prompt.contains("at most 20 words") && f == LONG {
                        SHORT.into()
                    } else {
                        f
                    }
                })
                .collect();
            json_text("text", &texts.join(" "))
        } else {
            faithful(prompt)
        }
    });
    let (report, _) = write_full(&llm, &f, &[], &[], None, "", &style);
    assert_clean(&report);
    assert!(!report.markdown.contains(LONG), "{}", report.markdown);
    assert!(report.markdown.contains(SHORT), "{}", report.markdown);
    let retries = llm.prompts_with(RETRY);
    assert!(
        retries
            .iter()
            .any(|r| r.contains("this reader wants short answers")),
        "{retries:#?}"
    );
    // Without the style, the long finding is written as it is.
    let (plain, _) = write_full(&llm, &f, &[], &[], None, "", &AnswerStyle::default());
    assert!(plain.markdown.contains(LONG), "{}", plain.markdown);
}

#[test]
fn a_title_as_long_as_the_grammar_allows_was_cut_and_is_asked_again() {
    let f = fixture(&[("How is green tea brewed?", GREEN)]);
    // 70 characters: where the grammar stops the model, mid-word.
    const CUT: &str = "Packing Tips for Long Flights with Toddlers: Commercial vs. Home-Produ";
    assert_eq!(CUT.chars().count(), 70);
    let llm = Script::new(|prompt| {
        if prompt.contains("\"title\"") && !prompt.contains(RETRY) {
            json_text("title", CUT)
        } else {
            faithful(prompt)
        }
    });
    let (report, _) = write_with(&llm, &f, &[]);
    assert_eq!(report.title, "Brewing tea at home");
    assert!(llm
        .prompts_with(RETRY)
        .iter()
        .any(|p| p.contains("cut off at 70 characters")));
}

/// A long noun phrase is a better heading than the direction's question it falls back to.
#[test]
fn a_fallback_heading_fits_paragraphs_about_what_it_names_beyond_the_question() {
    let query = "How did the printing press change Europe?";
    let paragraphs = |text: &str| {
        vec![Paragraph {
            text: text.to_string(),
            citations: vec![1],
        }]
    };
    let definition = paragraphs(
        "A printing press is a machine that transfers ink onto paper by applying pressure.",
    );
    // "criticisms" is nowhere in the paragraph: the heading would misname it.
    assert!(!topic_fits(
        "Main criticisms of the printing press",
        query,
        &definition
    ));
    // Only the question's words and generic ones ("main", "effects") name nothing of its own.
    assert!(!topic_fits(
        "Main effects of the printing press on Europe",
        query,
        &definition
    ));
    let spread = paragraphs("The printing press spread across Europe within fifty years.");
    assert!(topic_fits(
        "Main factors that led to the spread of the printing press",
        query,
        &spread
    ));
}

#[test]
fn a_heading_asked_again_is_given_the_words_its_facts_add_to_the_question() {
    let fact = |text: &str| Fact {
        text: text.to_string(),
        passages: Vec::new(),
    };
    let words = heading_words(
        "How did the printing press change Europe?",
        &[fact(
            "A printing press is a machine that transfers ink onto paper by applying pressure.",
        )],
    );
    assert_eq!(
        words,
        ["machine", "transfers", "ink", "onto", "paper", "applying"],
        "{words:?}"
    );
    // The model names the section after the report's question; asked again, it is shown them.
    let f = fixture(&[("How is green tea brewed?", GREEN)]);
    let llm = Script::new(|prompt: &str| {
        if prompt.contains("\"heading\"") {
            json_text("heading", "Brew tea")
        } else {
            faithful(prompt)
        }
    });
    write_with(&llm, &f, &[]);
    let retries =
        llm.prompts_with("Words these facts use that the question does not: Japanese, sencha,");
    assert_eq!(retries.len(), 1, "{:#?}", llm.prompts());
}

#[test]
fn a_long_heading_that_names_the_topic_is_kept() {
    const LONG: &str = "Internal and External Causes of the Fall of the Western Roman Empire";
    let f = fixture(&[
        ("How is green tea brewed?", GREEN),
        ("What were the causes of decline?", BLACK),
    ]);
    let llm = Script::new(|prompt| {
        if prompt.contains("\"heading\"") && prompt.contains("Assam") {
            json_text("heading", LONG)
        } else {
            faithful(prompt)
        }
    });
    let (report, _) = write_with(&llm, &f, &[]);
    assert!(
        report.sections.iter().any(|s| s.heading == LONG),
        "{}",
        report.markdown
    );
}

/// The green and black tea fixture's report for `needs`, with a need judge (at `bar`) that
/// says yes to the green-tea finding for the first need alone.
fn judged_for_needs(needs: &[String], bar: Option<f32>) -> Report {
    const NEED_JUDGE: &str = "What you know about the reader:";
    let f = fixture(&[
        ("How is green tea brewed?", GREEN),
        ("What about black tea?", BLACK),
    ]);
    let first = needs[0].clone();
    let llm = Script::new(move |prompt| {
        if prompt.contains(NEED_JUDGE) {
            let p = match (
                prompt.contains(&first),
                prompt.ends_with("for two minutes."),
            ) {
                (true, true) => 0.9,
                _ => 0.3,
            };
            format!(r#"{{"probabilities":[{p},{}]}}"#, 1.0 - p)
        } else {
            faithful(prompt)
        }
    });
    let persona = Persona::default();
    let input = ReportInput {
        needs,
        unanticipated_needs: &[],
        need_judge: bar,
        ..tea_input(&f, &persona)
    };
    write(&llm, &Words, &input, &mut |_, _| {}).unwrap().0
}

#[test]
fn the_finding_that_answers_a_need_best_is_read_with_its_opener() {
    const NEED_JUDGE: &str = "What you know about the reader:";
    // The need judge finds the black-tea finding answers the need best, and the green-tea
    // one, earlier in the tree, less well.
    let f = fixture(&[
        ("How is green tea brewed?", GREEN),
        ("What about black tea?", BLACK),
    ]);
    let llm = Script::new(|prompt: &str| {
        if prompt.contains(NEED_JUDGE) {
            // The contrast question (a reader the need does not name) gets a low yes.
            let p = if !prompt.contains("caffeine") {
                0.05
            } else if prompt.ends_with(BLACK[0]) {
                0.9
            } else if prompt.ends_with(GREEN[0]) {
                0.6
            } else {
                0.05
            };
            format!(r#"{{"probabilities":[{p},{}]}}"#, 1.0 - p)
        } else {
            faithful(prompt)
        }
    });
    let needs = vec!["you have a caffeine sensitivity".to_string()];
    let persona = Persona::default();
    let input = ReportInput {
        needs: &needs,
        unanticipated_needs: &[],
        need_judge: Some(0.2),
        ..tea_input(&f, &persona)
    };
    let report = write(&llm, &Words, &input, &mut |_, _| {}).unwrap().0;
    assert_clean(&report);
    let section = report.sections.last().unwrap();
    assert_eq!(section.heading, NEEDS_HEADING, "{}", report.markdown);
    let text = &section.paragraphs[0].text;
    let black = text.find("four minutes").expect(text);
    let green = text.find("70 to 80 degrees").expect(text);
    assert!(black < green, "{}", report.markdown);
}

#[test]
fn a_finding_the_need_judge_finds_answers_a_need_goes_to_it_though_the_embeddings_miss() {
    // The need shares no word with any finding: the embeddings cannot match them.
    let needs = vec!["you have a caffeine sensitivity".to_string()];
    let write_needs = |bar: Option<f32>| judged_for_needs(&needs, bar);
    let report = write_needs(Some(0.2));
    assert_clean(&report);
    let section = report.sections.last().unwrap();
    assert_eq!(section.heading, NEEDS_HEADING, "{}", report.markdown);
    assert!(
        section.paragraphs[0].text.contains("70 to 80 degrees"),
        "{}",
        report.markdown
    );
    assert!(!section.paragraphs[0].citations.is_empty());
    assert!(
        !report.markdown.contains("do not cover"),
        "{}",
        report.markdown
    );
    // Without the judge the need is named as not covered.
    let report = write_needs(None);
    assert!(
        report
            .markdown
            .contains("The sources found do not cover: you have a caffeine sensitivity."),
        "{}",
        report.markdown
    );
}

/// The faithful paragraph for `prompt`, with the fact containing `marker` written as `text`.
fn paragraph_with(prompt: &str, marker: &str, text: &str) -> String {
    let facts: Vec<String> = facts_of(prompt)
        .into_iter()
        .map(|t| {
            if t.contains(marker) {
                text.to_string()
            } else {
                t
            }
        })
        .collect();
    json_text("text", &facts.join(" "))
}

/// A finding of two sentences is said only when both are: prose that states its second
/// sentence alone gets the first in the finding's own words (Maya's max-cushion trainers were
/// lost behind a sentence on what physiotherapists suggest).
#[test]
fn a_finding_of_two_sentences_half_said_gets_the_other_half_in_its_own_words() {
    const FIRST: &str = "Gyokuro bushes are covered for three weeks before the spring harvest.";
    const SECOND: &str = "Brewed cool, shaded tea tastes sweet.";
    let two = format!("{FIRST} {SECOND}");
    let texts: Vec<&str> = GREEN
        .iter()
        .copied()
        .chain(std::iter::once(two.as_str()))
        .collect();
    let f = fixture(&[("How is green tea brewed?", &texts)]);
    let llm = Script::new(|prompt| {
        if prompt.contains(PARAGRAPH) && prompt.contains("Gyokuro") {
            paragraph_with(prompt, "Gyokuro", SECOND)
        } else {
            faithful(prompt)
        }
    });
    let (report, _) = write_with(&llm, &f, &[]);
    assert!(report.markdown.contains(SECOND), "{}", report.markdown);
    assert!(report.markdown.contains(FIRST), "{}", report.markdown);
    assert_eq!(
        report.markdown.matches("sweet").count(),
        1,
        "{}",
        report.markdown
    );
    assert_clean(&report);
}

/// A sentence that ties a passage on something else to the question with the question's words
/// ("Renewable energy is a crucial source of energy for small bakeries", from Wikipedia's
/// Renewable energy) is refused and asked again.
#[test]
fn a_sentence_tying_a_far_passage_to_the_question_is_asked_again() {
    const FRAMED: &str = "Matcha is whisked from powdered shade-grown leaves at home.";
    let f = fixture(&[("How is green tea brewed?", GREEN)]);
    let llm = Script::new(|prompt| {
        if prompt.contains(PARAGRAPH) && prompt.contains("Matcha") && !prompt.contains(RETRY) {
            paragraph_with(prompt, "Matcha", FRAMED)
        } else {
            faithful(prompt)
        }
    });
    let persona = Persona::default();
    let input = ReportInput {
        query: "How should I brew tea at home?",
        ..tea_input(&f, &persona)
    };
    let (report, _) = write(&llm, &Words, &input, &mut |_, _| {}).unwrap();
    assert!(!report.markdown.contains(FRAMED), "{}", report.markdown);
    assert!(report.markdown.contains(GREEN[2]), "{}", report.markdown);
    let retries = llm.prompts_with(RETRY);
    assert!(
        retries.iter().any(|r| {
            r.contains("ties a passage on something else to the question") && r.contains("(home)")
        }),
        "{retries:?}"
    );
    assert_clean(&report);
}

/// The opening starts from a finding the judge finds helps answer the question, not from one
/// kept only by its closeness to the question's words ("The marathon can be completed by
/// running or with a run/walk strategy", scored 0.13, opened Maya's report).
#[test]
fn the_opening_starts_from_a_finding_the_judge_keeps_not_one_kept_by_its_words() {
    const WORDY: &str = "Tea is brewed strong.";
    let f = fixture(&[("How is green tea brewed?", &[WORDY, GREEN[0]])]);
    let persona = Persona::default();
    let input = ReportInput {
        finding_judge: Some(0.19),
        ..tea_input(&f, &persona)
    };
    let judge = |texts: &[&str]| {
        texts
            .iter()
            .map(|t| Some(if t.contains("strong") { 0.05 } else { 0.9 }))
            .collect()
    };
    let plan = outline::outline(&input, &Words, &judge, &|_, _| Vec::new()).unwrap();
    assert_eq!(plan.summary, vec![1], "{plan:#?}");
    // Kept, in the body.
    assert!(
        plan.sections
            .iter()
            .any(|s| s.paragraphs.concat().contains(&0)),
        "{plan:#?}"
    );
    // Without the judge, the closer one opens.
    let plan = plan_of(&f);
    assert_eq!(plan.summary, vec![0], "{plan:#?}");
}
