//! A run's state as a fold over its events (docs/architecture.md, "The research loop as
//! steps"). The loop changes its state
//! only by emitting events, and resuming folds the stored log through the same
//! [`ResearchState::apply`], so a resumed run continues from exactly where the last committed
//! step left it.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::{Deserialize, Serialize};

use super::clarify::{ClarifyQuestion, ClarifyTurn};
use super::events::{Envelope, Event, Stage};
use super::persona::Persona;
use super::report::Report;
use super::steering::Directives;
use super::todo::{TaskStatus, TodoPlan};
use super::tree::{self, FollowUp, Learning, Tree};
use super::utility::TagCounts;
use super::StageCost;
use crate::sources::Evidence;

/// Everything a run has done so far.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ResearchState {
    pub started: bool,
    pub query: String,
    /// The question as asked, when `query` is its English translation (else empty).
    pub asked: String,
    pub profile: String,
    /// What the user said about themselves when starting.
    pub persona_text: String,
    pub date: String,
    pub model: String,
    /// Clarification so far, and the question waiting for an answer.
    pub clarify_turns: Vec<ClarifyTurn>,
    pub clarify_pending: Option<ClarifyQuestion>,
    /// Set when clarification is over: (refined brief, checklist).
    pub refined: Option<(String, Vec<String>)>,
    pub seeded: bool,
    pub tree: Tree,
    pub learnings: Vec<Learning>,
    pub evidence: BTreeMap<String, Evidence>,
    pub tags: TagCounts,
    pub persona: Persona,
    /// The persona's checklist items the model guessed from the question (see
    /// [`Event::PersonaSeeded`]).
    pub guessed_checklist: Vec<String>,
    /// Pauses per top-level direction (`None` is the root).
    pub pauses: HashMap<Option<usize>, u32>,
    pub total_pauses: u32,
    pub answered_pauses: usize,
    pub todo: TodoPlan,
    pub directives: Directives,
    /// Nodes whose follow-ups were planned, with the candidates MMR chose.
    pub planned: BTreeMap<usize, Vec<FollowUp>>,
    /// Levels reflected on (the final reflection is keyed by the depth limit).
    pub reflected: BTreeSet<u32>,
    /// Steering message ids already applied.
    pub applied_steering: BTreeSet<i64>,
    /// The latest report, cleared when later research or steering makes it stale.
    pub report: Option<Report>,
    pub finished: bool,
    pub by_stage: BTreeMap<Stage, StageCost>,
    /// The seq the next event gets.
    pub next_seq: u64,
}

impl ResearchState {
    /// Folds a whole log.
    pub fn fold(events: &[Envelope]) -> Self {
        let mut state = Self::default();
        for e in events {
            state.apply(e);
        }
        state
    }

