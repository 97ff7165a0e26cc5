//! The steerable research loop (STEER §2, EDR §2.2–3.5; docs/architecture.md).
//!
//! A run is a sequence of steps, each committed to a [`Journal`] as one batch of events, and
//! its state ([`state::ResearchState`]) is a fold over those events — so a killed run resumes
//! from its log ([`Researcher::resume`]). Before research, a few clarifying questions refine
//! the brief ([`crate::clarify`]); the persona is seeded from the brief and the profile. Then,
//! level by level up to depth `D`: every node is a task of the todo plan ([`todo`]) and is
//! researched over the sources into learnings tied to their evidence ([`node`]); at each
//! frontier node the planner's follow-ups are narrowed to `K` by MMR ([`mmr`]), peeked at
//! (retrieval only), scored ([`align`], [`utility`]), and the pause rule ([`pause`]) decides
//! whether asking the user ([`interaction`], [`question`]) is worth the interruption; answers
//! update the live persona ([`persona`]). After each level, reflection ([`reflect`]) turns
//! knowledge gaps into tasks and cancels obsolete ones; at every step boundary, queued steering
//! messages ([`steering`]) are applied together. The learnings become a cited report
//! ([`report`], [`html`]). Everything that happens is an [`events::Event`].

pub mod align;
pub mod events;
pub mod html;
pub mod interaction;
pub mod mmr;
pub mod node;
pub mod pause;
pub mod persona;
pub mod question;
pub mod reflect;
pub mod report;
pub mod state;
pub mod steering;
pub mod todo;
pub mod tree;
pub mod utility;

use std::collections::BTreeMap;
use std::time::Instant;

use serde::{Deserialize, Serialize};

pub use events::{Envelope, Event, EventSink, Stage};
pub use interaction::{
    ChannelInteraction, Interaction, NeverAsk, PauseAnswer, PauseQuestion, Reply, Scripted,
    Terminal,
};
pub use pause::{PauseDecision, PauseSettings};
pub use persona::Persona;
pub use report::Report;
pub use state::ResearchState;
pub use steering::{Directives, Journal, MemoryJournal};
pub use todo::{Provenance, Task, TaskStatus, TodoPlan};
pub use tree::{FollowUp, Learning, Node, Origin, Tree};
pub use utility::{TagCounts, Utility, UtilityWeights};

use crate::clarify::{self, ClarifyContext, ClarifySettings};
use crate::embed::Embedder;
use crate::llm::{Completion, Llm, Usage};
use crate::sources::{Evidence, Sources};
use steering::Message;

