//! `rudder research "QUESTION"`: the steerable research loop over local documents and history
//! (and the web only when enabled), with the tree and the current step live in the terminal,
//! ending in a cited report.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use rudder::embed::{Embedder, FastEmbedder};
use rudder::history::History;
use rudder::models::ModelStore;
use rudder::profile::ProfileOptions;
use rudder::research::{
    Brief, Envelope, Event, Interaction, NeverAsk, ResearchSettings, ResearchState, Researcher,
    Scripted, TaskStatus, Terminal,
};
use rudder::session::{
    RunLock, SessionConfig, SessionLog, SessionStatus, SessionStore, SourceChoice,
};
use rudder::sources::docs::DocsSource;
use rudder::sources::history::HistorySourceAdapter;
use rudder::sources::Sources;

use super::progress::CountProgress;
use super::{one_line, Ctx};

#[derive(Debug, Args)]
pub struct ResearchArgs {
    /// The research question.
    question: String,
    /// Depth D of the research tree (the root is depth 0).
    #[arg(long, default_value_t = 3)]
    depth: u32,
    /// Breadth K: directions researched per node.
    #[arg(long, default_value_t = 3)]
    breadth: u32,
    /// Base pause cost C0 in [0, 1]: higher asks less.
    #[arg(long, default_value_t = 0.7)]
    c0: f32,
    /// Tolerance budget: about how many questions you accept in one run.
    #[arg(long, default_value_t = 3.0)]
    tol: f32,
    /// Ask at every branch instead of only when the pause rule says it pays off.
    #[arg(long, conflicts_with = "never_ask")]
    always_ask: bool,
    /// λ_exp, the weight of the exploration bonus.
    #[arg(long, default_value_t = 0.5)]
    lambda_explore: f32,
    /// λ_info, the weight of information gain.
    #[arg(long, default_value_t = 0.5)]
    lambda_info: f32,
    /// Add these folders or files to the document library first.
    #[arg(long, value_name = "DIR")]
    docs: Vec<PathBuf>,
    /// Do not use imported history (neither as a source nor for the profile).
    #[arg(long)]
    no_history: bool,
    /// Do not search the document library.
    #[arg(long)]
    no_docs: bool,
    /// What you want the report to know about you (one or two sentences).
    #[arg(long, value_name = "TEXT", default_value = "")]
    persona: String,
    /// Answer pauses from this JSON file instead of asking.
    #[arg(long, value_name = "FILE", conflicts_with = "never_ask")]
    answers: Option<PathBuf>,
    /// Never stop to ask: no clarifying questions, no pauses (the rule is still logged).
    #[arg(long)]
    never_ask: bool,
    /// At most this many clarifying questions before research (Enter or "skip" stops early).
    #[arg(long, default_value_t = 3, value_name = "N")]
    clarify: u32,
    /// Start researching without clarifying questions.
    #[arg(long)]
    no_clarify: bool,
    /// Write the report here (Markdown); an HTML copy goes next to it.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Write every event as JSON lines here.
    #[arg(long, value_name = "FILE")]
    events: Option<PathBuf>,
}

