//! ChatGPT's `conversations.json`, and the split `conversations-000.json`, `-001`, … of newer
//! exports (each is a file of the same shape): a top-level array of conversations, streamed one
//! at a time.
//!
//! A conversation is `{id | conversation_id, title, create_time, update_time, mapping,
//! current_node}` where `mapping` is a tree of `{message | null, parent, children}` nodes: edits
//! and regenerations branch it. Quirks handled here (each has a test):
//!
//! * The thread the user saw is `current_node` followed up through `parent`s, then reversed.
//!   When `current_node` is missing or dangling, the thread is rebuilt from the root by always
//!   following the latest-created child (the newest edit or regeneration) down to a leaf.
//! * The parent chain may be broken: a cycle or a dangling parent ends the walk instead of
//!   looping or failing.
//! * Only `user` and `assistant` messages become turns; `system` and `tool` messages do not.
//!   Of the content types, `text` and `multimodal_text` (string parts kept, an image pointer
//!   becomes `[image]`, a voice transcription keeps its text) and the assistant's `code` become
//!   turns; `execution_output`, `tether_quote`, `tether_browsing_display`, `thoughts`,
//!   `reasoning_recap` and unknown types are tool output or hidden reasoning, not turns.
//! * `user_editable_context` (and the older system message carrying
//!   `metadata.user_context_message_data`) are the user's hidden custom instructions: one
//!   [`Signal`] per distinct text in the file, never a turn. OpenAI's boilerplate around the
//!   user's own words (text outside the ``` fences) is dropped.
//! * Messages with `metadata.is_visually_hidden_from_conversation` are not turns; empty
//!   messages are skipped; a conversation with no visible turn is skipped.
//! * `create_time` may be `null` or `0` (unknown); titles may be `null` (the first user message
//!   stands in); the id may be under `id` or `conversation_id`.
//! * Every field is read leniently: a missing or mistyped field loses that field, not the
//!   file. Broken JSON (truncation, invalid UTF-8) fails with the item, line and column.

use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use super::json::for_each_array_item;
use super::time::from_unix_seconds_f64;
use super::{ImportError, InputFile, Sink};
use crate::history::entry::{
    Entry, HistorySource, Kind, Record, Signal, SignalKind, Turn, TurnRole,
};

/// Titles made from a first message are cut to about this many characters.
const TITLE_CHARS: usize = 80;

#[derive(Deserialize, Default)]
#[serde(default)]
struct Conversation {
    #[serde(deserialize_with = "lenient_id")]
    id: Option<String>,
    #[serde(deserialize_with = "lenient_id")]
    conversation_id: Option<String>,
    #[serde(deserialize_with = "lenient")]
    title: Option<String>,
    #[serde(deserialize_with = "lenient_seconds")]
    create_time: Option<f64>,
    #[serde(deserialize_with = "lenient_seconds")]
    update_time: Option<f64>,
    #[serde(deserialize_with = "lenient_id")]
    current_node: Option<String>,
    // Not lenient: a mapping that is not an object is a broken file, and going through a
    // `Value` would double the work on the largest field.
    mapping: Option<HashMap<String, Node>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Node {
    message: Option<Message>,
    #[serde(deserialize_with = "lenient_id")]
    parent: Option<String>,
    #[serde(deserialize_with = "lenient")]
    children: Option<Vec<String>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Message {
    #[serde(deserialize_with = "lenient")]
    author: Option<Author>,
    #[serde(deserialize_with = "lenient")]
    content: Option<Content>,
    #[serde(deserialize_with = "lenient_seconds")]
    create_time: Option<f64>,
    #[serde(deserialize_with = "lenient")]
    metadata: Option<Metadata>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Author {
    #[serde(deserialize_with = "lenient")]
    role: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Content {
    #[serde(deserialize_with = "lenient")]
    content_type: Option<String>,
    #[serde(deserialize_with = "lenient")]
    parts: Option<Vec<Value>>,
    #[serde(deserialize_with = "lenient")]
    text: Option<String>,
    #[serde(deserialize_with = "lenient")]
    user_profile: Option<String>,
    #[serde(deserialize_with = "lenient")]
    user_instructions: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Metadata {
    #[serde(deserialize_with = "lenient")]
    is_visually_hidden_from_conversation: Option<bool>,
    #[serde(deserialize_with = "lenient")]
    is_user_system_message: Option<bool>,
    #[serde(deserialize_with = "lenient")]
    user_context_message_data: Option<UserContext>,
}

/// Custom instructions as exports from 2023 carry them, on a hidden system message.
#[derive(Deserialize, Default)]
#[serde(default)]
struct UserContext {
    #[serde(deserialize_with = "lenient")]
    about_user_message: Option<String>,
    #[serde(deserialize_with = "lenient")]
    about_model_message: Option<String>,
}

/// Reads any JSON value and keeps it only if it has the expected shape: a mistyped field in
/// one conversation loses that field, not the whole file.
pub(super) fn lenient<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    let value = Value::deserialize(d)?;
    Ok(serde_json::from_value(value).ok())
}

/// An id: a string, or a number written as one.
pub(super) fn lenient_id<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(s) => Some(s),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    })
}

/// Seconds since the Unix epoch as a number, or a string holding one.
fn lenient_seconds<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    })
}

