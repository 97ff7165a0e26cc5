//! Progress of long work (an import, embedding, indexing a corpus, reading history into
//! memory), which every stage reports the same way and each face shows its own way: a bar or a
//! line every few seconds in the CLI, events in the window.

/// Progress of a long operation, for a bar in the CLI or events in the UI.
pub trait Progress {
    /// A new phase: what it is and how many units it has, when known.
    fn begin(&self, _what: &str, _total: Option<u64>) {}
    /// `n` more units done.
    fn advance(&self, _n: u64) {}
    /// A line worth showing above the bar.
    fn note(&self, _line: &str) {}
    /// The phase is over.
    fn end(&self) {}
}

/// Progress that shows nothing.
pub struct NoProgress;
impl Progress for NoProgress {}
