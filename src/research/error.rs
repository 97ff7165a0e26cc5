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
    #[error(transparent)]
    Prompt(#[from] crate::prompts::PromptError),
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
    #[error("no sources to research: no documents, no imported history, and web search is off")]
    NoSources,
}

impl ResearchError {
    /// What fixes it, when the person can (see [`crate::remedy`]).
    pub fn remedy(&self) -> Option<crate::remedy::Remedy> {
        match self {
            ResearchError::NoSources => Some(crate::remedy::Remedy::AddSources),
            ResearchError::Embed(e) => e.remedy(),
            ResearchError::Engine(e) => e.remedy(),
            _ => None,
        }
    }
}
