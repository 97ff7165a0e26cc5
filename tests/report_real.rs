//! The report writer with the real models (SmolLM2-135M and all-MiniLM-L6-v2): even a model
//! this small, with little to say, leaves nothing that looks broken — no debris, no sentence
//! said twice — and the thresholds of the assembly hold on real embeddings.

use rudder_testkit as common;

use std::collections::BTreeMap;

use rudder::checks::text::{
    heading_debris, is_content, near_duplicates, sentence_debris, split_sentences,
};
use rudder::checks::{SupportMatcher, SUPPORT_THRESHOLD};
use rudder::embed::{cosine, Embedder, FastEmbedder};
use rudder::research::report::{self, ReportInput, DUPLICATE_COSINE, NEED_MATCH_COSINE};
use rudder::research::tree::{FollowUp, Learning, Origin, Tree};
use rudder::research::Persona;
use rudder::sources::{CitationTarget, Evidence};

/// (direction question, [(learning, passage)]).
type Direction = (&'static str, &'static [(&'static str, &'static str)]);

const DIRECTIONS: &[Direction] = &[
    (
        "How is green tea brewed?",
        &[
            (
                "Green tea is brewed at 70 to 80 degrees Celsius for two to three minutes.",
                "Green tea is best brewed at 70 to 80 degrees Celsius for two to three minutes. \
                 Boiling water scorches green tea leaves and makes the cup bitter.",
            ),
            (
                "Boiling water scorches green tea leaves and makes the cup bitter.",
                "Green tea is best brewed at 70 to 80 degrees Celsius for two to three minutes. \
                 Boiling water scorches green tea leaves and makes the cup bitter.",
            ),
            (
                "Japanese sencha is steamed soon after picking, which keeps its colour green.",
                "Sencha, the most common Japanese tea, is steamed soon after picking. Steaming \
                 stops oxidation and keeps the leaves green.",
            ),
        ],
    ),
    (
        "What does good tea cost?",
        &[
            (
                "Loose-leaf black tea costs about 10 to 20 euros per 100 grams in specialist shops.",
                "In specialist shops loose-leaf black tea costs about 10 to 20 euros per 100 \
                 grams, while supermarket tea bags cost far less per cup.",
            ),
            (
                "Supermarket tea bags cost far less per cup than loose-leaf tea.",
                "In specialist shops loose-leaf black tea costs about 10 to 20 euros per 100 \
                 grams, while supermarket tea bags cost far less per cup.",
            ),
            (
                "Loose black tea in specialist shops is priced at roughly 10 to 20 euros for 100 grams.",
                "In specialist shops loose-leaf black tea costs about 10 to 20 euros per 100 \
                 grams, while supermarket tea bags cost far less per cup.",
            ),
        ],
    ),
];

fn fixture() -> (Tree, Vec<Learning>, BTreeMap<String, Evidence>) {
    let mut tree = Tree::new("How should I brew tea at home?");
    let mut learnings = Vec::new();
    let mut evidence = BTreeMap::new();
    for (question, items) in DIRECTIONS {
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
        for (text, passage) in *items {
            let key = format!("doc:{}", evidence.len());
            let key = evidence
                .iter()
                .find(|(_, e): &(&String, &Evidence)| e.text == *passage)
                .map(|(k, _)| k.clone())
                .unwrap_or(key);
            evidence.entry(key.clone()).or_insert_with(|| Evidence {
                target: CitationTarget::Document {
                    path: format!("/tmp/{key}.md"),
                    chunk: 0,
                    page: None,
                    url: None,
                    name: Some(format!("{key}.md")),
                },
                title: question.to_string(),
                text: passage.to_string(),
                score: 1.0,
            });
            let id = learnings.len();
            learnings.push(Learning {
                id,
                node,
                text: text.to_string(),
                sources: vec![key],
            });
            tree.nodes[node].learnings.push(id);
        }
    }
    (tree, learnings, evidence)
}

