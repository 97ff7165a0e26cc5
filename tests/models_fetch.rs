//! Fetching models over HTTP from a real server on loopback: resume after a dropped connection,
//! digest checks, idempotence, and registering local GGUF files.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use rudder::config::Paths;
use rudder::models::{ModelError, ModelStore, NoProgress};
use sha2::Digest;

/// A minimal HTTP/1.1 file server that honours `Range` and, on the first request, drops the
/// connection after `cut_after` bytes.
struct Server {
    url: String,
    requests: Arc<Mutex<Vec<Option<String>>>>,
}

fn serve(body: Vec<u8>, cut_after: Option<usize>) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/model.gguf", listener.local_addr().unwrap());
    let requests: Arc<Mutex<Vec<Option<String>>>> = Arc::default();
    let log = requests.clone();
    std::thread::spawn(move || {
        for (n, stream) in listener.incoming().enumerate() {
            let Ok(stream) = stream else { continue };
            let range = handle(stream, &body, if n == 0 { cut_after } else { None });
            log.lock().unwrap().push(range);
        }
    });
    Server { url, requests }
}

fn handle(mut stream: TcpStream, body: &[u8], cut_after: Option<usize>) -> Option<String> {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut range = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("range: bytes=") {
            range = Some(v.trim().to_string());
        }
    }
    let start: usize = range
        .as_deref()
        .and_then(|r| r.trim_end_matches('-').parse().ok())
        .unwrap_or(0);
    let head = if range.is_some() {
        format!(
            "HTTP/1.1 206 Partial Content\r\nContent-Length: {}\r\nContent-Range: bytes {}-{}/{}\r\nConnection: close\r\n\r\n",
            body.len() - start,
            start,
            body.len() - 1,
            body.len()
        )
    } else {
        format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        )
    };
    stream.write_all(head.as_bytes()).unwrap();
    let end = cut_after.map_or(body.len(), |c| c.min(body.len()));
    let _ = stream.write_all(&body[start..end]);
    let _ = stream.flush();
    range
}

fn model_body(len: usize) -> Vec<u8> {
    let mut body = b"GGUF\x03\x00\x00\x00".to_vec();
    body.extend((0..len - 8).map(|i| (i * 31 % 251) as u8));
    body
}

fn write_manifest(dir: &std::path::Path, url: &str, body: &[u8], sha: Option<String>) {
    let sha = sha.unwrap_or_else(|| hex::encode(sha2::Sha256::digest(body)));
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("local.toml"),
        format!(
            r#"[[model]]
name = "loopback-model"
role = "chat"
license = "MIT"
  [[model.files]]
  path = "loopback.gguf"
  size = {}
  sha256 = "{sha}"
  sources = [{{ kind = "http", url = "{url}" }}]
"#,
            body.len()
        ),
    )
    .unwrap();
}

#[test]
fn interrupted_download_resumes_and_verifies() {
    let body = model_body(3 << 20);
    let server = serve(body.clone(), Some(1 << 20));
    let data = tempfile::tempdir().unwrap();
    let paths = Paths::at(data.path());
    write_manifest(&paths.models_dir, &server.url, &body, None);
    let store = ModelStore::open(&paths).unwrap();

    let report = store.fetch("loopback-model", &NoProgress).unwrap();
    assert_eq!(report.fetched, 1);
    let path = store.ready_path("loopback-model").unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), body);
    let requests = server.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 2, "{requests:?}");
    assert_eq!(requests[0], None);
    assert_eq!(
        requests[1].as_deref(),
        Some("1048576-"),
        "resume must start where the cut was"
    );
    assert!(!path.with_file_name("loopback.gguf.part").exists());

    // Idempotent: a verified model is not downloaded again.
    let again = store.fetch("loopback-model", &NoProgress).unwrap();
    assert_eq!((again.fetched, again.already_present), (0, 1));
    assert_eq!(server.requests.lock().unwrap().len(), 2);
}

#[test]
fn a_download_with_the_wrong_digest_is_refused_and_not_kept() {
    let body = model_body(64 << 10);
    let server = serve(body.clone(), None);
    let data = tempfile::tempdir().unwrap();
    let paths = Paths::at(data.path());
    write_manifest(&paths.models_dir, &server.url, &body, Some("ab".repeat(32)));
    let store = ModelStore::open(&paths).unwrap();
    let err = store.fetch("loopback-model", &NoProgress).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, ModelError::Fetch { .. }), "{msg}");
    assert!(msg.contains("sha256"), "{msg}");
    let dest = paths.models_dir.join("loopback.gguf");
    assert!(
        !dest.exists(),
        "a file that failed verification was installed"
    );
    assert!(!dest.with_file_name("loopback.gguf.part").exists());
    assert!(matches!(
        store.ready_path("loopback-model"),
        Err(ModelError::Missing { .. })
    ));
}

#[test]
fn local_gguf_files_are_registered_and_other_files_refused() {
    let data = tempfile::tempdir().unwrap();
    let paths = Paths::at(data.path());
    let store = ModelStore::open(&paths).unwrap();
    let gguf = data.path().join("My-Model.Q4.gguf");
    std::fs::write(&gguf, model_body(4096)).unwrap();
    let spec = store.add_local(&gguf, None).unwrap();
    assert_eq!(spec.name, "my-model.q4");
    // The registration persists and the file verifies.
    let reopened = ModelStore::open(&paths).unwrap();
    assert_eq!(
        reopened.ready_path("my-model.q4").unwrap(),
        gguf.canonicalize().unwrap()
    );
    // Changing the file afterwards is caught.
    std::fs::write(&gguf, model_body(4000)).unwrap();
    assert!(matches!(
        reopened.ready_path("my-model.q4"),
        Err(ModelError::SizeMismatch { .. })
    ));

    let zip = data.path().join("not-a-model.gguf");
    std::fs::write(&zip, b"PK\x03\x04 definitely a zip").unwrap();
    let err = store.add_local(&zip, None).unwrap_err().to_string();
    assert!(
        err.contains("not-a-model.gguf") && err.contains("GGUF"),
        "{err}"
    );
}

