//! `rudder bench llm --parallel 1,2,4,8`: what decoding several sequences together buys.
//!
//! For each N the benchmark runs a child process (this binary, same command line, the hidden
//! `--parallel-one N` instead of `--parallel`), so each N gets a fresh model, a fresh KV cache
//! and its own peak RSS. The child loads the chat model with `llama.parallel = N` (the context
//! per sequence stays `llama.context_size`, so the KV cache grows N-fold) and makes N calls at
//! once in three phases:
//!
//! * **prompt**: N distinct ~300-word prompts sharing no prefix beyond the chat template's
//!   first tokens, one generated token each; aggregate rate = prompt tokens actually read (not
//!   served from the cache) / the phase's wall time;
//! * **generation**: N distinct short prompts, `--tokens` free tokens each (see
//!   [`aggregate_generation_rate`] for how the rate is counted);
//! * **grammar**: the same under a JSON-schema grammar ([`crate::BenchNotes`]).
//!
//! The child prints one JSON line ([`ParallelRun`]); the parent gathers them into
//! [`ParallelBench`] and renders [`render_table`].

use std::ffi::{OsStr, OsString};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use rudder::llm::llama::LlamaLlm;
use rudder::llm::{
    map_concurrent, CancelToken, GenerationOptions, Llm, Message, OutputFormat, Request,
};

use crate::{fresh_prompt, peak_rss_bytes, BenchNotes};

/// The hidden flag that makes `bench llm` measure a single N (in a child process).
pub const PARALLEL_ONE_FLAG: &str = "--parallel-one";
/// The flag it replaces.
pub const PARALLEL_FLAG: &str = "--parallel";

/// The values of `--parallel`: sequence counts, each at least 1, in the order given, without
/// repeats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParallelList(pub Vec<usize>);

/// Parses `1,2,4,8` (spaces around the numbers allowed; a repeated value is kept once).
pub fn parse_parallel_list(s: &str) -> Result<ParallelList, String> {
    let mut out: Vec<usize> = Vec::new();
    for part in s.split(',') {
        let part = part.trim();
        if part.is_empty() {
            return Err(format!(
                "`{s}` has an empty entry: write sequence counts separated by commas, e.g. 1,2,4,8"
            ));
        }
        let n: usize = part
            .parse()
            .map_err(|_| format!("`{part}` is not a whole number (e.g. --parallel 1,2,4,8)"))?;
        if n == 0 {
            return Err("a sequence count must be at least 1".into());
        }
        if n > 64 {
            return Err(format!(
                "{n} sequences is more than this benchmark runs (at most 64)"
            ));
        }
        if !out.contains(&n) {
            out.push(n);
        }
    }
    Ok(ParallelList(out))
}

/// The child's command line: `args` (this process's, without the program name) with every
/// `drop` flag and its value removed (`--flag V` and `--flag=V`), then `extra` appended. The
/// appended flags belong to the last subcommand, which is where they go.
pub fn child_args(args: &[OsString], drop: &[&str], extra: &[OsString]) -> Vec<OsString> {
    let mut out = Vec::with_capacity(args.len() + extra.len());
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        let text = arg.to_string_lossy();
        if drop.iter().any(|d| text == *d) {
            iter.next();
            continue;
        }
        if drop.iter().any(|d| text.starts_with(&format!("{d}="))) {
            continue;
        }
        out.push(arg.clone());
    }
    out.extend(extra.iter().cloned());
    out
}

/// Runs this binary again with `args` (stderr shared, so its progress shows) and returns the
/// last line it printed on stdout, parsed as JSON.
pub fn run_child<T: serde::de::DeserializeOwned>(
    args: &[OsString],
    what: &str,
) -> anyhow::Result<T> {
    let exe = own_exe()?;
    let output = std::process::Command::new(&exe)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| anyhow::anyhow!("cannot run {} for {what}: {e}", exe.display()))?;
    if !output.status.success() {
        anyhow::bail!("the child process for {what} failed ({})", output.status);
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .ok_or_else(|| anyhow::anyhow!("the child process for {what} printed nothing"))?;
    serde_json::from_str(line)
        .map_err(|e| anyhow::anyhow!("the child process for {what} printed `{line}`: {e}"))
}

