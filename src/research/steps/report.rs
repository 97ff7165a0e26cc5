//! The report (the `report` step of docs/architecture.md): the learnings of the tree the user
//! kept, written up with citations.

use crate::checks::judge;
use crate::research::engine::Run;
use crate::research::events::{Event, Stage};
use crate::research::report;
use crate::research::tree::{self, Tree};
use crate::research::ResearchError;

impl Run<'_, '_> {
    /// Writes the report, section by section, answering the needs of the profile and the
    /// persona checklist at the end.
    pub(in crate::research) fn write_report(&mut self) -> Result<(), ResearchError> {
        let tree = self.reported_tree();
        // *What this means for you* speaks to a reader Rudder knows something about: a
        // profile from their history, or what they said (the brief's persona, pause answers).
        // A checklist inferred from the question alone says nothing about them.
        let knows_the_reader =
            !self.s.profile.trim().is_empty() || !self.s.persona.text.trim().is_empty();
        let needs = if knows_the_reader {
            report::needs_from(&self.s.profile, &self.s.persona.checklist)
        } else {
            Vec::new()
        };
        let input = report::ReportInput {
            query: &self.s.query,
            asked: &self.s.asked,
            persona: &self.s.persona,
            profile: &self.s.profile,
            needs: &needs,
            tree: &tree,
            learnings: &self.s.learnings,
            evidence: &self.s.evidence,
            current_date: &self.s.date,
            support_judge: self.support_judge(),
        };
        let mut sections = Vec::new();
        let (report, completions) =
            report::write(self.r.llm, self.r.embedder, &input, &mut |i, h| {
                sections.push((i, h.to_string()))
            })?;
        for (index, heading) in sections {
            self.emit(Event::ReportSection { index, heading });
        }
        for c in &completions {
            self.account(Stage::Report, c);
        }
        self.emit(Event::ReportWritten {
            title: report.title.clone(),
            words: report.words(),
            citations: report.references.len(),
            report: Some(Box::new(report)),
        });
        Ok(())
    }

    /// The support judge's threshold for this run's chat model (None: off): the setting, else
    /// the model's calibrated one. The research nodes and the report check with the same.
    pub(in crate::research) fn support_judge(&self) -> Option<f32> {
        Some(
            self.r
                .settings
                .support_judge
                .unwrap_or_else(|| judge::threshold_for(self.r.llm.model_name())),
        )
        .filter(|&t| t > 0.0)
    }

    /// The tree as the report sees it: canceled directions and what the user excluded left
    /// out.
    fn reported_tree(&self) -> Tree {
        let mut tree = self.s.tree.clone();
        let statuses: Vec<tree::Status> = tree.nodes.iter().map(|n| n.status).collect();
        tree.nodes[0]
            .children
            .retain(|&c| statuses[c] != tree::Status::Canceled);
        for node in &mut tree.nodes {
            node.learnings
                .retain(|&l| !self.s.directives.excludes(&self.s.learnings[l].text));
        }
        tree
    }
}
