//! The cheap check that a file is a GGUF model before llama.cpp is asked to load it (llama.cpp
//! reports a damaged file less clearly, and a download cut short must not look like a model).

use std::io::Read;
use std::path::{Path, PathBuf};

/// The first four bytes of every GGUF file.
pub const GGUF_MAGIC: &[u8; 4] = b"GGUF";

/// Why a file is not a GGUF model this build can load.
#[derive(Debug, thiserror::Error)]
pub enum GgufError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a GGUF model: {reason}")]
    NotGguf { path: PathBuf, reason: String },
}

/// Checks that `path` starts like a GGUF file (magic + a version we know of); its version.
pub fn check_gguf_header(path: &Path) -> Result<u32, GgufError> {
    let not_gguf = |reason: String| GgufError::NotGguf {
        path: path.to_path_buf(),
        reason,
    };
    let mut file = std::fs::File::open(path).map_err(|source| GgufError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let mut header = [0u8; 8];
    file.read_exact(&mut header)
        .map_err(|_| not_gguf("shorter than a GGUF header".into()))?;
    if &header[..4] != GGUF_MAGIC {
        return Err(not_gguf(format!(
            "starts with {:02x?}, not \"GGUF\"",
            &header[..4]
        )));
    }
    let version = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
    if !(1..=3).contains(&version) {
        return Err(not_gguf(format!("unsupported GGUF version {version}")));
    }
    Ok(version)
}
