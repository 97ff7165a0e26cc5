//! Calibration of the profile's relevance judge (`rudder eval relevance`): the chat model's
//! P(yes) that a careful advisor would take a statement about the user into account for a
//! question ([`rudder::profile::relevance`]), on labelled pairs, with the threshold chosen on
//! half the questions and measured on the other half ([`crate::matchers::calibrate`]).
//!
//! The pairs:
//! * from the planted-needs set: every need of a question is relevant to it; the needs of two
//!   other users' first questions are not (tone needs aside: how a user wants answers holds
//!   for every question). These are the negatives real profiles fail on: personal, specific,
//!   and about something else;
//! * `data/relevance_pairs.jsonl`: short statements in the form profiles write them, across
//!   six more questions, with negatives like those seen in real profiles ("Has a problem with
//!   chicken stock" for running shoes).

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::matchers::{calibrate, scored_pairs, Calibration};
use crate::EvalError;
use rudder::llm::{Llm, Usage};
use rudder_synth::planted::{NeedKind, PlantedSet};

const RELEVANCE_PAIRS: &str = include_str!("../data/relevance_pairs.jsonl");

/// One labelled pair.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RelevancePair {
    /// Pairs of one group (a question) fall in the same half.
    pub group: String,
    pub query: String,
    pub statement: String,
    pub relevant: bool,
}

/// A pair with the model's judgement.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ScoredRelevance {
    #[serde(flatten)]
    pub pair: RelevancePair,
    /// P(yes) for the pair's question.
    pub probability: f32,
    /// The statement's mean P(yes) for the contrast questions.
    pub bias: f32,
    /// `probability - bias`: what the threshold is compared with.
    pub score: f32,
    /// The statement's highest cosine to the question's facet lines (the model's guesses at
    /// what this person may have said about themselves that matters here), when an embedder
    /// was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub facet_similarity: Option<f32>,
    /// The same with [`rudder::profile::relevance::SITUATION_LINES`] beside the facet lines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub situation_similarity: Option<f32>,
}

/// A score of the pairs beside the judge's, measured the same way.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OtherScore {
    pub name: String,
    pub calibration: Calibration,
    pub auc: f32,
}

/// What one calibration measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RelevanceReport {
    pub model: String,
    pub pairs: usize,
    pub positives: usize,
    /// The threshold on the score (P(yes) less the statement's bias), as the profile uses it.
    pub calibration: Calibration,
    /// The same on P(yes) alone, for comparison.
    pub calibration_without_contrast: Calibration,
    /// Area under the ROC curve of the score and of P(yes) alone.
    pub auc: f32,
    pub auc_without_contrast: f32,
    /// Facet similarity alone, and beside the judge's score, when an embedder was given.
    #[serde(default)]
    pub others: Vec<OtherScore>,
    pub usage: Usage,
    pub seconds: f64,
    pub scored: Vec<ScoredRelevance>,
}

fn pair_of(
    question: &rudder_synth::planted::PlantedQuestion,
    statement: &str,
    relevant: bool,
) -> RelevancePair {
    RelevancePair {
        group: question.id.clone(),
        query: question.query.clone(),
        statement: statement.to_string(),
        relevant,
    }
}

/// The shipped pairs (`data/relevance_pairs.jsonl`).
pub fn shipped_pairs() -> Vec<RelevancePair> {
    RELEVANCE_PAIRS
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("//"))
        .map(|l| serde_json::from_str(l).expect("data/relevance_pairs.jsonl is checked by tests"))
        .collect()
}

/// Pairs from the planted set's labels (see the module doc).
pub fn planted_pairs(set: &PlantedSet) -> Vec<RelevancePair> {
    let mut out = Vec::new();
    for (u, user) in set.users.iter().enumerate() {
        for question in &user.questions {
            let pair = |statement: &str, relevant: bool| pair_of(question, statement, relevant);
            for need in &question.needs {
                out.push(pair(&need.statement, true));
            }
            // Needs of two other users' first questions: personal, specific, and about
            // something else. (The same user's other questions are left out: a runner's
            // training plan and her running shoes share needs, so "not relevant" would be a
            // wrong label as often as a right one.)
            for step in [1, 3] {
                let other = &set.users[(u + step) % set.users.len()];
                if other.id == user.id {
                    continue;
                }
                if let Some(q) = other.questions.first() {
                    for need in q.needs.iter().filter(|n| n.kind != NeedKind::Tone) {
                        out.push(pair(&need.statement, false));
                    }
                }
            }
        }
    }
    out
}

