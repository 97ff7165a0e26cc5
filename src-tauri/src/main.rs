//! Rudder's desktop shell: a window over the `rudder` engine.
//!
//! Commands here only translate between Tauri IPC and the engine's application API
//! (`rudder::app`); the engine does the work, on blocking threads so the window never stalls.
//! Engine notifications (progress, research events, run states) are forwarded as window
//! events. The contract is `docs/desktop-api.md`.

// No console window alongside the app in Windows release builds.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

use std::path::PathBuf;
use std::sync::Arc;

use rudder::app::{
    App, AppSettings, FetchSummary, ForgetSelectorView, ForgetSummary, HistoryEntryView,
    HistoryFilters, ImportProgress, LibraryStats, ModelProgress, ModelRow, Notifier, ReplyView,
    ReportView, ResearchRequest, RunState, SayRequest, SessionRow, SourceView, SteeringAck,
    YouView,
};
use rudder::config::Paths;
use rudder::history::{ImportReport, SearchHit};
use rudder::research::Envelope;
use rudder::sources::CitationTarget;
use rudder::status::EngineStatus;
use serde::Serialize;
use tauri::{AppHandle, Emitter, State};
use tracing_subscriber::EnvFilter;

/// Forwards engine notifications to the window as events.
struct WindowEvents(AppHandle);

#[derive(Serialize, Clone)]
struct ResearchEvent<'a> {
    session: i64,
    envelope: &'a Envelope,
}

impl WindowEvents {
    fn emit<T: Serialize + Clone>(&self, name: &str, payload: T) {
        if let Err(error) = self.0.emit(name, payload) {
            tracing::warn!(%error, event = name, "cannot send an event to the window");
        }
    }
}

impl Notifier for WindowEvents {
    fn model_progress(&self, progress: &ModelProgress) {
        self.emit("model-progress", progress.clone());
    }

    fn import_progress(&self, progress: &ImportProgress) {
        self.emit("import-progress", progress.clone());
    }

    fn research_event(&self, session: i64, envelope: &Envelope) {
        self.emit("research-event", ResearchEvent { session, envelope });
    }

    fn research_state(&self, state: &RunState) {
        self.emit("research-state", state.clone());
    }
}

type AppState<'a> = State<'a, Arc<App>>;

/// Runs an engine call on a blocking thread; errors reach the window as their message.
async fn blocking<T, F>(app: &Arc<App>, call: F) -> Result<T, String>
where
    T: Send + 'static,
    F: FnOnce(&App) -> rudder::app::AppResult<T> + Send + 'static,
{
    let app = app.clone();
    tauri::async_runtime::spawn_blocking(move || call(&app))
        .await
        .map_err(|error| format!("the engine task failed: {error}"))?
        .map_err(|error| {
            tracing::warn!(%error, "command failed");
            error.for_window()
        })
}

/// The configured models, whether they are installed, and the runtime settings.
#[tauri::command]
async fn engine_status(app: AppState<'_>) -> Result<EngineStatus, String> {
    blocking(&app, |app| Ok(rudder::status::engine_status(app.paths())?)).await
}

#[tauri::command]
async fn models_list(app: AppState<'_>) -> Result<Vec<ModelRow>, String> {
    blocking(&app, |app| app.models_list()).await
}

#[tauri::command]
async fn models_fetch(app: AppState<'_>, names: Vec<String>) -> Result<FetchSummary, String> {
    blocking(&app, move |app| app.models_fetch(&names)).await
}

#[tauri::command]
async fn settings_get(app: AppState<'_>) -> Result<AppSettings, String> {
    blocking(&app, |app| app.settings_get()).await
}

#[tauri::command]
async fn settings_set(app: AppState<'_>, settings: AppSettings) -> Result<AppSettings, String> {
    blocking(&app, move |app| app.settings_set(&settings)).await
}

#[tauri::command]
async fn import_paths(app: AppState<'_>, paths: Vec<String>) -> Result<ImportReport, String> {
    blocking(&app, move |app| app.import_paths(&paths)).await
}

#[tauri::command]
async fn docs_add(
    app: AppState<'_>,
    paths: Vec<String>,
) -> Result<rudder::app::library::DocsSummary, String> {
    blocking(&app, move |app| app.docs_add(&paths)).await
}

#[tauri::command]
async fn library_stats(app: AppState<'_>) -> Result<LibraryStats, String> {
    blocking(&app, |app| app.library_stats()).await
}

#[tauri::command]
async fn history_search(
    app: AppState<'_>,
    query: String,
    filters: HistoryFilters,
) -> Result<Vec<SearchHit>, String> {
    blocking(&app, move |app| app.history_search(&query, &filters)).await
}

