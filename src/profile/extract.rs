//! Profile by extraction: one short call per candidate entry asks what that entry says
//! about this user that would change the answer to the query. The answer is one phrase (or
//! "nothing") with a kind and a relevance grade; code then refuses what a small model gets
//! wrong: empty and "nothing" answers, low grades, restatements of the question, debris,
//! phrases that use no word of the entry, and generic phrasings that fit anyone (an embedding
//! check against `prompts/profile_generic.txt`, as clarification refuses generic aspects).
//!
//! An entry's phrase cites that entry only, so a profile statement can never rest on a
//! entry it did not come from. The prompt keeps its fixed instructions first and the query
//! and entry last, so consecutive calls share the cached prefix.

use std::collections::HashSet;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::select::entry_line;
use super::ProfileError;
use crate::embed::{cosine, Embedder};
use crate::history::StoredEntry;
use crate::llm::{GenerationOptions, Llm, Message, Usage};

/// Generic phrasings, one a line (`#` comments).
const GENERIC_FILE: &str = include_str!("../../prompts/profile_generic.txt");

/// The generic phrasings a phrase is compared with.
pub fn generic_phrases() -> Vec<&'static str> {
    GENERIC_FILE
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect()
}

/// A phrase whose all-MiniLM-L6-v2 cosine to some generic phrasing reaches this is refused.
/// Measured in `tests/profile.rs` on 12 generic paraphrases (not in the list word for word) and
/// 26 specific phrases (the quality evaluation's planted needs among them): generic ones score
/// 0.59 and above, specific ones at most 0.48 ("wants short answers in bullet points"). 0.55
/// sits a little nearer the generic side, since refusing a specific phrase costs more than
/// keeping a vague one.
pub const GENERIC_THRESHOLD: f32 = 0.55;

/// A phrase this close to the query restates it rather than saying something about the user.
pub const QUESTION_THRESHOLD: f32 = 0.80;

/// Phrases this close are one statement (their entries united).
pub const MERGE_THRESHOLD: f32 = 0.85;

/// The lowest relevance grade kept: 1 = "barely". The written grade is a poor judge (the 1.5B
/// model grades a chicken-stock problem 2–3 for running shoes); it only refuses what the model
/// itself calls irrelevant, and [`super::relevance`] judges the rest by probability.
pub const MIN_RELEVANCE: u8 = 1;

/// The grammar's cap on a phrase; a phrase that reaches it was cut off.
const MAX_PHRASE_CHARS: usize = 90;
const MIN_PHRASE_CHARS: usize = 4;
/// A phrase (at most 90 characters) with its kind and grade is about 40 tokens; the rest is
/// slack for a tokenizer that splits the phrase finely.
const MAX_TOKENS: u32 = 80;
/// How much of an entry the model sees.
const SESSION_CHARS: usize = 400;

/// What a phrase is about; decides where it goes in the profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PhraseKind {
    /// Budget, time, health, equipment, space, location, family.
    Constraint,
    /// Job, skill, experience.
    Background,
    /// Likes, dislikes, earlier choices.
    Preference,
    /// How answers should look: length, format, tone, depth.
    Presentation,
}

/// One kept phrase and the entry it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Phrase {
    pub session: i64,
    /// The entry's place in retrieval order (0 = best).
    pub rank: usize,
    pub text: String,
    pub kind: PhraseKind,
    /// The grade the model wrote (0–3); only 0 ("not at all") is refused by it.
    pub relevance: u8,
    /// Its relevance score for the question ([`super::relevance::Judged::score`]), once
    /// judged.
    #[serde(default)]
    pub probability: Option<f32>,
}

impl Phrase {
    /// A statement read from `session` before it is judged for a question (the grade a
    /// remembered statement gets: 2).
    pub fn unjudged(session: i64, text: &str, kind: PhraseKind) -> Self {
        Self {
            session,
            rank: 0,
            text: text.to_string(),
            kind,
            relevance: 2,
            probability: None,
        }
    }
}

/// The extraction's result and cost.
#[derive(Debug, Clone, Default)]
pub struct Extracted {
    pub phrases: Vec<Phrase>,
    /// Phrases the relevance judge did not keep, with their scores: what the history says of
    /// the user that the judge alone could not tie to the question (see
    /// [`super::QueryProfile::considered`]).
    pub considered: Vec<Phrase>,
    /// Entries asked about.
    pub asked: usize,
    /// Calls made again after a format rule was broken.
    pub retries: usize,
    pub usage: Usage,
    pub seconds: f64,
}

/// What the model fills in, in the order of thought: the phrase before its grade.
#[derive(Debug, Clone, Deserialize)]
struct Answer {
    about_user: String,
    kind: PhraseKind,
    relevance: u8,
}

fn answer_schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "about_user": crate::llm::grammar::prose_string(1, MAX_PHRASE_CHARS),
            "kind": {"type": "string", "enum": ["constraint", "background", "preference", "presentation"]},
            "relevance": {"type": "integer", "enum": [0, 1, 2, 3]}
        },
        "required": ["about_user", "kind", "relevance"],
        "additionalProperties": false
    })
}

/// What the checks make of one answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Kept, normalised.
    Keep(String),
    /// Nothing usable; asking again would not help.
    Drop(String),
    /// A format rule was broken: worth asking once more, with this reason.
    Retry(String),
    /// Usable as it is, but it drops what the item says exactly (an amount): asked once
    /// more with this reason, and kept as it is if the second answer is no better.
    Sharpen(String, String),
}