/// Errors from a research run.
#[derive(Debug, thiserror::Error)]
pub enum ResearchError {
    #[error(transparent)]
    Llm(#[from] crate::llm::LlmError),
    #[error(transparent)]
    Embed(#[from] crate::embed::EmbedError),
    #[error(transparent)]
    Source(#[from] crate::sources::SourceError),
    #[error(transparent)]
    Engine(#[from] crate::Error),
    #[error("{}: {message}", path.display())]
    Input {
        path: std::path::PathBuf,
        message: String,
    },
    #[error("asking the user failed: {0}")]
    Interaction(String),
    #[error("steering: {0}")]
    Steering(String),
    #[error("{0}")]
    Session(String),
    /// The user pressed stop; the session resumes from its last finished step.
    #[error("stopped by the user")]
    Stopped,
    #[error("no sources to research: add documents (`rudder docs add DIR`), import history, or enable web search")]
    NoSources,
}

/// One grammar-constrained call with greedy decoding: `prompt` in, a `T` valid under `schema`
/// out.
pub(crate) fn llm_call<T: serde::de::DeserializeOwned>(
    llm: &dyn Llm,
    prompt: String,
    schema: serde_json::Value,
    max_tokens: u32,
) -> Result<(T, Completion), ResearchError> {
    let request = crate::llm::Request {
        messages: vec![crate::llm::Message::user(prompt)],
        options: crate::llm::GenerationOptions {
            max_tokens,
            temperature: 0.0,
            ..crate::llm::GenerationOptions::default()
        },
        format: crate::llm::OutputFormat::JsonSchema(schema),
    };
    let completion = llm.complete_text(&request)?;
    let value = crate::llm::parse_json(&completion.text)?;
    Ok((value, completion))
}

/// The loop's knobs (the defaults of docs/architecture.md; the one place they are set).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ResearchSettings {
    /// Maximum depth `D` (the root is depth 0).
    pub depth: u32,
    /// Breadth `K`: directions chosen per frontier node.
    pub breadth: u32,
    pub pause: PauseSettings,
    pub weights: UtilityWeights,
    /// MMR's weight on confidence; 0 is STEER's Appendix C (pure dissimilarity after the first).
    pub mmr_lambda: f32,
    /// Passages retrieved per node (and per peek).
    pub evidence_per_node: usize,
    /// Reflect after each level of the tree (knowledge gaps, obsolete tasks).
    pub reflect: bool,
    /// Most clarifying questions before research (0 turns clarification off).
    pub clarify_turns: u32,
}

impl Default for ResearchSettings {
    fn default() -> Self {
        Self {
            depth: 3,
            breadth: 3,
            pause: PauseSettings::default(),
            weights: UtilityWeights::default(),
            mmr_lambda: 0.0,
            evidence_per_node: 5,
            reflect: true,
            clarify_turns: 3,
        }
    }
}

/// What the research starts from.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Brief {
    pub query: String,
    /// What is known about the user up front (a sentence, or the profile's summary).
    pub persona_text: String,
    /// The query-aware profile as prompt text (need, depth, tone, style), or empty.
    pub profile: String,
    /// A checklist to start from; inferred from the persona and query when `None`.
    pub checklist: Option<Vec<String>>,
}

/// Tokens and time spent by one stage.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct StageCost {
    pub usage: Usage,
    pub seconds: f64,
}

/// Everything a finished run produced.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Outcome {
    pub tree: Tree,
    pub learnings: Vec<Learning>,
    pub evidence: BTreeMap<String, Evidence>,
    pub persona: Persona,
    pub report: Report,
    pub usage: Usage,
    pub by_stage: BTreeMap<Stage, StageCost>,
    pub pauses: u32,
    pub seconds: f64,
    pub todo: TodoPlan,
    pub directives: Directives,
    /// Events already in the log when this process took over (0 for a fresh run).
    pub resumed_at: u64,
}

/// What the loop works with.
pub struct Researcher<'a> {
    pub llm: &'a dyn Llm,
    pub embedder: &'a dyn Embedder,
    pub sources: &'a mut Sources,
    pub interaction: &'a mut dyn Interaction,
    /// Live events (the terminal, the window).
    pub events: &'a mut dyn EventSink,
    /// Where each step's events are committed and steering messages queue.
    pub journal: &'a mut dyn Journal,
    pub settings: ResearchSettings,
    /// The embedding model's name (sources use it to find their stored vectors).
    pub embed_model: String,
}

/// Cosine above which a follow-up repeats a question already in the tree.
const REPEATED_QUESTION: f32 = 0.9;

/// One unit of work; the loop commits its events together at the end, so a crash loses at
/// most the step in flight.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    Start,
    Clarify,
    Seed,
    /// Apply queued steering messages.
    Steer(Vec<Message>),
    /// Reflect on a finished level.
    Reflect(u32),
    Research(usize),
    Plan(usize),
    Report,
    Finish,
}

