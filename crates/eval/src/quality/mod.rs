//! `rudder eval quality`: what the user gets, measured without a large judge.
//!
//! The material is the planted-needs set of `rudder_synth::planted`: synthetic users whose
//! histories state 4–6 needs per question (a budget, an injury, an expertise level, a tone) in
//! one to three sessions each, among distractors on the same topics. Because the needs were
//! planted, whether a profile or a report takes them up is a matter of matching, and the two
//! matchers of [`crate::matchers`] are calibrated on labelled pairs at the start of every run
//! (their held-out precision and recall go into the table).
//!
//! Stages, in order, each on a sample stated in the table:
//! 1. **Retrieval** (every question of the chosen users): nDCG@10 and recall@20 of the
//!    question's planting sessions for raw, CoT, pseudo-history, facet-probe and fused expansion.
//! 2. **Profile** (`profile` questions): the query-aware profile Rudder builds; *need recall*
//!    is the share of planted needs some profile statement addresses, *citation precision* the
//!    share of the sessions it cites that plant a need of this question.
//! 3. **Report** (`report` questions ⊆ the profile sample) for three systems on the same
//!    engine, model, documents, depth and breadth: `no-history` (the question alone),
//!    `history` (Rudder's path: the profile from the history, and the history as a source) and
//!    `oracle` (the labelled needs handed over as the persona: the ceiling). *Need uptake* is
//!    the share of planted needs some report sentence addresses; hygiene is
//!    [`hygiene::Hygiene`].
//! 4. **Answer coverage** (`researchy` questions of the Researchy dev split, when
//!    `eval_dir` is given): key-point recall of a `no-history` report over the documents, a
//!    key point counting as covered when a report paragraph supports it (the support matcher).
//!
//! Tokens and seconds are recorded per stage. A run that fails is recorded and left out of the
//! means; the others go on.

pub mod findings;
pub mod grounded;
pub mod guides;
pub mod hygiene;
pub mod table;
pub mod tone;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::matchers::{self, Calibration, NeedMatcher, NeedPair, SupportMatcher};
use crate::replay::Metered;
use crate::retrieval::{self, ModeSummary, RetrievalCase, RetrievalReport};
use crate::EvalError;
use findings::{Consistency, FindingCoverage};
use hygiene::{Hygiene, ReportText};
use rudder::config::ResearchDefaults;
use rudder::embed::Embedder;
use rudder::history::{History, Progress};
use rudder::llm::{Llm, Usage};
use rudder::research::events::Collect;
use rudder::research::report::NOT_COVERED_OPENING;
use rudder::research::{Brief, NeverAsk, Outcome};
use rudder::session::runner::{profile_brief, run_in_memory, RunModels, RunOverrides};
use rudder::sources::docs::DocsSource;
use rudder::sources::history::HistorySourceAdapter;
use rudder::sources::Sources;
use rudder_synth::planted::{PlantedNeed, PlantedQuestion, PlantedSet, PlantedUser};

/// A system whose reports are compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReportSystem {
    /// The question alone (`rudder research --no-history`).
    NoHistory,
    /// Rudder's own path: the query-aware profile from the history, and the history searched.
    History,
    /// The labelled needs handed over as the persona: the ceiling of need uptake.
    Oracle,
}

impl ReportSystem {
    pub const ALL: [ReportSystem; 3] = [
        ReportSystem::NoHistory,
        ReportSystem::History,
        ReportSystem::Oracle,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ReportSystem::NoHistory => "no-history",
            ReportSystem::History => "history",
            ReportSystem::Oracle => "oracle",
        }
    }

    pub fn parse(name: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|s| s.name() == name.trim())
            .ok_or_else(|| {
                format!("unknown system {name:?} (expected no-history, history or oracle)")
            })
    }
}

/// What to run. [`QualityOptions::default`] is the default set: about 20 minutes with the
/// default chat model on 2 cores (2 threads), inside the 45-minute budget.
#[derive(Debug, Clone, Serialize)]
pub struct QualityOptions {
    /// Only these users (ids like `u3`); empty: all.
    pub users: Vec<String>,
    /// Only these questions (ids like `u1-q1`), in round-robin order; empty: all.
    #[serde(default)]
    pub questions: Vec<String>,
    /// Questions whose profile is built (taken round-robin over the users: every user's first
    /// question, then every user's second, …).
    pub profile_questions: usize,
    /// Questions whose reports are written, by every system (the first ones of the profile
    /// sample).
    pub report_questions: usize,
    pub systems: Vec<ReportSystem>,
    /// Researchy questions for answer coverage (needs `eval_dir`).
    pub researchy_questions: usize,
    /// Corpus-grounded questions for answer coverage (`data/grounded.jsonl`; their key points
    /// are in the offline Wikipedia corpus, which the reports then need installed).
    pub grounded_questions: usize,
    /// Users asked another user's question with their own history, to measure false
    /// personalisation (the profile, and the report when reports run, state a need of theirs
    /// that belongs to another question). Taken from the users of the profile sample, in
    /// order; 0 skips the measure. With no report questions only the profiles are built.
    pub foreign_questions: usize,
    /// Read each user's history into memory after importing it (`rudder history remember`),
    /// and measure what that costs.
    pub memory: bool,
    /// Remembered statements each profile judges for its question
    /// ([`rudder::profile::ProfileOptions::memory_candidates`]; 0, Rudder's default, leaves
    /// memory out of profiles).
    pub memory_candidates: usize,
    /// Read at most this many sessions of each user's history into memory (None: all of it;
    /// the tests read a part, the measure reads everything).
    pub memory_limit: Option<usize>,
    /// [`rudder::profile::ProfileOptions::probe_only_margin`] (None: Rudder's default).
    pub probe_only_margin: Option<f32>,
    pub depth: u32,
    pub breadth: u32,
    /// The report's support judge threshold (None: Rudder's default; 0: the embedding match
    /// alone), to measure the writer with and without it.
    pub support_judge: Option<f32>,
    /// The report's finding judge threshold (None: Rudder's default; 0: the embedding cuts
    /// alone).
    pub finding_judge: Option<f32>,
    /// Reports also search [`guides`]: neutral documents on the subjects of some planted
    /// questions, which the Wikipedia corpus does not cover.
    #[serde(default)]
    pub guides: bool,
}

