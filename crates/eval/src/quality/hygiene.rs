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
//!   least [`NEAR_DUPLICATE_JACCARD`];
//! * *citation support*: the share of cited sentences (sentences of a paragraph that cites)
//!   that at least one of the paragraph's cited passages supports. The writer cites per
//!   paragraph, so each sentence is given the benefit of every passage its paragraph cites;
//! * *uncited*: the share of content sentences in paragraphs that cite nothing;
//! * *debris*: sentences and headings that hold JSON or code punctuation, markup, the prompt's
//!   own scaffolding (`(from: …)`, `Learning 3:`), or stop mid-sentence;
//! * *words*: whitespace-separated words of the text the reader reads (title, headings,
//!   paragraphs; not the reference list).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::matchers::SupportMatcher;
use crate::EvalError;
use rudder::research::report::Report;
use rudder::sources::Evidence;
use rudder_synth::planted::content_words;

/// Sentences shorter than this are not counted as content (list stubs, "In short.").
pub const MIN_CONTENT_WORDS: usize = 4;
/// Two sentences whose content-word sets overlap at least this much say the same thing.
pub const NEAR_DUPLICATE_JACCARD: f64 = 0.6;

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
    pub headings: Vec<String>,
    pub paragraphs: Vec<CitedParagraph>,
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
            headings: vec![report.title.clone()],
            paragraphs: vec![paragraph(&report.summary)],
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
    let plain: Vec<&str> = sentences.iter().map(|(s, _)| s.as_str()).collect();
    h.repeated = near_duplicates(&plain).iter().filter(|&&d| d).count();
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
    for p in &text.paragraphs {
        for sentence in split_sentences(&p.text) {
            if let Some(why) = sentence_debris(&sentence) {
                h.debris.push(Debris {
                    text: sentence,
                    why,
                });
            }
        }
    }
    Ok(h)
}

/// For each sentence, whether another one in the list is a near-duplicate of it.
pub fn near_duplicates(sentences: &[&str]) -> Vec<bool> {
    let sets: Vec<BTreeSet<String>> = sentences.iter().map(|s| content_words(s)).collect();
    let mut dup = vec![false; sentences.len()];
    for i in 0..sets.len() {
        for j in i + 1..sets.len() {
            if jaccard(&sets[i], &sets[j]) >= NEAR_DUPLICATE_JACCARD {
                dup[i] = true;
                dup[j] = true;
            }
        }
    }
    dup
}

fn jaccard(a: &BTreeSet<String>, b: &BTreeSet<String>) -> f64 {
    // Two or fewer content words say too little to call a repeat.
    if a.len() < 3 || b.len() < 3 {
        return 0.0;
    }
    let inter = a.intersection(b).count();
    inter as f64 / (a.len() + b.len() - inter) as f64
}

fn is_content(sentence: &str) -> bool {
    sentence
        .split_whitespace()
        .filter(|w| w.chars().any(char::is_alphabetic))
        .count()
        >= MIN_CONTENT_WORDS
}

/// Splits prose into sentences at `.`, `!`, `?` (or `…`) followed by whitespace and a capital,
/// digit or quote, so decimals ("2.5"), initials mid-sentence ("e.g. a") and citation marks
/// stay inside their sentence. Line breaks end sentences too (list items).
pub fn split_sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let chars: Vec<char> = line.chars().collect();
        let mut start = 0;
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if matches!(c, '.' | '!' | '?' | '…') {
                // Closing quotes and brackets stay with their sentence.
                let mut end = i + 1;
                while end < chars.len() && matches!(chars[end], '"' | '\'' | ')' | '”' | '’') {
                    end += 1;
                }
                let next = chars[end..].iter().position(|c| !c.is_whitespace());
                let boundary = match next {
                    None => true,
                    Some(0) => false,
                    Some(k) => {
                        let n = chars[end + k];
                        n.is_uppercase() || n.is_ascii_digit() || matches!(n, '"' | '“' | '(' | '*')
                    }
                };
                if boundary && !is_abbreviation(&chars[start..=i]) {
                    push_trimmed(&mut out, &chars[start..end]);
                    start = end;
                }
                i = end;
                continue;
            }
            i += 1;
        }
        push_trimmed(&mut out, &chars[start..]);
    }
    out
}

fn push_trimmed(out: &mut Vec<String>, chars: &[char]) {
    let s: String = chars.iter().collect();
    let s = s.trim();
    if !s.is_empty() {
        out.push(s.to_string());
    }
}

/// "e.g.", "i.e.", "Dr.", "U.S.": a full stop that ends a short abbreviation, not a sentence.
fn is_abbreviation(upto: &[char]) -> bool {
    let s: String = upto.iter().collect();
    let last = s.split_whitespace().last().unwrap_or("").to_lowercase();
    matches!(
        last.as_str(),
        "e.g."
            | "i.e."
            | "etc."
            | "vs."
            | "dr."
            | "mr."
            | "mrs."
            | "ms."
            | "st."
            | "no."
            | "approx."
    ) || (last.len() <= 4 && last.matches('.').count() >= 2)
}

