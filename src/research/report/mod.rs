//! The report, assembled in code and then written (STEER *Report Generation*, reworked for a
//! small model).
//!
//! * [`outline`]: sections come from the top-level directions; their learnings are deduplicated
//!   by meaning, ordered (tree order: broad before specific) and grouped into paragraphs of at
//!   most three; the best learning of each section opens the summary; the learnings that
//!   answer one of the reader's needs are kept for *What this means for you*.
//! * [`prose`]: the model writes short connective prose around each group in one small call,
//!   and every sentence is checked before it is kept — supported by a passage the paragraph
//!   cites, not a repeat of a sentence already in the report, no debris — with one retry that
//!   names the reasons, then the learnings' own words for whatever is left out.
//! * *What this means for you* takes each need and gives the findings that answer it, or
//!   says plainly, in one sentence, which needs the sources do not cover.
//!
//! Citations are set by code from the learnings each paragraph states, and each learning
//! carries its evidence, so every citation resolves to a document chunk, a history session or
//! a URL by construction. They are numbered in order of first appearance and listed under
//! *References*.

pub mod language;
mod needs;
mod outline;
mod prose;
mod style;
#[cfg(test)]
mod writing_tests;

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use self::prose::{Fact, Writer};
use super::persona::Persona;
use super::tree::{Learning, Tree};
use super::ResearchError;
use crate::checks::text::{content_words, dominant_script, sentence_debris, split_sentences};
use crate::embed::Embedder;
use crate::llm::{Completion, Llm};
use crate::sources::{CitationTarget, Evidence};

pub use needs::{need_label, needs_from, Need, MAX_NEEDS, NOT_COVERED_OPENING};
pub use outline::{
    DUPLICATE_COSINE, NEED_MATCH_COSINE, OFF_TOPIC_FINDING, OFF_TOPIC_SECTION, PARAGRAPH_LEARNINGS,
    SUMMARY_LEARNINGS,
};
pub use style::{answer_style, AnswerStyle, Form};

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
    /// The language the report was translated into (ISO 639-3, as `fra`), or empty: written
    /// in the language of its sources ([`language`]).
    #[serde(default)]
    pub language: String,
    /// Texts left as written because no translation passed the checks.
    #[serde(default)]
    pub untranslated: usize,
    /// How the body is written for this reader ([`answer_style`]): the default for a reader
    /// Rudder knows nothing about, and for reports written before styles existed.
    #[serde(default)]
    pub style: AnswerStyle,
    /// Findings of the research left out as not about the question (the run's log says why
    /// for each), so a measure of what the report carries can leave them aside.
    #[serde(default)]
    pub off_question: Vec<String>,
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
    /// The question researched (in English when `asked` is not empty).
    pub query: &'a str,
    /// The question as the user asked it, when the research read it in English: the report
    /// shows it and is translated into its language. Empty otherwise.
    pub asked: &'a str,
    pub persona: &'a Persona,
    /// The query-aware profile as text (need, depth, tone, style), or empty.
    pub profile: &'a str,
    /// What the reader needs (see [`needs_from`]): *What this means for you* answers each
    /// with the findings that meet it.
    pub needs: &'a [String],
    /// Of [`Self::needs`], those the question's facet lines do not anticipate: the relevance
    /// judge kept them on its own score. A finding that meets one answers it, but one no
    /// finding answers is left unsaid, not named as uncovered: the 1.5B judge keeps "you have
    /// a Roth IRA" for a bakery's energy costs, and a report that tells its reader the sources
    /// do not cover their Roth IRA shows it did not understand them.
    pub unanticipated_needs: &'a [String],
    /// Topics the user asked the report to cover (the checklist they gave): the findings on
    /// them stay in the body, and *What this means for you* names those no finding answers.
    pub aspects: &'a [String],
    pub tree: &'a Tree,
    pub learnings: &'a [Learning],
    pub evidence: &'a BTreeMap<String, Evidence>,
    pub current_date: &'a str,
    /// The lowest P(yes) the chat model must give that a sentence's passage states it
    /// ([`crate::checks::judge`]); None: the embedding match alone.
    pub support_judge: Option<f32>,
    /// The lowest score the chat model must give that a finding helps answer the question
    /// ([`crate::checks::judge::judge_findings`]); None: the embedding cuts alone.
    pub finding_judge: Option<f32>,
    /// The lowest score the chat model must give that a finding matters for the reader because
    /// of one of their needs ([`crate::checks::judge::judge_need_findings`]) for the finding to
    /// answer that need when the embeddings do not match them; None: the embeddings alone.
    pub need_judge: Option<f32>,
    /// How the reader wants answers ([`answer_style`]).
    pub style: &'a AnswerStyle,
}

/// The heading of the section that answers the reader's needs.
pub const NEEDS_HEADING: &str = "What this means for you";
/// The heading of paragraphs no heading fits, when the report has no general section.
pub const FURTHER_HEADING: &str = "Further findings";

