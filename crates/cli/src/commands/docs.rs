//! `rudder docs …`: add folders and files to the document library, list, search, count and
//! remove them.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::Subcommand;
use rudder::embed::{Embedder, FastEmbedder};
use rudder::models::{ModelState, ModelStore};
use rudder::sources::docs::{AddReport, FileStatus, Library};
use rudder::text::keep_end;

use super::progress::CountProgress;
use super::{one_line, Ctx};

#[derive(Debug, Subcommand)]
pub enum DocsCommand {
    /// Index folders (recursively) and files: Markdown, text, HTML, PDF, DOCX. Adding a
    /// folder again re-reads only what changed and drops files deleted from disk.
    Add {
        #[arg(required = true, value_name = "PATH")]
        paths: Vec<PathBuf>,
        /// Skip computing embeddings now (BM25 search works at once; run `rudder docs embed`
        /// later).
        #[arg(long)]
        no_embed: bool,
    },
    /// The folders, files and corpora in the library, and their documents.
    List {
        /// Also list every article of installed corpora.
        #[arg(long)]
        all: bool,
    },
    /// Remove a file, a folder or a corpus (by path or corpus name) from the library. The
    /// files themselves are not touched.
    Remove {
        #[arg(value_name = "PATH|CORPUS")]
        target: String,
    },
    /// Search the library (BM25 + embeddings, fused by rank).
    Search {
        query: String,
        /// How many passages.
        #[arg(short = 'k', long, default_value_t = 10)]
        limit: usize,
    },
    /// Counts and sizes on disk.
    Stats,
    /// Compute embeddings for chunks that do not have them yet.
    Embed,
}

pub(super) fn open_library(ctx: &Ctx) -> anyhow::Result<Library> {
    let dir = ctx.paths.docs_dir();
    Library::open(&dir)
        .with_context(|| format!("opening the document library in {}", dir.display()))
}

/// How many threads an embedder gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Workload {
    /// A query or two: the configured thread count (every physical core by default).
    Queries,
    /// Embedding a whole folder or corpus while the user waits: every core, unless the user
    /// configured a thread count.
    Bulk,
}

/// The embedding model, if it is installed. The library works without it (BM25 only).
pub(super) fn embedder(
    ctx: &Ctx,
    workload: Workload,
) -> anyhow::Result<Option<(FastEmbedder, String)>> {
    let store = ModelStore::open(&ctx.paths)?;
    let name = ctx.settings.embed_model.clone();
    if store.quick_state(&name) != ModelState::Present {
        return Ok(None);
    }
    let threads = match (workload, ctx.settings.llama.threads.filter(|&t| t > 0)) {
        (Workload::Bulk, None) => std::thread::available_parallelism().map_or(1, |n| n.get()),
        _ => ctx.settings.llama.effective_threads(),
    };
    let embedder = FastEmbedder::from_store(&store, &name, threads)?;
    Ok(Some((embedder, name)))
}

/// The note shown when documents are indexed without an embedding model.
pub(super) fn missing_embedder_note(ctx: &Ctx) {
    eprintln!(
        "note: the embedding model {} is not installed, so only BM25 search is available; \
         `rudder models fetch {}` then `rudder docs embed` adds semantic search",
        ctx.settings.embed_model, ctx.settings.embed_model
    );
}

