//! Runs the systems under comparison on evaluation cases with the same engine and model, and
//! judges every report (STEER §3, Table 1):
//!
//! * `query-only` — the question alone, no persona, no history, no pauses;
//! * `initial-persona` — plus the persona's first sentence (what Rudder is given);
//! * `full-persona` — plus the whole persona text (an upper bound without interaction);
//! * `rudder@C0` — the first sentence, the persona's synthetic history (imported, profiled
//!   and searched) and a simulated user who answers the pauses, at base pause cost C0.
//!
//! Every run gets the same documents, depth, breadth and seed; the report is judged for
//! alignment, Focus_kp, checklist agreement and BESPOKE's criteria, and its tokens, calls and
//! seconds are recorded.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;

use super::cases::EvalCase;
use super::judge::Judge;
use super::persona::{Aspect, PersonaCase};
use super::summary::{RunRecord, StageCost, StageCosts};
use super::user::SimulatedUser;
use super::EvalError;
use crate::replay::Metered;
use rudder::config::ResearchDefaults;
use rudder::embed::Embedder;
use rudder::history::{History, ImportOptions, NoProgress};
use rudder::llm::Llm;
use rudder::research::events::Collect;
use rudder::research::{Brief, Interaction, NeverAsk, ResearchSettings, ResearchState};
use rudder::session::runner::{profile_brief, run_in_memory, RunModels, RunOverrides};
use rudder::sources::docs::DocsSource;
use rudder::sources::history::HistorySourceAdapter;
use rudder::sources::Sources;

/// A system under comparison.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum System {
    QueryOnly,
    InitialPersona,
    FullPersona,
    Rudder { c0: f32 },
}

impl System {
    /// `query-only`, `initial-persona`, `full-persona`, `rudder` (every C0 of the sweep) or
    /// `rudder@0.4`.
    pub fn parse(name: &str, sweep: &[f32]) -> Result<Vec<System>, String> {
        Ok(match name.trim() {
            "query-only" => vec![System::QueryOnly],
            "initial-persona" => vec![System::InitialPersona],
            "full-persona" => vec![System::FullPersona],
            "rudder" => sweep.iter().map(|&c0| System::Rudder { c0 }).collect(),
            other => match other.strip_prefix("rudder@").map(str::parse::<f32>) {
                Some(Ok(c0)) if (0.0..=1.0).contains(&c0) => vec![System::Rudder { c0 }],
                _ => {
                    return Err(format!(
                        "unknown system {other:?} (expected query-only, initial-persona, \
                         full-persona, rudder or rudder@C0 with C0 in [0, 1])"
                    ))
                }
            },
        })
    }

    /// `rudder@0.4` for a Rudder run, else the name.
    pub fn label(&self) -> String {
        match self {
            System::Rudder { c0 } => format!("rudder@{c0}"),
            other => other.name().to_string(),
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            System::QueryOnly => "query-only",
            System::InitialPersona => "initial-persona",
            System::FullPersona => "full-persona",
            System::Rudder { .. } => "rudder",
        }
    }

    pub fn c0(&self) -> Option<f32> {
        match self {
            System::Rudder { c0 } => Some(*c0),
            _ => None,
        }
    }
}

/// What every run shares.
pub struct RunContext<'a> {
    /// The system's model.
    pub llm: &'a dyn Llm,
    /// Judges the reports and plays the user.
    pub judge_llm: &'a dyn Llm,
    pub embedder: &'a dyn Embedder,
    pub embed_model: String,
    /// The document library every system searches (e.g. the Wikipedia corpus).
    pub docs_dir: PathBuf,
    /// The folder `cases.jsonl` is in (history files are relative to it).
    pub cases_dir: PathBuf,
    /// Where per-case histories are imported.
    pub work_dir: PathBuf,
    pub depth: u32,
    pub breadth: u32,
    /// Clarifying questions the simulated user answers in `rudder` runs.
    pub clarify_turns: u32,
}

/// One run's report and its judgement.
#[derive(Debug, Clone, Serialize)]
pub struct RunOutput {
    pub record: RunRecord,
    pub report_markdown: String,
    pub per_aspect: Vec<u8>,
    pub key_points: Vec<String>,
    pub checklist: Vec<String>,
}

fn aspects_of(case: &EvalCase) -> Vec<Aspect> {
    case.aspects
        .iter()
        .map(|a| Aspect {
            aspect: a.aspect.clone(),
            evidence: a.evidence.clone(),
            reason: a.reason.clone(),
        })
        .collect()
}

fn research_error(case: &EvalCase, system: System, e: impl std::fmt::Display) -> EvalError {
    EvalError::Run {
        case: case.id.clone(),
        system: system.name().into(),
        message: e.to_string(),
    }
}

/// The case's history, imported once into the work folder (re-runs reuse it).
fn case_history(ctx: &RunContext, case: &EvalCase) -> Result<History, EvalError> {
    let dir = ctx.work_dir.join(&case.id).join("history");
    let fresh = !dir.exists();
    let mut history = History::open(&dir).map_err(|e| research_error_io(&dir, e))?;
    if fresh {
        let file = ctx.cases_dir.join(&case.history_file);
        history
            .import(
                std::slice::from_ref(&file),
                &ImportOptions::default(),
                &NoProgress,
            )
            .map_err(|e| research_error_io(&file, e))?;
        history
            .embed_pending(ctx.embedder, &ctx.embed_model, &NoProgress)
            .map_err(|e| research_error_io(&dir, e))?;
    }
    Ok(history)
}

