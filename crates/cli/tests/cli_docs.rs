//! The document library through the `rudder` binary: `docs add`, `search`, `list`, `stats`
//! and `remove`, BM25 only when no embedding model is there, and a file that fails named.

use rudder::sources::{CitationTarget, Evidence};
use rudder_testkit::fixtures_gen::{library_folder, write};

#[test]
fn the_cli_adds_lists_searches_and_fails_when_nothing_indexes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = library_folder(tmp.path());
    let data = tmp.path().join("data");
    let rudder = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_rudder"))
            .args(args)
            .env("RUDDER_DATA_DIR", &data)
            // No models here: BM25 only, with a note.
            .env("RUDDER_MODELS_DIR", tmp.path().join("no-models"))
            .output()
            .unwrap()
    };
    let dir_arg = dir.to_str().unwrap();
    let out = rudder(&["docs", "add", dir_arg]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("report.pdf") && stdout.contains("5 added"),
        "{stdout}"
    );
    assert!(stderr.contains("only BM25"), "{stderr}");

    let out = rudder(&["docs", "search", "basalt columns", "-k", "2", "--json"]);
    let hits: Vec<Evidence> = serde_json::from_slice(&out.stdout).unwrap();
    assert!(matches!(
        &hits[0].target,
        CitationTarget::Document { page: Some(2), .. }
    ));

    let out = rudder(&["docs", "list", "--json"]);
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listed["documents"].as_array().unwrap().len(), 5);

    let out = rudder(&["docs", "stats"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("documents: 5"));

    let bad = tmp.path().join("bad");
    write(&bad, "x.pdf", b"not a pdf");
    let out = rudder(&["docs", "add", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("x.pdf"));

    let out = rudder(&["docs", "remove", dir_arg]);
    assert!(out.status.success());
    let out = rudder(&["corpus", "list"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("wikipedia-vital-en") && stdout.contains("missing"),
        "{stdout}"
    );
}
