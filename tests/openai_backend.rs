//! The OpenAI-compatible backend against a real HTTP server on loopback.
//!
//! The server is axum on a tokio runtime in its own thread (the backend blocks its caller on a
//! runtime of its own, which must not happen inside another); the tests themselves are plain
//! synchronous `#[test]`s, like the engine. It speaks the streaming chat-completions protocol,
//! records every request it receives and how many it was answering at once.
//!
//! Streaming replies are real byte streams: the listener's sockets pause between SSE events
//! (see [`PacedIo`]), so each event reaches the client separately, as with a real server.

use std::future::{Future, IntoFuture};
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::task::{ready, Context, Poll};
use std::thread::JoinHandle;
use std::time::Duration;

use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use rudder::config::OpenAiSettings;
use rudder::llm::openai::OpenAiLlm;
use rudder::llm::{
    complete_json, map_concurrent, schema_of, CancelToken, FinishReason, GenerationOptions, Llm,
    LlmError, Message, OutputFormat, Request,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

/// Pause between SSE events.
const EVENT_DELAY: Duration = Duration::from_millis(25);

// ---------------------------------------------------------------------------------------------
// The mock server
// ---------------------------------------------------------------------------------------------

/// What the server answers to one request.
enum Reply {
    /// `200 text/event-stream` with this body.
    Sse(String),
    /// `200 application/json` with this body (a server that ignores `stream: true`).
    Json(Value),
    /// This status with this body.
    Error(u16, String),
    /// This reply, after the handler waited this long (a server busy generating).
    Delayed(Duration, Box<Reply>),
}

/// One request as the server saw it.
#[derive(Debug, Clone)]
struct Received {
    authorization: Option<String>,
    body: Value,
}

type ReplyFn = dyn Fn(usize, &Value) -> Reply + Send + Sync;

struct ServerState {
    received: Mutex<Vec<Received>>,
    reply: Box<ReplyFn>,
    /// Requests being answered now (from their arrival until their handler returns).
    in_flight: AtomicUsize,
    /// The most there ever were at once.
    peak_in_flight: AtomicUsize,
}

/// Counts one request in flight for as long as it lives.
struct InFlight<'a>(&'a ServerState);

