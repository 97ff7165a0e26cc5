//! Small filesystem helpers shared by the stages.

use std::io::Write;
use std::path::{Path, PathBuf};

/// A file or folder that could not be written.
#[derive(Debug, thiserror::Error)]
#[error("{}: {source}", path.display())]
pub struct WriteError {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

fn at(path: &Path) -> impl FnOnce(std::io::Error) -> WriteError + '_ {
    move |source| WriteError {
        path: path.to_path_buf(),
        source,
    }
}

/// Writes `bytes` to `path` through a temporary file in the same directory and a rename, so a
/// crash never leaves a half-written file behind.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    std::fs::create_dir_all(dir).map_err(at(dir))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(at(dir))?;
    tmp.write_all(bytes).map_err(at(path))?;
    tmp.as_file().sync_all().map_err(at(path))?;
    tmp.persist(path).map_err(|e| at(path)(e.error))?;
    Ok(())
}

/// Bytes in all files under `dir`, recursively (0 when it does not exist).
pub fn dir_size(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| {
            let path = e.path();
            if path.is_dir() {
                dir_size(&path)
            } else {
                e.metadata().map(|m| m.len()).unwrap_or(0)
            }
        })
        .sum()
}
