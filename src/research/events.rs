//! Everything the loop does, as typed events on one stream: the CLI prints them, the desktop
//! app forwards them to the window, and the session log stores them.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::interaction::{PauseAnswer, PauseQuestion};
use super::pause::PauseDecision;
use super::persona::Persona;
use super::tree::{FollowUp, Learning, Origin};
use super::utility::Utility;
use crate::llm::Usage;

/// Which part of the loop spent tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    Profile,
    Persona,
    Research,
    Alignment,
    Question,
    Report,
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
        }
    }
}

/// One candidate as scored at a frontier node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScoredCandidate {
    pub follow_up: FollowUp,
    /// Titles of the evidence the peek found.
    pub expected_evidence: Vec<String>,
    pub utility: Utility,
    pub execution_cost: f32,
}

/// Something that happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    },
    PersonaSeeded {
        persona: Persona,
        from_profile: bool,
    },
    NodeAdded {
        id: usize,
        parent: Option<usize>,
        depth: u32,
        question: String,
        origin: Origin,
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

/// An event with its position in the stream and when it happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    pub seq: u64,
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
