//! What can go wrong in a research run.

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
    /// The user stopped the run; its committed steps stay, so it can be resumed.
    #[error("stopped by the user")]
    Stopped,
    #[error("steering: {0}")]
    Steering(String),
    #[error("{0}")]
    Session(String),
    #[error("no sources to research: add documents (`rudder docs add DIR`), import history, or enable web search")]
    NoSources,
}
