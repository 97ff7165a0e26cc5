//! Research sessions through the real binary and the real small model: `rudder research`
//! runs, `rudder steer` from another process steers it, SIGKILL stops it mid-step, and
//! `rudder sessions resume` finishes it with the steering applied exactly once.

use rudder_testkit as common;

use std::path::Path;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use rudder::research::{Event, Provenance, ResearchState, TaskStatus};
use rudder::session::{SessionStatus, SessionStore};

const DOCS: &[(&str, &str)] = &[
    ("green-tea.md", "# Green tea\n\nGreen tea is not oxidised. Brew it at 70 to 80 °C for two to three minutes; boiling water makes it bitter.\n"),
    ("black-tea.md", "# Black tea\n\nBlack tea is fully oxidised. Brew it with water just off the boil for three to five minutes.\n"),
    ("caffeine.md", "# Caffeine in tea\n\nA cup of black tea holds about 40 to 70 mg of caffeine, green tea about 20 to 45 mg.\n"),
    ("water.md", "# Water for tea\n\nSoft, filtered water gives a clearer cup. Very hard water dulls the taste and leaves a film on black tea.\n"),
];

fn rudder(data: &Path, args: &[&str]) -> Output {
    common::command(env!("CARGO_BIN_EXE_rudder"), data)
        .args(args)
        .output()
        .expect("run rudder")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Polls until `ready` holds, for at most `secs`.
fn wait_for(secs: u64, mut ready: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < deadline {
        if ready() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

#[test]
fn steer_from_another_process_then_sigkill_and_resume() {
    common::store();
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let files = tmp.path().join("files");
    std::fs::create_dir_all(&files).unwrap();
    for (name, body) in DOCS {
        std::fs::write(files.join(name), body).unwrap();
    }
    let report = tmp.path().join("report.md");
    let log = std::fs::File::create(tmp.path().join("research.log")).unwrap();
    let mut child = common::command(env!("CARGO_BIN_EXE_rudder"), &data)
        .args([
            "--model",
            common::CHAT_MODEL,
            "research",
            "How should I brew tea?",
            "--docs",
            files.to_str().unwrap(),
            "--depth",
            "0",
            "--no-history",
            "--never-ask",
            "--out",
            report.to_str().unwrap(),
        ])
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();

    let db = data.join("sessions").join("sessions.sqlite");
    assert!(
        wait_for(300, || db.exists()
            && SessionStore::open(&db)
                .and_then(|s| s.event_count(1))
                .is_ok_and(|n| n > 0)),
        "the research session never started"
    );
    // Steer from a second process while it runs.
    let steer = rudder(
        &data,
        &[
            "steer",
            "1",
            "Also look into water for tea. Ignore caffeine.",
        ],
    );
    assert!(steer.status.success(), "{}", text(&steer.stderr));
    assert!(text(&steer.stdout).contains("queued steering message #1"));

    // Kill it (SIGKILL) in the step after the message was applied.
    let store = SessionStore::open(&db).unwrap();
    let applied = wait_for(600, || {
        store
            .steering(1)
            .is_ok_and(|m| m.first().is_some_and(|m| m.applied_seq.is_some()))
    });
    assert!(applied, "the steering message was never applied");
    child.kill().unwrap();
    child.wait().unwrap();
    let at_kill = store.event_count(1).unwrap();
    assert_ne!(store.info(1).unwrap().status, SessionStatus::Finished);
    let list = rudder(&data, &["sessions", "list"]);
    assert!(
        text(&list.stdout).contains("stopped"),
        "{}",
        text(&list.stdout)
    );

    let resumed = rudder(
        &data,
        &[
            "--model",
            common::CHAT_MODEL,
            "sessions",
            "resume",
            "1",
            "--never-ask",
            "--out",
            report.to_str().unwrap(),
        ],
    );
    let err = text(&resumed.stderr);
    assert!(resumed.status.success(), "{err}");
    assert!(
        err.contains(&format!("resuming session 1 after {at_kill} events")),
        "{err}"
    );
    assert!(report.with_extension("html").exists());

    // The log: the message applied exactly once, its task researched, the exclusion kept.
    let events = store.events(1).unwrap();
    let applications: Vec<Vec<i64>> = events
        .iter()
        .filter_map(|e| match &e.event {
            Event::SteeringApplied { messages, .. } => {
                Some(messages.iter().map(|m| m.id).collect())
            }
            _ => None,
        })
        .collect();
    assert_eq!(applications, [vec![1]]);
    let state = ResearchState::fold(&events);
    assert!(state.finished);
    let written = std::fs::read_to_string(&report).unwrap();
    assert_eq!(written, state.report.as_ref().unwrap().markdown);
    assert!(written.contains("## References"), "{written}");
    assert!(
        state.directives.exclusions.iter().any(|x| x == "caffeine"),
        "{:?}",
        state.directives
    );
    let task = state
        .todo
        .tasks
        .iter()
        .find(|t| t.provenance == Provenance::Steering)
        .expect("the steering task");
    assert_eq!(task.text, "water for tea");
    assert_eq!(task.status, TaskStatus::Completed);
    assert_eq!(store.info(1).unwrap().status, SessionStatus::Finished);

    // Show, export, and steering a finished session is refused.
    let show = rudder(&data, &["sessions", "show", "1"]);
    let shown = text(&show.stdout);
    assert!(show.status.success());
    assert!(
        shown.contains("# Research plan") && shown.contains("(p10, steering)"),
        "{shown}"
    );
    let out = tmp.path().join("export");
    let export = rudder(&data, &["sessions", "export", "1", out.to_str().unwrap()]);
    assert!(export.status.success(), "{}", text(&export.stderr));
    for f in [
        "report.md",
        "report.html",
        "todo.md",
        "events.jsonl",
        "session.json",
    ] {
        assert!(out.join(f).exists(), "{f}");
    }
    let lines = std::fs::read_to_string(out.join("events.jsonl")).unwrap();
    assert_eq!(lines.lines().count(), events.len());
    let late = rudder(&data, &["steer", "1", "one more thing"]);
    assert!(!late.status.success());
    assert!(text(&late.stderr).contains("already finished"));
    let list = rudder(&data, &["--json", "sessions", "list"]);
    let sessions: serde_json::Value = serde_json::from_slice(&list.stdout).unwrap();
    assert_eq!(sessions[0]["status"], "finished");
}
