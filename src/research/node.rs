//! Researching one node (STEER *Search Result Processing*): its evidence goes to the model,
//! which extracts learnings — each tied to the numbered passages it rests on — tags the node's
//! facets (reusing tags seen before), and, unless the node is a leaf, proposes the follow-up
//! questions and the wild card its children are chosen from.
//!
//! A learning is kept only when it is a finding — one declarative sentence
//! ([`checks::text::finding_form`]) that at least one passage it cites supports
//! ([`checks::SupportMatcher`] at [`checks::SUPPORT_THRESHOLD`]) and, when the run judges
//! learnings (`ResearchSettings::judge_learnings`, the default), states the same way round ([`checks::judge`]: a learning that reverses a cause or swaps
//! a number would otherwise reach the report as a finding). When some are refused, the
//! model is asked once more for learnings only, told which were refused and why; what passes
//! from both calls is kept. A learning resting only on the user's earlier chats is phrased as
//! what that conversation said, never as a fact about the world.

use std::collections::BTreeSet;

use serde::Deserialize;
use serde_json::json;

use super::persona::Persona;
use super::tree::FollowUp;
use super::ResearchError;
use crate::checks::judge::{Judge, TURNED_AROUND};
use crate::checks::text::{
    advice_to_someone_unnamed, cut_off, dominant_script, finding_form, foreign_script,
    whole_before_the_cut, Script,
};
use crate::checks::{self, SupportMatcher};
use crate::embed::Embedder;
use crate::llm::{complete_schema, Completion, GenerationOptions, Llm, LlmError, Message};
use crate::sources::{CitationTarget, Evidence};

/// The cosine (all-MiniLM-L6-v2) from which a proposed direction — a follow-up question or a
/// knowledge gap — counts as being about the original query. Set on the labelled pairs of
/// `data/direction_pairs.jsonl` (hard negatives included: the query's subject paired with an
/// unrelated sport or hobby, or a topic from the user's history) by
/// `tests/research_directions.rs`, which reports its precision and recall and fails when they
/// drop. On those 54 pairs (30 related) the best F1 cut is 0.428: precision 0.93, recall 0.93.
/// Below it, a direction is dropped: a small model pairs the subject with whatever else the
/// persona mentions. Cosine alone cannot refuse a question that names the subject and the
/// hobby together ("How does basketball footwork affect running shoe choice?" scores 0.58).
pub const ON_TOPIC: f32 = 0.43;

/// Whether a direction whose embedding is `direction` stays on the query embedded as `query`.
pub fn on_topic(query: &[f32], direction: &[f32]) -> bool {
    crate::embed::cosine(query, direction) >= ON_TOPIC
}

/// Characters of each passage shown to the model.
pub const PASSAGE_CHARS: usize = 700;
/// Most characters of a learning (the grammar's bound). Passages' sentences run long (a
/// buyer's guide's list of saws, a citation in brackets): at 200, a quarter of the learnings of
/// a run over the planted set were cut.
const LEARNING_CHARS: usize = 320;

/// Whether the grammar's bound, or a stop inside an abbreviation, cut `text` short; or the
/// model began one more sentence and stopped ("… for backend system design. The").
fn cut_at_the_bound(text: &str) -> bool {
    let t = text.trim_end();
    let unclosed = !t.ends_with(['.', '!', '"', ')']);
    (text.chars().count() + 1 >= LEARNING_CHARS && unclosed)
        || cut_off(t).is_some()
        || (unclosed && a_sentence_begun_and_dropped(t))
}

/// Whether the last sentence of a text of several is a stray start of a few words.
fn a_sentence_begun_and_dropped(text: &str) -> bool {
    let sentences = checks::text::split_sentences(text);
    sentences.len() > 1
        && sentences
            .last()
            .is_some_and(|last| last.split_whitespace().count() < 4)
}
/// Most learnings the model writes at a node; quotes of the passages they leave unread come on
/// top ([`MAX_QUOTED`]).
pub const MAX_LEARNINGS: usize = 4;
/// Most tokens of a leaf's answer (learnings and tags): the worst case is a token a
/// character, and the learnings' bound is most of it. A node with follow-ups may write 1,300
/// more.
const LEAF_TOKENS: u32 = (MAX_LEARNINGS * LEARNING_CHARS) as u32 + 200;

/// What the model found at a node.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Findings {
    /// (text, 0-based indices into the evidence).
    pub learnings: Vec<(String, Vec<usize>)>,
    pub tags: Vec<String>,
    /// Planner proposals, the wild card last (empty for leaves).
    pub follow_ups: Vec<FollowUp>,
}

#[derive(Debug, Deserialize)]
struct Draft {
    #[serde(default)]
    learnings: Vec<LearningDraft>,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    follow_up_questions: Vec<FollowUpDraft>,
    #[serde(default)]
    wild_card_question: Option<WildCardDraft>,
}

#[derive(Debug, Deserialize)]
struct LearningDraft {
    insight: String,
    sources: Vec<usize>,
}

#[derive(Debug, Deserialize)]
struct FollowUpDraft {
    question: String,
    confidence: u8,
    #[serde(default)]
    tags: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct WildCardDraft {
    question: String,
    confidence: u8,
}

/// The output schema. Source numbers are restricted to the passages shown, so a learning can
/// only cite evidence that exists; confidence is in tenths (0–10), which small models handle
/// better than decimals. Every string and list is bounded so the worst case fits `max_tokens`.
pub fn schema(evidence: usize, leaf: bool) -> serde_json::Value {
    let numbers: Vec<usize> = (1..=evidence).collect();
    let sources = if evidence == 0 {
        json!({"type": "array", "items": {"type": "integer"}, "maxItems": 0})
    } else {
        json!({"type": "array", "items": {"type": "integer", "enum": numbers}, "minItems": 1, "maxItems": 2})
    };
    let learning = json!({
        "type": "object",
        "properties": {
            "insight": crate::llm::grammar::prose_string(10, LEARNING_CHARS),
            "sources": sources,
        },
        "required": ["insight", "sources"],
    });
    let tag = json!({"type": "string", "minLength": 2, "maxLength": 24});
    let confidence = json!({"type": "integer", "enum": (0..=10).collect::<Vec<u8>>()});
    let mut properties = serde_json::Map::new();
    properties.insert(
        "learnings".into(),
        json!({
            "type": "array", "items": learning,
            "minItems": usize::from(evidence > 0),
            "maxItems": if evidence > 0 { MAX_LEARNINGS } else { 0 },
        }),
    );
    properties.insert(
        "tags".into(),
        json!({"type": "array", "items": tag, "minItems": 1, "maxItems": 3}),
    );
    let mut required = vec!["learnings", "tags"];
    if !leaf {
        properties.insert(
            "follow_up_questions".into(),
            json!({
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "question": crate::llm::grammar::prose_string(10, 120),
                        "confidence": confidence,
                        "tags": {"type": "array", "items": tag, "minItems": 1, "maxItems": 2},
                    },
                    "required": ["question", "confidence", "tags"],
                },
                "minItems": 5, "maxItems": 6,
            }),
        );
        properties.insert(
            "wild_card_question".into(),
            json!({
                "type": "object",
                "properties": {
                    "question": crate::llm::grammar::prose_string(10, 120),
                    "confidence": confidence,
                },
                "required": ["question", "confidence"],
            }),
        );
        required.extend(["follow_up_questions", "wild_card_question"]);
    }
    json!({"type": "object", "properties": properties, "required": required})
}