impl Default for QualityOptions {
    fn default() -> Self {
        QualityOptions {
            users: Vec::new(),
            questions: Vec::new(),
            profile_questions: 8,
            // 8 questions over the 8 users: 32 or more needs per system.
            report_questions: 8,
            systems: ReportSystem::ALL.to_vec(),
            researchy_questions: 1,
            grounded_questions: 3,
            foreign_questions: 4,
            // Reading a whole planted history takes the 1.5B model about 5 minutes a user on
            // two cores (13 minutes per 1,000 sessions), and profiles leave memory out by
            // default: asked for with --memory.
            memory: false,
            memory_candidates: 0,
            memory_limit: None,
            probe_only_margin: None,
            depth: 1,
            breadth: 1,
            support_judge: None,
            finding_judge: None,
            guides: false,
        }
    }
}

/// What every stage shares.
pub struct QualityContext<'a> {
    pub llm: &'a dyn Llm,
    pub embedder: &'a dyn Embedder,
    pub embed_model: String,
    /// The planted set's folder (`labels.json` and the users' export folders).
    pub set_dir: PathBuf,
    /// The document library the reports search (the Wikipedia corpus, say).
    pub docs_dir: PathBuf,
    /// The evaluation material with the Researchy split, if answer coverage is wanted.
    pub eval_dir: Option<PathBuf>,
    /// Scratch histories go here.
    pub work_dir: PathBuf,
    pub progress: &'a (dyn Progress + Sync),
}

/// Tokens and seconds of one stage, summed over its runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    pub calls: u64,
    pub prompt_tokens: u64,
    /// Prompt tokens served from the KV cache of the call before (a shared prefix), not
    /// processed again.
    #[serde(default)]
    pub cached_tokens: u64,
    pub generated_tokens: u64,
    pub seconds: f64,
}

impl Cost {
    pub fn new(usage: Usage, seconds: f64) -> Self {
        Cost {
            calls: usage.calls,
            prompt_tokens: usage.prompt_tokens,
            cached_tokens: usage.cached_tokens,
            generated_tokens: usage.generated_tokens,
            seconds,
        }
    }

    fn add(&mut self, other: Cost) {
        self.calls += other.calls;
        self.prompt_tokens += other.prompt_tokens;
        self.cached_tokens += other.cached_tokens;
        self.generated_tokens += other.generated_tokens;
        self.seconds += other.seconds;
    }
}

/// The matchers' calibrations.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Calibrations {
    /// Report sentences against needs.
    pub need: Calibration,
    pub support: Calibration,
    /// Profile statements against needs (absent from records written before it existed).
    #[serde(default)]
    pub profile_need: Option<Calibration>,
}

/// One question's profile.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProfileRecord {
    pub question: String,
    pub user: String,
    pub query: String,
    pub needs: usize,
    /// Ids of the needs some statement addresses.
    pub needs_stated: Vec<String>,
    pub need_recall: f64,
    /// Distinct sessions the statements cite.
    pub cited_sessions: usize,
    /// Of those, sessions that plant a need of this question.
    pub cited_planted: usize,
    /// `None` when the profile cites nothing.
    pub citation_precision: Option<f64>,
    /// Every statement, with its criterion.
    pub statements: Vec<String>,
    /// How the report would be written for this user ([`rudder::research::report::answer_style`]
    /// of the profile).
    #[serde(default)]
    pub style: rudder::research::report::AnswerStyle,
    /// The forms the user's tone need asks for (bullets, checklist, steps, short), when it asks
    /// for any: a style holds for every question the user asks, so it is scored on all of them.
    #[serde(default)]
    pub style_asked: Vec<String>,
    /// Whether `style` gives every form of `style_asked` ([`tone::style_gives`]).
    #[serde(default)]
    pub style_given: bool,
    /// What the history says of the user that the judge did not keep, looked up in the
    /// documents before the report ([`rudder::profile::QueryProfile::considered`]).
    #[serde(default)]
    pub considered: Vec<String>,
    pub cost: Cost,
}

/// One user's history read into memory ([`rudder::profile::memory`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MemoryRecord {
    pub user: String,
    /// Sessions read by the model, and skipped by the cheap check.
    pub read: usize,
    pub skipped: usize,
    pub statements: usize,
    /// Sessions (read and skipped) per second.
    pub sessions_per_second: f64,
    pub cost: Cost,
}

/// One report of one system on one question.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReportRecord {
    pub question: String,
    pub system: ReportSystem,
    pub needs: usize,
    pub needs_addressed: Vec<String>,
    pub need_uptake: f64,
    /// Needs that only a "The sources found do not cover: …" item names: not met, but named
    /// to the reader (on another user's question, a personal fact dragged in all the same).
    #[serde(default)]
    pub needs_named_not_covered: Vec<String>,
    /// Tone needs met by the report's form ([`tone::met_by_form`]; also in `needs_addressed`).
    #[serde(default)]
    pub needs_met_by_form: Vec<String>,
    pub hygiene: Hygiene,
    #[serde(default)]
    pub findings: FindingCoverage,
    #[serde(default)]
    pub consistency: Consistency,
    /// Per stage of the research loop (and `profile` for the history system).
    pub cost: BTreeMap<String, Cost>,
    pub seconds: f64,
    pub markdown: String,
}

