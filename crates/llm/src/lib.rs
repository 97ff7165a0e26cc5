//! The seam between Rudder and its text generators: one [`Llm`] trait, its requests, answers
//! and errors, and the calls every stage makes through it. It knows no backend: llama.cpp lives
//! in `rudder-llama`, the OpenAI-compatible client in the engine (`rudder::llm::openai`), and
//! tests script answers with [`scripted`] (feature `scripted`).
//!
//! Structured output goes through [`complete_schema`] (or [`complete_json`], which takes the
//! schema from the type): the JSON schema constrains decoding (a GBNF grammar on llama.cpp,
//! `response_format` on servers), so even a 135M model returns JSON that parses into the type.
//!
//! Judgements go through [`probability_of_yes`] (or [`choice_probabilities`]): no generation,
//! the probability the model gives to each answer as its first token, read from one forward
//! pass (llama.cpp's logits; a server's `top_logprobs`). A small model's written grade is not
//! calibrated; that probability is.

pub mod bounds;
pub mod grammar;
#[cfg(any(test, feature = "scripted"))]
pub mod scripted;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// Errors from a generation backend.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    #[error("loading model {path}: {message}")]
    Load { path: String, message: String },
    #[error("the prompt needs {needed} tokens but the context holds {n_ctx} (raise `llama.context_size`)")]
    ContextOverflow { needed: usize, n_ctx: u32 },
    #[error("JSON schema cannot be turned into a grammar: {0}")]
    Grammar(String),
    #[error("llama.cpp: {0}")]
    Backend(String),
    #[error("model output is not valid for the schema: {message}; output was: {output}")]
    InvalidOutput { message: String, output: String },
    /// Structured output that reached `max_tokens` before its JSON closed.
    #[error(
        "the answer reached its limit of {max_tokens} tokens before its JSON closed (bound the \
         schema's arrays and strings with maxItems and maxLength, or raise the limit); output \
         was: {output}"
    )]
    Cut { max_tokens: u32, output: String },
    #[error("server {url}: {message}")]
    Http { url: String, message: String },
    #[error("generation was cancelled")]
    Cancelled,
    #[error("the model worker stopped unexpectedly")]
    WorkerGone,
}

impl LlmError {
    /// Whether the model answered but its answer cannot be used (not valid for the schema, or
    /// cut at the token limit): a caller with a fallback takes it, rather than failing the run.
    pub fn is_unusable_output(&self) -> bool {
        matches!(self, LlmError::InvalidOutput { .. } | LlmError::Cut { .. })
    }
}

/// Who said a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

/// One chat message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: String,
}

impl Message {
    pub fn system(content: impl Into<String>) -> Self {
        Self {
            role: Role::System,
            content: content.into(),
        }
    }
    pub fn user(content: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            content: content.into(),
        }
    }
    pub fn assistant(content: impl Into<String>) -> Self {
        Self {
            role: Role::Assistant,
            content: content.into(),
        }
    }
}

/// Sampling settings for one call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GenerationOptions {
    pub max_tokens: u32,
    /// 0 means greedy decoding.
    pub temperature: f32,
    pub top_p: f32,
    /// Same seed, same prompt, same model → same output (on one backend and machine).
    pub seed: u32,
}

impl GenerationOptions {
    /// Greedy decoding with at most `max_tokens` generated: what the research stages use, so a
    /// run reproduces exactly.
    pub fn greedy(max_tokens: u32) -> Self {
        Self {
            max_tokens,
            temperature: 0.0,
            ..Self::default()
        }
    }
}

impl Default for GenerationOptions {
    fn default() -> Self {
        Self {
            max_tokens: 512,
            temperature: 0.7,
            top_p: 0.95,
            seed: 42,
        }
    }
}

/// What the output must look like.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum OutputFormat {
    #[default]
    Text,
    /// JSON valid under this schema, enforced while decoding.
    JsonSchema(serde_json::Value),
    /// No generation: the probability the model gives to each of these replies as the start of
    /// its answer, read from one forward pass over the prompt. The completion's text is a
    /// [`ChoiceProbabilities`] in JSON, so replay caches and meters treat it like any reply.
    /// Use [`choice_probabilities`] or [`probability_of_yes`] rather than reading it by hand.
    Choice(Vec<String>),
}

/// What an [`OutputFormat::Choice`] call answers: one probability per choice, in order, each
/// the model's whole probability mass on the tokens that begin that choice (any case, with or
/// without a leading space). They need not sum to 1: the rest went to other replies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChoiceProbabilities {
    pub probabilities: Vec<f32>,
}

/// One generation call.
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub messages: Vec<Message>,
    pub options: GenerationOptions,
    pub format: OutputFormat,
}

/// Token accounting for one call (or a sum of calls).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Usage {
    /// Tokens in the prompt, including the reused ones.
    pub prompt_tokens: u64,
    /// Prompt tokens whose KV cache was reused from the previous call (not processed again).
    pub cached_tokens: u64,
    pub generated_tokens: u64,
    pub calls: u64,
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, other: Self) {
        self.prompt_tokens += other.prompt_tokens;
        self.cached_tokens += other.cached_tokens;
        self.generated_tokens += other.generated_tokens;
        self.calls += other.calls;
    }
}

