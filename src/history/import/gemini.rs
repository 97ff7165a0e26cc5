//! Google Takeout, My Activity / Gemini Apps (`My Activity/Gemini Apps/MyActivity.json`).
//!
//! One array item per activity, newest first. A turn is an item titled `Prompted <prompt>`,
//! with Gemini's answer as HTML in `safeHtmlItem[{html}]` (1–4 chunks, concatenated and turned
//! into plain text). Everything else ("Used Gemini Apps", "Created Gemini Canvas titled …",
//! "Gave feedback: …", "Selected preferred draft") is not a turn and is skipped. Only the English
//! verb is recognised: no localised export has been seen, and guessing a German verb could turn
//! a non-turn record into a fake prompt.
//!
//! Turns are put back into conversations:
//! - `details[{name, url}]` with `https://gemini.google.com/app/<hex>` names the conversation.
//!   After branching one turn may carry 2–4 such URLs: the FIRST is used, always, so a turn
//!   lands in exactly one conversation.
//! - Older exports have no `details`: turns without an id are grouped by time, a new
//!   conversation starting after 30 minutes without a turn. Their `external_id` is
//!   `t:<RFC 3339 time of the first turn>`, stable when a later export adds turns.
//! - Inside a conversation turns are ordered by time ascending (the export is newest first).
//!
//! `subtitles` mixes citations (web pages, with an http(s) URL), Gem notices ("X was used in
//! this chat") and attachments (`Attached 1 file.` followed by `-  name.png`). Citations and Gem
//! notices are left out of the text (pages the answer cited are not the user's words);
//! attachment names are appended to the user's turn as `Attached: a.png, b.pdf`, and the
//! `Attached N files.` tail Takeout adds to some titles is cut from the prompt.
//!
//! Gemini files are small (tens of MB at most), so turns are grouped in memory.

use std::cmp::Reverse;
use std::collections::HashMap;

use chrono::{DateTime, SecondsFormat, Utc};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::json::{for_each_array_item, Element};
use super::takeout_search::{clean_text, is_odd_space, lenient, Lenient};
use super::takeout_search_html::html_to_text;
use super::time::parse_rfc3339;
use super::{ImportError, InputFile, Sink};
use crate::history::entry::{Entry, HistorySource, Kind, Record, Turn};

/// Turns without a conversation id further apart than this start a new conversation.
const GAP_SECONDS: i64 = 30 * 60;
/// Conversation titles made from the first prompt are cut to about this many characters.
const TITLE_CHARS: usize = 80;

pub fn import(file: &InputFile, sink: &mut Sink<'_>) -> Result<(), ImportError> {
    let mut turns = Vec::new();
    file.with_reader(|r| {
        for_each_array_item::<Element<Item>, _>(file, r, |index, item| match item.0 {
            Ok(item) => {
                turns.extend(item_to_turn(index, item));
                Ok(())
            }
            Err(reason) => sink(Element::<Item>::skipped(index, reason)),
        })
    })?;
    for conversation in group(turns) {
        sink(Record::Entry(conversation))?;
    }
    Ok(())
}

#[derive(Debug, Default, Deserialize)]
struct Item {
    #[serde(default, deserialize_with = "lenient")]
    header: Option<String>,
    // Not lenient: the title is the prompt itself, so a title of the wrong type makes the item
    // unreadable, and the import report counts it and says why.
    #[serde(default)]
    title: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    time: Option<String>,
    #[serde(default, rename = "safeHtmlItem", deserialize_with = "lenient")]
    safe_html: Option<Vec<Lenient<HtmlChunk>>>,
    #[serde(default, deserialize_with = "lenient")]
    subtitles: Option<Vec<Lenient<Link>>>,
    #[serde(default, deserialize_with = "lenient")]
    details: Option<Vec<Lenient<Link>>>,
}

