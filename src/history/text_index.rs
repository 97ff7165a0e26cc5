//! The BM25 side of history search: a Tantivy index with one document per session.
//!
//! Text is indexed with English stemming but not stored (SQLite holds it; the index stays
//! small and forgetting has one less copy to scrub). The session id, kind, source and start
//! time are indexed for deletes and filters; the id is also a fast field so hits resolve to
//! sessions without touching a document store.

use std::collections::HashSet;
use std::ops::Bound;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, Occur, Query, QueryParser, RangeQuery, TermQuery};
use tantivy::schema::{
    Field, IndexRecordOption, NumericOptions, Schema, TextFieldIndexing, TextOptions, STRING,
};
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument, Term};

use super::session::{HistorySource, Kind, Session};

/// Errors from the text index.
#[derive(Debug, thiserror::Error)]
#[error("history text index {path}: {message}")]
pub struct IndexError {
    pub path: PathBuf,
    pub message: String,
}

/// Filters shared by BM25 and vector search.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// Empty means any kind.
    pub kinds: Vec<Kind>,
    /// Empty means any source.
    pub sources: Vec<HistorySource>,
    /// Sessions started at or after this time.
    pub since: Option<DateTime<Utc>>,
    /// Sessions started before this time.
    pub until: Option<DateTime<Utc>>,
}

impl Filter {
    pub fn is_empty(&self) -> bool {
        self.kinds.is_empty()
            && self.sources.is_empty()
            && self.since.is_none()
            && self.until.is_none()
    }

    /// Whether a session with these fields passes (used by the vector index).
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

#[derive(Clone, Copy)]
struct Fields {
    id: Field,
    title: Field,
    body: Field,
    kind: Field,
    source: Field,
    time: Field,
}

const WRITER_MEMORY: usize = 64 << 20;

/// The Tantivy index over history sessions.
pub struct TextIndex {
    path: PathBuf,
    index: Index,
    reader: IndexReader,
    writer: Option<IndexWriter>,
    fields: Fields,
    parser: QueryParser,
}

fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let text = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer("en_stem")
            .set_index_option(IndexRecordOption::WithFreqsAndPositions),
    );
    let id = b.add_u64_field("id", NumericOptions::default().set_indexed().set_fast());
    let title = b.add_text_field("title", text.clone());
    let body = b.add_text_field("body", text);
    let kind = b.add_text_field("kind", STRING);
    let source = b.add_text_field("source", STRING);
    let time = b.add_i64_field("time", NumericOptions::default().set_indexed().set_fast());
    (
        b.build(),
        Fields {
            id,
            title,
            body,
            kind,
            source,
            time,
        },
    )
}

impl TextIndex {
    /// Opens the index in `dir`, creating it if needed. If the directory holds an index with a
    /// different schema (an older Rudder) it is recreated empty; the caller rebuilds it.
    pub fn open(dir: &Path) -> Result<Self, IndexError> {
        let err = |message: String| IndexError {
            path: dir.to_path_buf(),
            message,
        };
        std::fs::create_dir_all(dir).map_err(|e| err(e.to_string()))?;
        let (schema, fields) = schema();
        let create = || Index::create_in_dir(dir, schema.clone()).map_err(|e| err(e.to_string()));
        let index = if dir.join("meta.json").is_file() {
            let index = Index::open_in_dir(dir).map_err(|e| err(e.to_string()))?;
            if index.schema() == schema {
                index
            } else {
                tracing::warn!(dir = %dir.display(), "text index schema changed; recreating it");
                drop(index);
                std::fs::remove_dir_all(dir).map_err(|e| err(e.to_string()))?;
                std::fs::create_dir_all(dir).map_err(|e| err(e.to_string()))?;
                create()?
            }
        } else {
            create()?
        };
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(|e: tantivy::TantivyError| err(e.to_string()))?;
        let mut parser = QueryParser::for_index(&index, vec![fields.title, fields.body]);
        parser.set_field_boost(fields.title, 1.5);
        Ok(Self {
            path: dir.to_path_buf(),
            index,
            reader,
            writer: None,
            fields,
            parser,
        })
    }

    fn err(&self, e: impl std::fmt::Display) -> IndexError {
        IndexError {
            path: self.path.clone(),
            message: e.to_string(),
        }
    }

    fn writer(&mut self) -> Result<&mut IndexWriter, IndexError> {
        if self.writer.is_none() {
            let w = self
                .index
                .writer_with_num_threads(1, WRITER_MEMORY)
                .map_err(|e| match e {
                    tantivy::TantivyError::LockFailure(..) => self.err(
                        "another Rudder process is writing the history index; try again when it \
                         has finished",
                    ),
                    e => self.err(e),
                })?;
            self.writer = Some(w);
        }
        Ok(self.writer.as_mut().expect("writer was just created"))
    }

