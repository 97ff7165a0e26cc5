//! Retrieval evaluation for query-aware profiles (BESPOKE §4.4, Appendix C.4, Table 5).
//!
//! Reads a cases file in JSON Lines, one case per line:
//!
//! ```json
//! {"id": "u0-q02", "user": "user-00", "history": "user-00", "category": "adjacent",
//!  "query": "What should I eat in the week before my first marathon?",
//!  "relevant_topics": ["marathon training/race day [dinner the night before]",
//!                      "cooking/fresh pasta"], "why": "…",
//!  "relevant": ["<content hash>", …]}
//! ```
//!
//! Quirks and decisions:
//! * `history` is a folder of export files relative to the cases file (an absolute path is
//!   used as is). Every case of one `user` must name the same folder; it is imported once into
//!   a fresh history under the work dir and embedded with the evaluation's embedder.
//! * Relevant sessions are named by [`Entry::content_hash`](rudder::history::Entry), not by
//!   id: ids depend on import order, hashes do not. A labelled hash that the import does not
//!   produce is an error (the labels and the export have drifted apart), not a silent miss.
//! * `relevant_topics` and `why` document the hand-written labelling rule (`interest/topic` of
//!   the synthetic generator's labels, `[phrase; …]` keeping only the topic's sessions that
//!   mention a phrase); they are carried into the report but not interpreted here. `category` is `direct` (the default), `adjacent` (the
//!   answer hinges on a constraint from another interest) or `unseen` (a topic the user never
//!   touched).
//! * Blank lines and lines starting with `//` are ignored; unknown fields are refused, so a
//!   misspelt `relevant` cannot silently empty a case.
//! * A case with no relevant session has no defined nDCG (the ideal DCG is 0): it is skipped
//!   from the means, costs no model call, and is counted and listed in the report.
//! * A case whose retrieval fails (an error from the search, not from the model) is kept in
//!   the report with its error and left out of the means, so one bad text does not throw away
//!   a long run; the CLI then exits non-zero.
//! * Gains are binary; DCG discounts rank `r` (1-based) by `log2(r + 1)`; the ideal DCG has
//!   `min(k, |relevant|)` relevant sessions at the top. A session retrieved twice counts once.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;
use std::hash::Hash;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::EvalError;
use rudder::embed::Embedder;
use rudder::history::{Filter, History, ImportOptions, Progress};
use rudder::llm::{Llm, Usage};
use rudder::profile::{expand, retrieve, Expanded, Expansion, ExpansionMode};

/// How many sessions each mode retrieves (the deepest cutoff reported).
const DEPTH: usize = 20;
/// Retrieved titles kept per case and mode in the report, for looking at failures.
const TOP_TITLES: usize = 5;
/// Marks a scratch history folder as the evaluation's own, so a re-run may replace it.
const SCRATCH_MARKER: &str = ".rudder-eval-scratch";

/// What kind of query a case is.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum QueryCategory {
    /// Directly on one of the user's interests.
    #[default]
    Direct,
    /// The answer hinges on a constraint from another interest (budget, equipment, diet, …).
    Adjacent,
    /// A topic the user never touched: few or no relevant sessions.
    Unseen,
}

impl QueryCategory {
    pub fn as_str(self) -> &'static str {
        match self {
            QueryCategory::Direct => "direct",
            QueryCategory::Adjacent => "adjacent",
            QueryCategory::Unseen => "unseen",
        }
    }
}

/// One labelled query.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetrievalCase {
    pub id: String,
    pub user: String,
    /// Folder of export files, relative to the cases file.
    pub history: String,
    pub query: String,
    #[serde(default)]
    pub category: QueryCategory,
    /// The hand-written rule the labels follow (`interest/topic`, documentation only).
    #[serde(default)]
    pub relevant_topics: Vec<String>,
    /// Why those topics would change the answer.
    #[serde(default)]
    pub why: String,
    /// Content hashes of the relevant sessions.
    pub relevant: Vec<String>,
}

