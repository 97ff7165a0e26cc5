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
        let persona = self.seed_persona()?;
        let from_profile = !self.s.profile.is_empty();
        self.emit(Event::PersonaSeeded {
            persona,
            from_profile,
        });
        self.plant_root();
        Ok(())
    }

    /// The persona from what the user said and what their history shows (the query-aware
    /// profile), so planning and scoring see both from the first step; its checklist from the
    /// brief, the clarification, or else inferred by the model.
    fn seed_persona(&mut self) -> Result<Persona, ResearchError> {
        let mut persona = self.s.persona.clone();
        if !self.s.profile.trim().is_empty() {
            let from_history = tree::one_line(&self.s.profile.replace('\n', "; "), 400);
            persona.add_text(&format!("From their history: {from_history}"));
        }
        let (refined, refined_checklist) = self.s.refined.clone().unwrap_or_default();
        if !refined.trim().is_empty() && refined.trim() != self.s.query.trim() {
            persona.add_text(&format!(
                "What they want: {}",
                tree::one_line(&refined, 500)
            ));
        }
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
            }
        }
        Ok(persona)
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
