//! Int8 embeddings: quantisation, the blob stored in SQLite, and an in-memory matrix scanned
//! exactly.
//!
//! Each vector is quantised on its own (symmetric, largest magnitude → 127) and kept with its
//! scale: ~4× smaller than f32 with cosine similarities within about 0.01. An exact scan over
//! int8 takes a few milliseconds per query for hundreds of thousands of rows on two cores, so
//! there is no approximate index to tune or rebuild. What a row belongs to (a chunk, a session)
//! and how rows add up to results is the caller's business.

/// An int8-quantised embedding: `value ≈ values[i] as f32 * scale`.
#[derive(Debug, Clone, PartialEq)]
pub struct QuantizedVector {
    pub scale: f32,
    pub values: Vec<i8>,
}

impl QuantizedVector {
    /// Symmetric per-vector quantisation: the largest magnitude maps to 127.
    pub fn quantize(v: &[f32]) -> Self {
        let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
        let scale = if max > 0.0 { max / 127.0 } else { 1.0 };
        Self {
            scale,
            values: v
                .iter()
                .map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8)
                .collect(),
        }
    }

    /// The values as stored in a SQLite blob, one byte each (the scale goes in its own column).
    pub fn to_blob(&self) -> Vec<u8> {
        self.values.iter().map(|&x| x as u8).collect()
    }

    /// A vector read back from its blob and scale.
    pub fn from_blob(scale: f32, blob: &[u8]) -> Self {
        Self {
            scale,
            values: blob.iter().map(|&b| b as i8).collect(),
        }
    }
}

/// Stored int8 vectors of one size, row after row, for exact similarity search.
#[derive(Debug, Default, Clone)]
pub struct Int8Matrix {
    dims: usize,
    scales: Vec<f32>,
    values: Vec<i8>,
}

impl Int8Matrix {
    /// Appends a row read from a stored blob. The first row fixes the size; a row of another
    /// size (a different model's leftovers) is refused with `false`.
    pub fn push_blob(&mut self, scale: f32, blob: &[u8]) -> bool {
        if self.scales.is_empty() {
            self.dims = blob.len();
        }
        if blob.len() != self.dims {
            return false;
        }
        self.scales.push(scale);
        self.values.extend(blob.iter().map(|&b| b as i8));
        true
    }

    /// Appends a quantised vector (tests and benchmarks build matrices this way).
    pub fn push(&mut self, v: &QuantizedVector) -> bool {
        self.push_blob(v.scale, &v.to_blob())
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.scales.len()
    }

    pub fn is_empty(&self) -> bool {
        self.scales.is_empty()
    }

    /// The query in the matrix's form, or `None` when there is nothing to compare it with (no
    /// rows, or another size).
    pub fn query(&self, query: &[f32]) -> Option<QuantizedVector> {
        (!self.is_empty() && query.len() == self.dims).then(|| QuantizedVector::quantize(query))
    }

    /// Cosine similarity of row `row` and `query` (from [`query`](Self::query)), when both were
    /// unit length before quantisation.
    #[inline]
    pub fn similarity(&self, query: &QuantizedVector, row: usize) -> f32 {
        let values = &self.values[row * self.dims..(row + 1) * self.dims];
        dot_i8(&query.values, values) as f32 * query.scale * self.scales[row]
    }
}

/// The best `limit` of `(id, score)` pairs, best first; equal scores put the lower id first.
/// Selecting before sorting keeps this linear in the number of candidates.
pub fn top_k(mut scored: Vec<(i64, f32)>, limit: usize) -> Vec<(i64, f32)> {
    let limit = limit.min(scored.len());
    if limit == 0 {
        scored.clear();
        return scored;
    }
    scored.select_nth_unstable_by(limit - 1, |a, b| b.1.total_cmp(&a.1));
    scored.truncate(limit);
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    scored
}

/// Integer dot product. The scan spends nearly all its time here, so on x86-64 it uses AVX2
/// when the CPU has it (detected once at run time; release builds target baseline x86-64).
pub fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
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

/// Sixteen independent lanes of i16 products widened to i32: the shape LLVM turns into
/// multiply-add instructions.
#[inline(always)]
fn dot_i8_portable(a: &[i8], b: &[i8]) -> i32 {
    const LANES: usize = 16;
    let mut acc = [0i32; LANES];
    let (ca, ra) = a.split_at(a.len() / LANES * LANES);
    let (cb, rb) = b.split_at(ca.len().min(b.len()));
    for (xa, xb) in ca.chunks_exact(LANES).zip(cb.chunks_exact(LANES)) {
        for l in 0..LANES {
            acc[l] += i32::from(i16::from(xa[l]) * i16::from(xb[l]));
        }
    }
    let tail: i32 = ra
        .iter()
        .zip(rb)
        .map(|(&x, &y)| i32::from(x) * i32::from(y))
        .sum();
    acc.iter().sum::<i32>() + tail
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantization_keeps_direction() {
        let v = [0.5f32, -0.25, 0.0, 0.125];
        let q = QuantizedVector::quantize(&v);
        assert_eq!(q.values[0], 127);
        for (x, y) in v.iter().zip(&q.values) {
            assert!((x - *y as f32 * q.scale).abs() < 0.003);
        }
        assert_eq!(QuantizedVector::from_blob(q.scale, &q.to_blob()), q);
    }

    #[test]
    fn dot_product_matches_the_naive_sum() {
        let a: Vec<i8> = (0..389).map(|i| ((i * 37) % 255 - 127) as i8).collect();
        let b: Vec<i8> = (0..389).map(|i| ((i * 91) % 255 - 127) as i8).collect();
        let naive: i32 = a.iter().zip(&b).map(|(&x, &y)| x as i32 * y as i32).sum();
        assert_eq!(dot_i8(&a, &b), naive);
        assert_eq!(dot_i8_portable(&a, &b), naive);
        let extreme = vec![127i8; 384];
        assert_eq!(dot_i8(&extreme, &extreme), 127 * 127 * 384);
    }

    #[test]
    fn matrix_scores_rows_and_refuses_other_sizes() {
        let mut m = Int8Matrix::default();
        assert!(m.query(&[1.0, 0.0]).is_none());
        assert!(m.push(&QuantizedVector::quantize(&[0.0, 1.0])));
        assert!(m.push(&QuantizedVector::quantize(&[0.6, 0.8])));
        assert!(!m.push_blob(1.0, &[1, 2, 3]));
        assert_eq!(m.len(), 2);
        assert!(m.query(&[1.0, 0.0, 0.0]).is_none());
        let q = m.query(&[1.0, 0.0]).unwrap();
        assert!(m.similarity(&q, 0).abs() < 0.02);
        assert!((m.similarity(&q, 1) - 0.6).abs() < 0.02);
    }

    #[test]
    fn top_k_is_best_first_with_lower_ids_on_ties() {
        let scored = vec![(4, 0.5), (1, 0.9), (3, 0.5), (2, 0.1)];
        assert_eq!(top_k(scored.clone(), 3), vec![(1, 0.9), (3, 0.5), (4, 0.5)]);
        assert!(top_k(scored, 0).is_empty());
        assert_eq!(top_k(vec![(1, 0.2)], 5), vec![(1, 0.2)]);
    }
}
