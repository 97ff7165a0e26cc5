//! Chrome, Chromium, Brave and Edge `History`.
//!
//! Tables: `urls(id, url, title, visit_count, typed_count, last_visit_time, hidden)`,
//! `visits(id, url → urls.id, visit_time, from_visit, transition, …)`,
//! `keyword_search_terms(keyword_id, url_id → urls.id, term, normalized_term)`.
//!
//! Quirks:
//! * Times are microseconds since 1601-01-01 UTC; 0 means unknown.
//! * `transition & 0xFF` is the core transition. Subframe navigations (AUTO_SUBFRAME = 3,
//!   MANUAL_SUBFRAME = 4) are not pages the user looked at, and KEYWORD_GENERATED (10) is the
//!   implicit visit to a search engine's home page; all three are skipped, as Chrome's own
//!   history page does.
//! * The high bits are qualifiers. A visit that starts or continues a redirect chain without
//!   ending it (CHAIN_END, 0x20000000, unset while CHAIN_START or a REDIRECT bit is set) is a
//!   hop such as a link shortener, not a page that was shown: skipped. A visit with no chain
//!   bits at all is kept.
//! * `urls.hidden = 1` marks URLs Chrome never shows in history: skipped.
//! * `keyword_search_terms` is what the user typed into the omnibox for a search engine. Each
//!   term becomes a search entry per UTC day its results page was visited (or one at the
//!   URL's `last_visit_time` once the visits have expired), and those results pages are not
//!   also emitted as visits. Old databases name the normalised column `lower_term` instead of
//!   `normalized_term`; it is only used when `term` is empty.
//! * `title` is per URL (the latest one), so every day of a URL carries the same title.

use std::collections::HashSet;

use super::{int, text, Db, Out};
use crate::history::import::time::from_webkit_micros;
use crate::history::import::ImportError;

/// Microseconds between 1601-01-01 and 1970-01-01.
const WEBKIT_TO_UNIX_US: i64 = 11_644_473_600_000_000;
const DAY_US: i64 = 86_400_000_000;

/// Chrome's notion of a visit the user saw (see the module doc).
const VISIBLE: &str = "WITH vis AS (
    SELECT v.url AS url_id, v.visit_time AS t
    FROM visits v
    WHERE v.visit_time > 0
      AND (v.transition & 255) NOT IN (3, 4, 10)
      AND NOT ((v.transition & 0x20000000) = 0 AND (v.transition & 0xD0000000) != 0)
)";

pub(super) fn import(
    db: &Db<'_>,
    tables: &HashSet<String>,
    out: &mut Out<'_, '_>,
) -> Result<(), ImportError> {
    let url_columns = db.columns("urls")?;
    let hidden = if url_columns.contains("hidden") {
        "COALESCE(u.hidden, 0) = 0"
    } else {
        "1"
    };
    let keywords = tables.contains("keyword_search_terms");

    let day = format!("(vis.t - {WEBKIT_TO_UNIX_US}) / {DAY_US}");

    if keywords {
        let columns = db.columns("keyword_search_terms")?;
        let term = if columns.contains("term") {
            "k.term"
        } else {
            "NULL"
        };
        // Old databases: `lower_term`; newer: `normalized_term`.
        let fallback = ["normalized_term", "lower_term"]
            .into_iter()
            .find(|c| columns.contains(*c))
            .map_or("NULL".to_string(), |c| format!("k.{c}"));
        let sql = format!(
            "{VISIBLE}
            SELECT {term}, {fallback}, u.url,
                   COALESCE(MIN(vis.t), u.last_visit_time) AS first
            FROM keyword_search_terms k
            JOIN urls u ON u.id = k.url_id
            LEFT JOIN vis ON vis.url_id = u.id
            GROUP BY k.keyword_id, k.url_id, {day}
            ORDER BY first, k.url_id"
        );
        db.each_row("keyword_search_terms", &sql, |row| {
            let term = text(row, 0)
                .filter(|t| !t.trim().is_empty())
                .or_else(|| text(row, 1));
            let Some(term) = term else { return Ok(()) };
            let url = text(row, 2);
            let at = int(row, 3).and_then(from_webkit_micros);
            out.search(&term, url.as_deref(), at)
        })?;
    }

    let not_search = if keywords {
        "AND u.id NOT IN (SELECT url_id FROM keyword_search_terms WHERE url_id IS NOT NULL)"
    } else {
        ""
    };
    let sql = format!(
        "{VISIBLE}
        SELECT u.url, u.title, MIN(vis.t) AS first
        FROM vis
        JOIN urls u ON u.id = vis.url_id
        WHERE {hidden} {not_search}
        GROUP BY u.id, {day}
        ORDER BY first, u.id"
    );
    db.each_row("urls and visits", &sql, |row| {
        let at = int(row, 2).and_then(from_webkit_micros);
        out.page(text(row, 0).as_deref(), text(row, 1).as_deref(), at)
    })
}
