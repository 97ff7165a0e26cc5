//! Prompt templates. Every prompt is a file in `prompts/` (the evaluation's are in
//! `crates/eval/prompts/`), embedded at build time and rendered with minijinja, so wording
//! changes never touch code.

use minijinja::Environment;
use serde::Serialize;

/// A prompt template that does not exist or does not render: a bug in `prompts/`, not in what
/// the user gave.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct PromptError(String);

type Result<T> = std::result::Result<T, PromptError>;

/// (name, template source) for every prompt file.
const TEMPLATES: &[(&str, &str)] = &[
    ("ask_system", include_str!("../prompts/ask_system.md")),
    (
        "profile_expand_cot",
        include_str!("../prompts/profile_expand_cot.md"),
    ),
    (
        "profile_expand_pseudo",
        include_str!("../prompts/profile_expand_pseudo.md"),
    ),
    (
        "profile_expand_facets",
        include_str!("../prompts/profile_expand_facets.md"),
    ),
    (
        "profile_extract",
        include_str!("../prompts/profile_extract.md"),
    ),
    ("profile_style", include_str!("../prompts/profile_style.md")),
    (
        "memory_extract",
        include_str!("../prompts/memory_extract.md"),
    ),
    (
        "profile_relevance",
        include_str!("../prompts/profile_relevance.md"),
    ),
    (
        "profile_relevance_said",
        include_str!("../prompts/profile_relevance_said.md"),
    ),
    (
        "profile_question_spends",
        include_str!("../prompts/profile_question_spends.md"),
    ),
    (
        "report_support",
        include_str!("../prompts/report_support.md"),
    ),
    (
        "report_finding",
        include_str!("../prompts/report_finding.md"),
    ),
    (
        "report_need_finding",
        include_str!("../prompts/report_need_finding.md"),
    ),
    (
        "profile_general",
        include_str!("../prompts/profile_general.md"),
    ),
    ("research_node", include_str!("../prompts/research_node.md")),
    (
        "research_node_retry",
        include_str!("../prompts/research_node_retry.md"),
    ),
    (
        "research_align",
        include_str!("../prompts/research_align.md"),
    ),
    (
        "research_pause_question",
        include_str!("../prompts/research_pause_question.md"),
    ),
    (
        "persona_checklist",
        include_str!("../prompts/persona_checklist.md"),
    ),
    (
        "persona_update",
        include_str!("../prompts/persona_update.md"),
    ),
    (
        "report_paragraph",
        include_str!("../prompts/report_paragraph.md"),
    ),
    ("report_need", include_str!("../prompts/report_need.md")),
    (
        "report_summary",
        include_str!("../prompts/report_summary.md"),
    ),
    (
        "report_heading",
        include_str!("../prompts/report_heading.md"),
    ),
    ("report_title", include_str!("../prompts/report_title.md")),
    ("translate", include_str!("../prompts/translate.md")),
    (
        "research_reflect",
        include_str!("../prompts/research_reflect.md"),
    ),
    (
        "clarify_question",
        include_str!("../prompts/clarify_question.md"),
    ),
    (
        "clarify_summary",
        include_str!("../prompts/clarify_summary.md"),
    ),
];

/// Renders prompt `name` with `context`.
pub fn render<S: Serialize>(name: &str, context: S) -> Result<String> {
    render_from(TEMPLATES, name, context)
}

/// Renders prompt `name` of `templates` ((name, source) pairs, named after their
/// `prompts/<name>.md` files) with `context`, as [`render`] does: strict about undefined
/// variables, trimmed. The evaluation crate keeps its own prompts this way.
pub fn render_from<S: Serialize>(
    templates: &[(&str, &str)],
    name: &str,
    context: S,
) -> Result<String> {
    let mut env = Environment::new();
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    for (template_name, source) in templates {
        env.add_template(template_name, source)
            .map_err(|e| PromptError(format!("prompts/{template_name}.md: {e}")))?;
    }
    let template = env
        .get_template(name)
        .map_err(|e| PromptError(format!("prompt `{name}`: {e}")))?;
    let text = template
        .render(context)
        .map_err(|e| PromptError(format!("prompts/{name}.md: {e}")))?;
    Ok(text.trim().to_string())
}