/// Reads and checks a cases file.
pub fn load_cases(path: &Path) -> Result<Vec<RetrievalCase>, EvalError> {
    let text = std::fs::read_to_string(path).map_err(|e| EvalError::io(path, e))?;
    let bad = |line: usize, message: String| EvalError::BadCase {
        path: path.to_path_buf(),
        line,
        message,
    };
    let mut cases: Vec<RetrievalCase> = Vec::new();
    let mut ids: HashMap<String, usize> = HashMap::new();
    let mut histories: HashMap<String, String> = HashMap::new();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let line = line.trim();
        if line.is_empty() || line.starts_with("//") {
            continue;
        }
        let case: RetrievalCase =
            serde_json::from_str(line).map_err(|e| bad(n, format!("not a valid case: {e}")))?;
        for (field, value) in [
            ("id", &case.id),
            ("user", &case.user),
            ("history", &case.history),
            ("query", &case.query),
        ] {
            if value.trim().is_empty() {
                return Err(bad(n, format!("`{field}` is empty")));
            }
        }
        if let Some(first) = ids.insert(case.id.clone(), n) {
            return Err(bad(
                n,
                format!("duplicate id {:?} (first on line {first})", case.id),
            ));
        }
        match histories.get(&case.user) {
            Some(h) if *h != case.history => {
                return Err(bad(
                    n,
                    format!(
                        "user {:?} has history {:?} here but {h:?} in an earlier case",
                        case.user, case.history
                    ),
                ))
            }
            Some(_) => {}
            None => {
                histories.insert(case.user.clone(), case.history.clone());
            }
        }
        let mut seen = HashSet::new();
        for h in &case.relevant {
            if h.len() != 64 || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(bad(
                    n,
                    format!("{h:?} is not a content hash (64 hex digits)"),
                ));
            }
            if !seen.insert(h.as_str()) {
                return Err(bad(n, format!("relevant session {h} is listed twice")));
            }
        }
        cases.push(case);
    }
    Ok(cases)
}

// ---------------------------------------------------------------------------------------------
// Metrics
// ---------------------------------------------------------------------------------------------

/// The discount of 0-based position `i`: `1 / log2(i + 2)`.
fn discount(i: usize) -> f64 {
    1.0 / ((i + 2) as f64).log2()
}

/// nDCG@k with binary gains; `None` when nothing is relevant (the ideal DCG is 0, so the
/// ratio is undefined and the query must be left out of a mean rather than scored 0 or 1).
pub fn ndcg_at<T: Eq + Hash>(k: usize, ranked: &[T], relevant: &HashSet<T>) -> Option<f64> {
    if relevant.is_empty() {
        return None;
    }
    let ideal: f64 = (0..k.min(relevant.len())).map(discount).sum();
    if ideal == 0.0 {
        return Some(0.0);
    }
    let mut counted: HashSet<&T> = HashSet::new();
    let dcg: f64 = ranked
        .iter()
        .take(k)
        .enumerate()
        .filter(|(_, x)| relevant.contains(x) && counted.insert(x))
        .map(|(i, _)| discount(i))
        // Not `sum()`: an empty float sum is -0.0, which prints as "-0.000".
        .fold(0.0, |a, b| a + b);
    Some(dcg / ideal)
}

/// Share of the relevant items among the first `k` retrieved; `None` when nothing is relevant.
pub fn recall_at<T: Eq + Hash>(k: usize, ranked: &[T], relevant: &HashSet<T>) -> Option<f64> {
    if relevant.is_empty() {
        return None;
    }
    Some(hits_at(k, ranked, relevant) as f64 / relevant.len() as f64)
}

/// Distinct relevant items among the first `k`.
fn hits_at<T: Eq + Hash>(k: usize, ranked: &[T], relevant: &HashSet<T>) -> usize {
    let found: HashSet<&T> = ranked
        .iter()
        .take(k)
        .filter(|x| relevant.contains(x))
        .collect();
    found.len()
}

// ---------------------------------------------------------------------------------------------
// Report
// ---------------------------------------------------------------------------------------------

/// Mean metrics of one mode over the scored queries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModeSummary {
    pub mode: ExpansionMode,
    pub ndcg_at_10: f64,
    pub ndcg_at_20: f64,
    pub recall_at_20: f64,
    /// Queries in the mean.
    pub queries: usize,
}

/// Means per mode over the scored queries of one category.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CategorySummary {
    pub category: QueryCategory,
    pub modes: Vec<ModeSummary>,
}

/// One retrieved session, for reading the report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TopHit {
    pub title: String,
    pub relevant: bool,
}

/// One case under one mode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseScore {
    pub mode: ExpansionMode,
    pub ndcg_at_10: f64,
    pub ndcg_at_20: f64,
    pub recall_at_20: f64,
    /// Relevant sessions among the first 20.
    pub hits_at_20: usize,
    /// The first few retrieved sessions.
    pub top: Vec<TopHit>,
}

/// One case.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CaseRow {
    pub id: String,
    pub user: String,
    pub category: QueryCategory,
    pub query: String,
    pub relevant_topics: Vec<String>,
    /// Sessions labelled relevant.
    pub relevant: usize,
    /// No relevant session: left out of every mean and not expanded.
    pub skipped: bool,
    /// Empty when skipped.
    pub scores: Vec<CaseScore>,
    /// The raw, CoT, pseudo-history and facet-probe texts searched (empty when skipped).
    pub expansions: Vec<Expanded>,
    /// Retrieval failed for this case (left out of every mean; the run goes on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One user's history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserRow {
    pub user: String,
    pub sessions: u64,
    pub cases: usize,
    pub import_seconds: f64,
    pub embed_seconds: f64,
}

