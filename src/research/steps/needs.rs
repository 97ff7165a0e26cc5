//! What the sources say for each of the reader's needs, looked up just before the report.
//!
//! The research reads its passages for the question, with the persona in the prompt; a 1.5B
//! model then states what it finds most general and leaves the sentence that matters for this
//! reader in the passage. Inés, a drummer whose ears ring after gigs, asked which earplugs to
//! use for rehearsals: her research read the guide that says "Audiologists advise musicians
//! with tinnitus to wear hearing protection at every rehearsal", and its learnings did not
//! carry it, while the same research without her history did. So for each need that bears on
//! the question, code searches the documents for the question and the need together, takes the
//! sentences of those passages that no learning states yet and that are on the question,
//! and asks the need judge (one forward pass each, the probability of yes, the judge the report
//! uses to give a finding to a need, at its best-F1 bar) whether each matters for the reader
//! because of that need. The best sentence that passes becomes a learning of a node of its
//! own ([`Origin::Need`]), citing its passage: a sentence of the passage is supported by it
//! by construction.

use crate::checks::judge;
use crate::checks::text::{finding_form, leans_on_context, sentence_debris, split_sentences};
use crate::embed::{cosine, Embedder};
use crate::llm::{Completion, Llm};
use crate::research::engine::Run;
use crate::research::events::{Event, Stage};
use crate::research::report::{self, DUPLICATE_COSINE, MAX_NEEDS, OFF_TOPIC_SECTION};
use crate::research::tree::{Learning, Origin};
use crate::research::ResearchError;
use crate::sources::{CitationTarget, Evidence};

/// Sentences judged for each need: those closest to it. Each costs two forward passes (the
/// need and the contrast reader).
const NEED_CANDIDATES: usize = 3;

/// Most words of a sentence taken from a passage: a longer one is several facts, which the
/// writer cannot say in one clause for a need.
const MAX_SENTENCE_WORDS: usize = 40;

/// How many times a node's passages a fact's search reads, for the passages of the documents
/// the research cites among them.
const CITED_DOCUMENT_POOL: usize = 6;

/// How a need node's question opens, before the need's label.
const LOOKED_UP_PREFIX: &str = "Looked up for you: ";

/// The facts the relevance judge did not keep, each as said to the reader ("you have ADHD")
/// with its label, those that can be named in a clean sentence, without repeats.
fn considered_needs(considered: &[String]) -> Vec<(String, String)> {
    let profile: String = std::iter::once("Emphasize:".to_string())
        .chain(considered.iter().map(|c| format!("- {c}")))
        .collect::<Vec<_>>()
        .join("\n");
    report::needs_from(&profile, &[])
        .into_iter()
        .map(|n| {
            let label = report::need_label(&n.text);
            (n.text, label)
        })
        .collect()
}

/// A sentence of a passage, a candidate for a need.
#[derive(Debug, Clone, PartialEq)]
struct Candidate {
    /// Index of its passage.
    passage: usize,
    sentence: String,
}

/// The sentences of `passages` that can stand as a finding on their own: not history (an
/// earlier conversation is not a source to state as fact), one whole declarative sentence
/// ([`finding_form`]), no debris, at most [`MAX_SENTENCE_WORDS`] words, and not leaning on a
/// sentence before it ("They take interchangeable filters").
fn candidate_sentences(passages: &[Evidence]) -> Vec<Candidate> {
    let mut out: Vec<Candidate> = Vec::new();
    for (i, passage) in passages.iter().enumerate() {
        if matches!(passage.target, CitationTarget::History { .. }) {
            continue;
        }
        for sentence in split_sentences(&passage.text) {
            let sentence = without_list_marker(&sentence).to_string();
            let standalone = finding_form(&sentence).is_none()
                && sentence_debris(&sentence).is_none()
                && sentence.split_whitespace().count() <= MAX_SENTENCE_WORDS
                && !leans_on_context(&sentence);
            if standalone && out.iter().all(|c| c.sentence != sentence) {
                out.push(Candidate {
                    passage: i,
                    sentence,
                });
            }
        }
    }
    out
}

/// `text` without the marker of a list item it opens with ("- Switching off unused decks …"):
/// a guide's list reads as one passage, and its items split as sentences.
fn without_list_marker(text: &str) -> &str {
    text.trim_start()
        .trim_start_matches(['-', '*', '•'])
        .trim_start()
}

