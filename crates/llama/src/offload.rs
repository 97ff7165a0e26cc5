//! Where the chat model runs: the GPU devices this build of llama.cpp can use, and how many of
//! the model's layers fit in their free memory.
//!
//! The plan is a pure function of recorded facts (device memory, model shape, context), so it
//! is tested on descriptions of machines the test suite does not run on. It follows the rule
//! local-model apps use: offload everything when the weights, the KV cache of every sequence
//! and the compute buffers fit with room to spare; otherwise as many whole layers as fit, each
//! with its share of the KV cache; the rest stays on the CPU.

use std::path::Path;

use serde::Serialize;

use rudder_llm::LlmError;

use crate::GpuLayers;

const MIB: u64 = 1024 * 1024;

/// Memory left free on the device for the desktop, the driver and other programs.
pub const RESERVE_BYTES: u64 = 512 * MIB;

/// A GPU llama.cpp can offload to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct GpuDevice {
    /// llama.cpp's device index (for `LlamaModelParams::with_devices`).
    pub index: usize,
    /// llama.cpp's name for it, e.g. `CUDA0` or `Vulkan0`.
    pub name: String,
    /// What the driver calls it, e.g. `NVIDIA GeForce RTX 4060 Laptop GPU`.
    pub description: String,
    /// `CUDA`, `Vulkan` or `Metal`.
    pub backend: String,
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub memory_total: u64,
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub memory_free: u64,
    /// Shares the system's memory (an integrated GPU, Apple silicon).
    pub integrated: bool,
}

/// What the plan needs to know about a model, read from its GGUF header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelShape {
    /// Bytes of weights (the file's size is close enough: the header is a few MB at most).
    pub weight_bytes: u64,
    /// Transformer blocks; llama.cpp counts the output layer as one more.
    pub n_layer: u32,
    pub n_embd: u32,
    pub n_head: u32,
    pub n_head_kv: u32,
    pub n_vocab: u32,
}

impl ModelShape {
    /// Offloadable layers: every block plus the output layer.
    pub fn offloadable(&self) -> u32 {
        self.n_layer + 1
    }

    /// Bytes of KV cache one block holds for `n_ctx` tokens (keys and values in f16).
    pub fn kv_bytes_per_layer(&self, n_ctx: u32) -> u64 {
        let head_dim = u64::from(self.n_embd / self.n_head.max(1));
        2 * 2 * u64::from(n_ctx) * u64::from(self.n_head_kv) * head_dim
    }

    /// Bytes of weights per offloadable layer.
    pub fn bytes_per_layer(&self) -> u64 {
        self.weight_bytes / u64::from(self.offloadable())
    }

    /// Scratch memory a GPU needs to evaluate a batch of `n_batch` tokens: the logits of the
    /// output layer and a few activations per token.
    pub fn compute_bytes(&self, n_batch: u32) -> u64 {
        u64::from(n_batch) * (u64::from(self.n_vocab) + 16 * u64::from(self.n_embd)) * 4
    }
}

/// What the engine decided about the GPU, and why: shown by `rudder status`, the Setup screen
/// and `rudder bench llm`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct OffloadPlan {
    /// `CPU`, or the backend of the chosen device.
    pub backend: String,
    /// The chosen device, if any.
    pub device: Option<GpuDevice>,
    /// Layers offloaded.
    pub layers: u32,
    /// Layers the model has (blocks + output); 0 when the model's shape is unknown.
    pub layers_total: u32,
    /// Bytes the whole model needs on the device (weights, KV cache, compute), when known.
    #[cfg_attr(feature = "ts", ts(type = "number | null"))]
    pub needed_bytes: Option<u64>,
    /// One sentence: what was chosen and why.
    pub reason: String,
}

impl OffloadPlan {
    fn cpu(reason: String, layers_total: u32) -> Self {
        Self {
            backend: "CPU".into(),
            device: None,
            layers: 0,
            layers_total,
            needed_bytes: None,
            reason,
        }
    }

    /// "CPU" or "Vulkan: AMD Radeon 780M (8.0 GB free of 16.0 GB), 29/29 layers".
    pub fn summary(&self) -> String {
        match &self.device {
            Some(d) if self.layers > 0 => format!(
                "{}: {} ({} free of {}), {}/{} layers",
                self.backend,
                d.description,
                gib(d.memory_free),
                gib(d.memory_total),
                self.layers,
                self.layers_total
            ),
            _ => "CPU".into(),
        }
    }
}

