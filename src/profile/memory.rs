//! The memory of the user: statements about the person, read from history once (on request:
//! `rudder history remember`, the You screen) rather than only when a question retrieves them.
//!
//! A per-question profile can only state what retrieval finds, and retrieval finds under a
//! quarter of the entries that say something about the person. Memory reads what the person
//! wrote: entries are taken in time order, a cheap check in code passes over visited pages,
//! lookups (weather, a bare site name) and chats with no first-person word. A chat gives, with
//! no model call, each sentence in which the person says something about themselves
//! ([`said_in_chat`]: "My shop lease says I can't alter the building"), in their own words.
//! Searches are read a *burst* at a time (up to [`BURST_ITEMS`] consecutive searches, usually
//! one sitting on one subject) with one small call that notes at most three facts, each naming
//! its item. Code then checks every note against the item it was read from (the one it names,
//! unless another has more of its words) as a per-question phrase is checked
//! ([`super::extract::Checks::check_phrase`]: not nothing, no debris, the item's own words, no
//! number or name the item does not say, not generic) and retries once with the reason. Every
//! statement is merged with an equivalent one already remembered (the same words, or an
//! embedding cosine of [`MERGE_THRESHOLD`]), which then rests on one more entry.
//!
//! Each burst (and each chunk's chats) is stored in one transaction with the entries it read,
//! so reading resumes after a crash where it stopped and an import adds only its new entries;
//! forgetting an entry removes every statement that no remaining entry supports (a trigger).
//!
//! For a question, [`relevant`] ranks the remembered statements by embedding similarity to it
//! and to its facet lines, judges the closest by probability ([`super::relevance`]) and turns
//! those kept into profile phrases, beside those the per-question path extracts from the
//! entries retrieval finds:
//! memory adds what retrieval does not reach, so a profile built before (or without) it works
//! as it always did.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::extract::{shared_words, Checks, Phrase, PhraseKind, Verdict, MERGE_THRESHOLD};
use super::select::entry_line;
use super::user_statements::statement_key;
use super::{relevance, ProfileError, You};
use crate::embed::{cosine, Embedder};
use crate::history::store::Store;
use crate::history::{
    History, HistoryError, HistorySource, Kind, NewMemory, Progress, StoredEntry,
};
use crate::llm::{GenerationOptions, Llm, Message, Usage};

/// The most searches one call reads.
pub const BURST_ITEMS: usize = 8;
/// The most text one call reads (about 450 tokens).
pub const BURST_CHARS: usize = 1_600;
/// How much of each entry the model sees.
const ITEM_CHARS: usize = 240;
/// The most notes one burst gives.
const MAX_NOTES: usize = 3;
/// Three notes of at most 90 characters with their items and kinds, and slack.
const MAX_TOKENS: u32 = 200;
/// The phrase cap (as per-question extraction's).
const MAX_NOTE_CHARS: usize = 90;
/// Entries loaded from the store at a time.
const CHUNK: usize = 64;
/// Remembered statements judged for a question when profiles are asked to use memory
/// ([`super::ProfileOptions::memory_candidates`]): the closest to it or to one of its facet
/// lines by embedding.
pub const MEMORY_CANDIDATES: usize = 24;
/// Presentation statements (how the person likes answers) judged for every question.
const MAX_PRESENTATION: usize = 4;
/// Entries a remembered statement cites in a profile (the most recent).
const MAX_CITED: usize = 3;

/// How to read history into memory.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RememberOptions {
    pub burst_items: usize,
    /// Stop after reading this many entries (the rest stays unread for the next call).
    pub limit: Option<usize>,
}

impl Default for RememberOptions {
    fn default() -> Self {
        Self {
            burst_items: BURST_ITEMS,
            limit: None,
        }
    }
}

/// What a reading did, and what it cost.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Remembered {
    /// Entries read by the model.
    pub read: usize,
    /// Entries the cheap check passed over (marked without a call).
    pub skipped: usize,
    /// Of the entries read, the chats: read in code as what the person said, with no call.
    pub chats: usize,
    /// Calls' worth of searches (one call each, plus retries).
    pub bursts: usize,
    /// New statements.
    pub added: usize,
    /// Statements that gained an entry.
    pub strengthened: usize,
    /// Notes the checks refused.
    pub refused: usize,
    pub retries: usize,
    /// Entries still unread when it stopped.
    pub unread: u64,
    /// Unread entries when it started.
    pub total: u64,
    pub usage: Usage,
    pub seconds: f64,
}

impl Remembered {
    /// Entries (read and skipped) per second.
    pub fn sessions_per_second(&self) -> f64 {
        (self.read + self.skipped) as f64 / self.seconds.max(1e-9)
    }
}

/// Words of a search that mark a utility lookup (weather, time, conversions,
/// translation, scores, tracking, sign-in): the navigational and transactional queries that
/// make up much of a search log and never say anything about the person.
const UTILITY_WORDS: &[&str] = &[
    "weather",
    "forecast",
    "timer",
    "translate",
    "lyrics",
    "score",
    "scores",
    "showtimes",
    "tracking",
    "login",
    "inbox",
    "sign in",
    "near me",
    "open now",
    "time in",
    "status",
    "convert",
    "days until",
];

/// Whether memory reads an entry: what the person wrote themselves, that is a chat where they
/// speak in the first person, or a search of three words or more that is not a utility lookup.
/// Visited pages show only what someone read, and are most of a browser history; they, and
/// everything else skipped here, are marked as passed over without a call (the per-question
/// path still reads them when retrieval finds them for a question).
pub fn worth_reading(s: &StoredEntry) -> bool {
    let words = |text: &str| -> Vec<String> {
        text.split(|c: char| !(c.is_alphanumeric() || c == '\''))
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect()
    };
    let utility = |text: &str| {
        let padded = format!(" {} ", words(text).join(" "));
        UTILITY_WORDS
            .iter()
            .any(|u| padded.contains(&format!(" {u} ")))
    };
    let session = &s.entry;
    match session.kind {
        Kind::Chat => session.turns.iter().any(|t| {
            t.role == crate::history::TurnRole::User
                && words(&t.text).iter().any(|w| {
                    matches!(
                        w.as_str(),
                        "i" | "i'm"
                            | "i've"
                            | "i'd"
                            | "i'll"
                            | "my"
                            | "me"
                            | "mine"
                            | "we"
                            | "we're"
                            | "our"
                            | "us"
                    )
                })
        }),
        Kind::Search => words(&session.title).len() >= 3 && !utility(&session.title),
        Kind::Visit => false,
    }
}

/// First-person words: a sentence with none of them says nothing about the person.
const FIRST_PERSON: &[&str] = &[
    "i",
    "i'm",
    "i've",
    "i'd",
    "i'll",
    "im",
    "ive",
    "my",
    "me",
    "mine",
    "myself",
    "we",
    "we're",
    "we've",
    "we'd",
    "our",
    "ours",
    "us",
    "ourselves",
];

/// Words that open a question even without its question mark ("what's a polite way to …").
const QUESTION_OPENERS: &[&str] = &[
    "what", "what's", "whats", "how", "how's", "why", "when", "where", "which", "who", "whom",
    "whose", "is", "are", "am", "was", "were", "do", "does", "did", "can", "could", "would",
    "should", "will", "shall", "may", "might", "any", "anyone",
];

