//! Which llama.cpp GPU backend to build Rudder with on this machine, and why.
//!
//! The facts are gathered by running the vendors' own tools (`nvidia-smi`, `nvcc`,
//! `vulkaninfo --summary`), the nvcc of a CUDA toolkit fetched from PyPI
//! (`scripts/cuda-toolkit.sh`, into `target/cuda-toolkit`) and reading the Vulkan headers'
//! version; the choice is a pure function of those facts, tested on recorded outputs of
//! machines the suite does not run on.

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The Vulkan headers llama.cpp's Vulkan backend needs: it uses `VK_EXT_layer_settings`
/// (added in 1.3.261) without a guard.
pub const VULKAN_HEADERS_NEEDED: (u32, u32, u32) = (1, 3, 261);

/// The CUDA toolkit `scripts/cuda-toolkit.sh` fetches from PyPI is CUDA 13 (PyPI's CUDA 12 nvcc
/// wheels hold no compiler): it needs an NVIDIA driver of this branch or newer...
pub const PYPI_CUDA_DRIVER_NEEDED: u32 = 580;
/// ...and a GPU of this compute capability or newer (Turing): CUDA 13 builds nothing older.
pub const PYPI_CUDA_COMPUTE_NEEDED: (u32, u32) = (7, 5);
/// Where `scripts/setup.sh --gpu` puts that toolkit, from the repository root
/// (`RUDDER_CUDA_TOOLKIT` overrides it).
pub const PYPI_CUDA_DIR: &str = "target/cuda-toolkit";

/// A llama.cpp backend Rudder can be built with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Cpu,
    Cuda,
    Metal,
    Vulkan,
}

impl Backend {
    /// The cargo feature of `rudder` and `rudder-app` (empty for the CPU).
    pub fn feature(self) -> &'static str {
        match self {
            Backend::Cpu => "",
            Backend::Cuda => "cuda",
            Backend::Metal => "metal",
            Backend::Vulkan => "vulkan",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text.trim().to_ascii_lowercase().as_str() {
            "cpu" | "none" => Some(Backend::Cpu),
            "cuda" => Some(Backend::Cuda),
            "metal" => Some(Backend::Metal),
            "vulkan" => Some(Backend::Vulkan),
            _ => None,
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Backend::Cpu => "cpu",
            Backend::Cuda => "cuda",
            Backend::Metal => "metal",
            Backend::Vulkan => "vulkan",
        })
    }
}

/// What was found on the machine. `None` means the tool is absent or failed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Probe {
    /// `std::env::consts::OS`.
    pub os: String,
    /// `nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv,noheader`
    /// (drivers older than 510 know no `compute_cap`: then `name,memory.total,driver_version`).
    pub nvidia_smi: Option<String>,
    /// `nvcc --version` of the system's CUDA toolkit.
    pub nvcc: Option<String>,
    /// The CUDA toolkit from PyPI (`scripts/cuda-toolkit.sh`): where it is and its
    /// `nvcc --version`.
    pub pypi_cuda: Option<(PathBuf, String)>,
    /// `vulkaninfo --summary`.
    pub vulkaninfo: Option<String>,
    /// The text of the `vulkan_core.h` a build would use, and where it is.
    pub vulkan_header: Option<(PathBuf, String)>,
    /// `glslc --version` (llama.cpp compiles its Vulkan shaders with it).
    pub glslc: Option<String>,
}

/// The decision: a backend, one sentence on why, and what a build needs that is missing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    pub backend: Backend,
    pub reason: String,
    /// What a GPU build lacks: for a chosen GPU backend, what must be installed before it
    /// builds; with the CPU chosen, what would have made the detected GPU's build possible.
    pub missing: Vec<String>,
}

/// A Vulkan device as `vulkaninfo --summary` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VulkanDevice {
    pub name: String,
    /// `PHYSICAL_DEVICE_TYPE_DISCRETE_GPU`, `…_INTEGRATED_GPU`, `…_CPU` (a software renderer).
    pub device_type: String,
    pub api_version: String,
}

