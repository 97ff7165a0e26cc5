//! Offline evaluations of the engine's stages against labelled cases.
//!
//! * [`retrieval`] — history retrieval for query-aware profiles (BESPOKE §4.4, Table 5):
//!   nDCG@10, nDCG@20 and recall@20 of raw, CoT, pseudo-history and fused queries over
//!   synthetic users whose relevant sessions are labelled by hand.

pub mod retrieval;

use std::path::PathBuf;

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
    #[error(transparent)]
    History(#[from] crate::history::HistoryError),
    #[error(transparent)]
    Profile(#[from] crate::profile::ProfileError),
}

impl EvalError {
    fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        EvalError::Io {
            path: path.into(),
            source,
        }
    }
}
