//! The in-process llama.cpp backend.
//!
//! A llama.cpp context borrows its model, so both live on one worker thread that owns them for
//! the backend's whole life; calls reach it over a channel and tokens come back the same way.
//! The worker serves several calls at once (`llama.parallel` sequences of one context): each
//! decode step carries one token of every generating call plus prompt chunks of calls still
//! reading, so concurrent callers share the cost of streaming the weights. Each sequence keeps
//! the tokens of its KV cache after its call; a new call reuses the longest common prefix with
//! its prompt, from its own sequence or copied from another's, so a repeated system prompt and
//! persona are read once.

use std::collections::VecDeque;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatMessage, LlamaChatTemplate, LlamaModel};
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::vocab::LlamaVocab;
use serde::Serialize;

pub mod gguf;
mod grammar;
pub mod offload;
mod settings;
pub mod vulkan_shaders;

use offload::{OffloadPlan, Workload};
use rudder_llm::{
    CancelToken, ChoiceProbabilities, Completion, FinishReason, GenerationOptions, Llm, LlmError,
    Message, OutputFormat, Request, Timing, Usage,
};
pub use settings::{physical_cores, GpuLayers, LlamaSettings};

/// llama.cpp may be initialised once per process.
pub(crate) fn backend() -> Result<&'static LlamaBackend, LlmError> {
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
    /// Generation threads.
    pub threads: usize,
    /// Prompt-reading threads.
    pub threads_batch: usize,
    /// Sequences decoded together.
    pub parallel: usize,
    /// Layers offloaded to the GPU (`offload.layers`).
    pub gpu_layers: u32,
    /// Where the layers run, and why.
    pub offload: OffloadPlan,
    pub chat_template: bool,
    pub load_time: Duration,
}

