//! Whether a cited passage states a sentence, judged by the chat model's probability of "yes".
//!
//! The embedding matcher ([`super::SupportMatcher`]) sees which words and meanings a sentence
//! shares with its passage, not which way they point: "the flood forced the mills to move" and
//! "the mills moving caused the flood" score alike, and so do a swapped date or a reversed
//! comparison that reuse the passage's words. The model reads the relation: one forward pass per
//! (passage, sentence) pair ([`crate::llm::probability_of_yes`]), no generation, with the
//! instructions and the passage as a prefix every sentence citing that passage shares
//! (`prompts/report_support.md` puts the sentence last, so llama.cpp reads only it again).
//!
//! The report keeps a sentence only when both checks pass: the embedding match and a P(yes) at
//! or above the judge's threshold for the chat model in use ([`threshold_for`]: calibrated by
//! `rudder eval support` on labelled pairs that include reversed relations, swapped causes and
//! wrong numbers).

use std::sync::atomic::{AtomicBool, Ordering};

use crate::llm::{map_concurrent, probability_of_yes, Completion, Llm, LlmError, Message, Usage};

/// The lowest P(yes) a report sentence's passage must get from the default chat model,
/// qwen2.5-coder-1.5b-instruct. Calibrated by `rudder eval support` on 295 pairs (the 239
/// support pairs and 56 turned pairs): best F1 on half the passages at 0.615; on the other half
/// precision 0.77, recall 0.85 (AUC 0.91). With the embedding match, as the report checks, 11
/// of 42 turned sentences pass against 34 of 42 for the embedding alone.
pub const SUPPORT_JUDGE_THRESHOLD: f32 = 0.615;

/// The threshold of a model no calibration covers: its own call, yes more likely than no.
/// `rudder eval support` gives it a calibrated one, set with `--support-judge P`.
pub const UNCALIBRATED_THRESHOLD: f32 = 0.5;

/// The judge's threshold for the chat model `model` (0: the judge is off for it).
///
/// * qwen2.5-coder-1.5b-instruct: [`SUPPORT_JUDGE_THRESHOLD`].
/// * smollm2-135m-instruct (the test model): off. Its AUC on the same pairs is 0.58, little
///   better than chance, and its P(yes) is low for nearly every pair (best threshold 0.18):
///   as a judge it would refuse sentences at random.
/// * any other model: [`UNCALIBRATED_THRESHOLD`].
pub fn threshold_for(model: &str) -> f32 {
    match model {
        crate::config::DEFAULT_CHAT_MODEL => SUPPORT_JUDGE_THRESHOLD,
        crate::config::SMOLLM2_CHAT_MODEL => 0.0,
        _ => UNCALIBRATED_THRESHOLD,
    }
}

/// The prompt for one pair: the passage first (shared), the sentence last.
pub fn support_messages(passage: &str, sentence: &str) -> crate::Result<Vec<Message>> {
    let prompt =
        crate::prompts::render("report_support", minijinja::context! { passage, sentence })?;
    Ok(vec![Message::user(prompt)])
}

/// The model's P(yes) that `passage` states `sentence`, with the call's completion (for
/// accounting).
pub fn passage_states(
    llm: &dyn Llm,
    passage: &str,
    sentence: &str,
) -> crate::Result<(f32, Completion)> {
    Ok(probability_of_yes(
        llm,
        support_messages(passage, sentence)?,
    )?)
}

/// P(yes) for each (passage, sentence) pair, in order, with what the calls cost. The calls are
/// independent and made as many at once as the model serves.
pub fn judge_pairs(llm: &dyn Llm, pairs: &[(&str, &str)]) -> crate::Result<(Vec<f32>, Usage)> {
    let answers = map_concurrent(llm.parallelism(), pairs, |_, (passage, sentence)| {
        passage_states(llm, passage, sentence)
    });
    let mut usage = Usage::default();
    let mut out = Vec::with_capacity(pairs.len());
    for answer in answers {
        let (p, completion) = answer?;
        usage += completion.usage;
        out.push(p);
    }
    Ok((out, usage))
}

