//! Backend for OpenAI-compatible chat servers (llama-server, Ollama, vLLM, hosted APIs).
//!
//! The engine is synchronous and the [`Llm`] trait with it, but a server serves several requests
//! at once, so the backend owns a small tokio runtime and sends with async reqwest: `complete`
//! blocks its caller's thread on the request (`Runtime::block_on`, which many threads may do at
//! once), and a semaphore keeps at most `openai.max_concurrent` requests in flight, however many
//! threads call ([`Llm::parallelism`] says how many to make). `complete` must not be called from
//! async code (a tokio worker); engine threads and `spawn_blocking` threads are fine.
//!
//! Replies are always streamed (`stream: true`) so the UI sees text as it is generated,
//! cancellation can stop mid-answer, and the time to first token can be measured.
//!
//! Servers disagree on structured output: all accept `response_format` with `json_object`, but
//! not all accept `json_schema`. We ask for `json_schema` first and, when the server rejects it
//! with a 400 that names the parameter, retry once with `json_object` plus the schema spelled
//! out in the system prompt (and remember that for later calls).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use reqwest::{Client, Response, StatusCode};
use serde_json::{json, Value};
use tokio::runtime::Runtime;
use tokio::sync::Semaphore;

use super::{
    CancelToken, Completion, FinishReason, Llm, LlmError, OutputFormat, Request, Role, Timing,
    Usage,
};
use crate::config::OpenAiSettings;
use crate::text::error_chain;

/// A dead or mistyped host should fail fast.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Applies to each read (the wait for the headers, then each piece of the body), not to the whole
/// reply: a long prompt on a slow server can take minutes before the first byte, so this is
/// generous.
const READ_TIMEOUT: Duration = Duration::from_secs(600);
/// How much of an error body goes into the error message.
const ERROR_EXCERPT_CHARS: usize = 500;
/// How much of an error body is read at all (servers sometimes answer with a whole HTML page).
const ERROR_BODY_LIMIT: usize = 64 * 1024;
/// Threads of the backend's runtime. They only move bytes (the connections' I/O and timers);
/// each request's future, with its parsing and `on_text`, runs on the thread that called.
const RUNTIME_THREADS: usize = 2;

/// A chat model served over the OpenAI chat-completions API.
pub struct OpenAiLlm {
    /// Drives the client's connections and timers. `None` only while dropping (see `Drop`).
    runtime: Option<Runtime>,
    client: Client,
    /// One permit per request in flight: `max_concurrent` of them.
    permits: Semaphore,
    max_concurrent: usize,
    /// `{base_url}/chat/completions`: the only URL this backend ever contacts.
    url: String,
    model: String,
    api_key: Option<String>,
    /// Set once the server rejected `json_schema`, so later calls skip the doomed first request.
    schema_unsupported: AtomicBool,
}

impl std::fmt::Debug for OpenAiLlm {
    // Hand-written so the API key never ends up in logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiLlm")
            .field("url", &self.url)
            .field("model", &self.model)
            .field("max_concurrent", &self.max_concurrent)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .finish_non_exhaustive()
    }
}

