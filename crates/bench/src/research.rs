//! `rudder bench research`: one research question run twice over the document library (the
//! offline Wikipedia corpus), once the old way and once with the saved settings, each in a
//! child process of its own (fresh model, fresh KV cache, its own peak RSS):
//!
//! * **sequential**: `llama.parallel = 1`, `llama.threads = 1`, `llama.threads_batch = 1`:
//!   one call at a time on one thread, as before continuous batching;
//! * **default**: `llama` as loaded from settings.toml (with `--threads` applied).
//!
//! Both runs search the documents only (not the history, so no profile is built first, and
//! not the web), ask no clarifying questions and never pause (`NeverAsk`). The embedder
//! follows the loaded settings in both, so only the chat model's settings differ. Each run is
//! a stored session in the data directory, deleted afterwards (`--keep-sessions` keeps them).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use serde::{Deserialize, Serialize};

use rudder::config::{LlamaSettings, Paths, Settings};
use rudder::llm::Usage;
use rudder::models::ModelStore;
use rudder::research::{Envelope, Event, NeverAsk};
use rudder::session::runner::{
    open_embedder, session_dir, NewSession, RunError, RunOverrides, Runtime, Session,
};
use rudder::session::{SessionStore, SourceChoice};

use crate::parallel::{ratio, Hardware};
use crate::peak_rss_bytes;

/// The hidden flag that makes `bench research` do one run (in a child process).
pub const RESEARCH_CHILD_FLAG: &str = "--research-child";

/// A question the Wikipedia vital articles cover from several sides.
pub const DEFAULT_QUESTION: &str =
    "How did the printing press change science, religion and politics in Europe?";

/// The command that installs the corpus the benchmark researches over.
pub const CORPUS_COMMAND: &str = "rudder corpus fetch wikipedia-vital-en";

/// How a run sets up the chat model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum ResearchMode {
    /// One call at a time, one thread.
    Sequential,
    /// The saved settings.
    Default,
}

impl ResearchMode {
    pub const BOTH: [ResearchMode; 2] = [ResearchMode::Sequential, ResearchMode::Default];

    pub fn as_str(self) -> &'static str {
        match self {
            ResearchMode::Sequential => "sequential",
            ResearchMode::Default => "default",
        }
    }

    /// The chat model's settings for this mode, from the loaded ones.
    pub fn llama_settings(self, loaded: &LlamaSettings) -> LlamaSettings {
        match self {
            ResearchMode::Sequential => LlamaSettings {
                parallel: 1,
                threads: Some(1),
                threads_batch: Some(1),
                ..loaded.clone()
            },
            ResearchMode::Default => loaded.clone(),
        }
    }
}

/// What a run researches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResearchRequest {
    pub question: String,
    pub depth: u32,
    pub breadth: u32,
}

/// One stage's cost in a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageRow {
    pub stage: String,
    pub calls: u64,
    pub prompt_tokens: u64,
    pub cached_tokens: u64,
    pub generated_tokens: u64,
    pub seconds: f64,
}

/// Prompt tokens served from the KV cache, as a percentage of all prompt tokens.
pub fn cached_share(usage: &Usage) -> Option<f64> {
    (usage.prompt_tokens > 0)
        .then(|| 100.0 * usage.cached_tokens as f64 / usage.prompt_tokens as f64)
}

impl StageRow {
    pub fn cached_share(&self) -> Option<f64> {
        cached_share(&Usage {
            prompt_tokens: self.prompt_tokens,
            cached_tokens: self.cached_tokens,
            ..Usage::default()
        })
    }
}

/// What one run measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResearchRun {
    pub mode: ResearchMode,
    pub model: String,
    pub parallel: usize,
    pub threads: usize,
    pub threads_batch: usize,
    /// Opening the chat model and the embedder.
    pub load_seconds: f64,
    /// The research itself, from the start of the loop to the written report.
    pub wall_seconds: f64,
    pub usage: Usage,
    pub by_stage: Vec<StageRow>,
    /// Nodes of the research tree at each depth (the root is depth 0).
    pub tree_shape: Vec<usize>,
    pub sections: usize,
    pub report_words: usize,
    /// References listed under the report.
    pub citations: usize,
    pub peak_rss_bytes: Option<u64>,
    /// The session, when it was kept.
    pub kept_session: Option<i64>,
}

