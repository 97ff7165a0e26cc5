//! LLM judges for persona-tailored reports (STEER §3.1 and Appendix K; BESPOKE §3.3–3.4):
//!
//! * **Alignment** — each ground-truth aspect scored 0/1/2 against the report,
//!   `Align = Σ align(R, a) / 2|A|`.
//! * **Focus_kp** — key points extracted from the report, then each mapped to the aspect it
//!   covers (or none); `Focus = |mapped| / |KP|`.
//! * **Checklist agreement** — how well a system's inferred persona checklist covers the
//!   ground-truth aspects (STEER F.3), with the same 0/1/2 scheme as Alignment.
//! * **BESPOKE** — need alignment, content depth, tone and explanation style, 1–5 each, with
//!   feedback.
//!
//! Every judge works over any [`Llm`]: the local llama.cpp model or the OpenAI-compatible
//! client. Every output is constrained by a JSON schema built for the call (exact list lengths,
//! score enums, bounded strings), parsed, and validated again (servers may enforce schemas
//! loosely), and every call's usage and wall time is added to [`Judge::accounting`].

use std::sync::Mutex;
use std::time::Instant;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::persona::{clip, format_aspects, Aspect};
use super::EvalError;
use rudder::llm::{complete_schema, GenerationOptions, Llm, Message, Usage};

/// Tokens, calls and wall time spent by a judge or a simulated user.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Accounting {
    pub usage: Usage,
    /// Wall time of the calls, in seconds.
    pub seconds: f64,
    /// Calls whose output did not parse into the schema (their tokens are counted in `usage`).
    pub invalid_outputs: u64,
}

impl std::ops::AddAssign for Accounting {
    fn add_assign(&mut self, other: Self) {
        self.usage += other.usage;
        self.seconds += other.seconds;
        self.invalid_outputs += other.invalid_outputs;
    }
}

/// The judges' knobs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct JudgeSettings {
    /// Most report characters shown to a judge. The default fits a 4096-token context: about
    /// 1,500–1,700 tokens of report, plus ~350 of instructions, up to ~800 for eight aspects
    /// with their reasons and evidence, and ~550 of output for eight scored aspects.
    pub report_chars: usize,
    /// Characters of each aspect's reason and evidence shown to a judge.
    pub aspect_detail_chars: usize,
    /// Most key points extracted for Focus_kp (8 × 160 characters of output still fits a 4k
    /// context next to the clipped report).
    pub max_key_points: usize,
    /// Sampling seed (judges decode greedily, so it only matters to servers that sample).
    pub seed: u32,
}

impl Default for JudgeSettings {
    fn default() -> Self {
        Self {
            report_chars: 6_000,
            aspect_detail_chars: 120,
            max_key_points: 8,
            seed: 42,
        }
    }
}

/// Alignment of a report (or a checklist) with the ground-truth aspects.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Alignment {
    /// 0, 1 or 2 per aspect, in the aspects' order.
    pub per_aspect: Vec<u8>,
    /// The judge's reasoning per aspect.
    pub reasoning: Vec<String>,
    /// `Σ per_aspect / (2 |A|)`, in [0, 1].
    pub score: f32,
}

/// Focus_kp of a report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Focus {
    pub key_points: Vec<String>,
    /// The aspect (0-based) each key point covers best, or `None`.
    pub mapped: Vec<Option<usize>>,
    /// Share of key points mapped to some aspect, in [0, 1]; 0 when there are no key points.
    pub score: f32,
}

/// BESPOKE's four personalisation criteria, 1–5 each.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Bespoke {
    pub need_alignment: u8,
    pub content_depth: u8,
    pub tone: u8,
    pub explanation_style: u8,
    /// The judge's feedback, one line per criterion.
    pub feedback: String,
}

impl Bespoke {
    /// Mean of the four scores.
    pub fn mean(&self) -> f32 {
        f32::from(self.need_alignment + self.content_depth + self.tone + self.explanation_style)
            / 4.0
    }
}

// Longest strings the grammars allow, in characters. Reasoning is kept short: a small judge
// spends its tokens on it, and the score is what is measured.
const REASONING_CHARS: usize = 200;
const MAP_REASONING_CHARS: usize = 150;
const KEY_POINT_CHARS: usize = 160;
const FEEDBACK_CHARS: usize = 240;
// Prompt-side clipping of the persona and checklist items.
const PERSONA_CHARS: usize = 1_200;
const CHECKLIST_ITEM_CHARS: usize = 120;
const MAX_CHECKLIST_ITEMS: usize = 12;

