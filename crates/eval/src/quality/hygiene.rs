//! Report hygiene: what a reader notices before judging content — sentences said twice, cited
//! sentences their passages do not support, claims with no citation, debris (JSON, markup, a
//! prompt's scaffolding, a cut-off fragment), and length. Everything here is plain counting
//! except citation support, which is the calibrated [`SupportMatcher`].
//!
//! Definitions (per report):
//! * a *content sentence* is a sentence of the summary, a section paragraph or the closing with
//!   at least [`MIN_CONTENT_WORDS`] words; headings and the title are checked for debris only;
//! * *repetition*: the share of content sentences with a near-duplicate elsewhere in the same
//!   report — content-word sets (stemmed, stop words dropped) with Jaccard similarity of at
//!   least [`NEAR_DUPLICATE_JACCARD`]. The summary is an opening answer that restates the
//!   body by design: its sentences are compared with one another, and the body's with the
//!   body's;
//! * *citation support*: the share of cited sentences (sentences of a paragraph that cites)
//!   that at least one of the paragraph's cited passages supports. The writer cites per
//!   paragraph, so each sentence is given the benefit of every passage its paragraph cites;
//! * *uncited*: the share of content sentences in paragraphs that cite nothing;
//! * *debris*: sentences and headings that hold JSON or code punctuation, markup, the prompt's
//!   own scaffolding (`(from: …)`, `Learning 3:`), or stop mid-sentence (at an abbreviation or
//!   a word that cannot end one, too), and sentences with a word in another script than the
//!   question's that none of the paragraph's cited passages has;
//! * *words*: whitespace-separated words of the text the reader reads (title, headings,
//!   paragraphs; not the reference list).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::matchers::SupportMatcher;
use crate::EvalError;
pub use rudder::checks::text::{
    dominant_script, foreign_script, heading_debris, is_content, near_duplicates, sentence_debris,
    split_sentences, MIN_CONTENT_WORDS, NEAR_DUPLICATE_JACCARD,
};
use rudder::research::report::Report;
use rudder::sources::Evidence;

/// One paragraph of a report with the passages its citations resolve to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CitedParagraph {
    pub text: String,
    /// The cited passages' text (empty when the paragraph cites nothing).
    pub passages: Vec<String>,
}

/// A report reduced to what the checks read: headings and paragraphs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReportText {
    /// The question: its script is the report's.
    #[serde(default)]
    pub query: String,
    pub headings: Vec<String>,
    pub paragraphs: Vec<CitedParagraph>,
    /// Whether the first paragraph is the summary (compared for repetition only with itself).
    #[serde(default)]
    pub opens_with_summary: bool,
}

impl ReportText {
    /// The report's title, headings, summary, sections and closing, each paragraph with the
    /// text of the evidence its citation numbers resolve to.
    pub fn from_report(report: &Report, evidence: &BTreeMap<String, Evidence>) -> Self {
        let passage = |n: &usize| -> Option<String> {
            let reference = report.references.iter().find(|r| r.number == *n)?;
            evidence.get(&reference.key).map(|e| e.text.clone())
        };
        let paragraph = |p: &rudder::research::report::Paragraph| CitedParagraph {
            text: p.text.clone(),
            passages: p.citations.iter().filter_map(passage).collect(),
        };
        let mut text = ReportText {
            query: report.query.clone(),
            headings: vec![report.title.clone()],
            paragraphs: vec![paragraph(&report.summary)],
            opens_with_summary: true,
        };
        for section in &report.sections {
            text.headings.push(section.heading.clone());
            text.paragraphs
                .extend(section.paragraphs.iter().map(paragraph));
        }
        if !report.closing.trim().is_empty() {
            text.paragraphs.push(CitedParagraph {
                text: report.closing.clone(),
                passages: Vec::new(),
            });
        }
        text
    }

    /// Every content sentence, with the passages of its paragraph.
    pub fn content_sentences(&self) -> Vec<(String, &[String])> {
        self.paragraphs
            .iter()
            .flat_map(|p| {
                split_sentences(&p.text)
                    .into_iter()
                    .filter(|s| is_content(s))
                    .map(move |s| (s, p.passages.as_slice()))
            })
            .collect()
    }

    pub fn words(&self) -> usize {
        self.headings
            .iter()
            .map(|h| h.as_str())
            .chain(self.paragraphs.iter().map(|p| p.text.as_str()))
            .map(|t| t.split_whitespace().count())
            .sum()
    }
}

/// The hygiene figures of one report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Hygiene {
    pub sentences: usize,
    /// Content sentences with a near-duplicate elsewhere in the report.
    pub repeated: usize,
    /// Sentences of paragraphs that cite.
    pub cited: usize,
    /// Cited sentences a cited passage supports.
    pub supported: usize,
    /// Content sentences in paragraphs that cite nothing.
    pub uncited: usize,
    /// Sentences and headings that are debris, with what was found.
    pub debris: Vec<Debris>,
    pub words: usize,
}

impl Hygiene {
    /// `repeated / sentences` (0 for an empty report).
    pub fn repetition(&self) -> f64 {
        ratio(self.repeated, self.sentences)
    }
    /// `supported / cited`; `None` when nothing is cited.
    pub fn citation_support(&self) -> Option<f64> {
        (self.cited > 0).then(|| ratio(self.supported, self.cited))
    }
    /// `uncited / sentences`.
    pub fn uncited_share(&self) -> f64 {
        ratio(self.uncited, self.sentences)
    }
}

fn ratio(a: usize, b: usize) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// A piece of debris and why it counts as one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Debris {
    pub text: String,
    pub why: String,
}

/// Computes the hygiene figures of `text`; `support` decides citation support.
pub fn hygiene(text: &ReportText, support: &SupportMatcher) -> Result<Hygiene, EvalError> {
    let sentences = text.content_sentences();
    let mut h = Hygiene {
        sentences: sentences.len(),
        words: text.words(),
        ..Hygiene::default()
    };
    let summary_len = match (text.opens_with_summary, text.paragraphs.first()) {
        (true, Some(p)) => split_sentences(&p.text)
            .iter()
            .filter(|s| is_content(s))
            .count(),
        _ => 0,
    };
    let plain: Vec<&str> = sentences.iter().map(|(s, _)| s.as_str()).collect();
    let (summary, body) = plain.split_at(summary_len.min(plain.len()));
    h.repeated = near_duplicates(summary).iter().filter(|&&d| d).count()
        + near_duplicates(body).iter().filter(|&&d| d).count();
    for (sentence, passages) in &sentences {
        if passages.is_empty() {
            h.uncited += 1;
            continue;
        }
        h.cited += 1;
        let mut supported = false;
        for passage in passages.iter() {
            if support.supports(sentence, passage)? {
                supported = true;
                break;
            }
        }
        h.supported += usize::from(supported);
    }
    for heading in &text.headings {
        if let Some(why) = heading_debris(heading) {
            h.debris.push(Debris {
                text: heading.clone(),
                why,
            });
        }
    }
    let script = dominant_script(&text.query);
    for p in &text.paragraphs {
        let passages: Vec<&str> = p.passages.iter().map(String::as_str).collect();
        for sentence in split_sentences(&p.text) {
            if let Some(why) =
                sentence_debris(&sentence).or_else(|| foreign_script(&sentence, script, &passages))
            {
                h.debris.push(Debris {
                    text: sentence,
                    why,
                });
            }
        }
    }
    Ok(h)
}
