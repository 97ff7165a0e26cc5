//! Investigating a node: its question researched over the evidence (prefetched by the peek
//! when it was planned, else searched now) into learnings tied to their sources, tags and
//! follow-ups.

use crate::research::engine::Run;
use crate::research::events::{Event, Stage};
use crate::research::node;
use crate::research::todo::TaskStatus;
use crate::research::tree::Learning;
use crate::research::ResearchError;
use crate::sources::Evidence;

impl Run<'_, '_> {
    /// Researches node `id` and marks its task done.
    pub(in crate::research) fn investigate(&mut self, id: usize) -> Result<(), ResearchError> {
        let task = self.s.todo.for_node(id).map(|t| t.id);
        if let Some(t) = task {
            self.update_task(t, Some(TaskStatus::InProgress), None, "");
        }
        self.emit(Event::NodeStarted { id });
        let evidence = self.evidence_for(id)?;
        let leaf = self.s.is_leaf(id, self.depth_limit());
        let mut findings = self.research(id, leaf, &evidence)?;
        // Standing exclusions hold for what is learned and planned, too.
        let directives = self.s.directives.clone();
        findings.learnings.retain(|(t, _)| !directives.excludes(t));
        findings
            .follow_ups
            .retain(|f| !directives.excludes(&f.question));
        self.record_learnings(id, &findings, &evidence)?;
        self.emit(Event::NodeResearched {
            id,
            evidence: evidence.len(),
            learnings: findings.learnings.len(),
            tags: findings.tags,
            follow_ups: if leaf {
                Vec::new()
            } else {
                findings.follow_ups
            },
            sources: evidence,
        });
        if let Some(t) = task {
            self.update_task(t, Some(TaskStatus::Completed), None, "");
        }
        Ok(())
    }

    /// The node's prefetched evidence under today's directives, or a fresh search.
    fn evidence_for(&mut self, id: usize) -> Result<Vec<Evidence>, ResearchError> {
        let prefetched = std::mem::take(&mut self.s.tree.nodes[id].prefetched);
        if prefetched.is_empty() {
            let question = self.s.tree.nodes[id].question.clone();
            self.search(&question)
        } else {
            let limit = self.r.settings.evidence_per_node;
            Ok(self.s.directives.filter_evidence(prefetched, limit))
        }
    }

    /// The model's findings for node `id` over `evidence`.
    fn research(
        &mut self,
        id: usize,
        leaf: bool,
        evidence: &[Evidence],
    ) -> Result<node::Findings, ResearchError> {
        let question = self.s.tree.nodes[id].question.clone();
        let seen = self.s.tags.seen();
        let directives = self.s.directives.prompt_text();
        let ctx = node::NodeContext {
            query: &self.s.query,
            question: &question,
            persona: &self.s.persona,
            seen_tags: &seen,
            directives: &directives,
            current_date: &self.s.date,
            leaf,
        };
        match node::research(self.r.llm, self.r.embedder, &ctx, evidence) {
            Ok((findings, completions)) => {
                for completion in &completions {
                    self.account(Stage::Research, completion);
                }
                Ok(findings)
            }
            // Output the grammar could not finish within its budget: the node yields nothing,
            // and the rest of the run goes on.
            Err(ResearchError::Llm(e @ crate::llm::LlmError::InvalidOutput { .. })) => {
                tracing::warn!(node = id, "research output unusable: {e}");
                Ok(node::Findings::default())
            }
            Err(e) => Err(e),
        }
    }

    /// Emits each learning with the keys of its sources, and keeps its embedding.
    fn record_learnings(
        &mut self,
        id: usize,
        findings: &node::Findings,
        evidence: &[Evidence],
    ) -> Result<(), ResearchError> {
        let keys: Vec<String> = evidence.iter().map(|e| e.target.key()).collect();
        let texts: Vec<&str> = findings.learnings.iter().map(|(t, _)| t.as_str()).collect();
        let vectors = if texts.is_empty() {
            Vec::new()
        } else {
            self.r.embedder.embed(&texts)?
        };
        for ((text, idx), vector) in findings.learnings.iter().zip(vectors) {
            let learning = Learning {
                id: self.s.learnings.len(),
                node: id,
                text: text.clone(),
                sources: idx.iter().map(|&i| keys[i].clone()).collect(),
            };
            self.learning_vectors.push(vector);
            self.emit(Event::Learning { learning });
        }
        Ok(())
    }
}
