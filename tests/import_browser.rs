//! Browser history databases: the real fixtures in `tests/fixtures/browser/` (MIT, from
//! purarue/browserexport), plus small synthetic databases built here for the quirks the real
//! ones do not show. Expected values were checked against the fixtures with sqlite3.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use rudder::history::import::{
    collect, detect_from, parse_file, Detected, Format, ImportError, InputFile,
};
use rudder::history::{Entry, HistorySource, Kind, Record, TurnRole};
use rusqlite::Connection;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/browser")
        .join(name)
}

fn import_file(
    file: &InputFile,
    hint: Option<Format>,
) -> Result<(Format, Vec<Entry>), ImportError> {
    let mut sessions = Vec::new();
    let format = parse_file(file, hint, &mut |record| {
        match record {
            Record::Entry(s) => sessions.push(s),
            Record::Signal(s) => panic!("browsers yield no signals, got {s:?}"),
            Record::Skipped { place, reason } => panic!("skipped {place}: {reason}"),
        }
        Ok(())
    })?;
    Ok((format, sessions))
}

fn import(path: &Path) -> (Format, Vec<Entry>) {
    import_file(&InputFile::plain(path), None)
        .unwrap_or_else(|e| panic!("importing {}: {e}", path.display()))
}

fn import_err(path: &Path, hint: Option<Format>) -> ImportError {
    match import_file(&InputFile::plain(path), hint) {
        Ok((format, sessions)) => panic!("expected an error, got {format} with {sessions:?}"),
        Err(e) => e,
    }
}

fn t(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s)
        .unwrap_or_else(|e| panic!("{s}: {e}"))
        .with_timezone(&Utc)
}

/// Chrome time: microseconds since 1601-01-01 UTC.
fn webkit(s: &str) -> i64 {
    t(s).timestamp_micros() + 11_644_473_600_000_000
}

fn unix_us(s: &str) -> i64 {
    t(s).timestamp_micros()
}

fn unix_ms(s: &str) -> i64 {
    t(s).timestamp_millis()
}

/// Safari time: float seconds since 2001-01-01 UTC.
fn cocoa(s: &str) -> f64 {
    (t(s).timestamp_micros() - 978_307_200_000_000) as f64 / 1e6
}

fn with_kind(sessions: &[Entry], kind: Kind) -> Vec<&Entry> {
    sessions.iter().filter(|s| s.kind == kind).collect()
}

fn titled<'a>(sessions: &'a [Entry], title: &str) -> Vec<&'a Entry> {
    sessions.iter().filter(|s| s.title == title).collect()
}

fn one<'a>(sessions: &'a [Entry], title: &str) -> &'a Entry {
    match titled(sessions, title).as_slice() {
        [s] => s,
        other => {
            panic!("expected one session titled {title:?}, got {other:#?}\nall: {sessions:#?}")
        }
    }
}

fn with_url<'a>(sessions: &'a [Entry], url: &str) -> Vec<&'a Entry> {
    sessions
        .iter()
        .filter(|s| s.url.as_deref() == Some(url))
        .collect()
}

/// The shape every browser session has: one user turn repeating the title, no external id.
fn assert_shape(sessions: &[Entry], source: HistorySource) {
    for s in sessions {
        assert_eq!(s.source, source, "{s:?}");
        assert!(matches!(s.kind, Kind::Visit | Kind::Search), "{s:?}");
        assert_eq!(
            s.external_id, None,
            "only chats carry an external id: {s:?}"
        );
        assert_eq!(s.turns.len(), 1, "{s:?}");
        assert_eq!(s.turns[0].role, TurnRole::User);
        assert_eq!(s.turns[0].text, s.title);
        assert_eq!(s.turns[0].at, s.started_at);
        assert!(s.started_at.is_some(), "{s:?}");
        assert_eq!(s.time_note, None, "{s:?}");
        assert_eq!(s.title.trim(), s.title, "titles are trimmed: {s:?}");
        assert!(!s.title.contains(['\u{a0}', '\u{2003}']), "{s:?}");
    }
}

fn db(dir: &Path, name: &str, schema: &str) -> (PathBuf, Connection) {
    let path = dir.join(name);
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).unwrap();
    }
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch(schema).unwrap();
    (path, conn)
}

// ---------------------------------------------------------------------------------------------
// Real fixtures
// ---------------------------------------------------------------------------------------------

#[test]
fn chrome_fixture() {
    let (format, sessions) = import(&fixture("chrome.sqlite"));
    assert_eq!(format, Format::Chromium);
    assert_shape(&sessions, HistorySource::Chrome);
    // Five visits to localhost within seconds on one day, one to discogs: two (url, day)s.
    assert_eq!(sessions.len(), 2, "{sessions:#?}");
    assert!(sessions.iter().all(|s| s.kind == Kind::Visit));

    let dev = one(&sessions, "Development Server");
    assert_eq!(dev.url.as_deref(), Some("http://localhost:9999/"));
    // The first of the day's visits (visit 491), not urls.last_visit_time (2021-02-03).
    assert_eq!(dev.started_at, Some(t("2021-01-17T06:16:15.902496Z")));

    let discogs = one(&sessions, "Goodbye Ponytail |");
    assert_eq!(
        discogs.url.as_deref(),
        Some("https://www.discogs.com/artist/2971103-%E3%81%95%E3%82%88%E3%81%AA%E3%82%89%E3%83%9D%E3%83%8B%E3%83%BC%E3%83%86%E3%83%BC%E3%83%AB")
    );
    assert_eq!(discogs.started_at, Some(t("2021-04-01T06:59:07.057571Z")));
}

#[test]
fn firefox_fixture() {
    let (format, sessions) = import(&fixture("firefox.sqlite"));
    assert_eq!(format, Format::Firefox);
    assert_shape(&sessions, HistorySource::Firefox);
    // Four places, two of them hidden (a redirect source and a typed-then-redirected URL).
    assert_eq!(sessions.len(), 2, "{sessions:#?}");
    assert!(with_url(&sessions, "https://www.mozilla.org/privacy/firefox/").is_empty());
    assert!(with_url(&sessions, "http://github.com/seanbreckenridge/dotfiles").is_empty());

    let firstrun = one(&sessions, "Firefox Developer Edition");
    assert_eq!(
        firstrun.url.as_deref(),
        Some("https://www.mozilla.org/en-US/firefox/78.0a2/firstrun/")
    );
    // Microseconds since 1970 (visit 2), not the place's last_visit_date.
    assert_eq!(firstrun.started_at, Some(t("2020-06-27T09:29:54.587159Z")));

    // Reached by a permanent redirect (visit_type 5): the target is kept.
    let notice = one(&sessions, "Firefox Privacy Notice — Mozilla");
    assert_eq!(
        notice.url.as_deref(),
        Some("https://www.mozilla.org/en-US/privacy/firefox/")
    );
    assert_eq!(notice.started_at, Some(t("2020-06-27T09:29:54.663271Z")));
}