/// The lowest score ([`FindingJudged::score`]) a finding needs from the default chat model,
/// qwen2.5-coder-1.5b-instruct, for the report to place it. Calibrated by `rudder eval
/// finding-judge` on 462 labelled (question, finding) pairs (opening sentences of the passages
/// the Wikipedia corpus returns for 36 questions, labelled by hand; key points; planted needs):
/// the highest threshold keeping 95 % of the findings that bear on their question on half the
/// questions, 0.19; on the other half recall 0.96, precision 0.59. It refuses 77 of the 170
/// findings that do not bear on their question yet pass the outline's cosine cut.
pub const FINDING_JUDGE_THRESHOLD: f32 = 0.19;

/// The finding judge's threshold for the chat model `model` (0: the judge is off for it).
///
/// * qwen2.5-coder-1.5b-instruct: [`FINDING_JUDGE_THRESHOLD`].
/// * smollm2-135m-instruct (the test model): off; it answers yes and no at random (see
///   [`threshold_for`]).
/// * any other model: 0, which refuses a finding the model is no more sure helps with this
///   question than with a question it cannot bear on. `rudder eval finding-judge` calibrates
///   one, set with `--finding-judge P`.
pub fn finding_threshold_for(model: &str) -> f32 {
    match model {
        crate::config::DEFAULT_CHAT_MODEL => FINDING_JUDGE_THRESHOLD,
        crate::config::SMOLLM2_CHAT_MODEL => 0.0,
        _ => f32::MIN_POSITIVE,
    }
}

/// A question no finding of a research run bears on. A finding's P(yes) for it is what the
/// model says for that finding whatever the question: a bare definition draws a yes.
pub const FINDING_CONTRAST_QUESTION: &str = "What is the capital of Australia?";

/// The prompt asking whether `finding` helps answer `query`: the question first (shared by
/// every finding of a report), the finding last (`prompts/report_finding.md`).
pub fn finding_messages(query: &str, finding: &str) -> crate::Result<Vec<Message>> {
    let prompt = crate::prompts::render("report_finding", minijinja::context! { query, finding })?;
    Ok(vec![Message::user(prompt)])
}

/// One finding's judgement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FindingJudged {
    /// P(yes) that it helps answer the question.
    pub probability: f32,
    /// P(yes) for [`FINDING_CONTRAST_QUESTION`].
    pub bias: f32,
}

impl FindingJudged {
    /// How much more the model says yes for this question than for one the finding cannot
    /// bear on (contextual calibration: on the labelled pairs it refuses more off-topic
    /// findings at the same recall than P(yes) alone).
    pub fn score(&self) -> f32 {
        self.probability - self.bias
    }
}

/// Whether each of `findings` helps answer `query`, in order, with the calls' completions:
/// two forward passes each (the question, then the contrast question), as many at once as
/// the model serves.
pub fn judge_findings(
    llm: &dyn Llm,
    query: &str,
    findings: &[&str],
) -> crate::Result<(Vec<FindingJudged>, Vec<Completion>)> {
    let asks: Vec<(&str, &str)> = [query, FINDING_CONTRAST_QUESTION]
        .iter()
        .flat_map(|q| findings.iter().map(move |f| (*q, *f)))
        .collect();
    let (probabilities, completions) =
        probabilities_of_yes(llm, &asks, |(q, finding)| finding_messages(q, finding))?;
    let (asked, contrast) = probabilities.split_at(findings.len());
    let judged = asked
        .iter()
        .zip(contrast)
        .map(|(&probability, &bias)| FindingJudged { probability, bias })
        .collect();
    Ok((judged, completions))
}

/// The lowest score a finding needs from the default chat model, qwen2.5-coder-1.5b-instruct,
/// to answer a need of the reader in *What this means for you*: the judge's
/// [`NeedFindingJudged::score`] plus the finding's embedding cosine to the need. Calibrated by
/// `rudder eval need-judge` (see the README). See [`need_threshold_for`].
pub const NEED_JUDGE_THRESHOLD: f32 = 0.48;

