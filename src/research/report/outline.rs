//! The report assembled in code before anything is written: which learnings go where.
//!
//! Every distinct learning is placed exactly once: a learning that says what an earlier one
//! said (same content words, or an embedding almost identical) is merged into it, which then
//! cites both; the learnings that answer a need of the reader go to *What this means for
//! you*; the best learning of each section opens the summary; the rest stay in their
//! direction's section, in tree order (broad before specific), grouped into paragraphs of at
//! most [`PARAGRAPH_LEARNINGS`]. Only debris, sections that are not about the question and
//! findings inside a section that are not about it either are left out, each logged with the
//! reason.

use std::collections::{BTreeMap, BTreeSet};

use super::needs::need_label;
use super::ReportInput;
use crate::checks::money::{self, Budget, Fit};
use crate::checks::text::{
    content_words, defines_a_question_term, dominant_script, foreign_script, jaccard,
    leans_on_context, names_a_phrase, numbered_plan_item, question_phrases, sentence_debris,
    NEAR_DUPLICATE_JACCARD,
};
use crate::embed::{cosine, EmbedError, Embedder};
use crate::research::tree::{one_line, Origin};

/// A section none of whose findings reaches this cosine (all-MiniLM-L6-v2) with the question
/// is about something else and is left out. On the printing-press research of #30 the
/// findings about the press score 0.45–0.49 against "How did the printing press change
/// Europe?" and those of a wild card about how historians name periods 0.24–0.28; a finding
/// is one narrow fact and scores lower against the question than a direction's question on the
/// same subject does (that cut, [`crate::research::node::ON_TOPIC`], is 0.43).
pub const OFF_TOPIC_SECTION: f32 = 0.3;
/// Inside a section that stays, a finding this far from the question (cosine below it, and
/// the passages it cites too) is about something else, unless it is close to a finding that
/// is about the question (at least [`OFF_TOPIC_SECTION`] to it) by [`NEAR_ON_TOPIC_FINDING`]. On the printing-press research
/// of #30 a drifted direction ("social and cultural norms of the 19th century") brought
/// definitions of culture and subcultures: 0.03–0.08 to the question and at most 0.21 to any
/// finding about the press, so they go; narrow facts on the subject stay by either test
/// (background on the Reformation 0.23 to the question, 0.44 to a finding on the press; on
/// "How should I brew tea?", "Matcha is whisked from powdered shade-grown leaves" is 0.15 to
/// the question but close to "Green tea is brewed at 70 to 80 degrees").
pub const OFF_TOPIC_FINDING: f32 = 0.2;
/// See [`OFF_TOPIC_FINDING`].
pub const NEAR_ON_TOPIC_FINDING: f32 = 0.3;
/// A finding is read under the section whose question it is closest to when that is closer
/// than its own section's question by at least this (all-MiniLM-L6-v2 cosine). On the
/// printing-press research of #30, "Printing by pressing an inked image onto paper appeared …"
/// was found under a drifted direction, "What were some of the social and cultural norms of
/// the 19th century?" (0.32 to it), and is 0.68 to the report's question: it read under the
/// drifted heading. Findings under the direction that found them differ by at most 0.1 from the
/// next section's question on that run.
pub const REHOME_MARGIN: f32 = 0.2;
/// A finding at least this close to the question (all-MiniLM-L6-v2 cosine) stays whatever the
/// finding judge says. The 1.5B judge reads some statements of the subject as a no (a
/// negative one: "Antibiotics are not effective against viruses or fungi" scored -0.01 for
/// "… how do antibiotics fight infections?", at cosine 0.49); on the labelled pairs of
/// `rudder eval finding-judge` any bar from 0.45 to 0.6 keeps recall at 0.958 (0.952 without
/// the rescue) and refuses 74 to 77 of the 170 off-topic findings the cosine cut keeps; the
/// lowest, which keeps most, is taken.
pub const JUDGE_RESCUE_COSINE: f32 = 0.45;
/// How far above the finding judge's threshold a finding must score to stay against the
/// embedding's cuts when it is also far from the question itself (cosine below
/// [`OFF_TOPIC_FINDING`]): a score just over the bar is what the 1.5B judge gives a stray
/// passage. On the eight guided questions of #29 a GLMM finding from another user's guide was
/// placed in a family-holiday report at cosine 0.14 and score 0.23 (threshold 0.19), and
/// another at -0.04 and 0.20; the far findings that answer Priya's survey question (cosine
/// 0.10–0.21) score 0.30–0.50.
pub const FAR_FINDING_JUDGE_FACTOR: f32 = 1.5;
/// A finding whose passages name nothing the question asks about (no two neighbouring terms
/// of it, [`question_phrases`]) is on another thing that shares a word with it when its
/// closest passage is below this cosine to the question (all-MiniLM-L6-v2, the passage
/// without its title), and the research read passages that do name it. On the eight guided
/// questions of #29 such passages that the judge kept were at 0.10–0.47 (Toronto 0.10,
/// Technical geography 0.29, Statistics 0.44, Vacation 0.46, Saw and Chainsaw 0.47); the
/// earplug guide, which says "earplugs for musicians" and never "earplugs for band
/// rehearsals", 0.57–0.64.
pub const UNNAMED_PASSAGE_CLOSE: f32 = 0.5;
/// Learnings per paragraph: what a 1.5B model connects reliably in one call.
pub const PARAGRAPH_LEARNINGS: usize = 3;
/// Learnings the summary states.
pub const SUMMARY_LEARNINGS: usize = 3;
/// From this many findings in the body, the summary restates its findings and the body keeps
/// them; below it, a report is too short for an opening that repeats it.
pub const RESTATING_SUMMARY_FINDINGS: usize = 5;
/// Learnings given per need.
pub const NEED_LEARNINGS: usize = 2;

