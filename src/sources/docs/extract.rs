//! Text out of files, one format at a time: Markdown, plain text, HTML, PDF (per page) and
//! DOCX. Each extractor returns the document's title (when the file names one) and its text in
//! sections; a PDF has one section per page so chunks never straddle pages and every chunk
//! keeps its page number.
//!
//! Errors say where in the file things went wrong (`page 3`, `word/document.xml: byte 812`,
//! `byte 40`), so the caller can report `x.pdf: page 3: …`.

use std::borrow::Cow;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// The formats the library reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Markdown,
    Text,
    Html,
    Pdf,
    Docx,
    /// An article of an installed corpus (not a file of its own).
    Corpus,
}

impl Format {
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Markdown => "markdown",
            Format::Text => "text",
            Format::Html => "html",
            Format::Pdf => "pdf",
            Format::Docx => "docx",
            Format::Corpus => "corpus",
        }
    }

    /// The format a file name says, by extension (case-insensitive).
    pub fn of_path(path: &Path) -> Option<Self> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        Some(match ext.as_str() {
            "md" | "markdown" | "mdown" | "mkd" => Format::Markdown,
            "txt" | "text" => Format::Text,
            "html" | "htm" | "xhtml" => Format::Html,
            "pdf" => Format::Pdf,
            "docx" => Format::Docx,
            _ => return None,
        })
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "markdown" => Format::Markdown,
            "text" => Format::Text,
            "html" => Format::Html,
            "pdf" => Format::Pdf,
            "docx" => Format::Docx,
            "corpus" => Format::Corpus,
            other => return Err(format!("unknown document format `{other}`")),
        })
    }
}

/// The extensions [`Format::of_path`] accepts, for messages.
pub const SUPPORTED: &str = ".md, .markdown, .txt, .html, .htm, .pdf, .docx";

/// A run of text; for PDFs, one page.
#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    /// 1-based page number, for paged formats.
    pub page: Option<u32>,
    pub text: String,
}

/// What a file yielded.
#[derive(Debug, Clone)]
pub struct Extracted {
    pub format: Format,
    /// The title the file gives itself (first heading, `<title>`, PDF or DOCX metadata).
    pub title: Option<String>,
    pub sections: Vec<Section>,
    /// Page count, for paged formats.
    pub pages: Option<u32>,
}

/// Why a file could not be read, and where.
#[derive(Debug, Clone, PartialEq)]
pub struct ExtractError {
    /// `page 3`, `word/document.xml: byte 812`, `byte 40`; `None` for the file as a whole.
    pub place: Option<String>,
    pub message: String,
}

impl ExtractError {
    fn whole(message: impl Into<String>) -> Self {
        Self {
            place: None,
            message: message.into(),
        }
    }

    fn at(place: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            place: Some(place.into()),
            message: message.into(),
        }
    }
}

/// Extracts the text of `bytes`, the content of a file in `format`.
pub fn extract(bytes: &[u8], format: Format) -> Result<Extracted, ExtractError> {
    match format {
        Format::Markdown => markdown(&utf8_text(bytes)?),
        Format::Text => Ok(Extracted {
            format,
            title: None,
            sections: vec![Section {
                page: None,
                text: utf8_text(bytes)?.into_owned(),
            }],
            pages: None,
        }),
        Format::Html => html(&html_text(bytes)?),
        Format::Pdf => pdf(bytes),
        Format::Docx => docx(bytes),
        Format::Corpus => Err(ExtractError::whole(
            "corpus articles are indexed from their corpus file",
        )),
    }
}

