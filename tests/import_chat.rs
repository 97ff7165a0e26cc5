//! The ChatGPT and Claude importers on synthetic exports written from `FORMATS.md`
//! (`tests/fixtures/history/chatgpt/`, `tests/fixtures/history/claude/`): one test per quirk,
//! plus truncation, empty exports, detection, and reading from inside a zip.

use std::io::Write;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use rudder::history::import::{
    collect, detect, detect_from, parse_file, Detected, Format, ImportError, InputFile,
};
use rudder::history::{Entry, HistorySource, Kind, Record, Signal, SignalKind, TurnRole};

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/history")
        .join(rel)
}

fn import_input(input: &InputFile, format: Option<Format>) -> Result<Vec<Record>, ImportError> {
    let mut records = Vec::new();
    parse_file(input, format, &mut |r| {
        records.push(r);
        Ok(())
    })?;
    Ok(records)
}

fn import(path: &Path) -> Vec<Record> {
    import_input(&InputFile::plain(path), None).unwrap()
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

fn signals(records: &[Record]) -> Vec<&Signal> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::Signal(s) => Some(s),
            Record::Entry(_) | Record::Skipped { .. } => None,
        })
        .collect()
}

fn by_id<'a>(records: &'a [Record], id: &str) -> &'a Entry {
    sessions(records)
        .into_iter()
        .find(|s| s.external_id.as_deref() == Some(id))
        .unwrap_or_else(|| panic!("no session {id} in {records:#?}"))
}

fn texts(s: &Entry) -> Vec<&str> {
    s.turns.iter().map(|t| t.text.as_str()).collect()
}

fn roles(s: &Entry) -> Vec<TurnRole> {
    s.turns.iter().map(|t| t.role).collect()
}

fn all_text(records: &[Record]) -> String {
    let mut out = String::new();
    for r in records {
        match r {
            Record::Entry(s) => out.push_str(&s.full_text()),
            Record::Signal(s) => out.push_str(&s.text),
            Record::Skipped { place, reason } => out.push_str(&format!("{place}: {reason}")),
        }
        out.push('\n');
    }
    out
}

fn secs(s: f64) -> Option<DateTime<Utc>> {
    DateTime::from_timestamp_micros((s * 1e6).round() as i64)
}