impl<'a> InFlight<'a> {
    fn new(state: &'a ServerState) -> Self {
        let now = state.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        state.peak_in_flight.fetch_max(now, Ordering::SeqCst);
        Self(state)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

struct MockServer {
    addr: SocketAddr,
    state: Arc<ServerState>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl MockServer {
    /// Starts a server whose answer to the `n`th request (from 0) with body `b` is `reply(n, b)`.
    fn start(reply: impl Fn(usize, &Value) -> Reply + Send + Sync + 'static) -> Self {
        let state = Arc::new(ServerState {
            received: Mutex::new(Vec::new()),
            reply: Box::new(reply),
            in_flight: AtomicUsize::new(0),
            peak_in_flight: AtomicUsize::new(0),
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
                        .route("/v1/chat/completions", post(chat_completions))
                        .with_state(state);
                    let serve = axum::serve(PacedListener(listener), app).into_future();
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
        format!("http://{}/v1", self.addr)
    }

    fn endpoint(&self) -> String {
        format!("{}/chat/completions", self.base_url())
    }

    fn llm(&self) -> OpenAiLlm {
        OpenAiLlm::new(&settings(&self.base_url(), None)).expect("client")
    }

    fn received(&self) -> Vec<Received> {
        self.state.received.lock().unwrap().clone()
    }

    /// The most requests the server was answering at once.
    fn peak_in_flight(&self) -> usize {
        self.state.peak_in_flight.load(Ordering::SeqCst)
    }
}

impl Drop for MockServer {
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

async fn chat_completions(
    State(state): State<Arc<ServerState>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let _in_flight = InFlight::new(&state);
    let index = {
        let mut received = state.received.lock().unwrap();
        received.push(Received {
            authorization: headers
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned),
            body: body.clone(),
        });
        received.len() - 1
    };
    let mut reply = (state.reply)(index, &body);
    while let Reply::Delayed(delay, inner) = reply {
        tokio::time::sleep(delay).await;
        reply = *inner;
    }
    match reply {
        Reply::Sse(text) => (
            [
                (header::CONTENT_TYPE, "text/event-stream"),
                (header::CACHE_CONTROL, "no-cache"),
            ],
            text,
        )
            .into_response(),
        Reply::Json(value) => Json(value).into_response(),
        Reply::Error(status, text) => (
            StatusCode::from_u16(status).unwrap(),
            [(header::CONTENT_TYPE, "application/json")],
            text,
        )
            .into_response(),
        Reply::Delayed(..) => unreachable!("unwrapped above"),
    }
}

/// A listener whose connections pause after each SSE event they write.
struct PacedListener(TcpListener);

impl axum::serve::Listener for PacedListener {
    type Io = PacedIo;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (PacedIo, SocketAddr) {
        let (stream, addr) = axum::serve::Listener::accept(&mut self.0).await;
        // Small writes must leave at once, not wait for Nagle.
        let _ = stream.set_nodelay(true);
        let io = PacedIo {
            stream,
            pause: None,
        };
        (io, addr)
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.0.local_addr()
    }
}

/// A socket that writes at most one SSE event (up to and including `\n\n`) at a time and then
/// waits [`EVENT_DELAY`], so a buffered SSE body reaches the client event by event.
struct PacedIo {
    stream: TcpStream,
    pause: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl AsyncRead for PacedIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for PacedIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        if let Some(pause) = this.pause.as_mut() {
            ready!(pause.as_mut().poll(cx));
            this.pause = None;
        }
        let end = buf
            .windows(2)
            .position(|w| w == b"\n\n")
            .map_or(buf.len(), |i| i + 2);
        let written = ready!(Pin::new(&mut this.stream).poll_write(cx, &buf[..end]))?;
        if written == end && buf[..end].ends_with(b"\n\n") {
            this.pause = Some(Box::pin(tokio::time::sleep(EVENT_DELAY)));
        }
        Poll::Ready(Ok(written))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

fn settings(base_url: &str, api_key_env: Option<&str>) -> OpenAiSettings {
    OpenAiSettings {
        base_url: base_url.to_owned(),
        model: "test-model".to_owned(),
        api_key_env: api_key_env.map(str::to_owned),
        max_concurrent: rudder::config::DEFAULT_OPENAI_MAX_CONCURRENT,
    }
}

fn chunk(delta: Value, finish_reason: Value) -> Value {
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": "test-model",
        "choices": [{ "index": 0, "delta": delta, "finish_reason": finish_reason }],
    })
}

/// An SSE body as OpenAI sends it: a role-only chunk, one chunk per piece, a chunk with the
/// finish reason, optionally a usage chunk with no choices, then `[DONE]`.
fn sse_body(pieces: &[&str], finish_reason: &str, usage: Option<Value>) -> String {
    let mut events = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    events.extend(
        pieces
            .iter()
            .map(|piece| chunk(json!({ "content": piece }), Value::Null)),
    );
    events.push(chunk(json!({}), json!(finish_reason)));
    if let Some(usage) = usage {
        let mut last = chunk(json!({}), Value::Null);
        last["choices"] = json!([]);
        last["usage"] = usage;
        events.push(last);
    }
    let mut body = String::from(": keep-alive comment, to be ignored\n\n");
    for event in events {
        body.push_str(&format!("data: {event}\n\n"));
    }
    body.push_str("data: [DONE]\n\n");
    body
}

fn request(format: OutputFormat) -> Request {
    Request {
        messages: vec![
            Message::system("You are terse."),
            Message::user("Say hello."),
        ],
        options: GenerationOptions {
            max_tokens: 64,
            temperature: 0.2,
            top_p: 0.9,
            seed: 7,
        },
        format,
    }
}

/// Runs `request` and collects the pieces passed to `on_text`.
fn run(
    llm: &OpenAiLlm,
    request: &Request,
) -> (Result<rudder::llm::Completion, LlmError>, Vec<String>) {
    let mut pieces = Vec::new();
    let result = llm.complete(
        request,
        &mut |piece| pieces.push(piece.to_owned()),
        &CancelToken::new(),
    );
    (result, pieces)
}

#[derive(Debug, Deserialize, JsonSchema, PartialEq)]
struct City {
    name: String,
    population: u32,
}

const CITY_PIECES: &[&str] = &[
    r#"{"name": "#,
    r#""Lyon", "#,
    r#""population": "#,
    "522000}",
];

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

#[test]
fn streams_pieces_in_order_with_server_usage() {
    const PIECES: &[&str] = &["Hel", "lo", ", wor", "ld!"];
    let usage = json!({
        "prompt_tokens": 21,
        "completion_tokens": 4,
        "total_tokens": 25,
        "prompt_tokens_details": { "cached_tokens": 16 },
    });
    let server =
        MockServer::start(move |_, _| Reply::Sse(sse_body(PIECES, "stop", Some(usage.clone()))));
    let llm = server.llm();
    assert_eq!(llm.model_name(), "test-model");

    let (result, pieces) = run(&llm, &request(OutputFormat::Text));
    let completion = result.expect("completion");

    assert_eq!(
        pieces, PIECES,
        "on_text gets every non-empty piece, in order"
    );
    assert_eq!(completion.text, pieces.concat());
    assert_eq!(completion.text, "Hello, world!");
    assert_eq!(completion.finish, FinishReason::Stop);
    assert_eq!(completion.usage.prompt_tokens, 21);
    assert_eq!(completion.usage.cached_tokens, 16);
    assert_eq!(completion.usage.generated_tokens, 4);
    assert_eq!(completion.usage.calls, 1);

    let timing = completion.timing;
    assert!(timing.time_to_first_token > Duration::ZERO);
    assert!(timing.time_to_first_token < timing.total, "{timing:?}");
    // The pieces arrive EVENT_DELAY apart, so generation spans at least the gaps between them.
    assert!(timing.generation >= EVENT_DELAY * 2, "{timing:?}");
    assert!(timing.generation < timing.total);

    let received = server.received();
    assert_eq!(received.len(), 1);
    let body = &received[0].body;
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"]["include_usage"], true);
    assert_eq!(body["max_tokens"], 64);
    assert_eq!(body["temperature"], 0.2);
    assert_eq!(body["top_p"], 0.9);
    assert_eq!(body["seed"], 7);
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Say hello."},
        ])
    );
    assert!(
        body.get("response_format").is_none(),
        "plain text asks for no format"
    );
    assert_eq!(received[0].authorization, None);
}

#[test]
fn without_usage_counts_pieces_and_maps_length() {
    const PIECES: &[&str] = &["one", " two", " three"];
    let server = MockServer::start(|_, _| Reply::Sse(sse_body(PIECES, "length", None)));
    let (result, pieces) = run(&server.llm(), &request(OutputFormat::Text));
    let completion = result.expect("completion");
    assert_eq!(pieces.len(), 3);
    assert_eq!(completion.text, "one two three");
    assert_eq!(completion.finish, FinishReason::Length);
    assert_eq!(
        completion.usage.generated_tokens, 3,
        "estimated from the pieces"
    );
    assert_eq!(completion.usage.prompt_tokens, 0);
    assert_eq!(completion.usage.calls, 1);
}

#[test]
fn json_schema_is_sent_and_streamed_json_parses() {
    let server = MockServer::start(|_, _| Reply::Sse(sse_body(CITY_PIECES, "stop", None)));
    let llm = server.llm();

    let city = complete_json::<City>(
        &llm,
        vec![Message::user("Largest city of the Rhône?")],
        GenerationOptions::default(),
    )
    .expect("structured answer");
    assert_eq!(
        city.value,
        City {
            name: "Lyon".into(),
            population: 522_000
        }
    );
    assert_eq!(city.completion.finish, FinishReason::Stop);

    let received = server.received();
    assert_eq!(received.len(), 1);
    let format = &received[0].body["response_format"];
    assert_eq!(format["type"], "json_schema");
    assert_eq!(format["json_schema"]["name"], "output");
    assert_eq!(format["json_schema"]["strict"], true);
    assert_eq!(format["json_schema"]["schema"], schema_of::<City>());
    assert!(format["json_schema"]["schema"]["properties"]["population"].is_object());
    // Constrained decoding does the work here; the prompt is left as the caller wrote it.
    assert_eq!(received[0].body["messages"].as_array().unwrap().len(), 1);
}

#[test]
fn rejected_json_schema_falls_back_to_json_object() {
    let server = MockServer::start(|_, body| {
        if body["response_format"]["type"] == "json_schema" {
            Reply::Error(
                400,
                r#"{"error":{"code":400,"type":"invalid_request_error","message":"Unsupported value: 'response_format.type' does not support 'json_schema'"}}"#.into(),
            )
        } else {
            Reply::Sse(sse_body(CITY_PIECES, "stop", None))
        }
    });
    let llm = server.llm();
    let messages = vec![
        Message::system("You know geography."),
        Message::user("Largest city of the Rhône?"),
    ];

    let city = complete_json::<City>(&llm, messages.clone(), GenerationOptions::default())
        .expect("structured answer after the retry");
    assert_eq!(city.value.name, "Lyon");
    assert_eq!(city.value.population, 522_000);

    let received = server.received();
    assert_eq!(received.len(), 2, "one rejected request, one retry");
    assert_eq!(received[0].body["response_format"]["type"], "json_schema");
    let retry = &received[1].body;
    assert_eq!(retry["response_format"], json!({"type": "json_object"}));
    let retry_messages = retry["messages"].as_array().unwrap();
    assert_eq!(
        retry_messages.len(),
        2,
        "the schema joins the existing system message"
    );
    assert_eq!(retry_messages[0]["role"], "system");
    let system = retry_messages[0]["content"].as_str().unwrap();
    assert!(system.starts_with("You know geography."), "{system}");
    let schema_text = serde_json::to_string(&schema_of::<City>()).unwrap();
    assert!(system.contains(&schema_text), "{system}");
    assert_eq!(retry_messages[1]["content"], "Largest city of the Rhône?");

    // The client remembers: the next structured call goes straight to json_object.
    complete_json::<City>(&llm, messages, GenerationOptions::default()).expect("second call");
    let received = server.received();
    assert_eq!(received.len(), 3);
    assert_eq!(received[2].body["response_format"]["type"], "json_object");
}

#[test]
fn other_400_errors_are_not_retried() {
    let server = MockServer::start(|_, _| {
        Reply::Error(
            400,
            r#"{"error":{"message":"the prompt is too long"}}"#.into(),
        )
    });
    let err = complete_json::<City>(
        &server.llm(),
        vec![Message::user("hi")],
        GenerationOptions::default(),
    )
    .expect_err("400 must fail");
    match &err {
        LlmError::Http { url, message } => {
            assert_eq!(url, &server.endpoint());
            assert!(message.contains("400"), "{message}");
            assert!(message.contains("the prompt is too long"), "{message}");
        }
        other => panic!("expected LlmError::Http, got {other:?}"),
    }
    assert_eq!(server.received().len(), 1);
}

#[test]
fn cancelling_after_the_first_piece_stops_the_stream() {
    const PIECES: &[&str] = &["First", " second", " third", " fourth", " fifth"];
    let server = MockServer::start(|_, _| Reply::Sse(sse_body(PIECES, "stop", None)));
    let llm = server.llm();
    let cancel = CancelToken::new();
    let mut pieces = Vec::new();
    let completion = {
        let cancel_from_callback = cancel.clone();
        llm.complete(
            &request(OutputFormat::Text),
            &mut |piece| {
                pieces.push(piece.to_owned());
                cancel_from_callback.cancel();
            },
            &cancel,
        )
        .expect("a cancelled call still returns what it has")
    };
    assert_eq!(completion.finish, FinishReason::Cancelled);
    assert_eq!(pieces, ["First"]);
    assert_eq!(completion.text, "First");
    assert!(PIECES.concat().starts_with(&completion.text));
    assert!(completion.text.len() < PIECES.concat().len());
}

#[test]
fn cancelled_before_the_call_sends_nothing() {
    let server = MockServer::start(|_, _| Reply::Sse(sse_body(&["x"], "stop", None)));
    let cancel = CancelToken::new();
    cancel.cancel();
    let result = server
        .llm()
        .complete(&request(OutputFormat::Text), &mut |_| {}, &cancel);
    assert!(matches!(result, Err(LlmError::Cancelled)), "{result:?}");
    assert!(server.received().is_empty());
}

#[test]
fn server_error_reports_url_and_body() {
    let server = MockServer::start(|_, _| {
        Reply::Error(
            500,
            r#"{"error":{"message":"CUDA error: out of memory while loading test-model"}}"#.into(),
        )
    });
    let (result, pieces) = run(&server.llm(), &request(OutputFormat::Text));
    let err = result.expect_err("500 must fail");
    assert!(pieces.is_empty());
    match &err {
        LlmError::Http { url, message } => {
            assert_eq!(url, &server.endpoint());
            assert!(message.contains("500"), "{message}");
            assert!(message.contains("CUDA error: out of memory"), "{message}");
        }
        other => panic!("expected LlmError::Http, got {other:?}"),
    }
    let shown = err.to_string();
    assert!(shown.contains(&server.endpoint()), "{shown}");
    assert!(shown.contains("out of memory"), "{shown}");
}

#[test]
fn closed_port_is_an_http_error() {
    // Bind and release a port so that nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let base_url = format!("http://127.0.0.1:{port}/v1");
    let llm = OpenAiLlm::new(&settings(&base_url, None)).expect("client");
    let (result, _) = run(&llm, &request(OutputFormat::Text));
    match result {
        Err(LlmError::Http { url, message }) => {
            assert_eq!(url, format!("{base_url}/chat/completions"));
            assert!(!message.is_empty());
        }
        other => panic!("expected LlmError::Http, got {other:?}"),
    }
}

#[test]
fn error_event_mid_stream_is_an_http_error() {
    let server = MockServer::start(|_, _| {
        let mut body = format!(
            "data: {}\n\n",
            chunk(json!({"content": "Par"}), Value::Null)
        );
        body.push_str("data: {\"error\":{\"message\":\"model crashed\"}}\n\n");
        Reply::Sse(body)
    });
    let (result, pieces) = run(&server.llm(), &request(OutputFormat::Text));
    assert_eq!(pieces, ["Par"]);
    match result {
        Err(LlmError::Http { message, .. }) => {
            assert!(message.contains("model crashed"), "{message}")
        }
        other => panic!("expected LlmError::Http, got {other:?}"),
    }
}

#[test]
fn truncated_stream_is_an_error() {
    let server = MockServer::start(|_, _| {
        Reply::Sse(format!(
            "data: {}\n\n",
            chunk(json!({"content": "Half"}), Value::Null)
        ))
    });
    let (result, _) = run(&server.llm(), &request(OutputFormat::Text));
    assert!(matches!(result, Err(LlmError::Http { .. })), "{result:?}");
}

#[test]
fn non_streaming_json_reply_is_accepted() {
    let server = MockServer::start(|_, _| {
        Reply::Json(json!({
            "id": "chatcmpl-2",
            "object": "chat.completion",
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": "All at once."},
                "finish_reason": "length",
            }],
            "usage": {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12},
        }))
    });
    let (result, pieces) = run(&server.llm(), &request(OutputFormat::Text));
    let completion = result.expect("completion");
    assert_eq!(pieces, ["All at once."]);
    assert_eq!(completion.text, "All at once.");
    assert_eq!(completion.finish, FinishReason::Length);
    assert_eq!(completion.usage.prompt_tokens, 9);
    assert_eq!(completion.usage.generated_tokens, 3);
}