/// Words that carry no content of their own, including the verbs every phrase about a user
/// starts with ("wants", "prefers").
const STOPWORDS: &[&str] = &[
    "a", "about", "after", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be",
    "been", "but", "by", "can", "could", "do", "does", "for", "from", "get", "had", "has", "have",
    "he", "her", "his", "how", "i", "if", "in", "into", "is", "it", "its", "just", "like", "likes",
    "me", "more", "most", "my", "need", "needs", "no", "not", "of", "on", "or", "our", "prefer",
    "prefers", "she", "should", "so", "some", "than", "that", "the", "their", "them", "they",
    "this", "to", "user", "very", "want", "wants", "was", "we", "what", "when", "where", "which",
    "who", "why", "will", "with", "would", "you", "your",
];

/// Content words, lower-cased and lightly stemmed so "shoes" meets "shoe".
fn content_words(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '$'))
        .map(str::to_lowercase)
        .filter(|w| !w.is_empty() && !STOPWORDS.contains(&w.as_str()))
        .filter(|w| w.chars().count() >= 2 || w.chars().all(|c| c.is_ascii_digit()))
        .map(|w| stem(&w))
        .collect()
}

/// How many of `phrase`'s content words `text` has: which item a note was read from.
pub(crate) fn shared_words(phrase: &str, text: &str) -> usize {
    let have: HashSet<String> = content_words(text).into_iter().collect();
    content_words(phrase)
        .iter()
        .filter(|w| have.contains(*w))
        .count()
}

fn stem(w: &str) -> String {
    if let Some(s) = w.strip_suffix("ies").filter(|s| s.chars().count() >= 2) {
        return format!("{s}y");
    }
    match w.strip_suffix('s') {
        Some(s) if !s.ends_with('s') && s.chars().count() >= 3 => s.to_string(),
        _ => w.to_string(),
    }
}

/// Trimmed, whitespace collapsed, first letter upper-case, no trailing full stop.
pub fn normalise(phrase: &str) -> String {
    let text = phrase.split_whitespace().collect::<Vec<_>>().join(" ");
    let text = text.trim_end_matches(['.', ';', ',']).trim();
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// "nothing", "none", "n/a" and their kin: the model saying the entry has no signal.
fn says_nothing(phrase: &str) -> bool {
    let p: String = phrase
        .to_lowercase()
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '/' {
                c
            } else {
                ' '
            }
        })
        .collect();
    let p = p.split_whitespace().collect::<Vec<_>>().join(" ");
    const EXACT: &[&str] = &[
        "", "n/a", "na", "no", "nil", "null", "unknown", "empty", "-",
    ];
    const STARTS: &[&str] = &[
        "nothing",
        "none",
        "n/a",
        "no information",
        "no relevant",
        "no signal",
        "no mention",
        "not mentioned",
        "not relevant",
        "irrelevant",
        "unrelated",
        "not applicable",
    ];
    const CONTAINS: &[&str] = &[
        "says nothing",
        "nothing about",
        "not related",
        "no information",
        "does not say",
        "doesn t say",
        "not mention",
    ];
    EXACT.contains(&p.as_str())
        || STARTS.iter().any(|s| p.starts_with(s))
        || CONTAINS.iter().any(|s| p.contains(s))
}

/// The first number or name in `phrase` that `source` does not contain: a phrase about the
/// user may only carry the specifics of what it was read from ("a budget of $500" from a
/// entry that never says 500 is the model's invention). Numbers are compared as digit runs,
/// names (capitalised words after the first) without case.
pub fn unsupported_specific(phrase: &str, source: &str) -> Option<String> {
    let digits = |text: &str| -> Vec<String> {
        text.split(|c: char| !c.is_ascii_digit())
            .filter(|d| !d.is_empty())
            .map(|d| d.trim_start_matches('0').to_string())
            .collect()
    };
    let source_numbers = digits(source);
    if let Some(n) = digits(phrase)
        .into_iter()
        .find(|n| !source_numbers.contains(n))
    {
        return Some(if n.is_empty() { "0".into() } else { n });
    }
    let source_words: HashSet<String> = source
        .split(|c: char| !c.is_alphanumeric())
        .map(str::to_lowercase)
        .collect();
    phrase
        .split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .filter(|w| !w.is_empty())
        .skip(1)
        .find(|w| {
            w.chars().next().is_some_and(char::is_uppercase)
                && w != &"I"
                && !source_words.contains(&w.trim_end_matches("'s").to_lowercase())
        })
        .map(str::to_string)
}

/// A year the phrase states as money: "Has a budget of 2024 for laptops" from a search for
/// "best budget laptops 2024". The number is in the item, so the digits check passes it; but
/// the item has it as no amount (no currency beside it), and a year-like number next to a
/// money word is a year read as a sum.
pub fn year_as_amount(phrase: &str, source: &str) -> Option<String> {
    money_word_at(phrase)?;
    let amounts: Vec<String> = amounts(source).iter().map(|a| digits_of(a)).collect();
    phrase
        .split(|c: char| !c.is_ascii_digit())
        .filter(|d| d.len() == 4)
        .find(|d| {
            d.parse::<u32>().is_ok_and(|y| (1900..=2099).contains(&y))
                && !amounts.iter().any(|a| a == d)
        })
        .map(str::to_string)
}