#[test]
fn fenix_fixture() {
    let (format, sessions) = import(&fixture("firefox_mobile.sqlite"));
    assert_eq!(format, Format::FirefoxAndroid);
    assert_shape(&sessions, HistorySource::Firefox);

    let visits = with_kind(&sessions, Kind::Visit);
    assert_eq!(visits.len(), 5, "{sessions:#?}");
    // Milliseconds, not microseconds: 2022, not 1970.
    let memex = one(&sessions, "Memex - Wikipedia");
    assert_eq!(
        memex.url.as_deref(),
        Some("https://en.m.wikipedia.org/wiki/Memex")
    );
    assert_eq!(memex.started_at, Some(t("2022-02-12T08:55:34.611Z")));
    // NULL title: the URL stands in.
    let untitled = one(&sessions, "https://getmemex.com/");
    assert_eq!(untitled.kind, Kind::Visit);
    assert_eq!(untitled.url.as_deref(), Some("https://getmemex.com/"));

    // moz_places_metadata_search_queries: two searches, with no results-page URL.
    let searches = with_kind(&sessions, Kind::Search);
    assert_eq!(searches.len(), 2, "{sessions:#?}");
    let hn = one(&sessions, "memex hackernews");
    assert_eq!(hn.kind, Kind::Search);
    assert_eq!(hn.url, None);
    assert_eq!(hn.started_at, Some(t("2022-02-12T08:57:08.411Z")));
    let plain = one(&sessions, "memex");
    assert_eq!(plain.started_at, Some(t("2022-02-12T08:57:20.378Z")));
}

#[test]
fn safari_fixture() {
    let (format, sessions) = import(&fixture("safari.sqlite"));
    assert_eq!(format, Format::Safari);
    assert_shape(&sessions, HistorySource::Safari);
    // purarue.xyz/s/albums only redirected (its visit has redirect_destination): skipped.
    assert!(with_url(&sessions, "http://purarue.xyz/s/albums").is_empty());
    // The sheet's two visits are on one day: one session, titled from the visits.
    assert_eq!(sessions.len(), 1, "{sessions:#?}");
    let sheet = one(
        &sessions,
        "album amalgam - https://github.com/purarue/albums - Google Sheets",
    );
    assert_eq!(
        sheet.url.as_deref(),
        Some("https://docs.google.com/spreadsheets/d/12htSAMg67czl8cpkj1mX0TuAFvqL_PJLI4hv1arG5-M/edit#gid=1451660661")
    );
    // Float seconds since 2001 (visit 49).
    assert_eq!(sheet.started_at, Some(t("2021-04-18T01:03:44.403004Z")));
}

