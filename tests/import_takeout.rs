//! Google Takeout importers end to end: My Activity Search (JSON and HTML, English and
//! German), Gemini Apps, and Chrome `BrowserHistory.json`, through detection and `parse_file`,
//! from plain files and from inside a zip. Fixtures: `tests/fixtures/history/takeout/`,
//! synthetic, written from FORMATS.md with each listed quirk.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use rudder::history::import::{
    collect, detect, detect_from, parse_file, Detected, Format, ImportError, InputFile,
};
use rudder::history::{Entry, HistorySource, Kind, Record, TurnRole};

const EN_SEARCH_JSON: &str = "en/My Activity/Search/MyActivity.json";
const EN_SEARCH_HTML: &str = "en/My Activity/Search/MyActivity.html";
const DE_SEARCH_JSON: &str = "de/Meine Aktivitäten/Google Suche/MeineAktivitäten.json";
const DE_SEARCH_HTML: &str = "de/Meine Aktivitäten/Google Suche/MeineAktivitäten.html";
const GEMINI_JSON: &str = "en/My Activity/Gemini Apps/MyActivity.json";
const CHROME_JSON: &str = "en/Chrome/BrowserHistory.json";

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/history/takeout")
        .join(rel)
}

/// The sessions a file yields, and the items it reports as unreadable (`place: reason`).
type Parsed = (Format, Vec<Entry>, Vec<String>);

fn run_all(file: &InputFile, format: Option<Format>) -> Result<Parsed, ImportError> {
    let mut sessions = Vec::new();
    let mut skipped = Vec::new();
    let format = parse_file(file, format, &mut |record| {
        match record {
            Record::Entry(s) => sessions.push(s),
            Record::Signal(s) => panic!("Takeout has no signals, got {s:?}"),
            Record::Skipped { place, reason } => skipped.push(format!("{place}: {reason}")),
        }
        Ok(())
    })?;
    Ok((format, sessions, skipped))
}

fn run(file: &InputFile, format: Option<Format>) -> Result<(Format, Vec<Entry>), ImportError> {
    run_all(file, format).map(|(format, sessions, _)| (format, sessions))
}

/// Detects and imports a fixture, checking the detected format.
fn import(rel: &str, want: Format) -> Vec<Entry> {
    let (format, sessions) =
        run(&InputFile::plain(&fixture(rel)), None).unwrap_or_else(|e| panic!("{rel}: {e}"));
    assert_eq!(format, want, "{rel}");
    sessions
}

fn utc(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

fn by_title<'a>(sessions: &'a [Entry], title: &str) -> &'a Entry {
    let found: Vec<_> = sessions.iter().filter(|s| s.title == title).collect();
    assert_eq!(
        found.len(),
        1,
        "want exactly one session titled {title:?} in {sessions:#?}"
    );
    found[0]
}

fn of_kind(sessions: &[Entry], kind: Kind) -> Vec<&Entry> {
    sessions.iter().filter(|s| s.kind == kind).collect()
}

/// The invariants every search or visit session from Takeout holds.
fn assert_single_turn(s: &Entry, source: HistorySource) {
    assert_eq!(s.source, source, "{s:?}");
    assert_eq!(
        s.external_id, None,
        "only chats carry an external id: {s:?}"
    );
    assert_eq!(s.turns.len(), 1, "{s:?}");
    assert_eq!(s.turns[0].role, TurnRole::User);
    assert_eq!(s.turns[0].text, s.title);
    assert_eq!(s.turns[0].at, s.started_at);
    assert!(
        !s.title.contains(['\u{a0}', '\u{2003}', '\u{202f}']),
        "odd space left in {s:?}"
    );
    if s.kind == Kind::Visit {
        assert!(s.url.is_some(), "{s:?}");
    }
}