/// Characters a phrase about a person never needs: JSON, markup and code debris.
fn debris(phrase: &str) -> Option<char> {
    phrase.chars().find(|c| {
        matches!(
            c,
            '{' | '}' | '[' | ']' | '"' | '<' | '>' | '`' | '*' | '#' | '|' | '\\'
        )
    })
}

/// Content words of the prompt's example answers: a small model tends to copy an example
/// instead of reading the item, so a phrase using them where the item does not is refused.
fn example_words(prompt: &str) -> HashSet<String> {
    prompt
        .split("\"about_user\": \"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .filter(|phrase| !says_nothing(phrase))
        .flat_map(content_words)
        .collect()
}

/// The checks for one query: the query and the generic phrasings embedded once.
pub struct Checks<'a> {
    embedder: Option<&'a dyn Embedder>,
    example_words: HashSet<String>,
    query_words: HashSet<String>,
    query_vec: Option<Vec<f32>>,
    generic: Vec<Vec<f32>>,
}

impl<'a> Checks<'a> {
    /// Without an embedder the word checks still run; the generic and restatement checks by
    /// embedding do not.
    pub fn new(embedder: Option<&'a dyn Embedder>, query: &str) -> Result<Self, ProfileError> {
        let (query_vec, generic) = match embedder {
            Some(e) => {
                let mut texts = vec![query];
                texts.extend(generic_phrases());
                let mut vectors = e.embed(&texts).map_err(ProfileError::from)?.into_iter();
                (vectors.next(), vectors.collect())
            }
            None => (None, Vec::new()),
        };
        let prompt = crate::prompts::render(
            "profile_extract",
            minijinja::context! { query => "", session => "" },
        )?;
        Ok(Self {
            embedder,
            example_words: example_words(&prompt),
            query_words: content_words(query).into_iter().collect(),
            query_vec,
            generic,
        })
    }

    /// The checks for reading history into memory, where there is no question: the phrase
    /// checks, the generic check and the examples of `prompts/memory_extract.md`.
    pub fn for_memory(embedder: Option<&'a dyn Embedder>) -> Result<Self, ProfileError> {
        let generic = match embedder {
            Some(e) => e.embed(&generic_phrases()).map_err(ProfileError::from)?,
            None => Vec::new(),
        };
        let prompt = crate::prompts::render(
            "memory_extract",
            minijinja::context! { items => Vec::<String>::new() },
        )?;
        Ok(Self::without_question(embedder, &prompt, generic))
    }

    /// The checks for reading a session for how the user wants answers, where there is no
    /// question: the phrase checks and the examples of `prompts/profile_style.md`, without the
    /// generic check. A wish about answers is what this reading is for, and Inés's "Short
    /// answers please." becomes "wants short answers", which is as close to the generic
    /// phrasings ("prefers a concise answer") as a wish about answers can be; whether a phrase
    /// is about answers is checked in code instead ([`super::query_profile::is_answer_style`]).
    pub fn for_style(embedder: Option<&'a dyn Embedder>) -> Result<Self, ProfileError> {
        let prompt =
            crate::prompts::render("profile_style", minijinja::context! { session => "" })?;
        Ok(Self::without_question(embedder, &prompt, Vec::new()))
    }

    /// Checks with no question to restate: the examples of `prompt` and these generic
    /// phrasings (embedded).
    fn without_question(
        embedder: Option<&'a dyn Embedder>,
        prompt: &str,
        generic: Vec<Vec<f32>>,
    ) -> Self {
        Self {
            embedder,
            example_words: example_words(prompt),
            query_words: HashSet::new(),
            query_vec: None,
            generic,
        }
    }

    /// The highest cosine of `phrase` to a generic phrasing (0 without an embedder).
    pub fn genericness(&self, phrase: &str) -> Result<f32, ProfileError> {
        let Some(e) = self.embedder else {
            return Ok(0.0);
        };
        let v = e.embed(&[phrase]).map_err(ProfileError::from)?.remove(0);
        Ok(self.genericness_of(&v))
    }

    fn genericness_of(&self, v: &[f32]) -> f32 {
        self.generic
            .iter()
            .map(|g| cosine(v, g))
            .fold(f32::MIN, f32::max)
            .max(0.0)
    }

    /// Judges the model's `answer` for the session shown as `session_text`.
    fn check(&self, answer: &Answer, session_text: &str) -> Result<Verdict, ProfileError> {
        if !says_nothing(answer.about_user.trim()) && answer.relevance < MIN_RELEVANCE {
            return Ok(Verdict::Drop(format!("relevance {}", answer.relevance)));
        }
        self.check_phrase(&answer.about_user, session_text)
    }

