//! Hostile and broken inputs, through the `rudder` binary: each test builds the input that once
//! hung, crashed or leaked (issue "Nothing leaves the machine, proven") and checks that the
//! import or `docs add` now ends, says what happened, and loses nothing.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use rudder::history::History;

/// Runs `rudder ARGS` with its data in `data` and the system temp folder at `tmp`, killing it
/// (and failing the test) if it runs longer than `limit`: a hang must fail, not stall CI.
fn rudder_within(data: &Path, tmp: &Path, limit: Duration, args: &[&str]) -> Output {
    std::fs::create_dir_all(tmp).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_rudder"))
        .args(args)
        .env("RUDDER_DATA_DIR", data)
        .env("RUDDER_MODELS_DIR", data.join("no-models"))
        .env("TMPDIR", tmp)
        .env_remove("RUDDER_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run rudder");
    // Drain the pipes while waiting, so a chatty child cannot block on a full pipe.
    let stdout = child.stdout.take().unwrap();
    let stderr = child.stderr.take().unwrap();
    let read = |mut r: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = r.read_to_end(&mut buf);
            buf
        })
    };
    let (out, err) = (read(Box::new(stdout)), read(Box::new(stderr)));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("rudder {args:?} still running after {limit:?}: a hang");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

fn rudder(data: &Path, args: &[&str]) -> Output {
    rudder_within(data, &data.join("tmp"), Duration::from_secs(120), args)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn takeout_item(query: &str, day: u32) -> serde_json::Value {
    serde_json::json!({
        "header": "Search", "title": format!("Searched for {query}"),
        "titleUrl": format!("https://www.google.com/search?q={}", query.replace(' ', "+")),
        "time": format!("2024-05-{day:02}T09:00:00.000Z"),
        "products": ["Search"]
    })
}

fn write_takeout(path: &Path, items: &[serde_json::Value]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, serde_json::to_vec(items).unwrap()).unwrap();
}

/// Every file and folder under `dir`.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        out.push(path.clone());
        if entry.file_type().map(|t| t.is_dir()).unwrap_or(false) {
            out.extend(files_under(&path));
        }
    }
    out
}

#[cfg(unix)]
#[test]
fn symlink_loops_end_and_each_file_is_imported_once() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let d = tmp.path().join("d");
    write_takeout(
        &d.join("Takeout/My Activity/Search/MyActivity.json"),
        &[
            takeout_item("sourdough starter ratio", 1),
            takeout_item("bench press form", 2),
        ],
    );
    // Two links to the folder itself and one back up from inside: the walk used to follow
    // them forever, growing without bound.
    std::os::unix::fs::symlink(".", d.join("s1")).unwrap();
    std::os::unix::fs::symlink(".", d.join("s2")).unwrap();
    std::os::unix::fs::symlink("..", d.join("Takeout/up")).unwrap();

    let out = rudder_within(
        &data,
        &tmp.path().join("tmp"),
        Duration::from_secs(60),
        &["--json", "import", "--no-embed", d.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["added"], 2, "{report:#}");
    assert_eq!(
        report["duplicates"], 0,
        "read twice through a link: {report:#}"
    );
}

