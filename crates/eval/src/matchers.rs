//! The matchers' labelled pairs and their calibration. The matchers themselves live in the
//! library ([`rudder::checks::matchers`]), where the research loop uses them too.
//!
//!
//! # Calibration
//!
//! [`calibrate`] splits scored pairs by group (a passage, a need), so no group is in both
//! halves: distinct groups are sorted by a stable hash (FNV-1a) of their name and alternately
//! assigned to the calibration and the held-out half, which puts half the groups (and about
//! half the pairs) in each. On the calibration half it picks the cut-off score maximising F1
//! (ties: the higher cut-off); the threshold is the midpoint between that score and the next
//! lower one, so a pair matches when `score >= threshold`. It reports precision, recall and F1
//! at that threshold on both halves.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::EvalError;
pub use rudder::checks::matchers::{
    Need, NeedMatcher, NeedPair, NeedScore, SupportMatcher, SupportPair, SupportScore,
    COVERAGE_WEIGHT, MISSING_NUMBER_FACTOR, SPECIFIC_WORD_WEIGHT,
};
use rudder::embed::Embedder;

/// The labelled support pairs, written for this crate (`data/support_pairs.jsonl`).
const SUPPORT_PAIRS: &str = include_str!("../data/support_pairs.jsonl");

/// Profile statements labelled against the planted needs (`data/profile_need_pairs.jsonl`).
const PROFILE_NEED_PAIRS: &str = include_str!("../data/profile_need_pairs.jsonl");

// ---------------------------------------------------------------------------------------------
// Pairs and their files

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScoredPair {
    pub group: String,
    pub score: f32,
    pub label: bool,
}

/// The support pairs shipped with the crate: ≥ 200 pairs over ≥ 45 original passages.
pub fn support_pairs() -> Vec<SupportPair> {
    parse_jsonl(SUPPORT_PAIRS, Path::new("data/support_pairs.jsonl"))
        .expect("data/support_pairs.jsonl is checked by the crate's tests")
}

/// The profile-statement need pairs shipped with the crate: ≥ 200 pairs, statements in the
/// forms profiles take, written for the file and taken from real profiles of the planted users.
pub fn profile_need_pairs() -> Vec<NeedPair> {
    parse_jsonl(
        PROFILE_NEED_PAIRS,
        Path::new("data/profile_need_pairs.jsonl"),
    )
    .expect("data/profile_need_pairs.jsonl is checked by the crate's tests")
}

/// Reads need pairs from a JSON Lines file (blank lines and `//` lines are skipped).
pub fn read_need_pairs(path: &Path) -> Result<Vec<NeedPair>, EvalError> {
    let text = std::fs::read_to_string(path).map_err(|e| EvalError::io(path, e))?;
    parse_jsonl(&text, path)
}

pub(crate) fn parse_jsonl<T: serde::de::DeserializeOwned>(
    text: &str,
    path: &Path,
) -> Result<Vec<T>, EvalError> {
    let mut out = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with("//") {
            continue;
        }
        let item = serde_json::from_str(line).map_err(|e| EvalError::BadCase {
            path: path.to_path_buf(),
            line: index + 1,
            message: e.to_string(),
        })?;
        out.push(item);
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Calibration

/// Precision, recall and F1 of a threshold on a set of pairs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Prf {
    /// Matched pairs that are labelled positive; 0 when nothing matched.
    pub precision: f32,
    pub recall: f32,
    pub f1: f32,
    pub pairs: usize,
    /// Pairs labelled positive.
    pub positives: usize,
}

/// A threshold chosen on one half of the groups, and how it does on both halves.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    pub threshold: f32,
    pub calibration: Prf,
    pub held_out: Prf,
}

/// Which half a group falls in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Half {
    Calibration,
    HeldOut,
}

