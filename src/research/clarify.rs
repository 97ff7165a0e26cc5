//! Clarification before research (IntentRL §3.1, §3.4; docs/architecture.md, "clarify"): a few questions, one
//! per turn with options and free text, then a summary of the dialogue into a refined brief
//! and the initial checklist.

use serde::{Deserialize, Serialize};

use super::ResearchError;
use crate::embed::{cosine, Embedder};
use crate::llm::{complete_schema, Completion, GenerationOptions, Llm, Message};
use crate::text::{clip, one_line};

/// One clarifying question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ClarifyQuestion {
    /// 1-based turn number.
    pub turn: usize,
    pub question: String,
    /// 2–4 suggested answers, shown numbered from 1; the user may also write their own.
    pub options: Vec<String>,
    /// When the question and its options were translated for a user who asked in another
    /// language: the English they were proposed in, which the research reads (the English
    /// embedding does not match a French option to the English passages it is about).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub in_english: Option<QuestionWording>,
}

/// A clarifying question's words: the question and its suggested answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct QuestionWording {
    pub question: String,
    pub options: Vec<String>,
}

/// The user's reply to a clarifying question.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ClarifyAnswer {
    /// Chosen options, numbered from 1.
    #[serde(default)]
    pub choices: Vec<usize>,
    /// Free text (their own answer or a comment).
    #[serde(default)]
    pub text: String,
    /// The user skipped the rest of the clarification.
    #[serde(default)]
    pub skip: bool,
}

/// A question and its answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClarifyTurn {
    pub question: ClarifyQuestion,
    pub answer: ClarifyAnswer,
}

/// Longest question the grammar allows, in characters.
pub const MAX_QUESTION_CHARS: usize = 200;
/// Longest suggested answer the grammar allows, in characters.
pub const MAX_OPTION_CHARS: usize = 80;
/// Longest refined brief the grammar allows, in characters.
pub const MAX_BRIEF_CHARS: usize = 600;
/// Longest checklist item the grammar allows (as in the persona checklist).
pub const MAX_ITEM_CHARS: usize = 120;

// Token budgets: the longest output the grammar allows at about one token per character, plus
// the JSON around it, so a grammar-valid answer is never cut off.
const QUESTION_MAX_TOKENS: u32 = 640;
const SUMMARY_MAX_TOKENS: u32 = 1_500;
// Prompt-side clipping, so prompt plus output stay inside a 4096-token context.
const PROFILE_PROMPT_CHARS: usize = 1_200;
const PERSONA_PROMPT_CHARS: usize = 300;
const ANSWER_PROMPT_CHARS: usize = 300;
const QUERY_PROMPT_CHARS: usize = 1_500;

/// The clarification's knobs (IntentRL Appendix A.1).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ClarifySettings {
    /// Most questions asked before research starts.
    pub max_turns: u32,
    /// A candidate whose cosine to an earlier question exceeds this is redundant (IntentRL's
    /// repetition threshold).
    pub redundancy_threshold: f32,
    /// A candidate whose relevance is below this is off-topic: the larger of the cosine of
    /// question plus suggested answers to the query (or the query with the profile) and the
    /// cosine of the question to the generic [`ASPECTS`]. Under all-MiniLM-L6-v2, 0.30 separates
    /// 28 on-topic from 22 off-topic (query, question) pairs over two queries (lowest on-topic
    /// 0.304, highest off-topic 0.296; `tests/clarify_real.rs`). A budget question about the
    /// wrong thing still passes, as any budget question does.
    pub relevance_threshold: f32,
    /// Candidates generated per turn before the dialogue ends early.
    pub attempts: u32,
}

impl Default for ClarifySettings {
    fn default() -> Self {
        Self {
            max_turns: 3,
            redundancy_threshold: 0.92,
            relevance_threshold: 0.30,
            attempts: 3,
        }
    }
}

/// What the questions are about and who they are for.
#[derive(Debug, Clone, Copy, Default)]
pub struct ClarifyContext<'a> {
    pub query: &'a str,
    /// The query-aware profile as prompt text, or empty.
    pub profile: &'a str,
    /// What is known about the user up front, or empty.
    pub persona_text: &'a str,
}

