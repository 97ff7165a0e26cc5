//! Seeding: the persona starts from what the user said, their history and the clarification,
//! and the root of the tree is planted as the first task.

use crate::research::engine::Run;
use crate::research::events::{Event, Stage};
use crate::research::persona::{self, Persona};
use crate::research::todo::{self, Provenance};
use crate::research::tree::{self, Origin};
use crate::research::ResearchError;

impl Run<'_, '_> {
    /// Seeds the persona and plants the root.
    pub(in crate::research) fn seed(&mut self) -> Result<(), ResearchError> {
        let (persona, guessed) = self.seed_persona()?;
        let from_profile = !self.s.profile.is_empty();
        self.emit(Event::PersonaSeeded {
            persona,
            from_profile,
            guessed,
        });
        self.plant_root();
        Ok(())
    }

    /// The persona from what the user said and what their history shows (the query-aware
    /// profile, with the statements they made on the "You" screen), so planning and scoring see both from the first step; its checklist from the
    /// brief, the clarification, or else inferred by the model (those items returned too).
    fn seed_persona(&mut self) -> Result<(Persona, Vec<String>), ResearchError> {
        let mut persona = self.s.persona.clone();
        // What the user told Rudder comes first and whole; what was inferred from their
        // history follows, clipped.
        let (said, inferred) = split_profile(&self.s.profile);
        if !said.is_empty() {
            let said: Vec<&str> = said.iter().map(|s| s.trim_end_matches('.')).collect();
            persona.add_text(&format!(
                "They told Rudder: {}.",
                tree::one_line(&said.join("; "), 400)
            ));
        }
        if !inferred.is_empty() {
            let from_history = tree::one_line(&readable(&inferred), 400);
            persona.add_text(&format!("From their history: {from_history}"));
        }
        let (refined, refined_checklist) = self.s.refined.clone().unwrap_or_default();
        if !refined.trim().is_empty() && refined.trim() != self.s.query.trim() {
            persona.add_text(&format!(
                "What they want: {}",
                tree::one_line(&refined, 500)
            ));
        }
        let mut guessed = Vec::new();
        match &self.brief.checklist {
            Some(items) => {
                persona.add_items(items);
            }
            None if !refined_checklist.is_empty() => {
                persona.add_items(&refined_checklist);
            }
            None => {
                let (items, completion) =
                    persona::infer_checklist(self.r.llm, &persona.text, &self.s.query)?;
                self.account(Stage::Persona, &completion);
                persona.add_items(&items);
                guessed = persona.checklist.clone();
            }
        }
        Ok((persona, guessed))
    }

    /// The query as node 0 and its task.
    fn plant_root(&mut self) {
        let query = self.s.query.clone();
        self.emit(Event::NodeAdded {
            id: 0,
            parent: None,
            depth: 0,
            question: query.clone(),
            origin: Origin::Root,
            confidence: 1.0,
            tags: Vec::new(),
            prefetched: Vec::new(),
        });
        self.add_task_event(0, &query, Provenance::InitialQuery, todo::ROOT_PRIORITY);
    }
}

/// The profile text's statements in the user's own words, and the rest of it (criterion
/// headers with their inferred statements); the rest is empty when nothing was inferred.
fn split_profile(profile: &str) -> (Vec<String>, Vec<String>) {
    use crate::profile::query_profile::{DOMAIN_NOT_INFERRED, SAID_PREFIX};
    let mut said = Vec::new();
    let mut rest = Vec::new();
    for line in profile.lines().map(str::trim).filter(|l| !l.is_empty()) {
        match line
            .strip_prefix("- ")
            .and_then(|l| l.strip_prefix(SAID_PREFIX))
        {
            Some(text) => said.push(text.to_string()),
            None if line.contains(DOMAIN_NOT_INFERRED) => {}
            None => rest.push(line.to_string()),
        }
    }
    // Headers whose statements were all the user's say nothing on their own.
    let mut inferred = Vec::new();
    for (i, line) in rest.iter().enumerate() {
        let is_header = !line.starts_with("- ");
        let has_items = rest.get(i + 1).is_some_and(|next| next.starts_with("- "));
        if !is_header || has_items || line.contains(" — ") {
            inferred.push(line.clone());
        }
    }
    if !inferred.iter().any(|l| l.starts_with("- ")) {
        inferred.clear();
    }
    (said, inferred)
}

/// Profile lines as prose: `Emphasize: a; b. Tone: c.`
fn readable(lines: &[String]) -> String {
    let mut out = String::new();
    let mut first_item = true;
    for line in lines {
        match line.strip_prefix("- ") {
            Some(item) => {
                out.push_str(if first_item { " " } else { "; " });
                out.push_str(item.trim().trim_end_matches('.'));
                first_item = false;
            }
            None => {
                if !out.is_empty() {
                    out.push_str(". ");
                }
                out.push_str(line.trim().trim_end_matches('.'));
                first_item = true;
            }
        }
    }
    if !out.is_empty() {
        out.push('.');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{readable, split_profile};

    #[test]
    fn the_users_words_are_told_apart_from_what_was_inferred() {
        let text = "Domain: mixed — Not inferred; the statements are the user's own words\n\
                    Emphasize:\n- They said: I'm vegetarian\n- cooks with a wok\n\
                    Content depth:\n- They said: Keep answers short\n";
        let (said, inferred) = split_profile(text);
        assert_eq!(said, ["I'm vegetarian", "Keep answers short"]);
        assert_eq!(inferred, ["Emphasize:", "- cooks with a wok"]);
        let (said, inferred) = split_profile(
            "Domain: mixed — Not inferred; the statements are the user's own words\n\
             Avoid:\n- They said: No dairy\n",
        );
        assert_eq!(said, ["No dairy"]);
        assert!(inferred.is_empty(), "{inferred:?}");
        let (said, inferred) = split_profile("Domain: work — writes code\nTone:\n- blunt\n");
        assert!(said.is_empty());
        assert_eq!(inferred, ["Domain: work — writes code", "Tone:", "- blunt"]);
        assert_eq!(
            readable(&inferred),
            "Domain: work — writes code. Tone: blunt."
        );
        let two = [
            "Emphasize:".to_string(),
            "- a wok.".into(),
            "- no dairy".into(),
        ];
        assert_eq!(readable(&two), "Emphasize: a wok; no dairy.");
    }
}
