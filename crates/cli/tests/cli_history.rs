//! `rudder import` and `rudder history …` end to end through the binary.

use rudder_testkit as common;

use std::path::Path;
use std::process::{Command, Output, Stdio};

fn rudder(data: &Path, args: &[&str]) -> Output {
    common::command(env!("CARGO_BIN_EXE_rudder"), data)
        .args(args)
        .output()
        .expect("run rudder")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn write_export(dir: &Path) -> std::path::PathBuf {
    let items = serde_json::json!([
        {"header": "Search", "title": "Searched for pressure canning green beans altitude",
         "titleUrl": "https://www.google.com/search?q\u{3d}pressure+canning", "time": "2024-05-01T09:00:00.000Z",
         "products": ["Search"], "activityControls": ["Web & App Activity"]},
        {"header": "Search", "title": "Searched for kayak roll technique",
         "titleUrl": "https://www.google.com/search?q\u{3d}kayak+roll", "time": "2024-05-02T09:00:00.000Z",
         "products": ["Search"], "activityControls": ["Web & App Activity"]}
    ]);
    let path = dir.join("Takeout/My Activity/Search/MyActivity.json");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, serde_json::to_vec(&items).unwrap()).unwrap();
    dir.join("Takeout")
}

#[test]
fn import_search_show_stats_forget() {
    common::store();
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let export = write_export(tmp.path());
    let export = export.to_str().unwrap();

    let out = rudder(&data, &["import", export]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("2 entries are not yet read into memory"),
        "{}",
        text(&out.stderr)
    );
    let table = text(&out.stdout);
    assert!(table.contains("takeout-search"), "{table}");
    assert!(table.lines().last().unwrap().contains(" 2 "), "{table}");

    // Same export again: nothing new, still a success.
    let out = rudder(&data, &["--json", "import", export]);
    assert!(out.status.success());
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["added"], 0);
    assert_eq!(report["duplicates"], 2);

    let out = rudder(&data, &["--json", "history", "stats"]);
    let stats: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(stats["sessions"], 2);
    assert_eq!(stats["by_source"]["google-search"], 2);
    assert_eq!(
        stats["embedded_sessions"], 2,
        "import embeds when the model is present"
    );

    let out = rudder(
        &data,
        &[
            "--json",
            "history",
            "search",
            "canning beans",
            "-k",
            "1",
            "--kind",
            "search",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let hits: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(hits.as_array().unwrap().len(), 1);
    assert!(hits[0]["title"].as_str().unwrap().contains("canning"));
    let id = hits[0]["id"].as_i64().unwrap();

    let out = rudder(&data, &["history", "show", &id.to_string()]);
    assert!(out.status.success());
    assert!(text(&out.stdout).contains("pressure canning green beans altitude"));
    assert!(text(&out.stdout).contains("google-search"));

    // Reading into memory with the real small model: both searches are read, once.
    let out = rudder(
        &data,
        &["--model", common::CHAT_MODEL, "history", "remember"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).starts_with("read 2 entries (0 passed over"),
        "{}",
        text(&out.stdout)
    );
    let out = rudder(
        &data,
        &[
            "--model",
            common::CHAT_MODEL,
            "--json",
            "history",
            "remember",
        ],
    );
    let again: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (again["read"].as_u64(), again["unread"].as_u64()),
        (Some(0), Some(0))
    );
    let out = rudder(&data, &["--json", "history", "memory"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let memory: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for m in memory.as_array().unwrap() {
        let sessions = m["sessions"].as_array().unwrap();
        assert!(!sessions.is_empty(), "{m}");
        assert!(sessions.iter().all(|s| s[1] == "google-search"), "{m}");
    }

    // Forgetting needs confirmation; without a terminal, --yes.
    let out = rudder(&data, &["history", "forget", &id.to_string()]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("--yes"), "{}", text(&out.stderr));
    let out = rudder(&data, &["history", "forget", &id.to_string(), "--yes"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = rudder(&data, &["history", "show", &id.to_string()]);
    assert!(!out.status.success());
    let out = rudder(
        &data,
        &[
            "history",
            "forget",
            "--since",
            "2024-05-02",
            "--until",
            "2024-05-02",
            "--yes",
        ],
    );
    assert!(
        text(&out.stdout).contains("forgot 1 entry"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn importing_nothing_usable_exits_non_zero_with_the_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let bad = tmp.path().join("conversations.json");
    std::fs::write(
        &bad,
        b"[{\"title\": \"x\", \"create_time\": 1.0, \"mapping\": {",
    )
    .unwrap();
    let out = rudder(&data, &["import", "--no-embed", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("FAILED"), "{stdout}");
    assert!(stdout.contains("conversations.json"), "{stdout}");
    assert!(text(&out.stderr).contains("nothing was imported"));
    let out = rudder(&data, &["--json", "history", "stats"]);
    let stats: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(stats["sessions"], 0);

    let missing = tmp.path().join("nope.zip");
    let out = rudder(&data, &["import", missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stdout).contains("nope.zip"));
}

#[test]
fn a_closed_pipe_ends_output_quietly() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let out = rudder(&data, &["--json", "history", "stats"]);
    assert!(out.status.success());
    // The reader goes away before anything is written, as with `| head -0`.
    let mut child = Command::new(env!("CARGO_BIN_EXE_rudder"))
        .args(["--json", "history", "stats"])
        .env("RUDDER_DATA_DIR", &data)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = text(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_ne!(out.status.code(), Some(101), "{stderr}");
}

#[test]
fn profile_show_say_unsay_and_exclude_a_source() {
    common::store();
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let export = write_export(tmp.path());

    // Before any import: the user may already say things; the rest points to Import.
    let out = rudder(&data, &["profile", "show"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let shown = text(&out.stdout);
    assert!(shown.contains("no history imported"), "{shown}");

    let out = rudder(&data, &["profile", "say", "Keep answers short"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("u1         content depth: Keep answers short (you said)"),
        "{}",
        text(&out.stdout)
    );
    let out = rudder(&data, &["import", export.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = rudder(
        &data,
        &[
            "--json",
            "profile",
            "say",
            "I'm vegetarian",
            "--as",
            "avoid",
        ],
    );
    let view: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(view["said"][1]["criterion"], "avoid");
    assert_eq!(view["said"][1]["id"], "u2");
    assert_eq!(view["has_history"], true);
    assert_eq!(view["sources"][0]["source"], "google-search");
    assert_eq!(view["sources"][0]["personalised"], true);

    // Bad input: the reason, and nothing stored.
    for (args, reason) in [
        (vec!["profile", "say", "  "], "empty"),
        (
            vec!["profile", "say", "x", "--as", "mood"],
            "unknown criterion",
        ),
        (vec!["profile", "unsay", "u99"], "no statement u99"),
        (
            vec!["profile", "unsay", "i00000000"],
            "no inferred statement",
        ),
        (
            vec!["profile", "restore", "i00000000"],
            "no deleted statement",
        ),
        (vec!["profile", "exclude-source", "myspace"], "source"),
    ] {
        let out = rudder(&data, &args);
        assert!(!out.status.success(), "{args:?}");
        assert!(
            text(&out.stderr).contains(reason),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }

    let out = rudder(
        &data,
        &["--json", "profile", "exclude-source", "google-search"],
    );
    let view: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(view["sources"][0]["personalised"], false);
    let shown = text(&rudder(&data, &["profile", "show"]).stdout);
    assert!(shown.contains("excluded from personalisation"), "{shown}");
    // Still searchable.
    let out = rudder(&data, &["--json", "history", "search", "kayak roll"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("kayak"), "{}", text(&out.stdout));

    let out = rudder(&data, &["--json", "profile", "unsay", "u1"]);
    let view: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(view["said"].as_array().unwrap().len(), 1);

    // Forgetting everything forgets what the user said and the switches too.
    let out = rudder(&data, &["history", "forget", "--all", "--yes"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = rudder(&data, &["--json", "profile", "show"]);
    let view: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(view["said"], serde_json::json!([]));
    assert_eq!(view["sources"], serde_json::json!([]));
    assert_eq!(view["has_history"], false);
}

/// Two imports started together on a data directory that does not exist yet (the window and the
/// CLI often start together): each either imports or is refused with the reason, and neither
/// trips over the other's first-run setup ("table … already exists", "index already exists").
#[test]
fn two_first_imports_at_once_do_not_trip_over_the_setup() {
    let tmp = tempfile::tempdir().unwrap();
    let export = write_export(tmp.path());
    for round in 0..3 {
        let data = tmp.path().join(format!("data-{round}"));
        let start = |data: &Path| {
            common::command(env!("CARGO_BIN_EXE_rudder"), data)
                .args(["import", "--no-embed", export.to_str().unwrap()])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("run rudder")
        };
        let (first, second) = (start(&data), start(&data));
        let outs = [
            first.wait_with_output().unwrap(),
            second.wait_with_output().unwrap(),
        ];
        let mut imported = 0;
        for out in &outs {
            let err = text(&out.stderr);
            if out.status.success() {
                imported += 1;
            } else {
                assert!(
                    err.contains("another Rudder process is writing"),
                    "round {round}: a failure other than the clean refusal: {err}"
                );
            }
            assert!(!err.contains("already exists"), "round {round}: {err}");
        }
        assert!(imported >= 1, "round {round}: neither import went in");
        let stats = rudder(&data, &["--json", "history", "stats"]);
        assert!(stats.status.success(), "{}", text(&stats.stderr));
        let stats: serde_json::Value = serde_json::from_slice(&stats.stdout).unwrap();
        assert_eq!(stats["sessions"], 2, "round {round}: {stats}");
    }
}
