//! Claude's export: `conversations.json` and, in newer exports, `memories.json`.
//!
//! `conversations.json` is a top-level array, streamed one conversation at a time, of
//! `{uuid, name, summary?, created_at, updated_at, account{uuid}, chat_messages[{uuid, text,
//! sender: human|assistant, created_at, attachments[], files[], content?[{type, text?,
//! start_timestamp, …}]}]}`. Quirks handled here (each has a test):
//!
//! * Turns follow the array's order, not `created_at`: an answer's time may equal its prompt's,
//!   and the array is not always in time order. The one exception: a reply listed before the
//!   question it answers, with the same time, is put after it.
//! * A message with `content` blocks shows the concatenation of its `text` blocks; `thinking`,
//!   `tool_use`, `tool_result` and other blocks are reasoning or tool traffic, not the visible
//!   answer. The flat `text` is used only when there are no blocks: beside blocks it can hold
//!   placeholders such as "This block is not supported on your current device yet."
//! * Attachments and files are noted by name, `[attached: report.pdf]`; their extracted
//!   content (often a whole pasted document) is not the user's words and is not kept.
//! * An empty `name` gets the first human message, cut to about 80 characters. `summary` is
//!   Claude's, not the user's, and is ignored.
//! * Empty messages are skipped, and so are conversations with no turn left.
//!
//! `memories.json` (what Claude remembers about the user) is undocumented; it has been seen as
//! `[{"conversations_memory": "…", "project_memories": {"<project uuid>": "…"}, …}]`. It is
//! read leniently: an array or an object; string values under keys named `memory`,
//! `memories`, `*_memory` or `*_memories` (directly, in arrays, or as the values of a map by
//! id) and `text`/`content` of records are memories, one [`Signal`] per distinct non-empty
//! text, dated by the record's `updated_at`/`created_at` when it has one.

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::chatgpt::{clean_text, lenient, lenient_id, non_empty, start_time, title_from_message};
use super::json::for_each_array_item;
use super::time::parse_rfc3339;
use super::{ImportError, InputFile, Sink};
use crate::history::entry::{
    Entry, HistorySource, Kind, Record, Signal, SignalKind, Turn, TurnRole,
};

