//! `rudder import` and `rudder history …`: bring exports in, search them, show, count, forget,
//! rebuild the indexes, read history into memory.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};
use chrono::{DateTime, NaiveDate, Utc};
use clap::{Args, Subcommand, ValueEnum};
use rudder::embed::{Embedder, FastEmbedder};
use rudder::history::{
    FileStatus, Filter, ForgetSelector, Format, History, HistorySource, ImportOptions, Kind,
    SearchMode,
};
use rudder::models::{ModelState, ModelStore};
use rudder::profile::memory::RememberOptions;
use rudder::text::keep_end;

use super::progress::CountProgress;
use super::{one_line, Ctx};

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// Export files, folders, or .zip archives (Google Takeout, ChatGPT, Claude, browser
    /// History databases). Formats are detected.
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<PathBuf>,
    /// Read every file as this format instead of detecting it.
    #[arg(long, value_parser = parse_format)]
    format: Option<Format>,
    /// Skip computing embeddings now (BM25 search works at once; run `rudder history embed`
    /// later).
    #[arg(long)]
    no_embed: bool,
    /// Then read the new entries into memory with the chat model (`rudder history remember`).
    #[arg(long)]
    remember: bool,
}

#[derive(Debug, Subcommand)]
pub enum HistoryCommand {
    /// Search imported history (BM25 + embeddings, fused by rank).
    Search(SearchArgs),
    /// Show one entry with all its turns.
    Show {
        /// Entry id, as printed by `search`.
        id: i64,
    },
    /// Count entries by source and kind; sizes on disk.
    Stats,
    /// Permanently remove entries from the store and both indexes.
    Forget(ForgetArgs),
    /// Compute embeddings for entries that do not have them yet.
    Embed,
    /// Read the entries not yet in memory with the chat model and keep what they say about
    /// you (constraints, background, preferences, how you like answers), each statement with
    /// the entries it rests on. Resumes where it stopped. `rudder history memory` prints it;
    /// what you keep with `rudder profile say` shapes every profile (`rudder profile
    /// --memory-candidates N` lets the model pick from it per question).
    Remember {
        /// Stop after this many entries (the rest stays for the next run).
        #[arg(long, value_name = "N")]
        limit: Option<usize>,
    },
    /// Print the memory: every statement with its kind and the entries it rests on.
    Memory,
    /// Rebuild the text index and the embeddings from the store.
    Reindex {
        /// Rebuild only the text index, keeping the stored embeddings.
        #[arg(long)]
        text_only: bool,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum ModeArg {
    Bm25,
    Vector,
    Hybrid,
}

#[derive(Debug, Args)]
pub struct SearchArgs {
    /// What to look for.
    query: String,
    /// Only entries of this kind (repeatable): search, chat, visit.
    #[arg(long, value_parser = parse_kind)]
    kind: Vec<Kind>,
    /// Only entries from this source (repeatable): google-search, gemini, chatgpt, claude,
    /// chrome, brave, edge, firefox, safari.
    #[arg(long, value_parser = parse_source)]
    source: Vec<HistorySource>,
    /// Only entries on or after this date (YYYY-MM-DD or RFC 3339).
    #[arg(long, value_parser = parse_since)]
    since: Option<DateTime<Utc>>,
    /// Only entries on or before this date (a date includes that whole day).
    #[arg(long, value_parser = parse_until)]
    until: Option<DateTime<Utc>>,
    /// How many results.
    #[arg(short = 'k', long, default_value_t = 10)]
    limit: usize,
    /// Which retrievers to use.
    #[arg(long, value_enum, default_value_t = ModeArg::Hybrid)]
    mode: ModeArg,
}

#[derive(Debug, Args)]
pub struct ForgetArgs {
    /// Forget this one entry.
    #[arg(conflicts_with = "all")]
    id: Option<i64>,
    /// Forget everything from this source (with --since/--until: within that range).
    #[arg(long, value_parser = parse_source, conflicts_with_all = ["id", "all"])]
    source: Option<HistorySource>,
    /// Start of the range to forget (YYYY-MM-DD or RFC 3339).
    #[arg(long, value_parser = parse_since, conflicts_with_all = ["id", "all"])]
    since: Option<DateTime<Utc>>,
    /// End of the range to forget (a date includes that whole day).
    #[arg(long, value_parser = parse_until, conflicts_with_all = ["id", "all"])]
    until: Option<DateTime<Utc>>,
    /// Forget all history and profile signals.
    #[arg(long)]
    all: bool,
    /// Do not ask for confirmation.
    #[arg(long, short = 'y')]
    yes: bool,
}

fn parse_format(s: &str) -> Result<Format, String> {
    s.parse()
}
fn parse_kind(s: &str) -> Result<Kind, String> {
    s.parse()
}
fn parse_source(s: &str) -> Result<HistorySource, String> {
    s.parse()
}

fn parse_date(s: &str, end_of_day: bool) -> Result<DateTime<Utc>, String> {
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Ok(t.with_timezone(&Utc));
    }
    let day = NaiveDate::parse_from_str(s, "%Y-%m-%d")
        .map_err(|_| format!("{s:?} is not a date (YYYY-MM-DD) or an RFC 3339 time"))?;
    let day = if end_of_day {
        day.succ_opt().ok_or("date out of range")?
    } else {
        day
    };
    Ok(day
        .and_hms_opt(0, 0, 0)
        .ok_or("date out of range")?
        .and_utc())
}
fn parse_since(s: &str) -> Result<DateTime<Utc>, String> {
    parse_date(s, false)
}
fn parse_until(s: &str) -> Result<DateTime<Utc>, String> {
    parse_date(s, true)
}

fn open_history(ctx: &Ctx) -> anyhow::Result<History> {
    let dir = ctx.paths.history_dir();
    History::open(&dir).with_context(|| format!("opening the history in {}", dir.display()))
}

/// The embedding model, if it is installed. History works without it (BM25 only).
fn embedder(ctx: &Ctx) -> anyhow::Result<Option<(FastEmbedder, String)>> {
    let store = ModelStore::open(&ctx.paths)?;
    let name = ctx.settings.embed_model.clone();
    if store.quick_state(&name) != ModelState::Present {
        return Ok(None);
    }
    let threads = ctx.settings.llama.effective_threads();
    let embedder = FastEmbedder::from_store(&store, &name, threads)?;
    Ok(Some((embedder, name)))
}

fn embed_pending(ctx: &Ctx, history: &mut History) -> anyhow::Result<()> {
    let embedded = match embedder(ctx)? {
        Some((embedder, name)) => {
            Some(history.embed_pending(&embedder, &name, &CountProgress::default())?)
        }
        None => None,
    };
    say_what_was_embedded(ctx, embedded);
    Ok(())
}

/// "embedded N entries", or, when the embedding model is not installed (`None`), what that
/// costs.
fn say_what_was_embedded(ctx: &Ctx, embedded: Option<u64>) {
    let name = &ctx.settings.embed_model;
    if let Some(embedded) = embedded {
        if embedded > 0 && !ctx.json {
            eprintln!("embedded {embedded} entries with {name}");
        }
    } else {
        eprintln!(
            "note: the embedding model {name} is not installed, so only BM25 search is \
             available; `rudder models fetch {name}` then `rudder history embed` adds semantic \
             search"
        );
    }
}

pub fn run_import(ctx: &Ctx, args: ImportArgs) -> anyhow::Result<ExitCode> {
    let mut history = open_history(ctx)?;
    let options = ImportOptions {
        format: args.format,
    };
    let embedder = if args.no_embed { None } else { embedder(ctx)? };
    let (report, embedded) = history.import_then_embed(
        &args.paths,
        &options,
        embedder
            .as_ref()
            .map(|(e, name)| (e as &dyn Embedder, name.as_str())),
        &CountProgress::default(),
    )?;
    if report.stored_anything() && !args.no_embed {
        say_what_was_embedded(ctx, embedder.is_some().then_some(embedded));
    }
    if ctx.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_import_table(&report);
    }
    if report.stored_anything() {
        drop(history);
        if args.remember {
            // On stderr, so that `--json import` prints one document.
            eprintln!("{}", remembered_line(&read_into_memory(ctx, None)?));
        } else if !ctx.json {
            let unread = open_history(ctx)?.store().count_unread_for_memory()?;
            eprintln!(
                "{unread} entries are not yet read into memory: `rudder history remember` reads \
                 them, `rudder history memory` shows what it keeps"
            );
        }
    }
    let imported_any = report
        .files
        .iter()
        .any(|f| f.status == FileStatus::Imported);
    if !ctx.json {
        if !imported_any {
            eprintln!("error: nothing was imported");
        } else if report.failed_files > 0 {
            eprintln!(
                "error: {} file(s) failed (see the table); the others were imported",
                report.failed_files
            );
        }
    }
    // Nothing imported is a failure even when nothing failed (only non-history files).
    Ok(if imported_any {
        super::exit_for(true, report.failed_files)
    } else {
        ExitCode::FAILURE
    })
}

