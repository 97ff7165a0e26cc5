//! Measurements behind the performance claims (`rudder bench ...`; the crate `rudder-bench`,
//! whose binary `rudder-bench` is what `rudder bench` runs).
//!
//! Decoding one token streams every weight through the CPU once, so generation speed is bounded
//! by memory bandwidth: `model bytes × tokens/s` next to the machine's measured read bandwidth
//! says how close to the physical limit we run.

pub mod history;
pub mod memory;
pub mod parallel;
pub mod research;

use std::time::{Duration, Instant};

use serde::Serialize;

use rudder::llm::llama::LlamaLlm;
use rudder::llm::{GenerationOptions, Llm, Message, OutputFormat, Request};

/// Results of `rudder bench llm`.
#[derive(Debug, Clone, Serialize)]
pub struct LlmBench {
    pub model: String,
    pub model_bytes: u64,
    pub threads: usize,
    pub gpu_layers: u32,
    /// Where the layers ran, and why (the same plan `rudder status` shows).
    pub offload: rudder::llm::llama::offload::OffloadPlan,
    pub load_seconds: f64,
    pub prompt_tokens: u64,
    pub prompt_tokens_per_s: f64,
    pub generated_tokens: u64,
    pub generation_tokens_per_s: f64,
    pub grammar_tokens_per_s: f64,
    pub time_to_first_token_ms: f64,
    /// Prompt tokens served from the KV cache when the same system prompt is sent again.
    pub reused_prefix_tokens: u64,
    pub reused_prompt_ms: f64,
    pub peak_rss_bytes: Option<u64>,
    /// model bytes × generation tokens/s.
    pub weight_streaming_gb_per_s: f64,
    /// Measured read bandwidth with the same thread count.
    pub memory_bandwidth_gb_per_s: f64,
    pub repetitions: usize,
}

/// Schema for the grammar-constrained run: long enough to measure, simple enough for any model.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct BenchNotes {
    topic: String,
    facts: Vec<String>,
}

fn median(mut xs: Vec<f64>) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    xs.sort_by(|a, b| a.total_cmp(b));
    xs[xs.len() / 2]
}

fn per_second(count: u64, d: Duration) -> f64 {
    if d.is_zero() {
        0.0
    } else {
        count as f64 / d.as_secs_f64()
    }
}

/// A prompt of roughly `words` words that no earlier call shares a prefix with.
fn fresh_prompt(nonce: usize, words: usize) -> Vec<Message> {
    let filler = "Local research tools read notes, papers and browsing history to answer questions privately. ";
    let mut body = format!("Session {nonce}. ");
    while body.split_whitespace().count() < words {
        body.push_str(filler);
    }
    vec![
        Message::system(format!("Run {nonce}: you are a helpful assistant.")),
        Message::user(format!("{body}\nSummarise the text above in one sentence.")),
    ]
}

/// A request that reads the prompt and samples one token greedily: it times prompt processing.
fn first_token_only(messages: Vec<Message>) -> Request {
    Request {
        messages,
        options: GenerationOptions {
            max_tokens: 1,
            temperature: 0.0,
            ..Default::default()
        },
        format: OutputFormat::Text,
    }
}

/// Runs the LLM benchmark: `repetitions` rounds of prompt processing, free generation and
/// grammar-constrained generation, reporting medians.
pub fn bench_llm(llm: &LlamaLlm, gen_tokens: u32, repetitions: usize) -> rudder::Result<LlmBench> {
    let info = llm.info().clone();
    let reps = repetitions.max(1);
    let (mut prompt_rates, mut gen_rates, mut grammar_rates, mut ttfts) =
        (vec![], vec![], vec![], vec![]);
    let (mut prompt_tokens, mut generated) = (0, 0);
    for rep in 0..reps {
        // Prompt processing and time to first token on a prompt with no cached prefix.
        let c = llm.complete_text(&first_token_only(fresh_prompt(rep * 3, 300)))?;
        prompt_tokens = c.usage.prompt_tokens - c.usage.cached_tokens;
        prompt_rates.push(per_second(prompt_tokens, c.timing.prompt_eval));
        ttfts.push(c.timing.time_to_first_token.as_secs_f64() * 1000.0);

        // Free generation: count only tokens after the first (the first pays for the prompt).
        let request = Request {
            messages: vec![
                Message::system(format!("Run {}: you are a storyteller.", rep * 3 + 1)),
                Message::user(
                    "Write a long, detailed story about a lighthouse keeper who studies the stars.",
                ),
            ],
            options: GenerationOptions {
                max_tokens: gen_tokens,
                temperature: 0.7,
                seed: rep as u32,
                ..Default::default()
            },
            format: OutputFormat::Text,
        };
        let c = llm.complete_text(&request)?;
        generated = c.usage.generated_tokens;
        gen_rates.push(per_second(
            c.usage.generated_tokens.saturating_sub(1),
            c.timing.generation,
        ));

        let request = Request {
            messages: vec![
                Message::system(format!("Run {}: reply in JSON.", rep * 3 + 2)),
                Message::user("List many facts about the history of astronomy as JSON with a topic and a list of facts."),
            ],
            options: GenerationOptions {
                max_tokens: gen_tokens,
                temperature: 0.7,
                seed: rep as u32,
                ..Default::default()
            },
            format: OutputFormat::JsonSchema(rudder::llm::schema_of::<BenchNotes>()),
        };
        let c = llm.complete_text(&request)?;
        grammar_rates.push(per_second(
            c.usage.generated_tokens.saturating_sub(1),
            c.timing.generation,
        ));
    }

    // Same system prompt and history again, new last question: the prefix comes from the cache.
    let mut messages = fresh_prompt(10_000, 300);
    llm.complete_text(&first_token_only(messages.clone()))?;
    messages.push(Message::assistant("A summary."));
    messages.push(Message::user("And in three words?"));
    let c = llm.complete_text(&first_token_only(messages))?;

    let generation_tokens_per_s = median(gen_rates);
    Ok(LlmBench {
        model: llm.model_name().to_string(),
        model_bytes: info.size_bytes,
        threads: info.threads,
        gpu_layers: info.gpu_layers,
        offload: info.offload.clone(),
        load_seconds: info.load_time.as_secs_f64(),
        prompt_tokens,
        prompt_tokens_per_s: median(prompt_rates),
        generated_tokens: generated,
        generation_tokens_per_s,
        grammar_tokens_per_s: median(grammar_rates),
        time_to_first_token_ms: median(ttfts),
        reused_prefix_tokens: c.usage.cached_tokens,
        reused_prompt_ms: c.timing.prompt_eval.as_secs_f64() * 1000.0,
        peak_rss_bytes: peak_rss_bytes(),
        weight_streaming_gb_per_s: info.size_bytes as f64 * generation_tokens_per_s / 1e9,
        memory_bandwidth_gb_per_s: memory_read_bandwidth(info.threads, 256 << 20),
        repetitions: reps,
    })
}