#[derive(Debug, Default, Deserialize)]
struct HtmlChunk {
    #[serde(default, deserialize_with = "lenient")]
    html: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct Link {
    #[serde(default, deserialize_with = "lenient")]
    name: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    url: Option<String>,
}

/// One prompt and its answer, before grouping.
#[derive(Debug)]
struct GeminiTurn {
    /// Position in the file, to keep the order of turns with equal times.
    index: usize,
    at: Option<DateTime<Utc>>,
    /// What the user wrote, attachment names appended.
    user: String,
    answer: String,
    conversation: Option<String>,
}

fn item_to_turn(index: usize, item: Item) -> Option<GeminiTurn> {
    let is_gemini = |s: &str| {
        let s = s.to_lowercase();
        s.contains("gemini") || s.contains("bard")
    };
    if item.header.as_deref().is_some_and(|h| !is_gemini(h)) {
        return None;
    }
    let title = spaces_to_plain(item.title.as_deref()?);
    let prompt = title.strip_prefix("Prompted")?;
    if !(prompt.is_empty() || prompt.starts_with(char::is_whitespace)) {
        return None;
    }
    let prompt = strip_attached_tail(prompt.trim());
    let links = |v: Option<Vec<Lenient<Link>>>| -> Vec<Link> {
        v.unwrap_or_default()
            .into_iter()
            .filter_map(|l| l.0)
            .collect()
    };
    let attachments: Vec<String> = links(item.subtitles)
        .into_iter()
        .filter_map(|l| {
            let name = spaces_to_plain(l.name.as_deref()?);
            let file = name.strip_prefix('-')?.trim();
            (!file.is_empty()).then(|| file.to_string())
        })
        .collect();
    let mut user = prompt.to_string();
    if !attachments.is_empty() {
        if !user.is_empty() {
            user.push_str("\n\n");
        }
        user.push_str("Attached: ");
        user.push_str(&attachments.join(", "));
    }
    if user.is_empty() {
        return None;
    }
    let html: String = item
        .safe_html
        .unwrap_or_default()
        .into_iter()
        .filter_map(|c| c.0?.html)
        .collect();
    let conversation = links(item.details)
        .into_iter()
        .find_map(|l| conversation_id(l.url.as_deref()?));
    Some(GeminiTurn {
        index,
        at: item.time.as_deref().and_then(parse_rfc3339),
        user,
        answer: html_to_text(&html),
        conversation,
    })
}

/// No-break and em spaces become plain spaces; line breaks in a prompt are kept.
fn spaces_to_plain(s: &str) -> String {
    s.chars()
        .map(|c| if is_odd_space(c) { ' ' } else { c })
        .collect::<String>()
        .trim()
        .to_string()
}

/// Cuts a trailing "Attached 2 files." (Takeout appends it to the prompt of a turn with
/// attachments; the names come from `subtitles`).
fn strip_attached_tail(prompt: &str) -> &str {
    let Some(at) = prompt.rfind("Attached ") else {
        return prompt;
    };
    let tail = prompt.get(at + "Attached ".len()..).unwrap_or_default();
    let Some((count, word)) = tail.split_once(' ') else {
        return prompt;
    };
    let counted = !count.is_empty() && count.bytes().all(|b| b.is_ascii_digit());
    if counted && matches!(word.trim_end(), "file." | "files." | "file" | "files") {
        prompt.get(..at).unwrap_or(prompt).trim_end()
    } else {
        prompt
    }
}

/// The id in `https://gemini.google.com/app/<hex>` (query and fragment ignored).
fn conversation_id(url: &str) -> Option<String> {
    let rest = url.trim().split_once("gemini.google.com/app/")?.1;
    let id = rest.split(['?', '#', '/']).next()?;
    let valid = (8..=64).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_hexdigit());
    valid.then(|| id.to_ascii_lowercase())
}

/// Groups turns into conversations: by id, else by time proximity. Conversations come out
/// oldest first; untimed ones last.
fn group(turns: Vec<GeminiTurn>) -> Vec<Entry> {
    let mut by_id: HashMap<String, Vec<GeminiTurn>> = HashMap::new();
    let mut loose = Vec::new();
    for turn in turns {
        match turn.conversation.clone() {
            Some(id) => by_id.entry(id).or_default().push(turn),
            None => loose.push(turn),
        }
    }
    let mut sessions: Vec<Entry> = by_id
        .into_iter()
        .map(|(id, turns)| conversation(Some(id), turns))
        .collect();

    sort_turns(&mut loose);
    let mut current: Vec<GeminiTurn> = Vec::new();
    for turn in loose {
        let joins = match (current.last().and_then(|t| t.at), turn.at) {
            (Some(prev), Some(at)) => (at - prev).num_seconds() <= GAP_SECONDS,
            _ => false,
        };
        if !joins && !current.is_empty() {
            sessions.push(conversation(None, std::mem::take(&mut current)));
        }
        current.push(turn);
    }
    if !current.is_empty() {
        sessions.push(conversation(None, current));
    }
    sessions.sort_by(|a, b| {
        (a.started_at.is_none(), a.started_at, &a.external_id).cmp(&(
            b.started_at.is_none(),
            b.started_at,
            &b.external_id,
        ))
    });
    sessions
}

/// Time ascending; equal or missing times keep the order the user saw, which is the file's
/// order reversed (the export is newest first). Untimed turns go last.
fn sort_turns(turns: &mut [GeminiTurn]) {
    turns.sort_by_key(|t| (t.at.is_none(), t.at, Reverse(t.index)));
}