impl Drop for OpenAiLlm {
    fn drop(&mut self) {
        // Dropping a runtime waits for its threads, which panics inside another runtime (a
        // backend dropped from async code); nothing of ours is left running on it, so let it
        // go without waiting.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// How a JSON-schema request is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum JsonMode {
    /// `response_format: json_schema` (constrained decoding on servers that support it).
    Schema,
    /// `response_format: json_object` with the schema in the system prompt.
    Object,
}

/// Why a POST did not give a usable response.
enum PostError {
    /// The server answered with this non-2xx status and body.
    Status(StatusCode, String),
    /// The request never got an answer (connection refused, timeout, …).
    Failed(LlmError),
}

impl OpenAiLlm {
    /// Builds a client for `settings`, with its runtime (no connection is opened until the first
    /// request). Fails when the URL is not http(s) or when `api_key_env` names a variable that
    /// is unset or empty (better now than as a 401 mid-research).
    pub fn new(settings: &OpenAiSettings) -> Result<Self, LlmError> {
        let base = settings.base_url.trim().trim_end_matches('/');
        let url = format!("{base}/chat/completions");
        let fail = |message: String| LlmError::Http {
            url: url.clone(),
            message,
        };

        match reqwest::Url::parse(&url) {
            Ok(parsed) if matches!(parsed.scheme(), "http" | "https") => {}
            _ => {
                return Err(fail(format!(
                    "`openai.base_url` must be an http:// or https:// URL ending in /v1, got {:?}",
                    settings.base_url
                )))
            }
        }

        let api_key = match settings
            .api_key_env
            .as_deref()
            .map(str::trim)
            .filter(|name| !name.is_empty())
        {
            None => None,
            Some(name) => match std::env::var(name) {
                Ok(key) if !key.trim().is_empty() => Some(key.trim().to_owned()),
                Ok(_) => {
                    return Err(fail(format!(
                        "environment variable {name} (named by `openai.api_key_env`) is empty"
                    )))
                }
                Err(_) => {
                    return Err(fail(format!(
                        "environment variable {name} (named by `openai.api_key_env`) is not set"
                    )))
                }
            },
        };

        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(RUNTIME_THREADS)
            .thread_name("rudder-openai")
            .enable_io()
            .enable_time()
            .build()
            .map_err(|e| fail(format!("starting the HTTP runtime: {e}")))?;

        // No proxies and no redirects: requests go to the configured URL and nowhere else.
        let client = {
            let _context = runtime.enter();
            Client::builder()
                .connect_timeout(CONNECT_TIMEOUT)
                .read_timeout(READ_TIMEOUT)
                .redirect(reqwest::redirect::Policy::none())
                .no_proxy()
                .build()
                .map_err(|e| fail(format!("building the HTTP client: {}", error_chain(&e))))?
        };

        let max_concurrent = settings
            .effective_max_concurrent()
            .min(Semaphore::MAX_PERMITS);
        Ok(Self {
            runtime: Some(runtime),
            client,
            permits: Semaphore::new(max_concurrent),
            max_concurrent,
            url,
            model: settings.model.clone(),
            api_key,
            schema_unsupported: AtomicBool::new(false),
        })
    }

    fn http_error(&self, message: String) -> LlmError {
        LlmError::Http {
            url: self.url.clone(),
            message,
        }
    }

    /// The JSON body for `request`; `json_mode` only matters for `OutputFormat::JsonSchema`.
    fn body(&self, request: &Request, json_mode: JsonMode) -> Value {
        let mut messages: Vec<(Role, String)> = request
            .messages
            .iter()
            .map(|m| (m.role, m.content.clone()))
            .collect();
        let options = &request.options;
        let mut body = json!({
            "model": self.model,
            "stream": true,
            "stream_options": { "include_usage": true },
            "max_tokens": options.max_tokens,
            "temperature": f32_to_json(options.temperature),
            "top_p": f32_to_json(options.top_p),
            "seed": options.seed,
        });

        if let OutputFormat::Choice(_) = &request.format {
            // One token, with the alternatives the server considered and their log-probabilities.
            body["max_tokens"] = json!(1);
            body["logprobs"] = json!(true);
            body["top_logprobs"] = json!(CHOICE_TOP_LOGPROBS);
        }
        if let OutputFormat::JsonSchema(schema) = &request.format {
            body["response_format"] = match json_mode {
                JsonMode::Schema => json!({
                    "type": "json_schema",
                    "json_schema": { "name": "output", "strict": true, "schema": schema },
                }),
                JsonMode::Object => {
                    add_schema_instruction(&mut messages, schema);
                    json!({ "type": "json_object" })
                }
            };
        }

        body["messages"] = messages
            .iter()
            .map(|(role, content)| json!({ "role": role.as_str(), "content": content }))
            .collect();
        body
    }

    /// POSTs `body`. A non-2xx answer is returned with its body so the caller can decide whether
    /// to retry.
    async fn post(&self, body: &Value) -> Result<Response, PostError> {
        let mut builder = self
            .client
            .post(&self.url)
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .json(body);
        if let Some(key) = &self.api_key {
            builder = builder.bearer_auth(key);
        }
        let mut response = builder
            .send()
            .await
            .map_err(|e| PostError::Failed(self.http_error(error_chain(&e))))?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        // Best effort: the status alone is still a useful error if the body cannot be read.
        let mut body = Vec::new();
        while body.len() < ERROR_BODY_LIMIT {
            match response.chunk().await {
                Ok(Some(bytes)) => body.extend_from_slice(&bytes),
                Ok(None) | Err(_) => break,
            }
        }
        body.truncate(ERROR_BODY_LIMIT);
        Err(PostError::Status(
            status,
            String::from_utf8_lossy(&body).into_owned(),
        ))
    }