/// The bytes as UTF-8 (a BOM is dropped; UTF-16 with a BOM is decoded). Anything else is an
/// error naming the first bad byte: guessing a legacy encoding would index mojibake.
fn utf8_text(bytes: &[u8]) -> Result<Cow<'_, str>, ExtractError> {
    if let Some((encoding, bom)) = encoding_rs::Encoding::for_bom(bytes) {
        if encoding != encoding_rs::UTF_8 {
            let (text, had_errors) = encoding.decode_without_bom_handling(&bytes[bom..]);
            if had_errors {
                return Err(ExtractError::whole(format!(
                    "not valid {} text",
                    encoding.name()
                )));
            }
            return Ok(text);
        }
        return utf8_text(&bytes[bom..]);
    }
    match std::str::from_utf8(bytes) {
        Ok(s) => Ok(Cow::Borrowed(s)),
        Err(e) => {
            let at = e.valid_up_to();
            let line = bytes[..at].iter().filter(|&&b| b == b'\n').count() + 1;
            Err(ExtractError::at(
                format!("line {line}, byte {at}"),
                format!(
                    "not valid UTF-8 text (byte 0x{:02x}); convert the file to UTF-8 to index it",
                    bytes[at]
                ),
            ))
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Markdown

fn markdown(source: &str) -> Result<Extracted, ExtractError> {
    use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_YAML_STYLE_METADATA_BLOCKS
        | Options::ENABLE_PLUSES_DELIMITED_METADATA_BLOCKS;
    let mut out = String::with_capacity(source.len());
    let mut title: Option<String> = None;
    let mut heading: Option<String> = None;
    let mut in_metadata = false;
    let pieces = markdown_pieces(source);
    for event in pieces.into_iter().flat_map(|p| Parser::new_ext(p, options)) {
        match event {
            Event::Start(Tag::MetadataBlock(_)) => in_metadata = true,
            Event::End(TagEnd::MetadataBlock(_)) => in_metadata = false,
            _ if in_metadata => {}
            Event::Start(Tag::Heading { .. }) => {
                block_break(&mut out);
                if title.is_none() {
                    heading = Some(String::new());
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                if let Some(h) = heading.take() {
                    let h = collapse_spaces(&h);
                    if !h.is_empty() {
                        title = Some(h);
                    }
                }
                out.push_str("\n\n");
            }
            Event::Text(t) | Event::Code(t) | Event::InlineMath(t) | Event::DisplayMath(t) => {
                out.push_str(&t);
                if let Some(h) = heading.as_mut() {
                    h.push_str(&t);
                }
            }
            Event::SoftBreak => {
                out.push(' ');
                if let Some(h) = heading.as_mut() {
                    h.push(' ');
                }
            }
            Event::HardBreak => out.push('\n'),
            Event::End(
                TagEnd::Paragraph
                | TagEnd::BlockQuote(_)
                | TagEnd::CodeBlock
                | TagEnd::List(_)
                | TagEnd::Table
                | TagEnd::FootnoteDefinition,
            )
            | Event::Rule => out.push_str("\n\n"),
            Event::End(TagEnd::Item | TagEnd::TableRow | TagEnd::TableHead) => out.push('\n'),
            Event::End(TagEnd::TableCell) => out.push_str(" | "),
            Event::Start(Tag::Item) => out.push_str("- "),
            // Raw HTML in Markdown is markup, not prose (and may be a script).
            Event::Html(_) | Event::InlineHtml(_) => {}
            _ => {}
        }
    }
    Ok(Extracted {
        format: Format::Markdown,
        title,
        sections: vec![Section {
            page: None,
            text: out,
        }],
        pages: None,
    })
}

/// pulldown-cmark builds the tree of a whole document before its first event, at up to ~220
/// bytes per markup byte: `> > > …`, `- - - …`, `[[[…` or `<b><i>…` made trees 50-110× the
/// file. So a document is parsed in pieces of about this many markup bytes (ASCII punctuation
/// and line ends: every node starts at one), which keeps each tree under half a megabyte.
const MARKDOWN_PIECE_MARKS: usize = 1024;

/// `source` in pieces for [`markdown`]: cut after a blank line outside code fences once a
/// piece holds [`MARKDOWN_PIECE_MARKS`] markup bytes, or anywhere at twice that (one huge
/// paragraph or line). Front matter stays whole in the first piece. A short document, or
/// one of plain prose, is one piece.
fn markdown_pieces(source: &str) -> Vec<&str> {
    let bytes = source.as_bytes();
    let mut pieces = Vec::new();
    let (mut start, mut marks, mut in_fence) = (0, 0usize, false);
    let front_matter = front_matter_len(source);
    let mut line_start = front_matter;
    for i in front_matter..bytes.len() {
        let b = bytes[i];
        if b.is_ascii_punctuation() || b == b'\n' {
            marks += 1;
        }
        let mut cut = marks >= 2 * MARKDOWN_PIECE_MARKS && source.is_char_boundary(i + 1);
        if b == b'\n' {
            let line = &source[line_start..=i];
            let trimmed = line.trim_start();
            if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
                in_fence = !in_fence;
            }
            cut |= marks >= MARKDOWN_PIECE_MARKS && !in_fence && line.trim().is_empty();
            line_start = i + 1;
        }
        if cut {
            pieces.push(&source[start..=i]);
            (start, marks) = (i + 1, 0);
        }
    }
    if start < bytes.len() || pieces.is_empty() {
        pieces.push(&source[start..]);
    }
    pieces
}

/// Length of the front matter block `source` opens with (`---` … `---`, `+++` … `+++`), or 0.
fn front_matter_len(source: &str) -> usize {
    let mut lines = source.split_inclusive('\n');
    let Some(first) = lines.next() else {
        return 0;
    };
    let open = first.trim_end();
    if open != "---" && open != "+++" {
        return 0;
    }
    let mut len = first.len();
    for line in lines {
        len += line.len();
        let line = line.trim_end();
        if line == open || (open == "---" && line == "...") {
            return len;
        }
    }
    0
}

fn block_break(out: &mut String) {
    if !out.is_empty() && !out.ends_with("\n\n") {
        out.push_str("\n\n");
    }
}

/// Runs of whitespace become one space; the ends are trimmed.
pub(crate) fn collapse_spaces(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

// ---------------------------------------------------------------------------------------------
// HTML

/// HTML as text: UTF-8 (or UTF-16 with a BOM), or the legacy encoding its `<meta charset>`
/// names. Without either, bytes that are not UTF-8 are an error, as for plain text.
fn html_text(bytes: &[u8]) -> Result<Cow<'_, str>, ExtractError> {
    match utf8_text(bytes) {
        Ok(text) => Ok(text),
        Err(utf8_error) => {
            let head = String::from_utf8_lossy(&bytes[..bytes.len().min(4096)]).to_lowercase();
            let label = head.find("charset=").map(|i| {
                head[i + 8..]
                    .trim_start_matches(['"', '\''])
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
                    .collect::<String>()
            });
            match label.and_then(|l| encoding_rs::Encoding::for_label(l.as_bytes())) {
                Some(encoding) if encoding != encoding_rs::UTF_8 => {
                    let (text, _, _) = encoding.decode(bytes);
                    Ok(text)
                }
                _ => Err(utf8_error),
            }
        }
    }
}

/// Elements whose content is never prose.
const HTML_SKIP: &[&str] = &[
    "script", "style", "noscript", "template", "head", "svg", "iframe", "object", "embed",
    "canvas", "select", "datalist",
];

/// Elements that start a new paragraph.
const HTML_BLOCKS: &[&str] = &[
    "p",
    "div",
    "section",
    "article",
    "main",
    "aside",
    "header",
    "footer",
    "nav",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "ul",
    "ol",
    "li",
    "dl",
    "dt",
    "dd",
    "table",
    "tr",
    "blockquote",
    "pre",
    "figure",
    "figcaption",
    "form",
    "fieldset",
    "address",
    "details",
    "summary",
    "hr",
];

fn html(source: &str) -> Result<Extracted, ExtractError> {
    use scraper::{ElementRef, Html, Selector};
    let doc = Html::parse_document(&crate::html::cap_html_depth(source));
    let first_text = |selector: &str| -> Option<String> {
        let sel = Selector::parse(selector).ok()?;
        doc.select(&sel)
            .map(|e| collapse_spaces(&e.text().collect::<String>()))
            .find(|t| !t.is_empty())
    };
    let title = first_text("title").or_else(|| first_text("h1"));

    // An explicit stack instead of recursion: a page of 100,000 nested elements must not
    // overflow the thread's stack.
    enum Step<'a> {
        Enter(ego_tree::NodeRef<'a, scraper::Node>, bool),
        CloseBlock,
    }
    fn walk(root: ElementRef<'_>, out: &mut String) {
        let mut stack: Vec<Step<'_>> = root
            .children()
            .rev()
            .map(|c| Step::Enter(c, false))
            .collect();
        while let Some(step) = stack.pop() {
            let (child, pre) = match step {
                Step::CloseBlock => {
                    block_break(out);
                    continue;
                }
                Step::Enter(child, pre) => (child, pre),
            };
            if let Some(text) = child.value().as_text() {
                if pre {
                    out.push_str(text);
                } else {
                    // Whitespace in HTML text is layout: one space at most.
                    let mut last_space = out.ends_with([' ', '\n']) || out.is_empty();
                    for c in text.chars() {
                        if c.is_whitespace() {
                            if !last_space {
                                out.push(' ');
                                last_space = true;
                            }
                        } else {
                            out.push(c);
                            last_space = false;
                        }
                    }
                }
            } else if let Some(child_el) = ElementRef::wrap(child) {
                let e = child_el.value();
                let name = e.name();
                if HTML_SKIP.contains(&name)
                    || e.attr("hidden").is_some()
                    || e.attr("aria-hidden") == Some("true")
                {
                    continue;
                }
                match name {
                    "br" => {
                        out.push('\n');
                        continue;
                    }
                    "td" | "th" => out.push_str(" | "),
                    "img" => {
                        if let Some(alt) = e.attr("alt").map(collapse_spaces) {
                            if !alt.is_empty() {
                                out.push_str(&alt);
                                out.push(' ');
                            }
                        }
                    }
                    _ => {}
                }
                let block = HTML_BLOCKS.contains(&name);
                if block {
                    block_break(out);
                    stack.push(Step::CloseBlock);
                }
                let inner_pre = pre || name == "pre" || name == "textarea";
                stack.extend(child_el.children().rev().map(|c| Step::Enter(c, inner_pre)));
            }
        }
    }

    let mut out = String::with_capacity(source.len() / 2);
    walk(doc.root_element(), &mut out);
    Ok(Extracted {
        format: Format::Html,
        title,
        sections: vec![Section {
            page: None,
            text: out,
        }],
        pages: None,
    })
}

// ---------------------------------------------------------------------------------------------
// PDF

fn pdf(bytes: &[u8]) -> Result<Extracted, ExtractError> {
    use pdf_extract::{output_doc_page, Document, PlainTextOutput};
    if !bytes.starts_with(b"%PDF")
        && !bytes[..bytes.len().min(1024)]
            .windows(4)
            .any(|w| w == b"%PDF")
    {
        return Err(ExtractError::whole("not a PDF file (no %PDF header)"));
    }
    let mut doc = quietly(|| Document::load_mem(bytes))
        .map_err(|panic| ExtractError::whole(format!("unreadable PDF ({panic})")))?
        .map_err(|e| ExtractError::whole(format!("unreadable PDF: {e}")))?;
    if doc.is_encrypted() && doc.decrypt("").is_err() {
        return Err(ExtractError::whole(
            "the PDF is password-protected; save an unprotected copy to index it",
        ));
    }
    let title = pdf_title(&doc);
    let pages: Vec<u32> = doc.get_pages().keys().copied().collect();
    if pages.is_empty() {
        return Err(ExtractError::whole("the PDF has no pages"));
    }
    let mut sections = Vec::with_capacity(pages.len());
    for &page in &pages {
        let place = format!("page {page}");
        let mut text = String::new();
        let result = quietly(std::panic::AssertUnwindSafe(|| {
            let mut output = PlainTextOutput::new(&mut text);
            output_doc_page(&doc, &mut output, page)
        }));
        match result {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(ExtractError::at(place, e.to_string())),
            Err(panic) => {
                return Err(ExtractError::at(
                    place,
                    format!("the PDF reader failed on this page ({panic})"),
                ))
            }
        }
        sections.push(Section {
            page: Some(page),
            text: join_hyphenated_lines(&text),
        });
    }
    if sections.iter().all(|s| s.text.trim().is_empty()) {
        return Err(ExtractError::whole(format!(
            "no text on any of its {} pages (a scanned PDF? OCR is not supported)",
            pages.len()
        )));
    }
    Ok(Extracted {
        format: Format::Pdf,
        title,
        sections,
        pages: Some(pages.len() as u32),
    })
}

/// `exam-\nple` → `example`: words broken at line ends by the typesetter.
fn join_hyphenated_lines(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("-\n") {
        let before_is_letter = rest[..i]
            .chars()
            .next_back()
            .is_some_and(char::is_alphabetic);
        let after = rest[i + 2..].chars().next();
        if before_is_letter && after.is_some_and(char::is_lowercase) {
            out.push_str(&rest[..i]);
        } else {
            out.push_str(&rest[..i + 2]);
        }
        rest = &rest[i + 2..];
    }
    out.push_str(rest);
    out
}

/// The `/Title` of the document information dictionary, when it says something.
fn pdf_title(doc: &pdf_extract::Document) -> Option<String> {
    let info = doc.trailer.get(b"Info").ok()?;
    let info = match info {
        pdf_extract::Object::Reference(id) => doc.get_dictionary(*id).ok()?,
        pdf_extract::Object::Dictionary(d) => d,
        _ => return None,
    };
    let raw = match info.get(b"Title").ok()? {
        pdf_extract::Object::String(bytes, _) => bytes.clone(),
        pdf_extract::Object::Reference(id) => match doc.get_object(*id).ok()? {
            pdf_extract::Object::String(bytes, _) => bytes.clone(),
            _ => return None,
        },
        _ => return None,
    };
    let text = pdf_text_string(&raw);
    let title = collapse_spaces(&text);
    let lower = title.to_lowercase();
    if title.is_empty() || lower == "untitled" || lower.starts_with("microsoft word - ") {
        None
    } else {
        Some(title)
    }
}

/// A PDF text string: UTF-16BE with a BOM, UTF-8 with a BOM, else PDFDocEncoding (taken as
/// Latin-1, which it matches for text).
fn pdf_text_string(raw: &[u8]) -> String {
    if let Some(rest) = raw.strip_prefix(&[0xfe, 0xff]) {
        let units: Vec<u16> = rest
            .chunks_exact(2)
            .map(|c| u16::from_be_bytes([c[0], c[1]]))
            .collect();
        return String::from_utf16_lossy(&units);
    }
    if let Some(rest) = raw.strip_prefix(&[0xef, 0xbb, 0xbf]) {
        return String::from_utf8_lossy(rest).into_owned();
    }
    raw.iter().map(|&b| b as char).collect()
}

/// Runs `f`, turning a panic into an error message. The PDF reader panics on some malformed
/// files; a panic there must fail that one file, quietly, not the whole run. The process's
/// panic hook is wrapped once so panics inside `quietly` print nothing; all others still do.
fn quietly<T>(f: impl FnOnce() -> T + std::panic::UnwindSafe) -> Result<T, String> {
    use std::cell::Cell;
    thread_local!(static QUIET: Cell<bool> = const { Cell::new(false) });
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(Cell::get) {
                previous(info);
            }
        }));
    });
    let was = QUIET.with(|q| q.replace(true));
    let result = std::panic::catch_unwind(f);
    QUIET.with(|q| q.set(was));
    result.map_err(|payload| {
        payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "internal error".into())
    })
}

