//! The `cuda` feature built against a CUDA toolkit from PyPI (`scripts/cuda-toolkit.sh`): the
//! wheels carry the shared cuBLAS only, not the static one llama-cpp-sys-2 names on Linux (the
//! toolkit holds empty stand-ins for those archives). With `RUDDER_CUDA_LIB_DIR` set (as
//! `scripts/cuda-env.sh` does), the binaries link `libcublas.so.13` and `libcublasLt.so.13`
//! from that folder and find them there at run time (rpath). `-C link-arg`s come last on the
//! linker's command line, after the static ggml-cuda objects that need them.
//! Link arguments reach only the package whose build script prints them, so every package with
//! a binary that links the engine calls this: `crates/cli` (`rudder`), `crates/bench`
//! (`rudder-bench`), `crates/eval` (`rudder-eval`), `src-tauri` (the app)
//! and the engine itself (its test binaries).

pub fn emit() {
    println!("cargo:rerun-if-env-changed=RUDDER_CUDA_LIB_DIR");
    let cuda = std::env::var_os("CARGO_FEATURE_CUDA").is_some();
    let linux = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    if let (true, true, Some(dir)) = (cuda, linux, std::env::var_os("RUDDER_CUDA_LIB_DIR")) {
        let dir = dir.to_string_lossy();
        for arg in [
            format!("-L{dir}"),
            format!("-Wl,-rpath,{dir}"),
            "-lcublas".into(),
            "-lcublasLt".into(),
        ] {
            println!("cargo:rustc-link-arg={arg}");
        }
    }
}