/// The sentences of `text`, a list's items each on its own: a learning can hold a guide's
/// list on one line ("- Heating the oven … energy. - Switching off unused decks …").
fn sentences_and_items(text: &str) -> Vec<String> {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    flat.split(" - ")
        .flat_map(|item| split_sentences(without_list_marker(item)))
        .map(|s| without_list_marker(&s).to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// Which candidates to judge for a need, best first, at most [`NEED_CANDIDATES`]: on the
/// question (`on_question`, each candidate's cosine to it, at least [`OFF_TOPIC_SECTION`], the
/// bar below which the report drops a section), stating nothing a learning states already
/// (cosine below [`DUPLICATE_COSINE`]), closest to the need. `vectors` are the candidates',
/// `need` the need label's, `known` the learnings'.
fn to_judge(
    vectors: &[Vec<f32>],
    on_question: &[f32],
    need: &[f32],
    known: &[Vec<f32>],
) -> Vec<usize> {
    let mut scored: Vec<(f32, usize)> = vectors
        .iter()
        .enumerate()
        .filter(|&(i, _)| on_question[i] >= OFF_TOPIC_SECTION)
        .filter(|(_, v)| known.iter().all(|k| cosine(v, k) < DUPLICATE_COSINE))
        .map(|(i, v)| (cosine(v, need), i))
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    scored
        .into_iter()
        .take(NEED_CANDIDATES)
        .map(|(_, i)| i)
        .collect()
}

/// The sentence of `passages` found for a need, as [`sentence_for_need`] gives it.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    /// Index of its passage.
    pub passage: usize,
    pub sentence: String,
    /// The need judge's score plus the cosine to the need's label.
    pub score: f32,
    /// Its embedding.
    pub vector: Vec<f32>,
}

/// The sentence of `passages` that matters most for the reader who asked `query` because of
/// the need `label` ([`report::need_label`]), when one scores `threshold` or more, with the
/// judge's completions. Candidates are [`candidate_sentences`] narrowed by [`to_judge`]
/// (`known`: the embeddings of what the research learned); each is scored as the report scores
/// a finding for a need: the need judge's P(yes) less its P(yes) for a reader of whom nothing
/// is known, plus the cosine to the need's label.
pub fn sentence_for_need(
    llm: &dyn Llm,
    embedder: &dyn Embedder,
    query: &str,
    label: &str,
    passages: &[Evidence],
    known: &[Vec<f32>],
    threshold: f32,
) -> Result<(Option<Found>, Vec<Completion>), ResearchError> {
    judge_sentences(
        llm,
        embedder,
        query,
        label,
        passages,
        known,
        threshold,
        OnQuestion::ByCosine,
    )
}

/// How a candidate sentence is known to be on the question.
#[derive(Debug, Clone, Copy, PartialEq)]
enum OnQuestion {
    /// The sentence or its passage is close to the question ([`OFF_TOPIC_SECTION`]).
    ByCosine,
    /// Every passage is: the caller kept only passages of documents the research cited.
    Given,
}

/// [`sentence_for_need`], with `on_question` saying how a candidate is on the question.
#[allow(clippy::too_many_arguments)]
fn judge_sentences(
    llm: &dyn Llm,
    embedder: &dyn Embedder,
    query: &str,
    label: &str,
    passages: &[Evidence],
    known: &[Vec<f32>],
    threshold: f32,
    on_question: OnQuestion,
) -> Result<(Option<Found>, Vec<Completion>), ResearchError> {
    let given = on_question == OnQuestion::Given;
    let candidates = candidate_sentences(passages);
    if candidates.is_empty() {
        return Ok((None, Vec::new()));
    }
    let mut texts: Vec<&str> = vec![query, label];
    texts.extend(passages.iter().map(|p| p.text.as_str()));
    texts.extend(candidates.iter().map(|c| c.sentence.as_str()));
    let vectors = embedder.embed(&texts)?;
    let (query_v, label_v) = (&vectors[0], &vectors[1]);
    let (passage_v, sentence_v) = vectors[2..].split_at(passages.len());
    // A sentence is on the question when it or its passage is: "Long study sessions are hard
    // for many people, and especially for people with ADHD" is far from "How do I prepare for
    // a technical interview?", the guide's section on study sessions is not.
    let on_question: Vec<f32> = candidates
        .iter()
        .zip(sentence_v)
        .map(|(c, v)| {
            if given {
                1.0
            } else {
                cosine(v, query_v).max(cosine(&passage_v[c.passage], query_v))
            }
        })
        .collect();
    let picked = to_judge(sentence_v, &on_question, label_v, known);
    if picked.is_empty() {
        return Ok((None, Vec::new()));
    }
    let sentences: Vec<&str> = picked
        .iter()
        .map(|&i| candidates[i].sentence.as_str())
        .collect();
    let (judged, completions) = judge::judge_need_findings(llm, query, &[label], &sentences)?;
    let scores = judged.into_iter().next().unwrap_or_default();
    let best = picked
        .iter()
        .zip(&scores)
        .map(|(&i, j)| (i, j.score() + cosine(&sentence_v[i], label_v)))
        .inspect(|(i, score)| {
            tracing::debug!(
                need = %label,
                score,
                sentence = %candidates[*i].sentence,
                "needs: a sentence judged for a need"
            )
        })
        .filter(|&(_, score)| score >= threshold)
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(i, score)| Found {
            passage: candidates[i].passage,
            sentence: candidates[i].sentence.clone(),
            score,
            vector: sentence_v[i].clone(),
        });
    Ok((best, completions))
}

