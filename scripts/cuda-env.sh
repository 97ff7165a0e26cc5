# Sourced (not run) before a `cargo build --features cuda`:  . scripts/cuda-env.sh [TOOLKIT]
#   * with TOOLKIT (a folder from scripts/cuda-toolkit.sh): points CMake, nvcc, llama-cpp-sys-2
#     and Rudder's build.rs at it (CUDACXX, CUDAToolkit_ROOT, CUDA_PATH, CUDA_LIBRARY_PATH,
#     RUDDER_CUDA_LIB_DIR: cuBLAS linked dynamically, found through the binary's rpath);
#   * always: CMAKE_CUDA_ARCHITECTURES, the GPU code to build (each architecture is a full
#     compile of ggml-cuda's kernels, so fewer is faster):
#       RUDDER_CUDA_ARCHS if set (a CMake list such as "86-real" or "75-real;89-real");
#       else the compute capability of this machine's GPUs (nvidia-smi), e.g. 8.6 -> "86-real";
#       else the release list "75-real;86-real;89-real;120a-real" (Turing, Ampere, Ada and
#       Blackwell laptop and desktop GPUs; CUDA 13 builds nothing older than 7.5).
# A CMAKE_CUDA_ARCHITECTURES already in the environment is kept. Prints one line on stderr.
rudder_cuda_release_archs="75-real;86-real;89-real;120a-real"
if [[ -n "${1:-}" ]]; then
  _t="$(realpath "$1")"
  export CUDACXX="$_t/bin/nvcc" CUDAToolkit_ROOT="$_t" CUDA_PATH="$_t" CUDA_LIBRARY_PATH="$_t"
  export RUDDER_CUDA_LIB_DIR="$_t/lib"
  unset _t
fi
if [[ -z "${CMAKE_CUDA_ARCHITECTURES:-}" ]]; then
  if [[ -n "${RUDDER_CUDA_ARCHS:-}" ]]; then
    CMAKE_CUDA_ARCHITECTURES="$RUDDER_CUDA_ARCHS"
    _why="RUDDER_CUDA_ARCHS"
  else
    CMAKE_CUDA_ARCHITECTURES="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null |
      tr -d ' .' | grep -E '^[0-9]+$' | sort -un | sed 's/$/-real/' | paste -sd ';' || true)"
    _why="this machine's GPU"
    if [[ -z "$CMAKE_CUDA_ARCHITECTURES" ]]; then
      CMAKE_CUDA_ARCHITECTURES="$rudder_cuda_release_archs"
      _why="no GPU to ask: the release list"
    fi
  fi
  export CMAKE_CUDA_ARCHITECTURES
  echo "cuda: building GPU code for $CMAKE_CUDA_ARCHITECTURES ($_why)${RUDDER_CUDA_LIB_DIR:+, toolkit from PyPI in ${CUDAToolkit_ROOT:-}}" >&2
  unset _why
fi
