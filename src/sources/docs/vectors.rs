//! The semantic side of document search: every chunk's int8 embedding (quantised as history
//! does it, [`QuantizedVector`]) held in memory and scanned exactly. Tens of thousands of
//! chunks take a few milliseconds per query; no approximate index to tune or rebuild.

// The same exact int8 scan as history's; one dot product serves both.
use crate::history::vectors::dot_i8;

use super::store::Store;
use super::DocsError;
use crate::history::store::QuantizedVector;

/// All stored chunk vectors of one embedding model.
#[derive(Default)]
pub(crate) struct VectorIndex {
    dims: usize,
    chunk_ids: Vec<i64>,
    scales: Vec<f32>,
    values: Vec<i8>,
}

impl VectorIndex {
    pub fn load(store: &Store, model: &str) -> Result<Self, DocsError> {
        let mut index = VectorIndex::default();
        store.for_each_vector(model, |id, scale, bytes| {
            if index.dims == 0 {
                index.dims = bytes.len();
            }
            if bytes.len() != index.dims {
                tracing::warn!(chunk = id, "document vector of the wrong size skipped");
                return;
            }
            index.chunk_ids.push(id);
            index.scales.push(scale);
            index.values.extend(bytes.iter().map(|&b| b as i8));
        })?;
        Ok(index)
    }

    pub fn len(&self) -> usize {
        self.chunk_ids.len()
    }

    /// The `limit` chunks most similar to `query` (unit length), as (chunk id, cosine).
    pub fn search(&self, query: &[f32], limit: usize) -> Vec<(i64, f32)> {
        if self.len() == 0 || query.len() != self.dims || limit == 0 {
            return Vec::new();
        }
        let q = QuantizedVector::quantize(query);
        let mut scored: Vec<(i64, f32)> = self
            .chunk_ids
            .iter()
            .enumerate()
            .map(|(i, &id)| {
                let row = &self.values[i * self.dims..(i + 1) * self.dims];
                (id, dot_i8(&q.values, row) as f32 * q.scale * self.scales[i])
            })
            .collect();
        let limit = limit.min(scored.len());
        scored.select_nth_unstable_by(limit - 1, |a, b| b.1.total_cmp(&a.1));
        scored.truncate(limit);
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        scored
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_matches_naive() {
        let a: Vec<i8> = (0..389).map(|i| ((i * 37) % 255 - 127) as i8).collect();
        let b: Vec<i8> = (0..389).map(|i| ((i * 91) % 255 - 127) as i8).collect();
        let naive: i32 = a.iter().zip(&b).map(|(&x, &y)| x as i32 * y as i32).sum();
        assert_eq!(dot_i8(&a, &b), naive);
    }

    #[test]
    fn nearest_chunks_first() {
        let mut idx = VectorIndex {
            dims: 2,
            ..Default::default()
        };
        for (id, v) in [(1, [0.0f32, 1.0]), (2, [1.0, 0.0]), (3, [0.6, 0.8])] {
            let q = QuantizedVector::quantize(&v);
            idx.chunk_ids.push(id);
            idx.scales.push(q.scale);
            idx.values.extend(q.values);
        }
        let hits = idx.search(&[1.0, 0.0], 2);
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), vec![2, 3]);
    }
}
