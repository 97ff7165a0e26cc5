#!/usr/bin/env bash
# Prints the cargo feature that builds llama.cpp for this machine's GPU (`cuda`, `metal`,
# `vulkan`, or nothing for the CPU) and, on stderr, what it chose and why.
# RUDDER_GPU=cpu|cuda|metal|vulkan forces one; auto (the default) detects it.
set -euo pipefail
cd "$(dirname "$0")/.."
# A crate with no dependencies: building it alone leaves every other build untouched.
cargo run -q -p rudder-gpu-probe -- --feature
