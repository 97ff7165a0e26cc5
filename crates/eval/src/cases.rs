//! The case builder: persona × query × aspect cases for the evaluation harness, built the way
//! STEER built its data set (Appendix E, prompts from Appendix J).
//!
//! For each selected Researchy question:
//! 1. a **profile** of someone who would ask it, written with 3 random ALOE profiles as
//!    examples; a profile whose cosine to an earlier accepted profile for the same question is
//!    above [`PROFILE_SIMILARITY_LIMIT`] is discarded and another is drawn (new examples, so a
//!    greedy model writes something else), a bounded number of times;
//! 2. a **personality** for it, with random ALOE personalities as examples;
//! 3. **5–8 aspects** (`aspect`, `evidence`, `reason`) that person expects in a good report;
//! 4. a **synthetic history**: a few past ChatGPT conversations of that person, some touching
//!    the aspects and some not, written as a real `conversations.json` export so that the
//!    system under test builds its profile from it the way it would for a real user.
//!
//! Every model output is grammar-constrained JSON. Selection (questions, examples, timestamps,
//! ids) comes from a ChaCha8 generator seeded from `--seed`, and generation is greedy, so the
//! same seed, data and model give the same cases file.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::EvalError;
use rudder::embed::{cosine, Embedder};
use rudder::history::Progress;
use rudder::llm::{complete_schema, GenerationOptions, Llm, LlmError, Message, Usage};

/// A generated profile closer than this (cosine) to an accepted one for the same question is
/// discarded (STEER Appendix E, after ALOE).
pub const PROFILE_SIMILARITY_LIMIT: f32 = 0.65;
/// Every synthetic conversation happened before this moment (2025-01-01T00:00:00Z), so the
/// histories do not depend on when the cases were built.
pub const HISTORY_CUTOFF_UNIX: i64 = 1_735_689_600;
/// ALOE examples shown per profile prompt (STEER: 3 per round).
const PROFILE_EXAMPLES: usize = 3;
/// ALOE examples shown per personality prompt.
const PERSONALITY_EXAMPLES: usize = 3;
/// Aspects per persona (STEER: 5–8).
pub const MIN_ASPECTS: usize = 5;
pub const MAX_ASPECTS: usize = 8;
/// Past conversations per history, each group: some about the aspects, some not.
const RELATED_CONVERSATIONS: (usize, usize) = (2, 3);
const UNRELATED_CONVERSATIONS: (usize, usize) = (2, 3);
/// The cases file inside the output folder.
pub const CASES_FILE: &str = "cases.jsonl";

/// The prompt sources, hashed into `prompts_version` so a case records which wording made it.
const PROMPT_SOURCES: [&str; 4] = [
    include_str!("../prompts/eval_case_profile.md"),
    include_str!("../prompts/eval_case_personality.md"),
    include_str!("../prompts/eval_case_aspects.md"),
    include_str!("../prompts/eval_case_history.md"),
];

/// One Researchy question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EvalQuery {
    pub id: String,
    pub query: String,
}

/// The evaluation material (`--eval-dir`): questions, ALOE profiles and personalities.
#[derive(Debug, Clone)]
pub struct EvalSource {
    /// The split folder (holding `queries.jsonl` and `key_point/`).
    pub split_dir: PathBuf,
    pub queries: Vec<EvalQuery>,
    pub profiles: Vec<String>,
    pub personalities: Vec<String>,
}

impl EvalSource {
    /// Reads `eval_dir/split/queries.jsonl`, `eval_dir/profile.jsonl` and
    /// `eval_dir/personality.jsonl`. A bad line is an error naming the file and line.
    pub fn load(eval_dir: &Path, split: &str) -> Result<Self, EvalError> {
        let split_dir = eval_dir.join(split);
        let queries_path = split_dir.join("queries.jsonl");
        let queries = read_jsonl(&queries_path, parse_query)?;
        if queries.is_empty() {
            return Err(EvalError::BadCase {
                path: queries_path,
                line: 0,
                message: "no questions in the file".into(),
            });
        }
        let profiles = read_example_strings(&eval_dir.join("profile.jsonl"))?;
        let personalities = read_example_strings(&eval_dir.join("personality.jsonl"))?;
        Ok(Self {
            split_dir,
            queries,
            profiles,
            personalities,
        })
    }

    /// The key points of question `id` (`key_point/<id>_aggregated.json`), in order; some
    /// questions have none.
    pub fn key_points(&self, id: &str) -> Result<Vec<String>, EvalError> {
        #[derive(Deserialize)]
        struct Aggregated {
            #[serde(default)]
            key_points: Vec<KeyPoint>,
        }
        #[derive(Deserialize)]
        struct KeyPoint {
            point_content: String,
        }
        let path = self
            .split_dir
            .join("key_point")
            .join(format!("{id}_aggregated.json"));
        let text = std::fs::read_to_string(&path).map_err(|e| EvalError::io(&path, e))?;
        let aggregated: Aggregated =
            serde_json::from_str(&text).map_err(|e| EvalError::BadCase {
                path: path.clone(),
                line: e.line(),
                message: e.to_string(),
            })?;
        Ok(aggregated
            .key_points
            .into_iter()
            .map(|k| k.point_content.trim().to_string())
            .filter(|k| !k.is_empty())
            .collect())
    }
}

