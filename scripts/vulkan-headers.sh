#!/usr/bin/env bash
# Puts Vulkan headers new enough for llama.cpp's Vulkan backend (>= 1.3.261, which adds
# VK_EXT_layer_settings; Debian 12 ships 1.3.239) into PREFIX, as a VULKAN_SDK folder:
#   PREFIX/include/vulkan/{vulkan_core.h,vulkan.hpp,...}  from Debian 13's libvulkan-dev
#   PREFIX/lib/libvulkan.so                                 -> the system's loader (any 1.x works:
#                                                              ggml loads Vulkan functions at run time)
# The .deb is only unpacked, never installed, so the system's packages are untouched.
#   scripts/vulkan-headers.sh PREFIX      then: export VULKAN_SDK=PREFIX
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
prefix="$(realpath -m "${1:?usage: scripts/vulkan-headers.sh PREFIX}")"
deb=libvulkan-dev_1.4.309.0-1_amd64.deb
url="http://deb.debian.org/debian/pool/main/v/vulkan-loader/$deb"
sha256=8d329d465e16168afff58b1bd0dd6db46aac2cc3f56054a481b25a04e90b345a

if [[ -f "$prefix/include/vulkan/vulkan.hpp" ]] && grep -q 'define VK_EXT_layer_settings 1' "$prefix/include/vulkan/vulkan_core.h" 2>/dev/null; then
  echo "Vulkan headers already in $prefix"
  exit 0
fi
[[ "$(dpkg --print-architecture 2>/dev/null)" == amd64 ]] || {
  echo "error: this fetches the amd64 package; install the Vulkan SDK >= 1.3.261 and set VULKAN_SDK" >&2
  exit 1
}
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
if ! { curl -fsSLo "$deb" "$url" && echo "$sha256  $deb" | sha256sum -c --quiet -; }; then
  # The pinned file leaves the pool when a Debian 13 point release replaces it: ask apt for the
  # current one through a private source list (the system's lists stay as they are).
  rm -f ./*.deb
  "$here/debian13-download.sh" libvulkan-dev
fi
dpkg-deb -x libvulkan-dev_*_amd64.deb unpacked
cd - >/dev/null
rm -rf "$prefix"
mkdir -p "$prefix/lib"
cp -a "$work/unpacked/usr/include" "$prefix/include"
ln -sf "$(ls /usr/lib/*-linux-gnu/libvulkan.so.1 | head -1)" "$prefix/lib/libvulkan.so"
grep -q 'define VK_EXT_layer_settings 1' "$prefix/include/vulkan/vulkan_core.h"
test -f "$prefix/include/vulkan/vulkan.hpp"
echo "Vulkan headers $(grep -m1 'define VK_HEADER_VERSION ' "$prefix/include/vulkan/vulkan_core.h" | awk '{print $3}') in $prefix"
