//! What the end-to-end tests of the real window share: tauri-driver in its own process group,
//! the app binary, the artifacts folder, and a WebDriver session.
#![allow(dead_code)]

use std::ffi::OsStr;
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::json;

pub use rudder_testkit::strace;

pub const DRIVER_START_TIMEOUT: Duration = Duration::from_secs(20);
/// WebKitWebDriver waits for the app's webview forever if the app never shows one.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(60);

/// A running `tauri-driver` in its own process group. On drop the whole group (tauri-driver,
/// WebKitWebDriver, the app and WebKit's helpers) gets SIGTERM, then SIGKILL for whatever is
/// left once tauri-driver has exited or 5 s have passed.
pub struct Driver {
    child: Child,
    port: u16,
}

impl Driver {
    /// Starts tauri-driver; the app it launches sees `env` (data and models folders, …).
    pub fn start(env: &[(&str, &OsStr)]) -> Self {
        Self::start_without(env, &[])
    }

    /// [`Driver::start`], with the variables named in `unset` removed from the environment the
    /// app inherits (a first run that must find its folders the way a new user's would).
    pub fn start_without(env: &[(&str, &OsStr)], unset: &[&str]) -> Self {
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
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            // Its own process group: WebKitWebDriver and the app it launches join it, so
            // cleanup can reach the app even when tauri-driver exits without closing it.
            .process_group(0);
        // With either of these set, WebKitGTK 2.50 under Xvfb renders the page but never answers
        // WebDriver's screenshot command (measured on Debian 12); it renders fine without them.
        command
            .env_remove("WEBKIT_DISABLE_COMPOSITING_MODE")
            .env_remove("WEBKIT_DISABLE_DMABUF_RENDERER");
        for name in unset {
            command.env_remove(name);
        }
        let child = command
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", program.display()));
        let driver = Self { child, port };
        // tauri-driver listens at once but starts WebKitWebDriver beside it, and a session
        // requested before that one listens fails with "connection refused" (seen on a loaded
        // machine): wait for both.
        driver.wait_until_listening(port, "tauri-driver");
        driver.wait_until_listening(native_port, "WebKitWebDriver");
        driver
    }

