//! Google Takeout, My Activity / Search, HTML variant (`MyActivity.html`, the Takeout default;
//! German `MeineAktivitäten.html`).
//!
//! Each entry is a `<div class="outer-cell …">` holding a header cell (the product), a content
//! cell like `Searched for&nbsp;<a href="…">q</a><br>Feb 8, 2017, 12:32:36 AM UTC`, and a caption
//! (Products / Locations / Details, ignored).
//!
//! The file can be hundreds of MB, so it is never parsed as one document: the bytes are
//! streamed, split at each `<div class="outer-cell` boundary, and each cell's fragment is parsed
//! on its own (memory: one cell plus one read chunk).
//!
//! Quirks handled here:
//! - Localised verbs (see [`classify`]): "Searched for", "Visited", "Gesucht nach:",
//!   "Besucht:", "Aufgerufen:"; other entries ("Viewed …") are skipped.
//! - `&nbsp;`, `&emsp;` and the narrow no-break space before AM/PM become plain spaces.
//! - Visits link through Google redirects (`/url?q=<real>&…`): the real URL is stored.
//! - Dates in the exporter's locale: `Feb 8, 2017, 12:32:36 AM UTC` (US), `8 Feb 2017, …`
//!   (UK), `08.02.2017, 00:32:36 MEZ` and `8. Feb. 2017, 00:32:36 UTC` (German).
//! - Time zones: none (exports before 2018: taken as UTC), `UTC`/`GMT` (exact), an explicit
//!   `GMT+01:00`, or a local abbreviation at export time (`PST`, `MEZ`, …). Abbreviations are
//!   ambiguous (CST, IST, BST each name several zones), so a known one is mapped to its usual
//!   offset AND the entry's `time_note` says which offset was assumed; an unknown one is taken
//!   as UTC, with a note saying so. A missing zone on a date from 2018 on is noted too.
//! - Invalid UTF-8 fails the file, naming the cell and its byte offset; so does a file that
//!   ends inside a cell (truncated: no `</body>`/`</html>` after the last cell).

use std::io::{ErrorKind, Read};

use chrono::{DateTime, Datelike, FixedOffset, NaiveDate, NaiveDateTime, NaiveTime, TimeZone, Utc};
use scraper::{ElementRef, Html, Node};

use super::takeout_search::{
    classify, clean_text, is_odd_space, real_url, search_session, visit_session, Activity,
    VisitDays,
};
use super::{ImportError, InputFile, Sink};
use crate::history::entry::{Entry, Kind, Record};
use crate::html::cap_html_depth;

const CELL_MARKER: &[u8] = b"<div class=\"outer-cell";
const READ_CHUNK: usize = 64 << 10;
/// A search cell is about a kilobyte; anything this large is not a My Activity cell.
const MAX_CELL_BYTES: usize = 16 << 20;

pub fn import(file: &InputFile, sink: &mut Sink<'_>) -> Result<(), ImportError> {
    let mut visits = VisitDays::default();
    file.with_reader(|r| {
        split_cells(file, r, |index, offset, bytes, last| {
            let text = std::str::from_utf8(bytes).map_err(|e| {
                file.malformed(
                    format!(
                        "activity cell {index}, byte {}",
                        offset + e.valid_up_to() as u64
                    ),
                    "invalid UTF-8",
                )
            })?;
            if last && !has_document_end(text) {
                return Err(file.malformed(
                    format!("activity cell {index}, byte {offset}"),
                    "the file ends inside an activity cell (truncated?)",
                ));
            }
            let Some(cell) = parse_cell(text) else {
                return Ok(());
            };
            match cell_to_session(cell) {
                Some(s) if s.kind == Kind::Visit => visits.add(s, sink),
                Some(s) => sink(Record::Entry(s)),
                None => Ok(()),
            }
        })
    })?;
    visits.flush(sink)
}

fn has_document_end(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    lower.contains("</body") || lower.contains("</html")
}

