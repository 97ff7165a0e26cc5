//! Offline corpora as documents. The Wikipedia summaries corpus is one JSON object mapping an
//! article title to `{title, extract, description, topic}`; each article becomes a document
//! whose path is `<json path>#<title>` and whose URL is the article on Wikipedia.

use percent_encoding::{utf8_percent_encode, AsciiSet, CONTROLS};
use serde::Deserialize;

/// One article of a summaries corpus.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct Article {
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub extract: String,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub topic: Option<String>,
}

impl Article {
    /// The description and topic in one line (`"1968 film by Stanley Kubrick · Arts"`), when
    /// there is either; a catch-all topic adds nothing and is left out.
    pub fn summary(&self) -> Option<String> {
        let description = self
            .description
            .as_deref()
            .map(str::trim)
            .filter(|d| !d.is_empty());
        let topic = self
            .topic
            .as_deref()
            .map(str::trim)
            .filter(|t| !t.is_empty() && !t.eq_ignore_ascii_case("uncategorized"));
        match (description, topic) {
            (Some(d), Some(t)) => Some(format!("{d} · {t}")),
            (Some(d), None) => Some(d.to_string()),
            (None, Some(t)) => Some(t.to_string()),
            (None, None) => None,
        }
    }
}

/// What Wikipedia percent-encodes in a page address: controls, space (already `_`), and the
/// characters that would end or change the path. Non-ASCII is always encoded as UTF-8.
const WIKI_PATH: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'&')
    .add(b'+')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'[')
    .add(b'\\')
    .add(b']')
    .add(b'^')
    .add(b'`')
    .add(b'{')
    .add(b'|')
    .add(b'}');

/// `https://en.wikipedia.org/wiki/<Title_with_underscores>`, percent-encoded where needed.
pub fn wikipedia_url(title: &str) -> String {
    let underscored = title.trim().replace(' ', "_");
    format!(
        "https://en.wikipedia.org/wiki/{}",
        utf8_percent_encode(&underscored, WIKI_PATH)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wiki_urls() {
        assert_eq!(
            wikipedia_url("2001: A Space Odyssey"),
            "https://en.wikipedia.org/wiki/2001:_A_Space_Odyssey"
        );
        assert_eq!(
            wikipedia_url("Les Misérables"),
            "https://en.wikipedia.org/wiki/Les_Mis%C3%A9rables"
        );
        assert_eq!(
            wikipedia_url("AT&T"),
            "https://en.wikipedia.org/wiki/AT%26T"
        );
        assert_eq!(
            wikipedia_url("Who? (What)"),
            "https://en.wikipedia.org/wiki/Who%3F_(What)"
        );
        assert_eq!(
            wikipedia_url("Aesop's Fables"),
            "https://en.wikipedia.org/wiki/Aesop's_Fables"
        );
    }

    #[test]
    fn summary_joins_description_and_topic() {
        let a = Article {
            title: None,
            extract: String::new(),
            description: Some("Painting".into()),
            topic: Some("Arts".into()),
        };
        assert_eq!(a.summary().as_deref(), Some("Painting · Arts"));
        let b = Article {
            topic: Some("Uncategorized".into()),
            ..a.clone()
        };
        assert_eq!(b.summary().as_deref(), Some("Painting"));
    }
}