/// A GGUF model running in this process.
pub struct LlamaLlm {
    name: String,
    info: ModelInfo,
    /// The most calls the worker has had in flight at once.
    peak: Arc<AtomicUsize>,
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
        gguf::check_gguf_header(path).map_err(|e| LlmError::Load {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        let (ready_tx, ready_rx) = mpsc::channel();
        let (jobs_tx, jobs_rx) = mpsc::channel::<Job>();
        let path_owned = path.to_path_buf();
        let settings = settings.clone();
        let peak = Arc::new(AtomicUsize::new(0));
        let peak_worker = Arc::clone(&peak);
        let worker = std::thread::Builder::new()
            .name(format!("llama:{name}"))
            .spawn(move || worker_main(path_owned, settings, ready_tx, jobs_rx, peak_worker))
            .map_err(|e| LlmError::Backend(format!("cannot start worker thread: {e}")))?;
        let info = ready_rx.recv().map_err(|_| LlmError::WorkerGone)??;
        Ok(Self {
            name: name.to_string(),
            info,
            peak,
            jobs: Some(jobs_tx),
            worker: Some(worker),
        })
    }

    pub fn info(&self) -> &ModelInfo {
        &self.info
    }

    /// The most calls decoded together so far (at most `parallel`).
    pub fn peak_concurrency(&self) -> usize {
        self.peak.load(Ordering::Relaxed)
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

    fn parallelism(&self) -> usize {
        self.info.parallel
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
    peak: Arc<AtomicUsize>,
) {
    let started = Instant::now();
    let parallel = settings.effective_parallel();
    let loaded = (|| {
        let backend = backend()?;
        let offload = plan_offload(&path, &settings, parallel)?;
        let mut params = LlamaModelParams::default().with_n_gpu_layers(offload.layers);
        if let Some(device) = offload.device.as_ref().filter(|_| offload.layers > 0) {
            // Only the planned device: llama.cpp would otherwise split over every GPU it sees.
            params = params
                .with_devices(&[device.index])
                .map_err(|e| LlmError::Backend(format!("cannot select {}: {e}", device.name)))?;
        }
        let model =
            LlamaModel::load_from_file(backend, &path, &params).map_err(|e| LlmError::Load {
                path: path.display().to_string(),
                message: e.to_string(),
            })?;
        Ok::<_, LlmError>((backend, model, offload))
    })();
    let (backend, model, offload) = match loaded {
        Ok(v) => v,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let threads = settings.effective_threads();
    let threads_batch = settings.effective_threads_batch();
    let n_ctx_train = model.n_ctx_train();
    // Each sequence may use the whole configured context; the sequences share one unified
    // cache of `parallel` times that, so a common prompt prefix is stored once.
    let n_ctx_seq = sequence_context(&settings, n_ctx_train);
    let n_ctx = n_ctx_seq.saturating_mul(parallel as u32);
    let n_batch = settings.batch_size.clamp(32, n_ctx);
    let ctx_params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(n_ctx))
        .with_n_batch(n_batch)
        .with_n_seq_max(parallel as u32)
        .with_kv_unified(true)
        .with_n_threads(threads as i32)
        .with_n_threads_batch(threads_batch as i32);
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
    let mut scheduler = Scheduler {
        model: &model,
        template,
        slots: (0..parallel).map(Slot::new).collect(),
        n_batch: n_batch as usize,
        n_ctx_seq: n_ctx_seq as usize,
        n_ctx: n_ctx as usize,
        clock: 0,
        peak,
    };
    // The first decode after loading is much slower than the rest; pay for it now.
    scheduler.warm_up(&mut ctx);
    let info = ModelInfo {
        path: path.clone(),
        size_bytes: model.size(),
        n_params: model.n_params(),
        n_ctx: n_ctx_seq,
        n_ctx_train,
        threads,
        threads_batch,
        parallel,
        gpu_layers: offload.layers,
        offload,
        chat_template: scheduler.template.is_some(),
        load_time: started.elapsed(),
    };
    tracing::info!(
        model = %path.display(),
        n_ctx_seq,
        parallel,
        threads,
        threads_batch,
        gpu = %info.offload.summary(),
        load_ms = info.load_time.as_millis() as u64,
        "model loaded"
    );
    tracing::info!(reason = %info.offload.reason, "offload");
    if ready.send(Ok(info)).is_err() {
        return;
    }
    scheduler.serve(&mut ctx, &jobs);
}

/// Tokens of context each sequence gets: the setting, within what the model was trained on.
fn sequence_context(settings: &LlamaSettings, n_ctx_train: u32) -> u32 {
    if n_ctx_train > 0 {
        settings.context_size.min(n_ctx_train)
    } else {
        settings.context_size
    }
    .max(256)
}

/// Plans the GPU offload for `path` under `settings` (see [`offload::plan`]); a CPU build, or
/// `gpu_layers = 0`, never reads the model's shape.
pub fn plan_offload(
    path: &Path,
    settings: &LlamaSettings,
    parallel: usize,
) -> Result<OffloadPlan, LlmError> {
    let devices = offload::gpu_devices()?;
    if devices.is_empty() || settings.gpu_layers == GpuLayers::Fixed(0) {
        return Ok(offload::plan(settings.gpu_layers, &devices, None));
    }
    let model = offload::model_shape(path)?;
    // The trained context is not known before loading; the setting bounds it from above, so
    // the plan errs towards fewer layers.
    let n_ctx_seq = sequence_context(settings, 0);
    let workload = Workload {
        model,
        n_ctx_total: n_ctx_seq.saturating_mul(parallel as u32),
        n_batch: settings
            .batch_size
            .clamp(32, n_ctx_seq.saturating_mul(parallel as u32)),
    };
    Ok(offload::plan(
        settings.gpu_layers,
        &devices,
        Some(&workload),
    ))
}

/// One sequence of the shared context: the tokens its KV cache holds and the call it serves.
struct Slot {
    seq: i32,
    /// Exactly the tokens whose keys and values are in the cache for this sequence, in
    /// position order; kept after a call ends so the next call can reuse its prefix.
    cached: Vec<LlamaToken>,
    call: Option<Call>,
    /// When the slot last served a call (for evicting the least recently used cache).
    last_used: u64,
}

impl Slot {
    fn new(index: usize) -> Self {
        Self {
            seq: index as i32,
            cached: Vec::new(),
            call: None,
            last_used: 0,
        }
    }
}

/// A call in progress on a slot.
struct Call {
    job: Job,
    received: Instant,
    prompt: Vec<LlamaToken>,
    /// Prompt tokens whose cache was reused (not read again).
    reused: usize,
    /// Prompt tokens in the cache so far; equal to `prompt.len()` once generation began.
    fed: usize,
    /// Cache cells this call may end up using (prompt plus its generation budget).
    reserved: usize,
    sampler: CallSampler,
    /// Where this slot's logits are in the batch just decoded.
    logits_at: Option<i32>,
    /// The sampled token still to be decoded.
    next: Option<LlamaToken>,
    /// Tokens of this slot in the batch being decoded.
    in_batch: Vec<LlamaToken>,
    prompt_eval: Option<Duration>,
    first_token_at: Option<Instant>,
    generated: u64,
    /// The last generated tokens of a free-text call, for [`ends_in_a_loop`].
    recent: Vec<LlamaToken>,
    text: String,
    pending_bytes: Vec<u8>,
}

impl Call {
    fn emit(&mut self, piece: &str) {
        if !piece.is_empty() {
            let _ = self.job.events.send(Event::Text(piece.to_string()));
            self.text.push_str(piece);
        }
    }

    fn finish(mut self, finish: FinishReason) {
        if !self.pending_bytes.is_empty() {
            let rest = String::from_utf8_lossy(&self.pending_bytes).into_owned();
            self.pending_bytes.clear();
            self.emit(&rest);
        }
        let total = self.received.elapsed();
        let timing = Timing {
            time_to_first_token: self.first_token_at.map_or(total, |t| t - self.received),
            prompt_eval: self.prompt_eval.unwrap_or(total),
            generation: self.first_token_at.map_or(Duration::ZERO, |t| t.elapsed()),
            total,
        };
        let completion = Completion {
            text: std::mem::take(&mut self.text),
            usage: Usage {
                prompt_tokens: self.prompt.len() as u64,
                cached_tokens: self.reused as u64,
                generated_tokens: self.generated,
                calls: 1,
            },
            timing,
            finish,
        };
        let _ = self.job.events.send(Event::Done(Ok(completion)));
    }

    fn fail(self, error: LlmError) {
        let _ = self.job.events.send(Event::Done(Err(error)));
    }
}

/// Continuous batching over the slots: every step decodes one token for each generating call
/// and fills the rest of the batch with prompt chunks of calls still reading theirs. Calls that
/// arrive while others run join at the next step.
struct Scheduler<'m> {
    model: &'m LlamaModel,
    template: Option<LlamaChatTemplate>,
    slots: Vec<Slot>,
    n_batch: usize,
    /// Tokens one sequence may hold.
    n_ctx_seq: usize,
    /// Cells of the shared cache.
    n_ctx: usize,
    clock: u64,
    peak: Arc<AtomicUsize>,
}

/// Below this many tokens, copying another sequence's cache is not worth evicting the prefix a
/// free slot already holds.
const MIN_COPY: usize = 16;

impl Scheduler<'_> {
    fn warm_up(&mut self, ctx: &mut LlamaContext) {
        let bos = self.model.vocab().bos();
        if let Ok(mut batch) = LlamaBatch::get_one(&[bos]) {
            let _ = ctx.decode(&mut batch);
        }
        ctx.clear_kv_cache();
    }

    fn busy(&self) -> bool {
        self.slots.iter().any(|s| s.call.is_some())
    }

    /// Serves calls until the channel closes and the last call in flight has finished.
    fn serve(&mut self, ctx: &mut LlamaContext, jobs: &mpsc::Receiver<Job>) {
        let mut queue: VecDeque<Job> = VecDeque::new();
        let mut batch = LlamaBatch::new(self.n_batch.max(self.slots.len()), 1);
        let mut open = true;
        loop {
            if open && !self.busy() && queue.is_empty() {
                match jobs.recv() {
                    Ok(job) => queue.push_back(job),
                    Err(_) => open = false,
                }
            }
            while open {
                match jobs.try_recv() {
                    Ok(job) => queue.push_back(job),
                    Err(mpsc::TryRecvError::Empty) => break,
                    Err(mpsc::TryRecvError::Disconnected) => open = false,
                }
            }
            while let Some(job) = queue.pop_front() {
                if let Some(job) = self.admit(ctx, job) {
                    // No slot or cache room until a running call ends.
                    queue.push_front(job);
                    break;
                }
            }
            let live = self.slots.iter().filter(|s| s.call.is_some()).count();
            self.peak.fetch_max(live, Ordering::Relaxed);
            if !self.busy() {
                if !open && queue.is_empty() {
                    return;
                }
                continue;
            }
            self.step(ctx, &mut batch);
        }
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
    ) -> Result<CallSampler, LlmError> {
        let grammar = match format {
            OutputFormat::JsonSchema(schema) => {
                let gbnf = grammar::schema_to_grammar(schema)?;
                Some(
                    LlamaSampler::grammar(self.model, &gbnf, "root")
                        .map_err(|e| LlmError::Grammar(e.to_string()))?,
                )
            }
            _ => None,
        };
        let chain = if options.temperature <= 0.0 {
            LlamaSampler::greedy()
        } else {
            LlamaSampler::chain_simple([
                LlamaSampler::top_p(options.top_p.clamp(0.01, 1.0), 1),
                LlamaSampler::temp(options.temperature),
                LlamaSampler::dist(options.seed),
            ])
        };
        Ok(CallSampler { grammar, chain })
    }

    /// Cache cells in use or promised: running calls count what they reserved, idle slots
    /// what they keep. A prefix shared by copying is counted once per sequence, which
    /// overstates the use and so stays on the safe side.
    fn cells_committed(&self) -> usize {
        self.slots
            .iter()
            .map(|s| s.call.as_ref().map_or(s.cached.len(), |c| c.reserved))
            .sum()
    }

    /// Starts `job` on a free slot, reusing the longest cached prefix of its prompt (the slot's
    /// own, or a copy of another sequence's). A job that cannot start yet comes back (Some); a job
    /// that can never start is answered with its error.
    fn admit(&mut self, ctx: &mut LlamaContext, job: Job) -> Option<Job> {
        let received = Instant::now();
        let prepared = (|| {
            let prompt = self.render_prompt(&job.request.messages)?;
            let tokens = self.model.vocab().tokenize(prompt.as_bytes(), true, true);
            if tokens.is_empty() {
                return Err(LlmError::Backend("empty prompt".into()));
            }
            if tokens.len() + 1 > self.n_ctx_seq {
                return Err(LlmError::ContextOverflow {
                    needed: tokens.len() + 1,
                    n_ctx: self.n_ctx_seq as u32,
                });
            }
            let sampler = self.sampler(&job.request.options, &job.request.format)?;
            Ok((tokens, sampler))
        })();
        let (tokens, sampler) = match prepared {
            Ok(v) => v,
            Err(e) => {
                let _ = job.events.send(Event::Done(Err(e)));
                return None;
            }
        };
        if job.cancel.is_cancelled() {
            let _ = job.events.send(Event::Done(Err(LlmError::Cancelled)));
            return None;
        }
        // The free slot whose cache shares most with the prompt; ties go to the one idle
        // longest, so recently used prefixes stay.
        let Some(target) = self
            .slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.call.is_none())
            .max_by_key(|(_, s)| {
                (
                    common_prefix(&s.cached, &tokens),
                    std::cmp::Reverse(s.last_used),
                )
            })
            .map(|(i, _)| i)
        else {
            return Some(job);
        };
        let reserved = (tokens.len() + job.request.options.max_tokens as usize).min(self.n_ctx_seq);
        // Make room: evict idle caches, least recently used first, then wait for running calls.
        loop {
            let committed = self.cells_committed() - self.slots[target].cached.len();
            if committed + reserved <= self.n_ctx {
                break;
            }
            let victim = self
                .slots
                .iter()
                .enumerate()
                .filter(|(i, s)| *i != target && s.call.is_none() && !s.cached.is_empty())
                .min_by_key(|(_, s)| s.last_used)
                .map(|(i, _)| i);
            match victim {
                Some(v) => self.drop_cache(ctx, v),
                None => return Some(job),
            }
        }

        let own = common_prefix(&self.slots[target].cached, &tokens);
        let donor = self
            .slots
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != target)
            .map(|(i, s)| (i, common_prefix(&s.cached, &tokens)))
            .max_by_key(|&(_, n)| n);
        let mut reuse = own;
        match donor {
            Some((d, n)) if n >= own + MIN_COPY => {
                self.drop_cache(ctx, target);
                let (src, dst) = (self.slots[d].seq, self.slots[target].seq);
                match ctx.copy_kv_cache_seq(src, dst, Some(0), Some(n as u32)) {
                    Ok(()) => {
                        let prefix = self.slots[d].cached[..n].to_vec();
                        self.slots[target].cached = prefix;
                        reuse = n;
                    }
                    Err(_) => reuse = 0,
                }
            }
            _ => {}
        }
        // At least the last prompt token is read again so there are logits to sample from.
        reuse = reuse.min(tokens.len() - 1);
        let slot = &mut self.slots[target];
        if reuse < slot.cached.len() {
            let seq = slot.seq as u32;
            let removed = ctx
                .clear_kv_cache_seq(Some(seq), Some(reuse as u32), None)
                .unwrap_or(false);
            if !removed {
                let _ = ctx.clear_kv_cache_seq(Some(seq), None, None);
                reuse = 0;
            }
            slot.cached.truncate(reuse);
        }
        self.clock += 1;
        slot.last_used = self.clock;
        slot.call = Some(Call {
            job,
            received,
            prompt: tokens,
            reused: reuse,
            fed: reuse,
            reserved,
            sampler,
            logits_at: None,
            next: None,
            in_batch: Vec::new(),
            prompt_eval: None,
            first_token_at: None,
            generated: 0,
            recent: Vec::new(),
            text: String::new(),
            pending_bytes: Vec::new(),
        });
        None
    }

    fn drop_cache(&mut self, ctx: &mut LlamaContext, slot: usize) {
        let seq = self.slots[slot].seq as u32;
        let _ = ctx.clear_kv_cache_seq(Some(seq), None, None);
        self.slots[slot].cached.clear();
    }

    /// One decode: a token for every generating call, then prompt chunks while room is left.
    fn step(&mut self, ctx: &mut LlamaContext, batch: &mut LlamaBatch) {
        // Cancelled calls leave before the batch is built.
        for slot in &mut self.slots {
            let cancelled = slot
                .call
                .as_ref()
                .is_some_and(|c| c.job.cancel.is_cancelled());
            if cancelled {
                let call = slot.call.take().expect("checked above");
                if call.fed < call.prompt.len() {
                    call.fail(LlmError::Cancelled);
                } else {
                    call.finish(FinishReason::Cancelled);
                }
            }
        }
        batch.clear();
        let mut added = 0usize;
        let mut failed = None;
        for slot in &mut self.slots {
            let Some(call) = slot.call.as_mut() else {
                continue;
            };
            call.in_batch.clear();
            call.logits_at = None;
            if let Some(token) = call.next.take() {
                let pos = slot.cached.len() as i32;
                if let Err(e) = batch.add(token, pos, &[slot.seq], true) {
                    failed = Some(e.to_string());
                    break;
                }
                call.in_batch.push(token);
                call.logits_at = Some(batch.n_tokens() - 1);
                added += 1;
            }
        }
        // Prompts fill what is left, the call that has waited longest first.
        let n_batch = self.n_batch;
        let mut order: Vec<usize> = (0..self.slots.len())
            .filter(|&i| {
                self.slots[i]
                    .call
                    .as_ref()
                    .is_some_and(|c| c.fed < c.prompt.len())
            })
            .collect();
        order.sort_by_key(|&i| self.slots[i].last_used);
        for i in order {
            if failed.is_some() || added >= n_batch {
                break;
            }
            let slot = &mut self.slots[i];
            let call = slot.call.as_mut().expect("filtered above");
            let take = (call.prompt.len() - call.fed).min(n_batch - added);
            for k in 0..take {
                let pos = call.fed + k;
                let last = pos == call.prompt.len() - 1;
                if let Err(e) = batch.add(call.prompt[pos], pos as i32, &[slot.seq], last) {
                    failed = Some(e.to_string());
                    break;
                }
                if last {
                    call.logits_at = Some(batch.n_tokens() - 1);
                }
            }
            call.in_batch
                .extend_from_slice(&call.prompt[call.fed..call.fed + take]);
            call.fed += take;
            added += take;
        }
        if failed.is_none() && added > 0 {
            if let Err(e) = ctx.decode(batch) {
                failed = Some(format!("decoding: {e}"));
            }
        }
        if let Some(message) = failed {
            // The cache may be half-updated: every call in flight fails and all caches go.
            for slot in &mut self.slots {
                if let Some(call) = slot.call.take() {
                    call.fail(LlmError::Backend(message.clone()));
                }
                slot.cached.clear();
            }
            ctx.clear_kv_cache();
            return;
        }
        let vocab = self.model.vocab();
        let n_ctx_seq = self.n_ctx_seq;
        let mut piece = Vec::with_capacity(32);
        for slot in &mut self.slots {
            let Some(call) = slot.call.as_mut() else {
                continue;
            };
            slot.cached.extend_from_slice(&call.in_batch);
            call.in_batch.clear();
            let Some(at) = call.logits_at else { continue };
            if call.prompt_eval.is_none() {
                call.prompt_eval = Some(call.received.elapsed());
            }
            if let OutputFormat::Choice(choices) = &call.job.request.format {
                // One forward pass: read the probabilities, generate nothing.
                let probabilities = choice_mass(&vocab, ctx.get_logits_ith(at), choices);
                let mut call = slot.call.take().expect("checked above");
                call.text = serde_json::to_string(&ChoiceProbabilities { probabilities })
                    .unwrap_or_default();
                call.finish(FinishReason::Stop);
                continue;
            }
            if call.generated >= u64::from(call.job.request.options.max_tokens) {
                let call = slot.call.take().expect("checked above");
                call.finish(FinishReason::Length);
                continue;
            }
            // Also feeds the token to the grammar and other stateful samplers.
            let token = match call.sampler.next_token(ctx.get_logits_ith(at)) {
                Ok(token) => token,
                Err(why) => {
                    let call = slot.call.take().expect("checked above");
                    tracing::warn!("generation stopped: {why}");
                    let output = call.text.clone();
                    call.fail(LlmError::InvalidOutput {
                        message: why,
                        output,
                    });
                    continue;
                }
            };
            if vocab.is_eog(token) {
                let call = slot.call.take().expect("checked above");
                call.finish(FinishReason::Stop);
                continue;
            }
            call.first_token_at.get_or_insert_with(Instant::now);
            call.generated += 1;
            piece.clear();
            vocab.token_to_piece_into(token, &mut piece, false, None);
            call.pending_bytes.extend_from_slice(&piece);
            let emitted = take_utf8(&mut call.pending_bytes);
            call.emit(&emitted);
            let budget_spent = call.generated >= u64::from(call.job.request.options.max_tokens);
            // A small model can fall into a loop and spend the whole budget on it: free text is
            // cut off there, as at `max_tokens`. Structured output is left to its grammar,
            // whose string bounds end a loop, since cutting it would lose the elements after
            // the loop that a caller's checks need (five to eight aspects, say).
            let looping = matches!(call.job.request.format, OutputFormat::Text) && {
                if call.recent.len() == LOOP_WINDOW + LOOP_MAX_PERIOD {
                    call.recent.remove(0);
                }
                call.recent.push(token);
                ends_in_a_loop(&call.recent, LOOP_WINDOW, LOOP_MAX_PERIOD)
            };
            if looping {
                tracing::debug!(generated = call.generated, "generation cut off: a loop");
            }
            if budget_spent || looping || slot.cached.len() + 1 >= n_ctx_seq {
                let call = slot.call.take().expect("checked above");
                call.finish(FinishReason::Length);
                continue;
            }
            call.next = Some(token);
        }
    }
}