/// Why a sentence is debris, if it is: JSON or code punctuation, markup, the prompt's own
/// scaffolding, or a cut-off end.
pub fn sentence_debris(sentence: &str) -> Option<String> {
    let s = sentence.trim();
    if let Some(why) = markup_or_json(s) {
        return Some(why);
    }
    if s.ends_with('…') || s.ends_with("...") {
        return Some("cut off (ends with an ellipsis)".into());
    }
    let last = s.chars().last()?;
    if !matches!(last, '.' | '!' | '?' | '"' | '\'' | ')' | '”' | '’' | ':') {
        return Some("cut off (no closing punctuation)".into());
    }
    None
}

/// Why a heading is debris, if it is. Headings have no closing punctuation, so "cut off"
/// means ending on a word that cannot end a title, or an unclosed bracket.
pub fn heading_debris(heading: &str) -> Option<String> {
    let h = heading.trim();
    if h.is_empty() {
        return Some("empty heading".into());
    }
    if let Some(why) = markup_or_json(h) {
        return Some(why);
    }
    if h.matches('(').count() > h.matches(')').count() {
        return Some("cut off (unclosed bracket)".into());
    }
    let last = h
        .trim_end_matches(|c: char| !c.is_alphanumeric())
        .rsplit(|c: char| !c.is_alphanumeric())
        .next()
        .unwrap_or("")
        .to_lowercase();
    const CANNOT_END: &[&str] = &[
        "a", "an", "the", "and", "or", "of", "to", "in", "on", "for", "with", "by", "from", "as",
        "at", "but", "that", "which", "its", "their", "is", "are", "was", "were",
    ];
    if CANNOT_END.contains(&last.as_str()) || h.ends_with([',', ';', '-', '–']) {
        return Some(format!("cut off (ends with {last:?})"));
    }
    None
}

fn markup_or_json(s: &str) -> Option<String> {
    const SCAFFOLDING: &[&str] = &["(from:", "learning ", "passage ", "```", "**", "##", "\\n"];
    let lower = s.to_lowercase();
    for marker in SCAFFOLDING {
        let hit = if marker.ends_with(' ') {
            // "Learning 3:" / "Passage 2:" — the prompt's numbering leaking into prose.
            lower.match_indices(marker).any(|(i, _)| {
                lower[i + marker.len()..]
                    .split(|c: char| !c.is_ascii_digit())
                    .next()
                    .is_some_and(|d| !d.is_empty())
            })
        } else {
            lower.contains(marker)
        };
        if hit {
            return Some(format!("prompt scaffolding or markup ({})", marker.trim()));
        }
    }
    if s.contains(['{', '}']) || s.contains("\":") || s.contains("\\\"") {
        return Some("JSON or code punctuation".into());
    }
    // "[" outside a citation mark like "[3]".
    let mut rest = s;
    while let Some(i) = rest.find('[') {
        let after = &rest[i + 1..];
        let digits = after.chars().take_while(char::is_ascii_digit).count();
        if digits == 0 || !after[digits..].starts_with(']') {
            return Some("bracket that is not a citation".into());
        }
        rest = &after[digits..];
    }
    if s.contains(']') && !s.contains('[') {
        return Some("stray bracket".into());
    }
    let bytes = s.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'<' {
            if let Some(&n) = bytes.get(i + 1) {
                if n.is_ascii_alphabetic() || n == b'/' || n == b'!' {
                    return Some("markup tag".into());
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentences_split_at_ends_not_at_decimals_or_abbreviations() {
        let s = split_sentences(
            "Prices rose 2.5% in 1450. Printers, e.g. Gutenberg, used metal type! Did it \
             spread? \"Yes.\" Then (in 1500) it did.\n- a list item",
        );
        assert_eq!(
            s,
            vec![
                "Prices rose 2.5% in 1450.",
                "Printers, e.g. Gutenberg, used metal type!",
                "Did it spread?",
                "\"Yes.\"",
                "Then (in 1500) it did.",
                "- a list item",
            ]
        );
    }

    #[test]
    fn near_duplicates_are_found_and_distinct_sentences_are_not() {
        let d = near_duplicates(&[
            "The printing press spread literacy across Europe quickly.",
            "Literacy spread quickly across Europe with the printing press.",
            "Paper mills multiplied in Italian towns.",
            "It did.",
        ]);
        assert_eq!(d, vec![true, true, false, false]);
    }

    #[test]
    fn debris_is_json_markup_scaffolding_or_a_cut_off_end() {
        assert!(sentence_debris("} ] }.get(").is_some());
        assert!(sentence_debris("See <b>this</b> now.").is_some());
        assert!(sentence_debris("As Learning 3: says, presses spread.").is_some());
        assert!(sentence_debris("The press changed how people").is_some());
        assert!(sentence_debris("Printing spread to 200 towns [3].").is_none());
        assert!(sentence_debris("Costs fell (by half).").is_none());
        assert!(heading_debris("Religion and the (from: Printing press; Printing").is_some());
        assert!(heading_debris("How printing changed the").is_some());
        assert!(heading_debris("Religion and reform").is_none());
        assert!(heading_debris("Costs (1450–1500)").is_none());
    }
}