/// Reads a JSON Lines file, skipping blank lines; `parse` turns one JSON value into a row.
/// A line holding several values back to back (ALOE's `profile.jsonl` has one line with two
/// strings and no newline between them) yields each of them, so no example is lost.
fn read_jsonl<T>(path: &Path, parse: fn(&str) -> Result<T, String>) -> Result<Vec<T>, EvalError> {
    let text = std::fs::read_to_string(path).map_err(|e| EvalError::io(path, e))?;
    let mut rows = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let bad = |message: String| EvalError::BadCase {
            path: path.to_path_buf(),
            line: index + 1,
            message,
        };
        let mut values = serde_json::Deserializer::from_str(line).into_iter::<Value>();
        loop {
            let start = values.byte_offset();
            match values.next() {
                None => break,
                Some(Ok(_)) => rows.push(parse(&line[start..values.byte_offset()]).map_err(bad)?),
                Some(Err(e)) => return Err(bad(e.to_string())),
            }
        }
    }
    Ok(rows)
}

/// `{id, query}`, where the id may be a string or a number.
fn parse_query(line: &str) -> Result<EvalQuery, String> {
    let value: Value = serde_json::from_str(line).map_err(|e| e.to_string())?;
    let id = match value.get("id") {
        Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_string(),
        Some(Value::Number(n)) => n.to_string(),
        _ => return Err("missing or empty \"id\"".into()),
    };
    let query = match value.get("query") {
        Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_string(),
        _ => return Err("missing or empty \"query\"".into()),
    };
    // The id names files (key points, histories): keep it to a plain file-name component.
    if !id
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(format!(
            "id {id:?} has characters other than letters, digits, - and _"
        ));
    }
    Ok(EvalQuery { id, query })
}

fn parse_example(line: &str) -> Result<String, String> {
    let text: String = serde_json::from_str(line).map_err(|e| e.to_string())?;
    Ok(text.trim().to_string())
}

fn read_example_strings(path: &Path) -> Result<Vec<String>, EvalError> {
    let rows: Vec<String> = read_jsonl(path, parse_example)?
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect();
    if rows.is_empty() {
        return Err(EvalError::BadCase {
            path: path.to_path_buf(),
            line: 0,
            message: "no examples in the file".into(),
        });
    }
    Ok(rows)
}

/// Who the case's user is. The system under test sees only `first_sentence` (and the
/// history); the simulated user and the judges see the rest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CasePersona {
    pub profile: String,
    pub personality: String,
    /// `profile + " " + personality`: STEER's `p_text`.
    pub text: String,
    /// The first sentence of `text`.
    pub first_sentence: String,
}

/// Something this user expects the report to cover.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CaseAspect {
    #[schemars(length(min = 3, max = 100))]
    pub aspect: String,
    /// What in the persona shows the aspect matters.
    #[schemars(length(min = 3, max = 240))]
    pub evidence: String,
    /// Why it matters to this user.
    #[schemars(length(min = 3, max = 240))]
    pub reason: String,
}

/// One persona × query case, a line of `cases.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalCase {
    pub id: String,
    pub seed: u64,
    pub query_id: String,
    pub query: String,
    pub persona: CasePersona,
    pub aspects: Vec<CaseAspect>,
    /// What a good answer covers (Researchy key points).
    pub key_points: Vec<String>,
    /// The persona's ChatGPT export, relative to the cases file's folder.
    pub history_file: String,
    /// Conversations in that export (each imports as one session).
    pub history_conversations: usize,
    /// The model that wrote the persona, aspects and history.
    pub model: String,
    pub prompts_version: String,
}

/// Reads a cases file written by [`build_cases`].
pub fn read_eval_cases(path: &Path) -> Result<Vec<EvalCase>, EvalError> {
    read_jsonl(path, |line| {
        serde_json::from_str::<EvalCase>(line).map_err(|e| e.to_string())
    })
}

/// What to build.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BuildOptions {
    /// Questions to draw (at most all of them).
    pub queries: usize,
    pub personas_per_query: usize,
    pub seed: u64,
    /// Profiles drawn per persona before giving that persona up.
    pub max_profile_attempts: usize,
}

impl Default for BuildOptions {
    fn default() -> Self {
        Self {
            queries: 10,
            personas_per_query: 1,
            seed: 0,
            max_profile_attempts: 4,
        }
    }
}

/// What a build did.
#[derive(Debug, Clone, Serialize)]
pub struct BuildReport {
    pub cases_file: PathBuf,
    pub cases: Vec<EvalCase>,
    pub queries: usize,
    /// Profiles discarded as too similar to an accepted one.
    pub rejected_profiles: usize,
    /// Personas given up after `max_profile_attempts` near-duplicate profiles.
    pub unfilled_personas: usize,
    /// Model calls retried because their output was cut off or out of bounds.
    pub retried_calls: usize,
    pub usage: Usage,
    pub seconds: f64,
}

