//! Calibration of the report's support judge (`rudder eval support`): the chat model's P(yes)
//! that a passage states a sentence ([`rudder::checks::judge`]), on labelled pairs, beside the
//! embedding matcher it works with.
//!
//! The pairs are the shipped support pairs (`data/support_pairs.jsonl`) and the turned pairs
//! (`data/turned_pairs.jsonl`; `data/direction_pairs.jsonl` at the repository root is another
//! set, for research directions): 14 passages, each with one faithful paraphrase and three
//! sentences that reuse the passage's words but turn it around: a reversed cause, a swapped
//! order of events or comparison, a wrong number or date. These are what the embedding matcher
//! lets through.
//!
//! It reports the judge alone (threshold chosen on half the passages, measured on the other
//! half, and AUC), the embedding matcher alone at its shipped threshold, and both together as
//! the report uses them, on all pairs and on the turned pairs.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::matchers::{
    area_under_roc, calibrate, parse_jsonl, prf, scored_pairs, support_pairs, Calibration, Prf,
    ScoredPair, SupportMatcher, SupportPair,
};
use crate::EvalError;
use rudder::embed::Embedder;
use rudder::llm::{Llm, Usage};

const TURNED_PAIRS: &str = include_str!("../data/turned_pairs.jsonl");

/// The turned pairs (see the module doc).
pub fn turned_pairs() -> Vec<SupportPair> {
    parse_jsonl(TURNED_PAIRS, Path::new("data/turned_pairs.jsonl"))
        .expect("data/turned_pairs.jsonl is checked by the crate's tests")
}

/// One pair with both checks' scores.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JudgedPair {
    #[serde(flatten)]
    pub pair: SupportPair,
    /// From `data/turned_pairs.jsonl`.
    pub turned: bool,
    /// The embedding matcher's score.
    pub embedding: f32,
    /// The judge's P(yes).
    pub probability: f32,
}

/// Precision and recall of one way of checking, on all pairs and on the turned pairs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CheckFigures {
    pub name: String,
    pub all: Prf,
    pub turned_pairs: Prf,
    /// Turned sentences (turned pairs labelled unsupported) that the check lets through.
    pub turned_passed: usize,
    pub turned_sentences: usize,
}

/// What one calibration measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SupportJudgeReport {
    pub model: String,
    pub pairs: usize,
    pub positives: usize,
    /// The judge's threshold on P(yes), chosen for F1 on half the passages.
    pub calibration: Calibration,
    /// The chance that a supported pair gets a higher P(yes) than an unsupported one.
    pub auc: f32,
    /// The embedding matcher's threshold (the shipped one).
    pub embedding_threshold: f32,
    /// Embedding alone, judge alone, both: at their thresholds.
    pub checks: Vec<CheckFigures>,
    pub usage: Usage,
    pub seconds: f64,
    pub judged: Vec<JudgedPair>,
}

/// The shipped support pairs and the turned pairs, each marked whether it is a turned pair.
pub fn all_pairs() -> Vec<(SupportPair, bool)> {
    support_pairs()
        .into_iter()
        .map(|p| (p, false))
        .chain(turned_pairs().into_iter().map(|p| (p, true)))
        .collect()
}

/// Scores `pairs` (each marked whether it is a turned pair) with the embedding matcher and
/// the judge, and calibrates the judge.
pub fn calibrate_support_judge(
    llm: &dyn Llm,
    embedder: &dyn Embedder,
    pairs: &[(SupportPair, bool)],
    progress: &dyn rudder::history::Progress,
) -> Result<SupportJudgeReport, EvalError> {
    let started = std::time::Instant::now();
    let plain: Vec<SupportPair> = pairs.iter().map(|(p, _)| p.clone()).collect();
    let embedding_threshold = rudder::checks::SUPPORT_THRESHOLD;
    let embedding = SupportMatcher::new(embedder, embedding_threshold).score_pairs(&plain)?;

    // In chunks, so progress shows; pairs of one passage are adjacent, so the model reads a
    // passage's prefix once per chunk.
    let mut usage = Usage::default();
    let mut probabilities = Vec::with_capacity(plain.len());
    let width = llm.parallelism().max(1);
    for chunk in plain.chunks(width * 4) {
        let asked: Vec<(&str, &str)> = chunk
            .iter()
            .map(|p| (p.passage.as_str(), p.sentence.as_str()))
            .collect();
        let (ps, cost) =
            rudder::checks::judge::judge_pairs(llm, &asked).map_err(|e| EvalError::Run {
                case: "support pairs".into(),
                system: "support judge".into(),
                message: e.to_string(),
            })?;
        usage += cost;
        probabilities.extend(ps);
        progress.note(&format!(
            "support judge: {}/{} pairs scored",
            probabilities.len(),
            plain.len()
        ));
    }

    let judged: Vec<JudgedPair> = pairs
        .iter()
        .cloned()
        .zip(embedding)
        .zip(probabilities)
        .map(|(((pair, turned), e), probability)| JudgedPair {
            pair,
            turned,
            embedding: e.combined,
            probability,
        })
        .collect();
    let by_probability = |subset: &[&JudgedPair]| -> Vec<ScoredPair> {
        scored_pairs(
            subset
                .iter()
                .map(|j| (j.pair.group.as_str(), j.pair.supported)),
            subset.iter().map(|j| j.probability),
        )
    };
    let all: Vec<&JudgedPair> = judged.iter().collect();
    let calibration = calibrate(&by_probability(&all));
    let auc = area_under_roc(judged.iter().map(|j| (j.probability, j.pair.supported)));
    let judge_threshold = calibration.threshold;
    let checks = vec![
        figures("embedding alone", &judged, |j| {
            j.embedding >= embedding_threshold
        }),
        figures("judge alone", &judged, |j| j.probability >= judge_threshold),
        figures("both (as the report checks)", &judged, |j| {
            j.embedding >= embedding_threshold && j.probability >= judge_threshold
        }),
    ];
    Ok(SupportJudgeReport {
        model: llm.model_name().to_string(),
        pairs: judged.len(),
        positives: judged.iter().filter(|j| j.pair.supported).count(),
        calibration,
        auc,
        embedding_threshold,
        checks,
        usage,
        seconds: started.elapsed().as_secs_f64(),
        judged,
    })
}

