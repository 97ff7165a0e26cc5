//! A model for tests: it answers each prompt with a function of it and keeps every prompt, so
//! a test of a stage can script the model and read what the stage asked.

use std::sync::Mutex;

use crate::{CancelToken, Completion, FinishReason, Llm, LlmError, Request, Timing, Usage};

/// Answers each prompt (the last message) with what `answer` returns, and keeps the requests.
pub struct ScriptedLlm {
    answer: Box<dyn Fn(&str) -> String + Send + Sync>,
    requests: Mutex<Vec<Request>>,
    finish: FinishReason,
}

impl ScriptedLlm {
    pub fn new(answer: impl Fn(&str) -> String + Send + Sync + 'static) -> Self {
        Self {
            answer: Box::new(answer),
            requests: Mutex::new(Vec::new()),
            finish: FinishReason::Stop,
        }
    }

    /// Answers the calls with `answers`, in order, and fails a call past the last one.
    pub fn in_order(answers: Vec<String>) -> Self {
        let queue = Mutex::new(std::collections::VecDeque::from(answers));
        Self::new(move |_| {
            queue
                .lock()
                .unwrap()
                .pop_front()
                .expect("the test scripted fewer answers than the calls made")
        })
    }

    /// The same model, saying each answer ended for `finish` (a cut at the token limit).
    pub fn finishing(mut self, finish: FinishReason) -> Self {
        self.finish = finish;
        self
    }

    /// Every request so far, in order.
    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }

    /// Every prompt (a request's last message) so far, in order.
    pub fn prompts(&self) -> Vec<String> {
        self.requests()
            .iter()
            .map(|r| {
                r.messages
                    .last()
                    .map_or(String::new(), |m| m.content.clone())
            })
            .collect()
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
        let prompt = request
            .messages
            .last()
            .map_or(String::new(), |m| m.content.clone());
        self.requests.lock().unwrap().push(request.clone());
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
