//! The engine: a run's state, how its events are emitted and committed, and the loop that asks
//! the [`scheduler`](super::scheduler) for the next step and runs it.
//!
//! The state changes only through [`Run::emit`], which folds the event into the state as it
//! shows it, so the live state and a state folded from the log never differ. A step's events
//! are committed together at its end: a crash loses at most the step in flight.

use std::collections::BTreeSet;
use std::time::Instant;

use super::events::{Envelope, Event, Stage};
use super::persona::Persona;
use super::scheduler::{self, Step};
use super::state::ResearchState;
use super::todo::{self, Provenance, Task, TaskStatus};
use super::tree::{FollowUp, Origin};
use super::{Brief, Outcome, ResearchError, Researcher};
use crate::llm::{Completion, Usage};
use crate::sources::Evidence;

/// The state of one run plus what the current step has emitted.
pub(super) struct Run<'r, 'a> {
    pub(super) r: &'r mut Researcher<'a>,
    pub(super) brief: Brief,
    pub(super) s: ResearchState,
    /// Embeddings of the learnings, in order (the info-gain centroid).
    pub(super) learning_vectors: Vec<Vec<f32>>,
    /// Embeddings of passages and questions the relevance floor has compared, by text: a
    /// passage is peeked, then read, often by several searches.
    text_vectors: std::collections::HashMap<String, Vec<f32>>,
    /// Events of the step in flight, committed at its end.
    buffer: Vec<Envelope>,
    /// Steering messages the step in flight applies, marked applied with its commit.
    pub(super) applying: Vec<i64>,
}

impl<'a> Researcher<'a> {
    /// Runs the whole loop and writes the report.
    pub fn run(&mut self, brief: &Brief) -> Result<Outcome, ResearchError> {
        self.resume(brief, &[])
    }

    /// Continues a run from its committed events (`log`; empty starts afresh): folds them into
    /// the state and goes on from the next step.
    pub fn resume(&mut self, brief: &Brief, log: &[Envelope]) -> Result<Outcome, ResearchError> {
        if self.sources.is_empty() {
            return Err(ResearchError::NoSources);
        }
        let started = Instant::now();
        let state = ResearchState::fold(log);
        let texts: Vec<&str> = state.learnings.iter().map(|l| l.text.as_str()).collect();
        let learning_vectors = if texts.is_empty() {
            Vec::new()
        } else {
            self.embedder.embed(&texts)?
        };
        let answered_clarify = state.clarify_turns.len();
        self.interaction
            .resume(state.answered_pauses, answered_clarify);
        let mut run = Run {
            r: self,
            brief: brief.clone(),
            s: state,
            learning_vectors,
            text_vectors: Default::default(),
            buffer: Vec::new(),
            applying: Vec::new(),
        };
        if !run.s.finished {
            run.drive()?;
        }
        let report = run.s.report.clone().ok_or_else(|| {
            ResearchError::Steering("the session finished without a report".into())
        })?;
        let usage = run.total_usage();
        let s = run.s;
        Ok(Outcome {
            tree: s.tree,
            learnings: s.learnings,
            evidence: s.evidence,
            persona: s.persona,
            report,
            usage,
            by_stage: s.by_stage,
            pauses: s.total_pauses,
            seconds: started.elapsed().as_secs_f64(),
            todo: s.todo,
            directives: s.directives,
            resumed_at: log.len() as u64,
        })
    }
}

/// The date the prompts see: today, or `RUDDER_DATE` (`YYYY-MM-DD`) when set, so that a run
/// with greedy decoding can be reproduced exactly on another day (tests, evaluation).
fn session_date() -> String {
    std::env::var("RUDDER_DATE")
        .ok()
        .filter(|d| chrono::NaiveDate::parse_from_str(d, "%Y-%m-%d").is_ok())
        .unwrap_or_else(|| chrono::Utc::now().format("%Y-%m-%d").to_string())
}