#[test]
fn api_key_comes_from_the_named_environment_variable() {
    let var = format!("RUDDER_TEST_OPENAI_KEY_{}", std::process::id());
    let server = MockServer::start(|_, _| Reply::Sse(sse_body(&["ok"], "stop", None)));

    let missing = OpenAiLlm::new(&settings(&server.base_url(), Some(&var)));
    match missing {
        Err(LlmError::Http { message, .. }) => {
            assert!(message.contains(&var), "{message}");
            assert!(message.contains("not set"), "{message}");
        }
        other => panic!("expected an error for the unset variable, got {other:?}"),
    }

    // The variable name is unique to this test, so no other test reads it.
    std::env::set_var(&var, "sk-test-123");
    let llm = OpenAiLlm::new(&settings(&server.base_url(), Some(&var))).expect("client");
    std::env::remove_var(&var);
    let (result, _) = run(&llm, &request(OutputFormat::Text));
    assert_eq!(result.expect("completion").text, "ok");
    assert_eq!(
        server.received()[0].authorization.as_deref(),
        Some("Bearer sk-test-123")
    );
    assert!(
        !format!("{llm:?}").contains("sk-test-123"),
        "Debug hides the key"
    );
}

#[test]
fn base_url_must_be_http() {
    for bad in ["ftp://example.invalid/v1", "localhost:8080/v1", ""] {
        assert!(
            matches!(
                OpenAiLlm::new(&settings(bad, None)),
                Err(LlmError::Http { .. })
            ),
            "{bad:?} should be rejected"
        );
    }
    // A trailing slash is tolerated.
    let llm = OpenAiLlm::new(&settings("http://127.0.0.1:9/v1/", None)).expect("client");
    assert!(format!("{llm:?}").contains("http://127.0.0.1:9/v1/chat/completions"));
}