/// This binary's path. When it was rebuilt while running (`cargo build` replaces the file),
/// Linux reports the old one as `… (deleted)`; the new file at the same path is used then.
pub fn own_exe() -> std::io::Result<std::path::PathBuf> {
    let exe = std::env::current_exe()?;
    Ok(live_path(exe, |p| p.exists()))
}

/// `exe`, or `exe` without a ` (deleted)` suffix when only that exists.
fn live_path(
    exe: std::path::PathBuf,
    exists: impl Fn(&std::path::Path) -> bool,
) -> std::path::PathBuf {
    if exists(&exe) {
        return exe;
    }
    match exe.to_str().and_then(|s| s.strip_suffix(" (deleted)")) {
        Some(live) if exists(std::path::Path::new(live)) => live.into(),
        _ => exe,
    }
}

/// `args` without `--parallel …`, with `--parallel-one n`.
pub fn child_args_for(args: &[OsString], n: usize) -> Vec<OsString> {
    child_args(
        args,
        &[PARALLEL_FLAG, PARALLEL_ONE_FLAG],
        &[
            OsStr::new(PARALLEL_ONE_FLAG).to_owned(),
            n.to_string().into(),
        ],
    )
}

/// One call of a phase, timed from the start of the phase.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CallFigures {
    pub prompt_tokens: u64,
    pub cached_tokens: u64,
    pub generated_tokens: u64,
    /// Seconds from the phase's start to the first text this call streamed (the backend's
    /// own time to first token when it streamed none).
    pub first_token_s: f64,
    /// Seconds from the phase's start to the call's return.
    pub end_s: f64,
}

/// N calls made at once.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseFigures {
    pub calls: Vec<CallFigures>,
    /// From before the first call was made to after the last returned.
    pub wall_s: f64,
    /// The aggregate rate (prompt tokens read, or generated tokens: see the phase).
    pub tokens_per_s: f64,
}

impl PhaseFigures {
    pub fn max_first_token_s(&self) -> f64 {
        self.calls
            .iter()
            .map(|c| c.first_token_s)
            .fold(0.0, f64::max)
    }
}

/// Prompt tokens read (those not served from the KV cache) by all calls / the phase's wall.
pub fn aggregate_prompt_rate(calls: &[CallFigures], wall_s: f64) -> f64 {
    let read: u64 = calls
        .iter()
        .map(|c| c.prompt_tokens.saturating_sub(c.cached_tokens))
        .sum();
    rate(read as f64, wall_s)
}

/// Aggregate generation rate of calls made together: the tokens each call generated after its
/// first, over the phase's wall time minus the latest first token.
///
/// A call's first token is paid for by reading its prompt, so it is left out, as the
/// single-sequence benchmark does. Once the last call has its first token every prompt has
/// been read, and from then on each decode step only generates; the window from there to the
/// end of the phase is generation time. The count is slightly generous when first tokens are
/// spread out (a call that started early generates a few tokens before the window opens; with
/// short prompts read together that is a decode step or two), and slightly stingy when a call
/// stops early (the tail then decodes fewer sequences per step); both effects are small next
/// to `--tokens` steps, and both are the same for the single-sequence row.
pub fn aggregate_generation_rate(calls: &[CallFigures], wall_s: f64) -> f64 {
    let after_first: u64 = calls
        .iter()
        .map(|c| c.generated_tokens.saturating_sub(1))
        .sum();
    let latest_first = calls.iter().map(|c| c.first_token_s).fold(0.0, f64::max);
    rate(after_first as f64, wall_s - latest_first)
}

fn rate(count: f64, seconds: f64) -> f64 {
    if seconds > 0.0 && seconds.is_finite() {
        count / seconds
    } else {
        0.0
    }
}

/// What one child measured for one N.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ParallelRun {
    /// Sequences decoded together (`llama.parallel`), and calls per phase.
    pub n: usize,
    pub model: String,
    pub model_bytes: u64,
    pub threads: usize,
    pub threads_batch: usize,
    pub gpu_layers: u32,
    /// `OffloadPlan::summary` of the run: `CPU`, or the backend, device and layers.
    #[serde(default)]
    pub offload: String,
    /// Context per sequence.
    pub context_per_sequence: u32,
    pub load_seconds: f64,
    /// `--tokens`: the most tokens a generation call may produce.
    pub max_tokens: u32,
    pub prompt: PhaseFigures,
    pub generation: PhaseFigures,
    pub grammar: PhaseFigures,
    /// The most calls the model had in flight at once (should be `n`).
    pub peak_concurrency: usize,
    pub peak_rss_bytes: Option<u64>,
}