    /// Judges a phrase about the user read from the session shown as `session_text`.
    pub fn check_phrase(&self, raw: &str, session_text: &str) -> Result<Verdict, ProfileError> {
        let raw = raw.trim();
        if says_nothing(raw) {
            return Ok(Verdict::Drop("nothing".into()));
        }
        if let Some(c) = debris(raw) {
            return Ok(Verdict::Retry(format!(
                "it contains the character {c}; write plain words"
            )));
        }
        if raw.chars().count() >= MAX_PHRASE_CHARS {
            return Ok(Verdict::Retry(
                "it is too long; write at most twelve words".into(),
            ));
        }
        let text = normalise(raw);
        if text.chars().count() < MIN_PHRASE_CHARS {
            return Ok(Verdict::Drop("too short".into()));
        }
        let words = content_words(&text);
        if words.is_empty() {
            return Ok(Verdict::Drop("no content words".into()));
        }
        let from_query = words
            .iter()
            .filter(|w| self.query_words.contains(*w))
            .count();
        if from_query * 3 >= words.len() * 2 {
            return Ok(Verdict::Retry(
                "it repeats the question; say what the item tells about the user".into(),
            ));
        }
        let session_words: HashSet<String> = content_words(session_text).into_iter().collect();
        if words
            .iter()
            .any(|w| self.example_words.contains(w) && !session_words.contains(w))
        {
            return Ok(Verdict::Retry(
                "it copies the example instead of reading the item".into(),
            ));
        }
        let from_session = words.iter().filter(|w| session_words.contains(*w)).count();
        if from_session == 0 {
            return Ok(Verdict::Retry(
                "it uses no word of the item; copy the user's own words".into(),
            ));
        }
        // Most of a phrase should come from the item: the rest is the model's own invention.
        if from_session * 3 < words.len() {
            return Ok(Verdict::Retry(
                "most of its words are not in the item; copy the user's own words".into(),
            ));
        }
        // A word of the question the item does not have glues the question onto an item
        // about something else ("Uses Instant Pot for band rehearsals" from a pressure-cooker
        // search): the user never said it, and it reads as relevant to every judge.
        // (Only words that name something: "uses", "needs", "best" say nothing of a topic.)
        const SAY_NOTHING: &[&str] = &[
            "best", "find", "first", "good", "help", "know", "learn", "like", "make", "need",
            "plan", "start", "take", "thing", "want",
        ];
        if let Some(borrowed) = words.iter().find(|w| {
            w.chars().count() >= 4
                && !SAY_NOTHING.contains(&w.as_str())
                && self.query_words.contains(*w)
                && !session_words.contains(*w)
        }) {
            return Ok(Verdict::Retry(format!(
                "the item does not mention {borrowed}; say only what the item tells about the user"
            )));
        }
        if let Some(specific) = unsupported_specific(&text, session_text) {
            return Ok(Verdict::Retry(format!(
                "the item does not say {specific}; copy the user's own words"
            )));
        }
        if let Some(year) = year_as_amount(&text, session_text) {
            return Ok(Verdict::Retry(format!(
                "the item has {year} as a year, not an amount of money; say only what the item tells about the user"
            )));
        }
        let lost = lost_amount(&text, session_text);
        if let Some(e) = self.embedder {
            let v = e.embed(&[&text]).map_err(ProfileError::from)?.remove(0);
            if let Some(q) = &self.query_vec {
                if cosine(&v, q) >= QUESTION_THRESHOLD {
                    return Ok(Verdict::Retry(
                        "it repeats the question; say what the item tells about the user".into(),
                    ));
                }
            }
            let generic = self.genericness_of(&v);
            if generic >= GENERIC_THRESHOLD {
                return Ok(Verdict::Drop(format!("generic ({generic:.2})")));
            }
        }
        Ok(match lost {
            Some(amount) => Verdict::Sharpen(
                text,
                format!("the item gives the amount \"{amount}\"; keep it in the phrase"),
            ),
            None => Verdict::Keep(text),
        })
    }
}

/// Words that say a phrase is about money.
const MONEY_WORDS: &[&str] = &[
    "afford",
    "budget",
    "cheap",
    "cost",
    "expensive",
    "money",
    "price",
    "spend",
    "spending",
];

/// The amount of money `source` states when `phrase` speaks of money without any number:
/// "Has limited budget" read from "I set aside 120 dollars for sports gear" has lost what
/// makes the constraint useful. `None` when the source states no amount or several different
/// ones (which one the phrase means is then the model's call, not code's).
pub fn lost_amount(phrase: &str, source: &str) -> Option<String> {
    if phrase.chars().any(|c| c.is_ascii_digit()) || money_word_at(phrase).is_none() {
        return None;
    }
    let mut found = amounts(source);
    found.dedup_by(|a, b| digits_of(a) == digits_of(b));
    match found.as_slice() {
        [one] => Some(one.clone()),
        _ => None,
    }
}

/// `phrase` with `amount` put after its money noun ("Has limited budget (120 dollars), wants
/// to track spending"), or at the end of the clause whose verb or adjective speaks of money
/// ("Wants to spend it on herself (600 pounds), likes gardening"): inside a verb phrase the
/// amount would split it ("spend (600 pounds) it").
pub fn with_amount(phrase: &str, amount: &str) -> String {
    let Some(end) = money_word_at(phrase) else {
        return format!("{phrase} ({amount})");
    };
    let word_start = phrase[..end]
        .rfind(|c: char| !c.is_alphanumeric())
        .map_or(0, |i| i + 1);
    let noun = MONEY_NOUNS.contains(&phrase[word_start..end].to_lowercase().as_str());
    let at = if noun {
        end
    } else {
        phrase[end..]
            .find([',', ';'])
            .map_or(phrase.len(), |i| end + i)
    };
    let head = phrase[..at].trim_end_matches(['.', ' ']);
    format!("{head} ({amount}){}", &phrase[at..])
}

/// The money words after which an amount reads as that thing's amount ("budget (120
/// dollars)").
const MONEY_NOUNS: &[&str] = &["budget", "cost", "money", "price"];

