//! Branch utility (STEER §2.4, Appendix D): how much a candidate direction is worth before it is
//! researched, from three terms each in [0, 1], and what executing it would cost.
//!
//! `U(k) = ΔAlign(k) + λ_exp·Explore(k) + λ_info·InfoGain(k)`.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::embed::cosine;

/// Alignment of a text with the persona's checklist: the mean over items of `score / 2`, with
/// each score in {0, 1, 2} (0 not addressed, 1 partly, 2 well). An empty checklist aligns 0.
pub fn alignment(scores: &[u8]) -> f32 {
    if scores.is_empty() {
        return 0.0;
    }
    scores
        .iter()
        .map(|&s| f32::from(s.min(2)) / 2.0)
        .sum::<f32>()
        / scores.len() as f32
}

/// Predicted alignment gain of a candidate over its parent, kept in [0, 1]: a direction that
/// would align worse than what the parent already found gains nothing (rather than a negative
/// utility, which the pause rule's [0, 1] scale does not allow).
pub fn delta_align(candidate: f32, parent: f32) -> f32 {
    (candidate - parent).clamp(0.0, 1.0)
}

/// How often each facet tag has been researched so far. Tags are compared case-insensitively
/// with their whitespace collapsed, so "Side Effects" and "side  effects" are one facet.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TagCounts {
    counts: HashMap<String, u32>,
}

impl TagCounts {
    pub fn normalize(tag: &str) -> String {
        tag.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase()
    }

    pub fn count(&self, tag: &str) -> u32 {
        self.counts.get(&Self::normalize(tag)).copied().unwrap_or(0)
    }

    /// Records one more use of each distinct tag.
    pub fn record<'a>(&mut self, tags: impl IntoIterator<Item = &'a str>) {
        let mut seen = std::collections::HashSet::new();
        for tag in tags {
            let t = Self::normalize(tag);
            if !t.is_empty() && seen.insert(t.clone()) {
                *self.counts.entry(t).or_insert(0) += 1;
            }
        }
    }

    /// All tags seen so far, most used first (ties by name), for the planning prompt.
    pub fn seen(&self) -> Vec<String> {
        let mut tags: Vec<(&String, &u32)> = self.counts.iter().collect();
        tags.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        tags.into_iter().map(|(t, _)| t.clone()).collect()
    }
}

/// Exploration bonus (UCB-style): the mean over the candidate's tags of `ε / (1 + √count)`.
/// An untagged candidate is treated as wholly unexplored (`ε`). With `ε = 1` the term is in
/// [0, 1].
pub fn explore(tags: &[String], counts: &TagCounts, epsilon: f32) -> f32 {
    if tags.is_empty() {
        return epsilon.clamp(0.0, 1.0);
    }
    let sum: f32 = tags
        .iter()
        .map(|t| epsilon / (1.0 + (counts.count(t) as f32).sqrt()))
        .sum();
    (sum / tags.len() as f32).clamp(0.0, 1.0)
}

/// Information gain: `1 − cos(e_k, μ)` where `e_k` is the mean embedding of the candidate's
/// expected evidence and `μ` the centroid of all learnings so far; 1 when nothing has been
/// learned yet, 0 when the peek found no evidence. Clamped to [0, 1].
pub fn info_gain(evidence_mean: Option<&[f32]>, learning_centroid: Option<&[f32]>) -> f32 {
    match (evidence_mean, learning_centroid) {
        (None, _) => 0.0,
        (Some(_), None) => 1.0,
        (Some(e), Some(mu)) => (1.0 - cosine(e, mu)).clamp(0.0, 1.0),
    }
}

/// The mean of some vectors, or `None` when there are none.
pub fn mean_vector(vectors: &[Vec<f32>]) -> Option<Vec<f32>> {
    let first = vectors.first()?;
    let mut sum = vec![0.0f32; first.len()];
    for v in vectors {
        for (s, x) in sum.iter_mut().zip(v) {
            *s += x;
        }
    }
    let n = vectors.len() as f32;
    sum.iter_mut().for_each(|s| *s /= n);
    Some(sum)
}

/// Nodes in a saturated K-ary subtree of `d_rem` more levels below (and including) a node:
/// `(K^(d_rem+1) − 1)/(K − 1)`, or `d_rem + 1` when K = 1.
pub fn remaining_nodes(breadth: u32, d_rem: u32) -> f64 {
    if breadth <= 1 {
        f64::from(d_rem) + 1.0
    } else {
        let k = f64::from(breadth);
        (k.powi(d_rem as i32 + 1) - 1.0) / (k - 1.0)
    }
}

/// Normalised execution cost of expanding a child at `child_depth` in a tree of depth `depth`
/// and breadth `breadth`: `N_rem / (N_rem + 1)` (tokens of its saturated subtree relative to one
/// more node, so the per-node token average cancels).
pub fn execution_cost(depth: u32, breadth: u32, child_depth: u32) -> f32 {
    let d_rem = depth.saturating_sub(child_depth);
    let n = remaining_nodes(breadth, d_rem);
    (n / (n + 1.0)) as f32
}

/// The weights of the utility terms.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct UtilityWeights {
    pub lambda_explore: f32,
    pub lambda_info: f32,
    /// ε of the exploration bonus.
    pub explore_epsilon: f32,
}

impl Default for UtilityWeights {
    fn default() -> Self {
        Self {
            lambda_explore: 0.5,
            lambda_info: 0.5,
            explore_epsilon: 1.0,
        }
    }
}

/// One candidate's utility with its terms, as logged.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Utility {
    pub alignment: f32,
    pub delta_align: f32,
    pub explore: f32,
    pub info_gain: f32,
    /// `ΔAlign + λ_exp·Explore + λ_info·InfoGain`.
    pub total: f32,
}

impl Utility {
    pub fn new(
        alignment: f32,
        parent_alignment: f32,
        explore: f32,
        info_gain: f32,
        w: &UtilityWeights,
    ) -> Self {
        let delta_align = delta_align(alignment, parent_alignment);
        Self {
            alignment,
            delta_align,
            explore,
            info_gain,
            total: delta_align + w.lambda_explore * explore + w.lambda_info * info_gain,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alignment_is_mean_half_score() {
        assert_eq!(alignment(&[]), 0.0);
        assert!((alignment(&[2, 1, 0, 2]) - 0.625).abs() < 1e-6);
        assert_eq!(alignment(&[2, 2]), 1.0);
    }

    #[test]
    fn delta_align_is_clamped() {
        assert!((delta_align(0.75, 0.25) - 0.5).abs() < 1e-6);
        assert_eq!(delta_align(0.25, 0.75), 0.0);
    }
}