/// Results of `rudder bench research`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResearchBench {
    pub request: ResearchRequest,
    pub documents: u64,
    pub hardware: Hardware,
    pub runs: Vec<ResearchRun>,
    /// Wall time of the sequential run over the default one's.
    pub wall_ratio: Option<f64>,
    pub same_tree_shape: bool,
    pub same_sections: bool,
}

impl ResearchBench {
    pub fn new(
        request: ResearchRequest,
        documents: u64,
        hardware: Hardware,
        runs: Vec<ResearchRun>,
    ) -> Self {
        let find = |m| runs.iter().find(|r| r.mode == m);
        let (seq, def) = (find(ResearchMode::Sequential), find(ResearchMode::Default));
        let (wall_ratio, same_tree_shape, same_sections) = match (seq, def) {
            (Some(s), Some(d)) => (
                ratio(s.wall_seconds, d.wall_seconds),
                s.tree_shape == d.tree_shape,
                s.sections == d.sections,
            ),
            _ => (None, false, false),
        };
        Self {
            request,
            documents,
            hardware,
            runs,
            wall_ratio,
            same_tree_shape,
            same_sections,
        }
    }
}

/// Counts nodes per depth: `[1, 3, 9]` for a full tree of depth 2 and breadth 3.
pub fn tree_shape(depths: impl IntoIterator<Item = u32>) -> Vec<usize> {
    let mut shape = Vec::new();
    for d in depths {
        let d = d as usize;
        if shape.len() <= d {
            shape.resize(d + 1, 0);
        }
        shape[d] += 1;
    }
    shape
}

fn shape_text(shape: &[usize]) -> String {
    shape
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join("-")
}

fn share_text(share: Option<f64>) -> String {
    share.map_or_else(|| "–".into(), |s| format!("{s:.0} %"))
}

/// The comparison, as printed.
pub fn render_research(b: &ResearchBench) -> String {
    let mut out = String::new();
    let h = &b.hardware;
    if let Some(cpu) = &h.cpu {
        out.push_str(&format!("cpu                 {cpu}\n"));
    }
    out.push_str(&format!(
        "cores               {} physical, {} logical\n",
        h.physical_cores, h.logical_cores
    ));
    out.push_str(&format!("question            {}\n", b.request.question));
    out.push_str(&format!(
        "tree                depth {}, breadth {}, over {} documents, no questions asked\n",
        b.request.depth, b.request.breadth, b.documents
    ));
    if let Some(r) = b.runs.first() {
        out.push_str(&format!("model               {}\n", r.model));
    }
    let col = |f: &dyn Fn(&ResearchRun) -> String| -> String {
        b.runs.iter().map(|r| format!(" {:>18}", f(r))).collect()
    };
    let row = |label: &str, f: &dyn Fn(&ResearchRun) -> String| -> String {
        format!("{label:<24}{}\n", col(f))
    };
    out.push('\n');
    out.push_str(&row("", &|r| r.mode.as_str().to_string()));
    out.push_str(&row("parallel / threads", &|r| {
        format!("{} / {} / {}", r.parallel, r.threads, r.threads_batch)
    }));
    out.push_str(&row("wall s", &|r| format!("{:.1}", r.wall_seconds)));
    out.push_str(&row("model load s", &|r| format!("{:.1}", r.load_seconds)));
    out.push_str(&row("LLM calls", &|r| r.usage.calls.to_string()));
    out.push_str(&row("prompt tokens", &|r| {
        r.usage.prompt_tokens.to_string()
    }));
    out.push_str(&row("cached tokens", &|r| {
        format!(
            "{} ({})",
            r.usage.cached_tokens,
            share_text(cached_share(&r.usage))
        )
    }));
    out.push_str(&row("generated tokens", &|r| {
        r.usage.generated_tokens.to_string()
    }));
    out.push_str(&row("tree (nodes per depth)", &|r| {
        shape_text(&r.tree_shape)
    }));
    out.push_str(&row("report sections", &|r| r.sections.to_string()));
    out.push_str(&row("report words", &|r| r.report_words.to_string()));
    out.push_str(&row("citations", &|r| r.citations.to_string()));
    out.push_str(&row("peak RSS MB", &|r| {
        r.peak_rss_bytes
            .map_or_else(|| "–".into(), |b| format!("{:.0}", b as f64 / 1e6))
    }));
    let mut stages: Vec<&str> = Vec::new();
    for r in &b.runs {
        for s in &r.by_stage {
            if !stages.contains(&s.stage.as_str()) {
                stages.push(&s.stage);
            }
        }
    }
    out.push_str("\nper stage: calls, cached share of prompt tokens, seconds\n");
    for stage in stages {
        out.push_str(&row(&format!("  {stage}"), &|r| {
            r.by_stage.iter().find(|s| s.stage == stage).map_or_else(
                || "–".into(),
                |s| {
                    format!(
                        "{} · {} · {:.0} s",
                        s.calls,
                        share_text(s.cached_share()),
                        s.seconds
                    )
                },
            )
        }));
    }
    out.push('\n');
    out.push_str(&format!(
        "wall ratio sequential / default: {}\n",
        b.wall_ratio
            .map_or_else(|| "–".into(), |r| format!("{r:.2}×"))
    ));
    let same = |s: bool| if s { "same" } else { "DIFFERENT" };
    out.push_str(&format!(
        "tree shape: {}; section count: {}\n",
        same(b.same_tree_shape),
        same(b.same_sections)
    ));
    if let Some(ids) = b
        .runs
        .iter()
        .map(|r| r.kept_session.map(|id| id.to_string()))
        .collect::<Option<Vec<_>>>()
    {
        out.push_str(&format!("sessions kept: {}\n", ids.join(", ")));
    }
    out
}

