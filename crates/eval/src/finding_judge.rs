//! Calibration of the report's finding judge (`rudder eval finding-judge`): the chat model's
//! P(yes) that a finding helps answer the question ([`rudder::checks::judge::judge_findings`]),
//! beside the embedding cosine the outline's off-topic cut uses, on labelled (question,
//! finding) pairs, each threshold chosen on half the questions and measured on the other half
//! ([`crate::matchers::calibrate`]).
//!
//! The pairs:
//! * `data/finding_pairs.jsonl`: for the 16 planted questions and the 20 corpus-grounded
//!   ones, the opening sentences of the 8 passages the Wikipedia corpus's search returns for
//!   the question, labelled by hand (what a research run reads: "Gliders are fixed-wing
//!   aircraft …" for a question about a long flight with a toddler, the Battle of Marathon
//!   for running shoes), and three key points of each grounded question;
//! * from the planted-needs set: the first sentence addressing each need (not tone needs),
//!   which bears on its own question and not on another user's first question: personal,
//!   specific findings like those a user's history gives.

use std::path::Path;

use serde::{Deserialize, Serialize};

pub use crate::matchers::ScoreFigures;
use crate::matchers::{calibrate, calibrate_for_recall, scored_pairs, JudgedPair};
use crate::EvalError;
use rudder::embed::Embedder;
use rudder::llm::{Llm, Usage};
use rudder_synth::planted::{NeedKind, PlantedSet};

/// The share of the findings that bear on their question the report's threshold keeps on the
/// calibration half.
pub const FINDING_MIN_RECALL: f32 = 0.95;

const FINDING_PAIRS: &str = include_str!("../data/finding_pairs.jsonl");

/// One labelled pair.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FindingPair {
    /// Pairs of one group (a question) fall in the same half.
    pub group: String,
    pub query: String,
    pub finding: String,
    /// Whether the finding helps answer the question.
    pub bears: bool,
    /// Where the pair comes from: "corpus", "key point" or "planted need".
    pub source: String,
}

/// A pair with both scores.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ScoredFinding {
    #[serde(flatten)]
    pub pair: FindingPair,
    /// The judge's P(yes).
    pub probability: f32,
    /// The judge's P(yes) for the same finding and a question it cannot bear on
    /// ([`rudder::checks::judge::FINDING_CONTRAST_QUESTION`]): what the model says for it
    /// whatever the question.
    pub bias: f32,
    /// The finding's cosine to the question (all-MiniLM-L6-v2, as the outline computes it).
    pub cosine: f32,
}

/// What one calibration measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FindingJudgeReport {
    pub model: String,
    pub pairs: usize,
    pub positives: usize,
    /// P(yes) alone, the cosine alone, and their sum.
    pub scores: Vec<ScoreFigures>,
    /// Pairs labelled as not bearing that the outline's cosine cut
    /// ([`rudder::research::report::OFF_TOPIC_FINDING`]) keeps, and how many of them the judge
    /// at its threshold refuses.
    pub kept_by_cosine_cut: usize,
    pub of_them_refused_by_judge: usize,
    pub usage: Usage,
    pub seconds: f64,
    pub scored: Vec<ScoredFinding>,
}

/// The shipped pairs (`data/finding_pairs.jsonl`).
pub fn shipped_pairs() -> Vec<FindingPair> {
    FINDING_PAIRS
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_str(l).expect("data/finding_pairs.jsonl is checked by tests"))
        .collect()
}

/// Pairs from the planted set's labels (see the module doc).
pub fn planted_pairs(set: &PlantedSet) -> Vec<FindingPair> {
    let mut out = Vec::new();
    for (u, user) in set.users.iter().enumerate() {
        let other = &set.users[(u + 2) % set.users.len()];
        let Some(foreign) = other.questions.first().filter(|_| other.id != user.id) else {
            continue;
        };
        for question in &user.questions {
            for need in question.needs.iter().filter(|n| n.kind != NeedKind::Tone) {
                let Some(sentence) = need.addressing.first() else {
                    continue;
                };
                for (q, bears) in [(question, true), (foreign, false)] {
                    out.push(FindingPair {
                        group: q.id.clone(),
                        query: q.query.clone(),
                        finding: sentence.clone(),
                        bears,
                        source: "planted need".into(),
                    });
                }
            }
        }
    }
    out
}

