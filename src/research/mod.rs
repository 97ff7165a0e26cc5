//! The steerable research loop (STEER §2, EDR §2.2–3.5; docs/architecture.md).
//!
//! A run is a sequence of steps, each committed to a [`Journal`] as one batch of events, and
//! its state ([`state::ResearchState`]) is a fold over those events — so a killed run resumes
//! from its log ([`Researcher::resume`]). The [`engine`] holds the run: it emits and commits
//! events and drives the loop; the [`scheduler`] decides, from the folded state alone, which
//! step comes next; each step is a module of [`steps`]:
//!
//! * clarify — a few clarifying questions refine the brief ([`clarify`]);
//! * seed — the persona is seeded from the brief and the profile, and the root planted;
//! * investigate — level by level up to depth `D`, every node is a task of the todo plan
//!   ([`todo`]) and is researched over the sources into learnings tied to their evidence
//!   ([`node`]);
//! * plan — at each frontier node the follow-ups are narrowed to `K` by MMR ([`mmr`]), peeked
//!   at (retrieval only), scored ([`align`], [`utility`]), and the pause rule ([`pause`])
//!   decides whether asking the user ([`interaction`], [`question`]) is worth the
//!   interruption; answers update the live persona ([`persona`]);
//! * reflect — after each level, knowledge gaps become tasks and obsolete ones are canceled
//!   ([`reflect`]); at every step boundary, queued steering messages ([`steering`]) are
//!   applied together;
//! * report — the learnings become a cited report ([`report`], [`html`]).
//!
//! Everything that happens is an [`events::Event`].

pub mod align;
pub mod clarify;
mod engine;
mod error;
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
mod scheduler;
pub mod state;
pub mod steering;
mod steps;
pub mod todo;
pub mod tree;
pub mod utility;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use error::ResearchError;
pub use events::{Envelope, Event, EventSink, Stage};
pub use interaction::{Interaction, NeverAsk, PauseAnswer, PauseQuestion, Scripted};
pub use pause::{PauseDecision, PauseSettings};
pub use persona::Persona;
pub use report::Report;
pub use state::ResearchState;
pub use steering::{Directives, Journal, MemoryJournal};
pub use steps::needs::{sentence_for_need, Found};
pub use todo::{Provenance, Task, TaskStatus, TodoPlan};
pub use tree::{FollowUp, Learning, Node, Origin, Tree};
pub use utility::{TagCounts, Utility, UtilityWeights};

use crate::embed::Embedder;
use crate::llm::{Llm, Usage};
use crate::sources::{Evidence, Sources};

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
    /// How far down the ranking a node looks for passages no other node took, as a multiple of
    /// `evidence_per_node`: a taken passage fills a place only when too few fresh ones are
    /// among that many, and one from below the best matches must clear a relevance floor
    /// (1: the best matches, taken or not). With 2, a depth-2 printing-press run read 23
    /// distinct passages where 1 read 14 (`Run::search_fresh`).
    pub fresh_evidence_pool: usize,
    /// Reflect after each level of the tree (knowledge gaps, obsolete tasks).
    pub reflect: bool,
    /// Most clarifying questions before research (0 turns clarification off).
    pub clarify_turns: u32,
    /// The lowest P(yes) the chat model must give that a report sentence's cited passage
    /// states it, which way round ([`crate::checks::judge`]); 0 leaves the embedding match
    /// alone; None: the threshold calibrated for the model in use
    /// ([`crate::checks::judge::threshold_for`]).
    pub support_judge: Option<f32>,
    /// Judge each learning at its research node too (when the support judge is on), so one
    /// that turns its passage around is refused and asked again there, before it becomes a
    /// finding and shapes the follow-up questions. On a depth-2 × breadth-3 run it made about
    /// 18 calls and refused one claim the run without it opened its report with.
    pub judge_learnings: bool,
    /// The lowest score the chat model must give that a finding helps answer the question for
    /// the report to place it ([`crate::checks::judge::judge_findings`]); 0 leaves the
    /// embedding cuts alone; None: the threshold calibrated for the model in use
    /// ([`crate::checks::judge::finding_threshold_for`]).
    pub finding_judge: Option<f32>,
    /// The lowest score (the need judge's, plus the cosine to the need) a sentence of the
    /// documents must have to be looked up for one of the reader's needs before the report
    /// (`steps::needs`); 0 turns the lookup off; None: the threshold calibrated for the model
    /// in use ([`crate::checks::judge::need_lookup_threshold_for`]).
    pub need_lookup: Option<f32>,
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
            fresh_evidence_pool: 2,
            reflect: true,
            clarify_turns: 3,
            support_judge: None,
            judge_learnings: true,
            finding_judge: None,
            need_lookup: None,
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
    /// What the history says of the user that the relevance judge did not tie to the question
    /// ([`crate::profile::QueryProfile::considered`]): in no prompt, and a need only when the
    /// documents show it matters (`steps::needs`).
    pub considered: Vec<String>,
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

/// The saved defaults (`config::ResearchDefaults`, the `[research]` table of `settings.toml`)
/// are the loop's own (`ResearchSettings::default()`, the design's
/// values): one place for every default.
impl Default for crate::config::ResearchDefaults {
    fn default() -> Self {
        Self::from_settings(&ResearchSettings::default())
    }
}

impl crate::config::ResearchDefaults {
    /// The user-facing part of the loop's settings.
    pub fn from_settings(s: &ResearchSettings) -> Self {
        Self {
            depth: s.depth,
            breadth: s.breadth,
            c0: s.pause.base_cost,
            tol: s.pause.tolerance,
            lambda_explore: s.weights.lambda_explore,
            lambda_info: s.weights.lambda_info,
            clarify_turns: s.clarify_turns,
            always_ask: s.pause.always,
        }
    }

    /// The loop's settings: these values, the loop's defaults for the rest.
    pub fn to_settings(&self) -> ResearchSettings {
        let mut s = ResearchSettings {
            depth: self.depth,
            breadth: self.breadth,
            clarify_turns: self.clarify_turns,
            ..ResearchSettings::default()
        };
        s.pause.base_cost = self.c0;
        s.pause.tolerance = self.tol;
        s.pause.always = self.always_ask;
        s.weights.lambda_explore = self.lambda_explore;
        s.weights.lambda_info = self.lambda_info;
        s
    }
}
