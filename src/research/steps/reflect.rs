//! Reflection (EDR §3.5; the `reflect` step of docs/architecture.md): queued steering messages
//! applied together at a step boundary, and at the end of a level, knowledge gaps turned into
//! tasks and obsolete tasks canceled. One model call reads both; what it says about the user's
//! wishes counts only where the messages say it too.

use super::REPEATED_QUESTION;
use crate::research::engine::Run;
use crate::research::events::{Event, Stage};
use crate::research::reflect::{self, Reflection};
use crate::research::steering::{self, Message};
use crate::research::todo::{self, Provenance, Task, TaskStatus};
use crate::research::tree::{self, FollowUp, Origin};
use crate::research::{node, ResearchError};

/// What the user asked for in the applied messages.
#[derive(Debug, Default)]
struct Requests {
    exclusions: Vec<String>,
    focus: Vec<String>,
    tasks: Vec<String>,
    /// One line on what the messages changed (empty without messages).
    summary: String,
}

/// The messages' requests: what they say plainly, then what the model read in them where the
/// messages' own words back it (SmolLM2 once added the task "steering_summary").
fn read_requests(messages: &[Message], reflection: &Reflection) -> Requests {
    let mut out = Requests::default();
    for m in messages {
        let parsed = steering::parse_message(&m.text);
        out.exclusions.extend(parsed.exclusions);
        out.focus.extend(parsed.focus);
        out.tasks.extend(parsed.tasks);
    }
    if messages.is_empty() {
        return out;
    }
    out.summary = if reflection.steering_summary.trim().is_empty() {
        messages
            .iter()
            .map(|m| tree::one_line(&m.text, 200))
            .collect::<Vec<_>>()
            .join("; ")
    } else {
        reflection.steering_summary.trim().to_string()
    };
    let said = said(messages);
    let grounded = |items: &[String], all: bool| -> Vec<String> {
        items
            .iter()
            .filter(|x| steering::grounded(x, &said, all))
            .cloned()
            .collect()
    };
    out.exclusions.extend(grounded(&reflection.exclude, true));
    out.focus.extend(grounded(&reflection.focus, false));
    out.tasks.extend(grounded(&reflection.add_tasks, false));
    out
}

/// Everything the messages say, one per line.
fn said(messages: &[Message]) -> String {
    messages.iter().map(|m| format!("{}\n", m.text)).collect()
}

impl Run<'_, '_> {
    /// Applies `messages` (a snapshot — anything that arrives meanwhile waits for the next
    /// boundary) and, when `level` is finished, looks for its knowledge gaps.
    pub(in crate::research) fn reflect(
        &mut self,
        level: Option<u32>,
        messages: Vec<Message>,
    ) -> Result<(), ResearchError> {
        let pending: Vec<Task> = self.s.todo.pending().into_iter().cloned().collect();
        let reflection = self.reflection(level, &messages, &pending)?;
        let requests = read_requests(&messages, &reflection);
        if !messages.is_empty() {
            self.applying = messages.iter().map(|m| m.id).collect();
            self.emit(Event::SteeringApplied {
                messages: messages.clone(),
                summary: requests.summary.clone(),
            });
        }
        self.add_directives(&requests);
        let canceled = self.cancel_tasks(&pending, &reflection, &requests.summary, &messages)?;
        self.add_requested_tasks(requests.tasks)?;
        let gaps = match level {
            Some(level) => self.add_gaps(&reflection, level)?,
            None => Vec::new(),
        };
        if !messages.is_empty() {
            self.update_persona(&messages, &reflection);
        }
        self.emit(Event::Reflected {
            level,
            knowledge_gaps: gaps,
            canceled,
        });
        Ok(())
    }

