//! Importers: one module per export format, each turning a file into a stream of
//! [`Record`]s. Formats are detected from the file's name and first bytes; `--format` overrides.
//!
//! An importer never panics and never writes: it hands records to a sink, and the caller
//! (`History::import`) wraps each file in one store transaction, so a file that fails halfway
//! leaves nothing behind.

pub mod browser;
pub mod chatgpt;
pub mod claude;
pub mod gemini;
pub mod input;
pub mod json;
pub mod takeout_chrome;
pub mod takeout_search;
pub mod takeout_search_html;
pub mod time;

use std::fmt;
use std::path::Path;
use std::str::FromStr;

pub use input::{collect, scratch_copies_in, Collected, InputFile, LocalCopy};

use super::entry::Record;

/// Receives each record an importer produces. An error from the sink aborts the import.
pub type Sink<'a> = dyn FnMut(Record) -> Result<(), ImportError> + 'a;

/// Why a file could not be imported. Every variant names the file (and the place in it).
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("{file}: {place}: {}", clip(message))]
    Malformed {
        file: String,
        place: String,
        message: String,
    },
    #[error("{file}: {source}")]
    Io {
        file: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{file}: SQLite: {}", clip(message))]
    Sqlite { file: String, message: String },
    #[error("{file}: refused zip entry {entry:?}: {reason}")]
    UnsafeZip {
        file: String,
        entry: String,
        reason: String,
    },
    #[error("{file}: not a history export Rudder knows (name the format with --format)")]
    UnknownFormat { file: String },
    #[error("{file}: contains no history")]
    Empty { file: String },
    #[error("{file}: {}", clip(message))]
    Store { file: String, message: String },
}

/// Longest message an error shows. A parser's message can quote the offending value whole (a
/// 200 MB string in a JSON export), which would flood the terminal and the log.
pub const MAX_MESSAGE_CHARS: usize = 300;

/// `message` cut to [`MAX_MESSAGE_CHARS`] characters, saying how much was left out.
pub fn clip(message: &str) -> std::borrow::Cow<'_, str> {
    match message.char_indices().nth(MAX_MESSAGE_CHARS) {
        None => message.into(),
        Some((end, _)) => {
            format!("{}… ({} more bytes)", &message[..end], message.len() - end).into()
        }
    }
}

impl ImportError {
    /// The file (or `archive!entry`) the error is about.
    pub fn file(&self) -> &str {
        match self {
            ImportError::Malformed { file, .. }
            | ImportError::Io { file, .. }
            | ImportError::Sqlite { file, .. }
            | ImportError::UnknownFormat { file }
            | ImportError::Empty { file }
            | ImportError::Store { file, .. } => file,
            ImportError::UnsafeZip { file, .. } => file,
        }
    }
}

/// The export formats Rudder reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(rename = "HistoryFormat"))]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// Google Takeout, My Activity / Search, `MyActivity.json`.
    TakeoutSearch,
    /// Google Takeout, My Activity / Search, `MyActivity.html` (the Takeout default).
    TakeoutSearchHtml,
    /// Google Takeout, My Activity / Gemini Apps, `MyActivity.json`.
    Gemini,
    /// Google Takeout, `Chrome/BrowserHistory.json`.
    TakeoutChrome,
    /// ChatGPT `conversations.json` / `conversations-NNN.json`.
    Chatgpt,
    /// Claude `conversations.json`.
    Claude,
    /// Claude `memories.json`.
    ClaudeMemories,
    /// Chrome, Chromium, Brave or Edge `History` (SQLite).
    Chromium,
    /// Firefox desktop `places.sqlite`.
    Firefox,
    /// Firefox for Android (Fenix) `places.sqlite`.
    FirefoxAndroid,
    /// Safari `History.db`.
    Safari,
}

