//! End-to-end test of the real desktop window: tauri-driver + WebKitWebDriver drive the built
//! app, and the test reads what the window shows.
//!
//! Needs `tauri-driver` (`cargo install tauri-driver --locked`), `/usr/bin/WebKitWebDriver`
//! (Debian: webkit2gtk-driver), an X display (`xvfb-run -a`) and a build of the app with the
//! `custom-protocol` feature so it serves `ui/dist` instead of the dev server.
//! `scripts/e2e.sh` does all of that.
//!
//! Environment: `RUDDER_APP_BIN` (app to launch, default: this package's binary),
//! `TAURI_DRIVER` (default: `tauri-driver` on PATH, then `$CARGO_HOME/bin`),
//! `RUDDER_E2E_ARTIFACTS` (screenshot folder, default: `<repo>/test-artifacts`).
//!
//! Linux only: it drives WebKitGTK through WebKitWebDriver.
#![cfg(target_os = "linux")]

use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use rudder::config::Paths;
use serde_json::json;

const DRIVER_START_TIMEOUT: Duration = Duration::from_secs(20);
const STATUS_TIMEOUT: Duration = Duration::from_secs(30);
/// Bounds everything done in a session, so that a WebDriver command that never answers fails
/// the test instead of hanging it.
const SESSION_TIMEOUT: Duration = Duration::from_secs(60);

/// What the window showed, gathered before the session is closed so that cleanup always runs.
struct Observed {
    model_status: String,
    embed_status: String,
    threads_status: String,
    error_text: String,
    title: String,
    /// What `eval` does in the page: the CSP (`script-src 'self'`) must refuse it.
    eval_outcome: String,
    screenshot: Vec<u8>,
}

/// A running `tauri-driver` in its own process group. On drop the whole group (tauri-driver,
/// WebKitWebDriver, the app and WebKit's helpers) gets SIGTERM, then SIGKILL for whatever is
/// left once tauri-driver has exited or 5 s have passed.
struct Driver {
    child: Child,
    port: u16,
}

impl Driver {
    fn start(data_dir: &Path) -> Self {
        let port = free_port();
        let native_port = free_port();
        let program = tauri_driver_path();
        let mut command = Command::new(&program);
        command
            .args([
                "--port",
                &port.to_string(),
                "--native-port",
                &native_port.to_string(),
            ])
            // WebKitWebDriver launches the app, so it inherits this environment.
            .env("RUDDER_DATA_DIR", data_dir)
            .env("RUDDER_MODELS_DIR", data_dir.join("models"))
            .stdin(Stdio::null())
            // Its own process group: WebKitWebDriver and the app it launches join it, so
            // cleanup can reach the app even when tauri-driver exits without closing it.
            .process_group(0);
        // With either of these set, WebKitGTK 2.50 under Xvfb renders the page but never answers
        // WebDriver's screenshot command (measured on Debian 12); it renders fine without them.
        command
            .env_remove("WEBKIT_DISABLE_COMPOSITING_MODE")
            .env_remove("WEBKIT_DISABLE_DMABUF_RENDERER");
        let child = command
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", program.display()));
        let driver = Self { child, port };
        driver.wait_until_listening();
        driver
    }

    fn wait_until_listening(&self) {
        let deadline = Instant::now() + DRIVER_START_TIMEOUT;
        while TcpStream::connect((Ipv4Addr::LOCALHOST, self.port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "tauri-driver did not listen on port {} within {DRIVER_START_TIMEOUT:?}",
                self.port
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let Ok(pgid) = libc::pid_t::try_from(self.child.id()) else {
            let _ = self.child.kill();
            let _ = self.child.wait();
            return;
        };
        // SAFETY: kill(2) with a negative pid signals the process group that `Driver::start`
        // created for this child; it has no memory-safety preconditions.
        unsafe {
            libc::kill(-pgid, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline && !matches!(self.child.try_wait(), Ok(Some(_))) {
            std::thread::sleep(Duration::from_millis(50));
        }
        // SAFETY: as above; ESRCH (group already gone) is fine.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|listener| listener.local_addr())
        .expect("no free local port")
        .port()
}

fn tauri_driver_path() -> PathBuf {
    if let Some(path) = std::env::var_os("TAURI_DRIVER") {
        return PathBuf::from(path);
    }
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("tauri-driver"))
            .find(|candidate| candidate.is_file())
    });
    on_path.unwrap_or_else(|| {
        let cargo_home = std::env::var_os("CARGO_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cargo")))
            .expect("neither CARGO_HOME nor HOME is set");
        cargo_home.join("bin").join("tauri-driver")
    })
}