    /// Queues a session for indexing (visible after [`commit`](Self::commit)).
    pub fn add(&mut self, id: i64, session: &Session) -> Result<(), IndexError> {
        let f = self.fields;
        let mut doc = TantivyDocument::default();
        doc.add_u64(f.id, id as u64);
        doc.add_text(f.title, &session.title);
        let body = session.full_text();
        doc.add_text(f.body, &body);
        doc.add_text(f.kind, session.kind.as_str());
        doc.add_text(f.source, session.source.as_str());
        if let Some(t) = session.started_at {
            doc.add_i64(f.time, t.timestamp_micros());
        }
        let w = self.writer()?;
        w.add_document(doc).map_err(|e| IndexError {
            path: PathBuf::new(),
            message: e.to_string(),
        })?;
        Ok(())
    }

    /// Queues the deletion of a session.
    pub fn delete(&mut self, id: i64) -> Result<(), IndexError> {
        let term = Term::from_field_u64(self.fields.id, id as u64);
        self.writer()?.delete_term(term);
        Ok(())
    }

    /// Queues the deletion of everything.
    pub fn delete_all(&mut self) -> Result<(), IndexError> {
        let w = self.writer()?;
        w.delete_all_documents().map_err(|e| IndexError {
            path: PathBuf::new(),
            message: e.to_string(),
        })?;
        Ok(())
    }

    /// Makes queued changes durable and visible.
    pub fn commit(&mut self) -> Result<(), IndexError> {
        if let Some(w) = self.writer.as_mut() {
            w.commit().map_err(|e| IndexError {
                path: PathBuf::new(),
                message: e.to_string(),
            })?;
            self.reader.reload().map_err(|e| self.err(e))?;
        }
        Ok(())
    }

    /// Drops queued changes.
    pub fn rollback(&mut self) -> Result<(), IndexError> {
        if let Some(w) = self.writer.as_mut() {
            w.rollback().map_err(|e| IndexError {
                path: PathBuf::new(),
                message: e.to_string(),
            })?;
        }
        Ok(())
    }

    /// Merges every segment into one and deletes the old files, so deleted sessions are gone
    /// from disk and not only marked deleted.
    pub fn purge_deleted(&mut self) -> Result<(), IndexError> {
        let ids = self
            .index
            .searchable_segment_ids()
            .map_err(|e| self.err(e))?;
        let w = self.writer()?;
        if !ids.is_empty() {
            w.merge(&ids).wait().map_err(|e| IndexError {
                path: PathBuf::new(),
                message: e.to_string(),
            })?;
        }
        w.garbage_collect_files().wait().map_err(|e| IndexError {
            path: PathBuf::new(),
            message: e.to_string(),
        })?;
        self.reader.reload().map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Releases the writer's lock (other processes may then write).
    pub fn close_writer(&mut self) -> Result<(), IndexError> {
        if let Some(w) = self.writer.take() {
            w.wait_merging_threads().map_err(|e| self.err(e))?;
        }
        Ok(())
    }

    /// Documents currently searchable.
    pub fn num_docs(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    /// Deleted documents still physically present in segments.
    pub fn num_deleted_docs(&self) -> u64 {
        self.reader
            .searcher()
            .segment_readers()
            .iter()
            .map(|s| s.num_deleted_docs() as u64)
            .sum()
    }

    /// The best `limit` sessions for `query` under `filter`, as (session id, BM25 score).
    pub fn search(
        &self,
        query: &str,
        filter: &Filter,
        limit: usize,
    ) -> Result<Vec<(i64, f32)>, IndexError> {
        // Queries are free text (often an LLM's expansion): a colon would make Tantivy read
        // "word:" as a field name and fail, so field syntax is not offered.
        let query = query.replace(':', " ");
        let (text_query, _errors) = self.parser.parse_query_lenient(&query);
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = vec![(Occur::Must, text_query)];
        let f = self.fields;
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
        if !filter.kinds.is_empty() {
            clauses.push((
                Occur::Must,
                any_of(f.kind, filter.kinds.iter().map(|k| k.as_str()).collect()),
            ));
        }
        if !filter.sources.is_empty() {
            clauses.push((
                Occur::Must,
                any_of(
                    f.source,
                    filter.sources.iter().map(|s| s.as_str()).collect(),
                ),
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
            clauses.push((Occur::Must, Box::new(RangeQuery::new(lo, hi))));
        }
        let query = BooleanQuery::new(clauses);
        let searcher = self.reader.searcher();
        let hits = searcher
            .search(&query, &TopDocs::with_limit(limit.max(1)).order_by_score())
            .map_err(|e| self.err(e))?;
        let mut out = Vec::with_capacity(hits.len());
        for (score, addr) in hits {
            let column = searcher
                .segment_reader(addr.segment_ord)
                .fast_fields()
                .u64("id")
                .map_err(|e| self.err(e))?;
            if let Some(id) = column.first(addr.doc_id) {
                out.push((id as i64, score));
            }
        }
        Ok(out)
    }

    /// The index directory.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TextIndex {
    fn drop(&mut self) {
        // Uncommitted work is discarded on purpose: SQLite is the source of truth and a commit
        // is always explicit.
        if let Some(w) = self.writer.take() {
            let _ = w.wait_merging_threads();
        }
    }
}