    /// The model's reflection on the findings, the tasks and the messages; an empty one when
    /// its output is unusable (the messages are still applied from what they say plainly).
    fn reflection(
        &mut self,
        level: Option<u32>,
        messages: &[Message],
        pending: &[Task],
    ) -> Result<Reflection, ResearchError> {
        let completed: Vec<&Task> = self
            .s
            .todo
            .tasks
            .iter()
            .filter(|t| t.status == TaskStatus::Completed)
            .collect();
        let findings: Vec<String> = self.s.learnings.iter().map(|l| l.text.clone()).collect();
        let directives_text = self.s.directives.prompt_text();
        let pending_refs: Vec<&Task> = pending.iter().collect();
        let input = reflect::ReflectInput {
            query: &self.s.query,
            persona: &self.s.persona,
            directives: &directives_text,
            current_date: &self.s.date,
            findings: &findings,
            pending: &pending_refs,
            completed: &completed,
            messages,
            gaps: level.is_some(),
        };
        match reflect::reflect(self.r.llm, &input) {
            Ok((r, completion)) => {
                self.account(Stage::Reflect, &completion);
                Ok(r)
            }
            Err(ResearchError::Llm(e)) if e.is_unusable_output() => {
                tracing::warn!("reflection output unusable: {e}");
                Ok(Reflection::default())
            }
            Err(e) => Err(e),
        }
    }

    /// Adds the exclusions and focus not already standing.
    fn add_directives(&mut self, requests: &Requests) {
        let added = self
            .s
            .directives
            .clone()
            .extend(&requests.exclusions, &requests.focus);
        if !added.is_empty() {
            self.emit(Event::DirectivesAdded {
                exclusions: added.exclusions,
                focus: added.focus,
            });
        }
    }

    /// Cancels what the user excluded, then what reflection found obsolete where completed
    /// work already covers it; with messages, reprioritises as the model read them. Returns the
    /// canceled task ids.
    fn cancel_tasks(
        &mut self,
        pending: &[Task],
        reflection: &Reflection,
        summary: &str,
        messages: &[Message],
    ) -> Result<Vec<usize>, ResearchError> {
        let mut canceled = Vec::new();
        for t in pending {
            if self.s.directives.excludes(&t.text) {
                self.update_task(
                    t.id,
                    Some(TaskStatus::Canceled),
                    None,
                    "excluded by steering",
                );
                canceled.push(t.id);
            }
        }
        let why = if summary.is_empty() {
            "obsolete after reflection".to_string()
        } else {
            format!("steering: {}", tree::one_line(summary, 120))
        };
        let proposed: Vec<&Task> = reflection
            .cancel_tasks
            .iter()
            .filter(|id| !canceled.contains(id))
            .filter_map(|&id| pending.iter().find(|t| t.id == id))
            .collect();
        for t in self.covered(&proposed)? {
            self.update_task(t, Some(TaskStatus::Canceled), None, &why);
            canceled.push(t);
        }
        if !messages.is_empty() {
            for p in &reflection.reprioritise {
                if !canceled.contains(&p.task) {
                    self.update_task(p.task, None, Some(p.priority), &why);
                }
            }
        }
        Ok(canceled)
    }

    /// The ids of `tasks` that what was learned already answers: a learning of a completed node
    /// is within [`reflect::COVERED`] of the task's text. A small model calls distinct
    /// directions obsolete; its word alone cancels nothing.
    fn covered(&self, tasks: &[&Task]) -> Result<Vec<usize>, ResearchError> {
        if tasks.is_empty() || self.learning_vectors.is_empty() {
            if !tasks.is_empty() {
                tracing::info!(
                    proposed = tasks.len(),
                    "reflection's cancellations kept: nothing learned covers them"
                );
            }
            return Ok(Vec::new());
        }
        let texts: Vec<&str> = tasks.iter().map(|t| t.text.as_str()).collect();
        let vectors = self.r.embedder.embed(&texts)?;
        let mut out = Vec::new();
        for (t, v) in tasks.iter().zip(&vectors) {
            let best = self
                .learning_vectors
                .iter()
                .map(|l| crate::embed::cosine(v, l))
                .fold(f32::MIN, f32::max);
            if best >= reflect::COVERED {
                out.push(t.id);
            } else {
                tracing::info!(
                    task = t.id,
                    best,
                    "reflection proposed canceling a task no learning covers; kept"
                );
            }
        }
        Ok(out)
    }

    /// The user's requests, as tasks under the root.
    fn add_requested_tasks(&mut self, tasks: Vec<String>) -> Result<(), ResearchError> {
        for text in tasks {
            if self.is_new_task(&text)? {
                let f = FollowUp {
                    question: tree::one_line(&text, 200),
                    confidence: 1.0,
                    tags: Vec::new(),
                    wild_card: false,
                };
                self.add_node(
                    0,
                    &f,
                    Origin::Steering,
                    Vec::new(),
                    Provenance::Steering,
                    todo::STEERING_PRIORITY,
                );
            }
        }
        Ok(())
    }