fn app_path() -> PathBuf {
    if let Some(path) = std::env::var_os("RUDDER_APP_BIN") {
        return PathBuf::from(path);
    }
    // Without the feature the app loads the Vite dev server instead of the embedded `ui/dist`.
    if !cfg!(feature = "custom-protocol") {
        panic!("run with `--features custom-protocol` (or set RUDDER_APP_BIN); see scripts/e2e.sh");
    }
    PathBuf::from(env!("CARGO_BIN_EXE_rudder-app"))
}

fn artifacts_dir() -> PathBuf {
    std::env::var_os("RUDDER_E2E_ARTIFACTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../test-artifacts"))
}

async fn text_of(client: &Client, id: &str) -> Result<String, fantoccini::error::CmdError> {
    client.find(Locator::Id(id)).await?.text().await
}

async fn observe(client: &Client) -> Result<Observed, Box<dyn std::error::Error>> {
    // The page starts with "Checking engine…" and replaces it once `engine_status` answers.
    let deadline = Instant::now() + STATUS_TIMEOUT;
    let model_status = loop {
        let text = text_of(client, "model-status").await?;
        if text.contains("Chat model") {
            break text;
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
    Ok(Observed {
        model_status,
        embed_status: text_of(client, "embed-status").await?,
        threads_status: text_of(client, "threads-status").await?,
        error_text,
        title: client.title().await?,
        eval_outcome: eval_outcome.as_str().unwrap_or_default().to_owned(),
        screenshot: client.screenshot().await?,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs tauri-driver, WebKitWebDriver and an X display; run scripts/e2e.sh"]
async fn window_shows_engine_status_for_empty_data_dir() {
    let app = app_path();
    assert!(
        app.is_file(),
        "app binary {} not found; build rudder-app first",
        app.display()
    );
    let data_dir = tempfile::tempdir().expect("temp data dir");
    // What the engine itself says about this data dir: nothing is installed there.
    let expected = rudder::status::engine_status(&Paths::at(data_dir.path()))
        .expect("engine status for a fresh data dir");
    assert!(
        !expected.chat_model_present,
        "a fresh data dir cannot hold the chat model"
    );

    let driver = Driver::start(data_dir.path());
    let mut capabilities = serde_json::Map::new();
    capabilities.insert("browserName".into(), json!("wry"));
    capabilities.insert("tauri:options".into(), json!({ "application": app }));
    let mut builder = ClientBuilder::new(HttpConnector::new());
    builder.capabilities(capabilities);
    // WebKitWebDriver waits for the app's webview forever if the app never shows one.
    let client = tokio::time::timeout(SESSION_TIMEOUT, builder.connect(&driver.url()))
        .await
        .unwrap_or_else(|_| panic!("no WebDriver session with the app within {SESSION_TIMEOUT:?}"))
        .expect("WebDriver session with the app (is an X display available?)");

    let observed = tokio::time::timeout(SESSION_TIMEOUT, observe(&client)).await;
    // Ending the session closes the app; the driver (and its WebKitWebDriver) goes when `driver`
    // drops, which also takes the app down if the session could not be ended.
    match tokio::time::timeout(Duration::from_secs(10), client.close()).await {
        Ok(Ok(())) => {}
        Ok(Err(error)) => eprintln!("closing the WebDriver session failed: {error}"),
        Err(_) => eprintln!("closing the WebDriver session timed out"),
    }
    drop(driver);
    let observed = observed
        .unwrap_or_else(|_| panic!("the window did not answer within {SESSION_TIMEOUT:?}"))
        .expect("reading the window");

    let artifacts = artifacts_dir();
    std::fs::create_dir_all(&artifacts).expect("create test-artifacts");
    let shot = artifacts.join("e2e-window.png");
    std::fs::write(&shot, &observed.screenshot).expect("write screenshot");
    eprintln!("screenshot: {}", shot.display());
    eprintln!("#model-status: {}", observed.model_status);
    eprintln!("#embed-status: {}", observed.embed_status);
    eprintln!("#threads-status: {}", observed.threads_status);
    eprintln!("eval in page: {}", observed.eval_outcome);

    assert!(
        observed.screenshot.starts_with(b"\x89PNG\r\n\x1a\n"),
        "screenshot is not a PNG"
    );
    assert_eq!(observed.title, "Rudder");
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
}