    fn status_error(&self, status: StatusCode, body: &str) -> LlmError {
        let excerpt = excerpt(body);
        if excerpt.is_empty() {
            self.http_error(format!("HTTP {status} (empty body)"))
        } else {
            self.http_error(format!("HTTP {status}: {excerpt}"))
        }
    }

    /// Reads the SSE stream: one `data: {json}` line per chunk, `data: [DONE]` at the end.
    async fn read_stream(
        &self,
        response: Response,
        start: Instant,
        on_text: &mut dyn FnMut(&str),
        cancel: &CancelToken,
    ) -> Result<(Completion, Option<Vec<(String, f64)>>), LlmError> {
        let mut state = StreamState::default();
        let mut reader = LineReader::new(response);
        let mut done = false;
        let mut cancelled = false;

        loop {
            if cancel.is_cancelled() {
                cancelled = true;
                break;
            }
            let raw = reader.next_line().await.map_err(|e| {
                self.http_error(format!("reading the response stream: {}", error_chain(&e)))
            })?;
            let Some(raw) = raw else { break };
            let line = String::from_utf8_lossy(&raw);
            let line = line.trim_end_matches(['\r', '\n']);
            if let Some(data) = line.strip_prefix("data:") {
                let data = data.trim();
                if data == "[DONE]" {
                    done = true;
                    break;
                }
                if data.is_empty() {
                    continue;
                }
                let chunk: Value = serde_json::from_str(data).map_err(|e| {
                    self.http_error(format!("malformed stream chunk ({e}): {}", excerpt(data)))
                })?;
                if let Some(error) = chunk.get("error") {
                    return Err(self.http_error(format!(
                        "server error mid-stream: {}",
                        excerpt(&error_text(error))
                    )));
                }
                state.apply(&chunk, on_text);
            } else if let Some(error) = line.strip_prefix("error:") {
                // llama-server reports failures after the headers were sent this way.
                return Err(self.http_error(format!(
                    "server error mid-stream: {}",
                    excerpt(error.trim())
                )));
            }
            // Blank lines, `: comments`, `event:`/`id:`/`retry:` fields carry nothing we use.
        }

        let finish = if cancelled {
            FinishReason::Cancelled
        } else if let Some(finish) = state.finish {
            finish
        } else if done {
            FinishReason::Stop
        } else {
            return Err(self.http_error(format!(
                "the stream ended before the reply was complete (after {} characters)",
                state.text.len()
            )));
        };
        Ok(state.into_completion_with_logprobs(start, finish))
    }