#[test]
fn fixtures_are_detected_as_sqlite() {
    for name in [
        "chrome.sqlite",
        "firefox.sqlite",
        "firefox_mobile.sqlite",
        "safari.sqlite",
    ] {
        let head = fs::read(fixture(name)).unwrap();
        assert_eq!(detect_from(name, &head[..100]), Detected::Sqlite, "{name}");
        assert_eq!(
            detect_from("History", &head[..16]),
            Detected::Sqlite,
            "{name}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Chromium
// ---------------------------------------------------------------------------------------------

const CHROME_SCHEMA: &str = "
    CREATE TABLE meta(key LONGVARCHAR NOT NULL UNIQUE PRIMARY KEY, value LONGVARCHAR);
    INSERT INTO meta VALUES ('version', '56');
    CREATE TABLE urls(id INTEGER PRIMARY KEY AUTOINCREMENT, url LONGVARCHAR, title LONGVARCHAR,
        visit_count INTEGER DEFAULT 0 NOT NULL, typed_count INTEGER DEFAULT 0 NOT NULL,
        last_visit_time INTEGER NOT NULL, hidden INTEGER DEFAULT 0 NOT NULL);
    CREATE TABLE visits(id INTEGER PRIMARY KEY, url INTEGER NOT NULL, visit_time INTEGER NOT NULL,
        from_visit INTEGER, transition INTEGER DEFAULT 0 NOT NULL, segment_id INTEGER,
        visit_duration INTEGER DEFAULT 0 NOT NULL);
    CREATE TABLE keyword_search_terms (keyword_id INTEGER NOT NULL, url_id INTEGER NOT NULL,
        term LONGVARCHAR NOT NULL, normalized_term LONGVARCHAR NOT NULL);
";

// Page transitions: the core type in the low byte, qualifiers above.
const LINK: i64 = 0;
const TYPED: i64 = 1;
const AUTO_SUBFRAME: i64 = 3;
const MANUAL_SUBFRAME: i64 = 4;
const GENERATED: i64 = 5;
const KEYWORD_GENERATED: i64 = 10;
const CHAIN_START: i64 = 0x1000_0000;
const CHAIN_END: i64 = 0x2000_0000;
const SERVER_REDIRECT: i64 = 0x8000_0000;
const WHOLE_CHAIN: i64 = CHAIN_START | CHAIN_END;

fn add_url(conn: &Connection, id: i64, url: &str, title: Option<&str>, hidden: i64, last: i64) {
    conn.execute(
        "INSERT INTO urls (id, url, title, last_visit_time, hidden) VALUES (?1, ?2, ?3, ?4, ?5)",
        rusqlite::params![id, url, title, last, hidden],
    )
    .unwrap();
}

fn add_visit(conn: &Connection, url_id: i64, time: i64, transition: i64) {
    conn.execute(
        "INSERT INTO visits (url, visit_time, transition) VALUES (?1, ?2, ?3)",
        rusqlite::params![url_id, time, transition],
    )
    .unwrap();
}

/// A Chrome History with every Chromium quirk the real fixture lacks.
fn synthetic_chrome(dir: &Path, name: &str) -> PathBuf {
    let (path, c) = db(dir, name, CHROME_SCHEMA);
    let last = webkit("2024-03-05T00:00:00Z");

    // Visits on three UTC days, two of them on the first: three sessions. The last two are
    // two seconds apart across midnight UTC.
    add_url(
        &c,
        1,
        "https://example.com/article",
        Some("An\u{a0}article\u{2003}about Rust "),
        0,
        last,
    );
    add_visit(&c, 1, webkit("2024-03-01T10:00:00Z"), LINK | WHOLE_CHAIN);
    add_visit(&c, 1, webkit("2024-03-01T15:00:00Z"), TYPED); // no chain bits at all: kept
    add_visit(&c, 1, webkit("2024-03-02T23:59:59Z"), LINK | WHOLE_CHAIN);
    add_visit(&c, 1, webkit("2024-03-03T00:00:01Z"), LINK | WHOLE_CHAIN);
    // Only ever loaded in subframes.
    add_url(
        &c,
        2,
        "https://ads.example/frame",
        Some("Ad frame"),
        0,
        last,
    );
    add_visit(
        &c,
        2,
        webkit("2024-03-01T10:00:01Z"),
        AUTO_SUBFRAME | WHOLE_CHAIN,
    );
    add_visit(
        &c,
        2,
        webkit("2024-03-02T10:00:01Z"),
        MANUAL_SUBFRAME | WHOLE_CHAIN,
    );
    // Hidden.
    add_url(
        &c,
        3,
        "https://hidden.example/",
        Some("Hidden page"),
        1,
        last,
    );
    add_visit(&c, 3, webkit("2024-03-01T11:00:00Z"), LINK | WHOLE_CHAIN);
    // NULL title.
    add_url(&c, 4, "https://notitle.example/page", None, 0, last);
    add_visit(&c, 4, webkit("2024-03-01T12:00:00Z"), TYPED | WHOLE_CHAIN);
    // A link shortener that redirected (chain start, no chain end) to its destination, whose
    // transition is stored as a negative 32-bit number, as Chrome may write it.
    add_url(&c, 5, "https://t.co/abc", None, 0, last);
    add_visit(&c, 5, webkit("2024-03-01T13:00:00Z"), LINK | CHAIN_START);
    add_url(&c, 6, "https://dest.example/", Some("Destination"), 0, last);
    let redirected_end = (LINK | CHAIN_END | SERVER_REDIRECT) as u32 as i32 as i64;
    assert!(redirected_end < 0);
    add_visit(&c, 6, webkit("2024-03-01T13:00:01Z"), redirected_end);
    // An omnibox search, searched again three days later: two searches, no visits.
    let rust = "https://www.google.com/search?q=rust+borrow+checker&oq=rust&sourceid=chrome";
    add_url(
        &c,
        7,
        rust,
        Some("rust borrow checker - Google Search"),
        0,
        last,
    );
    add_visit(
        &c,
        7,
        webkit("2024-03-01T09:00:00Z"),
        GENERATED | WHOLE_CHAIN,
    );
    add_visit(&c, 7, webkit("2024-03-01T09:30:00Z"), LINK | WHOLE_CHAIN);
    add_visit(
        &c,
        7,
        webkit("2024-03-04T08:00:00Z"),
        GENERATED | WHOLE_CHAIN,
    );
    c.execute(
        "INSERT INTO keyword_search_terms VALUES (2, 7, 'Rust borrow checker', 'rust borrow checker')",
        [],
    )
    .unwrap();
    // A results page reached by a link (no keyword term), and its page 2 the same day.
    let cafe = "https://www.google.com/search?q=caf%C3%A9+cr%C3%A8me&hl=fr";
    add_url(&c, 8, cafe, Some("café crème - Recherche Google"), 0, last);
    add_visit(&c, 8, webkit("2024-03-02T08:00:00Z"), LINK | WHOLE_CHAIN);
    let cafe2 = "https://www.google.com/search?q=caf%C3%A9+cr%C3%A8me&hl=fr&start=10";
    add_url(&c, 9, cafe2, Some("café crème - Recherche Google"), 0, last);
    add_visit(&c, 9, webkit("2024-03-02T08:01:00Z"), LINK | WHOLE_CHAIN);
    // Browser-internal pages.
    add_url(&c, 10, "chrome://settings/", Some("Settings"), 0, last);
    add_visit(&c, 10, webkit("2024-03-01T14:00:00Z"), TYPED | WHOLE_CHAIN);
    add_url(&c, 11, "data:text/html,<h1>hi</h1>", Some("hi"), 0, last);
    add_visit(&c, 11, webkit("2024-03-01T14:00:00Z"), TYPED | WHOLE_CHAIN);
    // The engine's home page visit a keyword search generates.
    add_url(&c, 12, "https://www.google.com/", Some("Google"), 0, last);
    add_visit(
        &c,
        12,
        webkit("2024-03-01T09:00:00Z"),
        KEYWORD_GENERATED | WHOLE_CHAIN,
    );
    // A keyword search whose visits have expired: timed by urls.last_visit_time.
    let old = "https://duckduckgo.com/?q=old+search";
    add_url(
        &c,
        13,
        old,
        Some("old search at DuckDuckGo"),
        0,
        webkit("2023-12-24T12:00:00Z"),
    );
    c.execute(
        "INSERT INTO keyword_search_terms VALUES (3, 13, 'old search', 'old search')",
        [],
    )
    .unwrap();
    // A visit with no time (0 = unknown) is not a day.
    add_url(&c, 14, "https://zero.example/", Some("Zero"), 0, 0);
    add_visit(&c, 14, 0, TYPED | WHOLE_CHAIN);
    path
}

#[test]
fn chrome_visits_quirks() {
    let dir = tempfile::tempdir().unwrap();
    let path = synthetic_chrome(dir.path(), "History");
    let (format, sessions) = import(&path);
    assert_eq!(format, Format::Chromium);
    assert_shape(&sessions, HistorySource::Chrome);

    // One session per (url, UTC day), started at the day's first visit; title normalised.
    let article = titled(&sessions, "An article about Rust");
    let starts: Vec<_> = article.iter().map(|s| s.started_at.unwrap()).collect();
    assert_eq!(
        starts,
        [
            t("2024-03-01T10:00:00Z"),
            t("2024-03-02T23:59:59Z"),
            t("2024-03-03T00:00:01Z")
        ]
    );
    assert!(article
        .iter()
        .all(|s| s.kind == Kind::Visit && s.url.as_deref() == Some("https://example.com/article")));

    // Subframe-only, hidden, redirect-hop, browser-internal, keyword-generated, timeless: none.
    for url in [
        "https://ads.example/frame",
        "https://hidden.example/",
        "https://t.co/abc",
        "chrome://settings/",
        "data:text/html,<h1>hi</h1>",
        "https://www.google.com/",
        "https://zero.example/",
    ] {
        assert!(
            with_url(&sessions, url).is_empty(),
            "{url} should be skipped"
        );
    }
    // The redirect's destination is kept, whatever the sign of its transition.
    let dest = one(&sessions, "Destination");
    assert_eq!(dest.started_at, Some(t("2024-03-01T13:00:01Z")));
    // NULL title: the URL is the title.
    let untitled = one(&sessions, "https://notitle.example/page");
    assert_eq!(untitled.kind, Kind::Visit);
    assert_eq!(
        untitled.url.as_deref(),
        Some("https://notitle.example/page")
    );

    assert_eq!(with_kind(&sessions, Kind::Visit).len(), 5, "{sessions:#?}");
}

#[test]
fn chrome_searches() {
    let dir = tempfile::tempdir().unwrap();
    let path = synthetic_chrome(dir.path(), "History");
    let (_, sessions) = import(&path);
    let searches = with_kind(&sessions, Kind::Search);
    assert_eq!(searches.len(), 4, "{searches:#?}");

    // keyword_search_terms.term (as typed, not normalized_term), one per day it was searched;
    // the results page is not also a visit.
    let rust_url = "https://www.google.com/search?q=rust+borrow+checker&oq=rust&sourceid=chrome";
    let rust = titled(&sessions, "Rust borrow checker");
    assert_eq!(rust.len(), 2, "{rust:#?}");
    assert_eq!(rust[0].started_at, Some(t("2024-03-01T09:00:00Z")));
    assert_eq!(rust[1].started_at, Some(t("2024-03-04T08:00:00Z")));
    assert!(rust
        .iter()
        .all(|s| s.kind == Kind::Search && s.url.as_deref() == Some(rust_url)));
    assert_eq!(with_url(&sessions, rust_url).len(), 2);
    assert!(titled(&sessions, "rust borrow checker - Google Search").is_empty());

    // Expired visits: the URL's last_visit_time.
    let old = one(&sessions, "old search");
    assert_eq!(old.kind, Kind::Search);
    assert_eq!(old.started_at, Some(t("2023-12-24T12:00:00Z")));

    // A results page without a keyword term: the decoded query, once for the day (page 2 of
    // the same results is not another search).
    let cafe = one(&sessions, "café crème");
    assert_eq!(cafe.kind, Kind::Search);
    assert_eq!(
        cafe.url.as_deref(),
        Some("https://www.google.com/search?q=caf%C3%A9+cr%C3%A8me&hl=fr")
    );
    assert_eq!(cafe.started_at, Some(t("2024-03-02T08:00:00Z")));
    assert!(titled(&sessions, "café crème - Recherche Google").is_empty());
}

#[test]
fn chrome_old_lower_term_schema() {
    let dir = tempfile::tempdir().unwrap();
    // Older Chrome: `lower_term` before `term`, no `normalized_term`.
    let schema = CHROME_SCHEMA.replace(
        "term LONGVARCHAR NOT NULL, normalized_term LONGVARCHAR NOT NULL",
        "lower_term LONGVARCHAR NOT NULL, term LONGVARCHAR NOT NULL",
    );
    let (path, c) = db(dir.path(), "History", &schema);
    let last = webkit("2019-06-01T00:00:00Z");
    add_url(
        &c,
        1,
        "https://www.bing.com/search?q=Rust+Lifetimes",
        None,
        0,
        last,
    );
    add_visit(&c, 1, webkit("2019-05-01T10:00:00Z"), GENERATED);
    add_url(&c, 2, "https://search.example/?s=fallback", None, 0, last);
    add_visit(&c, 2, webkit("2019-05-01T11:00:00Z"), GENERATED);
    add_url(&c, 3, "https://www.rust-lang.org/", Some("Rust"), 0, last);
    add_visit(&c, 3, webkit("2019-05-01T10:01:00Z"), LINK);
    c.execute_batch(
        "INSERT INTO keyword_search_terms (keyword_id, url_id, lower_term, term)
             VALUES (1, 1, 'rust lifetimes', 'Rust Lifetimes');
         -- An empty term: the lower-cased one stands in.
         INSERT INTO keyword_search_terms (keyword_id, url_id, lower_term, term)
             VALUES (4, 2, 'fallback term', '');",
    )
    .unwrap();
    drop(c);
    let (format, sessions) = import(&path);
    assert_eq!(format, Format::Chromium);
    assert_shape(&sessions, HistorySource::Chrome);
    let searches = with_kind(&sessions, Kind::Search);
    assert_eq!(searches.len(), 2, "{sessions:#?}");
    assert_eq!(
        one(&sessions, "Rust Lifetimes").started_at,
        Some(t("2019-05-01T10:00:00Z"))
    );
    assert_eq!(
        one(&sessions, "fallback term").url.as_deref(),
        Some("https://search.example/?s=fallback")
    );
    let visits = with_kind(&sessions, Kind::Visit);
    assert_eq!(visits.len(), 1, "{sessions:#?}");
    assert_eq!(visits[0].title, "Rust");
}

#[test]
fn chromium_forks_are_told_apart_by_path() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "BraveSoftware/Brave-Browser/Default/History",
            HistorySource::Brave,
        ),
        (
            "AppData/Local/Microsoft/Edge/User Data/Default/History",
            HistorySource::Edge,
        ),
        (
            "Library/Application Support/Microsoft Edge/Default/History",
            HistorySource::Edge,
        ),
        ("google-chrome/Default/History", HistorySource::Chrome),
    ];
    for (rel, source) in cases {
        let path = dir.path().join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::copy(fixture("chrome.sqlite"), &path).unwrap();
        let (format, sessions) = import(&path);
        assert_eq!(format, Format::Chromium);
        assert_eq!(sessions.len(), 2);
        assert_shape(&sessions, source);
    }
}