/// The whole evaluation.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RetrievalReport {
    pub cases_file: String,
    /// The chat model that wrote the expansions.
    pub model: String,
    pub embed_model: String,
    pub users: Vec<UserRow>,
    /// Means per mode (raw, CoT, pseudo, facets, fused) over the scored queries.
    pub modes: Vec<ModeSummary>,
    pub categories: Vec<CategorySummary>,
    pub cases: Vec<CaseRow>,
    /// Queries in the means.
    pub scored: usize,
    /// Queries with no relevant session, left out of the means.
    pub skipped: usize,
    pub skipped_ids: Vec<String>,
    /// Queries whose retrieval failed, left out of the means.
    #[serde(default)]
    pub failed_ids: Vec<String>,
    /// Model calls and tokens spent on the CoT, pseudo-history and facet-probe expansions.
    pub expansion_usage: Usage,
    pub expansion_seconds: f64,
    pub seconds: f64,
}

impl RetrievalReport {
    /// The summary for `mode`, if it was evaluated.
    pub fn mode(&self, mode: ExpansionMode) -> Option<&ModeSummary> {
        self.modes.iter().find(|m| m.mode == mode)
    }

    /// The report as Markdown: the main table laid out like BESPOKE's Table 5, then the means
    /// per query category and the per-query nDCG@10.
    pub fn to_markdown(&self) -> String {
        let mut out = String::new();
        let sessions: u64 = self.users.iter().map(|u| u.sessions).sum();
        let _ = writeln!(out, "## History retrieval: {}\n", self.cases_file);
        let _ = writeln!(
            out,
            "{} queries scored over {} users ({} sessions); retriever: hybrid BM25 + {} \
             (top {DEPTH}).",
            self.scored,
            self.users.len(),
            sessions,
            self.embed_model
        );
        if self.skipped > 0 {
            let _ = writeln!(
                out,
                "{} queries skipped, no relevant session (nDCG undefined): {}.",
                self.skipped,
                self.skipped_ids.join(", ")
            );
        }
        if !self.failed_ids.is_empty() {
            let _ = writeln!(
                out,
                "**Retrieval failed, left out of the means ({})**: {}.",
                self.failed_ids.len(),
                self.failed_ids.join(", ")
            );
            for c in self.cases.iter().filter(|c| c.error.is_some()) {
                let _ = writeln!(out, "  - {}: {}", c.id, c.error.as_deref().unwrap_or(""));
            }
        }
        let u = &self.expansion_usage;
        let _ = writeln!(
            out,
            "Expansions by {}: {} calls, {} prompt + {} generated tokens, {:.1} s (whole run \
             {:.1} s).\n",
            self.model,
            u.calls,
            u.prompt_tokens,
            u.generated_tokens,
            self.expansion_seconds,
            self.seconds
        );
        let _ = writeln!(out, "| Query type | nDCG@10 | nDCG@20 | Recall@20 |");
        let _ = writeln!(out, "|---|---:|---:|---:|");
        for m in &self.modes {
            let _ = writeln!(
                out,
                "| {} | {:.4} | {:.4} | {:.4} |",
                mode_label(m.mode),
                m.ndcg_at_10,
                m.ndcg_at_20,
                m.recall_at_20
            );
        }
        if !self.categories.is_empty() {
            let _ = writeln!(out, "\nBy query category (nDCG@10):\n");
            let _ = write!(out, "| Category | Queries |");
            for m in &self.modes {
                let _ = write!(out, " {} |", m.mode.as_str());
            }
            let _ = writeln!(out);
            let _ = write!(out, "|---|---:|");
            for _ in &self.modes {
                let _ = write!(out, "---:|");
            }
            let _ = writeln!(out);
            for c in &self.categories {
                let queries = c.modes.first().map_or(0, |m| m.queries);
                let _ = write!(out, "| {} | {queries} |", c.category.as_str());
                for m in &c.modes {
                    let _ = write!(out, " {:.4} |", m.ndcg_at_10);
                }
                let _ = writeln!(out);
            }
        }
        let _ = writeln!(
            out,
            "\nPer query (nDCG@10; relevant = labelled sessions):\n"
        );
        let _ = write!(out, "| Case | Category | Relevant |");
        for m in ExpansionMode::ALL {
            let _ = write!(out, " {} |", m.as_str());
        }
        let _ = writeln!(out, " Query |");
        let _ = writeln!(out, "|---|---|---:|---:|---:|---:|---:|---:|---|");
        for c in &self.cases {
            let _ = write!(
                out,
                "| {} | {} | {} |",
                c.id,
                c.category.as_str(),
                c.relevant
            );
            for m in ExpansionMode::ALL {
                match c.scores.iter().find(|s| s.mode == m) {
                    Some(s) => {
                        let _ = write!(out, " {:.3} |", s.ndcg_at_10);
                    }
                    None => out.push_str(" – |"),
                }
            }
            let _ = writeln!(out, " {} |", c.query.replace('|', "\\|"));
        }
        out
    }
}

