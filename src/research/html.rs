//! Reports as HTML: Markdown rendered by pulldown-cmark, then sanitised by ammonia.
//!
//! The model writes the report, and the model has read web pages and documents it did not
//! choose, so the Markdown is untrusted input. Whatever it contains, the HTML that comes out:
//!
//! * runs nothing: no `<script>`, no event-handler attributes (`onerror`, `onclick`, …), no
//!   `style` attributes, no `<iframe>`, `<object>`, `<embed>`, `<form>` or `<svg>`;
//! * loads nothing: images are not allowed — an image is rendered as its alt text — so opening
//!   a report never contacts a server;
//! * links only to `http:`, `https:` and `file:` addresses and to in-page `#anchors`; every link
//!   gets `rel="noopener noreferrer"`. Anything else (`javascript:`, `data:`, relative paths)
//!   loses its `href` and stays as plain text;
//! * passes raw HTML written in the Markdown through the same sanitiser: harmless markup
//!   (`<b>`, `<sub>`, …) survives, everything else is removed.
//!
//! # Citations and reference anchors
//!
//! `id` attributes are allowed only in two shapes, so report text can never clobber names a
//! page script might use (`id="__TAURI__"` and the like):
//!
//! * `ref-N` (N digits) on `<a>`, `<li>`, `<p>`, `<span>`, `<div>` and headings — the report
//!   writer's reference anchors;
//! * `fn-…` — pulldown-cmark footnotes, whose labels this module rewrites to that shape.
//!
//! The report writer should therefore cite like this (see [`citation_link`] and
//! [`reference_anchor`]):
//!
//! ```markdown
//! Rust's borrow checker prevents data races [3](#ref-3).
//!
//! ## References
//!
//! 1. <a id="ref-1"></a>First source — https://example.org/a
//! 3. <a id="ref-3"></a>Third source — /home/me/notes.pdf, page 2
//! ```
//!
//! The anchor goes at the start of the list item, on the same line as its text (an anchor
//! alone on a line also works). Markdown footnotes (`[^note]` … `[^note]: text`) work too.
//!
//! Table column alignment (`|:--:|`) is kept with the `align` attribute, since `style` is not
//! allowed. Task-list items render as ☐ / ☑ rather than form checkboxes.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt::Write as _;
use std::sync::OnceLock;

use ammonia::{Builder, UrlRelative};
use pulldown_cmark::{html, Alignment, CowStr, Event, Options, Parser, Tag, TagEnd};

/// The Content-Security-Policy of an exported report: no scripts, no fetches of any kind,
/// inline styles only (the document's own stylesheet).
pub const REPORT_CSP: &str =
    "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'";

/// The `id` of reference `n`'s anchor: `ref-3`.
pub fn reference_anchor_id(n: usize) -> String {
    format!("ref-{n}")
}

/// The anchor that starts reference `n`'s entry in the reference list: `<a id="ref-3"></a>`.
pub fn reference_anchor(n: usize) -> String {
    format!("<a id=\"ref-{n}\"></a>")
}

/// An in-text citation of reference `n`, as Markdown: `[3](#ref-3)`.
pub fn citation_link(n: usize) -> String {
    format!("[{n}](#ref-{n})")
}

/// Renders untrusted Markdown as a sanitised HTML fragment (see the module documentation for
/// what survives).
pub fn markdown_to_html_fragment(markdown: &str) -> String {
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS;
    let events = rewrite_events(Parser::new_ext(markdown, options));
    let mut raw = String::with_capacity(markdown.len() * 3 / 2);
    html::push_html(&mut raw, events.into_iter());
    sanitizer().clean(&raw).to_string()
}

/// A complete, standalone HTML5 document for a report: it opens offline and, by its CSP, can
/// make no network request at all.
pub fn report_html_document(title: &str, markdown: &str) -> String {
    let body = markdown_to_html_fragment(markdown);
    let title = escape_html(title);
    let mut doc = String::with_capacity(body.len() + STYLESHEET.len() + 512);
    doc.push_str("<!DOCTYPE html>\n<html>\n<head>\n<meta charset=\"utf-8\">\n");
    let _ = writeln!(
        doc,
        "<meta http-equiv=\"Content-Security-Policy\" content=\"{REPORT_CSP}\">"
    );
    doc.push_str("<meta name=\"referrer\" content=\"no-referrer\">\n");
    doc.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    doc.push_str("<meta name=\"generator\" content=\"Rudder\">\n");
    let _ = writeln!(doc, "<title>{title}</title>");
    let _ = writeln!(doc, "<style>{STYLESHEET}</style>");
    doc.push_str("</head>\n<body>\n<main>\n");
    doc.push_str(&body);
    if !body.is_empty() && !body.ends_with('\n') {
        doc.push('\n');
    }
    doc.push_str("</main>\n</body>\n</html>\n");
    doc
}