#[test]
fn empty_database_yields_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (path, c) = db(dir.path(), "History", CHROME_SCHEMA);
    drop(c);
    let (format, sessions) = import(&path);
    assert_eq!(format, Format::Chromium);
    assert!(sessions.is_empty());
}

// ---------------------------------------------------------------------------------------------
// Firefox
// ---------------------------------------------------------------------------------------------

/// Desktop Firefox ≥ 85: it has `moz_places_metadata` too (with `terms`, not `term`).
const FIREFOX_SCHEMA: &str = "
    CREATE TABLE moz_places (id INTEGER PRIMARY KEY, url LONGVARCHAR, title LONGVARCHAR,
        rev_host LONGVARCHAR, visit_count INTEGER DEFAULT 0, hidden INTEGER DEFAULT 0 NOT NULL,
        typed INTEGER DEFAULT 0 NOT NULL, frecency INTEGER DEFAULT -1 NOT NULL,
        last_visit_date INTEGER, guid TEXT, foreign_count INTEGER DEFAULT 0 NOT NULL,
        url_hash INTEGER DEFAULT 0 NOT NULL, description TEXT, preview_image_url TEXT,
        origin_id INTEGER);
    CREATE TABLE moz_historyvisits (id INTEGER PRIMARY KEY, from_visit INTEGER,
        place_id INTEGER, visit_date INTEGER, visit_type INTEGER, session INTEGER);
    CREATE TABLE moz_places_metadata (id INTEGER PRIMARY KEY, place_id INTEGER NOT NULL,
        referrer_place_id INTEGER, created_at INTEGER NOT NULL DEFAULT 0,
        updated_at INTEGER NOT NULL DEFAULT 0, total_view_time INTEGER NOT NULL DEFAULT 0,
        typing_time INTEGER NOT NULL DEFAULT 0, key_presses INTEGER NOT NULL DEFAULT 0,
        scrolling_time INTEGER NOT NULL DEFAULT 0, scrolling_distance INTEGER NOT NULL DEFAULT 0,
        document_type INTEGER NOT NULL DEFAULT 0, search_query_id INTEGER);
    CREATE TABLE moz_places_metadata_search_queries (id INTEGER PRIMARY KEY,
        terms TEXT NOT NULL UNIQUE);
