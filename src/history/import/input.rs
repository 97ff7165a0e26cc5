//! What the user hands to `rudder import`: files, folders, and `.zip` exports read in place.
//!
//! Every candidate becomes an [`InputFile`] with a display name that says exactly where it came
//! from (`takeout.zip!Takeout/My Activity/Search/MyActivity.json`). Zip entries are streamed out
//! of the archive without unpacking to disk, behind two guards: names that escape the archive
//! (`../`, absolute paths) are refused, and so are entries whose size or compression ratio is
//! absurd (a zip bomb).

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::ImportError;

/// Refuse zip entries that expand more than this many times…
pub const MAX_COMPRESSION_RATIO: u64 = 200;
/// …once they are larger than this (small files can compress absurdly and be harmless).
pub const RATIO_CHECK_ABOVE: u64 = 4 << 20;
/// Refuse any single zip entry larger than this.
pub const MAX_ENTRY_BYTES: u64 = 16 << 30;

/// One file to import.
#[derive(Debug, Clone)]
pub struct InputFile {
    display: String,
    inner: String,
    location: Location,
}

#[derive(Debug, Clone)]
enum Location {
    Plain(PathBuf),
    Zip { archive: Arc<PathBuf>, index: usize },
}

impl InputFile {
    /// A plain file on disk.
    pub fn plain(path: &Path) -> Self {
        Self {
            display: path.display().to_string(),
            inner: path.to_string_lossy().replace('\\', "/"),
            location: Location::Plain(path.to_path_buf()),
        }
    }

    /// The name to show the user and to put in errors.
    pub fn display(&self) -> &str {
        &self.display
    }

    /// The path used for format detection: the file path, or the entry name inside a zip.
    pub fn inner_path(&self) -> &str {
        &self.inner
    }

    /// The last component of [`inner_path`](Self::inner_path).
    pub fn file_name(&self) -> &str {
        self.inner.rsplit('/').next().unwrap_or(&self.inner)
    }

    /// Whether this file sits inside a zip archive.
    pub fn in_zip(&self) -> bool {
        matches!(self.location, Location::Zip { .. })
    }

    /// An I/O error about this file.
    pub fn io_error(&self, source: io::Error) -> ImportError {
        ImportError::Io {
            file: self.display.clone(),
            source,
        }
    }

    /// A parse error about this file at `place` (e.g. "line 3, column 7" or "conversation 12").
    pub fn malformed(&self, place: impl Into<String>, message: impl Into<String>) -> ImportError {
        ImportError::Malformed {
            file: self.display.clone(),
            place: place.into(),
            message: message.into(),
        }
    }

    /// Streams the file's bytes through `f`. Zip entries are decompressed on the fly.
    pub fn with_reader<T>(
        &self,
        f: impl FnOnce(&mut dyn Read) -> Result<T, ImportError>,
    ) -> Result<T, ImportError> {
        match &self.location {
            Location::Plain(path) => {
                let file = File::open(path).map_err(|e| self.io_error(e))?;
                let mut reader = BufReader::with_capacity(256 << 10, file);
                f(&mut reader)
            }
            Location::Zip { archive, index } => {
                let file = File::open(archive.as_path()).map_err(|e| self.io_error(e))?;
                let mut zip = zip::ZipArchive::new(BufReader::new(file))
                    .map_err(|e| self.malformed("zip directory", e.to_string()))?;
                let entry = zip
                    .by_index(*index)
                    .map_err(|e| self.malformed("zip entry", e.to_string()))?;
                let declared = entry.size();
                let mut guarded = SizeGuard {
                    inner: BufReader::with_capacity(256 << 10, entry),
                    left: declared,
                };
                f(&mut guarded)
            }
        }
    }

    /// The first `n` bytes (fewer if the file is shorter), for format detection.
    pub fn head(&self, n: usize) -> Result<Vec<u8>, ImportError> {
        self.with_reader(|r| {
            let mut buf = Vec::with_capacity(n);
            r.take(n as u64)
                .read_to_end(&mut buf)
                .map_err(|e| self.io_error(e))?;
            Ok(buf)
        })
    }

    /// A private copy on local disk, for SQLite databases: browsers keep their history locked
    /// while they run, and a zip entry has no path. For a plain file the `-wal` beside it is
    /// copied too, so recent visits not yet checkpointed are included. The copy is deleted when
    /// the returned value drops.
    pub fn local_copy(&self) -> Result<LocalCopy, ImportError> {
        let dir = tempfile::tempdir().map_err(|e| self.io_error(e))?;
        let dest = dir.path().join("db.sqlite");
        match &self.location {
            Location::Plain(path) => {
                std::fs::copy(path, &dest).map_err(|e| self.io_error(e))?;
                let mut wal = path.as_os_str().to_owned();
                wal.push("-wal");
                let wal = PathBuf::from(wal);
                if wal.is_file() {
                    std::fs::copy(&wal, dir.path().join("db.sqlite-wal"))
                        .map_err(|e| self.io_error(e))?;
                }
            }
            Location::Zip { .. } => {
                self.with_reader(|r| {
                    let mut out = File::create(&dest).map_err(|e| self.io_error(e))?;
                    io::copy(r, &mut out).map_err(|e| self.io_error(e))?;
                    Ok(())
                })?;
            }
        }
        Ok(LocalCopy {
            _dir: dir,
            path: dest,
        })
    }
}