/// Why a candidate question was not asked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RejectReason {
    /// Too close to a question already asked, or to the query itself.
    Redundant { similar_to: String, similarity: f32 },
    /// Too far from the query (and profile).
    Unrelated { similarity: f32 },
}

/// A candidate question that was dropped, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Rejected {
    pub question: String,
    pub reason: RejectReason,
}

/// The outcome of proposing one turn's question.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Proposal {
    /// The question to ask, or `None`: the dialogue ends (turns used up, the user skipped, or
    /// every candidate was rejected or unusable).
    pub question: Option<ClarifyQuestion>,
    /// Candidates dropped on the way, in order.
    pub rejected: Vec<Rejected>,
    /// Every LLM call made, including those whose output was unusable.
    pub completions: Vec<Completion>,
}

/// The dialogue summarised (IntentRL's summary agent): what to research, and what the report
/// must cover.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RefinedBrief {
    /// The research request in 1–4 sentences, in the user's terms.
    pub brief: String,
    /// 3–6 short criteria the report must meet ("Covers …"), for the persona checklist. Empty
    /// only when the model's output was unusable twice; the research then infers its own.
    pub checklist: Vec<String>,
}

fn question_schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "question": {"type": "string", "minLength": 10, "maxLength": MAX_QUESTION_CHARS},
            "suggested_answers": {
                "type": "array",
                "items": {"type": "string", "minLength": 2, "maxLength": MAX_OPTION_CHARS},
                "minItems": 2, "maxItems": 4,
            },
        },
        "required": ["question", "suggested_answers"],
    })
}

fn summary_schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "brief": {"type": "string", "minLength": 10, "maxLength": MAX_BRIEF_CHARS},
            "checklist_items": {
                "type": "array",
                "items": {"type": "string", "minLength": 3, "maxLength": MAX_ITEM_CHARS},
                "minItems": 3, "maxItems": 6,
            },
        },
        "required": ["brief", "checklist_items"],
    })
}

#[derive(Debug, Deserialize)]
struct QuestionDraft {
    question: String,
    suggested_answers: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct SummaryDraft {
    brief: String,
    checklist_items: Vec<String>,
}

/// Removes the numbering a model may add ("1. ", "2) ", "- ") and surrounding space.
fn strip_numbering(s: &str) -> &str {
    let t = s.trim();
    let digits = t.trim_start_matches(|c: char| c.is_ascii_digit());
    let t = if digits.len() < t.len() && digits.starts_with(['.', ')', ':']) {
        &digits[1..]
    } else {
        t
    };
    t.trim_start_matches(['-', '*', '•']).trim()
}

/// The turns as prompt context: each question with the user's answer.
fn turns_context<'t>(turns: impl IntoIterator<Item = &'t ClarifyTurn>) -> Vec<minijinja::Value> {
    turns
        .into_iter()
        .map(|t| {
            let asked = t.question.as_researched();
            let answer = if t.answer.is_skip() {
                "(skipped)".to_string()
            } else {
                let a = t.answer.describe(&asked);
                if a.is_empty() {
                    "(no answer)".to_string()
                } else {
                    one_line(&a, ANSWER_PROMPT_CHARS)
                }
            };
            let question = one_line(&asked.question, MAX_QUESTION_CHARS);
            minijinja::context! { question => question, answer => answer }
        })
        .collect()
}

/// Cleans a draft into a question: trimmed text, options without numbering, blanks and
/// duplicates. `None` when fewer than two options remain.
fn tidy(draft: QuestionDraft, turn: usize) -> Option<ClarifyQuestion> {
    let question = draft.question.trim().to_string();
    if question.is_empty() {
        return None;
    }
    let mut options: Vec<String> = Vec::new();
    for o in &draft.suggested_answers {
        let o = strip_numbering(o);
        let lower = o.to_lowercase();
        if o.is_empty()
            || lower == question.to_lowercase()
            || options.iter().any(|x| x.to_lowercase() == lower)
        {
            continue;
        }
        options.push(o.to_string());
    }
    (options.len() >= 2).then_some(ClarifyQuestion {
        turn,
        question,
        options,
        in_english: None,
    })
}

