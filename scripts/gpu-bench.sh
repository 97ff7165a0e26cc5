#!/usr/bin/env bash
# Rudder's own speed figures on an offline NVIDIA machine, from a kit made by scripts/gpu-kit.sh
# (a CUDA build of rudder-bench, model metadata, optionally the document library). Needs the
# NVIDIA driver, python3 with numpy, and cuBLAS 13 (a CUDA 13 toolkit or the nvidia-cublas
# wheel; the build links it dynamically). Nothing is installed; everything goes under WORK.
#   bash KIT/gpu-bench.sh KIT [llm] [research]
#     llm:      `bench llm --parallel 1,4,16` on Qwen2.5-1.5B- and 7B-shaped Q4_K_M models with
#               random weights (speed depends on shapes and quant types only), `bench llm` on the
#               1.5B shape, and the same machine's CPU (gpu_layers = 0) at N = 1 and 4 for the
#               ratio in the same run
#     research: `bench research` over the document library on the 1.5B shape (random weights:
#               the text is noise, so only the time per call and the loop's own overhead mean
#               anything)
#   OUT (default /tmp/rudder-gpu-bench): where the tables go; WORK (default /tmp/rudder-gpu);
#   LIBRARY (default KIT/library.tar.xz): the document library and embedding model for research;
#   RESEARCH_ARGS (default "--depth 2 --breadth 3"), RESEARCH_TIMEOUT (seconds, default 420)
# Random weights are not a real model's numbers. On an H200 some runs' activations overflow f16
# and every score is NaN or -inf, so a grammar-constrained call ends with "no token the output
# format allows has a usable score" and that N's row is missing; smaller weights (norms of
# 1e-4) avoid it but flatten the scores, and top-p sampling over ~150,000 near-equal tokens
# then takes most of the time. Read the rows that ran as speeds of the shapes; the research
# run's text is noise (its tree stops at the root).
set -u
kit="$(realpath "${1:-.gpu}")"; shift || true
parts="${*:-llm}"
out="${OUT:-/tmp/rudder-gpu-bench}"; work="${WORK:-/tmp/rudder-gpu}"
mkdir -p "$out" "$work/gpu/models" "$work/cpu"
t0=$(date +%s); step() { printf '\n==> [%4ss] %s\n' "$(( $(date +%s) - t0 ))" "$*"; }

step "GPU"
nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader | tee "$out/gpu.txt"
nproc
bin="$work/rudder-bench"
[[ -x "$bin" ]] || { xz -dc "$kit/rudder-bench.xz" > "$bin" && chmod +x "$bin"; } || exit 1
if ldd "$bin" | grep -q cublas; then
  # cuBLAS 13: a CUDA toolkit's, else a Python wheel's (nvidia-cublas).
  cublas="$( (ls /usr/local/cuda/lib64/libcublasLt.so.13* 2>/dev/null; find / -xdev -name 'libcublasLt.so.13*' 2>/dev/null) | head -1)"
  [[ -n "$cublas" ]] || { echo "gpu-bench: no libcublasLt.so.13 on this machine" >&2; exit 1; }
  export LD_LIBRARY_PATH="$(dirname "$cublas")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
ldd "$bin" | grep -E 'cublas|libcuda|not found' | tee "$out/ldd.txt"
"$bin" --version

step "models with the real shapes"
python3 -m pip install -q --no-index --no-deps --target "$work/site" "$kit"/gguf-*.whl || exit 1
for s in 1.5b 7b; do
  [[ -s "$work/gpu/models/q$s.gguf" ]] ||
    PYTHONPATH="$work/site" python3 "$kit/mkmodel.py" make "$kit/meta.pkl.gz" "$s" "$work/gpu/models/q$s.gguf" &
done
wait
[[ -s "$work/gpu/models/q1.5b.gguf" && -s "$work/gpu/models/q7b.gguf" ]] || { echo "gpu-bench: mkmodel.py failed" >&2; exit 1; }
entry() { # name role path
  printf '[[model]]\nname = "%s"\nrole = "%s"\ndescription = "gpu-bench: %s"\nlicense = "unknown (local file)"\n\n[[model.files]]\npath = "%s"\nsize = %s\nsha256 = "%s"\nsources = []\n\n' \
    "$1" "$2" "$1" "$3" "$(stat -c %s "$3")" "$(sha256sum "$3" | cut -d' ' -f1)"
}
{
  entry qwen-1.5b-shape chat "$work/gpu/models/q1.5b.gguf"
  entry qwen-7b-shape chat "$work/gpu/models/q7b.gguf"
  # ONNX Runtime for the embedder: the one this machine's Python has, if any.
  ort="$(python3 -c 'import onnxruntime, glob, os; print(sorted(glob.glob(os.path.join(os.path.dirname(onnxruntime.__file__), "capi", "libonnxruntime.so*")))[0])' 2>/dev/null)"
  [[ -n "$ort" ]] && entry onnxruntime runtime "$ort"
} > "$work/gpu/models/local.toml"
ln -sfn "$work/gpu/models" "$work/cpu/models"
printf '[llama]\ngpu_layers = 0\n' > "$work/cpu/settings.toml"

if [[ " $parts " == *" llm "* ]]; then
  for m in qwen-1.5b-shape qwen-7b-shape; do
    step "bench llm --parallel 1,4,16 on the GPU, $m"
    timeout 150 "$bin" --data-dir "$work/gpu" --model "$m" bench llm --parallel 1,4,16 2>&1 | tee "$out/llm-parallel-gpu-$m.txt"
  done
  step "bench llm on the GPU, qwen-1.5b-shape"
  timeout 100 "$bin" --data-dir "$work/gpu" --model qwen-1.5b-shape bench llm 2>&1 | tee "$out/llm-gpu.txt"
  step "bench llm --parallel 1,4 on this machine's CPU (gpu_layers = 0), qwen-1.5b-shape"
  timeout 150 "$bin" --data-dir "$work/cpu" --model qwen-1.5b-shape bench llm --parallel 1,4 --tokens 64 2>&1 | tee "$out/llm-parallel-cpu.txt"
fi
if [[ " $parts " == *" research "* ]]; then
  step "bench research on the GPU, qwen-1.5b-shape"
  [[ -d "$work/gpu/docs" ]] || tar -C "$work/gpu" -xJf "${LIBRARY:-$kit/library.tar.xz}" || exit 1
  # shellcheck disable=SC2086 # the arguments are words on purpose
  timeout "${RESEARCH_TIMEOUT:-420}" "$bin" --data-dir "$work/gpu" --model qwen-1.5b-shape bench research \
    ${RESEARCH_ARGS:---depth 2 --breadth 3} 2>&1 | tee "$out/research-gpu.txt"
fi
step "done"