impl Run<'_, '_> {
    /// Runs steps until the session closes.
    fn drive(&mut self) -> Result<(), ResearchError> {
        loop {
            // Steering is read only once research has begun: clarification and seeding run
            // without looking at the queue (and a stop request waits for research, too).
            let pending = if scheduler::reads_steering(&self.s) {
                self.r.journal.pending_steering()?
            } else {
                Vec::new()
            };
            let width = self.r.llm.parallelism();
            let step = scheduler::next(&self.s, &self.r.settings, pending, width);
            tracing::debug!(?step, "research step");
            match step {
                Step::Finish => {
                    if self.finish()? {
                        return Ok(());
                    }
                    // A steering message arrived before the session closed: apply it first.
                    continue;
                }
                Step::Start => self.start()?,
                Step::Clarify => self.clarify()?,
                Step::Seed => self.seed()?,
                Step::Steer(messages) => self.reflect(None, messages)?,
                Step::Reflect(level) => self.reflect(Some(level), Vec::new())?,
                Step::Investigate(nodes) => self.investigate(&nodes)?,
                Step::Plan(node) => self.plan(node)?,
                Step::Report => self.write_report()?,
            }
            self.commit()?;
        }
    }

    /// Applies an event to the state, shows it, and adds it to the step's commit.
    pub(super) fn emit(&mut self, event: Event) {
        let envelope = Envelope {
            seq: self.s.next_seq,
            at: chrono::Utc::now(),
            event,
        };
        self.s.apply(&envelope);
        self.r.events.emit(&envelope);
        self.buffer.push(envelope);
    }

    /// Commits the step's events and the steering messages it applied.
    fn commit(&mut self) -> Result<(), ResearchError> {
        if self.buffer.is_empty() && self.applying.is_empty() {
            return Ok(());
        }
        self.r.journal.commit(&self.buffer, &self.applying)?;
        self.buffer.clear();
        self.applying.clear();
        Ok(())
    }

    /// Records what one LLM call cost, under `stage`.
    pub(super) fn account(&mut self, stage: Stage, completion: &Completion) {
        self.emit(Event::Usage {
            stage,
            usage: completion.usage,
            seconds: completion.timing.total.as_secs_f64(),
        });
    }

    fn total_usage(&self) -> Usage {
        self.s.by_stage.values().fold(Usage::default(), |mut u, s| {
            u += s.usage;
            u
        })
    }

    pub(super) fn depth_limit(&self) -> u32 {
        self.r.settings.depth
    }

    /// Opens the session: what is researched, with what, on which date. A question in another
    /// language than English is researched in English, the language the checks read
    /// ([`report::language`](super::report::language)), and its report translated back.
    fn start(&mut self) -> Result<(), ResearchError> {
        let asked = self.brief.query.trim().to_string();
        let mut translation = Vec::new();
        let mut query = asked.clone();
        if super::report::language::of_question(&asked).is_some() {
            let (english, calls) =
                super::report::language::question_in_english(self.r.llm, &asked)?;
            translation = calls;
            match english {
                Some(english) => query = english,
                None => {
                    tracing::warn!("the question could not be put in English; researched as asked")
                }
            }
        }
        let event = Event::Started {
            asked: if query == asked { String::new() } else { asked },
            query,
            depth: self.r.settings.depth,
            breadth: self.r.settings.breadth,
            sources: self.r.sources.names(),
            model: self.r.llm.model_name().to_string(),
            remote_sources: self.r.sources.any_remote(),
            date: session_date(),
            persona_text: self.brief.persona_text.trim().to_string(),
            profile: self.brief.profile.clone(),
        };
        self.emit(event);
        for completion in &translation {
            self.account(Stage::Research, completion);
        }
        Ok(())
    }

    /// Closes the session unless steering is waiting; returns whether it closed. The journal
    /// decides atomically, so a message queued at the last moment is not lost.
    fn finish(&mut self) -> Result<bool, ResearchError> {
        let envelope = Envelope {
            seq: self.s.next_seq,
            at: chrono::Utc::now(),
            event: Event::Finished {
                usage: self.total_usage(),
                seconds: self.s.by_stage.values().map(|s| s.seconds).sum(),
                pauses: self.s.total_pauses,
            },
        };
        if !self
            .r
            .journal
            .finish(std::slice::from_ref(&envelope), &[])?
        {
            return Ok(false);
        }
        self.s.apply(&envelope);
        self.r.events.emit(&envelope);
        Ok(true)
    }

