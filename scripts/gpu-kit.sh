#!/usr/bin/env bash
# Assembles KIT (default .gpu; a folder git ignores) for Rudder's own speed figures on an offline
# NVIDIA machine that takes only a small folder (no network, no Rust, no model files):
#   KIT/rudder-bench.xz   a CUDA build of `rudder-bench`, stripped and compressed (build it first:
#                         RUDDER_CUDA_ARCHS=90-real . scripts/cuda-env.sh target/cuda-toolkit &&
#                         cargo build --release -p rudder-bench --features cuda)
#   KIT/meta.pkl.gz       the installed chat model's metadata and quant types (tokenizer, chat
#                         template); KIT/mkmodel.py writes real-shape models with random weights
#                         from it there (speed depends on shapes and quant types only)
#   KIT/gguf-*.whl        the gguf Python package mkmodel.py needs (pure Python)
#   KIT/library.tar.xz    with --research: the document library and the embedding model, for
#                         `bench research` (about 30 MB)
#   KIT/gpu-bench.sh      what runs there: bash KIT/gpu-bench.sh KIT [llm|research]
# usage: scripts/gpu-kit.sh [KIT] [--research]
#   MKMODEL: path of mkmodel.py (default ../shared/gpu/mkmodel.py beside the checkout)
#   RUDDER_DATA_DIR / the default data directory: where the chat model, library and models are
set -euo pipefail
cd "$(dirname "$0")/.."
kit="$(realpath -m "${1:-.gpu}")"; research="${2:-}"
data="${RUDDER_DATA_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/rudder}"
mkmodel="${MKMODEL:-../shared/gpu/mkmodel.py}"
bench="${RUDDER_BENCH_BIN:-target/release/rudder-bench}"
[[ -x "$bench" ]] || { echo "gpu-kit: no $bench; build it with --features cuda first (see the top of this script)" >&2; exit 1; }
[[ -f "$mkmodel" ]] || { echo "gpu-kit: no mkmodel.py at $mkmodel (set MKMODEL)" >&2; exit 1; }
real="$(ls "$data"/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf 2>/dev/null | head -1)"
[[ -n "$real" ]] || { echo "gpu-kit: the default chat model is not in $data/models (rudder models fetch)" >&2; exit 1; }
mkdir -p "$kit"
venv="$kit/.venv"; [[ -x "$venv/bin/python" ]] || python3 -m venv "$venv"
"$venv/bin/pip" -q install numpy gguf
rm -f "$kit"/gguf-*.whl; "$venv/bin/pip" -q download --no-deps -d "$kit" gguf
"$venv/bin/python" "$mkmodel" extract "$real" "$kit/meta.pkl.gz"
cp "$mkmodel" "$kit/mkmodel.py"; cp scripts/gpu-bench.sh "$kit/"
strip -o "$kit/rudder-bench" "$bench"; xz -T0 -6 -f "$kit/rudder-bench"
if [[ "$research" == --research ]]; then
  tar -C "$data" -cf - docs models/all-minilm-l6-v2 | xz -T0 -6 > "$kit/library.tar.xz"
fi
rm -rf "$venv"
du -sh "$kit"/* | sed 's/^/    /'; du -sh "$kit"
