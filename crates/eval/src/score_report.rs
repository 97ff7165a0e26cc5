//! `rudder eval score-report`: any Markdown report — Rudder's or another system's — scored
//! against one corpus-grounded question ([`crate::quality::grounded`]) by the same code, so two
//! systems' reports on the same question can be compared.
//!
//! Definitions (per report):
//! * **words**: whitespace-separated words of the title, headings and paragraphs, not of the
//!   reference list (as [`ReportText::words`] counts Rudder's reports in `eval quality`);
//! * **references**: the distinct sources the report lists under a heading such as
//!   *References* or *Sources*, together with distinct link targets in its body (a body link
//!   to a reference-list anchor, `#ref-3`, is a citation mark, not a source). *Resolved*: those
//!   that name an article of the offline corpus, by a Wikipedia address, a file name
//!   (`Printing_press.txt`) or the entry's title;
//! * **content sentences**: [`ReportText::content_sentences`] of its paragraphs;
//! * **supported by what it cites**: the share of content sentences that the calibrated
//!   support matcher finds supported by a passage of the corpus articles the report's
//!   references resolve to. Article-level for every report: Markdown does not say which
//!   passage of an article a peer read, so Rudder's per-paragraph citations get the same,
//!   more lenient, reading. A report none of whose references resolve scores 0 here;
//! * **supported by the corpus**: the same, with each sentence also given the best
//!   [`CORPUS_PASSAGES`] passages the document library's search (BM25 and embeddings, as the
//!   research uses) returns for it: whether the claim is one the corpus states at all, cited or
//!   not;
//! * **key-point recall**: the share of the question's key points some report paragraph
//!   supports ([`grounded::covered_key_points`], as `eval quality` measures it).

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::matchers::SupportMatcher;
use crate::quality::grounded::{self, GroundedQuestion};
use crate::quality::hygiene::{CitedParagraph, ReportText};
use crate::EvalError;
use rudder::embed::Embedder;
use rudder::sources::docs::Library;

/// Passages of the corpus search each sentence is also checked against.
pub const CORPUS_PASSAGES: usize = 5;

/// Headings whose section is the reference list (compared lower-case, without punctuation).
const REFERENCE_HEADINGS: &[&str] = &[
    "references",
    "sources",
    "bibliography",
    "works cited",
    "citations",
    "reference list",
];

/// A Markdown report reduced to what the scores read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MarkdownReport {
    /// Headings and paragraphs, without the reference list (no passages attached).
    pub text: ReportText,
    /// Distinct sources: reference-list entries, then body link targets not already listed.
    pub references: Vec<String>,
}

/// Reads a report's Markdown: headings, paragraphs (list items and table rows each one), the
/// reference list, and body links. Citation marks (`[3]`, `[\[3\]](#ref-3)`), link syntax,
/// emphasis, HTML tags and backslash escapes are removed from the text.
pub fn parse_markdown(markdown: &str, query: &str) -> MarkdownReport {
    let mut text = ReportText {
        query: query.to_string(),
        ..ReportText::default()
    };
    let mut references: Vec<String> = Vec::new();
    let mut body_links: Vec<String> = Vec::new();
    let mut in_references = false;
    let mut paragraph: Vec<String> = Vec::new();
    for raw in markdown.lines() {
        let line = raw.trim();
        if let Some(heading) = heading_text(line) {
            flush(&mut paragraph, &mut text);
            let (clean, _) = clean_inline(heading);
            let key: String = clean
                .to_lowercase()
                .chars()
                .filter(|c| c.is_alphanumeric() || c.is_whitespace())
                .collect();
            in_references = REFERENCE_HEADINGS.contains(&key.trim());
            if !in_references && !clean.trim().is_empty() {
                text.headings.push(clean.trim().to_string());
            }
            continue;
        }
        if in_references {
            // A horizontal rule ends the list (a closing note may follow it).
            if is_rule(line) {
                in_references = false;
                continue;
            }
            let entry = strip_list_marker(line).trim();
            if !entry.is_empty() {
                push_distinct(&mut references, entry.to_string());
            }
            continue;
        }
        if line.is_empty() || is_rule(line) || is_table_separator(line) {
            flush(&mut paragraph, &mut text);
            continue;
        }
        // Rudder restates the question under its title; it is not the report's text.
        if line.starts_with("*Question:*") {
            continue;
        }
        let (clean, links) = clean_inline(strip_list_marker(line));
        for link in links {
            push_distinct(&mut body_links, link);
        }
        let starts_block = line != strip_list_marker(line) || line.starts_with('|');
        if starts_block {
            flush(&mut paragraph, &mut text);
        }
        let clean = clean.replace('|', " ");
        let clean = clean.split_whitespace().collect::<Vec<_>>().join(" ");
        if !clean.is_empty() {
            paragraph.push(clean);
        }
        if starts_block {
            flush(&mut paragraph, &mut text);
        }
    }
    flush(&mut paragraph, &mut text);
    // A body link is a source of its own unless a reference entry already names its target.
    for link in body_links {
        if !references.iter().any(|r| r.contains(&link)) {
            push_distinct(&mut references, link);
        }
    }
    MarkdownReport { text, references }
}

