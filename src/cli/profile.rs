//! `rudder profile "QUERY"`: the query-aware profile from history, with the sessions it rests
//! on; `rudder profile --general` for the whole-history profile.

use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::{Args, ValueEnum};
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
pub struct ProfileArgs {
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
    /// Print the general (whole-history) profile instead, updating it with new imports.
    #[arg(long, conflicts_with = "query")]
    general: bool,
}

pub fn run(ctx: &Ctx, args: ProfileArgs) -> anyhow::Result<ExitCode> {
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
                .session
                .started_at
                .map(|t| t.format("%Y-%m-%d").to_string())
                .unwrap_or_default();
            println!(
                "  [{}] {when} {} {}: {}",
                s.id,
                s.session.kind,
                s.session.source,
                one_line(&s.session.title, 70)
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