impl Run<'_, '_> {
    /// Looks up, for each of the reader's `needs` (as said to them), the sentence of the
    /// documents that matters most for it and that the research did not learn, and records
    /// each found as a learning of a node of its own. Then does the same, at the stricter
    /// [`judge::CONSIDERED_LOOKUP_THRESHOLD`], for what the history says of the reader that the
    /// relevance judge did not keep (`considered`): each found this way is a need after all, and
    /// is returned as said to the reader. Nothing when the need judge is off for this model
    /// (see [`judge::need_lookup_threshold_for`]) or when this run looked them up already (a
    /// report written again after a crash or a steering message: the needs found then are
    /// those of its need nodes).
    pub(in crate::research) fn look_up_needs(
        &mut self,
        needs: &[String],
        considered: &[String],
    ) -> Result<Vec<String>, ResearchError> {
        let Some(threshold) = self.need_lookup() else {
            return Ok(Vec::new());
        };
        let looked_up: Vec<&str> = self
            .s
            .tree
            .nodes
            .iter()
            .filter(|n| n.origin == Origin::Need)
            .filter_map(|n| n.question.strip_prefix(LOOKED_UP_PREFIX))
            .collect();
        if !looked_up.is_empty() {
            return Ok(considered_needs(considered)
                .into_iter()
                .filter(|(_, label)| looked_up.contains(&label.as_str()))
                .map(|(need, _)| need)
                .collect());
        }
        let mut known = self.known_vectors()?;
        for need in needs.iter().take(MAX_NEEDS) {
            let label = report::need_label(need);
            let search = format!("{} {label}", self.s.query);
            if !self.look_up(&label, &search, &mut known, threshold, OnQuestion::ByCosine)? {
                tracing::info!(need = %label, "needs: no sentence of the documents matters for this need");
            }
        }
        let strict = threshold.max(judge::considered_lookup_threshold_for(
            self.r.llm.model_name(),
        ));
        let mut found = Vec::new();
        for (need, label) in considered_needs(considered) {
            // Judged on every sentence, those the research learned too: the question is
            // whether the documents tie the fact to the question, and a learning that does
            // ties it as well (the writer merges the two).
            // Searched for the fact and the question, in the documents the research cites.
            let search = format!("{label} {}", self.s.query);
            if self.look_up(&label, &search, &mut Vec::new(), strict, OnQuestion::Given)? {
                tracing::info!(need = %need, "needs: what the history says of the reader matters, by the documents");
                found.push(need);
            }
        }
        Ok(found)
    }

    /// What `search` finds (the user's exclusions applied) in the documents some learning of
    /// the research cites, read or not, best first: the documents the research found about
    /// the question. The fact alone ("you have ADHD") finds an encyclopaedia's article and the
    /// user's own chat before the interview guide's section on study sessions.
    fn passages_of_cited_documents(
        &mut self,
        search: &str,
    ) -> Result<Vec<Evidence>, ResearchError> {
        let cited: std::collections::BTreeSet<String> = self
            .s
            .learnings
            .iter()
            .flat_map(|l| &l.sources)
            .filter_map(|key| self.s.evidence.get(key))
            .filter_map(|e| match &e.target {
                CitationTarget::Document { path, .. } => Some(path.clone()),
                _ => None,
            })
            .collect();
        if cited.is_empty() {
            return Ok(Vec::new());
        }
        let embedder = Some((self.r.embedder, self.r.embed_model.as_str()));
        let wanted = CITED_DOCUMENT_POOL * self.r.settings.evidence_per_node.max(1);
        let found = self.r.sources.search(search, wanted, embedder)?;
        let mut passages = self.s.directives.filter_evidence(found, usize::MAX);
        passages.retain(
            |p| matches!(&p.target, CitationTarget::Document { path, .. } if cited.contains(path)),
        );
        Ok(passages)
    }

