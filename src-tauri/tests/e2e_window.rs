//! End-to-end test of the real desktop window: tauri-driver + WebKitWebDriver drive the built
//! app, and the test reads what the window shows.
//!
//! Needs `tauri-driver` (`cargo install tauri-driver --locked`), `/usr/bin/WebKitWebDriver`
//! (Debian: webkit2gtk-driver), an X display (`xvfb-run -a`) and a build of the app with the
//! `custom-protocol` feature so it serves `ui/dist` instead of the dev server.
//! `scripts/e2e.sh` does all of that.
//!
//! `scripts/package-test.sh` runs the same tests against the app installed from the Debian
//! package in a clean Debian 12 system.
//!
//! Environment: `RUDDER_APP_BIN` (app to launch, default: this package's binary),
//! `TAURI_DRIVER` (default: `tauri-driver` on PATH, then `$CARGO_HOME/bin`),
//! `RUDDER_E2E_ARTIFACTS` (screenshot folder, default: `<repo>/test-artifacts`).
//!
//! Linux only: it drives WebKitGTK through WebKitWebDriver.
#![cfg(target_os = "linux")]

mod common;

use std::time::{Duration, Instant};

use common::{artifacts_dir, check_trace, close, connect, connect_app, strace, traced_app, Driver};
use fantoccini::{Client, Locator};
use rudder::config::Paths;

const STATUS_TIMEOUT: Duration = Duration::from_secs(30);
/// Bounds everything done in a session, so that a WebDriver command that never answers fails
/// the test instead of hanging it.
const SESSION_TIMEOUT: Duration = Duration::from_secs(60);

/// What the window showed, gathered before the session is closed so that cleanup always runs.
struct Observed {
    model_status: String,
    embed_status: String,
    threads_status: String,
    gpu_status: String,
    recommendation: String,
    error_text: String,
    title: String,
    /// What `eval` does in the page: the CSP (`script-src 'self'`) must refuse it.
    eval_outcome: String,
    screenshot: Vec<u8>,
    /// What the empty screens say to do next: (research, history, you).
    guidance: (String, String, String),
    /// When `#model-status` first showed the engine's answer.
    status_shown: Instant,
}

impl Observed {
    fn status_shown_after(&self, launched: Instant) -> Duration {
        self.status_shown.saturating_duration_since(launched)
    }
}