/// The need judge's threshold for the chat model `model` (0: the judge is off for it, and
/// needs are matched to findings by the embeddings alone).
///
/// * qwen2.5-coder-1.5b-instruct: [`NEED_JUDGE_THRESHOLD`].
/// * any other model: 0. A finding given to a need is written to the reader as meeting it
///   ("Since you have knee pain, …"), so an uncalibrated judge stays off.
pub fn need_threshold_for(model: &str) -> f32 {
    match model {
        crate::config::DEFAULT_CHAT_MODEL => NEED_JUDGE_THRESHOLD,
        _ => 0.0,
    }
}

/// The lowest score (as [`NEED_JUDGE_THRESHOLD`]'s) a sentence of the documents needs from the
/// default chat model to be looked up for a need of the reader and added to the research's
/// learnings: the best-F1 threshold of `rudder eval need-judge` (held-out precision 0.56,
/// recall 0.70), where the report's bar asks precision 0.8. A sentence looked up is one the
/// report states; only at the report's bar is it said to the reader as meeting their need
/// ("Since you have …"), so a mistake here costs a sentence on the question, not a false claim
/// about the reader. See [`need_lookup_threshold_for`].
pub const NEED_LOOKUP_THRESHOLD: f32 = 0.37;

/// The need lookup's threshold for the chat model `model` (0: no lookup, as for an
/// uncalibrated need judge).
pub fn need_lookup_threshold_for(model: &str) -> f32 {
    match model {
        crate::config::DEFAULT_CHAT_MODEL => NEED_LOOKUP_THRESHOLD,
        _ => 0.0,
    }
}

/// The lowest score (as [`NEED_JUDGE_THRESHOLD`]'s) a sentence of the documents needs from the
/// default chat model to make a fact the relevance judge did not keep
/// ([`crate::profile::QueryProfile::considered`]) a need of the reader: the precision-first
/// threshold of `rudder eval need-judge` (held-out precision 0.88, recall 0.52). The fact is
/// then said to the reader, so it asks more than the report's own bar. See
/// [`considered_lookup_threshold_for`].
pub const CONSIDERED_LOOKUP_THRESHOLD: f32 = 0.50;

/// The threshold for looking up the facts the relevance judge did not keep, for the chat model
/// `model` (0: not looked up, as for an uncalibrated need judge).
pub fn considered_lookup_threshold_for(model: &str) -> f32 {
    match model {
        crate::config::DEFAULT_CHAT_MODEL => CONSIDERED_LOOKUP_THRESHOLD,
        _ => 0.0,
    }
}

/// What the need judge says it knows of a reader when it knows nothing: a finding's P(yes)
/// for it is what the model says for that finding whatever the reader.
pub const NEED_CONTRAST: &str = "nothing in particular";

/// The prompt asking whether `finding` matters for a reader who asked `query` because of
/// `need`: the question and the need first (shared by every finding), the finding last
/// (`prompts/report_need_finding.md`).
pub fn need_finding_messages(
    query: &str,
    need: &str,
    finding: &str,
) -> crate::Result<Vec<Message>> {
    let prompt = crate::prompts::render(
        "report_need_finding",
        minijinja::context! { query, need, finding },
    )?;
    Ok(vec![Message::user(prompt)])
}

/// One (need, finding) judgement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NeedFindingJudged {
    /// P(yes) that the finding matters for the reader because of the need.
    pub probability: f32,
    /// P(yes) for the same finding and a reader of whom nothing is known ([`NEED_CONTRAST`]).
    pub bias: f32,
}

impl NeedFindingJudged {
    /// How much more the model says yes because of the need than for any reader: a finding
    /// on the question draws a yes whoever asks.
    pub fn score(&self) -> f32 {
        self.probability - self.bias
    }
}