/// The byte offset just after the first money word of `phrase`.
fn money_word_at(phrase: &str) -> Option<usize> {
    let mut start = None;
    for (i, c) in phrase
        .char_indices()
        .chain(std::iter::once((phrase.len(), ' ')))
    {
        match (c.is_alphanumeric(), start) {
            (true, None) => start = Some(i),
            (false, Some(from)) => {
                if MONEY_WORDS.contains(&phrase[from..i].to_lowercase().as_str()) {
                    return Some(i);
                }
                start = None;
            }
            _ => {}
        }
    }
    None
}

fn digits_of(text: &str) -> String {
    text.chars().filter(char::is_ascii_digit).collect()
}

/// Every amount of money in `text`, in order, in its words: "$85", "85€", "120 dollars".
fn amounts(text: &str) -> Vec<String> {
    crate::checks::money::stated(text)
        .into_iter()
        .map(|s| s.text)
        .collect()
}

/// Asks about each of `sessions` (in retrieval order) what it says about the user that would
/// change the answer to `query`, and keeps the phrases that pass the checks. The entries are
/// independent questions, asked as many at once as the model serves; the phrases come back in
/// entry order.
pub fn extract(
    llm: &dyn Llm,
    embedder: Option<&dyn Embedder>,
    query: &str,
    sessions: &[StoredEntry],
) -> Result<Extracted, ProfileError> {
    let started = Instant::now();
    let checks = Checks::new(embedder, query)?;
    let mut out = Extracted {
        asked: sessions.len(),
        ..Extracted::default()
    };
    let answers = crate::llm::map_concurrent(llm.parallelism(), sessions, |rank, s| {
        let session = entry_line(s, SESSION_CHARS);
        let prompt =
            crate::prompts::render("profile_extract", minijinja::context! { query, session })?;
        ask_session(llm, &checks, &prompt, rank, s)
    });
    collect(&mut out, answers)?;
    out.seconds = started.elapsed().as_secs_f64();
    Ok(out)
}

/// Asks about each of `sessions` how the user wants answers written, with no question in
/// view: with one, the small model writes about the question ("wants to buy a laptop" from "when
/// you tell me how to do something, please number each step"). Each phrase is marked
/// [`PhraseKind::Presentation`]; whether it is about answers is for the caller to check
/// ([`super::query_profile::is_answer_style`]).
pub fn extract_style(
    llm: &dyn Llm,
    embedder: Option<&dyn Embedder>,
    sessions: &[StoredEntry],
) -> Result<Extracted, ProfileError> {
    let started = Instant::now();
    let checks = Checks::for_style(embedder)?;
    let mut out = Extracted {
        asked: sessions.len(),
        ..Extracted::default()
    };
    let answers = crate::llm::map_concurrent(llm.parallelism(), sessions, |rank, s| {
        let session = entry_line(s, SESSION_CHARS);
        let prompt = crate::prompts::render("profile_style", minijinja::context! { session })?;
        ask_session(llm, &checks, &prompt, rank, s)
    });
    collect(&mut out, answers)?;
    for phrase in &mut out.phrases {
        phrase.kind = PhraseKind::Presentation;
    }
    out.seconds = started.elapsed().as_secs_f64();
    Ok(out)
}

fn collect(
    out: &mut Extracted,
    answers: Vec<Result<SessionAnswer, ProfileError>>,
) -> Result<(), ProfileError> {
    for answer in answers {
        let answer = answer?;
        out.usage += answer.usage;
        out.retries += answer.retries;
        out.phrases.extend(answer.phrase);
    }
    Ok(())
}

/// What one entry yielded.
#[derive(Default)]
struct SessionAnswer {
    phrase: Option<Phrase>,
    usage: Usage,
    retries: usize,
}

