//! What the report carries of the research: finding coverage and consistency.
//!
//! * *Distinct findings*: the run's learnings (every one passed the support check when it was
//!   learned) without those that say what an earlier one said — content-word Jaccard of at
//!   least [`NEAR_DUPLICATE_JACCARD`] or an embedding cosine of at least
//!   [`DUPLICATE_COSINE`], the same test the writer merges by.
//! * *Finding coverage*: the share of distinct findings that some paragraph of the report
//!   states, by the calibrated support matcher (the finding as the claim, the paragraph as
//!   the passage), as answer coverage scores key points.
//! * *Summary in body*: the share of the summary's content sentences some section paragraph
//!   supports: the opening answer says what the body says.
//! * *False "not covered"*: needs the report's closing sentence says the sources do not cover
//!   while a sentence of the report answers them (cosine of at least
//!   [`rudder::research::reflect::COVERED`], the cut reflection cancels a covered task by).

use serde::{Deserialize, Serialize};

use super::hygiene::{is_content, split_sentences, ReportText};
use crate::matchers::SupportMatcher;
use crate::EvalError;
use rudder::checks::text::{content_words, jaccard, NEAR_DUPLICATE_JACCARD};
use rudder::embed::{cosine, Embedder};
use rudder::research::report::{Report, DUPLICATE_COSINE, NOT_COVERED_OPENING};
use rudder::research::Learning;

/// Finding coverage of one report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FindingCoverage {
    /// Distinct findings of the run.
    pub distinct: usize,
    /// Of them, stated by some paragraph of the report.
    pub placed: usize,
    /// The distinct findings no paragraph states.
    pub missing: Vec<String>,
    /// Of the missing, those the report says it left out as not about the question
    /// ([`Report::off_question`]).
    #[serde(default)]
    pub off_question: usize,
}

impl FindingCoverage {
    /// `placed / distinct`; `None` for a run with no finding.
    pub fn share(&self) -> Option<f64> {
        (self.distinct > 0).then(|| self.placed as f64 / self.distinct as f64)
    }

    /// `placed / (distinct - off_question)`: what the report carries of the findings about
    /// its question; `None` when there are none.
    pub fn on_question_share(&self) -> Option<f64> {
        let on = self.distinct.saturating_sub(self.off_question);
        (on > 0).then(|| self.placed as f64 / on as f64)
    }
}

/// Whether the report agrees with itself.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Consistency {
    /// Content sentences of the summary.
    pub summary_sentences: usize,
    /// Of them, supported by a section paragraph.
    pub summary_in_body: usize,
    /// Needs listed as not covered.
    pub not_covered: usize,
    /// Of them, answered by a sentence of the report.
    pub false_not_covered: Vec<String>,
}

impl Consistency {
    /// `summary_in_body / summary_sentences`; `None` without a summary.
    pub fn summary_share(&self) -> Option<f64> {
        (self.summary_sentences > 0)
            .then(|| self.summary_in_body as f64 / self.summary_sentences as f64)
    }
}

/// The learnings that say something no earlier one says, in the order learned.
pub fn distinct_findings(
    learnings: &[Learning],
    embedder: &dyn Embedder,
) -> Result<Vec<String>, EvalError> {
    let texts: Vec<&str> = learnings.iter().map(|l| l.text.as_str()).collect();
    if texts.is_empty() {
        return Ok(Vec::new());
    }
    let vectors = embedder.embed(&texts)?;
    let mut kept: Vec<usize> = Vec::new();
    let words: Vec<_> = texts.iter().map(|t| content_words(t)).collect();
    for i in 0..texts.len() {
        let same = kept.iter().any(|&k| {
            jaccard(&words[k], &words[i]) >= NEAR_DUPLICATE_JACCARD
                || cosine(&vectors[k], &vectors[i]) >= DUPLICATE_COSINE
        });
        if !same {
            kept.push(i);
        }
    }
    Ok(kept.into_iter().map(|i| texts[i].to_string()).collect())
}

