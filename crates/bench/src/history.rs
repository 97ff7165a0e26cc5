//! `rudder bench history`: import, indexing, embedding and query figures on a large synthetic
//! history, generated as real export files and imported through the real importers.

use std::path::{Path, PathBuf};
use std::time::Instant;

use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde::Serialize;

use rudder::embed::Embedder;
use rudder::history::{Filter, History, ImportOptions, Progress, SearchMode};
use rudder::retrieval::QuantizedVector;
use rudder_synth::{self as synth, SynthConfig};

/// What to measure.
#[derive(Debug, Clone)]
pub struct HistoryBenchConfig {
    pub sessions: usize,
    pub seed: u64,
    /// Queries timed per mode.
    pub queries: usize,
    /// Sessions embedded for real to measure embedding throughput.
    pub embed_sample: u64,
    /// Embed every session for real (slow on a laptop CPU: minutes per 100k). Otherwise the
    /// remaining sessions get copies of the sample's real vectors, which is enough for latency:
    /// the scan is exact, so its cost does not depend on the values.
    pub embed_all: bool,
    /// Keep the generated export and history here instead of a temporary directory.
    pub dir: Option<PathBuf>,
}

/// The figures.
#[derive(Debug, Clone, Serialize)]
pub struct HistoryBench {
    pub sessions_generated: u64,
    pub export_bytes: u64,
    pub generate_seconds: f64,
    pub sessions_imported: u64,
    pub import_seconds: f64,
    /// Parsing, SQLite insert and BM25 indexing, before embeddings.
    pub import_sessions_per_second: f64,
    pub peak_rss_after_import_bytes: Option<u64>,
    pub embedded_sessions: u64,
    pub embed_seconds: f64,
    pub embed_sessions_per_second: f64,
    /// Sessions whose vectors are copies of sampled real ones (0 with `--embed-all`).
    pub copied_vector_sessions: u64,
    pub vectors: u64,
    pub vector_load_seconds: f64,
    pub queries: usize,
    pub bm25_p50_ms: f64,
    pub bm25_p95_ms: f64,
    pub hybrid_p50_ms: f64,
    pub hybrid_p95_ms: f64,
    /// The parts of a hybrid query: embedding the query text, and the exact vector scan.
    pub query_embed_p50_ms: f64,
    pub vector_scan_p50_ms: f64,
    pub database_bytes: u64,
    pub text_index_bytes: u64,
    pub peak_rss_bytes: Option<u64>,
}

fn percentile(sorted_ms: &[f64], p: f64) -> f64 {
    if sorted_ms.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * (sorted_ms.len() - 1) as f64).round() as usize;
    sorted_ms[rank.min(sorted_ms.len() - 1)]
}

