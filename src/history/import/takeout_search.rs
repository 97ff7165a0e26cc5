//! Google Takeout, My Activity / Search, JSON variant
//! (`Takeout/My Activity/Search/MyActivity.json`, German `Meine Aktivitäten/Google Suche/
//! MeineAktivitäten.json`).
//!
//! The file is one array of activity items, usually newest first:
//! `{header:"Search", title:"Searched for <q>" | "Visited <page>", titleUrl, time, products[],
//! activityControls[], subtitles?, details?, locationInfos?}`.
//!
//! Quirks handled here:
//! - Localised titles: English "Searched for " / "Visited ", German "Gesucht nach: " /
//!   "Besucht: " / "Aufgerufen: ". Any other title ("Viewed …", "Used Search", …) is skipped.
//! - `titleUrl` of a visit is usually a Google redirect (`https://www.google.com/url?q=<real>&…`):
//!   the real URL is stored, percent-decoded.
//! - `=` and `&` in URLs are written `\u003d` / `\u0026` (plain JSON escapes; serde decodes them).
//! - Items from before 2021 may lack `header`; they import all the same.
//! - `\u{a0}` / `\u{2003}` whitespace in titles becomes a plain space.
//! - A field of the wrong type in one item skips that field (or the item), not the file.
//!
//! Visits are deduplicated per (URL, UTC day) with [`VisitDays`]; searches are kept one per
//! item. This module also holds the helpers the other Takeout importers share.

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};

use chrono::{DateTime, NaiveDate, Utc};
use serde::de::{DeserializeOwned, Deserializer};
use serde::Deserialize;

use super::json::{for_each_array_item, Element};
use super::time::parse_rfc3339;
use super::{ImportError, InputFile, Sink};
use crate::history::entry::{Entry, HistorySource, Kind, Record, Turn};

pub fn import(file: &InputFile, sink: &mut Sink<'_>) -> Result<(), ImportError> {
    let mut visits = VisitDays::default();
    let mut skipped = 0usize;
    file.with_reader(|r| {
        for_each_array_item::<Element<Item>, _>(file, r, |index, item| {
            let item = match item.0 {
                Ok(item) => item,
                Err(reason) => return sink(Element::<Item>::skipped(index, reason)),
            };
            match item_to_session(item) {
                Some(s) if s.kind == Kind::Visit => visits.add(s, sink),
                Some(s) => sink(Record::Entry(s)),
                None => {
                    skipped += 1;
                    Ok(())
                }
            }
        })
    })?;
    visits.flush(sink)?;
    tracing::debug!(
        file = file.display(),
        skipped,
        "takeout search: items that are not searches or visits skipped"
    );
    Ok(())
}

/// Whether the first bytes of a My Activity JSON file look like Search activity.
///
/// The `header` decides when there is one (Chrome's and YouTube's My Activity also have
/// "Visited …" and "Searched for …" titles, under their own header). Items from before 2021 have
/// no header; then a search title decides.
pub fn looks_like_search(head: &str) -> bool {
    let headers = json_string_values(head, "header");
    if !headers.is_empty() {
        return headers.iter().any(|h| is_search_header(h));
    }
    json_string_values(head, "title")
        .iter()
        .any(|t| matches!(classify(&clean_text(t)), Some(Activity::Search(_))))
}

fn is_search_header(header: &str) -> bool {
    let h = clean_text(header).to_lowercase();
    matches!(
        h.as_str(),
        "search"
            | "google search"
            | "image search"
            | "video search"
            | "suche"
            | "google suche"
            | "google-suche"
            | "bildersuche"
            | "google bildersuche"
            | "videosuche"
    )
}

/// The string values of `"key": "…"` pairs in a (possibly cut-off) JSON text. Escapes other
/// than `\"` and `\\` are left as they are: this is for sniffing, not parsing.
fn json_string_values(text: &str, key: &str) -> Vec<String> {
    let needle = format!("\"{key}\"");
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(pos) = rest.find(&needle) {
        rest = &rest[pos + needle.len()..];
        let after = rest.trim_start();
        let Some(after) = after.strip_prefix(':') else {
            continue;
        };
        let Some(body) = after.trim_start().strip_prefix('"') else {
            continue;
        };
        let mut value = String::new();
        let mut chars = body.chars();
        let mut closed = false;
        while let Some(c) = chars.next() {
            match c {
                '"' => {
                    closed = true;
                    break;
                }
                '\\' => match chars.next() {
                    Some('"') => value.push('"'),
                    Some('\\') => value.push('\\'),
                    Some(other) => {
                        value.push('\\');
                        value.push(other);
                    }
                    None => break,
                },
                c => value.push(c),
            }
        }
        if closed {
            out.push(value);
        }
        if out.len() >= 64 {
            break;
        }
    }
    out
}

