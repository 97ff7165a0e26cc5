//! Web search as a research source, through a SearxNG instance the user runs or trusts.
//!
//! Off by default: [`web_source_from_settings`] builds a source only when the settings'
//! `[web]` section has `enabled = true` and a `searxng_url`. When on, each search sends one
//! `GET {searxng_url}/search?q=…&format=json` and nothing else: result pages are never
//! fetched, the evidence is SearxNG's own title and snippet for each hit, cited by URL.
//!
//! Like the OpenAI backend, requests go to the configured URL and nowhere else: no proxies
//! from the environment and no redirects. The instance must have the JSON output format
//! enabled (`search.formats` in SearxNG's `settings.yml`); otherwise it answers 403.

use std::io::Read;
use std::time::Duration;

use reqwest::blocking::Client;
use serde::Deserialize;

use super::{CitationTarget, Evidence, Source, SourceError};
use crate::config::{Settings, WebSettings, DEFAULT_WEB_TIMEOUT_SECS};
use crate::embed::Embedder;
use crate::text::error_chain;

/// What leaves the machine when web search is enabled, in words for the user.
pub const WEB_DISCLOSURE: &str = "When web search is enabled, Rudder sends its search queries \
— which are derived from your question, your persona and your imported history — to the \
SearxNG instance at the configured URL, which forwards them to public search engines; only \
result titles, addresses and snippets come back, and the pages themselves are not fetched.";

/// Characters of a result's snippet kept as the passage.
pub const SNIPPET_CHARS: usize = 900;
/// The most bytes of a response read (a JSON page of results is a few tens of KiB).
const RESPONSE_LIMIT: u64 = 8 * 1024 * 1024;
/// How much of an error body goes into the error message.
const ERROR_EXCERPT_CHARS: usize = 300;
/// A dead or mistyped host should fail fast, even with a generous overall timeout.
const MAX_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The web source for `settings`, or `None` unless `[web]` has `enabled = true` and a
/// non-empty `searxng_url`. Building it contacts nothing.
pub fn web_source_from_settings(settings: &Settings) -> Option<WebSearch> {
    let web = settings.web.as_ref()?;
    if !web.enabled || web.searxng_url.trim().is_empty() {
        return None;
    }
    Some(WebSearch::from_settings(web))
}

/// A SearxNG instance as a [`Source`].
pub struct WebSearch {
    /// `{base}/search`, the only URL this source contacts.
    endpoint: String,
    /// The client, or why it could not be built (reported by the first search).
    client: Result<Client, String>,
}

impl std::fmt::Debug for WebSearch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebSearch")
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

impl WebSearch {
    /// A source over the SearxNG instance at `base_url` (e.g. `http://127.0.0.1:8888`); each
    /// search may take up to `timeout`. A malformed URL is reported by the first search, so the
    /// error reaches the user where they see web results missing.
    pub fn new(base_url: &str, timeout: Duration) -> Self {
        let base = base_url.trim().trim_end_matches('/');
        let endpoint = format!("{base}/search");
        let client = Client::builder()
            .connect_timeout(timeout.min(MAX_CONNECT_TIMEOUT))
            .timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .user_agent(concat!("Rudder/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("building the HTTP client: {}", error_chain(&e)));
        Self { endpoint, client }
    }

    /// A source from the `[web]` settings (whether or not they are enabled; callers wanting
    /// the enabled check use [`web_source_from_settings`]). A timeout of 0 means the default.
    pub fn from_settings(settings: &WebSettings) -> Self {
        let secs = match settings.timeout_secs {
            0 => DEFAULT_WEB_TIMEOUT_SECS,
            s => s,
        };
        Self::new(&settings.searxng_url, Duration::from_secs(secs))
    }

    /// The URL searches go to: `{searxng_url}/search`.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    fn error(&self, message: impl std::fmt::Display) -> SourceError {
        SourceError::Other {
            source_name: "web".into(),
            message: format!("search at {}: {message}", self.endpoint),
        }
    }

    /// The request URL for `query`, with the query percent-encoded.
    fn request_url(&self, query: &str) -> Result<reqwest::Url, SourceError> {
        let mut url = match reqwest::Url::parse(&self.endpoint) {
            Ok(url) if matches!(url.scheme(), "http" | "https") && url.host().is_some() => url,
            _ => {
                return Err(self.error(
                    "`web.searxng_url` must be an http:// or https:// URL such as \
                     http://127.0.0.1:8888",
                ))
            }
        };
        url.query_pairs_mut()
            .append_pair("q", query)
            .append_pair("format", "json");
        Ok(url)
    }

    /// One request: the response body, or an error naming the endpoint.
    fn fetch(&self, query: &str) -> Result<Vec<u8>, SourceError> {
        let url = self.request_url(query)?;
        let client = self.client.as_ref().map_err(|e| self.error(e))?;
        let response = client
            .get(url)
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .map_err(|e| self.error(error_chain(&e)))?;
        let status = response.status();
        if !status.is_success() {
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let mut body = String::new();
            let _ = response.take(64 * 1024).read_to_string(&mut body);
            let excerpt = excerpt(&body, ERROR_EXCERPT_CHARS);
            let hint = if status == reqwest::StatusCode::FORBIDDEN {
                " (is the JSON format enabled in the instance's settings.yml, `search.formats`?)"
                    .to_owned()
            } else if status.is_redirection() {
                format!(
                    " (redirects are not followed; set `web.searxng_url` to the final address{})",
                    location
                        .map(|l| format!(", redirected to {l}"))
                        .unwrap_or_default()
                )
            } else {
                String::new()
            };
            return Err(if excerpt.is_empty() {
                self.error(format_args!("HTTP {status}{hint}"))
            } else {
                self.error(format_args!("HTTP {status}{hint}: {excerpt}"))
            });
        }
        let mut body = Vec::new();
        response
            .take(RESPONSE_LIMIT + 1)
            .read_to_end(&mut body)
            .map_err(|e| self.error(format_args!("reading the response: {}", error_chain(&e))))?;
        if body.len() as u64 > RESPONSE_LIMIT {
            return Err(self.error(format_args!(
                "the response is larger than {} MiB",
                RESPONSE_LIMIT / (1024 * 1024)
            )));
        }
        Ok(body)
    }
}

/// SearxNG's JSON answer, as far as it is used.
#[derive(Deserialize)]
struct SearxResponse {
    results: Vec<SearxResult>,
}

/// One hit. Every field may be missing or null; a hit without a usable URL is skipped.
#[derive(Deserialize)]
struct SearxResult {
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    content: Option<String>,
}

impl Source for WebSearch {
    fn name(&self) -> &str {
        "web"
    }

