//! Everything the loop does, as typed events on one stream: the CLI prints them, the desktop
//! app forwards them to the window, and the session log stores them.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::clarify::{ClarifyAnswer, ClarifyQuestion};
use super::interaction::{PauseAnswer, PauseQuestion};
use super::pause::PauseDecision;
use super::persona::Persona;
use super::report::Report;
use super::steering::Message;
use super::todo::{Task, TaskStatus};
use super::tree::{FollowUp, Learning, Origin};
use super::utility::Utility;
use crate::llm::Usage;
use crate::sources::Evidence;

/// Which part of the loop spent tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    Profile,
    Persona,
    Research,
    Alignment,
    Question,
    Report,
    Clarify,
    Reflect,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Profile => "profile",
            Stage::Persona => "persona",
            Stage::Research => "research",
            Stage::Alignment => "alignment",
            Stage::Question => "question",
            Stage::Report => "report",
            Stage::Clarify => "clarify",
            Stage::Reflect => "reflect",
        }
    }
}

/// One candidate as scored at a frontier node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ScoredCandidate {
    pub follow_up: FollowUp,
    /// Titles of the evidence the peek found.
    pub expected_evidence: Vec<String>,
    pub utility: Utility,
    pub execution_cost: f32,
}

/// Something that happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(rename = "ResearchEvent"))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    Started {
        query: String,
        depth: u32,
        breadth: u32,
        sources: Vec<String>,
        model: String,
        /// True when a configured source sends queries off this machine.
        remote_sources: bool,
        /// The date the prompts use, fixed for the session so a resumed run sees the same.
        #[serde(default)]
        date: String,
        /// What the user said about themselves, and their query-aware profile.
        #[serde(default)]
        persona_text: String,
        #[serde(default)]
        profile: String,
        /// The question as the user asked it, when it is researched in English (`query`)
        /// and the report translated back; empty when it is researched as asked.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        asked: String,
    },
    /// A clarifying question before research (and the candidates dropped on the way).
    ClarifyAsked {
        question: ClarifyQuestion,
        #[serde(default)]
        rejected: Vec<super::clarify::Rejected>,
    },
    ClarifyAnswered {
        turn: usize,
        answer: ClarifyAnswer,
    },
    /// The clarification dialogue summarised (or skipped: then `turns` is 0 and the brief is
    /// the query).
    BriefRefined {
        brief: String,
        checklist: Vec<String>,
        turns: usize,
    },
    PersonaSeeded {
        persona: Persona,
        from_profile: bool,
        /// Checklist items the model inferred from the question, not from anything the user
        /// said: they steer the research, but the report does not call them the reader's needs.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        guessed: Vec<String>,
    },
    NodeAdded {
        id: usize,
        parent: Option<usize>,
        depth: u32,
        question: String,
        origin: Origin,
        #[serde(default = "one")]
        confidence: f32,
        #[serde(default)]
        tags: Vec<String>,
        /// Evidence the peek already found for it.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        prefetched: Vec<Evidence>,
    },
    NodeStarted {
        id: usize,
    },
    Learning {
        learning: Learning,
    },
    NodeResearched {
        id: usize,
        evidence: usize,
        learnings: usize,
        tags: Vec<String>,
        follow_ups: Vec<FollowUp>,
        /// The passages it was shown (learnings cite them by key).
        #[serde(default)]
        sources: Vec<Evidence>,
    },
    /// A task joined the plan.
    TaskAdded {
        task: Task,
    },
    /// A task changed status or priority.
    TaskUpdated {
        id: usize,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        status: Option<TaskStatus>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        priority: Option<u8>,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        note: String,
    },
    /// Steering messages applied together by one reflection (each exactly once).
    SteeringApplied {
        messages: Vec<Message>,
        summary: String,
    },
    /// New standing exclusions and focus directives.
    DirectivesAdded {
        exclusions: Vec<String>,
        focus: Vec<String>,
    },
    /// A reflection finished: after a level of the tree (`level`), or for steering alone.
    Reflected {
        level: Option<u32>,
        knowledge_gaps: Vec<String>,
        canceled: Vec<usize>,
    },
    /// MMR's choice among the planner's candidates at a frontier node.
    CandidatesSelected {
        node: usize,
        candidates: Vec<FollowUp>,
        /// Indices into `candidates`, in pick order.
        selected: Vec<usize>,
    },
    PauseDecided {
        node: usize,
        candidates: Vec<ScoredCandidate>,
        parent_alignment: f32,
        decision: PauseDecision,
        /// False when the rule said ask but asking was switched off.
        asked: bool,
    },
    Question {
        question: PauseQuestion,
    },
    Answer {
        node: usize,
        answer: PauseAnswer,
    },
    PersonaUpdated {
        persona: Persona,
        added_text: String,
        added_items: Vec<String>,
    },
    ReportSection {
        index: usize,
        heading: String,
    },
    ReportWritten {
        title: String,
        words: usize,
        citations: usize,
        /// The report itself, so a session's log holds everything it produced.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        report: Option<Box<Report>>,
    },
    Usage {
        stage: Stage,
        usage: Usage,
        seconds: f64,
    },
    Finished {
        usage: Usage,
        seconds: f64,
        pauses: u32,
    },
}

fn one() -> f32 {
    1.0
}

/// An event with its position in the stream and when it happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Envelope {
    pub seq: u64,
    #[cfg_attr(feature = "ts", ts(type = "string"))]
    pub at: DateTime<Utc>,
    pub event: Event,
}

/// Where events go.
pub trait EventSink {
    fn emit(&mut self, event: &Envelope);
}

impl<F: FnMut(&Envelope)> EventSink for F {
    fn emit(&mut self, event: &Envelope) {
        self(event)
    }
}

/// Keeps every event, for tests and for writing the log after a run.
#[derive(Debug, Default)]
pub struct Collect(pub Vec<Envelope>);

impl EventSink for Collect {
    fn emit(&mut self, event: &Envelope) {
        self.0.push(event.clone());
    }
}