#[derive(Deserialize, Default)]
#[serde(default)]
struct Conversation {
    #[serde(deserialize_with = "lenient_id")]
    uuid: Option<String>,
    #[serde(deserialize_with = "lenient")]
    name: Option<String>,
    #[serde(deserialize_with = "lenient")]
    created_at: Option<String>,
    #[serde(deserialize_with = "lenient")]
    updated_at: Option<String>,
    // Not lenient: messages that are not objects make a broken file.
    chat_messages: Option<Vec<Message>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Message {
    #[serde(deserialize_with = "lenient")]
    text: Option<String>,
    #[serde(deserialize_with = "lenient")]
    sender: Option<String>,
    #[serde(deserialize_with = "lenient")]
    created_at: Option<String>,
    #[serde(deserialize_with = "lenient")]
    attachments: Option<Vec<Attachment>>,
    #[serde(deserialize_with = "lenient")]
    files: Option<Vec<Attachment>>,
    #[serde(deserialize_with = "lenient")]
    content: Option<Vec<Block>>,
}

/// An entry of `attachments` or `files`; only the name is kept.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Attachment {
    #[serde(deserialize_with = "lenient")]
    file_name: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Block {
    #[serde(rename = "type", deserialize_with = "lenient")]
    kind: Option<String>,
    #[serde(deserialize_with = "lenient")]
    text: Option<String>,
    #[serde(deserialize_with = "lenient")]
    start_timestamp: Option<String>,
}

/// Reads a Claude `conversations.json`, handing each conversation with a turn to `sink` as a
/// chat entry.
pub fn import(file: &InputFile, sink: &mut Sink<'_>) -> Result<(), ImportError> {
    file.with_reader(|reader| {
        for_each_array_item::<Conversation, _>(file, reader, |_, conversation| {
            match session(conversation) {
                Some(s) => sink(Record::Entry(s)),
                None => Ok(()),
            }
        })
    })?;
    Ok(())
}

fn session(conversation: Conversation) -> Option<Entry> {
    let mut turns = Vec::new();
    let mut first_question = None;
    // Array order is the order the user saw; times only annotate.
    for message in conversation.chat_messages.unwrap_or_default() {
        let role = match message.sender.as_deref() {
            Some("human") => TurnRole::User,
            Some("assistant") => TurnRole::Assistant,
            _ => continue,
        };
        let body = visible_text(&message);
        let names = attachment_names(&message);
        let text = match (body.is_empty(), names.is_empty()) {
            (true, true) => continue,
            (false, true) => body.clone(),
            (true, false) => names.join("\n"),
            (false, false) => format!("{body}\n\n{}", names.join("\n")),
        };
        if role == TurnRole::User && first_question.is_none() {
            first_question = Some(if body.is_empty() { text.clone() } else { body });
        }
        let at = message
            .created_at
            .as_deref()
            .and_then(parse_rfc3339)
            .or_else(|| {
                message
                    .content
                    .iter()
                    .flatten()
                    .find_map(|b| b.start_timestamp.as_deref().and_then(parse_rfc3339))
            });
        turns.push(Turn { role, text, at });
    }
    answers_after_questions(&mut turns);
    let first_text = turns.first()?.text.clone();

    let created = conversation.created_at.as_deref().and_then(parse_rfc3339);
    let updated = conversation.updated_at.as_deref().and_then(parse_rfc3339);
    let (started_at, time_note) = start_time(&turns, created, updated);
    let title = non_empty(conversation.name.map(|n| clean_text(&n)))
        .unwrap_or_else(|| title_from_message(first_question.as_deref().unwrap_or(&first_text)));
    let id = non_empty(conversation.uuid);
    Some(Entry {
        source: HistorySource::Claude,
        kind: Kind::Chat,
        title,
        url: id.as_ref().map(|id| format!("https://claude.ai/chat/{id}")),
        external_id: id,
        started_at,
        time_note,
        turns,
    })
}

/// Array order is kept, with one exception: an assistant turn that answers nothing before it,
/// followed by a human turn with the very same time, is that human turn's answer written out of
/// order (exports have been seen with the pair reversed when times tie). The question goes first.
fn answers_after_questions(turns: &mut [Turn]) {
    let mut i = 0;
    while i + 1 < turns.len() {
        let unanswered = i == 0 || turns[i - 1].role != TurnRole::User;
        if unanswered
            && turns[i].role == TurnRole::Assistant
            && turns[i + 1].role == TurnRole::User
            && turns[i].at.is_some()
            && turns[i].at == turns[i + 1].at
        {
            turns.swap(i, i + 1);
            i += 2;
        } else {
            i += 1;
        }
    }
}

/// What the message showed: its `text` blocks when it has content blocks, else its `text`.
fn visible_text(message: &Message) -> String {
    match message.content.as_deref() {
        Some(blocks) if !blocks.is_empty() => {
            let texts: Vec<String> = blocks
                .iter()
                .filter(|b| b.kind.as_deref() == Some("text"))
                .filter_map(|b| b.text.as_deref().map(clean_text))
                .filter(|t| !t.is_empty())
                .collect();
            texts.join("\n\n")
        }
        _ => clean_text(message.text.as_deref().unwrap_or_default()),
    }
}

/// `[attached: name]` for each distinct attachment or file, in order.
fn attachment_names(message: &Message) -> Vec<String> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    let all = message
        .attachments
        .iter()
        .chain(message.files.iter())
        .flatten();
    for attachment in all {
        let name = clean_text(attachment.file_name.as_deref().unwrap_or_default());
        // Pasted text arrives as an attachment without a name.
        let line = if name.is_empty() {
            "[attached file]".to_string()
        } else {
            format!("[attached: {name}]")
        };
        if seen.insert(line.clone()) {
            out.push(line);
        }
    }
    out
}