/// The machine the figures come from.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Hardware {
    pub cpu: Option<String>,
    pub physical_cores: usize,
    pub logical_cores: usize,
}

impl Hardware {
    pub fn detect() -> Self {
        let cpu = std::fs::read_to_string("/proc/cpuinfo").ok().and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        });
        Self {
            cpu,
            physical_cores: rudder::config::physical_cores(),
            logical_cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }
}

/// One row of the table: a run and its ratios to the base row (N = 1, else the first).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParallelRow {
    pub n: usize,
    pub prompt_tokens_per_s: f64,
    pub generation_tokens_per_s: f64,
    pub generation_vs_base: Option<f64>,
    pub grammar_tokens_per_s: f64,
    pub grammar_vs_base: Option<f64>,
    pub peak_rss_bytes: Option<u64>,
    pub rss_vs_base: Option<f64>,
}

/// Results of `rudder bench llm --parallel …`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParallelBench {
    pub hardware: Hardware,
    /// The N the ratios are relative to.
    pub base_n: usize,
    pub rows: Vec<ParallelRow>,
    pub runs: Vec<ParallelRun>,
}

/// `value / base`, when both are usable.
pub fn ratio(value: f64, base: f64) -> Option<f64> {
    (base > 0.0 && value.is_finite() && base.is_finite()).then(|| value / base)
}

impl ParallelBench {
    /// The rows and their ratios to the run with N = 1 (else the first run).
    pub fn new(hardware: Hardware, runs: Vec<ParallelRun>) -> Self {
        let base = runs
            .iter()
            .find(|r| r.n == 1)
            .or(runs.first())
            .cloned()
            .unwrap_or_default();
        let rows = runs
            .iter()
            .map(|r| ParallelRow {
                n: r.n,
                prompt_tokens_per_s: r.prompt.tokens_per_s,
                generation_tokens_per_s: r.generation.tokens_per_s,
                generation_vs_base: ratio(r.generation.tokens_per_s, base.generation.tokens_per_s),
                grammar_tokens_per_s: r.grammar.tokens_per_s,
                grammar_vs_base: ratio(r.grammar.tokens_per_s, base.grammar.tokens_per_s),
                peak_rss_bytes: r.peak_rss_bytes,
                rss_vs_base: match (r.peak_rss_bytes, base.peak_rss_bytes) {
                    (Some(v), Some(b)) => ratio(v as f64, b as f64),
                    _ => None,
                },
            })
            .collect();
        Self {
            hardware,
            base_n: base.n,
            rows,
            runs,
        }
    }
}

fn times(r: Option<f64>) -> String {
    r.map_or_else(|| "–".into(), |r| format!("{r:.2}×"))
}

/// The hardware header and the table, as printed.
pub fn render_table(b: &ParallelBench) -> String {
    let mut out = String::new();
    let h = &b.hardware;
    let first = b.runs.first();
    if let Some(cpu) = &h.cpu {
        out.push_str(&format!("cpu        {cpu}\n"));
    }
    out.push_str(&format!(
        "cores      {} physical, {} logical\n",
        h.physical_cores, h.logical_cores
    ));
    if let Some(r) = first {
        out.push_str(&format!(
            "threads    {} generation, {} prompt (threads_batch)\n",
            r.threads, r.threads_batch
        ));
        let backend = match (r.offload.is_empty(), r.gpu_layers) {
            (false, _) => r.offload.clone(),
            (true, 0) => "CPU".to_string(),
            (true, n) => format!("GPU, {n} layers offloaded"),
        };
        out.push_str(&format!("backend    {backend}\n"));
        out.push_str(&format!(
            "model      {} ({:.0} MB), {} tokens of context per sequence\n",
            r.model,
            r.model_bytes as f64 / 1e6,
            r.context_per_sequence
        ));
        out.push_str(&format!(
            "calls      N at once per phase; prompts ~300 words, generations of {} tokens\n",
            r.max_tokens
        ));
    }
    let base = format!("×N={}", b.base_n);
    out.push_str(&format!(
        "\n{:>3} | {:>12} | {:>10} | {:>7} | {:>13} | {:>7} | {:>11} | {:>7}\n",
        "N", "prompt tok/s", "gen tok/s", base, "grammar tok/s", base, "peak RSS MB", base
    ));
    out.push_str(&format!(
        "{}-|-{}-|-{}-|-{}-|-{}-|-{}-|-{}-|-{}\n",
        "-".repeat(3),
        "-".repeat(12),
        "-".repeat(10),
        "-".repeat(7),
        "-".repeat(13),
        "-".repeat(7),
        "-".repeat(11),
        "-".repeat(7)
    ));
    for r in &b.rows {
        out.push_str(&format!(
            "{:>3} | {:>12.1} | {:>10.1} | {:>7} | {:>13.1} | {:>7} | {:>11} | {:>7}\n",
            r.n,
            r.prompt_tokens_per_s,
            r.generation_tokens_per_s,
            times(r.generation_vs_base),
            r.grammar_tokens_per_s,
            times(r.grammar_vs_base),
            r.peak_rss_bytes
                .map_or_else(|| "–".into(), |b| format!("{:.0}", b as f64 / 1e6)),
            times(r.rss_vs_base),
        ));
    }
    out
}