/// How a call picks its tokens: the chain that chooses (greedy, or top-p, temperature and a
/// seeded draw) and, for structured output, the grammar the token must fit.
struct CallSampler {
    grammar: Option<LlamaSampler>,
    chain: LlamaSampler,
}

impl CallSampler {
    /// The next token, chosen and fed back to the samplers, without letting llama.cpp throw
    /// across the FFI boundary.
    ///
    /// The grammar is asked about the token the chain picks first, and only when it refuses
    /// that token does it mask the whole vocabulary and the chain pick again (as llama.cpp's
    /// own server does). Masking checks each of the ~150,000 tokens against the grammar, which
    /// made grammar-constrained decoding 10× slower than free decoding on an H200 (22.7
    /// against 225 tokens/s); a JSON answer's tokens are mostly the model's own first choice.
    /// Greedy picks the same token either way; a seeded draw draws from the same masked
    /// distribution (a refused first draw is drawn again from the masked one).
    ///
    /// `LlamaSampler::sample` accepts the token inside C++, and when the grammar allows no
    /// token the model gave a usable score (NaN scores, a dead end) it throws there, which
    /// aborts the process ("Rust cannot catch foreign exceptions"; seen on an H200 with
    /// random-weight models, reported upstream as utilityai/llama-cpp-rs#1082). Here the choice
    /// is checked and accepted through the shim that catches. After an error the grammar may be
    /// spent: the call must end.
    fn next_token(&mut self, logits: &[f32]) -> Result<LlamaToken, String> {
        let all = || {
            LlamaTokenDataArray::new(
                logits
                    .iter()
                    .enumerate()
                    .map(|(id, &logit)| LlamaTokenData::new(LlamaToken(id as i32), logit, 0.0))
                    .collect(),
                false,
            )
        };
        let chosen = |candidates: &LlamaTokenDataArray| {
            candidates
                .selected
                .and_then(|i| candidates.data.get(i))
                .copied()
                .ok_or_else(|| "the sampler chose no token".to_string())
        };
        let mut candidates = all();
        self.chain.apply(&mut candidates);
        let mut token = chosen(&candidates)?;
        if let Some(grammar) = self.grammar.as_mut() {
            let mut alone =
                LlamaTokenDataArray::new(vec![LlamaTokenData::new(token.id(), 0.0, 0.0)], false);
            grammar.apply(&mut alone);
            let fits = alone.data.first().is_some_and(|t| t.logit().is_finite());
            if !fits || !token.logit().is_finite() {
                let mut candidates = all();
                grammar.apply(&mut candidates);
                self.chain.apply(&mut candidates);
                token = chosen(&candidates)?;
            }
        }
        if !token.logit().is_finite() {
            return Err(format!(
                "no token the output format allows has a usable score (token {} scored {})",
                token.id().0,
                token.logit()
            ));
        }
        if let Some(grammar) = self.grammar.as_mut() {
            grammar
                .try_accept(token.id())
                .map_err(|e| format!("the output format refused token {}: {e}", token.id().0))?;
        }
        self.chain
            .try_accept(token.id())
            .map_err(|e| format!("the sampler refused token {}: {e}", token.id().0))?;
        Ok(token.id())
    }
}

