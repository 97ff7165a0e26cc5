//! Candidate retrieval: hybrid history search with each expansion, and their fusion.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use super::expand::{Expanded, Expansion};
use super::ProfileError;
use crate::embed::Embedder;
use crate::history::{Filter, History, SearchMode};
use crate::retrieval::reciprocal_rank_fusion;

/// Which expansion(s) drive retrieval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExpansionMode {
    Raw,
    Cot,
    Pseudo,
    /// Facet probes: each line about the user's situation searched, the lists fused.
    Facets,
    /// Reciprocal rank fusion of every expansion's result lists.
    Fused,
}

impl ExpansionMode {
    pub const ALL: [ExpansionMode; 5] = [
        ExpansionMode::Raw,
        ExpansionMode::Cot,
        ExpansionMode::Pseudo,
        ExpansionMode::Facets,
        ExpansionMode::Fused,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ExpansionMode::Raw => "raw",
            ExpansionMode::Cot => "cot",
            ExpansionMode::Pseudo => "pseudo",
            ExpansionMode::Facets => "facets",
            ExpansionMode::Fused => "fused",
        }
    }

    /// The expansions this mode needs.
    pub fn expansions(self) -> &'static [Expansion] {
        match self {
            ExpansionMode::Raw => &[Expansion::Raw],
            ExpansionMode::Cot => &[Expansion::Cot],
            ExpansionMode::Pseudo => &[Expansion::Pseudo],
            ExpansionMode::Facets => &[Expansion::Facets],
            ExpansionMode::Fused => &Expansion::ALL,
        }
    }
}

impl std::str::FromStr for ExpansionMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        ExpansionMode::ALL
            .into_iter()
            .find(|m| m.as_str() == s)
            .ok_or_else(|| {
                format!("unknown expansion {s:?} (expected raw, cot, pseudo, facets or fused)")
            })
    }
}

/// One line for each kind of personal fact that changes an answer (health, budget, family,
/// what they own, place, schedule, job, skill, answer style), searched beside the model's
/// facet lines. On the planted-needs set they raised recall@20 of the planting sessions from
/// 0.235 to 0.352 (`rudder eval quality`, 16 questions; 0.24 → 0.36 on users u0–u3 and
/// 0.25 → 0.33 on u4–u7); a second wording of the same kinds gave 0.303, both together 0.350.
pub const SITUATION_PROBES: &[&str] = &[
    "my doctor says my injury still hurts",
    "I set aside a budget and can spend at most this many dollars",
    "for me, my partner and our kids",
    "what I already own and use at home",
    "where I live, my apartment and the weather here",
    "my work shifts leave me little time each week",
    "I work as a professional in my job",
    "I am a complete beginner and have never done this before",
    "please keep answers short, in bullet points",
];

/// How a user wants answers is the same for every question, and the sessions that say it
/// ("from now on, short bullet points please") share no word with any question, so the fused
/// ranking of a question's lines rarely reaches them: on the planted set one of four users
/// whose tone need asks for a form had it in the profile of their own first question. Each
/// line names a family of answer forms; its best session joins the candidates
/// ([`style_sessions`]), read for how the user wants answers.
pub const STYLE_PROBES: &[&str] = &[
    "please keep answers short, in bullet points",
    "give me numbered step-by-step instructions or a checklist to follow",
    "explain it in plain words, without jargon",
];

/// The sessions the [`STYLE_PROBES`] lines found, to be read for how the user wants answers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StyleSessions {
    /// The best chat of each line, once each.
    pub read: Vec<i64>,
    /// Those the question's candidates did not hold, marked [`Candidate::style_only`]: only
    /// what they say of how the user wants answers is kept.
    pub added: Vec<Candidate>,
}

/// The best chat of each [`STYLE_PROBES`] line. Only chats: how someone wants answers is said
/// to an assistant, and a search for a "fieldwork equipment checklist" is no wish about
/// answers.
pub fn style_sessions(
    history: &mut History,
    embedder: Option<(&dyn Embedder, &str)>,
    filter: &Filter,
    candidates: &[Candidate],
) -> Result<StyleSessions, ProfileError> {
    let chats = Filter {
        kinds: vec![crate::history::Kind::Chat],
        ..filter.clone()
    };
    let mut out = StyleSessions::default();
    for probe in STYLE_PROBES {
        let hits = history.search(probe, &chats, 1, SearchMode::Hybrid, embedder)?;
        for hit in hits {
            if out.read.contains(&hit.id) {
                continue;
            }
            out.read.push(hit.id);
            if !candidates.iter().any(|c| c.id == hit.id) {
                out.added.push(Candidate {
                    id: hit.id,
                    score: 0.0,
                    probe_only: true,
                    style_only: true,
                });
            }
        }
    }
    Ok(out)
}

/// A retrieved history entry.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    pub id: i64,
    /// Fused reciprocal-rank score (higher is better).
    pub score: f32,
    /// Only a [`SITUATION_PROBES`] line found it: nothing searched for this question did, so
    /// what it says about the user is held to a higher bar
    /// ([`super::ProfileOptions::probe_only_margin`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub probe_only: bool,
    /// Only a [`STYLE_PROBES`] line found it: it is read for how the user wants answers and
    /// nothing else.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub style_only: bool,
}

/// The top `n` sessions for `mode`, using the already computed `expanded` texts (each
/// expansion the mode needs must be among them). Each text (each line of a facet expansion) is
/// searched with hybrid search, and the lists are fused by reciprocal rank.
pub fn retrieve(
    history: &mut History,
    embedder: Option<(&dyn Embedder, &str)>,
    expanded: &[Expanded],
    mode: ExpansionMode,
    filter: &Filter,
    n: usize,
) -> Result<Vec<Candidate>, ProfileError> {
    let mut lists: Vec<Vec<i64>> = Vec::new();
    // What the question's own texts found; the rest came from the situation probes alone.
    let mut found_for_question: HashSet<i64> = HashSet::new();
    for want in mode.expansions() {
        let Some(e) = expanded.iter().find(|e| e.expansion == *want) else {
            return Err(ProfileError::Invalid(format!(
                "the {} expansion was not computed",
                want.as_str()
            )));
        };
        // Facet lines are searched one by one: each names a different part of the user's
        // situation, and one long text would match none of them well.
        let texts: Vec<&str> = match e.expansion {
            Expansion::Facets => e.text.lines().filter(|l| !l.trim().is_empty()).collect(),
            _ => vec![e.text.as_str()],
        };
        for text in texts {
            let hits = history.search(text, filter, n, SearchMode::Hybrid, embedder)?;
            found_for_question.extend(hits.iter().map(|h| h.id));
            lists.push(hits.into_iter().map(|h| h.id).collect());
        }
        // The model's facet lines are often generic ("I live in a small town"); the kinds of
        // fact that change an answer are known, so each is searched as well, worded as a user
        // would say it. Hybrid search: their words ("budget", "dollars", "beginner") matter.
        if e.expansion == Expansion::Facets {
            for probe in SITUATION_PROBES {
                let hits = history.search(probe, filter, n, SearchMode::Hybrid, embedder)?;
                lists.push(hits.into_iter().map(|h| h.id).collect());
            }
        }
    }
    let refs: Vec<&[i64]> = lists.iter().map(Vec::as_slice).collect();
    Ok(reciprocal_rank_fusion(&refs, n)
        .into_iter()
        .map(|(id, score)| Candidate {
            id,
            score,
            probe_only: !found_for_question.contains(&id),
            style_only: false,
        })
        .collect())
}
