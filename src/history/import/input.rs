//! What the user hands to `rudder import`: files, folders, and `.zip` exports read in place.
//!
//! Every candidate becomes an [`InputFile`] with a display name that says exactly where it came
//! from (`takeout.zip!Takeout/My Activity/Search/MyActivity.json`). Zip entries are streamed out
//! of the archive without unpacking to disk, behind two guards: names that escape the archive
//! (`../`, absolute paths) are refused, and so are entries whose size or compression ratio is
//! absurd (a zip bomb).

use std::collections::HashSet;
use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::ImportError;

/// Refuse zip entries that expand more than this many times…
pub const MAX_COMPRESSION_RATIO: u64 = 200;
/// …once they are larger than this (small files can compress absurdly and be harmless).
pub const RATIO_CHECK_ABOVE: u64 = 4 << 20;
/// Refuse any single zip entry larger than this.
pub const MAX_ENTRY_BYTES: u64 = 16 << 30;

/// Whether a zip archive's end record (found in `tail`, the archive's last 65,557 bytes or
/// fewer) claims more entries than an archive of `archive_len` bytes can hold, at 46 bytes per
/// central directory header at least. The zip reader reserves ~200 bytes per claimed entry
/// before reading one: a 1 KB file claiming 65,535 entries cost 13 MB. Zip64 counts (0xffff
/// here, with a Zip64 locator before the record) are checked by the reader itself.
pub(crate) fn zip_claims_too_many_entries(tail: &[u8], archive_len: u64) -> bool {
    (0..tail.len().saturating_sub(11))
        .filter(|&i| tail[i..].starts_with(b"PK\x05\x06"))
        .any(|i| {
            let count = |at: usize| u64::from(u16::from_le_bytes([tail[i + at], tail[i + at + 1]]));
            let claimed = count(8).max(count(10));
            let zip64 = claimed == 0xffff && i >= 20 && tail[i - 20..].starts_with(b"PK\x06\x07");
            !zip64 && claimed * 46 > archive_len
        })
}

/// The bytes [`zip_claims_too_many_entries`] reads: the end record and its longest comment.
pub(crate) const ZIP_TAIL_BYTES: u64 = 22 + 65_535;

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
    ///
    /// The copy holds every URL the user visited, so it goes into `scratch` (inside the data
    /// directory, see [`scratch_copies_in`]) in a folder only the user can read, never into the
    /// shared system temp folder.
    pub fn local_copy(&self, scratch: &Path) -> Result<LocalCopy, ImportError> {
        let dir = private_scratch_dir(scratch).map_err(|e| self.io_error(e))?;
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

/// Prefix of the folders [`InputFile::local_copy`] makes: `copy-<pid>-<random>`.
const COPY_PREFIX: &str = "copy-";

/// A new folder under `scratch`, readable by the user only, named for this process so that a
/// later import can tell a leftover of a killed process from a copy in use.
fn private_scratch_dir(scratch: &Path) -> io::Result<tempfile::TempDir> {
    std::fs::create_dir_all(scratch)?;
    let mut builder = tempfile::Builder::new();
    let prefix = format!("{COPY_PREFIX}{}-", std::process::id());
    builder.prefix(&prefix);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o700));
    }
    builder.tempdir_in(scratch)
}

/// Removes copies left in `scratch` by imports whose process is gone (killed mid-import: a
/// drop never ran). Copies of live processes, this one included, are left alone. Returns how
/// many were removed.
pub fn scratch_copies_in(scratch: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(scratch) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(COPY_PREFIX)) else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if !process_alive(pid) && std::fs::remove_dir_all(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

#[cfg(unix)]
fn process_alive(pid: u32) -> bool {
    if pid == std::process::id() {
        return true;
    }
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // Signal 0 checks existence; EPERM means it exists under another user.
    // SAFETY: kill with signal 0 sends nothing; it only reports whether the process exists.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

#[cfg(not(unix))]
fn process_alive(pid: u32) -> bool {
    // Without a cheap liveness check, only this process's own copies are known to be live;
    // another process's copy is kept (it may be in use).
    let _ = pid;
    true
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
/// Symlinks are followed, but every folder and file is visited once by its real path, so a link
/// loop (`d/s -> .`) or two links to one export neither hang the walk nor import twice.
pub fn collect(paths: &[PathBuf]) -> Collected {
    let mut out = Collected::default();
    let mut seen = HashSet::new();
    for path in paths {
        collect_path(path, &mut out, &mut seen);
    }
    out
}

fn collect_path(path: &Path, out: &mut Collected, seen: &mut HashSet<PathBuf>) {
    // The real path identifies what we visit; a path that cannot be resolved is reported below
    // by `metadata` with the same error.
    if let Ok(real) = std::fs::canonicalize(path) {
        if !seen.insert(real) {
            return;
        }
    }
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
                collect_path(&entry, out, seen);
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
        .and_then(|mut f| {
            let len = f.metadata().map(|m| m.len()).unwrap_or(0);
            let mut tail = Vec::new();
            f.seek(SeekFrom::Start(len.saturating_sub(ZIP_TAIL_BYTES)))
                .and_then(|_| f.by_ref().take(ZIP_TAIL_BYTES).read_to_end(&mut tail))
                .and_then(|_| f.rewind())
                .map_err(|e| ImportError::Io {
                    file: display.clone(),
                    source: e,
                })?;
            if zip_claims_too_many_entries(&tail, len) {
                return Err(ImportError::Malformed {
                    file: display.clone(),
                    place: "zip directory".into(),
                    message: "it claims more entries than the file can hold".into(),
                });
            }
            Ok(f)
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

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_local_copy_is_private_and_goes_when_dropped() {
        let tmp = tempfile::tempdir().unwrap();
        let input = tmp.path().join("History");
        std::fs::write(&input, b"SQLite format 3\0 and the visits").unwrap();
        let scratch = tmp.path().join("data/scratch");
        let copy = InputFile::plain(&input).local_copy(&scratch).unwrap();
        assert!(copy.path.starts_with(&scratch), "{}", copy.path.display());
        let folder = copy.path.parent().unwrap();
        let mode = std::fs::metadata(folder).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "readable by other users: {mode:o}");
        // A copy of this live process is never swept.
        assert_eq!(scratch_copies_in(&scratch), 0);
        assert!(copy.path.exists());
        drop(copy);
        assert_eq!(std::fs::read_dir(&scratch).unwrap().count(), 0);
    }

    #[test]
    fn only_copies_of_dead_processes_are_swept() {
        let scratch = tempfile::tempdir().unwrap();
        let dead = {
            let mut child = std::process::Command::new("true").spawn().unwrap();
            let pid = child.id();
            child.wait().unwrap();
            pid
        };
        let mine = format!("{COPY_PREFIX}{}-x", std::process::id());
        for name in [
            format!("{COPY_PREFIX}{dead}-x"),
            mine.clone(),
            "other".into(),
        ] {
            std::fs::create_dir(scratch.path().join(name)).unwrap();
        }
        assert_eq!(scratch_copies_in(scratch.path()), 1);
        let mut left: Vec<_> = std::fs::read_dir(scratch.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(left, [mine, "other".to_string()]);
    }
}