fn mode_label(mode: ExpansionMode) -> &'static str {
    match mode {
        ExpansionMode::Raw => "Original query",
        ExpansionMode::Cot => "+CoT",
        ExpansionMode::Pseudo => "+Pseudo-history",
        ExpansionMode::Facets => "+Facet probes",
        ExpansionMode::Fused => "Fused (raw + CoT + pseudo + facets, RRF)",
    }
}

fn summarize<'a>(mode: ExpansionMode, rows: impl Iterator<Item = &'a CaseRow>) -> ModeSummary {
    let scores: Vec<&CaseScore> = rows
        .filter(|r| !r.skipped && r.error.is_none())
        .filter_map(|r| r.scores.iter().find(|s| s.mode == mode))
        .collect();
    let n = scores.len();
    let mean = |f: fn(&CaseScore) -> f64| {
        if n == 0 {
            0.0
        } else {
            scores.iter().map(|s| f(s)).fold(0.0, |a, b| a + b) / n as f64
        }
    };
    ModeSummary {
        mode,
        ndcg_at_10: mean(|s| s.ndcg_at_10),
        ndcg_at_20: mean(|s| s.ndcg_at_20),
        recall_at_20: mean(|s| s.recall_at_20),
        queries: n,
    }
}

// ---------------------------------------------------------------------------------------------
// Runner
// ---------------------------------------------------------------------------------------------

/// Evaluates every case in `cases_path` (see the module docs). Each user's export is imported
/// into a fresh history under `work_dir` and embedded with `embedder` (model name second);
/// `llm` writes the CoT, pseudo-history and facet-probe expansions.
pub fn run_retrieval_eval(
    cases_path: &Path,
    llm: &dyn Llm,
    embedder: (&dyn Embedder, &str),
    work_dir: &Path,
    progress: &dyn Progress,
) -> Result<RetrievalReport, EvalError> {
    let cases = load_cases(cases_path)?;
    let base = cases_path.parent().unwrap_or(Path::new(""));
    run_retrieval_eval_on(
        &cases,
        base,
        &cases_path.display().to_string(),
        llm,
        embedder,
        work_dir,
        progress,
    )
}

