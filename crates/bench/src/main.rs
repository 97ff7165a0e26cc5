//! `rudder-bench`, the binary behind `rudder bench`: performance figures. `rudder` runs it
//! with its own command line, so it takes `rudder`'s global flags and the `bench` subcommand
//! (`rudder-bench bench …` works directly too).

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use rudder::embed::FastEmbedder;
use rudder::llm::llama::LlamaLlm;
use rudder::models::ModelStore;
use rudder_bench::parallel::{ParallelBench, ParallelList, ParallelRun};
use rudder_bench::research::{ResearchBench, ResearchMode, ResearchRequest, ResearchRun};
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
        /// Repetitions (medians are reported; not used with --parallel).
        #[arg(long, default_value_t = 3)]
        reps: usize,
        /// Instead: aggregate throughput with N sequences decoded together, for each N of this
        /// comma-separated list (e.g. 1,2,4,8). Each N runs in a child process of its own
        /// (`llama.parallel` = N, same context per sequence) that makes N calls at once:
        /// prompts, free generation and grammar-constrained generation; one table compares them.
        #[arg(
            long,
            value_name = "N,N,…",
            value_parser = rudder_bench::parallel::parse_parallel_list
        )]
        parallel: Option<ParallelList>,
        /// One N of --parallel, measured in this process (what each child runs); prints one
        /// JSON line.
        #[arg(long, hide = true, value_name = "N", conflicts_with = "parallel")]
        parallel_one: Option<usize>,
    },
    /// The same research run twice over the document library (the offline Wikipedia corpus):
    /// first one model call at a time on one thread (llama.parallel = 1, threads = 1,
    /// threads_batch = 1), then with the saved settings; wall time, tokens, KV-cache reuse,
    /// tree shape and report size side by side. Each run is a child process and a session in
    /// the data directory, deleted afterwards.
    Research {
        /// The question researched.
        #[arg(long, default_value = rudder_bench::research::DEFAULT_QUESTION)]
        question: String,
        /// Depth of the research tree.
        #[arg(long, default_value_t = 2)]
        depth: u32,
        /// Directions researched per node.
        #[arg(long, default_value_t = 3)]
        breadth: u32,
        /// Keep the two sessions (listed by `rudder sessions list`) instead of deleting them.
        #[arg(long)]
        keep_sessions: bool,
        /// One run, in this process (what each child runs); prints one JSON line.
        #[arg(long, hide = true, value_enum, value_name = "MODE")]
        research_child: Option<ResearchMode>,
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
    /// Reading history into memory with the chat model: a synthetic history imported as a
    /// user's would be, then read; sessions per second and minutes per 1,000 sessions.
    Memory {
        /// Sessions in the synthetic history.
        #[arg(long, default_value_t = 300)]
        sessions: usize,
        #[arg(long, default_value_t = 7)]
        seed: u64,
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
        BenchCommand::Memory { sessions, seed } => {
            let store = ModelStore::open(&ctx.paths)?;
            let llm = rudder::llm::open_chat(&store, &ctx.settings, ctx.model.as_deref())?;
            let name = ctx.settings.embed_model.clone();
            let threads = ctx.settings.llama.effective_threads();
            let embedder = FastEmbedder::from_store(&store, &name, threads)?;
            let dir = tempfile::tempdir()?;
            let progress = rudder_cli::progress::CountProgress::default();
            let b = rudder_bench::memory::bench_memory(
                dir.path(),
                sessions,
                seed,
                llm.as_ref(),
                (&embedder, &name),
                &progress,
            )?;
            if ctx.json {
                println!("{}", serde_json::to_string_pretty(&b)?);
                return Ok(ExitCode::SUCCESS);
            }
            println!(
                "memory   {} sessions with {} ({threads} threads): {} read ({} chats in code, \
                 the rest in {} calls, {} retries), {} skipped by the cheap check",
                b.sessions, b.model, b.read, b.chats, b.bursts, b.retries, b.skipped
            );
            println!(
                "         {} statements kept, {} notes refused; {} prompt tokens ({} cached), {} \
                 generated",
                b.statements, b.refused, b.prompt_tokens, b.cached_tokens, b.generated_tokens
            );
            println!(
                "         {:.0} s = {:.2} sessions/s = {:.1} min per 1,000 sessions",
                b.seconds, b.sessions_per_second, b.minutes_per_thousand
            );
            for line in &b.sample {
                println!("         - {line}");
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
        BenchCommand::Research {
            question,
            depth,
            breadth,
            keep_sessions,
            research_child,
        } => {
            let request = ResearchRequest {
                question,
                depth,
                breadth,
            };
            match research_child {
                Some(mode) => research_child_run(ctx, mode, &request, keep_sessions),
                None => research_bench(ctx, request),
            }
        }
        BenchCommand::Llm {
            tokens,
            parallel_one: Some(n),
            ..
        } => parallel_child_run(ctx, n, tokens),
        BenchCommand::Llm {
            parallel: Some(list),
            ..
        } => parallel_bench(ctx, &list),
        BenchCommand::Llm { tokens, reps, .. } => {
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
            println!("threads                    {}", b.threads);
            println!("gpu                        {}", b.offload.summary());
            println!("                           {}", b.offload.reason);
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

/// This process's arguments, for a child's command line.
fn own_args() -> Vec<std::ffi::OsString> {
    std::env::args_os().skip(1).collect()
}

/// `bench llm --parallel-one N`: the chat model with N sequences, N calls at once; one JSON
/// line on stdout.
fn parallel_child_run(ctx: &Ctx, n: usize, tokens: u32) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(n > 0, "--parallel-one must be at least 1");
    let store = ModelStore::open(&ctx.paths)?;
    let name = ctx.model.as_deref().unwrap_or(&ctx.settings.chat_model);
    let path = store.ready_path(name)?;
    let mut settings = ctx.settings.llama.clone();
    settings.parallel = n;
    eprintln!("N={n}: loading {name} with {n} sequences …");
    let llm = LlamaLlm::load(name, &path, &settings)?;
    let run = rudder_bench::parallel::bench_parallel_one(&llm, n, tokens, &|line| {
        eprintln!("{line}");
    })?;
    println!("{}", serde_json::to_string(&run)?);
    Ok(ExitCode::SUCCESS)
}

/// `bench llm --parallel 1,2,4,8`: a child process per N, then the table.
fn parallel_bench(ctx: &Ctx, list: &ParallelList) -> anyhow::Result<ExitCode> {
    // Fail once here rather than in every child when the model is missing.
    let store = ModelStore::open(&ctx.paths)?;
    let name = ctx.model.as_deref().unwrap_or(&ctx.settings.chat_model);
    store.ready_path(name)?;
    let args = own_args();
    let mut runs = Vec::new();
    for (i, &n) in list.0.iter().enumerate() {
        eprintln!(
            "[{}/{}] N={n}: child process, {n} calls at once per phase …",
            i + 1,
            list.0.len()
        );
        let run: ParallelRun = rudder_bench::parallel::run_child(
            &rudder_bench::parallel::child_args_for(&args, n),
            &format!("N={n}"),
        )?;
        eprintln!("{}", rudder_bench::parallel::summary_line(&run));
        runs.push(run);
    }
    let bench = ParallelBench::new(rudder_bench::parallel::Hardware::detect(), runs);
    if ctx.json {
        println!("{}", serde_json::to_string_pretty(&bench)?);
    } else {
        print!("{}", rudder_bench::parallel::render_table(&bench));
    }
    Ok(ExitCode::SUCCESS)
}

/// `bench research --research-child MODE`: one run; one JSON line on stdout.
fn research_child_run(
    ctx: &Ctx,
    mode: ResearchMode,
    request: &ResearchRequest,
    keep_session: bool,
) -> anyhow::Result<ExitCode> {
    let run = rudder_bench::research::run_research(
        &ctx.paths,
        &ctx.settings,
        ctx.model.as_deref(),
        mode,
        request,
        keep_session,
    )?;
    println!("{}", serde_json::to_string(&run)?);
    Ok(ExitCode::SUCCESS)
}

/// `bench research`: the sequential run, then the default one, each a child process.
fn research_bench(ctx: &Ctx, request: ResearchRequest) -> anyhow::Result<ExitCode> {
    use rudder_bench::research::RESEARCH_CHILD_FLAG;
    // Checked here, before two model loads: the settings, the corpus and the model.
    rudder::session::runner::RunOverrides {
        depth: Some(request.depth),
        breadth: Some(request.breadth),
        ..Default::default()
    }
    .resolve(&ctx.settings.research)?;
    let documents = rudder_bench::research::library_documents(&ctx.paths)?;
    let store = ModelStore::open(&ctx.paths)?;
    let name = ctx.model.as_deref().unwrap_or(&ctx.settings.chat_model);
    store.ready_path(name)?;
    let args = own_args();
    let mut runs = Vec::new();
    for (i, mode) in ResearchMode::BOTH.into_iter().enumerate() {
        eprintln!(
            "[{}/2] {} run: depth {}, breadth {}, {documents} documents, child process …",
            i + 1,
            mode.as_str(),
            request.depth,
            request.breadth
        );
        let child = rudder_bench::parallel::child_args(
            &args,
            &[RESEARCH_CHILD_FLAG],
            &[RESEARCH_CHILD_FLAG.into(), mode.as_str().into()],
        );
        let run: ResearchRun = rudder_bench::parallel::run_child(&child, mode.as_str())?;
        eprintln!(
            "[{}/2] {}: {:.1} s, {} LLM calls, {} sections",
            i + 1,
            mode.as_str(),
            run.wall_seconds,
            run.usage.calls,
            run.sections
        );
        runs.push(run);
    }
    let bench = ResearchBench::new(
        request,
        documents,
        rudder_bench::parallel::Hardware::detect(),
        runs,
    );
    if ctx.json {
        println!("{}", serde_json::to_string_pretty(&bench)?);
    } else {
        print!("{}", rudder_bench::research::render_research(&bench));
    }
    Ok(ExitCode::SUCCESS)
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

    #[test]
    fn llm_takes_a_list_of_sequence_counts_and_children_one() {
        let cli = Cli::try_parse_from(["rudder", "bench", "llm", "--parallel", "1,2,4,8"]).unwrap();
        let Top::Bench(BenchCommand::Llm {
            parallel,
            parallel_one,
            tokens,
            ..
        }) = cli.command
        else {
            panic!("expected llm");
        };
        assert_eq!(parallel, Some(ParallelList(vec![1, 2, 4, 8])));
        assert_eq!((parallel_one, tokens), (None, 128));
        assert!(Cli::try_parse_from(["rudder", "bench", "llm", "--parallel", "1,0"]).is_err());

        // What the parent passes its child parses, as one N.
        let args: Vec<std::ffi::OsString> = ["--threads", "2", "bench", "llm", "--parallel", "1,2"]
            .iter()
            .map(Into::into)
            .collect();
        let child = rudder_bench::parallel::child_args_for(&args, 2);
        let cli = Cli::try_parse_from(std::iter::once("rudder".into()).chain(child)).unwrap();
        assert_eq!(cli.global.threads, Some(2));
        let Top::Bench(BenchCommand::Llm {
            parallel,
            parallel_one,
            ..
        }) = cli.command
        else {
            panic!("expected llm");
        };
        assert_eq!((parallel, parallel_one), (None, Some(2)));
        // Without --parallel the single-sequence benchmark runs as before.
        let cli = Cli::try_parse_from(["rudder", "bench", "llm", "--reps", "2"]).unwrap();
        assert!(matches!(
            cli.command,
            Top::Bench(BenchCommand::Llm {
                parallel: None,
                parallel_one: None,
                reps: 2,
                ..
            })
        ));
    }

    #[test]
    fn research_children_get_their_mode() {
        use rudder_bench::research::RESEARCH_CHILD_FLAG;
        let cli = Cli::try_parse_from(["rudder", "bench", "research"]).unwrap();
        let Top::Bench(BenchCommand::Research {
            depth,
            breadth,
            research_child,
            ..
        }) = cli.command
        else {
            panic!("expected research");
        };
        assert_eq!((depth, breadth, research_child), (2, 3, None));
        let args: Vec<std::ffi::OsString> = ["bench", "research", "--depth", "1", "--json"]
            .iter()
            .map(Into::into)
            .collect();
        let child = rudder_bench::parallel::child_args(
            &args,
            &[RESEARCH_CHILD_FLAG],
            &[RESEARCH_CHILD_FLAG.into(), "sequential".into()],
        );
        let cli = Cli::try_parse_from(std::iter::once("rudder".into()).chain(child)).unwrap();
        let Top::Bench(BenchCommand::Research {
            depth,
            research_child,
            ..
        }) = cli.command
        else {
            panic!("expected research");
        };
        assert_eq!((depth, research_child), (1, Some(ResearchMode::Sequential)));
    }
}