/// Words of a request to the assistant ("can you make me a spreadsheet", "please write …"):
/// kept only when it asks for a way of answering ("please keep replies to me short").
const REQUEST_OPENERS: &[&str] = &[
    "please",
    "pls",
    "help",
    "give",
    "make",
    "write",
    "tell",
    "show",
    "explain",
    "list",
    "keep",
    "use",
    "summarize",
    "summarise",
    "translate",
    "draft",
    "suggest",
    "recommend",
    "find",
];

/// What a request asks of the answers themselves, besides [`query_profile::is_answer_style`]'s
/// cues: "please give me numbers, not generalities".
const ANSWER_REQUEST_CUES: &[&str] = &[
    "numbers",
    "figures",
    "generalities",
    "simple",
    "simply",
    "examples",
    "replies",
    "reply",
];

/// Words that make a remark one about answers.
const ANSWER_WORDS: &[&str] = &[
    "answer",
    "answers",
    "reply",
    "replies",
    "response",
    "responses",
    "explanation",
    "explanations",
    "explain",
];

/// The longest sentence kept as said: a longer one is a pasted text, not a remark about oneself.
const MAX_SAID_WORDS: usize = 40;
/// The shortest: "I've tried it 4 times" says nothing on its own.
const MIN_SAID_CONTENT_WORDS: usize = 3;

/// What the person said about themselves in a chat, in their own words, with no model call:
/// every sentence of their turns that speaks in the first person and states something ("My
/// shop lease says I can't alter the building", "After paying the flour supplier I have
/// roughly 2000 euros spare at most"), or asks for a way of answering ("Please keep replies to
/// me short"). Questions and requests for a task are left out.
///
/// The small model, given chats three at a time, noted items 1 to 3 and lost what stood later,
/// dropped amounts ("a hard ceiling" for "120 dollars … my hard ceiling") and took 23 minutes
/// per 1,000 sessions; the person's own sentence is faithful by construction, keeps every
/// number, and costs nothing to read. Which of them matter for a question is the relevance
/// judge's call ([`relevant`]).
pub fn said_in_chat(s: &StoredEntry) -> Vec<Noted> {
    if s.entry.kind != Kind::Chat {
        return Vec::new();
    }
    let mut out: Vec<Noted> = Vec::new();
    for turn in s
        .entry
        .turns
        .iter()
        .filter(|t| t.role == crate::history::TurnRole::User)
    {
        for sentence in crate::checks::text::split_sentences(&turn.text) {
            let sentence = sentence.split_whitespace().collect::<Vec<_>>().join(" ");
            let Some(kind) = said_about_self(&sentence) else {
                continue;
            };
            let key = statement_key(&sentence);
            if !out.iter().any(|o| statement_key(&o.text) == key) {
                out.push(Noted {
                    session: s.id,
                    text: sentence,
                    kind,
                });
            }
        }
    }
    out
}

/// The kind of what one sentence of a person says about themselves, or None when it says
/// nothing about them (no first-person word, a question, a request for a task, too short or
/// too long).
fn said_about_self(sentence: &str) -> Option<PhraseKind> {
    let words: Vec<String> = sentence
        .split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '’'))
        .filter(|w| !w.is_empty())
        .map(|w| w.to_lowercase().replace('’', "'"))
        .collect();
    if words.len() > MAX_SAID_WORDS
        || sentence.trim_end().ends_with('?')
        || !words.iter().any(|w| FIRST_PERSON.contains(&w.as_str()))
        || crate::checks::text::content_words(sentence)
            .iter()
            .filter(|w| !w.chars().all(|c| c.is_ascii_digit()))
            .count()
            < MIN_SAID_CONTENT_WORDS
    {
        return None;
    }
    let first = words.first()?.as_str();
    if QUESTION_OPENERS.contains(&first) {
        return None;
    }
    let asks_for_answers = super::query_profile::is_answer_style(sentence)
        || words
            .iter()
            .any(|w| ANSWER_REQUEST_CUES.contains(&w.as_str()));
    if REQUEST_OPENERS.contains(&first) {
        return asks_for_answers.then_some(PhraseKind::Presentation);
    }
    // A remark on answers ("I prefer short answers"), not a cue word about something else
    // ("my short ribs are still tough").
    if super::query_profile::is_answer_style(sentence)
        && words.iter().any(|w| ANSWER_WORDS.contains(&w.as_str()))
    {
        return Some(PhraseKind::Presentation);
    }
    // Numbers are budgets, dates, sizes and limits: what bounds an answer.
    let bounded = sentence.chars().any(|c| c.is_ascii_digit())
        || words.iter().any(|w| {
            matches!(
                w.as_str(),
                "can't"
                    | "cannot"
                    | "budget"
                    | "afford"
                    | "allergic"
                    | "allergy"
                    | "limit"
                    | "ceiling"
                    | "only"
                    | "most"
                    | "must"
                    | "never"
            )
        });
    Some(if bounded {
        PhraseKind::Constraint
    } else {
        PhraseKind::Background
    })
}

/// Splits searches (in time order) into bursts of at most `max_items` entries and
/// [`BURST_CHARS`] of text, in order. Related searches sit together in time, so a burst is
/// usually one sitting on one subject; it need not be, since every note names its own item and
/// is checked against it alone. (Cutting at gaps in time made most bursts one entry long on a
/// history spread over months: a call per entry, twice the budget.)
pub fn bursts(sessions: Vec<StoredEntry>, max_items: usize) -> Vec<Vec<StoredEntry>> {
    consecutive(sessions, max_items)
}

fn consecutive(sessions: Vec<StoredEntry>, max_items: usize) -> Vec<Vec<StoredEntry>> {
    let mut out: Vec<Vec<StoredEntry>> = Vec::new();
    let mut chars = 0;
    for s in sessions {
        let len = entry_line(&s, ITEM_CHARS).chars().count();
        match out.last_mut() {
            Some(burst) if burst.len() < max_items.max(1) && chars + len <= BURST_CHARS => {
                chars += len;
                burst.push(s);
            }
            _ => {
                chars = len;
                out.push(vec![s]);
            }
        }
    }
    out
}

/// One note as the model writes it.
#[derive(Debug, Clone, Deserialize)]
struct Note {
    item: usize,
    about_user: String,
    kind: PhraseKind,
}

#[derive(Debug, Clone, Deserialize)]
struct Notes {
    notes: Vec<Note>,
}

fn notes_schema(items: usize) -> serde_json::Value {
    let numbers: Vec<usize> = (1..=items).collect();
    serde_json::json!({
        "type": "object",
        "properties": {
            "notes": {
                "type": "array",
                "maxItems": MAX_NOTES,
                "items": {
                    "type": "object",
                    "properties": {
                        "item": {"type": "integer", "enum": numbers},
                        // Prose without JSON or markup characters, nor the `|` of a page
                        // title's site name ("… | Lonely Planet"): a note is not a title.
                        "about_user": {
                            "type": "string",
                            "pattern": format!("^[^{{}}\\[\\]\"\\\\<>\\n|]{{1,{MAX_NOTE_CHARS}}}$"),
                        },
                        "kind": {"type": "string", "enum": ["constraint", "background", "preference", "presentation"]}
                    },
                    "required": ["item", "about_user", "kind"],
                    "additionalProperties": false
                }
            }
        },
        "required": ["notes"],
        "additionalProperties": false
    })
}

/// A note that passed the checks, with the entry it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Noted {
    pub session: i64,
    pub text: String,
    pub kind: PhraseKind,
}

/// What one burst gave.
#[derive(Debug, Default)]
struct BurstAnswer {
    notes: Vec<Noted>,
    refused: usize,
    retries: usize,
    usage: Usage,
}