/// What any research request can be clarified on (goal, scope, depth, constraints,
/// use; BESPOKE's domain fit and depth): a generic question close to one of these is on-topic
/// even when it names nothing of the query ("Who is the report for?" has cosine 0.02 to a
/// database question under all-MiniLM-L6-v2, 1.0 here).
pub const ASPECTS: &[&str] = &[
    "What do you want to achieve?",
    "Who is the report for?",
    "How will you use the results?",
    "How detailed or technical should the answer be?",
    "What format do you want: short steps, a summary or an in-depth report?",
    "What are your constraints, such as budget, time or location?",
    "What should the research focus on or leave out?",
    "What matters most to you?",
    "How much do you already know about this?",
    "Is this for work or for personal use?",
];

/// The embeddings a candidate is checked against, computed once per proposal.
struct Anchors<'a> {
    /// The query, and the query with the profile.
    topic: Vec<Vec<f32>>,
    aspects: Vec<Vec<f32>>,
    /// The query and every question asked so far, with their texts.
    earlier: Vec<(&'a str, Vec<f32>)>,
}

impl<'a> Anchors<'a> {
    fn new(
        embedder: &dyn Embedder,
        ctx: &ClarifyContext<'a>,
        turns: &'a [ClarifyTurn],
    ) -> Result<Self, crate::embed::EmbedError> {
        let profile = clip(ctx.profile, PROFILE_PROMPT_CHARS);
        let mut topic_texts = vec![ctx.query.to_string()];
        if !profile.is_empty() {
            topic_texts.push(format!("{}\n{profile}", ctx.query));
        }
        // The query counts as asked: a candidate that restates it asks nothing new.
        let earlier: Vec<&'a str> = std::iter::once(ctx.query)
            .chain(turns.iter().map(|t| t.question.question.as_str()))
            .collect();
        let texts: Vec<&str> = topic_texts
            .iter()
            .map(String::as_str)
            .chain(ASPECTS.iter().copied())
            .chain(turns.iter().map(|t| t.question.question.as_str()))
            .collect();
        let mut vectors = embedder.embed(&texts)?.into_iter();
        let topic: Vec<Vec<f32>> = vectors.by_ref().take(topic_texts.len()).collect();
        let aspects: Vec<Vec<f32>> = vectors.by_ref().take(ASPECTS.len()).collect();
        // The query's vector is the first topic anchor.
        let earlier = earlier
            .into_iter()
            .zip(topic.first().cloned().into_iter().chain(vectors))
            .collect();
        Ok(Self {
            topic,
            aspects,
            earlier,
        })
    }

    /// The embeddings of a candidate: its question alone, and with its suggested answers
    /// (which name the topic even when the question is generic).
    fn embed(
        embedder: &dyn Embedder,
        q: &ClarifyQuestion,
    ) -> Result<(Vec<f32>, Vec<f32>), crate::embed::EmbedError> {
        let with_options = format!("{} {}", q.question, q.options.join("; "));
        let mut v = embedder.embed(&[&q.question, &with_options])?.into_iter();
        Ok((v.next().unwrap_or_default(), v.next().unwrap_or_default()))
    }