fn rfc(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

use TurnRole::{Assistant, User};

const SOURDOUGH: &str = "67a0c1d2-0001-8000-9000-00000000a001";
const PLOT: &str = "67a0c1d2-0002-8000-9000-00000000a002";
const KYOTO: &str = "67a0c1d2-0003-8000-9000-00000000a003";

// ---------------------------------------------------------------- ChatGPT

#[test]
fn chatgpt_file_yields_visible_conversations_only() {
    let records = import(&fixture("chatgpt/conversations.json"));
    let ids: Vec<_> = sessions(&records)
        .iter()
        .map(|s| s.external_id.clone().unwrap())
        .collect();
    // Conversation 4 has only hidden messages and conversation 5 only an empty root.
    assert_eq!(ids, [SOURDOUGH, PLOT, KYOTO]);
    for s in sessions(&records) {
        assert_eq!(s.source, HistorySource::Chatgpt);
        assert_eq!(s.kind, Kind::Chat);
        assert!(!s.turns.is_empty());
        assert!(s.turns.iter().all(|t| !t.text.is_empty()));
    }
}

#[test]
fn chatgpt_thread_follows_current_node_not_the_newest_branch() {
    let records = import(&fixture("chatgpt/conversations.json"));
    let s = by_id(&records, SOURDOUGH);
    assert_eq!(s.title, "Sourdough starter help");
    assert_eq!(
        s.url.as_deref(),
        Some("https://chatgpt.com/c/67a0c1d2-0001-8000-9000-00000000a001")
    );
    // The edited question ("…in winter?") is newer, but current_node points at the first one.
    assert_eq!(
        texts(s),
        [
            "[image]\nWhy is my starter not rising?",
            "It is probably too cold. Keep it near 24 °C.",
            "How often should I feed it?",
            "Feed it twice a day at room temperature.",
        ]
    );
    assert_eq!(roles(s), [User, Assistant, User, Assistant]);
    assert!(!all_text(&records).contains("in winter"));
}

#[test]
fn chatgpt_hidden_system_thoughts_and_recaps_are_not_turns() {
    let records = import(&fixture("chatgpt/conversations.json"));
    let everything = all_text(&records);
    for hidden in [
        "SECRET REASONING",
        "Considering temperature",
        "Thought for 4 seconds",
        "quietly think",
    ] {
        assert!(!everything.contains(hidden), "{hidden:?} leaked");
    }
    let s = by_id(&records, SOURDOUGH);
    assert!(s.turns.iter().all(|t| !t.text.contains("Lyon")));
}

#[test]
fn chatgpt_no_break_and_em_spaces_become_spaces() {
    let records = import(&fixture("chatgpt/conversations.json"));
    let s = by_id(&records, SOURDOUGH);
    assert_eq!(
        s.turns[1].text,
        "It is probably too cold. Keep it near 24 °C."
    );
    assert!(!all_text(&records).contains(['\u{a0}', '\u{2003}']));
}

#[test]
fn chatgpt_zero_or_null_create_time_is_unknown() {
    let records = import(&fixture("chatgpt/conversations.json"));
    let s = by_id(&records, SOURDOUGH);
    // `create_time: 0` on the last answer.
    assert_eq!(s.turns[3].at, None);
    assert_eq!(s.turns[0].at, secs(1_700_000_001.5));
    assert_eq!(s.started_at, secs(1_700_000_001.5));
    assert_eq!(s.time_note, None);

    // Conversation create_time 0 and messages without times: the update time, with a note.
    let s = by_id(&records, KYOTO);
    assert!(s.turns.iter().all(|t| t.at.is_none()));
    assert_eq!(s.started_at, secs(1_702_000_000.0));
    let note = s.time_note.as_deref().unwrap();
    assert!(note.contains("update"), "{note}");
}

#[test]
fn chatgpt_without_current_node_takes_the_latest_regeneration() {
    let records = import(&fixture("chatgpt/conversations.json"));
    let s = by_id(&records, PLOT);
    assert_eq!(roles(s), [User, Assistant, Assistant]);
    assert!(s.turns[0].text.starts_with("I have a CSV export"));
    // The assistant's code stays as its text. A system message, the tool's output (even as
    // plain text), the browsing display, the quote and the hidden browser call are not turns.
    assert_eq!(
        s.turns[1].text,
        "import pandas as pd\ndf = pd.read_csv('bank.csv')\nprint(df.shape)"
    );
    assert_eq!(
        s.turns[2].text,
        "Use df.groupby(pd.Grouper(key='date', freq='M')) and plot a bar chart."
    );
    let everything = all_text(&records);
    for dropped in [
        "You are ChatGPT",
        "TOOL TEXT",
        "(120, 3)",
        "pandas documentation",
        "QUOTED DOCS TEXT",
        "first attempt",
        "search(",
    ] {
        assert!(!everything.contains(dropped), "{dropped:?} leaked");
    }
}

#[test]
fn chatgpt_conversation_id_and_null_title() {
    let records = import(&fixture("chatgpt/conversations.json"));
    // Only `conversation_id` is present.
    let s = by_id(&records, PLOT);
    // A null title: the first user message, cut to about 80 characters.
    assert!(
        s.title.starts_with("I have a CSV export from my bank"),
        "{}",
        s.title
    );
    assert!(s.title.ends_with('…'), "{}", s.title);
    assert!(s.title.chars().count() <= 80, "{}", s.title);
    assert_eq!(s.started_at, secs(1_701_000_001.0));
}

#[test]
fn chatgpt_dangling_current_node_falls_back() {
    let records = import(&fixture("chatgpt/conversations.json"));
    let s = by_id(&records, KYOTO);
    assert_eq!(
        texts(s),
        [
            "Plan a day in Kyoto.",
            "Morning: Fushimi Inari. Afternoon: Arashiyama."
        ]
    );
}

#[test]
fn chatgpt_custom_instructions_are_one_signal_per_distinct_text() {
    let records = import(&fixture("chatgpt/conversations.json"));
    let signals = signals(&records);
    // The same user_editable_context appears in three conversations, the 2023-style
    // instructions in one.
    assert_eq!(signals.len(), 2, "{signals:#?}");
    assert!(signals
        .iter()
        .all(|s| s.source == HistorySource::Chatgpt && s.kind == SignalKind::CustomInstructions));
    assert_eq!(
        signals[0].text,
        "I bake bread at home in Lyon and work night shifts as a nurse.\n\n\
         Use metric units and keep answers short."
    );
    // Its message has create_time 0: the conversation's time stands in.
    assert_eq!(signals[0].at, secs(1_700_000_000.123));
    assert_eq!(
        signals[1].text,
        "I live in Osaka and travel by train.\n\nBe concise."
    );
    // Never a turn.
    assert!(!sessions(&records)
        .iter()
        .any(|s| s.full_text().contains("Lyon") || s.full_text().contains("Osaka")));
}

#[test]
fn chatgpt_split_export_file() {
    let path = fixture("chatgpt/conversations-001.json");
    let head = std::fs::read(&path).unwrap();
    assert_eq!(
        detect_from("Export/conversations-001.json", &head),
        Detected::Format(Format::Chatgpt)
    );
    let input = InputFile::plain(&path);
    assert_eq!(detect(&input).unwrap(), Detected::Format(Format::Chatgpt));
    let records = import(&path);
    let s = sessions(&records);
    assert_eq!(s.len(), 1);
    assert_eq!(s[0].title, "Split export conversation");
    assert_eq!(
        texts(s[0]),
        [
            "Is this from the second file?",
            "Yes, from conversations-001.json."
        ]
    );
}

#[test]
fn chatgpt_reimport_is_identical() {
    let a = import(&fixture("chatgpt/conversations.json"));
    let b = import(&fixture("chatgpt/conversations.json"));
    let hashes =
        |r: &[Record]| -> Vec<String> { sessions(r).iter().map(|s| s.content_hash()).collect() };
    assert_eq!(hashes(&a), hashes(&b));
    assert_eq!(a, b);
}

// ---------------------------------------------------------------- Claude

const LIFETIMES: &str = "c0a1b2c3-0001-4000-8000-0000000000a1";
const REPORT: &str = "c0a1b2c3-0002-4000-8000-0000000000b2";
const PLANTS: &str = "c0a1b2c3-0003-4000-8000-0000000000c3";

#[test]
fn claude_file_yields_conversations_with_turns() {
    let records = import(&fixture("claude/conversations.json"));
    assert!(signals(&records).is_empty());
    let ids: Vec<_> = sessions(&records)
        .iter()
        .map(|s| s.external_id.clone().unwrap())
        .collect();
    // The fourth conversation has no messages.
    assert_eq!(ids, [LIFETIMES, REPORT, PLANTS]);
    for s in sessions(&records) {
        assert_eq!(s.source, HistorySource::Claude);
        assert_eq!(s.kind, Kind::Chat);
        assert_eq!(
            s.url.as_deref(),
            Some(
                format!(
                    "https://claude.ai/chat/{}",
                    s.external_id.as_deref().unwrap()
                )
                .as_str()
            )
        );
    }
}

#[test]
fn claude_turns_follow_array_order_not_time() {
    let records = import(&fixture("claude/conversations.json"));
    let s = by_id(&records, LIFETIMES);
    assert_eq!(s.title, "Rust lifetimes question");
    // The last answer's created_at is earlier than the question before it, and the first
    // answer's equals its prompt's: sorting by time would misplace them.
    assert_eq!(roles(s), [User, Assistant, User, Assistant]);
    assert_eq!(
        texts(s),
        [
            "What does 'a mean in fn f<'a>(x: &'a str)?",
            "It names a lifetime: the returned reference lives as long as x.",
            "Can I leave it out?",
            "Yes, elision rules cover the single-input case.",
        ]
    );
    assert_eq!(s.turns[3].at, rfc("2024-03-05T10:04:59Z"));
    assert_eq!(s.started_at, rfc("2024-03-05T10:00:00.123456Z"));
    assert_eq!(s.time_note, None);
}

#[test]
fn claude_content_blocks_win_and_only_text_blocks_count() {
    let records = import(&fixture("claude/conversations.json"));
    let s = by_id(&records, REPORT);
    assert_eq!(
        s.turns[1].text,
        "Here is the summary.\n\nI also drew a chart."
    );
    let everything = all_text(&records);
    for hidden in [
        "not supported on your current device",
        "PRIVATE THOUGHTS",
        "ARTIFACT SOURCE CODE",
        "TOOL RESULT OK",
        // `summary` is Claude's description, not a turn.
        "The user asked Claude",
    ] {
        assert!(!everything.contains(hidden), "{hidden:?} leaked");
    }
}

#[test]
fn claude_attachments_are_noted_by_name_only() {
    let records = import(&fixture("claude/conversations.json"));
    let s = by_id(&records, REPORT);
    assert_eq!(
        s.turns[0].text,
        "Summarise the attached report.\n\n[attached: q3-report.txt]\n[attached: chart.png]"
    );
    assert!(!all_text(&records).contains("CONFIDENTIAL"));
}

#[test]
fn claude_empty_name_uses_first_human_message() {
    let records = import(&fixture("claude/conversations.json"));
    let s = by_id(&records, PLANTS);
    assert!(
        s.title
            .starts_with("Which houseplants tolerate low light and irregular watering"),
        "{}",
        s.title
    );
    assert!(s.title.ends_with('…'), "{}", s.title);
    assert!(s.title.chars().count() <= 80);
    // The empty leading answer and the system message are skipped; an empty `content` array
    // falls back to `text`.
    assert_eq!(roles(s), [User, Assistant]);
    assert!(s.turns[0].text.starts_with("Which houseplants"));
    assert_eq!(s.started_at, rfc("2025-06-01T18:30:05Z"));
}

#[test]
fn claude_memories_are_signals() {
    let records = import(&fixture("claude/memories.json"));
    assert!(sessions(&records).is_empty());
    let mut texts: Vec<_> = signals(&records)
        .iter()
        .map(|s| {
            assert_eq!(s.source, HistorySource::Claude);
            assert_eq!(s.kind, SignalKind::Memory);
            s.text.clone()
        })
        .collect();
    texts.sort();
    // Two non-empty texts (one project memory is empty); the account uuid is not a memory.
    assert_eq!(texts.len(), 2, "{texts:#?}");
    assert!(texts[0].starts_with("**Work context**"));
    assert!(texts[0].contains("backend engineer"));
    assert!(texts[1].starts_with("Project “Home renovation”"));
}

// ---------------------------------------------------------------- Errors and empty exports

/// A copy of `src` cut to `keep` of its bytes, in a temp dir under `name`.
fn truncated_copy(dir: &Path, src: &Path, name: &str, keep: f64) -> PathBuf {
    let bytes = std::fs::read(src).unwrap();
    let cut = (bytes.len() as f64 * keep) as usize;
    let path = dir.join(name);
    std::fs::write(&path, &bytes[..cut]).unwrap();
    path
}

#[test]
fn truncated_files_fail_naming_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "chatgpt/conversations.json",
            "conversations.json",
            Format::Chatgpt,
        ),
        (
            "claude/conversations.json",
            "conversations.json",
            Format::Claude,
        ),
        (
            "claude/memories.json",
            "memories.json",
            Format::ClaudeMemories,
        ),
    ];
    for (i, (src, name, format)) in cases.into_iter().enumerate() {
        let sub = dir.path().join(i.to_string());
        std::fs::create_dir(&sub).unwrap();
        let path = truncated_copy(&sub, &fixture(src), name, 0.6);
        let input = InputFile::plain(&path);
        // Detection still works on the head of a truncated file.
        assert_eq!(detect(&input).unwrap(), Detected::Format(format), "{src}");
        let mut records = 0;
        let err = parse_file(&input, None, &mut |_| {
            records += 1;
            Ok(())
        })
        .unwrap_err();
        let ImportError::Malformed {
            file,
            place,
            message,
        } = &err
        else {
            panic!("{src}: expected Malformed, got {err:?}")
        };
        assert_eq!(file, &path.display().to_string());
        assert!(place.contains("line "), "{src}: {place}");
        assert!(message.contains("truncated"), "{src}: {message}");
        assert!(err.to_string().contains(name), "{err}");
    }
}