/// Reads a ChatGPT conversations file, handing each conversation with a visible turn to `sink`
/// as a chat entry, and each distinct set of custom instructions as a signal.
pub fn import(file: &InputFile, sink: &mut Sink<'_>) -> Result<(), ImportError> {
    let mut seen_instructions = HashSet::new();
    file.with_reader(|reader| {
        for_each_array_item::<Conversation, _>(file, reader, |index, conversation| {
            handle(file, index, conversation, &mut seen_instructions, sink)
        })
    })?;
    Ok(())
}

fn handle(
    file: &InputFile,
    index: usize,
    conversation: Conversation,
    seen_instructions: &mut HashSet<String>,
    sink: &mut Sink<'_>,
) -> Result<(), ImportError> {
    let mapping = conversation.mapping.unwrap_or_default();
    let created = conversation.create_time.and_then(from_unix_seconds_f64);

    for (text, at) in custom_instructions(&mapping) {
        if seen_instructions.insert(text.clone()) {
            sink(Record::Signal(Signal {
                source: HistorySource::Chatgpt,
                kind: SignalKind::CustomInstructions,
                text,
                at: at.or(created),
            }))?;
        }
    }

    let id = non_empty(conversation.id).or_else(|| non_empty(conversation.conversation_id));
    let thread = thread(&mapping, conversation.current_node.as_deref());
    if thread.is_empty() && !mapping.is_empty() {
        tracing::warn!(
            file = file.display(),
            place = %format!("conversation {index} (id {})", id.as_deref().unwrap_or("?")),
            "skipped: its message tree has no root (a cycle in the parent links?)"
        );
    }
    let turns: Vec<Turn> = thread
        .into_iter()
        .filter_map(|node| node.message.as_ref().and_then(turn))
        .collect();
    if turns.is_empty() {
        return Ok(());
    }

    let updated = conversation.update_time.and_then(from_unix_seconds_f64);
    let (started_at, time_note) = start_time(&turns, created, updated);
    let title = non_empty(conversation.title.map(|t| clean_text(&t)))
        .unwrap_or_else(|| title_from_turns(&turns));
    sink(Record::Entry(Entry {
        source: HistorySource::Chatgpt,
        kind: Kind::Chat,
        title,
        url: id.as_ref().map(|id| format!("https://chatgpt.com/c/{id}")),
        external_id: id,
        started_at,
        time_note,
        turns,
    }))
}

/// The nodes of the thread the user saw, oldest first.
fn thread<'m>(mapping: &'m HashMap<String, Node>, current: Option<&str>) -> Vec<&'m Node> {
    let leaf = match current {
        Some(id) if mapping.contains_key(id) => Some(id),
        _ => latest_leaf(mapping),
    };
    let mut path = Vec::new();
    let mut visited = HashSet::new();
    let mut next = leaf;
    while let Some(id) = next {
        // A cycle or a parent missing from the mapping ends the walk.
        if !visited.insert(id) {
            break;
        }
        let Some(node) = mapping.get(id) else { break };
        path.push(node);
        next = node.parent.as_deref();
    }
    path.reverse();
    path
}