#[test]
fn search_json_english() {
    let sessions = import(EN_SEARCH_JSON, Format::TakeoutSearch);
    for s in &sessions {
        assert_single_turn(s, HistorySource::GoogleSearch);
    }
    // "Viewed …", "Used Search" and the item with a numeric title are skipped; only the last
    // is unreadable, and it is reported with its place and field.
    let (_, _, skipped) = run_all(&InputFile::plain(&fixture(EN_SEARCH_JSON)), None).unwrap();
    assert_eq!(
        skipped,
        ["item 10: title: invalid type: integer `42`, expected a string"]
    );
    assert_eq!(of_kind(&sessions, Kind::Search).len(), 6, "{sessions:#?}");
    assert_eq!(of_kind(&sessions, Kind::Visit).len(), 4, "{sessions:#?}");
    assert!(sessions
        .iter()
        .all(|s| !s.title.contains("Google Alerts") && s.title != "Search"));

    // `\u003d` in titleUrl reads as `=`.
    let rust = by_title(&sessions, "rust lifetimes");
    assert_eq!(rust.kind, Kind::Search);
    assert_eq!(
        rust.url.as_deref(),
        Some("https://www.google.com/search?q=rust+lifetimes")
    );
    assert_eq!(rust.started_at, Some(utc("2021-12-13T03:04:05.007Z")));
    assert_eq!(rust.time_note, None);

    // Visits through a Google redirect store the real URL, percent-decoded; one session per
    // (URL, UTC day), started at the day's first visit.
    let reference =
        "https://doc.rust-lang.org/reference/lifetime-elision.html?highlight=lifetime#elision";
    let mut visits: Vec<_> = sessions
        .iter()
        .filter(|s| s.url.as_deref() == Some(reference))
        .collect();
    visits.sort_by_key(|s| s.started_at);
    assert_eq!(visits.len(), 2, "{visits:#?}");
    assert_eq!(visits[0].started_at, Some(utc("2021-12-12T23:00:00Z")));
    assert_eq!(visits[1].started_at, Some(utc("2021-12-13T02:59:00Z")));
    assert!(visits
        .iter()
        .all(|v| v.kind == Kind::Visit && v.title == "Lifetime elision - The Rust Reference"));

    // A visit whose title is only the redirect URL is titled with the real URL.
    let untitled = by_title(&sessions, "https://example.org/no-title");
    assert_eq!(
        untitled.url.as_deref(),
        Some("https://example.org/no-title")
    );
    // A direct (non-redirect) URL is kept as it is.
    assert_eq!(
        by_title(&sessions, "Example Domain").url.as_deref(),
        Some("https://example.com/")
    );

    // \u{a0} and \u{2003} inside the title become plain spaces.
    by_title(&sessions, "best hiking boots");
    // Quotes and `&` survive.
    let cpp = by_title(&sessions, "\"c++\" vs rust & go");
    assert_eq!(
        cpp.url.as_deref(),
        Some("https://www.google.com/search?q=%22c%2B%2B%22+vs+rust+%26+go")
    );
    // Image Search items are searches too.
    by_title(&sessions, "cute otters");
    // Pre-2021 items without `header` still import.
    let old = by_title(&sessions, "how to bake sourdough");
    assert_eq!(old.started_at, Some(utc("2019-03-10T08:00:00Z")));
    // A missing time is recorded, not guessed.
    let untimed = by_title(&sessions, "weather tomorrow");
    assert_eq!(untimed.started_at, None);
    assert!(untimed.time_note.as_deref().unwrap().contains("no time"));
}

#[test]
fn search_json_german() {
    let sessions = import(DE_SEARCH_JSON, Format::TakeoutSearch);
    for s in &sessions {
        assert_single_turn(s, HistorySource::GoogleSearch);
    }
    assert_eq!(sessions.len(), 5, "{sessions:#?}");
    let berlin = by_title(&sessions, "wetter berlin");
    assert_eq!(berlin.kind, Kind::Search);
    assert_eq!(
        berlin.url.as_deref(),
        Some("https://www.google.com/search?q=wetter+berlin")
    );
    let besucht = by_title(&sessions, "Wetter Berlin - wetter.de");
    assert_eq!(besucht.kind, Kind::Visit);
    assert_eq!(
        besucht.url.as_deref(),
        Some("https://www.wetter.de/deutschland/wetter-berlin-18228265.html")
    );
    let aufgerufen = by_title(&sessions, "Spiegel Online");
    assert_eq!(aufgerufen.kind, Kind::Visit);
    assert_eq!(aufgerufen.url.as_deref(), Some("https://www.spiegel.de/"));
    assert_eq!(
        by_title(&sessions, "ärztlicher Notdienst München").kind,
        Kind::Search
    );
    // Pre-2021, no header, German title.
    assert_eq!(
        by_title(&sessions, "fahrplan s-bahn").started_at,
        Some(utc("2020-05-05T06:45:00Z"))
    );
    assert!(sessions.iter().all(|s| !s.title.contains("verwendet")));
}