/// Generated tokens a loop must fill before a call is cut off.
const LOOP_WINDOW: usize = 48;
/// The longest repeating pattern (in tokens) taken for a loop.
const LOOP_MAX_PERIOD: usize = 8;

/// Whether the last `window` tokens repeat one pattern of at most `max_period` tokens: each
/// equals the token `period` places before it. Text that means something does not (a table
/// rule is a few tokens, not 48); a model stuck in a loop does.
fn ends_in_a_loop<T: PartialEq>(tokens: &[T], window: usize, max_period: usize) -> bool {
    (1..=max_period).any(|period| {
        tokens.len() >= window + period && {
            let n = tokens.len();
            (n - window..n).all(|i| tokens[i] == tokens[i - period])
        }
    })
}

/// The softmax mass of `logits` on the tokens that begin each choice, written as the model
/// might start its reply: as given, capitalised or upper case, with or without a leading space.
fn choice_mass(vocab: &LlamaVocab, logits: &[f32], choices: &[String]) -> Vec<f32> {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let total: f64 = logits.iter().map(|&l| f64::from(l - max).exp()).sum();
    choices
        .iter()
        .map(|choice| {
            let mut capitalised = choice.clone();
            if let Some(first) = capitalised.get(..1) {
                capitalised.replace_range(..1, &first.to_uppercase());
            }
            let mut starts: Vec<LlamaToken> = [
                choice.clone(),
                capitalised.clone(),
                choice.to_uppercase(),
                format!(" {choice}"),
                format!(" {capitalised}"),
            ]
            .iter()
            .filter_map(|v| vocab.tokenize(v.as_bytes(), false, false).first().copied())
            .collect();
            starts.sort_by_key(|t| t.0);
            starts.dedup();
            let mass: f64 = starts
                .iter()
                .filter_map(|t| logits.get(t.0 as usize))
                .map(|&l| f64::from(l - max).exp())
                .sum();
            if total > 0.0 {
                (mass / total) as f32
            } else {
                0.0
            }
        })
        .collect()
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

    /// The test chat model (SmolLM2-135M), where `scripts/test.sh` fetched it.
    fn test_model() -> LlamaModel {
        let dir = std::env::var_os("RUDDER_TEST_MODELS_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.models"));
        let path = dir.join("SmolLM2-135M-Instruct.Q4_1.gguf");
        assert!(
            path.is_file(),
            "{} is missing: run scripts/test.sh",
            path.display()
        );
        LlamaModel::load_from_file(backend().unwrap(), &path, &LlamaModelParams::default()).unwrap()
    }

    #[test]
    fn a_grammar_that_allows_nothing_usable_is_an_error_not_an_abort() {
        let model = test_model();
        let vocab = usize::try_from(model.n_vocab()).unwrap();
        let sampler = |chain: LlamaSampler| CallSampler {
            grammar: Some(LlamaSampler::grammar(&model, "root ::= \"zq\"", "root").unwrap()),
            chain,
        };
        // Every score NaN (what a GPU gave for random weights): nothing is usable.
        let why = sampler(LlamaSampler::greedy())
            .next_token(&vec![f32::NAN; vocab])
            .unwrap_err();
        assert!(why.contains("usable score"), "{why}");
        // A chain that keeps only the best token, which the grammar refuses: with the grammar
        // masking first that is a dead end (utilityai/llama-cpp-rs#1082, where `sample` aborts
        // the process); asked after the first choice, the grammar masks before the chain cuts.
        let mut logits = vec![0.0f32; vocab];
        logits[42] = 10.0;
        let top_one = LlamaSampler::chain_simple([LlamaSampler::top_k(1), LlamaSampler::greedy()]);
        let token = sampler(top_one).next_token(&logits).unwrap();
        let mut piece = Vec::new();
        model
            .vocab()
            .token_to_piece_into(token, &mut piece, false, None);
        assert!(piece.starts_with(b"z"), "{token:?}");
    }

    #[test]
    fn the_grammar_decides_only_when_it_refuses_the_first_choice() {
        let model = test_model();
        let vocab = usize::try_from(model.n_vocab()).unwrap();
        let token = |text: &str| model.vocab().tokenize(text.as_bytes(), false, false)[0];
        let (z, q, x) = (token("z"), token("q"), token("x"));
        let mut sampler = CallSampler {
            grammar: Some(LlamaSampler::grammar(&model, "root ::= \"zq\"", "root").unwrap()),
            chain: LlamaSampler::greedy(),
        };
        let at = |t: LlamaToken| usize::try_from(t.0).unwrap();
        // The model's first choice fits: taken.
        let mut logits = vec![0.0f32; vocab];
        logits[at(z)] = 10.0;
        assert_eq!(sampler.next_token(&logits), Ok(z));
        // Its first choice ("x") does not fit: the best token the grammar allows ("q"), not the
        // first choice and not a token the grammar refuses.
        let mut logits = vec![0.0f32; vocab];
        logits[at(x)] = 10.0;
        logits[at(q)] = 5.0;
        assert_eq!(sampler.next_token(&logits), Ok(q));
        // Without a grammar the first choice is taken.
        let mut free = CallSampler {
            grammar: None,
            chain: LlamaSampler::greedy(),
        };
        assert_eq!(free.next_token(&logits), Ok(x));
    }

    #[test]
    fn a_loop_is_a_short_pattern_filling_the_window() {
        // "1." repeated (period 2), after some ordinary text.
        let mut tokens: Vec<u32> = (100..130).collect();
        tokens.extend([1, 2].repeat(25));
        assert!(ends_in_a_loop(&tokens, 48, 8));
        // One token short of the window and one period: not yet.
        assert!(!ends_in_a_loop(&tokens[..tokens.len() - 1], 48, 8));
        // A pattern longer than the longest period is not taken for a loop.
        let long: Vec<u32> = (0..9).cycle().take(80).collect();
        assert!(!ends_in_a_loop(&long, 48, 8));
        assert!(ends_in_a_loop(&long, 48, 9));
        // Text that varies, and a loop broken near its end.
        let text: Vec<u32> = (0..200).map(|i| (i * 7919) % 613).collect();
        assert!(!ends_in_a_loop(&text, 48, 8));
        let mut broken = [7u32].repeat(60);
        broken[55] = 8;
        assert!(!ends_in_a_loop(&broken, 48, 8));
        assert!(!ends_in_a_loop::<u32>(&[], 48, 8));
    }

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
