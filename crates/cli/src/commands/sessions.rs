//! `rudder sessions list | show ID | resume ID | export ID DIR` and `rudder steer ID "message"`:
//! research sessions are persisted event logs, so they can be inspected, steered from another
//! terminal while they run, continued after a crash, and exported.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use rudder::research::ResearchState;
use rudder::session::export::export_session;
use rudder::session::runner::Session;
use rudder::session::{list_sessions, RunLock, SessionStatus, SessionStore};

use super::research::{self, Output};
use super::{one_line, Ctx};

#[derive(Debug, Subcommand)]
pub enum SessionsCommand {
    /// List research sessions, newest first.
    List,
    /// Show a session: its state, todo plan, tree and pending steering.
    Show { id: i64 },
    /// Continue a session that stopped (crash, Ctrl-C, closed laptop) from its last step.
    Resume(ResumeArgs),
    /// Write a session's report, todo.md, event log and state into a folder.
    Export {
        id: i64,
        /// The folder to write into (created if needed).
        dir: PathBuf,
    },
}

#[derive(Debug, Args)]
pub struct ResumeArgs {
    id: i64,
    /// Answer pauses from this JSON file instead of asking.
    #[arg(long, value_name = "FILE", conflicts_with = "never_ask")]
    answers: Option<PathBuf>,
    /// Never stop to ask.
    #[arg(long)]
    never_ask: bool,
    /// Write the report here (Markdown); an HTML copy goes next to it.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Append every new event as JSON lines here.
    #[arg(long, value_name = "FILE")]
    events: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct SteerArgs {
    /// The session to steer (see `rudder sessions list`).
    id: i64,
    /// What to change: "focus on …", "ignore …", "also look into …", or anything else.
    message: String,
}

fn open_store(ctx: &Ctx) -> anyhow::Result<SessionStore> {
    Ok(SessionStore::open(&ctx.paths.sessions_db())?)
}

pub fn run(ctx: &Ctx, cmd: SessionsCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        SessionsCommand::List => list(ctx),
        SessionsCommand::Show { id } => show(ctx, id),
        SessionsCommand::Resume(args) => resume(ctx, args),
        SessionsCommand::Export { id, dir } => export(ctx, id, &dir),
    }
}

/// The status as the user should read it: "running" only while a process runs it.
fn status_of(store: &SessionStore, info: &rudder::session::SessionInfo) -> &'static str {
    match info.status {
        SessionStatus::Running if RunLock::is_held(store, info.id) => "running",
        SessionStatus::Running | SessionStatus::Interrupted => "stopped",
        other => status_name(other),
    }
}

fn status_name(s: SessionStatus) -> &'static str {
    match s {
        SessionStatus::Running => "running",
        SessionStatus::Interrupted => "interrupted",
        SessionStatus::Finished => "finished",
        SessionStatus::Failed => "failed",
    }
}

fn list(ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let store = open_store(ctx)?;
    let sessions = list_sessions(&store)?;
    if ctx.json {
        println!("{}", serde_json::to_string_pretty(&sessions)?);
        return Ok(ExitCode::SUCCESS);
    }
    if sessions.is_empty() {
        println!("no research sessions yet: `rudder research \"QUESTION\"` starts one");
    }
    for s in sessions {
        println!(
            "{:>4}  {:<11} {}  {:>5} events{}  {}",
            s.id,
            status_of(&store, &s),
            s.updated_at.format("%Y-%m-%d %H:%M"),
            s.events,
            if s.pending_steering > 0 {
                format!(", {} steering queued", s.pending_steering)
            } else {
                String::new()
            },
            one_line(s.title.as_deref().unwrap_or(&s.query), 80)
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn show(ctx: &Ctx, id: i64) -> anyhow::Result<ExitCode> {
    let store = open_store(ctx)?;
    let info = store.info(id)?;
    let events = store.events(id)?;
    let state = ResearchState::fold(&events);
    if ctx.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "session": info,
                "state": state,
                "steering": store.steering(id)?,
            }))?
        );
        return Ok(ExitCode::SUCCESS);
    }
    println!("session {id}: {}", one_line(&info.query, 200));
    println!(
        "status: {}, {} events, started {}, last change {}",
        status_of(&store, &info),
        info.events,
        info.created_at.format("%Y-%m-%d %H:%M:%S"),
        info.updated_at.format("%Y-%m-%d %H:%M:%S")
    );
    if let Some(r) = &state.report {
        println!("report: {} ({} words)", one_line(&r.title, 100), r.words());
    }
    if !state.directives.is_empty() {
        print!("{}", state.directives.prompt_text());
    }
    for m in store.steering(id)? {
        println!(
            "steering #{} at {}: {} — {}",
            m.id,
            m.received_at.format("%H:%M:%S"),
            one_line(&m.text, 100),
            match m.applied_seq {
                Some(seq) => format!("applied (event {seq})"),
                None => "queued".into(),
            }
        );
    }
    if !state.tree.nodes.is_empty() {
        println!("\n{}", state.tree.render());
    }
    println!("{}", state.todo.render_markdown(&state.query));
    Ok(ExitCode::SUCCESS)
}

fn resume(ctx: &Ctx, args: ResumeArgs) -> anyhow::Result<ExitCode> {
    let id = args.id;
    // What the session logged so far, for the live view to start from.
    let committed = open_store(ctx)?.events(id)?;
    let interaction = research::interaction(args.answers.as_deref(), args.never_ask)?;
    // The model it started with, unless --model picks another.
    let session = Session::new(&ctx.paths, &ctx.settings).with_model(ctx.model.clone());
    research::drive(
        ctx,
        &committed,
        interaction,
        &Output {
            out: args.out,
            events: args.events,
        },
        |interaction, sink, phase| Ok((id, session.resume(id, interaction, sink, phase)?)),
    )
}

fn export(ctx: &Ctx, id: i64, dir: &std::path::Path) -> anyhow::Result<ExitCode> {
    let store = open_store(ctx)?;
    // The same files as the desktop app's export, from the same library function.
    for path in export_session(&store, id, dir)? {
        println!("{}", path.display());
    }
    if ResearchState::fold(&store.events(id)?).report.is_none() {
        let status = store.info(id)?.status;
        eprintln!(
            "note: session {id} has no report yet (status {}); `rudder sessions resume {id}` finishes it",
            status_name(status)
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `rudder steer ID "message"`: queues a message for a running session. It is stored at once
/// and applied at the run's next step boundary.
pub fn steer(ctx: &Ctx, args: SteerArgs) -> anyhow::Result<ExitCode> {
    let store = open_store(ctx)?;
    let message = store.enqueue_steering(args.id, &args.message)?;
    if ctx.json {
        println!("{}", serde_json::to_string_pretty(&message)?);
    } else {
        println!(
            "queued steering message #{} for session {}; it is applied at the next step{}",
            message.id,
            args.id,
            if RunLock::is_held(&store, args.id) {
                ""
            } else {
                " once the session is resumed (`rudder sessions resume ID`)"
            }
        );
    }
    Ok(ExitCode::SUCCESS)
}