    /// Handles a server that ignored `stream: true` and answered with one JSON document.
    async fn read_whole(
        &self,
        response: Response,
        start: Instant,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<(Completion, Option<Vec<(String, f64)>>), LlmError> {
        let text = response
            .text()
            .await
            .map_err(|e| self.http_error(format!("reading the response: {}", error_chain(&e))))?;
        let reply: Value = serde_json::from_str(&text).map_err(|e| {
            self.http_error(format!("malformed response ({e}): {}", excerpt(&text)))
        })?;
        let choice = &reply["choices"][0];
        let mut state = StreamState::default();
        if let Some(content) = choice["message"]["content"].as_str() {
            state.push_text(content, on_text);
        }
        state.apply_logprobs(&choice["logprobs"]);
        state.apply_usage(&reply);
        let finish = choice["finish_reason"]
            .as_str()
            .map_or(FinishReason::Stop, finish_reason);
        Ok(state.into_completion_with_logprobs(start, finish))
    }

    /// One call, holding one of the permits from before its first request until its reply has
    /// been read.
    async fn complete_async(
        &self,
        request: &Request,
        on_text: &mut dyn FnMut(&str),
        cancel: &CancelToken,
    ) -> Result<Completion, LlmError> {
        // The semaphore is never closed, so acquiring only fails if it were.
        let _permit = self
            .permits
            .acquire()
            .await
            .map_err(|e| self.http_error(format!("waiting for a request slot: {e}")))?;
        // Cancelled while waiting for a slot: still nothing sent.
        if cancel.is_cancelled() {
            return Err(LlmError::Cancelled);
        }
        let start = Instant::now();
        let wants_json = matches!(request.format, OutputFormat::JsonSchema(_));
        let mut mode = if wants_json && !self.schema_unsupported.load(Ordering::Relaxed) {
            JsonMode::Schema
        } else {
            JsonMode::Object
        };
        tracing::debug!(
            url = %self.url,
            model = %self.model,
            messages = request.messages.len(),
            json = wants_json,
            ?mode,
            "chat completion request"
        );

        let response = match self.post(&self.body(request, mode)).await {
            Ok(response) => response,
            Err(PostError::Failed(error)) => return Err(error),
            Err(PostError::Status(status, body))
                if wants_json
                    && mode == JsonMode::Schema
                    && status == StatusCode::BAD_REQUEST
                    && mentions_response_format(&body) =>
            {
                tracing::debug!(
                    url = %self.url,
                    reply = %excerpt(&body),
                    "server rejected json_schema; retrying with json_object"
                );
                self.schema_unsupported.store(true, Ordering::Relaxed);
                if cancel.is_cancelled() {
                    return Err(LlmError::Cancelled);
                }
                mode = JsonMode::Object;
                match self.post(&self.body(request, mode)).await {
                    Ok(response) => response,
                    Err(PostError::Failed(error)) => return Err(error),
                    Err(PostError::Status(status, body)) => {
                        return Err(self.status_error(status, &body))
                    }
                }
            }
            Err(PostError::Status(status, body)) => return Err(self.status_error(status, &body)),
        };

        let is_json_document = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim_start().starts_with("application/json"));
        let completion = if is_json_document {
            self.read_whole(response, start, on_text).await?
        } else {
            self.read_stream(response, start, on_text, cancel).await?
        };
        let completion = match &request.format {
            OutputFormat::Choice(choices) => choice_completion(completion, choices),
            _ => completion.0,
        };
        tracing::debug!(
            url = %self.url,
            finish = ?completion.finish,
            prompt_tokens = completion.usage.prompt_tokens,
            cached_tokens = completion.usage.cached_tokens,
            generated_tokens = completion.usage.generated_tokens,
            ttft_ms = completion.timing.time_to_first_token.as_millis() as u64,
            total_ms = completion.timing.total.as_millis() as u64,
            "chat completion finished"
        );
        Ok(completion)
    }
}

impl Llm for OpenAiLlm {
    fn model_name(&self) -> &str {
        &self.model
    }

    fn complete(
        &self,
        request: &Request,
        on_text: &mut dyn FnMut(&str),
        cancel: &CancelToken,
    ) -> Result<Completion, LlmError> {
        if cancel.is_cancelled() {
            return Err(LlmError::Cancelled);
        }
        let runtime = self
            .runtime
            .as_ref()
            .ok_or_else(|| self.http_error("the HTTP runtime has stopped".to_owned()))?;
        // The future runs here, on the caller's thread (so `on_text` need not be `Send`); the
        // runtime's threads drive the sockets. Callers on several threads each block on their own.
        runtime.block_on(self.complete_async(request, on_text, cancel))
    }

    /// Requests in flight at once: `openai.max_concurrent`.
    fn parallelism(&self) -> usize {
        self.max_concurrent
    }
}

/// Splits a response body into lines (each with its `\n`, the last one perhaps without), as
/// they arrive.
struct LineReader {
    response: Response,
    buffer: Vec<u8>,
    /// How much of `buffer` is known to hold no `\n`.
    scanned: usize,
    ended: bool,
}

impl LineReader {
    fn new(response: Response) -> Self {
        Self {
            response,
            buffer: Vec::new(),
            scanned: 0,
            ended: false,
        }
    }

