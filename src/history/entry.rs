//! The normalised history record every importer produces: a [`Entry`] (a search, a page
//! visit, or a chat), and a [`Signal`] (text that describes the user without being a turn, such
//! as ChatGPT's hidden custom instructions or Claude's memories).

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// What the user was doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(rename = "HistoryKind"))]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Search,
    Chat,
    Visit,
}

impl Kind {
    pub const ALL: [Kind; 3] = [Kind::Search, Kind::Chat, Kind::Visit];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Search => "search",
            Kind::Chat => "chat",
            Kind::Visit => "visit",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Kind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Kind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| format!("unknown kind {s:?} (expected search, chat or visit)"))
    }
}

/// Where an entry came from: the product the user used, not the file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "kebab-case")]
pub enum HistorySource {
    GoogleSearch,
    Gemini,
    Chatgpt,
    Claude,
    Chrome,
    Brave,
    Edge,
    Firefox,
    Safari,
}

impl HistorySource {
    pub const ALL: [HistorySource; 9] = [
        HistorySource::GoogleSearch,
        HistorySource::Gemini,
        HistorySource::Chatgpt,
        HistorySource::Claude,
        HistorySource::Chrome,
        HistorySource::Brave,
        HistorySource::Edge,
        HistorySource::Firefox,
        HistorySource::Safari,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            HistorySource::GoogleSearch => "google-search",
            HistorySource::Gemini => "gemini",
            HistorySource::Chatgpt => "chatgpt",
            HistorySource::Claude => "claude",
            HistorySource::Chrome => "chrome",
            HistorySource::Brave => "brave",
            HistorySource::Edge => "edge",
            HistorySource::Firefox => "firefox",
            HistorySource::Safari => "safari",
        }
    }
}

impl fmt::Display for HistorySource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for HistorySource {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        HistorySource::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| {
                let names: Vec<_> = HistorySource::ALL.iter().map(|s| s.as_str()).collect();
                format!(
                    "unknown source {s:?} (expected one of {})",
                    names.join(", ")
                )
            })
    }
}

/// Who said a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TurnRole {
    User,
    Assistant,
}

impl TurnRole {
    pub fn as_str(self) -> &'static str {
        match self {
            TurnRole::User => "user",
            TurnRole::Assistant => "assistant",
        }
    }
}

/// One utterance of an entry. A search or a visit has one user turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Turn {
    pub role: TurnRole,
    pub text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at: Option<DateTime<Utc>>,
}

impl Turn {
    pub fn user(text: impl Into<String>, at: Option<DateTime<Utc>>) -> Self {
        Self {
            role: TurnRole::User,
            text: text.into(),
            at,
        }
    }

    pub fn assistant(text: impl Into<String>, at: Option<DateTime<Utc>>) -> Self {
        Self {
            role: TurnRole::Assistant,
            text: text.into(),
            at,
        }
    }
}

/// A normalised history entry, as importers produce it (before it has a store id).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub source: HistorySource,
    pub kind: Kind,
    /// The search query, page title or conversation title.
    pub title: String,
    /// The visited page or search-result URL, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The exporting product's own id (ChatGPT conversation id, Claude uuid, Gemini
    /// conversation id, …). A re-import with the same id but new content replaces the entry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub external_id: Option<String>,
    pub started_at: Option<DateTime<Utc>>,
    /// Caveats about `started_at`, e.g. a time-zone abbreviation in the export that is
    /// ambiguous. Recorded rather than silently guessed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_note: Option<String>,
    pub turns: Vec<Turn>,
}

impl Entry {
    /// The identity used for deduplication: a SHA-256 over everything the user would see.
    /// Importing the same export twice yields the same hashes, so it adds nothing.
    pub fn content_hash(&self) -> String {
        let mut h = Sha256::new();
        let mut field = |bytes: &[u8]| {
            h.update((bytes.len() as u64).to_le_bytes());
            h.update(bytes);
        };
        field(self.source.as_str().as_bytes());
        field(self.kind.as_str().as_bytes());
        field(self.title.as_bytes());
        field(self.url.as_deref().unwrap_or("").as_bytes());
        field(self.external_id.as_deref().unwrap_or("").as_bytes());
        field(
            &self
                .started_at
                .map(|t| t.timestamp_micros())
                .unwrap_or(i64::MIN)
                .to_le_bytes(),
        );
        for turn in &self.turns {
            field(turn.role.as_str().as_bytes());
            field(turn.text.as_bytes());
        }
        hex::encode(h.finalize())
    }

    /// All the text of the entry, title first, as it is indexed.
    pub fn full_text(&self) -> String {
        let mut out = String::with_capacity(
            self.title.len() + self.turns.iter().map(|t| t.text.len() + 1).sum::<usize>(),
        );
        out.push_str(&self.title);
        for turn in &self.turns {
            if turn.text == self.title {
                continue;
            }
            out.push('\n');
            out.push_str(&turn.text);
        }
        out
    }
}

/// What a [`Signal`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SignalKind {
    /// ChatGPT's custom instructions (`user_editable_context`).
    CustomInstructions,
    /// Claude's `memories.json`.
    Memory,
}

impl SignalKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SignalKind::CustomInstructions => "custom-instructions",
            SignalKind::Memory => "memory",
        }
    }
}

/// Text that describes the user rather than being something they did: kept for profiles,
/// never shown as a turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Signal {
    pub source: HistorySource,
    pub kind: SignalKind,
    pub text: String,
    pub at: Option<DateTime<Utc>>,
}

impl Signal {
    pub fn content_hash(&self) -> String {
        let mut h = Sha256::new();
        h.update(self.source.as_str());
        h.update([0]);
        h.update(self.kind.as_str());
        h.update([0]);
        h.update(&self.text);
        hex::encode(h.finalize())
    }
}

/// What an importer yields, one at a time, so that large exports stream.
#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    Entry(Entry),
    Signal(Signal),
    /// An element of the export that could not be read (a field of the wrong type, say): the
    /// rest of the file goes on, and the import report counts it and says why.
    Skipped {
        place: String,
        reason: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn search(q: &str) -> Entry {
        Entry {
            source: HistorySource::GoogleSearch,
            kind: Kind::Search,
            title: q.into(),
            url: None,
            external_id: None,
            started_at: DateTime::from_timestamp(1_600_000_000, 0),
            time_note: None,
            turns: vec![Turn::user(q, None)],
        }
    }

    #[test]
    fn hash_is_stable_and_sensitive() {
        let a = search("rust borrow checker");
        assert_eq!(
            a.content_hash(),
            search("rust borrow checker").content_hash()
        );
        assert_ne!(
            a.content_hash(),
            search("rust borrow checkers").content_hash()
        );
        let mut later = a.clone();
        later.started_at = DateTime::from_timestamp(1_600_000_001, 0);
        assert_ne!(a.content_hash(), later.content_hash());
    }

    #[test]
    fn hash_fields_do_not_run_together() {
        let mut a = search("ab");
        a.url = Some("c".into());
        let mut b = search("a");
        b.title = "a".into();
        b.url = Some("bc".into());
        b.turns = a.turns.clone();
        assert_ne!(a.content_hash(), b.content_hash());
    }

    #[test]
    fn names_round_trip() {
        for s in HistorySource::ALL {
            assert_eq!(s.as_str().parse::<HistorySource>().unwrap(), s);
        }
        for k in Kind::ALL {
            assert_eq!(k.as_str().parse::<Kind>().unwrap(), k);
        }
        assert!("bing".parse::<HistorySource>().is_err());
    }
}
