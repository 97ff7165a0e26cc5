#!/usr/bin/env bash
# Builds Rudder's Linux packages: a Debian package (and an RPM, which the same bundler writes at
# no extra cost) holding the desktop app (`rudder-app`, with its menu entry and icons) and the
# `rudder` command line, both in /usr/bin. No model weights: the first run's Setup screen (or
# `rudder models fetch`) gets them, as from source.
#
#   scripts/package.sh            release build (CPU llama.cpp; runs on any x86-64 with AVX2)
#   scripts/package.sh --debug    bundle the debug binaries the test suite already built
#                                 (scripts/test.sh does this, so nothing compiles a third time)
#
# Writes target/package/rudder_<version>_<arch>.deb (and .rpm) and prints their sizes. Install
# with `sudo apt install ./target/package/rudder_*.deb`; scripts/package-test.sh installs it
# into a clean Debian 12 system and tests it there. Needs what scripts/setup.sh installs.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"

profile=release
case "${1:-}" in
  "") ;;
  --debug) profile=debug ;;
  *) echo "usage: scripts/package.sh [--debug]" >&2; exit 2 ;;
esac

# The Tauri CLI (@tauri-apps/cli, a prebuilt binary from npm) is a dev dependency of ui/.
if [[ ! -x ui/node_modules/.bin/tauri || "${RUDDER_UI_BUILT:-}" != 1 ]]; then
  (cd ui && npm ci --no-audit --no-fund && npm run build)
fi

if [[ "$profile" == release ]]; then
  # `custom-protocol` embeds ui/dist in the app instead of loading the Vite dev server.
  cargo build --release -p rudder-cli -p rudder-app --features rudder-app/custom-protocol
else
  # The very command of scripts/test.sh's build, which builds both binaries too: after it this
  # compiles nothing. A plain `cargo build` leaves the dev-dependencies out of feature
  # unification, so every crate from syn up compiles a third time (about 14 minutes in CI).
  cargo test --workspace --features rudder-app/custom-protocol --no-run
fi

# Where cargo put the binaries (CARGO_TARGET_DIR or the workspace's target/).
target=$(cargo metadata --format-version 1 --no-deps |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')

# The CLI travels as an extra file of the package; its path depends on the profile, so it is
# given here rather than in tauri.conf.json (which a plain `tauri build` also reads).
extra=$(printf '{"bundle":{"linux":{"deb":{"files":{"/usr/bin/rudder":"%s"}},"rpm":{"files":{"/usr/bin/rudder":"%s"}}}}}' \
  "$target/$profile/rudder" "$target/$profile/rudder")
debug_flag=()
[[ "$profile" == debug ]] && debug_flag=(--debug)
# `tauri bundle` packages the binary already built in target/<profile>/ (it compiles nothing).
(cd src-tauri && "$repo/ui/node_modules/.bin/tauri" bundle "${debug_flag[@]}" \
  --bundles deb,rpm --config "$extra")

mkdir -p target/package
rm -f target/package/rudder_*.deb target/package/rudder-*.rpm
version=$(sed -n 's/^ *"version": "\(.*\)",$/\1/p' tauri.conf.json | head -1)
deb=$(ls -t "$target/$profile/bundle/deb/"*"_${version}_"*.deb | head -1)
rpm=$(ls -t "$target/$profile/bundle/rpm/"*"-${version}-"*.rpm | head -1)
arch=$(dpkg --print-architecture)
cp "$deb" "target/package/rudder_${version}_${arch}.deb"
cp "$rpm" "target/package/$(basename "$rpm" | tr '[:upper:]' '[:lower:]')"
for f in target/package/*; do
  printf '%s: %s MB\n' "$f" "$(du -m "$f" | cut -f1)"
done
dpkg-deb --field "target/package/rudder_${version}_${arch}.deb" Package Version Depends Recommends Installed-Size