/// The evidence as the numbered list the prompts show.
pub fn numbered_evidence(evidence: &[Evidence], chars: usize) -> String {
    if evidence.is_empty() {
        return "(no passages found)".into();
    }
    evidence
        .iter()
        .enumerate()
        .map(|(i, e)| {
            format!(
                "[{}] {}\n{}",
                i + 1,
                super::tree::one_line(&e.title, 120),
                crate::sources::history::passage(&e.text, chars)
            )
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// Everything the node prompt needs.
pub struct NodeContext<'a> {
    pub query: &'a str,
    pub question: &'a str,
    pub persona: &'a Persona,
    pub seen_tags: &'a [String],
    /// Exclusions and focus the user asked for, one per line (may be empty).
    pub directives: &'a str,
    pub current_date: &'a str,
    pub leaf: bool,
    /// The support judge's threshold for the chat model (None or 0: off).
    pub support_judge: Option<f32>,
    /// What the research learned before this node (the learnings committed before its level
    /// began), with their embeddings in the same order.
    pub known: Known<'a>,
}

/// The run's learnings so far, which a node is told of and must not state again.
#[derive(Clone, Copy, Default)]
pub struct Known<'a> {
    pub texts: &'a [&'a str],
    pub vectors: &'a [Vec<f32>],
}

/// Most known learnings a node's prompt lists: those closest to its question.
const MAX_KNOWN_SHOWN: usize = 6;

impl Known<'_> {
    /// The known learning `vector` restates (cosine at least the writer's
    /// [`DUPLICATE_COSINE`](super::report::DUPLICATE_COSINE), at which it would merge
    /// the two into one finding), if any.
    fn restated_by(&self, vector: &[f32]) -> Option<&str> {
        self.texts
            .iter()
            .zip(self.vectors)
            .map(|(t, v)| (*t, crate::embed::cosine(vector, v)))
            .filter(|(_, c)| *c >= super::report::DUPLICATE_COSINE)
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(t, _)| t)
    }

    /// The known learnings closest to `question` (its embedding), one per line, for the
    /// prompt: a node told what is known already looks for something else in its passages.
    fn closest_lines(&self, question: &[f32]) -> String {
        let mut scored: Vec<(f32, &str)> = self
            .texts
            .iter()
            .zip(self.vectors)
            .map(|(t, v)| (crate::embed::cosine(question, v), *t))
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        scored
            .into_iter()
            .take(MAX_KNOWN_SHOWN)
            .map(|(_, t)| format!("- {t}"))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Researches one node over its evidence: one call, and a second one for learnings only when
/// the first one's learnings were refused. Returns every call's completion for accounting.
pub fn research(
    llm: &dyn Llm,
    embedder: &dyn Embedder,
    ctx: &NodeContext<'_>,
    evidence: &[Evidence],
) -> Result<(Findings, Vec<Completion>), ResearchError> {
    let known = if ctx.known.texts.is_empty() {
        String::new()
    } else {
        let question = embedder.embed(&[ctx.question])?.pop().unwrap_or_default();
        ctx.known.closest_lines(&question)
    };
    let prompt = crate::prompts::render(
        "research_node",
        minijinja::context! {
            query => ctx.query,
            question => ctx.question,
            persona => ctx.persona.text,
            checklist => ctx.persona.numbered_checklist(),
            seen_tags => if ctx.seen_tags.is_empty() { "(none yet)".to_string() } else { ctx.seen_tags.join(", ") },
            directives => ctx.directives,
            evidence => numbered_evidence(evidence, PASSAGE_CHARS),
            current_date => ctx.current_date,
            leaf => ctx.leaf,
            known,
        },
    )?;
    // Worst case at one token per character: 4 learnings × 215, 6 follow-ups × 195, the wild
    // card, tags and the JSON around them.
    let max_tokens = if ctx.leaf {
        LEAF_TOKENS
    } else {
        LEAF_TOKENS + 1300
    };
    let (draft, completion): (Draft, _) = complete_schema(
        llm,
        vec![Message::user(prompt.clone())],
        GenerationOptions::greedy(max_tokens),
        schema(evidence.len(), ctx.leaf),
    )?
    .into_pair()?;
    let mut findings = findings(draft, evidence.len(), &[ctx.query, ctx.question]);
    let mut completions = vec![completion];
    let matcher = SupportMatcher::new(embedder, checks::SUPPORT_THRESHOLD);
    let judge = Judge::new(llm, ctx.support_judge);
    // The judge's calls, accounted after the node's own (the retry continues the first call).
    let mut judged = Vec::new();
    let shown = shown_passages(evidence);
    let script = dominant_script(ctx.query);
    let check = Checks {
        matcher: &matcher,
        judge: &judge,
        shown: &shown,
        script,
        embedder,
        known: ctx.known,
    };
    let (mut kept, rejected) =
        check.learnings(std::mem::take(&mut findings.learnings), &mut judged)?;
    log_refused(ctx.question, &rejected);
    let mut refused = rejected.len();
    if !rejected.is_empty() && kept.len() < MAX_LEARNINGS {
        let retry = crate::prompts::render(
            "research_node_retry",
            minijinja::context! {
                rejected => rejected.iter().map(|(t, why)| format!("- \"{}\": {why}", quoted_briefly(t))).collect::<Vec<_>>().join("\n"),
                kept => kept.iter().map(|(t, _)| format!("- {t}")).collect::<Vec<_>>().join("\n"),
            },
        )?;
        let messages = vec![
            Message::user(prompt),
            Message::assistant(learnings_of_the_draft(&completions[0].text)),
            Message::user(retry),
        ];
        // The leaf schema: learnings (and tags, which are ignored) only.
        let second = match complete_schema::<Draft>(
            llm,
            messages,
            GenerationOptions::greedy(LEAF_TOKENS),
            schema(evidence.len(), true),
        ) {
            Ok(second) => {
                completions.push(second.completion.clone());
                second.into_pair().map(|(draft, _)| draft)
            }
            Err(e @ LlmError::ContextOverflow { .. }) => Err(e),
            Err(e) => return Err(e.into()),
        };
        match second {
            Ok(draft) => {
                let again = findings_learnings(draft, evidence.len());
                let (more, still) = check.learnings(again, &mut judged)?;
                log_refused(ctx.question, &still);
                refused += still.len();
                merge_learnings(&mut kept, more);
            }
            // The first call's findings stand; a retry that fails (its answer unusable, or the
            // conversation too long for the context) only loses its own.
            Err(e) => tracing::warn!("research retry failed: {e}"),
        }
    }
    if refused > 0 {
        tracing::info!(
            question = ctx.question,
            refused,
            kept = kept.len(),
            calls = completions.len(),
            judged = judged.len(),
            "learnings refused as not findings or not supported by their passages"
        );
    }
    completions.append(&mut judged);
    // A passage the node read that none of its learnings draws on still says what it says: a
    // 1.5B model given five passages often writes every learning from the first. Sam's
    // interview question read the interview guide beside Wikipedia's "Technical geography",
    // and all four learnings were about geographers. The passages left unread are quoted, the
    // sentence closest to the question of each (all of them when every learning was refused).
    // They come on top of the model's own, which fill the node's places with that one passage.
    // So do a few sentences of the passages it drew on that its learnings do not say.
    kept.truncate(MAX_LEARNINGS);
    let quoted = quoted_learnings(
        embedder,
        &matcher,
        ctx.question,
        evidence,
        &shown,
        ctx.known,
        &kept,
    )?;
    if !kept.is_empty() && !quoted.is_empty() {
        tracing::debug!(
            question = ctx.question,
            quoted = quoted.len(),
            "passages no learning drew on are quoted"
        );
    }
    merge_learnings(&mut kept, quoted);
    for (text, idx) in &mut kept {
        if idx
            .iter()
            .all(|&i| matches!(evidence[i].target, CitationTarget::History { .. }))
        {
            *text = as_earlier_conversation(text);
        }
    }
    findings.learnings = kept;
    Ok((findings, completions))
}

/// A learning of more than two sentences as its facts: each sentence, with the one after it
/// when that one leans on it ("… a three-week plan. It includes …"); a second sentence leaning
/// on a pair is dropped, as it cannot stand alone.
fn one_fact_a_sentence(text: &str) -> Vec<String> {
    let sentences = checks::text::split_sentences(text);
    if sentences.len() <= 2 {
        return vec![text.to_string()];
    }
    let mut facts: Vec<(String, usize)> = Vec::new();
    for sentence in sentences {
        if !checks::text::leans_on_context(&sentence) {
            facts.push((sentence, 1));
        } else if let Some((fact, n @ 1)) = facts.last_mut() {
            fact.push(' ');
            fact.push_str(&sentence);
            *n = 2;
        }
    }
    facts.into_iter().map(|(fact, _)| fact).collect()
}

/// Each refused learning and why, for reading a run's log.
fn log_refused(question: &str, refused: &[(String, String)]) {
    for (text, why) in refused {
        tracing::debug!(
            question,
            why,
            learning = quoted_briefly(text),
            "learning refused"
        );
    }
}

/// The retry's echo of the first answer: its learnings only. The follow-ups are not asked
/// again, and a degenerate answer echoed whole (a small model's runs of numbers up to the
/// token limit) would overflow the context with the retry prompt.
fn learnings_of_the_draft(text: &str) -> String {
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(value) => {
            json!({ "learnings": value.get("learnings").cloned().unwrap_or(json!([])) }).to_string()
        }
        Err(_) => text.to_string(),
    }
}

