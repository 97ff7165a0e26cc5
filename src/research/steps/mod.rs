//! The steps of a run, one module each; every step is a method of the engine's
//! [`Run`](super::engine::Run) that emits what it did as events.
//!
//! * [`clarify`] — one clarification turn, or the refined brief once the dialogue is over.
//! * [`seed`] — the persona from what the user said, and the root of the tree.
//! * [`investigate`] — one node researched over the sources into learnings.
//! * [`plan`] — a frontier node's follow-ups narrowed, scored, perhaps put to the user, added.
//! * [`reflect`] — steering applied; knowledge gaps and obsolete tasks after a level.
//! * [`needs`] — what the documents say for each of the reader's needs, before the report.
//! * [`report`] — the cited report.

mod clarify;
mod investigate;
pub(super) mod needs;
mod plan;
mod reflect;
mod report;
mod seed;

/// Cosine above which a question repeats one already in the tree (or a task already planned).
const REPEATED_QUESTION: f32 = 0.9;
