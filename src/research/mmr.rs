//! Diversified subset selection by greedy Maximal Marginal Relevance (STEER §2.3, Appendix C).
//!
//! Candidates are ordered by confidence; the most confident is taken first, then each next pick
//! maximises `λ·conf − (1 − λ)·max_sim(selected)`. With `λ = 0` (the default, exactly Appendix
//! C) each pick is the candidate least similar to those already chosen, ties going to the more
//! confident one.

/// Indices of the `k` chosen candidates, in pick order. `confidences[i]` and `embeddings[i]`
/// describe candidate `i`; embeddings are compared by cosine.
pub fn select(confidences: &[f32], embeddings: &[Vec<f32>], k: usize, lambda: f32) -> Vec<usize> {
    let n = confidences.len().min(embeddings.len());
    let mut order: Vec<usize> = (0..n).collect();
    // Stable: equal confidences keep the planner's order.
    order.sort_by(|&a, &b| confidences[b].total_cmp(&confidences[a]));
    let mut chosen: Vec<usize> = Vec::with_capacity(k.min(n));
    while chosen.len() < k.min(n) {
        let next = if chosen.is_empty() {
            order[0]
        } else {
            let mut best: Option<(usize, f32)> = None;
            for &i in &order {
                if chosen.contains(&i) {
                    continue;
                }
                let max_sim = chosen
                    .iter()
                    .map(|&j| crate::embed::cosine(&embeddings[i], &embeddings[j]))
                    .fold(f32::MIN, f32::max);
                let score = lambda * confidences[i] - (1.0 - lambda) * max_sim;
                // Strictly greater: the first (more confident) candidate wins ties.
                if best.is_none_or(|(_, s)| score > s) {
                    best = Some((i, score));
                }
            }
            match best {
                Some((i, _)) => i,
                None => break,
            }
        };
        chosen.push(next);
    }
    chosen
}