    /// The next line, or `None` at the end of the body.
    async fn next_line(&mut self) -> Result<Option<Vec<u8>>, reqwest::Error> {
        loop {
            if let Some(i) = self.buffer[self.scanned..].iter().position(|&b| b == b'\n') {
                let end = self.scanned + i + 1;
                let line = self.buffer.drain(..end).collect();
                self.scanned = 0;
                return Ok(Some(line));
            }
            self.scanned = self.buffer.len();
            if self.ended {
                self.scanned = 0;
                return Ok((!self.buffer.is_empty()).then(|| std::mem::take(&mut self.buffer)));
            }
            match self.response.chunk().await? {
                Some(bytes) => self.buffer.extend_from_slice(&bytes),
                None => self.ended = true,
            }
        }
    }
}

/// What has arrived so far.
#[derive(Default)]
struct StreamState {
    text: String,
    /// Non-empty content pieces: the token estimate when the server reports no usage.
    pieces: u64,
    first_piece: Option<Instant>,
    last_piece: Option<Instant>,
    finish: Option<FinishReason>,
    usage: Option<Usage>,
    /// llama-server's own prompt-processing time (`timings.prompt_ms`), better than our estimate.
    server_prompt_eval: Option<Duration>,
    /// The first generated token's `top_logprobs` (token, log-probability), when the server
    /// gives them: what an [`OutputFormat::Choice`] call is answered from.
    first_top_logprobs: Option<Vec<(String, f64)>>,
}

impl StreamState {
    fn apply(&mut self, chunk: &Value, on_text: &mut dyn FnMut(&str)) {
        if let Some(choice) = chunk["choices"].get(0) {
            if let Some(piece) = choice["delta"]["content"].as_str() {
                self.push_text(piece, on_text);
            }
            self.apply_logprobs(&choice["logprobs"]);
            if let Some(reason) = choice["finish_reason"].as_str() {
                self.finish = Some(finish_reason(reason));
            }
        }
        self.apply_usage(chunk);
    }

    fn push_text(&mut self, piece: &str, on_text: &mut dyn FnMut(&str)) {
        // The first chunk usually carries only the role with empty content; that is no token.
        if piece.is_empty() {
            return;
        }
        let now = Instant::now();
        self.first_piece.get_or_insert(now);
        self.last_piece = Some(now);
        self.pieces += 1;
        self.text.push_str(piece);
        on_text(piece);
    }

    fn apply_logprobs(&mut self, logprobs: &Value) {
        if self.first_top_logprobs.is_some() {
            return;
        }
        let Some(top) = logprobs["content"][0]["top_logprobs"].as_array() else {
            return;
        };
        self.first_top_logprobs = Some(
            top.iter()
                .filter_map(|t| Some((t["token"].as_str()?.to_string(), t["logprob"].as_f64()?)))
                .collect(),
        );
    }

    fn apply_usage(&mut self, chunk: &Value) {
        let usage = &chunk["usage"];
        if usage.is_object() {
            let count = |v: &Value| v.as_u64().unwrap_or(0);
            let cached = usage["prompt_tokens_details"]["cached_tokens"]
                .as_u64()
                .or_else(|| chunk["timings"]["cache_n"].as_u64())
                .unwrap_or(0);
            self.usage = Some(Usage {
                prompt_tokens: count(&usage["prompt_tokens"]),
                cached_tokens: cached,
                generated_tokens: count(&usage["completion_tokens"]),
                calls: 1,
            });
        }
        if let Some(ms) = chunk["timings"]["prompt_ms"].as_f64() {
            if ms.is_finite() && ms >= 0.0 {
                self.server_prompt_eval = Some(Duration::from_secs_f64(ms / 1000.0));
            }
        }
    }

    /// The completion, with the first token's alternatives for a choice call.
    fn into_completion_with_logprobs(
        mut self,
        start: Instant,
        finish: FinishReason,
    ) -> (Completion, Option<Vec<(String, f64)>>) {
        let logprobs = self.first_top_logprobs.take();
        (self.into_completion(start, finish), logprobs)
    }

