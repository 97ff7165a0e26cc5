//! Command-line parsing and dispatch. Each subcommand lives in its own file and is a thin layer
//! over the library.

mod ask;
mod bench;
mod corpus;
mod docs;
mod embed;
mod eval;
mod history;
mod live;
mod models;
mod profile;
mod progress;
mod research;
mod sessions;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use rudder::config::{Paths, Settings};

#[derive(Debug, Parser)]
#[command(
    name = "rudder",
    version,
    about = "Private, steerable deep research on your own machine"
)]
pub struct Cli {
    /// Where Rudder keeps its state (default: $XDG_DATA_HOME/rudder).
    #[arg(long, global = true, env = "RUDDER_DATA_DIR", value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// Model to use, by manifest name (see `rudder models list`).
    #[arg(long, global = true, value_name = "NAME")]
    model: Option<String>,
    /// CPU threads for generation, instead of `llama.threads` in settings.toml (e.g. 1 each
    /// for two evaluation processes side by side).
    #[arg(long, global = true, env = "RUDDER_THREADS", value_name = "N")]
    threads: Option<usize>,
    /// Print machine-readable JSON.
    #[arg(long, global = true)]
    json: bool,
    /// More log output (repeat for more).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Ask the local model a question and stream the answer.
    Ask(ask::AskArgs),
    /// Import history exports: files, folders or .zip archives (Takeout, ChatGPT, Claude,
    /// browser History databases).
    Import(history::ImportArgs),
    /// Search, show, count, embed, reindex and forget imported history.
    #[command(subcommand)]
    History(history::HistoryCommand),
    /// Add, list, search and remove local documents (Markdown, text, HTML, PDF, DOCX).
    #[command(subcommand)]
    Docs(docs::DocsCommand),
    /// Offline corpora (Wikipedia summaries) for the document library.
    #[command(subcommand)]
    Corpus(corpus::CorpusCommand),
    /// Research a question over your documents and history, pausing to ask when it pays off,
    /// and write a cited report.
    Research(research::ResearchArgs),
    /// List, show, resume and export research sessions.
    #[command(subcommand)]
    Sessions(sessions::SessionsCommand),
    /// Steer a running research session from another terminal: "focus on …", "ignore …",
    /// "also look into …".
    Steer(sessions::SteerArgs),
    /// Build the query-aware profile of what this user needs for a question, from history.
    Profile(profile::ProfileArgs),
    /// Embed texts and print their pairwise cosine similarities.
    Embed(embed::EmbedArgs),
    /// List, fetch, verify and register models.
    #[command(subcommand)]
    Models(models::ModelsCommand),
    /// Measure performance.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    /// Evaluate retrieval and (later) reports.
    #[command(subcommand)]
    Eval(eval::EvalCommand),
    /// Show the configured models and whether they are installed.
    Status,
}

/// `s` on one line, cut to at most `max` characters with an ellipsis.
pub fn one_line(s: &str, max: usize) -> String {
    let flat = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        flat
    } else {
        flat.chars().take(max.saturating_sub(1)).collect::<String>() + "…"
    }
}

/// Exit status of `import` and `docs add` when some inputs failed and others went in, so that
/// scripts can tell a partial run from a clean one (as `rsync` does with its own code). 1 means
/// nothing went in, or any other error.
pub const EXIT_PARTIAL: u8 = 3;

/// The exit status for a run where `ok_any` inputs went in and `failed` did not.
pub fn exit_for(ok_any: bool, failed: u64) -> ExitCode {
    match (ok_any, failed) {
        (_, 0) => ExitCode::SUCCESS,
        (true, _) => ExitCode::from(EXIT_PARTIAL),
        (false, _) => ExitCode::FAILURE,
    }
}

/// Shared context handed to every subcommand.
pub struct Ctx {
    pub paths: Paths,
    pub settings: Settings,
    pub model: Option<String>,
    pub json: bool,
}