/// One activity item. Every field is optional and tolerant of a wrong type, so one odd item
/// does not fail the file.
#[derive(Debug, Default, Deserialize)]
struct Item {
    #[serde(default, deserialize_with = "lenient")]
    header: Option<String>,
    // Not lenient: the title is the search itself, so a title of the wrong type makes the item
    // unreadable, and the import report counts it and says why.
    #[serde(default)]
    title: Option<String>,
    #[serde(default, rename = "titleUrl", deserialize_with = "lenient")]
    title_url: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    time: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    products: Option<Vec<String>>,
}

fn item_to_session(item: Item) -> Option<Entry> {
    if is_other_product(
        item.header.as_deref(),
        item.products.as_deref().unwrap_or(&[]),
    ) {
        return None;
    }
    let title = clean_text(item.title.as_deref()?);
    let (at, time_note) = item_time(item.time.as_deref());
    match classify(&title)? {
        Activity::Search("") => None,
        Activity::Search(query) => Some(search_session(
            query,
            item.title_url.as_deref(),
            at,
            time_note,
        )),
        Activity::Visit(page) => {
            let url = real_url(item.title_url.as_deref()?);
            Some(visit_session(page, url, at, time_note))
        }
    }
}

/// Products whose My Activity uses the same title verbs ("Searched for" on YouTube, "Visited"
/// in Chrome): never Google Search history, even if such an item lands in this file.
pub(super) fn is_other_product(header: Option<&str>, products: &[String]) -> bool {
    let other = |s: &str| {
        let s = s.to_lowercase();
        s.contains("youtube") || s == "chrome" || s.contains("gemini")
    };
    header.is_some_and(other) || (!products.is_empty() && products.iter().all(|p| other(p)))
}

/// A time from the JSON `time` field, and a note when it is missing or unreadable.
fn item_time(raw: Option<&str>) -> (Option<DateTime<Utc>>, Option<String>) {
    match raw {
        None => (None, Some("the export gives no time for this item".into())),
        Some(raw) => match parse_rfc3339(raw) {
            Some(t) => (Some(t), None),
            None => (
                None,
                Some(format!("the export's time {raw:?} could not be read")),
            ),
        },
    }
}

/// What a My Activity title says the user did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Activity<'a> {
    Search(&'a str),
    Visit(&'a str),
}

/// Verb prefixes, per language. The German ones are written with a colon, but the colon is
/// optional here: Takeout's wording has changed over the years.
const SEARCH_VERBS: [&str; 2] = ["Searched for", "Gesucht nach"];
const VISIT_VERBS: [&str; 3] = ["Visited", "Besucht", "Aufgerufen"];

/// Splits a cleaned title ("Searched for rust", "Besucht: Seite") into the activity and its
/// object. `None` for titles that are not a search or a visit.
pub(super) fn classify(title: &str) -> Option<Activity<'_>> {
    for verb in SEARCH_VERBS {
        if let Some(rest) = strip_verb(title, verb) {
            return Some(Activity::Search(rest));
        }
    }
    for verb in VISIT_VERBS {
        if let Some(rest) = strip_verb(title, verb) {
            return Some(Activity::Visit(rest));
        }
    }
    None
}

/// `title` minus `verb` and the `:`/space after it; the verb must end at a word boundary
/// ("Visited" must not match "Visitedx").
fn strip_verb<'a>(title: &'a str, verb: &str) -> Option<&'a str> {
    let rest = title.strip_prefix(verb)?;
    let rest = match rest.strip_prefix(':') {
        Some(after_colon) => after_colon,
        None if rest.is_empty() || rest.starts_with(char::is_whitespace) => rest,
        None => return None,
    };
    Some(rest.trim())
}

