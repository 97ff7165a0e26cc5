//! `rudder eval score-report` (`rudder_eval::score_report`) with the real all-MiniLM-L6-v2 and
//! the support matcher calibrated on the shipped pairs, as the command does; the corpus is two
//! hand-written passages, so the test does not need the Wikipedia corpus installed.

use rudder_testkit as common;

use rudder::embed::FastEmbedder;
use rudder_eval::score_report::{grounded_question, score_markdown, Corpus};
use rudder_eval::{matchers, SupportMatcher};

/// Two passages: the printing-press article (by title) and nothing else; the search returns
/// them for any text.
struct TwoPassages;

const PRESS: &str = "Johannes Gutenberg invented the movable-type printing press around 1440, \
    which allowed a much faster rate of printing. The printing press led to an information \
    revolution and the unprecedented mass-spread of literature throughout Europe.";
const RENAISSANCE: &str = "The printing press had a profound impact on the Renaissance, the \
    Reformation and humanism.";

impl Corpus for TwoPassages {
    fn article(&mut self, title: &str) -> Result<Vec<String>, rudder_eval::EvalError> {
        Ok(match title {
            "Printing press" => vec![PRESS.to_string()],
            _ => Vec::new(),
        })
    }
    fn search(
        &mut self,
        _text: &str,
        _limit: usize,
    ) -> Result<Vec<String>, rudder_eval::EvalError> {
        Ok(vec![PRESS.to_string(), RENAISSANCE.to_string()])
    }
}

/// States key points 1 and 2 of g01 (the movable-type press; the information revolution), in
/// Rudder's Markdown, citing the printing-press article.
const TWO_POINTS: &str = "# How the press changed Europe\n\n\
    *Question:* How did the printing press change Europe?\n\n\
    Johannes Gutenberg invented the movable-type printing press, which made printing much \
    faster. [\\[1\\]](#ref-1)\n\n## Spread of books\n\n\
    The press led to an information revolution and an unprecedented mass spread of literature \
    across Europe. [\\[1\\]](#ref-1)\n\n## References\n\n\
    1. <a id=\"ref-1\"></a>Printing press — Printing press, passage 1 — \
    <https://en.wikipedia.org/wiki/Printing_press>\n";

/// Another system's style: bold, a body link to an invented address, nothing about the press.
const UNRELATED: &str = "# Research Report\n\n\
    ## Introduction\n\n\
    Sourdough bread is leavened by a culture of wild yeast and lactic acid bacteria kept in a \
    starter. **Bakers feed the starter** with flour and water every day \
    ([source](https://example.org/bread)).\n\n\
    ## Conclusion\n\n\
    A long cold fermentation gives the loaf its sour taste and open crumb.\n";

#[test]
fn a_report_stating_two_key_points_recalls_them_and_an_unrelated_one_scores_zero() {
    let embedder = FastEmbedder::from_store(&common::store(), common::EMBED_MODEL, 2).unwrap();
    let calibration = matchers::calibrate_support(&embedder, &matchers::support_pairs()).unwrap();
    let support = SupportMatcher::new(&embedder, calibration.threshold);
    let question = grounded_question("g01").unwrap();
    let mut corpus = TwoPassages;

    let two = score_markdown(&support, &mut corpus, &question, "two", TWO_POINTS).unwrap();
    eprintln!("{two:#?}");
    assert_eq!(two.key_points, 7);
    assert!(
        two.covered.contains(&0) && two.covered.contains(&1),
        "key points 1 and 2 are stated: {:?}",
        two.covered
    );
    assert!(two.recall() >= 2.0 / 7.0 - 1e-9);
    assert_eq!(two.references.len(), 1);
    assert_eq!(two.cited_articles, vec!["Printing press"]);
    assert_eq!(two.content_sentences, 2);
    assert_eq!(two.supported_by_cited, 2, "{:?}", two.unsupported);
    assert_eq!(two.supported_by_corpus, 2);

    let unrelated =
        score_markdown(&support, &mut corpus, &question, "unrelated", UNRELATED).unwrap();
    eprintln!("{unrelated:#?}");
    assert_eq!(unrelated.recall(), 0.0, "{:?}", unrelated.covered);
    assert_eq!(unrelated.references, vec!["https://example.org/bread"]);
    assert!(unrelated.cited_articles.is_empty());
    assert_eq!(unrelated.content_sentences, 3);
    assert_eq!(unrelated.supported_by_cited, 0);
    assert_eq!(unrelated.supported_by_corpus, 0);
}

#[test]
fn an_unknown_question_id_names_the_file_and_the_ids() {
    let e = grounded_question("g99").unwrap_err().to_string();
    assert!(e.contains("grounded.jsonl") && e.contains("g01"), "{e}");
}