// ---------------------------------------------------------------------------------------------
// Concurrency
// ---------------------------------------------------------------------------------------------

/// How long the server takes over each request in the concurrency tests: long enough that
/// requests sent together overlap whatever the threads' start-up order.
const SLOW_REPLY: Duration = Duration::from_millis(300);

/// A server that answers `ask(i)` with `answer(i)` after [`SLOW_REPLY`].
fn slow_echo_server() -> MockServer {
    MockServer::start(|_, body| {
        let question = body["messages"][0]["content"].as_str().unwrap_or_default();
        let number = question.trim_start_matches("question ").to_owned();
        let pieces = ["answer ", number.as_str()];
        Reply::Delayed(
            SLOW_REPLY,
            Box::new(Reply::Sse(sse_body(&pieces, "stop", None))),
        )
    })
}

fn ask(i: usize) -> Request {
    Request {
        messages: vec![Message::user(format!("question {i}"))],
        options: GenerationOptions::greedy(16),
        format: OutputFormat::Text,
    }
}

fn answer(i: usize) -> String {
    format!("answer {i}")
}

fn concurrent_llm(server: &MockServer, max_concurrent: usize) -> OpenAiLlm {
    OpenAiLlm::new(&OpenAiSettings {
        max_concurrent,
        ..settings(&server.base_url(), None)
    })
    .expect("client")
}