/// Reads a Claude `memories.json`, handing each distinct memory text to `sink` as a signal.
pub fn import_memories(file: &InputFile, sink: &mut Sink<'_>) -> Result<(), ImportError> {
    // A small file: read whole, as its shape is not known well enough to stream.
    let value: Value = file.with_reader(|reader| {
        serde_json::from_reader(reader).map_err(|e| {
            let place = if e.line() > 0 {
                format!("line {}, column {}", e.line(), e.column())
            } else {
                "the top level".to_string()
            };
            let message = match e.classify() {
                serde_json::error::Category::Eof => {
                    format!("the file ends early (truncated?): {e}")
                }
                _ => e.to_string(),
            };
            file.malformed(place, message)
        })
    })?;
    let mut memories = Vec::new();
    top_level(&value, &mut memories);
    let mut seen = HashSet::new();
    for (text, at) in memories {
        let text = clean_text(&text);
        if !text.is_empty() && seen.insert(text.clone()) {
            sink(Record::Signal(Signal {
                source: HistorySource::Claude,
                kind: SignalKind::Memory,
                text,
                at,
            }))?;
        }
    }
    Ok(())
}

type Found = Vec<(String, Option<DateTime<Utc>>)>;

fn top_level(value: &Value, out: &mut Found) {
    match value {
        Value::String(s) => out.push((s.clone(), None)),
        Value::Array(items) => items.iter().for_each(|v| top_level(v, out)),
        Value::Object(obj) => record(obj, None, out),
        _ => {}
    }
}

/// An object: memories under memory-named keys, or its own `text`/`content`.
fn record(obj: &Map<String, Value>, at: Option<DateTime<Utc>>, out: &mut Found) {
    let at = ["updated_at", "created_at"]
        .iter()
        .find_map(|k| obj.get(*k).and_then(Value::as_str).and_then(parse_rfc3339))
        .or(at);
    for (key, value) in obj {
        let key = key.to_ascii_lowercase();
        if is_memory_key(&key) {
            container(value, at, out);
        } else if key == "text" || key == "content" {
            if let Value::String(s) = value {
                out.push((s.clone(), at));
            }
        }
    }
}

/// The value under a memory-named key: a text, a list, or a map from an id to a text.
fn container(value: &Value, at: Option<DateTime<Utc>>, out: &mut Found) {
    let mut item = |v: &Value| match v {
        Value::String(s) => out.push((s.clone(), at)),
        Value::Object(obj) => record(obj, at, out),
        Value::Array(_) => container(v, at, out),
        _ => {}
    };
    match value {
        Value::Array(items) => items.iter().for_each(item),
        Value::Object(map) => map.values().for_each(item),
        other => item(other),
    }
}