/// Ends the paragraph being read, if it has text.
fn flush(paragraph: &mut Vec<String>, text: &mut ReportText) {
    let joined = paragraph.join(" ");
    paragraph.clear();
    let joined = joined.trim();
    if !joined.is_empty() {
        text.paragraphs.push(CitedParagraph {
            text: joined.to_string(),
            passages: Vec::new(),
        });
    }
}

fn push_distinct(list: &mut Vec<String>, item: String) {
    if !list.contains(&item) {
        list.push(item);
    }
}

/// The text of an ATX heading (`## Title`), if the line is one.
fn heading_text(line: &str) -> Option<&str> {
    let hashes = line.chars().take_while(|&c| c == '#').count();
    if (1..=6).contains(&hashes) {
        let rest = &line[hashes..];
        if rest.is_empty() || rest.starts_with(' ') {
            return Some(rest.trim().trim_end_matches('#').trim());
        }
    }
    None
}

fn is_rule(line: &str) -> bool {
    line.len() >= 3 && line.chars().all(|c| matches!(c, '-' | '*' | '_' | ' '))
}

fn is_table_separator(line: &str) -> bool {
    line.starts_with('|') && line.chars().all(|c| matches!(c, '|' | '-' | ':' | ' '))
}

/// The line without a leading list marker (`- `, `* `, `+ `, `12. `) or quote marker.
fn strip_list_marker(line: &str) -> &str {
    let line = line.trim_start_matches('>').trim_start();
    for marker in ["- ", "* ", "+ "] {
        if let Some(rest) = line.strip_prefix(marker) {
            return rest;
        }
    }
    let digits = line.chars().take_while(char::is_ascii_digit).count();
    if digits > 0 {
        if let Some(rest) = line[digits..].strip_prefix(". ") {
            return rest;
        }
    }
    line
}

/// Plain text of one line of Markdown, and the targets of the links it holds (anchors into the
/// report itself left out).
fn clean_inline(line: &str) -> (String, Vec<String>) {
    let chars: Vec<char> = line.chars().collect();
    let mut out = String::with_capacity(line.len());
    let mut links = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' if i + 1 < chars.len() => {
                out.push(chars[i + 1]);
                i += 2;
            }
            '[' => match bracket(&chars, i) {
                Some(Bracket::Link { text, target, end }) => {
                    let (inner, _) = clean_inline(&text);
                    let is_mark = target.starts_with('#') || is_citation_number(&inner);
                    if !target.starts_with('#') {
                        links.push(target);
                    }
                    if !is_mark {
                        out.push_str(&inner);
                    }
                    i = end;
                }
                Some(Bracket::Mark { end }) => i = end,
                None => {
                    out.push('[');
                    i += 1;
                }
            },
            '<' => {
                // An HTML tag or an autolink: dropped (an autolink's address kept as a link).
                match chars[i..].iter().position(|&c| c == '>') {
                    Some(len) => {
                        let inner: String = chars[i + 1..i + len].iter().collect();
                        if inner.starts_with("http://") || inner.starts_with("https://") {
                            links.push(inner);
                        }
                        i += len + 1;
                    }
                    None => {
                        out.push('<');
                        i += 1;
                    }
                }
            }
            '*' | '`' => i += 1,
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    (out.split_whitespace().collect::<Vec<_>>().join(" "), links)
}

enum Bracket {
    Link {
        text: String,
        target: String,
        end: usize,
    },
    /// A bare citation mark: `[3]`, `[1, 2]`.
    Mark { end: usize },
}

