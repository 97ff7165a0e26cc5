//! The web source against a mock SearxNG on loopback, and the guarantee that it stays off
//! (and silent) unless the user enables it.
//!
//! The server is axum on a tokio runtime in its own thread (the blocking client must never run
//! inside a runtime); the tests themselves are plain synchronous `#[test]`s, like the engine.

use std::collections::HashMap;
use std::future::IntoFuture;
use std::io::ErrorKind;
use std::net::{SocketAddr, TcpListener as StdListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use axum::extract::{Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use rudder::config::{Settings, WebSettings};
use rudder::sources::web::{web_source_from_settings, WebSearch, SNIPPET_CHARS, WEB_DISCLOSURE};
use rudder::sources::{CitationTarget, Source, Sources};
use serde_json::{json, Value};
use tokio::net::TcpListener;

// ---------------------------------------------------------------------------------------------
// The mock SearxNG
// ---------------------------------------------------------------------------------------------

/// What the server answers to every request.
#[derive(Clone)]
enum Reply {
    /// `200 application/json` with this body.
    Json(Value),
    /// This status, content type and body.
    Raw(u16, &'static str, String),
}

struct ServerState {
    /// The query parameters of each request received.
    received: Mutex<Vec<HashMap<String, String>>>,
    reply: Reply,
}

struct MockSearx {
    addr: SocketAddr,
    state: Arc<ServerState>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl MockSearx {
    fn start(reply: Reply) -> Self {
        let state = Arc::new(ServerState {
            received: Mutex::new(Vec::new()),
            reply,
        });
        let stop = Arc::new(AtomicBool::new(false));
        let (addr_tx, addr_rx) = mpsc::channel();
        let thread = {
            let state = Arc::clone(&state);
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(1)
                    .enable_all()
                    .build()
                    .expect("tokio runtime");
                runtime.block_on(async move {
                    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
                    addr_tx.send(listener.local_addr().unwrap()).unwrap();
                    let app = Router::new()
                        .route("/search", get(search))
                        .with_state(state);
                    let serve = axum::serve(listener, app).into_future();
                    tokio::select! {
                        result = serve => result.expect("server"),
                        () = wait_for(stop) => {}
                    }
                });
                runtime.shutdown_timeout(Duration::from_secs(1));
            })
        };
        let addr = addr_rx.recv().expect("server address");
        Self {
            addr,
            state,
            stop,
            thread: Some(thread),
        }
    }

    fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn source(&self) -> WebSearch {
        WebSearch::new(&self.base_url(), Duration::from_secs(10))
    }

    fn received(&self) -> Vec<HashMap<String, String>> {
        self.state.received.lock().unwrap().clone()
    }
}

impl Drop for MockSearx {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn wait_for(stop: Arc<AtomicBool>) {
    while !stop.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn search(
    State(state): State<Arc<ServerState>>,
    Query(params): Query<HashMap<String, String>>,
) -> Response {
    state.received.lock().unwrap().push(params);
    match &state.reply {
        Reply::Json(value) => axum::Json(value.clone()).into_response(),
        Reply::Raw(status, content_type, body) => (
            StatusCode::from_u16(*status).unwrap(),
            [(header::CONTENT_TYPE, *content_type)],
            body.clone(),
        )
            .into_response(),
    }
}

fn searx_results() -> Value {
    json!({
        "query": "ignored",
        "number_of_results": 0,
        "results": [
            {"url": "https://example.org/a", "title": "  Alpha\n page ", "content": "  First   snippet.\n", "engine": "x", "score": 3.0},
            {"url": "https://example.org/b", "title": "Beta"},
            {"title": "No URL, skipped", "content": "nothing to cite"},
            {"url": null, "title": "Null URL, skipped"},
            {"url": "javascript:alert(1)", "title": "Not a web URL, skipped"},
            {"url": "https://example.org/a", "title": "Duplicate, skipped"},
            {"url": "https://example.org/c", "content": "Gamma snippet"},
            {"url": "https://example.org/d", "title": "Delta", "content": "x ".repeat(2000)},
            {"url": "https://example.org/e", "title": "Echo", "content": "e"}
        ],
        "answers": [],
        "suggestions": []
    })
}

// ---------------------------------------------------------------------------------------------
// Against the mock
// ---------------------------------------------------------------------------------------------

#[test]
fn results_are_parsed_into_web_evidence() {
    let server = MockSearx::start(Reply::Json(searx_results()));
    let mut source = server.source();
    assert_eq!(source.name(), "web");
    assert!(source.is_remote());

    let evidence = source.search("alpha beta", 10, None).expect("search");
    let urls: Vec<&str> = evidence
        .iter()
        .map(|e| match &e.target {
            CitationTarget::Web { url } => url.as_str(),
            other => panic!("not a web target: {other:?}"),
        })
        .collect();
    assert_eq!(
        urls,
        [
            "https://example.org/a",
            "https://example.org/b",
            "https://example.org/c",
            "https://example.org/d",
            "https://example.org/e"
        ]
    );
    assert_eq!(evidence[0].title, "Alpha page");
    assert_eq!(evidence[0].text, "First snippet.");
    // Missing content: empty text; missing title: the URL stands in.
    assert_eq!(evidence[1].title, "Beta");
    assert_eq!(evidence[1].text, "");
    assert_eq!(evidence[2].title, "https://example.org/c");
    assert_eq!(evidence[2].text, "Gamma snippet");
    // Long snippets are cut.
    let long = &evidence[3].text;
    assert!(long.chars().count() <= SNIPPET_CHARS, "{}", long.len());
    assert!(long.chars().count() > SNIPPET_CHARS / 2, "{}", long.len());
    assert!(long.ends_with('…'), "{long}");
    // Best first.
    assert!(evidence.windows(2).all(|w| w[0].score > w[1].score));
    assert_eq!(server.received().len(), 1);
}

#[test]
fn limit_is_respected() {
    let server = MockSearx::start(Reply::Json(searx_results()));
    let mut source = server.source();
    let evidence = source.search("q", 2, None).expect("search");
    assert_eq!(evidence.len(), 2);
    assert_eq!(
        evidence[1].target,
        CitationTarget::Web {
            url: "https://example.org/b".into()
        }
    );
    // A zero limit sends nothing at all.
    assert!(source.search("q", 0, None).expect("search").is_empty());
    assert_eq!(server.received().len(), 1);
}

#[test]
fn query_arrives_as_sent() {
    let server = MockSearx::start(Reply::Json(json!({"results": []})));
    let mut source = server.source();
    let query = "rust & \"async\" runtimes? 100% #1 a+b=c ünïcödé / 日本";
    let evidence = source.search(query, 5, None).expect("search");
    assert!(evidence.is_empty());
    let received = server.received();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].get("q").map(String::as_str), Some(query));
    assert_eq!(received[0].get("format").map(String::as_str), Some("json"));
    assert_eq!(received[0].len(), 2, "{:?}", received[0]);
}

#[test]
fn trailing_slash_in_the_base_url_is_fine() {
    let server = MockSearx::start(Reply::Json(searx_results()));
    let mut source = WebSearch::new(&format!("{}/", server.base_url()), Duration::from_secs(10));
    assert_eq!(source.endpoint(), format!("{}/search", server.base_url()));
    assert_eq!(source.search("q", 1, None).expect("search").len(), 1);
}

#[test]
fn http_error_names_the_url_and_status() {
    let server = MockSearx::start(Reply::Raw(500, "text/plain", "engine exploded".into()));
    let mut source = server.source();
    let err = source.search("q", 5, None).unwrap_err().to_string();
    assert!(
        err.contains(&format!("{}/search", server.base_url())),
        "{err}"
    );
    assert!(err.contains("500"), "{err}");
    assert!(err.contains("engine exploded"), "{err}");
}

#[test]
fn forbidden_hints_at_the_json_format() {
    let server = MockSearx::start(Reply::Raw(403, "text/html", "<h1>Forbidden</h1>".into()));
    let err = server
        .source()
        .search("q", 5, None)
        .unwrap_err()
        .to_string();
    assert!(err.contains(&server.base_url()), "{err}");
    assert!(err.contains("403"), "{err}");
    assert!(err.contains("search.formats"), "{err}");
}

#[test]
fn bad_json_names_the_url_and_position() {
    let server = MockSearx::start(Reply::Raw(
        200,
        "application/json",
        "{\"results\": [\n  {\"url\": \"https://example.org\",, }\n]}".into(),
    ));
    let err = server
        .source()
        .search("q", 5, None)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&format!("{}/search", server.base_url())),
        "{err}"
    );
    assert!(err.contains("line 2"), "{err}");
    assert!(err.contains("column"), "{err}");
}