/// Answer coverage on one Researchy or corpus-grounded question.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CoverageRecord {
    pub id: String,
    /// `researchy` or `grounded` (the key points are in the offline corpus).
    #[serde(default = "researchy")]
    pub set: String,
    pub query: String,
    pub key_points: usize,
    pub covered: Vec<usize>,
    pub recall: f64,
    pub hygiene: Hygiene,
    #[serde(default)]
    pub findings: FindingCoverage,
    #[serde(default)]
    pub consistency: Consistency,
    pub cost: BTreeMap<String, Cost>,
    pub seconds: f64,
    pub markdown: String,
}

fn researchy() -> String {
    "researchy".into()
}

/// A run that failed; the evaluation goes on without it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Failure {
    pub stage: String,
    pub item: String,
    pub error: String,
}

/// Which questions each stage ran on.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Sample {
    pub users: Vec<String>,
    pub retrieval: Vec<String>,
    pub profile: Vec<String>,
    pub report: Vec<String>,
    pub researchy: Vec<String>,
    #[serde(default)]
    pub grounded: Vec<String>,
    /// Whether the reports also searched [`guides`].
    #[serde(default)]
    pub guides: bool,
}

/// Everything one run measured (`records.json`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct QualityRecords {
    pub model: String,
    pub embed_model: String,
    pub seed: u64,
    pub depth: u32,
    pub breadth: u32,
    pub sample: Sample,
    pub calibration: Calibrations,
    pub retrieval: Option<RetrievalReport>,
    pub profiles: Vec<ProfileRecord>,
    pub reports: Vec<ReportRecord>,
    /// History reports on another user's question ([`QualityOptions::foreign_questions`]):
    /// each record's needs are the asking user's own (tone needs aside, which hold for every
    /// question), so a need "addressed" is a need dragged in from another question.
    #[serde(default)]
    pub foreign: Vec<ReportRecord>,
    /// The profiles of those foreign questions, scored against the asking user's own needs
    /// (`needs_stated`: needs of theirs a statement states; `cited_planted`: cited sessions
    /// that plant one of them). Built also when no report runs.
    #[serde(default)]
    pub foreign_profiles: Vec<ProfileRecord>,
    /// The users' histories read into memory (empty when [`QualityOptions::memory`] is off).
    #[serde(default)]
    pub memory: Vec<MemoryRecord>,
    pub coverage: Vec<CoverageRecord>,
    pub failures: Vec<Failure>,
    pub seconds: f64,
}

impl QualityRecords {
    /// The share of foreign-question profiles that state a need of their user's that belongs
    /// to another question; `None` when none ran.
    pub fn profile_false_personalisation(&self) -> Option<f64> {
        (!self.foreign_profiles.is_empty()).then(|| {
            share(
                self.foreign_profiles
                    .iter()
                    .filter(|p| !p.needs_stated.is_empty())
                    .count(),
                self.foreign_profiles.len(),
            )
        })
    }

    /// The share of foreign-question reports that state a need of their user's, as advice or
    /// as an item the sources "do not cover" (false personalisation); `None` when none ran.
    pub fn false_personalisation(&self) -> Option<f64> {
        (!self.foreign.is_empty()).then(|| {
            share(
                self.foreign
                    .iter()
                    .filter(|r| {
                        !r.needs_addressed.is_empty() || !r.needs_named_not_covered.is_empty()
                    })
                    .count(),
                self.foreign.len(),
            )
        })
    }
}

impl QualityRecords {
    /// Retrieval means per mode.
    pub fn retrieval_modes(&self) -> &[ModeSummary] {
        self.retrieval.as_ref().map_or(&[], |r| r.modes.as_slice())
    }
}

/// Need pairs from the set's labels: each need's addressing sentences (positives) and the
/// sentences that only mention its words (hard negatives), grouped by need.
pub fn need_pairs(set: &PlantedSet) -> Vec<NeedPair> {
    let mut pairs = Vec::new();
    for need in set
        .users
        .iter()
        .flat_map(|u| &u.questions)
        .flat_map(|q| &q.needs)
    {
        for (sentences, addresses) in [(&need.addressing, true), (&need.mentioning, false)] {
            for sentence in sentences {
                pairs.push(NeedPair {
                    group: need.id.clone(),
                    sentence: sentence.clone(),
                    statement: need.statement.clone(),
                    specifics: need.specifics.clone(),
                    addresses,
                });
            }
        }
    }
    pairs
}

/// The questions of `users` round-robin: every user's first question, then every second, ….
fn round_robin<'a>(users: &[&'a PlantedUser]) -> Vec<(&'a PlantedUser, &'a PlantedQuestion)> {
    let most = users.iter().map(|u| u.questions.len()).max().unwrap_or(0);
    (0..most)
        .flat_map(|i| {
            users
                .iter()
                .filter_map(move |u| u.questions.get(i).map(|q| (*u, q)))
        })
        .collect()
}

