//! What the user told Rudder about themselves ("What Rudder knows about you"), applied to every
//! profile: their own statements come first and are marked as said, inferred statements they
//! deleted or corrected stay out, and sources they switched off do not feed profiles.
//!
//! It lives in the history database ([`crate::history::Store`]), so `history forget --all`
//! clears it with the history it is about.

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::extract::MERGE_THRESHOLD;
use super::{GeneralProfile, ProfileError, QueryProfile, Statement};
use crate::embed::{cosine, Embedder};
use crate::history::store::Store;
use crate::history::{HiddenStatement, HistoryError, HistorySource, UserStatement};

/// The longest statement a user can store, in characters (a profile line, not an essay).
pub const MAX_STATEMENT_CHARS: usize = 300;

/// Standing constraints a profile carries at most: the first sentences of the user's custom
/// instructions and memories.
pub const MAX_STANDING: usize = 4;

/// The user's corrections, loaded once per profile.
#[derive(Debug, Clone, Default, Serialize)]
pub struct You {
    pub said: Vec<UserStatement>,
    pub hidden: Vec<HiddenStatement>,
    pub unpersonalised: Vec<HistorySource>,
    /// Standing constraints: sentences the user wrote about themselves to another assistant
    /// (ChatGPT's custom instructions, Claude's memories), from personalised sources.
    pub standing: Vec<Standing>,
}

/// One sentence of the user's custom instructions or memories.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Standing {
    pub text: String,
    /// Where it was imported from, in words (`chatgpt custom instructions`).
    pub origin: String,
}

/// The sentences of a custom-instructions or memory text worth a profile line: 3 to 40
/// words each, in order, without repeats.
pub fn standing_sentences(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in text.lines() {
        let mut rest = line.trim();
        while !rest.is_empty() {
            let end = rest
                .char_indices()
                .find(|&(i, c)| {
                    matches!(c, '.' | '!' | '?' | ';')
                        && rest[i + c.len_utf8()..]
                            .chars()
                            .next()
                            .is_none_or(char::is_whitespace)
                })
                .map(|(i, c)| i + c.len_utf8())
                .unwrap_or(rest.len());
            let sentence = rest[..end]
                .trim()
                .trim_start_matches(['-', '*', '•'])
                .trim();
            let words = sentence.split_whitespace().count();
            if (3..=40).contains(&words)
                && !out
                    .iter()
                    .any(|o| statement_key(o) == statement_key(sentence))
            {
                out.push(sentence.to_string());
            }
            rest = rest[end..].trim_start();
        }
    }
    out
}