#[test]
fn json_without_results_is_an_error() {
    let server = MockSearx::start(Reply::Json(json!({"error": "nope"})));
    let err = server
        .source()
        .search("q", 5, None)
        .unwrap_err()
        .to_string();
    assert!(err.contains(&server.base_url()), "{err}");
    assert!(err.contains("results"), "{err}");
}

#[test]
fn unreachable_server_names_the_url() {
    // Bind then drop: the port is very likely closed.
    let addr = StdListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let mut source = WebSearch::new(&format!("http://{addr}"), Duration::from_secs(5));
    let err = source.search("q", 5, None).unwrap_err().to_string();
    assert!(err.contains(&format!("http://{addr}/search")), "{err}");
}

// ---------------------------------------------------------------------------------------------
// Off unless enabled
// ---------------------------------------------------------------------------------------------

fn web_settings(url: &str, enabled: bool) -> Settings {
    Settings {
        web: Some(WebSettings {
            searxng_url: url.into(),
            enabled,
            ..WebSettings::default()
        }),
        ..Settings::default()
    }
}

#[test]
fn default_settings_have_no_web_source() {
    let settings = Settings::default();
    assert!(settings.web.is_none());
    assert!(web_source_from_settings(&settings).is_none());
    let defaults = WebSettings::default();
    assert!(!defaults.enabled);
    assert_eq!(defaults.timeout_secs, 15);
}