/// Like [`run_retrieval_eval`], on cases already loaded (a subset, say); `history` folders are
/// resolved against `base`, and `label` names the cases in the report.
pub fn run_retrieval_eval_on(
    cases: &[RetrievalCase],
    base: &Path,
    label: &str,
    llm: &dyn Llm,
    embedder: (&dyn Embedder, &str),
    work_dir: &Path,
    progress: &dyn Progress,
) -> Result<RetrievalReport, EvalError> {
    let started = Instant::now();
    // Users in order of first appearance, so the report follows the file.
    let mut groups: Vec<(&str, &str, Vec<&RetrievalCase>)> = Vec::new();
    for case in cases {
        match groups.iter_mut().find(|g| g.0 == case.user) {
            Some(g) if g.1 != case.history => {
                return Err(EvalError::Case {
                    case: case.id.clone(),
                    message: format!(
                        "user {:?} has history {:?} here but {:?} in another case",
                        case.user, case.history, g.1
                    ),
                })
            }
            Some(g) => g.2.push(case),
            None => groups.push((&case.user, &case.history, vec![case])),
        }
    }
    std::fs::create_dir_all(work_dir).map_err(|e| EvalError::io(work_dir, e))?;
    let mut users = Vec::new();
    let mut rows = Vec::new();
    let mut usage = Usage::default();
    let mut expansion_seconds = 0.0;
    for (index, (user, history_dir, user_cases)) in groups.into_iter().enumerate() {
        let first = &user_cases[0].id;
        let export = base.join(history_dir);
        if !export.is_dir() {
            return Err(EvalError::Case {
                case: first.clone(),
                message: format!("history folder {} does not exist", export.display()),
            });
        }
        let dir = scratch_dir(work_dir, index, user)?;
        let (mut history, import) = import_scratch(&dir, &export, first, progress)?;
        let embed_started = Instant::now();
        history.embed_pending(embedder.0, embedder.1, progress)?;
        let embed_seconds = embed_started.elapsed().as_secs_f64();
        let ids = ids_by_hash(&history)?;
        users.push(UserRow {
            user: user.to_string(),
            sessions: ids.len() as u64,
            cases: user_cases.len(),
            import_seconds: import.seconds,
            embed_seconds,
        });

        progress.begin(&format!("queries {user}"), Some(user_cases.len() as u64));
        for case in user_cases {
            let relevant = case
                .relevant
                .iter()
                .map(|h| {
                    ids.get(h).copied().ok_or_else(|| EvalError::Case {
                        case: case.id.clone(),
                        message: format!(
                            "relevant session {h} is not in {} (labels and export differ; \
                             rebuild the cases)",
                            export.display()
                        ),
                    })
                })
                .collect::<Result<HashSet<i64>, _>>()?;
            let row = evaluate_case(case, &relevant, &mut history, llm, embedder)?;
            for e in &row.expansions {
                usage += e.usage;
                expansion_seconds += e.seconds;
            }
            progress.advance(1);
            progress.note(&case_line(&row));
            rows.push(row);
        }
        progress.end();
    }

    let modes: Vec<ModeSummary> = ExpansionMode::ALL
        .into_iter()
        .map(|m| summarize(m, rows.iter()))
        .collect();
    let mut by_category: BTreeMap<QueryCategory, Vec<&CaseRow>> = BTreeMap::new();
    for r in rows.iter().filter(|r| !r.skipped && r.error.is_none()) {
        by_category.entry(r.category).or_default().push(r);
    }
    let categories = by_category
        .into_iter()
        .map(|(category, rs)| CategorySummary {
            category,
            modes: ExpansionMode::ALL
                .into_iter()
                .map(|m| summarize(m, rs.iter().copied()))
                .collect(),
        })
        .collect();
    let skipped_ids: Vec<String> = rows
        .iter()
        .filter(|r| r.skipped)
        .map(|r| r.id.clone())
        .collect();
    let failed_ids: Vec<String> = rows
        .iter()
        .filter(|r| r.error.is_some())
        .map(|r| r.id.clone())
        .collect();
    Ok(RetrievalReport {
        cases_file: label.to_string(),
        model: llm.model_name().to_string(),
        embed_model: embedder.1.to_string(),
        users,
        modes,
        categories,
        scored: rows.len() - skipped_ids.len() - failed_ids.len(),
        skipped: skipped_ids.len(),
        skipped_ids,
        failed_ids,
        cases: rows,
        expansion_usage: usage,
        expansion_seconds,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// Expands one query, retrieves with every mode and scores the lists.
fn evaluate_case(
    case: &RetrievalCase,
    relevant: &HashSet<i64>,
    history: &mut History,
    llm: &dyn Llm,
    embedder: (&dyn Embedder, &str),
) -> Result<CaseRow, EvalError> {
    let mut row = CaseRow {
        id: case.id.clone(),
        user: case.user.clone(),
        category: case.category,
        query: case.query.clone(),
        relevant_topics: case.relevant_topics.clone(),
        relevant: relevant.len(),
        skipped: relevant.is_empty(),
        scores: Vec::new(),
        expansions: Vec::new(),
        error: None,
    };
    if row.skipped {
        return Ok(row);
    }
    // Each expansion once; the fused mode reuses them.
    for e in Expansion::ALL {
        row.expansions.push(expand(llm, &case.query, e)?);
    }
    for mode in ExpansionMode::ALL {
        // A search that fails on one text (say, query syntax the model wrote) must not throw
        // away an hour of expansions: the case is reported as failed and the run goes on.
        let found = match retrieve(
            history,
            Some(embedder),
            &row.expansions,
            mode,
            &Filter::default(),
            DEPTH,
        ) {
            Ok(found) => found,
            Err(e) => {
                row.error = Some(format!("{} retrieval: {e}", mode.as_str()));
                row.scores.clear();
                return Ok(row);
            }
        };
        let ranked: Vec<i64> = found.iter().map(|c| c.id).collect();
        let shown = &ranked[..ranked.len().min(TOP_TITLES)];
        let top = history
            .get_many(shown)?
            .into_iter()
            .map(|s| TopHit {
                title: s.entry.title,
                relevant: relevant.contains(&s.id),
            })
            .collect();
        row.scores.push(CaseScore {
            mode,
            // Defined: `relevant` is not empty here.
            ndcg_at_10: ndcg_at(10, &ranked, relevant).unwrap_or(0.0),
            ndcg_at_20: ndcg_at(20, &ranked, relevant).unwrap_or(0.0),
            recall_at_20: recall_at(20, &ranked, relevant).unwrap_or(0.0),
            hits_at_20: hits_at(20, &ranked, relevant),
            top,
        });
    }
    Ok(row)
}

/// One progress line per case: its nDCG@10 per mode.
fn case_line(row: &CaseRow) -> String {
    if row.skipped {
        return format!("{}: no relevant session, skipped", row.id);
    }
    if let Some(e) = &row.error {
        return format!("{}: FAILED: {e}", row.id);
    }
    let scores: Vec<String> = row
        .scores
        .iter()
        .map(|s| format!("{} {:.3}", s.mode.as_str(), s.ndcg_at_10))
        .collect();
    format!(
        "{} ({} relevant): nDCG@10 {}",
        row.id,
        row.relevant,
        scores.join(", ")
    )
}

/// Content hash → session id over the whole history.
/// Imports the export folder `export` into a fresh history in `dir`; a file that fails to
/// import fails the whole import (the labels would not match), named with `case`.
pub(crate) fn import_scratch(
    dir: &Path,
    export: &Path,
    case: &str,
    progress: &dyn Progress,
) -> Result<(History, rudder::history::ImportReport), EvalError> {
    let mut history = History::open(dir)?;
    let import = history.import(&[export.to_path_buf()], &ImportOptions::default(), progress)?;
    let failed: Vec<String> = import
        .files
        .iter()
        .filter_map(|f| match &f.status {
            rudder::history::FileStatus::Failed(why) => Some(format!("{}: {why}", f.file)),
            _ => None,
        })
        .collect();
    if !failed.is_empty() {
        return Err(EvalError::Case {
            case: case.to_string(),
            message: format!(
                "importing {} failed: {}",
                export.display(),
                failed.join("; ")
            ),
        });
    }
    Ok((history, import))
}

pub(crate) fn ids_by_hash(history: &History) -> Result<HashMap<String, i64>, EvalError> {
    Ok(history.ids_by_content_hash()?)
}

/// A fresh folder for user `index`'s scratch history. A folder left by an earlier evaluation
/// (it carries the marker) is replaced; anything else that is not empty is refused rather
/// than deleted.
pub(crate) fn scratch_dir(work_dir: &Path, index: usize, user: &str) -> Result<PathBuf, EvalError> {
    let name: String = user
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let dir = work_dir.join(format!("{index:02}-{name}"));
    if dir.exists() {
        let ours = dir.join(SCRATCH_MARKER).is_file();
        let empty = std::fs::read_dir(&dir)
            .map_err(|e| EvalError::io(&dir, e))?
            .next()
            .is_none();
        if ours {
            std::fs::remove_dir_all(&dir).map_err(|e| EvalError::io(&dir, e))?;
        } else if !empty {
            return Err(EvalError::io(
                &dir,
                std::io::Error::new(
                    std::io::ErrorKind::AlreadyExists,
                    "exists and was not made by an evaluation; choose another work dir",
                ),
            ));
        }
    }
    std::fs::create_dir_all(&dir).map_err(|e| EvalError::io(&dir, e))?;
    let marker = dir.join(SCRATCH_MARKER);
    std::fs::write(&marker, b"").map_err(|e| EvalError::io(&marker, e))?;
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(items: &[i64]) -> HashSet<i64> {
        items.iter().copied().collect()
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn ndcg_of_ranks_one_and_three_with_two_relevant() {
        // Relevant at ranks 1 and 3 of 10: (1 + 1/log2 4) / (1 + 1/log2 3) = 0.9197…
        let ranked: Vec<i64> = (1..=10).collect();
        let got = ndcg_at(10, &ranked, &set(&[1, 3])).unwrap();
        let want = (1.0 + 1.0 / 4f64.log2()) / (1.0 + 1.0 / 3f64.log2());
        assert!(close(got, want), "{got} vs {want}");
        assert!((got - 0.919_720_789_148).abs() < 1e-11, "{got}");
    }

    #[test]
    fn ndcg_is_one_for_a_perfect_ranking_and_zero_for_none_found() {
        let ranked = [5i64, 6, 7, 8];
        assert!(close(ndcg_at(10, &ranked, &set(&[5, 6])).unwrap(), 1.0));
        assert!(close(ndcg_at(10, &ranked, &set(&[1, 2])).unwrap(), 0.0));
        assert!(close(ndcg_at(10, &[] as &[i64], &set(&[1])).unwrap(), 0.0));
        // Plain zero, not -0.0 (which would print as "-0.000").
        assert!(ndcg_at(10, &ranked, &set(&[1])).unwrap().is_sign_positive());
    }

    #[test]
    fn ideal_dcg_is_capped_at_k() {
        // 30 relevant, the first 10 retrieved all relevant: perfect at 10.
        let relevant: HashSet<i64> = (1..=30).collect();
        let ranked: Vec<i64> = (1..=10).collect();
        assert!(close(ndcg_at(10, &ranked, &relevant).unwrap(), 1.0));
        // At 20 only 10 of the ideal 20 are there.
        let ideal20: f64 = (0..20).map(discount).sum();
        let dcg: f64 = (0..10).map(discount).sum();
        assert!(close(
            ndcg_at(20, &ranked, &relevant).unwrap(),
            dcg / ideal20
        ));
        assert!(close(
            recall_at(20, &ranked, &relevant).unwrap(),
            10.0 / 30.0
        ));
    }

    #[test]
    fn cutoff_ignores_hits_past_k() {
        // Relevant at rank 11 only: nothing at 10, 1/log2(12) over the ideal at 20.
        let ranked: Vec<i64> = (1..=20).collect();
        let relevant = set(&[11]);
        assert!(close(ndcg_at(10, &ranked, &relevant).unwrap(), 0.0));
        assert!(close(
            ndcg_at(20, &ranked, &relevant).unwrap(),
            1.0 / 12f64.log2()
        ));
        assert!(close(recall_at(10, &ranked, &relevant).unwrap(), 0.0));
        assert!(close(recall_at(20, &ranked, &relevant).unwrap(), 1.0));
    }

    #[test]
    fn duplicates_in_the_ranking_count_once() {
        let ranked = [1i64, 1, 1];
        let relevant = set(&[1, 2]);
        let want = 1.0 / (1.0 + 1.0 / 3f64.log2());
        assert!(close(ndcg_at(10, &ranked, &relevant).unwrap(), want));
        assert!(close(recall_at(10, &ranked, &relevant).unwrap(), 0.5));
    }

    #[test]
    fn empty_relevance_is_undefined_not_zero() {
        let ranked = [1i64, 2, 3];
        assert_eq!(ndcg_at(10, &ranked, &HashSet::new()), None);
        assert_eq!(recall_at(20, &ranked, &HashSet::new()), None);
    }

    #[test]
    fn recall_counts_distinct_hits_over_all_relevant() {
        let ranked = [1i64, 9, 2, 8];
        assert!(close(
            recall_at(20, &ranked, &set(&[1, 2, 3, 4])).unwrap(),
            0.5
        ));
        assert!(close(
            recall_at(1, &ranked, &set(&[1, 2, 3, 4])).unwrap(),
            0.25
        ));
    }

    #[test]
    fn works_on_string_keys() {
        let ranked = ["a".to_string(), "b".to_string(), "c".to_string()];
        let relevant: HashSet<String> = ["c".to_string()].into();
        assert!(close(ndcg_at(10, &ranked, &relevant).unwrap(), 0.5));
    }

    fn write(dir: &Path, text: &str) -> PathBuf {
        let path = dir.join("cases.jsonl");
        std::fs::write(&path, text).unwrap();
        path
    }

    const HASH_A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

    #[test]
    fn loads_cases_skipping_blank_and_comment_lines() {
        let dir = tempfile::tempdir().unwrap();
        let text = format!(
            "// a comment\n\n{{\"id\":\"q1\",\"user\":\"u\",\"history\":\"u\",\"query\":\"x\",\
             \"relevant\":[\"{HASH_A}\"]}}\n{{\"id\":\"q2\",\"user\":\"u\",\"history\":\"u\",\
             \"query\":\"y\",\"category\":\"unseen\",\"relevant\":[]}}\n"
        );
        let cases = load_cases(&write(dir.path(), &text)).unwrap();
        assert_eq!(cases.len(), 2);
        assert_eq!(cases[0].category, QueryCategory::Direct);
        assert_eq!(cases[1].category, QueryCategory::Unseen);
        assert_eq!(cases[0].relevant, vec![HASH_A.to_string()]);
    }

    fn load_error(text: &str) -> String {
        let dir = tempfile::tempdir().unwrap();
        load_cases(&write(dir.path(), text))
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn bad_cases_name_the_file_and_line() {
        let ok = format!(
            "{{\"id\":\"q1\",\"user\":\"u\",\"history\":\"u\",\"query\":\"x\",\"relevant\":[\"{HASH_A}\"]}}"
        );
        // Misspelt field.
        let e = load_error(&format!("{ok}\n{{\"id\":\"q2\",\"user\":\"u\",\"history\":\"u\",\"query\":\"x\",\"relevent\":[]}}\n"));
        assert!(e.contains("cases.jsonl:2:"), "{e}");
        assert!(e.contains("relevent"), "{e}");
        // Duplicate id.
        let e = load_error(&format!("{ok}\n{ok}\n"));
        assert!(e.contains(":2:") && e.contains("duplicate id"), "{e}");
        // Not a hash.
        let e = load_error(
            "{\"id\":\"q1\",\"user\":\"u\",\"history\":\"u\",\"query\":\"x\",\"relevant\":[\"12\"]}",
        );
        assert!(e.contains(":1:") && e.contains("content hash"), "{e}");
        // Same user, two histories.
        let e = load_error(&format!(
            "{ok}\n{{\"id\":\"q2\",\"user\":\"u\",\"history\":\"v\",\"query\":\"x\",\"relevant\":[]}}"
        ));
        assert!(e.contains(":2:") && e.contains("history"), "{e}");
        // Empty query.
        let e = load_error(
            "{\"id\":\"q1\",\"user\":\"u\",\"history\":\"u\",\"query\":\" \",\"relevant\":[]}",
        );
        assert!(e.contains("`query` is empty"), "{e}");
        // Not JSON.
        let e = load_error("{oops");
        assert!(e.contains(":1: not a valid case"), "{e}");
    }

    #[test]
    fn scratch_dir_replaces_its_own_and_refuses_others() {
        let work = tempfile::tempdir().unwrap();
        let dir = scratch_dir(work.path(), 0, "user/00").unwrap();
        assert!(dir.ends_with("00-user_00"));
        std::fs::write(dir.join("left-over"), b"x").unwrap();
        let again = scratch_dir(work.path(), 0, "user/00").unwrap();
        assert!(!again.join("left-over").exists());
        let foreign = work.path().join("01-other");
        std::fs::create_dir_all(&foreign).unwrap();
        std::fs::write(foreign.join("precious"), b"x").unwrap();
        let e = scratch_dir(work.path(), 1, "other")
            .unwrap_err()
            .to_string();
        assert!(e.contains("not made by an evaluation"), "{e}");
        assert!(foreign.join("precious").exists());
    }

    fn row(id: &str, category: QueryCategory, skipped: bool, ndcg: [f64; 5]) -> CaseRow {
        CaseRow {
            id: id.into(),
            user: "u".into(),
            category,
            query: "q | r".into(),
            relevant_topics: Vec::new(),
            relevant: usize::from(!skipped),
            skipped,
            scores: if skipped {
                Vec::new()
            } else {
                ExpansionMode::ALL
                    .into_iter()
                    .zip(ndcg)
                    .map(|(mode, v)| CaseScore {
                        mode,
                        ndcg_at_10: v,
                        ndcg_at_20: v,
                        recall_at_20: v,
                        hits_at_20: 0,
                        top: Vec::new(),
                    })
                    .collect()
            },
            expansions: Vec::new(),
            error: None,
        }
    }

    #[test]
    fn means_leave_out_skipped_queries() {
        let mut failed = row("d", QueryCategory::Direct, false, [1.0; 5]);
        failed.error = Some("raw retrieval: broken".into());
        let rows = [
            row("a", QueryCategory::Direct, false, [0.2, 0.4, 0.6, 0.7, 0.8]),
            row(
                "b",
                QueryCategory::Adjacent,
                false,
                [0.4, 0.6, 0.8, 0.9, 1.0],
            ),
            row("c", QueryCategory::Unseen, true, [0.0; 5]),
            failed,
        ];
        let raw = summarize(ExpansionMode::Raw, rows.iter());
        assert_eq!(raw.queries, 2);
        assert!(close(raw.ndcg_at_10, 0.3));
        let fused = summarize(ExpansionMode::Fused, rows.iter());
        assert!(close(fused.recall_at_20, 0.9));
        let none = summarize(ExpansionMode::Raw, rows[2..].iter());
        assert_eq!(none.queries, 0);
        assert!(close(none.ndcg_at_10, 0.0));
    }

    #[test]
    fn markdown_has_the_table_and_escapes_pipes() {
        let mut failed = row("d", QueryCategory::Direct, false, [1.0; 5]);
        failed.error = Some("cot retrieval: bad query".into());
        failed.scores.clear();
        let rows = vec![
            row("a", QueryCategory::Direct, false, [0.2, 0.4, 0.6, 0.7, 0.8]),
            row("c", QueryCategory::Unseen, true, [0.0; 5]),
            failed,
        ];
        let report = RetrievalReport {
            cases_file: "cases.jsonl".into(),
            model: "m".into(),
            embed_model: "e".into(),
            users: Vec::new(),
            modes: ExpansionMode::ALL
                .into_iter()
                .map(|m| summarize(m, rows.iter()))
                .collect(),
            categories: Vec::new(),
            scored: 1,
            skipped: 1,
            skipped_ids: vec!["c".into()],
            failed_ids: vec!["d".into()],
            cases: rows,
            expansion_usage: Usage::default(),
            expansion_seconds: 0.0,
            seconds: 0.0,
        };
        let md = report.to_markdown();
        assert!(
            md.contains("| Original query | 0.2000 | 0.2000 | 0.2000 |"),
            "{md}"
        );
        assert!(md.contains("| +CoT | 0.4000 |"), "{md}");
        assert!(md.contains("skipped, no relevant session"), "{md}");
        assert!(md.contains("| c | unseen | 0 | – | – | – | – |"), "{md}");
        assert!(md.contains("q \\| r"), "{md}");
        assert!(md.contains("left out of the means (1)**: d."), "{md}");
        assert!(md.contains("  - d: cot retrieval: bad query"), "{md}");
        let json = serde_json::to_value(&report).unwrap();
        let back: RetrievalReport = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(serde_json::to_value(&back).unwrap(), json);
    }
}
