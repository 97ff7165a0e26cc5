fn main() {
    // App commands need a permission in Tauri v2: this generates `allow-engine-status`
    // (granted in capabilities/default.json) and fails the build on a bad config.
    let attributes = tauri_build::Attributes::new()
        .app_manifest(tauri_build::AppManifest::new().commands(&["engine_status"]));
    if let Err(error) = tauri_build::try_build(attributes) {
        panic!("tauri-build failed: {error:#}");
    }
}