    fn wait_until_listening(&self, port: u16, what: &str) {
        let deadline = Instant::now() + DRIVER_START_TIMEOUT;
        while TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "{what} did not listen on port {port} within {DRIVER_START_TIMEOUT:?}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn url(&self) -> String {
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

pub fn app_path() -> PathBuf {
    if let Some(path) = std::env::var_os("RUDDER_APP_BIN") {
        return PathBuf::from(path);
    }
    // Without the feature the app loads the Vite dev server instead of the embedded `ui/dist`.
    if !cfg!(feature = "custom-protocol") {
        panic!("run with `--features custom-protocol` (or set RUDDER_APP_BIN); see scripts/e2e.sh");
    }
    PathBuf::from(env!("CARGO_BIN_EXE_rudder-app"))
}

pub fn artifacts_dir() -> PathBuf {
    std::env::var_os("RUDDER_E2E_ARTIFACTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../test-artifacts"))
}

/// A WebDriver session with the app (which tauri-driver launches).
pub async fn connect(driver: &Driver) -> Client {
    connect_app(driver, &app_path()).await
}

/// A script in `dir` that runs the app under `strace` (see `rudder_testkit::strace`), logging
/// to `log`; WebKitWebDriver launches it in place of the app.
pub fn traced_app(dir: &Path, log: &Path, trace_args: &[String]) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let quote = |s: &str| format!("'{}'", s.replace('\'', "'\\''"));
    let mut script = String::from("#!/bin/sh\nexec");
    for arg in trace_args {
        script.push(' ');
        script.push_str(&quote(arg));
    }
    script.push_str(&format!(
        " -o {} {} \"$@\"\n",
        quote(&log.to_string_lossy()),
        quote(&app_path().to_string_lossy())
    ));
    let path = dir.join("rudder-app-traced");
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// A WebDriver session with `app`, which tauri-driver launches.
pub async fn connect_app(driver: &Driver, app: &Path) -> Client {
    let app = app.to_path_buf();
    assert!(
        app.is_file(),
        "app binary {} not found; build rudder-app first",
        app.display()
    );
    let mut capabilities = serde_json::Map::new();
    capabilities.insert("browserName".into(), json!("wry"));
    capabilities.insert("tauri:options".into(), json!({ "application": app }));
    let mut builder = ClientBuilder::new(HttpConnector::new());
    builder.capabilities(capabilities);
    // A match, not `unwrap_or_else`: fantoccini's error (which holds a JSON value) is large
    // enough for clippy's `result_large_err` on a closure returning it.
    match tokio::time::timeout(CONNECT_TIMEOUT, builder.connect(&driver.url())).await {
        Ok(session) => {
            session.expect("WebDriver session with the app (is an X display available?)")
        }
        Err(_) => panic!("no WebDriver session with the app within {CONNECT_TIMEOUT:?}"),
    }
}

/// Ends the session (which closes the app), without hanging on a WebDriver that stopped
/// answering.
pub async fn close(client: Client) {
    match tokio::time::timeout(Duration::from_secs(10), client.close()).await {
        Ok(Ok(())) => {}
        Ok(Err(error)) => eprintln!("closing the WebDriver session failed: {error}"),
        Err(_) => eprintln!("closing the WebDriver session timed out"),
    }
}

/// No socket off the loopback interface (WebDriver drives the window through WebKit's
/// automation server on 127.0.0.1), no DNS, and nothing written outside the data directory;
/// the sandboxed home and temp folders hold nothing but (on a first run) the data directory.
pub fn check_trace(log: &Path, data: &Path, empty: &[&Path]) {
    let trace = std::fs::read_to_string(log).expect("the app's strace log");
    let cwd = std::env::current_dir().unwrap();
    // Fontconfig refreshes the system-wide font index when fonts were installed after it was
    // built (as root only: a user cannot write there); it holds font metadata, no user data.
    let system_font_index = Path::new("/var/cache/fontconfig");
    let mut findings = strace::analyse_with(&trace, &cwd, &[data, system_font_index], true);
    assert!(findings.calls > 0, "the trace of the app is empty");
    // A first run makes the folders leading to its data directory (`~/.local/share`): a
    // `mkdir` of one of those is not a write outside it.
    let leading: Vec<String> = data
        .ancestors()
        .skip(1)
        .map(|a| format!("mkdir(\"{}\"", a.display()))
        .collect();
    findings
        .writes_outside
        .retain(|call| !leading.iter().any(|m| call.contains(m.as_str())));
    // The data directory may sit inside one of the folders that must otherwise stay empty (the
    // home folder, on a first run): it and the folders leading to it are not "left behind".
    let outside: Vec<_> = empty
        .iter()
        .flat_map(|dir| walk(dir))
        .filter(|path| !path.starts_with(data) && !data.starts_with(path))
        .collect();
    eprintln!(
        "app trace: {} calls, {} network findings, {} DNS, {} writes outside, {} files left in home/tmp",
        findings.calls,
        findings.network.len(),
        findings.dns.len(),
        findings.writes_outside.len(),
        outside.len()
    );
    assert!(
        findings.is_clean() && outside.is_empty(),
        "the desktop app broke the privacy promise:\nnetwork: {:#?}\nDNS: {:#?}\n\
         writes outside the data directory: {:#?}\nleft in home/tmp: {outside:#?}",
        findings.network,
        findings.dns,
        findings.writes_outside
    );
}

pub fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        out.push(entry.path());
        if entry.file_type().map(|t| t.is_dir()).unwrap_or(false) {
            out.extend(walk(&entry.path()));
        }
    }
    out
}
