//! Calibration of the report's need judge (`rudder eval need-judge`): the chat model's P(yes)
//! that a finding matters for the reader because of one of their needs, less its P(yes) for a
//! reader of whom nothing is known ([`rudder::checks::judge::judge_need_findings`]), added to
//! and beside the embedding cosine the outline matched needs with alone
//! ([`rudder::research::report::NEED_MATCH_COSINE`]), on labelled (question, need, finding)
//! pairs. Thresholds are chosen on half the needs and measured on the other half.
//!
//! The pairs (`data/need_finding_pairs.jsonl`): for the four planted questions the guides cover
//! ([`crate::quality::guides`]), each need as the report says it to the reader ("you have a
//! limited budget of 120 dollars") against every sentence of the question's guide and a few
//! findings a Wikipedia research brought for it, labelled by hand: a finding bears on the need
//! when a careful advisor would use it *because of* that need (a price for the budget, a wide
//! fitting for wide feet), not when it only answers the question.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::matchers::{calibrate, calibrate_for_precision, scored_pairs, JudgedPair, ScoreFigures};
use crate::EvalError;
use rudder::embed::Embedder;
use rudder::llm::{Llm, Usage};

/// The least held-out-like precision the report's threshold keeps on the calibration half: a
/// finding wrongly given to a need tells the reader it meets their need.
pub const NEED_MIN_PRECISION: f32 = 0.8;

const NEED_PAIRS: &str = include_str!("../data/need_finding_pairs.jsonl");

/// One labelled pair.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NeedFindingPair {
    /// The need's id: pairs of one need fall in the same half.
    pub group: String,
    pub query: String,
    /// The need as the report says it to the reader.
    pub need: String,
    pub finding: String,
    /// Whether the finding matters for the reader because of the need.
    pub bears: bool,
    /// "guide" or "corpus".
    pub source: String,
}

/// A pair with its scores.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ScoredNeedFinding {
    #[serde(flatten)]
    pub pair: NeedFindingPair,
    pub probability: f32,
    pub bias: f32,
    /// The finding's cosine to the need (all-MiniLM-L6-v2, as the outline matches them).
    pub cosine: f32,
}

/// What one calibration measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NeedJudgeReport {
    pub model: String,
    pub pairs: usize,
    pub positives: usize,
    pub scores: Vec<ScoreFigures>,
    /// Pairs that bear, and how many of them the cosine match alone finds.
    pub found_by_cosine: usize,
    pub usage: Usage,
    pub seconds: f64,
    pub scored: Vec<ScoredNeedFinding>,
}

/// The shipped pairs.
pub fn shipped_pairs() -> Vec<NeedFindingPair> {
    crate::matchers::parse_jsonl(NEED_PAIRS, Path::new("data/need_finding_pairs.jsonl"))
        .expect("data/need_finding_pairs.jsonl is checked by tests")
}

