//! `rudder bench memory`: how fast history is read into memory
//! ([`rudder::profile::memory::remember`]) with the chat model, on a synthetic history written
//! as real export files and imported as a user's would be.

use std::path::Path;

use rudder::embed::Embedder;
use rudder::history::{History, ImportOptions, NoProgress, Progress};
use rudder::llm::Llm;
use rudder::profile::memory::{remember, RememberOptions};
use serde::Serialize;

/// What one reading measured.
#[derive(Debug, Clone, Serialize)]
pub struct MemoryBench {
    pub model: String,
    pub sessions: u64,
    /// Sessions read by the model, and skipped by the cheap check.
    pub read: usize,
    pub skipped: usize,
    /// Of those read, the chats: read in code as what the person said, with no call.
    pub chats: usize,
    /// Calls (one per burst of searches) and retries.
    pub bursts: usize,
    pub retries: usize,
    pub statements: usize,
    pub refused: usize,
    pub prompt_tokens: u64,
    pub cached_tokens: u64,
    pub generated_tokens: u64,
    pub seconds: f64,
    pub sessions_per_second: f64,
    /// The budget is 10 minutes per 1,000 sessions on a 2-core machine.
    pub minutes_per_thousand: f64,
    /// The best supported statements (at most 15), with their kinds and sources, to read.
    pub sample: Vec<String>,
}

/// Writes a synthetic history of `sessions` (seed `seed`) under `dir`, imports and embeds it,
/// then reads it all into memory.
pub fn bench_memory(
    dir: &Path,
    sessions: usize,
    seed: u64,
    llm: &dyn Llm,
    embedder: (&dyn Embedder, &str),
    progress: &dyn Progress,
) -> anyhow::Result<MemoryBench> {
    let cfg = rudder_synth::SynthConfig {
        seed,
        sessions,
        ..Default::default()
    };
    let export = dir.join("export");
    rudder_synth::write_export(&cfg, &export)?;
    let mut history = History::open(&dir.join("history"))?;
    history.import(&[export], &ImportOptions::default(), &NoProgress)?;
    history.embed_pending(embedder.0, embedder.1, &NoProgress)?;
    let total = history.store().count_unread_for_memory()?;
    let done = remember(
        llm,
        &mut history,
        Some(embedder.0),
        &RememberOptions::default(),
        progress,
    )?;
    let memory = history.store().memory()?;
    let statements = memory.len();
    let sample = memory
        .iter()
        .take(15)
        .map(|m| format!("{}: {} ({} sessions)", m.kind, m.text, m.sessions.len()))
        .collect();
    Ok(MemoryBench {
        model: llm.model_name().to_string(),
        sessions: total,
        read: done.read,
        skipped: done.skipped,
        chats: done.chats,
        bursts: done.bursts,
        retries: done.retries,
        statements,
        refused: done.refused,
        prompt_tokens: done.usage.prompt_tokens,
        cached_tokens: done.usage.cached_tokens,
        generated_tokens: done.usage.generated_tokens,
        seconds: done.seconds,
        sessions_per_second: done.sessions_per_second(),
        minutes_per_thousand: done.seconds / 60.0 * 1000.0 / (total.max(1) as f64),
        sample,
    })
}