impl VulkanDevice {
    /// A real GPU: software renderers (llvmpipe/lavapipe) are slower than llama.cpp's CPU code.
    pub fn is_gpu(&self) -> bool {
        self.device_type.contains("DISCRETE_GPU") || self.device_type.contains("INTEGRATED_GPU")
    }
}

/// The devices of a `vulkaninfo --summary` output, in order.
pub fn vulkan_devices(summary: &str) -> Vec<VulkanDevice> {
    let mut devices = Vec::new();
    let mut current: Option<VulkanDevice> = None;
    for line in summary.lines() {
        let line = line.trim();
        if line.starts_with("GPU") && line.ends_with(':') {
            devices.extend(current.take());
            current = Some(VulkanDevice {
                name: String::new(),
                device_type: String::new(),
                api_version: String::new(),
            });
            continue;
        }
        let (Some(dev), Some((key, value))) = (current.as_mut(), line.split_once('=')) else {
            continue;
        };
        let value = value.trim().to_string();
        match key.trim() {
            "deviceName" => dev.name = value,
            "deviceType" => dev.device_type = value,
            "apiVersion" => dev.api_version = value,
            _ => {}
        }
    }
    devices.extend(current);
    devices
}

/// `VK_HEADER_VERSION_COMPLETE VK_MAKE_API_VERSION(0, 1, 3, VK_HEADER_VERSION)` and
/// `#define VK_HEADER_VERSION 239` give (1, 3, 239).
pub fn vulkan_header_version(header: &str) -> Option<(u32, u32, u32)> {
    let patch = header.lines().find_map(|l| {
        let rest = l.trim().strip_prefix("#define VK_HEADER_VERSION ")?;
        rest.trim().parse::<u32>().ok()
    })?;
    let complete = header.lines().find(|l| {
        l.trim_start()
            .starts_with("#define VK_HEADER_VERSION_COMPLETE")
    })?;
    let args = complete.split_once('(')?.1.split(')').next()?;
    let parts: Vec<&str> = args.split(',').map(str::trim).collect();
    let [_, major, minor, _] = parts.as_slice() else {
        return None;
    };
    Some((major.parse().ok()?, minor.parse().ok()?, patch))
}

/// An NVIDIA GPU as `nvidia-smi --query-gpu=...` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NvidiaGpu {
    /// "NVIDIA GeForce RTX 4060 Laptop GPU, 8188 MiB"
    pub name: String,
    /// "580.95.05"
    pub driver: Option<String>,
    /// (8, 9)
    pub compute_cap: Option<(u32, u32)>,
}

impl NvidiaGpu {
    /// The driver branch: 580 for "580.95.05".
    pub fn driver_branch(&self) -> Option<u32> {
        self.driver
            .as_deref()?
            .split('.')
            .next()?
            .trim()
            .parse()
            .ok()
    }

    /// Why the CUDA 13 toolkit from PyPI cannot build for this GPU, if it cannot.
    pub fn pypi_cuda_obstacle(&self) -> Option<String> {
        let mut why = Vec::new();
        if let Some(branch) = self.driver_branch() {
            if branch < PYPI_CUDA_DRIVER_NEEDED {
                why.push(format!(
                    "its driver {} is older than the {PYPI_CUDA_DRIVER_NEEDED} that CUDA 13 needs",
                    self.driver.as_deref().unwrap_or_default()
                ));
            }
        }
        if let Some(cc) = self.compute_cap {
            if cc < PYPI_CUDA_COMPUTE_NEEDED {
                why.push(format!(
                    "its compute capability {}.{} is below the {}.{} that CUDA 13 builds for",
                    cc.0, cc.1, PYPI_CUDA_COMPUTE_NEEDED.0, PYPI_CUDA_COMPUTE_NEEDED.1
                ));
            }
        }
        (!why.is_empty()).then(|| why.join(" and "))
    }
}