/// For each of `needs`, whether each of `findings` matters for the reader because of it
/// (`[need][finding]`), with the calls' completions: one forward pass per pair and one per
/// finding for [`NEED_CONTRAST`], as many at once as the model serves.
pub fn judge_need_findings(
    llm: &dyn Llm,
    query: &str,
    needs: &[&str],
    findings: &[&str],
) -> crate::Result<(Vec<Vec<NeedFindingJudged>>, Vec<Completion>)> {
    let asks: Vec<(&str, &str)> = needs
        .iter()
        .chain(std::iter::once(&NEED_CONTRAST))
        .flat_map(|n| findings.iter().map(move |f| (*n, *f)))
        .collect();
    let (probabilities, completions) = probabilities_of_yes(llm, &asks, |(need, finding)| {
        need_finding_messages(query, need, finding)
    })?;
    let (asked, contrast) = probabilities.split_at(needs.len() * findings.len());
    let judged = asked
        .chunks(findings.len().max(1))
        .take(needs.len())
        .map(|of_need| {
            of_need
                .iter()
                .zip(contrast)
                .map(|(&probability, &bias)| NeedFindingJudged { probability, bias })
                .collect()
        })
        .collect();
    Ok((judged, completions))
}

/// P(yes) for the prompt `messages` makes of each of `asks`, in order, with the calls'
/// completions; as many at once as the model serves.
fn probabilities_of_yes<T: Sync>(
    llm: &dyn Llm,
    asks: &[T],
    messages: impl Fn(&T) -> crate::Result<Vec<Message>> + Sync,
) -> crate::Result<(Vec<f32>, Vec<Completion>)> {
    let answers = map_concurrent(llm.parallelism(), asks, |_, ask| {
        Ok::<_, crate::Error>(probability_of_yes(llm, messages(ask)?)?)
    });
    let mut probabilities = Vec::with_capacity(asks.len());
    let mut completions = Vec::with_capacity(asks.len());
    for answer in answers {
        let (p, completion) = answer?;
        probabilities.push(p);
        completions.push(completion);
    }
    Ok((probabilities, completions))
}

/// Whether an error means the model cannot answer a yes/no question by probability (a stand-in
/// model of a test, a server without log-probabilities that wrote something else): the report
/// then falls back to the embedding check alone, and says so in the log.
pub fn cannot_judge(error: &crate::Error) -> bool {
    matches!(error, crate::Error::Llm(LlmError::InvalidOutput { .. }))
}

/// Set once the log has said that the model gives no yes/no probabilities, so a run's many
/// judges say it once.
static SAID_UNAVAILABLE: AtomicBool = AtomicBool::new(false);

/// The judge as one check of a stage's sentences: the chat model and its threshold (None or 0:
/// off). When the model cannot answer by probability the judge steps aside, and the embedding
/// match alone decides from then on.
pub struct Judge<'a> {
    llm: &'a dyn Llm,
    threshold: Option<f32>,
    unavailable: AtomicBool,
}

impl<'a> Judge<'a> {
    pub fn new(llm: &'a dyn Llm, threshold: Option<f32>) -> Self {
        Judge {
            llm,
            threshold: threshold.filter(|&t| t > 0.0),
            unavailable: AtomicBool::new(false),
        }
    }

    /// Whether `passage` states `sentence`: true when the judge is off or cannot answer. The
    /// call's completion is added to `completions`.
    pub fn states(
        &self,
        passage: &str,
        sentence: &str,
        completions: &mut Vec<Completion>,
    ) -> crate::Result<bool> {
        let Some(threshold) = self.threshold else {
            return Ok(true);
        };
        if self.unavailable.load(Ordering::Relaxed) {
            return Ok(true);
        }
        match passage_states(self.llm, passage, sentence) {
            Ok((p, completion)) => {
                completions.push(completion);
                if p < threshold {
                    tracing::debug!(p, "the judge finds the passage does not state: {sentence}");
                }
                Ok(p >= threshold)
            }
            Err(e) if cannot_judge(&e) => {
                self.unavailable.store(true, Ordering::Relaxed);
                if !SAID_UNAVAILABLE.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        "the model gives no yes/no probabilities ({e}); sentences are checked \
                         by the embedding match alone"
                    );
                }
                Ok(true)
            }
            Err(e) => Err(e),
        }
    }
}

