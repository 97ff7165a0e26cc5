//! Safari `History.db`.
//!
//! Tables: `history_items(id, url, domain_expansion, visit_count, …)` and
//! `history_visits(id, history_item → history_items.id, visit_time, title,
//! redirect_source, redirect_destination, load_successful, …)`.
//!
//! Quirks:
//! * `visit_time` is a float: seconds since 2001-01-01 UTC (Core Data's reference date).
//! * Titles live on the visits, not on the URL, and are often NULL or empty (redirect hops,
//!   failed loads, visits synced before the page loaded). A day's entry takes the first
//!   non-empty title among that day's visits, else the URL.
//! * A visit with `redirect_destination` set is the source of a redirect (a link shortener, an
//!   `http` → `https` hop): skipped, the destination is the page that was shown.

use super::{real, text, Db, Out};
use crate::history::import::time::from_cocoa_seconds;
use crate::history::import::ImportError;

/// Seconds between 1970-01-01 and 2001-01-01.
const COCOA_TO_UNIX_S: f64 = 978_307_200.0;

pub(super) fn import(db: &Db<'_>, out: &mut Out<'_, '_>) -> Result<(), ImportError> {
    let columns = db.columns("history_visits")?;
    let shown = if columns.contains("redirect_destination") {
        "v.redirect_destination IS NULL"
    } else {
        "1"
    };
    // Whitespace-only titles (NBSP, em space) count as missing.
    let has_title = if columns.contains("title") {
        "TRIM(REPLACE(REPLACE(COALESCE(v.title, ''), char(160), ' '), char(8195), ' ')) != ''"
    } else {
        "0"
    };
    let title = if columns.contains("title") {
        "v.title"
    } else {
        "NULL"
    };
    let day = format!("CAST((v.visit_time + {COCOA_TO_UNIX_S}) / 86400 AS INTEGER)");
    // One sort, no correlated subquery: per (item, day), the first visit's time and the first
    // titled visit's title (row 1 when titled rows sort first).
    let sql = format!(
        "SELECT i.url, w.title, w.first
        FROM (
            SELECT v.history_item AS item,
                CASE WHEN {has_title} THEN {title} END AS title,
                MIN(v.visit_time) OVER day AS first,
                ROW_NUMBER() OVER (day ORDER BY ({has_title}) DESC, v.visit_time, v.id) AS n
            FROM history_visits v
            WHERE v.visit_time IS NOT NULL AND {shown}
            WINDOW day AS (PARTITION BY v.history_item, {day})
        ) w
        JOIN history_items i ON i.id = w.item
        WHERE w.n = 1
        ORDER BY w.first, i.id"
    );
    db.each_row("history_items and history_visits", &sql, |row| {
        let at = real(row, 2).and_then(from_cocoa_seconds);
        out.page(text(row, 0).as_deref(), text(row, 1).as_deref(), at)
    })
}
