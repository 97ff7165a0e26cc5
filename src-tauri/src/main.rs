//! Rudder's desktop shell: a window over the `rudder` engine.
//!
//! Commands here only translate between Tauri IPC and the engine API; the engine does the work.

// No console window alongside the app in Windows release builds.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

use rudder::config::Paths;
use rudder::status::EngineStatus;
use tracing_subscriber::EnvFilter;

/// The configured models, whether they are installed, and the runtime settings.
///
/// Honours `RUDDER_DATA_DIR` and `RUDDER_MODELS_DIR` like the CLI.
#[tauri::command]
async fn engine_status() -> Result<EngineStatus, String> {
    // Settings and model files are read from disk: keep that off the main (UI) thread.
    tauri::async_runtime::spawn_blocking(|| {
        let paths = Paths::resolve(None).map_err(|error| {
            tracing::warn!(%error, "cannot resolve the data directory");
            error.to_string()
        })?;
        status_at(&paths)
    })
    .await
    .map_err(|error| format!("engine status task failed: {error}"))?
}

fn status_at(paths: &Paths) -> Result<EngineStatus, String> {
    match rudder::status::engine_status(paths) {
        Ok(status) => {
            tracing::debug!(
                chat_model = %status.chat_model,
                chat_model_state = %status.chat_model_state,
                embed_model = %status.embed_model,
                "engine status"
            );
            Ok(status)
        }
        Err(error) => {
            tracing::warn!(%error, "engine status failed");
            Err(error.to_string())
        }
    }
}

fn init_tracing() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}

fn main() {
    init_tracing();
    tracing::info!(
        version = env!("CARGO_PKG_VERSION"),
        "starting Rudder desktop"
    );
    let result = tauri::Builder::default()
        .invoke_handler(tauri::generate_handler![engine_status])
        .run(tauri::generate_context!());
    if let Err(error) = result {
        tracing::error!(%error, "Rudder desktop failed");
        std::process::exit(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_data_dir_reports_models_missing() {
        let dir = tempfile::tempdir().unwrap();
        let status = status_at(&Paths::at(dir.path())).unwrap();
        assert!(!status.chat_model.is_empty());
        assert!(!status.chat_model_present);
        assert_eq!(status.chat_model_state, "missing");
        assert!(!status.embed_model_present);
        assert!(status.threads > 0);
    }
}