/// A refused learning as the retry quotes it: enough to recognise it, never a whole run-on.
fn quoted_briefly(text: &str) -> String {
    const QUOTED_CHARS: usize = 120;
    if text.chars().count() <= QUOTED_CHARS {
        return text.to_string();
    }
    let head: String = text.chars().take(QUOTED_CHARS).collect();
    format!("{}…", head.trim_end())
}

/// Each passage as the model saw it (title, then the excerpt), for the support check.
fn shown_passages(evidence: &[Evidence]) -> Vec<String> {
    evidence
        .iter()
        .map(|e| {
            format!(
                "{}\n{}",
                super::tree::one_line(&e.title, 120),
                crate::sources::history::passage(&e.text, PASSAGE_CHARS)
            )
        })
        .collect()
}

/// Whether `text` is, word for word, a title or heading line of one of the passages: a line
/// with no sentence's end.
fn is_a_heading_of(text: &str, passages: &[&str]) -> bool {
    let words = |s: &str| {
        s.split_whitespace()
            .map(|w| {
                w.trim_matches(|c: char| !c.is_alphanumeric())
                    .to_lowercase()
            })
            .filter(|w| !w.is_empty())
            .collect::<Vec<_>>()
    };
    let learning = words(text);
    !learning.is_empty()
        && passages.iter().flat_map(|p| p.lines()).any(|line| {
            let line = line.trim();
            !line.ends_with(['.', '!', '?', '…']) && words(line) == learning
        })
}

/// What a learning must pass at a node.
struct Checks<'a> {
    matcher: &'a SupportMatcher<'a>,
    judge: &'a Judge<'a>,
    /// The passages as the model saw them.
    shown: &'a [String],
    /// The question's writing system.
    script: Script,
    embedder: &'a dyn Embedder,
    /// What the research learned before: a learning that restates it is refused.
    known: Known<'a>,
}