/// A Hugging Face-like server: `HEAD /resolve/model.gguf` answers with a redirect to
/// `/cdn/model.gguf` carrying `X-Linked-Etag` (`stated`, if any) and `X-Linked-Size`, and
/// `GET` of either path sends the body (a client following the redirect). Logs each request
/// line.
fn serve_stated(body: Vec<u8>, stated: Option<String>) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let log: Arc<Mutex<Vec<String>>> = Arc::default();
    let requests = log.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request = String::new();
            reader.read_line(&mut request).unwrap_or(0);
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
            }
            let request = request.trim().to_string();
            requests.lock().unwrap().push(request.clone());
            let head = if request.starts_with("HEAD /resolve/") {
                let etag = stated
                    .as_ref()
                    .map(|s| format!("X-Linked-Etag: \"{s}\"\r\n"))
                    .unwrap_or_default();
                format!(
                    "HTTP/1.1 302 Found\r\nLocation: /cdn/model.gguf\r\n{etag}X-Linked-Size: {}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                    body.len()
                )
            } else {
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                )
            };
            let _ = stream.write_all(head.as_bytes());
            if request.starts_with("GET ") {
                let _ = stream.write_all(&body);
            }
            let _ = stream.flush();
        }
    });
    (format!("{base}/resolve/model.gguf"), log)
}

/// A manifest entry with no size and no digest: the server states both.
fn write_unpinned_manifest(dir: &std::path::Path, url: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("local.toml"),
        format!(
            r#"[[model]]
name = "stated-model"
role = "chat"
license = "MIT"
  [[model.files]]
  path = "stated.gguf"
  approx_size = 70000
  sources = [{{ kind = "http", url = "{url}" }}]
"#
        ),
    )
    .unwrap();
}

#[test]
fn a_download_is_verified_against_the_digest_its_server_states_and_it_is_recorded() {
    let body = model_body(64 << 10);
    let sha = hex::encode(sha2::Sha256::digest(&body));
    let (url, requests) = serve_stated(body.clone(), Some(sha.clone()));
    let data = tempfile::tempdir().unwrap();
    let paths = Paths::at(data.path());
    write_unpinned_manifest(&paths.models_dir, &url);
    let store = ModelStore::open(&paths).unwrap();
    assert_eq!(store.get("stated-model").unwrap().total_size(), 70000);
    assert!(matches!(
        store.ready_path("stated-model"),
        Err(ModelError::Missing { .. })
    ));

    let report = store.fetch("stated-model", &NoProgress).unwrap();
    assert_eq!((report.fetched, report.bytes), (1, body.len() as u64));
    let path = store.ready_path("stated-model").unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), body);
    let record = std::fs::read_to_string(path.with_file_name("stated.gguf.digest")).unwrap();
    assert!(record.contains(&sha), "{record}");
    assert_eq!(
        requests.lock().unwrap().first().map(String::as_str),
        Some("HEAD /resolve/model.gguf HTTP/1.1"),
        "the digest is asked for before the download"
    );

    // Later checks use the recorded digest: a changed byte is caught (same size, new mtime).
    let seen = requests.lock().unwrap().len();
    assert_eq!(store.fetch("stated-model", &NoProgress).unwrap().fetched, 0);
    assert_eq!(
        requests.lock().unwrap().len(),
        seen,
        "nothing is asked again"
    );
    let mut changed = body.clone();
    changed[100] ^= 0xff;
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(&path, &changed).unwrap();
    let err = store.ready_path("stated-model").unwrap_err();
    assert!(matches!(err, ModelError::HashMismatch { .. }), "{err}");
}

#[test]
fn bytes_that_differ_from_the_stated_digest_are_refused_and_not_kept() {
    let body = model_body(64 << 10);
    let (url, _) = serve_stated(body, Some("cd".repeat(32)));
    let data = tempfile::tempdir().unwrap();
    let paths = Paths::at(data.path());
    write_unpinned_manifest(&paths.models_dir, &url);
    let store = ModelStore::open(&paths).unwrap();
    let err = store
        .fetch("stated-model", &NoProgress)
        .unwrap_err()
        .to_string();
    assert!(err.contains("sha256"), "{err}");
    let dest = paths.models_dir.join("stated.gguf");
    assert!(!dest.exists());
    assert!(!dest.with_file_name("stated.gguf.part").exists());
    assert!(!dest.with_file_name("stated.gguf.digest").exists());
}

#[test]
fn a_server_that_states_no_digest_gets_no_download() {
    let body = model_body(16 << 10);
    let (url, requests) = serve_stated(body, None);
    let data = tempfile::tempdir().unwrap();
    let paths = Paths::at(data.path());
    write_unpinned_manifest(&paths.models_dir, &url);
    let store = ModelStore::open(&paths).unwrap();
    let err = store
        .fetch("stated-model", &NoProgress)
        .unwrap_err()
        .to_string();
    assert!(err.contains("X-Linked-Etag"), "{err}");
    assert!(
        requests
            .lock()
            .unwrap()
            .iter()
            .all(|r| !r.starts_with("GET")),
        "{:?}",
        requests.lock().unwrap()
    );
    assert!(!paths.models_dir.join("stated.gguf").exists());
}
