//! Test doubles the library's unit tests share: a model that answers each prompt with a
//! function of it (keeping every prompt), and a bag-of-words embedder under which texts with
//! the same content words embed alike.

use std::sync::Mutex;

use crate::embed::{EmbedError, Embedder};
use crate::llm::{CancelToken, Completion, FinishReason, Llm, LlmError, Request, Timing, Usage};

/// Answers each prompt (the last message) with what `answer` returns, and keeps the prompts.
pub struct ScriptedLlm {
    answer: Box<dyn Fn(&str) -> String + Send + Sync>,
    prompts: Mutex<Vec<String>>,
    finish: FinishReason,
}

impl ScriptedLlm {
    pub fn new(answer: impl Fn(&str) -> String + Send + Sync + 'static) -> Self {
        Self {
            answer: Box::new(answer),
            prompts: Mutex::new(Vec::new()),
            finish: FinishReason::Stop,
        }
    }

    /// The same model, saying each answer ended for `finish` (a cut at the token limit).
    pub fn finishing(mut self, finish: FinishReason) -> Self {
        self.finish = finish;
        self
    }

    /// Every prompt so far, in order.
    pub fn prompts(&self) -> Vec<String> {
        self.prompts.lock().unwrap().clone()
    }

    /// The prompts so far that contain `marker`.
    pub fn prompts_with(&self, marker: &str) -> Vec<String> {
        self.prompts()
            .into_iter()
            .filter(|p| p.contains(marker))
            .collect()
    }
}

impl Llm for ScriptedLlm {
    fn model_name(&self) -> &str {
        "scripted"
    }

    fn complete(
        &self,
        request: &Request,
        _on_text: &mut dyn FnMut(&str),
        _cancel: &CancelToken,
    ) -> Result<Completion, LlmError> {
        let prompt = request.messages.last().unwrap().content.clone();
        self.prompts.lock().unwrap().push(prompt.clone());
        let text = (self.answer)(&prompt);
        Ok(Completion {
            usage: Usage {
                prompt_tokens: prompt.len() as u64 / 4,
                generated_tokens: text.len() as u64 / 4,
                calls: 1,
                ..Usage::default()
            },
            text,
            timing: Timing::default(),
            finish: self.finish,
        })
    }
}

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