/// Without a usable `current_node`: the leaf reached from the root by always following the
/// latest-created child, i.e. the newest edit or regeneration at every branch. Children are
/// found through `parent` links (the same links the walk back up uses); a child without a time
/// counts as older, and ties go to the later position in the parent's `children`, then the id.
fn latest_leaf(mapping: &HashMap<String, Node>) -> Option<&str> {
    let mut children: HashMap<&str, Vec<&str>> = HashMap::new();
    let mut roots = Vec::new();
    for (id, node) in mapping {
        match node.parent.as_deref() {
            Some(parent) if parent != id && mapping.contains_key(parent) => {
                children.entry(parent).or_default().push(id)
            }
            _ => roots.push(id.as_str()),
        }
    }
    // Usually one root; orphaned subtrees (a parent missing from the mapping) add more. Take
    // the root whose branch reaches the latest message.
    roots.sort_unstable();
    roots
        .into_iter()
        .map(|root| {
            let mut visited = HashSet::new();
            let mut node = root;
            let mut latest = f64::NEG_INFINITY;
            loop {
                visited.insert(node);
                latest = latest.max(node_time(mapping, node));
                match children
                    .get(node)
                    .and_then(|c| latest_child(mapping, node, c, &visited))
                {
                    Some(child) => node = child,
                    None => break,
                }
            }
            (latest, visited.len(), node)
        })
        .max_by(|(ta, la, _), (tb, lb, _)| ta.total_cmp(tb).then(la.cmp(lb)))
        .map(|(_, _, leaf)| leaf)
}

fn node_time(mapping: &HashMap<String, Node>, id: &str) -> f64 {
    mapping
        .get(id)
        .and_then(|n| n.message.as_ref())
        .and_then(|m| m.create_time)
        .filter(|t| t.is_finite() && *t > 0.0)
        .unwrap_or(f64::NEG_INFINITY)
}

/// The latest-created of `candidates`, the children of `parent`, not yet visited.
fn latest_child<'m>(
    mapping: &HashMap<String, Node>,
    parent: &str,
    candidates: &[&'m str],
    visited: &HashSet<&str>,
) -> Option<&'m str> {
    let key = |id: &str| {
        let time = node_time(mapping, id);
        let position = mapping
            .get(parent)
            .and_then(|p| p.children.as_ref())
            .and_then(|c| c.iter().position(|c| c == id));
        (time, position)
    };
    candidates
        .iter()
        .copied()
        .filter(|c| !visited.contains(c))
        .max_by(|a, b| {
            let (ta, pa) = key(a);
            let (tb, pb) = key(b);
            ta.total_cmp(&tb).then(pa.cmp(&pb)).then_with(|| a.cmp(b))
        })
}

/// The turn a message shows, if it is a visible user or assistant message with text.
fn turn(message: &Message) -> Option<Turn> {
    let role = match message.author.as_ref()?.role.as_deref()? {
        "user" => TurnRole::User,
        "assistant" => TurnRole::Assistant,
        // `system` and `tool` (code output, browsing results, …) are not what the user said
        // or was answered.
        _ => return None,
    };
    if let Some(meta) = &message.metadata {
        if meta.is_visually_hidden_from_conversation == Some(true)
            || meta.is_user_system_message == Some(true)
        {
            return None;
        }
    }
    let content = message.content.as_ref()?;
    let text = match content.content_type.as_deref().unwrap_or("text") {
        "text" | "multimodal_text" => parts_text(content.parts.as_deref().unwrap_or_default()),
        // The assistant's code (what it ran, or a tool call) is part of its answer.
        "code" => content.text.clone().unwrap_or_default(),
        // execution_output, tether_quote, tether_browsing_display, thoughts, reasoning_recap,
        // user_editable_context, system_error and future types: not the visible exchange.
        _ => return None,
    };
    let text = clean_text(&text);
    if text.is_empty() {
        return None;
    }
    Some(Turn {
        role,
        text,
        at: message.create_time.and_then(from_unix_seconds_f64),
    })
}

/// The text of `parts`: strings as they are, `[image]` for an image, the transcript of a voice
/// message; other objects (audio and video pointers) are dropped.
fn parts_text(parts: &[Value]) -> String {
    let mut pieces: Vec<String> = Vec::new();
    for part in parts {
        match part {
            Value::String(s) => pieces.push(s.clone()),
            Value::Object(obj) => {
                let kind = obj.get("content_type").and_then(Value::as_str);
                if kind == Some("image_asset_pointer") {
                    pieces.push("[image]".into());
                } else if let Some(text) = obj.get("text").and_then(Value::as_str) {
                    pieces.push(text.to_string());
                }
            }
            _ => {}
        }
    }
    pieces.retain(|p| !p.trim().is_empty());
    pieces.join("\n")
}