impl fmt::Display for NvidiaGpu {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)?;
        if let Some(driver) = &self.driver {
            write!(f, ", driver {driver}")?;
        }
        if let Some((major, minor)) = self.compute_cap {
            write!(f, ", compute {major}.{minor}")?;
        }
        Ok(())
    }
}

/// "8.9" gives (8, 9).
fn compute_cap(text: &str) -> Option<(u32, u32)> {
    let (major, minor) = text.trim().split_once('.')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// The GPUs of an `nvidia-smi --query-gpu=name,memory.total[,driver_version[,compute_cap]]
/// --format=csv,noheader` output, in order.
pub fn nvidia_gpus(smi: &str) -> Vec<NvidiaGpu> {
    smi.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|line| {
            let fields: Vec<&str> = line.split(',').map(str::trim).collect();
            // name, memory [, driver [, compute_cap]]: the name comes first and the memory
            // ends in "MiB"; whatever follows the memory is the driver, then the capability.
            let memory = fields
                .iter()
                .position(|f| f.ends_with("MiB"))
                .unwrap_or(fields.len().saturating_sub(1));
            let rest = &fields[(memory + 1).min(fields.len())..];
            NvidiaGpu {
                name: fields[..=memory.min(fields.len() - 1)].join(", "),
                driver: rest.first().map(|d| d.to_string()),
                compute_cap: rest.get(1).and_then(|c| compute_cap(c)),
            }
        })
        .collect()
}

/// "Cuda compilation tools, release 13.0, V13.0.88" gives "13.0".
fn nvcc_release(version: &str) -> Option<&str> {
    let rest = version.split("release ").nth(1)?;
    rest.split(|c: char| c == ',' || c.is_whitespace()).next()
}

fn version_text(v: (u32, u32, u32)) -> String {
    format!("{}.{}.{}", v.0, v.1, v.2)
}