/// "7.6 GB": memory sizes as people read them.
pub fn gib(bytes: u64) -> String {
    format!("{:.1} GB", bytes as f64 / (1024.0 * MIB as f64))
}

/// What a plan is for: the model, the context it will get and the batch it reads prompts in.
#[derive(Debug, Clone, Copy)]
pub struct Workload {
    pub model: ModelShape,
    /// Tokens of KV cache in all: context per sequence × sequences.
    pub n_ctx_total: u32,
    pub n_batch: u32,
}

/// Chooses the device and the number of layers to offload. `workload` is `None` when the model
/// is not on disk yet (the plan then says what it would use, with no layer count).
pub fn plan(setting: GpuLayers, devices: &[GpuDevice], workload: Option<&Workload>) -> OffloadPlan {
    let layers_total = workload.map_or(0, |w| w.model.offloadable());
    // The device with the most free memory; llama.cpp would otherwise split layers over all of
    // them, which the plan does not model.
    let Some(device) = devices.iter().max_by_key(|d| d.memory_free) else {
        let reason = match setting {
            GpuLayers::Fixed(n) if n > 0 => format!(
                "gpu_layers = {n} is set, but this build has no GPU backend (or found no GPU): running on the CPU"
            ),
            _ => "no GPU: this build of llama.cpp has no GPU backend, or found no GPU device".into(),
        };
        return OffloadPlan::cpu(reason, layers_total);
    };
    if setting == GpuLayers::Fixed(0) {
        return OffloadPlan::cpu(
            format!(
                "gpu_layers = 0 in settings keeps the model on the CPU ({} is unused)",
                device.description
            ),
            layers_total,
        );
    }
    let mut plan = OffloadPlan {
        backend: device.backend.clone(),
        device: Some(device.clone()),
        layers: 0,
        layers_total,
        needed_bytes: None,
        reason: String::new(),
    };
    let Some(w) = workload else {
        plan.reason = format!(
            "{} {}: layers are planned once the model is on disk",
            device.backend, device.description
        );
        return plan;
    };
    let m = &w.model;
    let per_layer = m.bytes_per_layer() + m.kv_bytes_per_layer(w.n_ctx_total);
    let compute = m.compute_bytes(w.n_batch);
    let needed =
        m.weight_bytes + m.kv_bytes_per_layer(w.n_ctx_total) * u64::from(m.n_layer) + compute;
    plan.needed_bytes = Some(needed);
    if let GpuLayers::Fixed(n) = setting {
        plan.layers = n.min(layers_total);
        plan.reason = format!(
            "gpu_layers = {n} in settings: {}/{} layers on {}",
            plan.layers, layers_total, device.description
        );
        return plan;
    }
    let budget = device.memory_free.saturating_sub(RESERVE_BYTES);
    if needed <= budget {
        plan.layers = layers_total;
        plan.reason = format!(
            "all {layers_total} layers fit on {}: {} needed of {} free (keeping {} spare)",
            device.description,
            gib(needed),
            gib(device.memory_free),
            gib(RESERVE_BYTES)
        );
        return plan;
    }
    let fit = budget.saturating_sub(compute) / per_layer.max(1);
    plan.layers = (fit as u32).min(m.n_layer);
    if plan.layers == 0 {
        plan.backend = "CPU".into();
        plan.reason = format!(
            "not one layer fits on {}: {} free, {} kept spare, {} for compute, {} per layer; running on the CPU",
            device.description,
            gib(device.memory_free),
            gib(RESERVE_BYTES),
            gib(compute),
            gib(per_layer)
        );
    } else {
        plan.reason = format!(
            "{}/{layers_total} layers fit on {} ({} free; all would need {}); the rest run on the CPU",
            plan.layers,
            device.description,
            gib(device.memory_free),
            gib(needed)
        );
    }
    plan
}

/// The GPUs this build of llama.cpp sees (none in a CPU build).
pub fn gpu_devices() -> Result<Vec<GpuDevice>, LlmError> {
    use llama_cpp_2::LlamaBackendDeviceType as Kind;
    crate::backend()?;
    Ok(llama_cpp_2::list_llama_ggml_backend_devices()
        .into_iter()
        .filter(|d| matches!(d.device_type, Kind::Gpu | Kind::IntegratedGpu))
        .map(|d| GpuDevice {
            index: d.index,
            name: d.name,
            description: d.description,
            backend: d.backend,
            memory_total: d.memory_total as u64,
            memory_free: d.memory_free as u64,
            integrated: d.device_type == Kind::IntegratedGpu,
        })
        .collect())
}

