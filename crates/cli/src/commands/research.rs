//! `rudder research "QUESTION"`: the steerable research loop over local documents and history
//! (and the web only when enabled), with the tree and the current step live in the terminal,
//! ending in a cited report. Flags are overrides of the saved settings; the session runner
//! (`rudder::session::runner`) does the rest, as it does for the desktop app.

use std::cell::{Cell, RefCell};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use rudder::embed::FastEmbedder;
use rudder::research::{Envelope, EventSink, Interaction, NeverAsk, Outcome, Scripted, TaskStatus};
use rudder::session::runner::{
    new_session_config, open_embedder, session_dir, NewSession, RunError, RunOverrides, RunPhase,
    Session,
};
use rudder::session::{SessionId, SourceChoice};

use super::live::Live;
use super::progress::CountProgress;
use super::terminal::Terminal;
use super::Ctx;

#[derive(Debug, Args)]
pub struct ResearchArgs {
    /// The research question.
    question: String,
    /// Depth D of the research tree, 0 to 6 (the root is depth 0) [default: from settings, 3].
    #[arg(long)]
    depth: Option<u32>,
    /// Breadth K: directions researched per node, 1 to 6 [default: from settings, 3].
    #[arg(long)]
    breadth: Option<u32>,
    /// Base pause cost C0 in [0, 1]: higher asks less [default: from settings, 0.7].
    #[arg(long)]
    c0: Option<f32>,
    /// Tolerance budget: about how many questions you accept in one run [default: from
    /// settings, 3].
    #[arg(long)]
    tol: Option<f32>,
    /// Ask at every branch instead of only when the pause rule says it pays off.
    #[arg(long, conflicts_with = "never_ask")]
    always_ask: bool,
    /// The lowest probability the chat model must give that a cited passage states a report
    /// sentence, 0 to 1; 0 checks by the embedding match alone [default: calibrated per model
    /// by `rudder eval support`: 0.615 for qwen2.5-coder-1.5b, off for smollm2-135m, 0.5 for
    /// others].
    #[arg(long, value_name = "P")]
    support_judge: Option<f32>,
    /// How much more likely the chat model must find it that a finding helps answer the
    /// question than a question it cannot bear on, 0 to 1, for the report to place it; 0
    /// leaves the embedding cuts alone [default: calibrated per model by `rudder eval
    /// finding-judge`: 0.19 for qwen2.5-coder-1.5b, off for smollm2-135m, above 0 for others].
    #[arg(long, value_name = "S")]
    finding_judge: Option<f32>,
    /// How far down the ranking each node looks for passages no other node took, as a
    /// multiple of the passages it reads, 1 to 10; 1 reads the best matches, taken or not
    /// [default: 2; a passage from below the best matches must be as close to the question as
    /// they are].
    #[arg(long, value_name = "N")]
    fresh_evidence_pool: Option<usize>,
    /// Leave the support judge to the report: do not also judge each learning at its research
    /// node (the report judges every sentence it prints either way).
    #[arg(long)]
    no_judge_learnings: bool,
    /// λ_exp, the weight of the exploration bonus [default: from settings, 0.5].
    #[arg(long)]
    lambda_explore: Option<f32>,
    /// λ_info, the weight of information gain [default: from settings, 0.5].
    #[arg(long)]
    lambda_info: Option<f32>,
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
    /// At most this many clarifying questions before research, 0 to 5 (Enter or "skip" stops
    /// early) [default: from settings, 3].
    #[arg(long, value_name = "N", conflicts_with = "no_clarify")]
    clarify: Option<u32>,
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

impl ResearchArgs {
    /// The flags as the session runner takes them: what is not given comes from the saved
    /// settings.
    pub fn to_new_session(&self) -> NewSession {
        NewSession {
            question: self.question.clone(),
            persona: self.persona.clone(),
            sources: SourceChoice {
                history: !self.no_history,
                docs: !self.no_docs,
                docs_dir: None,
            },
            overrides: RunOverrides {
                depth: self.depth,
                breadth: self.breadth,
                c0: self.c0,
                tol: self.tol,
                lambda_explore: self.lambda_explore,
                lambda_info: self.lambda_info,
                clarify_turns: if self.no_clarify {
                    Some(0)
                } else {
                    self.clarify
                },
                always_ask: self.always_ask.then_some(true),
                support_judge: self.support_judge,
                finding_judge: self.finding_judge,
                fresh_evidence_pool: self.fresh_evidence_pool,
                judge_learnings: self.no_judge_learnings.then_some(false),
            },
        }
    }
}

pub fn run(ctx: &Ctx, args: ResearchArgs) -> anyhow::Result<ExitCode> {
    let request = args.to_new_session();
    let mut session = Session::new(&ctx.paths, &ctx.settings).with_model(ctx.model.clone());
    if !args.docs.is_empty() {
        // Settings are checked before anything is added.
        new_session_config(&ctx.settings, &request, session.chat_model())?;
        let store = rudder::models::ModelStore::open(&ctx.paths)?;
        let embedder = Arc::new(open_embedder(&store, &ctx.settings)?);
        add_docs(ctx, &embedder, &args.docs)?;
        session = session.with_embedder(Some(embedder));
    }
    let interaction = interaction(args.answers.as_deref(), args.never_ask)?;
    let output = Output {
        out: args.out,
        events: args.events,
    };
    drive(
        ctx,
        &[],
        interaction,
        &output,
        |interaction, sink, phase| session.start(&request, interaction, sink, phase),
    )
}

/// Adds folders or files to the document library, with a line per folder.
fn add_docs(ctx: &Ctx, embedder: &FastEmbedder, dirs: &[PathBuf]) -> anyhow::Result<()> {
    let mut docs = rudder::sources::docs::DocsSource::open(&ctx.paths.docs_dir())?;
    for dir in dirs {
        let report = docs.library_mut().add(
            dir,
            Some((embedder, ctx.settings.embed_model.as_str())),
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
    Ok(())
}

/// Where a run's report and event log go.
pub struct Output {
    pub out: Option<PathBuf>,
    pub events: Option<PathBuf>,
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

/// Runs (or resumes) a session to its report, live in the terminal. `committed` is what the
/// session logged before (empty for a new one).
pub fn drive(
    ctx: &Ctx,
    committed: &[Envelope],
    mut interaction: Box<dyn Interaction>,
    output: &Output,
    run: impl FnOnce(
        &mut dyn Interaction,
        &mut dyn EventSink,
        &mut dyn FnMut(RunPhase),
    ) -> Result<(SessionId, Outcome), RunError>,
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
    let live = RefCell::new(Live::new(ctx.json, PathBuf::new(), committed));
    let bar = live.borrow().bar.clone();
    let stored = Cell::new(None);
    let mut sink = |e: &Envelope| {
        if let Some(w) = event_log.as_mut() {
            if let Ok(line) = serde_json::to_string(e) {
                // Flushed per event, so `tail -f` on the log follows the run.
                let _ = writeln!(w, "{line}").and_then(|_| w.flush());
            }
        }
        live.borrow_mut().show(e);
    };
    let mut phase = |phase: RunPhase| match phase {
        RunPhase::Opened { id, events } => {
            stored.set(Some(id));
            live.borrow_mut()
                .set_todo_path(session_dir(&ctx.paths, id).join("todo.md"));
            if events == 0 {
                eprintln!(
                    "session {id} — steer it from another terminal with `rudder steer {id} \
                     \"message\"`; if it stops, `rudder sessions resume {id}` goes on"
                );
            } else {
                eprintln!(
                    "resuming session {id} after {events} events (steer it with `rudder steer \
                     {id} \"message\"`)"
                );
            }
        }
        other => bar.set_message(other.describe()),
    };
    let result = run(interaction.as_mut(), &mut sink, &mut phase);
    let (id, outcome) = result.map_err(|e| match (e, stored.get()) {
        (e @ RunError::Finished(id), _) => {
            anyhow::anyhow!("{e}; `rudder sessions export {id} DIR` writes its report")
        }
        (e, Some(id)) => anyhow::Error::new(e).context(format!(
            "research session {id} stopped; `rudder sessions resume {id}` continues it"
        )),
        (e, None) => anyhow::Error::new(e),
    })?;
    let live = live.into_inner();
    live.bar.finish_and_clear();
    if let Some(mut w) = event_log {
        w.flush()?;
    }
    let todo_path = session_dir(&ctx.paths, id).join("todo.md");
    let report = &outcome.report;
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
