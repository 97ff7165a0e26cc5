//! Browser history databases (SQLite): Chrome / Chromium / Brave / Edge `History`, Firefox
//! `places.sqlite` (desktop and Android "Fenix") and Safari `History.db`.
//!
//! The database is always read from a private copy ([`InputFile::local_copy`]): browsers lock
//! their history while they run, and a zip entry has no path. The copy is opened read-only and
//! every SQLite error becomes [`ImportError::Sqlite`] saying what was being read, so a corrupt
//! or truncated file fails cleanly instead of panicking.
//!
//! Which browser wrote the file is decided by its tables (`urls`+`visits`: Chromium;
//! `moz_places`+`moz_historyvisits`: Firefox; `history_items`+`history_visits`: Safari), and a
//! `--format` hint that contradicts the tables is an error naming the tables it expected.
//!
//! Shared rules (each browser module lists its own quirks):
//! * Visits become one visit entry per (URL, UTC calendar day), started at the first visit
//!   that day; the grouping is done in SQL and rows are streamed to the sink.
//! * A visit to a results page of a well-known search engine (Google, Bing, DuckDuckGo,
//!   Ecosia, Startpage, with a `q=` parameter) becomes a search entry with the decoded query
//!   instead of a visit: the query says far more about the user than the results page title.
//! * Searches are deduplicated per (query, UTC day) within one database, so the browser's own
//!   search record (Chromium keyword terms, Firefox search metadata) and the results-page visit
//!   for the same search, or page 2 of the same results, do not yield two entries.
//! * Only `http`, `https` and `file` URLs are history; browser-internal pages (`chrome://`,
//!   `about:`, extensions, `data:` and `blob:` URLs, …) are skipped.
//! * Text is untrusted plain text: invalid UTF-8 is replaced, `\u{a0}` and `\u{2003}` become
//!   spaces, and titles are trimmed. A missing title falls back to the URL.

mod chromium;
mod firefox;
mod safari;

use std::collections::HashSet;
use std::fmt;
use std::path::Path;

use chrono::{DateTime, Utc};
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags, Row};

use super::{Format, ImportError, InputFile, Sink};
use crate::history::entry::{Entry, HistorySource, Kind, Record, Turn};

/// Imports one browser history database, returning which format it turned out to be.
pub fn import(
    file: &InputFile,
    hint: Option<Format>,
    scratch: &Path,
    sink: &mut Sink<'_>,
) -> Result<Format, ImportError> {
    let copy = file.local_copy(scratch)?;
    let db = Db::open(file, &copy.path)?;
    let tables = db.tables()?;
    let detected = Family::from_tables(&tables);
    if let Some(hint) = hint {
        let wanted = Family::of(hint).ok_or_else(|| ImportError::Sqlite {
            file: file.display().to_string(),
            message: format!("--format {hint} is not a browser database format"),
        })?;
        if detected != Some(wanted) {
            return Err(db.err(hint_mismatch(hint, wanted, detected, &tables)));
        }
    }
    let Some(family) = detected else {
        // Another SQLite file (a profile's Cookies, Favicons, …): not history.
        return Err(ImportError::UnknownFormat {
            file: file.display().to_string(),
        });
    };
    match family {
        Family::Chromium => {
            let mut out = Out::new(chromium_source(file), sink);
            chromium::import(&db, &tables, &mut out)?;
            Ok(Format::Chromium)
        }
        Family::Firefox => {
            let mut out = Out::new(HistorySource::Firefox, sink);
            // Desktop or Android is decided by the data, even under a `--format` naming the
            // other: reading milliseconds as microseconds would silently put every visit in 1970.
            firefox::import(&db, &tables, &mut out)
        }
        Family::Safari => {
            let mut out = Out::new(HistorySource::Safari, sink);
            safari::import(&db, &mut out)?;
            Ok(Format::Safari)
        }
    }
}

/// The three schema families; Firefox desktop and Android share one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    Chromium,
    Firefox,
    Safari,
}

impl Family {
    fn of(format: Format) -> Option<Family> {
        match format {
            Format::Chromium => Some(Family::Chromium),
            Format::Firefox | Format::FirefoxAndroid => Some(Family::Firefox),
            Format::Safari => Some(Family::Safari),
            _ => None,
        }
    }

    fn from_tables(tables: &HashSet<String>) -> Option<Family> {
        let has = |a: &str, b: &str| tables.contains(a) && tables.contains(b);
        if has("urls", "visits") {
            Some(Family::Chromium)
        } else if has("moz_places", "moz_historyvisits") {
            Some(Family::Firefox)
        } else if has("history_items", "history_visits") {
            Some(Family::Safari)
        } else {
            None
        }
    }