/// A search entry: the query is the title and the one user turn.
pub(super) fn search_session(
    query: &str,
    url: Option<&str>,
    at: Option<DateTime<Utc>>,
    time_note: Option<String>,
) -> Entry {
    Entry {
        source: HistorySource::GoogleSearch,
        kind: Kind::Search,
        title: query.to_string(),
        url: url.map(|u| u.trim().to_string()).filter(|u| !u.is_empty()),
        external_id: None,
        started_at: at,
        time_note,
        turns: vec![Turn::user(query, at)],
    }
}

/// A visit entry from Google Search activity: the page title (or the URL when the title is
/// missing or is itself a URL) is the title and the one user turn.
pub(super) fn visit_session(
    page_title: &str,
    url: String,
    at: Option<DateTime<Utc>>,
    time_note: Option<String>,
) -> Entry {
    visit(HistorySource::GoogleSearch, page_title, url, at, time_note)
}

/// A visit entry for any source.
pub(super) fn visit(
    source: HistorySource,
    page_title: &str,
    url: String,
    at: Option<DateTime<Utc>>,
    time_note: Option<String>,
) -> Entry {
    let title = if page_title.is_empty() || looks_like_url(page_title) {
        url.clone()
    } else {
        page_title.to_string()
    };
    Entry {
        source,
        kind: Kind::Visit,
        title: title.clone(),
        url: Some(url),
        external_id: None,
        started_at: at,
        time_note,
        turns: vec![Turn::user(title, at)],
    }
}

fn looks_like_url(s: &str) -> bool {
    s.starts_with("http://") || s.starts_with("https://")
}

/// Plain, single-line text: no-break and em spaces (Takeout's `&nbsp;`/`&emsp;`) become plain
/// spaces, runs of whitespace one space, and the ends are trimmed.
pub(super) fn clean_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut pending_space = false;
    for c in s.chars() {
        if c.is_whitespace() || is_odd_space(c) {
            pending_space = !out.is_empty();
        } else {
            if pending_space {
                out.push(' ');
                pending_space = false;
            }
            out.push(c);
        }
    }
    out
}

/// Space-like characters Takeout writes that are not all `char::is_whitespace` (the zero-width
/// ones are not), so they are listed explicitly.
pub(super) fn is_odd_space(c: char) -> bool {
    matches!(
        c,
        '\u{a0}' | '\u{2000}'..='\u{200b}' | '\u{202f}' | '\u{205f}' | '\u{3000}' | '\u{feff}'
    )
}

/// The real destination of a Google redirect (`https://www.google.com/url?q=<url>&…` or
/// `…/url?…&url=<url>`), percent-decoded; any other URL unchanged (trimmed).
pub(super) fn real_url(url: &str) -> String {
    let url = url.trim();
    redirect_target(url).unwrap_or_else(|| url.to_string())
}

fn redirect_target(url: &str) -> Option<String> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))?;
    let (host, path) = rest.split_at(rest.find('/')?);
    let host = host.to_ascii_lowercase();
    let google = host.starts_with("google.") || host.starts_with("www.google.");
    if !google {
        return None;
    }
    let query = path.strip_prefix("/url?")?;
    let query = query.split('#').next().unwrap_or(query);
    let value = query.split('&').find_map(|pair| {
        pair.strip_prefix("q=")
            .or_else(|| pair.strip_prefix("url="))
    })?;
    // `+` is kept: the target URL is percent-encoded, a literal `+` in it is a real `+`.
    let target = percent_decode(value);
    looks_like_url(&target).then_some(target)
}