/// `width` callers make the calls for `items`; the texts come back in item order.
fn complete_all(llm: &OpenAiLlm, width: usize, items: &[usize]) -> Vec<String> {
    map_concurrent(width, items, |_, &i| {
        llm.complete_text(&ask(i)).expect("completion").text
    })
}

#[test]
fn requests_overlap_up_to_max_concurrent() {
    let server = slow_echo_server();
    let llm = concurrent_llm(&server, 3);
    assert_eq!(llm.parallelism(), 3);
    let items: Vec<usize> = (0..8).collect();
    let expected: Vec<String> = items.iter().map(|&i| answer(i)).collect();

    let texts = complete_all(&llm, llm.parallelism(), &items);
    assert_eq!(texts, expected, "every answer, in item order");
    assert_eq!(server.received().len(), 8);
    assert_eq!(
        server.peak_in_flight(),
        3,
        "as many requests at once as max_concurrent, and no more"
    );

    // More callers than permits: the backend itself holds the rest back.
    let server = slow_echo_server();
    let llm = concurrent_llm(&server, 3);
    let texts = complete_all(&llm, items.len(), &items);
    assert_eq!(texts, expected);
    assert_eq!(server.received().len(), 8);
    assert_eq!(server.peak_in_flight(), 3, "8 callers, still 3 at once");
}