/// How many of `findings` some paragraph of `text` states; of those it does not, how many are
/// among `off_question` (the report's findings left out as not about the question: the same
/// text, or one that says the same thing by content words).
pub fn finding_coverage(
    findings: &[String],
    text: &ReportText,
    support: &SupportMatcher,
    off_question: &[String],
) -> Result<FindingCoverage, EvalError> {
    let off_words: Vec<_> = off_question.iter().map(|t| content_words(t)).collect();
    let mut out = FindingCoverage {
        distinct: findings.len(),
        ..FindingCoverage::default()
    };
    for finding in findings {
        let mut stated = false;
        for p in &text.paragraphs {
            if support.supports(finding, &p.text)? {
                stated = true;
                break;
            }
        }
        if stated {
            out.placed += 1;
        } else {
            let words = content_words(finding);
            if off_words
                .iter()
                .any(|w| jaccard(w, &words) >= NEAR_DUPLICATE_JACCARD)
            {
                out.off_question += 1;
            }
            out.missing.push(finding.clone());
        }
    }
    Ok(out)
}

/// The needs a "not covered" sentence lists, if `sentence` is one.
pub fn not_covered_needs(sentence: &str) -> Option<Vec<String>> {
    let list = sentence.trim().strip_prefix(NOT_COVERED_OPENING)?;
    Some(
        list.trim_end_matches('.')
            .split("; ")
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect(),
    )
}

/// The consistency figures of `report`.
pub fn consistency(
    report: &Report,
    support: &SupportMatcher,
    embedder: &dyn Embedder,
) -> Result<Consistency, EvalError> {
    let mut out = Consistency::default();
    let body: Vec<&str> = report
        .sections
        .iter()
        .flat_map(|s| s.paragraphs.iter())
        .map(|p| p.text.as_str())
        .collect();
    for sentence in split_sentences(&report.summary.text)
        .iter()
        .filter(|s| is_content(s))
    {
        out.summary_sentences += 1;
        let mut found = false;
        for p in &body {
            if support.supports(sentence, p)? {
                found = true;
                break;
            }
        }
        out.summary_in_body += usize::from(found);
    }
    let sentences: Vec<String> = std::iter::once(report.summary.text.as_str())
        .chain(body.iter().copied())
        .flat_map(split_sentences)
        .collect();
    let listed: Vec<String> = sentences
        .iter()
        .filter_map(|s| not_covered_needs(s))
        .flatten()
        .collect();
    out.not_covered = listed.len();
    let others: Vec<&str> = sentences
        .iter()
        .filter(|s| not_covered_needs(s).is_none())
        .map(String::as_str)
        .collect();
    if !listed.is_empty() && !others.is_empty() {
        let mut texts: Vec<&str> = listed.iter().map(String::as_str).collect();
        texts.extend(&others);
        let vectors = embedder.embed(&texts)?;
        let (needs, said) = vectors.split_at(listed.len());
        for (need, label) in needs.iter().zip(&listed) {
            if said
                .iter()
                .any(|s| cosine(need, s) >= rudder::research::reflect::COVERED)
            {
                out.false_not_covered.push(label.clone());
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_not_covered_sentence_is_read_back_into_its_needs() {
        assert_eq!(
            not_covered_needs("The sources found do not cover: a budget; knee safety."),
            Some(vec!["a budget".to_string(), "knee safety".to_string()])
        );
        assert_eq!(not_covered_needs("The sources cover everything."), None);
    }

    #[test]
    fn coverage_on_the_question_leaves_aside_what_the_report_left_out_as_off_it() {
        let c = FindingCoverage {
            distinct: 10,
            placed: 6,
            missing: Vec::new(),
            off_question: 2,
        };
        assert_eq!(c.share(), Some(0.6));
        assert_eq!(c.on_question_share(), Some(0.75));
        let all_off = FindingCoverage {
            distinct: 3,
            placed: 0,
            missing: Vec::new(),
            off_question: 3,
        };
        assert_eq!(all_off.share(), Some(0.0));
        assert_eq!(all_off.on_question_share(), None);
    }
}