/// Assigns each distinct group to a half: groups sorted by the FNV-1a hash of their name, then
/// alternately calibration and held out (so the halves differ by at most one group). The
/// assignment depends only on the set of group names.
pub fn split_groups<'g>(groups: impl IntoIterator<Item = &'g str>) -> HashMap<String, Half> {
    let distinct: BTreeSet<&str> = groups.into_iter().collect();
    let mut ordered: Vec<&str> = distinct.into_iter().collect();
    ordered.sort_by_key(|g| (fnv1a(g), *g));
    ordered
        .into_iter()
        .enumerate()
        .map(|(i, g)| {
            let half = if i % 2 == 0 {
                Half::Calibration
            } else {
                Half::HeldOut
            };
            (g.to_string(), half)
        })
        .collect()
}

/// The pairs of the calibration half and of the held-out half ([`split_groups`]).
fn halves(scored: &[ScoredPair]) -> (Vec<&ScoredPair>, Vec<&ScoredPair>) {
    let halves = split_groups(scored.iter().map(|s| s.group.as_str()));
    scored
        .iter()
        .partition(|s| halves[&s.group] == Half::Calibration)
}

/// Splits by group, picks the F1-maximising threshold on the calibration half and measures
/// it on both halves (see the module doc).
pub fn calibrate(scored: &[ScoredPair]) -> Calibration {
    let (calibration, held_out) = halves(scored);
    let threshold = best_threshold(&calibration);
    Calibration {
        threshold,
        calibration: prf(&calibration, threshold),
        held_out: prf(&held_out, threshold),
    }
}

/// Like [`calibrate`], but the threshold is the lowest cut-off (most recall) whose precision
/// on the calibration half reaches `min_precision`; when none does, the F1 threshold. For a
/// matcher whose false positives flatter the system measured (a need "addressed" by a report
/// that knows nothing of its reader), precision comes first.
pub fn calibrate_for_precision(scored: &[ScoredPair], min_precision: f32) -> Calibration {
    let (calibration, held_out) = halves(scored);
    let mut scores: Vec<f32> = calibration.iter().map(|p| p.score).collect();
    scores.sort_by(|a, b| b.total_cmp(a));
    scores.dedup();
    // From the highest cut-off down, the last one still precise enough (recall only grows).
    let chosen = scores
        .iter()
        .enumerate()
        .filter(|(_, &cut)| {
            let m = prf(&calibration, cut);
            m.recall > 0.0 && m.precision >= min_precision
        })
        .map(|(i, _)| i)
        .next_back();
    let threshold = match chosen {
        Some(i) => match scores.get(i + 1) {
            Some(&next_lower) => (scores[i] + next_lower) / 2.0,
            None => scores[i],
        },
        None => best_threshold(&calibration),
    };
    Calibration {
        threshold,
        calibration: prf(&calibration, threshold),
        held_out: prf(&held_out, threshold),
    }
}

/// Like [`calibrate`], but the threshold is the highest cut-off whose recall on the
/// calibration half reaches `min_recall`: for a check whose false negatives lose something
/// the user should get (a finding of the research left out of the report), recall comes
/// first.
pub fn calibrate_for_recall(scored: &[ScoredPair], min_recall: f32) -> Calibration {
    let (calibration, held_out) = halves(scored);
    let mut scores: Vec<f32> = calibration.iter().map(|p| p.score).collect();
    scores.sort_by(|a, b| b.total_cmp(a));
    scores.dedup();
    // From the highest cut-off down, the first one that keeps enough (recall only grows);
    // the threshold sits halfway to the next lower score.
    let threshold = match scores
        .iter()
        .position(|&cut| prf(&calibration, cut).recall >= min_recall)
    {
        Some(i) => match scores.get(i + 1) {
            Some(&next_lower) => (scores[i] + next_lower) / 2.0,
            None => scores[i],
        },
        None => scores.last().copied().unwrap_or(0.5),
    };
    Calibration {
        threshold,
        calibration: prf(&calibration, threshold),
        held_out: prf(&held_out, threshold),
    }
}

/// Precision the need matcher is calibrated for ([`calibrate_need`]).
pub const NEED_MIN_PRECISION: f32 = 0.85;