/// Output token budget for `chars` of free text plus `extra` tokens of JSON around it: about
/// one token per character (as in `clarify`), because a small model under a grammar may spell
/// text out in tiny tokens, and a grammar-valid answer must never be cut off.
pub(crate) fn budget(chars: usize, extra: usize) -> u32 {
    u32::try_from(chars + extra).unwrap_or(u32::MAX)
}

/// Judges over one model. Methods take `&self`; accounting is kept behind a lock.
pub struct Judge<'a> {
    llm: &'a dyn Llm,
    settings: JudgeSettings,
    accounting: Mutex<Accounting>,
}

#[derive(Debug, Deserialize)]
struct Scored {
    evaluations: Vec<ScoredItem>,
}

#[derive(Debug, Deserialize)]
struct ScoredItem {
    #[serde(default)]
    reasoning: String,
    // i64, not u8: a server that ignores the enum may send anything; it is validated below.
    score: i64,
}

#[derive(Debug, Deserialize)]
struct KeyPoints {
    points: Vec<KeyPoint>,
}

#[derive(Debug, Deserialize)]
struct KeyPoint {
    content: String,
}

#[derive(Debug, Deserialize)]
struct Mapping {
    points: Vec<MappedPoint>,
}

#[derive(Debug, Deserialize)]
struct MappedPoint {
    verdict: i64,
}

#[derive(Debug, Deserialize)]
struct BespokeDraft {
    need_alignment: Criterion,
    content_depth: Criterion,
    tone: Criterion,
    explanation_style: Criterion,
}

#[derive(Debug, Deserialize)]
struct Criterion {
    #[serde(default)]
    feedback: String,
    score: i64,
}

/// `{"evaluations": [{"reasoning", "score"}; n]}`. Properties are listed so the reasoning comes
/// first (the grammar follows the schema's key order, which is alphabetical here).
fn scored_schema(n: usize) -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {
            "evaluations": {
                "type": "array",
                "minItems": n, "maxItems": n,
                "items": {
                    "type": "object",
                    "properties": {
                        "reasoning": {"type": "string", "maxLength": REASONING_CHARS},
                        "score": {"type": "integer", "enum": [0, 1, 2]},
                    },
                    "required": ["reasoning", "score"],
                },
            },
        },
        "required": ["evaluations"],
    })
}

fn keypoints_schema(max: usize) -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {
            "points": {
                "type": "array",
                "minItems": 1, "maxItems": max,
                "items": {
                    "type": "object",
                    "properties": {
                        "content": {"type": "string", "minLength": 3, "maxLength": KEY_POINT_CHARS},
                    },
                    "required": ["content"],
                },
            },
        },
        "required": ["points"],
    })
}

/// One verdict per key point: an aspect number, or 0 for none.
fn mapping_schema(points: usize, aspects: usize) -> serde_json::Value {
    let verdicts: Vec<usize> = (0..=aspects).collect();
    json!({
        "type": "object",
        "properties": {
            "points": {
                "type": "array",
                "minItems": points, "maxItems": points,
                "items": {
                    "type": "object",
                    "properties": {
                        "reasoning": {"type": "string", "maxLength": MAP_REASONING_CHARS},
                        "verdict": {"type": "integer", "enum": verdicts},
                    },
                    "required": ["reasoning", "verdict"],
                },
            },
        },
        "required": ["points"],
    })
}

fn bespoke_schema() -> serde_json::Value {
    let criterion = json!({
        "type": "object",
        "properties": {
            "feedback": {"type": "string", "maxLength": FEEDBACK_CHARS},
            "score": {"type": "integer", "enum": [1, 2, 3, 4, 5]},
        },
        "required": ["feedback", "score"],
    });
    json!({
        "type": "object",
        "properties": {
            "content_depth": criterion,
            "explanation_style": criterion,
            "need_alignment": criterion,
            "tone": criterion,
        },
        "required": ["content_depth", "explanation_style", "need_alignment", "tone"],
    })
}

/// The report as a judge sees it: without its reference list (citations markers stay; the
/// list only costs context), cut to `max_chars` at the last paragraph (or line) break that
/// fits, with a note saying how much was shown. A judge then scores what it saw, and the cut
/// is visible in the prompt rather than silent.
pub fn clip_report(markdown: &str, max_chars: usize) -> String {
    let body = match markdown.find("\n## References") {
        Some(i) => &markdown[..i],
        None => markdown,
    }
    .trim();
    let total = body.chars().count();
    if total <= max_chars {
        return body.to_string();
    }
    let cut = body
        .char_indices()
        .nth(max_chars)
        .map(|(i, _)| i)
        .unwrap_or(body.len());
    let head = &body[..cut];
    // Prefer a paragraph break in the last half of the window, then a line break.
    let end = head
        .rfind("\n\n")
        .filter(|&i| i >= cut / 2)
        .or_else(|| head.rfind('\n').filter(|&i| i >= cut / 2))
        .unwrap_or(cut);
    let shown = &head[..end];
    format!(
        "{}\n\n[Report truncated: the first {} of {} characters are shown.]",
        shown.trim_end(),
        shown.chars().count(),
        total
    )
}

