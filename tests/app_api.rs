//! The application API the desktop window calls (`rudder::app`), exercised as the window
//! would, with the real small model: import a history export and documents, search and open
//! history, run a research session on its background thread answering its questions through
//! replies, steer it, stop and resume it, read the report and open a cited source, export,
//! and forget.

use rudder_testkit as common;

use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rudder::app::{
    App, AppSettings, ForgetSelectorView, HistoryFilters, ImportProgress, Notifier, ReplyView,
    ResearchRequest, RunState,
};
use rudder::config::Paths;
use rudder::research::{Envelope, Event};

/// Collects what the window would receive.
#[derive(Default)]
struct Recorder {
    events: Mutex<Option<Sender<(i64, Envelope)>>>,
    states: Mutex<Vec<RunState>>,
    state_tx: Mutex<Option<Sender<RunState>>>,
    imports: Mutex<Vec<ImportProgress>>,
}

impl Notifier for Recorder {
    fn import_progress(&self, p: &ImportProgress) {
        self.imports.lock().unwrap().push(p.clone());
    }

    fn research_event(&self, session: i64, e: &Envelope) {
        if let Some(tx) = self.events.lock().unwrap().as_ref() {
            let _ = tx.send((session, e.clone()));
        }
    }

    fn research_state(&self, s: &RunState) {
        self.states.lock().unwrap().push(s.clone());
        if let Some(tx) = self.state_tx.lock().unwrap().as_ref() {
            let _ = tx.send(s.clone());
        }
    }
}

struct Harness {
    app: App,
    recorder: Arc<Recorder>,
    events: Receiver<(i64, Envelope)>,
    states: Receiver<RunState>,
    _dir: tempfile::TempDir,
    fixtures: tempfile::TempDir,
}

fn harness() -> Harness {
    common::store();
    // Greedy decoding reproduces the end-to-end test's run only with the same date.
    std::env::set_var("RUDDER_DATE", "2026-11-22");
    let dir = tempfile::tempdir().unwrap();
    let paths = Paths {
        data_dir: dir.path().to_path_buf(),
        models_dir: common::models_dir(),
    };
    std::fs::write(
        paths.settings_file(),
        "chat_model = \"smollm2-135m-instruct\"\n[llama]\nthreads = 1\n",
    )
    .unwrap();
    let recorder = Arc::new(Recorder::default());
    let (tx, events) = channel();
    let (state_tx, states) = channel();
    *recorder.events.lock().unwrap() = Some(tx);
    *recorder.state_tx.lock().unwrap() = Some(state_tx);
    let app = App::new(paths, recorder.clone());
    let fixtures = tempfile::tempdir().unwrap();
    let docs = fixtures.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    // The documents of the desktop end-to-end test (src-tauri/tests/e2e_flow.rs), so that
    // SmolLM2 sees the same prompts and pauses the same way.
    let shared =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/desktop-docs");
    for name in ["brewing.md", "storage.md", "notes.md"] {
        std::fs::copy(shared.join(name), docs.join(name)).unwrap();
    }
    std::fs::write(docs.join("broken.pdf"), b"%PDF-1.7 not really").unwrap();
    Harness {
        app,
        recorder,
        events,
        states,
        _dir: dir,
        fixtures,
    }
}

fn history_fixture() -> String {
    format!(
        "{}/tests/fixtures/history/chatgpt/conversations.json",
        env!("CARGO_MANIFEST_DIR")
    )
}