/// One entry's question: its phrase if one passes the checks, retried once with the reason.
fn ask_session(
    llm: &dyn Llm,
    checks: &Checks<'_>,
    prompt: &str,
    rank: usize,
    s: &StoredEntry,
) -> Result<SessionAnswer, ProfileError> {
    let mut out = SessionAnswer::default();
    let session = entry_line(s, SESSION_CHARS);
    let mut note = String::new();
    // A usable first phrase that lost an amount, kept unless the retry does better.
    let mut fallback: Option<Phrase> = None;
    for attempt in 0..2 {
        let reply = crate::llm::complete_schema::<Answer>(
            llm,
            vec![Message::user(format!("{prompt}{note}"))],
            GenerationOptions::greedy(MAX_TOKENS),
            answer_schema(),
        )?;
        out.usage += reply.completion.usage;
        // An unusable answer (cut off, unparsable) costs this entry its phrase, not the
        // profile its other entries.
        let answer = match reply.parsed {
            Ok(answer) => answer,
            Err(e) => {
                tracing::debug!(session = s.id, error = %e, "no profile phrase");
                break;
            }
        };
        let phrase = |text: String| Phrase {
            session: s.id,
            rank,
            text,
            kind: answer.kind,
            relevance: answer.relevance,
            probability: None,
        };
        match checks.check(&answer, &session)? {
            Verdict::Keep(text) => {
                tracing::debug!(session = s.id, %text, relevance = answer.relevance, "profile phrase");
                out.phrase = Some(phrase(text));
                break;
            }
            Verdict::Drop(why) => {
                tracing::debug!(session = s.id, phrase = %answer.about_user, %why, "no profile phrase");
                break;
            }
            Verdict::Sharpen(text, why) if attempt == 0 => {
                tracing::debug!(session = s.id, phrase = %answer.about_user, %why, "profile phrase asked again");
                out.retries += 1;
                fallback = Some(phrase(text));
                note = format!(
                    "\n\nYour answer \"{}\" was rejected because {why}. Answer again.",
                    answer.about_user.trim()
                );
            }
            // The second answer is no sharper: the first one stands, and code puts in the
            // amount (the small model tends to repeat itself word for word).
            Verdict::Sharpen(..) => break,
            Verdict::Retry(why) => {
                tracing::debug!(session = s.id, phrase = %answer.about_user, %why, attempt, "profile phrase refused");
                if attempt == 0 {
                    out.retries += 1;
                    // Appended, so the retry shares the whole first prompt as its prefix.
                    note = format!(
                        "\n\nYour answer \"{}\" was rejected because {why}. Answer again.",
                        answer.about_user.trim()
                    );
                }
            }
        }
    }
    if out.phrase.is_none() {
        out.phrase = fallback.map(|mut phrase| {
            if let Some(amount) = lost_amount(&phrase.text, &session) {
                phrase.text = with_amount(&phrase.text, &amount);
            }
            phrase
        });
    }
    Ok(out)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn nothing_and_its_kin_say_nothing() {
        for p in [
            "nothing",
            "Nothing.",
            "none",
            "N/A",
            "",
            "nothing relevant",
            "The item says nothing about the user",
            "not related to the question",
        ] {
            assert!(says_nothing(p), "{p}");
        }
        for p in [
            "recovering from a knee injury",
            "budget under $300",
            "has no car",
        ] {
            assert!(!says_nothing(p), "{p}");
        }
    }

    #[test]
    fn phrases_are_normalised() {
        assert_eq!(normalise("  budget   under $300. "), "Budget under $300");
        assert_eq!(normalise("ölfarbe"), "Ölfarbe");
    }

    #[test]
    fn words_are_stemmed_and_stopwords_dropped() {
        assert_eq!(
            content_words("She wants cushioned shoes, under $120"),
            vec!["cushioned", "shoe", "under", "$120"]
        );
    }

    #[test]
    fn the_schema_asks_for_the_phrase_before_its_grade() {
        let schema = answer_schema().to_string();
        let (a, k, r) = (
            schema.find("about_user").unwrap(),
            schema.find("\"kind\"").unwrap(),
            schema.find("\"relevance\"").unwrap(),
        );
        // Declared in the order of thought (serde_json keeps it: `preserve_order`).
        assert!(a < k && k < r, "{schema}");
        // The phrase is prose of at most 90 characters, with no JSON or markup characters.
        assert!(schema.contains("{1,90}"), "{schema}");
    }

    use crate::history::{Entry, HistorySource, Kind, Turn};

    use crate::test_support::ScriptedLlm as Scripted;

    fn reply(phrase: &str, kind: &str, relevance: u8) -> String {
        serde_json::json!({"about_user": phrase, "kind": kind, "relevance": relevance}).to_string()
    }

    pub(crate) fn search(id: i64, text: &str) -> StoredEntry {
        StoredEntry {
            id,
            entry: Entry {
                source: HistorySource::GoogleSearch,
                kind: Kind::Search,
                title: text.to_string(),
                url: None,
                external_id: None,
                started_at: None,
                time_note: None,
                turns: vec![Turn::user(text, None)],
            },
            content_hash: String::new(),
            origin: String::new(),
            imported_at: chrono::Utc::now(),
        }
    }

    const QUERY: &str = "Which running shoes should I buy for my first half marathon?";

    #[test]
    fn a_style_session_is_read_without_the_question_and_its_phrase_is_presentation() {
        let llm = Scripted::new(|p| {
            if p.contains("number each step") {
                reply(
                    "wants each step numbered so he can print it",
                    "preference",
                    3,
                )
            } else {
                reply("nothing", "presentation", 0)
            }
        });
        let sessions = [
            search(
                1,
                "When you tell me how to do something, please number each step so I can print it",
            ),
            search(2, "cheap laptops 2024"),
        ];
        let out = extract_style(&llm, None, &sessions).unwrap();
        assert_eq!(out.asked, 2);
        assert_eq!(out.phrases.len(), 1, "{:?}", out.phrases);
        assert_eq!(out.phrases[0].session, 1);
        assert_eq!(out.phrases[0].kind, PhraseKind::Presentation);
        for prompt in llm.prompts() {
            assert!(
                prompt.contains("how THIS user wants answers written"),
                "{prompt}"
            );
            assert!(!prompt.contains("Question:"), "{prompt}");
        }
    }

    #[test]
    fn nothing_and_low_grades_yield_no_phrase_and_no_retry() {
        let llm = Scripted::new(|p| {
            if p.contains("pasta") {
                reply("nothing", "preference", 0)
            } else if p.contains("weather") {
                // The grade only refuses what the model calls irrelevant; the rest is judged
                // by probability (`profile::relevance`).
                reply("checks the weather forecast", "preference", 0)
            } else {
                reply("recovering from patellofemoral knee pain", "constraint", 3)
            }
        });
        let sessions = [
            search(1, "vegan pasta recipes"),
            search(2, "patellofemoral knee pain return to jogging"),
            search(3, "weather forecast weekend"),
        ];
        let out = extract(&llm, None, QUERY, &sessions).unwrap();
        assert_eq!(llm.prompts().len(), 3, "one call per session, no retries");
        assert_eq!(out.retries, 0);
        assert_eq!(out.usage.calls, 3);
        assert_eq!(
            out.phrases,
            [Phrase {
                session: 2,
                rank: 1,
                text: "Recovering from patellofemoral knee pain".into(),
                kind: PhraseKind::Constraint,
                relevance: 3,
                probability: None,
            }]
        );
    }

    #[test]
    fn generic_phrases_are_refused() {
        let llm = Scripted::new(|_| reply("wants accurate information", "preference", 3));
        let sessions = [search(4, "accurate information about shoes")];
        let out = extract(
            &llm,
            Some(&crate::test_support::WordsEmbedder),
            QUERY,
            &sessions,
        )
        .unwrap();
        assert!(out.phrases.is_empty(), "{:?}", out.phrases);
        assert_eq!(out.retries, 0, "a generic phrase is dropped, not retried");
        // The same answer passes without the generic check: the embedding check refused it.
        let out = extract(&llm, None, QUERY, &sessions).unwrap();
        assert_eq!(out.phrases.len(), 1);
    }

    #[test]
    fn a_broken_format_is_retried_once_with_the_reason() {
        let llm = Scripted::new(|p| {
            if p.contains("was rejected because") {
                reply("budget of 120 dollars", "constraint", 3)
            } else {
                reply("{\"budget\": 120}", "constraint", 3)
            }
        });
        let sessions = [search(
            5,
            "I set aside 120 dollars for sports gear this month",
        )];
        let out = extract(&llm, None, QUERY, &sessions).unwrap();
        let prompts = llm.prompts();
        assert_eq!(prompts.len(), 2);
        assert!(
            prompts[1].starts_with(&prompts[0]),
            "the retry shares the first prompt"
        );
        assert!(prompts[1].contains("the character {"), "{}", prompts[1]);
        assert_eq!(out.retries, 1);
        assert_eq!(out.phrases[0].text, "Budget of 120 dollars");

        // A second failure yields nothing, after exactly two calls.
        let stubborn =
            Scripted::new(|_| reply("running shoes for my first half marathon", "preference", 3));
        let out = extract(&stubborn, None, QUERY, &sessions).unwrap();
        assert_eq!(stubborn.prompts().len(), 2);
        assert!(stubborn.prompts()[1].contains("repeats the question"));
        assert!(out.phrases.is_empty());
    }

    #[test]
    fn a_year_is_not_read_as_a_budget() {
        let search = "best budget laptops 2024";
        assert_eq!(
            year_as_amount("Has a budget of 2024 for laptops", search).as_deref(),
            Some("2024")
        );
        let checks = Checks::new(None, QUERY).unwrap();
        assert!(matches!(
            checks.check_phrase("Has a budget of 2024 for laptops", search).unwrap(),
            Verdict::Retry(why) if why.contains("2024 as a year")
        ));
        // A sum with its currency stays, and so does a year that is not stated as money.
        assert_eq!(
            year_as_amount("Has a budget of $1999", "Laptop under $1999"),
            None
        );
        assert_eq!(
            year_as_amount("Has a budget of 2000 dollars", "I can spend 2000 dollars"),
            None
        );
        assert_eq!(
            year_as_amount(
                "Ran her first marathon in 2019",
                "my first marathon in 2019"
            ),
            None
        );
    }

    #[test]
    fn an_amount_the_phrase_lost_is_asked_for_once_and_the_first_phrase_stands_otherwise() {
        let item = "I set aside 120 dollars for sports gear this month and that is my hard ceiling";
        assert_eq!(
            lost_amount("has limited budget, wants to track spending", item).as_deref(),
            Some("120 dollars")
        );
        assert_eq!(
            lost_amount("can spend little", "Price cap: $85.").as_deref(),
            Some("$85")
        );
        assert_eq!(lost_amount("budget of 120 dollars", item), None, "kept");
        assert_eq!(lost_amount("has knee pain", item), None, "not about money");
        assert_eq!(
            lost_amount("has a budget", "$85 for shoes, 85 dollars at most").as_deref(),
            Some("$85"),
            "one amount said twice"
        );
        assert_eq!(
            with_amount("Wants to spend little", "$85"),
            "Wants to spend little ($85)"
        );
        assert_eq!(
            with_amount(
                "Has a pension pot, wants to spend it on something for herself, gardens",
                "600 pounds"
            ),
            "Has a pension pot, wants to spend it on something for herself (600 pounds), gardens"
        );
        assert_eq!(
            with_amount("Has a tight budget, runs", "$85"),
            "Has a tight budget ($85), runs"
        );
        assert_eq!(
            lost_amount("has a limited budget", "budget running shoes 2024"),
            None,
            "a year is not an amount"
        );

        let sessions = [search(5, item)];
        // First "has limited budget for sports gear", then `second` when asked again.
        let asked_again = |second: String| {
            Scripted::new(move |p| {
                if p.contains("was rejected because") {
                    second.clone()
                } else {
                    reply("has limited budget for sports gear", "constraint", 3)
                }
            })
        };
        let sharper = asked_again(reply(
            "can spend 120 dollars on sports gear",
            "constraint",
            3,
        ));
        let out = extract(&sharper, None, QUERY, &sessions).unwrap();
        let prompts = sharper.prompts();
        assert_eq!(prompts.len(), 2);
        assert!(
            prompts[1].contains("the item gives the amount \"120 dollars\""),
            "{}",
            prompts[1]
        );
        assert_eq!(out.retries, 1);
        assert_eq!(out.phrases[0].text, "Can spend 120 dollars on sports gear");

        // A retry that is no better (or worse) leaves the first phrase, with the amount put in
        // by code.
        let same = asked_again("{\"about_user\": \"cut of".to_string());
        let out = extract(&same, None, QUERY, &sessions).unwrap();
        assert_eq!(same.prompts().len(), 2);
        assert_eq!(out.phrases.len(), 1);
        assert_eq!(
            out.phrases[0].text,
            "Has limited budget (120 dollars) for sports gear"
        );
        let two = [search(
            6,
            "My budget for sports gear is limited: $85, or 120 dollars with the insoles",
        )];
        let out = extract(&same, None, QUERY, &two).unwrap();
        assert_eq!(out.phrases.len(), 1);
        assert_eq!(
            out.phrases[0].text, "Has limited budget for sports gear",
            "two amounts: code does not pick one"
        );
    }

    #[test]
    fn an_unusable_answer_costs_only_its_session() {
        let llm = Scripted::new(|p| {
            if p.contains("calculator") {
                "{\"about_user\": \"cut of".to_string()
            } else {
                reply("budget of 120 dollars", "constraint", 3)
            }
        });
        let sessions = [
            search(1, "marathon pace calculator"),
            search(2, "120 dollars for sports gear"),
        ];
        let out = extract(&llm, None, QUERY, &sessions).unwrap();
        assert_eq!(
            out.usage.calls, 2,
            "the failed call is counted, not repeated"
        );
        assert_eq!(out.phrases.len(), 1);
        assert_eq!(out.phrases[0].session, 2);
    }

    #[test]
    fn a_phrase_must_use_a_word_of_its_session() {
        let llm = Scripted::new(|_| reply("has a toddler", "constraint", 3));
        let out = extract(&llm, None, QUERY, &[search(6, "marathon pace calculator")]).unwrap();
        assert!(out.phrases.is_empty());
        assert!(llm.prompts()[1].contains("uses no word of the item"));
    }

    #[test]
    fn a_number_or_name_the_session_does_not_say_is_refused() {
        assert_eq!(
            unsupported_specific("Has a budget of $500", "Searched: gift ideas for dad"),
            Some("500".into())
        );
        assert_eq!(
            unsupported_specific("Set aside 120 dollars", "I set aside 120 dollars"),
            None
        );
        assert_eq!(
            unsupported_specific("Lives in Toronto", "moving to toronto next year"),
            None
        );
        assert_eq!(
            unsupported_specific("Lives in Toronto", "moving to canada"),
            Some("Toronto".into())
        );
        let llm = Scripted::new(|_| reply("knee pain, runs 25 km a week", "constraint", 3));
        let out = extract(&llm, None, QUERY, &[search(9, "knee pain running 20 km")]).unwrap();
        assert!(out.phrases.is_empty());
        assert!(
            llm.prompts()[1].contains("does not say 25"),
            "{}",
            llm.prompts()[1]
        );
    }

    #[test]
    fn a_word_of_the_question_the_item_does_not_have_is_refused() {
        let checks = Checks::new(None, "What earplugs should I use for band rehearsals?").unwrap();
        let verdict = checks
            .check_phrase(
                "Uses Instant Pot for band rehearsals",
                "Searched: instant pot pressure release",
            )
            .unwrap();
        assert!(
            matches!(&verdict, Verdict::Retry(why) if why.contains("does not mention band")),
            "{verdict:?}"
        );
        // The question's words are fine where the item has them.
        let verdict = checks
            .check_phrase(
                "Plays drums in a band",
                "Searched: loud drums band practice tinnitus",
            )
            .unwrap();
        assert!(matches!(verdict, Verdict::Keep(_)), "{verdict:?}");
    }

    #[test]
    fn copying_the_prompt_example_is_refused() {
        let words = Checks::new(None, QUERY).unwrap().example_words;
        assert!(
            words.contains("sodium") && !words.contains("nothing"),
            "{words:?}"
        );
        let llm =
            Scripted::new(|_| reply("has high blood pressure, trains tactics", "constraint", 3));
        let out = extract(&llm, None, QUERY, &[search(7, "chess tactics trainer")]).unwrap();
        assert!(out.phrases.is_empty());
        assert!(
            llm.prompts()[1].contains("copies the example"),
            "{}",
            llm.prompts()[1]
        );
        // The example's words are fine where the item has them.
        let llm = Scripted::new(|_| reply("has high blood pressure", "constraint", 3));
        let out = extract(
            &llm,
            None,
            QUERY,
            &[search(8, "running with high blood pressure")],
        )
        .unwrap();
        assert_eq!(out.phrases.len(), 1);
    }

    #[test]
    fn the_prompt_puts_the_fixed_part_first() {
        let a = crate::prompts::render(
            "profile_extract",
            minijinja::context! { query => "q one", session => "Searched: a" },
        )
        .unwrap();
        let b = crate::prompts::render(
            "profile_extract",
            minijinja::context! { query => "q two", session => "Searched: b" },
        )
        .unwrap();
        let shared = a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
        assert!(
            shared + 40 > a.chars().count(),
            "only the tail differs: {shared} of {}",
            a.len()
        );
        assert!(a.ends_with("Item: Searched: a"), "{a}");
    }
}