/// The threshold maximising F1 on `pairs`: the midpoint between the best cut-off score (ties:
/// the higher) and the next lower score. No pairs: 0.5.
pub fn best_threshold(pairs: &[&ScoredPair]) -> f32 {
    let mut scores: Vec<f32> = pairs.iter().map(|p| p.score).collect();
    scores.sort_by(|a, b| b.total_cmp(a));
    scores.dedup();
    let Some(&lowest) = scores.last() else {
        return 0.5;
    };
    // Scanning from the highest cut-off down, a later cut-off wins only with a strictly higher
    // F1: ties keep the higher one.
    let mut best = (0, -1.0_f32);
    for (i, &cut) in scores.iter().enumerate() {
        let f1 = prf(pairs, cut).f1;
        if f1 > best.1 {
            best = (i, f1);
        }
    }
    match scores.get(best.0 + 1) {
        Some(&next_lower) => (scores[best.0] + next_lower) / 2.0,
        None => lowest,
    }
}

/// The chance that a positive scores above a negative (ties count half), from (score, label)
/// pairs; 0.5 when either kind is missing.
pub fn area_under_roc(scored: impl IntoIterator<Item = (f32, bool)>) -> f32 {
    let (mut positives, mut negatives) = (Vec::new(), Vec::new());
    for (score, label) in scored {
        if label {
            positives.push(score);
        } else {
            negatives.push(score);
        }
    }
    if positives.is_empty() || negatives.is_empty() {
        return 0.5;
    }
    let mut wins = 0.0;
    for p in &positives {
        for n in &negatives {
            wins += if p > n {
                1.0
            } else if p == n {
                0.5
            } else {
                0.0
            };
        }
    }
    wins / (positives.len() * negatives.len()) as f32
}

/// The items whose `score >= threshold` disagrees with their label, the farthest from the
/// threshold (the most confident) first, at most `n`.
pub fn confident_mistakes<T>(
    items: &[T],
    score: impl Fn(&T) -> f32,
    label: impl Fn(&T) -> bool,
    threshold: f32,
    n: usize,
) -> Vec<&T> {
    let mut wrong: Vec<&T> = items
        .iter()
        .filter(|i| (score(i) >= threshold) != label(i))
        .collect();
    wrong.sort_by(|a, b| {
        (score(b) - threshold)
            .abs()
            .total_cmp(&(score(a) - threshold).abs())
    });
    wrong.truncate(n);
    wrong
}

/// One way of scoring a judge's labelled pairs, calibrated.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ScoreFigures {
    pub name: String,
    pub calibration: Calibration,
    pub auc: f32,
}

/// The head and rows of a judge's calibration table: each score's threshold, AUC and figures
/// on both halves.
pub fn calibration_rows(scores: &[ScoreFigures]) -> String {
    use std::fmt::Write;
    let mut out = String::from(
        "| score | threshold | AUC | half | precision | recall | F1 | pairs |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    for s in scores {
        let c = &s.calibration;
        for (half, m) in [("calibration", &c.calibration), ("held out", &c.held_out)] {
            let _ = writeln!(
                out,
                "| {} | {:.3} | {:.3} | {half} | {:.2} | {:.2} | {:.2} | {} |",
                s.name, c.threshold, s.auc, m.precision, m.recall, m.f1, m.pairs
            );
        }
    }
    out
}

/// One scored pair as [`mistakes_table`] shows it: P(yes), bias and cosine, the label, what it
/// was judged for (a question, a need) and the finding.
pub struct JudgedPair<'a> {
    pub probability: f32,
    pub bias: f32,
    pub cosine: f32,
    pub bears: bool,
    pub subject: &'a str,
    pub finding: &'a str,
}