/// What the `[` at `start` opens: a link `[text](target)` (brackets and parentheses nested,
/// escapes skipped) or a bare citation mark.
fn bracket(chars: &[char], start: usize) -> Option<Bracket> {
    let mut depth = 0;
    let mut i = start;
    let close = loop {
        match chars.get(i)? {
            '\\' => i += 1,
            '[' => depth += 1,
            ']' => {
                depth -= 1;
                if depth == 0 {
                    break i;
                }
            }
            _ => {}
        }
        i += 1;
    };
    let text: String = chars[start + 1..close].iter().collect();
    if chars.get(close + 1) == Some(&'(') {
        let mut depth = 0;
        let mut j = close + 1;
        let end = loop {
            match chars.get(j)? {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        break j;
                    }
                }
                _ => {}
            }
            j += 1;
        };
        let target: String = chars[close + 2..end].iter().collect();
        return Some(Bracket::Link {
            text,
            target: target.trim().to_string(),
            end: end + 1,
        });
    }
    if is_citation_number(&text) {
        return Some(Bracket::Mark { end: close + 1 });
    }
    None
}

/// `3`, `[3]`, `1, 2`: a citation number list.
fn is_citation_number(text: &str) -> bool {
    let inner = text.trim().trim_start_matches('[').trim_end_matches(']');
    !inner.is_empty()
        && inner
            .split(',')
            .all(|n| !n.trim().is_empty() && n.trim().chars().all(|c| c.is_ascii_digit()))
}

/// Titles a reference entry may name a corpus article by, most specific first: a Wikipedia
/// address's title, a file's name without extension, the entry's first part (`Title — …`).
pub fn article_candidates(entry: &str) -> Vec<String> {
    let mut out = Vec::new();
    let (clean, links) = clean_inline(entry);
    let mut targets = links;
    targets.push(entry.to_string());
    for target in &targets {
        if let Some((_, rest)) = target.split_once("wikipedia.org/wiki/") {
            let mut title = rest.split(['>', ' ', '#', '?']).next().unwrap_or("");
            // A link written in parentheses keeps its closing one.
            if title.matches(')').count() > title.matches('(').count() {
                title = title.strip_suffix(')').unwrap_or(title);
            }
            push_distinct(&mut out, percent_decode(title).replace('_', " "));
        }
    }
    for target in &targets {
        let path = target.trim().trim_matches(['<', '>', '(', ')']);
        let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
        for ext in [".txt", ".md", ".html", ".pdf"] {
            if let Some(stem) = name.strip_suffix(ext) {
                push_distinct(&mut out, stem.replace('_', " ").trim().to_string());
            }
        }
    }
    let first = clean
        .split(" — ")
        .next()
        .unwrap_or("")
        .split(" - ")
        .next()
        .unwrap_or("")
        .trim()
        .trim_matches(['"', '\'', '.', ','])
        .to_string();
    if !first.is_empty() && !first.starts_with("http") && !first.contains(['/', '\\']) {
        push_distinct(&mut out, first);
    }
    out.retain(|t| !t.is_empty());
    out
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
            if let Some(b) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Where the passages a sentence is checked against come from.
pub trait Corpus {
    /// Every passage of the article titled `title` (compared as stored); empty when the corpus
    /// has no such article.
    fn article(&mut self, title: &str) -> Result<Vec<String>, EvalError>;
    /// The best `limit` passages for `text`.
    fn search(&mut self, text: &str, limit: usize) -> Result<Vec<String>, EvalError>;
}

/// The document library's corpora (the installed Wikipedia corpus) as a [`Corpus`].
pub struct LibraryCorpus<'e> {
    library: Library,
    corpus_files: Vec<String>,
    embedder: &'e dyn Embedder,
    embed_model: String,
}

impl<'e> LibraryCorpus<'e> {
    /// Opens the library in `docs_dir`; an error when it has no corpus.
    pub fn open(
        docs_dir: &Path,
        embedder: &'e dyn Embedder,
        embed_model: &str,
    ) -> Result<Self, EvalError> {
        let library = Library::open(docs_dir).map_err(|e| docs_error(docs_dir, e))?;
        let corpus_files: Vec<String> = library
            .roots()
            .map_err(|e| docs_error(docs_dir, e))?
            .into_iter()
            .filter(|r| r.kind == "corpus")
            .map(|r| r.path)
            .collect();
        if corpus_files.is_empty() {
            return Err(EvalError::Config(format!(
                "the document library in {} holds no corpus; `rudder docs add-corpus` the \
                 Wikipedia corpus first",
                docs_dir.display()
            )));
        }
        Ok(Self {
            library,
            corpus_files,
            embedder,
            embed_model: embed_model.to_string(),
        })
    }
}