    fn into_completion(self, start: Instant, finish: FinishReason) -> Completion {
        let total = start.elapsed();
        let time_to_first_token = self.first_piece.map_or(total, |t| t - start);
        let generation = match (self.first_piece, self.last_piece) {
            (Some(first), Some(last)) => last - first,
            _ => Duration::ZERO,
        };
        let usage = self.usage.unwrap_or(Usage {
            prompt_tokens: 0,
            cached_tokens: 0,
            generated_tokens: self.pieces,
            calls: 1,
        });
        Completion {
            text: self.text,
            usage,
            timing: Timing {
                time_to_first_token,
                // Without server timings, the wait for the first token is mostly prompt reading.
                prompt_eval: self.server_prompt_eval.unwrap_or(time_to_first_token),
                generation,
                total,
            },
            finish,
        }
    }
}

/// Alternatives asked for with a choice call: enough for every casing of yes and no.
const CHOICE_TOP_LOGPROBS: u32 = 10;

/// Answers a choice call: each choice's probability is the mass of the first token's
/// alternatives that begin it (any case, leading space ignored). A server that gives no
/// log-probabilities is judged by the token it wrote: probability 1 for the choice it begins.
fn choice_completion(
    (mut completion, logprobs): (Completion, Option<Vec<(String, f64)>>),
    choices: &[String],
) -> Completion {
    let begins = |token: &str, choice: &str| {
        let token = token.trim_start().to_lowercase();
        !token.is_empty() && choice.to_lowercase().starts_with(&token)
    };
    let probabilities: Vec<f32> = match logprobs {
        Some(top) if !top.is_empty() => choices
            .iter()
            .map(|c| {
                top.iter()
                    .filter(|(token, _)| begins(token, c))
                    .map(|(_, lp)| lp.exp())
                    .sum::<f64>() as f32
            })
            .collect(),
        _ => choices
            .iter()
            .map(|c| f32::from(u8::from(begins(&completion.text, c))))
            .collect(),
    };
    completion.text =
        serde_json::to_string(&super::ChoiceProbabilities { probabilities }).unwrap_or_default();
    completion
}

fn finish_reason(reason: &str) -> FinishReason {
    match reason {
        "length" => FinishReason::Length,
        // "stop", and also "tool_calls"/"content_filter": the model's turn is over either way.
        _ => FinishReason::Stop,
    }
}

/// Whether a 400 body blames structured output (wording differs between servers).
fn mentions_response_format(body: &str) -> bool {
    let body = body.to_ascii_lowercase();
    ["response_format", "json_schema", "json schema"]
        .iter()
        .any(|needle| body.contains(needle))
}

/// Puts the schema into the system prompt for `json_object` mode. Appended to an existing
/// leading system message rather than added as a second one, because several chat templates
/// reject more than one system message or one that is not first.
fn add_schema_instruction(messages: &mut Vec<(Role, String)>, schema: &Value) {
    let instruction = format!(
        "Reply with a single JSON object, and nothing else, that is valid under this JSON \
         schema:\n{schema}"
    );
    match messages.first_mut() {
        Some((Role::System, content)) => {
            content.push_str("\n\n");
            content.push_str(&instruction);
        }
        _ => messages.insert(0, (Role::System, instruction)),
    }
}

/// `0.7f32` as the JSON number `0.7`, not `0.699999988079071` (widening an f32 to f64 directly
/// shows the binary rounding, which is noise in request logs).
fn f32_to_json(x: f32) -> f64 {
    x.to_string().parse().unwrap_or(f64::from(x))
}

/// An error value as text: the `message` field when there is one.
fn error_text(error: &Value) -> String {
    match error {
        Value::String(s) => s.clone(),
        other => other["message"]
            .as_str()
            .map_or_else(|| other.to_string(), str::to_owned),
    }
}

/// The start of a (possibly long) server reply, for error messages.
fn excerpt(text: &str) -> String {
    let text = text.trim();
    let mut out: String = text.chars().take(ERROR_EXCERPT_CHARS).collect();
    if out.len() < text.len() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_instruction_joins_a_leading_system_message() {
        let schema = json!({"type": "object"});
        let mut messages = vec![
            (Role::System, "Be brief.".to_owned()),
            (Role::User, "Hi".to_owned()),
        ];
        add_schema_instruction(&mut messages, &schema);
        assert_eq!(messages.len(), 2);
        assert!(messages[0].1.starts_with("Be brief.\n\n"));
        assert!(messages[0].1.contains(r#"{"type":"object"}"#));

        let mut messages = vec![(Role::User, "Hi".to_owned())];
        add_schema_instruction(&mut messages, &schema);
        assert_eq!(messages.len(), 2);
        assert_eq!(messages[0].0, Role::System);
    }

    #[test]
    fn helpers() {
        assert_eq!(f32_to_json(0.7), 0.7);
        assert_eq!(finish_reason("length"), FinishReason::Length);
        assert_eq!(finish_reason("stop"), FinishReason::Stop);
        assert!(mentions_response_format(
            r#"{"error":"Unsupported RESPONSE_FORMAT"}"#
        ));
        assert!(!mentions_response_format("messages must not be empty"));
        assert_eq!(excerpt(&"é".repeat(600)).chars().count(), 501);
        assert_eq!(error_text(&json!({"message": "boom", "code": 500})), "boom");
    }
}