/// Words of a direction's question that name no subject of their own ("What were the main
/// factors …", "… the key effects of …").
const GENERIC_TOPIC_WORDS: &str = "main key factors effects impact role different significant \
    important major ways aspects types kinds common overall influence influences";

/// Most words [`heading_words`] gives.
const HEADING_WORDS: usize = 6;

/// Words of the facts that the question does not use, in order of first use, for a model that
/// named a section after the report's question: a 1.5B model headed every section of the
/// printing-press report "The Impact of the Printing Press on Europe", and asked again, wrote
/// it again. Given the words its facts add ("machine, transfers, ink, …"), the task is
/// choosing among them.
fn heading_words(query: &str, facts: &[Fact]) -> Vec<String> {
    let asked = content_words(query);
    let generic = content_words(GENERIC_TOPIC_WORDS);
    let mut out: Vec<String> = Vec::new();
    let mut seen: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
    for fact in facts {
        for word in fact
            .text
            .split(|c: char| !(c.is_alphanumeric() || c == '-'))
        {
            let lower = word.to_lowercase();
            let Some(key) = content_words(&lower).into_iter().next() else {
                continue;
            };
            if lower.chars().count() < 3
                || !lower.chars().all(char::is_alphabetic)
                || asked.contains(&key)
                || generic.contains(&key)
                || !seen.insert(key)
            {
                continue;
            }
            out.push(word.to_string());
            if out.len() == HEADING_WORDS {
                return out;
            }
        }
    }
    out
}

/// Whether the paragraphs are about what `topic` names beyond the report's question: one of
/// its own words (not the question's, not [`GENERIC_TOPIC_WORDS`]) is in them.
fn topic_fits(topic: &str, query: &str, paragraphs: &[Paragraph]) -> bool {
    let asked = content_words(query);
    let generic = content_words(GENERIC_TOPIC_WORDS);
    let said: std::collections::BTreeSet<String> = paragraphs
        .iter()
        .flat_map(|p| content_words(&p.text))
        .collect();
    content_words(topic)
        .iter()
        .filter(|w| !asked.contains(*w) && !generic.contains(*w))
        .any(|w| said.contains(w))
}

/// The summary of a report whose findings were all about something else: `{}` is their
/// number.
const NOTHING_ON_THE_QUESTION: &str = "The sources searched hold nothing found to answer this \
                                       question: the {} findings of the research were about \
                                       other things, and are left out. Add documents on it \
                                       (or switch on web search), then run the research again.";

/// The summary of a report with no findings.
const NO_EVIDENCE: &str = "No evidence was found in the sources searched, so this report has \
                           no findings. Add documents or import history, then run the research \
                           again.";

/// Numbers citations in order of first appearance.
#[derive(Default)]
struct Citations {
    numbers: HashMap<String, usize>,
    references: Vec<Reference>,
}

