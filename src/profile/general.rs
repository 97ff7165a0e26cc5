//! The general profile (BESPOKE Table 21): the user's stable interests and presentation
//! preferences over the whole history. A laptop model cannot read a whole history at once, so
//! it reads an even spread of entries plus the profile signals (custom instructions,
//! memories), and later imports are folded in incrementally from a watermark: the profile
//! remembers the highest entry id it has seen.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ProfileError;
use crate::history::History;
use crate::llm::{Llm, Usage};

/// Entries read per pass (about 1,300 tokens of one-line summaries), so prompt and answer fit
/// a 4,096-token context.
pub const SESSIONS_PER_PASS: usize = 50;
/// Enough for the longest profile the grammar allows even at one token per character.
const MAX_TOKENS: u32 = 2100;

/// One interest of the user.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Interest {
    pub name: String,
    pub subtopics: Vec<String>,
    /// Organization, depth, tone and explanation style inferred from behaviour.
    pub presentation: String,
    pub takeaway: String,
    pub sessions: Vec<i64>,
}

/// The general profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GeneralProfile {
    pub interests: Vec<Interest>,
    /// The highest entry id the profile has read.
    pub watermark: i64,
}

impl GeneralProfile {
    pub fn cited(&self) -> Vec<i64> {
        let mut ids: Vec<i64> = self
            .interests
            .iter()
            .flat_map(|i| i.sessions.iter().copied())
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }
}

#[derive(Deserialize, JsonSchema)]
struct InterestDraft {
    #[schemars(length(max = 40))]
    name: String,
    #[schemars(length(max = 3), inner(length(max = 30)))]
    subtopics: Vec<String>,
    #[schemars(length(max = 120))]
    presentation: String,
    #[schemars(length(max = 120))]
    takeaway: String,
    #[schemars(length(max = 4))]
    sessions: Vec<u32>,
}

#[derive(Deserialize, JsonSchema)]
struct GeneralDraft {
    #[schemars(length(max = 5))]
    interests: Vec<InterestDraft>,
}

/// Restricts every `sessions` array in `schema` to the numbers 1..=n (or to nothing), so a
/// citation can never point at an entry that was not shown.
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

/// Builds the profile from scratch (`previous = None`) or folds in the entries imported since
/// `previous` was made. Returns `None` when there is nothing new to read.
pub fn build(
    llm: &dyn Llm,
    history: &History,
    previous: Option<&GeneralProfile>,
    you: &super::You,
) -> Result<Option<(GeneralProfile, Usage)>, ProfileError> {
    let store = history.store();
    let after = previous.map(|p| p.watermark).unwrap_or(0);
    let max_id = store
        .max_entry_id()
        .map_err(crate::history::HistoryError::from)?;
    if max_id <= after {
        return Ok(None);
    }
    let ids = store
        .spread_ids(after, SESSIONS_PER_PASS)
        .map_err(crate::history::HistoryError::from)?;
    let mut shown = history.get_many(&ids)?;
    // Entries from sources the user switched off stay searchable but are not read here.
    shown.retain(|s| you.personalises_from(s.entry.source));
    let notes: Vec<String> = if previous.is_none() {
        history
            .signals()?
            .into_iter()
            .filter(|s| you.personalises_from(s.signal.source))
            .map(|s| {
                let t: String = s.signal.text.chars().take(400).collect();
                t.split_whitespace().collect::<Vec<_>>().join(" ")
            })
            .take(5)
            .collect()
    } else {
        Vec::new()
    };
    let sessions = super::select::numbered(&shown, 100);
    let previous_text = previous
        .map(|p| serde_json::to_string(&p.interests).unwrap_or_default())
        .unwrap_or_default();
    let prompt = crate::prompts::render(
        "profile_general",
        minijinja::context! { sessions, notes, previous => previous_text },
    )?;
    let mut schema = crate::llm::schema_of::<GeneralDraft>();
    constrain_session_numbers(&mut schema, shown.len());
    let (draft, completion): (GeneralDraft, _) = crate::llm::complete_schema(
        llm,
        vec![crate::llm::Message::user(prompt)],
        crate::llm::GenerationOptions::greedy(MAX_TOKENS),
        schema,
    )?
    .into_pair()?;
    let interests = draft
        .interests
        .into_iter()
        .map(|d| Interest {
            name: d.name.trim().to_string(),
            subtopics: d.subtopics,
            presentation: d.presentation,
            takeaway: d.takeaway,
            sessions: d
                .sessions
                .iter()
                .filter_map(|&n| (n as usize).checked_sub(1).and_then(|i| shown.get(i)))
                .map(|s| s.id)
                .collect(),
        })
        .collect();
    Ok(Some((
        GeneralProfile {
            interests,
            watermark: max_id,
        },
        completion.usage,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_numbers_are_limited_to_what_was_shown() {
        let mut schema = crate::llm::schema_of::<GeneralDraft>();
        constrain_session_numbers(&mut schema, 2);
        let text = schema.to_string();
        assert!(text.contains(r#""enum":[1,2]"#), "{text}");
        let mut none = crate::llm::schema_of::<GeneralDraft>();
        constrain_session_numbers(&mut none, 0);
        assert!(none.to_string().contains(r#""maxItems":0"#));
    }
}