    fn tables(self) -> &'static str {
        match self {
            Family::Chromium => "urls and visits",
            Family::Firefox => "moz_places and moz_historyvisits",
            Family::Safari => "history_items and history_visits",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Family::Chromium => "Chrome/Chromium History",
            Family::Firefox => "Firefox places.sqlite",
            Family::Safari => "Safari History.db",
        }
    }
}

fn hint_mismatch(
    hint: Format,
    wanted: Family,
    detected: Option<Family>,
    tables: &HashSet<String>,
) -> String {
    let found = match detected {
        Some(other) => format!("this looks like a {} database instead", other.name()),
        None => {
            let mut names: Vec<&str> = tables.iter().map(String::as_str).collect();
            names.sort_unstable();
            let shown = names.iter().take(8).copied().collect::<Vec<_>>().join(", ");
            let more = if names.len() > 8 { ", …" } else { "" };
            if names.is_empty() {
                "this database has no tables".to_string()
            } else {
                format!("this database has only: {shown}{more}")
            }
        }
    };
    format!(
        "--format {hint} expects a database with the tables {}; {found}",
        wanted.tables()
    )
}

/// Chromium forks share the schema; the install path says which browser it was.
fn chromium_source(file: &InputFile) -> HistorySource {
    source_for_path(&format!("{}\n{}", file.display(), file.inner_path()))
}

fn source_for_path(path: &str) -> HistorySource {
    let p = path.replace('\\', "/").to_lowercase();
    if p.contains("bravesoftware") {
        HistorySource::Brave
    } else if [
        "microsoft/edge",
        "edge/user data",
        "microsoft edge",
        "microsoft-edge",
    ]
    .iter()
    .any(|needle| p.contains(needle))
    {
        HistorySource::Edge
    } else {
        HistorySource::Chrome
    }
}

/// A read-only connection to the private copy, and the file to name in errors.
struct Db<'f> {
    conn: Connection,
    file: &'f InputFile,
}

impl<'f> Db<'f> {
    fn open(file: &'f InputFile, path: &Path) -> Result<Self, ImportError> {
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags).map_err(|e| ImportError::Sqlite {
            file: file.display().to_string(),
            message: format!("opening the database: {e}"),
        })?;
        Ok(Self { conn, file })
    }

    fn err(&self, message: impl Into<String>) -> ImportError {
        ImportError::Sqlite {
            file: self.file.display().to_string(),
            message: message.into(),
        }
    }

    fn sql_err(&self, what: &str, e: impl fmt::Display) -> ImportError {
        self.err(format!("reading {what}: {e}"))
    }

    /// Lower-cased names of the tables and views.
    fn tables(&self) -> Result<HashSet<String>, ImportError> {
        let mut out = HashSet::new();
        self.each_row(
            "the list of tables",
            "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')",
            |row| {
                if let Some(name) = text(row, 0) {
                    out.insert(name.to_lowercase());
                }
                Ok(())
            },
        )?;
        Ok(out)
    }

    /// Lower-cased column names of `table` (empty if it does not exist).
    fn columns(&self, table: &str) -> Result<HashSet<String>, ImportError> {
        let what = format!("the columns of {table}");
        let mut stmt = self
            .conn
            .prepare("SELECT name FROM pragma_table_info(?1)")
            .map_err(|e| self.sql_err(&what, e))?;
        let mut rows = stmt.query([table]).map_err(|e| self.sql_err(&what, e))?;
        let mut out = HashSet::new();
        while let Some(row) = rows.next().map_err(|e| self.sql_err(&what, e))? {
            if let Some(name) = text(row, 0) {
                out.insert(name.to_lowercase());
            }
        }
        Ok(out)
    }

    /// Runs `sql` and hands each row to `f` as it is read (nothing is collected).
    fn each_row(
        &self,
        what: &str,
        sql: &str,
        mut f: impl FnMut(&Row<'_>) -> Result<(), ImportError>,
    ) -> Result<(), ImportError> {
        let mut stmt = self.conn.prepare(sql).map_err(|e| self.sql_err(what, e))?;
        let mut rows = stmt.query([]).map_err(|e| self.sql_err(what, e))?;
        while let Some(row) = rows.next().map_err(|e| self.sql_err(what, e))? {
            f(row)?;
        }
        Ok(())
    }
}

/// A column as text, leniently: invalid UTF-8 is replaced rather than failing the import.
fn text(row: &Row<'_>, idx: usize) -> Option<String> {
    match row.get_ref(idx).ok()? {
        ValueRef::Null => None,
        ValueRef::Text(b) | ValueRef::Blob(b) => Some(String::from_utf8_lossy(b).into_owned()),
        ValueRef::Integer(n) => Some(n.to_string()),
        ValueRef::Real(f) => Some(f.to_string()),
    }
}