/// Reads one burst: one call, its notes checked against the items they name, once more with
/// the reasons when a note broke a rule.
fn read_burst(
    llm: &dyn Llm,
    checks: &Checks<'_>,
    burst: &[StoredEntry],
) -> Result<BurstAnswer, ProfileError> {
    let items: Vec<serde_json::Value> = burst
        .iter()
        .enumerate()
        .map(|(i, s)| serde_json::json!({"number": i + 1, "text": entry_line(s, ITEM_CHARS)}))
        .collect();
    let texts: Vec<String> = items
        .iter()
        .map(|i| i["text"].as_str().unwrap_or_default().to_string())
        .collect();
    let prompt = crate::prompts::render("memory_extract", minijinja::context! { items })?;
    let mut out = BurstAnswer::default();
    let mut note = String::new();
    for attempt in 0..2 {
        let reply = crate::llm::complete_schema::<Notes>(
            llm,
            vec![Message::user(format!("{prompt}{note}"))],
            GenerationOptions::greedy(MAX_TOKENS),
            notes_schema(burst.len()),
        )?;
        out.usage += reply.completion.usage;
        let notes = match reply.parsed {
            Ok(n) => n.notes,
            Err(e) => {
                tracing::debug!(error = %e, "memory: an unusable answer");
                break;
            }
        };
        tracing::debug!(
            attempt,
            items = ?texts,
            notes = ?notes.iter().map(|n| (n.item, n.about_user.as_str())).collect::<Vec<_>>(),
            "memory: a burst read"
        );
        let mut reasons = Vec::new();
        for mut n in notes {
            n.about_user = to_last_clause(&n.about_user);
            let Some(item) = read_from(&n, &texts) else {
                out.refused += 1;
                continue;
            };
            let text = &texts[item];
            // A copied search is dropped, not asked again: a retry re-reads the whole burst,
            // and asking again for copies made reading 1.6 times slower for few facts.
            let verdict = match copies_title(&n.about_user, &burst[item]) {
                Some(why) => Verdict::Drop(why),
                None => checks.check_phrase(&n.about_user, text)?,
            };
            match verdict {
                // Not asked again for an amount: a retry re-reads the whole burst.
                Verdict::Keep(kept) | Verdict::Sharpen(kept, _) => {
                    let session = burst[item].id;
                    if !out
                        .notes
                        .iter()
                        .any(|o| statement_key(&o.text) == statement_key(&kept))
                    {
                        out.notes.push(Noted {
                            session,
                            text: kept,
                            kind: n.kind,
                        });
                    }
                }
                Verdict::Drop(why) => {
                    tracing::debug!(note = %n.about_user, %why, "memory: note dropped");
                    out.refused += 1;
                }
                Verdict::Retry(why) => {
                    tracing::debug!(note = %n.about_user, %why, attempt, "memory: note refused");
                    out.refused += 1;
                    reasons.push(format!(
                        "Your note \"{}\" was rejected because {why}.",
                        n.about_user.trim()
                    ));
                }
            }
        }
        if reasons.is_empty() || attempt == 1 {
            break;
        }
        out.retries += 1;
        // Appended, so the retry shares the whole first prompt as its prefix.
        note = format!("\n\n{} Answer again.", reasons.join(" "));
    }
    Ok(out)
}

/// A note the grammar cut at [`MAX_NOTE_CHARS`] ends mid-clause ("please keep replies to me
/// short and in bullet points, I read them on five minute breaks at") and would be refused as
/// too long: it is cut back to its last whole clause, when one of a few words is left.
fn to_last_clause(note: &str) -> String {
    let note = note.trim();
    if note.chars().count() < MAX_NOTE_CHARS {
        return note.to_string();
    }
    match note.rfind([',', ';']) {
        Some(cut) if note[..cut].split_whitespace().count() >= 3 => note[..cut].trim().to_string(),
        _ => note.to_string(),
    }
}

/// The item (index into `texts`) a note was read from: the one it names, unless another item
/// has more of its words. The small model often names the item before or after the one it
/// read ("has knee pain after long shifts" citing the budget chat beside the knee chat), and
/// the checks would refuse a true note for a wrong number.
fn read_from(note: &Note, texts: &[String]) -> Option<usize> {
    let named = note.item.checked_sub(1).filter(|&i| i < texts.len())?;
    let shared = |i: usize| shared_words(&note.about_user, &texts[i]);
    let best = (0..texts.len()).max_by_key(|&i| (shared(i), i == named))?;
    Some(if shared(best) > shared(named) {
        best
    } else {
        named
    })
}

/// Why a note merely copies its item's search or title, if it does: "sourdough starter not
/// bubbling" from that search is a topic the person looked up, not a fact about them ("has a
/// sourdough starter that does not bubble"). Such a note is dropped.
fn copies_title(note: &str, item: &StoredEntry) -> Option<String> {
    let key = statement_key(note);
    let title = statement_key(&item.entry.title);
    let what = match item.entry.kind {
        Kind::Search => "the search",
        Kind::Chat => "the chat's title",
        Kind::Visit => "the page's title",
    };
    (!key.is_empty() && format!(" {title} ").contains(&format!(" {key} "))).then(|| {
        format!("it copies {what}; say what it tells about the person, such as \"has …\", \"new to …\" or \"wants …\"")
    })
}

/// A statement already remembered, for merging.
struct Known {
    key: String,
    vector: Option<Vec<f32>>,
}