/// Precision and recall of `accepts` on all pairs and on the turned pairs.
fn figures(
    name: &str,
    judged: &[JudgedPair],
    accepts: impl Fn(&JudgedPair) -> bool,
) -> CheckFigures {
    let as_scored = |subset: Vec<&JudgedPair>| -> Vec<ScoredPair> {
        subset
            .into_iter()
            .map(|j| ScoredPair {
                group: j.pair.group.clone(),
                score: if accepts(j) { 1.0 } else { 0.0 },
                label: j.pair.supported,
            })
            .collect()
    };
    let all = as_scored(judged.iter().collect());
    let turned_pairs = as_scored(judged.iter().filter(|j| j.turned).collect());
    let refs = |v: &[ScoredPair]| -> Prf { prf(&v.iter().collect::<Vec<_>>(), 1.0) };
    let turned: Vec<&JudgedPair> = judged
        .iter()
        .filter(|j| j.turned && !j.pair.supported)
        .collect();
    CheckFigures {
        name: name.to_string(),
        all: refs(&all),
        turned_pairs: refs(&turned_pairs),
        turned_passed: turned.iter().filter(|j| accepts(j)).count(),
        turned_sentences: turned.len(),
    }
}

/// The report as Markdown: the judge's calibration, the three checks, then the worst mistakes.
pub fn markdown(r: &SupportJudgeReport) -> String {
    use std::fmt::Write;
    let c = &r.calibration;
    let mut out = format!(
        "# Support judge — model {}\n\n{} pairs ({} supported); judge threshold {:.3} on P(yes) \
         (AUC {:.3}), embedding threshold {:.3}\n\n\
         | judge | half | precision | recall | F1 | pairs |\n|---|---|---|---|---|---|\n",
        r.model, r.pairs, r.positives, c.threshold, r.auc, r.embedding_threshold
    );
    for (half, m) in [("calibration", &c.calibration), ("held out", &c.held_out)] {
        let _ = writeln!(
            out,
            "| P(yes) | {half} | {:.2} | {:.2} | {:.2} | {} |",
            m.precision, m.recall, m.f1, m.pairs
        );
    }
    out.push_str(
        "\n| check | precision | recall | F1 | turned pairs: precision | recall | turned sentences let through |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for f in &r.checks {
        let _ = writeln!(
            out,
            "| {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {} of {} |",
            f.name,
            f.all.precision,
            f.all.recall,
            f.all.f1,
            f.turned_pairs.precision,
            f.turned_pairs.recall,
            f.turned_passed,
            f.turned_sentences
        );
    }
    out.push_str(&crate::matchers::cost_line(&r.usage, r.seconds));
    let wrong = crate::matchers::confident_mistakes(
        &r.judged,
        |j| j.probability,
        |j| j.pair.supported,
        c.threshold,
        20,
    );
    out.push_str(
        "## The judge's mistakes, most confident first\n\n\
         | P(yes) | embedding | label | sentence |\n|---|---|---|---|\n",
    );
    for j in wrong {
        let _ = writeln!(
            out,
            "| {:.2} | {:.2} | {} | {} |",
            j.probability,
            j.embedding,
            if j.pair.supported { "supported" } else { "not" },
            j.pair.sentence.replace('|', "/")
        );
    }
    out
}

/// Writes `table.md` and `records.json` under `out`.
pub fn write(out: &Path, report: &SupportJudgeReport) -> Result<(), EvalError> {
    crate::write_table_and_records(out, &markdown(report), report)
}