/// The writer's input over the tea fixture: the English question, no reader known, no judge,
/// paragraphs. Tests change what they test with struct update.
fn tea_input<'a>(
    tree: &'a Tree,
    learnings: &'a [Learning],
    evidence: &'a BTreeMap<String, Evidence>,
    persona: &'a Persona,
) -> ReportInput<'a> {
    static PROSE: report::AnswerStyle = report::AnswerStyle {
        form: report::Form::Paragraphs,
        short: false,
        plain: false,
        because: Vec::new(),
    };
    ReportInput {
        query: "How should I brew tea at home?",
        asked: "",
        persona,
        profile: "",
        needs: &[],
        unanticipated_needs: &[],
        aspects: &[],
        tree,
        learnings,
        evidence,
        current_date: "2025-05-01",
        support_judge: None,
        finding_judge: None,
        need_judge: None,
        style: &PROSE,
    }
}

#[test]
fn a_small_model_writes_a_report_with_no_debris_and_no_repeats() {
    let models = common::store();
    let embedder = FastEmbedder::from_store(&models, common::EMBED_MODEL, 1).unwrap();
    let llm = common::small_model();
    let (tree, learnings, evidence) = fixture();
    let persona = Persona::default();
    let needs = vec![
        "Covers the cost of loose-leaf tea".to_string(),
        "Covers caffeine and sleep".to_string(),
    ];
    let input = ReportInput {
        needs: &needs,
        unanticipated_needs: &[],
        // As a run with SmolLM2 writes it: the judge is off for this model
        // (`judge::threshold_for`). Its P(yes) is low for nearly every pair: at qwen's 0.615,
        // or even at its own best threshold 0.18, it refuses every sentence, the learnings'
        // own words included, and leaves the report empty. The judge's real-model tests are
        // `eval_support` and `research_real`'s node test.
        support_judge: Some(rudder::checks::judge::threshold_for(common::CHAT_MODEL))
            .filter(|&t| t > 0.0),
        ..tea_input(&tree, &learnings, &evidence, &persona)
    };
    let (report, completions) = report::write(&llm, &embedder, &input, &mut |_, _| {}).unwrap();
    eprintln!("{}", report.markdown);
    assert!(!completions.is_empty());

    for h in std::iter::once(&report.title).chain(report.sections.iter().map(|s| &s.heading)) {
        assert!(heading_debris(h).is_none(), "heading debris: {h:?}");
    }
    assert!(
        !report.summary.text.trim().is_empty(),
        "a report with findings opens with an answer:\n{}",
        report.markdown
    );
    let paragraphs: Vec<&report::Paragraph> = std::iter::once(&report.summary)
        .chain(report.sections.iter().flat_map(|s| s.paragraphs.iter()))
        .collect();
    let mut content = Vec::new();
    let support = SupportMatcher::new(&embedder, SUPPORT_THRESHOLD);
    let (mut cited, mut supported) = (0, 0);
    for p in &paragraphs {
        let passages: Vec<&str> = p
            .citations
            .iter()
            .filter_map(|n| report.references.iter().find(|r| r.number == *n))
            .map(|r| evidence[&r.key].text.as_str())
            .collect();
        for s in split_sentences(&p.text) {
            assert!(sentence_debris(&s).is_none(), "debris: {s:?}");
            if is_content(&s) {
                if !passages.is_empty() {
                    cited += 1;
                    let ok = passages
                        .iter()
                        .any(|passage| support.supports(&s, passage).unwrap());
                    if !ok {
                        eprintln!("unsupported: {s}");
                    }
                    supported += usize::from(ok);
                }
                content.push(s);
            }
        }
    }
    // The summary restates the body: its sentences are compared with one another, the body's
    // with the body's (as `rudder eval quality` counts repetition).
    let summary_len = split_sentences(&report.summary.text)
        .iter()
        .filter(|s| is_content(s))
        .count();
    let (summary, body) = content.split_at(summary_len);
    let mut repeated: Vec<&str> = Vec::new();
    for part in [summary, body] {
        let refs: Vec<&str> = part.iter().map(String::as_str).collect();
        repeated.extend(
            refs.iter()
                .zip(near_duplicates(&refs))
                .filter(|(_, d)| *d)
                .map(|(s, _)| *s),
        );
    }
    assert!(repeated.is_empty(), "repeated sentences: {repeated:?}");
    // The paraphrased price learning is placed once.
    assert!(
        !report.markdown.contains("is priced at roughly"),
        "{}",
        report.markdown
    );
    // Caffeine is not in the sources: said plainly, once, uncited.
    let needs_section = report.sections.last().unwrap();
    assert_eq!(needs_section.heading, report::NEEDS_HEADING);
    let last = needs_section.paragraphs.last().unwrap();
    assert_eq!(
        last.text,
        "The sources found do not cover: caffeine and sleep."
    );
    assert!(report.closing.is_empty());
    // Cited sentences are the model's checked prose or the learnings themselves (which the
    // research node has already held against their passages).
    eprintln!("citation support {supported}/{cited}");
    assert!(
        supported * 10 >= cited * 8,
        "citation support {supported}/{cited}"
    );
}

