//! The model manager: which models exist, where their files are, whether they are intact, and
//! how to get them.
//!
//! A file is only ever handed to a loader after its size matches the manifest and its sha256 has
//! been verified once (the result is remembered in a `.verified` stamp keyed by size and mtime,
//! so a 1 GB model is not re-hashed on every start, while a changed file is).

mod fetch;
mod manifest;
mod verify;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use fetch::{FetchProgress, FetchReport, NoProgress};
pub use manifest::{Manifest, ModelFile, ModelSpec, Role, Source, BUILTIN_MANIFEST};
pub use verify::{check_gguf_header, sha256_file, GGUF_MAGIC};

use crate::config::Paths;

/// Errors from the model manager. Each names the model or file it is about.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("unknown model `{0}`")]
    Unknown(String),
    #[error("model `{model}` is not installed: {path} is missing")]
    Missing { model: String, path: PathBuf },
    #[error("{path}: {actual} bytes, expected {expected}: the file is truncated or incomplete")]
    SizeMismatch {
        model: String,
        path: PathBuf,
        expected: u64,
        actual: u64,
    },
    #[error("{path}: sha256 {actual} does not match the expected {expected}: the file is corrupt and will not be loaded")]
    HashMismatch {
        path: PathBuf,
        expected: String,
        actual: String,
    },
    #[error(
        "{path}: no digest is recorded for this file, so it cannot be verified; download it again"
    )]
    NoDigest { model: String, path: PathBuf },
    #[error("{path}: not a GGUF model: {reason}")]
    NotGguf { path: PathBuf, reason: String },
    #[error("manifest {path}: {message}")]
    Manifest { path: PathBuf, message: String },
    #[error("fetching {what}: {message}")]
    Fetch { what: String, message: String },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl ModelError {
    /// What fixes it: fetching the model again, or seeing which models exist.
    pub fn remedy(&self) -> Option<crate::remedy::Remedy> {
        use crate::remedy::Remedy;
        match self {
            ModelError::Unknown(_) => Some(Remedy::ListModels),
            ModelError::Missing { model, .. }
            | ModelError::SizeMismatch { model, .. }
            | ModelError::NoDigest { model, .. } => Some(Remedy::FetchModel(model.clone())),
            _ => None,
        }
    }

    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        Self::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// What is on disk for a model, judged cheaply (sizes only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ModelState {
    /// Every file is there with the right size.
    Present,
    /// Some files are there, some missing or of the wrong size.
    Incomplete,
    Missing,
    /// Not in the manifest.
    Unknown,
}

impl std::fmt::Display for ModelState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ModelState::Present => "present",
            ModelState::Incomplete => "incomplete",
            ModelState::Missing => "missing",
            ModelState::Unknown => "unknown",
        })
    }
}

/// Remembers that a file of this size and mtime hashed to this digest.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
struct VerifiedStamp {
    size: u64,
    mtime_ns: u128,
    sha256: String,
}

/// The digest and size a download server stated for a file the manifest gives no digest for,
/// kept beside the file (`<file>.digest`) for every later check.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
pub(crate) struct StatedDigest {
    pub sha256: String,
    pub size: u64,
    pub url: String,
}

pub(crate) fn digest_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".digest");
    path.with_file_name(name)
}

/// The models directory together with the manifest that describes it.
#[derive(Debug, Clone)]
pub struct ModelStore {
    dir: PathBuf,
    models: Vec<ModelSpec>,
}

/// File name of the user's registered models, inside the models directory.
const LOCAL_MANIFEST: &str = "local.toml";

impl ModelStore {
    /// The built-in manifest plus the user's registered models.
    pub fn open(paths: &Paths) -> Result<Self, ModelError> {
        Self::open_dir(&paths.models_dir)
    }