#[test]
fn settings_round_trip_and_bad_values_are_refused_with_reasons() {
    let h = harness();
    let mut s = h.app.settings_get().unwrap();
    assert_eq!(s.chat_model, "smollm2-135m-instruct");
    assert!(s
        .chat_models
        .iter()
        .any(|m| m == "qwen2.5-coder-1.5b-instruct"));
    assert!(s.web_disclosure.contains("SearxNG"));
    assert!(!s.web_enabled);
    s.c0 = 0.4;
    s.depth = 2;
    let saved = h.app.settings_set(&s).unwrap();
    assert_eq!(saved.c0, 0.4);
    assert_eq!(h.app.settings_get().unwrap().depth, 2);
    // The threads setting of the file survives.
    assert_eq!(h.app.settings_get().unwrap().threads, 1);
    let bad = AppSettings {
        c0: 1.5,
        breadth: 0,
        web_enabled: true,
        searxng_url: String::new(),
        ..s.clone()
    };
    let err = h.app.settings_set(&bad).unwrap_err().to_string();
    assert!(err.contains("C0"), "{err}");
    assert!(err.contains("breadth"), "{err}");
    assert!(err.contains("SearxNG"), "{err}");
    // Nothing was saved.
    assert_eq!(h.app.settings_get().unwrap().c0, 0.4);
}

#[test]
fn import_search_open_and_forget_history_and_add_documents() {
    let h = harness();
    let report = h.app.import_paths(&[history_fixture()]).unwrap();
    assert!(report.added > 0, "{report:?}");
    assert!(
        !h.recorder.imports.lock().unwrap().is_empty(),
        "no progress events"
    );
    let missing = h
        .app
        .import_paths(&["/nonexistent/export.zip".into()])
        .unwrap_err()
        .to_string();
    assert!(missing.contains("/nonexistent/export.zip"), "{missing}");

    let stats = h.app.library_stats().unwrap();
    assert_eq!(stats.history_sessions, report.added);
    let hits = h
        .app
        .history_search("python", &HistoryFilters::default())
        .unwrap();
    assert!(!hits.is_empty());
    let session = h.app.history_show(hits[0].id).unwrap();
    assert!(!session.turns.is_empty());
    let bad = h.app.history_search(
        "python",
        &HistoryFilters {
            since: Some("last week".into()),
            ..HistoryFilters::default()
        },
    );
    assert!(bad.unwrap_err().to_string().contains("last week"));

    let forgot = h
        .app
        .history_forget(&ForgetSelectorView {
            id: Some(hits[0].id),
            ..ForgetSelectorView::default()
        })
        .unwrap();
    assert_eq!(forgot.sessions_removed, 1);
    assert!(h.app.history_show(hits[0].id).is_err());

    let docs = h
        .app
        .docs_add(&[h.fixtures.path().join("docs").display().to_string()])
        .unwrap();
    assert_eq!(docs.added, 3, "{docs:?}");
    assert_eq!(docs.failed, 1);
    assert!(docs.errors[0].contains("broken.pdf"), "{:?}", docs.errors);
    assert_eq!(h.app.library_stats().unwrap().documents, 3);
}

/// Waits for the next event of the session that `pick` accepts, failing on a final state.
fn wait_for<T>(h: &Harness, mut pick: impl FnMut(&Event) -> Option<T>) -> T {
    loop {
        match h.events.recv_timeout(Duration::from_secs(600)) {
            Ok((_, e)) => {
                if let Some(t) = pick(&e.event) {
                    return t;
                }
            }
            Err(e) => panic!(
                "no event ({e}); states: {:?}",
                h.recorder.states.lock().unwrap()
            ),
        }
        if let Some(s) = h
            .recorder
            .states
            .lock()
            .unwrap()
            .iter()
            .find(|s| s.state == "failed")
        {
            panic!("the run failed: {}", s.message);
        }
    }
}

fn wait_state(h: &Harness, state: &str) -> RunState {
    loop {
        let s = h
            .states
            .recv_timeout(Duration::from_secs(600))
            .unwrap_or_else(|e| panic!("no {state} state: {e}"));
        if s.state == state {
            return s;
        }
        assert_ne!(s.state, "failed", "{}", s.message);
    }
}