/// A small, readable stylesheet that follows the system's light or dark preference.
const STYLESHEET: &str = "
:root { color-scheme: light dark; }
body { margin: 0; font: 16px/1.6 system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif; }
main { max-width: 46rem; margin: 0 auto; padding: 2rem 1.25rem 4rem; overflow-wrap: break-word; }
h1, h2, h3, h4 { line-height: 1.25; margin: 1.6em 0 0.6em; }
h1 { font-size: 1.9rem; margin-top: 0; }
h2 { font-size: 1.45rem; border-bottom: 1px solid #8884; padding-bottom: 0.2em; }
h3 { font-size: 1.2rem; }
a { color: #1a5fb4; }
@media (prefers-color-scheme: dark) { a { color: #78aeed; } }
a[href^='#'] { text-decoration: none; }
sup { line-height: 0; }
blockquote { margin: 1em 0; padding: 0 1em; border-left: 3px solid #8886; opacity: 0.9; }
code { font-family: ui-monospace, 'SF Mono', Menlo, Consolas, monospace; font-size: 0.9em; }
pre { padding: 0.8em 1em; overflow-x: auto; background: #8881; border-radius: 4px; }
table { border-collapse: collapse; margin: 1em 0; display: block; overflow-x: auto; }
th, td { border: 1px solid #8886; padding: 0.35em 0.7em; vertical-align: top; }
th { background: #8881; }
hr { border: 0; border-top: 1px solid #8886; margin: 2em 0; }
li { margin: 0.2em 0; }
li:target, p:target, div:target { background: #ffd54f33; }
.footnote-definition { font-size: 0.9em; margin: 0.5em 0; }
.footnote-definition p { display: inline; }
.footnote-definition-label { margin-right: 0.4em; }
";

/// Tags whose content goes with them (ammonia drops other disallowed tags but keeps their text).
const DROPPED_WITH_CONTENT: &[&str] = &[
    "script", "style", "iframe", "object", "embed", "form", "svg", "math", "noscript", "template",
    "textarea", "select", "button", "frameset", "noembed", "audio", "video", "canvas",
];

/// Elements that may carry a `ref-N` or `fn-…` id.
const ID_TAGS: &[&str] = &[
    "a", "li", "p", "span", "div", "h1", "h2", "h3", "h4", "h5", "h6",
];

/// The sanitiser, built once.
fn sanitizer() -> &'static Builder<'static> {
    static SANITIZER: OnceLock<Builder<'static>> = OnceLock::new();
    SANITIZER.get_or_init(|| {
        let mut builder = Builder::default();
        // No images (they would load remote content), and no image maps (`<area href>`).
        builder.rm_tags(["img", "area", "map"]);
        builder.add_clean_content_tags(DROPPED_WITH_CONTENT.iter().copied());
        builder.url_schemes(HashSet::from(["http", "https", "file"]));
        // Relative URLs: only in-page anchors. `//host/x`, `../x`, `x.html` all go.
        builder.url_relative(UrlRelative::Custom(Box::new(in_page_anchor_only)));
        builder.link_rel(Some("noopener noreferrer"));
        for &tag in ID_TAGS {
            builder.add_tag_attributes(tag, ["id"]);
        }
        builder.add_allowed_classes("sup", ["footnote-reference", "footnote-definition-label"]);
        builder.add_allowed_classes("div", ["footnote-definition"]);
        builder.attribute_filter(|_element, attribute, value| match attribute {
            "id" if is_allowed_id(value) => Some(Cow::Borrowed(value)),
            "id" => None,
            _ => Some(Cow::Borrowed(value)),
        });
        builder.strip_comments(true);
        builder
    })
}

/// The relative-URL rule: in-page anchors (`#ref-3`) stay, every other relative URL goes.
fn in_page_anchor_only(url: &str) -> Option<Cow<'_, str>> {
    url.starts_with('#').then_some(Cow::Borrowed(url))
}

/// `ref-N` (digits) or `fn-` followed by letters, digits and `_` (see [`footnote_id`]).
fn is_allowed_id(id: &str) -> bool {
    if let Some(n) = id.strip_prefix("ref-") {
        return !n.is_empty() && n.len() <= 9 && n.bytes().all(|b| b.is_ascii_digit());
    }
    if let Some(rest) = id.strip_prefix("fn-") {
        return !rest.is_empty()
            && rest.len() <= 200
            && rest.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    }
    false
}

/// A footnote label as an allowed id: `fn-` then the label with every byte outside
/// `[A-Za-z0-9]` written as `_XX` (hex), so distinct labels keep distinct ids.
fn footnote_id(label: &str) -> String {
    let mut id = String::from("fn-");
    for b in label.bytes() {
        if b.is_ascii_alphanumeric() {
            id.push(b as char);
        } else {
            let _ = write!(id, "_{b:02X}");
        }
    }
    id
}

/// Adjusts pulldown-cmark's events before rendering: images become their alt text, footnote
/// labels become allowed ids, task-list markers become characters, and table cells carry
/// their alignment as an `align` attribute instead of a `style`.
fn rewrite_events<'a>(parser: Parser<'a>) -> Vec<Event<'a>> {
    let mut out = Vec::new();
    let mut alignments: Vec<Alignment> = Vec::new();
    let mut in_head = false;
    let mut column = 0usize;
    for event in parser {
        match event {
            // The events between an image's start and end are its alt text: keep those.
            Event::Start(Tag::Image { .. }) | Event::End(TagEnd::Image) => {}
            Event::FootnoteReference(label) => {
                out.push(Event::FootnoteReference(footnote_id(&label).into()));
            }
            Event::Start(Tag::FootnoteDefinition(label)) => {
                out.push(Event::Start(Tag::FootnoteDefinition(
                    footnote_id(&label).into(),
                )));
            }
            Event::TaskListMarker(done) => {
                out.push(Event::Text(CowStr::Borrowed(if done {
                    "☑ "
                } else {
                    "☐ "
                })));
            }
            Event::Start(Tag::Table(a)) => {
                alignments = a.clone();
                out.push(Event::Start(Tag::Table(a)));
            }
            Event::Start(Tag::TableHead) => {
                in_head = true;
                column = 0;
                out.push(Event::Start(Tag::TableHead));
            }
            Event::End(TagEnd::TableHead) => {
                in_head = false;
                out.push(Event::End(TagEnd::TableHead));
            }
            Event::Start(Tag::TableRow) => {
                column = 0;
                out.push(Event::Start(Tag::TableRow));
            }
            Event::Start(Tag::TableCell) => {
                let cell = if in_head { "th" } else { "td" };
                let align = match alignments.get(column) {
                    Some(Alignment::Left) => " align=\"left\"",
                    Some(Alignment::Center) => " align=\"center\"",
                    Some(Alignment::Right) => " align=\"right\"",
                    _ => "",
                };
                out.push(Event::Html(format!("<{cell}{align}>").into()));
            }
            Event::End(TagEnd::TableCell) => {
                let cell = if in_head { "th" } else { "td" };
                out.push(Event::Html(format!("</{cell}>").into()));
                column += 1;
            }
            other => out.push(other),
        }
    }
    out
}

/// Escapes text for HTML element content and attribute values.
fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lower(s: &str) -> String {
        s.to_ascii_lowercase()
    }

    #[test]
    fn scripts_and_event_handlers_come_out_inert() {
        let md = "Hello <script>alert(1)</script> world\n\n<img src=x onerror=alert(1)>\n\n\
                  <script>\nalert(2)\n</script>\n\n<p onclick=\"alert(3)\">para</p>\n\n\
                  <SCRIPT>alert(4)</SCRIPT> <svg onload=alert(5)><circle/></svg>";
        let out = markdown_to_html_fragment(md);
        let l = lower(&out);
        assert!(!l.contains("<script"), "{out}");
        assert!(!l.contains("onerror"), "{out}");
        assert!(!l.contains("onclick"), "{out}");
        assert!(!l.contains("onload"), "{out}");
        assert!(!l.contains("<img"), "{out}");
        assert!(!l.contains("<svg"), "{out}");
        assert!(!l.contains("alert("), "script bodies are dropped: {out}");
        assert!(out.contains("Hello"), "{out}");
        assert!(out.contains("para"), "{out}");
    }

    #[test]
    fn markdown_images_become_alt_text() {
        let out = markdown_to_html_fragment(
            "See ![a *chart* of sales](https://tracker.example/pixel.png \"t\") here.\n\n\
             [![logo](https://cdn.example/l.png)](https://example.org/)",
        );
        let l = lower(&out);
        assert!(!l.contains("<img"), "{out}");
        assert!(!l.contains("pixel.png"), "{out}");
        assert!(!l.contains("cdn.example"), "{out}");
        assert!(out.contains("a <em>chart</em> of sales"), "{out}");
        assert!(out.contains("href=\"https://example.org/\""), "{out}");
        assert!(out.contains(">logo</a>"), "{out}");
    }

    #[test]
    fn no_styles_frames_objects_or_forms() {
        let md = "<span style=\"background:url(https://x.example/a)\">s</span>\n\n\
                  <iframe src=\"https://x.example\"></iframe>\n\n\
                  <object data=\"https://x.example/o\">obj</object>\n\n\
                  <form action=\"https://x.example\"><input name=q><button>go</button></form>\n\n\
                  <style>body{background:url(https://x.example/b)}</style>\n\n\
                  <link rel=stylesheet href=https://x.example/c.css>\n\n\
                  <video src=https://x.example/v.mp4></video>";
        let out = markdown_to_html_fragment(md);
        let l = lower(&out);
        for bad in [
            "style=",
            "<iframe",
            "<object",
            "<form",
            "<input",
            "<button",
            "<style",
            "<link",
            "<video",
            "x.example",
        ] {
            assert!(!l.contains(bad), "{bad} in {out}");
        }
        assert!(out.contains(">s</span>"), "{out}");
    }

    #[test]
    fn javascript_and_other_schemes_are_removed() {
        let md = "[click](javascript:alert(1)) [x](JaVaScRiPt:alert(2)) \
                  <a href=\"javascript:alert(3)\">raw</a> <javascript:alert(4)> \
                  [d](data:text/html;base64,PHNjcmlwdD4=) [v](vbscript:msgbox) \
                  [rel](../etc/passwd) [proto](//evil.example/x)";
        let out = markdown_to_html_fragment(md);
        // Every one of those links loses its href; what is left is inert text.
        assert!(!out.contains("href"), "{out}");
        assert_eq!(
            out.matches("<a rel=\"noopener noreferrer\">").count(),
            8,
            "{out}"
        );
        // The link text stays.
        assert!(out.contains("click"), "{out}");
        assert!(out.contains("raw"), "{out}");
    }

    #[test]
    fn allowed_links_survive_with_rel() {
        let out = markdown_to_html_fragment(
            "[a](https://example.org/x?y=1&z=2) [b](http://example.com) \
             [c](file:///home/me/notes.pdf) [d](#ref-2)",
        );
        assert!(
            out.contains("href=\"https://example.org/x?y=1&amp;z=2\""),
            "{out}"
        );
        assert!(out.contains("href=\"http://example.com\""), "{out}");
        assert!(out.contains("href=\"file:///home/me/notes.pdf\""), "{out}");
        assert!(out.contains("href=\"#ref-2\""), "{out}");
        assert_eq!(
            out.matches("rel=\"noopener noreferrer\"").count(),
            4,
            "{out}"
        );
    }

    #[test]
    fn tables_and_headings_render() {
        let md = "# Title\n\n## Findings\n\n| Name | Score |\n|:-----|------:|\n| a | 1 |\n| b | 22 |\n\n\
                  ~~old~~ **bold** `code`";
        let out = markdown_to_html_fragment(md);
        assert!(out.contains("<h1>Title</h1>"), "{out}");
        assert!(out.contains("<h2>Findings</h2>"), "{out}");
        assert!(out.contains("<table>"), "{out}");
        assert!(out.contains("<th align=\"left\">Name</th>"), "{out}");
        assert!(out.contains("<th align=\"right\">Score</th>"), "{out}");
        assert!(out.contains("<td align=\"right\">22</td>"), "{out}");
        assert!(out.contains("<del>old</del>"), "{out}");
        assert!(out.contains("<strong>bold</strong>"), "{out}");
        assert!(out.contains("<code>code</code>"), "{out}");
        assert!(!out.contains("style="), "{out}");
    }

    #[test]
    fn citation_links_and_reference_anchors_survive() {
        let md = format!(
            "Claim one {} and two [3](#ref-3).\n\n## References\n\n\
             1. {}First — https://example.org/a\n3. <a id=\"ref-3\"></a>Third — notes.pdf, page 2\n\n\
             <li id=\"ref-12\">li anchor</li>\n",
            citation_link(1),
            reference_anchor(1)
        );
        let out = markdown_to_html_fragment(&md);
        assert!(
            out.contains("<a href=\"#ref-1\" rel=\"noopener noreferrer\">1</a>"),
            "{out}"
        );
        assert!(
            out.contains("<a href=\"#ref-3\" rel=\"noopener noreferrer\">3</a>"),
            "{out}"
        );
        assert!(out.contains("id=\"ref-1\""), "{out}");
        assert!(out.contains("id=\"ref-3\""), "{out}");
        assert!(out.contains("<li id=\"ref-12\">"), "{out}");
        assert_eq!(reference_anchor_id(7), "ref-7");
    }

    #[test]
    fn other_ids_are_dropped() {
        let out = markdown_to_html_fragment(
            "<a id=\"__TAURI__\">x</a> <span id=\"ref-1x\">y</span> <p id=\"ref-\">z</p> \
             <div id=\"fn-a b\">w</div> <a name=\"ref-4\">n</a>",
        );
        assert!(!out.contains("id="), "{out}");
        assert!(!out.contains("name="), "{out}");
    }

    #[test]
    fn footnotes_link_to_their_definitions() {
        let out = markdown_to_html_fragment(
            "Text[^a note] more[^2].\n\n[^a note]: The note.\n[^2]: Second.\n",
        );
        assert!(out.contains("href=\"#fn-a_20note\""), "{out}");
        assert!(out.contains("id=\"fn-a_20note\""), "{out}");
        assert!(out.contains("href=\"#fn-2\""), "{out}");
        assert!(out.contains("id=\"fn-2\""), "{out}");
        assert!(out.contains("class=\"footnote-definition\""), "{out}");
        assert_ne!(footnote_id("a b"), footnote_id("a-b"));
        assert_ne!(footnote_id("a_20b"), footnote_id("a b"));
    }

    #[test]
    fn task_lists_render_without_inputs() {
        let out = markdown_to_html_fragment("- [x] done\n- [ ] todo\n");
        assert!(!out.contains("<input"), "{out}");
        assert!(out.contains("☑ done"), "{out}");
        assert!(out.contains("☐ todo"), "{out}");
    }

    #[test]
    fn harmless_raw_html_is_kept_and_comments_dropped() {
        let out = markdown_to_html_fragment("H<sub>2</sub>O <!-- hidden --> <b>bold</b>");
        assert!(out.contains("H<sub>2</sub>O"), "{out}");
        assert!(out.contains("<b>bold</b>"), "{out}");
        assert!(!out.contains("hidden"), "{out}");
    }

    #[test]
    fn document_is_standalone_and_escapes_the_title() {
        let doc = report_html_document(
            "Cats & dogs </title><script>alert(1)</script> \"q\"",
            "# Heading\n\nBody <script>alert(2)</script>",
        );
        assert!(doc.starts_with("<!DOCTYPE html>"), "{doc}");
        assert!(doc.contains("<meta charset=\"utf-8\">"), "{doc}");
        assert!(
            doc.contains(
                "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
                 style-src 'unsafe-inline'"
            ),
            "{doc}"
        );
        assert!(
            doc.contains(
                "<title>Cats &amp; dogs &lt;/title&gt;&lt;script&gt;alert(1)&lt;/script&gt; \
                 &quot;q&quot;</title>"
            ),
            "{doc}"
        );
        assert!(!doc.to_ascii_lowercase().contains("<script"), "{doc}");
        assert!(doc.contains("<style>"), "{doc}");
        let main_start = doc.find("<main>").expect("main");
        let main_end = doc.find("</main>").expect("/main");
        assert!(
            doc[main_start..main_end].contains("<h1>Heading</h1>"),
            "{doc}"
        );
        assert_eq!(doc.matches("<title>").count(), 1, "{doc}");
        // Nothing in the document refers to another origin.
        assert!(
            !doc.contains("http://") && !doc.contains("https://"),
            "{doc}"
        );
    }

    #[test]
    fn empty_markdown_gives_an_empty_fragment() {
        assert_eq!(markdown_to_html_fragment(""), "");
        let doc = report_html_document("", "");
        assert!(doc.contains("<title></title>"));
        assert!(doc.contains("<main>\n</main>"));
    }
}