#[test]
fn invalid_utf8_fails_with_a_place() {
    let dir = tempfile::tempdir().unwrap();
    for (name, json) in [
        (
            "chatgpt.json",
            &b"[{\"id\": \"x\", \"mapping\": {}, \"title\": \"bad \xff\"}]"[..],
        ),
        (
            "claude.json",
            &b"[{\"uuid\": \"x\", \"name\": \"bad \xff\", \"chat_messages\": []}]"[..],
        ),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, json).unwrap();
        let format = if name.starts_with("chatgpt") {
            Format::Chatgpt
        } else {
            Format::Claude
        };
        let err = import_input(&InputFile::plain(&path), Some(format)).unwrap_err();
        let ImportError::Malformed { place, .. } = &err else {
            panic!("{name}: expected Malformed, got {err:?}")
        };
        assert!(place.contains("item 0"), "{place}");
    }
}

#[test]
fn empty_exports_yield_nothing() {
    let dir = tempfile::tempdir().unwrap();
    for (name, format, body) in [
        ("conversations.json", Format::Chatgpt, "[]"),
        ("conversations.json", Format::Claude, " [ ]\n"),
        ("memories.json", Format::ClaudeMemories, "[]"),
        ("memories.json", Format::ClaudeMemories, "{}"),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, body).unwrap();
        let input = InputFile::plain(&path);
        // The importer itself yields nothing…
        let records = import_input(&input, Some(format)).unwrap();
        assert!(records.is_empty(), "{format}: {records:?}");
        // …and detection turns that into an "empty" error for the caller.
        assert_eq!(detect(&input).unwrap(), Detected::Empty);
        let err = import_input(&input, None).unwrap_err();
        assert!(matches!(err, ImportError::Empty { .. }), "{err:?}");
    }
}