    /// Applies one event.
    pub fn apply(&mut self, envelope: &Envelope) {
        self.next_seq = self.next_seq.max(envelope.seq + 1);
        match &envelope.event {
            Event::Started {
                query,
                model,
                date,
                persona_text,
                profile,
                asked,
                ..
            } => {
                self.started = true;
                self.query = query.clone();
                self.asked = asked.clone();
                self.model = model.clone();
                self.date = date.clone();
                self.persona_text = persona_text.clone();
                self.profile = profile.clone();
                self.persona.text = persona_text.clone();
            }
            Event::ClarifyAsked { question, .. } => self.clarify_pending = Some(question.clone()),
            Event::ClarifyAnswered { answer, .. } => {
                if let Some(question) = self.clarify_pending.take() {
                    self.clarify_turns.push(ClarifyTurn {
                        question,
                        answer: answer.clone(),
                    });
                }
            }
            Event::BriefRefined {
                brief, checklist, ..
            } => {
                self.clarify_pending = None;
                self.refined = Some((brief.clone(), checklist.clone()));
            }
            Event::PersonaSeeded {
                persona, guessed, ..
            } => {
                self.persona = persona.clone();
                self.guessed_checklist = guessed.clone();
                self.seeded = true;
            }
            Event::PersonaUpdated { persona, .. } => self.persona = persona.clone(),
            Event::NodeAdded {
                id,
                parent,
                question,
                origin,
                confidence,
                tags,
                prefetched,
                ..
            } => {
                match parent {
                    None => self.tree = Tree::new(question),
                    Some(p) => {
                        let follow_up = FollowUp {
                            question: question.clone(),
                            confidence: *confidence,
                            tags: tags.clone(),
                            wild_card: *origin == tree::Origin::WildCard,
                        };
                        let added = self.tree.add_child(*p, &follow_up, *origin);
                        debug_assert_eq!(added, *id);
                    }
                }
                if let Some(node) = self.tree.nodes.get_mut(*id) {
                    node.prefetched = prefetched.clone();
                }
            }
            Event::NodeStarted { id } => {
                if let Some(node) = self.tree.nodes.get_mut(*id) {
                    node.status = tree::Status::Researching;
                }
            }
            Event::Learning { learning } => {
                if let Some(node) = self.tree.nodes.get_mut(learning.node) {
                    node.learnings.push(learning.id);
                }
                self.learnings.push(learning.clone());
            }
            Event::NodeResearched {
                id,
                tags,
                follow_ups,
                sources,
                ..
            } => {
                for e in sources {
                    self.evidence
                        .entry(e.target.key())
                        .or_insert_with(|| e.clone());
                }
                if let Some(node) = self.tree.nodes.get_mut(*id) {
                    for t in tags {
                        if !node.tags.contains(t) {
                            node.tags.push(t.clone());
                        }
                    }
                    node.evidence = sources.iter().map(|e| e.target.key()).collect();
                    node.follow_ups = follow_ups.clone();
                    node.status = tree::Status::Done;
                    node.prefetched.clear();
                    let tags = node.tags.clone();
                    self.tags.record(tags.iter().map(String::as_str));
                }
                // New findings make an earlier report stale.
                self.report = None;
            }
            Event::CandidatesSelected {
                node,
                candidates,
                selected,
            } => {
                let chosen = selected
                    .iter()
                    .filter_map(|&i| candidates.get(i).cloned())
                    .collect();
                self.planned.insert(*node, chosen);
            }
            Event::Answer { node, .. } => {
                let direction = self.tree.nodes.get(*node).and_then(|n| n.direction);
                *self.pauses.entry(direction).or_insert(0) += 1;
                self.total_pauses += 1;
                self.answered_pauses += 1;
            }
            Event::TaskAdded { task } => self.todo.add(task.clone()),
            Event::TaskUpdated {
                id,
                status,
                priority,
                note,
            } => {
                self.todo.update(*id, *status, *priority, note, envelope.at);
                if *status == Some(TaskStatus::Canceled) {
                    if let Some(node) = self.todo.get(*id).map(|t| t.node) {
                        if let Some(n) = self.tree.nodes.get_mut(node) {
                            if n.status != tree::Status::Done {
                                n.status = tree::Status::Canceled;
                            }
                        }
                    }
                }
            }
            Event::SteeringApplied { messages, .. } => {
                self.applied_steering.extend(messages.iter().map(|m| m.id));
                // What the user now wants may change the report.
                self.report = None;
            }
            Event::DirectivesAdded { exclusions, focus } => {
                self.directives.extend(exclusions, focus);
            }
            Event::Reflected { level, .. } => {
                if let Some(l) = level {
                    self.reflected.insert(*l);
                }
            }
            Event::ReportWritten { report, .. } => {
                self.report = report.as_deref().cloned();
            }
            Event::Usage {
                stage,
                usage,
                seconds,
            } => {
                let cost = self.by_stage.entry(*stage).or_default();
                cost.usage += *usage;
                cost.seconds += seconds;
            }
            Event::Finished { .. } => self.finished = true,
            Event::PauseDecided { .. } | Event::Question { .. } | Event::ReportSection { .. } => {}
        }
    }

    /// Whether node `id` is researched without being expanded further.
    pub fn is_leaf(&self, id: usize, max_depth: u32) -> bool {
        let n = &self.tree.nodes[id];
        n.depth >= max_depth || !n.origin.expands()
    }

    /// Done nodes still to be planned, shallowest first.
    pub fn plannable(&self, max_depth: u32) -> Vec<usize> {
        let mut out: Vec<usize> = self
            .tree
            .nodes
            .iter()
            .filter(|n| {
                n.status == tree::Status::Done
                    && !self.is_leaf(n.id, max_depth)
                    && !self.planned.contains_key(&n.id)
            })
            .map(|n| n.id)
            .collect();
        out.sort_by_key(|&id| (self.tree.nodes[id].depth, id));
        out
    }
}