// ---------------------------------------------------------------------------------------------
// DOCX

/// Decompressed XML parts larger than this are refused (a zip bomb, not a document).
const DOCX_PART_LIMIT: u64 = 256 << 20;

fn docx(bytes: &[u8]) -> Result<Extracted, ExtractError> {
    use crate::history::import::input::{zip_claims_too_many_entries, ZIP_TAIL_BYTES};
    let tail = &bytes[bytes.len().saturating_sub(ZIP_TAIL_BYTES as usize)..];
    if zip_claims_too_many_entries(tail, bytes.len() as u64) {
        return Err(ExtractError::whole(
            "not a DOCX file (its zip directory claims more entries than the file can hold)",
        ));
    }
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes))
        .map_err(|e| ExtractError::whole(format!("not a DOCX file (not a valid zip: {e})")))?;
    let document = read_part(&mut archive, "word/document.xml")?
        .ok_or_else(|| ExtractError::whole("not a DOCX file (it has no word/document.xml)"))?;
    let (text, heading) = docx_body(&document)?;
    let title = read_part(&mut archive, "docProps/core.xml")
        .ok()
        .flatten()
        .and_then(|core| docx_core_title(&core))
        .or(heading);
    Ok(Extracted {
        format: Format::Docx,
        title,
        sections: vec![Section { page: None, text }],
        pages: None,
    })
}

