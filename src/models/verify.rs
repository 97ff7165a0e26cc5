//! Integrity checks: sizes, sha256 digests and file-format headers.

use std::io::Read;
use std::path::Path;

use sha2::{Digest, Sha256};

use super::ModelError;

use rudder_llama::gguf::GgufError;
pub use rudder_llama::gguf::GGUF_MAGIC;

/// Streams a file through sha256.
pub fn sha256_file(path: &Path) -> Result<String, ModelError> {
    let mut file = std::fs::File::open(path).map_err(|e| ModelError::io(path, e))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf).map_err(|e| ModelError::io(path, e))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex::encode(hasher.finalize()))
}

/// Checks that `path` starts like a GGUF file (magic + a version we know of).
pub fn check_gguf_header(path: &Path) -> Result<u32, ModelError> {
    rudder_llama::gguf::check_gguf_header(path).map_err(|e| match e {
        GgufError::Io { path, source } => ModelError::io(&path, source),
        GgufError::NotGguf { path, reason } => ModelError::NotGguf { path, reason },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_of_known_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, b"abc").unwrap();
        assert_eq!(
            sha256_file(&p).unwrap(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn gguf_header_is_checked() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("good.gguf");
        std::fs::write(&good, [b'G', b'G', b'U', b'F', 3, 0, 0, 0, 9, 9]).unwrap();
        assert_eq!(check_gguf_header(&good).unwrap(), 3);
        let bad = dir.path().join("bad.gguf");
        std::fs::write(&bad, b"PK\x03\x04xxxx").unwrap();
        let err = check_gguf_header(&bad).unwrap_err().to_string();
        assert!(err.contains("bad.gguf") && err.contains("GGUF"), "{err}");
        let short = dir.path().join("short.gguf");
        std::fs::write(&short, b"GG").unwrap();
        assert!(check_gguf_header(&short).is_err());
    }
}
