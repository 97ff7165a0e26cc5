//! The window's side of the IPC contract, checked against the Rust types it mirrors:
//!
//! * `ui/src/generated/*.ts` are ts-rs's TypeScript declarations of every command argument and
//!   result, window event payload and research event (`docs/desktop-api.md`);
//! * `ui/tests/fixtures/research-log.json` is the event log of a real research run (the loop
//!   with the scripted model of `research_loop.rs`), which the UI's reducer tests fold.
//!
//! Both are committed. When a type or the loop changes, these tests fail, naming the file, until
//! the files are regenerated with `RUDDER_UPDATE_UI_TYPES=1 cargo test --test ui_contract`.

use rudder_testkit::scripted;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rudder::clarify::ClarifyAnswer;
use rudder::research::events::Envelope;
use rudder::research::interaction::ScriptedClarification;
use rudder::research::{
    Brief, Event, MemoryJournal, PauseAnswer, ResearchSettings, Researcher, Scripted,
};
use rudder::sources::Sources;
use scripted::{BagOfWords, MemorySource, ScriptedLlm};
use serde_json::json;
use ts_rs::{Config, TS};

/// Set to `1` to rewrite the committed files instead of comparing with them.
const UPDATE_ENV: &str = "RUDDER_UPDATE_UI_TYPES";
const REGENERATE: &str = "RUDDER_UPDATE_UI_TYPES=1 cargo test --test ui_contract";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Compares `generated` (file name → contents) with the files of `dir` that `owned` selects,
/// or, with `RUDDER_UPDATE_UI_TYPES=1`, writes them and removes the owned files no longer
/// generated.
fn check_or_update(dir: &Path, generated: &BTreeMap<String, String>, owned: impl Fn(&str) -> bool) {
    let committed: BTreeMap<String, String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|name| owned(name))
                .map(|name| {
                    let text = std::fs::read_to_string(dir.join(&name)).unwrap();
                    (name, text)
                })
                .collect()
        })
        .unwrap_or_default();
    let shown = |name: &str| {
        dir.join(name)
            .strip_prefix(repo())
            .map(Path::to_path_buf)
            .unwrap_or_else(|_| dir.join(name))
            .display()
            .to_string()
    };
    if std::env::var(UPDATE_ENV).as_deref() == Ok("1") {
        std::fs::create_dir_all(dir).unwrap();
        for name in committed.keys().filter(|n| !generated.contains_key(*n)) {
            std::fs::remove_file(dir.join(name)).unwrap();
        }
        for (name, text) in generated {
            if committed.get(name) != Some(text) {
                std::fs::write(dir.join(name), text).unwrap();
                eprintln!("wrote {}", shown(name));
            }
        }
        return;
    }
    let mut problems = Vec::new();
    for (name, text) in generated {
        match committed.get(name) {
            None => problems.push(format!("{} is missing", shown(name))),
            Some(old) if old != text => {
                let line = old
                    .lines()
                    .zip(text.lines())
                    .position(|(a, b)| a != b)
                    .unwrap_or_else(|| old.lines().count().min(text.lines().count()));
                let (a, b) = (
                    old.lines().nth(line).unwrap_or("(end of file)"),
                    text.lines().nth(line).unwrap_or("(end of file)"),
                );
                problems.push(format!(
                    "{} is out of date (line {}):\n    committed: {}\n    generated: {}",
                    shown(name),
                    line + 1,
                    around_difference(a, b),
                    around_difference(b, a),
                ));
            }
            Some(_) => {}
        }
    }
    for name in committed.keys().filter(|n| !generated.contains_key(*n)) {
        problems.push(format!("{} is no longer generated", shown(name)));
    }
    assert!(
        problems.is_empty(),
        "the UI's copy of the Rust contract has drifted:\n  {}\nRegenerate from the repository root with\n    {REGENERATE}\nand commit the result (then fix what `cd ui && npm run typecheck && npm test` reports).",
        problems.join("\n  ")
    );
}