/// Every custom-instructions text in the conversation with its time, in a stable order (the
/// mapping is a hash map), each text once.
fn custom_instructions(mapping: &HashMap<String, Node>) -> Vec<(String, Option<DateTime<Utc>>)> {
    let mut found: Vec<(String, Option<DateTime<Utc>>)> = Vec::new();
    for node in mapping.values() {
        let Some(message) = &node.message else {
            continue;
        };
        let at = message.create_time.and_then(from_unix_seconds_f64);
        let mut pieces = Vec::new();
        if let Some(content) = &message.content {
            if content.content_type.as_deref() == Some("user_editable_context") {
                pieces.extend(content.user_profile.as_deref().map(users_words));
                pieces.extend(content.user_instructions.as_deref().map(users_words));
            }
        }
        if let Some(ctx) = message
            .metadata
            .as_ref()
            .and_then(|m| m.user_context_message_data.as_ref())
        {
            pieces.extend(ctx.about_user_message.as_deref().map(clean_text));
            pieces.extend(ctx.about_model_message.as_deref().map(clean_text));
        }
        pieces.retain(|p| !p.is_empty());
        if !pieces.is_empty() {
            found.push((pieces.join("\n\n"), at));
        }
    }
    // Earliest first (unknown times last), so a text's time is its first appearance.
    found.sort_by(|(ta, a), (tb, b)| match (a, b) {
        (Some(a), Some(b)) => a.cmp(b).then_with(|| ta.cmp(tb)),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => ta.cmp(tb),
    });
    let mut seen = HashSet::new();
    found.retain(|(text, _)| seen.insert(text.clone()));
    found
}

/// `user_profile` / `user_instructions` wrap the user's words in OpenAI's instructions to the
/// model ("The user provided the following information about themselves…```<words>```"): keep
/// what is inside the outermost fences, or the whole text when there are none.
fn users_words(text: &str) -> String {
    let inner = match (text.find("```"), text.rfind("```")) {
        (Some(start), Some(end)) if end > start => &text[start + 3..end],
        _ => text,
    };
    clean_text(inner)
}

/// `started_at` (the first turn's time, else the conversation's creation) and, when it is not
/// the conversation's real start, a note saying so.
pub(super) fn start_time(
    turns: &[Turn],
    created: Option<DateTime<Utc>>,
    updated: Option<DateTime<Utc>>,
) -> (Option<DateTime<Utc>>, Option<String>) {
    if let Some(at) = turns.first().and_then(|t| t.at).or(created) {
        return (Some(at), None);
    }
    if let Some(at) = turns.iter().filter_map(|t| t.at).min() {
        return (
            Some(at),
            Some("the first message has no time; this is the earliest message time".into()),
        );
    }
    if let Some(at) = updated {
        return (
            Some(at),
            Some("the export gives no start time; this is the conversation's last update".into()),
        );
    }
    (
        None,
        Some("the export gives no time for this conversation".into()),
    )
}

fn title_from_turns(turns: &[Turn]) -> String {
    turns
        .iter()
        .find(|t| t.role == TurnRole::User)
        .or(turns.first())
        .map(|t| title_from_message(&t.text))
        .unwrap_or_default()
}

/// A title made from a message: whitespace collapsed, cut at about [`TITLE_CHARS`] characters.
pub(super) fn title_from_message(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= TITLE_CHARS {
        return flat;
    }
    let mut cut: String = flat.chars().take(TITLE_CHARS - 1).collect();
    cut.truncate(cut.trim_end().len());
    cut.push('…');
    cut
}

/// Exports are untrusted plain text; no-break and em spaces become plain spaces.
pub(super) fn clean_text(text: &str) -> String {
    text.replace(['\u{a0}', '\u{2003}'], " ").trim().to_string()
}

