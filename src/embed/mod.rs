//! Sentence embeddings through fastembed with a user-defined ONNX model.
//!
//! ONNX Runtime is loaded from a file we verified (`ort::init_from`), never downloaded and never
//! taken from `ORT_DYLIB_PATH`, so a missing or wrong library is an error, not a panic.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use fastembed::{
    InitOptionsUserDefined, Pooling, TextEmbedding, TokenizerFiles, UserDefinedEmbeddingModel,
};

use ort::environment::Environment;

use crate::models::{ModelStore, Role};

/// Errors from the embedding layer.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    #[error("ONNX Runtime library {path}: {message}")]
    Runtime { path: PathBuf, message: String },
    #[error("embedding model {path}: {message}")]
    Model { path: PathBuf, message: String },
    #[error("embedding failed: {0}")]
    Inference(String),
    #[error(transparent)]
    Models(#[from] crate::models::ModelError),
}

impl EmbedError {
    /// What fixes it: fetching ONNX Runtime or the embedding model again.
    pub fn remedy(&self) -> Option<crate::remedy::Remedy> {
        match self {
            EmbedError::Runtime { .. } => {
                Some(crate::remedy::Remedy::FetchModel("onnxruntime".into()))
            }
            EmbedError::Models(e) => e.remedy(),
            _ => None,
        }
    }
}

/// Turns texts into unit-length vectors.
pub trait Embedder: Send + Sync {
    /// Vector length.
    fn dimensions(&self) -> usize;
    /// Embeds a batch; one vector per text, in order.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError>;
}

/// Cosine similarity; 0 when either vector is zero.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na * nb)
    }
}

/// Microsoft's ONNX Runtime builds ship with telemetry on: it looks up an events host, writes a
/// device id under `~/.cache` and queues usage events there. This sets `ORT_DISABLE_TELEMETRY`,
/// which the runtime reads when it loads, unless the user set it. Call it before other threads
/// exist (first thing in `main`): changing the environment races with C code reading it.
pub fn disable_onnx_telemetry_env() {
    if std::env::var_os("ORT_DISABLE_TELEMETRY").is_none() {
        std::env::set_var("ORT_DISABLE_TELEMETRY", "1");
    }
}

/// Loads ONNX Runtime from `path` once per process. ONNX Runtime's API can be bound only once,
/// so a second call with another path is refused instead of silently using the first.
pub fn init_onnx_runtime(path: &Path) -> Result<Environment, EmbedError> {
    // Only a successful load is remembered, so a bad path can be corrected in the same process.
    static LOADED: Mutex<Option<(PathBuf, Environment)>> = Mutex::new(None);
    let runtime_err = |message: String| EmbedError::Runtime {
        path: path.to_path_buf(),
        message,
    };
    if !path.is_file() {
        return Err(runtime_err("no such file".into()));
    }
    let mut loaded = LOADED.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((loaded_path, env)) = loaded.as_ref() {
        return if loaded_path == path {
            Ok(env.clone())
        } else {
            Err(runtime_err(format!(
                "ONNX Runtime is already loaded from {}",
                loaded_path.display()
            )))
        };
    }
    // Off twice: the variable stops the library's collector before the environment exists
    // (the binaries set it first thing in main; this covers library users), the API switch
    // stops its events.
    disable_onnx_telemetry_env();
    let env = ort::init_from(path)
        .map_err(|e| runtime_err(e.to_string()))?
        .with_name("rudder")
        .with_telemetry(false)
        .build()
        .map_err(|e| runtime_err(e.to_string()))?;
    *loaded = Some((path.to_path_buf(), env.clone()));
    Ok(env)
}

/// fastembed over a local ONNX model (all-MiniLM-L6-v2 by default).
pub struct FastEmbedder {
    model: Mutex<TextEmbedding>,
    dimensions: usize,
    batch_size: usize,
}

