//! STEER's formulas against values computed by hand.

use rudder::research::mmr;
use rudder::research::pause::{self, CandidateValue, PauseSettings};
use rudder::research::utility::{self, TagCounts};

fn close(a: f32, b: f32) -> bool {
    (a - b).abs() < 1e-5
}

#[test]
fn execution_cost_for_breadth_3_depth_3() {
    // d_rem = 2: N = (3^3 − 1)/2 = 13 → 13/14; d_rem = 1: N = 4 → 4/5; d_rem = 0: N = 1 → 1/2.
    assert!(close(utility::execution_cost(3, 3, 1), 13.0 / 14.0));
    assert!(close(utility::execution_cost(3, 3, 2), 0.8));
    assert!(close(utility::execution_cost(3, 3, 3), 0.5));
    // K = 1: N = d_rem + 1.
    assert!(close(utility::execution_cost(3, 1, 1), 0.75));
    assert_eq!(utility::remaining_nodes(3, 2), 13.0);
    assert_eq!(utility::remaining_nodes(1, 2), 3.0);
}

#[test]
fn could_be_best_set_filters_by_bounds() {
    // U = [1.0, 0.8, 0.2], conf = [0.9, 0.5, 0.9]; spread 0.8 → r = [0.08, 0.4, 0.08];
    // lower bounds [0.92, 0.4, 0.12], best 0.92; upper bounds [1.08, 1.2, 0.28] → S = {0, 1}.
    let v = |u, c| CandidateValue {
        utility: u,
        confidence: c,
        execution_cost: 0.8,
    };
    let values = [v(1.0, 0.9), v(0.8, 0.5), v(0.2, 0.9)];
    let (radii, s) = pause::could_be_best(&values);
    assert!(close(radii[0], 0.08) && close(radii[1], 0.4) && close(radii[2], 0.08));
    assert_eq!(s, vec![0, 1]);
    // ΔEV = C_exec − U of the pruned candidate = 0.8 − 0.2 = 0.6.
    let settings = PauseSettings {
        base_cost: 0.5,
        tolerance: 3.0,
        ..PauseSettings::default()
    };
    let d = pause::decide(&values, &settings, 0, 3);
    assert!(close(d.gain, 0.6));
    assert!(close(d.cost, 0.5));
    assert!(d.ask);
    // Full confidence everywhere shrinks every radius to 0: only the leader survives.
    let sure = [v(1.0, 1.0), v(0.8, 1.0), v(0.2, 1.0)];
    assert_eq!(pause::could_be_best(&sure).1, vec![0]);
    // No confidence: every candidate could be best, nothing is pruned, nothing gained.
    let unsure = [v(1.0, 0.0), v(0.8, 0.0), v(0.2, 0.0)];
    assert_eq!(pause::could_be_best(&unsure).1, vec![0, 1, 2]);
    assert_eq!(pause::decide(&unsure, &settings, 0, 3).gain, 0.0);
    assert!(!pause::decide(&unsure, &settings, 0, 3).ask);
    // Asking at every branch overrides the rule, and says so; the numbers stay the rule's.
    let always = PauseSettings {
        always: true,
        ..settings
    };
    let d = pause::decide(&unsure, &always, 0, 3);
    assert!(d.ask && d.forced);
    assert_eq!(d.gain, 0.0);
    let why = d.explain();
    assert!(
        why.starts_with("ask (every branch, by setting): ΔEV 0.00 ≤ C 0.50"),
        "{why}"
    );
    // Where the rule asks anyway, it is not forced; with nothing to choose, nobody is asked.
    let d = pause::decide(&values, &always, 0, 3);
    assert!(d.ask && !d.forced);
    assert!(!pause::decide(&[], &always, 0, 3).ask);
}