/// Progress for one finished N, on one line.
pub fn summary_line(r: &ParallelRun) -> String {
    format!(
        "N={}: prompt {:.1} tok/s, generation {:.1} tok/s, grammar {:.1} tok/s, peak RSS {} (max {} calls in flight)",
        r.n,
        r.prompt.tokens_per_s,
        r.generation.tokens_per_s,
        r.grammar.tokens_per_s,
        r.peak_rss_bytes
            .map_or_else(|| "?".into(), |b| format!("{:.0} MB", b as f64 / 1e6)),
        r.peak_concurrency
    )
}

/// Makes `requests` at once (one thread each) and times them from one clock.
fn phase(llm: &LlamaLlm, requests: &[Request]) -> rudder::Result<(Vec<CallFigures>, f64)> {
    let start = Instant::now();
    let results = map_concurrent(requests.len(), requests, |_, request| {
        let mut first: Option<f64> = None;
        let completion = llm.complete(
            request,
            &mut |_| {
                first.get_or_insert_with(|| start.elapsed().as_secs_f64());
            },
            &CancelToken::new(),
        )?;
        let end_s = start.elapsed().as_secs_f64();
        Ok::<_, rudder::llm::LlmError>(CallFigures {
            prompt_tokens: completion.usage.prompt_tokens,
            cached_tokens: completion.usage.cached_tokens,
            generated_tokens: completion.usage.generated_tokens,
            first_token_s: first.unwrap_or(completion.timing.time_to_first_token.as_secs_f64()),
            end_s,
        })
    });
    let wall_s = start.elapsed().as_secs_f64();
    let calls = results.into_iter().collect::<Result<Vec<_>, _>>()?;
    Ok((calls, wall_s))
}

const SUBJECTS: &[&str] = &[
    "a lighthouse keeper who studies the stars",
    "a baker who discovers an old recipe book",
    "a glacier researcher stranded by a storm",
    "a clockmaker's apprentice in a mountain town",
    "a botanist cataloguing desert plants",
    "a radio operator on a night ferry",
    "a cartographer mapping an unknown coast",
    "a beekeeper whose hives move overnight",
];

const TOPICS: &[&str] = &[
    "the history of astronomy",
    "the chemistry of bread",
    "volcanoes",
    "the printing press",
    "honey bees",
    "ocean currents",
    "the Roman road network",
    "early computers",
];

/// `--tokens` free tokens about the `i`-th subject (distinct from the first token on).
fn story_request(i: usize, tokens: u32) -> Request {
    Request {
        messages: vec![
            Message::system(format!("Storyteller {i} here; you write vivid prose.")),
            Message::user(format!(
                "Write a long, detailed story about {}.",
                SUBJECTS[i % SUBJECTS.len()]
            )),
        ],
        options: GenerationOptions {
            max_tokens: tokens,
            temperature: 0.7,
            seed: i as u32,
            ..Default::default()
        },
        format: OutputFormat::Text,
    }
}

