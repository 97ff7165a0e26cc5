//! The semantic side of document search: every chunk's int8 embedding in the shared matrix
//! ([`crate::retrieval::vectors`]), scanned exactly; a chunk is its own result.

use super::store::Store;
use super::DocsError;
use crate::retrieval::vectors::{top_k, Int8Matrix};

/// All stored chunk vectors of one embedding model.
#[derive(Default)]
pub(crate) struct VectorIndex {
    matrix: Int8Matrix,
    chunk_ids: Vec<i64>,
}

impl VectorIndex {
    pub fn load(store: &Store, model: &str) -> Result<Self, DocsError> {
        let mut index = VectorIndex::default();
        store.for_each_vector(model, |id, scale, bytes| {
            if !index.matrix.push_blob(scale, bytes) {
                tracing::warn!(chunk = id, "document vector of the wrong size skipped");
                return;
            }
            index.chunk_ids.push(id);
        })?;
        Ok(index)
    }

    /// The `limit` chunks most similar to `query` (unit length), as (chunk id, cosine).
    pub fn search(&self, query: &[f32], limit: usize) -> Vec<(i64, f32)> {
        let Some(q) = self.matrix.query(query).filter(|_| limit > 0) else {
            return Vec::new();
        };
        let scored: Vec<(i64, f32)> = self
            .chunk_ids
            .iter()
            .enumerate()
            .map(|(i, &id)| (id, self.matrix.similarity(&q, i)))
            .collect();
        top_k(scored, limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retrieval::QuantizedVector;

    #[test]
    fn nearest_chunks_first() {
        let mut idx = VectorIndex::default();
        for (id, v) in [(1, [0.0f32, 1.0]), (2, [1.0, 0.0]), (3, [0.6, 0.8])] {
            assert!(idx.matrix.push(&QuantizedVector::quantize(&v)));
            idx.chunk_ids.push(id);
        }
        let hits = idx.search(&[1.0, 0.0], 2);
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), vec![2, 3]);
    }
}
