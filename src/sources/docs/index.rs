//! BM25 over chunks: a Tantivy index with one entry per chunk, holding its document's title
//! (and, for corpus articles, description and topic) and the chunk text, not stored (SQLite
//! has the text). Text is lower-cased, accent-folded, stripped of English stop words (queries
//! are often whole questions; "the" and "in" would match every chunk) and stemmed. The chunk id is a fast field so hits resolve without a
//! document store; the document id is indexed so a document's chunks are deleted together.

use std::path::{Path, PathBuf};

use tantivy::collector::TopDocs;
use tantivy::query::QueryParser;
use tantivy::schema::{
    Field, IndexRecordOption, NumericOptions, Schema, TextFieldIndexing, TextOptions,
};
use tantivy::tokenizer::{
    AsciiFoldingFilter, Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer,
    StopWordFilter, TextAnalyzer,
};
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument, Term};

use super::DocsError;

#[derive(Clone, Copy)]
struct Fields {
    chunk: Field,
    doc: Field,
    title: Field,
    body: Field,
}

const WRITER_MEMORY: usize = 64 << 20;
/// The analyzer of both text fields, registered on every open.
const TOKENIZER: &str = "docs_en";

fn analyzer() -> TextAnalyzer {
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

fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let text = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(TOKENIZER)
            .set_index_option(IndexRecordOption::WithFreqsAndPositions),
    );
    let chunk = b.add_u64_field("chunk", NumericOptions::default().set_indexed().set_fast());
    let doc = b.add_u64_field("doc", NumericOptions::default().set_indexed());
    let title = b.add_text_field("title", text.clone());
    let body = b.add_text_field("body", text);
    (
        b.build(),
        Fields {
            chunk,
            doc,
            title,
            body,
        },
    )
}

/// The Tantivy index over chunks.
pub(crate) struct TextIndex {
    path: PathBuf,
    index: Index,
    reader: IndexReader,
    writer: Option<IndexWriter>,
    fields: Fields,
    parser: QueryParser,
}

impl TextIndex {
    /// Opens the index in `dir`, creating it if needed; an index with another schema is
    /// recreated empty (the caller rebuilds it from the store).
    pub fn open(dir: &Path) -> Result<Self, DocsError> {
        let err = |e: &dyn std::fmt::Display| DocsError::Index {
            path: dir.to_path_buf(),
            message: e.to_string(),
        };
        std::fs::create_dir_all(dir).map_err(|e| err(&e))?;
        let (schema, fields) = schema();
        let create = || Index::create_in_dir(dir, schema.clone()).map_err(|e| err(&e));
        let index = if dir.join("meta.json").is_file() {
            let index = Index::open_in_dir(dir).map_err(|e| err(&e))?;
            if index.schema() == schema {
                index
            } else {
                tracing::warn!(dir = %dir.display(), "documents index schema changed; recreating it");
                drop(index);
                std::fs::remove_dir_all(dir).map_err(|e| err(&e))?;
                std::fs::create_dir_all(dir).map_err(|e| err(&e))?;
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

    fn err(&self, e: impl std::fmt::Display) -> DocsError {
        DocsError::Index {
            path: self.path.clone(),
            message: e.to_string(),
        }
    }

    fn writer(&mut self) -> Result<&mut IndexWriter, DocsError> {
        if self.writer.is_none() {
            let w = self
                .index
                .writer_with_num_threads(1, WRITER_MEMORY)
                .map_err(|e| match e {
                    tantivy::TantivyError::LockFailure(..) => self.err(
                        "another Rudder process is writing the documents index; try again when \
                         it has finished",
                    ),
                    e => self.err(e),
                })?;
            self.writer = Some(w);
        }
        Ok(self.writer.as_mut().expect("writer was just created"))
    }

    /// Queues one chunk (visible after [`commit`](Self::commit)).
    pub fn add(&mut self, chunk: i64, doc: i64, title: &str, body: &str) -> Result<(), DocsError> {
        let f = self.fields;
        let mut d = TantivyDocument::default();
        d.add_u64(f.chunk, chunk as u64);
        d.add_u64(f.doc, doc as u64);
        d.add_text(f.title, title);
        d.add_text(f.body, body);
        let path = self.path.clone();
        self.writer()?
            .add_document(d)
            .map_err(|e| DocsError::Index {
                path,
                message: e.to_string(),
            })?;
        Ok(())
    }

    /// Queues the deletion of every chunk of a document.
    pub fn delete_doc(&mut self, doc: i64) -> Result<(), DocsError> {
        let term = Term::from_field_u64(self.fields.doc, doc as u64);
        self.writer()?.delete_term(term);
        Ok(())
    }

    pub fn delete_all(&mut self) -> Result<(), DocsError> {
        let path = self.path.clone();
        self.writer()?
            .delete_all_documents()
            .map_err(|e| DocsError::Index {
                path,
                message: e.to_string(),
            })?;
        Ok(())
    }

    /// Whether changes are queued.
    pub fn has_writer(&self) -> bool {
        self.writer.is_some()
    }

    /// Makes queued changes durable and visible.
    pub fn commit(&mut self) -> Result<(), DocsError> {
        if let Some(w) = self.writer.as_mut() {
            w.commit().map_err(|e| DocsError::Index {
                path: self.path.clone(),
                message: e.to_string(),
            })?;
            self.reader.reload().map_err(|e| self.err(e))?;
        }
        Ok(())
    }

    /// Merges all segments and deletes the old files, so removed text is gone from disk.
    pub fn purge_deleted(&mut self) -> Result<(), DocsError> {
        let ids = self
            .index
            .searchable_segment_ids()
            .map_err(|e| self.err(e))?;
        let path = self.path.clone();
        let werr = |e: tantivy::TantivyError| DocsError::Index {
            path: path.clone(),
            message: e.to_string(),
        };
        let w = self.writer()?;
        if !ids.is_empty() {
            w.merge(&ids).wait().map_err(werr)?;
        }
        w.garbage_collect_files().wait().map_err(werr)?;
        self.reader.reload().map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Releases the write lock so another process may write.
    pub fn close_writer(&mut self) -> Result<(), DocsError> {
        if let Some(w) = self.writer.take() {
            w.wait_merging_threads().map_err(|e| self.err(e))?;
        }
        Ok(())
    }

    pub fn num_docs(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    /// The best `limit` chunks for `query` as (chunk id, BM25 score).
    pub fn search(&self, query: &str, limit: usize) -> Result<Vec<(i64, f32)>, DocsError> {
        // Free text, often written by a model: a colon would read as field syntax.
        let query = query.replace(':', " ");
        let (q, _errors) = self.parser.parse_query_lenient(&query);
        let searcher = self.reader.searcher();
        let hits = searcher
            .search(&q, &TopDocs::with_limit(limit.max(1)).order_by_score())
            .map_err(|e| self.err(e))?;
        let mut out = Vec::with_capacity(hits.len());
        for (score, addr) in hits {
            let column = searcher
                .segment_reader(addr.segment_ord)
                .fast_fields()
                .u64("chunk")
                .map_err(|e| self.err(e))?;
            if let Some(id) = column.first(addr.doc_id) {
                out.push((id as i64, score));
            }
        }
        Ok(out)
    }
}

impl Drop for TextIndex {
    fn drop(&mut self) {
        // Uncommitted work is dropped on purpose: SQLite is the source of truth, and the
        // library marks the index for a rebuild before queuing anything.
        if let Some(w) = self.writer.take() {
            let _ = w.wait_merging_threads();
        }
    }
}