    pub fn open_dir(dir: &Path) -> Result<Self, ModelError> {
        let mut models = Manifest::builtin().models;
        let local = dir.join(LOCAL_MANIFEST);
        match std::fs::read_to_string(&local) {
            Ok(text) => {
                for spec in Manifest::parse(&text, &local)?.models {
                    models.retain(|m| m.name != spec.name);
                    models.push(spec);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(ModelError::io(&local, e)),
        }
        Ok(Self {
            dir: dir.to_path_buf(),
            models,
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn models(&self) -> &[ModelSpec] {
        &self.models
    }

    pub fn get(&self, name: &str) -> Result<&ModelSpec, ModelError> {
        self.models
            .iter()
            .find(|m| m.name == name)
            .ok_or_else(|| ModelError::Unknown(name.to_string()))
    }

    /// Absolute location of a model file.
    pub fn file_path(&self, file: &ModelFile) -> PathBuf {
        if file.path.is_absolute() {
            file.path.clone()
        } else {
            self.dir.join(&file.path)
        }
    }

    /// The size and digest a file must have: the manifest's, or for a file whose server states
    /// them, what was recorded when it was downloaded (`None` before that).
    pub fn expected(&self, file: &ModelFile) -> Option<(u64, String)> {
        if !file.server_stated() {
            return Some((file.size, file.sha256.clone()));
        }
        let text = std::fs::read_to_string(digest_path(&self.file_path(file))).ok()?;
        let stated: StatedDigest = serde_json::from_str(&text).ok()?;
        Some((stated.size, stated.sha256))
    }

    /// Cheap state check: a stat per file, no hashing.
    pub fn quick_state(&self, name: &str) -> ModelState {
        let Ok(spec) = self.get(name) else {
            return ModelState::Unknown;
        };
        let sizes_ok: Vec<bool> = spec
            .files
            .iter()
            .map(|f| {
                let Some((size, _)) = self.expected(f) else {
                    return false;
                };
                std::fs::metadata(self.file_path(f))
                    .map(|m| m.len() == size)
                    .unwrap_or(false)
            })
            .collect();
        if sizes_ok.iter().all(|&ok| ok) {
            ModelState::Present
        } else if spec.files.iter().any(|f| self.file_path(f).exists()) {
            ModelState::Incomplete
        } else {
            ModelState::Missing
        }
    }

    /// Checks one file: present, right size, right sha256. With `force`, re-hashes even when a
    /// matching stamp says it was verified before.
    pub fn verify_file(
        &self,
        model: &str,
        file: &ModelFile,
        force: bool,
    ) -> Result<PathBuf, ModelError> {
        let path = self.file_path(file);
        let meta = match std::fs::metadata(&path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(ModelError::Missing {
                    model: model.to_string(),
                    path,
                })
            }
            Err(e) => return Err(ModelError::io(&path, e)),
        };
        let Some((size, sha256)) = self.expected(file) else {
            return Err(ModelError::NoDigest {
                model: model.to_string(),
                path,
            });
        };
        if meta.len() != size {
            return Err(ModelError::SizeMismatch {
                model: model.to_string(),
                path,
                expected: size,
                actual: meta.len(),
            });
        }
        let mtime_ns = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let stamp_path = stamp_path(&path);
        if !force {
            if let Some(stamp) = std::fs::read_to_string(&stamp_path)
                .ok()
                .and_then(|t| serde_json::from_str::<VerifiedStamp>(&t).ok())
            {
                if stamp.size == meta.len()
                    && stamp.mtime_ns == mtime_ns
                    && stamp.sha256.eq_ignore_ascii_case(&sha256)
                {
                    return Ok(path);
                }
            }
        }
        let actual = sha256_file(&path)?;
        if !actual.eq_ignore_ascii_case(&sha256) {
            let _ = std::fs::remove_file(&stamp_path);
            return Err(ModelError::HashMismatch {
                path,
                expected: sha256,
                actual,
            });
        }
        write_stamp(&path, &meta, actual);
        Ok(path)
    }

    /// Verifies every file of a model (and of the models it requires).
    pub fn verify(&self, name: &str, force: bool) -> Result<(), ModelError> {
        let spec = self.get(name)?;
        for req in &spec.requires {
            self.verify(req, force)?;
        }
        for file in &spec.files {
            self.verify_file(name, file, force)?;
        }
        Ok(())
    }

    /// The verified paths of a model's files, first file first. Never returns a file whose size
    /// or digest is wrong.
    pub fn ready_files(&self, name: &str) -> Result<Vec<PathBuf>, ModelError> {
        let spec = self.get(name)?;
        spec.files
            .iter()
            .map(|f| self.verify_file(name, f, false))
            .collect()
    }

    /// The verified path of a model's main file.
    pub fn ready_path(&self, name: &str) -> Result<PathBuf, ModelError> {
        Ok(self.ready_files(name)?.remove(0))
    }

    /// Downloads whatever of the model (and its requirements) is missing or wrong. Idempotent:
    /// a verified model is left alone.
    pub fn fetch(
        &self,
        name: &str,
        progress: &dyn FetchProgress,
    ) -> Result<FetchReport, ModelError> {
        let spec = self.get(name)?.clone();
        let mut report = FetchReport::default();
        for req in &spec.requires {
            report.merge(self.fetch(req, progress)?);
        }
        for file in &spec.files {
            if self.verify_file(&spec.name, file, false).is_ok() {
                report.already_present += 1;
                continue;
            }
            // fetch_file hashed the bytes before installing them and left a stamp, so this
            // only re-checks the size instead of hashing a large file a second time.
            fetch::fetch_file(self, &spec.name, file, progress)?;
            self.verify_file(&spec.name, file, false)?;
            report.fetched += 1;
            report.bytes += self.expected(file).map_or(0, |(size, _)| size);
        }
        Ok(report)
    }

    /// Registers a GGUF file the user already has, under `name` (default: the file stem). The
    /// file stays where it is; its size and digest are recorded so later changes are caught.
    pub fn add_local(&self, path: &Path, name: Option<&str>) -> Result<ModelSpec, ModelError> {
        let path = std::fs::canonicalize(path).map_err(|e| ModelError::io(path, e))?;
        check_gguf_header(&path)?;
        let size = std::fs::metadata(&path)
            .map_err(|e| ModelError::io(&path, e))?
            .len();
        let sha256 = sha256_file(&path)?;
        let name = name
            .map(str::to_string)
            .or_else(|| path.file_stem().map(|s| s.to_string_lossy().to_lowercase()))
            .unwrap_or_else(|| "local-model".into());
        let spec = ModelSpec {
            name: name.clone(),
            role: Role::Chat,
            description: format!("registered local file {}", path.display()),
            license: "unknown (local file)".into(),
            requires: vec![],
            files: vec![ModelFile {
                path: path.clone(),
                size,
                sha256,
                approx_size: None,
                sources: vec![],
            }],
        };
        let local = self.dir.join(LOCAL_MANIFEST);
        let mut manifest = match std::fs::read_to_string(&local) {
            Ok(text) => Manifest::parse(&text, &local)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Manifest::default(),
            Err(e) => return Err(ModelError::io(&local, e)),
        };
        manifest.models.retain(|m| m.name != name);
        manifest.models.push(spec.clone());
        crate::fsutil::write_atomic(&local, manifest.to_toml().as_bytes()).map_err(|e| {
            ModelError::Fetch {
                what: local.display().to_string(),
                message: e.to_string(),
            }
        })?;
        Ok(spec)
    }
}

/// Records that `path`, as described by `meta`, hashed to `sha256`.
pub(crate) fn write_stamp(path: &Path, meta: &std::fs::Metadata, sha256: String) {
    let mtime_ns = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let stamp = VerifiedStamp {
        size: meta.len(),
        mtime_ns,
        sha256,
    };
    // A stamp we cannot write only costs a re-hash next time.
    if let Ok(text) = serde_json::to_string(&stamp) {
        let _ = std::fs::write(stamp_path(path), text);
    }
}

fn stamp_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".verified");
    path.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store_with(dir: &Path, content: &[u8]) -> (ModelStore, ModelFile) {
        let sha = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(content));
        let file = ModelFile {
            path: "m.gguf".into(),
            size: content.len() as u64,
            sha256: sha,
            approx_size: None,
            sources: vec![],
        };
        let store = ModelStore {
            dir: dir.to_path_buf(),
            models: vec![ModelSpec {
                name: "m".into(),
                role: Role::Chat,
                description: String::new(),
                license: "MIT".into(),
                requires: vec![],
                files: vec![file.clone()],
            }],
        };
        (store, file)
    }

    #[test]
    fn missing_truncated_and_corrupt_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let content = b"GGUF\x03\x00\x00\x00 model bytes";
        let (store, _) = store_with(dir.path(), content);
        assert_eq!(store.quick_state("m"), ModelState::Missing);
        assert!(matches!(
            store.ready_path("m"),
            Err(ModelError::Missing { .. })
        ));

        let path = dir.path().join("m.gguf");
        std::fs::write(&path, &content[..10]).unwrap();
        assert_eq!(store.quick_state("m"), ModelState::Incomplete);
        assert!(
            matches!(store.ready_path("m"), Err(ModelError::SizeMismatch { expected, actual: 10, .. }) if expected == content.len() as u64)
        );

        let mut corrupt = content.to_vec();
        corrupt[9] ^= 0xff;
        std::fs::write(&path, &corrupt).unwrap();
        let err = store.ready_path("m").unwrap_err();
        assert!(matches!(err, ModelError::HashMismatch { .. }), "{err}");

        std::fs::write(&path, content).unwrap();
        assert_eq!(store.ready_path("m").unwrap(), path);
        assert!(stamp_path(&path).exists());
    }

    #[test]
    fn a_file_changed_after_verification_is_rehashed() {
        let dir = tempfile::tempdir().unwrap();
        let content = b"GGUF\x03\x00\x00\x00 abcdef";
        let (store, _) = store_with(dir.path(), content);
        let path = dir.path().join("m.gguf");
        std::fs::write(&path, content).unwrap();
        store.ready_path("m").unwrap();
        // Same size, different bytes, later mtime: the stamp no longer vouches for it.
        std::thread::sleep(std::time::Duration::from_millis(20));
        let mut other = content.to_vec();
        other[12] = b'X';
        std::fs::write(&path, &other).unwrap();
        assert!(matches!(
            store.ready_path("m"),
            Err(ModelError::HashMismatch { .. })
        ));
    }
}
