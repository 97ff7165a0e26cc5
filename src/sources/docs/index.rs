//! BM25 over chunks: one entry per chunk in the shared text index
//! ([`crate::retrieval::text_index`]), holding its document's title (and, for corpus
//! articles, description and topic) and the chunk text. The document id is indexed so a
//! document's chunks are deleted together.

use tantivy::schema::{Field, NumericOptions, SchemaBuilder};
use tantivy::Term;

use super::DocsError;
use crate::retrieval::text_index::Layout;

/// The documents' own field in the text index.
#[derive(Clone, Copy)]
pub(crate) struct ChunkFields {
    doc: Field,
}

impl Layout for ChunkFields {
    const NAME: &'static str = "documents index";
    const KEY: &'static str = "chunk";

    fn define(b: &mut SchemaBuilder) -> Self {
        Self {
            doc: b.add_u64_field("doc", NumericOptions::default().set_indexed()),
        }
    }
}

/// The text index over chunks.
pub(crate) type TextIndex = crate::retrieval::TextIndex<ChunkFields>;

/// Queues one chunk (visible after the index's commit).
pub(crate) fn add(
    index: &mut TextIndex,
    chunk: i64,
    doc: i64,
    title: &str,
    body: &str,
) -> Result<(), DocsError> {
    let f = *index.layout();
    let mut d = index.document(chunk, title, body);
    d.add_u64(f.doc, doc as u64);
    Ok(index.add(d)?)
}

/// Queues the deletion of every chunk of a document.
pub(crate) fn delete_doc(index: &mut TextIndex, doc: i64) -> Result<(), DocsError> {
    let term = Term::from_field_u64(index.layout().doc, doc as u64);
    Ok(index.delete_term(term)?)
}