impl FastEmbedder {
    /// Loads the embedding model `name` and the runtime it requires from the model store.
    pub fn from_store(store: &ModelStore, name: &str, threads: usize) -> Result<Self, EmbedError> {
        let spec = store.get(name)?;
        if spec.role != Role::Embed {
            return Err(EmbedError::Model {
                path: store.dir().join(name),
                message: format!("`{name}` is a {} model, not an embedding model", spec.role),
            });
        }
        let runtime = spec
            .requires
            .iter()
            .find(|r| store.get(r).is_ok_and(|s| s.role == Role::Runtime))
            .cloned()
            .unwrap_or_else(|| "onnxruntime".into());
        let runtime_path = store.ready_path(&runtime)?;
        let files = store.ready_files(name)?;
        let onnx = files[0].clone();
        let tokenizer = files
            .iter()
            .find(|p| p.file_name().is_some_and(|n| n == "tokenizer.json"))
            .cloned()
            .ok_or_else(|| EmbedError::Model {
                path: onnx.clone(),
                message: "the manifest lists no tokenizer.json".into(),
            })?;
        Self::load(&runtime_path, &onnx, &tokenizer, threads)
    }

    /// Loads from explicit files.
    pub fn load(
        runtime: &Path,
        onnx: &Path,
        tokenizer: &Path,
        threads: usize,
    ) -> Result<Self, EmbedError> {
        let environment = init_onnx_runtime(runtime)?;
        let read = |p: &Path| {
            std::fs::read(p).map_err(|e| EmbedError::Model {
                path: p.to_path_buf(),
                message: e.to_string(),
            })
        };
        // BERT-style tokenizer settings that fastembed wants next to tokenizer.json; MiniLM's
        // are standard, so they are written here rather than shipped as files.
        let tokenizer_files = TokenizerFiles {
            tokenizer_file: read(tokenizer)?,
            config_file: br#"{"pad_token_id":0}"#.to_vec(),
            special_tokens_map_file: br#"{"unk_token":"[UNK]","sep_token":"[SEP]","pad_token":"[PAD]","cls_token":"[CLS]","mask_token":"[MASK]"}"#.to_vec(),
            tokenizer_config_file: br#"{"model_max_length":512,"pad_token":"[PAD]"}"#.to_vec(),
        };
        let model = UserDefinedEmbeddingModel::new(read(onnx)?, tokenizer_files)
            .with_pooling(Pooling::Mean);
        let options = InitOptionsUserDefined::new()
            .with_environment(environment)
            .with_max_length(256)
            .with_intra_threads(threads.max(1))
            // Spinning threads halve throughput on a busy 2-core laptop.
            .with_session_config("session.intra_op.allow_spinning", "0");
        let mut embedding =
            TextEmbedding::try_new_from_user_defined(model, options).map_err(|e| {
                EmbedError::Model {
                    path: onnx.to_path_buf(),
                    message: e.to_string(),
                }
            })?;
        let probe = embedding
            .embed(["probe"], None)
            .map_err(|e| EmbedError::Inference(e.to_string()))?;
        let dimensions = probe.first().map_or(0, Vec::len);
        Ok(Self {
            model: Mutex::new(embedding),
            dimensions,
            batch_size: 64,
        })
    }
}

impl Embedder for FastEmbedder {
    fn dimensions(&self) -> usize {
        self.dimensions
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let mut model = self
            .model
            .lock()
            .map_err(|_| EmbedError::Inference("embedder poisoned by an earlier panic".into()))?;
        let mut vectors = model
            .embed(texts, Some(self.batch_size))
            .map_err(|e| EmbedError::Inference(e.to_string()))?;
        for v in &mut vectors {
            normalize(v);
        }
        Ok(vectors)
    }
}

fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cosine_basics() {
        assert!((cosine(&[1.0, 0.0], &[2.0, 0.0]) - 1.0).abs() < 1e-6);
        assert!(cosine(&[1.0, 0.0], &[0.0, 1.0]).abs() < 1e-6);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 1.0]), 0.0);
    }
}