    pub(super) fn add_task_event(
        &mut self,
        node: usize,
        text: &str,
        provenance: Provenance,
        priority: u8,
    ) {
        let now = chrono::Utc::now();
        let task = Task {
            id: self.s.todo.next_id(),
            text: text.to_string(),
            priority: todo::clamp_priority(priority),
            status: TaskStatus::Pending,
            provenance,
            node,
            created_at: now,
            updated_at: now,
            note: String::new(),
        };
        self.emit(Event::TaskAdded { task });
    }

    /// Adds a node under `parent` and the task that researches it.
    pub(super) fn add_node(
        &mut self,
        parent: usize,
        follow_up: &FollowUp,
        origin: Origin,
        prefetched: Vec<Evidence>,
        provenance: Provenance,
        priority: u8,
    ) -> usize {
        let id = self.s.tree.nodes.len();
        self.emit(Event::NodeAdded {
            id,
            parent: Some(parent),
            depth: self.s.tree.nodes[parent].depth + 1,
            question: follow_up.question.clone(),
            origin,
            confidence: follow_up.confidence,
            tags: follow_up.tags.clone(),
            prefetched,
        });
        self.add_task_event(id, &follow_up.question, provenance, priority);
        id
    }

    pub(super) fn update_task(
        &mut self,
        id: usize,
        status: Option<TaskStatus>,
        priority: Option<u8>,
        note: &str,
    ) {
        self.emit(Event::TaskUpdated {
            id,
            status,
            priority,
            note: note.to_string(),
        });
    }

    /// Retrieval under the standing directives: excluded passages dropped, focused first, and
    /// passages no node has taken yet before ones another has ([`Run::search_fresh`]).
    pub(super) fn search(&mut self, query: &str) -> Result<Vec<Evidence>, ResearchError> {
        self.search_fresh(query, &BTreeSet::new())
    }

    /// [`Run::search`], a passage already taken filling a place only when too few fresh ones
    /// are among the best `fresh_evidence_pool` × `evidence_per_node` matches. A node that
    /// reads what another read learns what it learned: a depth-2 printing-press run read 11
    /// distinct passages in 45 reads, and its 17 learnings held 6 distinct findings. Taken:
    /// read by a node, prefetched for one still to be researched, or in `also_taken` (the
    /// peeks of directions chosen together). The chosen keep the sources' order.
    ///
    /// A passage from below the best `evidence_per_node` must clear a relevance floor
    /// ([`Run::above_relevance_floor`]): looking further down a 10,000-article ranking found
    /// 47 distinct passages where 11 were read, and with them printers, macroeconomics and
    /// Adam Smith for a question on the printing press.
    pub(super) fn search_fresh(
        &mut self,
        query: &str,
        also_taken: &BTreeSet<String>,
    ) -> Result<Vec<Evidence>, ResearchError> {
        let embedder = Some((self.r.embedder, self.r.embed_model.as_str()));
        let limit = self.r.settings.evidence_per_node;
        let pool = self.r.settings.fresh_evidence_pool.max(1);
        // Room for the passages the directives will drop.
        let wanted = pool
            * if self.s.directives.is_empty() {
                limit
            } else {
                limit * 2
            };
        let found = self.r.sources.search(query, wanted, embedder)?;
        let mut candidates = self.s.directives.filter_evidence(found, usize::MAX);
        if pool > 1 && candidates.len() > limit {
            let keep = self.above_relevance_floor(query, &candidates, limit)?;
            let mut keep = keep.into_iter();
            candidates.retain(|_| keep.next().unwrap_or(false));
        }
        let taken = self.taken_passages();
        let is_taken = |e: &Evidence| {
            let key = e.target.key();
            taken.contains(&key) || also_taken.contains(&key)
        };
        let fresh = candidates.iter().filter(|&e| !is_taken(e)).count();
        let mut taken_places = limit.saturating_sub(fresh);
        let chosen: Vec<Evidence> = candidates
            .into_iter()
            .filter(|e| {
                if !is_taken(e) {
                    return true;
                }
                let place = taken_places > 0;
                taken_places = taken_places.saturating_sub(1);
                place
            })
            .take(limit)
            .collect();
        tracing::debug!(
            query,
            passages = ?chosen.iter().map(|e| e.target.key()).collect::<Vec<_>>(),
            "passages a node reads"
        );
        Ok(chosen)
    }

