//! The report's prose: small model calls, each checked in code before its output is kept.
//!
//! Every call is a task a 1.5B model does reliably — connect at most three facts in a few
//! sentences, name a section, name the report, say what facts mean for one need — answered as
//! a one-field JSON object under a grammar. Each sentence is then checked: no debris (JSON,
//! markup, scaffolding, a cut-off end) and the form of a statement; no near-duplicate of a
//! sentence already in the report; supported by at least one passage its paragraph cites
//! ([`SupportMatcher`] at [`SUPPORT_THRESHOLD`]) and, when the judge is on, stated by it the
//! same way round as the chat model reads it ([`crate::checks::judge`]: reversed causes, swapped
//! order and wrong numbers reuse the passage's words). A call whose output fails is asked once more
//! with the reasons; what still fails is dropped, and facts the kept sentences leave out are
//! added in their own words, so the paragraph never loses a fact or gains an unsupported one.

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;

use serde_json::json;

use super::outline::{tidy_sentence, DUPLICATE_COSINE, NEAR_ON_TOPIC_FINDING, OFF_TOPIC_FINDING};
use crate::checks::judge::{Judge, TURNED_AROUND};
use crate::checks::text::{
    advice_to_someone_unnamed, borrowed_from_the_question, content_words, finding_form,
    foreign_script, heading_debris, jaccard, leans_on_context, question_terms, sentence_debris,
    split_sentences, Script, NEAR_DUPLICATE_JACCARD,
};
use crate::checks::{SupportMatcher, SUPPORT_THRESHOLD};
use crate::embed::{cosine, Embedder};
use crate::llm::{complete_schema, Completion, GenerationOptions, Llm, Message};
use crate::research::tree::one_line;
use crate::research::ResearchError;

/// Longest paragraph a call may write (characters): seven sentences, a fact and a detail of
/// each of three facts and one that connects them.
const MAX_PROSE_CHARS: usize = 1_200;
/// Tokens allowed for a paragraph: the longest text at about 1.5 characters a token, plus
/// the JSON around it, so the grammar's bound stops the model before `max_tokens` does.
const PROSE_TOKENS: u32 = 820;
/// Longest heading or title (characters, words).
const MAX_HEADING_CHARS: usize = 70;
/// A heading refused for its length falls back to the direction's question, which reads
/// worse than a long noun phrase: on the fall of Rome, "Internal and External Causes of the
/// Fall of the Western Roman Empire" (12 words) was refused at 8 and the section was headed
/// by a question. The characters bound keeps a heading to a line.
const MAX_HEADING_WORDS: usize = 12;
const MAX_TITLE_WORDS: usize = 12;
/// A sentence of a paragraph's other attempt is added when this share of its content words is
/// new to the attempt kept; with fewer it says again, in part, what that one says.
const NEW_WORDS_TO_ADD: f64 = 0.5;
/// A fact counts as said by a paragraph when this share of its content words is in it.
const FACT_COVERED: f64 = 0.6;
/// A supported sentence states a fact (in other words) when it has at least this share of the
/// fact's content words; with fewer it is another detail of the same passage.
const FACT_ABOUT: f64 = 0.3;

/// A learning as the writer sees it: its sentence and the passages it cites.
#[derive(Debug, Clone)]
pub(super) struct Fact {
    pub text: String,
    pub passages: Vec<String>,
}

/// A paragraph's sentences as the model wrote them and the checks kept them, before they
/// are taken into the report.
pub(super) struct Draft {
    sentences: Vec<String>,
    completions: Vec<Completion>,
}

/// The passages of `facts`, each once.
fn passages_of(facts: &[Fact]) -> Vec<&str> {
    let mut passages: Vec<&str> = Vec::new();
    for p in facts.iter().flat_map(|f| f.passages.iter()) {
        if !passages.contains(&p.as_str()) {
            passages.push(p);
        }
    }
    passages
}

/// A heading as the model wrote it and the checks kept it (None: none passed), before it is
/// taken into the report.
pub(super) struct HeadingDraft {
    heading: Option<String>,
    completions: Vec<Completion>,
}

/// Writes the report's prose, remembering every sentence kept so none is said twice.
pub(super) struct Writer<'a> {
    llm: &'a dyn Llm,
    embedder: &'a dyn Embedder,
    support: SupportMatcher<'a>,
    /// The question's embedding: a detail the model adds must be about it or about a fact of
    /// its paragraph ([`Writer::off_question_detail`]). Empty: no such check.
    question: Vec<f32>,
    /// The question's content words: a sentence adds them to what its passage says only where
    /// that passage is about the question ([`Writer::framed`]).
    question_words: BTreeSet<String>,
    /// Each passage's title: its words are the passage's too ("Analysing count data from
    /// repeated field surveys" for a passage on count models).
    titles: HashMap<String, String>,
    /// Each passage's cosine to the question, once computed.
    closeness: Mutex<HashMap<String, f32>>,
    /// Whether a passage states a sentence the way round it says it ([`crate::checks::judge`]).
    judge: Judge<'a>,
    /// The report's writing system (the question's): a word in another one is debris
    /// unless a cited passage has it.
    script: Script,
    /// Content words of every sentence kept so far.
    said: Vec<BTreeSet<String>>,
    /// Their embeddings: a repeat in other words shares too few words for the count
    /// ([`Writer::repeats`]).
    said_vectors: Vec<Vec<f32>>,
    /// Content words of the title and the headings so far.
    headings: Vec<BTreeSet<String>>,
    /// The most words a sentence may have, for a reader who wants short answers
    /// ([`super::AnswerStyle::short`]); None: any length.
    max_words: Option<usize>,
    pub completions: Vec<Completion>,
}

/// The most words of a sentence for a reader who wants short answers: a bullet read at a
/// glance. The 1.5B model copies a long finding whole when only told "short" (Maya's bullets
/// ran to 30–40 words); a longer sentence is refused and asked again with this bound.
pub const SHORT_SENTENCE_WORDS: usize = 20;

/// A passage this close to the question (all-MiniLM-L6-v2 cosine, the passage under its
/// title) is about it, and a sentence may frame it in the question's words
/// ([`Writer::framed`]). On the eight guided questions of #29 the guides framed in their
/// question's words were at 0.44 ("To prepare for a technical interview …", from a guide on
/// software engineering interviews; "… spent with friends or family" for a family holiday),
/// Wikipedia's Renewable energy tied to a bakery at 0.29 and Toronto tied to a family holiday
/// at 0.09.
pub const PASSAGE_ABOUT_QUESTION: f32 = 0.35;