#[test]
fn max_concurrent_one_sends_one_request_at_a_time() {
    let items: Vec<usize> = (0..4).collect();
    let expected: Vec<String> = items.iter().map(|&i| answer(i)).collect();
    // 0 counts as 1.
    for max_concurrent in [1, 0] {
        let server = slow_echo_server();
        let llm = concurrent_llm(&server, max_concurrent);
        assert_eq!(llm.parallelism(), 1);
        // Four callers at once, to show the limit is the backend's, not the caller's.
        assert_eq!(complete_all(&llm, items.len(), &items), expected);
        assert_eq!(server.received().len(), 4);
        assert_eq!(
            server.peak_in_flight(),
            1,
            "max_concurrent = {max_concurrent}"
        );
    }
}

#[test]
fn max_concurrent_defaults_to_four() {
    let parsed: OpenAiSettings =
        toml::from_str("base_url = \"http://127.0.0.1:8080/v1\"\nmodel = \"m\"\n")
            .expect("settings without max_concurrent");
    assert_eq!(parsed.max_concurrent, 4);
    let llm = OpenAiLlm::new(&parsed).expect("client");
    assert_eq!(llm.parallelism(), 4);
    let parsed: OpenAiSettings = toml::from_str(
        "base_url = \"http://127.0.0.1:8080/v1\"\nmodel = \"m\"\nmax_concurrent = 2\n",
    )
    .expect("settings with max_concurrent");
    assert_eq!(OpenAiLlm::new(&parsed).expect("client").parallelism(), 2);
}