fn notes_request(i: usize, tokens: u32) -> Request {
    Request {
        messages: vec![
            Message::system(format!("Archivist {i} replies in JSON.")),
            Message::user(format!(
                "List many facts about {} as JSON with a topic and a list of facts.",
                TOPICS[i % TOPICS.len()]
            )),
        ],
        options: GenerationOptions {
            max_tokens: tokens,
            temperature: 0.7,
            seed: i as u32,
            ..Default::default()
        },
        format: OutputFormat::JsonSchema(rudder::llm::schema_of::<BenchNotes>()),
    }
}

/// The child's work for one N: `llm` was loaded with `parallel = n`.
pub fn bench_parallel_one(
    llm: &LlamaLlm,
    n: usize,
    gen_tokens: u32,
    progress: &dyn Fn(&str),
) -> rudder::Result<ParallelRun> {
    let info = llm.info().clone();
    let n = n.max(1);
    // Warm-up: the first decode of a process allocates its buffers.
    llm.complete_text(&crate::first_token_only(vec![Message::user("Hello")]))?;

    progress(&format!("N={n}: {n} prompts of ~300 words at once"));
    let requests: Vec<Request> = (0..n)
        .map(|i| crate::first_token_only(fresh_prompt(1000 + i, 300)))
        .collect();
    let (calls, wall_s) = phase(llm, &requests)?;
    let prompt = PhaseFigures {
        tokens_per_s: aggregate_prompt_rate(&calls, wall_s),
        calls,
        wall_s,
    };

    progress(&format!(
        "N={n}: {n} generations of {gen_tokens} tokens at once"
    ));
    let requests: Vec<Request> = (0..n).map(|i| story_request(i, gen_tokens)).collect();
    let (calls, wall_s) = phase(llm, &requests)?;
    let generation = PhaseFigures {
        tokens_per_s: aggregate_generation_rate(&calls, wall_s),
        calls,
        wall_s,
    };

    progress(&format!(
        "N={n}: {n} grammar-constrained generations of up to {gen_tokens} tokens at once"
    ));
    let requests: Vec<Request> = (0..n).map(|i| notes_request(i, gen_tokens)).collect();
    let (calls, wall_s) = phase(llm, &requests)?;
    let grammar = PhaseFigures {
        tokens_per_s: aggregate_generation_rate(&calls, wall_s),
        calls,
        wall_s,
    };

    Ok(ParallelRun {
        n,
        model: llm.model_name().to_string(),
        model_bytes: info.size_bytes,
        threads: info.threads,
        threads_batch: info.threads_batch,
        gpu_layers: info.gpu_layers,
        offload: info.offload.summary(),
        context_per_sequence: info.n_ctx,
        load_seconds: info.load_time.as_secs_f64(),
        max_tokens: gen_tokens,
        prompt,
        generation,
        grammar,
        peak_concurrency: llm.peak_concurrency(),
        peak_rss_bytes: peak_rss_bytes(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn the_list_parses_in_order_without_repeats() {
        assert_eq!(parse_parallel_list("1,2,4,8").unwrap().0, vec![1, 2, 4, 8]);
        assert_eq!(parse_parallel_list(" 4, 1 ,4").unwrap().0, vec![4, 1]);
        assert_eq!(parse_parallel_list("3").unwrap().0, vec![3]);
        for bad in ["", "1,,2", "1,x", "0", "1,-2", "2.5", "65"] {
            assert!(
                parse_parallel_list(bad).is_err(),
                "{bad:?} should not parse"
            );
        }
    }

    #[test]
    fn the_child_gets_one_n_instead_of_the_list() {
        let args = os(&[
            "--model",
            "m",
            "bench",
            "llm",
            "--parallel",
            "1,2,4",
            "--tokens",
            "64",
            "--json",
        ]);
        assert_eq!(
            child_args_for(&args, 2),
            os(&[
                "--model",
                "m",
                "bench",
                "llm",
                "--tokens",
                "64",
                "--json",
                "--parallel-one",
                "2"
            ])
        );
        let args = os(&["bench", "llm", "--parallel=1,2", "--tokens=8"]);
        assert_eq!(
            child_args_for(&args, 1),
            os(&["bench", "llm", "--tokens=8", "--parallel-one", "1"])
        );
        // A stray hidden flag is replaced, not repeated.
        let args = os(&["bench", "llm", "--parallel-one", "4"]);
        assert_eq!(
            child_args_for(&args, 8),
            os(&["bench", "llm", "--parallel-one", "8"])
        );
    }

    #[test]
    fn a_rebuilt_binary_is_found_at_its_path() {
        use std::path::{Path, PathBuf};
        let only = |live: &'static str| move |p: &Path| p == Path::new(live);
        let deleted = PathBuf::from("/t/rudder-bench (deleted)");
        assert_eq!(
            live_path(deleted.clone(), only("/t/rudder-bench")),
            PathBuf::from("/t/rudder-bench")
        );
        assert_eq!(live_path(deleted.clone(), only("/elsewhere")), deleted);
        assert_eq!(
            live_path(PathBuf::from("/t/x"), only("/t/x")),
            PathBuf::from("/t/x")
        );
    }

    fn call(prompt: u64, cached: u64, generated: u64, first: f64, end: f64) -> CallFigures {
        CallFigures {
            prompt_tokens: prompt,
            cached_tokens: cached,
            generated_tokens: generated,
            first_token_s: first,
            end_s: end,
        }
    }

    #[test]
    fn aggregate_rates_count_what_was_computed() {
        // Two prompts of 400 tokens, 10 of one from the cache, read in 2 s.
        let calls = [call(400, 10, 1, 1.9, 2.0), call(400, 0, 1, 2.0, 2.0)];
        assert!((aggregate_prompt_rate(&calls, 2.0) - 395.0).abs() < 1e-9);
        // 65 tokens each; the first tokens came at 0.5 s and 1 s; the phase took 5 s: 128
        // tokens after the first in 4 s.
        let calls = [call(30, 0, 65, 0.5, 5.0), call(30, 0, 65, 1.0, 4.8)];
        assert!((aggregate_generation_rate(&calls, 5.0) - 32.0).abs() < 1e-9);
        // Nothing measurable gives 0, not infinity.
        assert_eq!(aggregate_generation_rate(&calls, 1.0), 0.0);
        assert_eq!(aggregate_prompt_rate(&[], 0.0), 0.0);
    }

    fn run(n: usize, prompt: f64, gen: f64, grammar: f64, rss: u64) -> ParallelRun {
        let phase = |r| PhaseFigures {
            tokens_per_s: r,
            ..Default::default()
        };
        ParallelRun {
            n,
            model: "m".into(),
            model_bytes: 1_000_000_000,
            threads: 2,
            threads_batch: 2,
            prompt: phase(prompt),
            generation: phase(gen),
            grammar: phase(grammar),
            peak_rss_bytes: Some(rss),
            ..Default::default()
        }
    }

    #[test]
    fn ratios_are_to_the_single_sequence_row() {
        let b = ParallelBench::new(
            Hardware::default(),
            vec![
                run(2, 100.0, 18.0, 12.0, 1_200_000_000),
                run(1, 90.0, 10.0, 8.0, 1_000_000_000),
                run(4, 110.0, 30.0, 0.0, 1_500_000_000),
            ],
        );
        assert_eq!(b.base_n, 1);
        let r = &b.rows[0];
        assert_eq!(r.generation_vs_base, Some(1.8));
        assert_eq!(r.grammar_vs_base, Some(1.5));
        assert_eq!(r.rss_vs_base, Some(1.2));
        assert_eq!(b.rows[1].generation_vs_base, Some(1.0));
        assert_eq!(b.rows[2].grammar_vs_base, Some(0.0));
        let table = render_table(&b);
        assert!(table.contains("×N=1"), "{table}");
        assert!(table.contains("1.80×"), "{table}");
        assert!(table.contains("  3.00× |"), "{table}");
        assert!(table.contains("backend    CPU"), "{table}");
        assert_eq!(table.lines().filter(|l| l.contains(" | ")).count(), 4);

        // Without N = 1 the first row is the base; a zero base gives no ratio.
        let b = ParallelBench::new(
            Hardware::default(),
            vec![run(2, 1.0, 0.0, 4.0, 10), run(4, 1.0, 5.0, 6.0, 20)],
        );
        assert_eq!(b.base_n, 2);
        assert_eq!(b.rows[1].generation_vs_base, None);
        assert_eq!(b.rows[1].grammar_vs_base, Some(1.5));
        assert!(render_table(&b).contains("×N=2"));
        assert_eq!(ratio(1.0, 0.0), None);
    }
}
