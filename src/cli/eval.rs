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
    /// Run systems on cases with the same engine and model, judge every report, and write
    /// records.json, table.md (STEER Table 1 shaped) and c0.svg to DIR.
    Run {
        /// Cases from `rudder eval build-cases`.
        cases: PathBuf,
        /// Comma-separated: query-only, initial-persona, full-persona, rudder (every --c0),
        /// rudder@C0.
        #[arg(
            long,
            value_name = "LIST",
            default_value = "query-only,initial-persona,full-persona,rudder"
        )]
        systems: String,
        /// The C0 sweep of `rudder`.
        #[arg(long, value_name = "LIST", default_value = "0.1,0.4,0.7,1.0")]
        c0: String,
        /// The judge (and simulated user): a model name, or the base URL of an
        /// OpenAI-compatible server (`http://…/v1`; sends the reports there).
        #[arg(long, value_name = "MODEL|URL")]
        judge: Option<String>,
        /// The model name the judge server expects (with a URL judge).
        #[arg(long, value_name = "NAME", default_value = "judge")]
        judge_model: String,
        #[arg(long, default_value_t = 1)]
        depth: u32,
        #[arg(long, default_value_t = 2)]
        breadth: u32,
        /// Clarifying questions the simulated user answers in `rudder` runs.
        #[arg(long, default_value_t = 0)]
        clarify: u32,
        /// At most this many cases (the first ones).
        #[arg(long, value_name = "N")]
        limit: Option<usize>,
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
        EvalCommand::Run {
            cases,
            systems,
            c0,
            judge,
            judge_model,
            depth,
            breadth,
            clarify,
            limit,
            out,
        } => {
            let sweep = c0
                .split(',')
                .map(|v| v.trim().parse::<f32>())
                .collect::<Result<Vec<f32>, _>>()
                .with_context(|| format!("--c0 {c0:?}: expected numbers like 0.1,0.4"))?;
            let mut parsed = Vec::new();
            for name in systems.split(',') {
                parsed.extend(
                    rudder::eval::runner::System::parse(name, &sweep)
                        .map_err(anyhow::Error::msg)?,
                );
            }
            let options = RunOptions {
                systems: parsed,
                judge,
                judge_model,
                depth,
                breadth,
                clarify,
                limit,
            };
            run_eval(ctx, &cases, &options, &out)
        }
    }
}

struct RunOptions {
    systems: Vec<rudder::eval::runner::System>,
    judge: Option<String>,
    judge_model: String,
    depth: u32,
    breadth: u32,
    clarify: u32,
    limit: Option<usize>,
}

fn run_eval(
    ctx: &Ctx,
    cases_path: &std::path::Path,
    options: &RunOptions,
    out: &std::path::Path,
) -> anyhow::Result<ExitCode> {
    use rudder::eval::runner::{run_case, RunContext};
    let mut cases = rudder::eval::read_eval_cases(cases_path)?;
    if let Some(n) = options.limit {
        cases.truncate(n);
    }
    let store = ModelStore::open(&ctx.paths)?;
    let embedder = open_embedder(ctx, &store)?;
    let llm = rudder::llm::open_chat(&store, &ctx.settings, ctx.model.as_deref())?;
    let judge: Box<dyn rudder::llm::Llm> = match options.judge.as_deref() {
        Some(url) if url.starts_with("http://") || url.starts_with("https://") => {
            eprintln!("judge: {url} — the reports and personas are sent there");
            Box::new(rudder::llm::openai::OpenAiLlm::new(
                &rudder::config::OpenAiSettings {
                    base_url: url.to_string(),
                    model: options.judge_model.clone(),
                    api_key_env: None,
                },
            )?)
        }
        Some(name) if Some(name) != ctx.model.as_deref() => {
            rudder::llm::open_chat(&store, &ctx.settings, Some(name))?
        }
        // The same model judges: one copy in memory is enough.
        _ => rudder::llm::open_chat(&store, &ctx.settings, ctx.model.as_deref())?,
    };
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let run_ctx = RunContext {
        llm: llm.as_ref(),
        judge_llm: judge.as_ref(),
        embedder: &embedder,
        embed_model: ctx.settings.embed_model.clone(),
        docs_dir: ctx.paths.docs_dir(),
        cases_dir: cases_path
            .parent()
            .map(std::path::Path::to_path_buf)
            .unwrap_or_default(),
        work_dir: out.join("work"),
        depth: options.depth,
        breadth: options.breadth,
        clarify_turns: options.clarify,
    };
    let total = (cases.len() * options.systems.len()) as u64;
    let bar = indicatif::ProgressBar::new(total);
    let mut records = Vec::new();
    let mut outputs = Vec::new();
    for case in &cases {
        for &system in &options.systems {
            bar.set_message(format!("{} {}", case.id, system.name()));
            let output = run_case(&run_ctx, case, system)?;
            records.push(output.record.clone());
            outputs.push(output);
            bar.inc(1);
            // Written after every run, so a long sweep that stops keeps what it measured.
            std::fs::write(
                out.join("records.json"),
                serde_json::to_string_pretty(&outputs)?,
            )
            .with_context(|| format!("writing {}", out.join("records.json").display()))?;
        }
    }
    bar.finish_and_clear();
    let table = rudder::eval::summary::markdown_table(&records);
    std::fs::write(out.join("table.md"), &table)
        .with_context(|| format!("writing {}", out.join("table.md").display()))?;
    rudder::eval::summary::plot_against_c0(&records, &out.join("c0.svg"))?;
    print!("{table}");
    eprintln!(
        "{} runs: {}, {} and {}",
        records.len(),
        out.join("records.json").display(),
        out.join("table.md").display(),
        out.join("c0.svg").display()
    );
    Ok(ExitCode::SUCCESS)
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
