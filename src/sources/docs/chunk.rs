//! Cutting text into passages: about 600–900 characters, at paragraph boundaries when the
//! paragraphs allow it, else at sentence ends, else between words. A passage is what search
//! returns and what a report cites, so it should read as a whole; it also has to fit the
//! embedding model's 256-token window.

/// A passage is cut once it would grow past this many characters.
pub const MAX_CHARS: usize = 900;
/// A long paragraph is split at the last sentence end (else space) past this many characters.
pub const MIN_CHARS: usize = 600;

/// Tidies extracted text: `\r\n` → `\n`, runs of spaces and tabs → one space, lines trimmed,
/// control characters dropped, and any run of blank lines → one blank line (a paragraph break).
pub fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank_run = 0usize;
    for line in text.split('\n') {
        let mut cleaned = String::with_capacity(line.len());
        let mut space = false;
        for c in line.chars() {
            if c.is_whitespace() || c == '\u{00a0}' {
                space = true;
            } else if c.is_control() || c == '\u{feff}' {
                continue;
            } else {
                if space && !cleaned.is_empty() {
                    cleaned.push(' ');
                }
                space = false;
                cleaned.push(c);
            }
        }
        if cleaned.is_empty() {
            blank_run += 1;
            continue;
        }
        if !out.is_empty() {
            out.push_str(if blank_run > 0 { "\n\n" } else { "\n" });
        }
        blank_run = 0;
        out.push_str(&cleaned);
    }
    out
}

/// The passages of `text` (normalised first). Empty text has none.
pub fn chunk(text: &str) -> Vec<String> {
    let text = normalize(text);
    let mut out: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut current_chars = 0usize;
    for paragraph in text.split("\n\n") {
        for piece in split_long(paragraph) {
            let n = piece.chars().count();
            if current_chars > 0 && current_chars + 2 + n > MAX_CHARS {
                out.push(std::mem::take(&mut current));
                current_chars = 0;
            }
            if current_chars > 0 {
                current.push_str("\n\n");
                current_chars += 2;
            }
            current.push_str(piece);
            current_chars += n;
        }
    }
    if current_chars > 0 {
        out.push(current);
    }
    out
}

/// A paragraph in pieces of at most [`MAX_CHARS`], each cut at the last sentence end (or line
/// break, or space) after [`MIN_CHARS`] when there is one.
fn split_long(paragraph: &str) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut rest = paragraph.trim();
    while rest.chars().count() > MAX_CHARS {
        let limit = byte_at_char(rest, MAX_CHARS);
        let floor = byte_at_char(rest, MIN_CHARS);
        let window = &rest[..limit];
        let sentence_end = window
            .char_indices()
            .rev()
            .take_while(|&(i, _)| i >= floor)
            .find(|&(i, c)| {
                matches!(c, '.' | '!' | '?' | '…' | '。' | ';')
                    && window[i + c.len_utf8()..].starts_with([' ', '\n'])
            })
            .map(|(i, c)| i + c.len_utf8());
        let cut = sentence_end
            .or_else(|| window[floor..].rfind('\n').map(|i| floor + i))
            .or_else(|| window.rfind(' ').filter(|&i| i > 0))
            .unwrap_or(limit);
        pieces.push(rest[..cut].trim_end());
        rest = rest[cut..].trim_start();
    }
    if !rest.is_empty() {
        pieces.push(rest);
    }
    pieces
}

/// The byte offset of the `n`th char (the length when there are fewer).
fn byte_at_char(s: &str, n: usize) -> usize {
    s.char_indices().nth(n).map_or(s.len(), |(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_collapses_space_and_blank_lines() {
        assert_eq!(normalize("  a \t b \r\n\r\n\n\n c\x07\nd  "), "a b\n\nc\nd");
    }

    #[test]
    fn short_paragraphs_are_packed_long_ones_split() {
        let para = "This is a sentence of moderate length. ".repeat(3);
        let text = vec![para.trim(); 20].join("\n\n");
        let chunks = chunk(&text);
        assert!(chunks.len() > 2);
        for c in &chunks {
            let n = c.chars().count();
            assert!(n <= MAX_CHARS, "{n}");
        }
        // Packed, so all but the last are well above a single paragraph.
        assert!(chunks[..chunks.len() - 1]
            .iter()
            .all(|c| c.chars().count() >= 600));

        let long = "Word after word goes here. ".repeat(200);
        let chunks = chunk(&long);
        for c in &chunks[..chunks.len() - 1] {
            let n = c.chars().count();
            assert!((MIN_CHARS..=MAX_CHARS).contains(&n), "{n}");
            assert!(c.ends_with('.'), "{c:?}");
        }
    }

    #[test]
    fn no_spaces_and_multibyte_text_is_cut_safely() {
        let text = "é".repeat(2500);
        let chunks = chunk(&text);
        assert_eq!(
            chunks.iter().map(|c| c.chars().count()).sum::<usize>(),
            2500
        );
        assert!(chunks.iter().all(|c| c.chars().count() <= MAX_CHARS));
        assert!(chunk("  \n\n ").is_empty());
    }
}