impl Format {
    pub const ALL: [Format; 11] = [
        Format::TakeoutSearch,
        Format::TakeoutSearchHtml,
        Format::Gemini,
        Format::TakeoutChrome,
        Format::Chatgpt,
        Format::Claude,
        Format::ClaudeMemories,
        Format::Chromium,
        Format::Firefox,
        Format::FirefoxAndroid,
        Format::Safari,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Format::TakeoutSearch => "takeout-search",
            Format::TakeoutSearchHtml => "takeout-search-html",
            Format::Gemini => "gemini",
            Format::TakeoutChrome => "takeout-chrome",
            Format::Chatgpt => "chatgpt",
            Format::Claude => "claude",
            Format::ClaudeMemories => "claude-memories",
            Format::Chromium => "chromium",
            Format::Firefox => "firefox",
            Format::FirefoxAndroid => "firefox-android",
            Format::Safari => "safari",
        }
    }

    fn is_sqlite(self) -> bool {
        matches!(
            self,
            Format::Chromium | Format::Firefox | Format::FirefoxAndroid | Format::Safari
        )
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Format::ALL
            .into_iter()
            .find(|f| f.as_str() == s)
            .ok_or_else(|| {
                let names: Vec<_> = Format::ALL.iter().map(|f| f.as_str()).collect();
                format!(
                    "unknown format {s:?} (expected one of {})",
                    names.join(", ")
                )
            })
    }
}

/// What detection found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detected {
    Format(Format),
    /// A SQLite database; which browser wrote it is decided when it is opened.
    Sqlite,
    /// Not history (a `users.json`, a YouTube activity file, an image in a Takeout…).
    NotHistory,
    /// An empty file, or an export with no entries (`[]`).
    Empty,
}

const HEAD_BYTES: usize = 256 << 10;

/// Guesses a file's format from its path and first bytes.
pub fn detect(file: &InputFile) -> Result<Detected, ImportError> {
    let head = file.head(HEAD_BYTES)?;
    Ok(detect_from(file.inner_path(), &head))
}

/// Detection on a path and the first bytes of the file (pure, for tests).
pub fn detect_from(path: &str, head: &[u8]) -> Detected {
    if head.starts_with(b"SQLite format 3\0") {
        return Detected::Sqlite;
    }
    let text = String::from_utf8_lossy(head);
    let text = text.trim_start_matches('\u{feff}').trim_start();
    let lower_path = path.to_lowercase();
    let file_name = lower_path.rsplit('/').next().unwrap_or(&lower_path);
    let has = |needle: &str| text.contains(needle);
    let compact: String = text
        .chars()
        .filter(|c| !c.is_whitespace())
        .take(8)
        .collect();
    if head.len() < HEAD_BYTES && matches!(compact.as_str(), "" | "[]" | "{}") {
        return Detected::Empty;
    }

    if text.starts_with('<') {
        let activity_html = has("outer-cell") || has("mdl-grid");
        if activity_html && !is_gemini_path(&lower_path) && !has("Gemini Apps") {
            return Detected::Format(Format::TakeoutSearchHtml);
        }
        return Detected::NotHistory;
    }
    if !(text.starts_with('[') || text.starts_with('{')) {
        return Detected::NotHistory;
    }
    if has("\"Browser History\"") {
        return Detected::Format(Format::TakeoutChrome);
    }
    if file_name == "memories.json" {
        return Detected::Format(Format::ClaudeMemories);
    }
    if has("\"mapping\"") && (has("\"current_node\"") || has("\"create_time\"")) {
        return Detected::Format(Format::Chatgpt);
    }
    if has("\"chat_messages\"") {
        return Detected::Format(Format::Claude);
    }
    let my_activity =
        has("\"title\"") && has("\"time\"") && (has("\"products\"") || has("\"header\""));
    if my_activity {
        if is_gemini_path(&lower_path)
            || has("\"Gemini Apps\"")
            || has("\"Prompted ")
            || has("gemini.google.com")
        {
            return Detected::Format(Format::Gemini);
        }
        if is_search_path(&lower_path) || takeout_search::looks_like_search(text) {
            return Detected::Format(Format::TakeoutSearch);
        }
    }
    Detected::NotHistory
}

fn is_gemini_path(lower_path: &str) -> bool {
    lower_path.contains("gemini")
}

/// Takeout localises folder names: "My Activity/Search", "Meine Aktivitäten/Google Suche", …
fn is_search_path(lower_path: &str) -> bool {
    let mut parts = lower_path.rsplit('/');
    parts.next();
    matches!(
        parts.next(),
        Some("search" | "google search" | "suche" | "google suche" | "google-suche")
    )
}