/// Why generation stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FinishReason {
    /// The model ended its turn (or the grammar was complete).
    Stop,
    /// `max_tokens` or the context was reached.
    Length,
    Cancelled,
}

/// Timings of one call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Timing {
    /// From the call to the first generated token (includes prompt processing).
    pub time_to_first_token: Duration,
    /// Reading the (non-cached) prompt.
    pub prompt_eval: Duration,
    /// From the first generated token to the last.
    pub generation: Duration,
    pub total: Duration,
}

/// The result of one call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Completion {
    pub text: String,
    pub usage: Usage,
    pub timing: Timing,
    pub finish: FinishReason,
}

/// Cooperative cancellation, shared between the caller and the backend.
#[derive(Debug, Clone, Default)]
pub struct CancelToken(Arc<AtomicBool>);

impl CancelToken {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// A text generator.
pub trait Llm: Send + Sync {
    /// Name of the model, for logs and reports.
    fn model_name(&self) -> &str;

    /// Generates a reply to `request.messages`, passing each piece of text to `on_text` as it is
    /// produced. Returns the whole text with its accounting.
    fn complete(
        &self,
        request: &Request,
        on_text: &mut dyn FnMut(&str),
        cancel: &CancelToken,
    ) -> Result<Completion, LlmError>;

    /// Generates without streaming.
    fn complete_text(&self, request: &Request) -> Result<Completion, LlmError> {
        self.complete(request, &mut |_| {}, &CancelToken::new())
    }

    /// How many calls this backend serves at once: sequences decoded together in one batch
    /// (llama.cpp) or requests in flight (a server). Callers with independent calls make up to
    /// this many concurrently ([`map_concurrent`]); a backend that serves one at a time says 1,
    /// and its callers then call in order, exactly as before.
    fn parallelism(&self) -> usize {
        1
    }
}

/// Runs `f` on every item with up to `width` calls in flight (threads of this scope) and
/// returns the results in item order, whatever order they finished in, so what a caller
/// commits from them does not depend on timing. `width` ≤ 1 runs them in order on this thread.
pub fn map_concurrent<T, R, F>(width: usize, items: &[T], f: F) -> Vec<R>
where
    T: Sync,
    R: Send,
    F: Fn(usize, &T) -> R + Sync,
{
    let width = width.min(items.len());
    if width <= 1 {
        return items.iter().enumerate().map(|(i, t)| f(i, t)).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: std::sync::Mutex<Vec<Option<R>>> =
        std::sync::Mutex::new(items.iter().map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..width {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(item) = items.get(i) else { break };
                let result = f(i, item);
                results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(result);
            });
        }
    });
    results
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        // Every index below `items.len()` was taken by exactly one worker, and a panicking
        // worker re-panics at the end of the scope, so each slot is filled here.
        .map(|r| r.expect("every item was mapped"))
        .collect()
}

/// A parsed structured answer with the call's accounting.
#[derive(Debug, Clone)]
pub struct Structured<T> {
    pub value: T,
    pub completion: Completion,
}

/// The JSON schema of `T`, with every sub-schema inlined (grammar converters and servers handle
/// inline schemas best).
pub fn schema_of<T: JsonSchema>() -> serde_json::Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12()
        .with(|s| s.inline_subschemas = true)
        .into_generator();
    let schema = generator.into_root_schema_for::<T>();
    serde_json::to_value(schema).unwrap_or_default()
}

/// A structured reply whose text may not parse: the completion comes back either way, so a
/// caller can account for every call, including the unusable ones.
#[derive(Debug)]
pub struct Reply<T> {
    pub parsed: Result<T, LlmError>,
    pub completion: Completion,
}

impl<T> Reply<T> {
    /// The value with its completion, or the parse error.
    pub fn into_structured(self) -> Result<Structured<T>, LlmError> {
        Ok(Structured {
            value: self.parsed?,
            completion: self.completion,
        })
    }

    /// The value and its completion as a pair, or the parse error.
    pub fn into_pair(self) -> Result<(T, Completion), LlmError> {
        Ok((self.parsed?, self.completion))
    }
}

/// The one schema-constrained call: `schema` constrains decoding and the text is parsed as `T`.
/// Every stage that wants structured output goes through here (or [`complete_json`], which
/// derives the schema from `T`), with a schema of its own when its bounds depend on the input
/// (exactly `n` items, `n` sources).
pub fn complete_schema<T: DeserializeOwned>(
    llm: &dyn Llm,
    messages: Vec<Message>,
    options: GenerationOptions,
    schema: serde_json::Value,
) -> Result<Reply<T>, LlmError> {
    let request = Request {
        messages,
        options,
        format: OutputFormat::JsonSchema(schema),
    };
    let completion = llm.complete_text(&request)?;
    let parsed = match parse_json(&completion.text) {
        Err(LlmError::InvalidOutput { output, .. })
            if completion.finish == FinishReason::Length =>
        {
            Err(LlmError::Cut {
                max_tokens: request.options.max_tokens,
                output,
            })
        }
        parsed => parsed,
    };
    Ok(Reply { parsed, completion })
}