/// Two learnings whose all-MiniLM-L6-v2 embeddings are this close say the same thing in other
/// words, even when their content words differ too much for the Jaccard test. On the examples
/// of `tests/report_real.rs` paraphrases score 0.88–0.94 and distinct facts on one topic at
/// most 0.64 ("Loose-leaf tea costs 10 to 20 euros per 100 grams" / "Tea bags cost far less
/// per cup").
pub const DUPLICATE_COSINE: f32 = 0.85;

/// A learning answers a need when their embeddings are at least this close (all-MiniLM-L6-v2;
/// the need is embedded as its label). Chosen on the examples of `tests/report_real.rs`: a
/// learning on the need's own subject scores 0.83–0.85 ("the cost of loose-leaf tea" / "Loose-
/// leaf black tea costs about 10 to 20 euros per 100 grams"), one on the need's topic that
/// does not answer it up to 0.56 ("safety of herbal tea in pregnancy" / "Herbal tea is made
/// from flowers, fruit and herbs"). A learning that answers the need only by inference
/// ("brewing for guests" / "A large teapot serves six cups") scores 0.36–0.40, no higher than
/// the topical ones, so no threshold keeps it without false matches: 0.6 gives up those
/// rather than claim a finding answers a need it does not.
pub const NEED_MATCH_COSINE: f32 = 0.6;

/// Scores, for each need (`[need][finding]`), whether each finding matters for the reader
/// because of it; None for a pair it could not score.
pub(super) type NeedJudge<'a> = dyn Fn(&[&str], &[&str]) -> Vec<Vec<Option<f32>>> + 'a;

/// A section before it is written.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct PlannedSection {
    pub direction: Option<usize>,
    /// The question of the node the section covers.
    pub question: String,
    /// The heading when the model's fail: the question's topic ([`topic_of`]).
    pub topic: String,
    /// Learning ids, paragraph by paragraph.
    pub paragraphs: Vec<Vec<usize>>,
}

/// A need and the learnings that answer it (empty: the sources do not cover it).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct PlannedNeed {
    pub label: String,
    pub learnings: Vec<usize>,
    /// A topic the user asked the report to cover ([`ReportInput::aspects`]), not a fact
    /// about them: its learnings stay in the body, and only an uncovered one is named.
    pub aspect: bool,
    /// Whether the report names it when no finding answers it: a topic the user asked for, or
    /// a need the question anticipates (not one of [`ReportInput::unanticipated_needs`]).
    pub named_when_uncovered: bool,
    /// The reader's budget, when the need is one ([`money::budget`]) and its learnings are the
    /// findings that state a price in its currency: the report then says in code how each
    /// price stands to it.
    pub budget: Option<Budget>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub(super) struct Outline {
    pub summary: Vec<usize>,
    /// Whether the summary's learnings are also in the body (see [`outline`]).
    pub summary_restates: bool,
    pub sections: Vec<PlannedSection>,
    pub needs: Vec<PlannedNeed>,
    /// Learnings that say what a placed one says, by the placed one: cited with it.
    pub merged: BTreeMap<usize, Vec<usize>>,
    /// Learnings left out, with the reason.
    pub unplaced: Vec<(usize, String)>,
    /// Of them, distinct findings the finding judge left out as not helping answer the
    /// question.
    pub judged_off: usize,
    /// Distinct findings left out as not about the question (by the cosine cuts or the
    /// finding judge), in the order left out.
    pub off_question: Vec<usize>,
}

/// A learning's text as a sentence: whitespace collapsed, a capital first, a full stop last.
pub(super) fn tidy_sentence(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut chars = flat.chars();
    let mut out = match chars.next() {
        Some(c) => c.to_uppercase().collect::<String>() + chars.as_str(),
        None => return String::new(),
    };
    if !out.ends_with(['.', '!', '?', '"', ')', '”', '’']) {
        out = out.trim_end_matches([',', ';', ':', '-']).to_string();
        out.push('.');
    }
    out
}

/// Leaves finding `l` out of the report as not about the question, with those merged into it,
/// for the reason `why`.
fn leave_out(
    l: usize,
    why: String,
    merged: &mut BTreeMap<usize, Vec<usize>>,
    unplaced: &mut Vec<(usize, String)>,
    off_question: &mut Vec<usize>,
    kept: &mut Vec<usize>,
) {
    for m in merged.remove(&l).unwrap_or_default() {
        unplaced.push((m, why.clone()));
    }
    unplaced.push((l, why));
    off_question.push(l);
    kept.retain(|&k| k != l);
}

