//! `rudder eval`: offline evaluations against labelled cases.
//!
//! `rudder eval retrieval CASES.jsonl` reads the JSON Lines cases described in
//! `rudder::eval::retrieval`, imports each user's export folder into a scratch history, and
//! prints nDCG@10, nDCG@20 and recall@20 for raw, CoT, pseudo-history and fused queries as a
//! Markdown table (or the whole report with `--json`). The chat model that writes the
//! expansions is `--model` (or the configured one); the embedder is the configured one.
//!
//! `rudder eval build-cases --out DIR` builds persona × query × aspect cases with synthetic
//! histories (`rudder::eval::cases`) from `../shared/eval/` and writes `DIR/cases.jsonl` and
//! `DIR/histories/<case>/conversations.json`; the same seed, data and model give the same files.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Subcommand;
use rudder::embed::FastEmbedder;
use rudder::models::{ModelState, ModelStore};

use super::progress::CountProgress;
use super::Ctx;

#[derive(Debug, Subcommand)]
pub enum EvalCommand {
    /// History retrieval for query-aware profiles: nDCG@10/@20 and recall@20 of the raw,
    /// CoT, pseudo-history and fused queries (BESPOKE Table 5).
    Retrieval {
        /// The cases, one JSON object a line.
        cases: PathBuf,
        /// Where the users' scratch histories go (default: a temporary folder, removed
        /// afterwards). A scratch folder from an earlier run is replaced.
        #[arg(long, value_name = "DIR")]
        work_dir: Option<PathBuf>,
        /// Only this user's cases (repeatable).
        #[arg(long, value_name = "USER")]
        user: Vec<String>,
        /// At most this many cases per user (the first ones in the file).
        #[arg(long, value_name = "N")]
        limit: Option<usize>,
    },
    /// Build persona × query × aspect cases with synthetic ChatGPT histories (STEER
    /// Appendix E/J): writes DIR/cases.jsonl and DIR/histories/.
    BuildCases {
        /// The evaluation material: profile.jsonl, personality.jsonl and the split folder.
        #[arg(long, value_name = "DIR", default_value = "../shared/eval")]
        eval_dir: PathBuf,
        /// The folder under --eval-dir with queries.jsonl and key_point/.
        #[arg(long, value_name = "NAME", default_value = "researchy-dev")]
        split: String,
        /// Questions to draw.
        #[arg(long, value_name = "N", default_value_t = 10)]
        queries: usize,
        /// Personas (cases) per question.
        #[arg(long, value_name = "N", default_value_t = 1)]
        personas_per_query: usize,
        /// Seed of every random choice (questions, examples, ids, timestamps).
        #[arg(long, value_name = "S", default_value_t = 0)]
        seed: u64,
        /// Where cases.jsonl and histories/ are written.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
}

pub fn run(ctx: &Ctx, cmd: EvalCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        EvalCommand::Retrieval {
            cases,
            work_dir,
            user,
            limit,
        } => retrieval(ctx, cases, work_dir, &user, limit),
        EvalCommand::BuildCases {
            eval_dir,
            split,
            queries,
            personas_per_query,
            seed,
            out,
        } => {
            let options = rudder::eval::BuildOptions {
                queries,
                personas_per_query,
                seed,
                ..Default::default()
            };
            build_cases(ctx, &eval_dir, &split, &options, &out)
        }
    }
}

