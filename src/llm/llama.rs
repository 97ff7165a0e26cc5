//! The in-process llama.cpp backend.
//!
//! A llama.cpp context borrows its model, so both live on one worker thread that owns them for
//! the backend's whole life; calls reach it over a channel and tokens come back the same way.
//! The worker keeps the tokens currently in the KV cache and, on every call, reuses their
//! longest common prefix with the new prompt: a repeated system prompt and persona are read
//! once, not on every call.

use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::OnceLock;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatMessage, LlamaChatTemplate, LlamaModel};
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use serde::Serialize;

use super::{
    grammar, CancelToken, Completion, FinishReason, GenerationOptions, Llm, LlmError, Message,
    OutputFormat, Request, Timing, Usage,
};
use crate::config::LlamaSettings;

/// llama.cpp may be initialised once per process.
fn backend() -> Result<&'static LlamaBackend, LlmError> {
    static BACKEND: OnceLock<Result<LlamaBackend, String>> = OnceLock::new();
    BACKEND
        .get_or_init(|| {
            // Route llama.cpp's own logging into `tracing` instead of stderr.
            llama_cpp_2::send_logs_to_tracing(llama_cpp_2::LogOptions::default());
            LlamaBackend::init().map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| LlmError::Backend(e.clone()))
}

/// Facts about a loaded model.
#[derive(Debug, Clone, Serialize)]
pub struct ModelInfo {
    pub path: PathBuf,
    /// Bytes of weights llama.cpp reports.
    pub size_bytes: u64,
    pub n_params: u64,
    pub n_ctx: u32,
    pub n_ctx_train: u32,
    pub threads: usize,
    pub gpu_layers: u32,
    pub chat_template: bool,
    pub load_time: Duration,
}

/// A GGUF model running in this process.
pub struct LlamaLlm {
    name: String,
    info: ModelInfo,
    jobs: Option<mpsc::Sender<Job>>,
    worker: Option<JoinHandle<()>>,
}

struct Job {
    request: Request,
    cancel: CancelToken,
    events: mpsc::Sender<Event>,
}

enum Event {
    Text(String),
    Done(Result<Completion, LlmError>),
}

impl LlamaLlm {
    /// Loads `path` (a verified GGUF) on a new worker thread and warms it up.
    pub fn load(name: &str, path: &Path, settings: &LlamaSettings) -> Result<Self, LlmError> {
        crate::models::check_gguf_header(path).map_err(|e| LlmError::Load {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        let (ready_tx, ready_rx) = mpsc::channel();
        let (jobs_tx, jobs_rx) = mpsc::channel::<Job>();
        let path_owned = path.to_path_buf();
        let settings = settings.clone();
        let worker = std::thread::Builder::new()
            .name(format!("llama:{name}"))
            .spawn(move || worker_main(path_owned, settings, ready_tx, jobs_rx))
            .map_err(|e| LlmError::Backend(format!("cannot start worker thread: {e}")))?;
        let info = ready_rx.recv().map_err(|_| LlmError::WorkerGone)??;
        Ok(Self {
            name: name.to_string(),
            info,
            jobs: Some(jobs_tx),
            worker: Some(worker),
        })
    }

    pub fn info(&self) -> &ModelInfo {
        &self.info
    }
}

impl Drop for LlamaLlm {
    fn drop(&mut self) {
        // Closing the channel ends the worker loop; the model is freed on its own thread.
        self.jobs.take();
        if let Some(worker) = self.worker.take() {
            let _ = worker.join();
        }
    }
}

impl Llm for LlamaLlm {
    fn model_name(&self) -> &str {
        &self.name
    }

    fn complete(
        &self,
        request: &Request,
        on_text: &mut dyn FnMut(&str),
        cancel: &CancelToken,
    ) -> Result<Completion, LlmError> {
        let (events_tx, events_rx) = mpsc::channel();
        self.jobs
            .as_ref()
            .ok_or(LlmError::WorkerGone)?
            .send(Job {
                request: request.clone(),
                cancel: cancel.clone(),
                events: events_tx,
            })
            .map_err(|_| LlmError::WorkerGone)?;
        for event in events_rx {
            match event {
                Event::Text(text) => on_text(&text),
                Event::Done(result) => return result,
            }
        }
        Err(LlmError::WorkerGone)
    }
}

fn worker_main(
    path: PathBuf,
    settings: LlamaSettings,
    ready: mpsc::Sender<Result<ModelInfo, LlmError>>,
    jobs: mpsc::Receiver<Job>,
) {
    let started = Instant::now();
    let loaded = (|| {
        let backend = backend()?;
        let params = LlamaModelParams::default().with_n_gpu_layers(settings.gpu_layers);
        let model =
            LlamaModel::load_from_file(backend, &path, &params).map_err(|e| LlmError::Load {
                path: path.display().to_string(),
                message: e.to_string(),
            })?;
        Ok::<_, LlmError>((backend, model))
    })();
    let (backend, model) = match loaded {
        Ok(v) => v,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let threads = settings.effective_threads();
    let n_ctx_train = model.n_ctx_train();
    let n_ctx = if n_ctx_train > 0 {
        settings.context_size.min(n_ctx_train)
    } else {
        settings.context_size
    }
    .max(256);
    let n_batch = settings.batch_size.clamp(32, n_ctx);
    let ctx_params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(n_ctx))
        .with_n_batch(n_batch)
        .with_n_threads(threads as i32)
        .with_n_threads_batch(threads as i32);
    let mut ctx = match model.new_context(backend, ctx_params) {
        Ok(ctx) => ctx,
        Err(e) => {
            let _ = ready.send(Err(LlmError::Load {
                path: path.display().to_string(),
                message: format!("cannot create a context of {n_ctx} tokens: {e}"),
            }));
            return;
        }
    };
    let template = model.chat_template(None).ok();
    let mut engine = Engine {
        model: &model,
        template,
        kv_tokens: Vec::new(),
        n_batch: n_batch as usize,
    };
    // The first decode after loading is much slower than the rest; pay for it now.
    engine.warm_up(&mut ctx);
    let info = ModelInfo {
        path: path.clone(),
        size_bytes: model.size(),
        n_params: model.n_params(),
        n_ctx,
        n_ctx_train,
        threads,
        gpu_layers: settings.gpu_layers,
        chat_template: engine.template.is_some(),
        load_time: started.elapsed(),
    };
    tracing::info!(model = %path.display(), n_ctx, threads, load_ms = info.load_time.as_millis() as u64, "model loaded");
    if ready.send(Ok(info)).is_err() {
        return;
    }
    for job in jobs {
        let events = job.events.clone();
        let result = engine.run(&mut ctx, &job.request, &job.cancel, &mut |text| {
            let _ = events.send(Event::Text(text.to_string()));
        });
        if result.is_err() {
            // The KV cache may be half-updated: start clean next time.
            ctx.clear_kv_cache();
            engine.kv_tokens.clear();
        }
        let _ = job.events.send(Event::Done(result));
    }
}

struct Engine<'m> {
    model: &'m LlamaModel,
    template: Option<LlamaChatTemplate>,
    /// Exactly the tokens whose keys and values are in the cache, in position order.
    kv_tokens: Vec<LlamaToken>,
    n_batch: usize,
}

impl Engine<'_> {
    fn warm_up(&mut self, ctx: &mut LlamaContext) {
        let bos = self.model.vocab().bos();
        if let Ok(mut batch) = LlamaBatch::get_one(&[bos]) {
            let _ = ctx.decode(&mut batch);
        }
        ctx.clear_kv_cache();
    }

