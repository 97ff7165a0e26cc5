//! Prompt templates. Every prompt is a file in `prompts/`, embedded at build time and rendered
//! with minijinja, so wording changes never touch code.

use minijinja::Environment;
use serde::Serialize;

use crate::error::{Error, Result};

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
        "profile_select",
        include_str!("../prompts/profile_select.md"),
    ),
    (
        "profile_query_aware",
        include_str!("../prompts/profile_query_aware.md"),
    ),
    (
        "profile_general",
        include_str!("../prompts/profile_general.md"),
    ),
];

/// Renders prompt `name` with `context`.
pub fn render<S: Serialize>(name: &str, context: S) -> Result<String> {
    let mut env = Environment::new();
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    for (template_name, source) in TEMPLATES {
        env.add_template(template_name, source)
            .map_err(|e| Error::Config(format!("prompts/{template_name}.md: {e}")))?;
    }
    let template = env
        .get_template(name)
        .map_err(|e| Error::Config(format!("prompt `{name}`: {e}")))?;
    let text = template
        .render(context)
        .map_err(|e| Error::Config(format!("prompts/{name}.md: {e}")))?;
    Ok(text.trim().to_string())
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_template_renders() {
        let text = super::render("ask_system", minijinja::context! { json => true }).unwrap();
        assert!(text.contains("JSON"), "{text}");
        let text = super::render("ask_system", minijinja::context! { json => false }).unwrap();
        assert!(!text.contains("JSON"), "{text}");
        let sessions = vec![minijinja::context! { number => 1, text => "Searched: tent" }];
        for (name, _) in super::TEMPLATES {
            let text = super::render(
                name,
                minijinja::context! {
                    json => false, query => "best tent?", sessions => sessions.clone(),
                    notes => Vec::<String>::new(), previous => "",
                },
            )
            .unwrap();
            assert!(!text.is_empty(), "{name}");
            if name.starts_with("profile_") {
                assert!(
                    text.contains("best tent?") || text.contains("Searched: tent"),
                    "{name}"
                );
            }
        }
    }
}