fn build_cases(
    ctx: &Ctx,
    eval_dir: &std::path::Path,
    split: &str,
    options: &rudder::eval::BuildOptions,
    out: &std::path::Path,
) -> anyhow::Result<ExitCode> {
    if options.queries == 0 || options.personas_per_query == 0 {
        anyhow::bail!("--queries and --personas-per-query must be at least 1");
    }
    let source = rudder::eval::EvalSource::load(eval_dir, split)?;
    let store = ModelStore::open(&ctx.paths)?;
    let embedder = open_embedder(ctx, &store)?;
    let llm = rudder::llm::open_chat(&store, &ctx.settings, ctx.model.as_deref())?;
    let progress = CountProgress::default();
    let report =
        rudder::eval::build_cases(&source, llm.as_ref(), &embedder, options, out, &progress)
            .with_context(|| format!("building cases from {}", source.split_dir.display()))?;
    let summary = serde_json::json!({
        "cases_file": report.cases_file,
        "cases": report.cases.len(),
        "queries": report.queries,
        "seed": options.seed,
        "model": llm.model_name(),
        "rejected_profiles": report.rejected_profiles,
        "unfilled_personas": report.unfilled_personas,
        "retried_calls": report.retried_calls,
        "usage": report.usage,
        "seconds": report.seconds,
    });
    if ctx.json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        println!(
            "{} cases for {} questions in {} ({} profiles rejected as near-duplicates, {} \
             personas unfilled, {} calls retried, {} LLM calls, {} tokens generated, {:.0} s)",
            report.cases.len(),
            report.queries,
            report.cases_file.display(),
            report.rejected_profiles,
            report.unfilled_personas,
            report.retried_calls,
            report.usage.calls,
            report.usage.generated_tokens,
            report.seconds
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The configured embedder, or an error saying how to install it.
fn open_embedder(ctx: &Ctx, store: &ModelStore) -> anyhow::Result<FastEmbedder> {
    let embed_name = ctx.settings.embed_model.clone();
    if store.quick_state(&embed_name) != ModelState::Present {
        anyhow::bail!(
            "the embedding model {embed_name} is not installed; `rudder models fetch {embed_name}` \
             first"
        );
    }
    let threads = ctx.settings.llama.effective_threads();
    Ok(FastEmbedder::from_store(store, &embed_name, threads)?)
}

fn retrieval(
    ctx: &Ctx,
    cases_path: PathBuf,
    work_dir: Option<PathBuf>,
    users: &[String],
    limit: Option<usize>,
) -> anyhow::Result<ExitCode> {
    let mut cases = rudder::eval::load_cases(&cases_path)?;
    if !users.is_empty() {
        cases.retain(|c| users.contains(&c.user));
    }
    if let Some(limit) = limit {
        let mut per_user = std::collections::HashMap::<String, usize>::new();
        cases.retain(|c| {
            let n = per_user.entry(c.user.clone()).or_default();
            *n += 1;
            *n <= limit
        });
    }
    if cases.is_empty() {
        anyhow::bail!("no cases selected from {}", cases_path.display());
    }

    let store = ModelStore::open(&ctx.paths)?;
    let embed_name = ctx.settings.embed_model.clone();
    if store.quick_state(&embed_name) != ModelState::Present {
        anyhow::bail!(
            "the embedding model {embed_name} is not installed; `rudder models fetch {embed_name}` \
             first"
        );
    }
    let threads = ctx.settings.llama.effective_threads();
    let embedder = FastEmbedder::from_store(&store, &embed_name, threads)?;
    let llm = rudder::llm::open_chat(&store, &ctx.settings, ctx.model.as_deref())?;

    // Without --work-dir the scratch histories live in a temporary folder dropped at the end.
    let temp;
    let work = match work_dir {
        Some(dir) => dir,
        None => {
            temp = tempfile::Builder::new()
                .prefix("rudder-eval-")
                .tempdir()
                .context("creating a temporary work dir")?;
            temp.path().to_path_buf()
        }
    };
    let base = cases_path.parent().unwrap_or(std::path::Path::new(""));
    let progress = CountProgress::default();
    let report = rudder::eval::run_retrieval_eval_on(
        &cases,
        base,
        &cases_path.display().to_string(),
        llm.as_ref(),
        (&embedder, &embed_name),
        &work,
        &progress,
    )
    .with_context(|| format!("evaluating {}", cases_path.display()))?;
    if ctx.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.to_markdown());
    }
    if !report.failed_ids.is_empty() {
        eprintln!(
            "error: retrieval failed for {} of {} cases ({}); they are left out of the means",
            report.failed_ids.len(),
            report.cases.len(),
            report.failed_ids.join(", ")
        );
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}