/// The text of `id` once it is shown (empty if it is not within the status timeout).
async fn shown_text(client: &Client, id: &str) -> Result<String, Box<dyn std::error::Error>> {
    let deadline = Instant::now() + STATUS_TIMEOUT;
    loop {
        let e = client.find(Locator::Id(id)).await?;
        if e.is_displayed().await? {
            let text = e.text().await?;
            if !text.trim().is_empty() {
                return Ok(text);
            }
        }
        if Instant::now() >= deadline {
            return Ok(String::new());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn text_of(client: &Client, id: &str) -> Result<String, fantoccini::error::CmdError> {
    client.find(Locator::Id(id)).await?.text().await
}

async fn observe(client: &Client) -> Result<Observed, Box<dyn std::error::Error>> {
    // The page starts with "Checking engine…" and replaces it once `engine_status` answers.
    let deadline = Instant::now() + STATUS_TIMEOUT;
    let (model_status, status_shown) = loop {
        let text = text_of(client, "model-status").await?;
        if text.contains("Chat model") {
            break (text, Instant::now());
        }
        if Instant::now() >= deadline {
            return Err(
                format!("#model-status still says {text:?} after {STATUS_TIMEOUT:?}").into(),
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let error_element = client.find(Locator::Id("engine-error")).await?;
    let error_text = if error_element.is_displayed().await? {
        error_element.text().await?
    } else {
        String::new()
    };
    // The DOM is updated before the window repaints; let two frames pass so that the
    // screenshot shows the status rather than the "Checking engine…" placeholder.
    client
        .execute_async(
            "const done = arguments[arguments.length - 1];\n\
             requestAnimationFrame(() => requestAnimationFrame(() => done()));",
            Vec::new(),
        )
        .await?;
    let eval_outcome = client
        .execute(
            "try { return 'allowed: ' + eval('1 + 1'); } catch (e) { return e.name; }",
            Vec::new(),
        )
        .await?;
    let embed_status = text_of(client, "embed-status").await?;
    let threads_status = text_of(client, "threads-status").await?;
    let gpu_status = text_of(client, "gpu-status").await?;
    let recommendation = text_of(client, "model-recommendation").await?;
    let title = client.title().await?;
    let screenshot = client.screenshot().await?;
    // The empty states: each says what to do next, with a way there.
    let mut guidance = Vec::new();
    for (nav, id) in [
        ("nav-research", "research-guide"),
        ("nav-history", "history-empty"),
        ("nav-you", "you-empty"),
    ] {
        client.find(Locator::Id(nav)).await?.click().await?;
        guidance.push(shown_text(client, id).await?);
    }
    Ok(Observed {
        guidance: (
            guidance[0].clone(),
            guidance[1].clone(),
            guidance[2].clone(),
        ),
        model_status,
        status_shown,
        embed_status,
        threads_status,
        gpu_status,
        recommendation,
        error_text,
        title,
        eval_outcome: eval_outcome.as_str().unwrap_or_default().to_owned(),
        screenshot,
    })
}

/// Reads the window (within the session timeout), then ends the session, which closes the app,
/// and drops the driver (and its WebKitWebDriver), which takes the app down if the session
/// could not be ended: cleanup runs whatever the window did.
async fn observe_then_close(client: Client, driver: Driver) -> Observed {
    let observed = tokio::time::timeout(SESSION_TIMEOUT, observe(&client)).await;
    close(client).await;
    drop(driver);
    observed
        .unwrap_or_else(|_| panic!("the window did not answer within {SESSION_TIMEOUT:?}"))
        .expect("reading the window")
}

/// Writes the window's screenshot to the artifacts folder as `name`.
fn save_screenshot(observed: &Observed, name: &str) -> std::path::PathBuf {
    let artifacts = artifacts_dir();
    std::fs::create_dir_all(&artifacts).expect("create test-artifacts");
    let shot = artifacts.join(name);
    std::fs::write(&shot, &observed.screenshot).expect("write screenshot");
    shot
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs tauri-driver, WebKitWebDriver and an X display; run scripts/e2e.sh"]
async fn window_shows_engine_status_for_empty_data_dir() {
    let data_dir = tempfile::tempdir().expect("temp data dir");
    // What the engine itself says about this data dir: nothing is installed there.
    let expected = rudder::status::engine_status(&Paths::at(data_dir.path()))
        .expect("engine status for a fresh data dir");
    assert!(
        !expected.chat_model_present,
        "a fresh data dir cannot hold the chat model"
    );

    let models = data_dir.path().join("models");
    let driver = Driver::start(&[
        ("RUDDER_DATA_DIR", data_dir.path().as_os_str()),
        ("RUDDER_MODELS_DIR", models.as_os_str()),
    ]);
    let launched = Instant::now();
    let client = connect(&driver).await;
    let observed = observe_then_close(client, driver).await;
    // scripts/package-test.sh reports this line for the installed app.
    eprintln!(
        "first window: the engine status showed {:.1} s after launch",
        observed.status_shown_after(launched).as_secs_f64()
    );
    let shot = save_screenshot(&observed, "e2e-window.png");
    eprintln!("screenshot: {}", shot.display());
    eprintln!("#model-status: {}", observed.model_status);
    eprintln!("#embed-status: {}", observed.embed_status);
    eprintln!("#threads-status: {}", observed.threads_status);
    eprintln!("#gpu-status: {}", observed.gpu_status);
    eprintln!("#model-recommendation: {}", observed.recommendation);
    eprintln!("eval in page: {}", observed.eval_outcome);

    assert!(
        observed.screenshot.starts_with(b"\x89PNG\r\n\x1a\n"),
        "screenshot is not a PNG"
    );
    assert_eq!(observed.title, "Rudder");
    let (research, history, you) = &observed.guidance;
    assert!(
        research.contains("models are not installed") && research.contains("Go to Setup"),
        "{research:?}"
    );
    assert!(
        history.contains("No history imported yet") && history.contains("Import history"),
        "{history:?}"
    );
    assert!(
        you.contains("No history imported yet") && you.contains("Import history"),
        "{you:?}"
    );
    assert_eq!(observed.error_text, "", "the window shows an engine error");
    assert_eq!(
        observed.eval_outcome, "EvalError",
        "the page's CSP must refuse eval (script-src 'self')"
    );
    assert_eq!(
        observed.model_status,
        format!("Chat model: {} — missing", expected.chat_model)
    );
    assert_eq!(
        observed.embed_status,
        format!("Embedding model: {} — missing", expected.embed_model)
    );
    assert!(
        observed
            .threads_status
            .starts_with(&format!("Threads: {}", expected.threads)),
        "unexpected threads line {:?}",
        observed.threads_status
    );
    // The window says where the model would run, as the engine planned it.
    match &expected.offload.device {
        None => assert_eq!(
            observed.gpu_status,
            "GPU: none — the model runs on the CPU (automatic)"
        ),
        Some(device) => assert!(
            observed.gpu_status.contains(&device.description),
            "{:?}",
            observed.gpu_status
        ),
    }
    if let Some(r) = &expected.recommendation {
        assert!(
            observed
                .recommendation
                .starts_with(&format!("Recommended for this machine: {}", r.model)),
            "{:?}",
            observed.recommendation
        );
    }
}

/// A first run as a new user starts the app: no data folder yet and nothing in the environment
/// saying where one goes. The window shows Setup with the models missing, the data folder
/// appears at `~/.local/share/rudder`, and the app (under strace) opens no socket off the
/// loopback interface and writes nowhere else: the home and temp folders hold nothing but that
/// folder. With `RUDDER_APP_BIN=/usr/bin/rudder-app` this is the installed package's first run
/// (scripts/package-test.sh).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs tauri-driver, WebKitWebDriver, strace and an X display; run scripts/e2e.sh"]
async fn first_run_makes_its_data_folder_under_home_and_writes_nowhere_else() {
    strace::require();
    let sandbox = tempfile::tempdir().expect("sandbox");
    let sandbox_path = std::fs::canonicalize(sandbox.path()).unwrap();
    let (home, tmp) = (sandbox_path.join("home"), sandbox_path.join("tmp"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&tmp).unwrap();
    // Where a new user's data goes (XDG_DATA_HOME unset): dirs::data_dir() under HOME.
    let data = home.join(".local").join("share").join("rudder");
    let trace_log = sandbox_path.join("app.strace");
    let app = traced_app(&sandbox_path, &trace_log, &strace::strace_args());

    let driver = Driver::start_without(
        &[
            ("HOME", home.as_os_str()),
            ("TMPDIR", tmp.as_os_str()),
            // For the WebDriver processes (not traced), as in e2e_flow.rs.
            ("GSETTINGS_BACKEND", "memory".as_ref()),
        ],
        &[
            "RUDDER_DATA_DIR",
            "RUDDER_MODELS_DIR",
            "XDG_DATA_HOME",
            "XDG_CACHE_HOME",
            "XDG_CONFIG_HOME",
            "XDG_STATE_HOME",
        ],
    );
    let client = connect_app(&driver, &app).await;
    let observed = observe_then_close(client, driver).await;
    save_screenshot(&observed, "e2e-first-run.png");
    eprintln!("#model-status: {}", observed.model_status);
    assert_eq!(observed.error_text, "", "the window shows an engine error");
    assert!(
        observed.model_status.starts_with("Chat model: ")
            && observed.model_status.ends_with(" — missing"),
        "{:?}",
        observed.model_status
    );
    let (research, _, _) = &observed.guidance;
    assert!(
        research.contains("models are not installed") && research.contains("Go to Setup"),
        "{research:?}"
    );
    assert!(
        data.is_dir(),
        "the first run made no data folder at {}",
        data.display()
    );
    check_trace(&trace_log, &data, &[&home, &tmp]);
}

#[test]
#[ignore = "needs a build of the app; run scripts/e2e.sh"]
fn without_a_display_the_app_says_so_and_exits() {
    let data = tempfile::tempdir().unwrap();
    let output = std::process::Command::new(common::app_path())
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .env("RUDDER_DATA_DIR", data.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("no display"), "{stderr}");
    assert!(stderr.contains("rudder research"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}