pub fn run(ctx: &Ctx, args: ResearchArgs) -> anyhow::Result<ExitCode> {
    let models = ModelStore::open(&ctx.paths)?;
    let embed_name = ctx.settings.embed_model.clone();
    let embedder = open_embedder(ctx, &models)?;
    let llm = rudder::llm::open_chat(&models, &ctx.settings, ctx.model.as_deref())?;
    let choice = SourceChoice {
        history: !args.no_history,
        docs: !args.no_docs,
        docs_dir: None,
    };
    let (mut sources, history) = open_sources(ctx, &choice, &args.docs, &embedder)?;
    // History: the query-aware profile seeds the persona (it is stored with the session, so
    // a resumed run does not rebuild it).
    let mut profile_text = String::new();
    if let Some(mut history) = history {
        let spinner = spinner("building your profile for this question from history");
        let run = rudder::profile::query_profile(
            llm.as_ref(),
            &mut history,
            Some((&embedder as &dyn Embedder, embed_name.as_str())),
            &args.question,
            &ProfileOptions::default(),
        )?;
        spinner.finish_and_clear();
        profile_text = run.profile.to_prompt_text();
        history.release_writer()?;
        sources.push(Box::new(HistorySourceAdapter::new(history)));
    }
    if sources.is_empty() {
        bail!(
            "nothing to research over: add documents (`rudder docs add DIR` or \
             `rudder corpus fetch`), import history (`rudder import PATH`), or enable web search"
        );
    }
    let mut settings = ResearchSettings {
        depth: args.depth,
        breadth: args.breadth.max(1),
        clarify_turns: if args.no_clarify { 0 } else { args.clarify },
        ..ResearchSettings::default()
    };
    settings.pause.base_cost = args.c0;
    settings.pause.tolerance = args.tol;
    settings.pause.always = args.always_ask;
    settings.weights.lambda_explore = args.lambda_explore;
    settings.weights.lambda_info = args.lambda_info;
    let config = SessionConfig {
        brief: Brief {
            query: args.question.clone(),
            persona_text: args.persona.clone(),
            profile: profile_text,
            checklist: None,
        },
        settings,
        model: llm.model_name().to_string(),
        sources: choice,
    };
    let store = SessionStore::open(&sessions_db(ctx))?;
    let mut journal = SessionLog::create(store, &config)?;
    eprintln!(
        "session {id} — steer it from another terminal with `rudder steer {id} \"message\"`; \
         if it stops, `rudder sessions resume {id}` goes on",
        id = journal.id
    );
    let interaction = interaction(args.answers.as_deref(), args.never_ask)?;
    drive(
        ctx,
        &mut journal,
        &config,
        llm.as_ref(),
        &embedder,
        sources,
        interaction,
        &Output {
            out: args.out.clone(),
            events: args.events.clone(),
        },
        &[],
    )
}

/// Where a run's report and event log go.
pub struct Output {
    pub out: Option<PathBuf>,
    pub events: Option<PathBuf>,
}

/// The sessions database.
pub fn sessions_db(ctx: &Ctx) -> PathBuf {
    ctx.paths.sessions_dir().join("sessions.sqlite")
}

pub fn open_embedder(ctx: &Ctx, models: &ModelStore) -> anyhow::Result<FastEmbedder> {
    let embed_name = ctx.settings.embed_model.clone();
    FastEmbedder::from_store(models, &embed_name, ctx.settings.llama.effective_threads())
        .with_context(|| {
            format!("research needs the embedding model: `rudder models fetch {embed_name}`")
        })
}

/// The sources a session searches: the document library (after adding `add_docs`), the web
/// when enabled, and — returned apart, because a new run first builds the profile from it —
/// the history when it has sessions.
pub fn open_sources(
    ctx: &Ctx,
    choice: &SourceChoice,
    add_docs: &[PathBuf],
    embedder: &FastEmbedder,
) -> anyhow::Result<(Sources, Option<History>)> {
    let embed_name = ctx.settings.embed_model.clone();
    let mut sources = Sources::new();
    if choice.docs {
        let mut docs = DocsSource::open(&ctx.paths.docs_dir())?;
        for dir in add_docs {
            let report = docs.library_mut().add(
                dir,
                Some((embedder as &dyn Embedder, embed_name.as_str())),
                &CountProgress::default(),
            )?;
            eprintln!(
                "documents: {} added, {} updated, {} unchanged, {} failed in {}",
                report.added,
                report.updated,
                report.unchanged,
                report.failed,
                dir.display()
            );
        }
        docs.library_mut().release_writer()?;
        let stats = docs.library().stats()?;
        if stats.store.documents > 0 {
            sources.push(Box::new(docs));
        }
    }
    let mut history_source = None;
    if choice.history {
        let dir = ctx.paths.history_dir();
        if dir.exists() {
            let history = History::open(&dir)
                .with_context(|| format!("opening the history in {}", dir.display()))?;
            if history.stats()?.store.sessions > 0 {
                history_source = Some(history);
            }
        }
    }
    if let Some(web) = rudder::sources::web::web_source_from_settings(&ctx.settings) {
        eprintln!("web search is ON: {}", rudder::sources::web::WEB_DISCLOSURE);
        sources.push(Box::new(web));
    }
    Ok((sources, history_source))
}