#[tauri::command]
async fn history_show(app: AppState<'_>, id: i64) -> Result<HistoryEntryView, String> {
    blocking(&app, move |app| app.history_show(id)).await
}

#[tauri::command]
async fn history_forget(
    app: AppState<'_>,
    selector: ForgetSelectorView,
) -> Result<ForgetSummary, String> {
    blocking(&app, move |app| app.history_forget(&selector)).await
}

#[tauri::command]
async fn research_start(app: AppState<'_>, request: ResearchRequest) -> Result<i64, String> {
    blocking(&app, move |app| app.research_start(&request)).await
}

#[tauri::command]
async fn research_reply(app: AppState<'_>, session: i64, reply: ReplyView) -> Result<(), String> {
    blocking(&app, move |app| app.research_reply(session, reply)).await
}

#[tauri::command]
async fn research_steer(
    app: AppState<'_>,
    session: i64,
    text: String,
) -> Result<SteeringAck, String> {
    blocking(&app, move |app| app.research_steer(session, &text)).await
}

#[tauri::command]
async fn research_stop(app: AppState<'_>, session: i64) -> Result<(), String> {
    blocking(&app, move |app| app.research_stop(session)).await
}

#[tauri::command]
async fn sessions_list(app: AppState<'_>) -> Result<Vec<SessionRow>, String> {
    blocking(&app, |app| app.sessions_list()).await
}

#[tauri::command]
async fn session_events(app: AppState<'_>, session: i64) -> Result<Vec<Envelope>, String> {
    blocking(&app, move |app| app.session_events(session)).await
}

#[tauri::command]
async fn session_resume(app: AppState<'_>, session: i64) -> Result<(), String> {
    blocking(&app, move |app| app.session_resume(session)).await
}

#[tauri::command]
async fn session_report(app: AppState<'_>, session: i64) -> Result<ReportView, String> {
    blocking(&app, move |app| app.session_report(session)).await
}

#[tauri::command]
async fn session_export(
    app: AppState<'_>,
    session: i64,
    dir: String,
) -> Result<Vec<String>, String> {
    blocking(&app, move |app| {
        let written = app.session_export(session, &PathBuf::from(dir))?;
        Ok(written.iter().map(|p| p.display().to_string()).collect())
    })
    .await
}

#[tauri::command]
async fn source_open(app: AppState<'_>, target: CitationTarget) -> Result<SourceView, String> {
    blocking(&app, move |app| app.source_open(&target)).await
}

#[tauri::command]
async fn corpus_add(
    app: AppState<'_>,
    name: Option<String>,
) -> Result<rudder::app::library::DocsSummary, String> {
    blocking(&app, move |app| app.corpus_add(name.as_deref())).await
}

// "What Rudder knows about you" (rudder::app::you).

#[tauri::command]
async fn you_view(app: AppState<'_>) -> Result<YouView, String> {
    blocking(&app, |app| app.you_view()).await
}

#[tauri::command]
async fn you_say(app: AppState<'_>, request: SayRequest) -> Result<YouView, String> {
    blocking(&app, move |app| app.you_say(&request)).await
}

#[tauri::command]
async fn you_unsay(app: AppState<'_>, id: String) -> Result<YouView, String> {
    blocking(&app, move |app| app.you_unsay(&id)).await
}

#[tauri::command]
async fn you_restore(app: AppState<'_>, id: String) -> Result<YouView, String> {
    blocking(&app, move |app| app.you_restore(&id)).await
}

#[tauri::command]
async fn you_personalise(
    app: AppState<'_>,
    source: String,
    personalised: bool,
) -> Result<YouView, String> {
    blocking(&app, move |app| app.you_personalise(&source, personalised)).await
}

#[tauri::command]
async fn you_build(app: AppState<'_>, query: Option<String>) -> Result<YouView, String> {
    blocking(&app, move |app| app.you_build(query.as_deref())).await
}

#[tauri::command]
async fn you_remember(app: AppState<'_>) -> Result<YouView, String> {
    blocking(&app, move |app| app.you_remember()).await
}

fn init_tracing() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}

/// The window's libraries keep caches of their own under `$XDG_CACHE_HOME` (`~/.cache`): Mesa
/// its compiled shaders, GTK and GLib theirs, GLib's dconf backend a settings cache. Rudder
/// promises to write only in its data directory, so for this process and the WebKit processes
/// it starts, the cache folder is `<data>/cache`, and GSettings lives in memory (Rudder keeps
/// no settings in it; a backend the user chose wins). Called before any thread exists:
/// changing the environment races with readers.
fn keep_platform_caches_in(data_dir: &std::path::Path) {
    std::env::set_var("XDG_CACHE_HOME", data_dir.join("cache"));
    if std::env::var_os("GSETTINGS_BACKEND").is_none() {
        std::env::set_var("GSETTINGS_BACKEND", "memory");
    }
}