/// Reads the entries not yet in memory (up to `options.limit`), advancing `progress` by the
/// entries of every stored burst. A failed call ends it with everything read before it kept.
pub fn remember(
    llm: &dyn Llm,
    history: &mut History,
    embedder: Option<&dyn Embedder>,
    options: &RememberOptions,
    progress: &dyn Progress,
) -> Result<Remembered, ProfileError> {
    let started = Instant::now();
    let checks = Checks::for_memory(embedder)?;
    let store_err = |e| ProfileError::History(HistoryError::from(e));
    let mut known: Vec<Known> = Vec::new();
    {
        let rows = history.store().memory().map_err(store_err)?;
        let vectors = embed_all(embedder, rows.iter().map(|r| r.text.as_str()))?;
        for (row, vector) in rows.into_iter().zip(vectors) {
            known.push(Known {
                key: row.key,
                vector,
            });
        }
    }
    let mut out = Remembered {
        total: history
            .store()
            .count_unread_for_memory()
            .map_err(store_err)?,
        ..Remembered::default()
    };
    let to_read = options.limit.map_or(out.total, |l| out.total.min(l as u64));
    progress.begin("reading into memory", Some(to_read));
    let model = llm.model_name().to_string();
    loop {
        let room = options.limit.map_or(CHUNK, |l| {
            l.saturating_sub(out.read + out.skipped).min(CHUNK)
        });
        if room == 0 {
            break;
        }
        let ids = history.store().unread_for_memory(room).map_err(store_err)?;
        if ids.is_empty() {
            break;
        }
        let sessions = history.get_many(&ids)?;
        let (worth, skipped): (Vec<_>, Vec<_>) = sessions.into_iter().partition(worth_reading);
        let skipped: Vec<i64> = skipped.iter().map(|s| s.id).collect();
        history
            .store_mut_for_profiles()
            .remember(&model, &[], &skipped, &[])
            .map_err(store_err)?;
        out.skipped += skipped.len();
        progress.advance(skipped.len() as u64);
        // Chats are read in code, as what the person said ([`said_in_chat`]), each chunk's in
        // one transaction; searches a burst to a call.
        let (chats, searches): (Vec<_>, Vec<_>) =
            worth.into_iter().partition(|s| s.entry.kind == Kind::Chat);
        if !chats.is_empty() {
            let mut notes = Vec::new();
            for n in chats.iter().flat_map(said_in_chat) {
                // A wish that fits anyone ("I want to save money") says nothing of this person.
                if checks.genericness(&n.text)? < super::extract::GENERIC_THRESHOLD {
                    notes.push(n);
                } else {
                    tracing::debug!(said = %n.text, "memory: generic, not kept");
                    out.refused += 1;
                }
            }
            let read: Vec<i64> = chats.iter().map(|s| s.id).collect();
            out.chats += read.len();
            store_notes(
                history, embedder, &model, &mut known, &read, notes, &mut out,
            )?;
            progress.advance(read.len() as u64);
        }
        let bursts = bursts(searches, options.burst_items);
        // As many bursts at once as the model serves, each stored as soon as its group is read,
        // so a crash loses at most one group and progress moves every few seconds.
        for group in bursts.chunks(llm.parallelism().max(1)) {
            let answers = crate::llm::map_concurrent(group.len(), group, |_, burst| {
                read_burst(llm, &checks, burst)
            });
            for (burst, answer) in group.iter().zip(answers) {
                let answer = answer?;
                out.bursts += 1;
                out.usage += answer.usage;
                out.refused += answer.refused;
                out.retries += answer.retries;
                let read: Vec<i64> = burst.iter().map(|s| s.id).collect();
                store_notes(
                    history,
                    embedder,
                    &model,
                    &mut known,
                    &read,
                    answer.notes,
                    &mut out,
                )?;
                progress.advance(read.len() as u64);
            }
        }
    }
    progress.end();
    out.unread = history
        .store()
        .count_unread_for_memory()
        .map_err(store_err)?;
    out.seconds = started.elapsed().as_secs_f64();
    tracing::info!(
        read = out.read,
        skipped = out.skipped,
        added = out.added,
        strengthened = out.strengthened,
        refused = out.refused,
        unread = out.unread,
        "memory read"
    );
    Ok(out)
}

/// Stores what was read from the entries `read` in one transaction: each note merged with an
/// equivalent statement already remembered (the same words, or an embedding cosine of
/// [`MERGE_THRESHOLD`]), which then rests on one more entry.
fn store_notes(
    history: &mut History,
    embedder: Option<&dyn Embedder>,
    model: &str,
    known: &mut Vec<Known>,
    read: &[i64],
    notes: Vec<Noted>,
    out: &mut Remembered,
) -> Result<(), ProfileError> {
    let vectors = embed_all(embedder, notes.iter().map(|n| n.text.as_str()))?;
    let mut found = Vec::new();
    for (n, vector) in notes.into_iter().zip(vectors) {
        let key = statement_key(&n.text);
        let same = known.iter().find(|k| {
            k.key == key
                || matches!((&k.vector, &vector), (Some(a), Some(b)) if cosine(a, b) >= MERGE_THRESHOLD)
        });
        let key = match same {
            Some(k) => k.key.clone(),
            None => {
                known.push(Known {
                    key: key.clone(),
                    vector,
                });
                key
            }
        };
        found.push(NewMemory {
            key,
            text: n.text,
            kind: kind_name(n.kind).to_string(),
            session: n.session,
        });
    }
    let stored = history
        .store_mut_for_profiles()
        .remember(model, read, &[], &found)
        .map_err(|e| ProfileError::History(HistoryError::from(e)))?;
    out.read += read.len();
    out.added += stored.added;
    out.strengthened += stored.strengthened;
    Ok(())
}

fn embed_all<'t>(
    embedder: Option<&dyn Embedder>,
    texts: impl Iterator<Item = &'t str>,
) -> Result<Vec<Option<Vec<f32>>>, ProfileError> {
    let texts: Vec<&str> = texts.collect();
    match embedder {
        Some(e) if !texts.is_empty() => Ok(e
            .embed(&texts)
            .map_err(ProfileError::from)?
            .into_iter()
            .map(Some)
            .collect()),
        _ => Ok(vec![None; texts.len()]),
    }
}

/// The stored name of a kind.
pub fn kind_name(kind: PhraseKind) -> &'static str {
    match kind {
        PhraseKind::Constraint => "constraint",
        PhraseKind::Background => "background",
        PhraseKind::Preference => "preference",
        PhraseKind::Presentation => "presentation",
    }
}

fn kind_of(name: &str) -> PhraseKind {
    match name {
        "constraint" => PhraseKind::Constraint,
        "background" => PhraseKind::Background,
        "presentation" => PhraseKind::Presentation,
        _ => PhraseKind::Preference,
    }
}

/// The remembered statements a profile may carry: not deleted by the user, resting on at least
/// one entry of a source that feeds profiles. The best supported first.
pub fn usable(store: &Store, you: &You) -> Result<Vec<crate::history::MemoryRow>, ProfileError> {
    let hidden: Vec<&str> = you.hidden.iter().map(|h| h.key.as_str()).collect();
    Ok(store
        .memory()
        .map_err(|e| ProfileError::History(HistoryError::from(e)))?
        .into_iter()
        .filter(|m| !hidden.contains(&m.key.as_str()))
        .filter_map(|mut m| {
            m.sessions.retain(|(_, source)| {
                source
                    .parse::<HistorySource>()
                    .is_ok_and(|s| you.personalises_from(s))
            });
            (!m.sessions.is_empty()).then_some(m)
        })
        .collect())
}

/// What memory gave a question.
#[derive(Debug, Clone, Default)]
pub struct FromMemory {
    pub phrases: Vec<Phrase>,
    /// Statements judged.
    pub asked: usize,
    pub usage: Usage,
}

