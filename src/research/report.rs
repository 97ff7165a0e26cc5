//! The report (STEER *Report Generation*, done hierarchically): one section per top-level
//! direction written from that subtree's learnings, then a title, summary and closing written
//! from the sections, all shaped by the persona and the query-aware profile (need, depth, tone,
//! explanation style).
//!
//! The model cites learnings by number under a grammar that allows only numbers it was shown;
//! each learning carries its evidence, so every citation in the report resolves to a document
//! chunk, a history session or a URL by construction. Citations are numbered in order of first
//! appearance and listed under *References*.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::persona::Persona;
use super::tree::{Learning, Tree};
use super::ResearchError;
use crate::llm::{complete_schema, Completion, GenerationOptions, Llm, LlmError, Message, Reply};
use crate::sources::{CitationTarget, Evidence};

/// Learnings shown per section call (the deepest-first cut keeps the prompt inside a 4k context).
pub const MAX_SECTION_LEARNINGS: usize = 12;

/// A paragraph and the references it cites (numbers into [`Report::references`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(rename = "ReportParagraph"))]
pub struct Paragraph {
    pub text: String,
    pub citations: Vec<usize>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(rename = "ReportSection"))]
pub struct Section {
    pub heading: String,
    /// The top-level direction it covers (None for the root's own findings).
    pub direction: Option<usize>,
    pub paragraphs: Vec<Paragraph>,
}

/// One entry of the reference list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Reference {
    pub number: usize,
    pub key: String,
    pub title: String,
    pub target: CitationTarget,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Report {
    pub title: String,
    pub query: String,
    pub summary: Paragraph,
    pub sections: Vec<Section>,
    pub closing: String,
    pub references: Vec<Reference>,
    pub markdown: String,
}

impl Report {
    pub fn words(&self) -> usize {
        self.markdown.split_whitespace().count()
    }

    /// Every citation number used in the text.
    pub fn cited_numbers(&self) -> Vec<usize> {
        let mut out: Vec<usize> = std::iter::once(&self.summary)
            .chain(self.sections.iter().flat_map(|s| s.paragraphs.iter()))
            .flat_map(|p| p.citations.iter().copied())
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The report as a standalone, sanitised HTML document.
    pub fn to_html(&self) -> String {
        super::html::report_html_document(&self.title, &self.markdown)
    }
}

/// What the writer works from.
pub struct ReportInput<'a> {
    pub query: &'a str,
    pub persona: &'a Persona,
    /// The query-aware profile as text (need, depth, tone, style), or empty.
    pub profile: &'a str,
    pub tree: &'a Tree,
    pub learnings: &'a [Learning],
    pub evidence: &'a BTreeMap<String, Evidence>,
    pub current_date: &'a str,
}

#[derive(Debug, Deserialize)]
struct SectionDraft {
    heading: String,
    paragraphs: Vec<ParagraphDraft>,
}

#[derive(Debug, Deserialize)]
struct ParagraphDraft {
    text: String,
    learnings: Vec<usize>,
}

#[derive(Debug, Deserialize)]
struct OverviewDraft {
    title: String,
    summary: ParagraphDraft,
    closing: String,
}

fn paragraph_schema(learnings: usize, min_chars: usize, max_chars: usize) -> serde_json::Value {
    let numbers: Vec<usize> = (1..=learnings).collect();
    json!({
        "type": "object",
        "properties": {
            "text": {"type": "string", "minLength": min_chars, "maxLength": max_chars},
            "learnings": {"type": "array", "items": {"type": "integer", "enum": numbers}, "minItems": 1, "maxItems": 3},
        },
        "required": ["text", "learnings"],
    })
}

fn section_schema(learnings: usize) -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {
            "heading": {"type": "string", "minLength": 3, "maxLength": 80},
            "paragraphs": {"type": "array", "items": paragraph_schema(learnings, 60, 600), "minItems": 1, "maxItems": 3},
        },
        "required": ["heading", "paragraphs"],
    })
}