/// Why a sentence that shares its cited passage's words is refused when the judge finds the
/// passage does not state it: what a retry is told.
pub const TURNED_AROUND: &str = "it turns around what the passage says (a cause, an order of \
                                 events, a number or a yes or no); say it the way the passage \
                                 does";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::ScriptedLlm;

    const FLOOD: &str = "The flood of 1887 forced the mills to move.";
    /// The flood passage's relation turned around.
    const TURNED: &str = "The mills moved, which caused the flood.";

    /// A model that finds the flood passage states the mills' move, not the reverse.
    fn flood_judge() -> ScriptedLlm {
        ScriptedLlm::new(|prompt| {
            if prompt.ends_with(TURNED) {
                r#"{"probabilities":[0.1,0.6]}"#.to_string()
            } else {
                r#"{"probabilities":[0.6,0.2]}"#.to_string()
            }
        })
    }

    #[test]
    fn each_pair_is_one_call_with_the_passage_before_the_sentence() {
        let llm = flood_judge();
        let passage = FLOOD;
        let (ps, usage) = judge_pairs(
            &llm,
            &[
                (passage, "The 1887 flood made the mills move."),
                (passage, TURNED),
            ],
        )
        .unwrap();
        assert_eq!(usage.calls, 2);
        assert!((ps[0] - 0.75).abs() < 1e-6, "{ps:?}");
        assert!((ps[1] - 1.0 / 7.0).abs() < 1e-6, "{ps:?}");
        for prompt in llm.prompts() {
            let at_passage = prompt.find(passage).expect("the passage is in the prompt");
            let at_sentence = prompt.rfind("Sentence:").unwrap();
            assert!(at_passage < at_sentence, "{prompt}");
        }
    }

    #[test]
    fn a_finding_is_asked_about_its_question_and_the_contrast_question() {
        const DEFINITION: &str = "A week is a unit of time equal to seven days.";
        const TEMPO: &str = "A tempo run is a steady effort held for about twenty minutes.";
        let llm = ScriptedLlm::new(|prompt| {
            let p = match (
                prompt.contains(FINDING_CONTRAST_QUESTION),
                prompt.ends_with(TEMPO),
            ) {
                (false, true) => 0.8,
                (true, true) => 0.1,
                // A bare definition draws a yes whatever the question.
                _ => 0.75,
            };
            format!(r#"{{"probabilities":[{p},{}]}}"#, 1.0 - p)
        });
        let query = "How should I plan twelve weeks of training?";
        let (judged, completions) = judge_findings(&llm, query, &[DEFINITION, TEMPO]).unwrap();
        assert_eq!(completions.len(), 4);
        assert!((judged[0].score()).abs() < 1e-5, "{judged:?}");
        assert!((judged[1].score() - 0.7).abs() < 1e-5, "{judged:?}");
        for prompt in llm.prompts() {
            let at_question = prompt.find("Question:").unwrap();
            let at_finding = prompt.rfind("Finding:").unwrap();
            assert!(at_question < at_finding, "{prompt}");
        }
        assert_eq!(llm.prompts_with(query).len(), 2);
    }

    #[test]
    fn a_finding_is_judged_for_each_need_against_a_reader_of_whom_nothing_is_known() {
        const CUSHION: &str = "Max-cushion trainers reduce the impact of each landing.";
        const PRICE: &str = "Daily road trainers cost between 120 and 160 dollars.";
        let knee = "you have knee pain";
        let budget = "you have a budget of 120 dollars";
        let llm = ScriptedLlm::new(move |prompt| {
            let p = match (
                prompt.contains(knee),
                prompt.contains(budget),
                prompt.ends_with(CUSHION),
            ) {
                (true, _, true) => 0.9,
                (_, true, false) => 0.8,
                // On the question, whoever asks.
                _ => 0.4,
            };
            format!(r#"{{"probabilities":[{p},{}]}}"#, 1.0 - p)
        });
        let query = "Which running shoes should I buy?";
        let (judged, completions) =
            judge_need_findings(&llm, query, &[knee, budget], &[CUSHION, PRICE]).unwrap();
        // Two needs and the contrast, for each finding.
        assert_eq!(completions.len(), 6);
        assert_eq!(llm.prompts_with(NEED_CONTRAST).len(), 2);
        let scores: Vec<Vec<f32>> = judged
            .iter()
            .map(|of_need| of_need.iter().map(|j| j.score()).collect())
            .collect();
        assert!((scores[0][0] - 0.5).abs() < 1e-5, "{scores:?}");
        assert!(scores[0][1].abs() < 1e-5, "{scores:?}");
        assert!(scores[1][0].abs() < 1e-5, "{scores:?}");
        assert!((scores[1][1] - 0.4).abs() < 1e-5, "{scores:?}");
        for prompt in llm.prompts() {
            let at_need = prompt.find("What you know about the reader:").unwrap();
            let at_finding = prompt.rfind("Finding:").unwrap();
            assert!(at_need < at_finding, "{prompt}");
        }
        assert_eq!(need_threshold_for(crate::config::SMOLLM2_CHAT_MODEL), 0.0);
        assert_eq!(
            need_threshold_for(crate::config::DEFAULT_CHAT_MODEL),
            NEED_JUDGE_THRESHOLD
        );
    }

    #[test]
    fn each_model_gets_its_calibrated_threshold() {
        assert_eq!(
            threshold_for(crate::config::DEFAULT_CHAT_MODEL),
            SUPPORT_JUDGE_THRESHOLD
        );
        assert_eq!(threshold_for(crate::config::SMOLLM2_CHAT_MODEL), 0.0);
        assert_eq!(threshold_for("qwen2.5-7b-instruct"), UNCALIBRATED_THRESHOLD);
        assert_eq!(
            finding_threshold_for(crate::config::DEFAULT_CHAT_MODEL),
            FINDING_JUDGE_THRESHOLD
        );
        assert_eq!(
            finding_threshold_for(crate::config::SMOLLM2_CHAT_MODEL),
            0.0
        );
        // Any other model: on, refusing what draws no more yes than the contrast question.
        let other = finding_threshold_for("qwen2.5-7b-instruct");
        assert!(other > 0.0 && other < 0.01, "{other}");
    }

    #[test]
    fn the_judge_refuses_below_its_threshold_and_steps_aside_when_it_cannot_answer() {
        let llm = flood_judge();
        let passage = FLOOD;
        let mut calls = Vec::new();
        let judge = Judge::new(&llm, Some(0.5));
        assert!(judge
            .states(passage, "The 1887 flood made the mills move.", &mut calls)
            .unwrap());
        assert!(!judge.states(passage, TURNED, &mut calls).unwrap());
        assert_eq!(calls.len(), 2);
        // Off (None or 0): no call, everything passes.
        for off in [None, Some(0.0)] {
            let judge = Judge::new(&llm, off);
            assert!(judge.states(passage, TURNED, &mut calls).unwrap());
        }
        assert_eq!(calls.len(), 2);
        // A model without probabilities: the first call finds out, later ones are not made.
        let plain = ScriptedLlm::new(|_| "yes".to_string());
        let judge = Judge::new(&plain, Some(0.5));
        assert!(judge.states(passage, "Anything.", &mut calls).unwrap());
        assert!(judge.states(passage, "Anything else.", &mut calls).unwrap());
        assert_eq!(plain.prompts().len(), 1);
    }

    #[test]
    fn a_model_that_answers_no_probabilities_cannot_judge() {
        let llm = ScriptedLlm::new(|_| "yes".to_string());
        let err = passage_states(&llm, "A passage.", "A sentence.").unwrap_err();
        assert!(cannot_judge(&err), "{err}");
        assert!(!cannot_judge(&crate::Error::Llm(LlmError::Cancelled)));
    }
}