#[cfg(test)]
mod tests {
    /// The research prompts render with their full context, and say what they are for.
    #[test]
    fn research_templates_render() {
        let ctx = minijinja::context! {
            query => "best tent?", question => "which fabric?", persona => "A hiker.",
            checklist => "1. Weight", seen_tags => "(none yet)", directives => "",
            evidence => "[1] Tents", current_date => "2026-11-22", leaf => false,
            items => 1, findings => "-", candidates => "Candidate 1", count => 1,
            directions => "1. a", response => "1", profile => "", learnings => "[1] x",
            sections => "- S", pending => "- id 1 (priority 7): a", pending_count => 1,
            completed => "(none)", messages => "1. focus on cost", gaps => true,
            facts => "1. Nylon tents weigh 1.2 kg.", problems => "", need => "a light tent",
            context => "1. Nylon tents weigh 1.2 kg. Polyester ones weigh more.",
            text => "Nylon tents weigh 1.2 kg.", language => "French", known => "",
            short => false, plain => false,
        };
        for (name, _) in super::TEMPLATES {
            // The clarify_ templates are covered by `clarify::tests`; the node's retry is a
            // follow-up message in the node prompt's conversation (`node::tests`); the support
            // and finding judges are answered yes or no, not in JSON (`checks::judge::tests`).
            if name.starts_with("profile_")
                || name.starts_with("memory_")
                || name.starts_with("ask_")
                || name.starts_with("clarify_")
                || *name == "research_node_retry"
                || *name == "report_support"
                || *name == "report_finding"
                || *name == "report_need_finding"
            {
                continue;
            }
            let text = super::render(name, ctx.clone()).unwrap();
            assert!(text.contains("JSON"), "{name}: {text}");
            // The report's prose prompts see only the facts they connect.
            assert!(
                text.contains("best tent?")
                    || text.contains("A hiker.")
                    || (name.starts_with("report_") || *name == "translate")
                        && text.contains("1.2 kg"),
                "{name}"
            );
        }
        let leaf = super::render(
            "research_node",
            minijinja::context! { leaf => true, ..ctx.clone() },
        )
        .unwrap();
        assert!(!leaf.contains("wild-card"));
        // A reader who wants short answers in plain words: the paragraph asks for a short
        // sentence per fact and no detail around them.
        let styled = minijinja::context! { short => true, plain => true, ..ctx.clone() };
        let paragraph = super::render("report_paragraph", styled).unwrap();
        assert!(
            paragraph.contains("one short sentence for each fact"),
            "{paragraph}"
        );
        assert!(!paragraph.contains("4 to 7"), "{paragraph}");
        assert!(!paragraph.contains("you may add one detail"), "{paragraph}");
        assert!(paragraph.contains("Use everyday words"), "{paragraph}");
        let unstyled = super::render("report_paragraph", ctx).unwrap();
        assert!(unstyled.contains("you may add one detail"), "{unstyled}");
        assert!(!unstyled.contains("everyday words"), "{unstyled}");
    }

    #[test]
    fn every_template_renders() {
        let text = super::render("ask_system", minijinja::context! { json => true }).unwrap();
        assert!(text.contains("JSON"), "{text}");
        let text = super::render("ask_system", minijinja::context! { json => false }).unwrap();
        assert!(!text.contains("JSON"), "{text}");
        let sessions = vec![minijinja::context! { number => 1, text => "Searched: tent" }];
        for (name, _) in super::TEMPLATES {
            if !(name.starts_with("profile_")
                || name.starts_with("ask_")
                || name.starts_with("memory_"))
            {
                continue;
            }
            let text = super::render(
                name,
                minijinja::context! {
                    json => false, query => "best tent?", sessions => sessions.clone(),
                    items => sessions.clone(),
                    notes => Vec::<String>::new(), previous => "", session => "Searched: tent",
                    statement => "Owns a tent",
                },
            )
            .unwrap();
            assert!(!text.is_empty(), "{name}");
            if name.starts_with("profile_") || name.starts_with("memory_") {
                assert!(
                    text.contains("best tent?") || text.contains("Searched: tent"),
                    "{name}"
                );
            }
        }
    }
}