fn read_part(
    archive: &mut zip::ZipArchive<std::io::Cursor<&[u8]>>,
    name: &str,
) -> Result<Option<String>, ExtractError> {
    use std::io::Read;
    let entry = match archive.by_name(name) {
        Ok(e) => e,
        Err(zip::result::ZipError::FileNotFound) => return Ok(None),
        Err(e) => return Err(ExtractError::at(name, e.to_string())),
    };
    let mut buf = Vec::new();
    entry
        .take(DOCX_PART_LIMIT + 1)
        .read_to_end(&mut buf)
        .map_err(|e| ExtractError::at(name, format!("cannot decompress: {e}")))?;
    if buf.len() as u64 > DOCX_PART_LIMIT {
        return Err(ExtractError::at(name, "larger than 256 MiB uncompressed"));
    }
    String::from_utf8(buf).map(Some).map_err(|e| {
        ExtractError::at(
            format!("{name}: byte {}", e.utf8_error().valid_up_to()),
            "not UTF-8",
        )
    })
}

/// The text of `word/document.xml`, paragraphs (table cells too) separated by blank lines;
/// plus the first paragraph styled as a title or heading.
fn docx_body(xml: &str) -> Result<(String, Option<String>), ExtractError> {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_str(xml);
    let mut out = String::with_capacity(xml.len() / 4);
    let mut in_text = false;
    let mut paragraph = String::new();
    let mut paragraph_is_heading = false;
    let mut heading: Option<String> = None;
    // Deleted revisions (w:del → w:delText) and field codes (w:instrText) are not text.
    let place = |reader: &quick_xml::Reader<&[u8]>| {
        format!("word/document.xml: byte {}", reader.error_position())
    };
    loop {
        let event = reader
            .read_event()
            .map_err(|e| ExtractError::at(place(&reader), e.to_string()))?;
        match event {
            ev @ (Event::Start(_) | Event::Empty(_)) => {
                let (e, start) = match ev {
                    Event::Start(e) => (e, true),
                    Event::Empty(e) => (e, false),
                    _ => unreachable!("matched Start or Empty"),
                };
                match e.local_name().as_ref() {
                    "t" => in_text = start,
                    "tab" => paragraph.push('\t'),
                    "br" | "cr" => paragraph.push('\n'),
                    "p" => {
                        paragraph.clear();
                        paragraph_is_heading = false;
                    }
                    "pStyle" => {
                        let style = e
                            .attributes()
                            .with_checks(false)
                            .flatten()
                            .find(|a| a.key.local_name().as_ref() == "val")
                            .map(|a| a.value.to_ascii_lowercase())
                            .unwrap_or_default();
                        if style == "title" || style.starts_with("heading") {
                            paragraph_is_heading = true;
                        }
                    }
                    _ => {}
                }
            }
            Event::End(e) => match e.local_name().as_ref() {
                "t" => in_text = false,
                "p" => {
                    let text = paragraph.trim();
                    if !text.is_empty() {
                        if paragraph_is_heading && heading.is_none() {
                            heading = Some(collapse_spaces(text));
                        }
                        out.push_str(text);
                        out.push_str("\n\n");
                    }
                    paragraph.clear();
                }
                _ => {}
            },
            Event::Text(t) if in_text => paragraph.push_str(&t.xml10_content()),
            Event::CData(t) if in_text => paragraph.push_str(&t),
            Event::GeneralRef(r) if in_text => {
                let c = match r.resolve_char_ref() {
                    Ok(Some(c)) => Some(c),
                    _ => match &*r {
                        "lt" => Some('<'),
                        "gt" => Some('>'),
                        "amp" => Some('&'),
                        "apos" => Some('\''),
                        "quot" => Some('"'),
                        _ => None,
                    },
                };
                if let Some(c) = c {
                    paragraph.push(c);
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    let rest = paragraph.trim();
    if !rest.is_empty() {
        out.push_str(rest);
    }
    Ok((out, heading))
}

/// `dc:title` from `docProps/core.xml`.
fn docx_core_title(xml: &str) -> Option<String> {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_str(xml);
    let mut in_title = false;
    let mut title = String::new();
    loop {
        match reader.read_event().ok()? {
            Event::Start(e) if e.local_name().as_ref() == "title" => in_title = true,
            Event::End(e) if e.local_name().as_ref() == "title" => break,
            Event::Text(t) if in_title => title.push_str(&t.xml10_content()),
            Event::GeneralRef(r) if in_title => {
                if let Ok(Some(c)) = r.resolve_char_ref() {
                    title.push(c);
                } else if &*r == "amp" {
                    title.push('&');
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    let title = collapse_spaces(&title);
    (!title.is_empty()).then_some(title)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_of(e: &Extracted) -> String {
        e.sections
            .iter()
            .map(|s| s.text.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn markdown_keeps_prose_drops_front_matter_and_raw_html() {
        let src = "---\nsecret: front\n---\n# The Title\n\nSome *text* here.\n\n<script>evil()</script>\n\n- item one\n- item two\n";
        let e = markdown(src).unwrap();
        assert_eq!(e.title.as_deref(), Some("The Title"));
        let t = text_of(&e);
        assert!(t.contains("Some text here."), "{t}");
        assert!(t.contains("item two"));
        assert!(!t.contains("evil") && !t.contains("secret"), "{t}");
    }

    #[test]
    fn html_skips_scripts_styles_and_hidden() {
        let src = r#"<html><head><title> Page  Title </title><style>.x{color:red}</style></head>
            <body><h1>Head</h1><p>Hello <b>world</b>.</p><script>var hidden = 1;</script>
            <div hidden>gone</div><p>Second<br>line</p></body></html>"#;
        let e = html(src).unwrap();
        assert_eq!(e.title.as_deref(), Some("Page Title"));
        let t = text_of(&e);
        assert!(t.contains("Hello world."), "{t}");
        assert!(t.contains("Second\nline"), "{t}");
        assert!(
            !t.contains("hidden") && !t.contains("color") && !t.contains("gone"),
            "{t}"
        );
    }

    #[test]
    fn non_utf8_text_names_the_line_and_byte() {
        let err = utf8_text(b"ok\nfine\ncaf\xe9").unwrap_err();
        assert_eq!(err.place.as_deref(), Some("line 3, byte 11"));
        assert!(err.message.contains("UTF-8"), "{}", err.message);
        let utf16: Vec<u8> = [0xff, 0xfe]
            .into_iter()
            .chain("hé".encode_utf16().flat_map(|u| u.to_le_bytes()))
            .collect();
        assert_eq!(utf8_text(&utf16).unwrap(), "hé");
    }

    #[test]
    fn legacy_html_with_a_charset_is_decoded() {
        let bytes = b"<html><head><meta charset=\"windows-1252\"><title>caf\xe9</title></head><body>na\xefve</body></html>";
        let text = html_text(bytes).unwrap();
        assert!(text.contains("café") && text.contains("naïve"));
    }

    #[test]
    fn hyphenated_line_breaks_are_joined() {
        assert_eq!(
            join_hyphenated_lines("exam-\nple and well-\nKnown"),
            "example and well-\nKnown"
        );
    }

    #[test]
    fn pdf_strings_decode() {
        assert_eq!(pdf_text_string(b"\xfe\xff\x00H\x00i"), "Hi");
        assert_eq!(pdf_text_string(b"caf\xe9"), "café");
    }

    #[test]
    fn garbage_is_not_a_pdf_or_docx() {
        assert!(pdf(b"hello").unwrap_err().message.contains("not a PDF"));
        assert!(docx(b"hello").unwrap_err().message.contains("not a DOCX"));
    }
}
