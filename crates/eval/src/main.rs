//! `rudder-eval`, the binary behind `rudder eval`: offline evaluations against labelled cases.
//! `rudder` runs it with its own command line, so it takes `rudder`'s global flags and the
//! `eval` subcommand (`rudder-eval eval …` works directly too).
//!
//! `rudder eval retrieval CASES.jsonl` reads the JSON Lines cases described in
//! `rudder_eval::retrieval`, imports each user's export folder into a scratch history, and
//! prints nDCG@10, nDCG@20 and recall@20 for raw, CoT, pseudo-history, facet-probe and fused
//! queries as a Markdown table (or the whole report with `--json`). The chat model that writes the
//! expansions is `--model` (or the configured one); the embedder is the configured one.
//!
//! `rudder eval build-cases --out DIR` builds persona × query × aspect cases with synthetic
//! histories (`rudder_eval::cases`) from the evaluation material (`--eval-dir`) and writes
//! `DIR/cases.jsonl` and `DIR/histories/<case>/conversations.json`; the same seed, data and
//! model give the same files.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};
use rudder::embed::FastEmbedder;
use rudder::models::{ModelState, ModelStore};
use rudder_cli::progress::CountProgress;
use rudder_cli::{Ctx, GlobalArgs};
use rudder_eval::quality::{QualityOptions, ReportSystem};

/// The `rudder` command line, as far as `eval` goes.
#[derive(Debug, Parser)]
#[command(
    name = "rudder",
    bin_name = "rudder",
    version,
    about = "Private, steerable deep research on your own machine: the evaluation commands \
             (`rudder eval`, the rudder-eval binary)"
)]
struct Cli {
    #[command(flatten)]
    global: GlobalArgs,
    #[command(subcommand)]
    command: Top,
}

#[derive(Debug, Subcommand)]
enum Top {
    /// Evaluate retrieval and reports.
    #[command(subcommand)]
    Eval(EvalCommand),
}

