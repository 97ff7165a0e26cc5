//! The BM25 side of history search: one entry per entry in the shared text index
//! ([`crate::retrieval::text_index`]), with the entry's title and full text, plus its kind,
//! source and start time, indexed for filters.

use std::collections::HashSet;
use std::ops::Bound;

use chrono::{DateTime, Utc};
use tantivy::query::{BooleanQuery, Occur, Query, RangeQuery, TermQuery};
use tantivy::schema::{Field, IndexRecordOption, NumericOptions, SchemaBuilder, STRING};
use tantivy::Term;

use super::entry::{Entry, HistorySource, Kind};
use crate::retrieval::text_index::Layout;
pub use crate::retrieval::IndexError;

/// Filters shared by BM25 and vector search.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// Empty means any kind.
    pub kinds: Vec<Kind>,
    /// Empty means any source.
    pub sources: Vec<HistorySource>,
    /// Entries started at or after this time.
    pub since: Option<DateTime<Utc>>,
    /// Entries started before this time.
    pub until: Option<DateTime<Utc>>,
}

impl Filter {
    pub fn is_empty(&self) -> bool {
        self.kinds.is_empty()
            && self.sources.is_empty()
            && self.since.is_none()
            && self.until.is_none()
    }

    /// Whether an entry with these fields passes (used by the vector index).
    pub fn admits(&self, kind: Kind, source: HistorySource, started_micros: Option<i64>) -> bool {
        if !self.kinds.is_empty() && !self.kinds.contains(&kind) {
            return false;
        }
        if !self.sources.is_empty() && !self.sources.contains(&source) {
            return false;
        }
        if self.since.is_some() || self.until.is_some() {
            let Some(t) = started_micros else {
                return false;
            };
            if self.since.is_some_and(|s| t < s.timestamp_micros()) {
                return false;
            }
            if self.until.is_some_and(|u| t >= u.timestamp_micros()) {
                return false;
            }
        }
        true
    }
}

/// History's own fields in the text index: what filters need.
#[derive(Clone, Copy)]
pub struct SessionFields {
    kind: Field,
    source: Field,
    time: Field,
}

impl Layout for SessionFields {
    const NAME: &'static str = "history text index";
    const KEY: &'static str = "id";

    fn define(b: &mut SchemaBuilder) -> Self {
        Self {
            kind: b.add_text_field("kind", STRING),
            source: b.add_text_field("source", STRING),
            time: b.add_i64_field("time", NumericOptions::default().set_indexed().set_fast()),
        }
    }
}

/// The text index over history entries.
pub type TextIndex = crate::retrieval::TextIndex<SessionFields>;

/// Queues an entry for indexing (visible after the index's commit).
pub fn add(index: &mut TextIndex, id: i64, session: &Entry) -> Result<(), IndexError> {
    let f = *index.layout();
    let mut doc = index.document(id, &session.title, &session.full_text());
    doc.add_text(f.kind, session.kind.as_str());
    doc.add_text(f.source, session.source.as_str());
    if let Some(t) = session.started_at {
        doc.add_i64(f.time, t.timestamp_micros());
    }
    index.add(doc)
}

/// The best `limit` sessions for `query` under `filter`, as (session id, BM25 score).
pub fn search(
    index: &TextIndex,
    query: &str,
    filter: &Filter,
    limit: usize,
) -> Result<Vec<(i64, f32)>, IndexError> {
    index.search(query, filter_queries(index.layout(), filter), limit)
}

/// The filter as queries every hit must match.
fn filter_queries(f: &SessionFields, filter: &Filter) -> Vec<Box<dyn Query>> {
    let any_of = |field: Field, values: Vec<&str>| -> Box<dyn Query> {
        let set: HashSet<&str> = values.into_iter().collect();
        Box::new(BooleanQuery::new(
            set.into_iter()
                .map(|v| {
                    let q: Box<dyn Query> = Box::new(TermQuery::new(
                        Term::from_field_text(field, v),
                        IndexRecordOption::Basic,
                    ));
                    (Occur::Should, q)
                })
                .collect(),
        ))
    };
    let mut out: Vec<Box<dyn Query>> = Vec::new();
    if !filter.kinds.is_empty() {
        out.push(any_of(
            f.kind,
            filter.kinds.iter().map(|k| k.as_str()).collect(),
        ));
    }
    if !filter.sources.is_empty() {
        out.push(any_of(
            f.source,
            filter.sources.iter().map(|s| s.as_str()).collect(),
        ));
    }
    if filter.since.is_some() || filter.until.is_some() {
        let lo = match filter.since {
            Some(t) => Bound::Included(Term::from_field_i64(f.time, t.timestamp_micros())),
            None => Bound::Unbounded,
        };
        let hi = match filter.until {
            Some(t) => Bound::Excluded(Term::from_field_i64(f.time, t.timestamp_micros())),
            None => Bound::Unbounded,
        };
        out.push(Box::new(RangeQuery::new(lo, hi)));
    }
    out
}
