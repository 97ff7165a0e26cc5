//! Reciprocal rank fusion (Cormack et al. 2009): `score = Σ 1 / (k + rank)` over the lists an
//! item appears in.
//!
//! Fusing ranks needs no calibration between retrievers, which matters because BM25 scores are
//! unbounded and cosine similarities crowd together; an item found by several lists rises above
//! one found by any of them alone. Hybrid search (BM25 + vectors), query expansions and the
//! research sources all fuse through this one function, so they break ties the same way.

use std::collections::HashMap;
use std::hash::Hash;

/// The constant `k`: 60, as in the paper. Larger values flatten the advantage of the top ranks.
pub const RRF_K: f32 = 60.0;

/// Fuses ranked lists (best first) into one, best first, at most `limit` long, each item with
/// its fused score. An item repeated within a list counts at each of its ranks.
///
/// Ties keep the item seen first, reading the lists in the order given and each from its top.
/// Callers therefore pass their primary list first (BM25 before vectors, the raw query before
/// its expansions, sources in the order the user configured), and the result depends only on
/// the inputs, never on hashing or on how ids happen to be numbered.
pub fn reciprocal_rank_fusion<T: Clone + Eq + Hash>(lists: &[&[T]], limit: usize) -> Vec<(T, f32)> {
    // (item, score), in first-seen order; `at` finds an item's slot.
    let mut fused: Vec<(T, f32)> = Vec::new();
    let mut at: HashMap<&T, usize> = HashMap::new();
    for list in lists {
        for (rank, item) in list.iter().enumerate() {
            let add = 1.0 / (RRF_K + rank as f32 + 1.0);
            match at.get(item) {
                Some(&i) => fused[i].1 += add,
                None => {
                    at.insert(item, fused.len());
                    fused.push((item.clone(), add));
                }
            }
        }
    }
    // A stable sort keeps first-seen order among equal scores.
    fused.sort_by(|a, b| b.1.total_cmp(&a.1));
    fused.truncate(limit);
    fused
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fusion_rewards_agreement() {
        let fused = reciprocal_rank_fusion(&[&[1, 2, 3], &[3, 4, 1]], 10);
        let order: Vec<i64> = fused.iter().map(|h| h.0).collect();
        // 1 is first and third; 3 is third and first: tie, 1 was seen first. Both beat 2 and 4.
        assert_eq!(order, vec![1, 3, 2, 4]);
        assert_eq!(reciprocal_rank_fusion(&[&[5, 6]], 1).len(), 1);
        let fused = reciprocal_rank_fusion(&[&[1, 2, 3], &[3, 4]], 10);
        let order: Vec<i64> = fused.iter().map(|h| h.0).collect();
        assert_eq!(order, vec![3, 1, 2, 4]);
    }

    #[test]
    fn ties_keep_first_seen_order_not_id_order() {
        // 9 and 2 are both second in one list only: the earlier list's wins.
        let fused = reciprocal_rank_fusion(&[&[7, 9], &[8, 2]], 10);
        let order: Vec<i64> = fused.iter().map(|h| h.0).collect();
        assert_eq!(order, vec![7, 8, 9, 2]);
        let scores: Vec<f32> = fused.iter().map(|h| h.1).collect();
        assert_eq!(scores[0], 1.0 / 61.0);
        assert_eq!(scores[2], 1.0 / 62.0);
    }

    #[test]
    fn works_on_any_key() {
        let a = ["doc:a".to_string(), "web:b".to_string()];
        let b = ["web:b".to_string()];
        let fused = reciprocal_rank_fusion(&[&a, &b], 1);
        assert_eq!(fused[0].0, "web:b");
        assert!(reciprocal_rank_fusion::<i64>(&[], 5).is_empty());
    }
}