/// Scores clamped into `lo..=hi` and fitted to `n` entries (missing ones score `lo`), with a
/// warning whenever the model's list needed fixing.
fn fit_scores(call: &str, raw: &[i64], n: usize, lo: u8, hi: u8) -> Vec<u8> {
    if raw.len() != n || raw.iter().any(|&s| s < i64::from(lo) || s > i64::from(hi)) {
        tracing::warn!(
            "judge {call}: expected {n} scores in {lo}..={hi}, got {raw:?}; clamping and padding"
        );
    }
    let mut out: Vec<u8> = raw
        .iter()
        .take(n)
        .map(|&s| s.clamp(i64::from(lo), i64::from(hi)) as u8)
        .collect();
    out.resize(n, lo);
    out
}

/// `Σ s / (2 n)`; 0 for no scores.
pub fn alignment_score(per_aspect: &[u8]) -> f32 {
    if per_aspect.is_empty() {
        return 0.0;
    }
    per_aspect.iter().map(|&s| f32::from(s)).sum::<f32>() / (2.0 * per_aspect.len() as f32)
}

/// Share of key points mapped to some aspect; 0 for no key points.
pub fn focus_score(mapped: &[Option<usize>]) -> f32 {
    if mapped.is_empty() {
        return 0.0;
    }
    mapped.iter().filter(|m| m.is_some()).count() as f32 / mapped.len() as f32
}

impl<'a> Judge<'a> {
    pub fn new(llm: &'a dyn Llm) -> Self {
        Self::with_settings(llm, JudgeSettings::default())
    }

    pub fn with_settings(llm: &'a dyn Llm, settings: JudgeSettings) -> Self {
        Self {
            llm,
            settings,
            accounting: Mutex::new(Accounting::default()),
        }
    }

    /// The judge model's name, for reports.
    pub fn model_name(&self) -> &str {
        self.llm.model_name()
    }

