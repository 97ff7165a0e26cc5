/// Every command the window may call. Tauri v2 needs a permission per app command: this
/// generates `allow-<command>` for each (granted in capabilities/default.json) and fails the
/// build on a bad config.
const COMMANDS: &[&str] = &[
    "engine_status",
    "models_list",
    "models_fetch",
    "settings_get",
    "settings_set",
    "import_paths",
    "docs_add",
    "library_stats",
    "history_search",
    "history_show",
    "history_forget",
    "research_start",
    "research_reply",
    "research_steer",
    "research_stop",
    "sessions_list",
    "session_events",
    "session_resume",
    "session_report",
    "session_export",
    "source_open",
    "you_view",
    "you_say",
    "you_unsay",
    "you_restore",
    "you_personalise",
    "you_build",
    "corpus_add",
];

/// The `cuda` feature against the CUDA toolkit from PyPI: link its shared cuBLAS, found through
/// the binary's rpath. The same as the root package's build.rs, which says why.
fn link_pypi_cuda() {
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

fn main() {
    link_pypi_cuda();
    let attributes = tauri_build::Attributes::new()
        .app_manifest(tauri_build::AppManifest::new().commands(COMMANDS));
    if let Err(error) = tauri_build::try_build(attributes) {
        panic!("tauri-build failed: {error:#}");
    }
}