#[test]
fn search_html_english() {
    let sessions = import(EN_SEARCH_HTML, Format::TakeoutSearchHtml);
    for s in &sessions {
        assert_single_turn(s, HistorySource::GoogleSearch);
    }
    assert_eq!(of_kind(&sessions, Kind::Search).len(), 5, "{sessions:#?}");
    assert_eq!(of_kind(&sessions, Kind::Visit).len(), 1, "{sessions:#?}");
    assert!(
        sessions.iter().all(|s| s.title != "Google Alerts"),
        "Viewed is skipped"
    );

    // &nbsp; after the verb and &emsp; inside the query.
    let rust = by_title(&sessions, "rust async runtime");
    assert_eq!(
        rust.url.as_deref(),
        Some("https://www.google.com/search?q=rust+async+runtime")
    );
    // PST: mapped to -08:00, and the assumption is recorded.
    assert_eq!(rust.started_at, Some(utc("2021-12-13T11:04:05Z")));
    let note = rust.time_note.as_deref().expect("ambiguous zone is noted");
    assert!(
        note.contains("\"PST\"") && note.contains("-08:00"),
        "{note}"
    );

    // Entities decode; U+202F before PM; PDT.
    let fish = by_title(&sessions, "fish & chips near me");
    assert_eq!(fish.started_at, Some(utc("2022-06-02T04:15:00Z")));
    assert!(fish.time_note.as_deref().unwrap().contains("\"PDT\""));

    // GMT and UTC are exact: no note.
    assert_eq!(by_title(&sessions, "tokio vs async-std").time_note, None);
    assert_eq!(
        by_title(&sessions, "tokio vs async-std").started_at,
        Some(utc("2023-01-05T08:00:00Z"))
    );
    // Unknown abbreviation: UTC, and said so.
    let k8s = by_title(&sessions, "kubernetes operators");
    assert_eq!(k8s.started_at, Some(utc("2023-01-06T08:00:00Z")));
    assert!(k8s
        .time_note
        .as_deref()
        .unwrap()
        .contains("unknown time zone \"XYZT\""));
    // Before 2018 there is no zone at all: UTC, nothing to note.
    let bowline = by_title(&sessions, "how to tie a bowline");
    assert_eq!(bowline.started_at, Some(utc("2017-02-08T00:32:36Z")));
    assert_eq!(bowline.time_note, None);

    // The visit: real URL out of the redirect, &nbsp; in the title, deduplicated per day with
    // the earlier visit's time.
    let bbc = by_title(&sessions, "BBC News");
    assert_eq!(bbc.url.as_deref(), Some("https://www.bbc.co.uk/news"));
    assert_eq!(bbc.started_at, Some(utc("2020-03-03T09:00:00Z")));
    assert_eq!(bbc.time_note, None);
}

#[test]
fn search_html_german() {
    let sessions = import(DE_SEARCH_HTML, Format::TakeoutSearchHtml);
    for s in &sessions {
        assert_single_turn(s, HistorySource::GoogleSearch);
    }
    assert_eq!(sessions.len(), 5, "{sessions:#?}");
    // 08.02.2017 with MEZ (+01:00), noted.
    let hamburg = by_title(&sessions, "wetter hamburg");
    assert_eq!(hamburg.started_at, Some(utc("2017-02-07T23:32:36Z")));
    let note = hamburg.time_note.as_deref().unwrap();
    assert!(
        note.contains("\"MEZ\"") && note.contains("+01:00"),
        "{note}"
    );
    // MESZ is +02:00.
    let rad = by_title(&sessions, "Fahrradladen in der Nähe");
    assert_eq!(rad.started_at, Some(utc("2021-07-13T12:00:00Z")));
    assert!(rad.time_note.as_deref().unwrap().contains("+02:00"));
    // "8. Feb. 2017" style with UTC.
    let spaetzle = by_title(&sessions, "rezept käsespätzle");
    assert_eq!(spaetzle.started_at, Some(utc("2017-02-08T00:32:36Z")));
    assert_eq!(spaetzle.time_note, None);
    // Besucht: the redirect target is decoded once (Wikipedia's own escapes stay).
    let wiki = by_title(&sessions, "Käsespätzle – Wikipedia");
    assert_eq!(wiki.kind, Kind::Visit);
    assert_eq!(
        wiki.url.as_deref(),
        Some("https://de.wikipedia.org/wiki/K%C3%A4sesp%C3%A4tzle")
    );
    // Aufgerufen, with a German month name ("März").
    let tagesschau = by_title(&sessions, "tagesschau.de");
    assert_eq!(tagesschau.kind, Kind::Visit);
    assert_eq!(tagesschau.started_at, Some(utc("2022-03-01T08:00:00Z")));
}