";

fn add_place(
    conn: &Connection,
    id: i64,
    url: &str,
    title: Option<&str>,
    hidden: i64,
    last: Option<i64>,
) {
    conn.execute(
        "INSERT INTO moz_places (id, url, title, hidden, last_visit_date) VALUES (?1, ?2, ?3, ?4, ?5)",
        rusqlite::params![id, url, title, hidden, last],
    )
    .unwrap();
}

fn add_place_visit(conn: &Connection, place: i64, date: i64, visit_type: i64) {
    conn.execute(
        "INSERT INTO moz_historyvisits (place_id, visit_date, visit_type) VALUES (?1, ?2, ?3)",
        rusqlite::params![place, date, visit_type],
    )
    .unwrap();
}

#[test]
fn firefox_desktop_quirks() {
    let dir = tempfile::tempdir().unwrap();
    let (path, c) = db(dir.path(), "places.sqlite", FIREFOX_SCHEMA);
    let mdn = "https://developer.mozilla.org/en-US/docs/Web/HTTP";
    add_place(
        &c,
        1,
        mdn,
        Some("HTTP | MDN"),
        0,
        Some(unix_us("2024-05-02T07:00:00Z")),
    );
    add_place_visit(&c, 1, unix_us("2024-05-01T08:00:00Z"), 1);
    add_place_visit(&c, 1, unix_us("2024-05-01T20:00:00Z"), 2);
    add_place_visit(&c, 1, unix_us("2024-05-02T07:00:00Z"), 9); // reload, next day
                                                                // A bookmark never visited: last_visit_date NULL, no visits.
    add_place(
        &c,
        2,
        "https://bookmarked.example/",
        Some("Bookmarked"),
        0,
        None,
    );
    // Hidden (a redirect source).
    add_place(
        &c,
        3,
        "http://redirect.example/",
        None,
        1,
        Some(unix_us("2024-05-01T09:00:00Z")),
    );
    add_place_visit(&c, 3, unix_us("2024-05-01T09:00:00Z"), 1);
    // Embedded, framed and downloaded: not pages the user looked at.
    add_place(&c, 4, "https://ads.example/frame", Some("Ad"), 0, None);
    add_place_visit(&c, 4, unix_us("2024-05-01T09:00:01Z"), 4);
    add_place(&c, 5, "https://framed.example/", Some("Framed"), 0, None);
    add_place_visit(&c, 5, unix_us("2024-05-01T09:00:02Z"), 8);
    add_place(&c, 6, "https://files.example/paper.pdf", None, 0, None);
    add_place_visit(&c, 6, unix_us("2024-05-01T09:00:03Z"), 7);
    // Results pages of well-known engines become searches.
    let ddg = "https://duckduckgo.com/?q=sqlite+window+functions&ia=web";
    add_place(
        &c,
        7,
        ddg,
        Some("sqlite window functions at DuckDuckGo"),
        0,
        None,
    );
    add_place_visit(&c, 7, unix_us("2024-05-01T10:00:00Z"), 2);
    let bing = "https://www.bing.com/search?q=tantivy%20tokenizer&form=QBLH";
    add_place(&c, 8, bing, Some("tantivy tokenizer - Search"), 0, None);
    add_place_visit(&c, 8, unix_us("2024-05-01T11:00:00Z"), 1);
    add_place(
        &c,
        9,
        "https://docs.rs/tantivy",
        Some("tantivy - Rust"),
        0,
        None,
    );
    add_place_visit(&c, 9, unix_us("2024-05-01T11:01:00Z"), 1);
    // Em space in the title.
    let cafe = "https://en.wikipedia.org/wiki/Caf%C3%A9";
    add_place(&c, 10, cafe, Some("Café\u{2003}— Wikipedia\u{a0}"), 0, None);
    add_place_visit(&c, 10, unix_us("2024-05-03T12:00:00Z"), 1);
    // Search metadata (milliseconds): the same search as the Bing visit, and one without a
    // results page.
    c.execute_batch(&format!(
        "INSERT INTO moz_places_metadata_search_queries VALUES (1, 'tantivy tokenizer');
         INSERT INTO moz_places_metadata_search_queries VALUES (2, 'firefox places schema');
         INSERT INTO moz_places_metadata (place_id, created_at, updated_at, search_query_id)
             VALUES (9, {}, {}, 1);
         INSERT INTO moz_places_metadata (place_id, created_at, updated_at, search_query_id)
             VALUES (1, 0, {}, 2);",
        unix_ms("2024-05-01T11:01:00Z"),
        unix_ms("2024-05-01T11:05:00Z"),
        unix_ms("2024-05-01T20:00:05Z"),
    ))
    .unwrap();
    drop(c);

    let (format, sessions) = import(&path);
    // moz_places_metadata present, but microsecond dates: desktop.
    assert_eq!(format, Format::Firefox);
    assert_shape(&sessions, HistorySource::Firefox);

    let mdn_days: Vec<_> = titled(&sessions, "HTTP | MDN")
        .iter()
        .map(|s| s.started_at.unwrap())
        .collect();
    assert_eq!(
        mdn_days,
        [t("2024-05-01T08:00:00Z"), t("2024-05-02T07:00:00Z")]
    );
    for url in [
        "https://bookmarked.example/",
        "http://redirect.example/",
        "https://ads.example/frame",
        "https://framed.example/",
        "https://files.example/paper.pdf",
    ] {
        assert!(
            with_url(&sessions, url).is_empty(),
            "{url} should be skipped"
        );
    }
    assert_eq!(
        one(&sessions, "Café — Wikipedia").url.as_deref(),
        Some(cafe)
    );
    assert_eq!(one(&sessions, "tantivy - Rust").kind, Kind::Visit);
    assert_eq!(with_kind(&sessions, Kind::Visit).len(), 4, "{sessions:#?}");

    let ddg_search = one(&sessions, "sqlite window functions");
    assert_eq!(ddg_search.kind, Kind::Search);
    assert_eq!(ddg_search.url.as_deref(), Some(ddg));
    // The metadata search and the Bing results page are one search; the URL one is kept.
    let tantivy = one(&sessions, "tantivy tokenizer");
    assert_eq!(tantivy.url.as_deref(), Some(bing));
    assert_eq!(tantivy.started_at, Some(t("2024-05-01T11:00:00Z")));
    // created_at 0: updated_at stands in.
    let schema = one(&sessions, "firefox places schema");
    assert_eq!(schema.kind, Kind::Search);
    assert_eq!(schema.url, None);
    assert_eq!(schema.started_at, Some(t("2024-05-01T20:00:05Z")));
    assert_eq!(with_kind(&sessions, Kind::Search).len(), 3, "{sessions:#?}");
}