    /// Knowledge gaps of the finished `level`, as tasks under the node they are closest to.
    /// Returns the questions added.
    fn add_gaps(
        &mut self,
        reflection: &Reflection,
        level: u32,
    ) -> Result<Vec<String>, ResearchError> {
        let mut gaps = Vec::new();
        let query = self.r.embedder.embed(&[self.s.query.as_str()])?.remove(0);
        for gap in reflection.knowledge_gaps.iter().take(reflect::MAX_GAPS) {
            // A gap must be about the question, not about whatever else the persona mentions.
            let vector = self.r.embedder.embed(&[gap.as_str()])?.remove(0);
            if !node::on_topic(&query, &vector) {
                tracing::info!(gap = gap.as_str(), "knowledge gap off the query; dropped");
                continue;
            }
            if !self.is_new_task(gap)? {
                continue;
            }
            let parent = self.gap_parent(gap, level)?;
            let f = FollowUp {
                question: tree::one_line(gap, 200),
                confidence: 0.7,
                tags: Vec::new(),
                wild_card: false,
            };
            self.add_node(
                parent,
                &f,
                Origin::Gap,
                Vec::new(),
                Provenance::KnowledgeGap,
                todo::GAP_PRIORITY,
            );
            gaps.push(f.question);
        }
        Ok(gaps)
    }

    /// What the messages taught about the user: the model's persona notes, minus checklist
    /// items the user excluded, plus new ones the messages back.
    fn update_persona(&mut self, messages: &[Message], reflection: &Reflection) {
        let before = self.s.persona.clone();
        let mut persona = before.clone();
        persona.add_text(&reflection.persona_info);
        // What the user excluded is no longer something the report must cover.
        let directives = &self.s.directives;
        persona.checklist.retain(|c| !directives.excludes(c));
        // New aspects must come from the messages too (a small model tends to copy task
        // titles here).
        let said = said(messages);
        let items: Vec<String> = reflection
            .new_checklist_items
            .iter()
            .filter(|c| !directives.excludes(c) && steering::grounded(c, &said, false))
            .cloned()
            .collect();
        persona.add_items(&items);
        self.emit_persona_update(before, persona, reflection.persona_info.trim());
    }

    /// Whether `text` asks for something no task already covers (by words or by meaning) and
    /// nothing excludes.
    fn is_new_task(&self, text: &str) -> Result<bool, ResearchError> {
        let t = text.trim().to_lowercase();
        if t.chars().count() < 3
            || self.s.directives.excludes(text)
            || self.s.todo.tasks.iter().any(|task| {
                let other = task.text.trim().to_lowercase();
                other == t || other.contains(&t) || t.contains(&other)
            })
        {
            return Ok(false);
        }
        let mut texts: Vec<&str> = vec![text];
        texts.extend(self.s.todo.tasks.iter().map(|task| task.text.as_str()));
        let vectors = self.r.embedder.embed(&texts)?;
        Ok(vectors[1..]
            .iter()
            .all(|v| crate::embed::cosine(&vectors[0], v) < REPEATED_QUESTION))
    }

    /// The investigated node of `level` (or the one above the depth limit) closest to `gap`.
    fn gap_parent(&self, gap: &str, level: u32) -> Result<usize, ResearchError> {
        let depth = level.min(self.depth_limit().saturating_sub(1));
        let nodes: Vec<usize> = self
            .s
            .tree
            .nodes
            .iter()
            .filter(|n| n.depth == depth && n.status == tree::Status::Done)
            .map(|n| n.id)
            .collect();
        if nodes.len() <= 1 {
            return Ok(nodes.first().copied().unwrap_or(0));
        }
        let mut texts: Vec<&str> = vec![gap];
        texts.extend(
            nodes
                .iter()
                .map(|&n| self.s.tree.nodes[n].question.as_str()),
        );
        let vectors = self.r.embedder.embed(&texts)?;
        let best = (1..vectors.len())
            .max_by(|&a, &b| {
                crate::embed::cosine(&vectors[0], &vectors[a])
                    .total_cmp(&crate::embed::cosine(&vectors[0], &vectors[b]))
            })
            .unwrap_or(1);
        Ok(nodes[best - 1])
    }
}