    /// Up to `limit` hits in SearxNG's order. No embedding is used: SearxNG ranks. A blank
    /// query or a zero limit sends nothing.
    fn search(
        &mut self,
        query: &str,
        limit: usize,
        _embedder: Option<(&dyn Embedder, &str)>,
    ) -> Result<Vec<Evidence>, SourceError> {
        let query = query.trim();
        if limit == 0 || query.is_empty() {
            return Ok(Vec::new());
        }
        let body = self.fetch(query)?;
        let parsed: SearxResponse = serde_json::from_slice(&body)
            .map_err(|e| self.error(format_args!("the response is not SearxNG JSON: {e}")))?;
        tracing::debug!(
            endpoint = %self.endpoint,
            results = parsed.results.len(),
            "web search"
        );

        let mut seen = std::collections::HashSet::new();
        let mut evidence = Vec::with_capacity(limit.min(parsed.results.len()));
        for result in parsed.results {
            if evidence.len() == limit {
                break;
            }
            let Some(url) = result
                .url
                .map(|u| u.trim().to_owned())
                .filter(|u| is_web_url(u))
            else {
                continue;
            };
            if !seen.insert(url.clone()) {
                continue;
            }
            let title = collapse_whitespace(result.title.as_deref().unwrap_or(""));
            let title = if title.is_empty() { url.clone() } else { title };
            let text = excerpt(result.content.as_deref().unwrap_or(""), SNIPPET_CHARS);
            let rank = evidence.len();
            evidence.push(Evidence {
                target: CitationTarget::Web { url },
                title,
                text,
                score: 1.0 / (rank as f32 + 1.0),
            });
        }
        Ok(evidence)
    }

    fn is_remote(&self) -> bool {
        true
    }
}

/// Whether `url` is an absolute http(s) address (what a web citation may point to).
fn is_web_url(url: &str) -> bool {
    matches!(
        reqwest::Url::parse(url),
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some()
    )
}

/// Runs of whitespace as single spaces, trimmed.
fn collapse_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `text` with whitespace collapsed, cut to at most `max` characters — at a word boundary
/// when there is one in the last fifth — with `…` marking the cut.
fn excerpt(text: &str, max: usize) -> String {
    let text = collapse_whitespace(text);
    if text.chars().count() <= max {
        return text;
    }
    let keep = max.saturating_sub(1);
    let cut = text.char_indices().nth(keep).map_or(text.len(), |(i, _)| i);
    let head = &text[..cut];
    let head = match head.rfind(' ') {
        Some(space) if head[..space].chars().count() >= keep * 4 / 5 => &head[..space],
        _ => head,
    };
    format!("{}…", head.trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpt_keeps_short_text_and_cuts_long_text() {
        assert_eq!(excerpt("  a \n b\t c  ", 900), "a b c");
        let long = "word ".repeat(400);
        let cut = excerpt(&long, SNIPPET_CHARS);
        assert!(cut.chars().count() <= SNIPPET_CHARS, "{}", cut.len());
        assert!(cut.ends_with("word…"), "{cut}");
        // No spaces: a hard cut, on a character boundary.
        let wide = "é".repeat(2000);
        let cut = excerpt(&wide, 10);
        assert_eq!(cut.chars().count(), 10);
        assert!(cut.ends_with('…'));
    }

    #[test]
    fn request_url_encodes_the_query() {
        let source = WebSearch::new("http://127.0.0.1:9/searx/", Duration::from_secs(1));
        assert_eq!(source.endpoint(), "http://127.0.0.1:9/searx/search");
        let url = source.request_url("a&b=c #d ü").unwrap();
        let pairs: Vec<(String, String)> = url
            .query_pairs()
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        assert_eq!(
            pairs,
            vec![
                ("q".to_owned(), "a&b=c #d ü".to_owned()),
                ("format".to_owned(), "json".to_owned())
            ]
        );
    }

    #[test]
    fn bad_urls_are_reported_with_the_setting_name() {
        for base in ["", "127.0.0.1:8888", "ftp://host", "not a url"] {
            let mut source = WebSearch::new(base, Duration::from_secs(1));
            let err = source.search("q", 5, None).unwrap_err().to_string();
            assert!(err.contains("web.searxng_url"), "{base:?}: {err}");
        }
    }

    #[test]
    fn only_absolute_web_urls_are_citable() {
        assert!(is_web_url("https://example.org/a"));
        assert!(is_web_url("http://example.org"));
        assert!(!is_web_url("javascript:alert(1)"));
        assert!(!is_web_url("file:///etc/passwd"));
        assert!(!is_web_url("/relative"));
        assert!(!is_web_url(""));
    }
}