#[test]
fn firefox_millisecond_dates_mean_android() {
    // Desktop-shaped tables (no Fenix columns, no metadata) but millisecond visit dates.
    let dir = tempfile::tempdir().unwrap();
    let schema = FIREFOX_SCHEMA
        .split("CREATE TABLE moz_places_metadata ")
        .next()
        .unwrap()
        .to_string();
    let (path, c) = db(dir.path(), "places.sqlite", &schema);
    add_place(&c, 1, "https://example.org/", Some("Example"), 0, None);
    add_place_visit(&c, 1, unix_ms("2023-07-04T05:06:07.089Z"), 1);
    drop(c);
    let (format, sessions) = import(&path);
    assert_eq!(format, Format::FirefoxAndroid);
    assert_eq!(sessions.len(), 1);
    assert_eq!(sessions[0].started_at, Some(t("2023-07-04T05:06:07.089Z")));
}

#[test]
fn fenix_search_and_results_page_are_one_search() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("places.sqlite");
    fs::copy(fixture("firefox_mobile.sqlite"), &path).unwrap();
    let c = Connection::open(&path).unwrap();
    let google = "https://www.google.com/search?q=memex&client=firefox-b-m";
    c.execute(
        "INSERT INTO moz_places (id, url, title, guid) VALUES (100, ?1, 'memex - Google Search', 'guid00000100')",
        [google],
    )
    .unwrap();
    c.execute(
        "INSERT INTO moz_historyvisits (is_local, place_id, visit_date, visit_type) VALUES (1, 100, ?1, 1)",
        [unix_ms("2022-02-12T08:57:10Z")],
    )
    .unwrap();
    drop(c);
    let (format, sessions) = import(&path);
    assert_eq!(format, Format::FirefoxAndroid);
    let memex = one(&sessions, "memex");
    assert_eq!(memex.kind, Kind::Search);
    assert_eq!(memex.url.as_deref(), Some(google));
    assert_eq!(memex.started_at, Some(t("2022-02-12T08:57:10Z")));
    assert_eq!(one(&sessions, "memex hackernews").url, None);
    assert_eq!(with_kind(&sessions, Kind::Search).len(), 2);
    assert_eq!(with_kind(&sessions, Kind::Visit).len(), 5);
}

#[test]
fn firefox_wal_is_read() {
    // places.sqlite is in WAL mode; recent visits sit in places.sqlite-wal until a checkpoint.
    let dir = tempfile::tempdir().unwrap();
    let (path, c) = db(
        dir.path(),
        "places.sqlite",
        &format!("PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0; {FIREFOX_SCHEMA}"),
    );
    add_place(&c, 1, "https://recent.example/", Some("Recent"), 0, None);
    add_place_visit(&c, 1, unix_us("2024-06-01T00:00:00Z"), 1);
    assert!(dir.path().join("places.sqlite-wal").is_file());
    // `c` stays open, as Firefox would be: the WAL is not checkpointed into the main file.
    let (_, sessions) = import(&path);
    assert_eq!(
        one(&sessions, "Recent").started_at,
        Some(t("2024-06-01T00:00:00Z"))
    );
    drop(c);
}

// ---------------------------------------------------------------------------------------------
// Safari
// ---------------------------------------------------------------------------------------------

const SAFARI_SCHEMA: &str = "
    CREATE TABLE history_items (id INTEGER PRIMARY KEY AUTOINCREMENT, url TEXT NOT NULL UNIQUE,
        domain_expansion TEXT NULL, visit_count INTEGER NOT NULL, daily_visit_counts BLOB NOT NULL,
        weekly_visit_counts BLOB NULL, autocomplete_triggers BLOB NULL,
        should_recompute_derived_visit_counts INTEGER NOT NULL, visit_count_score INTEGER NOT NULL);
    CREATE TABLE history_visits (id INTEGER PRIMARY KEY AUTOINCREMENT,
        history_item INTEGER NOT NULL REFERENCES history_items(id) ON DELETE CASCADE,
        visit_time REAL NOT NULL, title TEXT NULL, load_successful BOOLEAN NOT NULL DEFAULT 1,
        http_non_get BOOLEAN NOT NULL DEFAULT 0, synthesized BOOLEAN NOT NULL DEFAULT 0,
        redirect_source INTEGER NULL UNIQUE REFERENCES history_visits(id) ON DELETE CASCADE,
        redirect_destination INTEGER NULL UNIQUE REFERENCES history_visits(id) ON DELETE CASCADE,
        origin INTEGER NOT NULL DEFAULT 0, generation INTEGER NOT NULL DEFAULT 0,
        attributes INTEGER NOT NULL DEFAULT 0, score INTEGER NOT NULL DEFAULT 0);
";

fn add_item(conn: &Connection, id: i64, url: &str) {
    conn.execute(
        "INSERT INTO history_items (id, url, visit_count, daily_visit_counts,
             should_recompute_derived_visit_counts, visit_count_score)
         VALUES (?1, ?2, 1, x'', 0, 0)",
        rusqlite::params![id, url],
    )
    .unwrap();
}

fn add_safari_visit(conn: &Connection, id: i64, item: i64, time: &str, title: Option<&str>) {
    conn.execute(
        "INSERT INTO history_visits (id, history_item, visit_time, title) VALUES (?1, ?2, ?3, ?4)",
        rusqlite::params![id, item, cocoa(time), title],
    )
    .unwrap();
}