#[test]
fn sink_errors_stop_the_import() {
    let input = InputFile::plain(&fixture("chatgpt/conversations.json"));
    let mut seen = 0;
    let err = parse_file(&input, None, &mut |_| {
        seen += 1;
        Err(ImportError::Store {
            file: "db".into(),
            message: "full".into(),
        })
    })
    .unwrap_err();
    assert!(matches!(err, ImportError::Store { .. }), "{err:?}");
    assert_eq!(seen, 1);
}

// ---------------------------------------------------------------- Detection and zips

#[test]
fn detection_on_fixtures() {
    let cases = [
        (
            "chatgpt/conversations.json",
            Detected::Format(Format::Chatgpt),
        ),
        (
            "chatgpt/conversations-001.json",
            Detected::Format(Format::Chatgpt),
        ),
        (
            "claude/conversations.json",
            Detected::Format(Format::Claude),
        ),
        (
            "claude/memories.json",
            Detected::Format(Format::ClaudeMemories),
        ),
        ("claude/users.json", Detected::NotHistory),
        ("claude/projects.json", Detected::NotHistory),
    ];
    for (rel, want) in cases {
        let head = std::fs::read(fixture(rel)).unwrap();
        let name = rel.rsplit('/').next().unwrap();
        assert_eq!(detect_from(&format!("export/{name}"), &head), want, "{rel}");
    }
}