fn overview_schema(learnings: usize) -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {
            "title": {"type": "string", "minLength": 5, "maxLength": 90},
            "summary": paragraph_schema(learnings, 60, 700),
            "closing": {"type": "string", "maxLength": 400},
        },
        "required": ["title", "summary", "closing"],
    })
}

/// Learnings as the numbered list a writing prompt shows, with their sources' titles.
fn numbered_learnings(ids: &[usize], input: &ReportInput<'_>) -> String {
    ids.iter()
        .enumerate()
        .map(|(i, &l)| {
            let learning = &input.learnings[l];
            let titles: Vec<String> = learning
                .sources
                .iter()
                .filter_map(|k| input.evidence.get(k))
                .map(|e| super::tree::one_line(&e.title, 60))
                .collect();
            format!(
                "[{}] {} (from: {})",
                i + 1,
                super::tree::one_line(&learning.text, 240),
                titles.join("; ")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Learnings of a subtree, deepest first (STEER: prioritise insights from deeper levels), cut
/// to `max`.
fn subtree_learnings(tree: &Tree, root: usize, max: usize) -> Vec<usize> {
    let mut nodes = tree.subtree(root);
    nodes.sort_by_key(|&n| std::cmp::Reverse(tree.nodes[n].depth));
    let mut out: Vec<usize> = nodes
        .iter()
        .flat_map(|&n| tree.nodes[n].learnings.iter().copied())
        .collect();
    out.truncate(max);
    out
}

/// Numbers citations in order of first appearance.
#[derive(Default)]
struct Citations {
    numbers: HashMap<String, usize>,
    references: Vec<Reference>,
}

impl Citations {
    fn cite(&mut self, learning: &Learning, evidence: &BTreeMap<String, Evidence>) -> Vec<usize> {
        let mut out = Vec::new();
        for key in &learning.sources {
            let Some(ev) = evidence.get(key) else {
                continue;
            };
            let n = match self.numbers.get(key) {
                Some(&n) => n,
                None => {
                    let n = self.references.len() + 1;
                    self.numbers.insert(key.clone(), n);
                    self.references.push(Reference {
                        number: n,
                        key: key.clone(),
                        title: ev.title.clone(),
                        target: ev.target.clone(),
                    });
                    n
                }
            };
            if !out.contains(&n) {
                out.push(n);
            }
        }
        out
    }

    fn paragraph(
        &mut self,
        draft: ParagraphDraft,
        shown: &[usize],
        input: &ReportInput<'_>,
    ) -> Paragraph {
        let mut citations = Vec::new();
        for n in draft.learnings {
            if let Some(&l) = n.checked_sub(1).and_then(|i| shown.get(i)) {
                for c in self.cite(&input.learnings[l], input.evidence) {
                    if !citations.contains(&c) {
                        citations.push(c);
                    }
                }
            }
        }
        Paragraph {
            text: whole_sentences(&draft.text),
            citations,
        }
    }
}

/// Writes the report. Returns it with the completions of its calls (for accounting) and calls
/// `on_section` as each section is done.
pub fn write(
    llm: &dyn Llm,
    input: &ReportInput<'_>,
    on_section: &mut dyn FnMut(usize, &str),
) -> Result<(Report, Vec<Completion>), ResearchError> {
    let mut completions = Vec::new();
    let mut citations = Citations::default();
    let mut sections = Vec::new();
    let mut seen_sentences = std::collections::HashSet::new();
    // One section per top-level direction; a tree without any is one section from the root.
    let roots: Vec<Option<usize>> = if input.tree.directions().is_empty() {
        vec![None]
    } else {
        input.tree.directions().iter().map(|&d| Some(d)).collect()
    };
    for (index, direction) in roots.iter().enumerate() {
        let node = direction.unwrap_or(0);
        let shown = subtree_learnings(input.tree, node, MAX_SECTION_LEARNINGS);
        let question = &input.tree.nodes[node].question;
        if shown.is_empty() {
            sections.push(Section {
                heading: super::tree::one_line(question, 80),
                direction: *direction,
                paragraphs: vec![Paragraph {
                    text: "The sources searched held nothing on this question.".into(),
                    citations: Vec::new(),
                }],
            });
            on_section(index, question);
            continue;
        }
        let prompt = crate::prompts::render(
            "report_section",
            minijinja::context! {
                query => input.query,
                question => question,
                persona => input.persona.text,
                checklist => input.persona.numbered_checklist(),
                profile => input.profile,
                learnings => numbered_learnings(&shown, input),
                current_date => input.current_date,
            },
        )?;
        // Worst case (1 token per character): 3 × (600 + 30) + 100 tokens.
        let reply = complete_schema(
            llm,
            vec![Message::user(prompt)],
            GenerationOptions::greedy(2100),
            section_schema(shown.len()),
        );
        let draft: Option<SectionDraft> = match reply.and_then(Reply::into_pair) {
            Ok((draft, completion)) => {
                completions.push(completion);
                Some(draft)
            }
            Err(e @ LlmError::InvalidOutput { .. }) => {
                tracing::warn!("section {index}: {e}; listing its findings instead");
                None
            }
            Err(e) => return Err(e.into()),
        };
        let (heading, paragraphs) = match draft {
            Some(draft) => (
                draft.heading.trim().to_string(),
                draft
                    .paragraphs
                    .into_iter()
                    .map(|mut p| {
                        p.text = drop_repeats(&p.text, &mut seen_sentences);
                        p
                    })
                    .filter(|p| !p.text.trim().is_empty())
                    .map(|p| citations.paragraph(p, &shown, input))
                    .filter(|p| !p.text.is_empty())
                    .collect(),
            ),
            None => (String::new(), Vec::new()),
        };
        // A model that could not write the section (or only repeated what was said) still
        // leaves its findings, cited.
        let paragraphs: Vec<Paragraph> = if paragraphs.is_empty() {
            shown
                .iter()
                .enumerate()
                .map(|(i, &l)| {
                    citations.paragraph(
                        ParagraphDraft {
                            text: input.learnings[l].text.clone(),
                            learnings: vec![i + 1],
                        },
                        &shown,
                        input,
                    )
                })
                .collect()
        } else {
            paragraphs
        };
        // Small models give every section the report's theme as its heading: a repeated
        // heading gives way to the direction's own question.
        let repeated = sections
            .iter()
            .any(|s: &Section| s.heading.eq_ignore_ascii_case(&heading));
        let heading = if heading.is_empty() || repeated {
            super::tree::one_line(question, 80)
        } else {
            heading
        };
        on_section(index, &heading);
        sections.push(Section {
            heading,
            direction: *direction,
            paragraphs,
        });
    }

    // The overview sees the root's own findings plus the best of each direction.
    let mut shown: Vec<usize> = input.tree.root().learnings.clone();
    for d in input.tree.directions() {
        shown.extend(subtree_learnings(input.tree, *d, 2));
    }
    shown.truncate(MAX_SECTION_LEARNINGS);
    let (title, summary, closing) = if shown.is_empty() {
        (
            super::tree::one_line(input.query, 90),
            Paragraph {
                text: "No evidence was found in the sources searched, so this report has no \
                       findings. Add documents (`rudder docs add DIR`) or import history, then \
                       run the research again."
                    .into(),
                citations: Vec::new(),
            },
            String::new(),
        )
    } else {
        let headings: Vec<String> = sections
            .iter()
            .map(|s| format!("- {}", s.heading))
            .collect();
        let prompt = crate::prompts::render(
            "report_overview",
            minijinja::context! {
                query => input.query,
                persona => input.persona.text,
                checklist => input.persona.numbered_checklist(),
                profile => input.profile,
                sections => headings.join("\n"),
                learnings => numbered_learnings(&shown, input),
                current_date => input.current_date,
            },
        )?;
        // Worst case: 90 + 700 + 400 characters, one token each, plus the JSON around them.
        let reply = complete_schema::<OverviewDraft>(
            llm,
            vec![Message::user(prompt)],
            GenerationOptions::greedy(1300),
            overview_schema(shown.len()),
        );
        let draft = match reply.and_then(Reply::into_pair) {
            Ok((draft, completion)) => {
                completions.push(completion);
                draft
            }
            Err(e @ LlmError::InvalidOutput { .. }) => {
                tracing::warn!("report overview: {e}; using the first findings as the summary");
                OverviewDraft {
                    title: String::new(),
                    summary: ParagraphDraft {
                        text: shown
                            .iter()
                            .take(3)
                            .map(|&l| input.learnings[l].text.trim().to_string())
                            .collect::<Vec<_>>()
                            .join(" "),
                        learnings: (1..=shown.len().min(3)).collect(),
                    },
                    closing: String::new(),
                }
            }
            Err(e) => return Err(e.into()),
        };
        // Summary citations are numbered first, so they are renumbered ahead of the sections.
        let mut ordered = Citations::default();
        let summary = ordered.paragraph(draft.summary, &shown, input);
        let renumber: HashMap<usize, usize> = citations
            .references
            .iter()
            .map(|r| {
                let l = Learning {
                    id: 0,
                    node: 0,
                    text: String::new(),
                    sources: vec![r.key.clone()],
                };
                (r.number, ordered.cite(&l, input.evidence)[0])
            })
            .collect();
        for s in &mut sections {
            for p in &mut s.paragraphs {
                p.citations = p.citations.iter().map(|c| renumber[c]).collect();
            }
        }
        citations = ordered;
        (
            if draft.title.trim().is_empty() {
                super::tree::one_line(input.query, 90)
            } else {
                draft.title.trim().to_string()
            },
            summary,
            whole_sentences(&draft.closing),
        )
    };
    let mut report = Report {
        title,
        query: input.query.to_string(),
        summary,
        sections,
        closing,
        references: citations.references,
        markdown: String::new(),
    };
    report.markdown = render_markdown(&report);
    Ok((report, completions))
}

/// The text cut after its last complete sentence, when the length bound stopped the model
/// mid-sentence (and at least half of the text remains).
pub fn whole_sentences(text: &str) -> String {
    let text = text.trim();
    if text.is_empty() || text.ends_with(['.', '!', '?', '"', ')']) {
        return text.to_string();
    }
    match text.rfind(". ").or_else(|| text.rfind(".\n")) {
        Some(i) if i + 1 >= text.len() / 2 => text[..=i].to_string(),
        _ => format!("{text}…"),
    }
}

/// A paragraph without the sentences the report already said (small models repeat whole
/// sentences across paragraphs and sections) and without a leading fragment (a paragraph that
/// starts mid-word, continuing an earlier one). `seen` collects the sentences kept.
pub fn drop_repeats(text: &str, seen: &mut std::collections::HashSet<String>) -> String {
    let mut text = text.trim();
    if text.chars().next().is_some_and(|c| c.is_lowercase()) {
        if let Some(i) = text.find(". ") {
            text = text[i + 2..].trim_start();
        }
    }
    let mut kept: Vec<&str> = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let end = rest
            .find(". ")
            .or_else(|| rest.find("! "))
            .or_else(|| rest.find("? "))
            .map(|i| i + 1)
            .unwrap_or(rest.len());
        let sentence = rest[..end].trim();
        rest = rest[end..].trim_start();
        let key: String = sentence
            .chars()
            .filter(|c| c.is_alphanumeric())
            .flat_map(char::to_lowercase)
            .collect();
        if !key.is_empty() && seen.insert(key) {
            kept.push(sentence);
        }
    }
    kept.join(" ")
}

/// Escapes text that came from a model or a source so Markdown shows it literally.
pub fn escape_markdown(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(
            c,
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '#' | '|'
        ) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn cite_marks(citations: &[usize]) -> String {
    citations
        .iter()
        .map(|n| format!(" [\\[{n}\\]](#ref-{n})"))
        .collect()
}

fn render_markdown(report: &Report) -> String {
    let mut md = format!("# {}\n\n", escape_markdown(&report.title));
    md.push_str(&format!(
        "*Question:* {}\n\n",
        escape_markdown(&report.query)
    ));
    md.push_str(&format!(
        "{}{}\n\n",
        escape_markdown(&report.summary.text),
        cite_marks(&report.summary.citations)
    ));
    for s in &report.sections {
        md.push_str(&format!("## {}\n\n", escape_markdown(&s.heading)));
        for p in &s.paragraphs {
            md.push_str(&format!(
                "{}{}\n\n",
                escape_markdown(&p.text),
                cite_marks(&p.citations)
            ));
        }
    }
    if !report.closing.is_empty() {
        md.push_str("## What this means for you\n\n");
        md.push_str(&escape_markdown(&report.closing));
        md.push_str("\n\n");
    }
    if !report.references.is_empty() {
        md.push_str("## References\n\n");
        for r in &report.references {
            let locator = escape_markdown(&r.target.locator());
            let link = match r.target.link() {
                Some(url) => format!(
                    " — <{}>",
                    url.replace(' ', "%20")
                        .replace('<', "%3C")
                        .replace('>', "%3E")
                ),
                None => String::new(),
            };
            md.push_str(&format!(
                "{}. <a id=\"ref-{}\"></a>{} — {}{}\n",
                r.number,
                r.number,
                escape_markdown(&r.title),
                locator,
                link
            ));
        }
    }
    md
}

#[cfg(test)]
mod tests {
    #[test]
    fn repeated_sentences_and_leading_fragments_are_dropped() {
        let mut seen = std::collections::HashSet::new();
        let a = super::drop_repeats("Tea is old. It came from China. Tea is old.", &mut seen);
        assert_eq!(a, "Tea is old. It came from China.");
        let b = super::drop_repeats(
            "fluenced by trade. It came from China! Monks drank it.",
            &mut seen,
        );
        assert_eq!(b, "Monks drank it.");
        assert_eq!(
            super::drop_repeats("tea is old. it came from china.", &mut seen),
            ""
        );
    }

    use super::*;

    #[test]
    fn cut_off_text_ends_at_its_last_sentence() {
        assert_eq!(
            whole_sentences("One sentence here. Two is cut"),
            "One sentence here."
        );
        assert_eq!(whole_sentences("Done."), "Done.");
        assert_eq!(
            whole_sentences("Short. A very long unfinished sentence"),
            "Short. A very long unfinished sentence…"
        );
        assert_eq!(whole_sentences(""), "");
    }

    #[test]
    fn references_name_sources_without_local_paths() {
        let doc = CitationTarget::Document {
            path: "/home/someone/notes/tea/green.md".into(),
            chunk: 1,
            page: None,
            url: None,
            name: Some("notes/tea/green.md".into()),
        };
        let corpus = CitationTarget::Document {
            path: "/home/someone/.local/share/rudder/models/wiki/summaries_en-us.json#Tea".into(),
            chunk: 0,
            page: None,
            url: Some("https://en.wikipedia.org/wiki/Tea".into()),
            name: None,
        };
        let paragraph = Paragraph {
            text: "Green tea is steamed.".into(),
            citations: vec![1, 2],
        };
        let mut report = Report {
            title: "Tea".into(),
            query: "tea?".into(),
            summary: paragraph,
            sections: Vec::new(),
            closing: String::new(),
            references: [doc, corpus]
                .into_iter()
                .enumerate()
                .map(|(i, target)| Reference {
                    number: i + 1,
                    key: target.key(),
                    title: "Tea".into(),
                    target,
                })
                .collect(),
            markdown: String::new(),
        };
        report.markdown = render_markdown(&report);
        let shared = format!("{}\n{}", report.markdown, report.to_html());
        assert!(shared.contains("notes/tea/green.md, passage 2"), "{shared}");
        assert!(shared.contains("Tea, passage 1"), "{shared}");
        assert!(
            shared.contains("https://en.wikipedia.org/wiki/Tea"),
            "{shared}"
        );
        for private in ["/home/someone", "file://", "summaries_en-us.json", ".local"] {
            assert!(
                !shared.contains(private),
                "{private} in a shared report:\n{shared}"
            );
        }
    }

    #[test]
    fn markdown_escapes_untrusted_text() {
        assert_eq!(escape_markdown("<script>[x](y)"), "\\<script\\>\\[x\\](y)");
    }
}
