//! Firefox `places.sqlite`, desktop and Android ("Fenix", application-services schema).
//!
//! Tables: `moz_places(id, url, title, hidden, …)`, `moz_historyvisits(id, from_visit,
//! place_id, visit_date, visit_type, …)`, and for searches `moz_places_metadata(place_id,
//! search_query_id, created_at, updated_at, …)` + `moz_places_metadata_search_queries(id,
//! term)` (desktop names the column `terms`).
//!
//! Quirks:
//! * Desktop `visit_date` is microseconds since 1970, Fenix uses milliseconds. Fenix is
//!   recognised by its schema (`moz_places.last_visit_date_local`) or by the magnitude of the
//!   visit dates (below 10^14, which as microseconds would be before 1974). The presence of
//!   `moz_places_metadata` is NOT a Fenix signal: desktop Firefox has had it since version 85.
//! * `last_visit_date` is NULL for places never visited (bookmarks, redirect stubs); they have
//!   no rows in `moz_historyvisits` and so yield nothing (the column itself is never read, as
//!   Fenix does not have it).
//! * `hidden = 1` marks redirect sources and embedded frames: skipped.
//! * `visit_type` EMBED (4), DOWNLOAD (7), FRAMED_LINK (8) and Fenix's UPDATE_PLACE (10) are
//!   not pages the user looked at: skipped. Redirect targets (5, 6) are kept.
//! * Search metadata (`moz_places_metadata` joined to its search queries, times in
//!   milliseconds on both platforms) becomes one search entry per (term, UTC day), with no
//!   URL: the metadata row is the page the search led to, not the results page. It is read
//!   after the visits, so when the results page of the same search was visited that day, the
//!   entry built from the results URL (which has the URL) is the one kept.

use std::collections::HashSet;

use super::{int, text, Db, Out};
use crate::history::import::time::{from_unix_micros, from_unix_millis};
use crate::history::import::{Format, ImportError};

const DAY_MS: i64 = 86_400_000;
const DAY_US: i64 = 86_400_000_000;
/// Visit dates below this are milliseconds (as microseconds they would be before 1974).
const MILLIS_BELOW: i64 = 100_000_000_000_000;

pub(super) fn import(
    db: &Db<'_>,
    tables: &HashSet<String>,
    out: &mut Out<'_, '_>,
) -> Result<Format, ImportError> {
    let place_columns = db.columns("moz_places")?;
    let mut max_date = None;
    db.each_row(
        "moz_historyvisits dates",
        "SELECT MAX(visit_date) FROM moz_historyvisits WHERE visit_date > 0",
        |row| {
            max_date = int(row, 0);
            Ok(())
        },
    )?;
    let android = place_columns.contains("last_visit_date_local")
        || max_date.is_some_and(|max| max < MILLIS_BELOW);

    let (day, convert): (i64, fn(i64) -> _) = if android {
        (DAY_MS, from_unix_millis)
    } else {
        (DAY_US, from_unix_micros)
    };
    let hidden = if place_columns.contains("hidden") {
        "COALESCE(p.hidden, 0) = 0"
    } else {
        "1"
    };
    let sql = format!(
        "SELECT p.url, p.title, MIN(v.visit_date) AS first
        FROM moz_historyvisits v
        JOIN moz_places p ON p.id = v.place_id
        WHERE v.visit_date > 0
          AND COALESCE(v.visit_type, 1) NOT IN (4, 7, 8, 10)
          AND {hidden}
        GROUP BY p.id, v.visit_date / {day}
        ORDER BY first, p.id"
    );
    db.each_row("moz_places and moz_historyvisits", &sql, |row| {
        let at = int(row, 2).and_then(convert);
        out.page(text(row, 0).as_deref(), text(row, 1).as_deref(), at)
    })?;
    searches(db, tables, out)?;
    Ok(if android {
        Format::FirefoxAndroid
    } else {
        Format::Firefox
    })
}

/// Searches recorded in the places metadata (Fenix; desktop behind a preference).
fn searches(
    db: &Db<'_>,
    tables: &HashSet<String>,
    out: &mut Out<'_, '_>,
) -> Result<(), ImportError> {
    if !tables.contains("moz_places_metadata")
        || !tables.contains("moz_places_metadata_search_queries")
    {
        return Ok(());
    }
    let meta = db.columns("moz_places_metadata")?;
    let queries = db.columns("moz_places_metadata_search_queries")?;
    let Some(term) = ["term", "terms"].into_iter().find(|c| queries.contains(*c)) else {
        return Ok(());
    };
    if !meta.contains("search_query_id") {
        return Ok(());
    }
    let time = match (meta.contains("created_at"), meta.contains("updated_at")) {
        (true, true) => "COALESCE(NULLIF(m.created_at, 0), NULLIF(m.updated_at, 0))",
        (true, false) => "NULLIF(m.created_at, 0)",
        (false, true) => "NULLIF(m.updated_at, 0)",
        (false, false) => "NULL",
    };
    let sql = format!(
        "SELECT q.{term}, MIN({time}) AS first
        FROM moz_places_metadata m
        JOIN moz_places_metadata_search_queries q ON q.id = m.search_query_id
        GROUP BY q.id, {time} / {DAY_MS}
        ORDER BY first, q.id"
    );
    db.each_row("moz_places_metadata_search_queries", &sql, |row| {
        let Some(term) = text(row, 0) else {
            return Ok(());
        };
        let at = int(row, 1).and_then(from_unix_millis);
        out.search(&term, None, at)
    })
}
