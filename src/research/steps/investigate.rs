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

type NodeResult = Result<(node::Findings, Vec<crate::llm::Completion>), ResearchError>;

/// A node opened for research: what its model calls need.
struct Opened {
    id: usize,
    task: Option<usize>,
    leaf: bool,
    question: String,
    evidence: Vec<Evidence>,
}

impl Run<'_, '_> {
    /// Researches nodes `ids` (one level's tasks) and marks their tasks done. The nodes'
    /// model calls run together, as many at once as the model serves; their events are
    /// committed in the order of `ids`, so the log does not depend on which finished first.
    pub(in crate::research) fn investigate(&mut self, ids: &[usize]) -> Result<(), ResearchError> {
        let mut opened = Vec::with_capacity(ids.len());
        for &id in ids {
            let task = self.s.todo.for_node(id).map(|t| t.id);
            if let Some(t) = task {
                self.update_task(t, Some(TaskStatus::InProgress), None, "");
            }
            self.emit(Event::NodeStarted { id });
            let evidence = self.evidence_for(id)?;
            opened.push(Opened {
                id,
                task,
                leaf: self.s.is_leaf(id, self.depth_limit()),
                question: self.s.tree.nodes[id].question.clone(),
                evidence,
            });
        }
        let results = self.research_together(&opened);
        for (node, result) in opened.into_iter().zip(results) {
            let mut findings = self.account_findings(node.id, result)?;
            // Standing exclusions hold for what is learned and planned, too.
            let directives = self.s.directives.clone();
            findings.learnings.retain(|(t, _)| !directives.excludes(t));
            findings
                .follow_ups
                .retain(|f| !directives.excludes(&f.question));
            self.record_learnings(node.id, &findings, &node.evidence)?;
            self.emit(Event::NodeResearched {
                id: node.id,
                evidence: node.evidence.len(),
                learnings: findings.learnings.len(),
                tags: findings.tags,
                follow_ups: if node.leaf {
                    Vec::new()
                } else {
                    findings.follow_ups
                },
                sources: node.evidence,
            });
            if let Some(t) = node.task {
                self.update_task(t, Some(TaskStatus::Completed), None, "");
            }
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

    /// The model's findings for each opened node, in order. Every node sees the tags seen
    /// before the batch began, so the prompts do not depend on which node finished first.
    fn research_together(&self, opened: &[Opened]) -> Vec<NodeResult> {
        let seen = self.s.tags.seen();
        let directives = self.s.directives.prompt_text();
        let (llm, embedder) = (self.r.llm, self.r.embedder);
        let (query, persona, date) = (&self.s.query, &self.s.persona, &self.s.date);
        let support_judge = if self.r.settings.judge_learnings {
            self.support_judge()
        } else {
            None
        };
        // What levels above each node learned: the same whether a level's nodes are
        // researched together or one at a time.
        let depth_of = |id: usize| self.s.tree.nodes[id].depth;
        let known_above: Vec<(Vec<&str>, Vec<Vec<f32>>)> = opened
            .iter()
            .map(|o| {
                self.s
                    .learnings
                    .iter()
                    .zip(&self.learning_vectors)
                    .filter(|(l, _)| depth_of(l.node) < depth_of(o.id))
                    .map(|(l, v)| (l.text.as_str(), v.clone()))
                    .unzip()
            })
            .collect();
        crate::llm::map_concurrent(llm.parallelism(), opened, |i, node| {
            let known = node::Known {
                texts: &known_above[i].0,
                vectors: &known_above[i].1,
            };
            let ctx = node::NodeContext {
                query,
                question: &node.question,
                persona,
                seen_tags: &seen,
                directives: &directives,
                current_date: date,
                leaf: node.leaf,
                support_judge,
                known,
            };
            node::research(llm, embedder, &ctx, &node.evidence)
        })
    }

    /// Accounts for a node's model calls and returns its findings.
    fn account_findings(
        &mut self,
        id: usize,
        result: NodeResult,
    ) -> Result<node::Findings, ResearchError> {
        match result {
            Ok((findings, completions)) => {
                for completion in &completions {
                    self.account(Stage::Research, completion);
                }
                Ok(findings)
            }
            // Output the grammar could not finish within its budget: the node yields nothing,
            // and the rest of the run goes on.
            Err(ResearchError::Llm(e)) if e.is_unusable_output() => {
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