/// The assembly's embedding thresholds on examples: a need and a learning on its subject
/// against one on the same topic but not the need; a paraphrase against two related facts.
#[test]
fn assembly_thresholds_separate_examples_on_real_embeddings() {
    let models = common::store();
    let embedder = FastEmbedder::from_store(&models, common::EMBED_MODEL, 1).unwrap();
    let cos = |a: &str, b: &str| {
        let v = embedder.embed(&[a, b]).unwrap();
        cosine(&v[0], &v[1])
    };
    let need_pairs = [
        (
            "the cost of loose-leaf tea",
            "Loose-leaf black tea costs about 10 to 20 euros per 100 grams in specialist shops.",
            true,
        ),
        (
            "the cost of running shoes",
            "Entry-level running shoes cost between 60 and 90 dollars.",
            true,
        ),
        // Answers by inference the embedding does not make (0.40): left unmatched, the price
        // of no false matches.
        (
            "you have a knee injury",
            "Cushioned running shoes reduce the load on injured knees.",
            false,
        ),
        (
            "the cost of loose-leaf tea",
            "Green tea is brewed at 70 to 80 degrees Celsius for two to three minutes.",
            false,
        ),
        (
            "caffeine and sleep",
            "Japanese sencha is steamed soon after picking, which keeps its colour green.",
            false,
        ),
        (
            "you have a knee injury",
            "Trail shoes have deeper lugs for grip on mud.",
            false,
        ),
        (
            "brewing for guests",
            "A large teapot serves six cups at once.",
            false,
        ),
        (
            "brewing for guests",
            "Tea plants grow best on misty hillsides.",
            false,
        ),
        (
            "safety of herbal tea in pregnancy",
            "Some herbal teas such as liquorice are not advised during pregnancy.",
            true,
        ),
        (
            "safety of herbal tea in pregnancy",
            "Herbal tea is made from flowers, fruit and herbs rather than tea leaves.",
            false,
        ),
    ];
    let scored: Vec<(f32, bool, &str, &str)> = need_pairs
        .iter()
        .map(|&(need, learning, answers)| (cos(need, learning), answers, need, learning))
        .collect();
    for (c, answers, need, learning) in &scored {
        eprintln!("need {c:.3} {answers}: {need} / {learning}");
    }
    for (c, answers, need, learning) in &scored {
        assert_eq!(
            *c >= NEED_MATCH_COSINE,
            *answers,
            "{c:.3}: {need} / {learning}"
        );
    }
    let duplicate_pairs = [
        ("Loose-leaf black tea costs about 10 to 20 euros per 100 grams in specialist shops.", "Loose black tea in specialist shops is priced at roughly 10 to 20 euros for 100 grams.", true),
        ("Green tea is brewed at 70 to 80 degrees Celsius for two to three minutes.", "Boiling water scorches green tea leaves and makes the cup bitter.", false),
        ("Loose-leaf black tea costs about 10 to 20 euros per 100 grams in specialist shops.", "Supermarket tea bags cost far less per cup than loose-leaf tea.", false),
        ("Green tea is brewed at 70 to 80 degrees Celsius for two to three minutes.", "Steep green tea for two to three minutes in water at 70 to 80 degrees Celsius.", true),
        ("Green tea is brewed at 70 to 80 degrees Celsius for two to three minutes.", "Black tea is brewed with boiling water for four to five minutes.", false),
        // The report's sentences, compared at the same cosine (`prose::Writer::repeats`): the
        // vaccine report said Jenner's finding twice in sentences sharing too few words to
        // count; facts of one paragraph on one subject must stay.
        ("In 1796, Edward Jenner showed that infection with cowpox protected people against smallpox.", "Jenner demonstrated that inoculating people with cowpox gave them immunity against smallpox.", true),
        ("Alexander Fleming discovered penicillin in 1928.", "In 1928, penicillin was found by Alexander Fleming.", true),
        ("Edward Jenner created the smallpox vaccine, the world's first vaccine.", "A WHO campaign eradicated smallpox between 1958 and 1977.", false),
        ("Alexander Fleming discovered penicillin in 1928.", "Fleming shared the 1945 Nobel Prize in Physiology or Medicine with Florey and Chain.", false),
        ("Vaccines are often made from weakened or killed forms of the microbe.", "The vaccine stimulates the immune system to recognise the agent as a threat and destroy it.", false),
        ("When a large enough share of a population is vaccinated, herd immunity results.", "Herd immunity protects people who cannot be vaccinated because a weakened microbe would harm them.", false),
        ("Penicillins were among the first medicines effective against infections by staphylococci and streptococci.", "Many bacteria have become resistant to penicillins after their extensive use.", false),
    ];
    let scored: Vec<(f32, bool, &str, &str)> = duplicate_pairs
        .iter()
        .map(|&(a, b, same)| (cos(a, b), same, a, b))
        .collect();
    for (c, same, a, b) in &scored {
        eprintln!("duplicate {c:.3} {same}: {a} / {b}");
    }
    for (c, same, a, b) in &scored {
        assert_eq!(*c >= DUPLICATE_COSINE, *same, "{c:.3}: {a} / {b}");
    }
}