fn print_import_table(report: &rudder::history::ImportReport) {
    let shown: Vec<_> = report
        .files
        .iter()
        .filter(|f| !matches!(f.status, FileStatus::Skipped(_)))
        .collect();
    let skipped = report.files.len() - shown.len();
    let width = shown
        .iter()
        .map(|f| f.file.chars().count())
        .max()
        .unwrap_or(4)
        .clamp(4, 70);
    println!(
        "{:<width$}  {:<19}  {:>8}  {:>7}  {:>9}  {:>7}  status",
        "file", "format", "added", "updated", "duplicate", "signals"
    );
    for f in &shown {
        let name = keep_end(&f.file, width);
        let format = f.format.map(|f| f.as_str()).unwrap_or("-");
        let status = match &f.status {
            FileStatus::Imported => "ok".to_string(),
            FileStatus::Skipped(r) => format!("skipped: {r}"),
            FileStatus::Failed(r) => format!("FAILED: {r}"),
        };
        println!(
            "{name:<width$}  {format:<19}  {:>8}  {:>7}  {:>9}  {:>7}  {status}",
            f.added, f.updated, f.duplicates, f.signals
        );
        if f.skipped_items > 0 {
            println!("    {} item(s) skipped (unreadable)", f.skipped_items);
        }
        if f.truncated_turns > 0 {
            println!(
                "    {} message(s) cut to {} MB",
                f.truncated_turns,
                rudder::history::MAX_TURN_BYTES >> 20
            );
        }
        for note in &f.notes {
            println!("      {note}");
        }
    }
    println!(
        "{:<width$}  {:<19}  {:>8}  {:>7}  {:>9}  {:>7}  {} failed, {skipped} skipped (not history), {:.1} s",
        "total",
        "",
        report.added,
        report.updated,
        report.duplicates,
        report.signals,
        report.failed_files,
        report.seconds
    );
}