/// The text of a statement as it is compared: lower case, words only.
pub fn statement_key(text: &str) -> String {
    text.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// A short, stable id for an inferred statement (`i` and 8 hex digits of its key), so the CLI
/// and the window can name it; the user's own statements are `u` and their number.
pub fn inferred_id(text: &str) -> String {
    let digest = Sha256::digest(statement_key(text).as_bytes());
    format!("i{}", &hex::encode(digest)[..8])
}

/// The id of a statement the user made.
pub fn said_id(id: i64) -> String {
    format!("u{id}")
}

impl You {
    /// Reads it from the history database.
    pub fn load(store: &Store) -> Result<Self, ProfileError> {
        let err = |e| ProfileError::History(HistoryError::from(e));
        let unpersonalised = store.unpersonalised_sources().map_err(err)?;
        let mut standing: Vec<Standing> = Vec::new();
        for signal in store.signals().map_err(err)? {
            let s = &signal.signal;
            if unpersonalised.contains(&s.source) {
                continue;
            }
            let origin = format!(
                "{} {}",
                s.source.as_str(),
                s.kind.as_str().replace('-', " ")
            );
            for text in standing_sentences(&s.text) {
                if !standing
                    .iter()
                    .any(|o| statement_key(&o.text) == statement_key(&text))
                {
                    standing.push(Standing {
                        text,
                        origin: origin.clone(),
                    });
                }
            }
        }
        Ok(Self {
            said: store.user_statements().map_err(err)?,
            hidden: store.hidden_statements().map_err(err)?,
            unpersonalised,
            standing,
        })
    }

    /// Whether the user has told Rudder nothing and switched nothing off (the standing
    /// constraints are the history's, not corrections).
    pub fn is_empty(&self) -> bool {
        self.said.is_empty() && self.hidden.is_empty() && self.unpersonalised.is_empty()
    }

    /// The standing constraints a profile carries: not deleted, not already said, at most
    /// [`MAX_STANDING`].
    pub fn live_standing(&self) -> Vec<&Standing> {
        let hidden: Vec<&str> = self.hidden.iter().map(|h| h.key.as_str()).collect();
        let said: Vec<String> = self.said.iter().map(|s| statement_key(&s.text)).collect();
        self.standing
            .iter()
            .filter(|s| {
                let key = statement_key(&s.text);
                !hidden.contains(&key.as_str()) && !said.contains(&key)
            })
            .take(MAX_STANDING)
            .collect()
    }

    /// Whether entries from `source` may feed a profile.
    pub fn personalises_from(&self, source: HistorySource) -> bool {
        !self.unpersonalised.contains(&source)
    }

    /// The switched-off sources as text, for cache keys (profiles built with other switches
    /// are not reused).
    pub fn unpersonalised_key(&self) -> String {
        let mut names: Vec<&str> = self.unpersonalised.iter().map(|s| s.as_str()).collect();
        names.sort_unstable();
        names.join(",")
    }

    /// Which of `texts` the user deleted: the same words, or (with an embedder) the same
    /// meaning as a deleted statement, by the threshold that merges duplicate phrases.
    pub fn hidden_among(
        &self,
        texts: &[&str],
        embedder: Option<&dyn Embedder>,
    ) -> Result<Vec<bool>, ProfileError> {
        let keys: Vec<&str> = self.hidden.iter().map(|h| h.key.as_str()).collect();
        let mut out: Vec<bool> = texts
            .iter()
            .map(|t| keys.contains(&statement_key(t).as_str()))
            .collect();
        if let (Some(e), false) = (embedder, self.hidden.is_empty() || texts.is_empty()) {
            let hidden: Vec<&str> = self.hidden.iter().map(|h| h.text.as_str()).collect();
            let embed = |t: &[&str]| e.embed(t).map_err(ProfileError::from);
            let hidden_vectors = embed(&hidden)?;
            let vectors = embed(texts)?;
            for (flag, v) in out.iter_mut().zip(&vectors) {
                *flag = *flag
                    || hidden_vectors
                        .iter()
                        .any(|h| cosine(h, v) >= MERGE_THRESHOLD);
            }
        }
        Ok(out)
    }

    /// Applies the user's corrections to a query-aware profile: deleted statements go, the
    /// standing constraints come in, and the user's own statements go first in their
    /// criterion, marked as said.
    pub fn apply(
        &self,
        profile: &mut QueryProfile,
        embedder: Option<&dyn Embedder>,
    ) -> Result<(), ProfileError> {
        let criteria = super::CRITERIA;
        for criterion in criteria {
            let list = profile.criterion_mut(criterion);
            let texts: Vec<&str> = list.iter().map(|s| s.text.as_str()).collect();
            let hidden = self.hidden_among(&texts, embedder)?;
            let mut flags = hidden.into_iter();
            list.retain(|_| !flags.next().unwrap_or(false));
        }
        // A statement the user deleted is not looked up for them either.
        let texts: Vec<&str> = profile.considered.iter().map(|s| s.text.as_str()).collect();
        let mut flags = self.hidden_among(&texts, embedder)?.into_iter();
        profile
            .considered
            .retain(|_| !flags.next().unwrap_or(false));
        for standing in self.live_standing().into_iter().rev() {
            let list = profile.criterion_mut(super::criterion_of(&standing.text));
            if !list
                .iter()
                .any(|s| statement_key(&s.text) == statement_key(&standing.text))
            {
                list.insert(
                    0,
                    Statement {
                        text: standing.text.clone(),
                        sessions: Vec::new(),
                        said: false,
                    },
                );
            }
        }
        for said in self.said.iter().rev() {
            let list = profile.criterion_mut(&said.criterion);
            list.retain(|s| !(s.said && s.text == said.text));
            list.insert(
                0,
                Statement {
                    text: said.text.clone(),
                    sessions: Vec::new(),
                    said: true,
                },
            );
        }
        Ok(())
    }

    /// Applies the deletions to the general profile: an interest whose name or takeaway the
    /// user deleted goes.
    pub fn apply_general(&self, profile: &mut GeneralProfile) {
        let keys: Vec<&str> = self.hidden.iter().map(|h| h.key.as_str()).collect();
        profile.interests.retain(|i| {
            !keys.contains(&statement_key(&i.name).as_str())
                && !keys.contains(&statement_key(&i.takeaway).as_str())
        });
        for interest in &mut profile.interests {
            if keys.contains(&statement_key(&interest.presentation).as_str()) {
                interest.presentation.clear();
            }
        }
    }

    /// The user's statements alone as a profile, for a run that reads no history: what they
    /// said still shapes it (the standing constraints come from the history, so not here).
    pub fn said_profile(&self, query: &str) -> Option<QueryProfile> {
        if self.said.is_empty() {
            return None;
        }
        let you = You {
            standing: Vec::new(),
            ..self.clone()
        };
        let self_ = &you;
        let mut profile = super::query_profile::assemble(query, &[], None).ok()?;
        self_.apply(&mut profile, None).ok()?;
        Some(profile)
    }
}

/// Checks a statement the user typed: one line of text, not empty, not too long.
pub fn check_statement(text: &str) -> Result<String, ProfileError> {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.is_empty() {
        return Err(ProfileError::Invalid(
            "the statement is empty: write what Rudder should know".into(),
        ));
    }
    if text.chars().count() > MAX_STATEMENT_CHARS {
        return Err(ProfileError::Invalid(format!(
            "the statement is {} characters long; keep it under {MAX_STATEMENT_CHARS}",
            text.chars().count()
        )));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::query_profile::assemble;
    use crate::profile::{Phrase, PhraseKind};

    fn said(id: i64, text: &str, criterion: &str) -> UserStatement {
        UserStatement {
            id,
            text: text.into(),
            criterion: criterion.into(),
            replaces: None,
            created_at: Default::default(),
        }
    }

    fn hidden(text: &str) -> HiddenStatement {
        HiddenStatement {
            key: statement_key(text),
            text: text.into(),
            sessions: vec![1],
            created_at: Default::default(),
        }
    }

    fn profile() -> QueryProfile {
        let phrase = |session, text: &str, kind| Phrase {
            session,
            rank: session as usize,
            text: text.into(),
            kind,
            relevance: 2,
            probability: None,
        };
        assemble(
            "q",
            &[
                phrase(1, "cooks with a wok", PhraseKind::Preference),
                phrase(2, "eats meat daily", PhraseKind::Background),
                phrase(3, "likes bullet lists", PhraseKind::Presentation),
            ],
            None,
        )
        .unwrap()
    }

    #[test]
    fn deleted_statements_go_and_the_users_own_come_first_marked_as_said() {
        let you = You {
            said: vec![
                said(1, "I'm vegetarian", "emphasize"),
                said(2, "Keep answers short", "content depth"),
            ],
            hidden: vec![hidden("Eats meat  DAILY"), hidden("I hate onions.")],
            unpersonalised: Vec::new(),
            standing: vec![
                Standing {
                    text: "I hate onions.".into(),
                    origin: "chatgpt custom instructions".into(),
                },
                Standing {
                    text: "Answer in bullet lists.".into(),
                    origin: "chatgpt custom instructions".into(),
                },
            ],
        };
        let mut p = profile();
        you.apply(&mut p, None).unwrap();
        let texts: Vec<(&str, bool)> = p
            .need
            .emphasize
            .iter()
            .map(|s| (s.text.as_str(), s.said))
            .collect();
        assert_eq!(
            texts,
            [("I'm vegetarian", true), ("cooks with a wok", false)]
        );
        assert_eq!(p.content_depth[0].text, "Keep answers short");
        // A standing constraint comes in unless deleted.
        assert_eq!(p.explanation_style[0].text, "Answer in bullet lists.");
        assert!(p.need.avoid.is_empty(), "{:?}", p.need.avoid);
        assert!(p.content_depth[0].sessions.is_empty());
        let text = p.to_prompt_text();
        assert!(text.contains("- They said: I'm vegetarian\n"), "{text}");
        assert!(!text.contains("meat"), "{text}");
        // Applying twice does not repeat the user's statements.
        you.apply(&mut p, None).unwrap();
        assert_eq!(p.need.emphasize.len(), 2);
    }

    #[test]
    fn a_run_without_history_still_carries_what_the_user_said() {
        assert!(You::default().said_profile("q").is_none());
        let you = You {
            said: vec![said(3, "No dairy", "avoid")],
            ..You::default()
        };
        let p = you.said_profile("q").unwrap();
        assert_eq!(p.need.avoid[0].text, "No dairy");
        assert!(p.need.avoid[0].said);
    }

    #[test]
    fn custom_instructions_split_into_sentences_worth_a_line() {
        let text = "I'm a nurse and work night shifts. Keep answers short!\n\n\
                    - I have two kids; ok.\nVersion 2.5 of the app is fine.";
        assert_eq!(
            standing_sentences(text),
            [
                "I'm a nurse and work night shifts.",
                "Keep answers short!",
                "I have two kids;",
                "Version 2.5 of the app is fine."
            ]
        );
    }

    #[test]
    fn ids_are_stable_and_ignore_case_and_punctuation() {
        assert_eq!(inferred_id("Likes tea."), inferred_id("likes  TEA"));
        assert_ne!(inferred_id("likes tea"), inferred_id("likes coffee"));
        assert_eq!(inferred_id("x").len(), 9);
        assert_eq!(said_id(4), "u4");
    }

    #[test]
    fn statements_are_checked() {
        assert!(check_statement("  \n ").is_err());
        assert!(check_statement(&"a".repeat(MAX_STATEMENT_CHARS + 1)).is_err());
        assert_eq!(
            check_statement(" keep it\nshort ").unwrap(),
            "keep it short"
        );
    }

    #[test]
    fn the_user_statements_criterion_follows_its_words() {
        use crate::profile::query_profile::criterion_of;
        assert_eq!(criterion_of("keep answers short"), "content depth");
        assert_eq!(criterion_of("I don't eat meat"), "avoid");
        assert_eq!(criterion_of("I'm vegetarian"), "emphasize");
        assert_eq!(criterion_of("use bullet lists"), "explanation style");
    }
}