fn docs_error(dir: &Path, e: rudder::sources::docs::DocsError) -> EvalError {
    EvalError::Config(format!("document library {}: {e}", dir.display()))
}

impl Corpus for LibraryCorpus<'_> {
    fn article(&mut self, title: &str) -> Result<Vec<String>, EvalError> {
        let dir = self.library.dir().to_path_buf();
        for file in &self.corpus_files {
            let path = format!("{file}#{title}");
            let mut passages = Vec::new();
            while let Some(row) = self
                .library
                .chunk_at(&path, passages.len() as u32)
                .map_err(|e| docs_error(&dir, e))?
            {
                passages.push(row.text);
            }
            if !passages.is_empty() {
                return Ok(passages);
            }
        }
        Ok(Vec::new())
    }

    fn search(&mut self, text: &str, limit: usize) -> Result<Vec<String>, EvalError> {
        let dir = self.library.dir().to_path_buf();
        Ok(self
            .library
            .search(text, limit, Some((self.embedder, &self.embed_model)))
            .map_err(|e| docs_error(&dir, e))?
            .into_iter()
            .map(|e| e.text)
            .collect())
    }
}

/// The scores of one report on one question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReportScore {
    /// The report's name as given (its file).
    pub report: String,
    pub question: String,
    pub words: usize,
    pub content_sentences: usize,
    /// Distinct sources the report lists or links.
    pub references: Vec<String>,
    /// The corpus articles they resolve to (distinct).
    pub cited_articles: Vec<String>,
    /// Content sentences supported by a passage of a cited article.
    pub supported_by_cited: usize,
    /// Content sentences supported by a cited passage or one of the corpus search's best
    /// [`CORPUS_PASSAGES`] for the sentence.
    pub supported_by_corpus: usize,
    pub key_points: usize,
    /// Indices (0-based) of the key points some paragraph supports.
    pub covered: Vec<usize>,
    /// The content sentences no passage supported.
    pub unsupported: Vec<String>,
}

impl ReportScore {
    pub fn cited_share(&self) -> f64 {
        share(self.supported_by_cited, self.content_sentences)
    }
    pub fn corpus_share(&self) -> f64 {
        share(self.supported_by_corpus, self.content_sentences)
    }
    pub fn recall(&self) -> f64 {
        share(self.covered.len(), self.key_points)
    }
}