fn is_memory_key(key: &str) -> bool {
    key == "memory" || key == "memories" || key.ends_with("_memory") || key.ends_with("_memories")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_tied_in_time_with_its_question_comes_after_it() {
        let json = r#"[{"uuid": "c1", "name": "tie", "chat_messages": [
            {"sender": "assistant", "text": "Paris.", "created_at": "2024-03-01T10:00:00Z"},
            {"sender": "human", "text": "Capital of France?", "created_at": "2024-03-01T10:00:00Z"},
            {"sender": "assistant", "text": "Berlin.", "created_at": "2024-03-01T10:01:00Z"},
            {"sender": "human", "text": "And Germany?", "created_at": "2024-03-01T10:01:00Z"}
        ]}]"#;
        let conversations: Vec<Conversation> = serde_json::from_str(json).unwrap();
        let s = session(conversations.into_iter().next().unwrap()).unwrap();
        let texts: Vec<_> = s.turns.iter().map(|t| t.text.as_str()).collect();
        assert_eq!(
            texts,
            ["Capital of France?", "Paris.", "And Germany?", "Berlin."]
        );
        // An alternating conversation whose times all tie keeps its order.
        let json = r#"[{"uuid": "c2", "name": "same", "chat_messages": [
            {"sender": "human", "text": "q1", "created_at": "2024-03-01T10:00:00Z"},
            {"sender": "assistant", "text": "a1", "created_at": "2024-03-01T10:00:00Z"},
            {"sender": "human", "text": "q2", "created_at": "2024-03-01T10:00:00Z"},
            {"sender": "assistant", "text": "a2", "created_at": "2024-03-01T10:00:00Z"}
        ]}]"#;
        let conversations: Vec<Conversation> = serde_json::from_str(json).unwrap();
        let s = session(conversations.into_iter().next().unwrap()).unwrap();
        let texts: Vec<_> = s.turns.iter().map(|t| t.text.as_str()).collect();
        assert_eq!(texts, ["q1", "a1", "q2", "a2"]);
    }
    use std::io::Write;

    fn run(
        json: &str,
        f: fn(&InputFile, &mut Sink<'_>) -> Result<(), ImportError>,
    ) -> Result<Vec<Record>, ImportError> {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(json.as_bytes()).unwrap();
        let input = InputFile::plain(file.path());
        let mut out = Vec::new();
        f(&input, &mut |r| {
            out.push(r);
            Ok(())
        })?;
        Ok(out)
    }

    fn signal_texts(records: &[Record]) -> Vec<String> {
        let mut texts: Vec<String> = records
            .iter()
            .filter_map(|r| match r {
                Record::Signal(s) => Some(s.text.clone()),
                Record::Entry(_) | Record::Skipped { .. } => None,
            })
            .collect();
        texts.sort();
        texts
    }

    #[test]
    fn memories_in_many_shapes() {
        let shapes = [
            r#"{"conversations_memory": "likes Rust", "account_uuid": "not a memory"}"#,
            r#"["likes Rust"]"#,
            r#"{"memories": [{"uuid": "m1", "text": "likes Rust", "created_at": "2024-01-01T00:00:00Z"}]}"#,
            r#"[{"project_memories": {"p1": "likes Rust", "p2": ""}}]"#,
            r#"{"project_memories": [{"project_uuid": "p1", "memory": "likes Rust"}]}"#,
        ];
        for shape in shapes {
            let records = run(shape, import_memories).unwrap();
            assert_eq!(signal_texts(&records), ["likes Rust"], "{shape}");
        }
        let records = run(r#"{"account": {"uuid": "x"}, "count": 3}"#, import_memories).unwrap();
        assert!(records.is_empty());
    }

    #[test]
    fn memory_time_comes_from_its_record() {
        let records = run(
            r#"[{"conversations_memory": "m", "updated_at": "2025-02-03T04:05:06Z"}]"#,
            import_memories,
        )
        .unwrap();
        let Record::Signal(s) = &records[0] else {
            panic!("{records:?}")
        };
        assert_eq!(s.at, parse_rfc3339("2025-02-03T04:05:06Z"));
    }

    #[test]
    fn truncated_memories_name_a_line() {
        let err = run("[{\"conversations_memory\":\n \"m", import_memories)
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 2"), "{err}");
        assert!(err.contains("truncated"), "{err}");
    }

    #[test]
    fn blocks_without_text_hide_the_flat_placeholder() {
        let json = r#"[{"uuid": "c", "name": "n", "chat_messages": [
            {"sender": "human", "text": "draw it", "created_at": "2024-01-01T00:00:00Z"},
            {"sender": "assistant", "text": "This block is not supported on your current device yet.",
             "content": [{"type": "tool_use", "name": "artifacts", "input": {}}]},
            {"sender": "assistant", "content": [{"type": "text", "text": "done",
             "start_timestamp": "2024-01-01T00:00:05Z"}]}
        ]}]"#;
        let records = run(json, import).unwrap();
        let Record::Entry(s) = &records[0] else {
            panic!("{records:?}")
        };
        let texts: Vec<_> = s.turns.iter().map(|t| t.text.as_str()).collect();
        assert_eq!(texts, ["draw it", "done"]);
        assert_eq!(s.turns[1].at, parse_rfc3339("2024-01-01T00:00:05Z"));
    }

    #[test]
    fn attachment_only_message_titles_the_conversation() {
        let json = r#"[{"uuid": "c", "name": "", "chat_messages": [
            {"sender": "human", "text": "", "attachments": [{"file_name": "", "extracted_content": "pasted"}],
             "files": [{"file_name": "a.png"}, {"file_name": "a.png"}]},
            {"sender": "assistant", "text": "ok"}
        ]}]"#;
        let records = run(json, import).unwrap();
        let Record::Entry(s) = &records[0] else {
            panic!("{records:?}")
        };
        assert_eq!(s.turns[0].text, "[attached file]\n[attached: a.png]");
        assert_eq!(s.title, "[attached file] [attached: a.png]");
        assert_eq!(s.started_at, None);
        assert!(s.time_note.is_some());
    }
}