/// A column as an integer (a REAL is truncated; text and NULL are "unknown").
fn int(row: &Row<'_>, idx: usize) -> Option<i64> {
    match row.get_ref(idx).ok()? {
        ValueRef::Integer(n) => Some(n),
        ValueRef::Real(f) if f.is_finite() => Some(f as i64),
        _ => None,
    }
}

/// A column as a float.
fn real(row: &Row<'_>, idx: usize) -> Option<f64> {
    match row.get_ref(idx).ok()? {
        ValueRef::Integer(n) => Some(n as f64),
        ValueRef::Real(f) if f.is_finite() => Some(f),
        _ => None,
    }
}

/// Plain spaces for the non-breaking and em spaces titles carry, trimmed.
fn clean(s: &str) -> String {
    s.replace(['\u{a0}', '\u{2003}'], " ").trim().to_string()
}

const NO_TIME: &str = "the browser recorded no usable time for this entry";

/// Builds entries for one database and hands them to the sink, deduplicating searches.
struct Out<'s, 'a> {
    source: HistorySource,
    sink: &'s mut Sink<'a>,
    /// (lower-cased query, UTC day) of the searches already emitted.
    searches: HashSet<(String, Option<i64>)>,
}

impl<'s, 'a> Out<'s, 'a> {
    fn new(source: HistorySource, sink: &'s mut Sink<'a>) -> Self {
        Self {
            source,
            sink,
            searches: HashSet::new(),
        }
    }

    /// A search entry, unless the same query was already emitted for that UTC day.
    fn search(
        &mut self,
        query: &str,
        url: Option<&str>,
        at: Option<DateTime<Utc>>,
    ) -> Result<(), ImportError> {
        let query = clean(query);
        if query.is_empty() {
            return Ok(());
        }
        let day = at.map(|t| t.timestamp().div_euclid(86_400));
        if !self.searches.insert((query.to_lowercase(), day)) {
            return Ok(());
        }
        let url = url.map(str::trim).filter(|u| !u.is_empty());
        self.emit(Kind::Search, query, url.map(str::to_string), at)
    }

    /// One (URL, day) group of visits: a search entry for a search-results page, else a
    /// visit entry. Non-web URLs are dropped.
    fn page(
        &mut self,
        url: Option<&str>,
        title: Option<&str>,
        at: Option<DateTime<Utc>>,
    ) -> Result<(), ImportError> {
        let Some(url) = url.map(str::trim).filter(|u| is_web_url(u)) else {
            return Ok(());
        };
        if let Some(query) = search_query(url) {
            return self.search(&query, Some(url), at);
        }
        let title = title.map(clean).filter(|t| !t.is_empty());
        let text = title.unwrap_or_else(|| url.to_string());
        self.emit(Kind::Visit, text, Some(url.to_string()), at)
    }

    fn emit(
        &mut self,
        kind: Kind,
        text: String,
        url: Option<String>,
        at: Option<DateTime<Utc>>,
    ) -> Result<(), ImportError> {
        let session = Entry {
            source: self.source,
            kind,
            title: text.clone(),
            url,
            external_id: None,
            started_at: at,
            time_note: at.is_none().then(|| NO_TIME.to_string()),
            turns: vec![Turn::user(text, at)],
        };
        (self.sink)(Record::Entry(session))
    }
}

fn is_web_url(url: &str) -> bool {
    let scheme = url.split_once(':').map(|(s, _)| s.to_ascii_lowercase());
    matches!(scheme.as_deref(), Some("http" | "https" | "file"))
}

/// The query of a results page of a well-known search engine, decoded, if `url` is one.
fn search_query(url: &str) -> Option<String> {
    let lower = url
        .get(..8)
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    let rest = if lower.starts_with("https://") {
        url.get(8..)?
    } else if lower.starts_with("http://") {
        url.get(7..)?
    } else {
        return None;
    };
    let rest = rest.split('#').next().unwrap_or(rest);
    let (authority, path_query) = match rest.find(['/', '?']) {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let host = authority.rsplit('@').next().unwrap_or(authority);
    let host = host.split(':').next().unwrap_or(host).to_ascii_lowercase();
    let (path, query) = path_query.split_once('?').unwrap_or((path_query, ""));
    let path = path.trim_end_matches('/');
    let under = |domain: &str| host == domain || host.ends_with(&format!(".{domain}"));

    let at_search =
        path == "/search" && (is_google(&host) || under("bing.com") || under("ecosia.org"));
    let q_engine = at_search || (under("duckduckgo.com") && matches!(path, "" | "/html" | "/lite"));
    let startpage =
        under("startpage.com") && matches!(path, "/search" | "/do/search" | "/sp/search");
    let params: &[&str] = if q_engine {
        &["q"]
    } else if startpage {
        &["q", "query"]
    } else {
        return None;
    };
    query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(k, _)| params.contains(k))
        .map(|(_, v)| clean(&percent_decode(v)))
        .filter(|q| !q.is_empty())
}

