//! Where Rudder keeps its state, and the user's settings.
//!
//! Everything lives under one data directory so a test (or a user) can point a whole run at a
//! fresh folder: `--data-dir` / `RUDDER_DATA_DIR`, else `$XDG_DATA_HOME/rudder`, else the
//! platform's data directory. Models live in `<data>/models` unless `RUDDER_MODELS_DIR` says
//! otherwise (handy for sharing one download between many throwaway data directories).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Errors of finding the data directory and reading or writing `settings.toml`. Each names
/// the file it is about.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot determine a data directory; set RUDDER_DATA_DIR")]
    NoDataDir,
    #[error("{path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("settings: {0}")]
    Serialize(String),
    #[error(transparent)]
    Write(#[from] crate::fsutil::WriteError),
}

type Result<T, E = ConfigError> = std::result::Result<T, E>;

/// Environment variable that overrides the data directory.
pub const DATA_DIR_ENV: &str = "RUDDER_DATA_DIR";
/// Environment variable that overrides the models directory.
pub const MODELS_DIR_ENV: &str = "RUDDER_MODELS_DIR";

/// Resolved locations of Rudder's state.
#[derive(Debug, Clone, Serialize)]
pub struct Paths {
    pub data_dir: PathBuf,
    pub models_dir: PathBuf,
}

impl Paths {
    /// Resolves the data directory from an explicit flag, the environment, or the XDG default.
    pub fn resolve(data_dir: Option<&Path>) -> Result<Self> {
        let data_dir = match data_dir {
            Some(dir) => dir.to_path_buf(),
            None => match std::env::var_os(DATA_DIR_ENV).filter(|v| !v.is_empty()) {
                Some(dir) => PathBuf::from(dir),
                None => default_data_dir()?,
            },
        };
        let models_dir = std::env::var_os(MODELS_DIR_ENV)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| data_dir.join("models"));
        Ok(Self {
            data_dir,
            models_dir,
        })
    }

    /// Uses `dir` for everything, models included (tests, portable installs).
    pub fn at(dir: impl Into<PathBuf>) -> Self {
        let data_dir = dir.into();
        let models_dir = data_dir.join("models");
        Self {
            data_dir,
            models_dir,
        }
    }

    pub fn settings_file(&self) -> PathBuf {
        self.data_dir.join("settings.toml")
    }

    /// Where imported history lives: the SQLite store and its indexes.
    pub fn history_dir(&self) -> PathBuf {
        self.data_dir.join("history")
    }

    /// Where the document library lives: its SQLite store and indexes.
    pub fn docs_dir(&self) -> PathBuf {
        self.data_dir.join("docs")
    }

    /// Research sessions: their event logs and steering queue (`sessions.sqlite`), and per
    /// session its live `todo.md` and report.
    pub fn sessions_dir(&self) -> PathBuf {
        self.data_dir.join("sessions")
    }

    /// The sessions database: every session's configuration, event log and steering queue.
    pub fn sessions_db(&self) -> PathBuf {
        self.sessions_dir().join("sessions.sqlite")
    }
}

fn default_data_dir() -> Result<PathBuf> {
    // `dirs::data_dir` honours XDG_DATA_HOME on Linux.
    dirs::data_dir()
        .map(|d| d.join("rudder"))
        .ok_or(ConfigError::NoDataDir)
}

pub use rudder_llama::{physical_cores, GpuLayers, LlamaSettings};

/// An OpenAI-compatible server (llama-server, Ollama, vLLM) to use instead of the local model.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct OpenAiSettings {
    /// Base URL up to and including `/v1`, e.g. `http://127.0.0.1:8080/v1`.
    pub base_url: String,
    /// Model name the server expects.
    pub model: String,
    /// Name of the environment variable holding the API key, if the server needs one.
    pub api_key_env: Option<String>,
    /// Requests in flight at once (default 4; 0 counts as 1): independent model calls of a
    /// research level go to the server together, up to this many. Set it to what the server
    /// serves in parallel (llama-server's `--parallel`, vLLM's batch, a hosted API's limit).
    #[serde(default = "default_openai_max_concurrent")]
    pub max_concurrent: usize,
}

/// Default for [`OpenAiSettings::max_concurrent`].
pub const DEFAULT_OPENAI_MAX_CONCURRENT: usize = 4;

fn default_openai_max_concurrent() -> usize {
    DEFAULT_OPENAI_MAX_CONCURRENT
}

impl OpenAiSettings {
    /// Requests in flight at once, at least 1.
    pub fn effective_max_concurrent(&self) -> usize {
        self.max_concurrent.max(1)
    }
}

/// Web search through a SearxNG instance. Off unless `enabled = true` and `searxng_url` is set:
/// when on, search queries leave the machine (see `sources::web::WEB_DISCLOSURE`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct WebSettings {
    /// Base URL of the SearxNG instance, e.g. `http://127.0.0.1:8888` (its JSON output format
    /// must be enabled); requests go to `{searxng_url}/search`.
    pub searxng_url: String,
    /// Web search runs only when this is `true`.
    pub enabled: bool,
    /// Seconds a search may take before it fails.
    pub timeout_secs: u64,
}

