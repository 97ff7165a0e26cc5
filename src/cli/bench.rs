//! `rudder bench`: performance figures.

use std::process::ExitCode;

use clap::Subcommand;
use rudder::embed::FastEmbedder;
use rudder::llm::llama::LlamaLlm;
use rudder::models::ModelStore;

use super::Ctx;

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Prompt and generation speed, grammar overhead, time to first token, memory.
    Llm {
        /// Tokens to generate per run.
        #[arg(long, default_value_t = 128)]
        tokens: u32,
        /// Repetitions (medians are reported).
        #[arg(long, default_value_t = 3)]
        reps: usize,
    },
    /// Embedding throughput on short history-like texts.
    Embed {
        /// Texts to embed.
        #[arg(long, default_value_t = 1024)]
        texts: usize,
        #[arg(long, default_value_t = 64)]
        batch: usize,
    },
}

pub fn run(ctx: &Ctx, cmd: BenchCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        BenchCommand::Embed { texts, batch } => {
            let store = ModelStore::open(&ctx.paths)?;
            let name = ctx.model.as_deref().unwrap_or(&ctx.settings.embed_model);
            let threads = ctx.settings.llama.effective_threads();
            let embedder = FastEmbedder::from_store(&store, name, threads)?;
            let b = rudder::bench::bench_embed(&embedder, name, texts, batch)?;
            if ctx.json {
                println!("{}", serde_json::to_string_pretty(&b)?);
            } else {
                println!(
                    "model          {} ({} dimensions, {threads} threads)",
                    b.model, b.dimensions
                );
                println!(
                    "throughput     {:.1} texts/s ({} texts of {:.1} words, batches of {})",
                    b.texts_per_s, b.texts, b.mean_words_per_text, b.batch_size
                );
                if let Some(rss) = b.peak_rss_bytes {
                    println!("peak RSS       {:.0} MB", rss as f64 / 1e6);
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        BenchCommand::Llm { tokens, reps } => {
            let store = ModelStore::open(&ctx.paths)?;
            let name = ctx.model.as_deref().unwrap_or(&ctx.settings.chat_model);
            let path = store.ready_path(name)?;
            eprintln!("loading {name} …");
            let llm = LlamaLlm::load(name, &path, &ctx.settings.llama)?;
            eprintln!("running {reps} repetitions …");
            let b = rudder::bench::bench_llm(&llm, tokens, reps)?;
            if ctx.json {
                println!("{}", serde_json::to_string_pretty(&b)?);
                return Ok(ExitCode::SUCCESS);
            }
            println!(
                "model                      {} ({:.0} MB)",
                b.model,
                b.model_bytes as f64 / 1e6
            );
            println!(
                "threads / gpu layers       {} / {}",
                b.threads, b.gpu_layers
            );
            println!("load                       {:.2} s", b.load_seconds);
            println!(
                "prompt                     {:.1} tok/s ({} tokens)",
                b.prompt_tokens_per_s, b.prompt_tokens
            );
            println!(
                "generation                 {:.1} tok/s",
                b.generation_tokens_per_s
            );
            println!(
                "grammar-constrained        {:.1} tok/s",
                b.grammar_tokens_per_s
            );
            println!(
                "time to first token        {:.0} ms",
                b.time_to_first_token_ms
            );
            println!(
                "reused prefix              {} tokens, rest of prompt read in {:.0} ms",
                b.reused_prefix_tokens, b.reused_prompt_ms
            );
            if let Some(rss) = b.peak_rss_bytes {
                println!("peak RSS                   {:.0} MB", rss as f64 / 1e6);
            }
            println!(
                "weight streaming           {:.2} GB/s of {:.2} GB/s measured read bandwidth ({:.0} %)",
                b.weight_streaming_gb_per_s,
                b.memory_bandwidth_gb_per_s,
                100.0 * b.weight_streaming_gb_per_s / b.memory_bandwidth_gb_per_s.max(1e-9)
            );
            println!("(medians of {} repetitions)", b.repetitions);
            Ok(ExitCode::SUCCESS)
        }
    }
}