/// `google.com`, `www.google.de`, `google.co.uk`, …: a `google` label followed by a short
/// public suffix of one or two labels.
fn is_google(host: &str) -> bool {
    let labels: Vec<&str> = host.split('.').collect();
    let after_google = labels
        .iter()
        .position(|l| *l == "google")
        .and_then(|i| labels.get(i + 1..));
    after_google.is_some_and(|suffix| {
        (1..=2).contains(&suffix.len()) && suffix.iter().all(|l| (2..=3).contains(&l.len()))
    })
}

/// Form decoding of a query value: `+` is a space, `%XX` a byte; bad escapes stay literal.
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = bytes
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                if let Some(v) = hex {
                    out.push(v);
                    i += 3;
                    continue;
                }
                out.push(b'%');
            }
            _ => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_urls_of_known_engines() {
        let q = |u: &str| search_query(u);
        assert_eq!(
            q("https://www.google.com/search?q=rust+borrow%20checker&oq=rust").as_deref(),
            Some("rust borrow checker")
        );
        assert_eq!(
            q("https://www.google.co.uk/search?client=firefox&q=caf%C3%A9#ip=1").as_deref(),
            Some("café")
        );
        assert_eq!(
            q("https://google.de/search?q=a%3Db").as_deref(),
            Some("a=b")
        );
        assert_eq!(
            q("https://www.bing.com/search?q=sqlite+wal").as_deref(),
            Some("sqlite wal")
        );
        assert_eq!(
            q("https://duckduckgo.com/?q=tantivy&ia=web").as_deref(),
            Some("tantivy")
        );
        assert_eq!(
            q("https://html.duckduckgo.com/html/?q=x").as_deref(),
            Some("x")
        );
        assert_eq!(
            q("https://www.ecosia.org/search?method=index&q=trees").as_deref(),
            Some("trees")
        );
        assert_eq!(
            q("https://www.startpage.com/sp/search?query=privacy").as_deref(),
            Some("privacy")
        );
        // Not searches: other paths, other hosts, no or empty query, lookalike domains.
        assert_eq!(q("https://www.google.com/url?q=https://example.com"), None);
        assert_eq!(q("https://www.google.com/maps?q=berlin"), None);
        assert_eq!(q("https://www.google.com/search?tbm=isch"), None);
        assert_eq!(q("https://www.google.com/search?q=+"), None);
        assert_eq!(q("https://google.example.com/search?q=x"), None);
        assert_eq!(q("https://notbing.com/search?q=x"), None);
        assert_eq!(q("https://duckduckgo.com/ac/?q=x"), None);
        assert_eq!(q("https://example.com/search?q=x"), None);
        assert_eq!(q("ftp://www.google.com/search?q=x"), None);
        assert_eq!(q("https://www.google.com"), None);
    }

    #[test]
    fn percent_decoding_is_lenient() {
        assert_eq!(percent_decode("a%2Bb+c"), "a+b c");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
        assert_eq!(percent_decode("%FF"), "\u{fffd}");
    }

    #[test]
    fn chromium_forks_by_path() {
        assert_eq!(
            source_for_path(
                r"C:\Users\a\AppData\Local\BraveSoftware\Brave-Browser\User Data\Default\History"
            ),
            HistorySource::Brave
        );
        assert_eq!(
            source_for_path(r"C:\Users\a\AppData\Local\Microsoft\Edge\User Data\Default\History"),
            HistorySource::Edge
        );
        assert_eq!(
            source_for_path("/Users/a/Library/Application Support/Microsoft Edge/Default/History"),
            HistorySource::Edge
        );
        assert_eq!(
            source_for_path("/home/a/.config/microsoft-edge/Default/History"),
            HistorySource::Edge
        );
        assert_eq!(
            source_for_path("/home/a/.config/google-chrome/Default/History"),
            HistorySource::Chrome
        );
    }

    #[test]
    fn cleaning_and_schemes() {
        assert_eq!(clean("\u{a0} Goodbye\u{2003}Ponytail "), "Goodbye Ponytail");
        assert!(is_web_url("HTTPS://example.com"));
        assert!(is_web_url("file:///home/a/paper.pdf"));
        assert!(!is_web_url("chrome://settings/"));
        assert!(!is_web_url("about:blank"));
        assert!(!is_web_url("data:text/html,hi"));
        assert!(!is_web_url("no scheme"));
    }
}