/// The remembered statements that matter for the question: the `candidates` closest by
/// embedding to it or to one of its facet lines (the best supported, without an embedder),
/// judged by probability and by their similarity to its facet lines; those that pass
/// `threshold` are returned as phrases citing their most recent entries.
pub fn relevant(
    llm: &dyn Llm,
    store: &Store,
    embedder: Option<&dyn Embedder>,
    you: &You,
    question: relevance::Question<'_>,
    candidates: usize,
    threshold: f32,
) -> Result<FromMemory, ProfileError> {
    let relevance::Question {
        text: query,
        facets,
    } = question;
    let mut rows = usable(store, you)?;
    if rows.is_empty() || candidates == 0 {
        return Ok(FromMemory::default());
    }
    if let Some(e) = embedder {
        // Closest to the question, to one of its facet lines or to a situation line: a note
        // that matters shares few words with the question ("Has knee pain after long shifts"
        // for running shoes, cosine 0.12) but reads like the situation a facet line guesses
        // ("my knee hurts after long runs"), and "I have about 600 pounds left" is far from a
        // laptop question and the lines the model guessed for it, but close to "I can spend
        // about 500 dollars on this".
        let anchors: Vec<String> = std::iter::once(query.to_string())
            .chain(relevance::with_situation_lines(facets))
            .collect();
        let texts: Vec<&str> = rows.iter().map(|r| r.text.as_str()).collect();
        let closest = relevance::facet_similarities(e, &anchors, &texts)?;
        let mut scored: Vec<(f32, crate::history::MemoryRow)> =
            closest.into_iter().zip(rows).collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        rows = scored.into_iter().map(|(_, r)| r).collect();
    }
    // How the person likes answers holds for every question but reads like none of them: the
    // best supported such statements are always judged.
    let (mut presentation, rest): (Vec<_>, Vec<_>) =
        rows.into_iter().partition(|r| r.kind == "presentation");
    presentation.sort_by_key(|m| std::cmp::Reverse(m.sessions.len()));
    let more = presentation.split_off(MAX_PRESENTATION.min(presentation.len()));
    rows = presentation;
    rows.extend(rest);
    rows.extend(more);
    rows.truncate(candidates);
    let texts: Vec<&str> = rows.iter().map(|r| r.text.as_str()).collect();
    let (judged, usage) = judge_rows(llm, embedder, query, facets, &texts)?;
    let mut phrases = Vec::new();
    for (rank, (row, (j, said))) in rows.iter().zip(judged).enumerate() {
        let passes = if said {
            j.score() >= relevance::said_bar(threshold)
        } else {
            j.passes(threshold)
        };
        if !passes {
            tracing::debug!(statement = %row.text, score = j.score(), "memory: not relevant");
            continue;
        }
        tracing::debug!(statement = %row.text, score = j.score(), "memory: relevant");
        for (session, _) in row.sessions.iter().rev().take(MAX_CITED) {
            phrases.push(Phrase {
                session: *session,
                rank,
                text: row.text.clone(),
                kind: kind_of(&row.kind),
                // Read without the question: the grade is the judge's, not a written one.
                relevance: 2,
                probability: Some(j.score()),
            });
        }
    }
    Ok(FromMemory {
        phrases,
        asked: rows.len(),
        usage,
    })
}

/// Budget sentences judged per question: a person states few, and each is one forward pass.
pub const MAX_SAID_BUDGETS: usize = 6;

/// How much higher than the said bar ([`relevance::said_bar`]) a budget sentence must score.
/// It is a candidate for every question, and a budget the report holds prices against is a
/// visible claim about the reader. Read off the eight guided questions of the planted set and
/// eight foreign ones (not held out): the four users' budgets scored 0.53, 0.53, 0.57 and
/// 0.91 for their own questions; for other users' questions 0.43 (earplugs money for running
/// shoes), 0.45 (sports gear for a laptop), 0.45 (a pension sum for count statistics) and 0.56
/// (a bakery's improvements for a family holiday). At the said bar, 0.42, all eight pass.
pub const SAID_BUDGET_MARGIN: f32 = 0.08;

/// What the person wrote in their chats about how much they can spend ("I can spend 200 euros
/// on my ears this year", [`crate::checks::money::budget`]), judged for the question as what
/// they told Rudder ([`relevance::Judge::Said`], beside the facet and situation lines) at the
/// said bar plus [`SAID_BUDGET_MARGIN`]. Read in code from every chat when memory is off (memory
/// judges every sentence the person wrote): a budget is the need the report can meet most
/// exactly (prices are compared in code), and retrieval for the question rarely reaches the
/// chat that states it ("600 pounds left from this year's pension lump sum" shares no word
/// with a laptop question). The most recent sentences are judged first.
pub fn said_budgets(
    llm: &dyn Llm,
    store: &Store,
    embedder: Option<&dyn Embedder>,
    you: &You,
    question: relevance::Question<'_>,
    threshold: f32,
) -> Result<FromMemory, ProfileError> {
    let hidden: Vec<&str> = you.hidden.iter().map(|h| h.key.as_str()).collect();
    let mut said: Vec<Noted> = Vec::new();
    store
        .for_each_entry(256, |batch| {
            for s in batch
                .iter()
                .filter(|s| s.entry.kind == Kind::Chat && you.personalises_from(s.entry.source))
            {
                for noted in said_in_chat(s) {
                    let key = statement_key(&noted.text);
                    if crate::checks::money::budget(&noted.text).is_some()
                        && !hidden.contains(&key.as_str())
                    {
                        said.retain(|n| statement_key(&n.text) != key);
                        said.push(noted);
                    }
                }
            }
            Ok(())
        })
        .map_err(|e| ProfileError::History(HistoryError::from(e)))?;
    said.reverse();
    said.truncate(MAX_SAID_BUDGETS);
    if said.is_empty() {
        return Ok(FromMemory::default());
    }
    let texts: Vec<&str> = said.iter().map(|n| n.text.as_str()).collect();
    let (judged, usage) = judge_rows(llm, embedder, question.text, question.facets, &texts)?;
    let mut phrases = Vec::new();
    for (rank, (noted, (j, _))) in said.iter().zip(judged).enumerate() {
        let bar = relevance::said_bar(threshold);
        let kept = j.score()
            >= if threshold < 0.0 {
                bar
            } else {
                bar + SAID_BUDGET_MARGIN
            };
        tracing::debug!(statement = %noted.text, score = j.score(), kept, "said budget judged");
        if kept {
            phrases.push(Phrase {
                session: noted.session,
                rank,
                text: noted.text.clone(),
                kind: PhraseKind::Constraint,
                relevance: 2,
                probability: Some(j.score()),
            });
        }
    }
    Ok(FromMemory {
        phrases,
        asked: said.len(),
        usage,
    })
}

/// Judges each remembered text for `query`, in order, and says whether it is something the
/// person wrote about themselves: such a sentence is judged as what they told the model
/// ([`relevance::Judge::Said`]) and compared with the question's facet lines and the
/// [`relevance::SITUATION_LINES`]; a note from searches ("Has a budget of 120 dollars") as a
/// profile statement, against the facet lines alone. Each way was calibrated on its own pairs.
fn judge_rows(
    llm: &dyn Llm,
    embedder: Option<&dyn Embedder>,
    query: &str,
    facets: &[String],
    texts: &[&str],
) -> Result<(Vec<(relevance::Judged, bool)>, Usage), ProfileError> {
    let said: Vec<bool> = texts.iter().map(|t| speaks_of_self(t)).collect();
    let mut usage = Usage::default();
    let mut out: Vec<Option<(relevance::Judged, bool)>> = vec![None; texts.len()];
    for (judge, is_said) in [
        (relevance::Judge::Said, true),
        (relevance::Judge::Statement, false),
    ] {
        let indices: Vec<usize> = (0..texts.len()).filter(|i| said[*i] == is_said).collect();
        if indices.is_empty() {
            continue;
        }
        let of: Vec<&str> = indices.iter().map(|i| texts[*i]).collect();
        let (mut judged, cost) = relevance::relevance_by(llm, judge, query, &of)?;
        usage += cost;
        if let Some(e) = embedder {
            let lines: Vec<String> = if is_said {
                relevance::with_situation_lines(facets)
            } else {
                facets.to_vec()
            };
            relevance::with_facets(&mut judged, e, &lines, &of)?;
        }
        for (i, j) in indices.into_iter().zip(judged) {
            out[i] = Some((j, is_said));
        }
    }
    Ok((out.into_iter().flatten().collect(), usage))
}