impl Citations {
    /// The numbers of the learnings' sources, numbering the new ones.
    fn cite(
        &mut self,
        learnings: &[&Learning],
        evidence: &BTreeMap<String, Evidence>,
    ) -> Vec<usize> {
        let mut out = Vec::new();
        for key in learnings.iter().flat_map(|l| l.sources.iter()) {
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
}

/// Writes the report: assembled in code ([`outline`]), then written paragraph by paragraph with
/// small checked calls ([`prose`]). `embedder` backs the checks (meaning-level duplicates,
/// support, needs). Returns the report with the completions of its calls (for accounting) and
/// calls `on_section` for each section once the report is settled.
pub fn write(
    llm: &dyn Llm,
    embedder: &dyn Embedder,
    input: &ReportInput<'_>,
    on_section: &mut dyn FnMut(usize, &str),
) -> Result<(Report, Vec<Completion>), ResearchError> {
    // The finding judge's calls, accounted with the writer's.
    let judge_calls = std::sync::Mutex::new(Vec::new());
    let judge = |findings: &[&str]| -> Vec<Option<f32>> {
        judged_findings(llm, input.query, findings, &judge_calls)
    };
    let need_judge = |needs: &[&str], findings: &[&str]| -> Vec<Vec<Option<f32>>> {
        judged_need_findings(llm, input.query, needs, findings, &judge_calls)
    };
    let outline = outline::outline(input, embedder, &judge, &need_judge)?;
    // A question in another language than English gets its report written and checked in
    // the sources' words, then translated ([`language`]).
    let asked = if input.asked.is_empty() {
        input.query
    } else {
        input.asked
    };
    let lang = language::of_question(asked);
    let script = match lang {
        Some(_) => {
            let texts: Vec<&str> = input.learnings.iter().map(|l| l.text.as_str()).collect();
            dominant_script(&texts.join(" "))
        }
        None => dominant_script(input.query),
    };
    let mut writer = Writer::new(llm, embedder, script, input.support_judge)
        .with_short_sentences(input.style.short)
        .with_question(input.query)?
        .with_sources(
            input
                .evidence
                .values()
                .map(|e| (e.text.clone(), e.title.clone()))
                .collect(),
            &outline
                .needs
                .iter()
                .map(|n| n.label.as_str())
                .collect::<Vec<_>>(),
        );
    writer
        .completions
        .extend(judge_calls.into_inner().unwrap_or_default());
    let mut citations = Citations::default();
    // A learning with those merged into it (they say the same thing): its passages are all
    // theirs, and it cites them all.
    let with_merged = |l: usize| -> Vec<&Learning> {
        std::iter::once(l)
            .chain(outline.merged.get(&l).into_iter().flatten().copied())
            .map(|l| &input.learnings[l])
            .collect()
    };
    let fact = |l: usize| -> Fact {
        let mut passages: Vec<String> = Vec::new();
        for key in with_merged(l).iter().flat_map(|m| m.sources.iter()) {
            if let Some(e) = input.evidence.get(key) {
                if !passages.contains(&e.text) {
                    passages.push(e.text.clone());
                }
            }
        }
        Fact {
            text: input.learnings[l].text.clone(),
            passages,
        }
    };
    let facts = |ls: &[usize]| -> Vec<Fact> { ls.iter().map(|&l| fact(l)).collect() };
    let off_question: Vec<String> = outline
        .off_question
        .iter()
        .map(|&l| input.learnings[l].text.clone())
        .collect();

    if outline.summary.is_empty() {
        let mut report = Report {
            title: super::tree::one_line(input.query, 200),
            query: asked.to_string(),
            summary: Paragraph {
                text: if outline.judged_off > 0 {
                    NOTHING_ON_THE_QUESTION.replace("{}", &outline.judged_off.to_string())
                } else {
                    NO_EVIDENCE.into()
                },
                citations: Vec::new(),
            },
            sections: Vec::new(),
            closing: String::new(),
            references: Vec::new(),
            markdown: String::new(),
            language: String::new(),
            untranslated: 0,
            style: AnswerStyle::default(),
            off_question: off_question.clone(),
        };
        report.markdown = render_markdown(&report);
        return Ok((report, writer.completions));
    }

    // Every call of the report is drafted together (each checked against its own passages),
    // then taken into the report in reading order, where what a draft repeats of the
    // paragraphs and headings before it is dropped or asked again.
    let query = input.query;
    let style = input.style;
    let mut jobs = vec![Job {
        slot: Slot::Title,
        work: Work::Heading {
            prompt: Prompt::new("report_title", query, "", facts(&outline.summary), style),
            field: "title",
            fallback: query,
            title: true,
        },
    }];
    for (section, outlined) in outline.sections.iter().enumerate() {
        for ls in &outlined.paragraphs {
            jobs.push(Job {
                slot: Slot::SectionParagraph(section),
                work: Work::Paragraph {
                    learnings: ls,
                    prompt: Prompt::new("report_paragraph", query, "", facts(ls), style),
                },
            });
        }
        let lead: Vec<usize> = outlined
            .paragraphs
            .iter()
            .flatten()
            .take(3)
            .copied()
            .collect();
        jobs.push(Job {
            slot: Slot::SectionHeading(section),
            work: Work::Heading {
                prompt: Prompt::new("report_heading", query, "", facts(&lead), style),
                field: "heading",
                fallback: &outlined.topic,
                title: false,
            },
        });
    }
    // The opening answer: when it restates the body, it is taken last, and what it repeats of
    // the body is its purpose, not a repeat.
    jobs.push(Job {
        slot: Slot::Summary,
        work: Work::Paragraph {
            learnings: &outline.summary,
            prompt: Prompt::new("report_summary", query, "", facts(&outline.summary), style),
        },
    });
    // What this means for you: each need with the findings that answer it, then the needs
    // no finding answers, in one plain sentence.
    let mut uncovered = Vec::new();
    // Budgets met by prices: said in code after the drafts, so their citations number in
    // reading order.
    let mut priced = Vec::new();
    for need in &outline.needs {
        if need.learnings.is_empty() {
            if need.named_when_uncovered {
                uncovered.push(match crate::checks::money::budget(&need.label) {
                    Some(budget) => format!("your budget of {budget}"),
                    None => need.label.clone(),
                });
            } else {
                tracing::info!(
                    need = %need.label,
                    "report: a need no finding answers and the question does not anticipate is not named"
                );
            }
            continue;
        }
        if need.aspect {
            continue;
        }
        if let Some(budget) = need.budget {
            priced.push((budget, &need.learnings));
            continue;
        }
        jobs.push(Job {
            slot: Slot::Need(&need.label),
            work: Work::Paragraph {
                learnings: &need.learnings,
                prompt: Prompt::new(
                    "report_need",
                    query,
                    &need.label,
                    facts(&need.learnings),
                    style,
                ),
            },
        });
    }
    // Settled in reading order, but a summary that restates the body after everything else
    // (see above); one that does not is the first to say its findings.
    if outline.summary_restates {
        jobs.sort_by_key(|job| matches!(job.slot, Slot::Summary));
    } else {
        jobs.sort_by_key(|job| !matches!(job.slot, Slot::Title | Slot::Summary));
    }
    let drafts = crate::llm::map_concurrent(llm.parallelism(), &jobs, |_, job| match &job.work {
        Work::Paragraph { learnings, prompt } => writer
            .draft(&|problems| prompt.render(problems), &facts(learnings))
            .map(Drafted::Paragraph),
        Work::Heading {
            prompt,
            field,
            title,
            ..
        } => writer
            .heading_draft(&|problems| prompt.render(problems), field, query, *title)
            .map(Drafted::Heading),
    });

    let mut title = String::new();
    let mut summary = Paragraph {
        text: String::new(),
        citations: Vec::new(),
    };
    let mut section_paragraphs: Vec<Vec<Paragraph>> = vec![Vec::new(); outline.sections.len()];
    let mut sections = Vec::new();
    let mut answered = Vec::new();
    // Paragraphs of sections no heading fits, read under the general section.
    let mut unheaded: Vec<Paragraph> = Vec::new();
    for (job, drafted) in jobs.iter().zip(drafts) {
        match (&job.work, drafted?) {
            (Work::Paragraph { learnings, .. }, Drafted::Paragraph(draft)) => {
                let facts = facts(learnings);
                let (sentences, stated) = match job.slot {
                    // Naming the need, when the passages still support the sentence; else the
                    // finding alone, under the needs heading.
                    Slot::Need(label) => writer.settle(draft, &facts, &|f: &Fact| {
                        let mut options = vec![needs::for_need(label, f)];
                        options.extend(prose::own_words(f));
                        options
                    })?,
                    Slot::Summary if outline.summary_restates => {
                        writer.settle_restating(draft, &facts, &prose::own_words)?
                    }
                    _ => writer.settle(draft, &facts, &prose::own_words)?,
                };
                let sentences = match job.slot {
                    Slot::Need(label) => needs::naming_the_need(query, label, sentences),
                    _ => sentences,
                };
                let paragraph = (!sentences.is_empty()).then(|| {
                    let cited: Vec<&Learning> = stated
                        .iter()
                        .flat_map(|&i| with_merged(learnings[i]))
                        .collect();
                    Paragraph {
                        text: sentences.join(" "),
                        citations: citations.cite(&cited, input.evidence),
                    }
                });
                match (job.slot, paragraph) {
                    (Slot::Summary, Some(p)) => summary = p,
                    (Slot::SectionParagraph(section), Some(p)) => {
                        section_paragraphs[section].push(p)
                    }
                    (Slot::Need(_), Some(p)) => answered.push(p),
                    (Slot::Need(label), None) => uncovered.push(label.to_string()),
                    _ => {}
                }
            }
            (
                Work::Heading {
                    prompt,
                    field,
                    fallback,
                    title: is_title,
                },
                Drafted::Heading(draft),
            ) => {
                let render = |problems: &str| prompt.render(problems);
                match job.slot {
                    Slot::SectionHeading(section) if section_paragraphs[section].is_empty() => {
                        // A section none of whose paragraphs was kept is left out.
                        writer.account(draft);
                    }
                    Slot::SectionHeading(section) => {
                        let direction = outline.sections[section].direction;
                        let paragraphs = std::mem::take(&mut section_paragraphs[section]);
                        // The direction's question is the heading when the model's fail, if
                        // the paragraphs are about what it names: a section headed "Main
                        // criticisms of the printing press" held the press's definition. Those
                        // that are not go under the report's general section.
                        let heading =
                            if direction.is_none() || topic_fits(fallback, query, &paragraphs) {
                                Some(writer.settle_heading(
                                    draft, &render, field, query, fallback, false,
                                )?)
                            } else {
                                writer.settle_model_heading(draft, &render, field, query, false)?
                            };
                        match heading {
                            Some(heading) => sections.push(Section {
                                heading,
                                direction,
                                paragraphs,
                            }),
                            None => {
                                tracing::info!(
                                    "report: no heading fits the section of {fallback:?}: its \
                                     paragraphs go under the general section"
                                );
                                unheaded.extend(paragraphs);
                            }
                        }
                    }
                    _ => {
                        title = writer
                            .settle_heading(draft, &render, field, query, fallback, *is_title)?;
                    }
                }
            }
            // Each job is drafted by the work it names.
            _ => unreachable!("a draft of another kind than its job"),
        }
    }
    for (budget, learnings) in priced {
        let findings: Vec<(usize, &str)> = learnings
            .iter()
            .map(|&l| (l, input.learnings[l].text.as_str()))
            .collect();
        let (text, cited) = needs::for_budget(&budget, &findings);
        let cited: Vec<&Learning> = cited.into_iter().flat_map(with_merged).collect();
        answered.push(Paragraph {
            text,
            citations: citations.cite(&cited, input.evidence),
        });
    }
    // A need some sentence of the report does answer is not called uncovered (the coverage
    // cut reflection uses to cancel a task a finding already answers).
    if !uncovered.is_empty() {
        let said: Vec<String> = std::iter::once(&summary)
            .chain(section_paragraphs.iter().flatten())
            .chain(sections.iter().flat_map(|s| s.paragraphs.iter()))
            .chain(answered.iter())
            .flat_map(|p| split_sentences(&p.text))
            .collect();
        if !said.is_empty() {
            let mut texts: Vec<&str> = uncovered.iter().map(String::as_str).collect();
            texts.extend(said.iter().map(String::as_str));
            let vectors = embedder.embed(&texts)?;
            let (needs, sentences) = vectors.split_at(uncovered.len());
            let mut index = 0;
            uncovered.retain(|_| {
                let need = &needs[index];
                index += 1;
                let covered = sentences
                    .iter()
                    .any(|s| crate::embed::cosine(need, s) >= super::reflect::COVERED);
                if covered {
                    tracing::debug!("report: a need the report answers is not listed as uncovered");
                }
                !covered
            });
        }
    }
    if !uncovered.is_empty() {
        let sentence = needs::uncovered_sentence(&uncovered);
        if sentence_debris(&sentence).is_none() {
            answered.push(Paragraph {
                text: sentence,
                citations: Vec::new(),
            });
        }
    }
    if !unheaded.is_empty() {
        match sections.iter_mut().find(|s| s.direction.is_none()) {
            Some(general) => general.paragraphs.extend(unheaded),
            None => sections.push(Section {
                heading: FURTHER_HEADING.into(),
                direction: None,
                paragraphs: unheaded,
            }),
        }
    }
    if !answered.is_empty() {
        sections.push(Section {
            heading: NEEDS_HEADING.into(),
            direction: None,
            paragraphs: answered,
        });
    }

    if summary.text.is_empty() {
        open_with_first_paragraph(&mut summary, &mut sections);
    }
    for (index, section) in sections.iter().enumerate() {
        on_section(index, &section.heading);
    }
    let mut report = Report {
        title,
        query: asked.to_string(),
        summary,
        sections,
        // The needs section says what this means for the reader; a free closing only
        // restated the summary, uncited.
        closing: String::new(),
        references: citations.references,
        markdown: String::new(),
        language: String::new(),
        untranslated: 0,
        style: input.style.clone(),
        off_question,
    };
    let mut completions = writer.completions;
    if let Some(lang) = lang {
        let (calls, untranslated) = language::translate(llm, &mut report, lang)?;
        completions.extend(calls);
        report.language = lang.code().to_string();
        report.untranslated = untranslated;
    }
    report.markdown = render_markdown(&report);
    Ok((report, completions))
}

/// When no wording of the opening answer passed the checks, the body's first paragraph opens
/// the report instead (moved, not copied; a section it leaves empty goes): a report that
/// starts on a heading reads as if its answer were missing.
fn open_with_first_paragraph(summary: &mut Paragraph, sections: &mut Vec<Section>) {
    let Some(index) = sections
        .iter()
        .position(|s| s.heading != NEEDS_HEADING && !s.paragraphs.is_empty())
    else {
        return;
    };
    tracing::info!(
        "report: no opening passed the checks; the first paragraph of the body opens it"
    );
    *summary = sections[index].paragraphs.remove(0);
    if sections[index].paragraphs.is_empty() {
        sections.remove(index);
    }
}

/// Each finding's score from the finding judge ([`crate::checks::judge::judge_findings`]),
/// None for every one when the model cannot answer by probability or the call fails: the
/// embedding cuts then decide alone, and the log says so.
fn judged_findings(
    llm: &dyn Llm,
    query: &str,
    findings: &[&str],
    calls: &std::sync::Mutex<Vec<Completion>>,
) -> Vec<Option<f32>> {
    match crate::checks::judge::judge_findings(llm, query, findings) {
        Ok((judged, completions)) => {
            if let Ok(mut calls) = calls.lock() {
                calls.extend(completions);
            }
            judged.iter().map(|j| Some(j.score())).collect()
        }
        Err(e) => {
            tracing::warn!("the finding judge could not answer ({e}); findings are kept by the embedding cuts alone");
            vec![None; findings.len()]
        }
    }
}

fn judged_need_findings(
    llm: &dyn Llm,
    query: &str,
    needs: &[&str],
    findings: &[&str],
    calls: &std::sync::Mutex<Vec<Completion>>,
) -> Vec<Vec<Option<f32>>> {
    match crate::checks::judge::judge_need_findings(llm, query, needs, findings) {
        Ok((judged, completions)) => {
            if let Ok(mut calls) = calls.lock() {
                calls.extend(completions);
            }
            judged
                .iter()
                .map(|of_need| of_need.iter().map(|j| Some(j.score())).collect())
                .collect()
        }
        Err(e) => {
            tracing::warn!("the need judge could not answer ({e}); needs are matched to findings by the embeddings alone");
            vec![vec![None; findings.len()]; needs.len()]
        }
    }
}

/// One model call of the report and where its output goes.
struct Job<'p> {
    slot: Slot<'p>,
    work: Work<'p>,
}

#[derive(Clone, Copy)]
enum Slot<'p> {
    Title,
    Summary,
    SectionParagraph(usize),
    SectionHeading(usize),
    /// A paragraph for the reader's need with this label.
    Need(&'p str),
}

enum Work<'p> {
    Paragraph {
        learnings: &'p [usize],
        prompt: Prompt<'p>,
    },
    Heading {
        prompt: Prompt<'p>,
        field: &'static str,
        /// The text tidied into the heading when the model's answers fail.
        fallback: &'p str,
        title: bool,
    },
}