#[test]
fn gemini_conversations() {
    let sessions = import(GEMINI_JSON, Format::Gemini);
    assert!(sessions
        .iter()
        .all(|s| s.source == HistorySource::Gemini && s.kind == Kind::Chat));
    // Canvas, "Used Gemini Apps" and feedback are not turns; 7 prompts make 4 conversations.
    assert_eq!(sessions.len(), 4, "{sessions:#?}");
    let all_text: String = sessions.iter().map(|s| s.full_text()).collect();
    for absent in [
        "Used Gemini Apps",
        "Trip plan",
        "Gave feedback",
        "Day 1: Alfama",
    ] {
        assert!(!all_text.contains(absent), "{absent} is not a turn");
    }

    // Conversation ids group turns, even two hours apart; turns oldest first.
    let monad = sessions
        .iter()
        .find(|s| s.external_id.as_deref() == Some("a1b2c3d4e5f60718"))
        .expect("conversation a1b2…");
    assert_eq!(
        monad.url.as_deref(),
        Some("https://gemini.google.com/app/a1b2c3d4e5f60718")
    );
    assert_eq!(monad.title, "what is a monad?");
    assert_eq!(monad.started_at, Some(utc("2024-05-01T09:00:00Z")));
    let roles: Vec<_> = monad.turns.iter().map(|t| t.role).collect();
    use TurnRole::{Assistant as A, User as U};
    assert_eq!(roles, [U, A, U, A, U, A]);
    let users: Vec<_> = monad
        .turns
        .iter()
        .filter(|t| t.role == U)
        .map(|t| t.text.as_str())
        .collect();
    // The branched turn (ids [a1b2…, 0f0e…]) goes to its FIRST id.
    assert_eq!(
        users,
        [
            "what is a monad?",
            "show me one in Rust",
            "thanks, that helps!"
        ]
    );
    assert_eq!(
        monad.turns[1].text,
        "A monad is a way to chain computations."
    );
    // Two safeHtmlItem chunks are one answer; HTML becomes text (pre kept, lists, spaces).
    assert_eq!(
        monad.turns[3].text,
        "Here is Option used as a monad:\n\nfn main() {\n    let x = Some(1).and_then(|v| Some(v + 1));\n}\n\n- bind = and_then\n- unit = Some\n\nHope that helps."
    );
    assert_eq!(monad.turns[5].text, "You're welcome!");
    assert!(monad.turns.windows(2).all(|w| w[0].at <= w[1].at));

    // The other branch: its first id is 0f0e….
    let haskell = sessions
        .iter()
        .find(|s| s.external_id.as_deref() == Some("0f0e0d0c0b0a0908"))
        .expect("conversation 0f0e…");
    assert_eq!(haskell.turns.len(), 2);
    assert_eq!(haskell.turns[0].text, "show me one in Haskell instead");

    // No ids (older export): grouped by time, a new conversation after a 30-minute gap.
    let lisbon = sessions
        .iter()
        .find(|s| s.external_id.as_deref() == Some("t:2023-12-10T10:00:00.000Z"))
        .expect("first id-less conversation");
    assert_eq!(lisbon.url, None);
    assert_eq!(lisbon.turns.len(), 4);
    assert!(
        lisbon.title.ends_with('…') && lisbon.title.chars().count() <= 81,
        "{}",
        lisbon.title
    );
    assert!(lisbon.title.starts_with("plan a 3 day trip to Lisbon"));
    assert!(
        lisbon.turns[0].text.ends_with("on a mid-range budget"),
        "the turn keeps the whole prompt"
    );
    assert_eq!(lisbon.turns[1].text, "Day 1\n\nAlfama and the tile museum.");
    // \u{a0} in the prompt; the citation (subtitle with a web URL) stays out of the text.
    assert_eq!(lisbon.turns[2].text, "make day 2 cheaper");
    assert!(
        !lisbon.full_text().contains("visitlisboa")
            && !lisbon.full_text().contains("Lisbon tourism guide")
    );

    let receipts = sessions
        .iter()
        .find(|s| s.external_id.as_deref() == Some("t:2023-12-10T11:30:00.000Z"))
        .expect("conversation after the gap");
    // "Attached 1 file." is cut from the prompt; the file name is kept; no answer, no turn.
    assert_eq!(receipts.turns.len(), 1);
    assert_eq!(
        receipts.turns[0].text,
        "summarise this\n\nAttached: receipts.pdf"
    );
    assert_eq!(receipts.title, "summarise this Attached: receipts.pdf");

    // Conversations come out oldest first.
    assert!(sessions
        .windows(2)
        .all(|w| w[0].started_at <= w[1].started_at));
}