pub(super) fn non_empty(s: Option<String>) -> Option<String> {
    s.map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn run(json: &str) -> Result<Vec<Record>, ImportError> {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(json.as_bytes()).unwrap();
        let input = InputFile::plain(f.path());
        let mut out = Vec::new();
        import(&input, &mut |r| {
            out.push(r);
            Ok(())
        })?;
        Ok(out)
    }

    fn sessions(records: &[Record]) -> Vec<&Entry> {
        records
            .iter()
            .filter_map(|r| match r {
                Record::Entry(s) => Some(s),
                Record::Signal(_) | Record::Skipped { .. } => None,
            })
            .collect()
    }

    fn texts(s: &Entry) -> Vec<&str> {
        s.turns.iter().map(|t| t.text.as_str()).collect()
    }

    /// A node as JSON: `(id, parent, role, text, time)`.
    fn node(id: &str, parent: Option<&str>, role: &str, text: &str, time: f64) -> String {
        let parent = parent.map_or("null".to_string(), |p| format!("{p:?}"));
        format!(
            r#""{id}": {{"id": "{id}", "parent": {parent}, "children": [],
                "message": {{"author": {{"role": "{role}"}}, "create_time": {time},
                "content": {{"content_type": "text", "parts": [{text:?}]}}}}}}"#
        )
    }

    #[test]
    fn parent_cycle_ends_the_walk() {
        let json = format!(
            r#"[{{"id": "c", "title": "loop", "current_node": "b", "mapping": {{{}, {}}}}}]"#,
            node("a", Some("b"), "user", "question", 1.0),
            node("b", Some("a"), "assistant", "answer", 2.0),
        );
        let records = run(&json).unwrap();
        let s = sessions(&records);
        assert_eq!(s.len(), 1);
        assert_eq!(texts(s[0]), ["question", "answer"]);
    }

    #[test]
    fn cycle_without_root_and_without_current_node_is_skipped() {
        let json = format!(
            r#"[{{"id": "c", "title": "loop", "mapping": {{{}, {}}}}}]"#,
            node("a", Some("b"), "user", "question", 1.0),
            node("b", Some("a"), "assistant", "answer", 2.0),
        );
        assert!(run(&json).unwrap().is_empty());
    }

    #[test]
    fn self_parent_is_a_root() {
        let json = format!(
            r#"[{{"id": "c", "mapping": {{{}, {}}}}}]"#,
            node("a", Some("a"), "user", "question", 1.0),
            node("b", Some("a"), "assistant", "answer", 2.0),
        );
        let records = run(&json).unwrap();
        assert_eq!(texts(sessions(&records)[0]), ["question", "answer"]);
    }

    #[test]
    fn fallback_follows_latest_child_by_time_then_position() {
        // Two regenerations without times: the later one in `children` wins.
        let json = r#"[{"id": "c", "mapping": {
            "r": {"parent": null, "children": ["u"], "message": null},
            "u": {"parent": "r", "children": ["a1", "a2"], "message": {"author": {"role": "user"}, "content": {"parts": ["q"]}}},
            "a2": {"parent": "u", "message": {"author": {"role": "assistant"}, "content": {"content_type": "text", "parts": ["second"]}}},
            "a1": {"parent": "u", "message": {"author": {"role": "assistant"}, "content": {"content_type": "text", "parts": ["first"]}}}
        }}]"#;
        let records = run(json).unwrap();
        let s = sessions(&records);
        assert_eq!(texts(s[0]), ["q", "second"]);
        assert_eq!(s[0].started_at, None);
        assert!(s[0].time_note.is_some());
    }

    #[test]
    fn mistyped_fields_lose_the_field_not_the_file() {
        let json = r#"[{"id": 42, "title": {"x": 1}, "create_time": "1700000000.5",
            "mapping": {
            "u": {"parent": 7, "children": "nope", "message": {"author": "user?",
                "content": {"content_type": "text", "parts": ["lost author"]}}},
            "v": {"parent": "u", "message": {"author": {"role": "user"}, "create_time": "soon",
                "metadata": [], "content": {"parts": ["kept"]}}}
        }, "current_node": "v"}]"#;
        let records = run(json).unwrap();
        let s = sessions(&records);
        assert_eq!(s.len(), 1);
        assert_eq!(texts(s[0]), ["kept"]);
        assert_eq!(s[0].title, "kept");
        assert_eq!(s[0].external_id.as_deref(), Some("42"));
        assert_eq!(
            s[0].started_at,
            DateTime::from_timestamp_micros(1_700_000_000_500_000)
        );
    }

    #[test]
    fn boilerplate_around_custom_instructions_is_dropped() {
        let profile = "The user provided the following information about themselves.\n\
            User profile:\n```I teach\u{a0}physics.```";
        assert_eq!(users_words(profile), "I teach physics.");
        assert_eq!(users_words("  no fences  "), "no fences");
        assert_eq!(users_words("one ``` fence"), "one ``` fence");
    }

    #[test]
    fn long_titles_are_cut_on_a_char_boundary() {
        let long = "ü".repeat(200);
        let t = title_from_message(&long);
        assert_eq!(t.chars().count(), TITLE_CHARS);
        assert!(t.ends_with('…'));
        assert_eq!(title_from_message(" a\n\n b "), "a b");
    }

    #[test]
    fn multimodal_parts() {
        let parts: Vec<Value> = serde_json::from_str(
            r#"[{"content_type": "image_asset_pointer", "asset_pointer": "file-service://x"},
                "what is this?",
                {"content_type": "audio_transcription", "text": "spoken words"},
                {"content_type": "audio_asset_pointer", "asset_pointer": "sediment://y"},
                7, ""]"#,
        )
        .unwrap();
        assert_eq!(parts_text(&parts), "[image]\nwhat is this?\nspoken words");
    }
}