/// Peak resident set size of this process (Linux `VmHWM`).
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Best-of-five read bandwidth in GB/s over a `bytes` buffer split across `threads` threads.
pub fn memory_read_bandwidth(threads: usize, bytes: usize) -> f64 {
    let words = bytes / 8;
    let data: Vec<u64> = (0..words as u64).collect();
    let threads = threads.max(1);
    let chunk = words.div_ceil(threads);
    let mut best = f64::MAX;
    for _ in 0..5 {
        let start = Instant::now();
        let total: u64 = std::thread::scope(|s| {
            let handles: Vec<_> = data
                .chunks(chunk)
                .map(|part| {
                    s.spawn(move || {
                        // Four accumulators let the loads overlap instead of waiting on one add.
                        let mut acc = [0u64; 4];
                        for quad in part.chunks_exact(4) {
                            for i in 0..4 {
                                acc[i] = acc[i].wrapping_add(quad[i]);
                            }
                        }
                        acc.iter().fold(0u64, |a, &b| a.wrapping_add(b))
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or(0))
                .fold(0, u64::wrapping_add)
        });
        std::hint::black_box(total);
        best = best.min(start.elapsed().as_secs_f64());
    }
    (words * 8) as f64 / best / 1e9
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_rates() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(per_second(10, Duration::from_secs(2)), 5.0);
        assert_eq!(per_second(10, Duration::ZERO), 0.0);
    }

    #[test]
    fn bandwidth_is_positive_and_rss_is_read() {
        assert!(memory_read_bandwidth(1, 8 << 20) > 0.0);
        assert!(peak_rss_bytes().unwrap() > 0);
    }
}

/// Results of `rudder bench embed`.
#[derive(Debug, Clone, Serialize)]
pub struct EmbedBench {
    pub model: String,
    pub dimensions: usize,
    pub texts: usize,
    pub batch_size: usize,
    pub texts_per_s: f64,
    pub mean_words_per_text: f64,
    pub peak_rss_bytes: Option<u64>,
}

/// Short, varied texts shaped like history entries (search queries and page titles).
pub fn synthetic_texts(n: usize) -> Vec<String> {
    const SUBJECTS: &[&str] = &[
        "sourdough starter",
        "rust borrow checker",
        "marathon training plan",
        "tax return deadline",
        "heat pump efficiency",
        "toddler sleep regression",
        "kubernetes ingress",
        "roman history",
        "vitamin d dosage",
        "electric bike range",
        "python asyncio",
        "mortgage refinancing",
    ];
    const FRAMES: &[&str] = &[
        "how to fix {}",
        "best guide to {} for beginners",
        "{} explained simply",
        "{} vs alternatives comparison",
        "why does {} fail",
        "{} reddit discussion",
        "latest research on {} 2026",
        "{} step by step tutorial with examples",
    ];
    (0..n)
        .map(|i| {
            let s = SUBJECTS[i % SUBJECTS.len()];
            let f = FRAMES[(i / SUBJECTS.len()) % FRAMES.len()];
            format!("{} ({i})", f.replace("{}", s))
        })
        .collect()
}

/// Embeds `n` synthetic texts in batches of `batch_size` and reports throughput.
pub fn bench_embed(
    embedder: &dyn rudder::embed::Embedder,
    model: &str,
    n: usize,
    batch_size: usize,
) -> rudder::Result<EmbedBench> {
    let texts = synthetic_texts(n);
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    // Warm-up: the first run pays for graph optimisation.
    embedder.embed(&refs[..refs.len().min(8)])?;
    let start = Instant::now();
    for batch in refs.chunks(batch_size.max(1)) {
        embedder.embed(batch)?;
    }
    let elapsed = start.elapsed();
    let words: usize = texts.iter().map(|t| t.split_whitespace().count()).sum();
    Ok(EmbedBench {
        model: model.to_string(),
        dimensions: embedder.dimensions(),
        texts: n,
        batch_size,
        texts_per_s: per_second(n as u64, elapsed),
        mean_words_per_text: words as f64 / n.max(1) as f64,
        peak_rss_bytes: peak_rss_bytes(),
    })
}