/// What each user of the planted set said about themselves in their chats, as memory keeps it
/// ([`rudder::profile::memory::said_in_chat`], no model call): per user, each sentence with the
/// content hash of its session. The exports are imported into scratch histories under `work`.
pub fn said_sentences(
    set: &PlantedSet,
    set_dir: &Path,
    work: &Path,
    progress: &dyn rudder::history::Progress,
) -> Result<Vec<Vec<(String, String)>>, EvalError> {
    use rudder::profile::memory::said_in_chat;
    use std::collections::HashMap;
    let mut said = Vec::new();
    for (index, user) in set.users.iter().enumerate() {
        let dir = crate::retrieval::scratch_dir(work, index, &user.id)?;
        let (history, _) = crate::retrieval::import_scratch(
            &dir,
            &set_dir.join(&user.export),
            &user.id,
            progress,
        )?;
        let by_hash = crate::retrieval::ids_by_hash(&history)?;
        let hash_of: HashMap<i64, &String> = by_hash.iter().map(|(h, id)| (*id, h)).collect();
        let mut ids: Vec<i64> = by_hash.values().copied().collect();
        ids.sort_unstable();
        let entries = history
            .store()
            .get_many(&ids)
            .map_err(rudder::history::HistoryError::from)?;
        let mut sentences = Vec::new();
        for entry in entries {
            for noted in said_in_chat(&entry) {
                sentences.push((noted.text, hash_of[&entry.id].clone()));
            }
        }
        said.push(sentences);
    }
    Ok(said)
}

/// Pairs of what the people of the planted set said about themselves in their chats, as
/// memory keeps it ([`rudder::profile::memory::said_in_chat`], no model call), against their
/// own questions and two other users' first questions:
/// * a sentence from a session that plants a need of the question is relevant to it; one
///   from a session planting a tone need (how they want answers) is relevant to every
///   question of theirs;
/// * a sentence from a session that plants nothing (filler, distractors) is not: these are
///   the person's own lines a profile must not drag in;
/// * a sentence planting a need of their other question is left out (a runner's knee
///   matters for her shoes and her training plan alike);
/// * a sentence planting a need of another user's first question is not relevant to this
///   one: personal, specific, and about something else.
pub fn said_pairs(set: &PlantedSet, said: &[Vec<(String, String)>]) -> Vec<RelevancePair> {
    let plants = |user: &rudder_synth::planted::PlantedUser, hash: &str| {
        user.questions
            .iter()
            .flat_map(|q| q.needs.iter().map(move |n| (q, n)))
            .filter(|(_, n)| n.sessions.iter().any(|h| h == hash))
            .map(|(q, n)| (q.id.clone(), n.kind))
            .collect::<Vec<_>>()
    };
    let mut out = Vec::new();
    for (u, user) in set.users.iter().enumerate() {
        for question in &user.questions {
            let pair = |statement: &str, relevant: bool| pair_of(question, statement, relevant);
            for (sentence, hash) in &said[u] {
                let planted = plants(user, hash);
                if planted.is_empty() {
                    out.push(pair(sentence, false));
                } else if planted
                    .iter()
                    .any(|(q, kind)| *q == question.id || *kind == NeedKind::Tone)
                {
                    out.push(pair(sentence, true));
                }
            }
            for step in [1, 3] {
                let o = (u + step) % set.users.len();
                let other = &set.users[o];
                let Some(first) = other.questions.first() else {
                    continue;
                };
                for (sentence, hash) in &said[o] {
                    if plants(other, hash)
                        .iter()
                        .any(|(q, kind)| *q == first.id && *kind != NeedKind::Tone)
                    {
                        out.push(pair(sentence, false));
                    }
                }
            }
        }
    }
    out
}