fn conversation(id: Option<String>, mut turns: Vec<GeminiTurn>) -> Entry {
    sort_turns(&mut turns);
    let started_at = turns.iter().find_map(|t| t.at);
    let first_user = turns.first().map(|t| t.user.as_str()).unwrap_or_default();
    let external_id = match (&id, started_at) {
        (Some(id), _) => id.clone(),
        (None, Some(at)) => format!("t:{}", at.to_rfc3339_opts(SecondsFormat::Millis, true)),
        // No id and no time: the prompt itself is the only stable identity.
        (None, None) => format!("p:{}", &hex::encode(Sha256::digest(first_user))[..16]),
    };
    let time_note = turns
        .iter()
        .any(|t| t.at.is_none())
        .then(|| "the export gives no readable time for some turns".to_string());
    Entry {
        source: HistorySource::Gemini,
        kind: Kind::Chat,
        title: title_from(first_user),
        url: id.map(|id| format!("https://gemini.google.com/app/{id}")),
        external_id: Some(external_id),
        started_at,
        time_note,
        turns: turns
            .into_iter()
            .flat_map(|t| {
                let answer = (!t.answer.is_empty()).then(|| Turn::assistant(t.answer, t.at));
                std::iter::once(Turn::user(t.user, t.at)).chain(answer)
            })
            .collect(),
    }
}

/// Gemini conversations have no title in the export: the first prompt, on one line, cut at a
/// word boundary near [`TITLE_CHARS`].
fn title_from(prompt: &str) -> String {
    let line = clean_text(prompt);
    if line.chars().count() <= TITLE_CHARS {
        return line;
    }
    let cut: String = line.chars().take(TITLE_CHARS).collect();
    let cut = match cut.rfind(' ') {
        Some(space) if space >= TITLE_CHARS / 2 => cut.get(..space).unwrap_or(&cut),
        _ => &cut,
    };
    format!("{}…", cut.trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(json: &str) -> Option<GeminiTurn> {
        let item: Element<Item> = serde_json::from_str(json).unwrap();
        item_to_turn(0, item.0.unwrap())
    }

    #[test]
    fn only_prompts_are_turns() {
        assert!(item(r#"{"title":"Prompted hi","time":"2024-01-01T00:00:00Z"}"#).is_some());
        for title in [
            "Used Gemini Apps",
            "Created Gemini Canvas titled Trip",
            "Gave feedback: Good response",
            "Selected preferred draft",
            "Promptedx",
            "Prompted ",
        ] {
            assert!(
                item(&format!(r#"{{"title":{title:?}}}"#)).is_none(),
                "{title}"
            );
        }
        assert!(item(r#"{"header":"YouTube","title":"Prompted hi"}"#).is_none());
    }

    #[test]
    fn attachments_and_citations() {
        let t = item(
            r#"{"title":"Prompted summarise this Attached 2 files.",
                "subtitles":[{"name":"Attached 2 files."},{"name":"-  notes.pdf","url":"notes-1.pdf"},
                             {"name":"-\u00a0 photo.png"},{"name":"Wikipedia","url":"https://en.wikipedia.org/wiki/X"}]}"#,
        )
        .unwrap();
        assert_eq!(t.user, "summarise this\n\nAttached: notes.pdf, photo.png");
        // Only attachments: still a turn.
        let t = item(r#"{"title":"Prompted Attached 1 file.","subtitles":[{"name":"-  a.png"}]}"#)
            .unwrap();
        assert_eq!(t.user, "Attached: a.png");
        assert_eq!(
            strip_attached_tail("Attached 3 files to the email?"),
            "Attached 3 files to the email?"
        );
    }

    #[test]
    fn conversation_ids() {
        assert_eq!(
            conversation_id("https://gemini.google.com/app/0123456789ABCDEF?hl=de").as_deref(),
            Some("0123456789abcdef")
        );
        assert_eq!(conversation_id("https://gemini.google.com/app/"), None);
        assert_eq!(
            conversation_id("https://gemini.google.com/app/not-hex-at-all"),
            None
        );
        assert_eq!(conversation_id("https://example.com/"), None);
    }

    #[test]
    fn titles_are_cut_at_a_word() {
        assert_eq!(title_from("short\nprompt"), "short prompt");
        let long = "word ".repeat(40);
        let title = title_from(&long);
        assert!(title.ends_with("word…"), "{title}");
        assert!(title.chars().count() <= TITLE_CHARS + 1);
        let unbroken = "x".repeat(200);
        assert_eq!(title_from(&unbroken).chars().count(), TITLE_CHARS + 1);
    }

    #[test]
    fn untimed_turns_without_ids_stay_apart() {
        let turn = |index, user: &str| GeminiTurn {
            index,
            at: None,
            user: user.into(),
            answer: String::new(),
            conversation: None,
        };
        let sessions = group(vec![turn(0, "a"), turn(1, "b")]);
        assert_eq!(sessions.len(), 2);
        assert!(sessions.iter().all(|s| s.time_note.is_some()));
        assert!(sessions[0]
            .external_id
            .as_deref()
            .unwrap()
            .starts_with("p:"));
    }
}