#[test]
fn takeout_chrome_history() {
    let sessions = import(CHROME_JSON, Format::TakeoutChrome);
    for s in &sessions {
        assert_single_turn(s, HistorySource::Chrome);
        assert_eq!(s.kind, Kind::Visit);
        assert_eq!(s.time_note, None);
    }
    // chrome:// and file:// are skipped.
    assert!(sessions
        .iter()
        .all(|s| s.url.as_deref().is_some_and(|u| u.starts_with("https://"))));
    assert_eq!(sessions.len(), 5, "{sessions:#?}");
    let mut rust: Vec<_> = sessions
        .iter()
        .filter(|s| s.url.as_deref() == Some("https://www.rust-lang.org/"))
        .collect();
    rust.sort_by_key(|s| s.started_at);
    assert_eq!(rust.len(), 2, "one per UTC day");
    assert_eq!(rust[0].started_at, Some(utc("2023-11-13T22:13:20Z")));
    // Two visits on 2023-11-14: the first of the day is kept.
    assert_eq!(rust[1].started_at, Some(utc("2023-11-14T22:13:20Z")));
    assert_eq!(
        by_title(&sessions, "serde - Rust").started_at,
        Some(utc("2023-11-14T19:26:40Z"))
    );
    // No title: the URL is the title.
    by_title(&sessions, "https://example.net/raw");
    // \u{a0} in the title.
    by_title(&sessions, "Café Central – Wien");
}

#[test]
fn detection_of_every_fixture() {
    let cases = [
        (EN_SEARCH_JSON, Format::TakeoutSearch),
        (DE_SEARCH_JSON, Format::TakeoutSearch),
        (EN_SEARCH_HTML, Format::TakeoutSearchHtml),
        (DE_SEARCH_HTML, Format::TakeoutSearchHtml),
        (GEMINI_JSON, Format::Gemini),
        (CHROME_JSON, Format::TakeoutChrome),
    ];
    for (rel, want) in cases {
        let head = fs::read(fixture(rel)).unwrap();
        let takeout_path = format!("Takeout/{}", rel.split_once('/').unwrap().1);
        assert_eq!(
            detect_from(&takeout_path, &head),
            Detected::Format(want),
            "{rel}"
        );
        // Content alone is enough for the JSON search files, in both languages.
        if want == Format::TakeoutSearch {
            assert_eq!(
                detect_from("export.json", &head),
                Detected::Format(want),
                "{rel}"
            );
        }
    }
}

#[test]
fn reads_every_format_from_inside_a_zip() {
    let dir = tempfile::tempdir().unwrap();
    let zip_path = dir.path().join("takeout-20240501T000000Z-001.zip");
    let entries = [
        EN_SEARCH_JSON,
        EN_SEARCH_HTML,
        DE_SEARCH_JSON,
        DE_SEARCH_HTML,
        GEMINI_JSON,
        CHROME_JSON,
    ];
    {
        let mut zip = zip::ZipWriter::new(fs::File::create(&zip_path).unwrap());
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        for rel in entries {
            let name = format!("Takeout/{}", rel.split_once('/').unwrap().1);
            zip.start_file(name, options).unwrap();
            zip.write_all(&fs::read(fixture(rel)).unwrap()).unwrap();
        }
        zip.finish().unwrap();
    }
    let collected = collect(std::slice::from_ref(&zip_path));
    assert!(collected.refused.is_empty(), "{:?}", collected.refused);
    assert_eq!(collected.files.len(), entries.len());
    for file in &collected.files {
        assert!(
            file.display().contains(".zip!Takeout/"),
            "{}",
            file.display()
        );
        let rel = entries
            .iter()
            .find(|rel| file.inner_path().ends_with(rel.split_once('/').unwrap().1))
            .unwrap();
        let from_zip = run(file, None).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let (format, plain) = run(&InputFile::plain(&fixture(rel)), None).unwrap();
        assert_eq!(detect(file).unwrap(), Detected::Format(format));
        assert_eq!(
            from_zip,
            (format, plain),
            "{rel}: zip and plain file differ"
        );
    }
}

