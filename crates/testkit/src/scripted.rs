//! Test doubles for the research loop's pure logic: a scripted LLM that answers each prompt
//! kind with valid JSON, a bag-of-words embedder, and an in-memory source. The real-model
//! tests (`research_real.rs`) run the same loop with SmolLM2 and all-MiniLM-L6-v2.

use std::sync::Mutex;

use rudder::embed::{EmbedError, Embedder};
use rudder::llm::{CancelToken, Completion, FinishReason, Llm, LlmError, Request, Timing, Usage};
use rudder::sources::{CitationTarget, Evidence, Source, SourceError};
use serde_json::json;

/// Scores the scripted alignment call returns: (candidate index, checklist items) → scores.
pub type AlignFn = Box<dyn Fn(usize, usize) -> Vec<u8> + Send + Sync>;
/// The reflection's JSON for a reflection prompt.
pub type ReflectFn = Box<dyn Fn(&str) -> serde_json::Value + Send + Sync>;

pub struct ScriptedLlm {
    pub align: AlignFn,
    /// Answers reflection prompts; by default nothing changes, and steering messages are
    /// summarised as "The user asked: …".
    pub reflect: Option<ReflectFn>,
    /// Time each call takes, so other threads and processes can act mid-run.
    pub delay: std::time::Duration,
    /// Once set, every call hangs (a process to be killed mid-step waits here).
    pub freeze: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// Prompt kinds whose output is cut off mid-JSON, as when `max_tokens` runs out.
    pub truncate: Vec<&'static str>,
    /// Calls the model says it serves at once (the loop then runs a level's nodes together).
    pub parallel: usize,
    /// Calls in flight now, and the most there were at once.
    pub in_flight: std::sync::atomic::AtomicUsize,
    pub peak: std::sync::atomic::AtomicUsize,
    pub calls: Mutex<Vec<&'static str>>,
    /// Every prompt answered, with its kind, in order.
    pub prompts: Mutex<Vec<(&'static str, String)>>,
}

impl Default for ScriptedLlm {
    fn default() -> Self {
        Self::new()
    }
}

impl ScriptedLlm {
    /// Candidate 0 covers every checklist item well, the others nothing.
    pub fn new() -> Self {
        Self::with_alignment(Box::new(|i, n| vec![if i == 0 { 2 } else { 0 }; n]))
    }

    pub fn with_alignment(align: AlignFn) -> Self {
        Self {
            align,
            reflect: None,
            delay: std::time::Duration::ZERO,
            freeze: None,
            truncate: Vec::new(),
            parallel: 1,
            in_flight: std::sync::atomic::AtomicUsize::new(0),
            peak: std::sync::atomic::AtomicUsize::new(0),
            calls: Mutex::new(Vec::new()),
            prompts: Mutex::new(Vec::new()),
        }
    }

    pub fn count(&self, kind: &str) -> usize {
        self.calls
            .lock()
            .unwrap()
            .iter()
            .filter(|k| **k == kind)
            .count()
    }

    /// The prompts of one kind the model was given, in order.
    pub fn prompts_of(&self, kind: &str) -> Vec<String> {
        self.prompts
            .lock()
            .unwrap()
            .iter()
            .filter(|(k, _)| *k == kind)
            .map(|(_, p)| p.clone())
            .collect()
    }
}

/// A number from 1 to 9999 that depends only on `text` (FNV-1a).
pub fn stable_number(text: &str) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in text.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x100000001b3);
    }
    h % 9999 + 1
}

fn after<'a>(text: &'a str, marker: &str) -> &'a str {
    text.split_once(marker).map(|(_, r)| r).unwrap_or("")
}

fn line_after(text: &str, marker: &str) -> String {
    after(text, marker)
        .lines()
        .next()
        .unwrap_or("")
        .trim()
        .to_string()
}

/// The title and text of passage `n` of a node prompt (`[n] title`, then its text).
fn passage(prompt: &str, n: usize) -> (String, String) {
    let mut lines = after(prompt, "Search results (numbered passages):").lines();
    let head = format!("[{n}] ");
    let title = lines
        .find_map(|l| l.strip_prefix(head.as_str()))
        .unwrap_or("")
        .to_string();
    (title, lines.next().unwrap_or("").trim().to_string())
}

/// The facts a report prompt lists ("1. …" lines after `marker`), without their numbers.
fn facts_after(prompt: &str, marker: &str) -> Vec<String> {
    after(prompt, marker)
        .lines()
        .skip_while(|l| l.trim().is_empty())
        .map_while(|l| {
            let (n, rest) = l.split_once(". ")?;
            n.parse::<usize>().ok().map(|_| rest.trim().to_string())
        })
        .collect()
}

fn facts(prompt: &str) -> Vec<String> {
    facts_after(prompt, "Facts:")
}

