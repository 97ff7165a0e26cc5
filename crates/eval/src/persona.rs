//! The ground-truth persona of an evaluation case (STEER §3.1): `P = (p_text, A)`, a
//! natural-language description and the 5–8 aspects that user expects the report to cover.
//! The simulated user sees all of it; the system under test only the first sentence (plus the
//! synthetic history); the judges score reports against the aspects.

use serde::{Deserialize, Serialize};

/// One aspect the user expects to see addressed (STEER Appendix E/J format).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Aspect {
    /// Short title of the aspect.
    pub aspect: String,
    /// The part of the persona it was extracted from.
    #[serde(default)]
    pub evidence: String,
    /// Why it matters to this user.
    #[serde(default)]
    pub reason: String,
}

/// The full persona of a case.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PersonaCase {
    /// Profile and personality in prose.
    pub text: String,
    pub aspects: Vec<Aspect>,
}

impl PersonaCase {
    /// The initial persona the system is given (STEER: "first sentence of p_text").
    pub fn first_sentence(&self) -> &str {
        first_sentence(&self.text)
    }
}

/// The text up to and including the first sentence end (`.`, `!` or `?` followed by
/// whitespace or the end), trimmed; the whole text when it has no sentence end.
pub fn first_sentence(text: &str) -> &str {
    let text = text.trim();
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if matches!(c, '.' | '!' | '?') {
            match chars.peek() {
                None => return text,
                Some((_, next)) if next.is_whitespace() => return &text[..i + c.len_utf8()],
                _ => {}
            }
        }
    }
    text
}

pub(crate) use rudder::text::clip;

/// The aspects numbered from 1 for prompts, each with its reason and evidence clipped to
/// `detail_chars` (0 leaves them out), so eight aspects stay a few hundred tokens.
pub fn format_aspects(aspects: &[Aspect], detail_chars: usize) -> String {
    let mut out = String::new();
    for (i, a) in aspects.iter().enumerate() {
        out.push_str(&format!("{}. {}\n", i + 1, clip(&a.aspect, 160)));
        if detail_chars > 0 {
            if !a.reason.trim().is_empty() {
                out.push_str(&format!("   Reason: {}\n", clip(&a.reason, detail_chars)));
            }
            if !a.evidence.trim().is_empty() {
                out.push_str(&format!(
                    "   Evidence: {}\n",
                    clip(&a.evidence, detail_chars)
                ));
            }
        }
    }
    out.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sentence_stops_at_the_first_sentence_end() {
        assert_eq!(
            first_sentence(" I am a nurse in Ohio. I like data."),
            "I am a nurse in Ohio."
        );
        assert_eq!(first_sentence("Version 2.5 fan"), "Version 2.5 fan");
        assert_eq!(first_sentence("Who? Me."), "Who?");
    }

    #[test]
    fn aspects_are_numbered_and_clipped() {
        let a = Aspect {
            aspect: "Cost".into(),
            evidence: "x".repeat(500),
            reason: "Tight budget".into(),
        };
        let text = format_aspects(&[a.clone(), a], 50);
        assert!(text.starts_with("1. Cost\n   Reason: Tight budget"));
        assert!(text.contains("2. Cost"));
        assert!(text.lines().all(|l| l.chars().count() < 70));
    }
}