/// Runs the benchmark. Needs the embedder for the embedding and hybrid figures.
pub fn bench_history(
    cfg: &HistoryBenchConfig,
    embedder: &dyn Embedder,
    model: &str,
    progress: &dyn Progress,
) -> rudder::Result<HistoryBench> {
    let tmp;
    let root = match &cfg.dir {
        Some(d) => d.clone(),
        None => {
            tmp = tempfile::tempdir().map_err(|e| rudder::Error::io(Path::new("/tmp"), e))?;
            tmp.path().to_path_buf()
        }
    };
    let export_dir = root.join("export");
    let history_dir = root.join("history");
    let err = |e: rudder::history::HistoryError| rudder::Error::Config(e.to_string());

    progress.begin("generating", None);
    let t = Instant::now();
    let synth_cfg = SynthConfig {
        seed: cfg.seed,
        sessions: cfg.sessions,
        ..SynthConfig::default()
    };
    let summary = synth::write_export(&synth_cfg, &export_dir)?;
    let generate_seconds = t.elapsed().as_secs_f64();
    progress.end();
    let export_bytes = rudder::fsutil::dir_size(&export_dir);

    let mut history = History::open(&history_dir).map_err(err)?;
    let t = Instant::now();
    let report = history
        .import(&[export_dir], &ImportOptions::default(), progress)
        .map_err(err)?;
    history.release_writer().map_err(err)?;
    let import_seconds = t.elapsed().as_secs_f64();
    let peak_rss_after_import_bytes = super::peak_rss_bytes();
    if let Some(failed) = report
        .files
        .iter()
        .find(|f| matches!(f.status, rudder::history::FileStatus::Failed(_)))
    {
        return Err(rudder::Error::Config(format!(
            "the synthetic export did not import: {:?}",
            failed.status
        )));
    }
    let imported = report.added + report.updated;

    let t = Instant::now();
    let budget = if cfg.embed_all {
        u64::MAX
    } else {
        cfg.embed_sample
    };
    let embedded = history
        .embed_at_most(embedder, model, budget, progress)
        .map_err(err)?;
    let embed_seconds = t.elapsed().as_secs_f64();
    let copied = if cfg.embed_all {
        0
    } else {
        copy_sample_vectors(&mut history, model, progress)?
    };

    let t = Instant::now();
    let vectors = history.vector_index(model).map_err(err)?.len() as u64;
    let vector_load_seconds = t.elapsed().as_secs_f64();

    // Queries: 2–4 consecutive words from the titles of random sessions, like a user
    // half-remembering something they looked up.
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(cfg.seed ^ 0x5eed);
    let mut titles = Vec::new();
    let count = history
        .store()
        .count()
        .map_err(|e| rudder::Error::Config(e.to_string()))?;
    let mut ids: Vec<i64> = (1..=count as i64).collect();
    ids.shuffle(&mut rng);
    for s in history
        .get_many(&ids[..cfg.queries.min(ids.len())])
        .map_err(err)?
    {
        let words: Vec<&str> = s.entry.title.split_whitespace().collect();
        if words.is_empty() {
            continue;
        }
        let n = (2 + titles.len() % 3).min(words.len());
        let start = (titles.len() * 7) % (words.len() - n + 1);
        titles.push(words[start..start + n].join(" "));
    }
    let filter = Filter::default();
    let mut time_mode = |mode: SearchMode| -> rudder::Result<Vec<f64>> {
        let mut ms = Vec::with_capacity(titles.len());
        // One untimed warm-up query per mode.
        if let Some(q) = titles.first() {
            history
                .search(q, &filter, 10, mode, Some((embedder, model)))
                .map_err(err)?;
        }
        for q in &titles {
            let t = Instant::now();
            history
                .search(q, &filter, 10, mode, Some((embedder, model)))
                .map_err(err)?;
            ms.push(t.elapsed().as_secs_f64() * 1e3);
        }
        ms.sort_by(f64::total_cmp);
        Ok(ms)
    };
    progress.begin("querying", None);
    let bm25 = time_mode(SearchMode::Bm25)?;
    let hybrid = time_mode(SearchMode::Hybrid)?;
    let mut embed_ms = Vec::new();
    let mut scan_ms = Vec::new();
    for q in &titles {
        let t = Instant::now();
        let v = embedder.embed(&[q.as_str()])?;
        embed_ms.push(t.elapsed().as_secs_f64() * 1e3);
        let index = history.vector_index(model).map_err(err)?;
        let t = Instant::now();
        index.search(&v[0], &filter, 50);
        scan_ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    embed_ms.sort_by(f64::total_cmp);
    scan_ms.sort_by(f64::total_cmp);
    progress.end();
    let stats = history.stats().map_err(err)?;

    Ok(HistoryBench {
        sessions_generated: summary.total_sessions() as u64,
        export_bytes,
        generate_seconds,
        sessions_imported: imported,
        import_seconds,
        import_sessions_per_second: imported as f64 / import_seconds.max(1e-9),
        peak_rss_after_import_bytes,
        embedded_sessions: embedded,
        embed_seconds,
        embed_sessions_per_second: embedded as f64 / embed_seconds.max(1e-9),
        copied_vector_sessions: copied,
        vectors,
        vector_load_seconds,
        queries: titles.len(),
        bm25_p50_ms: percentile(&bm25, 50.0),
        bm25_p95_ms: percentile(&bm25, 95.0),
        hybrid_p50_ms: percentile(&hybrid, 50.0),
        hybrid_p95_ms: percentile(&hybrid, 95.0),
        query_embed_p50_ms: percentile(&embed_ms, 50.0),
        vector_scan_p50_ms: percentile(&scan_ms, 50.0),
        database_bytes: stats.database_bytes,
        text_index_bytes: stats.text_index_bytes,
        peak_rss_bytes: super::peak_rss_bytes(),
    })
}

/// Gives every session still without vectors a copy of a real sampled vector (cycling), so
/// the scan covers the full collection.
fn copy_sample_vectors(
    history: &mut History,
    model: &str,
    progress: &dyn Progress,
) -> rudder::Result<u64> {
    let cerr = |e: rudder::history::StoreError| rudder::Error::Config(e.to_string());
    let mut sample: Vec<QuantizedVector> = Vec::new();
    history
        .store()
        .for_each_vector(model, |row| {
            if sample.len() < 4096 {
                sample.push(QuantizedVector::from_blob(row.scale, row.values));
            }
        })
        .map_err(cerr)?;
    if sample.is_empty() {
        return Ok(0);
    }
    let store = history.store_mut();
    let total = store.count_to_embed(model).map_err(cerr)?;
    progress.begin("copying vectors", Some(total));
    let mut done = 0u64;
    let mut next = 0usize;
    let mut after = 0i64;
    loop {
        let ids = store.ids_to_embed(model, after, 2000).map_err(cerr)?;
        let Some(&last) = ids.last() else {
            break;
        };
        after = last;
        let batch: Vec<(i64, Vec<QuantizedVector>)> = ids
            .iter()
            .map(|&id| {
                next = (next + 1) % sample.len();
                (id, vec![sample[next].clone()])
            })
            .collect();
        store.put_vectors(model, &batch).map_err(cerr)?;
        done += ids.len() as u64;
        progress.advance(ids.len() as u64);
    }
    progress.end();
    Ok(done)
}