#[test]
fn disabled_or_urlless_settings_have_no_web_source() {
    assert!(web_source_from_settings(&web_settings("http://127.0.0.1:8888", false)).is_none());
    assert!(web_source_from_settings(&web_settings("", true)).is_none());
    assert!(web_source_from_settings(&web_settings("   ", true)).is_none());
    let source = web_source_from_settings(&web_settings("http://127.0.0.1:8888/", true))
        .expect("enabled with a URL");
    assert_eq!(source.endpoint(), "http://127.0.0.1:8888/search");
}

#[test]
fn web_section_in_settings_toml() {
    let settings: Settings =
        toml::from_str("[web]\nsearxng_url = \"http://127.0.0.1:8888\"\n").expect("parse");
    let web = settings.web.clone().expect("web section");
    assert!(!web.enabled, "a URL alone does not turn web search on");
    assert_eq!(web.timeout_secs, 15);
    assert!(web_source_from_settings(&settings).is_none());

    let settings: Settings = toml::from_str(
        "[web]\nsearxng_url = \"http://127.0.0.1:8888\"\nenabled = true\ntimeout_secs = 3\n",
    )
    .expect("parse");
    assert_eq!(settings.web.as_ref().map(|w| w.timeout_secs), Some(3));
    assert!(web_source_from_settings(&settings).is_some());

    // Settings without the section still parse, and round-trip.
    let plain: Settings = toml::from_str("chat_model = \"m\"\n").expect("parse");
    assert!(plain.web.is_none());
    let text = toml::to_string_pretty(&settings).expect("serialise");
    let back: Settings = toml::from_str(&text).expect("reparse");
    assert_eq!(back, settings);
}

#[test]
fn disclosure_says_what_leaves_the_machine() {
    let text = WEB_DISCLOSURE.to_lowercase();
    for word in [
        "searxng",
        "queries",
        "question",
        "persona",
        "history",
        "not fetched",
    ] {
        assert!(text.contains(word), "{word}: {WEB_DISCLOSURE}");
    }
}

/// Whether `listener` (non-blocking) receives a connection within `within`.
fn connection_within(listener: &StdListener, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    loop {
        match listener.accept() {
            Ok(_) => return true,
            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
            Err(e) => panic!("accept: {e}"),
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn disabled_web_search_makes_no_connection() {
    let listener = StdListener::bind("127.0.0.1:0").expect("bind");
    listener.set_nonblocking(true).expect("non-blocking");
    let url = format!("http://{}", listener.local_addr().unwrap());

    // Default settings, and the URL present but not enabled: no source, so nothing to search.
    for settings in [Settings::default(), web_settings(&url, false)] {
        let mut sources = Sources::new();
        if let Some(web) = web_source_from_settings(&settings) {
            sources.push(Box::new(web));
        }
        assert!(sources.is_empty());
        assert!(!sources.any_remote());
        let found = sources
            .search("what leaves the machine?", 5, None)
            .expect("search");
        assert!(found.is_empty());
    }
    assert!(
        !connection_within(&listener, Duration::from_millis(300)),
        "disabled web search connected to the configured URL"
    );

    // Enabling it builds a source without contacting anything either …
    let enabled = web_source_from_settings(&web_settings(&url, true)).expect("enabled");
    assert!(
        !connection_within(&listener, Duration::from_millis(100)),
        "building the source connected"
    );

    // … and the probe does see a connection once a search runs (so the checks above are real).
    let search = std::thread::spawn(move || {
        let mut sources = Sources::new();
        sources.push(Box::new(enabled));
        assert!(sources.any_remote());
        sources.search("q", 5, None)
    });
    assert!(
        connection_within(&listener, Duration::from_secs(10)),
        "an enabled search never connected"
    );
    // The accepted socket was dropped unanswered: the search fails, naming the URL.
    let err = search.join().unwrap().unwrap_err().to_string();
    assert!(err.contains(&url), "{err}");
}
