#!/usr/bin/env bash
# Puts a CUDA 13.0 toolkit able to build llama.cpp's CUDA backend into DEST, from NVIDIA's
# wheels on PyPI (pinned versions, sha256-checked), for a machine with an NVIDIA GPU and no nvcc:
#   DEST/bin/{nvcc,ptxas,cudafe++,fatbinary,nvlink,...}  nvidia-cuda-nvcc
#   DEST/nvvm/{bin/cicc,libdevice}                       nvidia-nvvm
#   DEST/include/{cuda.h,cuda_runtime.h,crt/,cccl/,cublas*.h,...}
#                                    nvidia-cuda-runtime, nvidia-cuda-crt, nvidia-cuda-cccl, nvidia-cublas
#   DEST/lib/{libcudart_static.a,libcudart.so*,libcublas.so*,libcublasLt.so*}  (+ unversioned links)
#   DEST/lib64 -> lib, DEST/targets/x86_64-linux/{include,lib} -> the same (nvcc.profile's layout)
#   DEST/lib/stubs/libcuda.so        a link-time stub of the driver library (soname libcuda.so.1),
#                                    generated from cuda.h: no wheel ships one; the driver's own
#                                    libcuda.so.1 is used at run time
#   DEST/lib/stubs/lib{cublas_static,cublasLt_static,culibos}.a   empty archives: llama-cpp-sys-2
#                                    names these static libraries on Linux, the wheels carry only the
#                                    shared cuBLAS; the binary links libcublas.so.13 instead (build.rs)
# Why CUDA 13 and not 12: the CUDA 12 nvcc wheels (nvidia-cuda-nvcc-cu12, up to 12.9.86) carry only
# ptxas and libnvvm (no nvcc, cicc, cudafe++, fatbinary), so nothing can be compiled with them.
# CUDA 13 needs an NVIDIA driver >= 580 and a GPU of compute capability >= 7.5 (Turing or newer).
# The wheels are only unpacked (no pip install), so no Python environment changes. Idempotent.
#   scripts/cuda-toolkit.sh DEST            then: scripts/cuda-env.sh DEST (what a build exports)
set -euo pipefail
dest="$(realpath -m "${1:?usage: scripts/cuda-toolkit.sh DEST}")"

# CUDA 13.0 Update 1 (the release whose components these are; MODELS.md's H100 build used 13.0).
pins=(
  "nvidia-cuda-nvcc==13.0.88 --hash=sha256:56fe502eb77625a12f25172caa3cdddb4e4c8ba2c8c17dba44b164761b380f03"
  "nvidia-cuda-crt==13.0.88 --hash=sha256:2c8043c7c9e02492716426e9919fc78d2c5b3b2a7a768a88e952676b08aa55a4"
  "nvidia-nvvm==13.0.88 --hash=sha256:c5f41ffeb6466944a026dfa5317d7d85355c119bbec279205d22f1869d1054e0"
  "nvidia-cuda-runtime==13.0.88 --hash=sha256:422a38f7c739ecbdd3a4b6ec7ed0a1d74db43d8e9bc26685f3d845638922b178"
  "nvidia-cublas==13.0.2.14 --hash=sha256:0cf238ffdbe46c00cb9aa98e7bca745c223a5ca5a53e686ac8b3e5a08fe80d6c"
  "nvidia-cuda-cccl==13.0.85 --hash=sha256:e0da7ad981f3a8aff08241b5bfc1af868742a63e2762f53a5171c492ef242649"
)
stamp="$dest/.rudder-cuda-toolkit"
want="$(printf '%s\n' "${pins[@]}")"

if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -x "$dest/bin/nvcc" ]]; then
  echo "CUDA toolkit 13.0 (from PyPI) already in $dest"
  exit 0
fi
[[ "$(uname -s)-$(uname -m)" == Linux-x86_64 ]] || {
  echo "error: the pinned wheels are for Linux x86-64; install the CUDA toolkit (nvcc) instead" >&2
  exit 1
}
command -v cc >/dev/null || { echo "error: a C compiler (cc) is needed for the libcuda stub" >&2; exit 1; }

work="$(mktemp -d "${TMPDIR:-/tmp}/rudder-cuda.XXXXXX")"
trap 'rm -rf "$work"' EXIT
printf '%s\n' "${pins[@]}" >"$work/requirements.txt"
echo "fetching the CUDA 13.0 wheels from PyPI (about 525 MB, 840 MB unpacked; cuBLAS is most of it)"
# --require-hashes: pip refuses any file whose sha256 is not the pinned one.
python3 -m pip download -q --no-deps --only-binary=:all: --require-hashes \
  -r "$work/requirements.txt" -d "$work/wheels"
(cd "$work/wheels" && ls ./*.whl) | sed 's|^\./|  |'

mkdir -p "$work/unpacked"
for whl in "$work"/wheels/*.whl; do
  python3 - "$whl" "$work/unpacked" <<'EOF'
import sys, zipfile
# zipfile drops the Unix mode bits: restore them so nvcc, cicc, ptxas... stay executable.
with zipfile.ZipFile(sys.argv[1]) as z:
    for info in z.infolist():
        if not info.filename.startswith("nvidia/cu13/"):
            continue
        path = z.extract(info, sys.argv[2])
        mode = (info.external_attr >> 16) & 0o777
        if mode:
            import os
            os.chmod(path, mode)
EOF
done
top="$work/unpacked/nvidia/cu13"
rm -f "$top"/lib/libnvblas.so.* # a BLAS shim for CPU programs: nothing here uses it
rm -rf "$top/.metadata"

# The libcuda stub: every cu* function cuda.h declares (after its macros map cuMemAlloc to
# cuMemAlloc_v2 and so on), as an empty function, with the driver library's soname.
mkdir -p "$top/lib/stubs"
printf '#include <cuda.h>\n' | cc -E -P -I"$top/include" -x c - |
  grep -oE '\bcu[A-Z][A-Za-z0-9_]*[[:space:]]*\(' | tr -d ' \t(' | sort -u |
  sed 's/.*/void &(void) {}/' >"$work/libcuda-stub.c"
cc -shared -fPIC -o "$top/lib/stubs/libcuda.so" -Wl,-soname,libcuda.so.1 "$work/libcuda-stub.c"
for lib in cublas_static cublasLt_static culibos; do
  ar rc "$top/lib/stubs/lib$lib.a"
done

# The unversioned names a linker looks for.
for so in "$top"/lib/lib*.so.*; do
  ln -sf "$(basename "$so")" "${so%%.so.*}.so"
done
ln -s lib "$top/lib64"
mkdir -p "$top/targets/x86_64-linux"
ln -s ../../include "$top/targets/x86_64-linux/include"
ln -s ../../lib "$top/targets/x86_64-linux/lib"

"$top/bin/nvcc" --version | grep -q 'release 13\.0' || { echo "error: the unpacked nvcc does not run" >&2; exit 1; }
rm -rf "$dest"
mkdir -p "$(dirname "$dest")"
mv "$top" "$dest"
printf '%s\n' "$want" >"$stamp"
echo "CUDA toolkit $("$dest/bin/nvcc" --version | grep -oE 'release [0-9.]+' | cut -d' ' -f2) from PyPI in $dest ($(du -sh "$dest" | cut -f1); $(grep -c '(void)' "$work/libcuda-stub.c") functions in the libcuda stub)"
