//! Wrappers that make long evaluation sweeps affordable and accountable.
//!
//! * [`ReplayCache`] remembers every completion in a JSON Lines file, keyed by the model and the
//!   exact request. Decoding is deterministic for a fixed request (greedy, or seeded sampling)
//!   on one build and machine, so a repeated call (the same research root under four pause
//!   costs, a judge asked again about an identical report, a sweep restarted after a crash)
//!   returns the stored completion instead of running the model again. The stored completion
//!   keeps its original usage and timing, so accounting is that of the computation, not of
//!   the replay.
//! * [`Metered`] sums the usage and time of the calls that go through it, so one stage of a
//!   run (profile, research, …) can be accounted on its own.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use rudder::llm::{CancelToken, Completion, FinishReason, Llm, LlmError, Request, Usage};

/// One line of the cache file.
#[derive(Serialize, Deserialize)]
struct Entry {
    key: String,
    completion: Completion,
}

/// How a cache has been used since it was opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplayStats {
    /// Completions loaded from the file when it was opened.
    pub loaded: u64,
    /// Calls answered from the cache.
    pub replayed: u64,
    /// Calls that ran the model (and were stored).
    pub computed: u64,
}

struct CacheState {
    entries: HashMap<String, Completion>,
    file: File,
    stats: ReplayStats,
}

/// An [`Llm`] that answers a request it has seen before from a file of stored completions.
pub struct ReplayCache<'a> {
    inner: &'a dyn Llm,
    path: PathBuf,
    state: Mutex<CacheState>,
}

/// The cache key: the model's name and every field of the request (messages, options, output
/// format). `Debug` prints all of them, floats included, the same way on every run.
fn request_key(model: &str, request: &Request) -> String {
    let mut hasher = Sha256::new();
    hasher.update(model.as_bytes());
    hasher.update([0]);
    hasher.update(format!("{request:?}").as_bytes());
    hex::encode(hasher.finalize())
}

impl<'a> ReplayCache<'a> {
    /// Opens (or creates) the cache file. A line that does not parse (the last line of a run
    /// that was killed mid-write) is skipped with a warning; that call just runs again.
    pub fn open(inner: &'a dyn Llm, path: &Path) -> std::io::Result<Self> {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let mut entries = HashMap::new();
        if path.exists() {
            let reader = BufReader::new(File::open(path)?);
            for (index, line) in reader.lines().enumerate() {
                let line = line?;
                if line.trim().is_empty() {
                    continue;
                }
                match serde_json::from_str::<Entry>(&line) {
                    Ok(entry) => {
                        entries.insert(entry.key, entry.completion);
                    }
                    Err(e) => tracing::warn!(
                        file = %path.display(),
                        line = index + 1,
                        error = %e,
                        "skipping an unreadable cached completion"
                    ),
                }
            }
        }
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        let stats = ReplayStats {
            loaded: entries.len() as u64,
            ..ReplayStats::default()
        };
        Ok(Self {
            inner,
            path: path.to_path_buf(),
            state: Mutex::new(CacheState {
                entries,
                file,
                stats,
            }),
        })
    }

    pub fn stats(&self) -> ReplayStats {
        self.lock().stats
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, CacheState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Llm for ReplayCache<'_> {
    fn model_name(&self) -> &str {
        self.inner.model_name()
    }

    fn parallelism(&self) -> usize {
        self.inner.parallelism()
    }

    fn complete(
        &self,
        request: &Request,
        on_text: &mut dyn FnMut(&str),
        cancel: &CancelToken,
    ) -> Result<Completion, LlmError> {
        let key = request_key(self.inner.model_name(), request);
        let hit = {
            let mut state = self.lock();
            let hit = state.entries.get(&key).cloned();
            if hit.is_some() {
                state.stats.replayed += 1;
            }
            hit
        };
        if let Some(completion) = hit {
            on_text(&completion.text);
            return Ok(completion);
        }
        let completion = self.inner.complete(request, on_text, cancel)?;
        // A cancelled call is not the answer to its request.
        if completion.finish == FinishReason::Cancelled {
            return Ok(completion);
        }
        let mut state = self.lock();
        state.stats.computed += 1;
        let line = serde_json::to_string(&Entry {
            key: key.clone(),
            completion: completion.clone(),
        })
        .map_err(|e| LlmError::Backend(format!("storing a completion: {e}")))?;
        // The cache only saves time: a failed write loses nothing but a later replay.
        if let Err(e) = writeln!(state.file, "{line}").and_then(|()| state.file.flush()) {
            tracing::warn!(file = %self.path.display(), error = %e, "could not store a completion");
        }
        state.entries.insert(key, completion.clone());
        Ok(completion)
    }
}

/// What a [`Metered`] model has spent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Metering {
    pub usage: Usage,
    /// Sum of the calls' own durations (a replayed call counts its original time).
    pub seconds: f64,
}