/// Parses one file with a known or detected format, handing records to `sink`. Returns the
/// format that was used (for SQLite: the browser the database turned out to come from).
pub fn parse_file(
    file: &InputFile,
    format: Option<Format>,
    sink: &mut Sink<'_>,
) -> Result<Format, ImportError> {
    parse_file_in(
        file,
        format,
        &std::env::temp_dir().join("rudder-import"),
        sink,
    )
}

/// [`parse_file`], with browser databases copied into `scratch` (the store's own folder when
/// [`crate::history::History`] imports, so nothing is written outside the data directory).
pub fn parse_file_in(
    file: &InputFile,
    format: Option<Format>,
    scratch: &Path,
    sink: &mut Sink<'_>,
) -> Result<Format, ImportError> {
    let format = match format {
        Some(f) if f.is_sqlite() => return browser::import(file, Some(f), scratch, sink),
        Some(f) => f,
        None => match detect(file)? {
            Detected::Format(f) => f,
            Detected::Sqlite => return browser::import(file, None, scratch, sink),
            Detected::NotHistory => {
                return Err(ImportError::UnknownFormat {
                    file: file.display().to_string(),
                })
            }
            Detected::Empty => {
                return Err(ImportError::Empty {
                    file: file.display().to_string(),
                })
            }
        },
    };
    match format {
        Format::TakeoutSearch => takeout_search::import(file, sink)?,
        Format::TakeoutSearchHtml => takeout_search_html::import(file, sink)?,
        Format::Gemini => gemini::import(file, sink)?,
        Format::TakeoutChrome => takeout_chrome::import(file, sink)?,
        Format::Chatgpt => chatgpt::import(file, sink)?,
        Format::Claude => claude::import(file, sink)?,
        Format::ClaudeMemories => claude::import_memories(file, sink)?,
        Format::Chromium | Format::Firefox | Format::FirefoxAndroid | Format::Safari => {
            unreachable!("SQLite formats return above")
        }
    }
    Ok(format)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_by_content_and_path() {
        let d = |p: &str, h: &str| detect_from(p, h.as_bytes());
        assert_eq!(
            d(
                "x/conversations.json",
                r#"[{"title":"t","create_time":1.0,"mapping":{}}]"#
            ),
            Detected::Format(Format::Chatgpt)
        );
        assert_eq!(
            d(
                "conversations.json",
                r#"[{"uuid":"u","name":"n","chat_messages":[]}]"#
            ),
            Detected::Format(Format::Claude)
        );
        assert_eq!(
            d("BrowserHistory.json", r#"{"Browser History":[]}"#),
            Detected::Format(Format::TakeoutChrome)
        );
        assert_eq!(
            d(
                "Takeout/Meine Aktivitäten/Google Suche/MeineAktivitäten.json",
                r#"[{"header":"Google Suche","title":"Gesucht nach: x","time":"2020-01-01T00:00:00Z","products":["Google Suche"]}]"#
            ),
            Detected::Format(Format::TakeoutSearch)
        );
        assert_eq!(
            d(
                "Takeout/My Activity/Gemini Apps/MyActivity.json",
                r#"[{"header":"Gemini Apps","title":"Prompted hi","time":"2024-01-01T00:00:00Z","products":["Gemini Apps"]}]"#
            ),
            Detected::Format(Format::Gemini)
        );
        assert_eq!(
            d(
                "Takeout/My Activity/YouTube/MyActivity.json",
                r#"[{"header":"YouTube","title":"Watched x","time":"2020-01-01T00:00:00Z","products":["YouTube"]}]"#
            ),
            Detected::NotHistory
        );
        assert_eq!(d("users.json", r#"[{"uuid":"u"}]"#), Detected::NotHistory);
        assert_eq!(d("History", "SQLite format 3\0rest"), Detected::Sqlite);
        assert_eq!(d("photo.jpg", "\u{ff}\u{d8}"), Detected::NotHistory);
        assert_eq!(d("MyActivity.json", " [ ]\n"), Detected::Empty);
        assert_eq!(d("conversations.json", ""), Detected::Empty);
    }

    #[test]
    fn format_names_round_trip() {
        for f in Format::ALL {
            assert_eq!(f.as_str().parse::<Format>().unwrap(), f);
        }
    }
}
