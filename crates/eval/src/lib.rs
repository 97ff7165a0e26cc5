//! Offline evaluations of the engine's stages against labelled cases (the crate
//! `rudder-eval`; its binary `rudder-eval` is what `rudder eval …` runs).
//!
//! * [`retrieval`] — history retrieval for query-aware profiles (BESPOKE §4.4, Table 5):
//!   nDCG@10, nDCG@20 and recall@20 of raw, CoT, pseudo-history, facet-probe and fused
//!   queries over synthetic users whose relevant sessions are labelled by hand.
//! * [`cases`] — persona × query × aspect cases with synthetic histories (STEER Appendix E/J).
//! * [`matchers`] — judge-free support and need matchers, calibrated on labelled pairs.
//! * [`quality`] — what the user gets, without a large judge: planted-needs users, calibrated
//!   embedding [`matchers`], profile need recall, report need uptake and hygiene.
//! * [`relevance`] — the profile's relevance judge (the model's P(yes)), calibrated on
//!   labelled (question, statement) pairs.
//! * [`score_report`] — any Markdown report (Rudder's or a peer's) scored against one
//!   corpus-grounded question: words, references, supported share, key-point recall.
//! * [`support_judge`] — the report's support judge (the model's P(yes) that a passage states a
//!   sentence, which way round), calibrated beside the embedding matcher on support pairs and
//!   turned pairs.

pub mod cases;
pub mod finding_judge;
pub mod judge;
pub mod matchers;
pub mod need_judge;
pub mod persona;
mod prompts;
pub mod quality;
pub mod relevance;
pub mod replay;
pub mod retrieval;
pub mod runner;
pub mod score_report;
pub mod summary;
pub mod support_judge;
pub mod user;

use std::path::PathBuf;

pub use judge::{Accounting, Alignment, Bespoke, Focus, Judge, JudgeSettings};
pub use matchers::{
    calibrate, profile_need_pairs, read_need_pairs, support_pairs, Calibration, Need, NeedMatcher,
    NeedPair, Prf, ScoredPair, SupportMatcher, SupportPair,
};
pub use persona::{Aspect, PersonaCase};
pub use user::{Exchange, SimulatedUser};

pub use cases::{
    build_cases, first_sentence, read_eval_cases, BuildOptions, BuildReport, CaseAspect,
    CasePersona, EvalCase, EvalQuery, EvalSource,
};
pub use retrieval::{
    load_cases, ndcg_at, recall_at, run_retrieval_eval, run_retrieval_eval_on, CaseRow, CaseScore,
    CategorySummary, ModeSummary, QueryCategory, RetrievalCase, RetrievalReport, TopHit, UserRow,
};

/// Errors from an evaluation. Each names the cases file (and line) or the case it is about.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A line of the cases file that is not a valid case.
    #[error("{path}:{line}: {message}")]
    BadCase {
        path: PathBuf,
        line: usize,
        message: String,
    },
    /// A case that parsed but cannot be evaluated (its history is missing, a labelled session
    /// is not in it, …).
    #[error("case {case}: {message}")]
    Case { case: String, message: String },
    /// A model call for a case failed, or its output stayed invalid after a retry.
    #[error("{case}: {stage}: {source}")]
    Generation {
        case: String,
        stage: &'static str,
        #[source]
        source: rudder::llm::LlmError,
    },
    /// A matcher could not embed its texts.
    #[error("matcher embedding: {source}")]
    MatcherEmbed {
        #[from]
        source: rudder::embed::EmbedError,
    },
    #[error("{case}: embedding: {source}")]
    Embed {
        case: String,
        #[source]
        source: rudder::embed::EmbedError,
    },
    #[error(transparent)]
    History(#[from] rudder::history::HistoryError),
    #[error(transparent)]
    Profile(#[from] rudder::profile::ProfileError),
    /// A judge call failed: the model could not run, or its output did not fit the schema.
    #[error("judge ({call}): {source}")]
    Judge {
        call: &'static str,
        #[source]
        source: rudder::llm::LlmError,
    },
    /// A judge was given nothing to judge against (a case without aspects, …).
    #[error("judge ({call}): {message}")]
    JudgeInput { call: &'static str, message: String },
    /// A judge prompt template failed to render.
    #[error("judge prompt: {0}")]
    JudgePrompt(String),
    /// The evaluation's settings are not ones a run accepts (a depth out of range, …).
    #[error("evaluation settings: {0}")]
    Config(String),
    /// A system's research run (or its profile) failed on a case.
    #[error("case {case}, system {system}: {message}")]
    Run {
        case: String,
        system: String,
        message: String,
    },
}

impl EvalError {
    fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        EvalError::Io {
            path: path.into(),
            source,
        }
    }
}

/// Writes an evaluation's `table.md` (Markdown) and `records.json` (`records`, pretty) under
/// `out`, creating it.
pub(crate) fn write_table_and_records<T: serde::Serialize>(
    out: &std::path::Path,
    table: &str,
    records: &T,
) -> Result<(), EvalError> {
    std::fs::create_dir_all(out).map_err(|e| EvalError::io(out, e))?;
    let path = out.join("table.md");
    std::fs::write(&path, table).map_err(|e| EvalError::io(&path, e))?;
    let path = out.join("records.json");
    let json =
        serde_json::to_string_pretty(records).map_err(|e| EvalError::Config(e.to_string()))?;
    std::fs::write(&path, json).map_err(|e| EvalError::io(&path, e))?;
    Ok(())
}