    fn render_prompt(&self, messages: &[Message]) -> Result<String, LlmError> {
        let chat = messages
            .iter()
            .map(|m| LlamaChatMessage::new(m.role.as_str().into(), m.content.clone()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| LlmError::Backend(format!("message contains a NUL byte: {e}")))?;
        // Models without an embedded template get ChatML, which most instruct models follow.
        let fallback;
        let template = match &self.template {
            Some(t) => t,
            None => {
                fallback = LlamaChatTemplate::new("chatml")
                    .map_err(|e| LlmError::Backend(e.to_string()))?;
                &fallback
            }
        };
        self.model
            .apply_chat_template(template, &chat, true)
            .map_err(|e| LlmError::Backend(format!("chat template: {e}")))
    }

    fn sampler(
        &self,
        options: &GenerationOptions,
        format: &OutputFormat,
    ) -> Result<LlamaSampler, LlmError> {
        let mut chain = Vec::new();
        if let OutputFormat::JsonSchema(schema) = format {
            let gbnf = grammar::schema_to_grammar(schema)?;
            // The grammar goes first so later samplers only ever see allowed tokens.
            chain.push(
                LlamaSampler::grammar(self.model, &gbnf, "root")
                    .map_err(|e| LlmError::Grammar(e.to_string()))?,
            );
        }
        if options.temperature <= 0.0 {
            chain.push(LlamaSampler::greedy());
        } else {
            chain.push(LlamaSampler::top_p(options.top_p.clamp(0.01, 1.0), 1));
            chain.push(LlamaSampler::temp(options.temperature));
            chain.push(LlamaSampler::dist(options.seed));
        }
        Ok(LlamaSampler::chain_simple(chain))
    }

    fn run(
        &mut self,
        ctx: &mut LlamaContext,
        request: &Request,
        cancel: &CancelToken,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<Completion, LlmError> {
        let started = Instant::now();
        let prompt = self.render_prompt(&request.messages)?;
        let tokens = self.model.vocab().tokenize(prompt.as_bytes(), true, true);
        if tokens.is_empty() {
            return Err(LlmError::Backend("empty prompt".into()));
        }
        let n_ctx = ctx.n_ctx();
        if tokens.len() + 1 > n_ctx as usize {
            return Err(LlmError::ContextOverflow {
                needed: tokens.len() + 1,
                n_ctx,
            });
        }
        let mut sampler = self.sampler(&request.options, &request.format)?;

        // Reuse the cached prefix; at least the last prompt token is decoded again so there are
        // logits to sample from.
        let mut reuse = common_prefix(&self.kv_tokens, &tokens).min(tokens.len() - 1);
        if reuse < self.kv_tokens.len() {
            let removed = ctx
                .clear_kv_cache_seq(Some(0), Some(reuse as u32), None)
                .unwrap_or(false);
            if !removed {
                ctx.clear_kv_cache();
                reuse = 0;
            }
            self.kv_tokens.truncate(reuse);
        }
        let mut batch = LlamaBatch::new(self.n_batch.max(1), 1);
        let pending = &tokens[reuse..];
        for (chunk_index, chunk) in pending.chunks(self.n_batch).enumerate() {
            batch.clear();
            let base = reuse + chunk_index * self.n_batch;
            for (i, &token) in chunk.iter().enumerate() {
                let pos = base + i;
                let last = pos == tokens.len() - 1;
                batch
                    .add(token, pos as i32, &[0], last)
                    .map_err(|e| LlmError::Backend(e.to_string()))?;
            }
            ctx.decode(&mut batch)
                .map_err(|e| LlmError::Backend(format!("decoding the prompt: {e}")))?;
            self.kv_tokens.extend_from_slice(chunk);
            if cancel.is_cancelled() {
                return Err(LlmError::Cancelled);
            }
        }
        let prompt_eval = started.elapsed();

        let vocab = self.model.vocab();
        let mut text = String::new();
        let mut pending_bytes: Vec<u8> = Vec::new();
        let mut piece = Vec::with_capacity(32);
        let mut generated = 0u64;
        let mut first_token_at = None;
        let mut logits_index = batch.n_tokens() - 1;
        let mut finish = FinishReason::Length;
        while generated < u64::from(request.options.max_tokens) {
            if cancel.is_cancelled() {
                finish = FinishReason::Cancelled;
                break;
            }
            // `sample` also feeds the token to the grammar and other stateful samplers.
            let token = sampler.sample(ctx, logits_index);
            if vocab.is_eog(token) {
                finish = FinishReason::Stop;
                break;
            }
            first_token_at.get_or_insert_with(Instant::now);
            generated += 1;
            piece.clear();
            vocab.token_to_piece_into(token, &mut piece, false, None);
            pending_bytes.extend_from_slice(&piece);
            let emitted = take_utf8(&mut pending_bytes);
            if !emitted.is_empty() {
                on_text(&emitted);
                text.push_str(&emitted);
            }
            if self.kv_tokens.len() + 1 >= n_ctx as usize {
                break;
            }
            batch.clear();
            batch
                .add(token, self.kv_tokens.len() as i32, &[0], true)
                .map_err(|e| LlmError::Backend(e.to_string()))?;
            ctx.decode(&mut batch)
                .map_err(|e| LlmError::Backend(format!("decoding: {e}")))?;
            self.kv_tokens.push(token);
            logits_index = 0;
        }
        if !pending_bytes.is_empty() {
            let rest = String::from_utf8_lossy(&pending_bytes).into_owned();
            on_text(&rest);
            text.push_str(&rest);
        }
        let total = started.elapsed();
        let timing = Timing {
            time_to_first_token: first_token_at.map_or(total, |t| t - started),
            prompt_eval,
            generation: first_token_at.map_or(Duration::ZERO, |t| t.elapsed()),
            total,
        };
        Ok(Completion {
            text,
            usage: Usage {
                prompt_tokens: tokens.len() as u64,
                cached_tokens: reuse as u64,
                generated_tokens: generated,
                calls: 1,
            },
            timing,
            finish,
        })
    }
}

/// Length of the longest common prefix of two token sequences.
fn common_prefix(a: &[LlamaToken], b: &[LlamaToken]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Removes and returns the longest valid UTF-8 prefix of `bytes`; an incomplete character at the
/// end waits for the next token, invalid bytes are replaced.
fn take_utf8(bytes: &mut Vec<u8>) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) => {
            let s = s.to_string();
            bytes.clear();
            s
        }
        Err(e) if e.error_len().is_none() => {
            let valid = e.valid_up_to();
            let s = String::from_utf8_lossy(&bytes[..valid]).into_owned();
            bytes.drain(..valid);
            s
        }
        Err(_) => {
            let s = String::from_utf8_lossy(bytes).into_owned();
            bytes.clear();
            s
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_is_emitted_only_when_complete() {
        let euro = "€".as_bytes(); // 3 bytes
        let mut buf = vec![b'a', euro[0]];
        assert_eq!(take_utf8(&mut buf), "a");
        buf.extend_from_slice(&euro[1..]);
        assert_eq!(take_utf8(&mut buf), "€");
        assert!(buf.is_empty());
        let mut bad = vec![0xff, b'b'];
        assert_eq!(take_utf8(&mut bad), "\u{fffd}b");
    }

    #[test]
    fn common_prefix_counts_shared_tokens() {
        let a = [LlamaToken(1), LlamaToken(2), LlamaToken(3)];
        let b = [LlamaToken(1), LlamaToken(2), LlamaToken(9), LlamaToken(4)];
        assert_eq!(common_prefix(&a, &b), 2);
        assert_eq!(common_prefix(&a, &[]), 0);
    }
}