/// The settings every run starts from: the loaded ones with the web and any OpenAI-compatible
/// server switched off, so the runs stay on this machine and use the local model.
pub fn offline(settings: &Settings) -> Settings {
    let mut s = settings.clone();
    s.web = None;
    s.openai = None;
    s
}

/// Documents in the library, or an error naming the command that installs the corpus.
pub fn library_documents(paths: &Paths) -> anyhow::Result<u64> {
    let none = || {
        anyhow::anyhow!(
            "no documents to research over in {}: install the offline Wikipedia corpus with \
             `{CORPUS_COMMAND}` (with the same --data-dir / RUDDER_DATA_DIR)",
            paths.data_dir.display()
        )
    };
    if !paths.docs_dir().exists() {
        return Err(none());
    }
    let mut docs = rudder::sources::docs::DocsSource::open(&paths.docs_dir())?;
    docs.library_mut().release_writer()?;
    let n = docs.library().stats()?.store.documents;
    if n == 0 {
        return Err(none());
    }
    Ok(n)
}

/// What the progress ticker shows.
#[derive(Debug, Default)]
struct Tick {
    events: u64,
    nodes_added: u64,
    nodes_researched: u64,
    calls: u64,
    last: String,
}

/// One run (the child's work): opens the models with `mode`'s settings, runs the research in
/// a new session, and returns its figures; a line on stderr every five seconds says how far
/// it got.
pub fn run_research(
    paths: &Paths,
    loaded: &Settings,
    model: Option<&str>,
    mode: ResearchMode,
    request: &ResearchRequest,
    keep_session: bool,
) -> anyhow::Result<ResearchRun> {
    let base = offline(loaded);
    let mut settings = base.clone();
    settings.llama = mode.llama_settings(&base.llama);
    let label = mode.as_str();

    let started = Instant::now();
    let store = ModelStore::open(paths)?;
    let embedder = Arc::new(open_embedder(&store, &base)?);
    let runtime = Runtime::open(paths, &settings, model, Some(embedder))?;
    let load_seconds = started.elapsed().as_secs_f64();
    let model_name = runtime.model_name().to_string();
    let parallel = runtime.llm.parallelism();
    eprintln!(
        "[{label}] {} loaded in {load_seconds:.1} s: {} sequences, {} threads, {} prompt threads",
        runtime.model_name(),
        runtime.llm.parallelism(),
        settings.llama.effective_threads(),
        settings.llama.effective_threads_batch()
    );

    let new = NewSession {
        question: request.question.clone(),
        persona: String::new(),
        sources: SourceChoice {
            history: false,
            docs: true,
            docs_dir: None,
        },
        overrides: RunOverrides {
            depth: Some(request.depth),
            breadth: Some(request.breadth),
            clarify_turns: Some(0),
            always_ask: Some(false),
            ..RunOverrides::default()
        },
    };
    let tick = Mutex::new(Tick::default());
    let done = AtomicBool::new(false);
    let research_start = Instant::now();
    let result = std::thread::scope(|scope| {
        scope.spawn(|| {
            let mut next = Duration::from_secs(5);
            while !done.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(200));
                let elapsed = research_start.elapsed();
                if elapsed >= next {
                    next += Duration::from_secs(5);
                    let t = tick.lock().unwrap_or_else(|e| e.into_inner());
                    eprintln!(
                        "[{label}] {:>4.0} s: {} of {} nodes researched, {} LLM calls, {} events (last: {})",
                        elapsed.as_secs_f64(),
                        t.nodes_researched,
                        t.nodes_added,
                        t.calls,
                        t.events,
                        t.last
                    );
                }
            }
        });
        let mut sink = |e: &Envelope| {
            let mut t = tick.lock().unwrap_or_else(|e| e.into_inner());
            t.events += 1;
            match &e.event {
                Event::NodeAdded { .. } => t.nodes_added += 1,
                Event::NodeResearched { .. } => t.nodes_researched += 1,
                Event::Usage { usage, .. } => t.calls += usage.calls,
                _ => {}
            }
            if let Ok(serde_json::Value::Object(o)) = serde_json::to_value(&e.event) {
                if let Some(serde_json::Value::String(kind)) = o.get("type") {
                    t.last = kind.clone();
                }
            }
        };
        // Stops the ticker however the run ends (a panic included, or the scope would wait
        // for the ticker forever).
        struct Done<'a>(&'a AtomicBool);
        impl Drop for Done<'_> {
            fn drop(&mut self) {
                self.0.store(true, Ordering::SeqCst);
            }
        }
        let _done = Done(&done);
        Session::new(paths, &settings).with_runtime(runtime).start(
            &new,
            &mut NeverAsk,
            &mut sink,
            &mut |_| {},
        )
    });
    let wall_seconds = research_start.elapsed().as_secs_f64();
    let (id, outcome) = match result {
        Err(RunError::NothingToResearch) => anyhow::bail!(
            "no documents to research over: install the offline Wikipedia corpus with \
             `{CORPUS_COMMAND}`"
        ),
        other => other.with_context(|| format!("the {label} research run"))?,
    };

    let kept_session = if keep_session {
        Some(id)
    } else {
        SessionStore::open(&paths.sessions_db())?.delete(id)?;
        let dir = session_dir(paths, id);
        if dir.exists() {
            std::fs::remove_dir_all(&dir).with_context(|| format!("{}", dir.display()))?;
        }
        None
    };
    Ok(ResearchRun {
        mode,
        model: model_name,
        parallel,
        threads: settings.llama.effective_threads(),
        threads_batch: settings.llama.effective_threads_batch(),
        load_seconds,
        wall_seconds,
        usage: outcome.usage,
        by_stage: outcome
            .by_stage
            .iter()
            .map(|(stage, cost)| StageRow {
                stage: stage.as_str().to_string(),
                calls: cost.usage.calls,
                prompt_tokens: cost.usage.prompt_tokens,
                cached_tokens: cost.usage.cached_tokens,
                generated_tokens: cost.usage.generated_tokens,
                seconds: cost.seconds,
            })
            .collect(),
        tree_shape: tree_shape(outcome.tree.nodes.iter().map(|n| n.depth)),
        sections: outcome.report.sections.len(),
        report_words: outcome.report.words(),
        citations: outcome.report.references.len(),
        peak_rss_bytes: peak_rss_bytes(),
        kept_session,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tree_shape_counts_nodes_per_depth() {
        assert_eq!(tree_shape([0, 1, 1, 1, 2, 2]), vec![1, 3, 2]);
        assert_eq!(tree_shape([0, 2]), vec![1, 0, 1]);
        assert_eq!(tree_shape(std::iter::empty()), Vec::<usize>::new());
        assert_eq!(shape_text(&[1, 3, 9]), "1-3-9");
    }

    #[test]
    fn sequential_is_one_call_on_one_thread_and_default_is_as_loaded() {
        let loaded = LlamaSettings {
            parallel: 4,
            threads: None,
            context_size: 2048,
            ..LlamaSettings::default()
        };
        let s = ResearchMode::Sequential.llama_settings(&loaded);
        assert_eq!(
            (s.parallel, s.threads, s.threads_batch, s.context_size),
            (1, Some(1), Some(1), 2048)
        );
        assert_eq!((s.effective_threads(), s.effective_threads_batch()), (1, 1));
        assert_eq!(ResearchMode::Default.llama_settings(&loaded), loaded);
    }

    fn run(mode: ResearchMode, wall: f64, shape: Vec<usize>, sections: usize) -> ResearchRun {
        ResearchRun {
            mode,
            model: "m".into(),
            parallel: if mode == ResearchMode::Sequential {
                1
            } else {
                4
            },
            threads: 1,
            threads_batch: 1,
            load_seconds: 1.0,
            wall_seconds: wall,
            usage: Usage {
                prompt_tokens: 1000,
                cached_tokens: 250,
                generated_tokens: 100,
                calls: 10,
            },
            by_stage: vec![StageRow {
                stage: "research".into(),
                calls: 6,
                prompt_tokens: 800,
                cached_tokens: 200,
                generated_tokens: 80,
                seconds: 30.0,
            }],
            tree_shape: shape,
            sections,
            report_words: 500,
            citations: 4,
            peak_rss_bytes: Some(2_000_000_000),
            kept_session: None,
        }
    }

    #[test]
    fn the_comparison_divides_walls_and_compares_shapes() {
        let request = ResearchRequest {
            question: "q".into(),
            depth: 2,
            breadth: 3,
        };
        let b = ResearchBench::new(
            request.clone(),
            10,
            Hardware::default(),
            vec![
                run(ResearchMode::Sequential, 300.0, vec![1, 3, 9], 4),
                run(ResearchMode::Default, 120.0, vec![1, 3, 9], 4),
            ],
        );
        assert_eq!(b.wall_ratio, Some(2.5));
        assert!(b.same_tree_shape && b.same_sections);
        let text = render_research(&b);
        assert!(
            text.contains("wall ratio sequential / default: 2.50×"),
            "{text}"
        );
        assert!(
            text.contains("tree shape: same; section count: same"),
            "{text}"
        );
        assert!(text.contains("250 (25 %)"), "{text}");
        assert!(text.contains("6 · 25 % · 30 s"), "{text}");
        assert!(text.contains("1-3-9"), "{text}");

        let b = ResearchBench::new(
            request,
            10,
            Hardware::default(),
            vec![
                run(ResearchMode::Sequential, 300.0, vec![1, 3, 9], 4),
                run(ResearchMode::Default, 0.0, vec![1, 3, 8], 5),
            ],
        );
        assert_eq!(b.wall_ratio, None);
        assert!(!b.same_tree_shape && !b.same_sections);
        assert!(render_research(&b).contains("tree shape: DIFFERENT; section count: DIFFERENT"));
    }

    #[test]
    fn cached_share_is_a_percentage_of_prompt_tokens() {
        let u = Usage {
            prompt_tokens: 200,
            cached_tokens: 50,
            ..Usage::default()
        };
        assert_eq!(cached_share(&u), Some(25.0));
        assert_eq!(cached_share(&Usage::default()), None);
    }
}