/// Runs the whole evaluation on `set` (see the module docs).
pub fn run_quality(
    ctx: &QualityContext,
    set: &PlantedSet,
    options: &QualityOptions,
) -> Result<QualityRecords, EvalError> {
    let started = Instant::now();
    let users: Vec<&PlantedUser> = set
        .users
        .iter()
        .filter(|u| options.users.is_empty() || options.users.contains(&u.id))
        .collect();
    if users.is_empty() {
        return Err(EvalError::Config(format!(
            "no user of the set is among {:?}",
            options.users
        )));
    }
    for id in &options.users {
        if !set.users.iter().any(|u| &u.id == id) {
            return Err(EvalError::Config(format!("the set has no user {id:?}")));
        }
    }
    // With the guides and no question named, the sample is the questions they cover, of the
    // users chosen.
    let questions: Vec<String> = if options.guides && options.questions.is_empty() {
        let guided: Vec<String> = guides::questions()
            .into_iter()
            .filter(|q| users.iter().any(|u| u.questions.iter().any(|p| p.id == *q)))
            .map(String::from)
            .collect();
        if guided.is_empty() {
            return Err(EvalError::Config(format!(
                "no user among {:?} asks a question the guides cover ({:?})",
                options.users,
                guides::questions()
            )));
        }
        guided
    } else {
        options.questions.clone()
    };
    let ordered: Vec<_> = round_robin(&users)
        .into_iter()
        .filter(|(_, q)| questions.is_empty() || questions.contains(&q.id))
        .collect();
    for id in &questions {
        if !ordered.iter().any(|(_, q)| &q.id == id) {
            return Err(EvalError::Config(format!(
                "no question {id:?} among the users of the sample"
            )));
        }
    }
    let profile_n = options.profile_questions.max(options.report_questions);
    let profile_sample: Vec<_> = ordered.iter().take(profile_n).copied().collect();
    let report_sample: Vec<_> = ordered
        .iter()
        .take(options.report_questions)
        .copied()
        .collect();

    ctx.progress
        .note("calibrating the need and support matchers");
    let profile_need =
        matchers::calibrate_profile_need(ctx.embedder, &matchers::profile_need_pairs())?;
    // A profile statement says what the person needs; it is matched as one, not as advice.
    let profile_needs = NeedMatcher::for_profiles(ctx.embedder, profile_need.threshold);
    let calibration = Calibrations {
        need: matchers::calibrate_need(ctx.embedder, &need_pairs(set))?,
        support: matchers::calibrate_support(ctx.embedder, &matchers::support_pairs())?,
        profile_need: Some(profile_need),
    };
    let needs = NeedMatcher::new(ctx.embedder, calibration.need.threshold);
    let support = SupportMatcher::new(ctx.embedder, calibration.support.threshold);
    if options.guides {
        ctx.progress.note("indexing the guides");
        guides::index(&ctx.work_dir, ctx.embedder, &ctx.embed_model, ctx.progress)?;
    }

    let mut records = QualityRecords {
        model: ctx.llm.model_name().to_string(),
        embed_model: ctx.embed_model.clone(),
        seed: set.seed,
        depth: options.depth,
        breadth: options.breadth,
        sample: Sample {
            users: users.iter().map(|u| u.id.clone()).collect(),
            retrieval: ordered.iter().map(|(_, q)| q.id.clone()).collect(),
            profile: profile_sample.iter().map(|(_, q)| q.id.clone()).collect(),
            report: report_sample.iter().map(|(_, q)| q.id.clone()).collect(),
            researchy: Vec::new(),
            grounded: Vec::new(),
            guides: options.guides,
        },
        calibration,
        retrieval: None,
        profiles: Vec::new(),
        reports: Vec::new(),
        foreign: Vec::new(),
        foreign_profiles: Vec::new(),
        memory: Vec::new(),
        coverage: Vec::new(),
        failures: Vec::new(),
        seconds: 0.0,
    };

    // 1. Retrieval of the planting sessions.
    let cases: Vec<RetrievalCase> = ordered
        .iter()
        .map(|(u, q)| RetrievalCase {
            id: q.id.clone(),
            user: u.id.clone(),
            history: u.export.clone(),
            query: q.query.clone(),
            category: Default::default(),
            relevant_topics: Vec::new(),
            why: String::new(),
            relevant: planted_sessions(q).into_iter().collect(),
        })
        .collect();
    match retrieval::run_retrieval_eval_on(
        &cases,
        &ctx.set_dir,
        "planted-needs set",
        ctx.llm,
        (ctx.embedder, &ctx.embed_model),
        &ctx.work_dir.join("retrieval"),
        ctx.progress,
    ) {
        Ok(report) => records.retrieval = Some(report),
        Err(e) => records.failures.push(Failure {
            stage: "retrieval".into(),
            item: "all".into(),
            error: e.to_string(),
        }),
    }

    // 2 and 3. Profiles, then reports, one user's history at a time.
    let docs_empty = !ctx.docs_dir.exists();
    // Each user's history as read in this run (with its memory), for the foreign questions.
    let mut history_dirs: HashMap<String, PathBuf> = HashMap::new();
    for (index, user) in users.iter().enumerate() {
        let questions: Vec<&PlantedQuestion> = profile_sample
            .iter()
            .filter(|(u, _)| u.id == user.id)
            .map(|(_, q)| *q)
            .collect();
        if questions.is_empty() {
            continue;
        }
        let (mut history, ids) = match import_user(ctx, index, user).and_then(|(mut h, ids)| {
            if options.memory {
                records
                    .memory
                    .push(remember(ctx, &mut h, user, options.memory_limit)?);
            }
            Ok((h, ids))
        }) {
            Ok(h) => h,
            Err(e) => {
                for q in &questions {
                    records.failures.push(Failure {
                        stage: "profile".into(),
                        item: q.id.clone(),
                        error: e.to_string(),
                    });
                }
                continue;
            }
        };
        history_dirs.insert(user.id.clone(), history.dir().to_path_buf());
        let mut profiles: HashMap<String, Brief> = HashMap::new();
        for question in &questions {
            ctx.progress.note(&format!("profile {}", question.id));
            match profile_question(
                ctx,
                &profile_needs,
                &mut history,
                &ids,
                user,
                question,
                options,
            ) {
                Ok((record, profiled)) => {
                    ctx.progress.note(&format!(
                        "profile {}: need recall {:.2}, citation precision {}",
                        question.id,
                        record.need_recall,
                        record
                            .citation_precision
                            .map_or("-".to_string(), |p| format!("{p:.2}"))
                    ));
                    profiles.insert(question.id.clone(), profiled);
                    records.profiles.push(record);
                }
                Err(e) => records.failures.push(Failure {
                    stage: "profile".into(),
                    item: question.id.clone(),
                    error: e.to_string(),
                }),
            }
        }
        history.release_writer()?;
        let history_dir = history.dir().to_path_buf();
        drop(history);
        // The user's reports run side by side, as many as the model serves at once; each
        // history run opens its own reader of the user's history. Records keep sample order.
        let jobs: Vec<(&PlantedQuestion, ReportSystem)> = report_sample
            .iter()
            .filter(|(u, _)| u.id == user.id)
            .flat_map(|(_, q)| options.systems.iter().map(move |&s| (*q, s)))
            .collect();
        let results =
            rudder::llm::map_concurrent(ctx.llm.parallelism(), &jobs, |_, &(question, system)| {
                let item = format!("{} {}", question.id, system.name());
                ctx.progress.note(&format!("report {item}"));
                let profile = profiles.get(&question.id).cloned();
                let mut history = match system {
                    ReportSystem::History => Some(History::open(&history_dir)?),
                    _ => None,
                };
                report_run(
                    ctx,
                    options,
                    &needs,
                    &support,
                    question,
                    system,
                    profile,
                    &mut history,
                )
            });
        for ((question, system), result) in jobs.iter().zip(results) {
            let item = format!("{} {}", question.id, system.name());
            match result {
                Ok(record) => {
                    ctx.progress.note(&format!(
                        "report {item}: need uptake {:.2}, repetition {:.2}, {} words",
                        record.need_uptake,
                        record.hygiene.repetition(),
                        record.hygiene.words
                    ));
                    records.reports.push(record);
                }
                Err(e) => records.failures.push(Failure {
                    stage: "report".into(),
                    item,
                    error: e.to_string(),
                }),
            }
        }
    }
    if docs_empty {
        tracing::warn!(dir = %ctx.docs_dir.display(), "no document library: reports use history only");
    }

    // False personalisation: a user asks the next user's first question, whose subject their
    // history says nothing about; the report must not state their needs for other questions.
    let mut askers: Vec<&PlantedUser> = Vec::new();
    for (u, _) in &profile_sample {
        if askers.len() < options.foreign_questions && !askers.iter().any(|a| a.id == u.id) {
            askers.push(u);
        }
    }
    for (index, user) in askers.iter().enumerate() {
        let position = set.users.iter().position(|u| u.id == user.id).unwrap_or(0);
        let Some(asked) = set.users[(position + 1) % set.users.len()]
            .questions
            .first()
        else {
            continue;
        };
        let item = format!("{}@{}", asked.id, user.id);
        ctx.progress.note(&format!("false personalisation {item}"));
        let main_dir = history_dirs.get(&user.id).map(PathBuf::as_path);
        let report = !report_sample.is_empty();
        match foreign_run(
            ctx,
            options,
            &needs,
            &profile_needs,
            &support,
            index,
            user,
            asked,
            main_dir,
            report,
        ) {
            Ok((profile, record)) => {
                ctx.progress.note(&format!(
                    "false personalisation {item}: {} of the user's needs in the profile, {} in \
                     the report",
                    profile.needs_stated.len(),
                    record
                        .as_ref()
                        .map_or("-".to_string(), |r| r.needs_addressed.len().to_string())
                ));
                records.foreign_profiles.push(profile);
                records.foreign.extend(record);
            }
            Err(e) => records.failures.push(Failure {
                stage: "false personalisation".into(),
                item,
                error: e.to_string(),
            }),
        }
    }

    // 4. Answer coverage on Researchy questions (key points the corpus may not hold) and on
    // corpus-grounded ones (key points it does hold, so recall measures the writer).
    // (set, id, query, key points)
    let mut questions: Vec<(&str, String, String, Vec<String>)> = Vec::new();
    if let (Some(eval_dir), n) = (&ctx.eval_dir, options.researchy_questions) {
        if n > 0 {
            let source = crate::cases::EvalSource::load(eval_dir, "researchy-dev")?;
            for q in &source.queries {
                if questions.len() == n {
                    break;
                }
                let key_points = source.key_points(&q.id)?;
                if !key_points.is_empty() {
                    questions.push(("researchy", q.id.clone(), q.query.clone(), key_points));
                }
            }
        }
    }
    for q in grounded::questions()?
        .into_iter()
        .take(options.grounded_questions)
    {
        questions.push(("grounded", q.id, q.query, q.key_points));
    }
    let results = rudder::llm::map_concurrent(
        ctx.llm.parallelism(),
        &questions,
        |_, (set, id, query, key_points)| {
            ctx.progress.note(&format!("answer coverage {id}"));
            coverage_run(ctx, options, &support, set, id, query, key_points)
        },
    );
    for ((set, id, _, _), result) in questions.iter().zip(results) {
        match *set {
            "grounded" => records.sample.grounded.push(id.clone()),
            _ => records.sample.researchy.push(id.clone()),
        }
        match result {
            Ok(record) => records.coverage.push(record),
            Err(e) => records.failures.push(Failure {
                stage: "coverage".into(),
                item: id.clone(),
                error: e.to_string(),
            }),
        }
    }
    records.seconds = started.elapsed().as_secs_f64();
    Ok(records)
}