#[test]
fn safari_titles_are_per_visit() {
    let dir = tempfile::tempdir().unwrap();
    let (path, c) = db(dir.path(), "History.db", SAFARI_SCHEMA);
    let apple = "https://www.apple.com/safari/";
    add_item(&c, 1, apple);
    // Day one: untitled, empty and whitespace-only titles come first.
    add_safari_visit(&c, 1, 1, "2024-02-10T08:00:00.25Z", None);
    add_safari_visit(&c, 2, 1, "2024-02-10T08:05:00Z", Some(""));
    add_safari_visit(&c, 3, 1, "2024-02-10T08:06:00Z", Some("\u{a0}\u{2003} "));
    add_safari_visit(
        &c,
        4,
        1,
        "2024-02-10T09:00:00Z",
        Some("Safari\u{a0}- Apple"),
    );
    add_safari_visit(
        &c,
        5,
        1,
        "2024-02-10T10:00:00Z",
        Some("Safari - later title"),
    );
    // Day two: the page was renamed.
    add_safari_visit(&c, 6, 1, "2024-02-11T07:00:00Z", Some("Safari – renamed"));
    // A shortener that redirected to the article.
    add_item(&c, 2, "http://short.example/x");
    add_item(&c, 3, "https://long.example/article");
    add_safari_visit(&c, 7, 2, "2024-02-10T11:00:00Z", None);
    add_safari_visit(&c, 8, 3, "2024-02-10T11:00:00.5Z", Some("Long article"));
    c.execute_batch(
        "UPDATE history_visits SET redirect_destination = 8 WHERE id = 7;
         UPDATE history_visits SET redirect_source = 7 WHERE id = 8;",
    )
    .unwrap();
    // Never titled.
    add_item(&c, 4, "https://notitle.example/");
    add_safari_visit(&c, 9, 4, "2024-02-10T12:00:00Z", None);
    drop(c);

    let (format, sessions) = import(&path);
    assert_eq!(format, Format::Safari);
    assert_shape(&sessions, HistorySource::Safari);
    assert_eq!(sessions.len(), 4, "{sessions:#?}");
    let day_one = one(&sessions, "Safari - Apple");
    assert_eq!(day_one.url.as_deref(), Some(apple));
    // Started at the day's first visit, even though that one had no title.
    assert_eq!(day_one.started_at, Some(t("2024-02-10T08:00:00.25Z")));
    let day_two = one(&sessions, "Safari – renamed");
    assert_eq!(day_two.started_at, Some(t("2024-02-11T07:00:00Z")));
    assert!(with_url(&sessions, "http://short.example/x").is_empty());
    assert_eq!(
        one(&sessions, "Long article").started_at,
        Some(t("2024-02-10T11:00:00.5Z"))
    );
    assert_eq!(
        one(&sessions, "https://notitle.example/").url.as_deref(),
        Some("https://notitle.example/")
    );
}

// ---------------------------------------------------------------------------------------------
// Errors, hints, locks, zips
// ---------------------------------------------------------------------------------------------

fn assert_sqlite_error(err: &ImportError, path: &Path, needle: &str) {
    match err {
        ImportError::Sqlite { file, message } => {
            assert_eq!(file, &path.display().to_string());
            assert!(
                message.contains(needle),
                "{message:?} should contain {needle:?}"
            );
        }
        other => panic!("expected ImportError::Sqlite, got {other:?}"),
    }
    assert!(err.to_string().starts_with(&path.display().to_string()));
}

#[test]
fn corrupt_database_is_a_sqlite_error() {
    let dir = tempfile::tempdir().unwrap();
    // The SQLite magic, then noise.
    let path = dir.path().join("History");
    let mut bytes = b"SQLite format 3\0".to_vec();
    let mut x: u32 = 0x2545_f491;
    for _ in 0..8192 {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        bytes.push(x as u8);
    }
    fs::write(&path, &bytes).unwrap();
    let err = import_err(&path, None);
    assert_sqlite_error(&err, &path, "not a database");

    // A copy cut in half: the header is fine, the tables are not.
    let cut = dir.path().join("places.sqlite");
    let whole = fs::read(fixture("firefox.sqlite")).unwrap();
    fs::write(&cut, &whole[..whole.len() / 2]).unwrap();
    let err = import_err(&cut, None);
    assert_sqlite_error(&err, &cut, "malformed");
    assert!(err.to_string().contains("reading"), "{err}");

    // Not SQLite at all, with --format.
    let json = dir.path().join("conversations.json");
    fs::write(&json, "[]").unwrap();
    let err = import_err(&json, Some(Format::Chromium));
    assert_sqlite_error(&err, &json, "not a database");
}

#[test]
fn hint_must_match_the_tables() {
    let chrome = fixture("chrome.sqlite");
    let err = import_err(&chrome, Some(Format::Safari));
    assert_sqlite_error(&err, &chrome, "history_items and history_visits");
    assert!(err.to_string().contains("Chrome"), "{err}");
    let err = import_err(&fixture("safari.sqlite"), Some(Format::Firefox));
    assert!(
        err.to_string().contains("moz_places and moz_historyvisits"),
        "{err}"
    );

    // Matching hints work; within Firefox, the dates decide desktop or Android.
    let (format, _) = import_file(&InputFile::plain(&chrome), Some(Format::Chromium)).unwrap();
    assert_eq!(format, Format::Chromium);
    let fenix = InputFile::plain(&fixture("firefox_mobile.sqlite"));
    let (format, sessions) = import_file(&fenix, Some(Format::Firefox)).unwrap();
    assert_eq!(format, Format::FirefoxAndroid);
    assert_eq!(
        one(&sessions, "memex").started_at,
        Some(t("2022-02-12T08:57:20.378Z"))
    );
}

#[test]
fn other_sqlite_files_are_not_history() {
    let dir = tempfile::tempdir().unwrap();
    let (path, c) = db(
        dir.path(),
        "Cookies",
        "CREATE TABLE cookies (host_key TEXT, name TEXT, value TEXT);",
    );
    drop(c);
    assert!(matches!(
        import_err(&path, None),
        ImportError::UnknownFormat { file } if file == path.display().to_string()
    ));
    let err = import_err(&path, Some(Format::Chromium));
    assert_sqlite_error(&err, &path, "urls and visits");
    assert!(err.to_string().contains("cookies"), "{err}");
}