/// Scores every pair (the needs and findings of one question together, as the report asks
/// them) and calibrates each score.
pub fn calibrate_need_judge(
    llm: &dyn Llm,
    embedder: &dyn Embedder,
    pairs: &[NeedFindingPair],
    progress: &dyn rudder::history::Progress,
) -> Result<NeedJudgeReport, EvalError> {
    let started = std::time::Instant::now();
    let queries = crate::matchers::distinct_in_order(pairs.iter().map(|p| p.query.as_str()));
    let run_error =
        |query: &str, message: String| crate::matchers::judge_error("need judge", query, message);
    let mut usage = Usage::default();
    let mut scored = Vec::with_capacity(pairs.len());
    for (i, query) in queries.iter().enumerate() {
        let of_query: Vec<&NeedFindingPair> = pairs.iter().filter(|p| p.query == *query).collect();
        let needs = crate::matchers::distinct_in_order(of_query.iter().map(|p| p.need.as_str()));
        let findings =
            crate::matchers::distinct_in_order(of_query.iter().map(|p| p.finding.as_str()));
        let (judged, completions) =
            rudder::checks::judge::judge_need_findings(llm, query, &needs, &findings)
                .map_err(|e| run_error(query, e.to_string()))?;
        for c in &completions {
            usage += c.usage;
        }
        let mut texts: Vec<&str> = needs.clone();
        texts.extend(&findings);
        let vectors = embedder
            .embed(&texts)
            .map_err(|e| run_error(query, e.to_string()))?;
        let (need_vectors, finding_vectors) = vectors.split_at(needs.len());
        for pair in of_query {
            let n = needs.iter().position(|x| *x == pair.need).unwrap_or(0);
            let f = findings
                .iter()
                .position(|x| *x == pair.finding)
                .unwrap_or(0);
            let j = judged[n][f];
            scored.push(ScoredNeedFinding {
                pair: pair.clone(),
                probability: j.probability,
                bias: j.bias,
                cosine: rudder::embed::cosine(&need_vectors[n], &finding_vectors[f]),
            });
        }
        progress.note(&format!(
            "need judge: question {}/{} ({} pairs scored)",
            i + 1,
            queries.len(),
            scored.len()
        ));
    }
    let labels = || scored.iter().map(|s| (s.pair.group.as_str(), s.pair.bears));
    let auc = |key: &dyn Fn(&ScoredNeedFinding) -> f32| {
        crate::matchers::area_under_roc(scored.iter().map(|s| (key(s), s.pair.bears)))
    };
    // What the report uses: the judge's lift added to the cosine. Alone the 1.5B judge
    // separates worse than the cosine (AUC 0.76 against 0.87); together they find about twice
    // the findings the cosine finds at the same precision.
    let used = |s: &ScoredNeedFinding| s.probability - s.bias + s.cosine;
    let lift = |s: &ScoredNeedFinding| s.probability - s.bias;
    let mut scores = vec![ScoreFigures {
        name: format!("P(yes) - bias + cosine, precision first ({NEED_MIN_PRECISION}; used)"),
        calibration: calibrate_for_precision(
            &scored_pairs(labels(), scored.iter().map(used)),
            NEED_MIN_PRECISION,
        ),
        auc: auc(&used),
    }];
    for (name, key) in [
        (
            "P(yes) - bias + cosine",
            &used as &dyn Fn(&ScoredNeedFinding) -> f32,
        ),
        ("P(yes) - bias", &lift),
        ("P(yes)", &|s: &ScoredNeedFinding| s.probability),
        ("cosine to the need", &|s: &ScoredNeedFinding| s.cosine),
    ] {
        scores.push(ScoreFigures {
            name: name.to_string(),
            calibration: calibrate(&scored_pairs(labels(), scored.iter().map(key))),
            auc: auc(key),
        });
    }
    let cut = rudder::research::report::NEED_MATCH_COSINE;
    Ok(NeedJudgeReport {
        model: llm.model_name().to_string(),
        pairs: scored.len(),
        positives: scored.iter().filter(|s| s.pair.bears).count(),
        scores,
        found_by_cosine: scored
            .iter()
            .filter(|s| s.pair.bears && s.cosine >= cut)
            .count(),
        usage,
        seconds: started.elapsed().as_secs_f64(),
        scored,
    })
}

/// The report as Markdown: each score's calibration, then the judge's worst mistakes.
pub fn markdown(r: &NeedJudgeReport) -> String {
    let mut out = format!(
        "# Need judge — model {}\n\n{} pairs ({} bear on their need; the cosine match at {} \
         finds {} of them)\n\n{}",
        r.model,
        r.pairs,
        r.positives,
        rudder::research::report::NEED_MATCH_COSINE,
        r.found_by_cosine,
        crate::matchers::calibration_rows(&r.scores)
    );
    out.push_str(&crate::matchers::cost_line(&r.usage, r.seconds));
    let threshold = r.scores.first().map_or(0.5, |s| s.calibration.threshold);
    let pairs: Vec<JudgedPair<'_>> = r
        .scored
        .iter()
        .map(|s| JudgedPair {
            probability: s.probability,
            bias: s.bias,
            cosine: s.cosine,
            bears: s.pair.bears,
            subject: &s.pair.need,
            finding: &s.pair.finding,
        })
        .collect();
    out.push_str(&crate::matchers::mistakes_table(&pairs, "need", threshold));
    out
}

/// Writes `table.md` and `records.json` under `out`.
pub fn write(out: &Path, report: &NeedJudgeReport) -> Result<(), EvalError> {
    crate::write_table_and_records(out, &markdown(report), report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_pairs_parse_and_every_need_has_findings_that_bear_and_that_do_not() {
        let pairs = shipped_pairs();
        assert!(pairs.len() >= 200, "{}", pairs.len());
        let mut groups: Vec<&str> = pairs.iter().map(|p| p.group.as_str()).collect();
        groups.dedup();
        assert!(groups.len() >= 12, "{groups:?}");
        for group in groups {
            let of: Vec<&NeedFindingPair> = pairs.iter().filter(|p| p.group == group).collect();
            assert!(of.iter().any(|p| p.bears), "{group}: nothing bears");
            assert!(of.iter().any(|p| !p.bears), "{group}: everything bears");
            // The need is said to the reader, as the report's needs are.
            assert!(of[0].need.starts_with("you "), "{}", of[0].need);
        }
    }
}
