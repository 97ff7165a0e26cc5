//! The report assembled in code before anything is written: which learnings go where.
//!
//! Every learning is placed at most once: a learning that says what an earlier one said
//! (same content words, or an embedding almost identical) is dropped; the best learning of
//! each section opens the summary; the learnings that answer a need of the reader go to
//! *What this means for you*; the rest stay in their direction's section, in tree order
//! (broad before specific), grouped into paragraphs of at most [`PARAGRAPH_LEARNINGS`].

use std::collections::BTreeSet;

use super::needs::need_label;
use super::ReportInput;
use crate::checks::text::{content_words, jaccard, sentence_debris, NEAR_DUPLICATE_JACCARD};
use crate::embed::{cosine, EmbedError, Embedder};

/// Learnings written per section: three paragraphs of three.
pub const MAX_SECTION_LEARNINGS: usize = 9;
/// Learnings per paragraph: what a 1.5B model connects reliably in one call.
pub const PARAGRAPH_LEARNINGS: usize = 3;
/// Learnings the summary states.
pub const SUMMARY_LEARNINGS: usize = 3;
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

/// A section before it is written.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct PlannedSection {
    pub direction: Option<usize>,
    /// The question of the node the section covers (the fallback heading).
    pub question: String,
    /// Learning ids, paragraph by paragraph.
    pub paragraphs: Vec<Vec<usize>>,
}

/// A need and the learnings that answer it (empty: the sources do not cover it).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct PlannedNeed {
    pub label: String,
    pub learnings: Vec<usize>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub(super) struct Plan {
    pub summary: Vec<usize>,
    pub sections: Vec<PlannedSection>,
    pub needs: Vec<PlannedNeed>,
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

/// Plans the report: sections from the directions, summary, needs.
pub(super) fn plan(input: &ReportInput<'_>, embedder: &dyn Embedder) -> Result<Plan, EmbedError> {
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
    let labels: Vec<String> = input.needs.iter().map(|n| need_label(n)).collect();
    let tidy: Vec<String> = candidates
        .iter()
        .map(|&l| tidy_sentence(&input.learnings[l].text))
        .collect();
    let mut texts: Vec<&str> = tidy.iter().map(String::as_str).collect();
    texts.push(input.query);
    texts.extend(labels.iter().map(String::as_str));
    let vectors = if candidates.is_empty() && labels.is_empty() {
        Vec::new()
    } else {
        embedder.embed(&texts)?
    };
    let vector = |l: usize| -> &[f32] {
        let i = candidates.iter().position(|&c| c == l).unwrap_or(0);
        &vectors[i]
    };

    // Dropped: learnings that are debris even tidied, and those that say what an earlier one
    // said.
    let mut kept: Vec<usize> = Vec::new();
    let mut kept_words: Vec<BTreeSet<String>> = Vec::new();
    for (i, &l) in candidates.iter().enumerate() {
        if tidy[i].is_empty() || sentence_debris(&tidy[i]).is_some() {
            tracing::debug!("report: learning {l} left out as debris");
            continue;
        }
        let words = content_words(&tidy[i]);
        let duplicate = kept.iter().zip(&kept_words).any(|(&k, w)| {
            jaccard(w, &words) >= NEAR_DUPLICATE_JACCARD
                || cosine(vector(k), &vectors[i]) >= DUPLICATE_COSINE
        });
        if duplicate {
            tracing::debug!("report: learning {l} repeats an earlier one");
            continue;
        }
        kept.push(l);
        kept_words.push(words);
    }
    for s in &mut sections {
        s.2.retain(|l| kept.contains(l));
    }

    // The summary: each section's learning closest to the query, from sections that keep
    // something after giving it (the root's own findings answer the query itself, so its
    // section may give its only one).
    let query_vector = &vectors.get(candidates.len()).cloned().unwrap_or_default();
    let mut summary = Vec::new();
    for (index, s) in sections.iter_mut().enumerate() {
        if summary.len() == SUMMARY_LEARNINGS {
            break;
        }
        if s.2.is_empty() || (index > 0 && s.2.len() < 2) {
            continue;
        }
        let best =
            *s.2.iter()
                .max_by(|&&a, &&b| {
                    cosine(vector(a), query_vector).total_cmp(&cosine(vector(b), query_vector))
                })
                .expect("non-empty");
        s.2.retain(|&l| l != best);
        summary.push(best);
    }
    if summary.is_empty() {
        if let Some(s) = sections.iter_mut().find(|s| !s.2.is_empty()) {
            summary.push(s.2.remove(0));
        }
    }

    // Needs: each remaining learning goes to the need it is closest to, when close enough;
    // each need keeps its best few.
    let need_vectors = &vectors[(candidates.len() + 1).min(vectors.len())..];
    let mut answers: Vec<Vec<(f32, usize)>> = vec![Vec::new(); labels.len()];
    for s in &sections {
        for &l in &s.2 {
            let best = need_vectors
                .iter()
                .enumerate()
                .map(|(n, v)| (n, cosine(vector(l), v)))
                .max_by(|a, b| a.1.total_cmp(&b.1));
            if let Some((n, score)) = best {
                if score >= NEED_MATCH_COSINE {
                    answers[n].push((score, l));
                }
            }
        }
    }
    let mut needs = Vec::new();
    let mut given: Vec<usize> = Vec::new();
    for (label, mut found) in labels.into_iter().zip(answers) {
        found.sort_by(|a, b| b.0.total_cmp(&a.0));
        found.truncate(NEED_LEARNINGS);
        // Tree order reads better than score order.
        let mut learnings: Vec<usize> = found.into_iter().map(|(_, l)| l).collect();
        learnings.sort_by_key(|l| kept.iter().position(|k| k == l));
        given.extend(&learnings);
        needs.push(PlannedNeed { label, learnings });
    }

    let sections = sections
        .into_iter()
        .filter_map(|(direction, question, mut learnings)| {
            learnings.retain(|l| !given.contains(l));
            learnings.truncate(MAX_SECTION_LEARNINGS);
            (!learnings.is_empty()).then(|| PlannedSection {
                direction,
                question,
                paragraphs: paragraphs(&learnings),
            })
        })
        .collect();
    Ok(Plan {
        summary,
        sections,
        needs,
    })
}

/// Learnings in groups of at most [`PARAGRAPH_LEARNINGS`], as even as possible (7 → 3, 2, 2),
/// so no paragraph is a lone fact after two full ones.
fn paragraphs(learnings: &[usize]) -> Vec<Vec<usize>> {
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
            paragraphs(&(0..n).collect::<Vec<_>>())
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
