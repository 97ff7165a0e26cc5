//! The corpus-grounded answer set (`crates/eval/data/grounded.jsonl`): questions whose key
//! points (5–8 each, from two or more articles) the offline Wikipedia corpus
//! (`wikipedia-vital-en`) states, so answer coverage on them measures the writer and the
//! research, not what the corpus happens to hold. Each key point was taken from the summary
//! of one of the listed articles; `tests/eval_quality.rs` checks the file's shape.

use serde::Deserialize;

use crate::matchers::SupportMatcher;
use crate::quality::hygiene::ReportText;
use crate::EvalError;

const GROUNDED: &str = include_str!("../../data/grounded.jsonl");

/// One question of the set.
#[derive(Debug, Clone, Deserialize)]
pub struct GroundedQuestion {
    pub id: String,
    pub query: String,
    pub key_points: Vec<String>,
    /// The corpus articles (titles) the key points come from.
    pub articles: Vec<String>,
}

/// Every question of the set, in file order.
pub fn questions() -> Result<Vec<GroundedQuestion>, EvalError> {
    GROUNDED
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, line)| {
            serde_json::from_str(line)
                .map_err(|e| EvalError::Config(format!("data/grounded.jsonl line {}: {e}", i + 1)))
        })
        .collect()
}

/// The key points (their indices) that some paragraph of `text` supports: the support
/// matcher reads each paragraph as the passage and the key point as the sentence. Key-point
/// recall is their share; `eval quality` and `eval score-report` both measure it here.
pub fn covered_key_points(
    support: &SupportMatcher,
    key_points: &[String],
    text: &ReportText,
) -> Result<Vec<usize>, EvalError> {
    let mut covered = Vec::new();
    for (i, point) in key_points.iter().enumerate() {
        for p in &text.paragraphs {
            if support.supports(point, &p.text)? {
                covered.push(i);
                break;
            }
        }
    }
    Ok(covered)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_set_has_twenty_questions_of_five_to_eight_points_from_two_articles() {
        let qs = questions().unwrap();
        assert_eq!(qs.len(), 20);
        let mut ids: Vec<&str> = qs.iter().map(|q| q.id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), 20, "ids repeat");
        for q in &qs {
            assert!((5..=8).contains(&q.key_points.len()), "{}", q.id);
            assert!(q.articles.len() >= 2, "{}", q.id);
        }
    }
}