#[test]
fn deeply_nested_html_is_indexed_without_overflowing_the_stack() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let docs = tmp.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    let depth = 100_000;
    let mut html = String::from("<html><head><title>Deep</title></head><body>");
    html.push_str(&"<div>".repeat(depth));
    html.push_str("abyssalmarker lives at the bottom");
    html.push_str(&"</div>".repeat(depth));
    html.push_str("<p>surfaceword after the pit</p></body></html>");
    std::fs::write(docs.join("deep.html"), html).unwrap();

    let out = rudder(
        &data,
        &["docs", "add", "--no-embed", docs.to_str().unwrap()],
    );
    assert!(
        out.status.success(),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    for word in ["abyssalmarker", "surfaceword"] {
        let out = rudder(&data, &["--json", "docs", "search", word]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let hits: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(hits.as_array().map(Vec::len), Some(1), "{word}: {hits:#}");
    }
    // The listing and the counts agree.
    let out = rudder(&data, &["docs", "list"]);
    assert!(text(&out.stdout).contains("docs"), "{}", text(&out.stdout));
    let out = rudder(&data, &["--json", "docs", "stats"]);
    let stats: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(stats["documents"], 1, "{stats:#}");
}

#[test]
fn an_error_about_a_huge_value_does_not_echo_it() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let big = tmp.path().join("big.json");
    let mut json = String::from("[\"");
    json.push_str(&"x".repeat(5_000_000));
    json.push_str("\"]");
    std::fs::write(&big, json).unwrap();

    let out = rudder(
        &data,
        &[
            "import",
            "--no-embed",
            "--format",
            "chatgpt",
            big.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(all.contains("big.json"), "{all}");
    assert!(all.contains("item 0"), "the place is named: {all}");
    assert!(
        all.len() < 4_000,
        "{} bytes of output for one error",
        all.len()
    );
}

#[cfg(unix)]
#[test]
fn browser_history_copies_stay_private_and_leftovers_are_removed() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let system_tmp = tmp.path().join("tmp");
    let fixture = rudder_testkit::repo_root().join("tests/fixtures/browser/chrome.sqlite");
    let input = tmp.path().join("History");
    std::fs::copy(&fixture, &input).unwrap();

    // What a killed import leaves: a copy named for a process that is gone.
    let dead = {
        let mut child = Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    };
    let scratch = data.join("history/scratch");
    let leftover = scratch.join(format!("copy-{dead}-abc123"));
    std::fs::create_dir_all(&leftover).unwrap();
    std::fs::write(leftover.join("db.sqlite"), b"every URL the user visited").unwrap();

    let out = rudder_within(
        &data,
        &system_tmp,
        Duration::from_secs(120),
        &["--json", "import", "--no-embed", input.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(report["added"].as_u64().unwrap() > 0, "{report:#}");
    assert_eq!(
        files_under(&system_tmp),
        Vec::<PathBuf>::new(),
        "nothing in the system temp folder"
    );
    assert_eq!(
        files_under(&scratch),
        Vec::<PathBuf>::new(),
        "the leftover copy is gone and this import's own copy too"
    );
}

#[test]
fn a_partial_import_exits_with_its_own_code_and_names_the_failure() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let good = tmp
        .path()
        .join("Takeout/My Activity/Search/MyActivity.json");
    write_takeout(&good, &[takeout_item("trail running shoes wide", 3)]);
    let bad = tmp.path().join("conversations.json");
    std::fs::write(
        &bad,
        b"[{\"title\": \"x\", \"create_time\": 1.0, \"mapping\": {",
    )
    .unwrap();

    let out = rudder(
        &data,
        &[
            "import",
            "--no-embed",
            good.to_str().unwrap(),
            bad.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("FAILED"),
        "{}",
        text(&out.stdout)
    );
    assert!(
        text(&out.stderr).contains("1 file(s) failed"),
        "{}",
        text(&out.stderr)
    );
    // The good file went in all the same.
    let history = History::open(&data.join("history")).unwrap();
    assert_eq!(history.stats().unwrap().store.sessions, 1);

    // All good: 0. Nothing good: 1.
    let only_good = rudder(&data, &["import", "--no-embed", good.to_str().unwrap()]);
    assert_eq!(only_good.status.code(), Some(0));
    let only_bad = rudder(&data, &["import", "--no-embed", bad.to_str().unwrap()]);
    assert_eq!(only_bad.status.code(), Some(1));
}

#[test]
fn an_unreadable_item_is_counted_and_explained_not_dropped_silently() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let path = tmp
        .path()
        .join("Takeout/My Activity/Search/MyActivity.json");
    let mut items: Vec<_> = (0..50)
        .map(|i| takeout_item(&format!("query number {i}"), 1 + (i % 28)))
        .collect();
    items[30]["title"] = serde_json::json!(12345);
    write_takeout(&path, &items);

    let out = rudder(
        &data,
        &["--json", "import", "--no-embed", path.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let file = &report["files"][0];
    assert_eq!(report["added"], 49, "{report:#}");
    assert_eq!(file["skipped_items"], 1, "{report:#}");
    let note = file["notes"][0].as_str().unwrap();
    assert!(note.starts_with("item 30: title: "), "{note}");
    assert!(note.contains("expected a string"), "{note}");

    // The table says it too.
    let again = tmp
        .path()
        .join("again/Takeout/My Activity/Search/MyActivity.json");
    items[30]["title"] = serde_json::json!(["not", "a", "title"]);
    write_takeout(&again, &items);
    let out = rudder(&data, &["import", "--no-embed", again.to_str().unwrap()]);
    let table = text(&out.stdout);
    assert!(table.contains("1 item(s) skipped"), "{table}");
    assert!(table.contains("item 30: title"), "{table}");
}

#[test]
fn one_huge_message_is_cut_to_the_cap_and_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let path = tmp.path().join("conversations.json");
    // A 3 MB pasted log, with a multi-byte character straddling the cut.
    let mut huge = "é".repeat(rudder::history::MAX_TURN_BYTES / 2 - 1);
    huge.push('a');
    huge.push_str(&"log line\n".repeat(250_000));
    let conversations = serde_json::json!([{
        "uuid": "c-huge", "name": "pasted log",
        "chat_messages": [
            {"sender": "human", "text": huge, "created_at": "2024-03-01T10:00:00Z"},
            {"sender": "assistant", "text": "That log shows a timeout.", "created_at": "2024-03-01T10:00:05Z"}
        ]
    }]);
    std::fs::write(&path, serde_json::to_vec(&conversations).unwrap()).unwrap();

    let out = rudder(
        &data,
        &["--json", "import", "--no-embed", path.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["added"], 1, "{report:#}");
    assert_eq!(report["files"][0]["truncated_turns"], 1, "{report:#}");

    let history = History::open(&data.join("history")).unwrap();
    let session = history.get(1).unwrap().expect("the conversation");
    let first = &session.entry.turns[0].text;
    assert!(
        first.len() <= rudder::history::MAX_TURN_BYTES,
        "{}",
        first.len()
    );
    assert!(first.len() > rudder::history::MAX_TURN_BYTES - 4);
    assert!(first.starts_with("éé"));
    assert_eq!(session.entry.turns[1].text, "That log shows a timeout.");
}