/// The state of one run plus what the current step has emitted.
struct Run<'r, 'a> {
    r: &'r mut Researcher<'a>,
    brief: Brief,
    s: ResearchState,
    learning_vectors: Vec<Vec<f32>>,
    /// Events of the step in flight, committed at its end.
    buffer: Vec<Envelope>,
    /// Steering messages the step in flight applies.
    applying: Vec<i64>,
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
            buffer: Vec::new(),
            applying: Vec::new(),
        };
        if !run.s.finished {
            run.drive()?;
        }
        let report = run.s.report.clone().ok_or_else(|| {
            ResearchError::Steering("the session finished without a report".into())
        })?;
        let usage = run.s.by_stage.values().fold(Usage::default(), |mut u, s| {
            u += s.usage;
            u
        });
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
    /// Applies an event to the state, shows it, and adds it to the step's commit.
    fn emit(&mut self, event: Event) {
        let envelope = Envelope {
            seq: self.s.next_seq,
            at: chrono::Utc::now(),
            event,
        };
        self.s.apply(&envelope);
        self.r.events.emit(&envelope);
        self.buffer.push(envelope);
    }

    fn commit(&mut self) -> Result<(), ResearchError> {
        if self.buffer.is_empty() && self.applying.is_empty() {
            return Ok(());
        }
        self.r.journal.commit(&self.buffer, &self.applying)?;
        self.buffer.clear();
        self.applying.clear();
        Ok(())
    }

    fn account(&mut self, stage: Stage, completion: &Completion) {
        self.emit(Event::Usage {
            stage,
            usage: completion.usage,
            seconds: completion.timing.total.as_secs_f64(),
        });
    }

    fn depth_limit(&self) -> u32 {
        self.r.settings.depth
    }

    fn drive(&mut self) -> Result<(), ResearchError> {
        loop {
            let step = self.next_step()?;
            tracing::debug!(?step, "research step");
            match step {
                Step::Finish => {
                    if self.finish()? {
                        return Ok(());
                    }
                    // A steering message arrived before the session closed: apply it first.
                    continue;
                }
                Step::Start => self.start(),
                Step::Clarify => self.clarify()?,
                Step::Seed => self.seed()?,
                Step::Steer(messages) => self.reflect(None, messages)?,
                Step::Reflect(level) => self.reflect(Some(level), Vec::new())?,
                Step::Research(node) => self.research_node(node)?,
                Step::Plan(node) => self.plan(node)?,
                Step::Report => self.write_report()?,
            }
            self.commit()?;
        }
    }

    /// What to do next, from the state alone (so a resumed run picks up where it stopped).
    fn next_step(&mut self) -> Result<Step, ResearchError> {
        if !self.s.started {
            return Ok(Step::Start);
        }
        if self.s.refined.is_none() {
            return Ok(Step::Clarify);
        }
        if !self.s.seeded {
            return Ok(Step::Seed);
        }
        let messages: Vec<Message> = self
            .r
            .journal
            .pending_steering()?
            .into_iter()
            .filter(|m| !self.s.applied_steering.contains(&m.id))
            .collect();
        if !messages.is_empty() {
            return Ok(Step::Steer(messages));
        }
        // Breadth first: a level is researched, then planned, then reflected on, before the
        // next level starts; within a level, higher priority first.
        let limit = self.depth_limit();
        let depth_of = |s: &ResearchState, node: usize| s.tree.nodes[node].depth;
        let research_depth = self
            .s
            .todo
            .pending()
            .iter()
            .map(|t| depth_of(&self.s, t.node))
            .min();
        let plannable = self.s.plannable(limit);
        let plan_depth = plannable.first().map(|&n| depth_of(&self.s, n));
        // The deepest level that is researched and planned through.
        let done_through = research_depth
            .map(|d| d.saturating_sub(1))
            .into_iter()
            .chain(plan_depth.map(|d| d.saturating_sub(1)))
            .chain([limit])
            .min()
            .unwrap_or(limit);
        // Level 0 is the root alone: planning its follow-ups is what looks for its gaps.
        if self.r.settings.reflect && done_through > 0 && !self.s.reflected.contains(&done_through)
        {
            return Ok(Step::Reflect(done_through));
        }
        if let Some(d) = research_depth {
            if plan_depth.is_none_or(|p| d <= p) {
                let task = self
                    .s
                    .todo
                    .pending()
                    .into_iter()
                    .find(|t| depth_of(&self.s, t.node) == d)
                    .map(|t| t.node);
                if let Some(node) = task {
                    return Ok(Step::Research(node));
                }
            }
        }
        if let Some(&n) = plannable.first() {
            return Ok(Step::Plan(n));
        }
        if self.s.report.is_none() {
            return Ok(Step::Report);
        }
        Ok(Step::Finish)
    }

    /// Closes the session unless steering is waiting; returns whether it closed.
    fn finish(&mut self) -> Result<bool, ResearchError> {
        let usage = self.s.by_stage.values().fold(Usage::default(), |mut u, s| {
            u += s.usage;
            u
        });
        let envelope = Envelope {
            seq: self.s.next_seq,
            at: chrono::Utc::now(),
            event: Event::Finished {
                usage,
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

    fn start(&mut self) {
        let event = Event::Started {
            query: self.brief.query.trim().to_string(),
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
    }

    /// One clarification turn; once the dialogue is over (or off), its summary.
    fn clarify(&mut self) -> Result<(), ResearchError> {
        let max = self.r.settings.clarify_turns as usize;
        let settings = ClarifySettings {
            max_turns: self.r.settings.clarify_turns,
            ..ClarifySettings::default()
        };
        let turns = self.s.clarify_turns.len();
        let over = max == 0
            || !self.r.interaction.can_clarify()
            || turns >= max
            || self.s.clarify_turns.last().is_some_and(|t| t.answer.skip);
        if !over {
            let question = match self.s.clarify_pending.clone() {
                Some(q) => Some(q),
                None => {
                    let ctx = ClarifyContext {
                        query: &self.s.query,
                        profile: &self.s.profile,
                        persona_text: &self.s.persona_text,
                    };
                    let proposal = clarify::propose(
                        self.r.llm,
                        self.r.embedder,
                        &ctx,
                        &self.s.clarify_turns,
                        &settings,
                    )?;
                    for c in &proposal.completions {
                        self.account(Stage::Clarify, c);
                    }
                    if let Some(q) = &proposal.question {
                        self.emit(Event::ClarifyAsked {
                            question: q.clone(),
                            rejected: proposal.rejected.clone(),
                        });
                    }
                    proposal.question
                }
            };
            if let Some(question) = question {
                let answer = self.r.interaction.clarify(&question)?;
                self.emit(Event::ClarifyAnswered {
                    turn: question.turn,
                    answer: answer.clone(),
                });
                if !answer.skip && self.s.clarify_turns.len() < max {
                    return Ok(());
                }
            }
        }
        self.summarise_clarification()
    }

    fn summarise_clarification(&mut self) -> Result<(), ResearchError> {
        let answered = self
            .s
            .clarify_turns
            .iter()
            .filter(|t| !t.answer.choices.is_empty() || !t.answer.text.trim().is_empty())
            .count();
        if answered == 0 {
            let brief = self.s.query.clone();
            self.emit(Event::BriefRefined {
                brief,
                checklist: Vec::new(),
                turns: self.s.clarify_turns.len(),
            });
            return Ok(());
        }
        let ctx = ClarifyContext {
            query: &self.s.query,
            profile: &self.s.profile,
            persona_text: &self.s.persona_text,
        };
        let (brief, checklist) = match clarify::summarise(self.r.llm, &ctx, &self.s.clarify_turns) {
            Ok((refined, completion)) => {
                self.account(Stage::Clarify, &completion);
                (refined.brief, refined.checklist)
            }
            // The answers still count: they go into the brief as the user gave them.
            Err(ResearchError::Llm(e @ crate::llm::LlmError::InvalidOutput { .. })) => {
                tracing::warn!("clarification summary unusable: {e}");
                let answers: Vec<String> = self
                    .s
                    .clarify_turns
                    .iter()
                    .map(|t| t.answer.describe(&t.question))
                    .filter(|a| !a.trim().is_empty())
                    .collect();
                (
                    format!("{} ({})", self.s.query, answers.join("; ")),
                    Vec::new(),
                )
            }
            Err(e) => return Err(e),
        };
        self.emit(Event::BriefRefined {
            brief,
            checklist,
            turns: self.s.clarify_turns.len(),
        });
        Ok(())
    }

    /// Seeds the persona from what the user said, their history and the clarification, and
    /// plants the root.
    fn seed(&mut self) -> Result<(), ResearchError> {
        let mut persona = self.s.persona.clone();
        // The persona starts from what the user said and what their history shows (the
        // query-aware profile), so planning and scoring see both from the first step.
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
        let from_profile = !self.s.profile.is_empty();
        self.emit(Event::PersonaSeeded {
            persona,
            from_profile,
        });
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
        Ok(())
    }

    fn add_task_event(&mut self, node: usize, text: &str, provenance: Provenance, priority: u8) {
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
    fn add_node(
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

    fn update_task(
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

    /// Retrieval under the standing directives: excluded passages dropped, focused first.
    fn search(&mut self, query: &str) -> Result<Vec<Evidence>, ResearchError> {
        let embedder = Some((self.r.embedder, self.r.embed_model.as_str()));
        let limit = self.r.settings.evidence_per_node;
        let wanted = if self.s.directives.is_empty() {
            limit
        } else {
            limit * 2
        };
        let found = self.r.sources.search(query, wanted, embedder)?;
        Ok(self.s.directives.filter_evidence(found, limit))
    }

    /// Researches node `id` over its prefetched evidence, or searches for it.
    fn research_node(&mut self, id: usize) -> Result<(), ResearchError> {
        let task = self.s.todo.for_node(id).map(|t| t.id);
        if let Some(t) = task {
            self.update_task(t, Some(TaskStatus::InProgress), None, "");
        }
        self.emit(Event::NodeStarted { id });
        let question = self.s.tree.nodes[id].question.clone();
        let prefetched = std::mem::take(&mut self.s.tree.nodes[id].prefetched);
        let evidence = if prefetched.is_empty() {
            self.search(&question)?
        } else {
            let limit = self.r.settings.evidence_per_node;
            self.s.directives.filter_evidence(prefetched, limit)
        };
        let leaf = self.s.is_leaf(id, self.depth_limit());
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
        let mut findings = match node::research(self.r.llm, &ctx, &evidence) {
            Ok((findings, completion)) => {
                self.account(Stage::Research, &completion);
                findings
            }
            // Output the grammar could not finish within its budget: the node yields nothing,
            // and the rest of the run goes on.
            Err(ResearchError::Llm(e @ crate::llm::LlmError::InvalidOutput { .. })) => {
                tracing::warn!(node = id, "research output unusable: {e}");
                node::Findings::default()
            }
            Err(e) => return Err(e),
        };
        // Standing exclusions hold for what is learned and planned, too.
        let directives = self.s.directives.clone();
        findings.learnings.retain(|(t, _)| !directives.excludes(t));
        findings
            .follow_ups
            .retain(|f| !directives.excludes(&f.question));

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
        let learnings = findings.learnings.len();
        self.emit(Event::NodeResearched {
            id,
            evidence: evidence.len(),
            learnings,
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

    /// Plans, scores and decides at frontier node `n`, and adds the children it keeps as
    /// tasks.
    fn plan(&mut self, n: usize) -> Result<(), ResearchError> {
        let directives = self.s.directives.clone();
        let candidates: Vec<FollowUp> = self.s.tree.nodes[n]
            .follow_ups
            .iter()
            .filter(|c| !directives.excludes(&c.question))
            .cloned()
            .collect();
        if candidates.is_empty() {
            self.emit(Event::CandidatesSelected {
                node: n,
                candidates,
                selected: Vec::new(),
            });
            return Ok(());
        }
        let settings = self.r.settings;
        let k = settings.breadth.max(1) as usize;

        // A follow-up that asks again what a node of the tree already asks adds nothing.
        let questions: Vec<&str> = candidates.iter().map(|c| c.question.as_str()).collect();
        let mut embeddings = self.r.embedder.embed(&questions)?;
        let asked: Vec<&str> = self
            .s
            .tree
            .nodes
            .iter()
            .filter(|n| n.status != tree::Status::Canceled)
            .map(|n| n.question.as_str())
            .collect();
        let asked_vectors = self.r.embedder.embed(&asked)?;
        let keep: Vec<bool> = embeddings
            .iter()
            .map(|e| {
                asked_vectors
                    .iter()
                    .all(|a| crate::embed::cosine(e, a) < REPEATED_QUESTION)
            })
            .collect();
        let mut kept = keep.iter();
        let candidates: Vec<FollowUp> = candidates
            .into_iter()
            .filter(|_| *kept.next().unwrap_or(&true))
            .collect();
        let mut kept = keep.iter();
        embeddings.retain(|_| *kept.next().unwrap_or(&true));
        if candidates.is_empty() {
            self.emit(Event::CandidatesSelected {
                node: n,
                candidates,
                selected: Vec::new(),
            });
            return Ok(());
        }

        // Plan: a diverse K by MMR on the questions' embeddings.
        let confidences: Vec<f32> = candidates.iter().map(|c| c.confidence).collect();
        let selected = mmr::select(&confidences, &embeddings, k, settings.mmr_lambda);
        self.emit(Event::CandidatesSelected {
            node: n,
            candidates: candidates.clone(),
            selected: selected.clone(),
        });
        let chosen: Vec<FollowUp> = selected.iter().map(|&i| candidates[i].clone()).collect();

        // Peek: retrieval only, no model.
        let mut peeks = Vec::with_capacity(chosen.len());
        for c in &chosen {
            peeks.push(self.search(&c.question)?);
        }

        // Utility of each candidate.
        let parent_findings: Vec<String> = self.s.tree.nodes[n]
            .learnings
            .iter()
            .map(|&l| self.s.learnings[l].text.clone())
            .collect();
        let views: Vec<align::CandidateView<'_>> = chosen
            .iter()
            .zip(&peeks)
            .map(|(c, e)| align::CandidateView {
                question: &c.question,
                evidence: e,
            })
            .collect();
        let (scores, completion) =
            align::score(self.r.llm, &self.s.persona, &parent_findings, &views)?;
        self.account(Stage::Alignment, &completion);
        let parent_alignment = utility::alignment(&scores.current);
        let centroid = utility::mean_vector(&self.learning_vectors);
        let child_depth = self.s.tree.nodes[n].depth + 1;
        let mut scored = Vec::with_capacity(chosen.len());
        let mut values = Vec::with_capacity(chosen.len());
        for (i, c) in chosen.iter().enumerate() {
            let evidence_mean = if peeks[i].is_empty() {
                None
            } else {
                let texts: Vec<String> = peeks[i]
                    .iter()
                    .map(|e| format!("{}\n{}", e.title, e.text))
                    .collect();
                let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
                utility::mean_vector(&self.r.embedder.embed(&refs)?)
            };
            let u = Utility::new(
                utility::alignment(&scores.candidates[i]),
                parent_alignment,
                utility::explore(&c.tags, &self.s.tags, settings.weights.explore_epsilon),
                utility::info_gain(evidence_mean.as_deref(), centroid.as_deref()),
                &settings.weights,
            );
            let cost = utility::execution_cost(settings.depth, settings.breadth, child_depth);
            values.push(pause::CandidateValue {
                utility: u.total,
                confidence: c.confidence,
                execution_cost: cost,
            });
            scored.push(events::ScoredCandidate {
                follow_up: c.clone(),
                expected_evidence: peeks[i].iter().map(|e| e.title.clone()).collect(),
                utility: u,
                execution_cost: cost,
            });
        }

        // Pause rule: the root counts as its own direction; below it, the tolerance is shared
        // by the active top-level directions that grow (steering and gap nodes do not).
        let direction = self.s.tree.nodes[n].direction;
        let active = if direction.is_none() {
            1
        } else {
            self.s
                .tree
                .directions()
                .iter()
                .filter(|&&d| {
                    let node = &self.s.tree.nodes[d];
                    node.origin.expands() && node.status != tree::Status::Canceled
                })
                .count()
                .max(1) as u32
        };
        let pauses_here = self.s.pauses.get(&direction).copied().unwrap_or(0);
        let decision = pause::decide(&values, &settings.pause, pauses_here, active);
        let asked = decision.ask && self.r.interaction.can_ask();
        tracing::info!(node = n, "{}", decision.explain());
        self.emit(Event::PauseDecided {
            node: n,
            candidates: scored,
            parent_alignment,
            decision: decision.clone(),
            asked,
        });

        struct Child {
            follow_up: FollowUp,
            origin: Origin,
            prefetched: Vec<Evidence>,
            provenance: Provenance,
            priority: u8,
        }
        let planned = |c: FollowUp, peek: Vec<Evidence>| Child {
            origin: if c.wild_card {
                Origin::WildCard
            } else {
                Origin::Planned
            },
            priority: todo::priority_from_confidence(c.confidence),
            follow_up: c,
            prefetched: peek,
            provenance: Provenance::InitialQuery,
        };
        let mut children: Vec<Child> = Vec::new();
        if asked {
            let questions: Vec<String> = chosen.iter().map(|c| c.question.clone()).collect();
            let (question, completion) = question::generate(
                self.r.llm,
                &self.s.query,
                &self.s.persona,
                n,
                &questions,
                decision.explain(),
            )?;
            self.account(Stage::Question, &completion);
            self.emit(Event::Question {
                question: question.clone(),
            });
            let mut answer = self.r.interaction.ask(&question)?;
            answer.chosen.retain(|&c| c >= 1 && c <= chosen.len());
            answer.new_questions.retain(|q| !q.trim().is_empty());
            self.emit(Event::Answer {
                node: n,
                answer: answer.clone(),
            });
            if answer.chosen.is_empty() && answer.new_questions.is_empty() {
                // Nothing picked: the user let the system go on with every direction.
                children.extend(chosen.into_iter().zip(peeks).map(|(c, p)| planned(c, p)));
            } else {
                let mut peeks: Vec<Vec<Evidence>> = peeks;
                for &i in &answer.chosen {
                    let mut child =
                        planned(chosen[i - 1].clone(), std::mem::take(&mut peeks[i - 1]));
                    child.provenance = Provenance::UserPause;
                    child.priority = todo::ROOT_PRIORITY;
                    children.push(child);
                }
                for q in &answer.new_questions {
                    children.push(Child {
                        follow_up: FollowUp {
                            question: q.trim().to_string(),
                            confidence: 1.0,
                            tags: Vec::new(),
                            wild_card: false,
                        },
                        origin: Origin::User,
                        prefetched: Vec::new(),
                        provenance: Provenance::UserPause,
                        priority: todo::STEERING_PRIORITY,
                    });
                }
            }
            if !answer.is_empty() {
                let mut persona = self.s.persona.clone();
                let before = persona.clone();
                let (update, completion) =
                    persona::update(self.r.llm, &mut persona, &answer.describe(&question))?;
                self.account(Stage::Persona, &completion);
                self.emit_persona_update(before, persona, update.additional_persona_info.trim());
            }
        } else {
            children.extend(chosen.into_iter().zip(peeks).map(|(c, p)| planned(c, p)));
        }

        for c in children {
            self.add_node(
                n,
                &c.follow_up,
                c.origin,
                c.prefetched,
                c.provenance,
                c.priority,
            );
        }
        Ok(())
    }

    fn emit_persona_update(&mut self, before: Persona, persona: Persona, info: &str) {
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

    /// Reflection: applies queued steering messages (`messages`, a snapshot — anything that
    /// arrives meanwhile waits for the next boundary) and, at the end of a level, turns
    /// knowledge gaps into tasks and cancels obsolete ones.
    fn reflect(&mut self, level: Option<u32>, messages: Vec<Message>) -> Result<(), ResearchError> {
        let pending: Vec<Task> = self.s.todo.pending().into_iter().cloned().collect();
        let completed: Vec<Task> = self
            .s
            .todo
            .tasks
            .iter()
            .filter(|t| t.status == TaskStatus::Completed)
            .cloned()
            .collect();
        let findings: Vec<String> = self.s.learnings.iter().map(|l| l.text.clone()).collect();
        let directives_text = self.s.directives.prompt_text();
        let pending_refs: Vec<&Task> = pending.iter().collect();
        let completed_refs: Vec<&Task> = completed.iter().collect();
        let input = reflect::ReflectInput {
            query: &self.s.query,
            persona: &self.s.persona,
            directives: &directives_text,
            current_date: &self.s.date,
            findings: &findings,
            pending: &pending_refs,
            completed: &completed_refs,
            messages: &messages,
            gaps: level.is_some(),
        };
        let reflection = match reflect::reflect(self.r.llm, &input) {
            Ok((r, completion)) => {
                self.account(Stage::Reflect, &completion);
                r
            }
            // The messages are still applied from what they say plainly.
            Err(ResearchError::Llm(e @ crate::llm::LlmError::InvalidOutput { .. })) => {
                tracing::warn!("reflection output unusable: {e}");
                reflect::Reflection::default()
            }
            Err(e) => return Err(e),
        };

        let mut exclusions = Vec::new();
        let mut focus = Vec::new();
        let mut new_tasks = Vec::new();
        for m in &messages {
            let parsed = steering::parse_message(&m.text);
            exclusions.extend(parsed.exclusions);
            focus.extend(parsed.focus);
            new_tasks.extend(parsed.tasks);
        }
        let summary = if messages.is_empty() {
            String::new()
        } else if reflection.steering_summary.trim().is_empty() {
            messages
                .iter()
                .map(|m| tree::one_line(&m.text, 200))
                .collect::<Vec<_>>()
                .join("; ")
        } else {
            reflection.steering_summary.trim().to_string()
        };
        if !messages.is_empty() {
            // The model's directives count only when they come from what the user wrote.
            let said: String = messages.iter().map(|m| format!("{}\n", m.text)).collect();
            exclusions.extend(
                reflection
                    .exclude
                    .iter()
                    .filter(|x| steering::grounded(x, &said, true))
                    .cloned(),
            );
            focus.extend(
                reflection
                    .focus
                    .iter()
                    .filter(|f| steering::grounded(f, &said, false))
                    .cloned(),
            );
            // So do its tasks: SmolLM2 once added the task "steering_summary".
            new_tasks.extend(
                reflection
                    .add_tasks
                    .iter()
                    .filter(|t| steering::grounded(t, &said, false))
                    .cloned(),
            );
            self.applying = messages.iter().map(|m| m.id).collect();
            self.emit(Event::SteeringApplied {
                messages: messages.clone(),
                summary: summary.clone(),
            });
        }
        let added = self.s.directives.clone().extend(&exclusions, &focus);
        if !added.is_empty() {
            self.emit(Event::DirectivesAdded {
                exclusions: added.exclusions,
                focus: added.focus,
            });
        }

        // Cancel what the user excluded, then what reflection found obsolete.
        let mut canceled = Vec::new();
        for t in &pending {
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
            format!("steering: {}", tree::one_line(&summary, 120))
        };
        for &id in &reflection.cancel_tasks {
            if !canceled.contains(&id) {
                self.update_task(id, Some(TaskStatus::Canceled), None, &why);
                canceled.push(id);
            }
        }
        if !messages.is_empty() {
            for p in &reflection.reprioritise {
                if !canceled.contains(&p.task) {
                    self.update_task(p.task, None, Some(p.priority), &why);
                }
            }
        }

        // New tasks: the user's requests under the root, knowledge gaps under the node of
        // the finished level they are closest to.
        for text in new_tasks {
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
        let mut gaps = Vec::new();
        if let Some(level) = level {
            for gap in reflection.knowledge_gaps.iter().take(reflect::MAX_GAPS) {
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
        }

        if !messages.is_empty() {
            let before = self.s.persona.clone();
            let mut persona = before.clone();
            persona.add_text(&reflection.persona_info);
            // What the user excluded is no longer something the report must cover.
            let directives = &self.s.directives;
            persona.checklist.retain(|c| !directives.excludes(c));
            // New aspects must come from the messages too (a small model tends to copy task
            // titles here).
            let said: String = messages.iter().map(|m| format!("{}\n", m.text)).collect();
            let items: Vec<String> = reflection
                .new_checklist_items
                .iter()
                .filter(|c| !directives.excludes(c) && steering::grounded(c, &said, false))
                .cloned()
                .collect();
            persona.add_items(&items);
            self.emit_persona_update(before, persona, reflection.persona_info.trim());
        }
        self.emit(Event::Reflected {
            level,
            knowledge_gaps: gaps,
            canceled,
        });
        Ok(())
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

    /// The researched node of `level` (or the one above the depth limit) closest to `gap`.
    fn gap_parent(&mut self, gap: &str, level: u32) -> Result<usize, ResearchError> {
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

    fn write_report(&mut self) -> Result<(), ResearchError> {
        // The report leaves out canceled directions and what the user excluded.
        let mut tree = self.s.tree.clone();
        let statuses: Vec<tree::Status> = tree.nodes.iter().map(|n| n.status).collect();
        tree.nodes[0]
            .children
            .retain(|&c| statuses[c] != tree::Status::Canceled);
        for node in &mut tree.nodes {
            node.learnings
                .retain(|&l| !self.s.directives.excludes(&self.s.learnings[l].text));
        }
        let input = report::ReportInput {
            query: &self.s.query,
            persona: &self.s.persona,
            profile: &self.s.profile,
            tree: &tree,
            learnings: &self.s.learnings,
            evidence: &self.s.evidence,
            current_date: &self.s.date,
        };
        let mut sections = Vec::new();
        let (report, completions) = report::write(self.r.llm, &input, &mut |i, h| {
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
}