fn write_zip(path: &Path, entries: &[(&str, Vec<u8>)]) {
    let file = std::fs::File::create(path).unwrap();
    let mut zip = zip::ZipWriter::new(file);
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for (name, bytes) in entries {
        zip.start_file(*name, options).unwrap();
        zip.write_all(bytes).unwrap();
    }
    zip.finish().unwrap();
}

/// Imports everything `collect` finds in `zip`: detected format per entry name, and the records.
fn import_zip(zip: &Path) -> (Vec<(String, Detected)>, Vec<Record>) {
    let collected = collect(&[zip.to_path_buf()]);
    assert!(collected.refused.is_empty(), "{:?}", collected.refused);
    let mut detected = Vec::new();
    let mut records = Vec::new();
    for file in &collected.files {
        assert!(file.in_zip());
        assert!(file.display().contains('!'), "{}", file.display());
        let d = detect(file).unwrap();
        detected.push((file.inner_path().to_string(), d));
        if let Detected::Format(_) = d {
            records.extend(import_input(file, None).unwrap());
        }
    }
    (detected, records)
}

#[test]
fn chatgpt_export_zip() {
    let dir = tempfile::tempdir().unwrap();
    let zip_path = dir.path().join("chatgpt-export.zip");
    let read = |rel: &str| std::fs::read(fixture(rel)).unwrap();
    write_zip(
        &zip_path,
        &[
            ("conversations-000.json", read("chatgpt/conversations.json")),
            ("conversations-001.json", read("chatgpt/conversations-001.json")),
            (
                "chat.html",
                b"<html><head><title>ChatGPT Data Export</title></head><body>\
                  <script>var jsonData = [{\"mapping\": {}, \"create_time\": 1}];</script>\
                  </body></html>"
                    .to_vec(),
            ),
            (
                "user.json",
                br#"{"id": "user-abc", "email": "sam@example.com", "chatgpt_plus_user": true}"#
                    .to_vec(),
            ),
            (
                "shared_conversations.json",
                br#"[{"id": "s1", "conversation_id": "c1", "title": "Shared", "is_anonymous": true}]"#
                    .to_vec(),
            ),
            (
                "message_feedback.json",
                br#"[{"id": "fb1", "conversation_id": "c1", "user_id": "user-abc", "rating": "thumbsUp"}]"#
                    .to_vec(),
            ),
        ],
    );
    let (detected, records) = import_zip(&zip_path);
    assert_eq!(
        detected,
        [
            (
                "conversations-000.json".into(),
                Detected::Format(Format::Chatgpt)
            ),
            (
                "conversations-001.json".into(),
                Detected::Format(Format::Chatgpt)
            ),
            ("chat.html".into(), Detected::NotHistory),
            ("user.json".into(), Detected::NotHistory),
            ("shared_conversations.json".into(), Detected::NotHistory),
            ("message_feedback.json".into(), Detected::NotHistory),
        ]
    );
    // The same records as from the plain files.
    let mut plain = import(&fixture("chatgpt/conversations.json"));
    plain.extend(import(&fixture("chatgpt/conversations-001.json")));
    assert_eq!(records, plain);
    assert_eq!(sessions(&records).len(), 4);
    assert_eq!(signals(&records).len(), 2);
}