    /// Embeddings of what the research learned, and of each sentence of it: a learning can be
    /// a guide's whole list, whose items a sentence of the passage states again.
    fn known_vectors(&self) -> Result<Vec<Vec<f32>>, ResearchError> {
        let parts: Vec<String> = self
            .s
            .learnings
            .iter()
            .flat_map(|l| {
                let parts = sentences_and_items(&l.text);
                if parts.len() > 1 {
                    parts
                } else {
                    Vec::new()
                }
            })
            .collect();
        let mut known = self.learning_vectors.clone();
        if !parts.is_empty() {
            let texts: Vec<&str> = parts.iter().map(String::as_str).collect();
            known.extend(self.r.embedder.embed(&texts)?);
        }
        Ok(known)
    }

    /// Looks up the sentence of the documents for need `label` at `threshold` in what
    /// `search` finds, records it as a need node and adds its embedding to `known`; whether
    /// one was found. With [`OnQuestion::Given`], only passages of documents a learning cites
    /// are read: what the research found about the question. A judge that cannot answer
    /// finds nothing.
    fn look_up(
        &mut self,
        label: &str,
        search: &str,
        known: &mut Vec<Vec<f32>>,
        threshold: f32,
        on_question: OnQuestion,
    ) -> Result<bool, ResearchError> {
        let query = self.s.query.clone();
        let passages = if on_question == OnQuestion::Given {
            self.passages_of_cited_documents(search)?
        } else {
            self.search(search)?
        };
        let found = judge_sentences(
            self.r.llm,
            self.r.embedder,
            &query,
            label,
            &passages,
            known,
            threshold,
            on_question,
        );
        let found = match found {
            Ok((found, completions)) => {
                for c in &completions {
                    self.account(Stage::Research, c);
                }
                found
            }
            Err(ResearchError::Engine(e)) if judge::cannot_judge(&e) => {
                tracing::warn!("the need judge could not answer ({e}); the need is not looked up");
                return Ok(false);
            }
            Err(e) => return Err(e),
        };
        let Some(found) = found else {
            return Ok(false);
        };
        tracing::info!(
            need = %label,
            score = found.score,
            sentence = %found.sentence,
            "needs: a sentence looked up for a need"
        );
        let passage = passages[found.passage].clone();
        known.push(found.vector.clone());
        self.record_need_node(label, found.sentence, found.vector, passage);
        Ok(true)
    }