pub fn run(ctx: &Ctx, cmd: DocsCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        DocsCommand::Add { paths, no_embed } => add(ctx, paths, no_embed),
        DocsCommand::List { all } => list(ctx, all),
        DocsCommand::Remove { target } => remove(ctx, &target),
        DocsCommand::Search { query, limit } => search(ctx, &query, limit),
        DocsCommand::Stats => stats(ctx),
        DocsCommand::Embed => {
            let mut library = open_library(ctx)?;
            let Some((embedder, name)) = embedder(ctx, Workload::Bulk)? else {
                bail!(
                    "the embedding model {} is not installed (rudder models fetch {})",
                    ctx.settings.embed_model,
                    ctx.settings.embed_model
                );
            };
            let n = library.embed_pending(&embedder, &name, &CountProgress::default())?;
            if ctx.json {
                println!("{}", serde_json::json!({ "embedded": n, "model": name }));
            } else {
                println!("embedded {n} chunks with {name}");
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn add(ctx: &Ctx, paths: Vec<PathBuf>, no_embed: bool) -> anyhow::Result<ExitCode> {
    let mut library = open_library(ctx)?;
    let embedder = if no_embed {
        None
    } else {
        embedder(ctx, Workload::Bulk)?
    };
    if !no_embed && embedder.is_none() && !ctx.json {
        missing_embedder_note(ctx);
    }
    let embedder_ref = embedder
        .as_ref()
        .map(|(e, name)| (e as &dyn Embedder, name.as_str()));
    let progress = CountProgress::default();
    let mut reports = Vec::new();
    let mut root_errors = Vec::new();
    for path in &paths {
        match library.add(path, embedder_ref, &progress) {
            Ok(report) => reports.push(report),
            // A root that cannot be read at all (missing, not permitted) is reported like a
            // failed file, and the other roots still go ahead.
            Err(e @ rudder::sources::docs::DocsError::File { .. }) => {
                root_errors.push(e.to_string());
            }
            Err(e) => return Err(e.into()),
        }
    }
    library.release_writer()?;
    if ctx.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "roots": reports, "errors": root_errors,
            }))?
        );
    } else {
        print_add_table(&reports, &root_errors);
    }
    let indexed_any = reports.iter().any(AddReport::indexed_anything);
    let failures = root_errors.len() as u64 + reports.iter().map(|r| r.failed).sum::<u64>();
    if !ctx.json && failures > 0 {
        if indexed_any {
            eprintln!("error: {failures} could not be indexed (see the table); the rest was");
        } else {
            eprintln!("error: nothing could be indexed");
        }
    }
    // Re-adding an unchanged folder indexes nothing and fails nothing: success.
    Ok(super::exit_for(indexed_any || failures == 0, failures))
}

fn print_add_table(reports: &[AddReport], root_errors: &[String]) {
    let rows: Vec<_> = reports
        .iter()
        .flat_map(|r| r.files.iter())
        .filter(|f| f.status != FileStatus::Unchanged)
        .collect();
    let width = rows
        .iter()
        .map(|f| f.file.chars().count())
        .max()
        .unwrap_or(4)
        .clamp(4, 60);
    if !rows.is_empty() {
        println!(
            "{:<width$}  {:<9}  {:<8}  {:>6}  {:>5}  note",
            "file", "status", "format", "chunks", "pages"
        );
    }
    for f in &rows {
        let format = f.format.map(|f| f.as_str()).unwrap_or("-");
        let pages = f.pages.map(|p| p.to_string()).unwrap_or_else(|| "-".into());
        let note = match (&f.reason, &f.title) {
            (Some(reason), _) => reason.clone(),
            (None, Some(title)) => one_line(title, 60),
            (None, None) => String::new(),
        };
        println!(
            "{:<width$}  {:<9}  {format:<8}  {:>6}  {pages:>5}  {note}",
            keep_end(&f.file, width),
            f.status.as_str(),
            f.chunks
        );
    }
    for e in root_errors {
        println!("FAILED: {e}");
    }
    let sum = |f: fn(&AddReport) -> u64| reports.iter().map(f).sum::<u64>();
    println!(
        "{} added, {} updated, {} unchanged, {} removed, {} failed; {} chunks indexed, {} embedded, {:.1} s",
        sum(|r| r.added),
        sum(|r| r.updated),
        sum(|r| r.unchanged),
        sum(|r| r.removed),
        sum(|r| r.failed) + root_errors.len() as u64,
        sum(|r| r.chunks),
        sum(|r| r.embedded),
        reports.iter().map(|r| r.seconds).sum::<f64>(),
    );
}

