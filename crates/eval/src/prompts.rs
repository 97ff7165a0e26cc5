//! The evaluation's prompt templates: files in `crates/eval/prompts/`, embedded at build time
//! and rendered like the engine's (`rudder::prompts`).

use serde::Serialize;

/// (name, template source) for every evaluation prompt file.
const TEMPLATES: &[(&str, &str)] = &[
    (
        "eval_case_aspects",
        include_str!("../prompts/eval_case_aspects.md"),
    ),
    (
        "eval_case_history",
        include_str!("../prompts/eval_case_history.md"),
    ),
    (
        "eval_case_personality",
        include_str!("../prompts/eval_case_personality.md"),
    ),
    (
        "eval_case_profile",
        include_str!("../prompts/eval_case_profile.md"),
    ),
    (
        "eval_judge_alignment",
        include_str!("../prompts/eval_judge_alignment.md"),
    ),
    (
        "eval_judge_bespoke",
        include_str!("../prompts/eval_judge_bespoke.md"),
    ),
    (
        "eval_judge_checklist",
        include_str!("../prompts/eval_judge_checklist.md"),
    ),
    (
        "eval_judge_keypoint_map",
        include_str!("../prompts/eval_judge_keypoint_map.md"),
    ),
    (
        "eval_judge_keypoints",
        include_str!("../prompts/eval_judge_keypoints.md"),
    ),
    (
        "eval_user_clarify",
        include_str!("../prompts/eval_user_clarify.md"),
    ),
    (
        "eval_user_pause",
        include_str!("../prompts/eval_user_pause.md"),
    ),
];

/// Renders evaluation prompt `name` with `context`.
pub fn render<S: Serialize>(name: &str, context: S) -> rudder::Result<String> {
    Ok(rudder::prompts::render_from(TEMPLATES, name, context)?)
}
