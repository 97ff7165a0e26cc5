//! Untrusted HTML made safe to parse: history exports (Takeout's search activity) and documents
//! in the library are HTML from anywhere, and a parser must not spend minutes on them.

use std::borrow::Cow;

/// Elements nested deeper than this lose their tags (their text stays), as browsers cap the
/// depth (Blink at 512): html5ever scans its stack of open elements on every start tag, so a
/// page of 100,000 nested `<div>`s took minutes to parse, and the tree grew 100× the file.
pub const MAX_HTML_DEPTH: usize = 512;

/// `source` without the tags that would nest deeper than [`MAX_HTML_DEPTH`]; borrowed when
/// nothing does. A linear scan, not a parser: void elements and those whose start tag closes
/// an open sibling (`<p>`, `<li>`, `<td>`…) do not nest, nor do self-closing tags in SVG and
/// MathML; comments and raw text (`<script>`, `<style>`…) are skipped.
pub fn cap_html_depth(source: &str) -> Cow<'_, str> {
    const FLAT: &[&str] = &[
        "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param",
        "source", "track", "wbr", "frame", "keygen", "p", "li", "dt", "dd", "tr", "td", "th",
        "option", "optgroup", "rb", "rp", "rt", "rtc", "tbody", "thead", "tfoot", "colgroup",
        "caption",
    ];
    const RAW: &[&str] = &[
        "script",
        "style",
        "textarea",
        "title",
        "xmp",
        "iframe",
        "noembed",
        "noframes",
        "noscript",
        "plaintext",
    ];
    let bytes = source.as_bytes();
    let is = |list: &[&str], name: &str| list.iter().any(|n| n.eq_ignore_ascii_case(name));
    // Where `</name` next starts at or after `from`, ignoring case.
    let close_tag = |from: usize, name: &str| {
        (from..bytes.len().saturating_sub(1)).find(|&i| {
            bytes[i] == b'<'
                && bytes[i + 1] == b'/'
                && bytes
                    .get(i + 2..i + 2 + name.len())
                    .is_some_and(|n| n.eq_ignore_ascii_case(name.as_bytes()))
        })
    };
    let (mut depth, mut dropped, mut foreign) = (0usize, 0usize, 0usize);
    let mut out = String::new();
    let mut copied = 0;
    let mut i = 0;
    while let Some(lt) = bytes[i..].iter().position(|&b| b == b'<').map(|p| p + i) {
        if bytes[lt + 1..].starts_with(b"!--") {
            i = source[lt + 4..]
                .find("-->")
                .map_or(bytes.len(), |e| lt + 4 + e + 3);
            continue;
        }
        let closing = bytes.get(lt + 1) == Some(&b'/');
        let at = lt + 1 + usize::from(closing);
        let len = bytes[at..]
            .iter()
            .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b':'))
            .count();
        if len == 0 || !bytes[at].is_ascii_alphabetic() {
            i = lt + 1; // `<!doctype>`, `<?xml?>`, a stray `<`
            continue;
        }
        let name = &source[at..at + len];
        // The tag ends at the first `>` outside a quoted attribute value.
        let (mut end, mut quote, mut after_eq) = (at + len, None, false);
        while end < bytes.len() {
            let b = bytes[end];
            end += 1;
            match quote {
                Some(q) if b == q => quote = None,
                Some(_) => {}
                None if b == b'>' => break,
                None if after_eq && (b == b'"' || b == b'\'') => quote = Some(b),
                None => {}
            }
            if !b.is_ascii_whitespace() {
                after_eq = b == b'=';
            }
        }
        let self_closing = bytes[..end].ends_with(b"/>");
        let svg_or_math = name.eq_ignore_ascii_case("svg") || name.eq_ignore_ascii_case("math");
        let mut remove = false;
        if closing {
            if is(FLAT, name) {
            } else if dropped > 0 {
                dropped -= 1;
                remove = true;
            } else {
                depth = depth.saturating_sub(1);
                if svg_or_math {
                    foreign = foreign.saturating_sub(1);
                }
            }
        } else if is(RAW, name) && !self_closing {
            end = close_tag(end, name).unwrap_or(bytes.len());
        } else if is(FLAT, name) || (foreign > 0 && self_closing) {
        } else if depth >= MAX_HTML_DEPTH {
            dropped += 1;
            remove = true;
        } else {
            depth += 1;
            if svg_or_math {
                foreign += 1;
            }
        }
        if remove {
            out.push_str(&source[copied..lt]);
            copied = end;
        }
        i = end;
    }
    if copied == 0 {
        return Cow::Borrowed(source);
    }
    out.push_str(&source[copied..]);
    Cow::Owned(out)
}