/// Streams `reader`, calling `on_cell(index, byte_offset, bytes, is_last)` for each
/// `outer-cell` (from its marker to the next one, or to the end of the file for the last).
/// What precedes the first cell (head, styles) is dropped as it is read.
fn split_cells(
    file: &InputFile,
    reader: &mut dyn Read,
    mut on_cell: impl FnMut(usize, u64, &[u8], bool) -> Result<(), ImportError>,
) -> Result<usize, ImportError> {
    let mut buf: Vec<u8> = Vec::with_capacity(2 * READ_CHUNK);
    let mut buf_start: u64 = 0; // file offset of buf[0]
    let mut in_cell = false; // buf starts with a cell marker
    let mut scan = 0; // where the marker search resumes in buf
    let mut index = 0;
    let mut chunk = vec![0u8; READ_CHUNK];
    loop {
        let n = loop {
            match reader.read(&mut chunk) {
                Ok(n) => break n,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(file.io_error(e)),
            }
        };
        buf.extend_from_slice(chunk.get(..n).unwrap_or_default());
        loop {
            // Inside a cell, buf[0..] is its own marker: search after it.
            let from = if in_cell { scan.max(1) } else { scan };
            match find(buf.get(from..).unwrap_or_default(), CELL_MARKER) {
                Some(p) => {
                    let p = from + p;
                    if in_cell {
                        on_cell(index, buf_start, buf.get(..p).unwrap_or_default(), false)?;
                        index += 1;
                    }
                    buf.drain(..p);
                    buf_start += p as u64;
                    in_cell = true;
                    scan = 1;
                }
                None => {
                    // A marker may straddle the next read: rescan the tail.
                    scan = from.max(buf.len().saturating_sub(CELL_MARKER.len() - 1));
                    break;
                }
            }
        }
        if n == 0 {
            if in_cell {
                on_cell(index, buf_start, &buf, true)?;
                index += 1;
            }
            return Ok(index);
        }
        if !in_cell {
            let drop = buf.len().saturating_sub(CELL_MARKER.len() - 1);
            buf.drain(..drop);
            buf_start += drop as u64;
            scan = 0;
        }
        if buf.len() > MAX_CELL_BYTES {
            return Err(file.malformed(
                format!("activity cell {index}, byte {buf_start}"),
                format!("a cell larger than {MAX_CELL_BYTES} bytes; not a My Activity page?"),
            ));
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// What one cell says, before interpretation.
#[derive(Debug, Default, PartialEq)]
struct Cell {
    /// The header cell's text: the product ("Search", "Google Suche").
    header: String,
    /// The content cell's lines (split at `<br>`), cleaned.
    lines: Vec<String>,
    /// The first link in the content cell.
    href: Option<String>,
}

fn parse_cell(html: &str) -> Option<Cell> {
    let fragment = Html::parse_fragment(&cap_html_depth(html));
    let root = fragment.root_element();
    let has_class = |el: &ElementRef<'_>, class: &str| el.value().classes().any(|c| c == class);
    let header = root
        .descendent_elements()
        .find(|el| has_class(el, "header-cell"))
        .map(|el| clean_text(&el.text().collect::<String>()))
        .unwrap_or_default();
    let content = root
        .descendent_elements()
        .find(|el| has_class(el, "content-cell"))?;
    let mut cell = Cell {
        header,
        ..Cell::default()
    };
    let mut line = String::new();
    walk(content, |step| match step {
        Walk::Open(Node::Text(t)) => line.push_str(t),
        Walk::Open(Node::Element(e)) if e.name() == "br" => {
            cell.lines.push(clean_text(&line));
            line.clear();
        }
        Walk::Open(Node::Element(e)) if e.name() == "a" && cell.href.is_none() => {
            cell.href = e.attr("href").map(str::to_string);
        }
        _ => {}
    });
    cell.lines.push(clean_text(&line));
    cell.lines.retain(|l| !l.is_empty());
    Some(cell)
}

fn cell_to_session(cell: Cell) -> Option<Entry> {
    if super::takeout_search::is_other_product(Some(&cell.header), &[]) {
        return None;
    }
    let (first, rest) = cell.lines.split_first()?;
    let activity = classify(first)?;
    // The date is the last line that reads as one (a few entries carry extra lines).
    let time = rest.iter().rev().find_map(|l| parse_html_time(l));
    let (at, time_note) = match time {
        Some((t, note)) => (Some(t), note),
        None => (
            None,
            Some("the export gives no readable time for this entry".into()),
        ),
    };
    match activity {
        Activity::Search("") => None,
        Activity::Search(query) => Some(search_session(query, cell.href.as_deref(), at, time_note)),
        Activity::Visit(page) => {
            let url = real_url(cell.href.as_deref()?);
            Some(visit_session(page, url, at, time_note))
        }
    }
}

/// One step of a depth-first walk over a subtree.
pub(super) enum Walk<'a> {
    Open(&'a Node),
    Close(&'a Node),
}

/// Walks the descendants of `root` (not `root` itself) without recursion, so deeply nested
/// untrusted HTML cannot overflow the stack.
pub(super) fn walk<'a>(root: ElementRef<'a>, mut f: impl FnMut(Walk<'a>)) {
    let Some(mut current) = root.first_child() else {
        return;
    };
    loop {
        f(Walk::Open(current.value()));
        if let Some(child) = current.first_child() {
            current = child;
            continue;
        }
        loop {
            f(Walk::Close(current.value()));
            if let Some(next) = current.next_sibling() {
                current = next;
                break;
            }
            match current.parent() {
                Some(parent) if parent.id() != root.id() => current = parent,
                _ => return,
            }
        }
    }
}

/// Converts an HTML fragment (a Gemini answer) to plain text: block elements become line
/// breaks, list items start with "- ", `<pre>` keeps its layout, scripts and styles are dropped,
/// and odd spaces become plain ones.
pub(super) fn html_to_text(html: &str) -> String {
    let fragment = Html::parse_fragment(&cap_html_depth(html));
    let mut out = String::with_capacity(html.len() / 2);
    let mut pre = 0usize;
    let mut hidden = 0usize;
    walk(fragment.root_element(), |step| match step {
        Walk::Open(Node::Text(t)) if hidden == 0 => {
            if pre > 0 {
                out.extend(t.chars().map(|c| if is_odd_space(c) { ' ' } else { c }));
            } else {
                push_flowing(&mut out, t);
            }
        }
        Walk::Open(Node::Element(e)) => match e.name() {
            "script" | "style" | "template" | "noscript" => hidden += 1,
            "br" => out.push('\n'),
            "li" => {
                new_line(&mut out);
                out.push_str("- ");
            }
            "pre" => {
                pre += 1;
                new_line(&mut out);
            }
            "td" | "th" if !out.is_empty() && !out.ends_with(['\n', ' ']) => out.push(' '),
            name if is_block(name) => new_line(&mut out),
            _ => {}
        },
        Walk::Close(Node::Element(e)) => match e.name() {
            "script" | "style" | "template" | "noscript" => hidden = hidden.saturating_sub(1),
            "pre" => {
                pre = pre.saturating_sub(1);
                new_line(&mut out);
                out.push('\n');
            }
            "p" | "table" | "ul" | "ol" | "blockquote" | "h1" | "h2" | "h3" | "h4" | "h5"
            | "h6" => {
                new_line(&mut out);
                out.push('\n');
            }
            name if is_block(name) => new_line(&mut out),
            _ => {}
        },
        _ => {}
    });
    tidy_lines(&out)
}

fn is_block(name: &str) -> bool {
    matches!(
        name,
        "p" | "div"
            | "ul"
            | "ol"
            | "li"
            | "h1"
            | "h2"
            | "h3"
            | "h4"
            | "h5"
            | "h6"
            | "blockquote"
            | "table"
            | "tr"
            | "hr"
            | "section"
            | "article"
            | "header"
            | "footer"
            | "dl"
            | "dt"
            | "dd"
    )
}

fn new_line(out: &mut String) {
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
}

/// Appends text outside `<pre>`: runs of whitespace collapse to one space, and no space starts
/// a line.
fn push_flowing(out: &mut String, text: &str) {
    for c in text.chars() {
        if c.is_whitespace() || is_odd_space(c) {
            if !out.is_empty() && !out.ends_with([' ', '\n']) {
                out.push(' ');
            }
        } else {
            out.push(c);
        }
    }
}

/// Trailing spaces off every line, at most one blank line in a row, no blank ends.
fn tidy_lines(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank_run = 0;
    for line in text.lines() {
        let line = line.trim_end();
        if line.trim().is_empty() {
            blank_run += 1;
            continue;
        }
        if !out.is_empty() {
            out.push_str(if blank_run > 0 { "\n\n" } else { "\n" });
        }
        blank_run = 0;
        out.push_str(line);
    }
    out
}

/// Reads a My Activity HTML date line. Returns the time in UTC and a note when the time zone
/// had to be assumed; `None` when the line is not a date.
fn parse_html_time(line: &str) -> Option<(DateTime<Utc>, Option<String>)> {
    let normalised: String = line
        .chars()
        .map(|c| if is_odd_space(c) || c == ',' { ' ' } else { c })
        .collect();
    let tokens: Vec<&str> = normalised.split_whitespace().collect();
    let time_at = tokens.iter().position(|t| parse_clock(t).is_some())?;
    let (date_tokens, rest) = tokens.split_at(time_at);
    let (clock, rest) = rest.split_first()?;
    let (mut hour, minute, second) = parse_clock(clock)?;
    let mut rest = rest;
    if let Some((first, after)) = rest.split_first() {
        let meridiem = first.to_ascii_lowercase().replace('.', "");
        if meridiem == "am" || meridiem == "pm" {
            if !(1..=12).contains(&hour) {
                return None;
            }
            hour = match (meridiem.as_str(), hour) {
                ("am", 12) => 0,
                ("pm", 12) => 12,
                ("pm", h) => h + 12,
                (_, h) => h,
            };
            rest = after;
        }
    }
    let date = parse_date(date_tokens)?;
    let naive = NaiveDateTime::new(date, NaiveTime::from_hms_opt(hour, minute, second)?);
    let zone = rest.join(" ");
    let (offset, note) = resolve_zone(&zone, date);
    let local = FixedOffset::east_opt(offset)?
        .from_local_datetime(&naive)
        .single()?;
    Some((local.with_timezone(&Utc), note))
}

/// `H:MM` or `H:MM:SS`.
fn parse_clock(token: &str) -> Option<(u32, u32, u32)> {
    let mut parts = token.split(':');
    let num = |p: Option<&str>| -> Option<u32> {
        let p = p?;
        (!p.is_empty() && p.len() <= 2 && p.bytes().all(|b| b.is_ascii_digit()))
            .then(|| p.parse().ok())
            .flatten()
    };
    let h = num(parts.next())?;
    let m = num(parts.next())?;
    let s = match parts.next() {
        Some(p) => num(Some(p))?,
        None => 0,
    };
    if parts.next().is_some() || h > 23 || m > 59 || s > 60 {
        return None;
    }
    Some((h, m, s.min(59)))
}

/// The date before the time: `Feb 8 2017`, `8 Feb 2017`, `8. Feb. 2017`, `08.02.2017`,
/// `2017-02-08` or `2/8/2017` (US order) — commas already removed.
fn parse_date(tokens: &[&str]) -> Option<NaiveDate> {
    if let [single] = tokens {
        let numbers = |sep: char| -> Option<Vec<u32>> {
            single
                .trim_end_matches('.')
                .split(sep)
                .map(|p| p.parse().ok())
                .collect()
        };
        if single.contains('.') {
            if let Some(n) = numbers('.') {
                if let [d, m, y] = n[..] {
                    return ymd(y, m, d);
                }
            }
        }
        if single.contains('-') {
            if let Some(n) = numbers('-') {
                if let [y, m, d] = n[..] {
                    return ymd(y, m, d);
                }
            }
        }
        if single.contains('/') {
            if let Some(n) = numbers('/') {
                if let [a, b, y] = n[..] {
                    // US order unless the first number cannot be a month.
                    return if a > 12 { ymd(y, b, a) } else { ymd(y, a, b) };
                }
            }
        }
        return None;
    }
    let mut month = None;
    let mut numbers = Vec::new();
    for token in tokens {
        let token = token.trim_end_matches('.');
        if token.is_empty() {
            continue;
        }
        if token.bytes().all(|b| b.is_ascii_digit()) {
            numbers.push(token.parse::<u32>().ok()?);
        } else if month.is_none() {
            month = Some(month_number(token)?);
        } else {
            return None;
        }
    }
    let month = month?;
    match numbers[..] {
        [a, b] if a > 31 => ymd(a, month, b),
        [a, b] => ymd(b, month, a),
        _ => None,
    }
}

fn ymd(y: u32, m: u32, d: u32) -> Option<NaiveDate> {
    // Two-digit years (some locales) are 20xx: My Activity starts in 2005.
    let y = if y < 100 { y + 2000 } else { y };
    NaiveDate::from_ymd_opt(i32::try_from(y).ok()?, m, d)
}

/// English and German month names and abbreviations.
fn month_number(name: &str) -> Option<u32> {
    let lower = name.to_lowercase();
    let prefix: String = lower.chars().take(3).collect();
    let m = match prefix.as_str() {
        "jan" | "jän" => 1,
        "feb" => 2,
        "mar" | "mär" | "mrz" => 3,
        "apr" => 4,
        "may" | "mai" => 5,
        "jun" => 6,
        "jul" => 7,
        "aug" => 8,
        "sep" => 9,
        "oct" | "okt" => 10,
        "nov" => 11,
        "dec" | "dez" => 12,
        _ => return None,
    };
    Some(m)
}

/// Offset in seconds east of UTC for the zone text after the time, and the note to record.
fn resolve_zone(zone: &str, date: NaiveDate) -> (i32, Option<String>) {
    let zone = zone.trim();
    if zone.is_empty() {
        // Exports from before 2018 wrote no zone, and those times are UTC. Later a zone is
        // expected, so its absence is worth a note.
        let note = (date.year() >= 2018)
            .then(|| "the export gives no time zone for this entry; assumed UTC".to_string());
        return (0, note);
    }
    let upper = zone.to_ascii_uppercase();
    if matches!(upper.as_str(), "UTC" | "GMT" | "Z" | "UT") {
        return (0, None);
    }
    if let Some(offset) = explicit_offset(&upper) {
        return (offset, None);
    }
    match abbreviation_offset(&upper) {
        Some(offset) => (
            offset,
            Some(format!(
                "the export gives the time zone as {zone:?}, an ambiguous abbreviation; \
                 assumed UTC{}",
                format_offset(offset)
            )),
        ),
        None => (
            0,
            Some(format!(
                "the export gives an unknown time zone {zone:?}; assumed UTC"
            )),
        ),
    }
}

/// `GMT+01:00`, `UTC-5`, `GMT+5:30`, `UTC+0100`.
fn explicit_offset(upper: &str) -> Option<i32> {
    let rest = upper
        .strip_prefix("GMT")
        .or_else(|| upper.strip_prefix("UTC"))?;
    let mut chars = rest.chars();
    let sign = match chars.next()? {
        '+' => 1,
        '-' | '\u{2212}' => -1,
        _ => return None,
    };
    let rest = chars.as_str();
    let (h, m) = match rest.split_once(':') {
        Some((h, m)) => (h.parse::<i32>().ok()?, m.parse::<i32>().ok()?),
        None if rest.len() == 4 => (rest.get(..2)?.parse().ok()?, rest.get(2..)?.parse().ok()?),
        None => (rest.parse::<i32>().ok()?, 0),
    };
    if h > 14 || m > 59 {
        return None;
    }
    Some(sign * (h * 3600 + m * 60))
}

/// The usual offset of common abbreviations (English and German). Several are ambiguous
/// (CST: US Central or China; IST: India, Ireland or Israel; BST: British Summer Time or
/// Bangladesh): the first-named meaning is taken, and the caller records that it was assumed.
fn abbreviation_offset(upper: &str) -> Option<i32> {
    let hours = |h: f64| (h * 3600.0) as i32;
    let offset = match upper {
        "WET" | "WEZ" => 0,
        "BST" | "WEST" | "WESZ" | "CET" | "MEZ" | "WAT" => hours(1.0),
        "CEST" | "MESZ" | "EET" | "OEZ" | "SAST" | "CAT" => hours(2.0),
        "EEST" | "OESZ" | "MSK" | "EAT" | "TRT" => hours(3.0),
        "GST" => hours(4.0),
        "PKT" => hours(5.0),
        "IST" => hours(5.5),
        "ICT" | "WIB" => hours(7.0),
        "HKT" | "SGT" | "AWST" | "PHT" => hours(8.0),
        "JST" | "KST" => hours(9.0),
        "ACST" => hours(9.5),
        "AEST" => hours(10.0),
        "ACDT" => hours(10.5),
        "AEDT" => hours(11.0),
        "NZST" => hours(12.0),
        "NZDT" => hours(13.0),
        "HST" => hours(-10.0),
        "AKST" => hours(-9.0),
        "AKDT" | "PST" => hours(-8.0),
        "PDT" | "MST" => hours(-7.0),
        "MDT" | "CST" => hours(-6.0),
        "CDT" | "EST" => hours(-5.0),
        "EDT" | "AST" => hours(-4.0),
        "ADT" | "BRT" | "ART" => hours(-3.0),
        "NST" => hours(-3.5),
        "NDT" => hours(-2.5),
        _ => return None,
    };
    Some(offset)
}

fn format_offset(seconds: i32) -> String {
    let sign = if seconds < 0 { '-' } else { '+' };
    let s = seconds.unsigned_abs();
    format!("{sign}{:02}:{:02}", s / 3600, s % 3600 / 60)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn utc(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn reads_english_and_german_dates() {
        let t = |s: &str| parse_html_time(s).unwrap();
        assert_eq!(
            t("Feb 8, 2017, 12:32:36 AM"),
            (utc("2017-02-08T00:32:36Z"), None)
        );
        assert_eq!(
            t("Feb 8, 2017, 12:32:36\u{202f}PM UTC"),
            (utc("2017-02-08T12:32:36Z"), None)
        );
        assert_eq!(
            t("8 Feb 2017, 00:32:36 GMT"),
            (utc("2017-02-08T00:32:36Z"), None)
        );
        assert_eq!(
            t("8. Feb. 2017, 00:32:36 UTC"),
            (utc("2017-02-08T00:32:36Z"), None)
        );
        assert_eq!(
            t("8. März 2021, 14:00:00 UTC"),
            (utc("2021-03-08T14:00:00Z"), None)
        );
        assert_eq!(
            t("2021-03-08 14:00:00 GMT+01:00"),
            (utc("2021-03-08T13:00:00Z"), None)
        );
        let (at, note) = t("08.02.2017, 00:32:36 MEZ");
        assert_eq!(at, utc("2017-02-07T23:32:36Z"));
        let note = note.unwrap();
        assert!(
            note.contains("\"MEZ\"") && note.contains("+01:00"),
            "{note}"
        );
        let (at, note) = t("Dec 13, 2021, 3:04:05 AM PST");
        assert_eq!(at, utc("2021-12-13T11:04:05Z"));
        assert!(note.unwrap().contains("-08:00"));
        let (at, note) = t("Dec 13, 2021, 3:04:05 AM XYZT");
        assert_eq!(at, utc("2021-12-13T03:04:05Z"));
        assert!(note.unwrap().contains("unknown time zone \"XYZT\""));
        // No zone after 2018: assumed UTC, and said so.
        let (_, note) = t("Dec 13, 2021, 3:04:05 AM");
        assert!(note.unwrap().contains("no time zone"));
        assert_eq!(parse_html_time("Products:"), None);
        assert_eq!(parse_html_time("Feb 30, 2017, 1:00:00 AM"), None);
        assert_eq!(parse_html_time("Feb 8, 2017, 13:00:00 PM"), None);
        assert_eq!(parse_html_time("99:99:99"), None);
    }

    #[test]
    fn explicit_offsets() {
        assert_eq!(explicit_offset("GMT+01:00"), Some(3600));
        assert_eq!(explicit_offset("UTC-5"), Some(-5 * 3600));
        assert_eq!(explicit_offset("GMT+0530"), Some(5 * 3600 + 1800));
        assert_eq!(explicit_offset("GMT+99"), None);
        assert_eq!(explicit_offset("GMT"), None);
    }

    #[test]
    fn parses_a_cell() {
        let cell = parse_cell(
            r#"<div class="outer-cell mdl-cell"><div class="mdl-grid"><div class="header-cell"><p>Search<br></p></div><div class="content-cell mdl-cell--6-col">Searched for&nbsp;<a href="https://www.google.com/search?q=fish+%26+chips">fish &amp; chips</a><br>Feb 8, 2017, 12:32:36 AM UTC<br></div><div class="content-cell mdl-typography--caption"><b>Products:</b><br>&emsp;Search<br></div></div></div>"#,
        )
        .unwrap();
        assert_eq!(cell.header, "Search");
        assert_eq!(
            cell.lines,
            ["Searched for fish & chips", "Feb 8, 2017, 12:32:36 AM UTC"]
        );
        assert_eq!(
            cell.href.as_deref(),
            Some("https://www.google.com/search?q=fish+%26+chips")
        );
        assert!(parse_cell("<div class=\"outer-cell\">no content</div>").is_none());
    }

    #[test]
    fn youtube_cells_are_not_search() {
        let cell = Cell {
            header: "YouTube".into(),
            lines: vec![
                "Searched for cats".into(),
                "Feb 8, 2017, 12:32:36 AM".into(),
            ],
            href: None,
        };
        assert!(cell_to_session(cell).is_none());
    }

    #[test]
    fn html_answers_become_plain_text() {
        let text = html_to_text(
            "<p>Intro&nbsp;text,\n   wrapped.</p><ul><li>one</li><li><b>two</b></li></ul>\
             <pre>fn main() {\n    x();\n}</pre><script>alert(1)</script><p>End&emsp;.</p>",
        );
        assert_eq!(
            text,
            "Intro text, wrapped.\n\n- one\n- two\n\nfn main() {\n    x();\n}\n\nEnd ."
        );
        // Deep nesting does not recurse.
        let deep = "<div>".repeat(20_000) + "x" + &"</div>".repeat(20_000);
        assert_eq!(html_to_text(&deep), "x");
    }

    fn split(content: &[u8]) -> Result<Vec<(usize, u64, String, bool)>, ImportError> {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(content).unwrap();
        let input = InputFile::plain(f.path());
        let mut cells = Vec::new();
        input.with_reader(|r| {
            split_cells(&input, r, |i, off, b, last| {
                cells.push((i, off, String::from_utf8_lossy(b).into_owned(), last));
                Ok(())
            })
        })?;
        Ok(cells)
    }

    #[test]
    fn splits_cells_across_read_boundaries() {
        // Make the second marker straddle the 64 KiB read boundary.
        let head = "<html><head><style>".to_string() + &"x".repeat(READ_CHUNK - 40) + "</style>";
        let first = "<div class=\"outer-cell\">one</div>";
        let doc = format!("{head}{first}<div class=\"outer-cell\">two</div></body></html>");
        let cells = split(doc.as_bytes()).unwrap();
        assert_eq!(cells.len(), 2);
        assert_eq!(cells[0].2, first);
        assert_eq!(cells[0].1, head.len() as u64);
        assert!(!cells[0].3);
        assert!(cells[1].2.starts_with("<div class=\"outer-cell\">two"));
        assert!(cells[1].3);
        assert!(split(b"<html>no cells</html>").unwrap().is_empty());
    }
}
