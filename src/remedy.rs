//! What a person can do about an error. The engine names the remedy; each face words it — the
//! CLI as a command to run, the window as a screen to open — so no engine message names a CLI
//! command the window would then show. A leaf: every error type may name one
//! (`fn remedy(&self)`); [`crate::diagnose::remedy_of`] finds it through wrappers and causes.

/// A step that fixes an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Remedy {
    /// Download this model (again).
    FetchModel(String),
    /// See which models Rudder knows.
    ListModels,
    /// Give research something to read: documents, history, or the web.
    AddSources,
    /// See which documents the library holds.
    ListDocuments,
    /// See the statements Rudder inferred about the user.
    ListStatements,
    /// The session runs in another process: steer it there, it applies the message.
    SteerElsewhere(i64),
    /// The history database is damaged: import the exports again (they are the source).
    Reimport,
}