impl Checks<'_> {
    /// Learnings split into the findings kept and the ones refused, each with the reason: not a
    /// declarative sentence, supported by none of the passages it cites, or turned around
    /// from what the passage says. The judge's calls are added to `judged`.
    #[allow(clippy::type_complexity)]
    fn learnings(
        &self,
        learnings: Vec<(String, Vec<usize>)>,
        judged: &mut Vec<Completion>,
    ) -> Result<(Vec<(String, Vec<usize>)>, Vec<(String, String)>), ResearchError> {
        let mut kept = Vec::new();
        let mut rejected = Vec::new();
        let passages: Vec<&str> = self.shown.iter().map(String::as_str).collect();
        let mut facts = Vec::new();
        for (text, idx) in learnings {
            // The grammar ends a learning at its bound, mid-word ("… literacy and the re") or
            // inside a citation ("… the visit (Bolker et al. "): its whole clauses before the
            // cut are kept when they say enough. A quarter of a planted-set run's learnings
            // reached the old 200-character bound.
            let text = if cut_at_the_bound(&text) {
                match whole_before_the_cut(&text) {
                    Some(whole) => whole,
                    None => {
                        let why = match cut_off(&text) {
                            Some(why) => format!("{why}: state one whole fact"),
                            None => format!(
                                "cut off at {LEARNING_CHARS} characters: state one fact in fewer words"
                            ),
                        };
                        rejected.push((text, why));
                        continue;
                    }
                }
            } else {
                text
            };
            // A small model writes a paragraph where one fact was asked, and asked again writes
            // it again: each of its facts is checked on its own.
            facts.extend(
                one_fact_a_sentence(&text)
                    .into_iter()
                    .map(|f| (f, idx.clone())),
            );
        }
        for (text, idx) in facts {
            // A word of another script than the question's ("… and human主义") is a slip of
            // the model's, unless a passage has it.
            if let Some(why) = finding_form(&text)
                .or_else(|| foreign_script(&text, self.script, &passages))
                .or_else(|| advice_to_someone_unnamed(&text, &passages))
            {
                rejected.push((text, why));
                continue;
            }
            // A small model copies a passage's title or heading ("Quiet beaches with shade") as
            // if it were a fact.
            if is_a_heading_of(&text, &passages) {
                let why = "a heading of its passage, not a statement of fact".to_string();
                rejected.push((text, why));
                continue;
            }
            // Nodes that read the same passages write the same fact: 9 of a depth-2 printing
            // press run's 27 learnings said the press "revolutionized book production".
            // Refused before the support checks, which it would pass.
            if !self.known.texts.is_empty() {
                let vector = self
                    .embedder
                    .embed(&[text.as_str()])?
                    .pop()
                    .unwrap_or_default();
                if let Some(earlier) = self.known.restated_by(&vector) {
                    let why = format!(
                        "the research already found this (\"{earlier}\"): state a different fact from the passages"
                    );
                    rejected.push((text, why));
                    continue;
                }
            }
            // A small model often copies a true sentence and numbers the wrong passage: then
            // the citation goes to the passage that does support it, so it still resolves to
            // its evidence. Of several passages it numbers, only those that support it are
            // cited: an interview guide's fact also cited a chat on tuning hyperparameters.
            let mut cited = Vec::new();
            for &i in &idx {
                if self.matcher.supports(&text, &self.shown[i])? {
                    cited.push(i);
                }
            }
            let moved = cited.is_empty();
            if moved {
                cited.extend(best_supporting(self.matcher, &text, self.shown)?);
            }
            if cited.is_empty() {
                rejected.push((text, "not supported by the passages it cites".to_string()));
                continue;
            }
            let mut stated = false;
            for &i in &cited {
                if self.judge.states(&self.shown[i], &text, judged)? {
                    stated = true;
                    break;
                }
            }
            if stated {
                kept.push((text, cited));
            } else {
                rejected.push((text, TURNED_AROUND.to_string()));
            }
        }
        Ok((kept, rejected))
    }
}

/// Most sentences a node quotes from the passages its learnings left unread.
const MAX_QUOTED: usize = 2;
/// Most sentences a node quotes from the passages its learnings drew on, of what those
/// learnings did not say. A 1.5B model that reads a guide's list of five measures writes one
/// learning from it (the bakery's time-of-use tariff, not its timer, door seals or LED
/// lighting): the rest of the passage is what the report then lacks.
const MAX_QUOTED_FROM_DRAWN: usize = 2;
/// How close to the node's question a quoted sentence must be.
const QUOTE_RELATED: f32 = 0.3;

/// What the passages say that the node's learnings (`kept`) do not: first the sentences
/// closest to the node's question of the passages no learning drew on, at most one from each
/// of [`MAX_QUOTED`] passages (every passage when the model's learnings were all refused, a
/// very small model's usual case); then at most [`MAX_QUOTED_FROM_DRAWN`] sentences of the
/// passages they drew on that none of them states. A quote is supported by its passage by
/// construction; it must still read as a finding, be on the question and say something the
/// research (this node included) does not know yet.
fn quoted_learnings(
    embedder: &dyn Embedder,
    matcher: &SupportMatcher<'_>,
    question: &str,
    evidence: &[Evidence],
    shown: &[String],
    known: Known<'_>,
    kept: &[(String, Vec<usize>)],
) -> Result<Vec<(String, Vec<usize>)>, ResearchError> {
    let drawn_on: BTreeSet<usize> = kept
        .iter()
        .flat_map(|(_, idx)| idx.iter().copied())
        .collect();
    let mut candidates: Vec<(usize, String)> = Vec::new();
    for (i, passage) in shown.iter().enumerate() {
        // History passages are an earlier conversation, not a source to quote as fact.
        if matches!(evidence[i].target, CitationTarget::History { .. }) {
            continue;
        }
        // A list's items run together when the passage is shown on one line ("… energy. -
        // Switching off …"): each is a sentence of its own.
        let lines = passage.replace(". - ", ".\n- ").replace(". * ", ".\n* ");
        for sentence in checks::text::split_sentences(&lines) {
            let sentence = strip_list_marker(&sentence).to_string();
            // A heading, or the passage's last sentence cut at its length ("…"), is no quote.
            let ended = sentence
                .trim_end_matches(['"', '\'', ')', '”', '’'])
                .ends_with(['.', '!']);
            if ended
                && finding_form(&sentence).is_none()
                && checks::text::sentence_debris(&sentence).is_none()
                && !checks::text::leans_on_context(&sentence)
            {
                candidates.push((i, sentence));
            }
        }
    }
    if candidates.is_empty() {
        return Ok(Vec::new());
    }
    let mut texts: Vec<&str> = vec![question];
    texts.extend(candidates.iter().map(|(_, s)| s.as_str()));
    texts.extend(kept.iter().map(|(t, _)| t.as_str()));
    let vectors = embedder.embed(&texts)?;
    let (candidate_vectors, kept_vectors) = vectors[1..].split_at(candidates.len());
    let mut scored: Vec<(f32, usize)> = candidate_vectors
        .iter()
        .enumerate()
        .map(|(k, v)| (crate::embed::cosine(&vectors[0], v), k))
        .filter(|(c, _)| *c >= QUOTE_RELATED)
        .filter(|(_, k)| known.restated_by(&candidate_vectors[*k]).is_none())
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut out: Vec<(String, Vec<usize>)> = Vec::new();
    for &(_, k) in &scored {
        let (passage, sentence) = &candidates[k];
        if !drawn_on.contains(passage) && out.iter().all(|(_, idx)| idx[0] != *passage) {
            out.push((sentence.clone(), vec![*passage]));
        }
        if out.len() == MAX_QUOTED {
            break;
        }
    }
    // A sentence of a passage drawn on is said when a learning restates it (the writer would
    // merge the two) or is supported by it alone.
    let mut from_drawn: Vec<usize> = Vec::new();
    for &(_, k) in &scored {
        if from_drawn.len() == MAX_QUOTED_FROM_DRAWN {
            break;
        }
        let (passage, sentence) = &candidates[k];
        if !drawn_on.contains(passage) {
            continue;
        }
        let vector = &candidate_vectors[k];
        let close =
            |v: &Vec<f32>| crate::embed::cosine(vector, v) >= super::report::DUPLICATE_COSINE;
        if kept_vectors.iter().any(close)
            || from_drawn.iter().any(|&q| close(&candidate_vectors[q]))
        {
            continue;
        }
        let mut said = false;
        for (learning, _) in kept {
            if matcher.supports(learning, sentence)? {
                said = true;
                break;
            }
        }
        if !said {
            from_drawn.push(k);
            out.push((sentence.clone(), vec![*passage]));
        }
    }
    Ok(out)
}