/// How pauses and clarifying questions are answered.
pub fn interaction(
    answers: Option<&std::path::Path>,
    never_ask: bool,
) -> anyhow::Result<Box<dyn Interaction>> {
    Ok(match (answers, never_ask) {
        (Some(path), _) => Box::new(Scripted::from_file(path)?),
        (None, true) => Box::new(NeverAsk),
        (None, false) if std::io::stdin().is_terminal() => Box::new(Terminal::stdio()),
        (None, false) => {
            eprintln!("note: stdin is not a terminal, so the research will not stop to ask");
            Box::new(NeverAsk)
        }
    })
}

/// Runs (or resumes, when `log` holds events) a session to its report, live in the terminal.
#[allow(clippy::too_many_arguments)]
pub fn drive(
    ctx: &Ctx,
    journal: &mut SessionLog,
    config: &SessionConfig,
    llm: &dyn rudder::llm::Llm,
    embedder: &FastEmbedder,
    mut sources: Sources,
    mut interaction: Box<dyn Interaction>,
    output: &Output,
    log: &[Envelope],
) -> anyhow::Result<ExitCode> {
    let mut event_log = match &output.events {
        Some(path) => Some(std::io::BufWriter::new(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .with_context(|| format!("{}", path.display()))?,
        )),
        None => None,
    };
    let session_dir = ctx.paths.sessions_dir().join(journal.id.to_string());
    std::fs::create_dir_all(&session_dir)
        .with_context(|| format!("creating {}", session_dir.display()))?;
    let todo_path = session_dir.join("todo.md");
    let mut live = Live::new(ctx.json, todo_path.clone(), log);
    let id = journal.id;
    // One process drives a session at a time; the lock goes when this process does.
    let _lock = RunLock::acquire(&journal.store, id)?;
    journal.store.set_status(id, SessionStatus::Running)?;
    let mut sink = |e: &Envelope| {
        if let Some(w) = event_log.as_mut() {
            if let Ok(line) = serde_json::to_string(e) {
                // Flushed per event, so `tail -f` on the log follows the run.
                let _ = writeln!(w, "{line}").and_then(|_| w.flush());
            }
        }
        live.show(e);
    };
    let mut researcher = Researcher {
        llm,
        embedder,
        sources: &mut sources,
        interaction: interaction.as_mut(),
        events: &mut sink,
        journal,
        settings: config.settings,
        embed_model: ctx.settings.embed_model.clone(),
    };
    let result = researcher.resume(&config.brief, log);
    let outcome = match result {
        Ok(o) => o,
        Err(e) => {
            // The log keeps every finished step: say how to go on.
            let _ = journal.store.set_status(id, SessionStatus::Interrupted);
            return Err(anyhow::Error::new(e).context(format!(
                "research session {id} stopped; `rudder sessions resume {id}` continues it"
            )));
        }
    };
    live.bar.finish_and_clear();
    if let Some(mut w) = event_log {
        w.flush()?;
    }
    let _ = journal.store.set_title(id, &outcome.report.title);
    let report = &outcome.report;
    let report_path = session_dir.join("report.md");
    write_report(report, &report_path)?;
    std::fs::write(
        &todo_path,
        outcome.todo.render_markdown(&config.brief.query),
    )
    .with_context(|| format!("writing {}", todo_path.display()))?;
    match &output.out {
        Some(path) => {
            write_report(report, path)?;
            eprintln!(
                "report: {} and {}",
                path.display(),
                path.with_extension("html").display()
            );
        }
        None if !ctx.json => println!("{}", report.markdown),
        None => {}
    }
    if ctx.json {
        println!("{}", serde_json::to_string_pretty(&outcome)?);
    }
    eprintln!("\n{}", outcome.tree.render());
    eprintln!(
        "todo: {} completed, {} canceled (plan version {}) — {}",
        outcome.todo.count(TaskStatus::Completed),
        outcome.todo.count(TaskStatus::Canceled),
        outcome.todo.version,
        todo_path.display()
    );
    eprintln!(
        "{:.0} s, {} LLM calls, {} prompt + {} generated tokens, {} pauses, {} words, {} citations",
        outcome.seconds,
        outcome.usage.calls,
        outcome.usage.prompt_tokens,
        outcome.usage.generated_tokens,
        outcome.pauses,
        report.words(),
        report.references.len()
    );
    for (stage, cost) in &outcome.by_stage {
        eprintln!(
            "  {:<10} {:>3} calls {:>7} prompt {:>6} generated {:>7.1} s",
            stage.as_str(),
            cost.usage.calls,
            cost.usage.prompt_tokens,
            cost.usage.generated_tokens,
            cost.seconds
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes the report as Markdown at `path` and as sanitised HTML next to it.
pub fn write_report(
    report: &rudder::research::Report,
    path: &std::path::Path,
) -> anyhow::Result<()> {
    std::fs::write(path, &report.markdown)
        .with_context(|| format!("writing {}", path.display()))?;
    let html = path.with_extension("html");
    std::fs::write(&html, report.to_html())
        .with_context(|| format!("writing {}", html.display()))?;
    Ok(())
}

fn spinner(message: &str) -> ProgressBar {
    let bar = ProgressBar::new_spinner().with_style(
        ProgressStyle::with_template("{spinner} {msg} {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar.set_message(message.to_string());
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    bar
}

/// Prints the tree and the todo plan as they change, keeps a spinner on the current step, and
/// keeps the session's `todo.md` up to date.
struct Live {
    bar: ProgressBar,
    quiet: bool,
    /// The run's state, folded from the events shown (for the todo plan).
    state: ResearchState,
    todo_path: PathBuf,
    todo_version: u64,
}

impl Live {
    fn new(quiet: bool, todo_path: PathBuf, log: &[Envelope]) -> Self {
        let bar = if quiet {
            ProgressBar::hidden()
        } else {
            spinner("starting")
        };
        let state = ResearchState::fold(log);
        Self {
            bar,
            quiet,
            todo_version: state.todo.version,
            state,
            todo_path,
        }
    }

    fn line(&self, text: String) {
        if self.quiet {
            return;
        }
        // A hidden bar (stderr is not a terminal) swallows println: write the line directly.
        if self.bar.is_hidden() {
            eprintln!("{text}");
        } else {
            self.bar.println(text);
        }
    }

    fn show(&mut self, envelope: &Envelope) {
        self.state.apply(envelope);
        let event = &envelope.event;
        match event {
            Event::Started {
                sources,
                model,
                remote_sources,
                ..
            } => {
                self.line(format!(
                    "researching over {} with {model}{}",
                    sources.join(" + "),
                    if *remote_sources {
                        " (web search on)"
                    } else {
                        ""
                    }
                ));
                self.bar.set_message("thinking of a clarifying question");
            }
            Event::ClarifyAsked { .. } => self.bar.set_message("waiting for your answer"),
            Event::BriefRefined { brief, turns, .. } => {
                if *turns > 0 {
                    self.line(format!("brief: {}", one_line(brief, 200)));
                }
                self.bar
                    .set_message("inferring what you expect the report to cover");
            }
            Event::PersonaSeeded { persona, .. } => {
                self.line("checklist:".into());
                for item in &persona.checklist {
                    self.line(format!("  - {}", one_line(item, 110)));
                }
            }
            Event::NodeStarted { id } => {
                self.bar.set_message(format!("researching [{id}]"));
            }
            Event::NodeAdded {
                id,
                depth,
                question,
                ..
            } => {
                self.line(format!(
                    "{}[{id}] {}",
                    "  ".repeat(*depth as usize),
                    one_line(question, 110)
                ));
            }
            Event::NodeResearched {
                id,
                learnings,
                evidence,
                tags,
                ..
            } => {
                self.line(format!(
                    "    ✓ [{id}] {learnings} learnings from {evidence} passages; tags: {}",
                    tags.join(", ")
                ));
                self.bar.set_message("planning the next step");
            }
            Event::PauseDecided {
                node,
                decision,
                asked,
                ..
            } => {
                self.line(format!(
                    "    ? at [{node}] {}{}",
                    decision.explain(),
                    if decision.ask && !asked {
                        " — not asking (asking is off)"
                    } else {
                        ""
                    }
                ));
            }
            Event::Question { .. } => self.bar.set_message("waiting for your answer"),
            Event::PersonaUpdated {
                added_text,
                added_items,
                ..
            } => {
                if !added_text.is_empty() {
                    self.line(format!("    persona: + {}", one_line(added_text, 110)));
                }
                for item in added_items {
                    self.line(format!("    checklist: + {}", one_line(item, 110)));
                }
            }
            Event::TaskAdded { task } => {
                self.line(format!(
                    "    todo + #{} (p{}, {}) {}",
                    task.id,
                    task.priority,
                    task.provenance.as_str(),
                    one_line(&task.text, 100)
                ));
            }
            Event::TaskUpdated {
                id,
                status,
                priority,
                note,
            } => {
                // Start and completion show as the node's own lines; the rest is news.
                let shown = match (status, priority) {
                    (Some(TaskStatus::Canceled), _) => Some("canceled".to_string()),
                    (_, Some(p)) => Some(format!("priority {p}")),
                    _ => None,
                };
                if let Some(what) = shown {
                    self.line(format!(
                        "    todo #{id} {what}{}",
                        if note.is_empty() {
                            String::new()
                        } else {
                            format!(" ({})", one_line(note, 100))
                        }
                    ));
                }
            }
            Event::SteeringApplied { messages, summary } => {
                self.line(format!(
                    "steering: applied {} message{}: {}",
                    messages.len(),
                    if messages.len() == 1 { "" } else { "s" },
                    one_line(summary, 160)
                ));
            }
            Event::DirectivesAdded { exclusions, focus } => {
                for x in exclusions {
                    self.line(format!("    leaving out: {}", one_line(x, 100)));
                }
                for f in focus {
                    self.line(format!("    focusing on: {}", one_line(f, 100)));
                }
            }
            Event::Reflected {
                level,
                knowledge_gaps,
                ..
            } => {
                if let Some(l) = level {
                    self.line(format!(
                        "reflected on level {l}: {} knowledge gap{}",
                        knowledge_gaps.len(),
                        if knowledge_gaps.len() == 1 { "" } else { "s" }
                    ));
                }
                let todo = &self.state.todo;
                self.line(format!(
                    "todo (version {}): {} pending, {} completed, {} canceled — {}",
                    todo.version,
                    todo.count(TaskStatus::Pending),
                    todo.count(TaskStatus::Completed),
                    todo.count(TaskStatus::Canceled),
                    self.todo_path.display()
                ));
                self.bar.set_message("planning the next step");
            }
            Event::ReportSection { heading, .. } => {
                self.line(format!("report: section “{}”", one_line(heading, 90)));
                self.bar.set_message("writing the report");
            }
            _ => {}
        }
        if self.state.todo.version != self.todo_version {
            self.todo_version = self.state.todo.version;
            // todo.md follows the plan; a write error only loses the live copy.
            let _ = std::fs::write(
                &self.todo_path,
                self.state.todo.render_markdown(&self.state.query),
            );
        }
        if matches!(
            event,
            Event::NodeResearched { .. } | Event::PauseDecided { .. }
        ) {
            self.bar.tick();
        }
    }
}