/// A question in French, with the real small model: the report is written and checked in the
/// sources' English, then each text is translated and checked, or left as written and counted.
/// Whatever SmolLM2 manages, nothing broken is printed and the labels are French.
#[test]
fn a_question_in_french_gets_french_labels_and_checked_translations() {
    let models = common::store();
    let embedder = FastEmbedder::from_store(&models, common::EMBED_MODEL, 1).unwrap();
    let llm = common::small_model();
    let (tree, learnings, evidence) = fixture();
    let persona = Persona::default();
    let input = ReportInput {
        asked: "Comment faut-il préparer le thé vert à la maison ?",
        ..tea_input(&tree, &learnings, &evidence, &persona)
    };
    let (report, completions) = report::write(&llm, &embedder, &input, &mut |_, _| {}).unwrap();
    eprintln!("{}", report.markdown);
    assert_eq!(report.language, "fra");
    let texts = 2 + report
        .sections
        .iter()
        .map(|s| 1 + s.paragraphs.len())
        .sum::<usize>();
    assert!(!completions.is_empty());
    assert!(report.untranslated <= texts);
    assert!(
        report.markdown.contains("## Références"),
        "{}",
        report.markdown
    );
    assert_eq!(
        report.markdown.contains("restent en anglais"),
        report.untranslated > 0,
        "{}",
        report.markdown
    );
    for h in std::iter::once(&report.title).chain(report.sections.iter().map(|s| &s.heading)) {
        assert!(heading_debris(h).is_none(), "heading debris: {h:?}");
    }
    for p in std::iter::once(&report.summary)
        .chain(report.sections.iter().flat_map(|s| s.paragraphs.iter()))
    {
        for s in split_sentences(&p.text) {
            assert!(sentence_debris(&s).is_none(), "debris: {s:?}");
        }
    }
}

