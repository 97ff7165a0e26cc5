//! The history store end to end through the library: import, dedup, per-file transactions,
//! hostile zips, search with filters, hybrid search with the real embedding model, forgetting
//! that leaves nothing on disk, and index rebuilds.

use rudder_testkit as common;

use std::io::Write;
use std::path::{Path, PathBuf};

use rudder::history::{
    FileStatus, Filter, ForgetSelector, History, HistorySource, ImportOptions, Kind, NoProgress,
    SearchMode,
};

/// A Google Takeout Search export with one search per `(query, ISO time)`.
fn takeout_json(items: &[(&str, &str)]) -> String {
    let entries: Vec<serde_json::Value> = items
        .iter()
        .map(|(q, t)| {
            serde_json::json!({
                "header": "Search",
                "title": format!("Searched for {q}"),
                "titleUrl": format!("https://www.google.com/search?q={}", q.replace(' ', "+")),
                "time": t,
                "products": ["Search"],
                "activityControls": ["Web & App Activity"],
            })
        })
        .collect();
    serde_json::to_string_pretty(&entries).unwrap()
}

fn write(dir: &Path, rel: &str, content: &[u8]) -> PathBuf {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, content).unwrap();
    path
}

const SEARCHES: &[(&str, &str)] = &[
    (
        "sourdough starter feeding schedule",
        "2023-03-01T10:00:00.000Z",
    ),
    ("rust borrow checker lifetimes", "2023-06-15T08:30:00.000Z"),
    (
        "marathon training plan 16 weeks",
        "2024-01-20T18:45:10.000Z",
    ),
    ("zanzibarquokka secret recipe", "2024-02-02T12:00:00.000Z"),
];

fn export_dir(root: &Path) -> PathBuf {
    write(
        root,
        "export/Takeout/My Activity/Search/MyActivity.json",
        takeout_json(SEARCHES).as_bytes(),
    );
    root.join("export")
}

fn open(root: &Path) -> History {
    History::open(&root.join("history")).unwrap()
}

fn import(history: &mut History, paths: &[PathBuf]) -> rudder::history::ImportReport {
    history
        .import(paths, &ImportOptions::default(), &NoProgress)
        .unwrap()
}

#[test]
fn reimporting_the_same_export_adds_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let export = export_dir(tmp.path());
    let mut history = open(tmp.path());
    let first = import(&mut history, std::slice::from_ref(&export));
    assert_eq!(first.added, SEARCHES.len() as u64, "{first:?}");
    let again = import(&mut history, &[export]);
    assert_eq!(again.added, 0);
    assert_eq!(again.duplicates, SEARCHES.len() as u64);
    assert_eq!(
        history.stats().unwrap().store.sessions,
        SEARCHES.len() as u64
    );
    assert_eq!(
        history.stats().unwrap().indexed_sessions,
        SEARCHES.len() as u64
    );
}