#[test]
fn claude_export_zip() {
    let dir = tempfile::tempdir().unwrap();
    let zip_path = dir.path().join("data-2025-06-02-08-00-00.zip");
    let read = |rel: &str| std::fs::read(fixture(rel)).unwrap();
    write_zip(
        &zip_path,
        &[
            ("conversations.json", read("claude/conversations.json")),
            ("memories.json", read("claude/memories.json")),
            ("projects.json", read("claude/projects.json")),
            ("users.json", read("claude/users.json")),
        ],
    );
    let (detected, records) = import_zip(&zip_path);
    assert_eq!(
        detected,
        [
            (
                "conversations.json".into(),
                Detected::Format(Format::Claude)
            ),
            (
                "memories.json".into(),
                Detected::Format(Format::ClaudeMemories)
            ),
            ("projects.json".into(), Detected::NotHistory),
            ("users.json".into(), Detected::NotHistory),
        ]
    );
    let mut plain = import(&fixture("claude/conversations.json"));
    plain.extend(import(&fixture("claude/memories.json")));
    assert_eq!(records, plain);
    assert_eq!(sessions(&records).len(), 3);
    assert_eq!(signals(&records).len(), 2);
}

#[test]
fn truncated_entry_in_a_zip_names_the_entry() {
    let dir = tempfile::tempdir().unwrap();
    let zip_path = dir.path().join("export.zip");
    let mut bytes = std::fs::read(fixture("claude/conversations.json")).unwrap();
    bytes.truncate(bytes.len() / 2);
    write_zip(&zip_path, &[("conversations.json", bytes)]);
    let collected = collect(std::slice::from_ref(&zip_path));
    let err = import_input(&collected.files[0], None).unwrap_err();
    let ImportError::Malformed { file, place, .. } = &err else {
        panic!("expected Malformed, got {err:?}")
    };
    assert_eq!(file, &format!("{}!conversations.json", zip_path.display()));
    assert!(place.contains("line "), "{place}");
}