/// The probability the model gives to each of `choices` as its reply to `messages` (one forward
/// pass on llama.cpp; see [`OutputFormat::Choice`]).
pub fn choice_probabilities(
    llm: &dyn Llm,
    messages: Vec<Message>,
    choices: &[&str],
) -> Result<Structured<ChoiceProbabilities>, LlmError> {
    let request = Request {
        messages,
        // One token: a backend without log-probabilities answers with the choice it would write.
        options: GenerationOptions::greedy(1),
        format: OutputFormat::Choice(choices.iter().map(|c| c.to_string()).collect()),
    };
    let completion = llm.complete_text(&request)?;
    let value: ChoiceProbabilities = parse_json(&completion.text)?;
    if value.probabilities.len() != choices.len()
        || value
            .probabilities
            .iter()
            .any(|p| !p.is_finite() || *p < 0.0)
    {
        return Err(LlmError::InvalidOutput {
            message: format!("expected {} probabilities", choices.len()),
            output: completion.text.chars().take(500).collect(),
        });
    }
    Ok(Structured { value, completion })
}

/// The model's probability of "yes" against "no" as its answer to `messages` (which should ask
/// a yes/no question): P(yes) / (P(yes) + P(no)), so a model that spreads mass over other
/// replies is judged on the two that matter. 0.5 when it puts no mass on either.
///
/// This is how a small model judges one item reliably: a grade it writes is not calibrated,
/// the probability behind its first token is.
pub fn probability_of_yes(
    llm: &dyn Llm,
    messages: Vec<Message>,
) -> Result<(f32, Completion), LlmError> {
    let answer = choice_probabilities(llm, messages, &["yes", "no"])?;
    let (yes, no) = (answer.value.probabilities[0], answer.value.probabilities[1]);
    let p = if yes + no > 0.0 {
        yes / (yes + no)
    } else {
        0.5
    };
    Ok((p, answer.completion))
}

/// Asks for JSON matching `T`'s schema and parses it into `T`.
pub fn complete_json<T: JsonSchema + DeserializeOwned>(
    llm: &dyn Llm,
    messages: Vec<Message>,
    options: GenerationOptions,
) -> Result<Structured<T>, LlmError> {
    complete_schema(llm, messages, options, schema_of::<T>())?.into_structured()
}

/// Parses model output as `T`, with an error that shows the output.
pub fn parse_json<T: DeserializeOwned>(text: &str) -> Result<T, LlmError> {
    serde_json::from_str(text.trim()).map_err(|e| LlmError::InvalidOutput {
        message: e.to_string(),
        output: text.chars().take(500).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scripted::ScriptedLlm;

    #[test]
    fn structured_output_cut_at_the_limit_says_so() {
        let schema = serde_json::json!({"type": "array", "items": {"type": "string"}});
        let open = r#"["one", "two", "thr"#;
        let cut = ScriptedLlm::new(move |_| open.to_string()).finishing(FinishReason::Length);
        let reply = complete_schema::<Vec<String>>(
            &cut,
            vec![Message::user("Count.")],
            GenerationOptions::greedy(6),
            schema.clone(),
        )
        .unwrap();
        let err = reply.parsed.unwrap_err();
        assert!(matches!(err, LlmError::Cut { max_tokens: 6, .. }), "{err}");
        assert!(err.is_unusable_output());
        assert!(err.to_string().contains("limit of 6 tokens"), "{err}");
        // The same text from a model that stopped by itself is invalid output, not a cut.
        let stopped = ScriptedLlm::new(move |_| open.to_string());
        let reply = complete_schema::<Vec<String>>(
            &stopped,
            vec![Message::user("Count.")],
            GenerationOptions::greedy(6),
            schema,
        )
        .unwrap();
        let err = reply.parsed.unwrap_err();
        assert!(matches!(err, LlmError::InvalidOutput { .. }), "{err}");
        assert!(err.is_unusable_output());
    }

    #[test]
    fn map_concurrent_keeps_item_order_and_runs_calls_together() {
        let in_flight = std::sync::atomic::AtomicUsize::new(0);
        let peak = std::sync::atomic::AtomicUsize::new(0);
        let items: Vec<u64> = (0..12).collect();
        let out = map_concurrent(4, &items, |i, &x| {
            let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            peak.fetch_max(now, Ordering::SeqCst);
            // Later items finish first, so completion order differs from item order.
            std::thread::sleep(Duration::from_millis(30 - 2 * x));
            in_flight.fetch_sub(1, Ordering::SeqCst);
            (i, x * 10)
        });
        let expected: Vec<(usize, u64)> = items.iter().map(|&x| (x as usize, x * 10)).collect();
        assert_eq!(out, expected);
        let peak = peak.load(Ordering::SeqCst);
        assert!((2..=4).contains(&peak), "peak {peak}");
        // Width 1 runs on the caller's thread, in order.
        let caller = std::thread::current().id();
        let same = map_concurrent(1, &items, |_, _| std::thread::current().id() == caller);
        assert!(same.iter().all(|&s| s));
    }
}