#[test]
fn locked_database_still_imports() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("History");
    fs::copy(fixture("chrome.sqlite"), &path).unwrap();
    // The browser is running: it holds an exclusive lock with a write in flight.
    let browser = Connection::open(&path).unwrap();
    browser
        .execute_batch("BEGIN EXCLUSIVE; UPDATE urls SET title = 'uncommitted' WHERE id = 37;")
        .unwrap();
    // Reading it in place would fail…
    let direct =
        Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    direct.busy_timeout(std::time::Duration::ZERO).unwrap();
    assert!(direct
        .query_row("SELECT count(*) FROM urls", [], |r| r.get::<_, i64>(0))
        .is_err());
    // …but the importer reads a copy.
    let (format, sessions) = import(&path);
    assert_eq!(format, Format::Chromium);
    assert_eq!(sessions.len(), 2);
    assert_eq!(one(&sessions, "Development Server").kind, Kind::Visit);
    browser.execute_batch("ROLLBACK").unwrap();
}

#[test]
fn sink_errors_abort_the_import() {
    let file = InputFile::plain(&fixture("firefox_mobile.sqlite"));
    let mut seen = 0;
    let result = parse_file(&file, None, &mut |_| {
        seen += 1;
        Err(ImportError::Store {
            file: "store".into(),
            message: "disk full".into(),
        })
    });
    assert!(matches!(result, Err(ImportError::Store { .. })));
    assert_eq!(seen, 1);
}

#[test]
fn databases_inside_a_zip() {
    let dir = tempfile::tempdir().unwrap();
    let zip_path = dir.path().join("browsers.zip");
    let entries = [
        (
            "BraveSoftware/Brave-Browser/Default/History",
            "chrome.sqlite",
        ),
        ("firefox/places.sqlite", "firefox.sqlite"),
        ("fenix/places.sqlite", "firefox_mobile.sqlite"),
        ("Safari/History.db", "safari.sqlite"),
    ];
    {
        let mut zip = zip::ZipWriter::new(fs::File::create(&zip_path).unwrap());
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        for (name, source) in entries {
            zip.start_file(name, options).unwrap();
            zip.write_all(&fs::read(fixture(source)).unwrap()).unwrap();
        }
        zip.finish().unwrap();
    }
    let collected = collect(std::slice::from_ref(&zip_path));
    assert!(collected.refused.is_empty(), "{:?}", collected.refused);
    assert_eq!(collected.files.len(), 4);
    let mut results = Vec::new();
    for file in &collected.files {
        let head = file.head(100).unwrap();
        assert_eq!(detect_from(file.inner_path(), &head), Detected::Sqlite);
        let (format, sessions) =
            import_file(file, None).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        results.push((file.inner_path().to_string(), format, sessions));
    }
    let find = |name: &str| {
        results
            .iter()
            .find(|(inner, _, _)| inner == name)
            .unwrap_or_else(|| panic!("{name} missing"))
    };
    let (_, format, sessions) = find("BraveSoftware/Brave-Browser/Default/History");
    assert_eq!(*format, Format::Chromium);
    assert_eq!(sessions.len(), 2);
    assert_shape(sessions, HistorySource::Brave);
    let (_, format, sessions) = find("firefox/places.sqlite");
    assert_eq!((*format, sessions.len()), (Format::Firefox, 2));
    let (_, format, sessions) = find("fenix/places.sqlite");
    assert_eq!((*format, sessions.len()), (Format::FirefoxAndroid, 7));
    let (_, format, sessions) = find("Safari/History.db");
    assert_eq!((*format, sessions.len()), (Format::Safari, 1));

    // Errors inside a zip name the entry.
    let bad_zip = dir.path().join("bad.zip");
    {
        let mut zip = zip::ZipWriter::new(fs::File::create(&bad_zip).unwrap());
        zip.start_file("Default/History", zip::write::SimpleFileOptions::default())
            .unwrap();
        let whole = fs::read(fixture("firefox.sqlite")).unwrap();
        zip.write_all(&whole[..whole.len() / 2]).unwrap();
        zip.finish().unwrap();
    }
    let collected = collect(std::slice::from_ref(&bad_zip));
    let file = collected.files.first().expect("one entry");
    let err = import_file(file, None).unwrap_err();
    assert!(matches!(err, ImportError::Sqlite { .. }), "{err:?}");
    assert_eq!(err.file(), format!("{}!Default/History", bad_zip.display()));
}

/// Scale check, run by hand: `cargo test … --test import_browser -- --ignored --nocapture`.
/// A million visits per browser should import in seconds, without quadratic queries.
#[test]
#[ignore]
fn large_databases_import_quickly() {
    let dir = tempfile::tempdir().unwrap();
    let urls = 200_000_i64;
    let visits_per_url = 5_i64;
    let start = t("2020-01-01T00:00:00Z");

    let (chrome, c) = db(dir.path(), "History", CHROME_SCHEMA);
    c.execute_batch("BEGIN").unwrap();
    for id in 1..=urls {
        let url = format!("https://site{}.example/page/{id}", id % 997);
        add_url(&c, id, &url, Some("A page"), 0, 0);
        for k in 0..visits_per_url {
            let at = start.timestamp_micros() + (id * 7 + k * 86_400 / 3) * 1_000_000;
            add_visit(&c, id, at + 11_644_473_600_000_000, LINK | WHOLE_CHAIN);
        }
        if id % 50 == 0 {
            c.execute(
                "INSERT INTO keyword_search_terms VALUES (1, ?1, 'query', 'query')",
                [id],
            )
            .unwrap();
        }
    }
    c.execute_batch("COMMIT").unwrap();
    drop(c);

    let (safari, c) = db(dir.path(), "History.db", SAFARI_SCHEMA);
    c.execute_batch("BEGIN; DROP INDEX IF EXISTS history_visits__last_visit;")
        .unwrap();
    let mut visit_id = 0;
    for id in 1..=urls {
        add_item(&c, id, &format!("https://site.example/{id}"));
        for k in 0..visits_per_url {
            visit_id += 1;
            let at = start + chrono::Duration::seconds(id * 7 + k * 86_400 / 3);
            let title = (k % 2 == 1).then_some("Title");
            add_safari_visit(&c, visit_id, id, &at.to_rfc3339(), title);
        }
    }
    c.execute_batch("COMMIT").unwrap();
    drop(c);

    for path in [chrome, safari] {
        let began = std::time::Instant::now();
        let mut n = 0_u64;
        parse_file(&InputFile::plain(&path), None, &mut |_| {
            n += 1;
            Ok(())
        })
        .unwrap();
        eprintln!("{}: {n} sessions in {:?}", path.display(), began.elapsed());
        assert!(began.elapsed() < std::time::Duration::from_secs(60));
    }
}