/// The shown passage that supports `text` best, if any does.
fn best_supporting(
    matcher: &SupportMatcher<'_>,
    text: &str,
    shown: &[String],
) -> Result<Option<usize>, ResearchError> {
    let mut best: Option<(usize, f32)> = None;
    for (i, passage) in shown.iter().enumerate() {
        let score = matcher.score(text, passage)?;
        if score >= matcher.threshold() && best.is_none_or(|(_, b)| score > b) {
            best = Some((i, score));
        }
    }
    Ok(best.map(|(i, _)| i))
}

/// Adds `more` to `kept`, skipping what repeats a kept learning (same words, or the same
/// content words by [`checks::text::NEAR_DUPLICATE_JACCARD`]).
fn merge_learnings(kept: &mut Vec<(String, Vec<usize>)>, more: Vec<(String, Vec<usize>)>) {
    for (text, idx) in more {
        let words = checks::text::content_words(&text);
        let repeats = kept.iter().any(|(k, _)| {
            key(k) == key(&text)
                || checks::text::jaccard(&checks::text::content_words(k), &words)
                    >= checks::text::NEAR_DUPLICATE_JACCARD
        });
        if !repeats {
            kept.push((text, idx));
        }
    }
}

/// Words that may open a sentence without being a name, so lower-casing them is safe when the
/// sentence follows "Your earlier conversation said that".
const COMMON_OPENERS: &[&str] = &[
    "a", "all", "an", "any", "as", "both", "each", "for", "in", "it", "its", "many", "most", "no",
    "on", "one", "some", "the", "their", "there", "these", "they", "this", "those", "to", "using",
    "when", "with",
];

/// A learning drawn from the user's earlier chats, phrased as what that conversation said (the
/// first word lower-cased only when it is a common word, so names keep their capital).
pub fn as_earlier_conversation(text: &str) -> String {
    let t = text.trim();
    let first = t.split_whitespace().next().unwrap_or("");
    let body = if COMMON_OPENERS.contains(&first.to_lowercase().as_str()) {
        let mut c = t.chars();
        c.next()
            .map(|f| f.to_lowercase().chain(c).collect())
            .unwrap_or_default()
    } else {
        t.to_string()
    };
    format!("Your earlier conversation said that {body}")
}

