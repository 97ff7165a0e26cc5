#!/usr/bin/env bash
# The GPU path of llama.cpp, proven on a machine without a GPU: Rudder built with the Vulkan
# backend runs on Mesa's software Vulkan device (lavapipe), and must
#   1. report the Vulkan device (rudder status --json: backend Vulkan, the llvmpipe device),
#   2. offload layers to it (more than 0),
#   3. decode greedily the same first 20 tokens for a fixed prompt as the CPU build.
# lavapipe is slower than llama.cpp's own CPU code; only correctness is measured here.
# Builds into target/vulkan (the CPU build in target/ is left alone). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$(date +%s)
step() { printf '\n==> [%4ss] %s\n' "$(( $(date +%s) - t0 ))" "$*"; }

step "system packages, the Vulkan tools and headers"
RUDDER_GPU=vulkan scripts/setup.sh --gpu
export VULKAN_SDK="$PWD/target/vulkan-sdk"
vulkaninfo --summary 2>/dev/null | grep -E 'deviceType|deviceName' | sed 's/^/    /'

step "the backend choice"
feature="$(RUDDER_GPU=vulkan scripts/gpu-backend.sh)"
[[ "$feature" == vulkan ]]

step "build: CPU (target/) and Vulkan (target/vulkan)"
cargo build --workspace --features rudder-app/custom-protocol --bin rudder   # the selection test.sh builds
# A build configured before scripts/vulkan-glslc.sh keeps Debian 12's glslc in its CMake cache.
if grep -qs '^Vulkan_GLSLC_EXECUTABLE:FILEPATH=/usr/bin/glslc' target/vulkan/debug/build/llama-cpp-sys-2-*/out/build/CMakeCache.txt; then
  CARGO_TARGET_DIR=target/vulkan cargo clean -p llama-cpp-sys-2
fi
CARGO_TARGET_DIR=target/vulkan cargo build -p rudder-cli --features vulkan
built=$(( $(date +%s) - t0 ))
# ggml-vulkan's CMake says which fast shaders its glslc can build (scripts/vulkan-glslc.sh).
cmake_log="$(ls -t target/vulkan/debug/build/llama-cpp-sys-2-*/output | head -1)"
grep 'supported by glslc' "$cmake_log" | sed 's/^/    /'
grep -q 'GL_KHR_cooperative_matrix supported by glslc' "$cmake_log"
grep -q 'GL_EXT_integer_dot_product supported by glslc' "$cmake_log"

models="${RUDDER_TEST_MODELS_DIR:-$PWD/.models}"
# The default model's smaller sibling (same family and tokenizer, 491 MB): SmolLM2-135M's
# logits are too close together for two backends' rounding (the CPU multiplies against 8-bit
# activations, Vulkan against 16/32-bit ones) to agree on 20 greedy tokens; the 0.5B and 1.5B
# models do.
model="${RUDDER_GPU_TEST_MODEL:-qwen2.5-coder-0.5b-instruct}"
RUDDER_MODELS_DIR="$models" target/debug/rudder models fetch "$model"
data="$(mktemp -d)"
trap 'rm -rf "$data"' EXIT
# The test model is the configured one, so `status` plans for it.
echo "chat_model = \"$model\"" >"$data/settings.toml"
# ggml-vulkan skips CPU-type devices such as lavapipe unless they are named.
export GGML_VK_VISIBLE_DEVICES=0
run() {
  local bin="$1"; shift
  RUDDER_DATA_DIR="$data" RUDDER_MODELS_DIR="$models" "$bin" --model "$model" "$@"
}

step "1-2. the device and the offload plan"
status="$(run target/vulkan/debug/rudder status --json)"
echo "$status" | python3 -c '
import json, sys
s = json.load(sys.stdin)["offload"]
print("    backend:", s["backend"], "| device:", (s["device"] or {}).get("description"), "| layers:", s["layers"], "/", s["layers_total"])
print("    reason:", s["reason"])
assert s["backend"] == "Vulkan", "the Vulkan device is not reported"
assert s["layers"] > 0, "no layer is offloaded"
'

step "3. greedy decoding: Vulkan against CPU, first 20 tokens"
prompt="List three facts about the printing press."
cpu="$(run target/debug/rudder ask "$prompt" --temperature 0 --max-tokens 20 --json)"
gpu="$(run target/vulkan/debug/rudder ask "$prompt" --temperature 0 --max-tokens 20 --json)"
python3 - "$cpu" "$gpu" <<'PY'
import json, sys
cpu, gpu = (json.loads(a) for a in sys.argv[1:3])
print("    cpu:   ", repr(cpu["answer"]))
print("    vulkan:", repr(gpu["answer"]))
assert cpu["usage"]["generated_tokens"] == gpu["usage"]["generated_tokens"] >= 10, (cpu["usage"], gpu["usage"])
assert cpu["answer"] == gpu["answer"], "the Vulkan build decoded different tokens"
PY

step "the Vulkan path works on lavapipe (builds took ${built} s; all in $(( $(date +%s) - t0 )) s)"
