//! `rudder-bench`, the binary behind `rudder bench`: performance figures. `rudder` runs it
//! with its own command line, so it takes `rudder`'s global flags and the `bench` subcommand
//! (`rudder-bench bench …` works directly too).

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use rudder::embed::FastEmbedder;
use rudder::llm::llama::LlamaLlm;
use rudder::models::ModelStore;
use rudder_cli::{Ctx, GlobalArgs};

/// The `rudder` command line, as far as `bench` goes.
#[derive(Debug, Parser)]
#[command(
    name = "rudder",
    bin_name = "rudder",
    version,
    about = "Private, steerable deep research on your own machine: the benchmark commands \
             (`rudder bench`, the rudder-bench binary)"
)]
struct Cli {
    #[command(flatten)]
    global: GlobalArgs,
    #[command(subcommand)]
    command: Top,
}

#[derive(Debug, Subcommand)]
enum Top {
    /// Measure performance.
    #[command(subcommand)]
    Bench(BenchCommand),
}

fn main() -> ExitCode {
    rudder_cli::start();
    let cli = Cli::parse();
    rudder_cli::init_logging(cli.global.verbose);
    rudder_cli::finish(cli.global.ctx().and_then(|ctx| {
        let Top::Bench(cmd) = cli.command;
        run(&ctx, cmd)
    }))
}

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
    /// History import, indexing, embedding and query latency on a synthetic history.
    History {
        /// Sessions in the synthetic history.
        #[arg(long, default_value_t = 100_000)]
        sessions: usize,
        /// Seed of the generator.
        #[arg(long, default_value_t = 7)]
        seed: u64,
        /// Queries timed per search mode.
        #[arg(long, default_value_t = 200)]
        queries: usize,
        /// Sessions embedded for real to measure embedding throughput.
        #[arg(long, default_value_t = 2000)]
        embed_sample: u64,
        /// Embed every session for real instead of reusing the sample's vectors for the rest.
        #[arg(long)]
        embed_all: bool,
        /// Keep the generated export and history in this directory.
        #[arg(long, value_name = "DIR")]
        keep: Option<std::path::PathBuf>,
    },
    /// Write a synthetic history as real export files (Takeout Search JSON, ChatGPT), for
    /// trying imports and measuring memory.
    GenerateHistory {
        /// Where to write the export.
        out: std::path::PathBuf,
        #[arg(long, default_value_t = 100_000)]
        sessions: usize,
        #[arg(long, default_value_t = 7)]
        seed: u64,
    },
}

pub fn run(ctx: &Ctx, cmd: BenchCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        BenchCommand::History {
            sessions,
            seed,
            queries,
            embed_sample,
            embed_all,
            keep,
        } => {
            let store = ModelStore::open(&ctx.paths)?;
            let name = ctx.settings.embed_model.clone();
            let threads = ctx.settings.llama.effective_threads();
            let embedder = FastEmbedder::from_store(&store, &name, threads)?;
            let cfg = rudder_bench::history::HistoryBenchConfig {
                sessions,
                seed,
                queries,
                embed_sample,
                embed_all,
                dir: keep,
            };
            let progress = rudder_cli::progress::CountProgress::default();
            let b = rudder_bench::history::bench_history(&cfg, &embedder, &name, &progress)?;
            if ctx.json {
                println!("{}", serde_json::to_string_pretty(&b)?);
                return Ok(ExitCode::SUCCESS);
            }
            let mb = |b: u64| b as f64 / 1e6;
            println!(
                "synthetic history   {} sessions, {:.1} MB of export files, generated in {:.1} s",
                b.sessions_generated,
                mb(b.export_bytes),
                b.generate_seconds
            );
            println!(
                "import + BM25       {} sessions in {:.2} s = {:.0} sessions/s (no embeddings)",
                b.sessions_imported, b.import_seconds, b.import_sessions_per_second
            );
            println!(
                "embedding           {} sessions in {:.1} s = {:.1} sessions/s ({name}, {threads} threads)",
                b.embedded_sessions, b.embed_seconds, b.embed_sessions_per_second
            );
            if b.copied_vector_sessions > 0 {
                println!(
                    "                    {} more sessions got copies of those real vectors, for the \
                     latency figures (exact scan: cost does not depend on the values; \
                     --embed-all embeds everything)",
                    b.copied_vector_sessions
                );
            }
            println!(
                "vector index        {} vectors, loaded in {:.2} s",
                b.vectors, b.vector_load_seconds
            );
            println!(
                "BM25 query          p50 {:.2} ms   p95 {:.2} ms   ({} queries, top 10, incl. fetching hits)",
                b.bm25_p50_ms, b.bm25_p95_ms, b.queries
            );
            println!(
                "hybrid query        p50 {:.2} ms   p95 {:.2} ms   (incl. embedding the query)",
                b.hybrid_p50_ms, b.hybrid_p95_ms
            );
            println!(
                "  of which          query embedding p50 {:.2} ms, exact vector scan p50 {:.2} ms",
                b.query_embed_p50_ms, b.vector_scan_p50_ms
            );
            println!(
                "on disk             database {:.1} MB, text index {:.1} MB",
                mb(b.database_bytes),
                mb(b.text_index_bytes)
            );
            if let Some(rss) = b.peak_rss_bytes {
                println!("peak RSS            {:.0} MB", mb(rss));
            }
            Ok(ExitCode::SUCCESS)
        }
        BenchCommand::GenerateHistory {
            out,
            sessions,
            seed,
        } => {
            let cfg = rudder_synth::SynthConfig {
                seed,
                sessions,
                ..Default::default()
            };
            let summary = rudder_synth::write_export(&cfg, &out)?;
            println!("{summary:#?}");
            Ok(ExitCode::SUCCESS)
        }
        BenchCommand::Embed { texts, batch } => {
            let store = ModelStore::open(&ctx.paths)?;
            let name = ctx.model.as_deref().unwrap_or(&ctx.settings.embed_model);
            let threads = ctx.settings.llama.effective_threads();
            let embedder = FastEmbedder::from_store(&store, name, threads)?;
            let b = rudder_bench::bench_embed(&embedder, name, texts, batch)?;
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
            let b = rudder_bench::bench_llm(&llm, tokens, reps)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// clap's own consistency checks over the command line.
    #[test]
    fn the_command_line_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    /// The global flags are `rudder`'s, before or after the subcommand.
    #[test]
    fn takes_the_global_flags_of_rudder() {
        let cli = Cli::try_parse_from([
            "rudder",
            "--data-dir",
            "d",
            "bench",
            "generate-history",
            "out",
            "--threads",
            "2",
        ])
        .unwrap();
        assert_eq!(cli.global.threads, Some(2));
        assert_eq!(cli.global.data_dir, Some("d".into()));
        let Top::Bench(BenchCommand::GenerateHistory { out, sessions, .. }) = cli.command else {
            panic!("expected generate-history");
        };
        assert_eq!((out, sessions), ("out".into(), 100_000));
    }
}