enum Drafted {
    Paragraph(prose::Draft),
    Heading(prose::HeadingDraft),
}

/// A prompt of the report's with what it shows; `problems` are added per attempt.
struct Prompt<'p> {
    template: &'static str,
    query: &'p str,
    need: &'p str,
    facts: String,
    /// What the sources say around the facts (paragraphs only: a detail the writer may add).
    context: String,
    /// One short sentence per fact and no detail around them ([`AnswerStyle::short`]).
    short: bool,
    /// Everyday words ([`AnswerStyle::plain`]).
    plain: bool,
    /// Headings only: words of the facts the question does not use, shown when the model's
    /// heading is asked again ([`heading_words`]).
    words: String,
}

impl<'p> Prompt<'p> {
    fn new(
        template: &'static str,
        query: &'p str,
        need: &'p str,
        facts: Vec<Fact>,
        style: &AnswerStyle,
    ) -> Self {
        Prompt {
            template,
            query,
            need,
            facts: prose::numbered(&facts),
            // A reader who wants short answers gets the facts without a detail around them.
            context: if template == "report_paragraph" && !style.short {
                prose::numbered_excerpts(&facts)
            } else {
                String::new()
            },
            short: style.short,
            plain: style.plain,
            words: if template == "report_heading" {
                heading_words(query, &facts).join(", ")
            } else {
                String::new()
            },
        }
    }