fn main() -> ExitCode {
    rudder_cli::start();
    let cli = Cli::parse();
    rudder_cli::init_logging(cli.global.verbose);
    rudder_cli::finish(cli.global.ctx().and_then(|ctx| {
        let Top::Eval(cmd) = cli.command;
        run(&ctx, cmd)
    }))
}

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
        /// The evaluation material: profile.jsonl, personality.jsonl and the split folder
        /// (kept outside the repository; it is not ours to redistribute).
        #[arg(long, value_name = "DIR", env = "RUDDER_EVAL_DIR")]
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
    /// Calibrate the profile's relevance judge: the chat model's P(yes) that a careful advisor
    /// would take a statement about the user into account, on labelled (question, statement)
    /// pairs from the planted-needs set and crates/eval/data/relevance_pairs.jsonl. Writes
    /// DIR/table.md and DIR/records.json.
    Relevance {
        /// Where table.md and records.json go.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// The planted-needs set's folder; written there from --seed when it has no
        /// labels.json yet (default: DIR/set).
        #[arg(long, value_name = "DIR")]
        set: Option<PathBuf>,
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Calibrate on what the planted users said about themselves in their chats (the
        /// sentences memory keeps) instead of the profile-form statements.
        #[arg(long)]
        said: bool,
    },
    /// Calibrate the report's support judge: the chat model's P(yes) that a passage states a
    /// sentence, which way round, beside the embedding matcher, on the shipped support pairs
    /// and crates/eval/data/turned_pairs.jsonl (reversed causes, swapped order, wrong
    /// numbers). Writes DIR/table.md and DIR/records.json.
    Support {
        /// Where table.md and records.json go.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
    /// Calibrate the report's finding judge: the chat model's P(yes) that a finding helps
    /// answer the question, beside the embedding cosine of the outline's off-topic cut, on
    /// crates/eval/data/finding_pairs.jsonl and pairs from the planted-needs set. Writes
    /// DIR/table.md and DIR/records.json.
    FindingJudge {
        /// Where table.md and records.json go.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// The planted-needs set's folder; written there from --seed when it has no
        /// labels.json yet (default: DIR/set).
        #[arg(long, value_name = "DIR")]
        set: Option<PathBuf>,
        #[arg(long, default_value_t = 0)]
        seed: u64,
    },
    /// Calibrate the report's need judge: the chat model's P(yes) that a finding matters for
    /// the reader because of one of their needs, beside the embedding cosine, on
    /// crates/eval/data/need_finding_pairs.jsonl. Writes DIR/table.md and DIR/records.json.
    NeedJudge {
        /// Where table.md and records.json go.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
    /// What the user gets, measured without a large judge: retrieval of planted needs,
    /// profile need recall and citation precision, report need uptake for no-history, history
    /// and oracle systems, report hygiene, answer coverage and cost per stage. Writes
    /// DIR/table.md and DIR/records.json.
    Quality {
        /// Where table.md, records.json, the model-call cache and scratch histories go.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// The planted-needs set's folder; written there from --seed when it has no
        /// labels.json yet (default: DIR/set).
        #[arg(long, value_name = "DIR")]
        set: Option<PathBuf>,
        /// Seed of the planted-needs set.
        #[arg(long, value_name = "S", default_value_t = 0)]
        seed: u64,
        /// Only these users (repeatable: --user u0 --user u3).
        #[arg(long, value_name = "ID")]
        user: Vec<String>,
        /// Only these questions of the planted set (repeatable: --question u1-q1); the samples
        /// take them in round-robin order.
        #[arg(long, value_name = "ID")]
        question: Vec<String>,
        /// Questions whose profile is built (round-robin over the users).
        #[arg(long, value_name = "N", default_value_t = QualityOptions::default().profile_questions)]
        profile_questions: usize,
        /// Questions whose reports every system writes (the first of the profile sample).
        #[arg(long, value_name = "N", default_value_t = QualityOptions::default().report_questions)]
        report_questions: usize,
        /// Comma-separated: no-history, history, oracle.
        #[arg(long, value_name = "LIST", default_value = "no-history,history,oracle")]
        systems: String,
        /// Researchy questions for answer coverage (needs --eval-dir).
        #[arg(long, value_name = "N", default_value_t = QualityOptions::default().researchy_questions)]
        researchy_questions: usize,
        /// Corpus-grounded questions for answer coverage (crates/eval/data/grounded.jsonl; the
        /// offline Wikipedia corpus holds their key points).
        #[arg(long, value_name = "N", default_value_t = QualityOptions::default().grounded_questions)]
        grounded_questions: usize,
        /// Users (of the profile sample) who ask another user's question with their own
        /// history, to measure false personalisation (in the profile, and in the report when
        /// reports run).
        #[arg(long, value_name = "N", default_value_t = QualityOptions::default().foreign_questions)]
        foreign_questions: usize,
        /// Read each user's history into memory after import (`rudder history remember`) and
        /// measure what it costs; with --memory-candidates, profiles judge what it holds.
        #[arg(long)]
        memory: bool,
        /// Remembered statements each profile judges for its question (needs --memory; 0,
        /// Rudder's default, leaves memory out of profiles).
        #[arg(long, value_name = "N", default_value_t = 0, requires = "memory")]
        memory_candidates: usize,
        /// Read at most N sessions of each user's history into memory (default: all).
        #[arg(long, value_name = "N", requires = "memory")]
        memory_limit: Option<usize>,
        /// How much higher the relevance bar is for a phrase from a session only a situation
        /// probe retrieved (default: Rudder's).
        #[arg(long, value_name = "M")]
        probe_only_margin: Option<f32>,
        /// The evaluation material with researchy-dev/ (answer coverage is skipped without it).
        #[arg(long, value_name = "DIR", env = "RUDDER_EVAL_DIR")]
        eval_dir: Option<PathBuf>,
        #[arg(long, default_value_t = QualityOptions::default().depth)]
        depth: u32,
        #[arg(long, default_value_t = QualityOptions::default().breadth)]
        breadth: u32,
        /// The report's support judge threshold, 0 to 1; 0 checks sentences by the embedding
        /// match alone [default: Rudder's for the model, 0.615 for qwen2.5-coder-1.5b].
        #[arg(long, value_name = "P")]
        support_judge: Option<f32>,
        /// The report's finding judge threshold, 0 to 1; 0 leaves the embedding cuts alone
        /// [default: Rudder's for the model, 0.19 for qwen2.5-coder-1.5b].
        #[arg(long, value_name = "S")]
        finding_judge: Option<f32>,
        /// Reports also search the guides (crates/eval/data/guides/: neutral documents on the
        /// subjects of some planted questions, which the Wikipedia corpus does not cover); with
        /// no --question, the sample is the questions they cover.
        #[arg(long)]
        guides: bool,
    },
    /// Score Markdown reports (Rudder's or another system's) against one corpus-grounded
    /// question of crates/eval/data/grounded.jsonl by the same code: words, references (and
    /// how many name a corpus article), the share of content sentences the calibrated support
    /// matcher finds supported by what the report cites and by the corpus, and key-point
    /// recall. Prints a Markdown table; writes DIR/table.md and DIR/records.json.
    ScoreReport {
        /// The question's id (g01 … g20).
        #[arg(long, value_name = "ID")]
        question: String,
        /// A Markdown report (repeatable).
        #[arg(long = "report", value_name = "FILE", required = true)]
        reports: Vec<PathBuf>,
        /// Where table.md and records.json go.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
    /// Merge the records of several `eval run` folders (e.g. one sweep split across
    /// processes) into one table.md, c0.svg and records.json in DIR.
    Table {
        /// Folders written by `rudder eval run`.
        #[arg(required = true)]
        runs: Vec<PathBuf>,
        #[arg(long)]
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
            let options = rudder_eval::BuildOptions {
                queries,
                personas_per_query,
                seed,
                ..Default::default()
            };
            build_cases(ctx, &eval_dir, &split, &options, &out)
        }
        EvalCommand::Table { runs, out } => merge_runs(&runs, &out),
        EvalCommand::ScoreReport {
            question,
            reports,
            out,
        } => score_reports(ctx, &question, &reports, &out),
        EvalCommand::Relevance {
            out,
            set,
            seed,
            said,
        } => relevance(ctx, &out, set, seed, said),
        EvalCommand::Support { out } => support_judge(ctx, &out),
        EvalCommand::FindingJudge { out, set, seed } => finding_judge(ctx, &out, set, seed),
        EvalCommand::NeedJudge { out } => need_judge(ctx, &out),
        EvalCommand::Quality {
            out,
            set,
            seed,
            user,
            question,
            profile_questions,
            report_questions,
            systems,
            researchy_questions,
            grounded_questions,
            foreign_questions,
            memory,
            memory_candidates,
            memory_limit,
            probe_only_margin,
            eval_dir,
            depth,
            breadth,
            support_judge,
            finding_judge,
            guides,
        } => {
            let systems = systems
                .split(',')
                .map(ReportSystem::parse)
                .collect::<Result<Vec<_>, _>>()
                .map_err(anyhow::Error::msg)?;
            let options = QualityOptions {
                users: user,
                questions: question,
                profile_questions,
                report_questions,
                systems,
                researchy_questions,
                grounded_questions,
                foreign_questions,
                memory,
                memory_candidates,
                memory_limit,
                probe_only_margin,
                depth,
                breadth,
                support_judge,
                finding_judge,
                guides,
            };
            quality(ctx, &out, set, seed, eval_dir, &options)
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
                    rudder_eval::runner::System::parse(name, &sweep).map_err(anyhow::Error::msg)?,
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
    systems: Vec<rudder_eval::runner::System>,
    judge: Option<String>,
    judge_model: String,
    depth: u32,
    breadth: u32,
    clarify: u32,
    limit: Option<usize>,
}

/// What one sweep ran with, written to `run.json` beside the records so every number can be
/// traced to its configuration and reproduced.
#[derive(serde::Serialize)]
struct RunManifest<'a> {
    rudder_version: &'static str,
    started: String,
    cases_file: String,
    cases_sha256: String,
    case_ids: Vec<&'a str>,
    case_seeds: Vec<u64>,
    systems: Vec<String>,
    model: String,
    judge: String,
    embed_model: String,
    docs_dir: String,
    /// The date the prompts see (`RUDDER_DATE`), when pinned.
    prompt_date: Option<String>,
    threads: usize,
    judge_settings: rudder_eval::JudgeSettings,
    /// The research settings of each system, in `systems` order.
    research: Vec<rudder::research::ResearchSettings>,
    command: Vec<String>,
}

/// A run that failed; the sweep goes on without it.
#[derive(serde::Serialize, serde::Deserialize)]
struct RunFailure {
    case_id: String,
    system: String,
    error: String,
}

fn run_eval(
    ctx: &Ctx,
    cases_path: &std::path::Path,
    options: &RunOptions,
    out: &std::path::Path,
) -> anyhow::Result<ExitCode> {
    use rudder::llm::Llm;
    use rudder_eval::replay::ReplayCache;
    use rudder_eval::runner::{research_settings, run_case, RunContext};
    let mut cases = rudder_eval::read_eval_cases(cases_path)?;
    if let Some(n) = options.limit {
        cases.truncate(n);
    }
    let cases_bytes =
        std::fs::read(cases_path).with_context(|| format!("reading {}", cases_path.display()))?;
    let store = ModelStore::open(&ctx.paths)?;
    let embedder = open_embedder(ctx, &store)?;
    let llm = rudder::llm::open_chat(&store, &ctx.settings, ctx.model.as_deref())?;
    // `None`: the system's model judges too, and one copy in memory is enough.
    let separate_judge: Option<Box<dyn Llm>> = match options.judge.as_deref() {
        Some(url) if url.starts_with("http://") || url.starts_with("https://") => {
            eprintln!("judge: {url} — the reports and personas are sent there");
            Some(Box::new(rudder::llm::openai::OpenAiLlm::new(
                &rudder::config::OpenAiSettings {
                    base_url: url.to_string(),
                    model: options.judge_model.clone(),
                    api_key_env: None,
                    max_concurrent: rudder::config::DEFAULT_OPENAI_MAX_CONCURRENT,
                },
            )?))
        }
        Some(name) if name != llm.model_name() => {
            Some(rudder::llm::open_chat(&store, &ctx.settings, Some(name))?)
        }
        _ => None,
    };
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    // Every completion is kept, so a sweep that stops resumes where it was, and identical calls
    // across systems (a shared research root, an identical report) run once.
    let cache_path = out.join("llm-cache.jsonl");
    let cache = ReplayCache::open(llm.as_ref(), &cache_path)
        .with_context(|| format!("opening {}", cache_path.display()))?;
    let judge_cache_path = out.join("llm-cache-judge.jsonl");
    let judge_cache = match &separate_judge {
        Some(judge) => Some(
            ReplayCache::open(judge.as_ref(), &judge_cache_path)
                .with_context(|| format!("opening {}", judge_cache_path.display()))?,
        ),
        None => None,
    };
    let judge_llm: &dyn Llm = match &judge_cache {
        Some(cache) => cache,
        None => &cache,
    };
    let run_ctx = RunContext {
        llm: &cache,
        judge_llm,
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
    let manifest = RunManifest {
        rudder_version: env!("CARGO_PKG_VERSION"),
        started: chrono::Utc::now().to_rfc3339(),
        cases_file: cases_path.display().to_string(),
        cases_sha256: hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&cases_bytes)),
        case_ids: cases.iter().map(|c| c.id.as_str()).collect(),
        case_seeds: cases.iter().map(|c| c.seed).collect(),
        systems: options.systems.iter().map(|s| s.label()).collect(),
        model: llm.model_name().to_string(),
        judge: judge_llm.model_name().to_string(),
        embed_model: ctx.settings.embed_model.clone(),
        docs_dir: run_ctx.docs_dir.display().to_string(),
        prompt_date: std::env::var("RUDDER_DATE").ok(),
        threads: ctx.settings.llama.effective_threads(),
        judge_settings: rudder_eval::JudgeSettings::default(),
        research: options
            .systems
            .iter()
            .map(|&s| research_settings(&run_ctx, s))
            .collect::<Result<_, _>>()?,
        command: std::env::args().collect(),
    };
    std::fs::write(
        out.join("run.json"),
        serde_json::to_string_pretty(&manifest)?,
    )
    .with_context(|| format!("writing {}", out.join("run.json").display()))?;

    let total = (cases.len() * options.systems.len()) as u64;
    let bar = indicatif::ProgressBar::new(total).with_style(
        indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} runs, {elapsed} {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    // Cases run side by side, as many as the model serves at once, so their calls are decoded
    // together; a case's systems run one after another (they share its imported history).
    // Results are written after every run, so a long sweep that stops keeps what it measured,
    // and put back in case order at the end.
    #[derive(Default)]
    struct Done {
        outputs: Vec<(usize, rudder_eval::runner::RunOutput)>,
        failures: Vec<(usize, RunFailure)>,
    }
    let done = std::sync::Mutex::new(Done::default());
    let width = llm.parallelism();
    let written = rudder::llm::map_concurrent(width, &cases, |case_index, case| {
        for (system_index, &system) in options.systems.iter().enumerate() {
            let order = case_index * options.systems.len() + system_index;
            bar.set_message(format!("{} {}", case.id, system.label()));
            let result = run_case(&run_ctx, case, system);
            let mut done = done.lock().unwrap_or_else(|e| e.into_inner());
            match result {
                Ok(output) => done.outputs.push((order, output)),
                Err(e) => {
                    bar.suspend(|| eprintln!("{} {}: {e}", case.id, system.label()));
                    done.failures.push((
                        order,
                        RunFailure {
                            case_id: case.id.clone(),
                            system: system.label(),
                            error: e.to_string(),
                        },
                    ));
                }
            }
            bar.inc(1);
            done.outputs.sort_by_key(|(order, _)| *order);
            done.failures.sort_by_key(|(order, _)| *order);
            let outputs: Vec<_> = done.outputs.iter().map(|(_, o)| o).collect();
            let failures: Vec<_> = done.failures.iter().map(|(_, f)| f).collect();
            write_json(&out.join("records.json"), &outputs)?;
            write_json(&out.join("failures.json"), &failures)?;
        }
        anyhow::Ok(())
    });
    for result in written {
        result?;
    }
    let done = done.into_inner().unwrap_or_else(|e| e.into_inner());
    let records: Vec<_> = done.outputs.iter().map(|(_, o)| o.record.clone()).collect();
    let failures: Vec<RunFailure> = done.failures.into_iter().map(|(_, f)| f).collect();
    bar.finish_and_clear();
    write_summary(out, &records, &failures)?;
    let stats = cache.stats();
    eprintln!(
        "model calls: {} computed, {} replayed from {}",
        stats.computed + judge_cache.as_ref().map_or(0, |c| c.stats().computed),
        stats.replayed + judge_cache.as_ref().map_or(0, |c| c.stats().replayed),
        cache_path.display(),
    );
    Ok(if failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Writes table.md and c0.svg for `records` and prints the table. Systems are compared on the
/// same cases only: a case where any run failed, or that lacks a run of some system (a sweep
/// that was stopped), is left out of every row; its records stay in records.json.
fn write_summary(
    out: &std::path::Path,
    records: &[rudder_eval::summary::RunRecord],
    failures: &[RunFailure],
) -> anyhow::Result<()> {
    let failed: std::collections::BTreeSet<String> =
        failures.iter().map(|f| f.case_id.clone()).collect();
    let (compared, incomplete) = rudder_eval::summary::comparable_records(records, &failed);
    let mut table = rudder_eval::summary::markdown_table(&compared);
    if !failures.is_empty() {
        table.push_str(&format!(
            "\n{} run(s) failed (failures.json); their {} case(s) are left out of every row.\n",
            failures.len(),
            failed.len()
        ));
    }
    if !incomplete.is_empty() {
        table.push_str(&format!(
            "\n{} case(s) without a run of every system are left out of every row: {}.\n",
            incomplete.len(),
            incomplete.join(", ")
        ));
    }
    std::fs::write(out.join("table.md"), &table)
        .with_context(|| format!("writing {}", out.join("table.md").display()))?;
    rudder_eval::summary::plot_against_c0(&compared, &out.join("c0.svg"))?;
    print!("{table}");
    eprintln!(
        "{} runs ({} failed): {}, {}, {}",
        records.len() + failures.len(),
        failures.len(),
        out.join("records.json").display(),
        out.join("table.md").display(),
        out.join("c0.svg").display(),
    );
    Ok(())
}

/// `rudder eval table`: the records of several run folders, summarised together.
fn merge_runs(runs: &[PathBuf], out: &std::path::Path) -> anyhow::Result<ExitCode> {
    #[derive(serde::Deserialize)]
    struct Output {
        record: rudder_eval::summary::RunRecord,
    }
    let mut outputs: Vec<serde_json::Value> = Vec::new();
    let mut records = Vec::new();
    let mut failures = Vec::new();
    for dir in runs {
        let path = dir.join("records.json");
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        let values: Vec<serde_json::Value> =
            serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
        for (index, value) in values.into_iter().enumerate() {
            let output: Output = serde_json::from_value(value.clone())
                .with_context(|| format!("{}: record {}", path.display(), index + 1))?;
            records.push(output.record);
            outputs.push(value);
        }
        let path = dir.join("failures.json");
        if path.exists() {
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("reading {}", path.display()))?;
            let mut more: Vec<RunFailure> = serde_json::from_str(&text)
                .with_context(|| format!("parsing {}", path.display()))?;
            failures.append(&mut more);
        }
    }
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    write_json(&out.join("records.json"), &outputs)?;
    write_json(&out.join("failures.json"), &failures)?;
    write_summary(out, &records, &failures)?;
    Ok(ExitCode::SUCCESS)
}

fn write_json(path: &std::path::Path, value: &impl serde::Serialize) -> anyhow::Result<()> {
    std::fs::write(path, serde_json::to_string_pretty(value)?)
        .with_context(|| format!("writing {}", path.display()))
}

fn build_cases(
    ctx: &Ctx,
    eval_dir: &std::path::Path,
    split: &str,
    options: &rudder_eval::BuildOptions,
    out: &std::path::Path,
) -> anyhow::Result<ExitCode> {
    if options.queries == 0 || options.personas_per_query == 0 {
        anyhow::bail!("--queries and --personas-per-query must be at least 1");
    }
    let source = rudder_eval::EvalSource::load(eval_dir, split)?;
    let store = ModelStore::open(&ctx.paths)?;
    let embedder = open_embedder(ctx, &store)?;
    let model = rudder::llm::open_chat(&store, &ctx.settings, ctx.model.as_deref())?;
    // Kept beside the cases: an interrupted build run again replays what it had generated.
    let cache_path = out.join("llm-cache.jsonl");
    let llm = rudder_eval::replay::ReplayCache::open(model.as_ref(), &cache_path)
        .with_context(|| format!("opening {}", cache_path.display()))?;
    let progress = CountProgress::default();
    let report = rudder_eval::build_cases(&source, &llm, &embedder, options, out, &progress)
        .with_context(|| format!("building cases from {}", source.split_dir.display()))?;
    let summary = serde_json::json!({
        "cases_file": report.cases_file,
        "cases": report.cases.len(),
        "queries": report.queries,
        "seed": options.seed,
        "model": model.model_name(),
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
    let mut cases = rudder_eval::load_cases(&cases_path)?;
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
    let report = rudder_eval::run_retrieval_eval_on(
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

fn relevance(
    ctx: &Ctx,
    out: &std::path::Path,
    set_dir: Option<PathBuf>,
    seed: u64,
    said: bool,
) -> anyhow::Result<ExitCode> {
    use rudder_eval::relevance::{
        calibrate_relevance, markdown, planted_pairs, said_pairs, said_sentences, shipped_pairs,
    };
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let set_dir = set_dir.unwrap_or_else(|| out.join("set"));
    let set = rudder_eval::quality::open_or_write_set(&set_dir, seed)?;
    let store = ModelStore::open(&ctx.paths)?;
    let llm = rudder::llm::open_chat(&store, &ctx.settings, ctx.model.as_deref())?;
    let progress = CountProgress::default();
    let pairs = if said {
        let said = said_sentences(&set, &set_dir, &out.join("histories"), &progress)?;
        said_pairs(&set, &said)
    } else {
        let mut pairs = planted_pairs(&set);
        pairs.extend(shipped_pairs());
        pairs
    };
    let embedder = open_embedder(ctx, &store)?;
    let judge = if said {
        rudder::profile::relevance::Judge::Said
    } else {
        rudder::profile::relevance::Judge::Statement
    };
    let report = calibrate_relevance(llm.as_ref(), Some(&embedder), &pairs, judge, &progress)?;
    rudder_eval::relevance::write(out, &report)?;
    println!("{}", markdown(&report));
    Ok(ExitCode::SUCCESS)
}

fn support_judge(ctx: &Ctx, out: &std::path::Path) -> anyhow::Result<ExitCode> {
    use rudder_eval::support_judge::{calibrate_support_judge, markdown, write};
    let store = ModelStore::open(&ctx.paths)?;
    let embedder = open_embedder(ctx, &store)?;
    let llm = rudder::llm::open_chat(&store, &ctx.settings, ctx.model.as_deref())?;
    let progress = CountProgress::default();
    let pairs = rudder_eval::support_judge::all_pairs();
    let report = calibrate_support_judge(llm.as_ref(), &embedder, &pairs, &progress)?;
    write(out, &report)?;
    println!("{}", markdown(&report));
    Ok(ExitCode::SUCCESS)
}

fn finding_judge(
    ctx: &Ctx,
    out: &std::path::Path,
    set_dir: Option<PathBuf>,
    seed: u64,
) -> anyhow::Result<ExitCode> {
    use rudder_eval::finding_judge::{
        calibrate_finding_judge, markdown, planted_pairs, shipped_pairs,
    };
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let set_dir = set_dir.unwrap_or_else(|| out.join("set"));
    let set = rudder_eval::quality::open_or_write_set(&set_dir, seed)?;
    let store = ModelStore::open(&ctx.paths)?;
    let embedder = open_embedder(ctx, &store)?;
    let llm = rudder::llm::open_chat(&store, &ctx.settings, ctx.model.as_deref())?;
    let mut pairs = shipped_pairs();
    pairs.extend(planted_pairs(&set));
    let progress = CountProgress::default();
    let report = calibrate_finding_judge(llm.as_ref(), &embedder, &pairs, &progress)?;
    rudder_eval::finding_judge::write(out, &report)?;
    println!("{}", markdown(&report));
    Ok(ExitCode::SUCCESS)
}

fn need_judge(ctx: &Ctx, out: &std::path::Path) -> anyhow::Result<ExitCode> {
    use rudder_eval::need_judge::{calibrate_need_judge, markdown, shipped_pairs};
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let store = ModelStore::open(&ctx.paths)?;
    let embedder = open_embedder(ctx, &store)?;
    let llm = rudder::llm::open_chat(&store, &ctx.settings, ctx.model.as_deref())?;
    let progress = CountProgress::default();
    let report = calibrate_need_judge(llm.as_ref(), &embedder, &shipped_pairs(), &progress)?;
    rudder_eval::need_judge::write(out, &report)?;
    println!("{}", markdown(&report));
    Ok(ExitCode::SUCCESS)
}

fn score_reports(
    ctx: &Ctx,
    question: &str,
    reports: &[PathBuf],
    out: &std::path::Path,
) -> anyhow::Result<ExitCode> {
    use rudder_eval::score_report::{
        grounded_question, score_file, table_row, LibraryCorpus, TABLE_HEADER,
    };
    let question = grounded_question(question)?;
    let store = ModelStore::open(&ctx.paths)?;
    let embedder = open_embedder(ctx, &store)?;
    // Calibrated on the shipped support pairs, as `eval quality` does at the start of a run.
    let calibration = rudder_eval::matchers::calibrate_support(
        &embedder,
        &rudder_eval::matchers::support_pairs(),
    )?;
    tracing::info!(
        threshold = calibration.threshold,
        "support matcher calibrated"
    );
    let support = rudder_eval::SupportMatcher::new(&embedder, calibration.threshold);
    let mut corpus =
        LibraryCorpus::open(&ctx.paths.docs_dir(), &embedder, &ctx.settings.embed_model)?;
    let mut table = format!(
        "{}: {}\n\nsupport matcher threshold {:.3} (held out: P {:.2} / R {:.2})\n\n{TABLE_HEADER}",
        question.id,
        question.query,
        calibration.threshold,
        calibration.held_out.precision,
        calibration.held_out.recall
    );
    let mut scores = Vec::new();
    for path in reports {
        let score = score_file(&support, &mut corpus, &question, path)?;
        table.push_str(&table_row(&score));
        scores.push(score);
    }
    let records = serde_json::json!({
        "question": question.id,
        "query": question.query,
        "support_threshold": calibration.threshold,
        "reports": scores,
    });
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    write_json(&out.join("records.json"), &records)?;
    std::fs::write(out.join("table.md"), &table)
        .with_context(|| format!("writing {}", out.join("table.md").display()))?;
    if ctx.json {
        println!("{}", serde_json::to_string_pretty(&records)?);
    } else {
        print!("{table}");
    }
    Ok(ExitCode::SUCCESS)
}

fn quality(
    ctx: &Ctx,
    out: &std::path::Path,
    set_dir: Option<PathBuf>,
    seed: u64,
    eval_dir: Option<PathBuf>,
    options: &QualityOptions,
) -> anyhow::Result<ExitCode> {
    use rudder_eval::replay::ReplayCache;
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let set_dir = set_dir.unwrap_or_else(|| out.join("set"));
    let set = rudder_eval::quality::open_or_write_set(&set_dir, seed)?;
    let store = ModelStore::open(&ctx.paths)?;
    let embedder = open_embedder(ctx, &store)?;
    let llm = rudder::llm::open_chat(&store, &ctx.settings, ctx.model.as_deref())?;
    // Every completion is kept, so an interrupted run resumes where it stopped.
    let cache_path = out.join("llm-cache.jsonl");
    let cache = ReplayCache::open(llm.as_ref(), &cache_path)
        .with_context(|| format!("opening {}", cache_path.display()))?;
    let progress = CountProgress::default();
    let qctx = rudder_eval::quality::QualityContext {
        llm: &cache,
        embedder: &embedder,
        embed_model: ctx.settings.embed_model.clone(),
        set_dir,
        docs_dir: ctx.paths.docs_dir(),
        eval_dir,
        work_dir: out.join("work"),
        progress: &progress,
    };
    // A line every 30 s, so a log shows the run is alive during long model calls.
    let done = std::sync::atomic::AtomicBool::new(false);
    let started = std::time::Instant::now();
    let records = std::thread::scope(|scope| {
        scope.spawn(|| {
            let mut next = 30;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::sleep(std::time::Duration::from_millis(250));
                let elapsed = started.elapsed().as_secs();
                if elapsed >= next {
                    eprintln!("eval quality: {elapsed} s elapsed");
                    next += 30;
                }
            }
        });
        let records = rudder_eval::quality::run_quality(&qctx, &set, options);
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        records
    })?;
    write_json(&out.join("records.json"), &records)?;
    let table = rudder_eval::quality::table::markdown(&records);
    std::fs::write(out.join("table.md"), &table)
        .with_context(|| format!("writing {}", out.join("table.md").display()))?;
    println!("{table}");
    let stats = cache.stats();
    eprintln!(
        "model calls: {} computed, {} replayed from {}",
        stats.computed,
        stats.replayed,
        cache_path.display()
    );
    Ok(if records.failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// clap's own consistency checks over the command line (no global flag clashes with a
    /// subcommand's, defaults parse, …).
    #[test]
    fn the_command_line_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    /// The line `rudder` hands over for `rudder eval table a --out b --threads 3`: `--threads`
    /// after the subcommand's own arguments is the global flag.
    #[test]
    fn threads_is_a_global_flag() {
        let cli = Cli::try_parse_from([
            "rudder",
            "eval",
            "table",
            "a",
            "--out",
            "b",
            "--threads",
            "3",
        ])
        .unwrap();
        assert_eq!(cli.global.threads, Some(3));
    }
}