/// Builds the cases and writes `out_dir/cases.jsonl` and one
/// `out_dir/histories/<case id>/conversations.json` per case.
pub fn build_cases(
    source: &EvalSource,
    llm: &dyn Llm,
    embedder: &dyn Embedder,
    options: &BuildOptions,
    out_dir: &Path,
    progress: &dyn Progress,
) -> Result<BuildReport, EvalError> {
    let started = std::time::Instant::now();
    let mut selection_rng = ChaCha8Rng::seed_from_u64(options.seed);
    let count = options.queries.min(source.queries.len());
    let chosen: Vec<&EvalQuery> =
        rand::seq::index::sample(&mut selection_rng, source.queries.len(), count)
            .into_iter()
            .map(|i| &source.queries[i])
            .collect();

    let mut builder = Builder {
        llm,
        embedder,
        source,
        options,
        prompts_version: prompts_version(),
        rejected_profiles: 0,
        unfilled_personas: 0,
        retried_calls: 0,
        usage: Usage::default(),
    };
    std::fs::create_dir_all(out_dir).map_err(|e| EvalError::io(out_dir, e))?;
    progress.begin(
        "building cases",
        Some((chosen.len() * options.personas_per_query) as u64),
    );
    let mut cases = Vec::new();
    let cases_file = out_dir.join(CASES_FILE);
    for query in chosen {
        let built = builder.cases_for(query, out_dir, progress)?;
        cases.extend(built);
        // Rewritten after every question, so a long build that stops keeps its finished cases
        // (and a sweep can start on them).
        write_cases(&cases_file, &cases)?;
    }
    progress.end();
    write_cases(&cases_file, &cases)?;
    Ok(BuildReport {
        cases_file,
        queries: count,
        cases,
        rejected_profiles: builder.rejected_profiles,
        unfilled_personas: builder.unfilled_personas,
        retried_calls: builder.retried_calls,
        usage: builder.usage,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// Writes `cases` as JSON Lines, atomically.
fn write_cases(path: &Path, cases: &[EvalCase]) -> Result<(), EvalError> {
    let mut lines = String::new();
    for case in cases {
        let line = serde_json::to_string(case).map_err(|e| EvalError::Case {
            case: case.id.clone(),
            message: e.to_string(),
        })?;
        lines.push_str(&line);
        lines.push('\n');
    }
    rudder::fsutil::write_atomic(path, lines.as_bytes()).map_err(|e| EvalError::Case {
        case: path.display().to_string(),
        message: e.to_string(),
    })
}

/// `v1-<hash of the four prompt files>`.
fn prompts_version() -> String {
    let mut hash = Fnv::default();
    for source in PROMPT_SOURCES {
        hash.write(source.as_bytes());
        hash.write(&[0]);
    }
    format!("v1-{:016x}", hash.0)
}

/// FNV-1a: a stable hash (std's hashers may change between Rust releases, and the seeds and
/// versions derived from it are stored in case files).
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
struct ProfileDraft {
    #[schemars(length(min = 80, max = 900))]
    profile: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct PersonalityDraft {
    #[schemars(length(min = 60, max = 700))]
    personality: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct AspectsDraft {
    #[schemars(length(min = 5, max = 8))]
    aspects: Vec<CaseAspect>,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct HistoryDraft {
    #[schemars(length(min = 2, max = 3))]
    related: Vec<ConversationDraft>,
    #[schemars(length(min = 2, max = 3))]
    unrelated: Vec<ConversationDraft>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
struct ConversationDraft {
    #[schemars(length(min = 3, max = 60))]
    title: String,
    #[schemars(length(min = 1, max = 2))]
    turns: Vec<TurnDraft>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
struct TurnDraft {
    #[schemars(length(min = 3, max = 200))]
    user: String,
    #[schemars(length(min = 3, max = 300))]
    assistant: String,
}

/// Token budgets per call, sized so the longest output the schema allows fits.
const PROFILE_TOKENS: u32 = 400;
const PERSONALITY_TOKENS: u32 = 320;
const ASPECTS_TOKENS: u32 = 1500;
const HISTORY_TOKENS: u32 = 2200;

struct Builder<'a> {
    llm: &'a dyn Llm,
    embedder: &'a dyn Embedder,
    source: &'a EvalSource,
    options: &'a BuildOptions,
    prompts_version: String,
    rejected_profiles: usize,
    unfilled_personas: usize,
    retried_calls: usize,
    usage: Usage,
}

impl Builder<'_> {
    /// The personas of one question.
    fn cases_for(
        &mut self,
        query: &EvalQuery,
        out_dir: &Path,
        progress: &dyn Progress,
    ) -> Result<Vec<EvalCase>, EvalError> {
        // Each question has its own generator, so a question's cases do not depend on which
        // other questions were drawn.
        let mut hash = Fnv::default();
        hash.write(query.id.as_bytes());
        let mut rng = ChaCha8Rng::seed_from_u64(self.options.seed ^ hash.0);
        let key_points = self.source.key_points(&query.id)?;
        let mut accepted: Vec<Vec<f32>> = Vec::new();
        let mut cases = Vec::new();
        for persona_index in 1..=self.options.personas_per_query {
            let label = format!("query {} persona {persona_index}", query.id);
            let Some(profile) = self.profile(query, &label, &mut accepted, &mut rng, progress)?
            else {
                self.unfilled_personas += 1;
                progress.note(&format!(
                    "{label}: no profile distinct enough after {} attempts",
                    self.options.max_profile_attempts
                ));
                progress.advance(1);
                continue;
            };
            let personality = self.personality(query, &label, &profile, &mut rng)?;
            let text = format!("{profile} {personality}");
            let persona = CasePersona {
                first_sentence: first_sentence(&text),
                profile,
                personality,
                text,
            };
            let aspects = self.aspects(query, &label, &persona.text)?;
            let id = format!("s{}-q{}-p{persona_index}", self.options.seed, query.id);
            let conversations = self.history(query, &label, &persona.text, &aspects, &mut rng)?;
            let history_file = format!("histories/{id}/conversations.json");
            let export = chatgpt_export(&conversations, &mut rng);
            let path = out_dir.join(&history_file);
            let bytes = serde_json::to_vec_pretty(&export).map_err(|e| EvalError::Case {
                case: label.clone(),
                message: e.to_string(),
            })?;
            rudder::fsutil::write_atomic(&path, &bytes).map_err(|e| EvalError::Case {
                case: label.clone(),
                message: e.to_string(),
            })?;
            cases.push(EvalCase {
                id,
                seed: self.options.seed,
                query_id: query.id.clone(),
                query: query.query.clone(),
                persona,
                aspects,
                key_points: key_points.clone(),
                history_file,
                history_conversations: conversations.len(),
                model: self.llm.model_name().to_string(),
                prompts_version: self.prompts_version.clone(),
            });
            progress.advance(1);
        }
        Ok(cases)
    }

    /// A profile distinct from the accepted ones, or `None` after the allowed attempts.
    fn profile(
        &mut self,
        query: &EvalQuery,
        label: &str,
        accepted: &mut Vec<Vec<f32>>,
        rng: &mut ChaCha8Rng,
        progress: &dyn Progress,
    ) -> Result<Option<String>, EvalError> {
        for _ in 0..self.options.max_profile_attempts.max(1) {
            // Fresh examples each attempt: with greedy decoding the same prompt would give the
            // same rejected profile again.
            let examples = sample(&self.source.profiles, PROFILE_EXAMPLES, rng);
            let prompt = render(
                "eval_case_profile",
                minijinja::context! { query => query.query, profile_examples => examples },
                label,
            )?;
            let profile = self.generate(
                label,
                "profile",
                prompt,
                PROFILE_TOKENS,
                |d: ProfileDraft, last| {
                    once_each(&non_empty_text(&d.profile, "profile")?, "profile", last)
                },
            )?;
            let vector = self
                .embedder
                .embed(&[profile.as_str()])
                .map_err(|source| EvalError::Embed {
                    case: label.to_string(),
                    source,
                })?
                .into_iter()
                .next()
                .unwrap_or_default();
            let closest = accepted
                .iter()
                .map(|v| cosine(v, &vector))
                .fold(f32::MIN, f32::max);
            if closest > PROFILE_SIMILARITY_LIMIT {
                self.rejected_profiles += 1;
                progress.note(&format!(
                    "{label}: profile rejected, cosine {closest:.2} to an accepted one"
                ));
                continue;
            }
            accepted.push(vector);
            return Ok(Some(profile));
        }
        Ok(None)
    }

    fn personality(
        &mut self,
        query: &EvalQuery,
        label: &str,
        profile: &str,
        rng: &mut ChaCha8Rng,
    ) -> Result<String, EvalError> {
        let examples = sample(&self.source.personalities, PERSONALITY_EXAMPLES, rng);
        let prompt = render(
            "eval_case_personality",
            minijinja::context! {
                query => query.query, profile => profile, personality_examples => examples,
            },
            label,
        )?;
        self.generate(
            label,
            "personality",
            prompt,
            PERSONALITY_TOKENS,
            |d: PersonalityDraft, last| {
                once_each(
                    &non_empty_text(&d.personality, "personality")?,
                    "personality",
                    last,
                )
            },
        )
    }

    fn aspects(
        &mut self,
        query: &EvalQuery,
        label: &str,
        persona: &str,
    ) -> Result<Vec<CaseAspect>, EvalError> {
        let prompt = render(
            "eval_case_aspects",
            minijinja::context! { query => query.query, persona => persona },
            label,
        )?;
        self.generate(
            label,
            "aspects",
            prompt,
            ASPECTS_TOKENS,
            |d: AspectsDraft, last| specific_aspects(clean_aspects(d.aspects, last)?, last),
        )
    }

    fn history(
        &mut self,
        query: &EvalQuery,
        label: &str,
        persona: &str,
        aspects: &[CaseAspect],
        rng: &mut ChaCha8Rng,
    ) -> Result<Vec<ConversationDraft>, EvalError> {
        let names: Vec<&str> = aspects.iter().map(|a| a.aspect.as_str()).collect();
        let prompt = render(
            "eval_case_history",
            minijinja::context! {
                query => query.query, persona => persona, aspects => names,
                related_min => RELATED_CONVERSATIONS.0, related_max => RELATED_CONVERSATIONS.1,
                unrelated_min => UNRELATED_CONVERSATIONS.0,
                unrelated_max => UNRELATED_CONVERSATIONS.1,
            },
            label,
        )?;
        let mut conversations =
            self.generate(label, "history", prompt, HISTORY_TOKENS, |d, _| {
                clean_history(d)
            })?;
        // Mixed, so the related conversations are not always the oldest.
        conversations.shuffle(rng);
        Ok(conversations)
    }

    /// One grammar-constrained call, greedy. Output that does not parse (cut off at the token
    /// budget) or that `check` refuses is retried once with a larger budget and the reason in
    /// the prompt; then the error names the case and the stage. `check` is told when it sees the
    /// last attempt, to relax what it can.
    fn generate<T, U>(
        &mut self,
        label: &str,
        stage: &'static str,
        prompt: String,
        max_tokens: u32,
        check: impl Fn(T, bool) -> Result<U, String>,
    ) -> Result<U, EvalError>
    where
        T: DeserializeOwned + JsonSchema,
    {
        let schema = rudder::llm::schema_of::<T>();
        let mut budget = max_tokens;
        let mut attempt = 0;
        let mut feedback = String::new();
        loop {
            attempt += 1;
            let options = GenerationOptions {
                // Greedy decoding ignores the seed; it matters only to backends that sample
                // anyway.
                seed: self.options.seed as u32,
                ..GenerationOptions::greedy(budget)
            };
            let messages = vec![Message::user(format!("{prompt}{feedback}"))];
            let reply = complete_schema::<T>(self.llm, messages, options, schema.clone()).map_err(
                |source| EvalError::Generation {
                    case: label.to_string(),
                    stage,
                    source,
                },
            )?;
            let completion = reply.completion;
            self.usage += completion.usage;
            let outcome = reply.parsed.and_then(|draft| {
                check(draft, attempt >= 2).map_err(|message| LlmError::InvalidOutput {
                    message,
                    output: completion.text.chars().take(500).collect(),
                })
            });
            match outcome {
                Ok(value) => return Ok(value),
                Err(source) if attempt >= 2 => {
                    return Err(EvalError::Generation {
                        case: label.to_string(),
                        stage,
                        source,
                    })
                }
                Err(e) => {
                    tracing::warn!(case = label, stage, "retrying: {e}");
                    self.retried_calls += 1;
                    // A cut-off answer needs more room; a refused one needs a different prompt,
                    // or greedy decoding writes it again.
                    budget = budget.saturating_mul(3) / 2;
                    if let LlmError::InvalidOutput { message, .. } = &e {
                        feedback = format!(
                            "\n\nA previous answer was refused ({message}). Answer again, \
                             briefly."
                        );
                    }
                }
            }
        }
    }
}

fn render(name: &str, context: minijinja::Value, label: &str) -> Result<String, EvalError> {
    crate::prompts::render(name, context).map_err(|e| EvalError::Case {
        case: label.to_string(),
        message: e.to_string(),
    })
}

/// `n` distinct random items (all of them when there are fewer).
fn sample<'s>(items: &'s [String], n: usize, rng: &mut ChaCha8Rng) -> Vec<&'s str> {
    rand::seq::index::sample(rng, items.len(), n.min(items.len()))
        .into_iter()
        .map(|i| items[i].as_str())
        .collect()
}

/// Whitespace runs collapsed, so one case line stays one line and sentences split cleanly.
fn tidy(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn non_empty_text(text: &str, what: &str) -> Result<String, String> {
    let text = tidy(text);
    if text.len() < 3 {
        return Err(format!("the {what} is empty"));
    }
    Ok(text)
}

/// The sentences of `text`, each once. A greedy small model can loop, writing the same
/// sentences again until its budget runs out (a profile that says three times that she hikes
/// in nearby trails); such text is refused with the repeated sentence named, and on the last
/// attempt the repeats are dropped instead.
fn once_each(text: &str, what: &str, last: bool) -> Result<String, String> {
    let mut seen = HashSet::new();
    let mut kept = Vec::new();
    let mut repeated = None;
    for sentence in sentences(text) {
        let key: String = sentence
            .chars()
            .filter(|c| c.is_alphanumeric() || c.is_whitespace())
            .collect::<String>()
            .to_lowercase();
        if seen.insert(key) {
            kept.push(sentence);
        } else if repeated.is_none() {
            repeated = Some(sentence);
        }
    }
    match repeated {
        None => Ok(text.to_string()),
        Some(sentence) if !last => Err(format!(
            "the {what} repeats the sentence \"{sentence}\"; say each thing once"
        )),
        Some(_) => Ok(kept.join(" ")),
    }
}

/// Sentences split after `.`, `!` or `?` followed by a space (enough for generated prose).
fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes = text.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        if matches!(b, b'.' | b'!' | b'?') && bytes.get(i + 1) == Some(&b' ') {
            out.push(text[start..=i].trim());
            start = i + 1;
        }
    }
    let rest = text[start..].trim();
    if !rest.is_empty() {
        out.push(rest);
    }
    out
}

/// Words that name qualities of any good answer rather than what this user needs to learn.
/// An aspect named only with these (and stop words) is generic: "Clarity and conciseness",
/// "Depth of information", "Relevance to the user's interests".
const GENERIC_ASPECT_WORDS: &[&str] = &[
    "a",
    "about",
    "accuracy",
    "accurate",
    "across",
    "actionable",
    "an",
    "and",
    "application",
    "applications",
    "approach",
    "appropriate",
    "as",
    "at",
    "backed",
    "background",
    "based",
    "benefits",
    "by",
    "clarity",
    "clear",
    "comprehensive",
    "comprehensiveness",
    "concise",
    "conciseness",
    "content",
    "context",
    "credibility",
    "credible",
    "current",
    "data",
    "depth",
    "detail",
    "detailed",
    "details",
    "empathy",
    "engagement",
    "engaging",
    "evidence",
    "example",
    "examples",
    "explanation",
    "explanations",
    "focus",
    "for",
    "format",
    "formatting",
    "from",
    "general",
    "how",
    "impact",
    "implications",
    "important",
    "in",
    "information",
    "insight",
    "insights",
    "interest",
    "interests",
    "into",
    "is",
    "it",
    "its",
    "key",
    "language",
    "latest",
    "level",
    "life",
    "main",
    "of",
    "on",
    "or",
    "organization",
    "overall",
    "overview",
    "personal",
    "personalized",
    "practical",
    "quality",
    "readability",
    "real",
    "recent",
    "relevance",
    "relevant",
    "reliable",
    "research",
    "resourcefulness",
    "response",
    "scientific",
    "sources",
    "specific",
    "statistics",
    "structure",
    "structured",
    "style",
    "tailored",
    "that",
    "the",
    "their",
    "this",
    "to",
    "tone",
    "trends",
    "understanding",
    "use",
    "user",
    "user's",
    "users",
    "using",
    "what",
    "which",
    "why",
    "with",
    "world",
];

/// Whether an aspect names only generic qualities of an answer.
fn is_generic(aspect: &CaseAspect) -> bool {
    aspect
        .aspect
        .split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .filter(|w| !w.is_empty())
        .all(|w| GENERIC_ASPECT_WORDS.contains(&w.to_lowercase().as_str()))
}

/// STEER's aspects are what this user needs the answer to cover. Generic qualities of any
/// answer (tone, clarity, depth — BESPOKE's criteria judge those) are dropped; when fewer than
/// [`MIN_ASPECTS`] specific ones remain, the answer is refused with the generic ones named, and
/// on the last attempt the aspects are kept as they are, with a warning.
fn specific_aspects(aspects: Vec<CaseAspect>, last: bool) -> Result<Vec<CaseAspect>, String> {
    let (generic, specific): (Vec<CaseAspect>, Vec<CaseAspect>) =
        aspects.iter().cloned().partition(is_generic);
    if generic.is_empty() || specific.len() >= MIN_ASPECTS {
        return Ok(specific);
    }
    let names: Vec<&str> = generic.iter().map(|a| a.aspect.as_str()).collect();
    if last {
        tracing::warn!("kept generic aspects after a retry: {}", names.join(", "));
        return Ok(aspects);
    }
    Err(format!(
        "these name qualities of any good answer, not what this user needs it to cover: {}; \
         name topics of the answer that matter to this user",
        names.join(", ")
    ))
}

/// Trims the aspects and drops empty ones; fewer than [`MIN_ASPECTS`] is refused, more than
/// [`MAX_ASPECTS`] are cut (a server backend may not enforce the schema's bounds). Repeated
/// names (any case) are dropped too, unless `allow_repeats` (the last attempt): a small model
/// that loops then still yields a case with the 5–8 aspects its grammar guaranteed, repeats
/// and all, and a warning says so.
fn clean_aspects(aspects: Vec<CaseAspect>, allow_repeats: bool) -> Result<Vec<CaseAspect>, String> {
    let mut seen = HashSet::new();
    let cleaned: Vec<CaseAspect> = aspects
        .into_iter()
        .map(|a| CaseAspect {
            aspect: tidy(&a.aspect),
            evidence: tidy(&a.evidence),
            reason: tidy(&a.reason),
        })
        .filter(|a| !a.aspect.is_empty() && (seen.insert(a.aspect.to_lowercase()) || allow_repeats))
        .take(MAX_ASPECTS)
        .collect();
    if allow_repeats && seen.len() < cleaned.len() {
        tracing::warn!(
            "{} of {} aspects repeat an earlier name; kept after a retry",
            cleaned.len() - seen.len(),
            cleaned.len()
        );
    }
    if cleaned.len() < MIN_ASPECTS {
        return Err(format!(
            "{} distinct aspects, {MIN_ASPECTS} to {MAX_ASPECTS} are needed",
            cleaned.len()
        ));
    }
    Ok(cleaned)
}

/// Related and unrelated conversations together, each with a title and at least one turn
/// whose user message is not empty.
fn clean_history(draft: HistoryDraft) -> Result<Vec<ConversationDraft>, String> {
    let conversations: Vec<ConversationDraft> = draft
        .related
        .into_iter()
        .chain(draft.unrelated)
        .map(|c| ConversationDraft {
            title: tidy(&c.title),
            turns: c
                .turns
                .into_iter()
                .map(|t| TurnDraft {
                    user: t.user.trim().to_string(),
                    assistant: t.assistant.trim().to_string(),
                })
                .filter(|t| !t.user.is_empty())
                .collect(),
        })
        .filter(|c| !c.turns.is_empty())
        .collect();
    let min = RELATED_CONVERSATIONS.0 + UNRELATED_CONVERSATIONS.0;
    if conversations.len() < min {
        return Err(format!(
            "{} usable conversations, at least {min} are needed",
            conversations.len()
        ));
    }
    Ok(conversations)
}

/// Words that end with a period without ending a sentence.
const ABBREVIATIONS: &[&str] = &[
    "mr", "mrs", "ms", "dr", "prof", "st", "jr", "sr", "vs", "etc", "e.g", "i.e", "approx", "no",
    "u.s", "u.k", "ph.d", "b.a", "m.a", "b.sc", "m.sc",
];

/// The first sentence of `text`: up to the first `.`, `!` or `?` that is followed by a space
/// (or the end) and does not end a common abbreviation or an initial. The whole text when no
/// sentence ends.
pub fn first_sentence(text: &str) -> String {
    let text = tidy(text);
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    for (k, &(at, c)) in chars.iter().enumerate() {
        if !matches!(c, '.' | '!' | '?') {
            continue;
        }
        let next = chars.get(k + 1).map(|&(_, c)| c);
        if !matches!(next, None | Some(' ')) {
            continue;
        }
        if c == '.' {
            let word = text[..at]
                .rsplit(' ')
                .next()
                .unwrap_or("")
                .trim_start_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase();
            let initial = word.chars().count() == 1 && word.chars().all(char::is_alphabetic);
            if initial || ABBREVIATIONS.contains(&word.as_str()) {
                continue;
            }
        }
        return text[..at + c.len_utf8()].to_string();
    }
    text
}

/// A random UUID-shaped id, as ChatGPT uses.
fn uuid(rng: &mut ChaCha8Rng) -> String {
    let n: u128 = rng.random();
    let h = format!("{n:032x}");
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// A ChatGPT `conversations.json` export of `conversations`: each a linear thread under an
/// empty root node, the newest conversation first (as the exports list them), all before
/// [`HISTORY_CUTOFF_UNIX`].
fn chatgpt_export(conversations: &[ConversationDraft], rng: &mut ChaCha8Rng) -> Value {
    // Start times spread over the year before the cutoff, at least a day before it.
    let mut starts: Vec<i64> = conversations
        .iter()
        .map(|_| HISTORY_CUTOFF_UNIX - rng.random_range(86_400..365 * 86_400))
        .collect();
    starts.sort_unstable();
    let mut exported: Vec<Value> = conversations
        .iter()
        .zip(starts)
        .map(|(conversation, start)| conversation_json(conversation, start, rng))
        .collect();
    exported.reverse();
    Value::Array(exported)
}

fn conversation_json(conversation: &ConversationDraft, start: i64, rng: &mut ChaCha8Rng) -> Value {
    let id = uuid(rng);
    let root = uuid(rng);
    let mut mapping = serde_json::Map::new();
    let mut parent = root.clone();
    let mut time = start as f64;
    let mut node_ids = Vec::new();
    let mut messages = Vec::new();
    for turn in &conversation.turns {
        for (role, text) in [("user", &turn.user), ("assistant", &turn.assistant)] {
            if text.is_empty() {
                continue;
            }
            let node = uuid(rng);
            messages.push((node.clone(), parent.clone(), role, text.clone(), time));
            node_ids.push(node.clone());
            parent = node;
            // Seconds between messages: typing and reading time.
            time += f64::from(rng.random_range(20u32..240)) + 0.5;
        }
    }
    let first = node_ids.first().cloned();
    mapping.insert(
        root.clone(),
        json!({"id": root, "message": null, "parent": null, "children": first.into_iter().collect::<Vec<_>>()}),
    );
    for (index, (node, parent, role, text, at)) in messages.iter().enumerate() {
        let children: Vec<&String> = node_ids.get(index + 1).into_iter().collect();
        mapping.insert(
            node.clone(),
            json!({
                "id": node,
                "message": {
                    "id": node,
                    "author": {"role": role, "name": null, "metadata": {}},
                    "create_time": at,
                    "update_time": null,
                    "content": {"content_type": "text", "parts": [text]},
                    "status": "finished_successfully",
                    "end_turn": if *role == "assistant" { json!(true) } else { Value::Null },
                    "weight": 1.0,
                    "metadata": {},
                    "recipient": "all",
                    "channel": null
                },
                "parent": parent,
                "children": children,
            }),
        );
    }
    json!({
        "title": conversation.title,
        "create_time": start as f64,
        "update_time": time,
        "mapping": mapping,
        "moderation_results": [],
        "current_node": node_ids.last(),
        "plugin_ids": null,
        "conversation_id": id,
        "default_model_slug": "gpt-4o",
        "id": id,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sentence_skips_abbreviations_and_initials() {
        assert_eq!(
            first_sentence("She is 34. She hikes."),
            "She is 34.",
            "plain split"
        );
        assert_eq!(
            first_sentence("He met Dr. Smith in the U.S. last year! Then more."),
            "He met Dr. Smith in the U.S. last year!"
        );
        assert_eq!(
            first_sentence("She works for J. K. Rowling's agent. Next."),
            "She works for J. K. Rowling's agent."
        );
        assert_eq!(first_sentence("Version 2.5 is out"), "Version 2.5 is out");
        assert_eq!(first_sentence("  A\n  nurse.  Calm. "), "A nurse.");
        assert_eq!(first_sentence(""), "");
    }

    #[test]
    fn jsonl_lines_with_several_values_yield_each_and_bad_lines_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("profile.jsonl");
        std::fs::write(&path, "\"She is 30.\"\n\n\"He is 40.\"\"They are 50.\"\n").unwrap();
        assert_eq!(
            read_example_strings(&path).unwrap(),
            ["She is 30.", "He is 40.", "They are 50."]
        );
        std::fs::write(&path, "\"ok\"\n\"cut off\n").unwrap();
        let error = read_example_strings(&path).unwrap_err().to_string();
        assert!(error.contains("profile.jsonl:2:"), "{error}");
    }

    #[test]
    fn looping_text_is_refused_then_kept_once() {
        let looping = "She is 35. She hikes in nearby trails. She has a dog. She hikes in \
                       nearby trails. She has a dog.";
        let error = once_each(looping, "profile", false).unwrap_err();
        assert!(error.contains("\"She hikes in nearby trails.\""), "{error}");
        assert_eq!(
            once_each(looping, "profile", true).unwrap(),
            "She is 35. She hikes in nearby trails. She has a dog."
        );
        let fine = "She is 35. She hikes! Does she? Yes";
        assert_eq!(once_each(fine, "profile", false).unwrap(), fine);
        assert_eq!(
            sentences(fine),
            ["She is 35.", "She hikes!", "Does she?", "Yes"]
        );
    }

    #[test]
    fn generic_answer_qualities_are_not_aspects() {
        let aspect = |name: &str| CaseAspect {
            aspect: name.into(),
            evidence: "She is a software engineer.".into(),
            reason: "It matters to her.".into(),
        };
        // What Qwen2.5-Coder-1.5B wrote for "how literature changes the way we think".
        let generic = [
            "Depth of information",
            "Specific examples",
            "Appropriate tone",
            "Clarity of language",
            "Relevance to the user's interests",
            "Clarity and Conciseness",
        ];
        assert!(generic.iter().all(|a| is_generic(&aspect(a))));
        let specific = [
            "Reading fiction and empathy",
            "Effect of novels on problem solving",
            "Inflation's effect on tech salaries",
            "Books for busy engineers",
            "Evidence from cognitive science",
        ];
        assert!(specific.iter().all(|a| !is_generic(&aspect(a))));

        let mixed: Vec<CaseAspect> = specific
            .iter()
            .chain(&generic[..2])
            .map(|a| aspect(a))
            .collect();
        let kept = specific_aspects(mixed, false).unwrap();
        assert_eq!(kept.len(), 5, "generic ones dropped when 5 specific remain");
        let mostly_generic: Vec<CaseAspect> = generic
            .iter()
            .chain(&specific[..1])
            .map(|a| aspect(a))
            .collect();
        let error = specific_aspects(mostly_generic.clone(), false).unwrap_err();
        assert!(error.contains("Depth of information"), "{error}");
        assert_eq!(specific_aspects(mostly_generic, true).unwrap().len(), 7);
    }

    #[test]
    fn templates_render_with_their_context() {
        let profile = crate::prompts::render(
            "eval_case_profile",
            minijinja::context! { query => "why tea?", profile_examples => vec!["She is 30."] },
        )
        .unwrap();
        assert!(profile.contains("\"why tea?\"") && profile.contains("- She is 30."));
        let personality = crate::prompts::render(
            "eval_case_personality",
            minijinja::context! {
                query => "why tea?", profile => "A nurse.", personality_examples => vec!["Calm."],
            },
        )
        .unwrap();
        assert!(personality.contains("A nurse.") && personality.contains("- Calm."));
        let aspects = crate::prompts::render(
            "eval_case_aspects",
            minijinja::context! { query => "why tea?", persona => "A nurse." },
        )
        .unwrap();
        assert!(aspects.contains("5-8") && aspects.contains("JSON"));
        let history = crate::prompts::render(
            "eval_case_history",
            minijinja::context! {
                query => "why tea?", persona => "A nurse.", aspects => vec!["Cost"],
                related_min => 2, related_max => 3, unrelated_min => 2, unrelated_max => 3,
            },
        )
        .unwrap();
        assert!(history.contains("- Cost") && history.contains("2 to 3"));
    }

    #[test]
    fn aspects_are_cleaned_and_bounded() {
        let a = |name: &str| CaseAspect {
            aspect: name.into(),
            evidence: "e".into(),
            reason: "r".into(),
        };
        let many: Vec<CaseAspect> = (0..10).map(|i| a(&format!("A{i}"))).collect();
        assert_eq!(clean_aspects(many, false).unwrap().len(), MAX_ASPECTS);
        let repeated = vec![a("Cost"), a("cost"), a(" "), a("B"), a("C"), a("D")];
        assert!(clean_aspects(repeated.clone(), false).is_err());
        // On the last attempt repeats stay; empty aspects still go.
        assert_eq!(clean_aspects(repeated, true).unwrap().len(), 5);
    }

    #[test]
    fn query_lines_are_checked() {
        assert_eq!(
            parse_query(r#"{"id": 12, "query": "q?"}"#).unwrap().id,
            "12"
        );
        assert!(parse_query(r#"{"id": "../x", "query": "q?"}"#).is_err());
        assert!(parse_query(r#"{"id": "1"}"#).is_err());
        assert!(parse_query("not json").is_err());
    }

    #[test]
    fn prompts_version_is_stable_in_a_build() {
        assert_eq!(prompts_version(), prompts_version());
        assert!(prompts_version().starts_with("v1-"));
    }
}