fn research_error_io(path: &Path, e: impl std::fmt::Display) -> EvalError {
    EvalError::Io {
        path: path.to_path_buf(),
        source: std::io::Error::other(e.to_string()),
    }
}

/// The research settings a system runs with, resolved as every session's are: the saved
/// defaults (the loop's own) with the evaluation's depth and breadth; `rudder` adds its pause
/// cost and the clarifying turns the simulated user answers.
pub fn research_settings(ctx: &RunContext, system: System) -> Result<ResearchSettings, EvalError> {
    let answers_questions = matches!(system, System::Rudder { .. });
    let overrides = RunOverrides {
        depth: Some(ctx.depth),
        breadth: Some(ctx.breadth),
        clarify_turns: Some(if answers_questions {
            ctx.clarify_turns
        } else {
            0
        }),
        c0: system.c0(),
        ..RunOverrides::default()
    };
    overrides
        .resolve(&ResearchDefaults::default())
        .map_err(|e| EvalError::Config(e.to_string()))
}

/// Runs one system on one case and judges the report.
pub fn run_case(ctx: &RunContext, case: &EvalCase, system: System) -> Result<RunOutput, EvalError> {
    let started = Instant::now();
    let aspects = aspects_of(case);
    let research_llm = Metered::new(ctx.llm);
    let mut profile_cost = StageCost::default();
    let persona = PersonaCase {
        text: case.persona.text.clone(),
        aspects: aspects.clone(),
    };
    let mut sources = Sources::new();
    let docs = DocsSource::open(&ctx.docs_dir).map_err(|e| research_error_io(&ctx.docs_dir, e))?;
    sources.push(Box::new(docs));
    let settings = research_settings(ctx, system)?;
    let mut brief = Brief {
        query: case.query.clone(),
        ..Brief::default()
    };
    match system {
        System::QueryOnly => {}
        System::InitialPersona => brief.persona_text = case.persona.first_sentence.clone(),
        System::FullPersona => brief.persona_text = case.persona.text.clone(),
        System::Rudder { .. } => {
            brief.persona_text = case.persona.first_sentence.clone();
            let mut history = case_history(ctx, case)?;
            let models = RunModels {
                llm: ctx.llm,
                embedder: ctx.embedder,
                embed_model: &ctx.embed_model,
            };
            if let Some(run) = profile_brief(
                models,
                &mut history,
                &mut brief,
                &rudder::profile::ProfileOptions::default(),
            )
            .map_err(|e| research_error(case, system, e))?
            {
                // A cached profile carries the cost of the run that made it.
                profile_cost = StageCost::new(run.usage, run.seconds);
            }
            history
                .release_writer()
                .map_err(|e| research_error(case, system, e))?;
            sources.push(Box::new(HistorySourceAdapter::new(history)));
        }
    }
    let mut never = NeverAsk;
    let mut user = SimulatedUser::new(ctx.judge_llm, persona.clone(), case.query.clone())
        .with_clarification(ctx.clarify_turns > 0);
    let interaction: &mut dyn Interaction = match system {
        System::Rudder { .. } => &mut user,
        _ => &mut never,
    };
    let mut events = Collect::default();
    let models = RunModels {
        llm: &research_llm,
        embedder: ctx.embedder,
        embed_model: &ctx.embed_model,
    };
    let outcome = run_in_memory(
        models,
        &mut sources,
        &brief,
        settings,
        interaction,
        &mut events,
    )
    .map_err(|e| research_error(case, system, e))?;
    let research_metering = research_llm.metering();
    let research_cost = StageCost::new(research_metering.usage, research_metering.seconds);
    let user_cost = {
        let a = user.accounting();
        StageCost::new(a.usage, a.seconds)
    };
    let state = ResearchState::fold(&events.0);
    let checklist = state.persona.checklist.clone();
    let report = &outcome.report.markdown;

    let judge = Judge::new(ctx.judge_llm);
    let alignment = judge.alignment(&case.query, report, &aspects)?;
    let focus = judge.focus_kp(&case.query, report, &aspects)?;
    let agreement = if checklist.is_empty() {
        0.0
    } else {
        judge.checklist_agreement(&case.query, &checklist, &aspects)?
    };
    let bespoke = judge.bespoke(&case.query, report, &case.persona.text)?;
    let judged = judge.accounting();
    tracing::info!(
        case = %case.id,
        system = system.name(),
        judge_calls = judged.usage.calls,
        judge_seconds = judged.seconds,
        "judged"
    );
    Ok(RunOutput {
        record: RunRecord {
            case_id: case.id.clone(),
            system: system.name().into(),
            c0: system.c0(),
            alignment: alignment.score,
            focus: focus.score,
            checklist: Some(agreement),
            bespoke: Some([
                f32::from(bespoke.need_alignment),
                f32::from(bespoke.content_depth),
                f32::from(bespoke.tone),
                f32::from(bespoke.explanation_style),
            ]),
            pauses: outcome.pauses,
            llm_calls: profile_cost.calls + research_cost.calls,
            prompt_tokens: profile_cost.prompt_tokens + research_cost.prompt_tokens,
            generated_tokens: profile_cost.generated_tokens + research_cost.generated_tokens,
            seconds: profile_cost.seconds + research_cost.seconds,
            stages: StageCosts {
                profile: profile_cost,
                research: research_cost,
                user: user_cost,
                judge: StageCost::new(judged.usage, judged.seconds),
            },
            wall_seconds: started.elapsed().as_secs_f64(),
        },
        report_markdown: report.clone(),
        per_aspect: alignment.per_aspect,
        key_points: focus.key_points,
        checklist,
    })
}