#[test]
fn a_broken_file_is_reported_with_its_place_and_stores_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let good = takeout_json(&SEARCHES[..2]);
    let bad = takeout_json(&SEARCHES[2..]);
    let truncated = &bad[..bad.len() - 40];
    let zip_path = tmp.path().join("takeout.zip");
    {
        let mut zip = zip::ZipWriter::new(std::fs::File::create(&zip_path).unwrap());
        let opts = zip::write::SimpleFileOptions::default();
        zip.start_file("Takeout/My Activity/Search/MyActivity.json", opts)
            .unwrap();
        zip.write_all(good.as_bytes()).unwrap();
        zip.start_file(
            "Takeout/Meine Aktivitäten/Google Suche/MyActivity.json",
            opts,
        )
        .unwrap();
        zip.write_all(truncated.as_bytes()).unwrap();
        zip.finish().unwrap();
    }
    let mut history = open(tmp.path());
    let report = import(&mut history, &[zip_path]);
    assert_eq!(report.added, 2, "{report:?}");
    let failed: Vec<_> = report
        .files
        .iter()
        .filter_map(|f| match &f.status {
            FileStatus::Failed(reason) => Some(reason.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(failed.len(), 1, "{report:?}");
    assert!(
        failed[0].contains("takeout.zip!Takeout/Meine Aktivitäten/Google Suche/MyActivity.json"),
        "{}",
        failed[0]
    );
    assert!(failed[0].contains("line"), "{}", failed[0]);
    // Nothing from the broken file: its first, complete item is not stored either.
    let hits = history
        .search("marathon", &Filter::default(), 5, SearchMode::Bm25, None)
        .unwrap();
    assert!(hits.is_empty(), "{hits:?}");
    assert_eq!(history.stats().unwrap().store.sessions, 2);
}

#[test]
fn hostile_zips_are_refused_by_entry() {
    let tmp = tempfile::tempdir().unwrap();
    let zip_path = tmp.path().join("evil.zip");
    {
        let mut zip = zip::ZipWriter::new(std::fs::File::create(&zip_path).unwrap());
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        zip.start_file("../../escape/MyActivity.json", opts)
            .unwrap();
        zip.write_all(takeout_json(&SEARCHES[..1]).as_bytes())
            .unwrap();
        // 64 MiB of one byte deflates about 1000:1.
        zip.start_file("Takeout/My Activity/Search/bomb.json", opts)
            .unwrap();
        let block = vec![b' '; 1 << 20];
        for _ in 0..64 {
            zip.write_all(&block).unwrap();
        }
        zip.start_file("Takeout/My Activity/Search/MyActivity.json", opts)
            .unwrap();
        zip.write_all(takeout_json(&SEARCHES[1..2]).as_bytes())
            .unwrap();
        zip.finish().unwrap();
    }
    let mut history = open(tmp.path());
    let report = import(&mut history, &[zip_path]);
    let reasons: Vec<String> = report
        .files
        .iter()
        .filter_map(|f| match &f.status {
            FileStatus::Failed(r) => Some(r.clone()),
            _ => None,
        })
        .collect();
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("../../escape/MyActivity.json") && r.contains("escapes")),
        "{reasons:?}"
    );
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("bomb.json") && r.contains("compression ratio")),
        "{reasons:?}"
    );
    assert_eq!(
        report.added, 1,
        "the safe entry is still imported: {report:?}"
    );
    assert!(!tmp.path().join("escape").exists());
}

#[test]
fn empty_unknown_and_corrupt_inputs_fail_cleanly() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = write(tmp.path(), "empty/MyActivity.json", b"[]");
    let unknown = write(tmp.path(), "notes.txt", b"just some notes");
    let corrupt = write(
        tmp.path(),
        "History",
        b"SQLite format 3\0this is not really a database at all, just bytes",
    );
    let mut history = open(tmp.path());
    let report = history
        .import(
            &[empty.clone(), unknown.clone(), corrupt.clone()],
            &ImportOptions {
                format: Some(rudder::history::Format::TakeoutSearch),
            },
            &NoProgress,
        )
        .unwrap();
    // With --format every file is read as that format: the text file is malformed JSON.
    assert!(!report.stored_anything());
    assert_eq!(report.failed_files, 3, "{report:?}");
    let report = import(&mut history, &[empty, unknown, corrupt]);
    assert!(!report.stored_anything());
    let reason = |name: &str| -> String {
        report
            .files
            .iter()
            .find(|f| f.file.ends_with(name))
            .map(|f| format!("{:?}", f.status))
            .unwrap()
    };
    assert!(
        reason("MyActivity.json").contains("no history"),
        "{}",
        reason("MyActivity.json")
    );
    assert!(
        reason("notes.txt").contains("--format"),
        "{}",
        reason("notes.txt")
    );
    assert!(
        reason("History").contains("SQLite"),
        "{}",
        reason("History")
    );
    assert_eq!(history.stats().unwrap().store.sessions, 0);
}

