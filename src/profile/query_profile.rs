//! The query-aware profile (BESPOKE Table 23): per criterion — need, content depth, tone,
//! explanation style — plus domain fit, every statement citing the sessions it rests on.
//!
//! The model sees the kept sessions numbered 1..n and the output grammar only allows those
//! numbers, so a citation can never point at a session that was not shown; numbers are mapped
//! back to store ids afterwards.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ProfileError;
use crate::history::StoredSession;
use crate::llm::{Llm, Usage};

/// Work or hobby: decides which history signals count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DomainFit {
    Work,
    Hobby,
    Mixed,
}

/// One profile statement and the history sessions (store ids) it rests on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Statement {
    pub text: String,
    pub sessions: Vec<i64>,
}

/// What to put in and what to leave out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Need {
    pub emphasize: Vec<Statement>,
    pub avoid: Vec<Statement>,
}

/// Work or hobby, with the reason.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Domain {
    pub fit: DomainFit,
    pub reason: Statement,
}

/// A query-aware profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueryProfile {
    pub query: String,
    pub domain: Domain,
    pub need: Need,
    pub content_depth: Vec<Statement>,
    pub tone: Vec<Statement>,
    pub explanation_style: Vec<Statement>,
}

impl QueryProfile {
    /// Every statement with its criterion name.
    pub fn statements(&self) -> Vec<(&'static str, &Statement)> {
        let mut out = vec![("domain", &self.domain.reason)];
        out.extend(self.need.emphasize.iter().map(|s| ("emphasize", s)));
        out.extend(self.need.avoid.iter().map(|s| ("avoid", s)));
        out.extend(self.content_depth.iter().map(|s| ("content depth", s)));
        out.extend(self.tone.iter().map(|s| ("tone", s)));
        out.extend(
            self.explanation_style
                .iter()
                .map(|s| ("explanation style", s)),
        );
        out
    }