/// The 20 pairs whose P(yes) − bias at `threshold` disagrees most confidently with their label.
pub fn mistakes_table(pairs: &[JudgedPair<'_>], subject: &str, threshold: f32) -> String {
    use std::fmt::Write;
    let wrong = confident_mistakes(
        pairs,
        |p| p.probability - p.bias,
        |p| p.bears,
        threshold,
        20,
    );
    let mut out = format!(
        "## The judge's mistakes, most confident first\n\n\
         | P(yes) | bias | cosine | label | {subject} | finding |\n|---|---|---|---|---|---|\n"
    );
    for p in wrong {
        let _ = writeln!(
            out,
            "| {:.2} | {:.2} | {:.2} | {} | {} | {} |",
            p.probability,
            p.bias,
            p.cosine,
            if p.bears { "bears" } else { "not" },
            p.subject,
            p.finding
        );
    }
    out
}

/// The distinct `items`, in the order they first appear (a judge's questions, needs or
/// findings, so the calls that share a prefix run together).
pub fn distinct_in_order<'a>(items: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for item in items {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

/// A judge's calibration call that failed for `query`.
pub fn judge_error(judge: &str, query: &str, message: String) -> EvalError {
    EvalError::Run {
        case: query.to_string(),
        system: judge.to_string(),
        message,
    }
}

/// One line of what a calibration's calls cost.
pub fn cost_line(usage: &rudder::llm::Usage, seconds: f64) -> String {
    format!(
        "\n{} calls, {} prompt tokens ({} from the cache), {:.0} s\n\n",
        usage.calls, usage.prompt_tokens, usage.cached_tokens, seconds
    )
}

/// Precision, recall and F1 of `score >= threshold` against the labels.
pub fn prf(pairs: &[&ScoredPair], threshold: f32) -> Prf {
    let positives = pairs.iter().filter(|p| p.label).count();
    let matched = pairs.iter().filter(|p| p.score >= threshold).count();
    let true_positives = pairs
        .iter()
        .filter(|p| p.label && p.score >= threshold)
        .count();
    let ratio = |a: usize, b: usize| if b == 0 { 0.0 } else { a as f32 / b as f32 };
    let precision = ratio(true_positives, matched);
    let recall = ratio(true_positives, positives);
    let f1 = if precision + recall == 0.0 {
        0.0
    } else {
        2.0 * precision * recall / (precision + recall)
    };
    Prf {
        precision,
        recall,
        f1,
        pairs: pairs.len(),
        positives,
    }
}

/// FNV-1a: a hash that stays the same across builds and platforms.
fn fnv1a(text: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

/// Pairs with their scores, for [`calibrate`].
/// Scores `pairs` with a [`SupportMatcher`] and calibrates its threshold on them.
pub fn calibrate_support(
    embedder: &dyn Embedder,
    pairs: &[SupportPair],
) -> Result<Calibration, EvalError> {
    let scores = SupportMatcher::new(embedder, 0.0).score_pairs(pairs)?;
    Ok(calibrate(&scored_pairs(
        pairs.iter().map(|p| (p.group.as_str(), p.supported)),
        scores.iter().map(|s| s.combined),
    )))
}

/// Scores `pairs` with a [`NeedMatcher`] and calibrates its threshold on them for precision
/// ([`calibrate_for_precision`] at [`NEED_MIN_PRECISION`]).
pub fn calibrate_need(
    embedder: &dyn Embedder,
    pairs: &[NeedPair],
) -> Result<Calibration, EvalError> {
    calibrate_need_matcher(&NeedMatcher::new(embedder, 0.0), pairs)
}

/// Scores `pairs` with a profile-statement [`NeedMatcher::for_profiles`] and calibrates its
/// threshold for precision, as [`calibrate_need`] does for report sentences.
pub fn calibrate_profile_need(
    embedder: &dyn Embedder,
    pairs: &[NeedPair],
) -> Result<Calibration, EvalError> {
    calibrate_need_matcher(&NeedMatcher::for_profiles(embedder, 0.0), pairs)
}

fn calibrate_need_matcher(
    matcher: &NeedMatcher<'_>,
    pairs: &[NeedPair],
) -> Result<Calibration, EvalError> {
    let scores = matcher.score_pairs(pairs)?;
    Ok(calibrate_for_precision(
        &scored_pairs(
            pairs.iter().map(|p| (p.group.as_str(), p.addresses)),
            scores.iter().map(|s| s.combined),
        ),
        NEED_MIN_PRECISION,
    ))
}

pub fn scored_pairs<'p>(
    groups_and_labels: impl IntoIterator<Item = (&'p str, bool)>,
    scores: impl IntoIterator<Item = f32>,
) -> Vec<ScoredPair> {
    groups_and_labels
        .into_iter()
        .zip(scores)
        .map(|((group, label), score)| ScoredPair {
            group: group.to_string(),
            score,
            label,
        })
        .collect()
}