fn share(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// Scores one report's Markdown against `question`.
pub fn score_markdown(
    support: &SupportMatcher,
    corpus: &mut dyn Corpus,
    question: &GroundedQuestion,
    name: &str,
    markdown: &str,
) -> Result<ReportScore, EvalError> {
    let parsed = parse_markdown(markdown, &question.query);
    let mut cited_articles: Vec<String> = Vec::new();
    let mut cited_passages: Vec<String> = Vec::new();
    for entry in &parsed.references {
        for title in article_candidates(entry) {
            if cited_articles.contains(&title) {
                break;
            }
            let passages = corpus.article(&title)?;
            if !passages.is_empty() {
                cited_articles.push(title);
                cited_passages.extend(passages);
                break;
            }
        }
    }
    tracing::debug!(
        report = name,
        references = parsed.references.len(),
        resolved = cited_articles.len(),
        "references read"
    );
    let sentences = parsed.text.content_sentences();
    let (mut by_cited, mut by_corpus) = (0, 0);
    let mut unsupported = Vec::new();
    for (sentence, _) in &sentences {
        if any_supports(support, sentence, &cited_passages)? {
            by_cited += 1;
            by_corpus += 1;
        } else if any_supports(
            support,
            sentence,
            &corpus.search(sentence, CORPUS_PASSAGES)?,
        )? {
            by_corpus += 1;
        } else {
            unsupported.push(sentence.clone());
        }
    }
    let covered = grounded::covered_key_points(support, &question.key_points, &parsed.text)?;
    Ok(ReportScore {
        report: name.to_string(),
        question: question.id.clone(),
        words: parsed.text.words(),
        content_sentences: sentences.len(),
        references: parsed.references,
        cited_articles,
        supported_by_cited: by_cited,
        supported_by_corpus: by_corpus,
        key_points: question.key_points.len(),
        covered,
        unsupported,
    })
}

fn any_supports(
    support: &SupportMatcher,
    sentence: &str,
    passages: &[String],
) -> Result<bool, EvalError> {
    for passage in passages {
        if support.supports(sentence, passage)? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Reads and scores a report file; errors name the file.
pub fn score_file(
    support: &SupportMatcher,
    corpus: &mut dyn Corpus,
    question: &GroundedQuestion,
    path: &Path,
) -> Result<ReportScore, EvalError> {
    let markdown = std::fs::read_to_string(path).map_err(|e| EvalError::Io {
        path: path.to_path_buf(),
        source: e,
    })?;
    score_markdown(
        support,
        corpus,
        question,
        &path.display().to_string(),
        &markdown,
    )
    .map_err(|e| EvalError::Case {
        case: path.display().to_string(),
        message: e.to_string(),
    })
}

/// The question whose id is `id`, from `data/grounded.jsonl`.
pub fn grounded_question(id: &str) -> Result<GroundedQuestion, EvalError> {
    let questions = grounded::questions()?;
    let known: Vec<String> = questions.iter().map(|q| q.id.clone()).collect();
    questions.into_iter().find(|q| q.id == id).ok_or_else(|| {
        EvalError::Config(format!(
            "no corpus-grounded question {id:?} in crates/eval/data/grounded.jsonl (it has {})",
            known.join(", ")
        ))
    })
}

/// The Markdown table's header.
pub const TABLE_HEADER: &str = "| question | report | words | references (resolve to the corpus) \
     | content sentences | supported by what it cites | supported by the corpus | key-point \
     recall |\n|---|---|---|---|---|---|---|---|\n";

/// One Markdown table row.
pub fn table_row(score: &ReportScore) -> String {
    format!(
        "| {} | {} | {} | {} ({}) | {} | {:.2} | {:.2} | {:.2} ({} of {}) |\n",
        score.question,
        score.report,
        score.words,
        score.references.len(),
        score.cited_articles.len(),
        score.content_sentences,
        score.cited_share(),
        score.corpus_share(),
        score.recall(),
        score.covered.len(),
        score.key_points,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUDDER: &str = "# The press\n\n*Question:* How did the printing press change Europe?\n\n\
        Printing spread fast. [\\[1\\]](#ref-1) [\\[2\\]](#ref-2)\n\n## Books\n\n\
        Books became cheap in the 15th century. [\\[2\\]](#ref-2)\n\n## References\n\n\
        1. <a id=\"ref-1\"></a>Printing press — Printing press, passage 1 — \
        <https://en.wikipedia.org/wiki/Printing_press>\n\
        2. <a id=\"ref-2\"></a>Johannes Gutenberg — Johannes Gutenberg, passage 1 — \
        <https://en.wikipedia.org/wiki/Johannes_Gutenberg>\n";

    #[test]
    fn rudder_markdown_reads_as_headings_paragraphs_and_two_references() {
        let parsed = parse_markdown(RUDDER, "q");
        assert_eq!(parsed.text.headings, vec!["The press", "Books"]);
        let paragraphs: Vec<&str> = parsed
            .text
            .paragraphs
            .iter()
            .map(|p| p.text.as_str())
            .collect();
        assert_eq!(
            paragraphs,
            vec![
                "Printing spread fast.",
                "Books became cheap in the 15th century."
            ]
        );
        assert_eq!(parsed.references.len(), 2);
        assert_eq!(
            article_candidates(&parsed.references[1])[0],
            "Johannes Gutenberg"
        );
        assert_eq!(parsed.text.words(), 2 + 1 + 3 + 7);
    }

    #[test]
    fn body_links_and_file_names_count_as_sources() {
        let md = "# Report\n\nThe press spread ([Printing press](/docs/g01/Printing_press.txt)) \
                  and [1] more [2].\n\n- A list item ([Printer (computing)](https://en.wikipedia.org/wiki/Printer_(computing))).\n\n\
                  ## Sources\n\n- https://example.org/made-up\n\n---\n\nA closing note on what the report is.\n";
        let parsed = parse_markdown(md, "q");
        assert_eq!(
            parsed.text.paragraphs[0].text,
            "The press spread (Printing press) and more ."
        );
        assert_eq!(
            parsed.text.paragraphs[1].text,
            "A list item (Printer (computing))."
        );
        assert_eq!(parsed.references.len(), 3, "{:?}", parsed.references);
        assert_eq!(
            parsed.text.paragraphs.last().unwrap().text,
            "A closing note on what the report is."
        );
        assert_eq!(
            article_candidates("/docs/g01/Printing_press.txt"),
            vec!["Printing press"]
        );
        assert_eq!(
            article_candidates("https://en.wikipedia.org/wiki/Printer_(computing)")[0],
            "Printer (computing)"
        );
    }
}