/// How many `[n]` numbered entries the text after `marker` has.
fn numbered(text: &str, marker: &str) -> usize {
    after(text, marker)
        .lines()
        .filter(|l| {
            l.starts_with('[')
                && l[1..]
                    .split(']')
                    .next()
                    .is_some_and(|n| n.parse::<usize>().is_ok())
        })
        .count()
}

impl Llm for ScriptedLlm {
    fn model_name(&self) -> &str {
        "scripted"
    }

    fn parallelism(&self) -> usize {
        self.parallel
    }

    fn complete(
        &self,
        request: &Request,
        _on_text: &mut dyn FnMut(&str),
        _cancel: &CancelToken,
    ) -> Result<Completion, LlmError> {
        let prompt = &request.messages.last().unwrap().content;
        use std::sync::atomic::Ordering::SeqCst;
        let now = self.in_flight.fetch_add(1, SeqCst) + 1;
        self.peak.fetch_max(now, SeqCst);
        struct Leave<'a>(&'a std::sync::atomic::AtomicUsize);
        impl Drop for Leave<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
            }
        }
        let _leave = Leave(&self.in_flight);
        if !self.delay.is_zero() {
            // With calls in flight together, later prompts (by content) finish first, so the
            // order calls finish in differs from the order they were made.
            let jitter = if self.parallel > 1 {
                std::time::Duration::from_millis(stable_number(prompt) % 20)
            } else {
                std::time::Duration::ZERO
            };
            std::thread::sleep(self.delay + jitter);
        }
        if let Some(f) = &self.freeze {
            while f.load(std::sync::atomic::Ordering::SeqCst) {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        }
        let (kind, value) = if prompt.contains("keeping the todo plan of a research project") {
            let value = match &self.reflect {
                Some(f) => f(prompt),
                None => {
                    let messages: Vec<String> =
                        after(prompt, "USER STEERING MESSAGES, sent while the research was running (most important):")
                            .lines()
                            .map(str::trim)
                            .take_while(|l| !l.is_empty())
                            .map(|l| l.split_once(". ").map(|(_, t)| t).unwrap_or(l).to_string())
                            .collect();
                    if messages.is_empty() {
                        json!({})
                    } else {
                        json!({"steering_summary": format!("The user asked: {}", messages.join(" / "))})
                    }
                }
            };
            ("reflect", value)
        } else if prompt.contains("You translate one text into") {
            // The tea question and the first clarifying question in French, both ways;
            // anything else comes back as it was, which the translation check refuses for
            // three words and more.
            const PAIRS: &[(&str, &str)] = &[
                (
                    "Comment faut-il infuser le thé à la maison ?",
                    "How should I brew tea?",
                ),
                (
                    "Infusez-vous du thé pour vous-même chaque jour, ou pour des invités ?",
                    "Do you brew tea for yourself every day, or for guests?",
                ),
                ("Pour moi", "For myself"),
                ("Pour des invités", "For guests"),
            ];
            let text = after(prompt, "Text:")
                .trim_start()
                .lines()
                .next()
                .unwrap_or("")
                .trim()
                .to_string();
            let out = PAIRS
                .iter()
                .find_map(|(fr, en)| {
                    (text == *fr)
                        .then_some(*en)
                        .or((text == *en).then_some(*fr))
                })
                .unwrap_or(&text);
            ("translate", json!({ "text": out }))
        } else if prompt.contains("Some of these learnings cannot be kept") {
            // A node's second try: nothing more in its passages.
            ("node_retry", json!({"learnings": [], "tags": []}))
        } else if prompt.contains("list 4 to 6 specific checklist items") {
            (
                "checklist",
                json!({"checklist_items": ["Covers the cost", "Covers safety", "Covers history", "Covers daily practice"]}),
            )
        } else if prompt.contains("Search results (numbered passages):") {
            let question = line_after(prompt, "Research question:");
            let passages = numbered(prompt, "Search results (numbered passages):");
            // Numbered by the question, not by call order, so a resumed run (a new process)
            // writes exactly what an uninterrupted one would.
            let n = stable_number(&question);
            // Findings the loop keeps: declarative sentences their passages support (the
            // first passage's text, and the last one's as what its source says).
            let learnings = if passages == 0 {
                json!([])
            } else {
                let (_, first) = passage(prompt, 1);
                let (title, last) = passage(prompt, passages);
                json!([
                    {"insight": first, "sources": [1]},
                    {"insight": format!("The {title} passage says that {last}"), "sources": [passages]},
                ])
            };
            let mut v = json!({"learnings": learnings, "tags": [format!("topic{n}")]});
            if prompt.contains("wild-card question") {
                let words = ["brewing", "farming", "markets", "chemistry", "culture"];
                let mut follow_ups: Vec<serde_json::Value> = (0..5)
                    .map(|i| {
                        json!({
                            "question": format!("How does {} shape the tea I brew {n}?", words[i]),
                            "confidence": 9 - i,
                            "tags": [words[i]],
                        })
                    })
                    .collect();
                // What a small model does: pair the subject with an unrelated hobby, with
                // confidence. The loop must drop it as off the query.
                follow_ups.push(json!({
                    "question": format!("Which football boots suit wide feet {n}?"),
                    "confidence": 10,
                    "tags": ["football"],
                }));
                v["follow_up_questions"] = json!(follow_ups);
                v["wild_card_question"] =
                    json!({"question": format!("Which poems mention tea {n}?"), "confidence": 4});
            }
            ("node", v)
        } else if prompt.contains("ONE short clarifying question") {
            let asked = after(prompt, "Already asked (do not ask again):")
                .lines()
                .filter(|l| l.starts_with("- "))
                .count();
            let questions = [
                "Do you brew tea for yourself every day, or for guests?",
                "How much do you want to spend on tea to brew each month?",
                "Should the report compare green, black and oolong tea brewing?",
            ];
            (
                "clarify",
                json!({
                    "question": questions[asked.min(2)],
                    "suggested_answers": ["For myself", "For guests", "Both"],
                }),
            )
        } else if prompt.contains("answered clarifying questions") {
            (
                "clarify_summary",
                json!({
                    "brief": "Brew tea at home for guests, on a small budget.",
                    "checklist_items": ["Covers brewing for guests", "Covers the cost of tea"],
                }),
            )
        } else if prompt.contains("candidate research directions") {
            let items: usize = after(prompt, "Checklist items to evaluate (")
                .split(' ')
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            let count: usize = prompt
                .lines()
                .find(|l| l.ends_with("candidate research directions, each with the evidence a search found for it:"))
                .and_then(|l| l.split(' ').next())
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            (
                "align",
                json!({
                    "current_findings": {"scores": vec![0; items]},
                    "candidates": (0..count).map(|i| json!({"scores": (self.align)(i, items)})).collect::<Vec<_>>(),
                }),
            )
        } else if prompt.contains("checking in with the user") {
            let listed = after(prompt, "Available research directions:")
                .lines()
                .filter(|l| {
                    l.split(". ")
                        .next()
                        .is_some_and(|n| n.parse::<usize>().is_ok())
                })
                .count();
            (
                "question",
                json!({
                    "introduction": "Which of these should I research next?",
                    "directions": (1..=listed).map(|i| format!("Direction number {i}")).collect::<Vec<_>>(),
                }),
            )
        } else if prompt.contains("updating what is known about them") {
            (
                "persona",
                json!({"additional_persona_info": "Cares about brewing.", "new_checklist_items": ["Covers brewing in depth"]}),
            )
        } else if prompt.contains("You write one paragraph of a research report") {
            // The facts back, joined: prose the checks can hold against the passages.
            ("paragraph", json!({"text": facts(prompt).join(" ")}))
        } else if prompt.contains("You write the opening of a research report") {
            ("summary", json!({"text": facts(prompt).join(" ")}))
        } else if prompt.contains("You tell one reader what research facts mean") {
            let need = line_after(prompt, "The reader's need:");
            (
                "need",
                json!({"text": format!("For {need}, {}", facts(prompt).join(" "))}),
            )
        } else if prompt.contains("You write the heading of one section") {
            let n = stable_number(&facts_after(prompt, "Facts in this section:").join(" "));
            ("heading", json!({"heading": format!("Notes on topic {n}")}))
        } else if prompt.contains("You write the title of a research report") {
            ("title", json!({"title": "What we learned about tea"}))
        } else if prompt.contains("Each line is something this person may have searched") {
            // Facet lines (plain text): about a person's situation, none about tea.
            (
                "facets",
                json!("I can spend about 20 euros\nmy kitchen is very small\nplease keep answers short"),
            )
        } else if prompt
            .contains("Does this finding matter for this reader because of what you know")
        {
            // A finding matters for what is known of the reader when they share a word of
            // five letters or more ("throat"); for a reader of whom nothing is known, never.
            let words = |t: &str| -> Vec<String> {
                t.split(|c: char| !c.is_alphanumeric())
                    .filter(|w| w.len() >= 5)
                    .map(str::to_lowercase)
                    .collect()
            };
            let known = words(&line_after(prompt, "What you know about the reader:"));
            let finding = words(&line_after(prompt, "Finding:"));
            let matters = finding.iter().any(|w| known.contains(w));
            let p = if matters { [0.9, 0.1] } else { [0.1, 0.9] };
            ("need judge", json!({ "probabilities": p }))
        } else if prompt.contains("Would a careful advisor take this fact about the person") {
            // A fact bears on a question that shares a word of four letters or more with it.
            let words = |t: &str| -> Vec<String> {
                t.split(|c: char| !c.is_alphanumeric())
                    .filter(|w| w.len() >= 4)
                    .map(str::to_lowercase)
                    .collect()
            };
            let question = words(&line_after(prompt, "Question:"));
            let fact = words(&line_after(prompt, "Fact:"));
            let bears = fact.iter().any(|w| question.contains(w));
            let p = if bears { [0.9, 0.1] } else { [0.1, 0.9] };
            ("relevance", json!({ "probabilities": p }))
        } else if prompt.contains("You check a report against its source") {
            // The prose copies the facts, so their passages state it.
            ("support", json!({"probabilities": [0.9, 0.1]}))
        } else {
            return Err(LlmError::Backend(format!(
                "unscripted prompt: {}",
                &prompt[..prompt.len().min(200)]
            )));
        };
        self.calls.lock().unwrap().push(kind);
        self.prompts
            .lock()
            .unwrap()
            .push((kind, prompt.to_string()));
        // A plain-text answer is the string itself, not its JSON.
        let mut text = match &value {
            serde_json::Value::String(s) => s.clone(),
            v => v.to_string(),
        };
        let mut finish = FinishReason::Stop;
        if self.truncate.contains(&kind) {
            text.truncate(text.len() / 2);
            finish = FinishReason::Length;
        }
        Ok(Completion {
            usage: Usage {
                prompt_tokens: (prompt.len() / 4) as u64,
                cached_tokens: 0,
                generated_tokens: (text.len() / 4) as u64,
                calls: 1,
            },
            text,
            timing: Timing::default(),
            finish,
        })
    }
}