/// A temporary copy of an input file; removed on drop.
pub struct LocalCopy {
    _dir: tempfile::TempDir,
    pub path: PathBuf,
}

/// Stops a zip entry from producing more bytes than its header declared: the header is what
/// the ratio check trusted.
struct SizeGuard<R> {
    inner: R,
    left: u64,
}

impl<R: Read> Read for SizeGuard<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n as u64 > self.left {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "zip entry is larger than its header says",
            ));
        }
        self.left -= n as u64;
        Ok(n)
    }
}

/// A zip entry that was refused, with the reason.
#[derive(Debug, Clone)]
pub struct RefusedEntry {
    pub display: String,
    pub error: String,
}

/// Everything found under the paths the user gave.
#[derive(Debug, Default)]
pub struct Collected {
    pub files: Vec<InputFile>,
    pub refused: Vec<ImportError>,
}

/// Expands files, folders and zip archives into the files inside them. Folders are walked in
/// name order so imports are reproducible; hidden files and folders are skipped.
pub fn collect(paths: &[PathBuf]) -> Collected {
    let mut out = Collected::default();
    for path in paths {
        collect_path(path, &mut out);
    }
    out
}

fn collect_path(path: &Path, out: &mut Collected) {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) => {
            out.refused.push(ImportError::Io {
                file: path.display().to_string(),
                source: e,
            });
            return;
        }
    };
    if meta.is_dir() {
        let mut entries: Vec<PathBuf> = match std::fs::read_dir(path) {
            Ok(rd) => rd.filter_map(|e| e.ok().map(|e| e.path())).collect(),
            Err(e) => {
                out.refused.push(ImportError::Io {
                    file: path.display().to_string(),
                    source: e,
                });
                return;
            }
        };
        entries.sort();
        for entry in entries {
            let hidden = entry
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with('.'));
            if !hidden {
                collect_path(&entry, out);
            }
        }
    } else if is_zip(path) {
        collect_zip(path, out);
    } else {
        out.files.push(InputFile::plain(path));
    }
}

fn is_zip(path: &Path) -> bool {
    let mut magic = [0u8; 4];
    File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok()
        && &magic == b"PK\x03\x04"
}

fn collect_zip(path: &Path, out: &mut Collected) {
    let display = path.display().to_string();
    let archive = Arc::new(path.to_path_buf());
    let zip = File::open(path)
        .map_err(|e| ImportError::Io {
            file: display.clone(),
            source: e,
        })
        .and_then(|f| {
            zip::ZipArchive::new(BufReader::new(f)).map_err(|e| ImportError::Malformed {
                file: display.clone(),
                place: "zip directory".into(),
                message: e.to_string(),
            })
        });
    let mut zip = match zip {
        Ok(z) => z,
        Err(e) => {
            out.refused.push(e);
            return;
        }
    };
    for index in 0..zip.len() {
        let entry = match zip.by_index_raw(index) {
            Ok(e) => e,
            Err(e) => {
                out.refused.push(ImportError::Malformed {
                    file: display.clone(),
                    place: format!("zip entry {index}"),
                    message: e.to_string(),
                });
                continue;
            }
        };
        if entry.is_dir() {
            continue;
        }
        let name = entry.name().to_string();
        let entry_display = format!("{display}!{name}");
        let refuse = |reason: String| ImportError::UnsafeZip {
            file: display.clone(),
            entry: name.clone(),
            reason,
        };
        if entry.enclosed_name().is_none() || name.split(['/', '\\']).any(|c| c == "..") {
            out.refused.push(refuse(
                "its path escapes the archive (\"..\" or absolute)".into(),
            ));
            continue;
        }
        let size = entry.size();
        let compressed = entry.compressed_size().max(1);
        if size > MAX_ENTRY_BYTES {
            out.refused.push(refuse(format!(
                "it expands to {size} bytes, over the {MAX_ENTRY_BYTES}-byte limit"
            )));
            continue;
        }
        if size > RATIO_CHECK_ABOVE && size / compressed > MAX_COMPRESSION_RATIO {
            out.refused.push(refuse(format!(
                "compression ratio {}:1 is absurd (a zip bomb?); limit {MAX_COMPRESSION_RATIO}:1",
                size / compressed
            )));
            continue;
        }
        let hidden = name
            .split('/')
            .any(|c| c.starts_with('.') || c == "__MACOSX");
        if hidden {
            continue;
        }
        out.files.push(InputFile {
            display: entry_display,
            inner: name,
            location: Location::Zip {
                archive: archive.clone(),
                index,
            },
        });
    }
}
