//! The two faces of one engine: a research request started from the window (`rudder::app`,
//! as the desktop shell calls it) and the same request from the `rudder` binary are stored
//! alike, because both go through `rudder::session::runner::Session`.

use rudder_testkit as common;

use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rudder::app::{App, ImportProgress, Notifier, ResearchRequest, RunState};
use rudder::config::Paths;
use rudder::research::Envelope;

/// Passes the run states on, as the window would receive them.
struct States(Mutex<Sender<RunState>>);

impl Notifier for States {
    fn import_progress(&self, _: &ImportProgress) {}

    fn research_event(&self, _: i64, _: &Envelope) {}

    fn research_state(&self, s: &RunState) {
        let _ = self.0.lock().unwrap().send(s.clone());
    }
}

fn wait_state(states: &Receiver<RunState>, state: &str) -> RunState {
    loop {
        let s = states
            .recv_timeout(Duration::from_secs(600))
            .unwrap_or_else(|e| panic!("no {state} state: {e}"));
        if s.state == state {
            return s;
        }
        assert_ne!(s.state, "failed", "{}", s.message);
    }
}

/// The stored configuration of session `id` in the data directory at `data`.
fn stored_config(data: &std::path::Path, id: i64) -> rudder::session::SessionConfig {
    let paths = Paths {
        data_dir: data.to_path_buf(),
        models_dir: common::models_dir(),
    };
    let store = rudder::session::SessionStore::open(&paths.sessions_db()).unwrap();
    rudder::session::SessionLog::new(store, id)
        .config()
        .unwrap()
}

fn session_ids(data: &std::path::Path) -> Vec<i64> {
    let paths = Paths {
        data_dir: data.to_path_buf(),
        models_dir: common::models_dir(),
    };
    let store = rudder::session::SessionStore::open(&paths.sessions_db()).unwrap();
    let mut ids: Vec<i64> = rudder::session::list_sessions(&store)
        .unwrap()
        .iter()
        .map(|s| s.id)
        .collect();
    ids.sort();
    ids
}

/// The same request from the terminal, in the same data directory. Returns the session it
/// stored as soon as it has (the run itself is not what is compared, so it is killed), or,
/// when the command ends first, its exit status and what it printed.
fn start_from_the_cli(data: &std::path::Path, question: &str) -> (i64, Option<(bool, String)>) {
    let before = session_ids(data);
    let log = tempfile::NamedTempFile::new().unwrap();
    let mut child = common::command(env!("CARGO_BIN_EXE_rudder"), data)
        .args([
            "research",
            question,
            "--no-history",
            "--depth",
            "0",
            "--breadth",
            "1",
            "--no-clarify",
            "--never-ask",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(log.reopen().unwrap())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(300);
    loop {
        let new: Vec<i64> = session_ids(data)
            .into_iter()
            .filter(|id| !before.contains(id))
            .collect();
        if let Ok(Some(status)) = child.try_wait() {
            let stderr = std::fs::read_to_string(log.path()).unwrap();
            let id = *new
                .first()
                .unwrap_or_else(|| panic!("no session stored: {stderr}"));
            return (id, Some((status.success(), stderr)));
        }
        if let Some(&id) = new.first() {
            let _ = child.kill();
            let _ = child.wait();
            return (id, None);
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the CLI stored nothing"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A request started from the window and the same request started from the terminal are
/// stored alike — the same settings and the same model — because both go through
/// `Session`; with an OpenAI-compatible server configured, both record the server's model and
/// the window's run goes to the server (before, it recorded the local model and ran on it).
#[test]
fn the_cli_and_the_window_record_the_same_model_and_configuration() {
    common::store();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_path_buf();
    let paths = Paths {
        data_dir: data.clone(),
        models_dir: common::models_dir(),
    };
    std::fs::write(
        paths.settings_file(),
        format!(
            "chat_model = \"{}\"\n[llama]\nthreads = 1\n",
            common::CHAT_MODEL
        ),
    )
    .unwrap();
    let (tx, states) = channel();
    let app = App::new(paths, Arc::new(States(Mutex::new(tx))));
    let docs = common::repo_root().join("tests/fixtures/desktop-docs");
    app.docs_add(&[docs.display().to_string()]).unwrap();
    let question = "How hot should the water be for green tea?";
    let request = ResearchRequest {
        question: question.into(),
        use_history: false,
        use_docs: true,
        depth: Some(0),
        breadth: Some(1),
        clarify_turns: Some(0),
        ..ResearchRequest::default()
    };

    // The local model. Only what is stored is compared, so the window's run is stopped.
    let from_window = app.research_start(&request).unwrap();
    app.research_stop(from_window).unwrap();
    wait_state(&states, "stopped");
    let (from_cli, _) = start_from_the_cli(&data, question);
    assert_ne!(from_cli, from_window);
    let window_config = stored_config(&data, from_window);
    assert_eq!(window_config.model, common::CHAT_MODEL);
    assert_eq!(window_config, stored_config(&data, from_cli));

    // An OpenAI-compatible server where nothing listens.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let server = format!("127.0.0.1:{port}");
    std::fs::write(
        data.join("settings.toml"),
        format!(
            "chat_model = \"{}\"\n[llama]\nthreads = 1\n[openai]\nbase_url = \"http://{server}/v1\"\nmodel = \"served-model\"\n",
            common::CHAT_MODEL
        ),
    )
    .unwrap();
    let from_window = app.research_start(&request).unwrap();
    let failed = loop {
        let s = states
            .recv_timeout(Duration::from_secs(600))
            .expect("a final state");
        assert_ne!(s.state, "finished", "the run did not go to the server");
        if s.state == "failed" {
            break s;
        }
    };
    assert!(failed.message.contains(&server), "{}", failed.message);
    // The terminal's run fails the same way (or is caught before it does).
    let (from_cli, ended) = start_from_the_cli(&data, question);
    if let Some((ok, stderr)) = ended {
        assert!(!ok, "nothing listens at {server}");
        assert!(stderr.contains(&server), "{stderr}");
    }
    let window_config = stored_config(&data, from_window);
    assert_eq!(window_config.model, "served-model");
    assert_eq!(window_config, stored_config(&data, from_cli));
}