/// Plans the report: sections from the directions, needs, summary. Every distinct finding is
/// placed once; those that cannot be are in [`Outline::unplaced`] with the reason.
///
/// `judge` scores findings by whether they help answer the question (the finding judge, used
/// when [`ReportInput::finding_judge`] is set; None for a finding it could not score).
/// `need_judge` scores, for each need (`[need][finding]`), whether each finding matters for the
/// reader because of it (the need judge, used when [`ReportInput::need_judge`] is set).
pub(super) fn outline(
    input: &ReportInput<'_>,
    embedder: &dyn Embedder,
    judge: &dyn Fn(&[&str]) -> Vec<Option<f32>>,
    need_judge: &NeedJudge<'_>,
) -> Result<Outline, EmbedError> {
    let tree = input.tree;
    // (direction, question, learnings in tree order). The root's own learnings come first;
    // a tree without directions is one section from the root.
    let mut sections: Vec<(Option<usize>, String, Vec<usize>)> = Vec::new();
    if tree.directions().is_empty() {
        let all = tree
            .subtree(0)
            .iter()
            .flat_map(|&n| tree.nodes[n].learnings.clone())
            .collect();
        sections.push((None, tree.nodes[0].question.clone(), all));
    } else {
        sections.push((
            None,
            tree.nodes[0].question.clone(),
            tree.root().learnings.clone(),
        ));
        for &d in tree.directions() {
            let learnings = tree
                .subtree(d)
                .iter()
                .flat_map(|&n| tree.nodes[n].learnings.clone())
                .collect();
            sections.push((Some(d), tree.nodes[d].question.clone(), learnings));
        }
    }

    // Embeddings of every candidate learning, the query and the needs, in one batch.
    let candidates: Vec<usize> = sections
        .iter()
        .flat_map(|s| s.2.iter().copied())
        .filter(|&l| l < input.learnings.len())
        .collect();
    // The reader's needs, then the topics they asked for.
    let labels: Vec<String> = input
        .needs
        .iter()
        .chain(input.aspects)
        .map(|n| need_label(n))
        .collect();
    let tidy: Vec<String> = candidates
        .iter()
        .map(|&l| tidy_sentence(&input.learnings[l].text))
        .collect();
    // The passages the candidates cite, once each: a narrow finding is on the question when
    // its passage is.
    let passage_keys: Vec<&String> = candidates
        .iter()
        .flat_map(|&l| input.learnings[l].sources.iter())
        .filter(|k| input.evidence.contains_key(*k))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut texts: Vec<&str> = tidy.iter().map(String::as_str).collect();
    texts.push(input.query);
    texts.extend(labels.iter().map(String::as_str));
    texts.extend(
        passage_keys
            .iter()
            .map(|k| input.evidence[*k].text.as_str()),
    );
    // The directions' questions (the root's is the query, embedded above).
    texts.extend(sections.iter().skip(1).map(|s| s.1.as_str()));
    let vectors = if candidates.is_empty() && labels.is_empty() {
        Vec::new()
    } else {
        embedder.embed(&texts)?
    };
    let passage_vectors: BTreeMap<&String, &[f32]> = passage_keys
        .iter()
        .enumerate()
        .filter_map(|(i, k)| {
            vectors
                .get(candidates.len() + 1 + labels.len() + i)
                .map(|v| (*k, v.as_slice()))
        })
        .collect();
    let tidy_of = |l: usize| -> &str {
        let i = candidates.iter().position(|&c| c == l).unwrap_or(0);
        tidy[i].as_str()
    };
    // A need that is a budget ("you have limited budget (120 dollars)") is met by the findings
    // that state a price in its currency, whatever their embeddings: "Cushioned daily trainers
    // cost about 100 to 110 dollars" is 0.17 to it.
    let budgets: Vec<Option<Budget>> = input.needs.iter().map(|n| money::budget(n)).collect();
    let priced_for_reader = |l: usize| {
        budgets
            .iter()
            .flatten()
            .any(|b| b.fit(tidy_of(l)).is_some())
    };
    // A finding looked up for one of the reader's needs was judged with the reader in view
    // (`research::steps::needs`); the question alone does not show why it matters: "Noise
    // damage often starts as tinnitus …" scored 0.12 for an earplug question, and it is why a
    // drummer whose ears ring after gigs should wear them at every rehearsal. Its lookup kept
    // it on the question (by its cosine or its passage's, or as part of a document the
    // research cites), so no cosine floor applies here: "Long study sessions are hard …
    // especially for people with ADHD" is 0.19 to an interview question.
    let looked_up_for_reader = |l: usize| {
        input
            .tree
            .nodes
            .get(input.learnings[l].node)
            .is_some_and(|n| n.origin == Origin::Need)
    };
    let vector = |l: usize| -> &[f32] {
        let i = candidates.iter().position(|&c| c == l).unwrap_or(0);
        &vectors[i]
    };
    let query_vector = vectors.get(candidates.len()).cloned().unwrap_or_default();
    let questions_start = candidates.len() + 1 + labels.len() + passage_keys.len();
    let section_vectors: Vec<Vec<f32>> = std::iter::once(query_vector.clone())
        .chain((1..sections.len()).map(|i| {
            vectors
                .get(questions_start + i - 1)
                .cloned()
                .unwrap_or_default()
        }))
        .collect();

    // Dropped: learnings that are debris even tidied. Merged: those that say what an earlier
    // one said, whose citations the earlier one takes.
    let mut unplaced: Vec<(usize, String)> = Vec::new();
    let script = dominant_script(input.query);
    let mut kept: Vec<usize> = Vec::new();
    let mut kept_words: Vec<BTreeSet<String>> = Vec::new();
    let mut merged: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (i, &l) in candidates.iter().enumerate() {
        if tidy[i].is_empty() {
            unplaced.push((l, "empty".into()));
            continue;
        }
        let passages: Vec<&str> = input.learnings[l]
            .sources
            .iter()
            .filter_map(|k| input.evidence.get(k))
            .map(|e| e.text.as_str())
            .collect();
        if let Some(why) =
            sentence_debris(&tidy[i]).or_else(|| foreign_script(&tidy[i], script, &passages))
        {
            unplaced.push((l, format!("debris: {why}")));
            continue;
        }
        let words = content_words(&tidy[i]);
        let same = kept.iter().zip(&kept_words).find(|(&k, w)| {
            jaccard(w, &words) >= NEAR_DUPLICATE_JACCARD
                || cosine(vector(k), &vectors[i]) >= DUPLICATE_COSINE
        });
        if let Some((&k, _)) = same {
            tracing::debug!("report: learning {l} says what learning {k} says; merged");
            merged.entry(k).or_default().push(l);
            continue;
        }
        kept.push(l);
        kept_words.push(words);
    }
    let mut judged_off = 0;
    let mut off_question: Vec<usize> = Vec::new();
    // Findings the judge finds help answer the question: a section's cosine to the question
    // does not drop them (one far from the question itself must clear a higher bar,
    // [`FAR_FINDING_JUDGE_FACTOR`]).
    let mut judged_on: BTreeMap<usize, f32> = BTreeMap::new();
    // Findings the chat model finds do not help answer the question, whatever words they
    // share with it ("Gliders are fixed-wing aircraft …" for a long flight with a toddler):
    // left out with those merged into them. When every finding goes, the report says the
    // sources hold nothing that answers the question.
    if let Some(threshold) = input.finding_judge.filter(|_| !kept.is_empty()) {
        let texts: Vec<&str> = kept
            .iter()
            .map(|l| {
                let i = candidates.iter().position(|c| c == l).unwrap_or(0);
                tidy[i].as_str()
            })
            .collect();
        let scores = judge(&texts);
        let mut off: Vec<(usize, f32, f32)> = Vec::new();
        for (&l, score) in kept.iter().zip(&scores) {
            let close = if query_vector.is_empty() {
                0.0
            } else {
                cosine(vector(l), &query_vector)
            };
            let bar = if close < OFF_TOPIC_FINDING {
                threshold * FAR_FINDING_JUDGE_FACTOR
            } else {
                threshold
            };
            if let Some(score) = score.filter(|&s| s >= bar) {
                judged_on.insert(l, score);
            }
            if let Some(score) = score.filter(|&s| s < threshold) {
                if close >= JUDGE_RESCUE_COSINE {
                    tracing::debug!(
                        "report: finding {l} kept though the judge scores it {score:.2}: \
                         its cosine to the question is {close:.2}"
                    );
                } else if looked_up_for_reader(l) {
                    tracing::debug!(
                        "report: finding {l} kept though the judge scores it {score:.2}: it was \
                         looked up for a need of the reader"
                    );
                } else if close >= OFF_TOPIC_FINDING && priced_for_reader(l) {
                    // What the thing costs is on the question for a reader with a budget: the
                    // judge left out "A pair costs about 150 to 200 euros" for an earplug
                    // question whose reader can spend 200 euros.
                    tracing::debug!(
                        "report: finding {l} kept though the judge scores it {score:.2}: it \
                         gives a price in the currency of the reader's budget"
                    );
                } else {
                    off.push((l, score, close));
                }
            }
        }
        judged_off = off.len();
        for (l, score, close) in off {
            let why = format!(
                "the model finds it does not help answer the question (score {score:.2} < \
                 {threshold:.2}; cosine {close:.2} < {JUDGE_RESCUE_COSINE})"
            );
            leave_out(
                l,
                why,
                &mut merged,
                &mut unplaced,
                &mut off_question,
                &mut kept,
            );
        }
    }
    // Findings from passages on another thing that shares a word with the question: the 1.5B
    // judge keeps "A chainsaw is a portable handheld power saw …" for a table saw and
    // "Technical geography is the branch of geography …" for a technical interview. When the
    // research found passages that name what the question asks about, one that names none of
    // it and is not close to the question is on something else. A passage of a document that
    // names it elsewhere is on it: the interview guide's three-week plan never says "technical
    // interview"; its first passage does.
    let phrases = question_phrases(input.query);
    let naming_titles: BTreeSet<&str> = input
        .evidence
        .values()
        .filter(|e| names_a_phrase(&format!("{}. {}", e.title, e.text), &phrases))
        .map(|e| e.title.as_str())
        .collect();
    let names_the_question = |k: &String| {
        input
            .evidence
            .get(k)
            .is_some_and(|e| naming_titles.contains(e.title.as_str()))
    };
    if !query_vector.is_empty() && passage_keys.iter().any(|k| names_the_question(k)) {
        let unnamed: Vec<(usize, f32)> = kept
            .iter()
            .filter_map(|&l| {
                let sources = &input.learnings[l].sources;
                if sources.iter().any(names_the_question)
                    || looked_up_for_reader(l)
                    || priced_for_reader(l)
                {
                    return None;
                }
                let close = sources
                    .iter()
                    .filter_map(|k| passage_vectors.get(k))
                    .map(|v| cosine(v, &query_vector))
                    .reduce(f32::max)?;
                (close < UNNAMED_PASSAGE_CLOSE).then_some((l, close))
            })
            .collect();
        for (l, close) in unnamed {
            let why = format!(
                "its passages name nothing the question asks about and are at most {close:.2} \
                 to it (< {UNNAMED_PASSAGE_CLOSE})"
            );
            leave_out(
                l,
                why,
                &mut merged,
                &mut unplaced,
                &mut off_question,
                &mut kept,
            );
        }
    }
    for s in &mut sections {
        s.2.retain(|l| kept.contains(l));
    }

    // A finding goes where a reader looks for it: under the section whose question it is
    // about, when a follow-up that drifted found it under a question it does not answer.
    if sections.len() > 1 && section_vectors.iter().all(|v| !v.is_empty()) {
        let mut moves: Vec<(usize, usize, usize)> = Vec::new();
        for (i, s) in sections.iter().enumerate() {
            for &l in &s.2 {
                let own = cosine(vector(l), &section_vectors[i]);
                let (best, score) = section_vectors
                    .iter()
                    .enumerate()
                    .map(|(j, v)| (j, cosine(vector(l), v)))
                    .max_by(|a, b| a.1.total_cmp(&b.1))
                    .unwrap_or((i, own));
                if best != i && score - own >= REHOME_MARGIN {
                    tracing::debug!(
                        "report: finding {l} reads under section {best} ({score:.2}), not {i} ({own:.2})"
                    );
                    moves.push((l, i, best));
                }
            }
        }
        for (l, from, to) in moves {
            sections[from].2.retain(|&x| x != l);
            sections[to].2.push(l);
        }
        for s in &mut sections {
            s.2.sort_by_key(|l| kept.iter().position(|k| k == l));
        }
    }

    // Off-topic sections: findings none of which is about the question (a wild card that
    // found only background, a passage on something else) are left out.
    if !query_vector.is_empty() {
        let relevance: Vec<f32> = sections
            .iter()
            .map(|s| {
                s.2.iter()
                    .map(|&l| cosine(vector(l), &query_vector))
                    .fold(f32::MIN, f32::max)
            })
            .collect();
        // When nothing reaches the cut, the closest section stays: a weak answer with its
        // sources beats a report that says nothing was found.
        let best = relevance
            .iter()
            .enumerate()
            .filter(|(i, _)| !sections[*i].2.is_empty())
            .max_by(|a, b| a.1.total_cmp(b.1))
            .map(|(i, _)| i);
        let any_on_topic = relevance.iter().any(|&r| r >= OFF_TOPIC_SECTION);
        for (index, s) in sections.iter_mut().enumerate() {
            let r = relevance[index];
            tracing::debug!("report: section {:?} relevance {r:.2}", s.1);
            if s.2.is_empty() || r >= OFF_TOPIC_SECTION || (!any_on_topic && best == Some(index)) {
                continue;
            }
            // A finding on the question can be far from it by the embedding when the question
            // is general and the finding narrow: "Counts are not normal data …" is 0.21 to
            // "Which statistical approach should I use to analyze my field survey data?". The
            // model, asked, finds it helps; its section stays with such findings only.
            // A finding looked up for the reader stays as well (see `looked_up_for_reader`).
            let (stays, goes): (Vec<usize>, Vec<usize>) =
                s.2.iter()
                    .partition(|&&l| judged_on.contains_key(&l) || looked_up_for_reader(l));
            for &l in &stays {
                // A finding looked up for the reader may not have been judged.
                tracing::debug!(
                    "report: finding {l} kept though its section is far from the question \
                     (relevance {r:.2}; the finding {:.2}): the judge scores it {:?}",
                    cosine(vector(l), &query_vector),
                    judged_on.get(&l)
                );
            }
            for &l in &goes {
                off_question.push(l);
                unplaced.push((
                    l,
                    format!(
                        "its section ({}) is not about the question (relevance {r:.2})",
                        one_line(&s.1, 80)
                    ),
                ));
            }
            s.2 = stays;
        }
    }

    // Off-topic findings inside a section that stays: a drifted follow-up can bring a passage
    // on something else into a section that also has findings on the question. Only when some
    // finding is about the question, to judge the rest by.
    if !query_vector.is_empty() {
        let relevance = |l: usize| cosine(vector(l), &query_vector);
        // The finding or a passage it cites, whichever is closer to the question.
        let grounded_relevance = |l: usize| {
            input.learnings[l]
                .sources
                .iter()
                .filter_map(|k| passage_vectors.get(k))
                .map(|v| cosine(v, &query_vector))
                .fold(relevance(l), f32::max)
        };
        let anchors: Vec<usize> = sections
            .iter()
            .flat_map(|s| s.2.iter().copied())
            .filter(|&l| relevance(l) >= OFF_TOPIC_SECTION)
            .collect();
        if !anchors.is_empty() {
            for s in &mut sections {
                s.2.retain(|&l| {
                    let r = grounded_relevance(l);
                    if r >= OFF_TOPIC_FINDING || judged_on.contains_key(&l) {
                        return true;
                    }
                    let near = anchors
                        .iter()
                        .filter(|&&a| a != l)
                        .map(|&a| cosine(vector(l), vector(a)))
                        .fold(0.0f32, f32::max);
                    if near >= NEAR_ON_TOPIC_FINDING {
                        return true;
                    }
                    off_question.push(l);
                    unplaced.push((
                        l,
                        format!(
                            "neither it nor its passage is about the question (relevance \
                             {r:.2}; {near:.2} to the closest finding that is)"
                        ),
                    ));
                    false
                });
            }
        }
    }

    // Needs first: each learning goes to the need it is closest to, when close enough; each
    // need keeps its best few. (Before the summary, so a need the summary would answer is
    // not called uncovered.)
    let need_start = (candidates.len() + 1).min(vectors.len());
    let need_vectors = &vectors[need_start..(need_start + labels.len()).min(vectors.len())];
    let reader_needs = input.needs.len().min(need_vectors.len());
    let mut answers: Vec<Vec<(f32, usize)>> = vec![Vec::new(); labels.len()];
    // The need judge reads what the embeddings miss: "Physiotherapists often suggest a
    // well-cushioned shoe for runners returning from patellofemoral pain" is 0.49 to "you have
    // knee pain", below the cosine match, and answers it.
    let judged_needs: BTreeMap<usize, Vec<Option<f32>>> = match input.need_judge {
        Some(_) if reader_needs > 0 => {
            let ls: Vec<usize> = sections.iter().flat_map(|s| s.2.iter().copied()).collect();
            let texts: Vec<&str> = ls
                .iter()
                .map(|l| {
                    let i = candidates.iter().position(|c| c == l).unwrap_or(0);
                    tidy[i].as_str()
                })
                .collect();
            let needs: Vec<&str> = labels[..reader_needs].iter().map(String::as_str).collect();
            let scores = if texts.is_empty() {
                Vec::new()
            } else {
                need_judge(&needs, &texts)
            };
            ls.iter()
                .enumerate()
                .map(|(k, &l)| {
                    let of_finding = (0..reader_needs)
                        .map(|n| scores.get(n).and_then(|s| s.get(k).copied().flatten()))
                        .collect();
                    (l, of_finding)
                })
                .collect()
        }
        _ => BTreeMap::new(),
    };
    // A need that is a budget is met by the findings that state a price in its currency (see
    // `budgets` above), before any other need, those within the budget first.
    for s in &sections {
        for &l in &s.2 {
            let priced = budgets
                .iter()
                .enumerate()
                .find_map(|(n, b)| Some((n, b.as_ref()?.fit(tidy_of(l))?)));
            let best = need_vectors[..reader_needs]
                .iter()
                .enumerate()
                .map(|(n, v)| (n, cosine(vector(l), v)))
                .max_by(|a, b| a.1.total_cmp(&b.1));
            // Close by the embeddings first (ranked above any the judge gives), else the need
            // whose judge score plus cosine is highest, at or above the judge's threshold.
            let judged = input.need_judge.and_then(|threshold| {
                judged_needs
                    .get(&l)?
                    .iter()
                    .enumerate()
                    .filter_map(|(n, score)| {
                        score.map(|s| (n, s + cosine(vector(l), &need_vectors[n])))
                    })
                    .filter(|&(_, s)| s >= threshold)
                    .max_by(|a, b| a.1.total_cmp(&b.1))
            });
            match (priced, best, judged) {
                (Some((n, fit)), _, _) => {
                    let rank = match fit {
                        Fit::Within => 4.0,
                        Fit::Partly => 3.5,
                        Fit::Above => 3.0,
                    };
                    answers[n].push((rank, l));
                }
                (_, Some((n, score)), _) if score >= NEED_MATCH_COSINE => {
                    answers[n].push((1.0 + score, l));
                }
                (_, _, Some((n, score))) => {
                    tracing::debug!(
                        need = %labels[n],
                        score,
                        "report: the need judge finds a finding answers a need"
                    );
                    answers[n].push((score, l));
                }
                _ => {}
            }
            // A topic asked for is answered by any finding close enough, which stays put.
            for (a, v) in need_vectors.iter().enumerate().skip(reader_needs) {
                let score = cosine(vector(l), v);
                if score >= NEED_MATCH_COSINE {
                    answers[a].push((score, l));
                }
            }
        }
    }
    let mut needs = Vec::new();
    let mut given: Vec<usize> = Vec::new();
    // "you have a budget" beside "you have limited budget (120 dollars)" says the same with
    // less: it takes no finding and is never named as uncovered.
    let has_budget = budgets.iter().any(Option::is_some);
    for (n, (label, mut found)) in labels.into_iter().zip(answers).enumerate() {
        let vaguer_budget = n < reader_needs
            && has_budget
            && budgets[n].is_none()
            && money::speaks_of_money(&input.needs[n]);
        if vaguer_budget {
            found.clear();
        }
        found.sort_by(|a, b| b.0.total_cmp(&a.0));
        found.truncate(NEED_LEARNINGS);
        // The finding that answers the need best comes first, since the need's opener
        // ("Since you have knee pain …") is read with it; the rest follow in tree order, which
        // reads better than score order.
        let mut learnings: Vec<usize> = found.into_iter().map(|(_, l)| l).collect();
        if learnings.len() > 2 {
            learnings[1..].sort_by_key(|l| kept.iter().position(|k| k == l));
        }
        let aspect = n >= reader_needs;
        let named_when_uncovered =
            aspect || (!vaguer_budget && !input.unanticipated_needs.contains(&input.needs[n]));
        // A budget is met by prices alone (they rank first, so a finding the judge gave it
        // besides stays in the body); with none, it is not met ("Since you can spend 200 euros:
        // Custom-moulded earplugs are made from an impression of the ear canal" says no price).
        let budget = budgets.get(n).copied().flatten();
        if let Some(b) = budget {
            learnings.retain(|&l| b.fit(tidy_of(l)).is_some());
        }
        let budget = budget.filter(|_| !learnings.is_empty());
        if !aspect {
            given.extend(&learnings);
        }
        needs.push(PlannedNeed {
            label,
            learnings,
            aspect,
            named_when_uncovered,
            budget,
        });
    }
    for s in &mut sections {
        s.2.retain(|l| !given.contains(l));
    }

    // The summary, a direct answer: the strongest findings, each section's closest to the
    // query. With enough findings for a body, the summary restates them and the body keeps
    // them (the opening answer agrees with the body); with a few, the summary says them once.
    let body_findings: usize = sections.iter().map(|s| s.2.len()).sum();
    let mut summary_restates = body_findings >= RESTATING_SUMMARY_FINDINGS;
    let mut summary = Vec::new();
    // A finding's strength as an answer: its closeness to the question; with the finding
    // judge on, those it finds help answer come first, before those kept only by their cosine
    // ("The marathon can be completed by running or with a run/walk strategy", scored 0.13,
    // opened Maya's report).
    let judged = input.finding_judge.is_some();
    let strength = |l: usize| -> (bool, f32) {
        (
            judged && !judged_on.contains_key(&l),
            cosine(vector(l), &query_vector),
        )
    };
    let stronger = |a: usize, b: usize| {
        let (a_weak, a_score) = strength(a);
        let (b_weak, b_score) = strength(b);
        b_weak.cmp(&a_weak).then(a_score.total_cmp(&b_score))
    };
    let mut by_strength: Vec<((bool, f32), usize, usize)> = Vec::new();
    for (index, s) in sections.iter().enumerate() {
        // The opening is read first and alone: a finding that leans on a sentence before it
        // ("… appeared later that century"), or one item of a numbered plan ("Week 2: …"),
        // cannot lead it while another can.
        let standalone: Vec<usize> =
            s.2.iter()
                .copied()
                .filter(|&l| {
                    let text = &input.learnings[l].text;
                    !leans_on_context(text)
                        && !numbered_plan_item(text)
                        && !defines_a_question_term(text, input.query)
                })
                .collect();
        if let Some(&best) = standalone.iter().max_by(|&&a, &&b| stronger(a, b)) {
            by_strength.push((strength(best), index, best));
        }
    }
    // Only findings that lean on context: the best of them, rather than no opening at all.
    if by_strength.is_empty() {
        for (index, s) in sections.iter().enumerate() {
            if let Some(&best) = s.2.iter().max_by(|&&a, &&b| stronger(a, b)) {
                by_strength.push((strength(best), index, best));
            }
        }
    }
    // The root's own findings answer the question itself: they lead, unless only a weaker
    // kind (kept by its cosine alone) is there.
    by_strength.sort_by(|a, b| {
        (a.0 .0)
            .cmp(&b.0 .0)
            .then((a.1 != 0).cmp(&(b.1 != 0)))
            .then(b.0 .1.total_cmp(&a.0 .1))
    });
    // A finding the judge finds does not help answer the question stays in the body, but
    // does not open a report that has one it finds does.
    if by_strength.iter().any(|s| !s.0 .0) {
        by_strength.retain(|s| !s.0 .0);
    }
    for &(_, index, best) in by_strength.iter().take(SUMMARY_LEARNINGS) {
        summary.push(best);
        if !summary_restates {
            sections[index].2.retain(|&l| l != best);
        }
    }
    // Every finding went to the reader's needs: the opening restates the strongest of them,
    // so the report still opens with an answer.
    if summary.is_empty() && !given.is_empty() {
        let mut strongest = given.clone();
        strongest.sort_by(|&a, &b| {
            cosine(vector(b), &query_vector).total_cmp(&cosine(vector(a), &query_vector))
        });
        // Findings that stand alone lead; one that leans on context only when none does.
        strongest.sort_by_key(|&l| leans_on_context(&input.learnings[l].text));
        let standalone = strongest
            .iter()
            .filter(|&&l| !leans_on_context(&input.learnings[l].text))
            .count()
            .max(1);
        summary = strongest
            .into_iter()
            .take(SUMMARY_LEARNINGS.min(standalone))
            .collect();
        summary_restates = true;
    }
    // Reading order: the sections' order.
    summary.sort_by_key(|l| kept.iter().position(|k| k == l));

    // A finding that leans on a sentence before it ("This was the first …") is read right
    // after a finding of its section that cites the same passage (what it leans on); with no
    // such finding it would be read as it stands, so it is left out.
    let leans = |l: usize| leans_on_context(&input.learnings[l].text);
    let same_passage = |a: usize, b: usize| {
        input.learnings[a]
            .sources
            .iter()
            .any(|k| input.learnings[b].sources.contains(k))
    };
    for s in &mut sections {
        let mut ordered: Vec<usize> = Vec::new();
        let mut leaning: Vec<usize> = s.2.iter().copied().filter(|&l| leans(l)).collect();
        for &l in s.2.iter().filter(|&&l| !leans(l)) {
            ordered.push(l);
            let (after, rest): (Vec<usize>, Vec<usize>) =
                leaning.into_iter().partition(|&x| same_passage(x, l));
            ordered.extend(after);
            leaning = rest;
        }
        for l in leaning {
            unplaced.push((
                l,
                "it leans on a sentence before it, and no finding of its section from the same \
                 passage comes first"
                    .into(),
            ));
        }
        s.2 = ordered;
    }
    let sections = sections
        .into_iter()
        .filter_map(|(direction, question, learnings)| {
            (!learnings.is_empty()).then(|| PlannedSection {
                direction,
                topic: topic_of(&question, direction.is_none()),
                question,
                paragraphs: paragraphs(&learnings, &leans),
            })
        })
        .collect();
    for (l, why) in &unplaced {
        tracing::info!(
            "report: finding {l} not placed ({why}): {}",
            one_line(&input.learnings[*l].text, 160)
        );
    }
    Ok(Outline {
        summary,
        summary_restates,
        sections,
        needs,
        merged,
        unplaced,
        judged_off,
        off_question,
    })
}