    /// Which of `candidates` (best first) a node may read: the best `head` always; one further
    /// down only when it is at least as close (cosine of what the model would read of it) to
    /// the node's `query` as the least close of the best `head`, and as close to the
    /// research's own question too — the node would read a passage that close anyway, so
    /// taking it in place of one already read adds a fact without drifting. Both tests,
    /// because a node's question can itself drift ("the advantages of paper?") and
    /// the research question then keeps the passage on what was asked.
    fn above_relevance_floor(
        &mut self,
        query: &str,
        candidates: &[Evidence],
        head: usize,
    ) -> Result<Vec<bool>, ResearchError> {
        let root = self.brief.query.clone();
        let passages: Vec<String> = candidates
            .iter()
            .map(|e| crate::text::clip(&e.text, super::node::PASSAGE_CHARS))
            .collect();
        let mut texts: Vec<&str> = vec![query, root.as_str()];
        texts.extend(passages.iter().map(String::as_str));
        let vectors = self.vectors_of(&texts)?;
        let (query_v, root_v, passage_v) = (&vectors[0], &vectors[1], &vectors[2..]);
        let sims: Vec<(f32, f32)> = passage_v
            .iter()
            .map(|v| {
                (
                    crate::embed::cosine(query_v, v),
                    crate::embed::cosine(root_v, v),
                )
            })
            .collect();
        let floor = |pick: fn(&(f32, f32)) -> f32| {
            sims[..head.min(sims.len())]
                .iter()
                .map(pick)
                .fold(f32::INFINITY, f32::min)
        };
        let (node_floor, root_floor) = (floor(|s| s.0), floor(|s| s.1));
        let keep: Vec<bool> = sims
            .iter()
            .enumerate()
            .map(|(i, &(node, root))| i < head || (node >= node_floor && root >= root_floor))
            .collect();
        tracing::debug!(
            query,
            node_floor,
            root_floor,
            below = keep.iter().filter(|k| !**k).count(),
            "passages below the relevance floor"
        );
        Ok(keep)
    }

    /// Embeddings of `texts`, each embedded once per run.
    fn vectors_of(&mut self, texts: &[&str]) -> Result<Vec<Vec<f32>>, ResearchError> {
        let missing: Vec<&str> = texts
            .iter()
            .copied()
            .filter(|t| !self.text_vectors.contains_key(*t))
            .collect::<BTreeSet<&str>>()
            .into_iter()
            .collect();
        if !missing.is_empty() {
            let vectors = self.r.embedder.embed(&missing)?;
            for (t, v) in missing.into_iter().zip(vectors) {
                self.text_vectors.insert(t.to_string(), v);
            }
        }
        Ok(texts
            .iter()
            .map(|t| self.text_vectors[*t].clone())
            .collect())
    }

    /// The passages the run's nodes have read or will read (prefetched), by citation key.
    fn taken_passages(&self) -> BTreeSet<String> {
        let mut taken: BTreeSet<String> = self.s.evidence.keys().cloned().collect();
        for node in &self.s.tree.nodes {
            taken.extend(node.prefetched.iter().map(|e| e.target.key()));
        }
        taken
    }

    /// Emits the persona's change, if any: the checklist items it gained and, when its text
    /// changed, `info` (what was added to it).
    pub(super) fn emit_persona_update(&mut self, before: Persona, persona: Persona, info: &str) {
        if persona == before {
            return;
        }
        let added_items: Vec<String> = persona
            .checklist
            .iter()
            .filter(|c| !before.checklist.contains(c))
            .cloned()
            .collect();
        let added_text = if persona.text != before.text {
            info.to_string()
        } else {
            String::new()
        };
        self.emit(Event::PersonaUpdated {
            persona,
            added_text,
            added_items,
        });
    }
}