/// Scores every pair (the findings of one question together, so they share its prefix) and
/// calibrates each score.
pub fn calibrate_finding_judge(
    llm: &dyn Llm,
    embedder: &dyn Embedder,
    pairs: &[FindingPair],
    progress: &dyn rudder::history::Progress,
) -> Result<FindingJudgeReport, EvalError> {
    let started = std::time::Instant::now();
    let queries = crate::matchers::distinct_in_order(pairs.iter().map(|p| p.query.as_str()));
    let run_error = |query: &str, message: String| {
        crate::matchers::judge_error("finding judge", query, message)
    };
    let mut usage = Usage::default();
    let mut scored = Vec::with_capacity(pairs.len());
    for (i, query) in queries.iter().enumerate() {
        let of_query: Vec<&FindingPair> = pairs.iter().filter(|p| p.query == *query).collect();
        let findings: Vec<&str> = of_query.iter().map(|p| p.finding.as_str()).collect();
        let (judged, completions) = rudder::checks::judge::judge_findings(llm, query, &findings)
            .map_err(|e| run_error(query, e.to_string()))?;
        for c in &completions {
            usage += c.usage;
        }
        let mut texts = vec![*query];
        texts.extend(&findings);
        let vectors = embedder
            .embed(&texts)
            .map_err(|e| run_error(query, e.to_string()))?;
        for ((pair, j), vector) in of_query.into_iter().zip(judged).zip(&vectors[1..]) {
            scored.push(ScoredFinding {
                pair: pair.clone(),
                probability: j.probability,
                bias: j.bias,
                cosine: rudder::embed::cosine(&vectors[0], vector),
            });
        }
        progress.note(&format!(
            "finding judge: question {}/{} ({} pairs scored)",
            i + 1,
            queries.len(),
            scored.len()
        ));
    }
    let labels = || scored.iter().map(|s| (s.pair.group.as_str(), s.pair.bears));
    let auc = |key: &dyn Fn(&ScoredFinding) -> f32| {
        crate::matchers::area_under_roc(scored.iter().map(|s| (key(s), s.pair.bears)))
    };
    // What the report uses: P(yes) less the bias, at the threshold that keeps
    // `FINDING_MIN_RECALL` of the findings that bear (a finding wrongly left out loses what
    // the research found; one wrongly kept is what happened before the judge).
    let used = |s: &ScoredFinding| s.probability - s.bias;
    let mut scores = vec![ScoreFigures {
        name: format!("P(yes) - bias, recall first ({FINDING_MIN_RECALL}; used)"),
        calibration: calibrate_for_recall(
            &scored_pairs(labels(), scored.iter().map(used)),
            FINDING_MIN_RECALL,
        ),
        auc: auc(&used),
    }];
    for (name, key) in [
        ("P(yes) - bias", &used as &dyn Fn(&ScoredFinding) -> f32),
        ("P(yes)", &|s: &ScoredFinding| s.probability),
        ("cosine to the question", &|s: &ScoredFinding| s.cosine),
        ("P(yes) + cosine", &|s: &ScoredFinding| {
            s.probability + s.cosine
        }),
        ("P(yes) - bias + cosine", &|s: &ScoredFinding| {
            s.probability - s.bias + s.cosine
        }),
    ] {
        scores.push(ScoreFigures {
            name: name.to_string(),
            calibration: calibrate(&scored_pairs(labels(), scored.iter().map(key))),
            auc: auc(key),
        });
    }
    let threshold = scores[0].calibration.threshold;
    let kept: Vec<&ScoredFinding> = scored
        .iter()
        .filter(|s| !s.pair.bears && s.cosine >= rudder::research::report::OFF_TOPIC_FINDING)
        .collect();
    Ok(FindingJudgeReport {
        model: llm.model_name().to_string(),
        pairs: scored.len(),
        positives: scored.iter().filter(|s| s.pair.bears).count(),
        scores,
        kept_by_cosine_cut: kept.len(),
        of_them_refused_by_judge: kept.iter().filter(|s| used(s) < threshold).count(),
        usage,
        seconds: started.elapsed().as_secs_f64(),
        scored,
    })
}

/// The report as Markdown: each score's calibration, then the judge's worst mistakes.
pub fn markdown(r: &FindingJudgeReport) -> String {
    let mut out = format!(
        "# Finding judge — model {}\n\n{} pairs ({} bear on their question)\n\n{}",
        r.model,
        r.pairs,
        r.positives,
        crate::matchers::calibration_rows(&r.scores)
    );
    out.push_str(&format!(
        "\nPairs that do not bear on their question but pass the outline's cosine cut: {}; \
         of them refused by the judge at its threshold: {}\n\n",
        r.kept_by_cosine_cut, r.of_them_refused_by_judge
    ));
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
            subject: &s.pair.query,
            finding: &s.pair.finding,
        })
        .collect();
    out.push_str(&crate::matchers::mistakes_table(
        &pairs, "question", threshold,
    ));
    out
}

/// Writes `table.md` and `records.json` under `out`.
pub fn write(out: &Path, report: &FindingJudgeReport) -> Result<(), EvalError> {
    crate::write_table_and_records(out, &markdown(report), report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_pairs_parse_and_hold_both_labels_for_every_grounded_question() {
        let pairs = shipped_pairs();
        assert!(pairs.len() >= 300, "{}", pairs.len());
        for id in (1..=20).map(|i| format!("g{i:02}")) {
            let of: Vec<&FindingPair> = pairs.iter().filter(|p| p.group == id).collect();
            assert!(of.iter().any(|p| p.bears), "{id}: no finding that bears");
            assert!(
                of.iter().any(|p| !p.bears),
                "{id}: no finding that does not"
            );
        }
        assert!(pairs.iter().all(|p| !p.finding.trim().is_empty()));
    }
}