/// Whether a remembered text is a sentence the person wrote in the first person ("My shop is a
/// one-car garage"), not a note memory made of their searches ("Is interested in prime lens").
pub fn speaks_of_self(text: &str) -> bool {
    text.split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .any(|w| {
            matches!(
                w.to_lowercase().as_str(),
                "i" | "i'm" | "i've" | "i'd" | "i'll" | "my" | "me" | "we" | "our" | "we're"
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{Entry, ForgetSelector, NoProgress, Turn, TurnRole};
    use crate::test_support::ScriptedLlm;

    fn session(kind: Kind, title: &str, user_text: &str, minute: i64) -> Entry {
        let mut turns = vec![Turn::user(user_text, None)];
        if kind == Kind::Chat {
            turns.push(Turn {
                role: TurnRole::Assistant,
                text: "Sure.".into(),
                at: None,
            });
        }
        Entry {
            source: if kind == Kind::Chat {
                HistorySource::Chatgpt
            } else {
                HistorySource::GoogleSearch
            },
            kind,
            title: title.into(),
            url: None,
            external_id: None,
            started_at: chrono::DateTime::from_timestamp(1_700_000_000 + minute * 60, 0),
            time_note: None,
            turns,
        }
    }

    fn search(q: &str, minute: i64) -> Entry {
        session(Kind::Search, q, q, minute)
    }

    fn history_of(sessions: &[Entry]) -> (tempfile::TempDir, History, Vec<i64>) {
        let dir = tempfile::tempdir().unwrap();
        let mut history = History::open(dir.path()).unwrap();
        let mut ids = Vec::new();
        {
            let mut w = history.store_mut().write().unwrap();
            for s in sessions {
                match w.insert_entry(s, &s.content_hash(), "test").unwrap() {
                    crate::history::Inserted::Added(id) => ids.push(id),
                    other => panic!("{other:?}"),
                }
            }
            w.commit().unwrap();
        }
        (dir, history, ids)
    }

    fn stored(id: i64, s: Entry) -> StoredEntry {
        StoredEntry {
            id,
            entry: s,
            content_hash: String::new(),
            origin: String::new(),
            imported_at: chrono::Utc::now(),
        }
    }

    /// Answers a burst with `notes(items)`: the items' lines as the prompt lists them.
    fn notes_model(
        notes: impl Fn(&[&str]) -> serde_json::Value + Send + Sync + 'static,
    ) -> ScriptedLlm {
        ScriptedLlm::new(move |prompt| {
            let items: Vec<&str> = prompt
                .split("Now the items.")
                .nth(1)
                .unwrap_or("")
                .lines()
                .filter(|l| l.starts_with('['))
                .collect();
            serde_json::json!({ "notes": notes(&items) }).to_string()
        })
    }

    #[test]
    fn memory_reads_what_the_person_wrote_and_skips_lookups_and_pages() {
        let keep = [
            session(
                Kind::Chat,
                "Knees",
                "My physio says my right knee is irritated",
                0,
            ),
            search("patellofemoral pain return to jogging", 0),
        ];
        let skip = [
            session(
                Kind::Chat,
                "Translate",
                "translate to german: see you next week",
                0,
            ),
            search("gmail", 0),
            search("weather london tomorrow", 0),
            search("pizza near me", 0),
            session(
                Kind::Visit,
                "Flat feet and fallen arches: what helps? - Foot Forum",
                "",
                0,
            ),
            session(Kind::Visit, "YouTube", "", 0),
        ];
        for s in keep {
            assert!(worth_reading(&stored(1, s.clone())), "{}", s.title);
        }
        for s in skip {
            assert!(!worth_reading(&stored(1, s.clone())), "{}", s.title);
        }
    }

    #[test]
    fn a_note_naming_the_wrong_item_rests_on_the_item_it_was_read_from() {
        let (_dir, mut history, ids) = history_of(&[
            search("sports gear budget 120 dollars this month", 0),
            search("physio says right knee irritated jogging", 1),
        ]);
        // The small model's slip: the knee note names the budget search before it.
        let llm = notes_model(
            |_| serde_json::json!([{"item": 1, "about_user": "has an irritated right knee", "kind": "constraint"}]),
        );
        let read = read_the_rest(&llm, &mut history);
        assert_eq!((read.added, read.refused, read.retries), (1, 0, 0));
        let memory = history.store().memory().unwrap();
        assert_eq!(memory[0].text, "Has an irritated right knee");
        let cited: Vec<i64> = memory[0].sessions.iter().map(|(id, _)| *id).collect();
        assert_eq!(cited, vec![ids[1]]);
        // A note that no item supports is still refused.
        let note = Note {
            item: 1,
            about_user: "owns a sailing boat".into(),
            kind: PhraseKind::Background,
        };
        let texts = vec!["Chat: knee".to_string(), "Chat: budget".to_string()];
        assert_eq!(
            read_from(&note, &texts),
            Some(0),
            "kept on the item it names"
        );
    }

    #[test]
    fn a_note_cut_by_the_grammar_keeps_its_last_whole_clause() {
        let cut = "please keep replies to me short and in bullet points, I read them on five minute breaks at";
        assert_eq!(cut.chars().count(), MAX_NOTE_CHARS);
        assert_eq!(
            to_last_clause(cut),
            "please keep replies to me short and in bullet points"
        );
        assert_eq!(
            to_last_clause("has knee pain, wants to jog"),
            "has knee pain, wants to jog"
        );
        let no_clause = "x".repeat(MAX_NOTE_CHARS);
        assert_eq!(to_last_clause(&no_clause), no_clause);
    }

    #[test]
    fn a_sentence_is_remembered_when_the_person_says_something_about_themselves() {
        for (sentence, kind) in [
            (
                "My shop lease says I can't alter the building or the roof without the landlord's written consent.",
                Some(PhraseKind::Constraint),
            ),
            (
                "After paying the flour supplier I have roughly 2000 euros spare at most for improvements this year.",
                Some(PhraseKind::Constraint),
            ),
            (
                "My grandson keeps saying RAM and SSD and I have no idea what they are.",
                Some(PhraseKind::Background),
            ),
            (
                "Please keep replies to me short and in bullet points, I read them on five minute breaks.",
                Some(PhraseKind::Presentation),
            ),
            (
                "Please give me numbers, not generalities.",
                Some(PhraseKind::Presentation),
            ),
            // A question, with or without its mark; a request for a task; too little said.
            ("Should I keep it as a buffer for my shop?", None),
            (
                "what's a polite way to decline a meeting invite from my manager",
                None,
            ),
            ("Can you make me a tiny spreadsheet to track it.", None),
            ("Please write a toast for my sister's wedding.", None),
            ("I've tried it 12 times.", None),
            (
                "Still short ribs tough after 3 hours even though I checked red wine braise.",
                Some(PhraseKind::Constraint),
            ),
            (
                "I prefer short answers with the numbers up front.",
                Some(PhraseKind::Presentation),
            ),
            ("The oven takes 90 minutes to heat up.", None),
        ] {
            assert_eq!(said_about_self(sentence), kind, "{sentence}");
        }
    }

    #[test]
    fn a_chat_is_remembered_as_what_the_person_said_without_a_call() {
        let lease =
            "My shop lease says I can't alter the building without the landlord's written consent.";
        let (_dir, mut history, ids) = history_of(&[
            session(
                Kind::Chat,
                "Lease clause",
                &format!("{lease} What counts as an alteration?"),
                0,
            ),
            session(
                Kind::Chat,
                "Orders",
                "Can you make me a tiny spreadsheet? Please keep replies to me short and in bullet points.",
                1,
            ),
            session(Kind::Chat, "Lease again", lease, 2),
        ]);
        let llm = notes_model(|_| serde_json::json!([]));
        let read = read_the_rest(&llm, &mut history);
        assert!(llm.prompts().is_empty(), "no model call for chats");
        assert_eq!((read.read, read.bursts), (3, 0));
        assert_eq!((read.added, read.strengthened), (2, 1));
        let memory = history.store().memory().unwrap();
        let said = memory.iter().find(|m| m.text == lease).unwrap();
        assert_eq!(said.kind, "constraint");
        let cited: Vec<i64> = said.sessions.iter().map(|(id, _)| *id).collect();
        assert_eq!(
            cited,
            vec![ids[0], ids[2]],
            "the same sentence twice is one statement"
        );
        let style = memory.iter().find(|m| m.kind == "presentation").unwrap();
        assert_eq!(
            style.text,
            "Please keep replies to me short and in bullet points."
        );
        assert_eq!(memory.len(), 2, "{memory:?}");
    }

    #[test]
    fn a_note_that_copies_the_search_or_title_is_dropped() {
        let searched = stored(1, search("sourdough starter not bubbling", 0));
        assert!(copies_title("Sourdough starter not bubbling", &searched)
            .is_some_and(|why| why.contains("copies the search")));
        assert!(copies_title("starter not bubbling", &searched).is_some());
        assert_eq!(
            copies_title("Has a sourdough starter that does not bubble", &searched),
            None
        );
        let chat = stored(
            2,
            session(
                Kind::Chat,
                "Knee pain after long shifts",
                "My physio says my knee is irritated",
                0,
            ),
        );
        assert!(copies_title("Knee pain after long shifts", &chat)
            .is_some_and(|why| why.contains("chat's title")));
        assert_eq!(copies_title("Knee is irritated", &chat), None);
    }

    #[test]
    fn bursts_hold_consecutive_sessions_up_to_the_caps() {
        let sessions: Vec<StoredEntry> = (0..20)
            .map(|i| stored(i, search(&format!("running shoes question {i}"), i)))
            .collect();
        let b = bursts(sessions, 8);
        assert_eq!(b.iter().map(Vec::len).collect::<Vec<_>>(), vec![8, 8, 4]);
        assert_eq!(b[1][0].id, 8, "in order");
        let long = "word ".repeat(60);
        let sessions: Vec<StoredEntry> = (0..10).map(|i| stored(i, search(&long, i))).collect();
        let b = bursts(sessions, 8);
        assert!(b.iter().all(|b| b
            .iter()
            .map(|s| entry_line(s, ITEM_CHARS).chars().count())
            .sum::<usize>()
            <= BURST_CHARS));
        assert!(b.len() > 1);
    }

    /// Reads everything not yet in memory, without an embedder.
    fn read_the_rest(llm: &dyn Llm, history: &mut History) -> Remembered {
        remember(llm, history, None, &RememberOptions::default(), &NoProgress).unwrap()
    }

    #[test]
    fn notes_are_checked_merged_stored_and_resumed() {
        let (_dir, mut history, ids) = history_of(&[
            search("set aside 120 dollars for sports gear", 0),
            search("gmail", 1),
            search("patellofemoral knee pain jogging", 2),
            search("hard ceiling 120 dollars gear set aside", 300),
        ]);
        // Every burst: a faithful note on each item that mentions money, an invented number on
        // the knee search (refused, asked again with the reason, then dropped).
        let llm = notes_model(|items| {
            let mut notes = Vec::new();
            for (i, item) in items.iter().enumerate() {
                if item.contains("120 dollars") {
                    notes.push(serde_json::json!({"item": i + 1, "about_user": "set aside 120 dollars for gear", "kind": "constraint"}));
                }
                if item.contains("knee") {
                    notes.push(serde_json::json!({"item": i + 1, "about_user": "knee pain, jogs 25 km a week", "kind": "constraint"}));
                }
            }
            serde_json::Value::Array(notes)
        });
        let options = RememberOptions {
            burst_items: 2,
            limit: Some(3),
        };
        let first = remember(&llm, &mut history, None, &options, &NoProgress).unwrap();
        assert_eq!(first.total, 4);
        assert_eq!(first.skipped, 1, "gmail");
        assert_eq!(first.read, 2);
        assert_eq!(
            first.unread, 1,
            "the limit leaves the last session for later"
        );
        assert_eq!(first.added, 1);
        assert_eq!(first.retries, 1);
        let retry = llm.prompts_with("Your note \"");
        assert!(retry[0].contains("does not say 25"), "{}", retry[0]);
        // Resumed: only the unread entry is read, and its note strengthens the statement.
        let second = read_the_rest(&llm, &mut history);
        assert_eq!((second.read, second.skipped, second.unread), (1, 0, 0));
        assert_eq!((second.added, second.strengthened), (0, 1));
        let memory = history.store().memory().unwrap();
        assert_eq!(memory.len(), 1);
        assert_eq!(memory[0].text, "Set aside 120 dollars for gear");
        let cited: Vec<i64> = memory[0].sessions.iter().map(|(id, _)| *id).collect();
        assert_eq!(cited, vec![ids[0], ids[3]]);
        // Nothing left: no call.
        let calls = llm.prompts().len();
        let third = read_the_rest(&llm, &mut history);
        assert_eq!(third.read + third.skipped, 0);
        assert_eq!(llm.prompts().len(), calls);

        // Forgetting one source keeps the statement; forgetting the last removes it.
        history.forget(&ForgetSelector::Entry(ids[0])).unwrap();
        let memory = history.store().memory().unwrap();
        assert_eq!(memory.len(), 1);
        assert_eq!(memory[0].sessions.len(), 1);
        history.forget(&ForgetSelector::Entry(ids[3])).unwrap();
        assert!(history.store().memory().unwrap().is_empty());
    }

    /// Reads the history into memory; chats need no model.
    fn read_chats(history: &mut History) {
        let llm = notes_model(|_| serde_json::json!([]));
        read_the_rest(&llm, history);
        assert!(llm.prompts().is_empty());
    }

    /// Stores a note in memory as the model would have made it from `session`.
    fn note(history: &mut History, text: &str, kind: &str, session: i64) {
        history
            .store_mut_for_profiles()
            .remember(
                "test",
                &[],
                &[],
                &[NewMemory {
                    key: statement_key(text),
                    text: text.into(),
                    kind: kind.into(),
                    session,
                }],
            )
            .unwrap();
    }

    /// A judge that gives P(yes) `yes` to the prompts `when` picks and 0.1 to the rest.
    fn judge_saying(yes: f32, when: impl Fn(&str) -> bool + Send + Sync + 'static) -> ScriptedLlm {
        ScriptedLlm::new(move |prompt| {
            let p = if when(prompt) { yes } else { 0.1 };
            format!(r#"{{"probabilities":[{p},{}]}}"#, 1.0 - p)
        })
    }

    /// What memory gives `query` with no embedder or facet lines.
    fn ask(
        judge: &ScriptedLlm,
        history: &History,
        query: &str,
        candidates: usize,
        threshold: f32,
    ) -> FromMemory {
        let you = You::load(history.store()).unwrap();
        let question = relevance::Question {
            text: query,
            facets: &[],
        };
        relevant(
            judge,
            history.store(),
            None,
            &you,
            question,
            candidates,
            threshold,
        )
        .unwrap()
    }

    #[test]
    fn a_question_gets_the_remembered_statements_judged_relevant() {
        let (_dir, mut history, ids) = history_of(&[
            session(
                Kind::Chat,
                "Knee",
                "My right knee is irritated, patellofemoral.",
                0,
            ),
            session(Kind::Chat, "Gift", "I need a birthday gift for my dad", 1),
        ]);
        read_chats(&mut history);
        assert_eq!(history.store().memory().unwrap().len(), 2);
        // The judge: yes for the knee on the running question, no otherwise.
        // A sentence the person wrote is shown as what they told the model, in quotes.
        let judge = judge_saying(0.9, |prompt| {
            prompt.contains("running shoes")
                && prompt.contains("What they told you:")
                && prompt.ends_with("\"My right knee is irritated, patellofemoral.\"")
        });
        let got = ask(
            &judge,
            &history,
            "Which running shoes should I buy?",
            MEMORY_CANDIDATES,
            relevance::RELEVANCE_THRESHOLD,
        );
        assert_eq!(got.asked, 2);
        assert_eq!(got.phrases.len(), 1, "{:?}", got.phrases);
        assert_eq!(
            got.phrases[0].text,
            "My right knee is irritated, patellofemoral."
        );
        assert_eq!(got.phrases[0].session, ids[0]);
        // How the person likes answers is judged whatever the embedding says, and first.
        note(
            &mut history,
            "Wants short bullet points",
            "presentation",
            ids[1],
        );
        let got = ask(&judge, &history, "Which running shoes?", 1, 0.25);
        assert_eq!(got.asked, 1);
        let judged = judge.prompts();
        assert!(
            judged
                .last()
                .unwrap()
                .ends_with("Wants short bullet points"),
            "{:?}",
            judged.last()
        );
        // A statement the user deleted is not judged at all.
        let knee = "My right knee is irritated, patellofemoral.";
        history
            .store()
            .hide_statement(&statement_key(knee), knee, &[ids[0]])
            .unwrap();
        let got = ask(&judge, &history, "Which running shoes?", 24, 0.25);
        assert_eq!(got.asked, 2, "the gift and the bullet points");
        assert!(got.phrases.is_empty());
    }

    #[test]
    fn a_sentence_in_the_first_person_is_what_the_person_said_and_a_note_is_not() {
        for said in [
            "I have about 600 pounds left from this year's pension lump sum.",
            "My shop is a one-car garage, about 3 by 6 metres.",
            "Please keep replies to me short, I'm on five minute breaks.",
            "We fly with our two year old in March.",
        ] {
            assert!(speaks_of_self(said), "{said}");
        }
        for note in [
            "Is interested in prime lens",
            "Has a budget of 120 dollars",
            "Wants short bullet points",
            "Imagine a kitchen with an island",
        ] {
            assert!(!speaks_of_self(note), "{note}");
        }
    }

    /// The budgets the person wrote, judged for `query` by `judge` at the memory bar.
    fn budgets_for(judge: &ScriptedLlm, history: &History, query: &str) -> FromMemory {
        let you = You::load(history.store()).unwrap();
        let question = relevance::Question {
            text: query,
            facets: &[],
        };
        said_budgets(
            judge,
            history.store(),
            None,
            &you,
            question,
            relevance::RELEVANCE_THRESHOLD + relevance::PROBE_ONLY_MARGIN,
        )
        .unwrap()
    }

    #[test]
    fn a_budget_the_person_wrote_is_judged_for_the_question_above_the_said_bar() {
        let (_dir, history, ids) = history_of(&[
            session(
                Kind::Chat,
                "Ears",
                "I can spend 200 euros on my ears this year. I cook most evenings.",
                0,
            ),
            session(Kind::Chat, "Bakery", "My average sale is about 6 euros.", 1),
            search("earplugs 200 euros budget", 2),
        ]);
        // Only the chat sentence that says what she can spend is asked about, once.
        let judge = judge_saying(0.7, |prompt| prompt.contains("earplugs"));
        let got = budgets_for(&judge, &history, "What earplugs should I use?");
        assert_eq!(got.asked, 1);
        let kept: Vec<(&str, i64)> = got
            .phrases
            .iter()
            .map(|p| (p.text.as_str(), p.session))
            .collect();
        assert_eq!(
            kept,
            vec![("I can spend 200 euros on my ears this year.", ids[0])]
        );
        assert_eq!(got.phrases[0].kind, PhraseKind::Constraint);
        // Another question: left out. And a score between the said bar (0.42) and the budget
        // bar (0.50) is not enough: 0.56 less the contrast's 0.10 is 0.46.
        let got = budgets_for(&judge, &history, "Which laptop should I buy?");
        assert!(got.phrases.is_empty());
        let judge = judge_saying(0.56, |prompt| prompt.contains("earplugs"));
        let got = budgets_for(&judge, &history, "What earplugs should I use?");
        assert!(got.phrases.is_empty());
    }

    #[test]
    fn what_the_person_said_is_judged_at_its_own_bar_and_a_note_at_the_statement_bar() {
        let (_dir, mut history, ids) = history_of(&[session(
            Kind::Chat,
            "Budget",
            "I have about 600 pounds left from my pension lump sum.",
            0,
        )]);
        read_chats(&mut history);
        note(
            &mut history,
            "Has a budget of 600 pounds",
            "constraint",
            ids[0],
        );
        // The same score for both: P(yes) 0.48 for the question, 0.10 for the contrast ones.
        let judge = judge_saying(0.48, |prompt| prompt.contains("laptop"));
        let got = ask(
            &judge,
            &history,
            "Which laptop should I buy?",
            MEMORY_CANDIDATES,
            relevance::RELEVANCE_THRESHOLD + relevance::PROBE_ONLY_MARGIN,
        );
        assert_eq!(got.asked, 2);
        // 0.38 passes the note's bar (0.35, with no facet lines) and fails the sentence's
        // (0.42, calibrated on what people said).
        let texts: Vec<&str> = got.phrases.iter().map(|p| p.text.as_str()).collect();
        assert_eq!(texts, vec!["Has a budget of 600 pounds"], "{texts:?}");
        let prompts = judge.prompts();
        assert!(prompts
            .iter()
            .any(|p| p.contains("What they told you:") && p.contains("600 pounds left")));
        assert!(prompts.iter().any(
            |p| !p.contains("What they told you:") && p.ends_with("Has a budget of 600 pounds")
        ));
    }

    #[test]
    fn a_note_close_to_a_facet_line_is_judged_before_one_close_to_the_question() {
        let (_dir, mut history, _ids) = history_of(&[
            session(
                Kind::Chat,
                "Knee",
                "My right knee is irritated after shifts.",
                0,
            ),
            session(
                Kind::Chat,
                "Trail",
                "I want running shoes with grip for a trail race next month.",
                1,
            ),
        ]);
        read_chats(&mut history);
        assert_eq!(history.store().memory().unwrap().len(), 2);
        let judge = ScriptedLlm::new(|_| r#"{"probabilities":[0.5,0.5]}"#.to_string());
        let you = You::load(history.store()).unwrap();
        let one = |facets: &[String]| {
            relevant(
                &judge,
                history.store(),
                Some(&crate::test_support::WordsEmbedder),
                &you,
                relevance::Question {
                    text: "Which running shoes should I buy?",
                    facets,
                },
                1,
                -1.0,
            )
            .unwrap()
            .phrases
            .into_iter()
            .map(|p| p.text)
            .collect::<Vec<_>>()
        };
        // Without facet lines the note sharing the question's words is the one judged.
        assert_eq!(
            one(&[]),
            vec!["I want running shoes with grip for a trail race next month."]
        );
        // With one, the note on the situation it guesses comes first.
        let facets = vec!["my right knee is irritated".to_string()];
        assert_eq!(
            one(&facets),
            vec!["My right knee is irritated after shifts."]
        );
    }
}
