//! The BM25 side of retrieval: a Tantivy index whose entries are text (a title and a body)
//! keyed by a u64 id, with one analyzer for every index and one lifecycle.
//!
//! Text is indexed but not stored: SQLite holds it, so the index stays small and forgetting
//! has one less copy to scrub. The key is a fast field, so hits resolve to ids without a
//! document store. Each index is opened from a [`Layout`] that adds its own fields (history's
//! kind, source and time; a chunk's document) and names it in messages.
//!
//! The index is derived data. An index on disk with another schema (an older Rudder, or text
//! analysed differently) is recreated empty and [`TextIndex::recreated`] says so; the owner
//! then rebuilds it from its store. The analyzer's name is part of the schema, so changing the
//! analyzer means changing [`TOKENIZER`], and every user's index is rebuilt on the next open.

use std::path::{Path, PathBuf};

use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, Occur, Query, QueryParser};
use tantivy::schema::{
    Field, IndexRecordOption, NumericOptions, Schema, SchemaBuilder, TextFieldIndexing, TextOptions,
};
use tantivy::tokenizer::{
    AsciiFoldingFilter, Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer,
    StopWordFilter, TextAnalyzer,
};
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument, Term};

/// The analyzer's name in every schema. The version is part of it: an index built with another
/// analyzer then has another schema, and is rebuilt rather than searched with mismatched terms.
pub const TOKENIZER: &str = "rudder_en_v1";

/// Memory the single indexing thread buffers before it writes a segment.
const WRITER_MEMORY: usize = 64 << 20;
/// A title match counts this much more than a body match.
const TITLE_BOOST: f32 = 1.5;

/// The one analyzer of all text fields and queries: words split on non-alphanumerics, very
/// long tokens (base64, hashes) dropped, lower-cased, accents folded (so "café" finds "cafe"),
/// English stop words removed (queries are often whole questions; "the" and "in" would match
/// everything) and English stemming ("feeds" finds "feeding").
pub fn analyzer() -> TextAnalyzer {
    let builder = TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(40))
        .filter(LowerCaser)
        .filter(AsciiFoldingFilter);
    match StopWordFilter::new(Language::English) {
        Some(stop) => builder
            .filter(stop)
            .filter(Stemmer::new(Language::English))
            .build(),
        None => builder.filter(Stemmer::new(Language::English)).build(),
    }
}

/// Errors from a text index, naming it and its folder.
#[derive(Debug, thiserror::Error)]
#[error("{name} {path}: {message}")]
pub struct IndexError {
    /// `history text index`, `documents index`.
    pub name: &'static str,
    pub path: PathBuf,
    pub message: String,
}

/// What one kind of index adds to the shared key, title and body: its own fields.
pub trait Layout: Copy {
    /// How messages name the index: `history text index`.
    const NAME: &'static str;
    /// The name of the u64 field hits resolve to (a session id, a chunk id).
    const KEY: &'static str;
    /// Adds this layout's own fields to the schema and returns their handles.
    fn define(schema: &mut SchemaBuilder) -> Self;
}

/// The fields every text index has.
#[derive(Clone, Copy)]
struct Common {
    key: Field,
    title: Field,
    body: Field,
}

fn schema<L: Layout>() -> (Schema, Common, L) {
    let mut b = Schema::builder();
    let text = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(TOKENIZER)
            .set_index_option(IndexRecordOption::WithFreqsAndPositions),
    );
    let key = b.add_u64_field(L::KEY, NumericOptions::default().set_indexed().set_fast());
    let title = b.add_text_field("title", text.clone());
    let body = b.add_text_field("body", text);
    let layout = L::define(&mut b);
    (b.build(), Common { key, title, body }, layout)
}

/// A Tantivy index of one [`Layout`].
pub struct TextIndex<L: Layout> {
    path: PathBuf,
    index: Index,
    reader: IndexReader,
    writer: Option<IndexWriter>,
    common: Common,
    layout: L,
    parser: QueryParser,
    recreated: bool,
}

impl<L: Layout> TextIndex<L> {
    /// Opens the index in `dir`, creating it if needed. An index with another schema is
    /// recreated empty (see [`recreated`](Self::recreated)).
    pub fn open(dir: &Path) -> Result<Self, IndexError> {
        let err = |e: &dyn std::fmt::Display| IndexError {
            name: L::NAME,
            path: dir.to_path_buf(),
            message: e.to_string(),
        };
        std::fs::create_dir_all(dir).map_err(|e| err(&e))?;
        let (schema, common, layout) = schema::<L>();
        let create = || {
            match Index::create_in_dir(dir, schema.clone()) {
                // Another process made it between the look for meta.json and here (the window
                // and an import starting together on a new data directory): use theirs.
                Err(tantivy::TantivyError::IndexAlreadyExists) => Index::open_in_dir(dir),
                created => created,
            }
            .map_err(|e| err(&e))
        };
        let mut recreated = false;
        let index = if dir.join("meta.json").is_file() {
            let index = Index::open_in_dir(dir).map_err(|e| err(&e))?;
            if index.schema() == schema {
                index
            } else {
                tracing::warn!(dir = %dir.display(), "{} schema changed; recreating it", L::NAME);
                drop(index);
                std::fs::remove_dir_all(dir).map_err(|e| err(&e))?;
                std::fs::create_dir_all(dir).map_err(|e| err(&e))?;
                recreated = true;
                create()?
            }
        } else {
            create()?
        };
        index.tokenizers().register(TOKENIZER, analyzer());
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(|e: tantivy::TantivyError| err(&e))?;
        let mut parser = QueryParser::for_index(&index, vec![common.title, common.body]);
        parser.set_field_boost(common.title, TITLE_BOOST);
        Ok(Self {
            path: dir.to_path_buf(),
            index,
            reader,
            writer: None,
            common,
            layout,
            parser,
            recreated,
        })
    }