#[test]
fn pause_cost_grows_with_pauses_per_direction() {
    let s = PauseSettings {
        base_cost: 0.5,
        tolerance: 3.0,
        ..PauseSettings::default()
    };
    // K' = 3 → Tol_j = 1: C = 0.5 · (1 + p).
    assert!(close(pause::pause_cost(&s, 0, 3).0, 0.5));
    assert!(close(pause::pause_cost(&s, 1, 3).0, 1.0));
    assert!(close(pause::pause_cost(&s, 2, 3).0, 1.5));
    // K' = 1 → Tol_j = 3: C = 0.5 · (1 + p/3).
    let (c, tol) = pause::pause_cost(&s, 3, 1);
    assert!(close(tol, 3.0) && close(c, 1.0));
    // The same gain is asked about before and not after a pause in that direction.
    let v = |u, c| CandidateValue {
        utility: u,
        confidence: c,
        execution_cost: 0.8,
    };
    let values = [v(1.0, 0.9), v(0.8, 0.5), v(0.2, 0.9)];
    assert!(pause::decide(&values, &s, 0, 3).ask);
    assert!(!pause::decide(&values, &s, 1, 3).ask);
}

#[test]
fn explore_decays_with_use() {
    let mut counts = TagCounts::default();
    let tags = vec!["Brewing".to_string()];
    assert!(close(utility::explore(&tags, &counts, 1.0), 1.0));
    counts.record(["brewing"]);
    assert!(close(utility::explore(&tags, &counts, 1.0), 0.5));
    for _ in 0..3 {
        counts.record(["BREWING"]);
    }
    // count 4 → 1/(1 + 2).
    assert!(close(utility::explore(&tags, &counts, 1.0), 1.0 / 3.0));
    // Mean over tags: one fresh (1.0), one used four times (1/3).
    let two = vec!["brewing".to_string(), "history".to_string()];
    assert!(close(
        utility::explore(&two, &counts, 1.0),
        (1.0 + 1.0 / 3.0) / 2.0
    ));
    // ε scales the bonus.
    assert!(close(utility::explore(&tags, &counts, 0.3), 0.1));
}

#[test]
fn info_gain_edge_cases() {
    let a = vec![1.0, 0.0];
    let b = vec![0.0, 1.0];
    let opposite = vec![-1.0, 0.0];
    // Nothing found by the peek: no gain.
    assert_eq!(utility::info_gain(None, Some(&a)), 0.0);
    assert_eq!(utility::info_gain(None, None), 0.0);
    // Nothing learned yet: everything is new.
    assert_eq!(utility::info_gain(Some(&a), None), 1.0);
    // Same direction as the centroid: nothing new; orthogonal: all new; opposite: clamped.
    assert!(close(utility::info_gain(Some(&a), Some(&a)), 0.0));
    assert!(close(utility::info_gain(Some(&a), Some(&b)), 1.0));
    assert!(close(utility::info_gain(Some(&a), Some(&opposite)), 1.0));
    let mean = utility::mean_vector(&[a.clone(), b.clone()]).unwrap();
    assert!(close(mean[0], 0.5) && close(mean[1], 0.5));
    assert!(utility::mean_vector(&[]).is_none());
}

#[test]
fn utility_combines_the_terms() {
    let w = utility::UtilityWeights::default();
    let u = utility::Utility::new(0.75, 0.25, 0.5, 0.4, &w);
    assert!(close(u.delta_align, 0.5));
    assert!(close(u.total, 0.5 + 0.25 + 0.2));
    assert!(close(utility::alignment(&[2, 1, 0, 1]), 0.5));
}

#[test]
fn mmr_prefers_diverse_candidates_over_near_duplicates() {
    // 0 and 1 are near-duplicates; 2 and 3 point elsewhere.
    let e = vec![
        vec![1.0, 0.0, 0.0],
        vec![0.99, 0.14, 0.0],
        vec![0.0, 1.0, 0.0],
        vec![0.0, 0.0, 1.0],
    ];
    let conf = [0.9, 0.85, 0.5, 0.4];
    let picked = mmr::select(&conf, &e, 3, 0.0);
    assert_eq!(picked[0], 0, "the most confident goes first");
    assert!(
        !picked.contains(&1),
        "the near-duplicate is skipped: {picked:?}"
    );
    assert_eq!(picked.len(), 3);
    // Asking for all of them still returns each once.
    let mut all = mmr::select(&conf, &e, 10, 0.0);
    all.sort();
    assert_eq!(all, vec![0, 1, 2, 3]);
    // With all weight on confidence, MMR is plain top-k.
    assert_eq!(mmr::select(&conf, &e, 2, 1.0), vec![0, 1]);
}