/// Openers of a "what" question that leave its topic when dropped ("What were some of the key
/// figures …" → "key figures …"), longest first.
const TOPIC_OPENERS: &[&str] = &[
    "what were some of the ",
    "what are some of the ",
    "what were some ",
    "what are some ",
    "what were the ",
    "what are the ",
    "what was the ",
    "what is the ",
    "which were the ",
    "which are the ",
    "who were the ",
    "who are the ",
];

/// A section's fallback heading: "Overview" for the root's own findings (its question is the
/// report's), the topic of a "what" question, or else the question tidied.
pub(super) fn topic_of(question: &str, root: bool) -> String {
    if root {
        return "Overview".into();
    }
    let flat = one_line(question, 400);
    let lower = flat.to_lowercase();
    let rest = TOPIC_OPENERS
        .iter()
        .find(|o| lower.starts_with(*o))
        .map_or(flat.as_str(), |o| &flat[o.len()..]);
    let rest = rest.trim().trim_end_matches(['?', '.', '!']).trim();
    let mut chars = rest.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().collect::<String>() + chars.as_str(),
        None => flat,
    }
}

/// Learnings in groups of at most [`PARAGRAPH_LEARNINGS`], as even as possible (7 → 3, 2, 2),
/// so no paragraph is a lone fact after two full ones. A paragraph never opens on a finding
/// that `leans` on the sentence before it: that finding closes the paragraph before.
fn paragraphs(learnings: &[usize], leans: &dyn Fn(usize) -> bool) -> Vec<Vec<usize>> {
    let mut groups = even_groups(learnings);
    for i in 1..groups.len() {
        while groups[i].first().is_some_and(|&l| leans(l)) {
            let l = groups[i].remove(0);
            groups[i - 1].push(l);
        }
    }
    groups.retain(|g| !g.is_empty());
    groups
}