/// Writes `content` at `rel` under a fresh temp dir (so path-based detection sees the
/// Takeout folder names) and imports it.
fn import_bytes(
    rel: &str,
    content: &[u8],
    format: Option<Format>,
) -> Result<Vec<Entry>, ImportError> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(&path, content).unwrap();
    run(&InputFile::plain(&path), format).map(|(_, s)| s)
}

fn assert_malformed(err: ImportError, rel: &str, place_has: &str) {
    let text = err.to_string();
    match err {
        ImportError::Malformed { file, place, .. } => {
            assert!(
                file.ends_with(Path::new(rel).file_name().unwrap().to_str().unwrap()),
                "{text}"
            );
            assert!(place.contains(place_has), "{text}");
        }
        other => panic!("want Malformed, got {other:?}"),
    }
}

#[test]
fn truncated_files_fail_with_the_place() {
    for (rel, format) in [
        (EN_SEARCH_JSON, Format::TakeoutSearch),
        (DE_SEARCH_JSON, Format::TakeoutSearch),
        (GEMINI_JSON, Format::Gemini),
        (CHROME_JSON, Format::TakeoutChrome),
    ] {
        let full = fs::read(fixture(rel)).unwrap();
        let cut = &full[..full.len() * 2 / 3];
        let err = import_bytes(rel, cut, Some(format)).expect_err(rel);
        assert!(err.to_string().contains("truncated"), "{err}");
        assert_malformed(err, rel, "line");
    }
    for rel in [EN_SEARCH_HTML, DE_SEARCH_HTML] {
        let full = fs::read_to_string(fixture(rel)).unwrap();
        // Cut inside the last cell's content.
        let cut = full.rfind("</a>").unwrap();
        let err = import_bytes(rel, &full.as_bytes()[..cut], None).expect_err(rel);
        assert!(err.to_string().contains("truncated"), "{err}");
        assert_malformed(err, rel, "activity cell");
    }
}

#[test]
fn invalid_utf8_in_html_names_the_cell_and_byte() {
    let full = fs::read(fixture(EN_SEARCH_HTML)).unwrap();
    let at = full.windows(6).position(|w| w == b"tokio ").unwrap();
    let mut broken = full.clone();
    broken.splice(at..at, [0xff, 0xfe]);
    let err = import_bytes(EN_SEARCH_HTML, &broken, None).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("invalid UTF-8"), "{text}");
    assert!(text.contains(&format!("byte {at}")), "{text}");
    assert_malformed(err, EN_SEARCH_HTML, "activity cell 5");
}

#[test]
fn empty_exports_give_no_records() {
    assert!(
        import_bytes(EN_SEARCH_JSON, b"[]", Some(Format::TakeoutSearch))
            .unwrap()
            .is_empty()
    );
    assert!(import_bytes(GEMINI_JSON, b"[ ]\n", Some(Format::Gemini))
        .unwrap()
        .is_empty());
    assert!(
        import_bytes(CHROME_JSON, br#"{"Browser History": []}"#, None)
            .unwrap()
            .is_empty()
    );
    let html = br#"<html><head><title>My Activity</title></head><body><div class="mdl-grid"></div></body></html>"#;
    assert!(import_bytes(EN_SEARCH_HTML, html, None).unwrap().is_empty());
    // A Gemini file with only non-turn records is empty too.
    let only_usage = br#"[{"header":"Gemini Apps","title":"Used Gemini Apps","time":"2024-01-01T00:00:00Z","products":["Gemini Apps"]}]"#;
    assert!(import_bytes(GEMINI_JSON, only_usage, None)
        .unwrap()
        .is_empty());
}

#[test]
fn a_chrome_file_without_its_key_is_malformed() {
    let err = import_bytes(
        CHROME_JSON,
        br#"{"Entry": []}"#,
        Some(Format::TakeoutChrome),
    )
    .unwrap_err();
    assert!(err.to_string().contains("Browser History"), "{err}");
}

#[test]
fn reimport_is_identical() {
    // Same export twice: the same sessions, so the same content hashes (nothing added).
    for (rel, format) in [
        (EN_SEARCH_JSON, Format::TakeoutSearch),
        (EN_SEARCH_HTML, Format::TakeoutSearchHtml),
        (GEMINI_JSON, Format::Gemini),
        (CHROME_JSON, Format::TakeoutChrome),
    ] {
        let hashes = || {
            let mut h: Vec<_> = import(rel, format)
                .iter()
                .map(Entry::content_hash)
                .collect();
            h.sort();
            h
        };
        assert_eq!(hashes(), hashes(), "{rel}");
    }
}