    /// A node for need `label` holding `sentence` as its one learning, citing `passage`.
    fn record_need_node(
        &mut self,
        label: &str,
        sentence: String,
        vector: Vec<f32>,
        passage: Evidence,
    ) {
        let id = self.s.tree.nodes.len();
        self.emit(Event::NodeAdded {
            id,
            parent: Some(0),
            depth: 1,
            question: format!("{LOOKED_UP_PREFIX}{label}"),
            origin: Origin::Need,
            confidence: 1.0,
            tags: Vec::new(),
            prefetched: Vec::new(),
        });
        self.emit(Event::NodeStarted { id });
        let learning = Learning {
            id: self.s.learnings.len(),
            node: id,
            text: sentence,
            sources: vec![passage.target.key()],
        };
        self.learning_vectors.push(vector);
        self.emit(Event::Learning { learning });
        self.emit(Event::NodeResearched {
            id,
            evidence: 1,
            learnings: 1,
            tags: Vec::new(),
            follow_ups: Vec::new(),
            sources: vec![passage],
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::CitationTarget;
    use crate::test_support::{ScriptedLlm, WordsEmbedder};

    fn passage(path: &str, text: &str) -> Evidence {
        Evidence {
            target: CitationTarget::Document {
                path: path.into(),
                chunk: 0,
                page: None,
                url: None,
                name: None,
            },
            title: path.into(),
            text: text.into(),
            score: 1.0,
        }
    }

    #[test]
    fn a_need_is_offered_whole_sentences_of_documents_that_stand_alone() {
        let guide = passage(
            "guide.md",
            "Custom-moulded earplugs are made from an impression of the ear canal. They take \
             interchangeable filters of 9, 15 or 25 decibels. Audiologists advise musicians with \
             tinnitus to wear hearing protection at every rehearsal. Buy the right ones.\n- Silicone \
             earplugs harden and crack with age.",
        );
        let mut chat = passage("chat", "My ears ring for a day after every gig I play.");
        chat.target = CitationTarget::History {
            session: 1,
            url: None,
            source: None,
            day: None,
        };
        let got: Vec<String> = candidate_sentences(&[chat, guide])
            .into_iter()
            .map(|c| c.sentence)
            .collect();
        assert_eq!(
            got,
            [
                "Custom-moulded earplugs are made from an impression of the ear canal.",
                "Audiologists advise musicians with tinnitus to wear hearing protection at every rehearsal.",
                "Silicone earplugs harden and crack with age.",
            ]
        );
    }

    #[test]
    fn a_learning_that_holds_a_list_is_known_item_by_item() {
        assert_eq!(
            sentences_and_items(
                "- Heating the oven only as long as needed saves 5 %. - Switching off unused \
                 decks. Baking in full loads helps."
            ),
            [
                "Heating the oven only as long as needed saves 5 %.",
                "Switching off unused decks.",
                "Baking in full loads helps.",
            ]
        );
        assert_eq!(
            sentences_and_items("A pair costs 150 to 200 euros."),
            ["A pair costs 150 to 200 euros."]
        );
    }

    #[test]
    fn a_need_is_judged_on_sentences_on_the_question_that_no_learning_states() {
        let query = vec![1.0, 0.0, 0.0];
        let need = vec![0.0, 1.0, 0.0];
        let vectors = vec![
            vec![0.0, 1.0, 0.0],  // the need's own words, nothing of the question
            vec![0.6, 0.8, 0.0],  // on the question and the need
            vec![0.9, 0.1, 0.0],  // on the question, far from the need
            vec![0.5, 0.3, 0.81], // what a learning states already
        ];
        let known = vec![vec![0.5, 0.3, 0.81]];
        let on_question: Vec<f32> = vectors.iter().map(|v| cosine(v, &query)).collect();
        assert_eq!(to_judge(&vectors, &on_question, &need, &known), [1, 2]);
        // The need's own words, in a passage on the question.
        let mut in_passage = on_question.clone();
        in_passage[0] = 0.5;
        assert_eq!(to_judge(&vectors, &in_passage, &need, &known), [0, 1, 2]);
    }

    #[test]
    fn the_sentence_the_judge_finds_matters_for_the_need_is_looked_up() {
        const BREWING: &str =
            "Green tea is brewed at 70 to 80 degrees for two minutes in the evening.";
        const CAFFEINE: &str = "Black tea holds about 40 to 70 mg of caffeine per cup of tea, and \
                                caffeine in the evening keeps people awake.";
        let label = "you sleep badly after caffeine";
        let llm = ScriptedLlm::new(move |prompt| {
            let p = if prompt.contains(label) && prompt.ends_with(CAFFEINE) {
                0.9
            } else {
                0.3
            };
            format!(r#"{{"probabilities":[{p},{}]}}"#, 1.0 - p)
        });
        let passages = [passage(
            "tea.md",
            &format!("{BREWING} {CAFFEINE} It keeps for two years."),
        )];
        let query = "How should I brew black tea for a cup at night?";
        // The research learned the brewing sentence already: only the caffeine one is judged.
        let known = WordsEmbedder
            .embed(&["Green tea is brewed at 70 to 80 degrees for two minutes."])
            .unwrap();
        let (found, completions) =
            sentence_for_need(&llm, &WordsEmbedder, query, label, &passages, &known, 0.37).unwrap();
        let found = found.expect("the caffeine sentence matters for the need");
        assert_eq!(found.sentence, CAFFEINE);
        assert_eq!(found.passage, 0);
        assert!(found.score >= 0.6, "{found:?}");
        // The need and the contrast reader, for the one sentence judged.
        assert_eq!(completions.len(), 2);
        assert!(llm.prompts().iter().all(|p| !p.ends_with(BREWING)));

        // Above every score the judge can give, nothing is looked up.
        let (found, _) =
            sentence_for_need(&llm, &WordsEmbedder, query, label, &passages, &known, 2.5).unwrap();
        assert_eq!(found, None);
    }
}

#[cfg(test)]
mod considered_tests {
    use super::*;

    #[test]
    fn a_fact_left_out_is_said_to_the_reader_and_labelled() {
        let got = considered_needs(&["Has ADHD".into(), "Has a dentist near me".into()]);
        let pairs = |v: &[(&str, &str)]| -> Vec<(String, String)> {
            v.iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect()
        };
        assert_eq!(
            got,
            pairs(&[
                ("you have ADHD", "you have ADHD"),
                ("you have a dentist near me", "you have a dentist near you"),
            ])
        );
        // Text no clean sentence can name is not looked up.
        assert!(considered_needs(&["[link](x)".into()]).is_empty());
    }
}