fn list(ctx: &Ctx, all: bool) -> anyhow::Result<ExitCode> {
    let library = open_library(ctx)?;
    let roots = library.roots()?;
    let documents = library.list(all)?;
    if ctx.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "roots": roots, "documents": documents,
            }))?
        );
        return Ok(ExitCode::SUCCESS);
    }
    if roots.is_empty() {
        println!("the document library is empty; add files with `rudder docs add PATH`");
        return Ok(ExitCode::SUCCESS);
    }
    println!("{:<7} {:>9} {:>7}  path", "kind", "documents", "chunks");
    for r in &roots {
        let label = match &r.name {
            Some(name) => format!("{name} ({})", r.path),
            None => r.path.clone(),
        };
        println!("{:<7} {:>9} {:>7}  {label}", r.kind, r.documents, r.chunks);
    }
    if !documents.is_empty() {
        println!();
        println!(
            "{:<8} {:>6} {:>5}  {:<40}  path",
            "format", "chunks", "pages", "title"
        );
        for d in &documents {
            let pages = d.pages.map(|p| p.to_string()).unwrap_or_else(|| "-".into());
            println!(
                "{:<8} {:>6} {pages:>5}  {:<40}  {}",
                d.format.as_str(),
                d.chunks,
                one_line(&d.title, 40),
                d.path
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn remove(ctx: &Ctx, target: &str) -> anyhow::Result<ExitCode> {
    let mut library = open_library(ctx)?;
    // A corpus can be named instead of pointed at.
    let path = match library.corpus_root(target)? {
        Some(root) if !std::path::Path::new(target).exists() => PathBuf::from(root.path),
        _ => PathBuf::from(target),
    };
    let report = library.remove(&path)?;
    if ctx.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!(
            "removed {} document(s) under {} from the library (the files are untouched)",
            report.documents, report.path
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn search(ctx: &Ctx, query: &str, limit: usize) -> anyhow::Result<ExitCode> {
    let mut library = open_library(ctx)?;
    let embedder = embedder(ctx, Workload::Queries)?;
    if embedder.is_none() {
        tracing::info!("embedding model not installed; searching with BM25 only");
    }
    let hits = library.search(
        query,
        limit,
        embedder
            .as_ref()
            .map(|(e, name)| (e as &dyn Embedder, name.as_str())),
    )?;
    if ctx.json {
        println!("{}", serde_json::to_string_pretty(&hits)?);
        return Ok(ExitCode::SUCCESS);
    }
    if hits.is_empty() {
        println!("no matches");
    }
    for (i, h) in hits.iter().enumerate() {
        println!("{:>2}. {}", i + 1, one_line(&h.title, 100));
        println!("    {}", h.target.locator());
        if let Some(link) = h.target.link() {
            println!("    {link}");
        }
        println!("    {}", one_line(&h.text, 200));
    }
    Ok(ExitCode::SUCCESS)
}

fn stats(ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let library = open_library(ctx)?;
    let stats = library.stats()?;
    if ctx.json {
        println!("{}", serde_json::to_string_pretty(&stats)?);
        return Ok(ExitCode::SUCCESS);
    }
    let s = &stats.store;
    println!("roots:     {}", s.roots);
    println!("documents: {}", s.documents);
    for (format, n) in &s.by_format {
        println!("  {format:<10} {n}");
    }
    if !s.corpora.is_empty() {
        println!("corpora:   {}", s.corpora.join(", "));
    }
    println!("pages:     {}", s.pages);
    println!(
        "chunks:    {} ({} in the text index)",
        s.chunks, stats.indexed_chunks
    );
    if s.embedded.is_empty() {
        println!("embedded:  none");
    }
    for (model, n) in &s.embedded {
        println!("embedded:  {n} of {} chunks with {model}", s.chunks);
    }
    println!(
        "on disk:   database {:.1} MB, text index {:.1} MB",
        stats.database_bytes as f64 / 1e6,
        stats.text_index_bytes as f64 / 1e6
    );
    Ok(ExitCode::SUCCESS)
}
