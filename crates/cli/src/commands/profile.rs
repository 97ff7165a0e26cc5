//! `rudder profile "QUERY"`: the query-aware profile from history, with the sessions it rests
//! on; `rudder profile --general` for the whole-history profile; `rudder profile show | say |
//! unsay | restore | exclude-source` for what Rudder knows about the user and their
//! corrections (the window's "You" screen, through the same `rudder::app` calls).

use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::{Args, Subcommand, ValueEnum};
use rudder::embed::{Embedder, FastEmbedder};
use rudder::history::History;
use rudder::models::{ModelState, ModelStore};
use rudder::profile::{ExpansionMode, ProfileOptions, Selection, Statement};

use super::{one_line, Ctx};

#[derive(Debug, Clone, Copy, ValueEnum)]
enum ExpansionArg {
    Raw,
    Cot,
    Pseudo,
    Facets,
    Fused,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum SelectionArg {
    /// The chat model judges each candidate (BESPOKE's selection).
    Llm,
    /// Keep candidates close to the query in embedding space (no LLM calls).
    Embedding,
}

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct ProfileArgs {
    #[command(subcommand)]
    action: Option<ProfileAction>,
    /// The question to build a profile for.
    #[arg(required_unless_present = "general")]
    query: Option<String>,
    /// How the query is expanded for retrieval.
    #[arg(long, value_enum, default_value_t = ExpansionArg::Facets)]
    expansion: ExpansionArg,
    /// How candidates are judged.
    #[arg(long, value_enum, default_value_t = SelectionArg::Llm)]
    selection: SelectionArg,
    /// Candidate sessions retrieved and judged.
    #[arg(long, default_value_t = 16)]
    candidates: usize,
    /// Also print the sessions the profile rests on and the selection's reasons.
    #[arg(long)]
    evidence: bool,
    /// Ignore the cache and build the profile again.
    #[arg(long)]
    fresh: bool,
    /// The lowest relevance score a statement needs (P(yes) that it matters for the question,
    /// less its P(yes) where nothing personal matters; -1 keeps every statement; the default is
    /// calibrated for qwen2.5-coder-1.5b-instruct by `rudder eval relevance`).
    #[arg(long, value_name = "SCORE", allow_negative_numbers = true, default_value_t = rudder_relevance_default())]
    relevance_threshold: f32,
    /// Remembered statements (`rudder history remember`) judged for the question, the closest
    /// first (24 is a good start); 0, the default, leaves the memory out of the profile.
    #[arg(long, value_name = "N", default_value_t = 0)]
    memory_candidates: usize,
    /// Print the general (whole-history) profile instead, updating it with new imports.
    #[arg(long, conflicts_with = "query")]
    general: bool,
}

/// What Rudder knows about the user, and their corrections to it.
#[derive(Debug, Subcommand)]
enum ProfileAction {
    /// Print what Rudder knows about you: your own statements, the general profile, recent
    /// question profiles (each statement with its id and sessions), deleted statements and
    /// the sources that feed profiles.
    Show,
    /// Tell Rudder something about you ("I'm vegetarian", "keep answers short"). Your words
    /// outrank anything inferred, in every later profile and persona.
    Say {
        text: String,
        /// Correct this inferred statement (its id from `show`): it is deleted and your words
        /// take its place.
        #[arg(long, value_name = "ID")]
        corrects: Option<String>,
        /// The criterion (emphasize, avoid, content depth, tone, explanation style); chosen
        /// from the words when absent.
        #[arg(long = "as", value_name = "CRITERION")]
        criterion: Option<String>,
    },
    /// Delete a statement: yours (u…) goes; an inferred one (i…) stays out of later profiles
    /// until restored.
    Unsay { id: String },
    /// Let a deleted inferred statement back into profiles.
    Restore { id: String },
    /// Stop a source's sessions from feeding profiles (they stay searchable).
    ExcludeSource {
        source: String,
        /// Let the source feed profiles again.
        #[arg(long)]
        include: bool,
    },
}

pub fn run(ctx: &Ctx, args: ProfileArgs) -> anyhow::Result<ExitCode> {
    if let Some(action) = args.action {
        return you(ctx, action);
    }
    let models = ModelStore::open(&ctx.paths)?;
    let llm = rudder::llm::open_chat(&models, &ctx.settings, ctx.model.as_deref())?;
    let dir = ctx.paths.history_dir();
    let mut history =
        History::open(&dir).with_context(|| format!("opening the history in {}", dir.display()))?;
    if history.stats()?.store.sessions == 0 {
        bail!("no history imported yet: run `rudder import PATH` first");
    }
    if args.general {
        let (profile, usage) = rudder::profile::general_profile(llm.as_ref(), &mut history, true)?;
        if ctx.json {
            println!("{}", serde_json::to_string_pretty(&profile)?);
        } else {
            for i in &profile.interests {
                println!("## {}  {}", i.name, cite(&i.sessions));
                if !i.subtopics.is_empty() {
                    println!("subtopics: {}", i.subtopics.join(", "));
                }
                println!("presentation: {}", i.presentation);
                println!("takeaway: {}", i.takeaway);
                println!();
            }
            eprintln!(
                "{} prompt + {} generated tokens in {} calls",
                usage.prompt_tokens, usage.generated_tokens, usage.calls
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let query = args.query.unwrap_or_default();
    let embed_name = ctx.settings.embed_model.clone();
    let embedder = if models.quick_state(&embed_name) == ModelState::Present {
        Some(FastEmbedder::from_store(
            &models,
            &embed_name,
            ctx.settings.llama.effective_threads(),
        )?)
    } else {
        None
    };
    let options = ProfileOptions {
        expansion: match args.expansion {
            ExpansionArg::Raw => ExpansionMode::Raw,
            ExpansionArg::Cot => ExpansionMode::Cot,
            ExpansionArg::Pseudo => ExpansionMode::Pseudo,
            ExpansionArg::Facets => ExpansionMode::Facets,
            ExpansionArg::Fused => ExpansionMode::Fused,
        },
        candidates: args.candidates,
        selection: match args.selection {
            SelectionArg::Llm => Selection::default(),
            SelectionArg::Embedding => Selection::Embedding {
                min_similarity: 0.3,
            },
        },
        use_cache: !args.fresh,
        relevance_threshold: args.relevance_threshold,
        memory_candidates: args.memory_candidates,
        ..ProfileOptions::default()
    };
    let with = embedder
        .as_ref()
        .map(|e| (e as &dyn Embedder, embed_name.as_str()));
    let spinner = indicatif::ProgressBar::new_spinner()
        .with_message(format!("building the profile with {}", llm.model_name()));
    spinner.enable_steady_tick(std::time::Duration::from_millis(120));
    let run = rudder::profile::query_profile(llm.as_ref(), &mut history, with, &query, &options);
    spinner.finish_and_clear();
    let run = run?;
    if ctx.json {
        println!("{}", serde_json::to_string_pretty(&run)?);
        return Ok(ExitCode::SUCCESS);
    }
    let p = &run.profile;
    println!("Profile for: {}", p.query);
    println!(
        "domain: {:?} — {} {}",
        p.domain.fit,
        p.domain.reason.text,
        cite(&p.domain.reason.sessions)
    );
    section("emphasize", &p.need.emphasize);
    section("avoid", &p.need.avoid);
    section("content depth", &p.content_depth);
    section("tone", &p.tone);
    section("explanation style", &p.explanation_style);
    if args.evidence {
        println!();
        println!(
            "evidence: {} of {} candidates kept",
            run.selected.kept.len(),
            run.candidates.len()
        );
        let ids: Vec<i64> = run.selected.kept.iter().map(|k| k.id).collect();
        for s in history.get_many(&ids)? {
            let why = run
                .selected
                .kept
                .iter()
                .find(|k| k.id == s.id)
                .map(|k| {
                    if k.adjacent {
                        format!("{} (adjacent constraint)", k.signal)
                    } else {
                        k.signal.clone()
                    }
                })
                .unwrap_or_default();
            let when = s
                .entry
                .started_at
                .map(|t| t.format("%Y-%m-%d").to_string())
                .unwrap_or_default();
            println!(
                "  [{}] {when} {} {}: {}",
                s.id,
                s.entry.kind,
                s.entry.source,
                one_line(&s.entry.title, 70)
            );
            println!("        why: {why}");
        }
    }
    eprintln!(
        "{}{} LLM calls, {} prompt + {} generated tokens, {:.1} s ({})",
        if run.from_cache {
            "cached; it cost "
        } else {
            ""
        },
        run.usage.calls,
        run.usage.prompt_tokens,
        run.usage.generated_tokens,
        run.seconds,
        run.model
    );
    Ok(ExitCode::SUCCESS)
}

fn cite(ids: &[i64]) -> String {
    if ids.is_empty() {
        String::new()
    } else {
        let list: Vec<String> = ids.iter().map(|i| i.to_string()).collect();
        format!("[{}]", list.join(", "))
    }
}

fn section(name: &str, statements: &[Statement]) {
    if statements.is_empty() {
        return;
    }
    println!("{name}:");
    for s in statements {
        println!("  - {} {}", s.text, cite(&s.sessions));
    }
}

fn you(ctx: &Ctx, action: ProfileAction) -> anyhow::Result<ExitCode> {
    let app = rudder::app::App::new(ctx.paths.clone(), std::sync::Arc::new(rudder::app::Silent));
    let view = match action {
        ProfileAction::Show => app.you_view()?,
        ProfileAction::Say {
            text,
            corrects,
            criterion,
        } => app.you_say(&rudder::app::SayRequest {
            text,
            criterion,
            corrects,
        })?,
        ProfileAction::Unsay { id } => app.you_unsay(&id)?,
        ProfileAction::Restore { id } => app.you_restore(&id)?,
        ProfileAction::ExcludeSource { source, include } => {
            app.you_personalise(&source, include)?
        }
    };
    if ctx.json {
        println!("{}", serde_json::to_string_pretty(&view)?);
    } else {
        print_you(&view);
    }
    Ok(ExitCode::SUCCESS)
}

fn print_you(view: &rudder::app::YouView) {
    use rudder::app::StatementView;
    let line = |s: &StatementView| {
        let from: Vec<String> = s
            .sessions
            .iter()
            .map(|r| {
                let day = r
                    .started_at
                    .map(|t| t.format(" %Y-%m-%d").to_string())
                    .unwrap_or_default();
                format!("[{}] {}{day}", r.id, one_line(&r.title, 40))
            })
            .collect();
        let said = if s.said { " (you said)" } else { "" };
        let from = if from.is_empty() {
            String::new()
        } else {
            format!("  ← {}", from.join("; "))
        };
        println!("  {:<10} {}: {}{said}{from}", s.id, s.criterion, s.text);
    };
    println!("What Rudder knows about you");
    println!();
    println!("You said:");
    if view.said.is_empty() {
        println!("  nothing yet: `rudder profile say \"…\"`");
    }
    view.said.iter().for_each(line);
    println!();
    println!("General profile:");
    if !view.general_built {
        println!("  not built yet: `rudder profile --general`");
    }
    for i in &view.interests {
        line(&i.statement);
        if let Some(p) = &i.presentation {
            line(p);
        }
    }
    for p in &view.recent {
        println!();
        println!(
            "For \"{}\" ({}):",
            p.query,
            p.built_at.format("%Y-%m-%d %H:%M")
        );
        p.statements.iter().for_each(line);
    }
    if !view.hidden.is_empty() {
        println!();
        println!("Deleted (kept out of profiles; `rudder profile restore ID`):");
        view.hidden.iter().for_each(line);
    }
    println!();
    println!("Sources:");
    if view.sources.is_empty() {
        println!("  no history imported: `rudder import PATH`");
    }
    for s in &view.sources {
        println!(
            "  {:<14} {:>6} sessions  {}",
            s.source,
            s.sessions,
            if s.personalised {
                "feeds profiles"
            } else {
                "excluded from personalisation"
            }
        );
    }
}

fn rudder_relevance_default() -> f32 {
    rudder::profile::relevance::RELEVANCE_THRESHOLD
}
