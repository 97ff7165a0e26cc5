//! A session written out as files: its report, plan, log and settings.

use std::path::{Path, PathBuf};

use super::runner::RunError;
use super::{SessionId, SessionStore};
use crate::research::ResearchState;

/// Writes `report.md` and `report.html` (when there is a report), `todo.md`, `events.jsonl`
/// and `session.json` into `dir`; returns the files written.
pub fn export_session(
    store: &SessionStore,
    id: SessionId,
    dir: &Path,
) -> Result<Vec<PathBuf>, RunError> {
    let info = store.info(id)?;
    let events = store.events(id)?;
    let state = ResearchState::fold(&events);
    let io = |path: &Path, source| RunError::Io {
        path: path.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    let write = |name: &str, bytes: &[u8]| -> Result<PathBuf, RunError> {
        let path = dir.join(name);
        std::fs::write(&path, bytes).map_err(|e| io(&path, e))?;
        Ok(path)
    };
    let mut written = Vec::new();
    if let Some(report) = &state.report {
        written.push(write("report.md", report.markdown.as_bytes())?);
        written.push(write("report.html", report.to_html().as_bytes())?);
    }
    written.push(write(
        "todo.md",
        state.todo.render_markdown(&state.query).as_bytes(),
    )?);
    let mut log = String::new();
    for e in &events {
        log.push_str(&serde_json::to_string(e).unwrap_or_default());
        log.push('\n');
    }
    written.push(write("events.jsonl", log.as_bytes())?);
    let session = serde_json::json!({
        "session": info,
        "config": store.config(id)?,
        "steering": store.steering(id)?,
    });
    written.push(write(
        "session.json",
        serde_json::to_string_pretty(&session)
            .unwrap_or_default()
            .as_bytes(),
    )?);
    Ok(written)
}