impl std::ops::AddAssign for Metering {
    fn add_assign(&mut self, other: Self) {
        self.usage += other.usage;
        self.seconds += other.seconds;
    }
}

/// An [`Llm`] that adds up the usage and time of every call made through it.
pub struct Metered<'a> {
    inner: &'a dyn Llm,
    // Durations add exactly, so the total does not depend on the order in which concurrent
    // calls finish (summing f64 seconds would, in the last digits).
    total: Mutex<(Usage, std::time::Duration)>,
}

impl<'a> Metered<'a> {
    pub fn new(inner: &'a dyn Llm) -> Self {
        Self {
            inner,
            total: Mutex::new((Usage::default(), std::time::Duration::ZERO)),
        }
    }

    pub fn metering(&self) -> Metering {
        let (usage, time) = *self.total.lock().unwrap_or_else(|e| e.into_inner());
        Metering {
            usage,
            seconds: time.as_secs_f64(),
        }
    }
}

impl Llm for Metered<'_> {
    fn model_name(&self) -> &str {
        self.inner.model_name()
    }

    fn parallelism(&self) -> usize {
        self.inner.parallelism()
    }

    fn complete(
        &self,
        request: &Request,
        on_text: &mut dyn FnMut(&str),
        cancel: &CancelToken,
    ) -> Result<Completion, LlmError> {
        let completion = self.inner.complete(request, on_text, cancel)?;
        let mut total = self.total.lock().unwrap_or_else(|e| e.into_inner());
        total.0 += completion.usage;
        total.1 += completion.timing.total;
        Ok(completion)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rudder::llm::{GenerationOptions, Message, OutputFormat, Timing};
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::Duration;

    /// Answers with the number of calls so far, so a replay is told apart from a new call.
    struct Counting(AtomicU64);

    impl Llm for Counting {
        fn model_name(&self) -> &str {
            "counting"
        }
        fn complete(
            &self,
            request: &Request,
            on_text: &mut dyn FnMut(&str),
            _cancel: &CancelToken,
        ) -> Result<Completion, LlmError> {
            let n = self.0.fetch_add(1, Ordering::SeqCst) + 1;
            let text = format!("{} #{n}", request.messages[0].content);
            on_text(&text);
            Ok(Completion {
                text,
                usage: Usage {
                    prompt_tokens: 10,
                    cached_tokens: 0,
                    generated_tokens: 3,
                    calls: 1,
                },
                timing: Timing {
                    total: Duration::from_millis(1500),
                    ..Timing::default()
                },
                finish: FinishReason::Stop,
            })
        }
    }

    fn request(text: &str, seed: u32) -> Request {
        Request {
            messages: vec![Message::user(text)],
            options: GenerationOptions {
                seed,
                temperature: 0.0,
                ..GenerationOptions::default()
            },
            format: OutputFormat::Text,
        }
    }

    #[test]
    fn repeated_requests_replay_with_their_original_cost_across_reopens() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache.jsonl");
        let model = Counting(AtomicU64::new(0));
        {
            let cache = ReplayCache::open(&model, &path).unwrap();
            let metered = Metered::new(&cache);
            let first = metered.complete_text(&request("a", 1)).unwrap();
            let again = metered.complete_text(&request("a", 1)).unwrap();
            let other_seed = metered.complete_text(&request("a", 2)).unwrap();
            assert_eq!(first.text, "a #1");
            assert_eq!(again, first, "a repeated request is replayed");
            assert_eq!(
                other_seed.text, "a #2",
                "any field of the request is in the key"
            );
            assert_eq!(
                cache.stats(),
                ReplayStats {
                    loaded: 0,
                    replayed: 1,
                    computed: 2
                }
            );
            let metering = metered.metering();
            assert_eq!(
                metering.usage.calls, 3,
                "replays count as the calls they stand for"
            );
            assert!((metering.seconds - 4.5).abs() < 1e-9);
        }
        // A half-written last line (a killed run) is skipped, the rest is replayed.
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"{\"key\": \"abc\", \"compl")
            .unwrap();
        let cache = ReplayCache::open(&model, &path).unwrap();
        assert_eq!(cache.stats().loaded, 2);
        let mut streamed = String::new();
        let replay = cache
            .complete(
                &request("a", 2),
                &mut |t| streamed.push_str(t),
                &CancelToken::new(),
            )
            .unwrap();
        assert_eq!(replay.text, "a #2");
        assert_eq!(streamed, "a #2", "a replay still streams its text");
        assert_eq!(
            model.0.load(Ordering::SeqCst),
            2,
            "the model was not called again"
        );
        let fresh = cache.complete_text(&request("b", 1)).unwrap();
        assert_eq!(fresh.text, "b #3");
    }
}
