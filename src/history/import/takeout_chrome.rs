//! Google Takeout, Chrome browser history (`Takeout/Chrome/BrowserHistory.json`).
//!
//! `{"Browser History": [{title, url, time_usec, page_transition, client_id, favicon_url}, …]}`,
//! streamed item by item (other top-level keys are skipped).
//!
//! - One visit entry per (URL, UTC day) within the file, started at the day's first visit
//!   (see [`VisitDays`]); the title is the page title, or the URL when there is none.
//! - `time_usec` is microseconds since the Unix epoch; a number, but a string of digits or a
//!   float is accepted too. A missing or zero time imports without a time, with a note.
//! - Only `http` and `https` URLs are history: `chrome://` and `chrome-extension://` pages
//!   are the browser itself, `file://` paths are local files (not web research, and private),
//!   and `about:`, `data:`, `javascript:` carry no page. They are skipped.
//! - `page_transition` is not used: a reload or a redirect is still a visit to the page, and
//!   repeated visits collapse per day anyway.

use serde::Deserialize;

use super::json::{for_each_field_item, Element};
use super::takeout_search::{clean_text, lenient, visit, VisitDays};
use super::time::from_unix_micros;
use super::{ImportError, InputFile, Sink};
use crate::history::entry::HistorySource;

const KEY: &str = "Browser History";

pub fn import(file: &InputFile, sink: &mut Sink<'_>) -> Result<(), ImportError> {
    let mut visits = VisitDays::default();
    file.with_reader(|r| {
        for_each_field_item::<Element<Item>, _>(file, r, KEY, |index, item| {
            let item = match item.0 {
                Ok(item) => item,
                Err(reason) => return sink(Element::<Item>::skipped(index, reason)),
            };
            let Some(url) = item.url.as_deref().map(str::trim).filter(|u| is_web(u)) else {
                return Ok(());
            };
            let at = item
                .time_usec
                .as_ref()
                .and_then(Micros::to_i64)
                .and_then(from_unix_micros);
            let note = at
                .is_none()
                .then(|| "the export gives no readable time for this visit".to_string());
            let title = clean_text(item.title.as_deref().unwrap_or_default());
            visits.add(
                visit(HistorySource::Chrome, &title, url.to_string(), at, note),
                sink,
            )
        })
    })?;
    visits.flush(sink)
}

#[derive(Debug, Default, Deserialize)]
struct Item {
    #[serde(default, deserialize_with = "lenient")]
    title: Option<String>,
    // Not lenient: the URL is the visit itself; one of the wrong type is reported, not lost.
    #[serde(default)]
    url: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    time_usec: Option<Micros>,
}

/// `time_usec` as Chrome writes it (an integer), or as a string or float.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Micros {
    Int(i64),
    Float(f64),
    Text(String),
}

impl Micros {
    fn to_i64(&self) -> Option<i64> {
        match self {
            Micros::Int(i) => Some(*i),
            Micros::Float(f) if f.is_finite() && f.abs() < 9.0e18 => Some(*f as i64),
            Micros::Float(_) => None,
            Micros::Text(s) => s.trim().parse().ok(),
        }
    }
}

/// Web pages only; see the module doc for why the rest is skipped.
fn is_web(url: &str) -> bool {
    let lower = url.get(..8).unwrap_or(url).to_ascii_lowercase();
    lower.starts_with("http://") || lower.starts_with("https://")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_web_urls() {
        assert!(is_web("https://example.com/"));
        assert!(is_web("HTTP://example.com/"));
        assert!(!is_web("chrome://settings/"));
        assert!(!is_web("file:///home/u/a.pdf"));
        assert!(!is_web("about:blank"));
        assert!(!is_web("ht"));
        assert!(!is_web("é"));
    }

    #[test]
    fn time_usec_in_any_shape() {
        let m = |json: &str| {
            serde_json::from_str::<Element<Item>>(json)
                .unwrap()
                .0
                .unwrap()
                .time_usec
                .and_then(|m| m.to_i64())
        };
        assert_eq!(
            m(r#"{"time_usec": 1700000000000000}"#),
            Some(1_700_000_000_000_000)
        );
        assert_eq!(
            m(r#"{"time_usec": "1700000000000000"}"#),
            Some(1_700_000_000_000_000)
        );
        assert_eq!(m(r#"{"time_usec": 1.7e15}"#), Some(1_700_000_000_000_000));
        assert_eq!(m(r#"{"time_usec": null}"#), None);
        assert_eq!(m(r#"{"time_usec": [1]}"#), None);
        assert_eq!(m(r#"{}"#), None);
    }
}