/// Words of more than two letters hashed into `.0` buckets (FNV-1a), normalised: texts
/// sharing words are similar. More buckets, fewer collisions.
pub struct HashedWords(pub usize);

impl Embedder for HashedWords {
    fn dimensions(&self) -> usize {
        self.0
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let n = self.0;
        Ok(texts
            .iter()
            .map(|t| {
                let mut v = vec![0f32; n];
                for w in t
                    .split(|c: char| !c.is_alphanumeric())
                    .filter(|w| w.len() > 2)
                {
                    let mut h: u64 = 0xcbf29ce484222325;
                    for b in w.to_lowercase().bytes() {
                        h = (h ^ u64::from(b)).wrapping_mul(0x100000001b3);
                    }
                    v[(h % n as u64) as usize] += 1.0;
                }
                let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
                v.iter_mut().for_each(|x| *x /= norm);
                v
            })
            .collect())
    }
}

/// [`HashedWords`] with 64 buckets, the research loop tests' embedder.
pub struct BagOfWords;

impl Embedder for BagOfWords {
    fn dimensions(&self) -> usize {
        64
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        HashedWords(64).embed(texts)
    }
}

/// Passages in memory, ranked by shared words.
pub struct MemorySource(pub Vec<(String, String)>);

impl MemorySource {
    pub fn tea() -> Self {
        let p = |t: &str, b: &str| (t.to_string(), b.to_string());
        Self(vec![
            p("Green tea", "Green tea is brewed at 70 to 80 degrees; farming in Japan shapes its taste."),
            p("Black tea", "Black tea is fully oxidised and brewed with boiling water; markets price it by grade."),
            p("Tea chemistry", "Tea contains caffeine and catechins; chemistry explains its bitterness."),
            p("Tea culture", "Tea culture in China and Britain; poems mention tea since the Tang dynasty."),
            p("Tea cost", "The cost of tea ranges widely; markets and farming decide the price of tea."),
            p("Tea safety", "Safety: tea is safe in moderation; brewing tea too hot may harm the throat."),
        ])
    }
}

impl Source for MemorySource {
    fn name(&self) -> &str {
        "memory"
    }
    fn search(
        &mut self,
        query: &str,
        limit: usize,
        _embedder: Option<(&dyn Embedder, &str)>,
    ) -> Result<Vec<Evidence>, SourceError> {
        let words: Vec<String> = query
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.len() > 2)
            .map(str::to_lowercase)
            .collect();
        let mut scored: Vec<(usize, usize)> = self
            .0
            .iter()
            .enumerate()
            .map(|(i, (t, b))| {
                let text = format!("{t} {b}").to_lowercase();
                (
                    i,
                    words.iter().filter(|w| text.contains(w.as_str())).count(),
                )
            })
            .filter(|(_, s)| *s > 0)
            .collect();
        scored.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        Ok(scored
            .into_iter()
            .take(limit)
            .map(|(i, s)| Evidence {
                target: CitationTarget::Document {
                    path: format!("/corpus/{i}.md"),
                    chunk: 0,
                    page: None,
                    url: None,
                    name: None,
                },
                title: self.0[i].0.clone(),
                text: self.0[i].1.clone(),
                score: s as f32,
            })
            .collect())
    }
}
