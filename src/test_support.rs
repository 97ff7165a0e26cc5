//! Test doubles the library's unit tests share: a model that answers each prompt with a
//! function of it (keeping every prompt; `rudder-llm`'s, re-exported), and a bag-of-words
//! embedder under which texts with the same content words embed alike.

use crate::embed::{EmbedError, Embedder};
pub use rudder_llm::scripted::ScriptedLlm;

/// Content words hashed into 256 buckets.
pub struct WordsEmbedder;

impl Embedder for WordsEmbedder {
    fn dimensions(&self) -> usize {
        256
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts
            .iter()
            .map(|t| {
                let mut v = vec![0f32; 256];
                for w in crate::checks::text::content_words(t) {
                    let h = w.bytes().fold(0xcbf29ce484222325u64, |h, b| {
                        (h ^ u64::from(b)).wrapping_mul(0x100000001b3)
                    });
                    v[(h % 256) as usize] += 1.0;
                }
                v
            })
            .collect())
    }
}