#[test]
fn search_filters_by_kind_source_and_time() {
    let tmp = tempfile::tempdir().unwrap();
    let export = export_dir(tmp.path());
    let mut history = open(tmp.path());
    import(&mut history, &[export]);
    let search = |history: &mut History, q: &str, filter: Filter| -> Vec<String> {
        history
            .search(q, &filter, 10, SearchMode::Bm25, None)
            .unwrap()
            .into_iter()
            .map(|h| h.title)
            .collect()
    };
    // Free text with colons (as an LLM writes) is not field syntax.
    assert_eq!(
        search(&mut history, "Note: the following feeds", Filter::default()),
        vec!["sourdough starter feeding schedule"]
    );
    // Stemming: "feeds" finds "feeding".
    assert_eq!(
        search(&mut history, "feeds", Filter::default()),
        vec!["sourdough starter feeding schedule"]
    );
    let all = "sourdough OR rust OR marathon OR zanzibarquokka";
    assert_eq!(search(&mut history, all, Filter::default()).len(), 4);
    let since_2024 = Filter {
        since: Some("2024-01-01T00:00:00Z".parse().unwrap()),
        ..Default::default()
    };
    let mut recent = search(&mut history, all, since_2024);
    recent.sort();
    assert_eq!(
        recent,
        vec![
            "marathon training plan 16 weeks",
            "zanzibarquokka secret recipe"
        ]
    );
    let until_mid_2023 = Filter {
        until: Some("2023-06-15T08:30:00Z".parse().unwrap()),
        ..Default::default()
    };
    assert_eq!(
        search(&mut history, all, until_mid_2023),
        vec!["sourdough starter feeding schedule"]
    );
    let chats = Filter {
        kinds: vec![Kind::Chat],
        ..Default::default()
    };
    assert!(search(&mut history, all, chats).is_empty());
    let google = Filter {
        kinds: vec![Kind::Search],
        sources: vec![HistorySource::GoogleSearch],
        ..Default::default()
    };
    assert_eq!(search(&mut history, all, google).len(), 4);
    let firefox = Filter {
        sources: vec![HistorySource::Firefox],
        ..Default::default()
    };
    assert!(search(&mut history, all, firefox).is_empty());
}

/// Every file under `dir`, read raw.
fn all_bytes(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(all_bytes(&path));
        } else {
            out.push((path.clone(), std::fs::read(&path).unwrap()));
        }
    }
    out
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn forgotten_sessions_leave_no_trace_on_disk() {
    let tmp = tempfile::tempdir().unwrap();
    let export = export_dir(tmp.path());
    let mut history = open(tmp.path());
    import(&mut history, &[export]);
    // Read into memory: every item with the marker gives a statement quoting it.
    let noter = common::Canned::new(|prompt| {
        let notes: Vec<serde_json::Value> = prompt
            .split("Now the items.")
            .nth(1)
            .unwrap_or("")
            .lines()
            .filter(|l| l.starts_with('['))
            .enumerate()
            .filter(|(_, l)| l.contains("zanzibarquokka"))
            .map(|(i, _)| {
                serde_json::json!({"item": i + 1, "about_user": "keeps a zanzibarquokka secret recipe", "kind": "preference"})
            })
            .collect();
        serde_json::json!({ "notes": notes }).to_string()
    });
    let read = rudder::profile::memory::remember(
        &noter,
        &mut history,
        None,
        &Default::default(),
        &rudder::history::NoProgress,
    )
    .unwrap();
    assert_eq!(read.unread, 0);
    assert_eq!(
        history.store().memory().unwrap().len(),
        1,
        "{:?}",
        noter.prompts()
    );
    let marker = b"zanzibarquokka";
    let before = all_bytes(history.dir());
    assert!(
        before.iter().any(|(_, b)| contains(b, marker)),
        "the marker should be on disk before forgetting"
    );
    let hit = history
        .search(
            "zanzibarquokka",
            &Filter::default(),
            1,
            SearchMode::Bm25,
            None,
        )
        .unwrap();
    let report = history.forget(&ForgetSelector::Entry(hit[0].id)).unwrap();
    assert_eq!(report.sessions, 1);
    assert!(
        history.store().memory().unwrap().is_empty(),
        "a statement goes with the last session it rests on"
    );
    for (path, bytes) in all_bytes(history.dir()) {
        assert!(
            !contains(&bytes, marker),
            "{} still holds the forgotten text",
            path.display()
        );
    }
    assert!(history
        .search(
            "zanzibarquokka",
            &Filter::default(),
            5,
            SearchMode::Bm25,
            None
        )
        .unwrap()
        .is_empty());
    assert_eq!(history.stats().unwrap().store.sessions, 3);
    // A reopened history agrees.
    drop(history);
    let mut history = open(tmp.path());
    assert_eq!(history.stats().unwrap().indexed_sessions, 3);

    // By date range, then by source, then everything.
    let range = ForgetSelector::Range {
        since: Some("2023-06-01T00:00:00Z".parse().unwrap()),
        until: Some("2023-07-01T00:00:00Z".parse().unwrap()),
    };
    assert_eq!(history.forget(&range).unwrap().sessions, 1);
    let by_source = ForgetSelector::Source {
        source: HistorySource::GoogleSearch,
        since: None,
        until: Some("2024-01-01T00:00:00Z".parse().unwrap()),
    };
    assert_eq!(history.forget(&by_source).unwrap().sessions, 1);
    assert_eq!(history.forget(&ForgetSelector::All).unwrap().sessions, 1);
    let stats = history.stats().unwrap();
    assert_eq!((stats.store.sessions, stats.indexed_sessions), (0, 0));
    for (path, bytes) in all_bytes(history.dir()) {
        for (q, _) in SEARCHES {
            let word = q.split(' ').next().unwrap().as_bytes();
            assert!(
                !contains(&bytes, word),
                "{} still holds {q:?}",
                path.display()
            );
        }
    }
}