/// Exits with a plain message when no display can be opened (no `DISPLAY` or
/// `WAYLAND_DISPLAY`, or one that does not answer), where Tauri's event loop would panic.
fn require_a_display() {
    #[cfg(target_os = "linux")]
    if gtk::init().is_err() {
        let named = ["WAYLAND_DISPLAY", "DISPLAY"]
            .iter()
            .filter_map(|v| {
                std::env::var(v)
                    .ok()
                    .filter(|d| !d.is_empty())
                    .map(|d| format!("{v}={d}"))
            })
            .collect::<Vec<_>>();
        let which = if named.is_empty() {
            "neither DISPLAY nor WAYLAND_DISPLAY is set".to_string()
        } else {
            format!("{} does not answer", named.join(", "))
        };
        tracing::error!(%which, "no display");
        eprintln!(
            "error: Rudder's window cannot open: no display ({which}).\n\
             Without a display, the CLI runs the same research: rudder research \"QUESTION\""
        );
        std::process::exit(1);
    }
}

fn main() {
    // Before any thread exists; see the function.
    rudder::embed::disable_onnx_telemetry_env();
    init_tracing();
    tracing::info!(
        version = env!("CARGO_PKG_VERSION"),
        "starting Rudder desktop"
    );
    // Honours RUDDER_DATA_DIR and RUDDER_MODELS_DIR like the CLI.
    let paths = match Paths::resolve(None) {
        Ok(paths) => paths,
        Err(error) => {
            tracing::error!(%error, "cannot resolve the data directory");
            eprintln!("error: {error}");
            std::process::exit(1);
        }
    };
    keep_platform_caches_in(&paths.data_dir);
    require_a_display();
    let result = tauri::Builder::default()
        .plugin(tauri_plugin_dialog::init())
        .setup(move |tauri_app| {
            // The window is made here rather than from the config (`"create": false` there), so
            // the webview keeps its storage and caches in Rudder's data directory, where
            // `forget` and a deleted data folder reach them, not in ~/.local/share/<app id>.
            let window = tauri_app
                .config()
                .app
                .windows
                .first()
                .cloned()
                .ok_or("tauri.conf.json defines no window")?;
            tauri::WebviewWindowBuilder::from_config(tauri_app.handle(), &window)?
                .data_directory(paths.data_dir.join("webview"))
                .build()?;
            let notifier = Arc::new(WindowEvents(tauri_app.handle().clone()));
            tauri::Manager::manage(tauri_app, Arc::new(App::new(paths, notifier)));
            Ok(())
        })
        .invoke_handler(tauri::generate_handler![
            engine_status,
            models_list,
            models_fetch,
            settings_get,
            settings_set,
            import_paths,
            docs_add,
            library_stats,
            history_search,
            history_show,
            history_forget,
            research_start,
            research_reply,
            research_steer,
            research_stop,
            sessions_list,
            session_events,
            session_resume,
            session_report,
            session_export,
            source_open,
            you_view,
            you_say,
            you_unsay,
            you_restore,
            you_personalise,
            you_build,
            you_remember,
            corpus_add,
        ])
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
        let status = rudder::status::engine_status(&Paths::at(dir.path())).unwrap();
        assert!(!status.chat_model.is_empty());
        assert!(!status.chat_model_present);
        assert_eq!(status.chat_model_state, "missing");
        assert!(!status.embed_model_present);
        assert!(status.threads > 0);
    }

    #[test]
    fn every_command_has_a_permission_and_the_window_is_granted_exactly_those() {
        let capability: serde_json::Value =
            serde_json::from_str(include_str!("../capabilities/default.json")).unwrap();
        let granted: Vec<&str> = capability["permissions"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|p| p.as_str())
            .collect();
        let source = include_str!("main.rs");
        let handler = source
            .split("generate_handler![")
            .nth(1)
            .and_then(|s| s.split(']').next())
            .unwrap();
        let commands: Vec<String> = handler
            .split(',')
            .map(|c| c.trim())
            .filter(|c| !c.is_empty())
            .map(|c| format!("allow-{}", c.replace('_', "-")))
            .collect();
        for c in &commands {
            assert!(granted.contains(&c.as_str()), "{c} is not granted");
        }
        let extra: Vec<&&str> = granted
            .iter()
            .filter(|p| p.starts_with("allow-") && !commands.iter().any(|c| c == *p))
            .collect();
        assert!(extra.is_empty(), "granted but not handled: {extra:?}");
        // Nothing that reaches outside the window: no shell, no HTTP, no file system plugin.
        for p in &granted {
            assert!(
                !(p.starts_with("shell:") || p.starts_with("http:") || p.starts_with("fs:")),
                "{p} must not be granted"
            );
        }
    }
}