/// Default for [`WebSettings::timeout_secs`].
pub const DEFAULT_WEB_TIMEOUT_SECS: u64 = 15;

impl Default for WebSettings {
    fn default() -> Self {
        Self {
            searxng_url: String::new(),
            enabled: false,
            timeout_secs: DEFAULT_WEB_TIMEOUT_SECS,
        }
    }
}

/// User settings, stored as `settings.toml` in the data directory.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct Settings {
    /// Manifest name of the chat model.
    pub chat_model: String,
    /// Manifest name of the embedding model.
    pub embed_model: String,
    pub llama: LlamaSettings,
    /// When set, chat goes to this server instead of the local model.
    pub openai: Option<OpenAiSettings>,
    /// Web search; absent (or not enabled) means research never leaves the machine.
    pub web: Option<WebSettings>,
    /// Defaults for new research sessions (the desktop app's settings screen edits them).
    pub research: ResearchDefaults,
}

/// What a new research session starts with unless the request says otherwise.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct ResearchDefaults {
    /// Depth D of the research tree (the root is depth 0).
    pub depth: u32,
    /// Breadth K: directions researched per node.
    pub breadth: u32,
    /// Base pause cost C0 in [0, 1]: higher asks less.
    pub c0: f32,
    /// Tolerance: about how many questions the user accepts in one run.
    pub tol: f32,
    /// λ_exp, the weight of the exploration bonus.
    pub lambda_explore: f32,
    /// λ_info, the weight of information gain.
    pub lambda_info: f32,
    /// Most clarifying questions before research.
    pub clarify_turns: u32,
    /// Ask at every branch instead of only when the pause rule says it pays off.
    pub always_ask: bool,
}

/// The default chat model on CPU.
pub const DEFAULT_CHAT_MODEL: &str = "qwen2.5-coder-1.5b-instruct";
/// The smallest chat model of the manifest (SmolLM2-135M): fast enough for the test suite, too
/// small for its own output to be judged (`checks::judge::threshold_for`).
pub const SMOLLM2_CHAT_MODEL: &str = "smollm2-135m-instruct";
/// The default embedding model.
pub const DEFAULT_EMBED_MODEL: &str = "all-minilm-l6-v2";

impl Default for Settings {
    fn default() -> Self {
        Self {
            chat_model: DEFAULT_CHAT_MODEL.into(),
            embed_model: DEFAULT_EMBED_MODEL.into(),
            llama: LlamaSettings::default(),
            openai: None,
            web: None,
            research: ResearchDefaults::default(),
        }
    }
}

impl Settings {
    /// Loads `settings.toml`, or the defaults when there is none.
    pub fn load(paths: &Paths) -> Result<Self> {
        let file = paths.settings_file();
        match std::fs::read_to_string(&file) {
            Ok(text) => toml::from_str(&text).map_err(|e| ConfigError::Parse {
                path: file.clone(),
                message: e.to_string(),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
            Err(e) => Err(ConfigError::Io {
                path: file.clone(),
                source: e,
            }),
        }
    }

    /// Writes `settings.toml` atomically.
    pub fn save(&self, paths: &Paths) -> Result<()> {
        let file = paths.settings_file();
        let text =
            toml::to_string_pretty(self).map_err(|e| ConfigError::Serialize(e.to_string()))?;
        Ok(crate::fsutil::write_atomic(&file, text.as_bytes())?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpu_layers_reads_auto_or_a_number_and_names_a_bad_value() {
        let auto: LlamaSettings = toml::from_str("").unwrap();
        assert_eq!(auto.gpu_layers, GpuLayers::Auto);
        let pinned: LlamaSettings = toml::from_str("gpu_layers = 12").unwrap();
        assert_eq!(pinned.gpu_layers, GpuLayers::Fixed(12));
        let cpu: LlamaSettings = toml::from_str("gpu_layers = 0").unwrap();
        assert_eq!(cpu.gpu_layers, GpuLayers::Fixed(0));
        let text: LlamaSettings = toml::from_str("gpu_layers = \"Auto\"").unwrap();
        assert_eq!(text.gpu_layers, GpuLayers::Auto);
        let err = toml::from_str::<LlamaSettings>("gpu_layers = \"max\"").unwrap_err();
        assert!(err.to_string().contains("gpu_layers"), "{err}");
        // Both forms survive a save.
        for value in [GpuLayers::Auto, GpuLayers::Fixed(7)] {
            let s = LlamaSettings {
                gpu_layers: value,
                ..LlamaSettings::default()
            };
            let back: LlamaSettings = toml::from_str(&toml::to_string(&s).unwrap()).unwrap();
            assert_eq!(back.gpu_layers, value);
        }
    }
}