/// Reads a GGUF model's shape without loading its weights: llama.cpp reads the header and the
/// vocabulary only, and keeps the header's keys as text.
pub fn model_shape(path: &Path) -> Result<ModelShape, LlmError> {
    use llama_cpp_2::model::params::LlamaModelParams;
    use llama_cpp_2::model::LlamaModel;
    let backend = crate::backend()?;
    let load_err = |message: String| LlmError::Load {
        path: path.display().to_string(),
        message,
    };
    let weight_bytes = std::fs::metadata(path)
        .map_err(|e| load_err(e.to_string()))?
        .len();
    let params = LlamaModelParams::default().with_vocab_only(true);
    let model =
        LlamaModel::load_from_file(backend, path, &params).map_err(|e| load_err(e.to_string()))?;
    let arch = model
        .meta_val_str("general.architecture")
        .map_err(|e| load_err(format!("no general.architecture: {e}")))?;
    // A per-layer list (some architectures vary heads by layer) does not parse as one number.
    let number = |key: &str| -> Option<u32> {
        model
            .meta_val_str(&format!("{arch}.{key}"))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    let required = |key: &str| {
        number(key).ok_or_else(|| load_err(format!("the header has no number {arch}.{key}")))
    };
    let n_head = required("attention.head_count")?;
    Ok(ModelShape {
        weight_bytes,
        n_layer: required("block_count")?,
        n_embd: required("embedding_length")?,
        n_head,
        // Absent or per layer: assume every head keeps its own keys (the largest cache).
        n_head_kv: number("attention.head_count_kv").unwrap_or(n_head),
        n_vocab: u32::try_from(model.n_vocab()).unwrap_or(0),
    })
}

/// The memory a chat model will run from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunMemory {
    /// Offloading: the GPU's free memory.
    Gpu { description: String, free: u64 },
    /// The CPU: the system's memory and its physical cores.
    Cpu { ram: u64, cores: usize },
}

/// The chat model to suggest, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Recommendation {
    pub model: String,
    pub reason: String,
}

/// The largest chat model (name, bytes of weights) that the memory runs well. On a GPU the
/// weights may take 80% of the free memory less half a GB, leaving the KV cache and compute
/// room. On the CPU, speed bounds it before memory does (each token reads every weight): up to
/// 0.75 GB of weights per physical core, and never more than a quarter of the RAM, so the
/// laptop stays usable.
pub fn recommend(chat_models: &[(String, u64)], memory: &RunMemory) -> Option<Recommendation> {
    let (budget, whence) = match memory {
        RunMemory::Gpu { description, free } => (
            (free / 5 * 4).saturating_sub(RESERVE_BYTES),
            format!("{} free on {description}", gib(*free)),
        ),
        RunMemory::Cpu { ram, cores } => (
            (ram / 4).min(*cores as u64 * 768 * MIB),
            format!("no GPU; {} of RAM and {cores} cores", gib(*ram)),
        ),
    };
    let best = chat_models
        .iter()
        .filter(|(_, bytes)| *bytes > 0 && *bytes <= budget)
        .max_by_key(|(_, bytes)| *bytes)
        .or_else(|| {
            chat_models
                .iter()
                .filter(|(_, b)| *b > 0)
                .min_by_key(|(_, b)| *b)
        })?;
    let fits = best.1 <= budget;
    Some(Recommendation {
        model: best.0.clone(),
        reason: if fits {
            format!("the largest chat model this machine runs well ({whence})")
        } else {
            format!("the smallest chat model; none fits comfortably ({whence})")
        },
    })
}

