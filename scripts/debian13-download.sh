#!/usr/bin/env bash
# Downloads Debian 13's current PACKAGE...s (.deb files, never installed) into the current folder
# through a private apt source list and state, so the system's lists stay as they are; apt checks
# the files against Debian's signed index. The fallback of scripts/vulkan-headers.sh and
# scripts/vulkan-glslc.sh for when a pinned file has left the pool after a point release.
#   scripts/debian13-download.sh PACKAGE...
set -euo pipefail
(($#)) || { echo "usage: scripts/debian13-download.sh PACKAGE..." >&2; exit 2; }
state="$(mktemp -d)"
trap 'rm -rf "$state"' EXIT
mkdir -p "$state/lists/partial" "$state/cache/archives/partial"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main" >"$state/sources.list"
opts=(-o Dir::Etc::sourcelist="$state/sources.list" -o Dir::Etc::sourceparts=/nonexistent
  -o Dir::State::Lists="$state/lists" -o Dir::Cache="$state/cache"
  -o Acquire::IndexTargets::deb::DEP-11::DefaultEnabled=false
  -o Acquire::IndexTargets::deb::DEP-11-icons::DefaultEnabled=false
  -o Acquire::IndexTargets::deb::DEP-11-icons-small::DefaultEnabled=false)
apt-get "${opts[@]}" update -qq
apt-get "${opts[@]}" download "${@/%//trixie}"