/// Alphanumeric characters, lower-cased: two texts with the same key say the same words.
fn key(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// The learnings of a draft, cleaned as [`findings`] cleans them.
/// The text without a list marker the model numbered it with ("1. ", "2) ", "- "): a small
/// model writes learnings as a numbered list even inside JSON.
fn strip_list_marker(text: &str) -> &str {
    let t = text.trim();
    let digits = t.chars().take_while(char::is_ascii_digit).count();
    let rest = if digits > 0 && digits <= 2 {
        t[digits..]
            .strip_prefix(". ")
            .or_else(|| t[digits..].strip_prefix(") "))
    } else {
        None
    };
    rest.or_else(|| t.strip_prefix("- "))
        .or_else(|| t.strip_prefix("* "))
        .unwrap_or(t)
        .trim()
}

fn findings_learnings(draft: Draft, evidence: usize) -> Vec<(String, Vec<usize>)> {
    findings(draft, evidence, &[]).learnings
}

/// Turns the model's draft into findings: sources out of range, repeated learnings, repeated
/// follow-ups and follow-ups that merely restate `known` questions are dropped (small models
/// repeat themselves).
fn findings(draft: Draft, evidence: usize, known: &[&str]) -> Findings {
    let mut seen_learnings = std::collections::HashSet::new();
    let learnings = draft
        .learnings
        .into_iter()
        .filter(|l| seen_learnings.insert(key(&l.insight)))
        .filter_map(|l| {
            let mut idx: Vec<usize> = l
                .sources
                .into_iter()
                .filter(|&n| n >= 1 && n <= evidence)
                .map(|n| n - 1)
                .collect();
            idx.dedup();
            let text = strip_list_marker(&l.insight).to_string();
            (!text.is_empty() && !idx.is_empty()).then_some((text, idx))
        })
        .collect();
    let clean_tags = |tags: Vec<String>| -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for t in tags {
            let t = super::utility::TagCounts::normalize(&t);
            if !t.is_empty() && !out.contains(&t) {
                out.push(t);
            }
        }
        out
    };
    let mut follow_ups: Vec<FollowUp> = Vec::new();
    let known: Vec<String> = known.iter().map(|k| key(k)).collect();
    let mut push = |f: FollowUp| {
        let q = key(&f.question);
        if q.len() >= 5 && !known.contains(&q) && !follow_ups.iter().any(|o| key(&o.question) == q)
        {
            follow_ups.push(f);
        }
    };
    for f in draft.follow_up_questions {
        push(FollowUp {
            question: f.question.trim().to_string(),
            confidence: f32::from(f.confidence.min(10)) / 10.0,
            tags: clean_tags(f.tags),
            wild_card: false,
        });
    }
    if let Some(w) = draft.wild_card_question {
        push(FollowUp {
            question: w.question.trim().to_string(),
            confidence: f32::from(w.confidence.min(10)) / 10.0,
            tags: Vec::new(),
            wild_card: true,
        });
    }
    Findings {
        learnings,
        tags: clean_tags(draft.tags),
        follow_ups,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{ScriptedLlm, WordsEmbedder};

    /// Answers each call with the next scripted JSON and keeps the requests.
    fn queue(answers: Vec<serde_json::Value>) -> ScriptedLlm {
        ScriptedLlm::in_order(answers.iter().map(|a| a.to_string()).collect())
    }

    fn evidence(target: CitationTarget, title: &str, text: &str) -> Evidence {
        Evidence {
            target,
            title: title.into(),
            text: text.into(),
            score: 1.0,
        }
    }

    fn doc(i: usize) -> CitationTarget {
        CitationTarget::Document {
            path: format!("/corpus/{i}.md"),
            chunk: 0,
            page: None,
            url: None,
            name: None,
        }
    }

    const GREEN: &str = "Green tea is brewed at 70 to 80 degrees for two minutes.";
    const BLACK: &str = "Black tea is brewed with boiling water for four minutes.";

    fn run(llm: &dyn Llm, evidence: &[Evidence]) -> Findings {
        run_on(llm, "How should I brew tea?", evidence)
    }

    fn run_on(llm: &dyn Llm, question: &str, evidence: &[Evidence]) -> Findings {
        run_knowing(llm, question, evidence, Known::default())
    }

    fn run_knowing(
        llm: &dyn Llm,
        question: &str,
        evidence: &[Evidence],
        known: Known<'_>,
    ) -> Findings {
        let persona = Persona::default();
        let ctx = NodeContext {
            query: "How should I brew tea?",
            question,
            persona: &persona,
            seen_tags: &[],
            directives: "",
            current_date: "2026-11-22",
            leaf: true,
            support_judge: None,
            known,
        };
        research(llm, &WordsEmbedder, &ctx, evidence).unwrap().0
    }

    #[test]
    fn a_question_is_refused_and_the_retry_says_why() {
        let llm = queue(vec![
            json!({"learnings": [
                {"insight": "How hot should the water be for green tea?", "sources": [1]},
                {"insight": BLACK, "sources": [2]},
            ], "tags": ["brewing"]}),
            json!({"learnings": [
                {"insight": GREEN, "sources": [1]},
                {"insight": "Black tea is brewed with boiling water for four minutes", "sources": [2]},
            ], "tags": ["x"]}),
        ]);
        let ev = [
            evidence(doc(0), "Green tea", GREEN),
            evidence(doc(1), "Black tea", BLACK),
        ];
        let f = run(&llm, &ev);
        let texts: Vec<&str> = f.learnings.iter().map(|(t, _)| t.as_str()).collect();
        // The first call's finding, and the retry's new one; its repeat is not kept twice.
        assert_eq!(texts, vec![BLACK, GREEN]);
        assert_eq!(f.tags, vec!["brewing"]);
        let requests = llm.requests();
        assert_eq!(requests.len(), 2);
        let retry = &requests[1].messages;
        assert_eq!(
            retry.len(),
            3,
            "the retry continues the node's conversation"
        );
        let last = &retry[2].content;
        assert!(
            last.contains("How hot should the water be for green tea?"),
            "{last}"
        );
        assert!(
            last.contains("a question, not a statement of fact"),
            "{last}"
        );
        assert!(last.contains(BLACK), "kept learnings are listed: {last}");
        // The retry asks for learnings only.
        let crate::llm::OutputFormat::JsonSchema(schema) = &requests[1].format else {
            panic!("no schema");
        };
        assert!(!schema.to_string().contains("follow_up_questions"));
    }

    /// A node is told what the research learned before it, and a learning that states it
    /// again is refused with the earlier one quoted, then asked for once more.
    #[test]
    fn a_learning_the_research_already_has_is_refused_and_asked_again() {
        let llm = queue(vec![
            json!({"learnings": [{"insight": GREEN, "sources": [1]}], "tags": ["brewing"]}),
            json!({"learnings": [{"insight": BLACK, "sources": [2]}], "tags": ["brewing"]}),
        ]);
        let ev = [
            evidence(doc(0), "Green tea", GREEN),
            evidence(doc(1), "Black tea", BLACK),
        ];
        let texts = [GREEN];
        let vectors = WordsEmbedder.embed(&texts).unwrap();
        let known = Known {
            texts: &texts,
            vectors: &vectors,
        };
        let f = run_knowing(&llm, "How should I brew tea?", &ev, known);
        assert_eq!(f.learnings, vec![(BLACK.to_string(), vec![1])]);
        let requests = llm.requests();
        let first = &requests[0].messages[0].content;
        assert!(
            first.contains(&format!("Already learned earlier in this research (do not state these again; take other facts from the passages):\n- {GREEN}")),
            "{first}"
        );
        let retry = &requests[1].messages[2].content;
        assert!(
            retry.contains(&format!("the research already found this (\"{GREEN}\")")),
            "{retry}"
        );
    }

    /// The retry echoes only the first answer's learnings and quotes a refused run-on briefly;
    /// a retry that no longer fits the context leaves the first answer's findings standing.
    #[test]
    fn a_retry_echoes_learnings_only_and_one_that_overflows_keeps_the_first_findings() {
        /// Answers the first call from the script; refuses the second as too long.
        struct OverflowingRetry(ScriptedLlm);
        impl Llm for OverflowingRetry {
            fn model_name(&self) -> &str {
                "overflowing retry"
            }
            fn complete(
                &self,
                request: &crate::llm::Request,
                on_text: &mut dyn FnMut(&str),
                cancel: &crate::llm::CancelToken,
            ) -> Result<Completion, LlmError> {
                if request.messages.len() > 1 {
                    self.0.complete(request, on_text, cancel)?;
                    return Err(LlmError::ContextOverflow {
                        needed: 4560,
                        n_ctx: 4096,
                    });
                }
                self.0.complete(request, on_text, cancel)
            }
        }
        let run_on = ", 2.0".repeat(60);
        let llm = OverflowingRetry(queue(vec![
            json!({"learnings": [
                {"insight": GREEN, "sources": [1]},
                {"insight": run_on, "sources": [1]},
            ], "tags": ["brewing"], "follow_up_questions": [
                {"question": run_on, "confidence": 1, "tags": []},
            ]}),
            json!({"learnings": [], "tags": []}),
        ]));
        let f = run(&llm, &[evidence(doc(0), "Green tea", GREEN)]);
        assert_eq!(f.learnings, vec![(GREEN.to_string(), vec![0])]);
        let requests = llm.0.requests();
        assert_eq!(requests.len(), 2, "the retry was asked");
        let echo = &requests[1].messages[1].content;
        assert!(echo.contains(GREEN), "{echo}");
        assert!(!echo.contains("follow_up_questions"), "{echo}");
        let retry = &requests[1].messages[2].content;
        assert!(retry.contains('…'), "{retry}");
        assert!(retry.chars().count() < 1000, "{retry}");
    }

    /// A learning the grammar cut at its bound is refused, not kept as half a sentence.
    #[test]
    fn a_learning_cut_at_the_length_bound_is_refused() {
        let long = format!(
            "{} and the development of literacy and the re",
            &GREEN[..GREEN.len() - 1]
        );
        let cut: String = long.chars().cycle().take(LEARNING_CHARS).collect();
        let llm = queue(vec![
            json!({"learnings": [{"insight": cut, "sources": [1]}], "tags": ["brewing"]}),
            json!({"learnings": [{"insight": GREEN, "sources": [1]}], "tags": ["brewing"]}),
        ]);
        let f = run(&llm, &[evidence(doc(0), "Green tea", GREEN)]);
        assert_eq!(f.learnings, vec![(GREEN.to_string(), vec![0])]);
        let retry = &llm.requests()[1].messages[2].content;
        assert!(
            retry.contains(&format!("cut off at {LEARNING_CHARS} characters")),
            "{retry}"
        );
    }

    /// A learning that begins one more sentence and stops keeps its whole sentences.
    #[test]
    fn a_learning_that_starts_a_sentence_and_stops_keeps_the_sentences_before() {
        let llm = queue(vec![json!({"learnings": [
            {"insight": format!("{GREEN} The"), "sources": [1]},
        ], "tags": ["brewing"]})]);
        let f = run(&llm, &[evidence(doc(0), "Tea", GREEN)]);
        assert_eq!(f.learnings, vec![(GREEN.to_string(), vec![0])]);
        assert_eq!(llm.requests().len(), 1, "nothing refused, no retry");
    }

    /// A learning written as a paragraph is taken as its facts, a sentence leaning on the one
    /// before staying with it; nothing is asked again.
    #[test]
    fn a_paragraph_for_a_learning_becomes_its_facts() {
        let lid = format!("{BLACK} It needs a lid on the pot.");
        let llm = queue(vec![json!({"learnings": [
            {"insight": format!("{GREEN} {lid}"), "sources": [1, 2]},
        ], "tags": ["brewing"]})]);
        let ev = [
            evidence(doc(0), "Green tea", GREEN),
            evidence(doc(1), "Black tea", &lid),
        ];
        let f = run(&llm, &ev);
        let texts: Vec<&str> = f.learnings.iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(texts, vec![GREEN, lid.as_str()]);
        assert_eq!(llm.requests().len(), 1, "nothing refused, no retry");
    }

    #[test]
    fn a_sentence_that_leans_on_a_pair_is_dropped() {
        assert_eq!(
            one_fact_a_sentence("Tea grows in Assam. It is black. It is strong. Kenya grows tea."),
            vec!["Tea grows in Assam. It is black.", "Kenya grows tea."]
        );
        assert_eq!(
            one_fact_a_sentence("Tea grows. It is black."),
            vec!["Tea grows. It is black."]
        );
    }

    /// A passage's title or heading copied as a learning is refused and asked again.
    #[test]
    fn a_heading_copied_from_the_passage_is_not_a_finding() {
        let text = format!("Brewing green tea at home in a pot\n\n{GREEN}");
        let llm = queue(vec![
            json!({"learnings": [{"insight": "Brewing green tea at home in a pot.", "sources": [1]}], "tags": ["brewing"]}),
            json!({"learnings": [{"insight": GREEN, "sources": [1]}], "tags": ["brewing"]}),
        ]);
        let f = run(&llm, &[evidence(doc(0), "Tea", &text)]);
        assert_eq!(f.learnings, vec![(GREEN.to_string(), vec![0])]);
        let retry = &llm.requests()[1].messages[2].content;
        assert!(retry.contains("a heading of its passage"), "{retry}");
    }

    /// A learning cut inside a citation keeps the whole sentence before it, which its passage
    /// supports; nothing is asked again.
    #[test]
    fn a_learning_cut_inside_a_citation_keeps_the_sentence_before_it() {
        let cut = format!("{} (Smith et al. ", &GREEN[..GREEN.len() - 1]);
        let llm = queue(vec![json!({
            "learnings": [{"insight": cut, "sources": [1]}],
            "tags": ["brewing"]
        })]);
        let f = run(&llm, &[evidence(doc(0), "Green tea", GREEN)]);
        assert_eq!(f.learnings, vec![(GREEN.to_string(), vec![0])]);
        assert_eq!(llm.requests().len(), 1, "nothing refused, no retry");
    }

    #[test]
    fn an_unsupported_learning_is_dropped() {
        let llm = queue(vec![
            json!({"learnings": [
                {"insight": "Oolong tea costs 300 euros per kilogram in Taiwan.", "sources": [1]},
                {"insight": GREEN, "sources": [1]},
            ], "tags": ["brewing"]}),
            json!({"learnings": [
                {"insight": "Oolong tea costs 300 euros per kilogram in Taiwan.", "sources": [1]},
            ], "tags": ["brewing"]}),
        ]);
        let f = run(&llm, &[evidence(doc(0), "Green tea", GREEN)]);
        assert_eq!(f.learnings, vec![(GREEN.to_string(), vec![0])]);
        let requests = llm.requests();
        assert!(requests[1].messages[2]
            .content
            .contains("not supported by the passages it cites"));
    }

    #[test]
    fn a_learning_cites_only_the_passages_that_support_it() {
        let llm = queue(vec![json!({"learnings": [
            {"insight": GREEN, "sources": [1, 2]},
        ], "tags": ["brewing"]})]);
        let f = run(
            &llm,
            &[
                evidence(doc(0), "Green tea", GREEN),
                evidence(doc(1), "Black tea", BLACK),
            ],
        );
        // The black-tea passage, which the learning does not draw on, is quoted on its own.
        assert_eq!(
            f.learnings,
            vec![(GREEN.to_string(), vec![0]), (BLACK.to_string(), vec![1])]
        );
    }

    #[test]
    fn when_every_learning_is_refused_the_passages_are_quoted() {
        let question = json!({"learnings": [
            {"insight": "How should the tea be brewed then?", "sources": [1]},
        ], "tags": ["brewing"]});
        let llm = queue(vec![question.clone(), question]);
        let ev = [
            evidence(doc(0), "Green tea", &format!("{GREEN} Sencha is steamed")),
            evidence(doc(1), "Black tea", BLACK),
        ];
        let f = run_on(&llm, "How many minutes is tea brewed?", &ev);
        // One quote per passage, closest to the question first; the cut-off second sentence
        // of the first passage is not a finding.
        let mut texts: Vec<&str> = f.learnings.iter().map(|(t, _)| t.as_str()).collect();
        texts.sort_unstable();
        assert_eq!(texts, vec![BLACK, GREEN]);
        for (text, idx) in &f.learnings {
            assert!(ev[idx[0]].text.contains(text.as_str()), "{text}");
        }
    }

    #[test]
    fn a_passage_no_learning_draws_on_is_quoted() {
        let chat = CitationTarget::History {
            session: 3,
            url: None,
            source: None,
            day: None,
        };
        // Every learning from the first passage, as a 1.5B model writes them.
        let llm = queue(vec![json!({"learnings": [
            {"insight": GREEN, "sources": [1]},
        ], "tags": ["brewing"]})]);
        let ev = [
            evidence(doc(0), "Green tea", GREEN),
            evidence(chat, "Tea chat", "Oolong tea is brewed for three minutes."),
            evidence(doc(1), "Black tea", BLACK),
            evidence(doc(2), "Tea", "Tea is grown in China and India."),
        ];
        let f = run_on(&llm, "How many minutes is tea brewed?", &ev);
        // The black-tea passage is quoted; the earlier conversation is not a source to quote,
        // and the growing regions are not on the question.
        assert_eq!(
            f.learnings,
            vec![(GREEN.to_string(), vec![0]), (BLACK.to_string(), vec![2])]
        );
        assert_eq!(llm.requests().len(), 1, "nothing refused, no retry");
    }

    #[test]
    fn what_a_passage_drawn_on_says_beside_its_learning_is_quoted_up_to_the_cap() {
        const OOLONG: &str = "Oolong tea is brewed at 90 degrees for three minutes.";
        const WHITE: &str = "White tea is brewed at 80 degrees for five minutes.";
        // One learning from a passage of four facts, as a 1.5B model reads a list.
        let llm = queue(vec![json!({"learnings": [
            {"insight": GREEN, "sources": [1]},
        ], "tags": ["brewing"]})]);
        let guide = format!("- {GREEN}\n- {BLACK}\n- {OOLONG}\n- {WHITE}");
        let ev = [evidence(doc(0), "Brewing tea", &guide)];
        let f = run_on(&llm, "How many minutes is tea brewed?", &ev);
        let texts: Vec<&str> = f.learnings.iter().map(|(t, _)| t.as_str()).collect();
        // The learning, then two of the three facts it left, without their list markers, each
        // cited to the passage; the learning's own fact is not quoted again.
        assert_eq!(texts.len(), 1 + MAX_QUOTED_FROM_DRAWN, "{texts:?}");
        assert_eq!(texts[0], GREEN);
        for (text, idx) in &f.learnings[1..] {
            assert!([BLACK, OOLONG, WHITE].contains(&text.as_str()), "{text}");
            assert_eq!(idx, &vec![0]);
        }
        assert_ne!(texts[1], texts[2]);
        assert_eq!(llm.requests().len(), 1);
    }

    #[test]
    fn a_true_learning_citing_the_wrong_passage_cites_the_right_one() {
        let llm = queue(vec![json!({"learnings": [
            {"insight": format!("2. {GREEN}"), "sources": [1]},
        ], "tags": ["brewing"]})]);
        let ev = [
            evidence(doc(1), "Black tea", BLACK),
            evidence(doc(0), "Green tea", GREEN),
        ];
        let f = run(&llm, &ev);
        // The list number goes, and the citation moves to the passage that says it; the
        // passage it first cited is quoted for what it says.
        assert_eq!(
            f.learnings,
            vec![(GREEN.to_string(), vec![1]), (BLACK.to_string(), vec![0])]
        );
        assert_eq!(llm.requests().len(), 1);
    }

    #[test]
    fn a_learning_resting_only_on_history_is_what_the_earlier_conversation_said() {
        let chat = CitationTarget::History {
            session: 7,
            url: None,
            source: None,
            day: None,
        };
        let llm = queue(vec![json!({"learnings": [
            {"insight": "The water for green tea should be at 70 to 80 degrees.", "sources": [1]},
            {"insight": BLACK, "sources": [2]},
        ], "tags": ["brewing"]})]);
        let ev = [
            evidence(
                chat,
                "Tea chat",
                "The water for green tea should be at 70 to 80 degrees.",
            ),
            evidence(doc(1), "Black tea", BLACK),
        ];
        let f = run(&llm, &ev);
        assert_eq!(
            f.learnings[0].0,
            "Your earlier conversation said that the water for green tea should be at 70 to 80 degrees."
        );
        assert_eq!(f.learnings[1].0, BLACK, "a document's finding stays a fact");
        assert_eq!(llm.requests().len(), 1, "nothing refused, no retry");
        // Names keep their capital.
        assert_eq!(
            as_earlier_conversation("Brooks makes stability shoes."),
            "Your earlier conversation said that Brooks makes stability shoes."
        );
    }

    #[test]
    fn out_of_range_sources_and_duplicate_questions_are_dropped() {
        let draft: Draft = serde_json::from_value(json!({
            "learnings": [
                {"insight": "A real finding", "sources": [1, 9]},
                {"insight": "Cites nothing real", "sources": [7]},
                {"insight": "A real finding.", "sources": [2]},
            ],
            "tags": ["Side Effects", "side  effects", "cost"],
            "follow_up_questions": [
                {"question": "What does it cost?", "confidence": 8, "tags": ["Cost"]},
                {"question": "what does it cost?", "confidence": 3, "tags": []},
                {"question": "How is it made", "confidence": 9, "tags": []},
            ],
            "wild_card_question": {"question": "Who invented it?", "confidence": 4},
        }))
        .unwrap();
        let f = findings(draft, 2, &["How is it made?"]);
        assert_eq!(f.learnings, vec![("A real finding".to_string(), vec![0])]);
        assert_eq!(f.tags, vec!["side effects", "cost"]);
        assert_eq!(f.follow_ups.len(), 2);
        assert!(f.follow_ups[1].wild_card);
        assert!((f.follow_ups[0].confidence - 0.8).abs() < 1e-6);
    }

    #[test]
    fn leaf_schema_asks_for_no_follow_ups() {
        let s = schema(3, true).to_string();
        assert!(!s.contains("follow_up_questions"));
        let s = schema(0, false);
        assert_eq!(s["properties"]["learnings"]["maxItems"], 0);
    }
}