/// The system's memory in bytes (Linux: `MemTotal` of /proc/meminfo), if known.
pub fn system_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kb: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1024 * MIB;

    /// Qwen2.5-1.5B-Instruct Q4_K_M as llama.cpp reports it.
    fn qwen_1_5b() -> ModelShape {
        ModelShape {
            weight_bytes: 1_117_320_768,
            n_layer: 28,
            n_embd: 1536,
            n_head: 12,
            n_head_kv: 2,
            n_vocab: 151_936,
        }
    }

    /// Qwen2.5-7B-Instruct Q4_K_M.
    fn qwen_7b() -> ModelShape {
        ModelShape {
            weight_bytes: 4_683_073_536,
            n_layer: 28,
            n_embd: 3584,
            n_head: 28,
            n_head_kv: 4,
            n_vocab: 152_064,
        }
    }

    fn device(backend: &str, description: &str, total: u64, free: u64) -> GpuDevice {
        GpuDevice {
            index: 1,
            name: format!("{backend}0"),
            description: description.into(),
            backend: backend.into(),
            memory_total: total,
            memory_free: free,
            integrated: false,
        }
    }

    /// Rudder's defaults: 4 sequences of 4096 tokens, prompts read 512 at a time.
    fn workload(model: ModelShape) -> Workload {
        Workload {
            model,
            n_ctx_total: 4 * 4096,
            n_batch: 512,
        }
    }

    #[test]
    fn the_kv_cache_is_sized_from_the_heads() {
        // 28 blocks × 16384 tokens × 2 KV heads × 128 dims × 2 (K, V) × 2 bytes = 448 MiB.
        let m = qwen_1_5b();
        assert_eq!(m.kv_bytes_per_layer(16_384) * 28, 448 * MIB);
    }

    #[test]
    fn a_small_model_goes_wholly_onto_an_8_gb_laptop_gpu() {
        let gpu = device(
            "CUDA",
            "NVIDIA GeForce RTX 4060 Laptop GPU",
            8 * GIB,
            7 * GIB,
        );
        let p = plan(GpuLayers::Auto, &[gpu], Some(&workload(qwen_1_5b())));
        assert_eq!((p.layers, p.layers_total), (29, 29));
        assert_eq!(p.backend, "CUDA");
        let needed = p.needed_bytes.unwrap();
        assert!(
            needed > 1_117_320_768 + 448 * MIB && needed < 2 * GIB,
            "{needed}"
        );
        assert!(p.reason.starts_with("all 29 layers fit"), "{}", p.reason);
        assert_eq!(
            p.summary(),
            "CUDA: NVIDIA GeForce RTX 4060 Laptop GPU (7.0 GB free of 8.0 GB), 29/29 layers"
        );
    }

    #[test]
    fn a_7b_model_is_split_on_a_4_gb_gpu() {
        let gpu = device("Vulkan", "AMD Radeon RX 6500M", 4 * GIB, 3584 * MIB);
        let w = workload(qwen_7b());
        let p = plan(GpuLayers::Auto, std::slice::from_ref(&gpu), Some(&w));
        assert!(p.layers > 0 && p.layers < 28, "{p:?}");
        // What it offloads fits in what it may use; one more layer would not.
        let m = w.model;
        let per_layer = m.bytes_per_layer() + m.kv_bytes_per_layer(w.n_ctx_total);
        let used = u64::from(p.layers) * per_layer + m.compute_bytes(w.n_batch);
        let budget = gpu.memory_free - RESERVE_BYTES;
        assert!(
            used <= budget && used + per_layer > budget,
            "{used} vs {budget}"
        );
        assert!(p.reason.contains("the rest run on the CPU"), "{}", p.reason);
        // With more free memory, more layers.
        let roomier = device("Vulkan", "AMD Radeon RX 6500M", 6 * GIB, 5 * GIB);
        assert!(plan(GpuLayers::Auto, &[roomier], Some(&w)).layers > p.layers);
    }

    #[test]
    fn a_nearly_full_gpu_leaves_the_model_on_the_cpu() {
        let gpu = device("CUDA", "NVIDIA GeForce MX150", 2 * GIB, 600 * MIB);
        let p = plan(GpuLayers::Auto, &[gpu], Some(&workload(qwen_7b())));
        assert_eq!(p.layers, 0);
        assert_eq!(p.backend, "CPU");
        assert_eq!(p.summary(), "CPU");
        assert!(p.reason.contains("not one layer fits"), "{}", p.reason);
    }

    #[test]
    fn the_device_with_most_free_memory_is_chosen() {
        let igpu = GpuDevice {
            integrated: true,
            ..device("Vulkan", "Intel(R) Iris(R) Xe Graphics", 8 * GIB, 3 * GIB)
        };
        let dgpu = device(
            "Vulkan",
            "NVIDIA GeForce RTX 3050 Laptop GPU",
            4 * GIB,
            4 * GIB - 200 * MIB,
        );
        let p = plan(GpuLayers::Auto, &[igpu, dgpu], Some(&workload(qwen_1_5b())));
        assert_eq!(
            p.device.unwrap().description,
            "NVIDIA GeForce RTX 3050 Laptop GPU"
        );
    }

    #[test]
    fn a_pinned_count_is_obeyed_and_capped() {
        let gpu = device("Metal", "Apple M2", 16 * GIB, 11 * GIB);
        let w = workload(qwen_1_5b());
        let p = plan(GpuLayers::Fixed(10), std::slice::from_ref(&gpu), Some(&w));
        assert_eq!(p.layers, 10);
        assert!(p.reason.contains("gpu_layers = 10"), "{}", p.reason);
        assert_eq!(
            plan(GpuLayers::Fixed(99), std::slice::from_ref(&gpu), Some(&w)).layers,
            29
        );
        let cpu = plan(GpuLayers::Fixed(0), &[gpu], Some(&w));
        assert_eq!((cpu.layers, cpu.backend.as_str()), (0, "CPU"));
        assert!(cpu.reason.contains("Apple M2"), "{}", cpu.reason);
    }

    #[test]
    fn without_a_gpu_the_plan_says_so() {
        let w = workload(qwen_1_5b());
        let p = plan(GpuLayers::Auto, &[], Some(&w));
        assert_eq!(
            (p.layers, p.layers_total, p.backend.as_str()),
            (0, 29, "CPU")
        );
        assert!(p.reason.contains("no GPU"), "{}", p.reason);
        let pinned = plan(GpuLayers::Fixed(20), &[], Some(&w));
        assert!(
            pinned.reason.contains("gpu_layers = 20 is set"),
            "{}",
            pinned.reason
        );
    }

    #[test]
    fn without_the_model_on_disk_only_the_device_is_named() {
        let gpu = device("CUDA", "NVIDIA RTX A2000 Laptop GPU", 4 * GIB, 4 * GIB);
        let p = plan(GpuLayers::Auto, &[gpu], None);
        assert_eq!(
            (p.layers, p.layers_total, p.backend.as_str()),
            (0, 0, "CUDA")
        );
        assert!(
            p.reason.contains("once the model is on disk"),
            "{}",
            p.reason
        );
    }

    fn chat_models() -> Vec<(String, u64)> {
        vec![
            ("smollm2-135m-instruct".into(), 98_362_432),
            ("qwen2.5-coder-0.5b-instruct".into(), 491_400_064),
            ("qwen2.5-coder-1.5b-instruct".into(), 1_117_320_768),
            ("qwen2.5-7b-instruct".into(), 4_700_000_000),
        ]
    }

    #[test]
    fn the_recommendation_follows_the_memory_the_model_runs_from() {
        let pick = |m: RunMemory| recommend(&chat_models(), &m).unwrap().model;
        // This project's 2-core machine: the 1.5B default; an 8-core laptop: the 7B.
        assert_eq!(
            pick(RunMemory::Cpu {
                ram: 24 * GIB,
                cores: 2
            }),
            "qwen2.5-coder-1.5b-instruct"
        );
        assert_eq!(
            pick(RunMemory::Cpu {
                ram: 32 * GIB,
                cores: 8
            }),
            "qwen2.5-7b-instruct"
        );
        // Eight cores but 8 GB of RAM: a quarter of it bounds the model.
        assert_eq!(
            pick(RunMemory::Cpu {
                ram: 8 * GIB,
                cores: 8
            }),
            "qwen2.5-coder-1.5b-instruct"
        );
        let gpu = |free| RunMemory::Gpu {
            description: "RTX".into(),
            free,
        };
        assert_eq!(pick(gpu(8 * GIB)), "qwen2.5-7b-instruct");
        assert_eq!(pick(gpu(4 * GIB)), "qwen2.5-coder-1.5b-instruct");
        let tiny = recommend(&chat_models(), &gpu(300 * MIB)).unwrap();
        assert_eq!(tiny.model, "smollm2-135m-instruct");
        assert!(tiny.reason.contains("none fits"), "{}", tiny.reason);
        assert_eq!(recommend(&[], &gpu(8 * GIB)), None);
    }

    #[test]
    fn system_memory_is_read_where_the_system_says_it() {
        if cfg!(target_os = "linux") {
            let ram = system_memory().expect("/proc/meminfo has MemTotal");
            assert!(ram > 256 * MIB, "{ram}");
        }
    }
}