/// Every session that plants a need of `question`.
fn planted_sessions(question: &PlantedQuestion) -> BTreeSet<String> {
    question
        .needs
        .iter()
        .flat_map(|n| n.sessions.iter().cloned())
        .collect()
}

/// Imports `user`'s export into a fresh scratch history and embeds it; returns it with its
/// session ids by content hash.
fn import_user(
    ctx: &QualityContext,
    index: usize,
    user: &PlantedUser,
) -> Result<(History, HashMap<String, i64>), EvalError> {
    let export = ctx.set_dir.join(&user.export);
    let dir = retrieval::scratch_dir(&ctx.work_dir.join("histories"), index, &user.id)?;
    let (mut history, _) = retrieval::import_scratch(&dir, &export, &user.id, ctx.progress)?;
    history.embed_pending(ctx.embedder, &ctx.embed_model, ctx.progress)?;
    let ids = retrieval::ids_by_hash(&history)?;
    Ok((history, ids))
}

/// Reads `user`'s imported history into memory, as Rudder does after an import.
fn remember(
    ctx: &QualityContext,
    history: &mut History,
    user: &PlantedUser,
    limit: Option<usize>,
) -> Result<MemoryRecord, EvalError> {
    ctx.progress.note(&format!("memory {}", user.id));
    let done = rudder::profile::memory::remember(
        ctx.llm,
        history,
        Some(ctx.embedder),
        &rudder::profile::memory::RememberOptions {
            limit,
            ..Default::default()
        },
        ctx.progress,
    )
    .map_err(|e| run_error(&user.id, "memory", e))?;
    let statements = history
        .store()
        .memory()
        .map_err(|e| run_error(&user.id, "memory", e))?
        .len();
    ctx.progress.note(&format!(
        "memory {}: {} sessions read, {} skipped, {statements} statements, {:.2} sessions/s",
        user.id,
        done.read,
        done.skipped,
        done.sessions_per_second()
    ));
    Ok(MemoryRecord {
        user: user.id.clone(),
        read: done.read,
        skipped: done.skipped,
        statements,
        sessions_per_second: done.sessions_per_second(),
        cost: Cost::new(done.usage, done.seconds),
    })
}