/// `line` from a little before where it first differs from `other`, cut to a readable length.
fn around_difference(line: &str, other: &str) -> String {
    let at = line
        .char_indices()
        .zip(other.chars())
        .find(|((_, a), b)| a != b)
        .map(|((i, _), _)| i)
        .unwrap_or_else(|| line.len().min(other.len()));
    let start = line[..at]
        .char_indices()
        .rev()
        .nth(60)
        .map(|(i, _)| i)
        .unwrap_or(0);
    let shown: String = line[start..].chars().take(140).collect();
    let more = if line[start..].chars().count() > 140 {
        "…"
    } else {
        ""
    };
    format!("{}{shown}{more}", if start > 0 { "…" } else { "" })
}

/// ts-rs's declarations of every type that crosses the IPC boundary, and their dependencies,
/// plus an `index.ts` that re-exports them all.
fn typescript_bindings() -> BTreeMap<String, String> {
    use rudder::app::library::DocsSummary;
    use rudder::app::{
        AppSettings, FetchSummary, ForgetSelectorView, ForgetSummary, HistoryEntryView,
        HistoryFilters, ImportProgress, LibraryStats, ModelProgress, ModelRow, ReplyView,
        ReportView, ResearchRequest, RunState, SayRequest, SessionRow, SourceView, SteeringAck,
        YouView,
    };
    use rudder::history::{ImportReport, SearchHit};
    use rudder::sources::CitationTarget;
    use rudder::status::EngineStatus;

    let dir = tempfile::tempdir().unwrap();
    // Ids, counts and token totals stay far below 2^53: plain numbers, not bigint.
    let cfg = Config::new()
        .with_large_int("number")
        .with_out_dir(dir.path());
    macro_rules! export {
        ($($t:ty),* $(,)?) => { $( <$t as TS>::export_all(&cfg).unwrap(); )* };
    }
    // Commands' arguments and results (src-tauri/src/main.rs), then the window events.
    export!(
        EngineStatus,
        ModelRow,
        FetchSummary,
        AppSettings,
        ImportReport,
        DocsSummary,
        LibraryStats,
        HistoryFilters,
        SearchHit,
        HistoryEntryView,
        ForgetSelectorView,
        ForgetSummary,
        ResearchRequest,
        ReplyView,
        SteeringAck,
        SessionRow,
        ReportView,
        CitationTarget,
        SourceView,
        ModelProgress,
        ImportProgress,
        Envelope,
        RunState,
        YouView,
        SayRequest,
    );
    let mut files = BTreeMap::new();
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.ends_with(".ts"), "unexpected output {name}");
        files.insert(name, std::fs::read_to_string(&path).unwrap());
    }
    let mut index = String::from(
        "// Generated by tests/ui_contract.rs from the Rust types (ts-rs). Do not edit: regenerate with\n\
         // RUDDER_UPDATE_UI_TYPES=1 cargo test --test ui_contract\n\n",
    );
    for name in files.keys() {
        let ty = name.trim_end_matches(".ts");
        index.push_str(&format!("export type {{ {ty} }} from './{ty}';\n"));
    }
    files.insert("index.ts".into(), index);
    files
}

#[test]
fn generated_typescript_types_match_the_rust_types() {
    let files = typescript_bindings();
    // The types the window names must be among them.
    for name in [
        "ResearchEvent.ts",
        "Envelope.ts",
        "SessionRow.ts",
        "AppSettings.ts",
    ] {
        assert!(files.contains_key(name), "{name} not generated");
    }
    check_or_update(&repo().join("ui/src/generated"), &files, |name| {
        name.ends_with(".ts")
    });
}

// ---- The real event log ----

const QUERY: &str = "How should I brew tea?";
const NEW_QUESTION: &str = "Does tea go stale in the cupboard?";
const STEERING: &str = "Also look into tea chemistry. Ignore poems. Skip the cupboard.";