/// Scores every pair with `llm` (pairs of one question together, so they share its prefix)
/// and calibrates the threshold.
pub fn calibrate_relevance(
    llm: &dyn Llm,
    embedder: Option<&dyn rudder::embed::Embedder>,
    pairs: &[RelevancePair],
    judge: rudder::profile::relevance::Judge,
    progress: &dyn rudder::history::Progress,
) -> Result<RelevanceReport, EvalError> {
    let started = std::time::Instant::now();
    let mut queries: Vec<&str> = Vec::new();
    for p in pairs {
        if !queries.contains(&p.query.as_str()) {
            queries.push(&p.query);
        }
    }
    let mut usage = Usage::default();
    let mut scored = Vec::with_capacity(pairs.len());
    for (i, query) in queries.iter().enumerate() {
        let of_query: Vec<&RelevancePair> = pairs.iter().filter(|p| p.query == *query).collect();
        let statements: Vec<&str> = of_query.iter().map(|p| p.statement.as_str()).collect();
        let (judged, cost) =
            rudder::profile::relevance::relevance_by(llm, judge, query, &statements).map_err(
                |e| EvalError::Run {
                    case: query.to_string(),
                    system: "relevance".into(),
                    message: e.to_string(),
                },
            )?;
        usage += cost;
        let facet_similarity = match embedder {
            Some(embedder) => {
                let (similarity, cost) = facet_similarities(llm, embedder, query, &statements)
                    .map_err(|message| EvalError::Run {
                        case: query.to_string(),
                        system: "relevance facets".into(),
                        message,
                    })?;
                usage += cost;
                similarity
            }
            None => vec![(None, None); statements.len()],
        };
        for ((pair, j), (facet_similarity, situation_similarity)) in
            of_query.into_iter().zip(judged).zip(facet_similarity)
        {
            scored.push(ScoredRelevance {
                pair: pair.clone(),
                probability: j.probability,
                bias: j.bias,
                score: j.score(),
                facet_similarity,
                situation_similarity,
            });
        }
        progress.note(&format!(
            "relevance: question {}/{} ({} pairs scored)",
            i + 1,
            queries.len(),
            scored.len()
        ));
    }
    let labels = || {
        scored
            .iter()
            .map(|s| (s.pair.group.as_str(), s.pair.relevant))
    };
    let calibration = calibrate(&scored_pairs(labels(), scored.iter().map(|s| s.score)));
    let calibration_without_contrast = calibrate(&scored_pairs(
        labels(),
        scored.iter().map(|s| s.probability),
    ));
    let auc = area_under_roc(&scored, |s| s.score);
    let auc_without_contrast = area_under_roc(&scored, |s| s.probability);
    let mut others = Vec::new();
    if scored.iter().all(|s| s.facet_similarity.is_some()) && !scored.is_empty() {
        let facets = |s: &ScoredRelevance| s.facet_similarity.unwrap_or(0.0);
        let both = |s: &ScoredRelevance| s.score + facets(s);
        let situation = |s: &ScoredRelevance| s.situation_similarity.unwrap_or(0.0);
        let judge_and_situation = |s: &ScoredRelevance| s.score + situation(s);
        let half_judge = |s: &ScoredRelevance| 0.5 * s.score + facets(s);
        for (name, key) in [
            (
                "facet similarity",
                &facets as &dyn Fn(&ScoredRelevance) -> f32,
            ),
            ("P(yes) - bias + facet similarity", &both),
            ("facets and situation lines", &situation),
            (
                "P(yes) - bias + facets and situation lines",
                &judge_and_situation,
            ),
            ("(P(yes) - bias) / 2 + facet similarity", &half_judge),
        ] {
            others.push(OtherScore {
                name: name.to_string(),
                calibration: calibrate(&scored_pairs(labels(), scored.iter().map(key))),
                auc: area_under_roc(&scored, key),
            });
        }
    }
    Ok(RelevanceReport {
        model: llm.model_name().to_string(),
        pairs: scored.len(),
        positives: scored.iter().filter(|s| s.pair.relevant).count(),
        calibration,
        calibration_without_contrast,
        auc,
        auc_without_contrast,
        others,
        usage,
        seconds: started.elapsed().as_secs_f64(),
        scored,
    })
}