/// The needs some of `sentences` address, by id.
fn needs_addressed(
    matcher: &NeedMatcher,
    sentences: &[String],
    needs: &[PlantedNeed],
) -> Result<Vec<String>, EvalError> {
    let mut out = Vec::new();
    for need in needs {
        for s in sentences {
            let target = matchers::Need {
                statement: need.statement.clone(),
                specifics: need.specifics.clone(),
            };
            if matcher.addresses(s, &target)? {
                out.push(need.id.clone());
                break;
            }
        }
    }
    Ok(out)
}

fn share(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// The profile options of every profile this evaluation builds: Rudder's defaults, with
/// [`QualityOptions::memory_candidates`] remembered statements judged.
fn profile_options(options: &QualityOptions) -> rudder::profile::ProfileOptions {
    let defaults = rudder::profile::ProfileOptions::default();
    rudder::profile::ProfileOptions {
        memory_candidates: options.memory_candidates,
        probe_only_margin: options
            .probe_only_margin
            .unwrap_or(defaults.probe_only_margin),
        ..defaults
    }
}

/// Builds the query-aware profile Rudder's own path builds, and scores it (`needs`: the
/// profile-statement matcher).
fn profile_question(
    ctx: &QualityContext,
    needs: &NeedMatcher,
    history: &mut History,
    ids: &HashMap<String, i64>,
    user: &PlantedUser,
    question: &PlantedQuestion,
    options: &QualityOptions,
) -> Result<(ProfileRecord, Brief), EvalError> {
    let models = RunModels {
        llm: ctx.llm,
        embedder: ctx.embedder,
        embed_model: &ctx.embed_model,
    };
    let mut brief = Brief {
        query: question.query.clone(),
        ..Brief::default()
    };
    let run = profile_brief(models, history, &mut brief, &profile_options(options))
        .map_err(|e| run_error(&question.id, "profile", e))?
        .ok_or_else(|| run_error(&question.id, "profile", "no profile was built"))?;
    let statements: Vec<(&str, &rudder::profile::query_profile::Statement)> =
        run.profile.statements();
    let texts: Vec<String> = statements.iter().map(|(_, s)| s.text.clone()).collect();
    let stated = needs_addressed(needs, &texts, &question.needs)?;
    let planted: BTreeSet<i64> = planted_sessions(question)
        .iter()
        .filter_map(|h| ids.get(h).copied())
        .collect();
    let cited: BTreeSet<i64> = statements
        .iter()
        .flat_map(|(_, s)| s.sessions.iter().copied())
        .collect();
    let cited_planted = cited.intersection(&planted).count();
    let style = rudder::research::report::answer_style(&brief.profile, &[]);
    let asked = user
        .questions
        .iter()
        .flat_map(|q| &q.needs)
        .map(tone::asked)
        .find(tone::Asked::any)
        .unwrap_or_default();
    let style_asked: Vec<String> = [
        (asked.bullets, "bullets"),
        (asked.checklist, "checklist"),
        (asked.steps, "steps"),
        (asked.short, "short"),
    ]
    .iter()
    .filter(|(on, _)| *on)
    .map(|(_, name)| name.to_string())
    .collect();
    Ok((
        ProfileRecord {
            question: question.id.clone(),
            user: user.id.clone(),
            query: question.query.clone(),
            needs: question.needs.len(),
            need_recall: share(stated.len(), question.needs.len()),
            needs_stated: stated,
            cited_sessions: cited.len(),
            cited_planted,
            citation_precision: (!cited.is_empty()).then(|| share(cited_planted, cited.len())),
            statements: statements
                .iter()
                .map(|(criterion, s)| format!("{criterion}: {}", s.text))
                .collect(),
            style_given: tone::style_gives(asked, &style),
            style,
            style_asked,
            considered: brief.considered.clone(),
            cost: Cost::new(run.usage, run.seconds),
        },
        brief,
    ))
}

fn run_error(item: &str, system: &str, e: impl std::fmt::Display) -> EvalError {
    EvalError::Run {
        case: item.to_string(),
        system: system.to_string(),
        message: e.to_string(),
    }
}

/// The research settings every report is written with: the loop's defaults with the
/// evaluation's depth and breadth, no clarifying questions, no pauses.
fn settings(options: &QualityOptions) -> Result<rudder::research::ResearchSettings, EvalError> {
    RunOverrides {
        depth: Some(options.depth),
        breadth: Some(options.breadth),
        clarify_turns: Some(0),
        support_judge: options.support_judge,
        finding_judge: options.finding_judge,
        ..RunOverrides::default()
    }
    .resolve(&ResearchDefaults::default())
    .map_err(|e| EvalError::Config(e.to_string()))
}

/// Runs the research loop on `brief` over the documents (and `history`, when given), with
/// the model metered per stage.
fn research(
    ctx: &QualityContext,
    options: &QualityOptions,
    brief: &Brief,
    history: Option<History>,
    item: &str,
    system: &str,
) -> Result<(Outcome, BTreeMap<String, Cost>, f64), EvalError> {
    let started = Instant::now();
    let mut sources = Sources::new();
    if ctx.docs_dir.exists() {
        let docs = DocsSource::open(&ctx.docs_dir).map_err(|e| run_error(item, system, e))?;
        sources.push(Box::new(docs));
    }
    if options.guides {
        let dir = guides::library_dir(&ctx.work_dir);
        let docs = DocsSource::open(&dir).map_err(|e| run_error(item, system, e))?;
        sources.push(Box::new(docs));
    }
    if let Some(history) = history {
        sources.push(Box::new(HistorySourceAdapter::new(history)));
    }
    let metered = Metered::new(ctx.llm);
    let models = RunModels {
        llm: &metered,
        embedder: ctx.embedder,
        embed_model: &ctx.embed_model,
    };
    let outcome = run_in_memory(
        models,
        &mut sources,
        brief,
        settings(options)?,
        &mut NeverAsk,
        &mut Collect::default(),
    )
    .map_err(|e| run_error(item, system, e))?;
    let cost = outcome
        .by_stage
        .iter()
        .map(|(stage, c)| (stage.as_str().to_string(), Cost::new(c.usage, c.seconds)))
        .collect();
    Ok((outcome, cost, started.elapsed().as_secs_f64()))
}

/// One system's report on one question, scored.
#[allow(clippy::too_many_arguments)]
fn report_run(
    ctx: &QualityContext,
    options: &QualityOptions,
    needs: &NeedMatcher,
    support: &SupportMatcher,
    question: &PlantedQuestion,
    system: ReportSystem,
    profiled: Option<Brief>,
    history: &mut Option<History>,
) -> Result<ReportRecord, EvalError> {
    let item = question.id.as_str();
    let mut brief = Brief {
        query: question.query.clone(),
        ..Brief::default()
    };
    let history_source = match system {
        ReportSystem::NoHistory => None,
        ReportSystem::Oracle => {
            brief.persona_text = question
                .needs
                .iter()
                .map(|n| n.statement.as_str())
                .collect::<Vec<_>>()
                .join(" ");
            None
        }
        ReportSystem::History => {
            let profiled = profiled.ok_or_else(|| {
                run_error(
                    item,
                    system.name(),
                    "its profile failed, so it has no report",
                )
            })?;
            brief.profile = profiled.profile;
            brief.considered = profiled.considered;
            // The history moves into the source for this run and is reopened after it.
            Some(history.take().ok_or_else(|| {
                run_error(item, system.name(), "the history could not be reopened")
            })?)
        }
    };
    let dir = history_source.as_ref().map(|h| h.dir().to_path_buf());
    let result = research(ctx, options, &brief, history_source, item, system.name());
    if let Some(dir) = dir {
        *history = Some(History::open(&dir)?);
    }
    let (outcome, cost, seconds) = result?;
    let text = ReportText::from_report(&outcome.report, &outcome.evidence);
    // A sentence saying the sources do not cover a need names it without meeting it.
    let sentences: Vec<String> = text
        .content_sentences()
        .into_iter()
        .map(|(s, _)| s)
        .filter(|s| !s.trim_start().starts_with(NOT_COVERED_OPENING))
        .collect();
    let mut addressed = needs_addressed(needs, &sentences, &question.needs)?;
    // A tone need is met by the report's form ("short answers in bullet points"), which no
    // sentence states.
    let by_form: Vec<String> = question
        .needs
        .iter()
        .filter(|n| !addressed.contains(&n.id) && tone::met_by_form(n, &outcome.report.markdown))
        .map(|n| n.id.clone())
        .collect();
    addressed.extend(by_form.iter().cloned());
    let not_covered: Vec<String> = text
        .content_sentences()
        .into_iter()
        .filter_map(|(s, _)| findings::not_covered_needs(&s))
        .flatten()
        .collect();
    let named_not_covered: Vec<String> = needs_addressed(needs, &not_covered, &question.needs)?
        .into_iter()
        .filter(|id| !addressed.contains(id))
        .collect();
    let distinct = findings::distinct_findings(&outcome.learnings, ctx.embedder)?;
    Ok(ReportRecord {
        question: question.id.clone(),
        system,
        needs: question.needs.len(),
        need_uptake: share(addressed.len(), question.needs.len()),
        needs_addressed: addressed,
        needs_named_not_covered: named_not_covered,
        needs_met_by_form: by_form,
        hygiene: hygiene::hygiene(&text, support)?,
        findings: findings::finding_coverage(
            &distinct,
            &text,
            support,
            &outcome.report.off_question,
        )?,
        consistency: findings::consistency(&outcome.report, support, ctx.embedder)?,
        cost,
        seconds,
        markdown: outcome.report.markdown.clone(),
    })
}

/// `user` asks `asked` (another user's question) with their own history: the profile Rudder
/// builds for it, then (when `report`) the history report, both scored against the user's own
/// needs (all their questions', tone needs aside).
#[allow(clippy::too_many_arguments)]
fn foreign_run(
    ctx: &QualityContext,
    options: &QualityOptions,
    needs: &NeedMatcher,
    profile_needs: &NeedMatcher,
    support: &SupportMatcher,
    index: usize,
    user: &PlantedUser,
    asked: &PlantedQuestion,
    main_dir: Option<&Path>,
    report: bool,
) -> Result<(ProfileRecord, Option<ReportRecord>), EvalError> {
    // The user's history as the profile stage left it (read into memory once), else a fresh
    // import.
    let mut history = match main_dir {
        Some(dir) => History::open(dir)?,
        None => {
            let dir = retrieval::scratch_dir(&ctx.work_dir.join("foreign"), index, &user.id)?;
            let export = ctx.set_dir.join(&user.export);
            let (mut history, _) =
                retrieval::import_scratch(&dir, &export, &user.id, ctx.progress)?;
            history.embed_pending(ctx.embedder, &ctx.embed_model, ctx.progress)?;
            if options.memory {
                remember(ctx, &mut history, user, options.memory_limit)?;
            }
            history
        }
    };
    let ids = retrieval::ids_by_hash(&history)?;
    let question = PlantedQuestion {
        id: format!("{}@{}", asked.id, user.id),
        query: asked.query.clone(),
        needs: user
            .questions
            .iter()
            .flat_map(|q| &q.needs)
            .filter(|n| n.kind != rudder_synth::planted::NeedKind::Tone)
            .cloned()
            .collect(),
        distractors: Vec::new(),
    };
    let (profile, profiled) = profile_question(
        ctx,
        profile_needs,
        &mut history,
        &ids,
        user,
        &question,
        options,
    )?;
    if !report {
        return Ok((profile, None));
    }
    history.release_writer()?;
    let history_dir = history.dir().to_path_buf();
    drop(history);
    let mut history = Some(History::open(&history_dir)?);
    let record = report_run(
        ctx,
        options,
        needs,
        support,
        &question,
        ReportSystem::History,
        Some(profiled),
        &mut history,
    )?;
    Ok((profile, Some(record)))
}

/// A `no-history` report on a Researchy or corpus-grounded question (`set`), and the share of
/// its key points some report paragraph supports.
#[allow(clippy::too_many_arguments)]
fn coverage_run(
    ctx: &QualityContext,
    options: &QualityOptions,
    support: &SupportMatcher,
    set: &str,
    id: &str,
    query: &str,
    key_points: &[String],
) -> Result<CoverageRecord, EvalError> {
    let brief = Brief {
        query: query.to_string(),
        ..Brief::default()
    };
    let (outcome, cost, seconds) = research(ctx, options, &brief, None, id, "no-history")?;
    let text = ReportText::from_report(&outcome.report, &outcome.evidence);
    let covered = grounded::covered_key_points(support, key_points, &text)?;
    let distinct = findings::distinct_findings(&outcome.learnings, ctx.embedder)?;
    Ok(CoverageRecord {
        id: id.to_string(),
        set: set.to_string(),
        query: query.to_string(),
        key_points: key_points.len(),
        recall: share(covered.len(), key_points.len()),
        covered,
        hygiene: hygiene::hygiene(&text, support)?,
        findings: findings::finding_coverage(
            &distinct,
            &text,
            support,
            &outcome.report.off_question,
        )?,
        consistency: findings::consistency(&outcome.report, support, ctx.embedder)?,
        cost,
        seconds,
        markdown: outcome.report.markdown.clone(),
    })
}

/// Cost per stage over every record.
pub fn cost_by_stage(records: &QualityRecords) -> BTreeMap<String, Cost> {
    let mut out: BTreeMap<String, Cost> = BTreeMap::new();
    if let Some(r) = &records.retrieval {
        out.entry("retrieval expansion".into())
            .or_default()
            .add(Cost::new(r.expansion_usage, r.expansion_seconds));
    }
    for m in &records.memory {
        out.entry("memory (import time)".into())
            .or_default()
            .add(m.cost);
    }
    for p in &records.profiles {
        out.entry("profile".into()).or_default().add(p.cost);
    }
    for (stage, c) in records
        .reports
        .iter()
        .flat_map(|r| r.cost.iter())
        .chain(records.coverage.iter().flat_map(|r| r.cost.iter()))
    {
        out.entry(format!("report run: {stage}"))
            .or_default()
            .add(*c);
    }
    out
}

/// Reads the set in `dir`, or writes it there from `seed` when it has no labels yet.
pub fn open_or_write_set(dir: &Path, seed: u64) -> Result<PlantedSet, EvalError> {
    if dir.join(rudder_synth::planted::LABELS_FILE).is_file() {
        let set = rudder_synth::planted::read_planted_set(dir)
            .map_err(|e| EvalError::Config(e.to_string()))?;
        if set.seed != seed {
            return Err(EvalError::Config(format!(
                "{} holds the set of seed {}, not {seed}; choose another folder",
                dir.display(),
                set.seed
            )));
        }
        return Ok(set);
    }
    rudder_synth::planted::write_planted_set(seed, dir).map_err(|e| {
        EvalError::Config(format!("writing the planted set to {}: {e}", dir.display()))
    })
}