/// A run that goes through every phase the window shows: a clarifying question and its
/// answer, a pause and its answer (one offered direction and one new question), a steering
/// message that adds a task and cancels another, and the report. Events are as the loop emits
/// them; only the clock (timestamps, durations, the session date) is fixed afterwards.
fn real_event_log() -> Vec<Envelope> {
    let mut llm = ScriptedLlm::new();
    llm.reflect = Some(Box::new(|prompt: &str| {
        if !prompt.contains("USER STEERING MESSAGES") {
            return json!({});
        }
        // Steering drops the user's own question from the plan (the message excludes it: the
        // model's word alone cancels nothing), and asks for chemistry.
        let cancel: Vec<usize> = prompt
            .lines()
            .filter_map(|l| l.strip_prefix("- id "))
            .filter(|l| l.ends_with(NEW_QUESTION))
            .filter_map(|l| l.split(' ').next()?.parse().ok())
            .collect();
        json!({
            "steering_summary": "Look into tea chemistry; leave out poems",
            "add_tasks": ["Tea chemistry and bitterness"],
            "cancel_tasks": cancel,
            "exclude": ["poems"],
            "focus": ["tea chemistry"],
        })
    }));
    let mut interaction = Scripted::new(vec![PauseAnswer {
        chosen: vec![1],
        new_questions: vec![NEW_QUESTION.into()],
        text: String::new(),
    }])
    .with_clarifications(vec![ScriptedClarification::Structured(ClarifyAnswer {
        choices: vec![1],
        text: "mostly evidence".into(),
        skip: false,
    })]);
    let mut settings = ResearchSettings {
        depth: 2,
        breadth: 2,
        clarify_turns: 1,
        ..ResearchSettings::default()
    };
    // Light exploration weights let the alignment spread decide: the root pauses, and the
    // next frontier node, with less to gain, goes on.
    settings.pause.base_cost = 0.5;
    settings.weights.lambda_explore = 0.1;
    settings.weights.lambda_info = 0.1;

    let mut journal = MemoryJournal::new();
    let window = journal.clone();
    let mut sources = Sources::new();
    sources.push(Box::new(MemorySource::tea()));
    let mut log: Vec<Envelope> = Vec::new();
    let mut steered = false;
    // The window sends its steering message right after answering the pause: it is applied
    // at the next step boundary, before the new directions are researched.
    let mut sink = |e: &Envelope| {
        if matches!(e.event, Event::Answer { .. }) && !steered {
            window.steer(STEERING).unwrap();
            steered = true;
        }
        log.push(e.clone());
    };
    Researcher {
        llm: &llm,
        embedder: &BagOfWords,
        sources: &mut sources,
        interaction: &mut interaction,
        events: &mut sink,
        journal: &mut journal,
        settings,
        embed_model: "bag-of-words".into(),
    }
    .run(&Brief {
        query: QUERY.into(),
        persona_text: "A home cook who likes tea.".into(),
        ..Brief::default()
    })
    .unwrap();
    // The phases the reducer tests rely on happened.
    assert!(steered, "the run never reached the pause answer");
    assert_eq!(
        interaction.asked.len(),
        1,
        "one pause is asked, the next goes on"
    );
    assert_eq!(llm.count("clarify"), 1);
    assert!(log.iter().any(|e| matches!(&e.event,
        Event::TaskUpdated { note, .. } if note.contains("steering"))));
    normalise_clock(&mut log);
    log
}

/// Replaces what differs from run to run: timestamps become one second per event from a fixed
/// start, durations zero, and the session date a fixed day.
fn normalise_clock(log: &mut [Envelope]) {
    let start = chrono::DateTime::parse_from_rfc3339("2025-05-01T10:00:00Z")
        .unwrap()
        .with_timezone(&chrono::Utc);
    for e in log.iter_mut() {
        let at = start + chrono::Duration::seconds(e.seq as i64);
        e.at = at;
        match &mut e.event {
            Event::Started { date, .. } => *date = "2025-05-01".into(),
            Event::TaskAdded { task } => {
                task.created_at = at;
                task.updated_at = at;
            }
            Event::SteeringApplied { messages, .. } => {
                for m in messages {
                    m.received_at = at;
                }
            }
            Event::Usage { seconds, .. } | Event::Finished { seconds, .. } => *seconds = 0.0,
            _ => {}
        }
    }
}

#[test]
fn the_ui_fixture_is_a_real_event_log() {
    let log = real_event_log();
    // One envelope per line: a change to the loop shows as a readable diff.
    let lines: Vec<String> = log
        .iter()
        .map(|e| serde_json::to_string(e).unwrap())
        .collect();
    let text = format!("[\n{}\n]\n", lines.join(",\n"));
    // It reads back as the same events.
    let back: Vec<Envelope> = serde_json::from_str(&text).unwrap();
    assert_eq!(back, log);
    let files = BTreeMap::from([("research-log.json".to_string(), text)]);
    check_or_update(&repo().join("ui/tests/fixtures"), &files, |name| {
        name == "research-log.json"
    });
}
