//! The llama.cpp backend's settings (`[llama]` in settings.toml): threads, parallel sequences,
//! GPU layers, context and batch sizes.

use serde::{Deserialize, Serialize};

/// Generation settings for the local llama.cpp backend.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct LlamaSettings {
    /// CPU threads for generation; `None` means every physical core.
    pub threads: Option<usize>,
    /// CPU threads for reading prompts (compute-bound, so more cores help); `None` means every
    /// physical core, or `threads` when that is set lower.
    pub threads_batch: Option<usize>,
    /// Sequences decoded together in one batch: how many model calls run at once. Decoding is
    /// bound by memory bandwidth, so four sequences cost little more than one per step.
    pub parallel: usize,
    /// Layers offloaded to the GPU: `"auto"` (the default) fits as many as the GPU's free
    /// memory holds (all of them when they fit); a number pins it (0: CPU only). Only a build
    /// with `cuda`, `metal` or `vulkan` has a GPU to offload to.
    pub gpu_layers: GpuLayers,
    /// Context window in tokens.
    pub context_size: u32,
    /// Tokens decoded per batch while reading the prompt.
    pub batch_size: u32,
}

impl Default for LlamaSettings {
    fn default() -> Self {
        Self {
            threads: None,
            threads_batch: None,
            parallel: 4,
            gpu_layers: GpuLayers::Auto,
            context_size: 4096,
            batch_size: 512,
        }
    }
}

impl LlamaSettings {
    /// The generation thread count actually used: the setting, else every physical core.
    pub fn effective_threads(&self) -> usize {
        self.threads
            .filter(|&t| t > 0)
            .unwrap_or_else(physical_cores)
    }

    /// The prompt-reading thread count: the setting, else every physical core, but never more
    /// than a lower `threads` the user chose (one knob keeps a laptop quiet).
    pub fn effective_threads_batch(&self) -> usize {
        match (
            self.threads_batch.filter(|&t| t > 0),
            self.threads.filter(|&t| t > 0),
        ) {
            (Some(t), _) => t,
            (None, Some(t)) => t.min(physical_cores()),
            (None, None) => physical_cores(),
        }
    }

    /// Sequences decoded together, at least 1.
    pub fn effective_parallel(&self) -> usize {
        self.parallel.max(1)
    }
}

/// How many of the model's layers go to the GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GpuLayers {
    /// As many as fit in the device's free memory (see `llm::llama::offload::plan`).
    #[default]
    Auto,
    /// Exactly this many (0 keeps the model on the CPU).
    Fixed(u32),
}

impl GpuLayers {
    /// `None` for automatic, as the settings screen carries it.
    pub fn fixed(self) -> Option<u32> {
        match self {
            GpuLayers::Auto => None,
            GpuLayers::Fixed(n) => Some(n),
        }
    }

    pub fn from_fixed(n: Option<u32>) -> Self {
        n.map_or(GpuLayers::Auto, GpuLayers::Fixed)
    }
}

impl std::fmt::Display for GpuLayers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GpuLayers::Auto => f.write_str("auto"),
            GpuLayers::Fixed(n) => write!(f, "{n}"),
        }
    }
}

// In settings.toml: `gpu_layers = "auto"` or `gpu_layers = 20`.
impl Serialize for GpuLayers {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        match self {
            GpuLayers::Auto => serializer.serialize_str("auto"),
            GpuLayers::Fixed(n) => serializer.serialize_u32(*n),
        }
    }
}

impl<'de> Deserialize<'de> for GpuLayers {
    fn deserialize<D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> std::result::Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(u32),
            Text(String),
        }
        match Raw::deserialize(deserializer)? {
            Raw::Number(n) => Ok(GpuLayers::Fixed(n)),
            Raw::Text(t) if t.eq_ignore_ascii_case("auto") => Ok(GpuLayers::Auto),
            Raw::Text(t) => Err(serde::de::Error::custom(format!(
                "gpu_layers must be \"auto\" or a number of layers, not \"{t}\""
            ))),
        }
    }
}

/// Physical cores this process may use: hyperthreads share a core's arithmetic units, so they
/// add little to compute-bound work; a CPU quota or affinity mask lowers the count.
pub fn physical_cores() -> usize {
    let allowed = std::thread::available_parallelism().map_or(1, |n| n.get());
    num_cpus::get_physical().clamp(1, allowed.max(1))
}