pub fn main() -> ExitCode {
    restore_default_sigpipe();
    rudder::embed::disable_onnx_telemetry_env();
    let cli = Cli::parse();
    init_logging(cli.verbose);
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Rust ignores SIGPIPE, so `rudder history search … | head` would panic on the closed pipe.
/// Command-line tools conventionally just stop: restore the default action.
fn restore_default_sigpipe() {
    #[cfg(unix)]
    // SAFETY: called first thing in main, before any other thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn init_logging(verbose: u8) {
    let default = match verbose {
        0 => "warn,llama_cpp_2=error,llama-cpp-2=error",
        1 => "info,llama_cpp_2=warn",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("RUDDER_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let paths = Paths::resolve(cli.data_dir.as_deref())?;
    let mut settings = Settings::load(&paths)?;
    if let Some(threads) = cli.threads {
        anyhow::ensure!(threads > 0, "--threads must be at least 1");
        settings.llama.threads = Some(threads);
    }
    let ctx = Ctx {
        paths,
        settings,
        model: cli.model,
        json: cli.json,
    };
    match cli.command {
        Command::Ask(args) => ask::run(&ctx, args),
        Command::Embed(args) => embed::run(&ctx, args),
        Command::Import(args) => history::run_import(&ctx, args),
        Command::History(cmd) => history::run(&ctx, cmd),
        Command::Docs(cmd) => docs::run(&ctx, cmd),
        Command::Corpus(cmd) => corpus::run(&ctx, cmd),
        Command::Profile(args) => profile::run(&ctx, args),
        Command::Research(args) => research::run(&ctx, args),
        Command::Sessions(cmd) => sessions::run(&ctx, cmd),
        Command::Steer(args) => sessions::steer(&ctx, args),
        Command::Models(cmd) => models::run(&ctx, cmd),
        Command::Bench(cmd) => bench::run(&ctx, cmd),
        Command::Eval(cmd) => eval::run(&ctx, cmd),
        Command::Status => {
            let status = rudder::status::engine_status(&ctx.paths)?;
            if ctx.json {
                println!("{}", serde_json::to_string_pretty(&status)?);
            } else {
                println!("data dir:    {}", status.data_dir);
                println!("models dir:  {}", status.models_dir);
                println!(
                    "chat model:  {} ({})",
                    status.chat_model, status.chat_model_state
                );
                println!(
                    "embed model: {} ({})",
                    status.embed_model,
                    if status.embed_model_present {
                        "present"
                    } else {
                        "missing"
                    }
                );
                println!(
                    "threads:     {}   gpu layers: {}",
                    status.threads, status.gpu_layers
                );
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// clap's own consistency checks over every subcommand (no global flag clashes with a
    /// subcommand's, defaults parse, …).
    #[test]
    fn the_command_line_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    /// The terminal and the window go through one session runner: the same saved settings and
    /// the same overrides give the same stored configuration, and the saved settings count for
    /// the CLI too.
    #[test]
    fn the_cli_and_the_window_configure_a_run_alike() {
        use rudder::session::runner::new_session_config;
        let mut settings = Settings::default();
        settings.research.breadth = 2;
        settings.research.c0 = 0.4;
        settings.research.clarify_turns = 1;
        settings.research.lambda_info = 0.8;
        let cli = Cli::try_parse_from([
            "rudder",
            "research",
            "How is tea stored?",
            "--depth",
            "2",
            "--tol",
            "1.5",
            "--no-history",
        ])
        .unwrap();
        let Command::Research(args) = cli.command else {
            panic!("expected the research command");
        };
        let from_cli = new_session_config(&settings, &args.to_new_session(), "m").unwrap();
        let request: rudder::app::ResearchRequest = serde_json::from_value(serde_json::json!({
            "question": "How is tea stored?",
            "use_history": false,
            "use_docs": true,
            "depth": 2,
            "tol": 1.5,
        }))
        .unwrap();
        let from_app = new_session_config(&settings, &request.to_new_session(), "m").unwrap();
        assert_eq!(from_cli, from_app);
        let s = from_cli.settings;
        assert_eq!((s.depth, s.breadth, s.clarify_turns), (2, 2, 1));
        assert_eq!((s.pause.base_cost, s.pause.tolerance), (0.4, 1.5));
        assert_eq!(s.weights.lambda_info, 0.8);
        // The same range check for both: the CLI no longer runs what the window refuses.
        let cli = Cli::try_parse_from(["rudder", "research", "q", "--depth", "9"]).unwrap();
        let Command::Research(args) = cli.command else {
            panic!("expected the research command");
        };
        let err = new_session_config(&settings, &args.to_new_session(), "m").unwrap_err();
        assert!(err.to_string().contains("depth must be 0 to 6"), "{err}");
    }

    #[test]
    fn threads_is_a_global_flag() {
        let cli = Cli::try_parse_from([
            "rudder",
            "eval",
            "table",
            "a",
            "--out",
            "b",
            "--threads",
            "3",
        ])
        .unwrap();
        assert_eq!(cli.threads, Some(3));
    }
}
