//! The pause rule (STEER §2.4, Appendix D): ask the user iff the expected gain of letting them
//! prune the frontier's candidates exceeds the cost of interrupting them.
//!
//! * radius `r_k = (1 − conf_k)(max U − min U)`;
//! * could-be-best set `S = {k : U_k + r_k ≥ max_i (U_i − r_i)}`;
//! * gain `ΔEV = Σ_{k∉S} (C_exec(k) − U_k)`;
//! * cost `C = C0 · (1 + pauses_j / Tol_j)`, `Tol_j = Tol / K'`;
//! * ask iff `ΔEV > C`.

use serde::{Deserialize, Serialize};

/// What the rule needs to know about one candidate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CandidateValue {
    pub utility: f32,
    /// The planner's confidence in [0, 1].
    pub confidence: f32,
    /// Normalised execution cost in [0, 1).
    pub execution_cost: f32,
}

/// The user's tolerance for interruptions.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PauseSettings {
    /// Base pause cost `C0` in [0, 1]: higher means fewer questions.
    pub base_cost: f32,
    /// Tolerance budget `Tol`: roughly how many questions the user accepts in a session.
    pub tolerance: f32,
    /// Ask at every frontier that has directions to choose from, whatever the rule says (for
    /// a user who wants to pick every branch; the rule is still computed and shown).
    #[serde(default)]
    pub always: bool,
}

impl Default for PauseSettings {
    fn default() -> Self {
        Self {
            base_cost: 0.7,
            tolerance: 3.0,
            always: false,
        }
    }
}

/// One decision with every number behind it, so the user can see why it asked or went on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct PauseDecision {
    /// `U_k` per candidate.
    pub utilities: Vec<f32>,
    /// `r_k` per candidate.
    pub radii: Vec<f32>,
    /// `C_exec(k)` per candidate.
    pub execution_costs: Vec<f32>,
    /// Indices (0-based) of the could-be-best set `S`.
    pub could_be_best: Vec<usize>,
    /// `ΔEV`.
    pub gain: f32,
    /// `C`.
    pub cost: f32,
    /// `pauses_j`: earlier pauses in this node's top-level direction.
    pub direction_pauses: u32,
    /// `Tol_j`.
    pub direction_tolerance: f32,
    /// Whether to ask: `ΔEV > C`, or the user asked to be asked at every branch.
    pub ask: bool,
    /// Asked only because of [`PauseSettings::always`]: the rule alone would have gone on.
    #[serde(default)]
    pub forced: bool,
}

impl PauseDecision {
    /// One line for logs and the terminal: `ask: ΔEV 0.84 > C 0.70 (S = {1, 2})`.
    pub fn explain(&self) -> String {
        let s: Vec<String> = self
            .could_be_best
            .iter()
            .map(|i| (i + 1).to_string())
            .collect();
        let by_rule = self.ask && !self.forced;
        format!(
            "{}: ΔEV {:.2} {} C {:.2} (S = {{{}}}, pauses here {} of tolerance {:.1})",
            if self.forced {
                "ask (every branch, by setting)"
            } else if self.ask {
                "ask"
            } else {
                "go on"
            },
            self.gain,
            if by_rule { ">" } else { "≤" },
            self.cost,
            s.join(", "),
            self.direction_pauses,
            self.direction_tolerance,
        )
    }
}

/// The could-be-best set: candidates whose upper bound reaches the leader's lower bound.
pub fn could_be_best(values: &[CandidateValue]) -> (Vec<f32>, Vec<usize>) {
    if values.is_empty() {
        return (Vec::new(), Vec::new());
    }
    let max_u = values.iter().map(|v| v.utility).fold(f32::MIN, f32::max);
    let min_u = values.iter().map(|v| v.utility).fold(f32::MAX, f32::min);
    let spread = max_u - min_u;
    let radii: Vec<f32> = values
        .iter()
        .map(|v| (1.0 - v.confidence.clamp(0.0, 1.0)) * spread)
        .collect();
    let best_lower = values
        .iter()
        .zip(&radii)
        .map(|(v, r)| v.utility - r)
        .fold(f32::MIN, f32::max);
    // A tiny tolerance so the leader itself is never excluded by rounding.
    let set = values
        .iter()
        .zip(&radii)
        .enumerate()
        .filter(|(_, (v, r))| v.utility + *r >= best_lower - 1e-6)
        .map(|(i, _)| i)
        .collect();
    (radii, set)
}

/// The pause cost `C0 · (1 + pauses_j / Tol_j)` with `Tol_j = Tol / K'`.
pub fn pause_cost(
    settings: &PauseSettings,
    direction_pauses: u32,
    active_directions: u32,
) -> (f32, f32) {
    let tol_j = settings.tolerance / active_directions.max(1) as f32;
    let cost = if tol_j > 0.0 {
        settings.base_cost * (1.0 + direction_pauses as f32 / tol_j)
    } else {
        // No tolerance at all: any earlier pause makes asking again unaffordable.
        if direction_pauses == 0 {
            settings.base_cost
        } else {
            f32::INFINITY
        }
    };
    (cost, tol_j)
}

/// Applies the rule at one frontier node.
pub fn decide(
    values: &[CandidateValue],
    settings: &PauseSettings,
    direction_pauses: u32,
    active_directions: u32,
) -> PauseDecision {
    let (radii, set) = could_be_best(values);
    let gain: f32 = values
        .iter()
        .enumerate()
        .filter(|(i, _)| !set.contains(i))
        .map(|(_, v)| v.execution_cost - v.utility)
        .sum::<f32>()
        // An empty sum of f32 is −0.0, which would show as "ΔEV -0.00".
        + 0.0;
    let (cost, tol_j) = pause_cost(settings, direction_pauses, active_directions);
    PauseDecision {
        utilities: values.iter().map(|v| v.utility).collect(),
        radii,
        execution_costs: values.iter().map(|v| v.execution_cost).collect(),
        could_be_best: set,
        gain,
        cost,
        direction_pauses,
        direction_tolerance: tol_j,
        ask: gain > cost || (settings.always && !values.is_empty()),
        forced: settings.always && !values.is_empty() && gain <= cost,
    }
}