pub(super) fn field_schema(field: &str, min: usize, max: usize) -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {field: crate::llm::grammar::prose_string(min, max)},
        "required": [field],
    })
}

/// Characters of source text shown beside each fact: room for the sentence it comes from and
/// two around it, so each fact of a paragraph has a detail to add (a cause, a date, an effect).
const EXCERPT_CHARS: usize = 480;
/// Sentences of a passage shown beside a fact: the one that states it and those after it.
const EXCERPT_SENTENCES: usize = 3;

/// What a fact's passages say around it, for the writer to add a detail from: the sentence
/// that shares most content words with the fact and the ones after it (or before it, at the
/// passage's end), [`EXCERPT_SENTENCES`] in all, up to [`EXCERPT_CHARS`]. None when no
/// sentence shares a word.
pub(super) fn excerpt(fact: &Fact) -> Option<String> {
    let words = content_words(&fact.text);
    let mut best: Option<(usize, Vec<String>, usize)> = None;
    for passage in &fact.passages {
        let sentences = split_sentences(passage);
        for (i, s) in sentences.iter().enumerate() {
            let shared = content_words(s).intersection(&words).count();
            if shared > 0 && best.as_ref().is_none_or(|b| shared > b.0) {
                best = Some((shared, sentences.clone(), i));
            }
        }
    }
    let (_, sentences, i) = best?;
    // The window starts at the best sentence, moved back as far as the passage's end needs.
    let start = i.min(sentences.len().saturating_sub(EXCERPT_SENTENCES));
    let window = &sentences[start..(start + EXCERPT_SENTENCES).min(sentences.len())];
    let mut out = String::new();
    for s in window {
        if !out.is_empty() && out.len() + s.len() + 1 > EXCERPT_CHARS {
            break;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(s);
    }
    Some(one_line(&out, EXCERPT_CHARS))
}

/// The excerpts of `facts` as the numbered list a prompt shows (numbered as the facts).
pub(super) fn numbered_excerpts(facts: &[Fact]) -> String {
    facts
        .iter()
        .enumerate()
        .filter_map(|(i, f)| excerpt(f).map(|e| format!("{}. {e}", i + 1)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A sentence whose content words are nearly all in a longer one (or the other way round)
/// repeats it, however much the longer one adds: "The Gutenberg Bible marked the start of the
/// age of printed books" after "The Gutenberg Bible, the earliest major printed book, marked
/// the start of the age of printed books".
const CONTAINED_SHARE: f64 = 0.8;
/// Fewer content words than this say too little to call a repeat by containment.
const CONTAINED_MIN_WORDS: usize = 5;

fn contained(a: &BTreeSet<String>, b: &BTreeSet<String>) -> bool {
    let smaller = a.len().min(b.len());
    smaller >= CONTAINED_MIN_WORDS
        && a.intersection(b).count() as f64 / smaller as f64 >= CONTAINED_SHARE
}

/// Facts as the numbered list a prompt shows.
pub(super) fn numbered(facts: &[Fact]) -> String {
    facts
        .iter()
        .enumerate()
        .map(|(i, f)| format!("{}. {}", i + 1, one_line(&f.text, 300)))
        .collect::<Vec<_>>()
        .join("\n")
}

impl<'a> Writer<'a> {
    pub fn new(
        llm: &'a dyn Llm,
        embedder: &'a dyn Embedder,
        script: Script,
        judge: Option<f32>,
    ) -> Self {
        Writer {
            llm,
            embedder,
            question: Vec::new(),
            question_words: BTreeSet::new(),
            titles: HashMap::new(),
            closeness: Mutex::new(HashMap::new()),
            script,
            support: SupportMatcher::new(embedder, SUPPORT_THRESHOLD),
            judge: Judge::new(llm, judge),
            said: Vec::new(),
            said_vectors: Vec::new(),
            headings: Vec::new(),
            max_words: None,
            completions: Vec::new(),
        }
    }

    /// The writer for a reader who wants short answers: a sentence longer than
    /// [`SHORT_SENTENCE_WORDS`] is refused and asked again.
    pub fn with_short_sentences(mut self, short: bool) -> Self {
        self.max_words = short.then_some(SHORT_SENTENCE_WORDS);
        self
    }

    /// The writer that leaves out a detail about something else than `question`
    /// ([`Writer::off_question_detail`]).
    pub fn with_question(mut self, question: &str) -> Result<Self, ResearchError> {
        self.question = self
            .embedder
            .embed(&[question])?
            .into_iter()
            .next()
            .unwrap_or_default();
        self.question_words = question_terms(question);
        Ok(self)
    }

    /// The writer that knows each passage's title (passage text → title) and the labels of
    /// the reader's needs, whose words a sentence for the reader names ("Since you have a
    /// family …") whatever its passage says ([`Writer::framed`]). After
    /// [`Writer::with_question`].
    pub fn with_sources(mut self, titles: HashMap<String, String>, needs: &[&str]) -> Self {
        self.titles = titles;
        for word in needs.iter().flat_map(|n| content_words(n)) {
            self.question_words.remove(&word);
        }
        self
    }

    /// Why `sentence`, supported by `passage`, cannot say it that way, if it cannot: it ties a
    /// passage that is not about the question (cosine below [`PASSAGE_ABOUT_QUESTION`]) to it
    /// with the question's words the passage does not have. "Renewable energy is a crucial
    /// source of energy for small bakeries" opened the bakery report from Wikipedia's
    /// Renewable energy; "Toronto is a popular destination for a family holiday" came from
    /// Wikipedia's Toronto. A passage about the question is framed in its words rightly ("To
    /// prepare for a technical interview, review …" from an interview guide that does not say
    /// "technical"), so the check does not apply there.
    fn framed(&self, sentence: &str, passage: &str) -> Result<Option<String>, ResearchError> {
        if self.question.is_empty() {
            return Ok(None);
        }
        let title = self.titles.get(passage).map_or("", String::as_str);
        let borrowed =
            borrowed_from_the_question(sentence, &self.question_words, &[passage, title]);
        if borrowed.is_empty() {
            return Ok(None);
        }
        let known = self
            .closeness
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .get(passage)
            .copied();
        let close = match known {
            Some(c) => c,
            None => {
                let titled = format!("{title}. {passage}");
                let v = self.embedder.embed(&[titled.as_str()])?;
                let c = v.first().map_or(0.0, |v| cosine(v, &self.question));
                self.closeness
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .insert(passage.to_string(), c);
                c
            }
        };
        tracing::debug!(
            "report: a sentence adds the question's words {borrowed:?} to a passage at {close:.2} to the question: {sentence}"
        );
        Ok((close < PASSAGE_ABOUT_QUESTION).then(|| {
            format!(
                "it ties a passage on something else to the question with words the passage does not have ({}): say what the passage says, in its words",
                borrowed.join(", ")
            )
        }))
    }

    /// Whether `sentence` is a detail on something else: it states none of `facts` (fewer
    /// than [`FACT_ABOUT`] of any fact's content words) and is neither about the question
    /// ([`OFF_TOPIC_FINDING`] or more) nor close to one of the facts ([`NEAR_ON_TOPIC_FINDING`]
    /// or more) — the outline's cut for findings, applied to what the model adds from the
    /// passages. On the printing-press research of #30 the model added "Among the symbols used,
    /// there are cave paintings, petroglyphs, pictograms and ideograms" from a passage on the
    /// history of communication: 0.15 to the question, 0.23 to its fact.
    fn off_question_detail(&self, sentence: &str, facts: &[Fact]) -> Result<bool, ResearchError> {
        if self.question.is_empty() || facts.is_empty() {
            return Ok(false);
        }
        let words = content_words(sentence);
        let states_a_fact = facts.iter().any(|f| {
            let fact_words = content_words(&f.text);
            fact_words.intersection(&words).count() as f64 >= FACT_ABOUT * fact_words.len() as f64
        });
        if states_a_fact {
            return Ok(false);
        }
        let mut texts: Vec<&str> = vec![sentence];
        texts.extend(facts.iter().map(|f| f.text.as_str()));
        let vectors = self.embedder.embed(&texts)?;
        let about_question = cosine(&vectors[0], &self.question) >= OFF_TOPIC_FINDING;
        let near_a_fact = vectors[1..]
            .iter()
            .any(|v| cosine(&vectors[0], v) >= NEAR_ON_TOPIC_FINDING);
        Ok(!about_question && !near_a_fact)
    }

    /// One call for a one-field JSON object: the field's text, or why there is none, with the
    /// completion (for accounting).
    fn call(
        &self,
        prompt: String,
        field: &str,
        max_chars: usize,
        max_tokens: u32,
    ) -> Result<(Result<String, String>, Completion), ResearchError> {
        let reply = complete_schema::<serde_json::Value>(
            self.llm,
            vec![Message::user(prompt)],
            GenerationOptions::greedy(max_tokens),
            field_schema(field, 3, max_chars),
        )?;
        let text = match reply.parsed {
            Ok(value) => match value.get(field).and_then(|v| v.as_str()) {
                Some(text) if !text.trim().is_empty() => Ok(text.trim().to_string()),
                _ => Err("the answer was empty".into()),
            },
            Err(e) => {
                tracing::debug!("report: unusable answer: {e}");
                Err("the answer was cut off before it ended; write less".into())
            }
        };
        Ok((text, reply.completion))
    }

    /// Why a sentence cannot go into the report, if it cannot. The judge's calls are added to
    /// `completions`.
    fn sentence_problem(
        &self,
        sentence: &str,
        passages: &[&str],
        kept: &[String],
        completions: &mut Vec<Completion>,
    ) -> Result<Option<String>, ResearchError> {
        if let Some(why) = sentence_debris(sentence)
            .or_else(|| finding_form(sentence))
            .or_else(|| foreign_script(sentence, self.script, passages))
            .or_else(|| advice_to_someone_unnamed(sentence, passages))
        {
            return Ok(Some(why));
        }
        if self.repeats(sentence, kept)? {
            return Ok(Some("it repeats a sentence already in the report".into()));
        }
        if let Some(max) = self.max_words {
            let words = sentence.split_whitespace().count();
            if words > max {
                return Ok(Some(format!(
                    "it is {words} words long, and this reader wants short answers: say the fact in at most {max} words"
                )));
            }
        }
        // "It had a profound impact …" opening a paragraph points at nothing before it.
        if kept.is_empty() && leans_on_context(sentence) {
            return Ok(Some(
                "it opens the paragraph with a word that points back to nothing before it; name the subject".into(),
            ));
        }
        let mut matched = false;
        let mut framed = None;
        for passage in passages {
            if !self.support.supports(sentence, passage)? {
                continue;
            }
            matched = true;
            if let Some(why) = self.framed(sentence, passage)? {
                framed = Some(why);
                continue;
            }
            if self.judge.states(passage, sentence, completions)? {
                return Ok(None);
            }
        }
        Ok(Some(match framed {
            Some(why) => why,
            None if matched => TURNED_AROUND.into(),
            None => "it says something the facts do not say; keep to the facts".into(),
        }))
    }

    /// Whether `sentence` near-duplicates one already in the report or in `kept`: by its
    /// content words, or in other words by its embedding at the cosine at which the outline
    /// merges two learnings ([`DUPLICATE_COSINE`]). The vaccine report said twice that Jenner
    /// showed cowpox protects against smallpox, in sentences sharing too few words to count.
    fn repeats(&self, sentence: &str, kept: &[String]) -> Result<bool, ResearchError> {
        let words = content_words(sentence);
        let kept_words: Vec<BTreeSet<String>> = kept.iter().map(|s| content_words(s)).collect();
        if self
            .said
            .iter()
            .chain(&kept_words)
            .any(|w| jaccard(w, &words) >= NEAR_DUPLICATE_JACCARD || contained(w, &words))
        {
            return Ok(true);
        }
        if self.said_vectors.is_empty() && kept.is_empty() {
            return Ok(false);
        }
        let mut texts: Vec<&str> = vec![sentence];
        texts.extend(kept.iter().map(String::as_str));
        let vectors = self.embedder.embed(&texts)?;
        Ok(self
            .said_vectors
            .iter()
            .chain(&vectors[1..])
            .any(|v| cosine(&vectors[0], v) >= DUPLICATE_COSINE))
    }

    /// The model's sentences for `facts` from the prompt `render` makes (given the problems of
    /// the last answer), checked against the facts' passages and the report so far, asked once
    /// more with the reasons when some fail. Takes `&self`, so the paragraphs of a report are
    /// drafted together; [`Writer::settle`] then takes them in report order.
    pub fn draft(
        &self,
        render: &(dyn Fn(&str) -> Result<String, ResearchError> + Sync),
        facts: &[Fact],
    ) -> Result<Draft, ResearchError> {
        let passages = passages_of(facts);
        let mut completions = Vec::new();
        let mut attempts: Vec<Vec<String>> = Vec::new();
        let mut problems = String::new();
        for attempt in 0..2 {
            let prompt = render(&problems)?;
            let (answer, completion) = self.call(prompt, "text", MAX_PROSE_CHARS, PROSE_TOKENS)?;
            completions.push(completion);
            let text = match answer {
                Ok(text) => text,
                Err(why) => {
                    problems = format!("- {why}");
                    continue;
                }
            };
            let mut kept: Vec<String> = Vec::new();
            let mut failed: Vec<String> = Vec::new();
            // Whether the sentence before was left out: one that points back ("This was the
            // first …") would then point at the wrong sentence.
            let mut previous_left = false;
            for sentence in split_sentences(&text) {
                // A sentence pointing back to something not before it is left out without
                // asking again: the fact it belongs to is said whole, in its own words, when the
                // paragraph does not say it (asked again, the model dropped the rest of its
                // paragraph: the Nobel Prize went from the penicillin report).
                if leans_on_context(&sentence)
                    && (previous_left || leans_past(&sentence, kept.last(), facts))
                {
                    tracing::debug!("report: sentence left out, it points back to something not before it: {sentence}");
                    previous_left = true;
                    continue;
                }
                let problem =
                    self.sentence_problem(&sentence, &passages, &kept, &mut completions)?;
                previous_left = true;
                match problem {
                    // A detail on something else is left out without asking again: it is
                    // supported, and the facts it was added to are said without it.
                    None if self.off_question_detail(&sentence, facts)? => {
                        tracing::debug!(
                            "report: detail left out, not about the question: {sentence}"
                        );
                    }
                    None => {
                        kept.push(sentence);
                        previous_left = false;
                    }
                    Some(why) => {
                        tracing::debug!("report: sentence refused ({why}): {sentence}");
                        failed.push(format!("- \"{}\": {why}", one_line(&sentence, 160)));
                    }
                }
            }
            let done = failed.is_empty() && !kept.is_empty();
            attempts.push(kept);
            if done {
                break;
            }
            if attempt == 0 {
                tracing::debug!("report: asking again, {} sentence(s) refused", failed.len());
            }
            problems = if failed.is_empty() {
                "- the answer had no sentence".into()
            } else {
                failed.join("\n")
            };
        }
        Ok(Draft {
            sentences: self.merge_attempts(attempts)?,
            completions,
        })
    }

    /// The sentences of a paragraph's attempts that passed: those of the attempt that says the
    /// most (distinct content words, not sentences: the penicillin paragraph's first attempt
    /// had the Nobel Prize in fewer, longer sentences and lost it to the retry), then each
    /// sentence of the other that stands on its own, repeats none of them and says something
    /// they do not (at least [`NEW_WORDS_TO_ADD`] of its content words new to them).
    fn merge_attempts(&self, mut attempts: Vec<Vec<String>>) -> Result<Vec<String>, ResearchError> {
        let says = |sentences: &Vec<String>| {
            sentences
                .iter()
                .flat_map(|s| content_words(s))
                .collect::<BTreeSet<_>>()
                .len()
        };
        let Some(most) = (0..attempts.len()).max_by_key(|&i| (says(&attempts[i]), i)) else {
            return Ok(Vec::new());
        };
        let mut merged = attempts.swap_remove(most);
        for sentence in attempts.into_iter().flatten() {
            let known: BTreeSet<String> = merged.iter().flat_map(|s| content_words(s)).collect();
            let words = content_words(&sentence);
            let new = words.difference(&known).count();
            if !leans_on_context(&sentence)
                && new as f64 >= NEW_WORDS_TO_ADD * words.len() as f64
                && new > 0
                && !self.repeats(&sentence, &merged)?
            {
                merged.push(sentence);
            }
        }
        Ok(merged)
    }

    /// Takes a paragraph's draft into the report: drops the sentences that repeat one kept
    /// since the draft was made, cites the facts the rest state, and adds the facts they leave
    /// out (or all of them, when nothing passed) as the first of the `fallback` texts that
    /// passes, unless that would repeat the report. Returns the sentences and which facts the
    /// paragraph cites: those it states, and those whose passage a detail comes from.
    pub fn settle(
        &mut self,
        draft: Draft,
        facts: &[Fact],
        fallback: &dyn Fn(&Fact) -> Vec<String>,
    ) -> Result<(Vec<String>, Vec<usize>), ResearchError> {
        self.completions.extend(draft.completions);
        // A sentence that points back to one dropped here as a repeat goes with it: in the
        // penicillin report "This was the first antibiotic substance discovered" followed the
        // Nobel Prize once the discovery before it had been said.
        let mut best: Vec<String> = Vec::new();
        let mut previous_left = false;
        for s in draft.sentences {
            if self.repeats(&s, &[])? || (previous_left && leans_on_context(&s)) {
                previous_left = true;
                continue;
            }
            previous_left = false;
            best.push(s);
        }
        // A kept sentence cites the facts whose passages support it (it passed that check
        // against the paragraph's passages), even when it paraphrases too freely for the
        // word count below to see the fact in it — if it is about the fact at all: a detail
        // from the same passage does not state the fact.
        let mut stated = Vec::new();
        for (i, fact) in facts.iter().enumerate() {
            if self.stated_by_one_of(&best, &content_words(&fact.text), fact)? {
                stated.push(i);
            }
        }
        // Each fact is stated: by a kept sentence, or else in its own words.
        let mut sentences = best;
        for (i, fact) in facts.iter().enumerate() {
            let words = content_words(&fact.text);
            let said_by_prose = !words.is_empty() && {
                let prose: BTreeSet<String> =
                    sentences.iter().flat_map(|s| content_words(s)).collect();
                words.intersection(&prose).count() as f64 / words.len() as f64 >= FACT_COVERED
            };
            if said_by_prose || stated.contains(&i) {
                if !stated.contains(&i) {
                    stated.push(i);
                }
                // A finding of several sentences is said when each of them is: Maya's
                // "Max-cushion trainers such as the Hoka Clifton … reduce the impact of each
                // landing. Physiotherapists often suggest a well-cushioned shoe …" counted as
                // said by a sentence on the physiotherapists alone, and the shoes were lost.
                let unsaid = self.unsaid_sentences(fact, &sentences)?;
                if !unsaid.is_empty() {
                    let passages: Vec<&str> = fact.passages.iter().map(String::as_str).collect();
                    for s in unsaid {
                        let own = std::slice::from_ref(&s);
                        if self.own_wording_passes(own, &passages, &sentences, false)? {
                            tracing::debug!("report: the rest of a finding in its own words: {s}");
                            sentences.push(s);
                        } else {
                            tracing::info!(
                                "report: part of a finding is not placed (no wording of it passes \
                                 the checks): {}",
                                one_line(&s, 160)
                            );
                        }
                    }
                }
                continue;
            }
            // The fallbacks in order of preference: each but the last must also be supported
            // by the fact's passages (the last is the fact itself, supported when learned),
            // and every one, printed in the report, must be stated by a passage the way round
            // the judge reads it.
            let options = fallback(fact);
            for (k, option) in options.iter().enumerate() {
                let own: Vec<String> = split_sentences(option);
                let passages: Vec<&str> = fact.passages.iter().map(String::as_str).collect();
                if self.own_wording_passes(&own, &passages, &sentences, k + 1 < options.len())? {
                    sentences.extend(own);
                    stated.push(i);
                    break;
                }
            }
            if !stated.contains(&i) {
                tracing::info!(
                    "report: a finding is not placed (no wording of it passes the checks): {}",
                    one_line(&fact.text, 160)
                );
            }
        }
        for s in &sentences {
            self.said.push(content_words(s));
        }
        let texts: Vec<&str> = sentences.iter().map(String::as_str).collect();
        if !texts.is_empty() {
            self.said_vectors.extend(self.embedder.embed(&texts)?);
        }
        // A sentence no cited fact's passage supports is a detail of another fact's passage
        // (it passed the support check against the paragraph's passages): that fact is cited
        // too. Else a paragraph whose fact was said earlier in the report printed its detail
        // with no citation at all (the penicillin report's Nobel Prize sentence).
        for s in &sentences {
            let mut supported = false;
            for &i in &stated {
                for p in &facts[i].passages {
                    if self.support.supports(s, p)? {
                        supported = true;
                        break;
                    }
                }
                if supported {
                    break;
                }
            }
            if supported {
                continue;
            }
            'facts: for (i, fact) in facts.iter().enumerate() {
                for p in &fact.passages {
                    if self.support.supports(s, p)? {
                        stated.push(i);
                        break 'facts;
                    }
                }
            }
        }
        stated.sort_unstable();
        stated.dedup();
        Ok((sentences, stated))
    }

    /// Whether one of `sentences` states what `words` say: it has [`FACT_ABOUT`] of them and a
    /// passage of `fact` supports it.
    fn stated_by_one_of(
        &self,
        sentences: &[String],
        words: &BTreeSet<String>,
        fact: &Fact,
    ) -> Result<bool, ResearchError> {
        for s in sentences {
            let shared = content_words(s).intersection(words).count();
            if (shared as f64) < FACT_ABOUT * words.len() as f64 {
                continue;
            }
            for p in &fact.passages {
                if self.support.supports(s, p)? {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }

    /// Whether a finding's sentences `own`, in their own words (or with a detail, when
    /// `must_be_supported`: then each must be supported by one of `passages`), can be printed
    /// after `sentences`: no debris, no word in another script, no repeat, no passage on
    /// something else tied to the question ([`Writer::framed`]), and stated by a passage the
    /// way round the judge reads it.
    fn own_wording_passes(
        &mut self,
        own: &[String],
        passages: &[&str],
        sentences: &[String],
        must_be_supported: bool,
    ) -> Result<bool, ResearchError> {
        if own.is_empty() {
            return Ok(false);
        }
        for s in own {
            if sentence_debris(s).is_some()
                || foreign_script(s, self.script, passages).is_some()
                || self.repeats(s, sentences)?
            {
                return Ok(false);
            }
        }
        if must_be_supported {
            for s in own {
                let mut ok = false;
                for p in passages {
                    ok |= self.support.supports(s, p)?;
                }
                if !ok {
                    return Ok(false);
                }
            }
        }
        for s in own {
            if self.framed_by_every(s, passages)? {
                tracing::info!(
                    "report: a finding in its own words frames its passage in the question's \
                     words: {s}"
                );
                return Ok(false);
            }
        }
        self.judged_by_a_passage(own, passages)
    }

    /// Whether `sentence` frames each of `passages` in the question's words
    /// ([`Writer::framed`]); false with no passage.
    fn framed_by_every(&self, sentence: &str, passages: &[&str]) -> Result<bool, ResearchError> {
        if passages.is_empty() {
            return Ok(false);
        }
        for p in passages {
            if self.framed(sentence, p)?.is_none() {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// The sentences of a finding of two or more that `sentences` do not say, in the finding's
    /// own words: a sentence is said when the paragraph has [`FACT_COVERED`] of its content
    /// words, or one of `sentences` has [`FACT_ABOUT`] of them and a passage of the finding
    /// supports it. A finding of one sentence is judged whole by the caller (empty here).
    fn unsaid_sentences(
        &self,
        fact: &Fact,
        sentences: &[String],
    ) -> Result<Vec<String>, ResearchError> {
        let parts = split_sentences(&tidy_sentence(&fact.text));
        if parts.len() < 2 {
            return Ok(Vec::new());
        }
        let prose: BTreeSet<String> = sentences.iter().flat_map(|s| content_words(s)).collect();
        let mut unsaid = Vec::new();
        for part in parts {
            let words = content_words(&part);
            if words.is_empty()
                || words.intersection(&prose).count() as f64 / words.len() as f64 >= FACT_COVERED
            {
                continue;
            }
            if !self.stated_by_one_of(sentences, &words, fact)? {
                unsaid.push(part);
            }
        }
        Ok(unsaid)
    }

    /// Whether, for each of `sentences`, the judge finds some passage states it (true when
    /// the judge is off). Its calls are accounted with the writer's.
    fn judged_by_a_passage(
        &mut self,
        sentences: &[String],
        passages: &[&str],
    ) -> Result<bool, ResearchError> {
        let mut calls = Vec::new();
        let mut all = true;
        for s in sentences {
            let mut stated = false;
            for p in passages {
                if self.judge.states(p, s, &mut calls)? {
                    stated = true;
                    break;
                }
            }
            if !stated {
                all = false;
                break;
            }
        }
        self.completions.extend(calls);
        Ok(all)
    }

    /// [`Writer::settle`] for the summary, which restates what the body says: its sentences
    /// are checked against one another, not against the body's.
    pub fn settle_restating(
        &mut self,
        draft: Draft,
        facts: &[Fact],
        fallback: &dyn Fn(&Fact) -> Vec<String>,
    ) -> Result<(Vec<String>, Vec<usize>), ResearchError> {
        let body = std::mem::take(&mut self.said);
        let body_vectors = std::mem::take(&mut self.said_vectors);
        let settled = self.settle(draft, facts, fallback);
        self.said = body;
        self.said_vectors = body_vectors;
        settled
    }

    /// The model's heading, checked against the headings so far and asked once more with the
    /// reasons. Takes `&self`, so a report's headings are drafted together.
    pub fn heading_draft(
        &self,
        render: &(dyn Fn(&str) -> Result<String, ResearchError> + Sync),
        field: &str,
        avoid: &str,
        title: bool,
    ) -> Result<HeadingDraft, ResearchError> {
        self.heading_attempts(render, field, avoid, title, String::new(), 2)
    }

    fn heading_attempts(
        &self,
        render: &(dyn Fn(&str) -> Result<String, ResearchError> + Sync),
        field: &str,
        avoid: &str,
        title: bool,
        mut problems: String,
        tries: usize,
    ) -> Result<HeadingDraft, ResearchError> {
        let mut completions = Vec::new();
        for _ in 0..tries {
            let prompt = render(&problems)?;
            let (answer, completion) = self.call(prompt, field, MAX_HEADING_CHARS, 40)?;
            completions.push(completion);
            let why = match answer {
                Ok(text) => {
                    // Quotes and a full stop are harmless; a cut-off end is refused, not
                    // repaired, since what was cut is lost. A heading as long as the grammar
                    // allows was cut there ("… Commercial vs. Home-Produ").
                    let heading = one_line(&text, 200)
                        .trim_matches(['"', '\'', '“', '”', ' '])
                        .trim_end_matches('.')
                        .to_string();
                    let cut = (text.chars().count() >= MAX_HEADING_CHARS).then(|| {
                        format!(
                            "cut off at {MAX_HEADING_CHARS} characters; name the topic in fewer words"
                        )
                    });
                    match cut.or_else(|| self.heading_problem(&heading, avoid, title)) {
                        None => {
                            return Ok(HeadingDraft {
                                heading: Some(heading),
                                completions,
                            })
                        }
                        Some(why) => format!("- \"{}\": {why}", one_line(&text, 100)),
                    }
                }
                Err(why) => format!("- {why}"),
            };
            tracing::debug!("report: {field} refused: {why}");
            problems = why;
        }
        Ok(HeadingDraft {
            heading: None,
            completions,
        })
    }

    /// Counts the calls of a draft that is not taken into the report.
    pub fn account(&mut self, draft: HeadingDraft) {
        self.completions.extend(draft.completions);
    }

    /// Takes a heading's draft into the report: kept when it still repeats no heading taken
    /// since it was drafted (else asked once more with that reason), or else `fallback` tidied.
    pub fn settle_heading(
        &mut self,
        draft: HeadingDraft,
        render: &(dyn Fn(&str) -> Result<String, ResearchError> + Sync),
        field: &str,
        avoid: &str,
        fallback: &str,
        title: bool,
    ) -> Result<String, ResearchError> {
        if let Some(heading) = self.settle_model_heading(draft, render, field, avoid, title)? {
            return Ok(heading);
        }
        // The report's own question is a fine title as it stands.
        let flat = one_line(fallback, 200);
        let mut heading = if title
            && heading_debris(&flat).is_none()
            && flat.split_whitespace().count() <= 2 * MAX_TITLE_WORDS
        {
            flat
        } else {
            // A question as a heading reads better whole than cut at eight words.
            tidy_heading(fallback, MAX_TITLE_WORDS)
        };
        if heading_debris(&heading).is_some() {
            heading = "Further findings".into();
        }
        self.headings.push(content_words(&heading));
        Ok(heading)
    }

    /// The model's heading from `draft`, asked once more when it repeats a heading taken since
    /// it was drafted; None when no answer of the model's passes.
    pub fn settle_model_heading(
        &mut self,
        draft: HeadingDraft,
        render: &(dyn Fn(&str) -> Result<String, ResearchError> + Sync),
        field: &str,
        avoid: &str,
        title: bool,
    ) -> Result<Option<String>, ResearchError> {
        self.completions.extend(draft.completions);
        let mut candidate = draft.heading;
        if let Some(heading) = &candidate {
            if let Some(why) = self.heading_problem(heading, avoid, title) {
                let problems = format!("- \"{heading}\": {why}");
                let again = self.heading_attempts(render, field, avoid, title, problems, 1)?;
                self.completions.extend(again.completions);
                candidate = again.heading;
            }
        }
        if let Some(heading) = &candidate {
            self.headings.push(content_words(heading));
        }
        Ok(candidate)
    }

    fn heading_problem(&self, heading: &str, avoid: &str, title: bool) -> Option<String> {
        let max_words = if title {
            MAX_TITLE_WORDS
        } else {
            MAX_HEADING_WORDS
        };
        if let Some(why) = heading_debris(heading) {
            return Some(why);
        }
        let words = heading.split_whitespace().count();
        if words > max_words {
            return Some(format!("too long ({words} words; at most {max_words})"));
        }
        if heading.ends_with('?') {
            return Some("a question; name the topic instead".into());
        }
        let mine = content_words(heading);
        // A small model copies the prompt's field name ("The heading") as its answer.
        let placeholders = content_words("heading title text section topic report");
        if mine.is_subset(&placeholders) {
            return Some("it names nothing; name the topic of the facts".into());
        }
        let same = |other: &BTreeSet<String>| {
            *other == mine || jaccard(other, &mine) >= NEAR_DUPLICATE_JACCARD
        };
        if !title && same(&content_words(avoid)) {
            return Some("it restates the report's question; name this section's topic".into());
        }
        if self.headings.iter().any(same) {
            return Some("it repeats an earlier heading".into());
        }
        None
    }
}

/// Words a heading cannot end on (it was cut off there).
const CANNOT_END: &[&str] = &[
    "a", "an", "the", "and", "or", "of", "to", "in", "on", "for", "with", "by", "from", "as", "at",
    "but", "that", "which", "its", "their", "is", "are", "was", "were", "do", "does", "should",
    "can", "i", "my", "your", "across", "into", "over", "under", "between", "about", "after",
    "before", "during", "through", "within", "without", "among", "than", "this", "these", "those",
    "such",
];

/// A heading from any text: one line, no quotes or closing punctuation, at most `max_words`
/// words, not ending on a word that cannot end one, a capital first.
pub(super) fn tidy_heading(text: &str, max_words: usize) -> String {
    let flat = one_line(text, 400);
    let cleaned: String = flat
        .chars()
        .filter(|c| {
            !matches!(
                c,
                '"' | '“' | '”' | '*' | '#' | '`' | '[' | ']' | '{' | '}' | '<' | '>'
            )
        })
        .collect();
    let mut joined = cleaned
        .split_whitespace()
        .take(max_words)
        .collect::<Vec<_>>()
        .join(" ");
    // An unclosed bracket left by the cut goes with what follows it.
    if joined.matches('(').count() > joined.matches(')').count() {
        joined.truncate(joined.rfind('(').unwrap_or(joined.len()));
    }
    let mut words: Vec<&str> = joined.split_whitespace().collect();
    while let Some(last) = words.last() {
        let bare = last
            .trim_matches(|c: char| !c.is_alphanumeric())
            .to_lowercase();
        if bare.is_empty() || CANNOT_END.contains(&bare.as_str()) {
            words.pop();
        } else {
            break;
        }
    }
    let joined = words
        .join(" ")
        .trim_end_matches(['.', '?', '!', ',', ';', ':', '-', '–', '…'])
        .trim()
        .to_string();
    let mut chars = joined.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().collect::<String>() + chars.as_str(),
        None => String::new(),
    }
}

/// Whether `sentence`, which points back, is a later sentence of a fact ("… in 1928. This
/// was the first antibiotic substance discovered.") written after something else than the
/// fact's sentence before it, so it points at the wrong thing: the penicillin report put it
/// after the 1945 Nobel Prize.
fn leans_past(sentence: &str, previous: Option<&String>, facts: &[Fact]) -> bool {
    let words = content_words(sentence);
    let same = |other: &BTreeSet<String>| {
        jaccard(other, &words) >= NEAR_DUPLICATE_JACCARD || contained(other, &words)
    };
    for fact in facts {
        let parts = split_sentences(&fact.text);
        for k in 1..parts.len() {
            if !same(&content_words(&parts[k])) {
                continue;
            }
            let before = content_words(&parts[k - 1]);
            let said_before = previous.is_some_and(|p| {
                !before.is_empty()
                    && content_words(p).intersection(&before).count() as f64
                        >= FACT_COVERED * before.len() as f64
            });
            return !said_before;
        }
    }
    false
}

/// A fact in its own words, for a paragraph.
pub(super) fn own_words(fact: &Fact) -> Vec<String> {
    vec![tidy_sentence(&fact.text)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_are_tidied_from_questions() {
        assert_eq!(
            tidy_heading("How does the cost of tea vary across markets?", 12),
            "How does the cost of tea vary across markets"
        );
        assert_eq!(
            tidy_heading("What role did religion play in the spread of the press", 8),
            "What role did religion play in the spread"
        );
        // A heading cut before its object does not end on the preposition.
        assert_eq!(
            tidy_heading(
                "Main factors that led to the spread of the printing press across Europe",
                12
            ),
            "Main factors that led to the spread of the printing press"
        );
        assert_eq!(tidy_heading("\"**Costs** (1450", 8), "Costs");
        assert_eq!(
            tidy_heading("Religion and the (from: Printing", 8),
            "Religion"
        );
    }

    #[test]
    fn excerpts_show_the_stating_sentence_and_those_after_it() {
        let fact = |passage: &str| Fact {
            text: "Gutenberg built a printing press around 1440.".into(),
            passages: vec![passage.into()],
        };
        // The sentence that states the fact and the two after it; the one before is left out.
        let middle = fact(
            "Mainz was a trading town. Gutenberg built a printing press in Mainz around 1440. \
             It used movable metal type. Books became cheaper within decades. Latin still ruled.",
        );
        assert_eq!(
            excerpt(&middle).unwrap(),
            "Gutenberg built a printing press in Mainz around 1440. It used movable metal type. \
             Books became cheaper within decades."
        );
        // At the passage's end the window moves back, so three sentences are still shown.
        let end = fact(
            "Mainz was a trading town. Its guilds were strong. Gutenberg built a printing press \
             in Mainz around 1440.",
        );
        assert_eq!(excerpt(&end).unwrap(), end.passages[0]);
        // A passage that shares no word with the fact gives nothing to add.
        assert!(excerpt(&fact("Tea is grown in Assam.")).is_none());
    }

    /// A paragraph whose fact was said earlier in the report keeps the detail the model added
    /// from the fact's passage, and cites that passage.
    #[test]
    fn a_detail_cites_the_passage_it_comes_from_when_its_fact_was_said_before() {
        use crate::test_support::{ScriptedLlm, WordsEmbedder};
        const FACT: &str = "Green tea is brewed at 70 to 80 degrees for two minutes.";
        const DETAIL: &str = "Longer steeping makes green tea taste bitter.";
        let llm = ScriptedLlm::new(|_| {
            serde_json::json!({ "text": format!("{FACT} {DETAIL}") }).to_string()
        });
        let mut writer = Writer::new(&llm, &WordsEmbedder, Script::Latin, None);
        let fact = Fact {
            text: FACT.into(),
            passages: vec![format!("{FACT} {DETAIL}")],
        };
        let facts = std::slice::from_ref(&fact);
        let render = |_: &str| Ok("Write the paragraph.".to_string());
        // The fact is said first, with its detail.
        let first = writer.draft(&render, facts).unwrap();
        let (sentences, cited) = writer.settle(first, facts, &own_words).unwrap();
        assert_eq!(sentences, vec![FACT.to_string(), DETAIL.to_string()]);
        assert_eq!(cited, vec![0]);
        // Said again in a later paragraph with a new detail: the fact is not repeated, and the
        // detail that stays cites the passage it comes from.
        const NEW_DETAIL: &str = "Sencha is the most common green tea in Japan.";
        let llm = ScriptedLlm::new(|_| {
            serde_json::json!({ "text": format!("{FACT} {NEW_DETAIL}") }).to_string()
        });
        writer.llm = &llm;
        let fact = Fact {
            text: FACT.into(),
            passages: vec![format!("{FACT} {NEW_DETAIL}")],
        };
        let facts = std::slice::from_ref(&fact);
        let again = writer.draft(&render, facts).unwrap();
        let (sentences, cited) = writer.settle(again, facts, &own_words).unwrap();
        assert_eq!(sentences, vec![NEW_DETAIL.to_string()]);
        assert_eq!(cited, vec![0], "a detail printed without its citation");
    }

    /// Of a paragraph's two attempts, the one that says more is kept even in fewer sentences,
    /// and the other adds what it says that the first does not: the Nobel Prize, said in the
    /// first attempt's one long sentence, was lost to a retry of two short ones.
    #[test]
    fn the_attempt_that_says_more_is_kept_and_the_other_adds_what_it_alone_says() {
        use crate::test_support::{ScriptedLlm, WordsEmbedder};
        const LONG: &str = "Fleming discovered penicillin in 1928 and shared the 1945 Nobel Prize for penicillin with Florey and Chain.";
        const WRONG: &str = "Penicillin cures influenza within a day.";
        const MOULD: &str = "Penicillin came from a Penicillium mould.";
        let passage = "Fleming discovered penicillin in 1928. Penicillin came from a Penicillium \
                       mould. Fleming shared the 1945 Nobel Prize for penicillin with Florey and \
                       Chain."
            .to_string();
        let llm = ScriptedLlm::new(|prompt| {
            // The retry is asked with the reasons the first answer failed.
            let text = if prompt.contains("influenza") {
                format!("Fleming discovered penicillin in 1928. {MOULD}")
            } else {
                format!("{LONG} {WRONG}")
            };
            serde_json::json!({ "text": text }).to_string()
        });
        let mut writer = Writer::new(&llm, &WordsEmbedder, Script::Latin, None);
        let facts = [Fact {
            text: "Fleming discovered penicillin in 1928.".into(),
            passages: vec![passage],
        }];
        let render = |problems: &str| Ok(format!("Write the paragraph.\n{problems}"));
        let draft = writer.draft(&render, &facts).unwrap();
        let (sentences, cited) = writer.settle(draft, &facts, &own_words).unwrap();
        // The retry's first sentence repeats the long one and is left out; its second is new.
        assert_eq!(sentences, vec![LONG.to_string(), MOULD.to_string()]);
        assert_eq!(cited, vec![0]);
    }

    /// A discovery in two sentences, the second pointing back, and a prize from the same
    /// passage: the penicillin report's paragraph.
    const NOBEL: &str = "Fleming shared the 1945 Nobel Prize for penicillin.";
    const FOUND: &str = "Penicillin was discovered by Fleming in 1928.";
    const FIRST: &str = "This was the first antibiotic substance discovered.";

    /// A sentence that points back goes when the sentence it points to was left out: refused
    /// in the draft, or dropped as a repeat when the paragraph is taken into the report.
    #[test]
    fn a_sentence_pointing_back_to_one_left_out_goes_with_it() {
        use crate::test_support::{ScriptedLlm, WordsEmbedder};
        let passage = format!("{FOUND} {FIRST} {NOBEL}");
        let fact = |text: &str| Fact {
            text: text.into(),
            passages: vec![passage.clone()],
        };
        let found = [fact(FOUND)];
        let nobel = [fact(NOBEL)];
        let llm = ScriptedLlm::new(|prompt| {
            let text = if prompt.contains("discovery") {
                FOUND.to_string()
            } else {
                format!("{NOBEL} {FOUND} {FIRST}")
            };
            serde_json::json!({ "text": text }).to_string()
        });
        let mut writer = Writer::new(&llm, &WordsEmbedder, Script::Latin, None);
        // Drafted together, before either is in the report.
        let discovery = writer
            .draft(&|_| Ok("The discovery.".into()), &found)
            .unwrap();
        let prize = writer.draft(&|_| Ok("The prize.".into()), &nobel).unwrap();
        let (sentences, _) = writer.settle(discovery, &found, &own_words).unwrap();
        assert_eq!(sentences, vec![FOUND.to_string()]);
        let (sentences, _) = writer.settle(prize, &nobel, &own_words).unwrap();
        assert_eq!(
            sentences,
            vec![NOBEL.to_string()],
            "a sentence left pointing at the prize"
        );
        // Drafted after the discovery was said: the repeat is refused in the draft, and the
        // sentence pointing back to it is left out there.
        let mut writer = Writer::new(&llm, &WordsEmbedder, Script::Latin, None);
        let discovery = writer
            .draft(&|_| Ok("The discovery.".into()), &found)
            .unwrap();
        writer.settle(discovery, &found, &own_words).unwrap();
        let prize = writer.draft(&|_| Ok("The prize.".into()), &nobel).unwrap();
        let (sentences, _) = writer.settle(prize, &nobel, &own_words).unwrap();
        assert_eq!(sentences, vec![NOBEL.to_string()]);
    }

    /// A later sentence of a fact that points back is left out after anything but the fact's
    /// sentence before it, and the fact is said whole.
    #[test]
    fn a_fact_s_second_sentence_follows_its_first() {
        use crate::test_support::{ScriptedLlm, WordsEmbedder};
        let passage = format!("{FOUND} {FIRST} {NOBEL}");
        let facts = [
            Fact {
                text: format!("{FOUND} {FIRST}"),
                passages: vec![passage.clone()],
            },
            Fact {
                text: NOBEL.into(),
                passages: vec![passage.clone()],
            },
        ];
        let llm = ScriptedLlm::new(|_| {
            serde_json::json!({ "text": format!("{NOBEL} {FIRST}") }).to_string()
        });
        let mut writer = Writer::new(&llm, &WordsEmbedder, Script::Latin, None);
        let draft = writer
            .draft(&|p| Ok(format!("Write. {p}")), &facts)
            .unwrap();
        let (sentences, _) = writer.settle(draft, &facts, &own_words).unwrap();
        assert_eq!(sentences, vec![NOBEL, FOUND, FIRST]);
    }
}