/// A statement's closest cosine to the question's facet lines, and to them and the
/// situation lines.
type Similarities = (Option<f32>, Option<f32>);

/// Each statement's highest cosine to the facet lines the model writes for `query` (the
/// profile's facet probes: what this person may have told a chatbot about themselves that
/// would change the answer).
fn facet_similarities(
    llm: &dyn Llm,
    embedder: &dyn rudder::embed::Embedder,
    query: &str,
    statements: &[&str],
) -> Result<(Vec<Similarities>, Usage), String> {
    use rudder::profile::expand::{expand, Expansion};
    let expanded = expand(llm, query, Expansion::Facets).map_err(|e| e.to_string())?;
    let facets = expanded.facets();
    let with_situation = rudder::profile::relevance::with_situation_lines(&facets);
    let similarity = |lines: &[String]| {
        rudder::profile::relevance::facet_similarities(embedder, lines, statements)
            .map(|s| {
                if s.is_empty() {
                    vec![0.0; statements.len()]
                } else {
                    s
                }
            })
            .map_err(|e| e.to_string())
    };
    let both = similarity(&facets)?
        .into_iter()
        .zip(similarity(&with_situation)?)
        .map(|(f, s)| (Some(f), Some(s)))
        .collect();
    Ok((both, expanded.usage))
}

/// The chance that a relevant pair scores above an irrelevant one (ties count half).
pub fn area_under_roc(scored: &[ScoredRelevance], key: impl Fn(&ScoredRelevance) -> f32) -> f32 {
    crate::matchers::area_under_roc(scored.iter().map(|s| (key(s), s.pair.relevant)))
}

/// The report as Markdown: the calibration, then the worst mistakes at the threshold.
pub fn markdown(r: &RelevanceReport) -> String {
    use std::fmt::Write;
    let c = &r.calibration;
    let mut out = format!(
        "# Relevance judge — model {}\n\n{} pairs ({} relevant)\n\n\
         | score | threshold | AUC | half | precision | recall | F1 | pairs |\n\
         |---|---|---|---|---|---|---|---|\n",
        r.model, r.pairs, r.positives
    );
    for (name, cal, auc) in [
        ("P(yes) - bias (used)", c, r.auc),
        (
            "P(yes) alone",
            &r.calibration_without_contrast,
            r.auc_without_contrast,
        ),
    ]
    .into_iter()
    .chain(
        r.others
            .iter()
            .map(|o| (o.name.as_str(), &o.calibration, o.auc)),
    ) {
        for (half, m) in [
            ("calibration", &cal.calibration),
            ("held out", &cal.held_out),
        ] {
            let _ = writeln!(
                out,
                "| {name} | {:.3} | {auc:.3} | {half} | {:.2} | {:.2} | {:.2} | {} |",
                cal.threshold, m.precision, m.recall, m.f1, m.pairs
            );
        }
    }
    out.push_str(&crate::matchers::cost_line(&r.usage, r.seconds));
    let wrong = crate::matchers::confident_mistakes(
        &r.scored,
        |s| s.score,
        |s| s.pair.relevant,
        c.threshold,
        20,
    );
    out.push_str("## Mistakes, most confident first\n\n| score | P(yes) | label | question | statement |\n|---|---|---|---|---|\n");
    for s in wrong {
        let _ = writeln!(
            out,
            "| {:.2} | {:.2} | {} | {} | {} |",
            s.score,
            s.probability,
            if s.pair.relevant { "relevant" } else { "not" },
            s.pair.query,
            s.pair.statement
        );
    }
    out
}

/// Writes `table.md` and `records.json` under `out`.
pub fn write(out: &Path, report: &RelevanceReport) -> Result<(), EvalError> {
    crate::write_table_and_records(out, &markdown(report), report)
}