fn even_groups(learnings: &[usize]) -> Vec<Vec<usize>> {
    if learnings.is_empty() {
        return Vec::new();
    }
    let count = learnings.len().div_ceil(PARAGRAPH_LEARNINGS);
    let base = learnings.len() / count;
    let extra = learnings.len() % count;
    let mut out = Vec::new();
    let mut start = 0;
    for i in 0..count {
        let len = base + usize::from(i < extra);
        out.push(learnings[start..start + len].to_vec());
        start += len;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paragraphs_are_even_groups_of_at_most_three() {
        let sizes = |n: usize| -> Vec<usize> {
            paragraphs(&(0..n).collect::<Vec<_>>(), &|_| false)
                .iter()
                .map(Vec::len)
                .collect()
        };
        assert_eq!(sizes(0), Vec::<usize>::new());
        assert_eq!(sizes(1), vec![1]);
        assert_eq!(sizes(4), vec![2, 2]);
        assert_eq!(sizes(7), vec![3, 2, 2]);
        assert_eq!(sizes(9), vec![3, 3, 3]);
    }

    #[test]
    fn a_paragraph_never_opens_on_a_finding_that_leans_on_the_one_before() {
        // Finding 3 leans on finding 2: it closes the first paragraph, not opens the second.
        let groups = paragraphs(&[0, 1, 2, 3, 4, 5], &|l| l == 3);
        assert_eq!(groups, vec![vec![0, 1, 2, 3], vec![4, 5]]);
    }

    #[test]
    fn fallback_headings_name_a_topic_not_the_question() {
        assert_eq!(
            topic_of(
                "What were some of the key figures associated with the printing press?",
                false
            ),
            "Key figures associated with the printing press"
        );
        assert_eq!(
            topic_of("How did the press change Europe?", true),
            "Overview"
        );
        assert_eq!(
            topic_of("How did the press change trade?", false),
            "How did the press change trade"
        );
    }

    #[test]
    fn learnings_become_tidy_sentences() {
        assert_eq!(
            tidy_sentence("  green tea  is\nsteamed"),
            "Green tea is steamed."
        );
        assert_eq!(tidy_sentence("It costs $5;"), "It costs $5.");
        assert_eq!(tidy_sentence("Done!"), "Done!");
        assert_eq!(tidy_sentence(""), "");
    }
}
