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
    Brief, Envelope, Event, Interaction, NeverAsk, ResearchSettings, Researcher, Scripted, Terminal,
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
    /// Never pause to ask (the rule is still evaluated and logged).
    #[arg(long)]
    never_ask: bool,
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
    let embedder =
        FastEmbedder::from_store(&models, &embed_name, ctx.settings.llama.effective_threads())
            .with_context(|| {
                format!("research needs the embedding model: `rudder models fetch {embed_name}`")
            })?;
    let llm = rudder::llm::open_chat(&models, &ctx.settings, ctx.model.as_deref())?;

    let mut sources = Sources::new();
    // Documents: the library, after adding what --docs names.
    if !args.no_docs {
        let mut docs = DocsSource::open(&ctx.paths.docs_dir())?;
        for dir in &args.docs {
            let report = docs.library_mut().add(
                dir,
                Some((&embedder as &dyn Embedder, embed_name.as_str())),
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
    // History: the query-aware profile seeds the persona, and the sessions are a source.
    let mut profile_text = String::new();
    if !args.no_history {
        let dir = ctx.paths.history_dir();
        if dir.exists() {
            let mut history = History::open(&dir)
                .with_context(|| format!("opening the history in {}", dir.display()))?;
            if history.stats()?.store.sessions > 0 {
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
        }
    }
    if let Some(web) = rudder::sources::web::web_source_from_settings(&ctx.settings) {
        eprintln!("web search is ON: {}", rudder::sources::web::WEB_DISCLOSURE);
        sources.push(Box::new(web));
    }
    if sources.is_empty() {
        bail!(
            "nothing to research over: add documents (`rudder docs add DIR` or \
             `rudder corpus fetch`), import history (`rudder import PATH`), or enable web search"
        );
    }

    let mut interaction: Box<dyn Interaction> = match (&args.answers, args.never_ask) {
        (Some(path), _) => Box::new(Scripted::from_file(path)?),
        (None, true) => Box::new(NeverAsk),
        (None, false) if std::io::stdin().is_terminal() => Box::new(Terminal::stdio()),
        (None, false) => {
            eprintln!("note: stdin is not a terminal, so the research will not pause to ask");
            Box::new(NeverAsk)
        }
    };
    let mut settings = ResearchSettings {
        depth: args.depth,
        breadth: args.breadth.max(1),
        ..ResearchSettings::default()
    };
    settings.pause.base_cost = args.c0;
    settings.pause.tolerance = args.tol;
    settings.weights.lambda_explore = args.lambda_explore;
    settings.weights.lambda_info = args.lambda_info;

    let mut log = match &args.events {
        Some(path) => Some(std::io::BufWriter::new(
            std::fs::File::create(path).with_context(|| format!("{}", path.display()))?,
        )),
        None => None,
    };
    let live = Live::new(ctx.json);
    let mut sink = |e: &Envelope| {
        if let Some(w) = log.as_mut() {
            if let Ok(line) = serde_json::to_string(e) {
                // Flushed per event, so `tail -f` on the log follows the run.
                let _ = writeln!(w, "{line}").and_then(|_| w.flush());
            }
        }
        live.show(&e.event);
    };
    let brief = Brief {
        query: args.question.clone(),
        persona_text: args.persona.clone(),
        profile: profile_text,
        checklist: None,
    };
    let mut researcher = Researcher {
        llm: llm.as_ref(),
        embedder: &embedder,
        sources: &mut sources,
        interaction: interaction.as_mut(),
        events: &mut sink,
        settings,
        embed_model: embed_name.clone(),
    };
    let outcome = researcher.run(&brief)?;
    live.bar.finish_and_clear();
    if let Some(mut w) = log {
        w.flush()?;
    }

    let report = &outcome.report;
    match &args.out {
        Some(path) => {
            std::fs::write(path, &report.markdown)
                .with_context(|| format!("writing {}", path.display()))?;
            let html = path.with_extension("html");
            std::fs::write(&html, report.to_html())
                .with_context(|| format!("writing {}", html.display()))?;
            eprintln!("report: {} and {}", path.display(), html.display());
        }
        None if !ctx.json => println!("{}", report.markdown),
        None => {}
    }
    if ctx.json {
        println!("{}", serde_json::to_string_pretty(&outcome)?);
    }
    eprintln!("\n{}", outcome.tree.render());
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

fn spinner(message: &str) -> ProgressBar {
    let bar = ProgressBar::new_spinner().with_style(
        ProgressStyle::with_template("{spinner} {msg} {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar.set_message(message.to_string());
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    bar
}

/// Prints the tree as it grows and keeps a spinner on the current step.
struct Live {
    bar: ProgressBar,
    quiet: bool,
}

impl Live {
    fn new(quiet: bool) -> Self {
        let bar = if quiet {
            ProgressBar::hidden()
        } else {
            spinner("starting")
        };
        Self { bar, quiet }
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

    fn show(&self, event: &Event) {
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
                self.bar.set_message(format!("researching node {id}"));
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
                self.bar.set_message(format!("researching [{id}]"));
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
                self.bar.set_message("planning the next directions");
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
            Event::ReportSection { heading, .. } => {
                self.line(format!("report: section “{}”", one_line(heading, 90)));
                self.bar.set_message("writing the report");
            }
            Event::Usage { .. } | Event::Learning { .. } => {}
            _ => {}
        }
        if matches!(
            event,
            Event::NodeResearched { .. } | Event::PauseDecided { .. }
        ) {
            self.bar.tick();
        }
    }
}