#[test]
fn a_choice_is_answered_from_the_first_tokens_logprobs() {
    let server = MockServer::start(|_, _| {
        let mut piece = chunk(json!({ "content": "Yes" }), Value::Null);
        piece["choices"][0]["logprobs"] = json!({"content": [{
            "token": "Yes",
            "logprob": -0.2,
            "top_logprobs": [
                {"token": "Yes", "logprob": -0.2},
                {"token": " yes", "logprob": -2.0},
                {"token": "No", "logprob": -1.9},
                {"token": "Maybe", "logprob": -4.0},
            ],
        }]});
        let mut body = format!("data: {piece}\n\n");
        body.push_str(&format!("data: {}\n\n", chunk(json!({}), json!("length"))));
        body.push_str("data: [DONE]\n\n");
        Reply::Sse(body)
    });
    let llm = server.llm();
    let (p, _) = rudder::llm::probability_of_yes(&llm, vec![Message::user("Is it? yes or no")])
        .expect("a probability");
    let (yes, no) = ((-0.2f64).exp() + (-2.0f64).exp(), (-1.9f64).exp());
    assert!((f64::from(p) - yes / (yes + no)).abs() < 1e-4, "p = {p}");
    let sent = &server.received()[0].body;
    assert_eq!(sent["logprobs"], json!(true));
    assert_eq!(sent["max_tokens"], json!(1));
    assert!(sent.get("response_format").is_none());
}

#[test]
fn a_choice_without_logprobs_is_judged_by_the_token_written() {
    let server = MockServer::start(|_, _| Reply::Sse(sse_body(&["no"], "length", None)));
    let llm = server.llm();
    let answer =
        rudder::llm::choice_probabilities(&llm, vec![Message::user("Is it?")], &["yes", "no"])
            .expect("probabilities");
    assert_eq!(answer.value.probabilities, vec![0.0, 1.0]);
}