/// `%XX` sequences decoded as UTF-8 (lossily); malformed escapes are kept as written.
pub(super) fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'%' {
            let hex = |at: usize| bytes.get(at).and_then(|&c| (c as char).to_digit(16));
            if let (Some(h), Some(l)) = (hex(i + 1), hex(i + 2)) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Deduplicates visit entries per (URL, UTC day), keeping the day's first visit.
///
/// Exports are sorted by time (newest first, usually), so one day's visits are contiguous: they
/// are held until the day changes, then handed on. Memory is one day's visits plus a 64-bit
/// hash per emitted (URL, day). If a file is not sorted and a day comes back later, its repeat
/// visits to an already-emitted URL are dropped (the earliest of that later run is not
/// compared with the emitted one).
#[derive(Default)]
pub(super) struct VisitDays {
    day: Option<Option<NaiveDate>>,
    pending: Vec<Entry>,
    by_url: HashMap<String, usize>,
    emitted: HashSet<u64>,
}

impl VisitDays {
    pub(super) fn add(&mut self, visit: Entry, sink: &mut Sink<'_>) -> Result<(), ImportError> {
        let day = visit.started_at.map(|t| t.date_naive());
        if self.day != Some(day) {
            self.flush(sink)?;
            self.day = Some(day);
        }
        let url = visit.url.clone().unwrap_or_default();
        if self.emitted.contains(&day_key(&url, day)) {
            return Ok(());
        }
        match self.by_url.get(&url).and_then(|&i| self.pending.get_mut(i)) {
            Some(kept) => {
                // Keep the earliest time; prefer a real page title over the URL, else the
                // title that goes with the earliest visit.
                let url_titled = |s: &Entry| s.url.as_deref() == Some(s.title.as_str());
                let earlier = match (visit.started_at, kept.started_at) {
                    (Some(new), Some(old)) => new < old,
                    (Some(_), None) => true,
                    _ => false,
                };
                let title = match (url_titled(kept), url_titled(&visit)) {
                    (true, false) => visit.title.clone(),
                    (false, true) => kept.title.clone(),
                    _ if earlier => visit.title.clone(),
                    _ => kept.title.clone(),
                };
                if earlier {
                    *kept = visit;
                }
                if kept.title != title {
                    retitle(kept, title);
                }
            }
            None => {
                self.by_url.insert(url, self.pending.len());
                self.pending.push(visit);
            }
        }
        Ok(())
    }

    /// Hands on the held day. Call once more at the end of the file.
    pub(super) fn flush(&mut self, sink: &mut Sink<'_>) -> Result<(), ImportError> {
        self.by_url.clear();
        for visit in self.pending.drain(..) {
            let day = visit.started_at.map(|t| t.date_naive());
            self.emitted
                .insert(day_key(visit.url.as_deref().unwrap_or(""), day));
            sink(Record::Entry(visit))?;
        }
        Ok(())
    }
}

fn retitle(s: &mut Entry, title: String) {
    for turn in &mut s.turns {
        if turn.text == s.title {
            turn.text = title.clone();
        }
    }
    s.title = title;
}

fn day_key(url: &str, day: Option<NaiveDate>) -> u64 {
    let mut h = DefaultHasher::new();
    url.hash(&mut h);
    day.hash(&mut h);
    h.finish()
}

/// An array element that may not be what we expect: `None` instead of an error, so one odd
/// element is skipped rather than failing the file.
#[derive(Debug)]
pub(super) struct Lenient<T>(pub Option<T>);

impl<'de, T: DeserializeOwned> Deserialize<'de> for Lenient<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(d)?;
        Ok(Lenient(T::deserialize(value).ok()))
    }
}

