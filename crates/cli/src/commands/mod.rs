//! Command-line parsing and dispatch. Each subcommand lives in its own file and is a thin layer
//! over the library.
//!
//! `rudder eval …` and `rudder bench …` are the second binaries `rudder-eval` and
//! `rudder-bench` (crates `crates/eval` and `crates/bench`), so that neither the desktop app nor
//! this binary links evaluation or benchmark code: [`dispatch`] runs the one found next to this
//! executable (or on `PATH`) with the whole command line, as git and cargo run theirs.

mod ask;
mod corpus;
mod docs;
mod embed;
mod history;
mod live;
mod models;
mod profile;
mod research;
mod sessions;
mod terminal;

/// The command-line pieces `rudder`, `rudder-eval` and `rudder-bench` share: this package's
/// library.
use rudder_cli as support;

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub use support::{one_line, Ctx};
use support::{progress, GlobalArgs};

#[derive(Debug, Parser)]
#[command(
    name = "rudder",
    version,
    about = "Private, steerable deep research on your own machine"
)]
pub struct Cli {
    #[command(flatten)]
    global: GlobalArgs,
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
    /// Measure performance (runs the `rudder-bench` binary; `rudder bench --help` lists its
    /// commands).
    #[command(disable_help_flag = true)]
    Bench(External),
    /// Evaluate retrieval and reports (runs the `rudder-eval` binary; `rudder eval --help`
    /// lists its commands).
    #[command(disable_help_flag = true)]
    Eval(External),
    /// Show the configured models and whether they are installed.
    Status,
}

/// A subcommand that another binary implements: everything after it, verbatim (the other
/// binary parses the whole command line again, global flags included).
#[derive(Debug, clap::Args)]
pub struct External {
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        num_args = 0..,
        value_name = "ARGS"
    )]
    args: Vec<OsString>,
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

pub fn main() -> ExitCode {
    support::start();
    let cli = Cli::parse();
    // The second binaries set up logging and the data directory themselves.
    match cli.command {
        Command::Eval(_) => return support::finish(dispatch("rudder-eval")),
        Command::Bench(_) => return support::finish(dispatch("rudder-bench")),
        _ => {}
    }
    support::init_logging(cli.global.verbose);
    support::finish(run(cli))
}

/// Runs the second binary `name` with this process's arguments (so `rudder --data-dir X eval
/// run …` becomes `rudder-eval --data-dir X eval run …`) and exits with its status.
fn dispatch(name: &str) -> anyhow::Result<ExitCode> {
    let Some(program) = find_sibling(name) else {
        anyhow::bail!(
            "`rudder {}` is the separate binary `{name}`, which is neither next to this \
             executable nor on PATH; build it with `cargo build -p {name}` (or `cargo build \
             --workspace`) and keep it beside `rudder`",
            name.trim_start_matches("rudder-")
        );
    };
    let mut command = std::process::Command::new(&program);
    command.args(std::env::args_os().skip(1));
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        // Only returns on failure; otherwise the other binary's exit status is this one's.
        let e = command.exec();
        Err(anyhow::Error::new(e).context(format!("running {}", program.display())))
    }
    #[cfg(not(unix))]
    {
        use anyhow::Context;
        let status = command
            .status()
            .with_context(|| format!("running {}", program.display()))?;
        Ok(match status.code() {
            Some(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
            None => ExitCode::FAILURE,
        })
    }
}

/// `name` next to the running executable (how `cargo build` and installs lay them out), else
/// on `PATH`.
fn find_sibling(name: &str) -> Option<PathBuf> {
    let file = format!("{name}{}", std::env::consts::EXE_SUFFIX);
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join(&file)));
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .map(|dir| dir.join(&file));
    beside.into_iter().chain(on_path).find(|p| p.is_file())
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let ctx = cli.global.ctx()?;
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
        Command::Eval(_) => dispatch("rudder-eval"),
        Command::Bench(_) => dispatch("rudder-bench"),
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
                println!("threads:     {}", status.threads);
                println!(
                    "gpu:         {} (gpu_layers = {})",
                    status.offload.summary(),
                    status.gpu_layers_setting
                );
                println!("             {}", status.offload.reason);
                if let Some(note) = &status.gpu_build_note {
                    println!("             {note}");
                }
                if let Some(r) = &status.recommendation {
                    println!("recommended: {}: {}", r.model, r.reason);
                }
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rudder::config::Settings;

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

    /// `--threads` after a subcommand's own arguments is the global flag. `eval` is another
    /// binary's (its test of the same line is in `crates/eval`): `rudder` hands it everything
    /// after `eval` verbatim, and reads the global flags given before it.
    #[test]
    fn threads_is_a_global_flag() {
        let cli =
            Cli::try_parse_from(["rudder", "history", "search", "tea", "--threads", "3"]).unwrap();
        assert_eq!(cli.global.threads, Some(3));
        let line = [
            "rudder",
            "eval",
            "table",
            "a",
            "--out",
            "b",
            "--threads",
            "3",
        ];
        let cli = Cli::try_parse_from(line).unwrap();
        let Command::Eval(External { args }) = cli.command else {
            panic!("expected the eval command");
        };
        assert_eq!(
            args,
            line[2..].iter().map(OsString::from).collect::<Vec<_>>()
        );
        let cli = Cli::try_parse_from(["rudder", "--threads", "3", "eval", "--help"]).unwrap();
        assert_eq!(cli.global.threads, Some(3));
        assert!(matches!(cli.command, Command::Eval(External { args }) if args == ["--help"]));
    }
}