    /// Whether [`open`](Self::open) found an index of another schema and replaced it with an
    /// empty one: its owner must rebuild it.
    pub fn recreated(&self) -> bool {
        self.recreated
    }

    /// The layout's own fields.
    pub fn layout(&self) -> &L {
        &self.layout
    }

    /// The index directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn err(&self, e: impl std::fmt::Display) -> IndexError {
        IndexError {
            name: L::NAME,
            path: self.path.clone(),
            message: e.to_string(),
        }
    }

    fn writer(&mut self) -> Result<&mut IndexWriter, IndexError> {
        if self.writer.is_none() {
            // One thread: indexing competes with the embedder and the model for two cores.
            let w = self
                .index
                .writer_with_num_threads(1, WRITER_MEMORY)
                .map_err(|e| match e {
                    tantivy::TantivyError::LockFailure(..) => self.err(format!(
                        "another Rudder process is writing the {}; try again when it has finished",
                        L::NAME
                    )),
                    e => self.err(e),
                })?;
            self.writer = Some(w);
        }
        Ok(self.writer.as_mut().expect("writer was just created"))
    }

    /// A new entry with its key, title and body; the caller adds its layout's fields.
    pub fn document(&self, key: i64, title: &str, body: &str) -> TantivyDocument {
        let mut doc = TantivyDocument::default();
        doc.add_u64(self.common.key, key as u64);
        doc.add_text(self.common.title, title);
        doc.add_text(self.common.body, body);
        doc
    }

    /// Queues an entry (visible after [`commit`](Self::commit)).
    pub fn add(&mut self, doc: TantivyDocument) -> Result<(), IndexError> {
        let w = self.writer()?;
        match w.add_document(doc) {
            Ok(_) => Ok(()),
            Err(e) => Err(self.err(e)),
        }
    }

    /// Queues the deletion of the entry with this key.
    pub fn delete_key(&mut self, key: i64) -> Result<(), IndexError> {
        let term = Term::from_field_u64(self.common.key, key as u64);
        self.delete_term(term)
    }

    /// Queues the deletion of every entry holding `term` (a layout field's value).
    pub fn delete_term(&mut self, term: Term) -> Result<(), IndexError> {
        self.writer()?.delete_term(term);
        Ok(())
    }

    /// Queues the deletion of everything.
    pub fn delete_all(&mut self) -> Result<(), IndexError> {
        let w = self.writer()?;
        match w.delete_all_documents() {
            Ok(_) => Ok(()),
            Err(e) => Err(self.err(e)),
        }
    }

    /// Whether a writer is open (changes may be queued).
    pub fn has_writer(&self) -> bool {
        self.writer.is_some()
    }

    /// Makes queued changes durable and visible.
    pub fn commit(&mut self) -> Result<(), IndexError> {
        if let Some(w) = self.writer.as_mut() {
            if let Err(e) = w.commit() {
                return Err(self.err(e));
            }
            self.reader.reload().map_err(|e| self.err(e))?;
        }
        Ok(())
    }

    /// Drops queued changes.
    pub fn rollback(&mut self) -> Result<(), IndexError> {
        if let Some(w) = self.writer.as_mut() {
            if let Err(e) = w.rollback() {
                return Err(self.err(e));
            }
        }
        Ok(())
    }

    /// Merges every segment into one and deletes the old files, so deleted entries are gone
    /// from disk and not only marked deleted.
    pub fn purge_deleted(&mut self) -> Result<(), IndexError> {
        let ids = self
            .index
            .searchable_segment_ids()
            .map_err(|e| self.err(e))?;
        let w = self.writer()?;
        let merged = if ids.is_empty() {
            Ok(())
        } else {
            w.merge(&ids).wait().map(|_| ())
        };
        let collected = merged.and_then(|()| w.garbage_collect_files().wait().map(|_| ()));
        collected.map_err(|e| self.err(e))?;
        self.reader.reload().map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Releases the writer's lock, so another process may write.
    pub fn close_writer(&mut self) -> Result<(), IndexError> {
        if let Some(w) = self.writer.take() {
            w.wait_merging_threads().map_err(|e| self.err(e))?;
        }
        Ok(())
    }

    /// Entries currently searchable.
    pub fn num_docs(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    /// Deleted entries still physically present in segments.
    pub fn num_deleted_docs(&self) -> u64 {
        self.reader
            .searcher()
            .segment_readers()
            .iter()
            .map(|s| s.num_deleted_docs() as u64)
            .sum()
    }

    /// The best `limit` keys for `query` among the entries every one of `filters` matches, as
    /// (key, BM25 score), best first.
    pub fn search(
        &self,
        query: &str,
        filters: Vec<Box<dyn Query>>,
        limit: usize,
    ) -> Result<Vec<(i64, f32)>, IndexError> {
        // Queries are free text (often a model's): a colon would make Tantivy read "word:" as
        // a field name and fail, so field syntax is not offered.
        let query = query.replace(':', " ");
        let (text_query, _errors) = self.parser.parse_query_lenient(&query);
        let query: Box<dyn Query> = if filters.is_empty() {
            text_query
        } else {
            let mut clauses = vec![(Occur::Must, text_query)];
            clauses.extend(filters.into_iter().map(|f| (Occur::Must, f)));
            Box::new(BooleanQuery::new(clauses))
        };
        let searcher = self.reader.searcher();
        let hits = searcher
            .search(&query, &TopDocs::with_limit(limit.max(1)).order_by_score())
            .map_err(|e| self.err(e))?;
        let mut out = Vec::with_capacity(hits.len());
        for (score, addr) in hits {
            let column = searcher
                .segment_reader(addr.segment_ord)
                .fast_fields()
                .u64(L::KEY)
                .map_err(|e| self.err(e))?;
            if let Some(id) = column.first(addr.doc_id) {
                out.push((id as i64, score));
            }
        }
        Ok(out)
    }
}

impl<L: Layout> Drop for TextIndex<L> {
    fn drop(&mut self) {
        // Uncommitted work is discarded on purpose: the store is the source of truth and a
        // commit is always explicit.
        if let Some(w) = self.writer.take() {
            let _ = w.wait_merging_threads();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tantivy::tokenizer::TokenStream;

    #[derive(Clone, Copy)]
    struct Plain;
    impl Layout for Plain {
        const NAME: &'static str = "test index";
        const KEY: &'static str = "id";
        fn define(_: &mut SchemaBuilder) -> Self {
            Plain
        }
    }

    fn tokens(text: &str) -> Vec<String> {
        let mut a = analyzer();
        let mut stream = a.token_stream(text);
        let mut out = Vec::new();
        while stream.advance() {
            out.push(stream.token().text.clone());
        }
        out
    }

    #[test]
    fn one_analyzer_stems_folds_and_drops_stop_words() {
        assert_eq!(tokens("The Cafés feeding"), vec!["cafe", "feed"]);
        assert_eq!(tokens(&"x".repeat(50)), Vec::<String>::new());
    }

    #[test]
    fn an_index_of_another_schema_is_recreated_empty() {
        let dir = tempfile::tempdir().unwrap();
        // An index as an older Rudder built it: same fields, another analyzer.
        {
            let mut b = Schema::builder();
            let text = TextOptions::default().set_indexing_options(
                TextFieldIndexing::default()
                    .set_tokenizer("en_stem")
                    .set_index_option(IndexRecordOption::WithFreqsAndPositions),
            );
            let id = b.add_u64_field("id", NumericOptions::default().set_indexed().set_fast());
            let title = b.add_text_field("title", text.clone());
            b.add_text_field("body", text);
            let index = Index::create_in_dir(dir.path(), b.build()).unwrap();
            let mut w: IndexWriter = index.writer_with_num_threads(1, 15_000_000).unwrap();
            let mut doc = TantivyDocument::default();
            doc.add_u64(id, 1);
            doc.add_text(title, "old");
            w.add_document(doc).unwrap();
            w.commit().unwrap();
        }
        let index = TextIndex::<Plain>::open(dir.path()).unwrap();
        assert!(index.recreated());
        assert_eq!(index.num_docs(), 0);
        drop(index);
        let mut index = TextIndex::<Plain>::open(dir.path()).unwrap();
        assert!(!index.recreated());
        let doc = index.document(7, "Crème brûlée", "the custard sets overnight");
        index.add(doc).unwrap();
        index.commit().unwrap();
        assert_eq!(index.search("creme", Vec::new(), 5).unwrap()[0].0, 7);
        assert_eq!(
            index.search("title: setting", Vec::new(), 5).unwrap().len(),
            1
        );
        assert!(index.search("the", Vec::new(), 5).unwrap().is_empty());
        index.delete_key(7).unwrap();
        index.commit().unwrap();
        index.purge_deleted().unwrap();
        assert_eq!((index.num_docs(), index.num_deleted_docs()), (0, 0));
    }
}
