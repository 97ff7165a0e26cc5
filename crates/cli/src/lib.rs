//! The command-line pieces that the `rudder` binary (this package's, `src/main.rs`) and the
//! second binaries `rudder-eval` and `rudder-bench` share, so that each is defined once: the
//! global flags, the context built from them, process setup (SIGPIPE, ONNX Runtime telemetry,
//! logging) and the progress bars.

pub mod progress;

use std::path::PathBuf;
use std::process::ExitCode;

use rudder::config::{Paths, Settings};

/// The flags every `rudder` command takes, before or after the subcommand.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct GlobalArgs {
    /// Where Rudder keeps its state (default: $XDG_DATA_HOME/rudder).
    #[arg(long, global = true, env = "RUDDER_DATA_DIR", value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// Model to use, by manifest name (see `rudder models list`).
    #[arg(long, global = true, value_name = "NAME")]
    pub model: Option<String>,
    /// CPU threads for generation, instead of `llama.threads` in settings.toml (e.g. 1 each
    /// for two evaluation processes side by side).
    #[arg(long, global = true, env = "RUDDER_THREADS", value_name = "N")]
    pub threads: Option<usize>,
    /// Print machine-readable JSON.
    #[arg(long, global = true)]
    pub json: bool,
    /// More log output (repeat for more).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
}

impl GlobalArgs {
    /// The context the subcommands get: the data directory's paths, the saved settings with
    /// `--threads` applied, and the `--model` and `--json` choices.
    pub fn ctx(&self) -> anyhow::Result<Ctx> {
        let paths = Paths::resolve(self.data_dir.as_deref())?;
        let mut settings = Settings::load(&paths)?;
        if let Some(threads) = self.threads {
            anyhow::ensure!(threads > 0, "--threads must be at least 1");
            settings.llama.threads = Some(threads);
        }
        Ok(Ctx {
            paths,
            settings,
            model: self.model.clone(),
            json: self.json,
        })
    }
}

/// Shared context handed to every subcommand.
pub struct Ctx {
    pub paths: Paths,
    pub settings: Settings,
    pub model: Option<String>,
    pub json: bool,
}

/// What every binary does first, before parsing its command line: the default SIGPIPE action
/// and no ONNX Runtime telemetry.
pub fn start() {
    restore_default_sigpipe();
    rudder::embed::disable_onnx_telemetry_env();
}

/// The exit status for a command's result, printing the error (with each cause once) and its
/// remedy, if any.
pub fn finish(result: anyhow::Result<ExitCode>) -> ExitCode {
    match result {
        Ok(code) => code,
        Err(e) => {
            let error: &(dyn std::error::Error + 'static) = e.as_ref();
            // Each cause once: many messages already quote their source.
            eprintln!("error: {}", rudder::text::error_chain(error));
            if let Some(remedy) = rudder::diagnose::remedy_of(error) {
                eprintln!("to fix it: {}", remedy_as_a_command(&remedy));
            }
            ExitCode::FAILURE
        }
    }
}

/// A remedy the engine names, worded for the terminal: the command that does it.
pub fn remedy_as_a_command(remedy: &rudder::remedy::Remedy) -> String {
    use rudder::remedy::Remedy;
    match remedy {
        Remedy::FetchModel(name) => format!("run `rudder models fetch {name}`"),
        Remedy::ListModels => "`rudder models list` shows the models Rudder knows".into(),
        Remedy::AddSources => "add documents (`rudder docs add DIR` or `rudder corpus fetch`), \
                               import history (`rudder import PATH`), or enable web search"
            .into(),
        Remedy::ListDocuments => "`rudder docs list` shows the library".into(),
        Remedy::ListStatements => "`rudder profile show` lists them".into(),
        Remedy::SteerElsewhere(id) => format!("steer it with `rudder steer {id} \"…\"`"),
        Remedy::Reimport => "move the database aside and import your history exports again \
                             (`rudder import PATH`; they are the source)"
            .into(),
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

/// Logs to stderr: warnings by default, more with each `-v`, or `RUDDER_LOG`'s filter.
pub fn init_logging(verbose: u8) {
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

pub use rudder::text::one_line;