#[test]
fn a_lost_text_index_is_rebuilt_from_the_store() {
    let tmp = tempfile::tempdir().unwrap();
    let export = export_dir(tmp.path());
    {
        let mut history = open(tmp.path());
        import(&mut history, &[export]);
    }
    std::fs::remove_dir_all(tmp.path().join("history/text-index")).unwrap();
    let mut history = open(tmp.path());
    assert_eq!(history.stats().unwrap().indexed_sessions, 4);
    let hits = history
        .search("marathon", &Filter::default(), 5, SearchMode::Bm25, None)
        .unwrap();
    assert_eq!(hits.len(), 1);
}

#[test]
fn hybrid_search_finds_meaning_without_shared_words() {
    let models = common::store();
    let embedder =
        rudder::embed::FastEmbedder::from_store(&models, common::EMBED_MODEL, 1).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let export = export_dir(tmp.path());
    let mut history = open(tmp.path());
    import(&mut history, &[export]);
    let n = history
        .embed_pending(&embedder, common::EMBED_MODEL, &NoProgress)
        .unwrap();
    assert_eq!(n, 4);
    // Nothing left to do on a second pass.
    assert_eq!(
        history
            .embed_pending(&embedder, common::EMBED_MODEL, &NoProgress)
            .unwrap(),
        0
    );
    let stats = history.stats().unwrap();
    assert_eq!(stats.store.embedded_sessions, 4);
    let with = Some((
        &embedder as &dyn rudder::embed::Embedder,
        common::EMBED_MODEL,
    ));
    // No word in common with "sourdough starter feeding schedule".
    let query = "how often to nourish my bread yeast culture";
    let bm25 = history
        .search(query, &Filter::default(), 4, SearchMode::Bm25, None)
        .unwrap();
    assert!(
        bm25.iter().all(|h| !h.title.contains("sourdough")),
        "{bm25:?}"
    );
    let vector = history
        .search(query, &Filter::default(), 1, SearchMode::Vector, with)
        .unwrap();
    assert_eq!(vector[0].title, "sourdough starter feeding schedule");
    let hybrid = history
        .search(query, &Filter::default(), 2, SearchMode::Hybrid, with)
        .unwrap();
    assert!(
        hybrid
            .iter()
            .any(|h| h.title.contains("sourdough") && h.vector_rank == Some(1)),
        "{hybrid:?}"
    );
    // Forgetting drops the vectors too.
    let id = vector[0].id;
    history.forget(&ForgetSelector::Entry(id)).unwrap();
    let after = history
        .search(query, &Filter::default(), 4, SearchMode::Vector, with)
        .unwrap();
    assert!(after.iter().all(|h| h.id != id));
    assert_eq!(history.stats().unwrap().store.embedded_sessions, 3);
}