#[test]
fn a_window_runs_answers_steers_stops_resumes_and_reads_the_report() {
    let h = harness();
    h.app.import_paths(&[history_fixture()]).unwrap();
    h.app
        .docs_add(&[h.fixtures.path().join("docs").display().to_string()])
        .unwrap();
    let empty = h.app.research_start(&ResearchRequest {
        question: "  ".into(),
        use_docs: true,
        ..ResearchRequest::default()
    });
    assert!(empty.is_err());

    // "Let me choose at every branch" makes the small model's run pause at the root. The run
    // searches the documents only: with the profile SmolLM2 writes from this history in the
    // prompt, its root proposes no follow-ups at all, so there would be nothing to choose.
    let id = h
        .app
        .research_start(&ResearchRequest {
            question: "What is the best way to make green tea at home?".into(),
            use_history: false,
            use_docs: true,
            depth: Some(1),
            breadth: Some(2),
            c0: Some(0.0),
            clarify_turns: Some(0),
            always_ask: Some(true),
            ..ResearchRequest::default()
        })
        .unwrap();
    assert!(h.app.sessions_list().unwrap()[0].live);

    // The pause arrives as an event; the run waits until the window replies.
    let question = wait_for(&h, |e| match e {
        Event::Question { question } => Some(question.clone()),
        _ => None,
    });
    assert!(!question.directions.is_empty());
    wait_state(&h, "waiting");
    h.app
        .research_reply(
            id,
            ReplyView::Pause {
                chosen: vec![question.directions.len().min(2)],
                new_questions: vec!["How long does opened green tea keep?".into()],
                text: String::new(),
            },
        )
        .unwrap();
    wait_for(&h, |e| matches!(e, Event::Answer { .. }).then_some(()));

    // Steer while it researches, then stop at the next step boundary.
    let ack = h
        .app
        .research_steer(id, "Also look into water temperature for green tea.")
        .unwrap();
    assert!(ack.id > 0);
    wait_for(&h, |e| {
        matches!(e, Event::SteeringApplied { .. }).then_some(())
    });
    h.app.research_stop(id).unwrap();
    let stopped = wait_state(&h, "stopped");
    assert!(stopped.message.contains("resume"), "{}", stopped.message);
    let row = h
        .app
        .sessions_list()
        .unwrap()
        .into_iter()
        .find(|r| r.info.id == id)
        .unwrap();
    assert!(!row.live);
    assert_eq!(row.info.status.as_str(), "interrupted");
    let before = h.app.session_events(id).unwrap().len();
    assert!(
        h.app.session_report(id).is_err(),
        "no report before the end"
    );

    // What the stopped run sent is all in; the resumed run's events follow, to the end.
    while h.events.try_recv().is_ok() {}
    h.app.session_resume(id).unwrap();
    loop {
        let (_, e) = h
            .events
            .recv_timeout(Duration::from_secs(600))
            .expect("the resumed run goes on");
        assert!(e.seq >= before as u64, "a resumed run continues the log");
        if matches!(e.event, Event::Finished { .. }) {
            break;
        }
    }
    let finished = wait_state(&h, "finished");
    assert!(!finished.message.is_empty());
    let events = h.app.session_events(id).unwrap();
    assert!(events.iter().any(|e| matches!(&e.event,
        Event::Answer { answer, .. } if answer.new_questions.len() == 1)));
    let steering_task = events.iter().any(|e| {
        matches!(&e.event, Event::TaskAdded { task }
            if task.text.to_lowercase().contains("water temperature"))
    });
    assert!(steering_task, "the steering message became a task");

    let report = h.app.session_report(id).unwrap();
    assert!(!report.title.is_empty());
    assert!(!report.references.is_empty());
    assert!(!report.html.contains("<script"));
    let opened = h.app.source_open(&report.references[0].target).unwrap();
    assert!(!opened.text.is_empty());
    assert!(!opened.location.is_empty());

    let out = tempfile::tempdir().unwrap();
    let written = h.app.session_export(id, out.path()).unwrap();
    let names: Vec<String> = written
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().to_string())
        .collect();
    assert_eq!(
        names,
        [
            "report.md",
            "report.html",
            "todo.md",
            "events.jsonl",
            "session.json"
        ]
    );
    let md = std::fs::read_to_string(out.path().join("report.md")).unwrap();
    assert_eq!(md, report.markdown);
    assert!(
        h.app.session_resume(id).is_err(),
        "a finished session does not resume"
    );
    assert!(h.app.research_steer(id, "more").is_err());
}
