//! The semantic side of document search: every chunk's int8 embedding (quantised as history
//! does it, [`QuantizedVector`]) held in memory and scanned exactly. Tens of thousands of
//! chunks take a few milliseconds per query; no approximate index to tune or rebuild.

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

/// Integer dot product, with AVX2 when the CPU has it (checked at run time).
fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2, checked just above.
            return unsafe { dot_i8_avx2(a, b) };
        }
    }
    dot_i8_portable(a, b)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn dot_i8_avx2(a: &[i8], b: &[i8]) -> i32 {
    dot_i8_portable(a, b)
}

/// Sixteen lanes of widened products: the shape LLVM turns into multiply-add instructions.
#[inline(always)]
fn dot_i8_portable(a: &[i8], b: &[i8]) -> i32 {
    const LANES: usize = 16;
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0i32; LANES];
    let whole = n / LANES * LANES;
    for (xa, xb) in a[..whole]
        .chunks_exact(LANES)
        .zip(b[..whole].chunks_exact(LANES))
    {
        for l in 0..LANES {
            acc[l] += i32::from(i16::from(xa[l]) * i16::from(xb[l]));
        }
    }
    let tail: i32 = a[whole..]
        .iter()
        .zip(&b[whole..])
        .map(|(&x, &y)| i32::from(x) * i32::from(y))
        .sum();
    acc.iter().sum::<i32>() + tail
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