    /// Everything the judge has spent so far.
    pub fn accounting(&self) -> Accounting {
        *self.accounting.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn add(&self, cost: Accounting) {
        *self.accounting.lock().unwrap_or_else(|e| e.into_inner()) += cost;
    }

    /// One grammar-constrained call, greedy, accounted whether or not its output parses.
    fn call<T: DeserializeOwned>(
        &self,
        call: &'static str,
        prompt: String,
        schema: serde_json::Value,
        max_tokens: u32,
    ) -> Result<T, EvalError> {
        let options = GenerationOptions {
            seed: self.settings.seed,
            ..GenerationOptions::greedy(max_tokens)
        };
        let started = Instant::now();
        let result = complete_schema::<T>(self.llm, vec![Message::user(prompt)], options, schema);
        let seconds = started.elapsed().as_secs_f64();
        let (parsed, completion) = match result {
            Ok(reply) => (reply.parsed, reply.completion),
            Err(source) => {
                self.add(Accounting {
                    seconds,
                    ..Accounting::default()
                });
                return Err(EvalError::Judge { call, source });
            }
        };
        // The call's own duration, so a completion replayed from a cache counts what it cost.
        self.add(Accounting {
            usage: completion.usage,
            seconds: completion.timing.total.as_secs_f64(),
            invalid_outputs: u64::from(parsed.is_err()),
        });
        parsed.map_err(|source| EvalError::Judge { call, source })
    }

    fn render(name: &str, ctx: minijinja::Value) -> Result<String, EvalError> {
        crate::prompts::render(name, ctx).map_err(|e| EvalError::JudgePrompt(e.to_string()))
    }

    fn need_aspects(call: &'static str, aspects: &[Aspect]) -> Result<(), EvalError> {
        if aspects.is_empty() {
            return Err(EvalError::JudgeInput {
                call,
                message: "the case has no aspects to judge against".into(),
            });
        }
        Ok(())
    }

    /// Alignment (STEER Appendix K): every aspect scored 0/1/2 in one call. One call for all
    /// aspects rather than one per aspect, because the report dominates the prompt and a 4k
    /// context cannot afford to read it eight times; the report is clipped by
    /// [`clip_report`] to [`JudgeSettings::report_chars`].
    pub fn alignment(
        &self,
        query: &str,
        report_markdown: &str,
        aspects: &[Aspect],
    ) -> Result<Alignment, EvalError> {
        Self::need_aspects("alignment", aspects)?;
        let n = aspects.len();
        let prompt = Self::render(
            "eval_judge_alignment",
            minijinja::context! {
                query => clip(query, 600),
                report => clip_report(report_markdown, self.settings.report_chars),
                aspects => format_aspects(aspects, self.settings.aspect_detail_chars),
                count => n,
            },
        )?;
        let draft: Scored = self.call(
            "alignment",
            prompt,
            scored_schema(n),
            budget(n * REASONING_CHARS, 20 + 15 * n),
        )?;
        Ok(scored_to_alignment("alignment", draft, n))
    }

    /// Focus_kp (STEER §3.1, Appendix K), in two calls: key points extracted from the (clipped)
    /// report, then each mapped to the one aspect it covers best, or none. The paper lets a key
    /// point cover several aspects; Focus only asks whether it covers any, so one verdict per
    /// point suffices and keeps the output short. Key points are the content only (the paper's
    /// verbatim spans are left out: they double the output and nothing here uses them).
    pub fn focus_kp(
        &self,
        query: &str,
        report_markdown: &str,
        aspects: &[Aspect],
    ) -> Result<Focus, EvalError> {
        Self::need_aspects("focus_kp", aspects)?;
        let report = clip_report(report_markdown, self.settings.report_chars);
        if report.trim().is_empty() {
            return Ok(Focus::default());
        }
        let max = self.settings.max_key_points.max(1);
        let prompt = Self::render(
            "eval_judge_keypoints",
            minijinja::context! {
                query => clip(query, 600),
                report => report,
                max_points => max,
            },
        )?;
        let draft: KeyPoints = self.call(
            "key_points",
            prompt,
            keypoints_schema(max),
            budget(max * KEY_POINT_CHARS, 20 + 8 * max),
        )?;
        // Small models repeat themselves; a repeated point would count twice toward Focus.
        let mut key_points: Vec<String> = Vec::new();
        for p in draft.points.into_iter().take(max) {
            let text = clip(&p.content, KEY_POINT_CHARS);
            if !text.is_empty() && !key_points.iter().any(|k| k.eq_ignore_ascii_case(&text)) {
                key_points.push(text);
            }
        }
        if key_points.is_empty() {
            return Ok(Focus::default());
        }
        let numbered = key_points
            .iter()
            .enumerate()
            .map(|(i, k)| format!("{}. {k}", i + 1))
            .collect::<Vec<_>>()
            .join("\n");
        let prompt = Self::render(
            "eval_judge_keypoint_map",
            minijinja::context! {
                query => clip(query, 600),
                key_points => numbered,
                aspects => format_aspects(aspects, self.settings.aspect_detail_chars),
                count => key_points.len(),
                aspect_count => aspects.len(),
            },
        )?;
        let k = key_points.len();
        let mapping: Mapping = self.call(
            "key_point_map",
            prompt,
            mapping_schema(k, aspects.len()),
            budget(k * MAP_REASONING_CHARS, 20 + 12 * k),
        )?;
        if mapping.points.len() != k {
            tracing::warn!(
                "judge key_point_map: expected {k} verdicts, got {}; missing ones count as none",
                mapping.points.len()
            );
        }
        let mapped: Vec<Option<usize>> = (0..k)
            .map(|i| {
                mapping.points.get(i).and_then(|p| {
                    // 0 is "none"; anything past the aspects is invalid and counts as none.
                    usize::try_from(p.verdict)
                        .ok()
                        .filter(|&v| (1..=aspects.len()).contains(&v))
                        .map(|v| v - 1)
                })
            })
            .collect();
        let score = focus_score(&mapped);
        Ok(Focus {
            key_points,
            mapped,
            score,
        })
    }

    /// Persona-checklist agreement (STEER F.3, Appendix K's persona-state prompt): each
    /// ground-truth aspect scored 0/1/2 by how well the inferred checklist covers it, the
    /// same scheme as [`Judge::alignment`]. An empty checklist covers nothing: all zeros,
    /// without a call.
    pub fn checklist_alignment(
        &self,
        query: &str,
        inferred_checklist: &[String],
        aspects: &[Aspect],
    ) -> Result<Alignment, EvalError> {
        Self::need_aspects("checklist", aspects)?;
        let n = aspects.len();
        let items: Vec<String> = inferred_checklist
            .iter()
            .filter(|c| !c.trim().is_empty())
            .take(MAX_CHECKLIST_ITEMS)
            .enumerate()
            .map(|(i, c)| format!("{}. {}", i + 1, clip(c, CHECKLIST_ITEM_CHARS)))
            .collect();
        if items.is_empty() {
            return Ok(Alignment {
                per_aspect: vec![0; n],
                reasoning: vec!["(empty checklist)".into(); n],
                score: 0.0,
            });
        }
        let prompt = Self::render(
            "eval_judge_checklist",
            minijinja::context! {
                query => clip(query, 600),
                checklist => items.join("\n"),
                aspects => format_aspects(aspects, self.settings.aspect_detail_chars),
                count => n,
            },
        )?;
        let draft: Scored = self.call(
            "checklist",
            prompt,
            scored_schema(n),
            budget(n * REASONING_CHARS, 20 + 15 * n),
        )?;
        Ok(scored_to_alignment("checklist", draft, n))
    }

    /// [`Judge::checklist_alignment`]'s score in [0, 1].
    pub fn checklist_agreement(
        &self,
        query: &str,
        inferred_checklist: &[String],
        aspects: &[Aspect],
    ) -> Result<f32, EvalError> {
        Ok(self
            .checklist_alignment(query, inferred_checklist, aspects)?
            .score)
    }

    /// BESPOKE's four criteria (§3.3), 1–5 each with feedback. BESPOKE's evaluator (Table 19)
    /// also gets a gold information need, a per-user rubric and scored example responses; the
    /// cases here have none of those, so the full persona text stands in for the information
    /// need and the rubric is a generic one modelled on BESPOKE's gold rubrics (Table 11).
    pub fn bespoke(
        &self,
        query: &str,
        report_markdown: &str,
        persona_text: &str,
    ) -> Result<Bespoke, EvalError> {
        let prompt = Self::render(
            "eval_judge_bespoke",
            minijinja::context! {
                query => clip(query, 600),
                persona => clip(persona_text, PERSONA_CHARS),
                report => clip_report(report_markdown, self.settings.report_chars),
            },
        )?;
        let draft: BespokeDraft = self.call(
            "bespoke",
            prompt,
            bespoke_schema(),
            budget(4 * FEEDBACK_CHARS, 80),
        )?;
        let score = |name: &str, c: &Criterion| fit_scores(name, &[c.score], 1, 1, 5)[0];
        let feedback = [
            ("Need alignment", &draft.need_alignment),
            ("Content depth", &draft.content_depth),
            ("Tone", &draft.tone),
            ("Explanation style", &draft.explanation_style),
        ]
        .iter()
        .map(|(name, c)| format!("{name}: {}", clip(&c.feedback, FEEDBACK_CHARS)))
        .collect::<Vec<_>>()
        .join("\n");
        Ok(Bespoke {
            need_alignment: score("bespoke.need_alignment", &draft.need_alignment),
            content_depth: score("bespoke.content_depth", &draft.content_depth),
            tone: score("bespoke.tone", &draft.tone),
            explanation_style: score("bespoke.explanation_style", &draft.explanation_style),
            feedback,
        })
    }
}

fn scored_to_alignment(call: &str, draft: Scored, n: usize) -> Alignment {
    let raw: Vec<i64> = draft.evaluations.iter().map(|e| e.score).collect();
    let per_aspect = fit_scores(call, &raw, n, 0, 2);
    let mut reasoning: Vec<String> = draft
        .evaluations
        .into_iter()
        .take(n)
        .map(|e| clip(&e.reasoning, REASONING_CHARS))
        .collect();
    reasoning.resize(n, String::new());
    let score = alignment_score(&per_aspect);
    Alignment {
        per_aspect,
        reasoning,
        score,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_are_clamped_and_padded() {
        assert_eq!(fit_scores("t", &[2, 5, -1], 4, 0, 2), vec![2, 2, 0, 0]);
        assert_eq!(fit_scores("t", &[0, 9], 1, 1, 5), vec![1]);
        assert_eq!(alignment_score(&[2, 1, 0]), 0.5);
        assert_eq!(focus_score(&[Some(0), None, Some(2), Some(0)]), 0.75);
        assert_eq!(focus_score(&[]), 0.0);
    }

    #[test]
    fn reports_lose_references_and_are_cut_at_a_paragraph() {
        let report = format!(
            "# T\n\n{}\n\n{}\n\n## References\n\n1. x",
            "a".repeat(50),
            "b".repeat(50)
        );
        assert!(!clip_report(&report, 1_000).contains("References"));
        let cut = clip_report(&report, 80);
        assert!(cut.contains(&"a".repeat(50)), "{cut}");
        assert!(!cut.contains('b'), "{cut}");
        assert!(cut.contains("Report truncated"), "{cut}");
    }
}