    /// The most similar earlier question (or the query) and its cosine.
    fn closest(&self, question: &[f32]) -> Option<(&'a str, f32)> {
        self.earlier
            .iter()
            .map(|(t, e)| (*t, cosine(question, e)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
    }

    /// Relevance: the question with its options against the query (and the query with the
    /// profile), or the question alone against the generic [`ASPECTS`], whichever is closer.
    fn relevance(&self, question: &[f32], with_options: &[f32]) -> f32 {
        let topic = self.topic.iter().map(|a| cosine(with_options, a));
        let aspect = self.aspects.iter().map(|a| cosine(question, a));
        topic.chain(aspect).fold(0.0, f32::max)
    }
}

/// The relevance `propose` measures for `question` (see [`ClarifySettings::relevance_threshold`]),
/// for measurements and diagnostics.
pub fn relevance(
    embedder: &dyn Embedder,
    ctx: &ClarifyContext,
    question: &ClarifyQuestion,
) -> Result<f32, crate::embed::EmbedError> {
    let anchors = Anchors::new(embedder, ctx, &[])?;
    let (q, with_options) = Anchors::embed(embedder, question)?;
    Ok(anchors.relevance(&q, &with_options))
}

/// What a retry asks about, with an example question, so that greedy decoding does not return
/// the same candidate: one aspect per retry, starting at a different one each turn. (A small
/// model that only restates the request can still copy the example; a larger one adapts it.)
const RETRY_FOCUS: &[(&str, &str)] = &[
    ("how they will use the result", "What will you use it for?"),
    ("how much detail they want", "How much detail do you want?"),
    (
        "their constraints (budget, time, place)",
        "What is your budget?",
    ),
    (
        "which part matters most to them",
        "Which part matters most to you?",
    ),
    ("who the result is for", "Who is it for?"),
    (
        "what they already know",
        "How much do you already know about it?",
    ),
];

/// Proposes the next turn's question given the turns so far (IntentRL §3.4 with its rule-based
/// checks applied to our own candidates).
///
/// Returns no question, without calling the model, once `max_turns` turns were asked or the
/// user skipped. Otherwise up to `attempts` candidates are generated. One whose embedding
/// cosine to an earlier question, or to the query itself (a restatement), exceeds
/// `redundancy_threshold` is redundant. One whose relevance stays below `relevance_threshold`
/// is unrelated: relevance is the larger of the cosine of question plus suggested answers to
/// the query (and to the query with the profile) and the cosine of the question to the
/// generic [`ASPECTS`]. Each rejected candidate is listed in the next prompt as one not to ask,
/// and the retry names an aspect to ask about (decoding is greedy: the same prompt would give
/// the same candidate). Output that does not parse or has fewer than two distinct options
/// counts as a failed attempt, not an error. After `attempts` failures the question is `None`
/// and the dialogue ends early.
pub fn propose(
    llm: &dyn Llm,
    embedder: &dyn Embedder,
    ctx: &ClarifyContext,
    turns: &[ClarifyTurn],
    settings: &ClarifySettings,
) -> Result<Proposal, ResearchError> {
    let mut proposal = Proposal {
        question: None,
        rejected: Vec::new(),
        completions: Vec::new(),
    };
    if turns.len() >= settings.max_turns as usize || turns.iter().any(|t| t.answer.is_skip()) {
        return Ok(proposal);
    }
    let turn = turns.len() + 1;
    let profile = clip(ctx.profile, PROFILE_PROMPT_CHARS);
    let persona = one_line(ctx.persona_text, PERSONA_PROMPT_CHARS);
    let asked = turns_context(turns);
    let anchors = Anchors::new(embedder, ctx, turns)?;

    let mut avoid: Vec<String> = Vec::new();
    let mut malformed = false;
    for attempt in 0..settings.attempts as usize {
        let (focus, example) = match attempt {
            0 => ("", ""),
            n => RETRY_FOCUS[(turn + n - 2) % RETRY_FOCUS.len()],
        };
        let prompt = crate::prompts::render(
            "clarify_question",
            minijinja::context! {
                query => clip(ctx.query, QUERY_PROMPT_CHARS),
                persona => persona,
                profile => profile,
                turns => asked,
                avoid => avoid,
                focus => focus,
                example => example,
                malformed => malformed,
            },
        )?;
        // Unusable output is still accounted for: the completion comes back either way.
        let reply = complete_schema::<QuestionDraft>(
            llm,
            vec![Message::user(prompt)],
            GenerationOptions::greedy(QUESTION_MAX_TOKENS),
            question_schema(),
        )?;
        let (parsed, completion) = (reply.parsed, reply.completion);
        proposal.completions.push(completion);
        let Some(candidate) = parsed.ok().and_then(|d| tidy(d, turn)) else {
            tracing::debug!("clarify: unusable question output");
            malformed = true;
            continue;
        };
        malformed = false;
        let (question_vec, with_options_vec) = Anchors::embed(embedder, &candidate)?;
        if let Some((similar_to, similarity)) = anchors.closest(&question_vec) {
            if similarity > settings.redundancy_threshold {
                avoid.push(candidate.question.clone());
                proposal.rejected.push(Rejected {
                    question: candidate.question,
                    reason: RejectReason::Redundant {
                        similar_to: similar_to.to_string(),
                        similarity,
                    },
                });
                continue;
            }
        }
        let similarity = anchors.relevance(&question_vec, &with_options_vec);
        if similarity < settings.relevance_threshold {
            avoid.push(candidate.question.clone());
            proposal.rejected.push(Rejected {
                question: candidate.question,
                reason: RejectReason::Unrelated { similarity },
            });
            continue;
        }
        proposal.question = Some(candidate);
        break;
    }
    Ok(proposal)
}

/// The brief when the model gave nothing usable: the query, then each answered question with
/// its answer, so nothing the user said is lost.
fn fallback_brief(query: &str, answered: &[&ClarifyTurn]) -> String {
    let mut brief = query.trim().to_string();
    for t in answered {
        let answer = t.answer.describe(&t.question);
        if !answer.is_empty() {
            brief.push_str(&format!(
                " ({} {})",
                t.question.question.trim(),
                one_line(&answer, ANSWER_PROMPT_CHARS)
            ));
        }
    }
    brief
}

/// Summarises the dialogue (IntentRL's summary agent) into a refined brief and the initial
/// checklist: short "Covers …" criteria, as the persona checklist expects.
///
/// With no answered turns the brief is the query itself (there is nothing to refine, and a
/// rewrite could only drift), but the checklist still comes from the model. Unusable output is
/// tried once more; if it is unusable again the brief is the query with the answers appended
/// and the checklist is empty. The returned completion carries the usage of every call.
pub fn summarise(
    llm: &dyn Llm,
    ctx: &ClarifyContext,
    turns: &[ClarifyTurn],
) -> Result<(RefinedBrief, Completion), ResearchError> {
    let answered: Vec<&ClarifyTurn> = turns
        .iter()
        .filter(|t| !t.answer.is_skip() && !t.answer.is_empty())
        .collect();
    let dialogue = turns_context(answered.iter().copied());
    let mut total = crate::llm::Usage::default();
    let mut malformed = false;
    let mut last: Option<Completion> = None;
    for _ in 0..2 {
        let prompt = crate::prompts::render(
            "clarify_summary",
            minijinja::context! {
                query => clip(ctx.query, QUERY_PROMPT_CHARS),
                persona => one_line(ctx.persona_text, PERSONA_PROMPT_CHARS),
                profile => clip(ctx.profile, PROFILE_PROMPT_CHARS),
                turns => dialogue,
                malformed => malformed,
            },
        )?;
        let reply = complete_schema::<SummaryDraft>(
            llm,
            vec![Message::user(prompt)],
            GenerationOptions::greedy(SUMMARY_MAX_TOKENS),
            summary_schema(),
        )?;
        let (parsed, completion) = (reply.parsed, reply.completion);
        total += completion.usage;
        let mut completion = completion;
        completion.usage = total;
        let draft = match parsed {
            Ok(d) => d,
            Err(e) => {
                tracing::debug!("clarify: unusable summary output: {e}");
                malformed = true;
                last = Some(completion);
                continue;
            }
        };
        let mut checklist: Vec<String> = Vec::new();
        for item in &draft.checklist_items {
            let item = strip_numbering(item);
            if !item.is_empty()
                && !checklist
                    .iter()
                    .any(|c| c.to_lowercase() == item.to_lowercase())
            {
                checklist.push(item.to_string());
            }
        }
        let brief = draft.brief.split_whitespace().collect::<Vec<_>>().join(" ");
        let brief = if answered.is_empty() || brief.is_empty() {
            fallback_brief(ctx.query, &answered)
        } else {
            brief
        };
        return Ok((RefinedBrief { brief, checklist }, completion));
    }
    let completion = last.expect("at least one attempt was made");
    Ok((
        RefinedBrief {
            brief: fallback_brief(ctx.query, &answered),
            checklist: Vec::new(),
        },
        completion,
    ))
}

/// Words that end the clarification when typed alone.
fn is_skip_word(s: &str) -> bool {
    s.trim()
        .trim_end_matches(['.', '!'])
        .eq_ignore_ascii_case("skip")
}

impl ClarifyAnswer {
    /// Parses a typed reply. Leading numbers ("2", "1, 3", "1 and 3") choose options (numbers
    /// out of range are ignored); whatever follows them, or a reply that does not start with a
    /// number, is kept as free text. An empty reply or "skip" alone (any case) skips.
    pub fn parse(reply: &str, question: &ClarifyQuestion) -> Self {
        let reply = reply.trim();
        if reply.is_empty() || is_skip_word(reply) {
            return Self {
                skip: true,
                ..Self::default()
            };
        }
        let is_sep = |c: char| c.is_whitespace() || c == ',' || c == ';';
        let number = |tok: &str| tok.trim_end_matches(['.', ')']).parse::<usize>().ok();
        let mut answer = Self::default();
        let mut rest = reply;
        let mut seen_number = false;
        loop {
            let s = rest.trim_start_matches(is_sep);
            let end = s.find(is_sep).unwrap_or(s.len());
            let tok = &s[..end];
            if tok.is_empty() {
                rest = s;
                break;
            }
            if let Some(n) = number(tok) {
                seen_number = true;
                if (1..=question.options.len()).contains(&n) && !answer.choices.contains(&n) {
                    answer.choices.push(n);
                }
                rest = &s[end..];
                continue;
            }
            // "1 and 3", "1 & 3": a connector between two numbers.
            let after = s[end..].trim_start_matches(is_sep);
            let next = &after[..after.find(is_sep).unwrap_or(after.len())];
            if seen_number
                && (tok.eq_ignore_ascii_case("and") || tok == "&" || tok == "+")
                && number(next).is_some()
            {
                rest = &s[end..];
                continue;
            }
            rest = s;
            break;
        }
        answer.text = rest
            .trim_start_matches(|c: char| is_sep(c) || c == '-' || c == ':')
            .trim()
            .to_string();
        answer
    }

    /// The answer as prose for prompts: the chosen options' texts, then the free text.
    /// "(skipped)" for a skip; empty when nothing was said.
    pub fn describe(&self, question: &ClarifyQuestion) -> String {
        if self.skip {
            return "(skipped)".into();
        }
        let chosen: Vec<&str> = self
            .choices
            .iter()
            .filter_map(|&n| question.options.get(n.wrapping_sub(1)))
            .map(|o| o.trim_end_matches('.'))
            .collect();
        let text = self.text.trim();
        match (chosen.is_empty(), text.is_empty()) {
            (true, true) => String::new(),
            (false, true) => chosen.join("; "),
            (true, false) => text.to_string(),
            (false, false) => format!("{}. {text}", chosen.join("; ")),
        }
    }

    /// Whether the user skipped the rest of the clarification.
    pub fn is_skip(&self) -> bool {
        self.skip
    }

    /// Whether the reply said nothing usable (not a skip, no option in range, no text).
    pub fn is_empty(&self) -> bool {
        !self.skip && self.choices.is_empty() && self.text.trim().is_empty()
    }
}

impl ClarifyQuestion {
    /// The question as the research reads it: in English when it was translated for the user
    /// (the same numbered options, so the user's choices point at the same answers).
    pub fn as_researched(&self) -> ClarifyQuestion {
        match &self.in_english {
            Some(w) if w.options.len() == self.options.len() => ClarifyQuestion {
                turn: self.turn,
                question: w.question.clone(),
                options: w.options.clone(),
                in_english: None,
            },
            _ => self.clone(),
        }
    }

    /// The question as shown in a terminal: the question, its numbered options and how to
    /// answer.
    pub fn render(&self) -> String {
        let mut out = format!("Question {}: {}\n", self.turn, self.question.trim());
        for (i, o) in self.options.iter().enumerate() {
            out.push_str(&format!("  {}. {}\n", i + 1, o.trim()));
        }
        out.push_str(
            "Type the numbers that fit (e.g. 1, 3), your own answer, or both; \
             press Enter or type \"skip\" to start researching.",
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn question() -> ClarifyQuestion {
        ClarifyQuestion {
            turn: 1,
            question: "Which tent?".into(),
            options: vec!["Light".into(), "Cheap".into()],
            in_english: None,
        }
    }

    /// Both templates render with and without the optional parts, and say what they are for.
    #[test]
    fn clarify_templates_render() {
        let turns = turns_context(&[ClarifyTurn {
            question: question(),
            answer: ClarifyAnswer {
                choices: vec![2],
                text: "under 200 euros".into(),
                skip: false,
            },
        }]);
        for (turns, avoid, profile, persona, malformed) in [
            (vec![], vec![], "", "", false),
            (
                turns,
                vec!["What is your budget?"],
                "Emphasize: ultralight",
                "A hiker.",
                true,
            ),
        ] {
            let full = !turns.is_empty();
            let ctx = minijinja::context! {
                query => "best tent?", persona => persona, profile => profile,
                turns => turns, avoid => avoid, malformed => malformed,
                focus => if full { "who the result is for" } else { "" },
                example => if full { "Who is it for?" } else { "" },
            };
            let q = crate::prompts::render("clarify_question", ctx.clone()).unwrap();
            assert!(q.contains("best tent?") && q.contains("JSON"), "{q}");
            assert!(q.contains("\"question\" and \"suggested_answers\""), "{q}");
            assert_eq!(
                q.contains("Which tent? Answer: Cheap. under 200 euros"),
                full,
                "{q}"
            );
            assert_eq!(q.contains("- What is your budget?"), full, "{q}");
            assert_eq!(q.contains("ultralight"), full, "{q}");
            assert_eq!(q.contains("A hiker."), full, "{q}");
            assert_eq!(q.contains("under 120 characters"), full, "{q}");
            assert_eq!(
                q.contains(
                    "A good question now: \"Who is it for?\" (about who the result is for)."
                ),
                full,
                "{q}"
            );
            assert_eq!(q.contains("the most important thing"), !full, "{q}");
            let s = crate::prompts::render("clarify_summary", ctx).unwrap();
            assert!(
                s.contains("best tent?") && s.contains("\"checklist_items\""),
                "{s}"
            );
            assert_eq!(s.contains("(none answered)"), !full, "{s}");
            assert_eq!(s.contains("Which tent? Answer: Cheap"), full, "{s}");
        }
    }

    #[test]
    fn numbering_is_stripped_but_numbers_in_text_kept() {
        assert_eq!(strip_numbering("1. Light"), "Light");
        assert_eq!(strip_numbering("2) Cheap "), "Cheap");
        assert_eq!(strip_numbering("- Covers cost"), "Covers cost");
        assert_eq!(strip_numbering("2 people"), "2 people");
        assert_eq!(strip_numbering("2024 models"), "2024 models");
    }

    #[test]
    fn drafts_lose_blank_and_duplicate_options() {
        let draft = |options: &[&str]| QuestionDraft {
            question: " Which tent? ".into(),
            suggested_answers: options.iter().map(|s| s.to_string()).collect(),
        };
        let q = tidy(draft(&["1. Light", "light", "  ", "2. Cheap"]), 2).unwrap();
        assert_eq!(q.question, "Which tent?");
        assert_eq!(q.options, vec!["Light", "Cheap"]);
        assert_eq!(q.turn, 2);
        assert!(tidy(draft(&["Light", "LIGHT"]), 1).is_none());
        assert!(tidy(draft(&["Which tent?", "Light"]), 1).is_none());
    }

    #[test]
    fn schemas_bound_every_string_and_array() {
        for schema in [question_schema(), summary_schema()] {
            for (_, p) in schema["properties"].as_object().unwrap() {
                let bounded = p.get("maxLength").or(p.get("maxItems")).is_some();
                assert!(bounded, "{p}");
                if let Some(items) = p.get("items") {
                    assert!(items.get("maxLength").is_some(), "{items}");
                }
            }
        }
        // The longest grammar-valid output fits the budget at one token per character.
        assert!(MAX_QUESTION_CHARS + 4 * MAX_OPTION_CHARS + 60 <= QUESTION_MAX_TOKENS as usize);
        assert!(MAX_BRIEF_CHARS + 6 * (MAX_ITEM_CHARS + 4) + 40 <= SUMMARY_MAX_TOKENS as usize);
    }

    #[test]
    fn settings_default_and_deserialize_partially() {
        let s: ClarifySettings = serde_json::from_str(r#"{"max_turns": 2}"#).unwrap();
        assert_eq!(s.max_turns, 2);
        assert_eq!(s.redundancy_threshold, 0.92);
        assert_eq!(s.attempts, ClarifySettings::default().attempts);
    }
}