#[test]
fn a_small_model_writes_short_bullet_points_for_a_reader_who_wants_them() {
    let models = common::store();
    let embedder = FastEmbedder::from_store(&models, common::EMBED_MODEL, 1).unwrap();
    let llm = common::small_model();
    let (tree, learnings, evidence) = fixture();
    let persona = Persona::default();
    let profile =
        "Domain: hobby — tea\nExplanation style:\n- Wants short bullet points from now on\n";
    let style = report::answer_style(profile, &[]);
    assert_eq!(style.form, report::Form::Bullets);
    assert!(style.short);
    let write = |style: &report::AnswerStyle| {
        let input = ReportInput {
            profile,
            style,
            ..tea_input(&tree, &learnings, &evidence, &persona)
        };
        report::write(&llm, &embedder, &input, &mut |_, _| {})
            .unwrap()
            .0
    };
    let styled = write(&style);
    let prose = write(&report::AnswerStyle::default());
    eprintln!("{}\n----\n{}", styled.markdown, prose.markdown);
    let items: Vec<&str> = styled
        .markdown
        .lines()
        .skip_while(|l| !l.starts_with("## "))
        .take_while(|l| !l.starts_with("## References"))
        .filter(|l| !l.is_empty() && !l.starts_with("## "))
        .collect();
    assert!(!items.is_empty(), "{}", styled.markdown);
    for item in &items {
        let text = item
            .strip_prefix("- ")
            .unwrap_or_else(|| panic!("not a bullet point: {item:?}\n{}", styled.markdown));
        let sentence = text.split(" [\\[").next().unwrap();
        assert!(sentence_debris(sentence).is_none(), "debris: {item:?}");
    }
    // What the research found is all there, in the reader's form, and the report says whose
    // style it follows.
    assert_eq!(styled.cited_numbers(), prose.cited_numbers());
    assert!(styled
        .markdown
        .contains("Wants short bullet points from now on"));
    assert!(!prose.markdown.contains("Written as you like answers"));
}

#[test]
fn a_budget_is_met_by_the_prices_found_and_said_in_code_beside_the_model_s_prose() {
    let models = common::store();
    let embedder = FastEmbedder::from_store(&models, common::EMBED_MODEL, 1).unwrap();
    let llm = common::small_model();
    let (mut tree, mut learnings, mut evidence) = fixture();
    // Two teapots the shop prices, under the direction on what tea costs.
    let passage = "A glass teapot for loose tea costs about 20 to 25 euros. A cast-iron \
                   tetsubin kettle from Japan costs 60 to 90 euros.";
    evidence.insert(
        "doc:teapots".into(),
        Evidence {
            target: CitationTarget::Document {
                path: "/tmp/teapots.md".into(),
                chunk: 0,
                page: None,
                url: None,
                name: Some("teapots.md".into()),
            },
            title: "Teapots".into(),
            text: passage.into(),
            score: 1.0,
        },
    );
    let node = tree.nodes.len() - 1;
    for text in [
        "A glass teapot for loose tea costs about 20 to 25 euros.",
        "A cast-iron tetsubin kettle from Japan costs 60 to 90 euros.",
    ] {
        let id = learnings.len();
        learnings.push(Learning {
            id,
            node,
            text: text.into(),
            sources: vec!["doc:teapots".into()],
        });
        tree.nodes[node].learnings.push(id);
    }
    let persona = Persona::default();
    let needs = vec!["you can spend at most 30 euros on tea things".to_string()];
    let input = ReportInput {
        needs: &needs,
        ..tea_input(&tree, &learnings, &evidence, &persona)
    };
    let (report, _) = report::write(&llm, &embedder, &input, &mut |_, _| {}).unwrap();
    eprintln!("{}", report.markdown);
    let needs_section = report.sections.last().unwrap();
    assert_eq!(needs_section.heading, report::NEEDS_HEADING);
    assert_eq!(
        needs_section.paragraphs[0].text,
        "Within your budget of 30 euros: A glass teapot for loose tea costs about 20 to 25 \
         euros. Above your budget of 30 euros: A cast-iron tetsubin kettle from Japan costs 60 to \
         90 euros."
    );
    assert!(
        !report.markdown.contains("do not cover"),
        "{}",
        report.markdown
    );
    // The per-100-grams price is a rate, not a price to hold against the budget: it stays in
    // the body, where the model writes about it.
    assert!(
        !needs_section.paragraphs[0].text.contains("100 grams"),
        "{}",
        report.markdown
    );
}
