#!/usr/bin/env bash
# Puts a shader compiler new enough for llama.cpp's fast Vulkan shaders into DEST/bin/glslc:
# Debian 12's glslc (shaderc 2023.2) lacks GL_KHR_cooperative_matrix, GL_NV_cooperative_matrix2
# and GL_EXT_integer_dot_product, so ggml-vulkan builds without its matrix-core and int8-dot
# shaders ("matrix cores: none", prompts ~4x slower on an NVIDIA GPU; ../shared/MODELS.md).
#
# Debian 13's glslc 2025.2 has them, but it needs glibc 2.38 and GLIBCXX_3.4.32 (Debian 12:
# glibc 2.36, GLIBCXX_3.4.30). So this unpacks (never installs) Debian 13's glslc, libshaderc1
# (glslang and SPIRV-Tools are linked into it) and the C/C++ runtime it needs (libc6,
# libstdc++6, libgcc-s1) into DEST/libexec/rudder-glslc, and DEST/bin/glslc runs it through
# that folder's own dynamic loader, so the system's libraries are neither used nor touched.
# About 6 MB downloaded, 15 MB kept, 1-6 seconds.
#
# DEST is meant to be the VULKAN_SDK folder (scripts/vulkan-headers.sh target/vulkan-sdk):
# CMake's FindVulkan looks for glslc in $VULKAN_SDK/bin before PATH. Idempotent.
#   scripts/vulkan-glslc.sh DEST            then: export VULKAN_SDK=DEST
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dest="$(realpath -m "${1:?usage: scripts/vulkan-glslc.sh DEST}")"
start=$SECONDS
# name  sha256  (Debian 13 "trixie" pool, amd64)
pins=(
  "pool/main/s/shaderc/glslc_2025.2-1_amd64.deb e05374965709159303041b104d4a26022d6ac5eb8296450364d66ae864a20367"
  "pool/main/s/shaderc/libshaderc1_2025.2-1_amd64.deb 2a67c8f784c65e1aa0d251819c020917405b490fbb543c6a73a52a631e476463"
  "pool/main/g/glibc/libc6_2.41-12+deb13u5_amd64.deb b59b0625cd1a791375d40dab23a4d5d3d0641e3d0a773501becdc3725b7f99cf"
  "pool/main/g/gcc-14/libstdc++6_14.2.0-19_amd64.deb ab1fa05837aa7a92aae748fd07a18a35f7d18bb4a71c4724fe2bbf0e32089de0"
  "pool/main/g/gcc-14/libgcc-s1_14.2.0-19_amd64.deb 3c71917b490d1a17aed43196a2787a256ecf060526cdb20216a74bedc061b150"
)
rt="$dest/libexec/rudder-glslc"

# A compute shader with each extension ggml-vulkan tests for at configure time; prints the
# ones this glslc compiles (the same test as ggml's CMakeLists: "extension not supported").
probe() {
  local glslc="$1" tmp ext ok=()
  tmp="$(mktemp -d)"
  for ext in GL_KHR_cooperative_matrix GL_NV_cooperative_matrix2 GL_EXT_integer_dot_product GL_EXT_bfloat16; do
    printf '#version 460\n#extension %s : require\nvoid main() {}\n' "$ext" >"$tmp/t.comp"
    [[ "$("$glslc" -o /dev/null -fshader-stage=compute --target-env=vulkan1.3 "$tmp/t.comp" 2>&1)" == \
      *"extension not supported"* ]] || ok+=("$ext")
  done
  rm -rf "$tmp"
  echo "${ok[*]}"
}

if [[ -x "$dest/bin/glslc" && -f "$rt/VERSION" ]] && [[ "$(cat "$rt/VERSION")" == "${pins[*]}" ]] &&
  "$dest/bin/glslc" --version >/dev/null 2>&1; then
  echo "glslc already in $dest/bin ($("$dest/bin/glslc" --version | head -1)): $(probe "$dest/bin/glslc")"
  exit 0
fi
[[ "$(uname -m)" == x86_64 ]] || {
  echo "error: this fetches amd64 packages; install the Vulkan SDK (its glslc) and set VULKAN_SDK" >&2
  exit 1
}
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
fetched=()
for pin in "${pins[@]}"; do
  read -r path sha256 <<<"$pin"
  deb="${path##*/}"
  if curl -fsSLo "$deb" "http://deb.debian.org/debian/$path" && echo "$sha256  $deb" | sha256sum -c --quiet -; then
    fetched+=("$deb")
  else
    rm -f "$deb"
  fi
done
if ((${#fetched[@]} < ${#pins[@]})); then
  # A pinned file leaves the pool when a Debian 13 point release replaces it (libc6 is the
  # likely one): ask apt for the current ones through a private source list (the system's
  # lists stay as they are; apt checks them against the signed index).
  echo "some pinned packages left the pool: fetching Debian 13's current ones with apt"
  rm -f ./*.deb
  "$here/debian13-download.sh" glslc libshaderc1 libc6 libstdc++6 libgcc-s1
fi
for deb in ./*.deb; do dpkg-deb -x "$deb" unpacked; done
lib=unpacked/usr/lib/x86_64-linux-gnu
rm -rf "$rt"
mkdir -p "$rt" "$dest/bin"
cp -L "$lib/ld-linux-x86-64.so.2" "$lib/libc.so.6" "$lib/libm.so.6" "$lib/libstdc++.so.6" \
  "$lib/libgcc_s.so.1" "$lib/libshaderc.so.1" unpacked/usr/bin/glslc "$rt/"
# Debian 13's packages (shaderc, glibc, gcc-14) are free software: keep their copyright files.
mkdir -p "$rt/copyright"
for d in unpacked/usr/share/doc/*/; do cp "$d/copyright" "$rt/copyright/$(basename "$d")" 2>/dev/null || true; done
cat >"$dest/bin/glslc" <<'EOF'
#!/bin/sh
# Debian 13's glslc with its own glibc and libstdc++ (scripts/vulkan-glslc.sh).
rt="$(dirname "$0")/../libexec/rudder-glslc"
exec "$rt/ld-linux-x86-64.so.2" --library-path "$rt" --argv0 "$0" "$rt/glslc" "$@"
EOF
chmod +x "$dest/bin/glslc"
"$dest/bin/glslc" --version >/dev/null
found="$(probe "$dest/bin/glslc")"
[[ "$found" == *GL_KHR_cooperative_matrix* && "$found" == *GL_EXT_integer_dot_product* ]] || {
  echo "error: $dest/bin/glslc lacks cooperative-matrix or integer-dot support ($found)" >&2
  exit 1
}
echo "${pins[*]}" >"$rt/VERSION"
echo "glslc $("$dest/bin/glslc" --version | head -1) in $dest/bin ($(du -sh "$rt" | cut -f1), $((SECONDS - start)) s): $found"