    fn render(&self, problems: &str) -> Result<String, ResearchError> {
        Ok(crate::prompts::render(
            self.template,
            minijinja::context! {
                query => self.query,
                need => self.need,
                facts => self.facts,
                context => self.context,
                short => self.short,
                plain => self.plain,
                problems => problems,
                words => self.words,
            },
        )?)
    }
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

/// A section's paragraphs as list items, one per sentence; a paragraph's citations follow its
/// last sentence, as they follow the paragraph in prose.
fn list_items(paragraphs: &[Paragraph], form: Form) -> String {
    let mut out = String::new();
    let mut number = 0;
    for p in paragraphs {
        let sentences = split_sentences(&p.text);
        let last = sentences.len().saturating_sub(1);
        for (i, sentence) in sentences.iter().enumerate() {
            number += 1;
            let marker = match form {
                Form::Steps => format!("{number}. "),
                Form::Checklist => "- [ ] ".to_string(),
                Form::Bullets | Form::Paragraphs => "- ".to_string(),
            };
            let cites = if i == last {
                cite_marks(&p.citations)
            } else {
                String::new()
            };
            out.push_str(&format!(
                "{marker}{}{cites}\n",
                escape_block(sentence.trim())
            ));
        }
    }
    out
}

/// The line under the question that says how the report follows the reader's style, and the
/// statements it follows, so they can correct them.
fn style_note(style: &AnswerStyle, labels: &language::Labels) -> String {
    let mut how: Vec<&str> = Vec::new();
    if style.short {
        how.push(labels.short);
    }
    match style.form {
        Form::Paragraphs => {}
        Form::Bullets => how.push(labels.bullets),
        Form::Steps => how.push(labels.steps),
        Form::Checklist => how.push(labels.checklist),
    }
    if style.plain {
        how.push(labels.plain);
    }
    let because: Vec<String> = style
        .because
        .iter()
        .map(|b| format!("“{}”", escape_markdown(b.trim())))
        .collect();
    format!(
        "*{}: {} ({}).*\n\n",
        labels.styled,
        how.join(", "),
        because.join("; ")
    )
}

/// Text that starts a block (a paragraph or a list item), escaped so its first characters
/// cannot open a list: "1990. The press …" would otherwise be an ordered list from 1990.
fn escape_block(text: &str) -> String {
    let escaped = escape_markdown(text);
    let digits = escaped.chars().take_while(char::is_ascii_digit).count();
    if digits > 0 && matches!(escaped[digits..].chars().next(), Some('.' | ')')) {
        format!("{}\\{}", &escaped[..digits], &escaped[digits..])
    } else if escaped.starts_with(['-', '+']) {
        format!("\\{escaped}")
    } else {
        escaped
    }
}

fn render_markdown(report: &Report) -> String {
    let lang = whatlang::Lang::from_code(report.language.as_str());
    let labels = language::labels(lang);
    let mut md = format!("# {}\n\n", escape_markdown(&report.title));
    md.push_str(&format!(
        "*{}:* {}\n\n",
        labels.question,
        escape_markdown(&report.query)
    ));
    if lang.is_some() {
        md.push_str(&format!("*{}", labels.translated));
        if report.untranslated > 0 {
            let note = labels
                .untranslated
                .replace("{n}", &report.untranslated.to_string());
            md.push_str(&format!(" {note}"));
        }
        md.push_str("*\n\n");
    }
    if !report.style.is_default() {
        md.push_str(&style_note(&report.style, &labels));
    }
    // The opening answer stays a paragraph, unless it is all the report has to say: a reader
    // who wants a list then gets its sentences as the list.
    let body = report
        .sections
        .iter()
        .any(|s| s.heading != NEEDS_HEADING && s.heading != labels.for_you);
    if report.style.form != Form::Paragraphs && !body && !report.summary.citations.is_empty() {
        md.push_str(&list_items(
            std::slice::from_ref(&report.summary),
            report.style.form,
        ));
        md.push('\n');
    } else {
        md.push_str(&format!(
            "{}{}\n\n",
            escape_block(&report.summary.text),
            cite_marks(&report.summary.citations)
        ));
    }
    for s in &report.sections {
        md.push_str(&format!("## {}\n\n", escape_markdown(&s.heading)));
        match report.style.form {
            Form::Paragraphs => {
                for p in &s.paragraphs {
                    md.push_str(&format!(
                        "{}{}\n\n",
                        escape_block(&p.text),
                        cite_marks(&p.citations)
                    ));
                }
            }
            form => {
                // "The sources found do not cover: …" is no step or item to tick: it stays a
                // sentence after the list.
                let (said, items): (Vec<Paragraph>, Vec<Paragraph>) = s
                    .paragraphs
                    .iter()
                    .cloned()
                    .partition(|p| p.text.starts_with(NOT_COVERED_OPENING));
                if !items.is_empty() {
                    md.push_str(&list_items(&items, form));
                    md.push('\n');
                }
                for p in &said {
                    md.push_str(&format!("{}\n\n", escape_block(&p.text)));
                }
            }
        }
    }
    if !report.closing.is_empty() {
        md.push_str(&format!("## {}\n\n", labels.for_you));
        md.push_str(&escape_markdown(&report.closing));
        md.push_str("\n\n");
    }
    if !report.references.is_empty() {
        md.push_str(&format!("## {}\n\n", labels.references));
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
    use super::*;

    #[test]
    fn a_report_whose_opening_failed_opens_with_its_first_paragraph() {
        let paragraph = |text: &str| Paragraph {
            text: text.into(),
            citations: vec![1],
        };
        let section = |heading: &str, texts: &[&str]| Section {
            heading: heading.into(),
            direction: None,
            paragraphs: texts.iter().map(|t| paragraph(t)).collect(),
        };
        let mut summary = paragraph("");
        let mut sections = vec![
            section("Gliders", &["Gliders fly without an engine."]),
            section("Packing", &["Pack snacks.", "Pack a change of clothes."]),
            section(NEEDS_HEADING, &["The sources found do not cover: naps."]),
        ];
        open_with_first_paragraph(&mut summary, &mut sections);
        assert_eq!(summary.text, "Gliders fly without an engine.");
        assert_eq!(summary.citations, vec![1]);
        // The section it leaves empty goes; the others stay as they were.
        let headings: Vec<&str> = sections.iter().map(|s| s.heading.as_str()).collect();
        assert_eq!(headings, ["Packing", NEEDS_HEADING]);
        let mut summary = paragraph("");
        open_with_first_paragraph(&mut summary, &mut sections);
        assert_eq!(summary.text, "Pack snacks.");
        assert_eq!(sections[0].paragraphs.len(), 1);
        // The needs section is never moved up.
        let mut summary = paragraph("");
        let mut needs_only = vec![section(NEEDS_HEADING, &["You have a toddler."])];
        open_with_first_paragraph(&mut summary, &mut needs_only);
        assert!(summary.text.is_empty());
        assert_eq!(needs_only[0].paragraphs.len(), 1);
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
            language: String::new(),
            untranslated: 0,
            style: AnswerStyle::default(),
            off_question: Vec::new(),
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

    fn styled(form: Form, short: bool) -> Report {
        let paragraph = |text: &str, citations: Vec<usize>| Paragraph {
            text: text.into(),
            citations,
        };
        let mut report = Report {
            title: "Shoes".into(),
            query: "Which running shoes should I buy?".into(),
            summary: paragraph("1990. Cushioned shoes became common.", vec![1]),
            sections: vec![
                Section {
                    heading: "Cushioning".into(),
                    direction: Some(0),
                    paragraphs: vec![
                        paragraph("Foam absorbs impact. Thicker foam weighs more.", vec![1]),
                        paragraph("- Drop is the heel-to-toe height difference.", vec![2]),
                    ],
                },
                Section {
                    heading: NEEDS_HEADING.into(),
                    direction: None,
                    paragraphs: vec![paragraph(
                        "The sources found do not cover: you have knee pain.",
                        Vec::new(),
                    )],
                },
            ],
            closing: String::new(),
            references: Vec::new(),
            markdown: String::new(),
            language: String::new(),
            untranslated: 0,
            style: AnswerStyle {
                form,
                short,
                plain: false,
                because: vec!["Wants short bullet points from now on".into()],
            },
            off_question: Vec::new(),
        };
        if form == Form::Paragraphs && !short {
            report.style = AnswerStyle::default();
        }
        report.markdown = render_markdown(&report);
        report
    }

    #[test]
    fn a_list_reader_whose_report_is_only_an_opening_gets_it_as_a_list() {
        let mut report = styled(Form::Bullets, true);
        report.sections.retain(|s| s.heading == NEEDS_HEADING);
        report.markdown = render_markdown(&report);
        let md = &report.markdown;
        assert!(
            md.contains("\n- 1990\\.\n- Cushioned shoes became common."),
            "{md}"
        );
        // A report with a body keeps its opening a paragraph.
        let full = styled(Form::Bullets, true).markdown;
        assert!(
            full.contains("1990\\. Cushioned shoes became common."),
            "{full}"
        );
        // An opening that cites nothing (nothing was found) is a sentence, not an item.
        report.summary.citations.clear();
        report.markdown = render_markdown(&report);
        assert!(
            !report.markdown.contains("\n- 1990."),
            "{}",
            report.markdown
        );
    }

    #[test]
    fn a_styled_report_lists_one_sentence_per_item_and_says_whose_style_it_follows() {
        let bullets = styled(Form::Bullets, true).markdown;
        assert!(
            bullets.contains(
                "*Written as you like answers: short, in bullet points (“Wants short bullet points from now on”).*"
            ),
            "{bullets}"
        );
        // One item per sentence; the paragraph's citations follow its last sentence only.
        assert!(bullets.contains("- Foam absorbs impact.\n"), "{bullets}");
        assert!(
            bullets.contains("- Thicker foam weighs more. [\\[1\\]](#ref-1)\n"),
            "{bullets}"
        );
        // A sentence that starts like a list marker stays text.
        assert!(
            bullets.contains("- \\- Drop is the heel-to-toe height difference."),
            "{bullets}"
        );
        let html = crate::research::html::markdown_to_html_fragment(&bullets);
        assert_eq!(html.matches("<li>").count(), 3, "{html}");
        // What the sources do not cover is a sentence after the list, not an item.
        assert!(
            bullets.contains("\n\nThe sources found do not cover: you have knee pain.\n"),
            "{bullets}"
        );
        assert!(!html.contains("<ol"), "{html}");

        let steps = styled(Form::Steps, false).markdown;
        assert!(
            steps.contains("1. Foam absorbs impact.\n2. Thicker foam"),
            "{steps}"
        );
        assert!(steps.contains("3. \\- Drop"), "{steps}");
        assert!(steps.contains("(“Wants short"), "{steps}");
        let checklist = styled(Form::Checklist, false).markdown;
        assert_eq!(checklist.matches("- [ ] ").count(), 3, "{checklist}");

        // The opening answer stays a paragraph, and a year that opens it is no list.
        for md in [&bullets, &steps, &checklist] {
            assert!(md.contains("\n1990\\. Cushioned shoes"), "{md}");
        }
        // A reader Rudder knows nothing about gets paragraphs and no note.
        let plain = styled(Form::Paragraphs, false).markdown;
        assert!(!plain.contains("Written as you like"), "{plain}");
        assert!(
            plain.contains("Foam absorbs impact. Thicker foam weighs more. [\\[1\\]]"),
            "{plain}"
        );
        let html = crate::research::html::markdown_to_html_fragment(&plain);
        assert!(!html.contains("<li>"), "{html}");
    }

    #[test]
    fn markdown_escapes_untrusted_text() {
        assert_eq!(escape_markdown("<script>[x](y)"), "\\<script\\>\\[x\\](y)");
    }
}