/// Chooses the backend: `forced` (from `RUDDER_GPU`) if set, else Metal on macOS, CUDA with an
/// NVIDIA GPU and the system's CUDA toolkit or the one from PyPI (when the driver and the GPU can
/// run CUDA 13), Vulkan with a real Vulkan GPU and headers new enough, else CPU.
pub fn choose(probe: &Probe, forced: Option<Backend>) -> Choice {
    let mut missing = Vec::new();
    let vulkan_headers = probe
        .vulkan_header
        .as_ref()
        .and_then(|(_, text)| vulkan_header_version(text));
    let vulkan_ready = |missing: &mut Vec<String>| {
        let mut ok = true;
        match vulkan_headers {
            Some(v) if v >= VULKAN_HEADERS_NEEDED => {}
            Some(v) => {
                ok = false;
                missing.push(format!(
                    "Vulkan headers {} or newer (these are {}: install the Vulkan SDK and set VULKAN_SDK)",
                    version_text(VULKAN_HEADERS_NEEDED),
                    version_text(v)
                ));
            }
            None => {
                ok = false;
                missing.push(format!(
                    "Vulkan headers {} or newer (Debian: libvulkan-dev; or the Vulkan SDK with VULKAN_SDK set)",
                    version_text(VULKAN_HEADERS_NEEDED)
                ));
            }
        }
        if probe.glslc.is_none() {
            ok = false;
            missing.push("glslc, the shader compiler (Debian: glslc)".into());
        }
        ok
    };
    if let Some(backend) = forced {
        if backend == Backend::Vulkan {
            vulkan_ready(&mut missing);
        }
        if backend == Backend::Cuda && probe.nvcc.is_none() && probe.pypi_cuda.is_none() {
            missing.push(
                "the CUDA toolkit (nvcc; scripts/setup.sh --gpu fetches CUDA 13 from PyPI when the driver is 580 or newer)"
                    .into(),
            );
        }
        return Choice {
            backend,
            reason: format!("RUDDER_GPU={backend} chooses it"),
            missing,
        };
    }
    if probe.os == "macos" {
        return Choice {
            backend: Backend::Metal,
            reason: "macOS: Metal".into(),
            missing,
        };
    }
    let mut notes = Vec::new();
    let gpus = probe
        .nvidia_smi
        .as_deref()
        .map(nvidia_gpus)
        .unwrap_or_default();
    if let Some(gpu) = gpus.first() {
        if let Some(nvcc) = &probe.nvcc {
            let release = nvcc_release(nvcc)
                .map(|r| format!(" {r}"))
                .unwrap_or_default();
            return Choice {
                backend: Backend::Cuda,
                reason: format!("NVIDIA GPU ({gpu}) with the system's CUDA toolkit{release}"),
                missing,
            };
        }
        // The PyPI toolkit is CUDA 13: every GPU the build is for must be able to run it.
        let obstacle = gpus.iter().find_map(NvidiaGpu::pypi_cuda_obstacle);
        match (&probe.pypi_cuda, obstacle) {
            (Some((dir, nvcc)), None) => {
                let release = nvcc_release(nvcc).unwrap_or("13");
                return Choice {
                    backend: Backend::Cuda,
                    reason: format!(
                        "NVIDIA GPU ({gpu}) with CUDA {release} from PyPI in {} (no system CUDA toolkit)",
                        dir.display()
                    ),
                    missing,
                };
            }
            (_, Some(obstacle)) => notes.push(format!(
                "NVIDIA GPU ({gpu}) but no system CUDA toolkit (nvcc), and the CUDA 13 one from PyPI cannot build for it: {obstacle}"
            )),
            (None, None) => notes.push(format!(
                "NVIDIA GPU ({gpu}) but no CUDA toolkit (nvcc) for a CUDA build (scripts/setup.sh --gpu fetches CUDA 13 from PyPI)"
            )),
        }
    }
    let devices = probe
        .vulkaninfo
        .as_deref()
        .map(vulkan_devices)
        .unwrap_or_default();
    if let Some(gpu) = devices.iter().find(|d| d.is_gpu()) {
        if vulkan_ready(&mut missing) {
            notes.push(format!("Vulkan GPU {} (API {})", gpu.name, gpu.api_version));
            return Choice {
                backend: Backend::Vulkan,
                reason: notes.join("; "),
                missing,
            };
        }
        notes.push(format!(
            "Vulkan GPU {} but the Vulkan build cannot be made here",
            gpu.name
        ));
    } else if let Some(soft) = devices.first() {
        notes.push(format!(
            "the only Vulkan device is {} ({}), a software renderer slower than the CPU code",
            soft.name, soft.device_type
        ));
    }
    if notes.is_empty() {
        notes
            .push("no GPU found (no NVIDIA GPU in nvidia-smi, no Vulkan GPU in vulkaninfo)".into());
    }
    Choice {
        backend: Backend::Cpu,
        reason: format!("CPU: {}", notes.join("; ")),
        missing,
    }
}

/// Runs a tool and returns its stdout, or `None` when it is absent or fails.
fn output(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The first `vulkan/vulkan_core.h` of `$VULKAN_SDK/include`, then the system's.
fn find_vulkan_header() -> Option<(PathBuf, String)> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(sdk) = std::env::var_os("VULKAN_SDK") {
        dirs.push(Path::new(&sdk).join("include"));
    }
    dirs.push(PathBuf::from("/usr/include"));
    dirs.push(PathBuf::from("/usr/local/include"));
    dirs.into_iter().find_map(|dir| {
        let path = dir.join("vulkan/vulkan_core.h");
        std::fs::read_to_string(&path).ok().map(|text| (path, text))
    })
}