    /// All cited session ids, sorted and unique.
    pub fn cited(&self) -> Vec<i64> {
        let mut ids: Vec<i64> = self
            .statements()
            .iter()
            .flat_map(|(_, s)| s.sessions.iter().copied())
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    /// The profile as plain text for prompts (research, writing).
    pub fn to_prompt_text(&self) -> String {
        let mut out = format!(
            "Domain: {} — {}\n",
            match self.domain.fit {
                DomainFit::Work => "work",
                DomainFit::Hobby => "hobby",
                DomainFit::Mixed => "mixed",
            },
            self.domain.reason.text
        );
        let mut section = |name: &str, items: &[Statement]| {
            if !items.is_empty() {
                out.push_str(name);
                out.push_str(":\n");
                for s in items {
                    out.push_str("- ");
                    out.push_str(&s.text);
                    out.push('\n');
                }
            }
        };
        section("Emphasize", &self.need.emphasize);
        section("Avoid", &self.need.avoid);
        section("Content depth", &self.content_depth);
        section("Tone", &self.tone);
        section("Explanation style", &self.explanation_style);
        out
    }
}

// What the model fills in: bounded so the grammar keeps even a small model brief, and so the
// longest answer the grammar allows (12 statements) fits in MAX_TOKENS.
#[derive(Deserialize, JsonSchema)]
struct StatementDraft {
    #[schemars(length(max = 120))]
    text: String,
    #[schemars(length(max = 4))]
    sessions: Vec<u32>,
}

#[derive(Deserialize, JsonSchema)]
struct NeedDraft {
    #[schemars(length(max = 3))]
    emphasize: Vec<StatementDraft>,
    #[schemars(length(max = 2))]
    avoid: Vec<StatementDraft>,
}

#[derive(Deserialize, JsonSchema)]
struct DomainDraft {
    fit: DomainFit,
    reason: StatementDraft,
}

#[derive(Deserialize, JsonSchema)]
struct ProfileDraft {
    domain: DomainDraft,
    need: NeedDraft,
    #[schemars(length(max = 2))]
    content_depth: Vec<StatementDraft>,
    #[schemars(length(max = 2))]
    tone: Vec<StatementDraft>,
    #[schemars(length(max = 2))]
    explanation_style: Vec<StatementDraft>,
}

/// Enough for the longest profile the grammar allows even at one token per character (a small
/// model writing digits): 12 statements of at most 120 characters plus citations and keys.
const MAX_TOKENS: u32 = 2000;

/// Restricts every `sessions` array in `schema` to the numbers 1..=n (or to nothing).
pub(crate) fn constrain_session_numbers(schema: &mut serde_json::Value, n: usize) {
    match schema {
        serde_json::Value::Object(map) => {
            if let Some(serde_json::Value::Object(props)) = map.get_mut("properties") {
                if let Some(sessions) = props.get_mut("sessions") {
                    if n == 0 {
                        sessions["maxItems"] = serde_json::json!(0);
                        sessions["items"] = serde_json::json!({"type": "integer"});
                    } else {
                        let numbers: Vec<usize> = (1..=n).collect();
                        sessions["items"] = serde_json::json!({"type": "integer", "enum": numbers});
                    }
                }
            }
            for v in map.values_mut() {
                constrain_session_numbers(v, n);
            }
        }
        serde_json::Value::Array(items) => {
            for v in items {
                constrain_session_numbers(v, n);
            }
        }
        _ => {}
    }
}

/// Maps the model's session numbers (1-based, into `shown`) to store ids.
fn resolve(draft: StatementDraft, shown: &[StoredSession]) -> Statement {
    let mut sessions: Vec<i64> = draft
        .sessions
        .iter()
        .filter_map(|&n| (n as usize).checked_sub(1).and_then(|i| shown.get(i)))
        .map(|s| s.id)
        .collect();
    sessions.dedup();
    Statement {
        text: draft.text.split_whitespace().collect::<Vec<_>>().join(" "),
        sessions,
    }
}

/// Writes the query-aware profile from the selected sessions.
pub fn generate(
    llm: &dyn Llm,
    query: &str,
    shown: &[StoredSession],
) -> Result<(QueryProfile, Usage, f64), ProfileError> {
    let started = std::time::Instant::now();
    let sessions = super::select::numbered(shown, 300);
    let prompt = crate::prompts::render(
        "profile_query_aware",
        minijinja::context! { query, sessions },
    )?;
    let mut schema = crate::llm::schema_of::<ProfileDraft>();
    constrain_session_numbers(&mut schema, shown.len());
    let (draft, completion): (ProfileDraft, _) = crate::llm::complete_schema(
        llm,
        vec![crate::llm::Message::user(prompt)],
        crate::llm::GenerationOptions::greedy(MAX_TOKENS),
        schema,
    )?
    .into_pair()?;
    let profile = QueryProfile {
        query: query.to_string(),
        domain: Domain {
            fit: draft.domain.fit,
            reason: resolve(draft.domain.reason, shown),
        },
        need: Need {
            emphasize: draft
                .need
                .emphasize
                .into_iter()
                .map(|d| resolve(d, shown))
                .collect(),
            avoid: draft
                .need
                .avoid
                .into_iter()
                .map(|d| resolve(d, shown))
                .collect(),
        },
        content_depth: draft
            .content_depth
            .into_iter()
            .map(|d| resolve(d, shown))
            .collect(),
        tone: draft.tone.into_iter().map(|d| resolve(d, shown)).collect(),
        explanation_style: draft
            .explanation_style
            .into_iter()
            .map(|d| resolve(d, shown))
            .collect(),
    };
    Ok((profile, completion.usage, started.elapsed().as_secs_f64()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_numbers_are_limited_to_what_was_shown() {
        let mut schema = crate::llm::schema_of::<ProfileDraft>();
        constrain_session_numbers(&mut schema, 2);
        let text = schema.to_string();
        assert!(text.contains(r#""enum":[1,2]"#), "{text}");
        let mut none = crate::llm::schema_of::<ProfileDraft>();
        constrain_session_numbers(&mut none, 0);
        assert!(none.to_string().contains(r#""maxItems":0"#));
    }
}