pub fn run(ctx: &Ctx, cmd: HistoryCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        HistoryCommand::Search(args) => search(ctx, args),
        HistoryCommand::Show { id } => show(ctx, id),
        HistoryCommand::Stats => stats(ctx),
        HistoryCommand::Forget(args) => forget(ctx, args),
        HistoryCommand::Embed => {
            let mut history = open_history(ctx)?;
            if embedder(ctx)?.is_none() {
                bail!(
                    "the embedding model {} is not installed (rudder models fetch {})",
                    ctx.settings.embed_model,
                    ctx.settings.embed_model
                );
            }
            embed_pending(ctx, &mut history)?;
            Ok(ExitCode::SUCCESS)
        }
        HistoryCommand::Remember { limit } => remember(ctx, limit),
        HistoryCommand::Memory => memory(ctx),
        HistoryCommand::Reindex { text_only } => {
            let mut history = open_history(ctx)?;
            let n = history.rebuild_text_index(&CountProgress::default())?;
            eprintln!("text index rebuilt: {n} entries");
            if !text_only {
                if embedder(ctx)?.is_none() {
                    bail!(
                        "the embedding model {} is not installed; install it or use --text-only",
                        ctx.settings.embed_model
                    );
                }
                history.clear_vectors()?;
                embed_pending(ctx, &mut history)?;
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Reads what is not yet in memory (up to `limit` entries) with the chat model.
fn read_into_memory(
    ctx: &Ctx,
    limit: Option<usize>,
) -> anyhow::Result<rudder::profile::memory::Remembered> {
    let mut history = open_history(ctx)?;
    let models = ModelStore::open(&ctx.paths)?;
    let llm = rudder::llm::open_chat(&models, &ctx.settings, ctx.model.as_deref())?;
    let embedder = embedder(ctx)?;
    let options = RememberOptions {
        limit,
        ..RememberOptions::default()
    };
    Ok(rudder::profile::memory::remember(
        llm.as_ref(),
        &mut history,
        embedder.as_ref().map(|(e, _)| e as &dyn Embedder),
        &options,
        &CountProgress::default(),
    )?)
}

fn remembered_line(done: &rudder::profile::memory::Remembered) -> String {
    format!(
        "read {} entries ({} passed over: visited pages and lookups, read per question) in {:.0} \
         s, {:.2} entries/s: {} new statements, {} strengthened, {} notes refused; {} entries \
         unread",
        done.read,
        done.skipped,
        done.seconds,
        done.sessions_per_second(),
        done.added,
        done.strengthened,
        done.refused,
        done.unread
    )
}

fn remember(ctx: &Ctx, limit: Option<usize>) -> anyhow::Result<ExitCode> {
    let done = read_into_memory(ctx, limit)?;
    if ctx.json {
        println!("{}", serde_json::to_string_pretty(&done)?);
    } else {
        println!("{}", remembered_line(&done));
    }
    Ok(ExitCode::SUCCESS)
}

fn memory(ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let history = open_history(ctx)?;
    let rows = history.store().memory()?;
    if ctx.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(ExitCode::SUCCESS);
    }
    for m in &rows {
        let ids: Vec<String> = m.sessions.iter().map(|(id, _)| format!("#{id}")).collect();
        println!("{:<12} {}  [{}]", m.kind, m.text, ids.join(" "));
    }
    let unread = history.store().count_unread_for_memory()?;
    eprintln!(
        "{} statements; {unread} entries not yet read (rudder history remember)",
        rows.len()
    );
    Ok(ExitCode::SUCCESS)
}

fn search(ctx: &Ctx, args: SearchArgs) -> anyhow::Result<ExitCode> {
    let mut history = open_history(ctx)?;
    let filter = Filter {
        kinds: args.kind,
        sources: args.source,
        since: args.since,
        until: args.until,
    };
    let mode = match args.mode {
        ModeArg::Bm25 => SearchMode::Bm25,
        ModeArg::Vector => SearchMode::Vector,
        ModeArg::Hybrid => SearchMode::Hybrid,
    };
    let embedder = if mode == SearchMode::Bm25 {
        None
    } else {
        embedder(ctx)?
    };
    if embedder.is_none() && mode == SearchMode::Hybrid {
        tracing::info!("embedding model not installed; searching with BM25 only");
    }
    let hits = history.search(
        &args.query,
        &filter,
        args.limit,
        mode,
        embedder
            .as_ref()
            .map(|(e, name)| (e as &dyn rudder::embed::Embedder, name.as_str())),
    )?;
    if ctx.json {
        println!("{}", serde_json::to_string_pretty(&hits)?);
        return Ok(ExitCode::SUCCESS);
    }
    if hits.is_empty() {
        println!("no matches");
    }
    for h in hits {
        let when = h
            .started_at
            .map(|t| t.format("%Y-%m-%d").to_string())
            .unwrap_or_else(|| "----------".into());
        println!(
            "{:>7}  {when}  {:<6} {:<13} {}",
            h.id,
            h.kind.as_str(),
            h.source.as_str(),
            one_line(&h.title, 90)
        );
        if h.snippet != h.title {
            println!("{:>7}  {}", "", one_line(&h.snippet, 110));
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn show(ctx: &Ctx, id: i64) -> anyhow::Result<ExitCode> {
    let history = open_history(ctx)?;
    let Some(s) = history.get(id)? else {
        bail!("no entry with id {id} (it may have been forgotten)");
    };
    if ctx.json {
        println!("{}", serde_json::to_string_pretty(&s)?);
        return Ok(ExitCode::SUCCESS);
    }
    let entry = &s.entry;
    println!("entry {}: {}", s.id, entry.title);
    println!("  kind:     {}", entry.kind);
    println!("  source:   {}", entry.source);
    if let Some(t) = entry.started_at {
        println!("  started:  {}", t.to_rfc3339());
    }
    if let Some(note) = &entry.time_note {
        println!("  time:     {note}");
    }
    if let Some(url) = &entry.url {
        println!("  url:      {url}");
    }
    println!(
        "  imported: {} from {}",
        s.imported_at.to_rfc3339(),
        s.origin
    );
    for turn in &entry.turns {
        println!();
        println!("[{}]", turn.role.as_str());
        println!("{}", turn.text);
    }
    Ok(ExitCode::SUCCESS)
}

fn stats(ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let history = open_history(ctx)?;
    let stats = history.stats()?;
    if ctx.json {
        println!("{}", serde_json::to_string_pretty(&stats)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!("entries: {}", stats.store.sessions);
    for (source, n) in &stats.store.by_source {
        println!("  {source:<14} {n}");
    }
    println!("by kind:");
    for (kind, n) in &stats.store.by_kind {
        println!("  {kind:<14} {n}");
    }
    println!("profile signals: {}", stats.store.signals);
    println!(
        "embedded: {} of {} entries ({} vectors)",
        stats.store.embedded_sessions, stats.store.sessions, stats.store.vectors
    );
    if let (Some(a), Some(b)) = (stats.store.first, stats.store.last) {
        println!("span: {} to {}", a.format("%Y-%m-%d"), b.format("%Y-%m-%d"));
    }
    println!(
        "on disk: database {:.1} MB, text index {:.1} MB",
        stats.database_bytes as f64 / 1e6,
        stats.text_index_bytes as f64 / 1e6
    );
    Ok(ExitCode::SUCCESS)
}

fn forget(ctx: &Ctx, args: ForgetArgs) -> anyhow::Result<ExitCode> {
    let (selector, what) = if args.all {
        (
            ForgetSelector::All,
            "ALL history and profile signals".to_string(),
        )
    } else if let Some(id) = args.id {
        (ForgetSelector::Entry(id), format!("entry {id}"))
    } else if let Some(source) = args.source {
        (
            ForgetSelector::Source {
                source,
                since: args.since,
                until: args.until,
            },
            format!(
                "everything from {source}{}",
                range_words(args.since, args.until)
            ),
        )
    } else if args.since.is_some() || args.until.is_some() {
        (
            ForgetSelector::Range {
                since: args.since,
                until: args.until,
            },
            format!("all entries{}", range_words(args.since, args.until)),
        )
    } else {
        bail!("say what to forget: an entry ID, --source, --since/--until, or --all");
    };
    if !args.yes {
        if !std::io::stdin().is_terminal() {
            bail!("refusing to forget {what} without confirmation: pass --yes");
        }
        eprint!("Permanently forget {what}? [y/N] ");
        std::io::stderr().flush().ok();
        let mut answer = String::new();
        std::io::stdin().lock().read_line(&mut answer)?;
        if !matches!(answer.trim(), "y" | "Y" | "yes") {
            eprintln!("nothing forgotten");
            return Ok(ExitCode::FAILURE);
        }
    }
    let mut history = open_history(ctx)?;
    let report = history.forget(&selector)?;
    if ctx.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!(
            "forgot {} {}",
            report.sessions,
            if report.sessions == 1 {
                "entry"
            } else {
                "entries"
            }
        );
    }
    if let ForgetSelector::Entry(id) = selector {
        if report.sessions == 0 {
            eprintln!("error: no entry with id {id}");
            return Ok(ExitCode::FAILURE);
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn range_words(since: Option<DateTime<Utc>>, until: Option<DateTime<Utc>>) -> String {
    match (since, until) {
        (None, None) => String::new(),
        (Some(s), None) => format!(" since {}", s.to_rfc3339()),
        (None, Some(u)) => format!(" before {}", u.to_rfc3339()),
        (Some(s), Some(u)) => format!(" from {} to before {}", s.to_rfc3339(), u.to_rfc3339()),
    }
}
