#!/usr/bin/env bash
# End-to-end test of the real Rudder desktop window.
#
# Builds the frontend and the app (with `custom-protocol`, so ui/dist is embedded), makes sure
# tauri-driver is installed, then runs the tests in src-tauri/tests/ under a virtual X server:
# e2e_window.rs (a fresh data directory: the engine status, the CSP; a first run under strace:
# the data folder under the home folder, nothing written elsewhere) and e2e_flow.rs (import,
# history, a depth-1 research with the small model: clarify, pause, steer, report). Each test
# starts tauri-driver itself and stops it (and the app) when done.
# Screenshots: test-artifacts/e2e-*.png. Safe to re-run.
#
# Needs: node/npm, cargo, xvfb-run, /usr/bin/WebKitWebDriver (Debian: webkit2gtk-driver), and
# the test models in $RUDDER_TEST_MODELS_DIR (default: .models, fetched by scripts/test.sh).
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"

start_all=$(date +%s)
stage_start=$start_all
stage() {
  local now
  now=$(date +%s)
  if [[ -n "${stage_name:-}" ]]; then
    printf '==> %s: %ss\n' "$stage_name" "$((now - stage_start))"
  fi
  stage_name="$1"
  stage_start=$now
  printf '==> %s\n' "$stage_name"
}

for tool in npm cargo xvfb-run; do
  command -v "$tool" >/dev/null || { echo "error: $tool not found" >&2; exit 1; }
done
command -v WebKitWebDriver >/dev/null || {
  echo "error: WebKitWebDriver not found (Debian: apt-get install webkit2gtk-driver)" >&2
  exit 1
}

if [[ "${RUDDER_UI_BUILT:-}" != 1 ]]; then
  stage "frontend: install"
  if [[ -f ui/package-lock.json ]]; then
    npm --prefix ui ci --no-audit --no-fund
  else
    npm --prefix ui install --no-audit --no-fund
  fi

  stage "frontend: typecheck"
  npm --prefix ui run typecheck

  stage "frontend: build"
  npm --prefix ui run build
fi

stage "tauri-driver"
cargo_bin="${CARGO_HOME:-$HOME/.cargo}/bin"
export PATH="$cargo_bin:$PATH"
if [[ -n "${TAURI_DRIVER:-}" ]]; then
  [[ -x "$TAURI_DRIVER" ]] || { echo "error: TAURI_DRIVER=$TAURI_DRIVER is not executable" >&2; exit 1; }
elif command -v tauri-driver >/dev/null; then
  TAURI_DRIVER="$(command -v tauri-driver)"
else
  cargo install tauri-driver --locked
  TAURI_DRIVER="$cargo_bin/tauri-driver"
fi
export TAURI_DRIVER
echo "using $TAURI_DRIVER"

# The same package selection, features and target kinds as scripts/test.sh: building a test
# builds the app binary too, and a plain `cargo build` would unify features differently and
# compile llama.cpp and most dependencies a second time.
cargo_flags=(--workspace --features rudder-app/custom-protocol)
stage "app + e2e test: cargo test ${cargo_flags[*]} --no-run"
cargo test "${cargo_flags[@]}" --test e2e_window --test e2e_flow --no-run

stage "e2e: window test under Xvfb"
mkdir -p test-artifacts
rm -f test-artifacts/e2e-*.png
export RUDDER_TEST_MODELS_DIR="${RUDDER_TEST_MODELS_DIR:-$repo_root/.models}"
# Do not set WEBKIT_DISABLE_COMPOSITING_MODE / WEBKIT_DISABLE_DMABUF_RENDERER here: with
# WebKitGTK 2.50 under Xvfb they make WebDriver screenshots hang (the test unsets them).
export NO_AT_BRIDGE=1
# -noreset: a launch during the reset Xvfb does when its last client leaves cannot open the display.
xvfb-run -a -s "-noreset -screen 0 1920x1080x24" \
  cargo test "${cargo_flags[@]}" --test e2e_window --test e2e_flow -- --ignored --nocapture --test-threads 1

stage "done"
echo "screenshots: $(ls "$repo_root"/test-artifacts/e2e-*.png | wc -l) in $repo_root/test-artifacts/"
printf '==> total: %ss\n' "$(($(date +%s) - start_all))"