/// `deserialize_with` for optional fields: a value of the wrong type reads as `None`.
pub(super) fn lenient<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    let value = serde_json::Value::deserialize(d)?;
    Ok(T::deserialize(value).ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn classifies_english_and_german_titles() {
        assert_eq!(
            classify("Searched for rust"),
            Some(Activity::Search("rust"))
        );
        assert_eq!(
            classify("Gesucht nach: wetter"),
            Some(Activity::Search("wetter"))
        );
        assert_eq!(
            classify("Gesucht nach wetter"),
            Some(Activity::Search("wetter"))
        );
        assert_eq!(
            classify("Visited Example"),
            Some(Activity::Visit("Example"))
        );
        assert_eq!(
            classify("Besucht: Beispiel"),
            Some(Activity::Visit("Beispiel"))
        );
        assert_eq!(
            classify("Aufgerufen: Seite"),
            Some(Activity::Visit("Seite"))
        );
        assert_eq!(classify("Visitedx"), None);
        assert_eq!(classify("Viewed Alerts"), None);
        assert_eq!(classify("Used Search"), None);
    }

    #[test]
    fn cleans_takeout_whitespace() {
        assert_eq!(
            clean_text("\u{a0}Searched for\u{a0}a\u{2003} b \u{202f}"),
            "Searched for a b"
        );
        assert_eq!(clean_text(""), "");
    }

    #[test]
    fn decodes_google_redirects() {
        assert_eq!(
            real_url("https://www.google.com/url?q=https://example.com/a%3Fb%3Dc%26d%3De&usg=X"),
            "https://example.com/a?b=c&d=e"
        );
        assert_eq!(
            real_url("https://www.google.de/url?sa=t&url=https%3A%2F%2Fbeispiel.de%2F%C3%A4&ved=1"),
            "https://beispiel.de/ä"
        );
        // Not a redirect, or a redirect to nothing usable: unchanged.
        assert_eq!(
            real_url(" https://example.com/url?q=x "),
            "https://example.com/url?q=x"
        );
        assert_eq!(
            real_url("https://www.google.com/url?q=notaurl"),
            "https://www.google.com/url?q=notaurl"
        );
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
        assert_eq!(percent_decode("%ff"), "\u{fffd}");
    }

    #[test]
    fn sniffs_search_activity() {
        assert!(looks_like_search(
            r#"[{"header" : "Search","title":"Searched for x"}]"#
        ));
        assert!(looks_like_search(
            r#"[{"header":"Google Suche","title":"Gesucht nach: x"}]"#
        ));
        // Pre-2021 items have no header: the title decides.
        assert!(looks_like_search(
            r#"[{"title":"Searched for x","time":"2019-01-01T00:00:00Z"}]"#
        ));
        assert!(looks_like_search(
            r#"[{"title":"Gesucht nach: x","time":"2019-01-01T00:00:00Z"}]"#
        ));
        // YouTube and Chrome My Activity use the same verbs under their own header.
        assert!(!looks_like_search(
            r#"[{"header":"YouTube","title":"Searched for cats"}]"#
        ));
        assert!(!looks_like_search(
            r#"[{"header":"Chrome","title":"Visited Example"}]"#
        ));
        assert!(!looks_like_search(r#"[{"title":"Visited Example"}]"#));
        assert!(!looks_like_search(r#"[{"header":"Sea"#));
    }

    #[test]
    fn a_wrong_title_makes_the_item_unreadable_other_fields_are_lenient() {
        let item: Element<Item> =
            serde_json::from_str(r#"{"title": 42, "time": "2020-01-01T00:00:00Z"}"#).unwrap();
        let reason = item.0.unwrap_err();
        assert!(
            reason.starts_with("title: invalid type: integer `42`"),
            "{reason}"
        );
        let item: Element<Item> =
            serde_json::from_str(r#"{"title": "Searched for x", "time": 7}"#).unwrap();
        let item = item.0.unwrap();
        assert_eq!(item.title.as_deref(), Some("Searched for x"));
        assert_eq!(item.time, None);
        let not_object: Element<Item> = serde_json::from_str("null").unwrap();
        assert!(not_object.0.is_err());
    }

    #[test]
    fn other_products_are_not_search() {
        assert!(is_other_product(Some("YouTube"), &[]));
        assert!(is_other_product(None, &["YouTube".into()]));
        assert!(!is_other_product(Some("Search"), &["Search".into()]));
        assert!(!is_other_product(None, &[]));
    }

    fn visit_at(url: &str, title: &str, secs: i64) -> Entry {
        let at = Utc.timestamp_opt(secs, 0).single();
        visit(HistorySource::Chrome, title, url.into(), at, None)
    }

    #[test]
    fn visit_days_keep_the_first_visit_of_each_day() {
        let mut out = Vec::new();
        let mut sink = |r: Record| {
            if let Record::Entry(s) = r {
                out.push(s);
            }
            Ok(())
        };
        let mut days = VisitDays::default();
        let day = 1_700_000_000; // 2023-11-14T22:13:20Z
                                 // Newest first, as Takeout writes it. The earliest visit has no title.
        days.add(
            visit_at("https://a.example/", "Later title", day + 600),
            &mut sink,
        )
        .unwrap();
        days.add(visit_at("https://b.example/", "B", day + 500), &mut sink)
            .unwrap();
        days.add(visit_at("https://a.example/", "", day), &mut sink)
            .unwrap();
        days.add(
            visit_at("https://a.example/", "A yesterday", day - 86_400),
            &mut sink,
        )
        .unwrap();
        days.flush(&mut sink).unwrap();
        assert_eq!(out.len(), 3);
        let a: Vec<_> = out
            .iter()
            .filter(|s| s.url.as_deref() == Some("https://a.example/"))
            .collect();
        assert_eq!(a.len(), 2);
        assert_eq!(a[0].started_at, Utc.timestamp_opt(day, 0).single());
        assert_eq!(a[0].title, "Later title", "a real title beats the URL");
        assert_eq!(a[0].turns[0].text, "Later title");
        assert_eq!(a[1].title, "A yesterday");
    }
}