/// Gathers the facts on this machine.
pub fn probe() -> Probe {
    let nvcc = output("nvcc", &["--version"])
        .or_else(|| output("/usr/local/cuda/bin/nvcc", &["--version"]));
    let pypi_dir = std::env::var_os("RUDDER_CUDA_TOOLKIT")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(PYPI_CUDA_DIR));
    let pypi_nvcc = pypi_dir.join("bin/nvcc");
    let pypi_cuda = output(&pypi_nvcc.to_string_lossy(), &["--version"]).map(|v| (pypi_dir, v));
    let smi = |query: &str| output("nvidia-smi", &[query, "--format=csv,noheader"]);
    Probe {
        os: std::env::consts::OS.to_string(),
        nvidia_smi: smi("--query-gpu=name,memory.total,driver_version,compute_cap")
            .or_else(|| smi("--query-gpu=name,memory.total,driver_version")),
        nvcc,
        pypi_cuda,
        vulkaninfo: output("vulkaninfo", &["--summary"]),
        vulkan_header: find_vulkan_header(),
        glslc: output("glslc", &["--version"]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `vulkaninfo --summary` on Debian 12 with mesa-vulkan-drivers and no GPU (abridged).
    const LAVAPIPE: &str = "==========
VULKANINFO
==========

Vulkan Instance Version: 1.3.239


Instance Extensions: count = 20
-------------------------------
VK_EXT_debug_report                    : extension revision 10

Devices:
========
GPU0:
	apiVersion         = 1.3.230
	driverVersion      = 0.0.1
	vendorID           = 0x10005
	deviceID           = 0x0000
	deviceType         = PHYSICAL_DEVICE_TYPE_CPU
	deviceName         = llvmpipe (LLVM 15.0.6, 256 bits)
	driverID           = DRIVER_ID_MESA_LLVMPIPE
	driverName         = llvmpipe
";

    /// A laptop with an Intel iGPU and an NVIDIA dGPU (abridged).
    const HYBRID: &str = "Devices:
========
GPU0:
	apiVersion         = 1.3.274
	deviceType         = PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU
	deviceName         = Intel(R) Iris(R) Xe Graphics (TGL GT2)
GPU1:
	apiVersion         = 1.3.277
	deviceType         = PHYSICAL_DEVICE_TYPE_DISCRETE_GPU
	deviceName         = NVIDIA GeForce RTX 3050 Laptop GPU
";

    fn header(patch: u32) -> Option<(PathBuf, String)> {
        Some((
            PathBuf::from("/usr/include/vulkan/vulkan_core.h"),
            format!(
                "// Version of this file\n#define VK_HEADER_VERSION {patch}\n\n// Complete version of this file\n#define VK_HEADER_VERSION_COMPLETE VK_MAKE_API_VERSION(0, 1, 3, VK_HEADER_VERSION)\n"
            ),
        ))
    }

    fn linux() -> Probe {
        Probe {
            os: "linux".into(),
            ..Probe::default()
        }
    }

    #[test]
    fn vulkaninfo_devices_are_read_in_order() {
        let soft = vulkan_devices(LAVAPIPE);
        assert_eq!(soft.len(), 1);
        assert_eq!(soft[0].name, "llvmpipe (LLVM 15.0.6, 256 bits)");
        assert_eq!(soft[0].api_version, "1.3.230");
        assert!(!soft[0].is_gpu());
        let hybrid = vulkan_devices(HYBRID);
        assert_eq!(hybrid.len(), 2);
        assert!(hybrid.iter().all(VulkanDevice::is_gpu));
        assert_eq!(hybrid[1].name, "NVIDIA GeForce RTX 3050 Laptop GPU");
    }

    #[test]
    fn header_versions_are_read() {
        assert_eq!(
            vulkan_header_version(&header(239).unwrap().1),
            Some((1, 3, 239))
        );
        assert_eq!(
            vulkan_header_version(&header(275).unwrap().1),
            Some((1, 3, 275))
        );
        assert_eq!(vulkan_header_version("#define VK_HEADER_VERSION x"), None);
    }

    #[test]
    fn macos_builds_for_metal() {
        let c = choose(
            &Probe {
                os: "macos".into(),
                ..Probe::default()
            },
            None,
        );
        assert_eq!(c.backend, Backend::Metal);
    }

    #[test]
    fn nvidia_with_its_toolkit_builds_for_cuda() {
        let p = Probe {
            nvidia_smi: Some("NVIDIA GeForce RTX 4060 Laptop GPU, 8188 MiB\n".into()),
            nvcc: Some("Cuda compilation tools, release 12.4, V12.4.131".into()),
            ..linux()
        };
        let c = choose(&p, None);
        assert_eq!(c.backend, Backend::Cuda);
        assert!(c.reason.contains("RTX 4060"), "{}", c.reason);
        assert!(c.missing.is_empty());
    }

    fn pypi_cuda() -> Option<(PathBuf, String)> {
        Some((
            PathBuf::from("target/cuda-toolkit"),
            "nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 13.0, V13.0.88\n"
                .into(),
        ))
    }

    #[test]
    fn nvidia_smi_lines_are_read_with_or_without_driver_and_capability() {
        let gpus = nvidia_gpus(
            "NVIDIA GeForce RTX 4060 Laptop GPU, 8188 MiB, 580.95.05, 8.9\nNVIDIA GeForce GTX 1050, 4096 MiB, 535.247.01, 6.1\n",
        );
        assert_eq!(gpus.len(), 2);
        assert_eq!(gpus[0].name, "NVIDIA GeForce RTX 4060 Laptop GPU, 8188 MiB");
        assert_eq!(gpus[0].driver_branch(), Some(580));
        assert_eq!(gpus[0].compute_cap, Some((8, 9)));
        assert_eq!(gpus[0].pypi_cuda_obstacle(), None);
        let old = gpus[1].pypi_cuda_obstacle().unwrap();
        assert!(old.contains("535.247.01") && old.contains("6.1"), "{old}");
        let bare = nvidia_gpus("NVIDIA GeForce RTX 3050 Laptop GPU, 4096 MiB");
        assert_eq!(bare[0].name, "NVIDIA GeForce RTX 3050 Laptop GPU, 4096 MiB");
        assert_eq!(
            (bare[0].driver.as_deref(), bare[0].compute_cap),
            (None, None)
        );
        assert_eq!(
            bare[0].pypi_cuda_obstacle(),
            None,
            "unknown is not an obstacle"
        );
    }

    #[test]
    fn nvidia_with_the_pypi_toolkit_builds_for_cuda_and_says_so() {
        let p = Probe {
            nvidia_smi: Some("NVIDIA GeForce RTX 4060 Laptop GPU, 8188 MiB, 580.95.05, 8.9".into()),
            pypi_cuda: pypi_cuda(),
            vulkaninfo: Some(HYBRID.into()),
            vulkan_header: header(275),
            glslc: Some("glslc".into()),
            ..linux()
        };
        let c = choose(&p, None);
        assert_eq!(c.backend, Backend::Cuda);
        assert!(
            c.reason
                .contains("CUDA 13.0 from PyPI in target/cuda-toolkit")
                && c.reason.contains("no system CUDA toolkit")
                && c.reason.contains("driver 580.95.05"),
            "{}",
            c.reason
        );
        assert!(c.missing.is_empty());
        // The system's toolkit wins when both are there.
        let both = Probe {
            nvcc: Some("Cuda compilation tools, release 12.4, V12.4.131".into()),
            ..p
        };
        let c = choose(&both, None);
        assert_eq!(c.backend, Backend::Cuda);
        assert!(
            c.reason.contains("system's CUDA toolkit 12.4"),
            "{}",
            c.reason
        );
    }

    #[test]
    fn the_pypi_toolkit_is_not_used_with_a_driver_or_gpu_too_old_for_cuda_13() {
        for (smi, what) in [
            (
                "NVIDIA GeForce RTX 3060 Laptop GPU, 6144 MiB, 550.120, 8.6",
                "driver 550.120 is older than the 580",
            ),
            (
                "NVIDIA GeForce GTX 1060, 6144 MiB, 580.95.05, 6.1",
                "compute capability 6.1 is below the 7.5",
            ),
        ] {
            let p = Probe {
                nvidia_smi: Some(smi.into()),
                pypi_cuda: pypi_cuda(),
                vulkaninfo: Some(HYBRID.into()),
                vulkan_header: header(275),
                glslc: Some("glslc".into()),
                ..linux()
            };
            let c = choose(&p, None);
            assert_eq!(c.backend, Backend::Vulkan, "{smi}");
            assert!(c.reason.contains(what), "{}", c.reason);
            let cpu = choose(
                &Probe {
                    vulkaninfo: None,
                    ..p
                },
                None,
            );
            assert_eq!(cpu.backend, Backend::Cpu);
            assert!(cpu.reason.contains(what), "{}", cpu.reason);
        }
    }

    #[test]
    fn nvidia_without_toolkit_falls_back_to_vulkan_when_it_can_build() {
        let p = Probe {
            nvidia_smi: Some("NVIDIA GeForce RTX 3050 Laptop GPU, 4096 MiB".into()),
            vulkaninfo: Some(HYBRID.into()),
            vulkan_header: header(275),
            glslc: Some("shaderc v2023.8".into()),
            ..linux()
        };
        let c = choose(&p, None);
        assert_eq!(c.backend, Backend::Vulkan);
        assert!(c.reason.contains("no CUDA toolkit"), "{}", c.reason);
        assert!(
            c.reason.contains("Iris"),
            "the first real GPU is named: {}",
            c.reason
        );
    }

    #[test]
    fn old_vulkan_headers_are_named_instead_of_failing_in_cmake() {
        let p = Probe {
            vulkaninfo: Some(HYBRID.into()),
            vulkan_header: header(239),
            glslc: Some("glslc".into()),
            ..linux()
        };
        let c = choose(&p, None);
        assert_eq!(c.backend, Backend::Cpu);
        assert!(c.reason.contains("cannot be made here"), "{}", c.reason);
        assert_eq!(c.missing.len(), 1, "{:?}", c.missing);
        assert!(c.missing[0].contains("1.3.261") && c.missing[0].contains("1.3.239"));
    }

    #[test]
    fn a_software_vulkan_device_is_not_a_gpu() {
        let p = Probe {
            vulkaninfo: Some(LAVAPIPE.into()),
            vulkan_header: header(275),
            glslc: Some("glslc".into()),
            ..linux()
        };
        let c = choose(&p, None);
        assert_eq!(c.backend, Backend::Cpu);
        assert!(c.reason.contains("llvmpipe"), "{}", c.reason);
        assert!(c.reason.contains("software renderer"), "{}", c.reason);
    }

    #[test]
    fn nothing_found_means_cpu_and_says_so() {
        let c = choose(&linux(), None);
        assert_eq!(c.backend, Backend::Cpu);
        assert!(c.reason.contains("no GPU found"), "{}", c.reason);
        assert_eq!(c.backend.feature(), "");
    }

    #[test]
    fn the_override_wins_and_lists_what_its_build_lacks() {
        let p = Probe {
            vulkaninfo: Some(LAVAPIPE.into()),
            vulkan_header: header(239),
            ..linux()
        };
        let c = choose(&p, Some(Backend::Vulkan));
        assert_eq!(c.backend, Backend::Vulkan);
        assert_eq!(c.reason, "RUDDER_GPU=vulkan chooses it");
        assert_eq!(c.missing.len(), 2, "headers and glslc: {:?}", c.missing);
        let cpu = choose(
            &Probe {
                nvidia_smi: Some("NVIDIA A100".into()),
                nvcc: Some("nvcc".into()),
                ..linux()
            },
            Some(Backend::Cpu),
        );
        assert_eq!(cpu.backend, Backend::Cpu);
        let cuda = choose(&linux(), Some(Backend::Cuda));
        assert_eq!(cuda.missing.len(), 1, "{:?}", cuda.missing);
        assert!(cuda.missing[0].contains("PyPI"), "{:?}", cuda.missing);
        let cuda = choose(
            &Probe {
                pypi_cuda: pypi_cuda(),
                ..linux()
            },
            Some(Backend::Cuda),
        );
        assert!(cuda.missing.is_empty(), "{:?}", cuda.missing);
        assert_eq!(Backend::parse(" CUDA "), Some(Backend::Cuda));
        assert_eq!(Backend::parse("opencl"), None);
    }
}
