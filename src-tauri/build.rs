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
    "you_remember",
    "corpus_add",
];

fn main() {
    // The same link arguments as the engine's binaries for a CUDA build (crates/build-support).
    rudder_build::cuda_link::emit();
    let attributes = tauri_build::Attributes::new()
        .app_manifest(tauri_build::AppManifest::new().commands(COMMANDS));
    if let Err(error) = tauri_build::try_build(attributes) {
        panic!("tauri-build failed: {error:#}");
    }
}
