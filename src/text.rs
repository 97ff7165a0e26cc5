//! Text shortened for one line of a terminal, a log or a list: the engine, its faces and its
//! tools cut text the same way.

/// `s` on one line (runs of whitespace become one space), cut to at most `max` characters with
/// an ellipsis.
pub fn one_line(s: &str, max: usize) -> String {
    let flat = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        flat
    } else {
        flat.chars().take(max.saturating_sub(1)).collect::<String>() + "…"
    }
}

/// `s` trimmed and cut to at most `max` characters with an ellipsis, its line breaks kept (for
/// a multi-line text in a prompt, such as a profile).
pub fn clip(s: &str, max: usize) -> String {
    let s = s.trim();
    if s.chars().count() <= max {
        s.to_string()
    } else {
        s.chars().take(max.saturating_sub(1)).collect::<String>() + "…"
    }
}

/// `s` cut to at most `width` characters by keeping its end behind an ellipsis: for paths,
/// whose end is the informative part.
pub fn keep_end(s: &str, width: usize) -> String {
    let n = s.chars().count();
    if n <= width {
        return s.to_string();
    }
    let tail: String = s.chars().skip(n - width.saturating_sub(1)).collect();
    format!("…{tail}")
}

/// An error and its causes on one line ("error sending request: client error (Connect):
/// Connection refused"): reqwest keeps the useful part in the sources. A cause whose text the
/// message already holds is not repeated.
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = cause.source();
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_flattens_and_cuts_with_an_ellipsis() {
        assert_eq!(one_line("a\n  b\tc", 10), "a b c");
        assert_eq!(one_line("abcdef", 4), "abc…");
        assert_eq!(one_line("ééééé", 3), "éé…");
        // No width left: the ellipsis alone, never an underflow.
        assert_eq!(one_line("abc", 0), "…");
    }

    #[test]
    fn clip_keeps_line_breaks_and_cuts_with_an_ellipsis() {
        assert_eq!(clip("  a\nb  ", 10), "a\nb");
        assert_eq!(clip("line one\nline two", 10), "line one\n…");
        assert_eq!(clip("abc", 0), "…");
    }

    #[test]
    fn keep_end_keeps_the_informative_end_of_a_path() {
        assert_eq!(keep_end("notes/tea.md", 20), "notes/tea.md");
        assert_eq!(keep_end("/home/u/notes/tea.md", 8), "…/tea.md");
        assert_eq!(keep_end("abc", 0), "…");
    }

    #[test]
    fn error_chain_adds_each_cause_once() {
        #[derive(Debug)]
        struct E(&'static str, Option<Box<E>>);
        impl std::fmt::Display for E {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.0)
            }
        }
        impl std::error::Error for E {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                self.1.as_deref().map(|e| e as _)
            }
        }
        let refused = E("Connection refused", None);
        let connect = E("client error (Connect)", Some(Box::new(refused)));
        let top = E("error sending request", Some(Box::new(connect)));
        assert_eq!(
            error_chain(&top),
            "error sending request: client error (Connect): Connection refused"
        );
        let repeated = E(
            "timed out: Connection refused",
            Some(Box::new(E("Connection refused", None))),
        );
        assert_eq!(error_chain(&repeated), "timed out: Connection refused");
    }
}
