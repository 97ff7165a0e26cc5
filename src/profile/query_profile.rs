//! The query-aware profile (BESPOKE Table 23): per criterion — need, content depth, tone,
//! explanation style — plus domain fit, every statement citing the entries it rests on.
//!
//! It is assembled in code from the phrases extraction kept (see [`super::extract`]): near-
//! identical phrases merge (citing all their entries), the best graded come first, and each
//! phrase's kind decides its criterion. A statement cites exactly the entries it was extracted
//! from.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::extract::{Phrase, PhraseKind, MERGE_THRESHOLD};
use super::memory::speaks_of_self;
use super::ProfileError;
use crate::embed::{cosine, Embedder};

/// Work or hobby: decides which history signals count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DomainFit {
    Work,
    Hobby,
    Mixed,
}

/// One profile statement and the history entries (store ids) it rests on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Statement {
    pub text: String,
    pub sessions: Vec<i64>,
    /// The user's own words (from "What Rudder knows about you"), not inferred from history.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub said: bool,
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
    /// What the history says of the person that the relevance judge did not keep for this
    /// question, best scored first, at most [`MAX_CONSIDERED`]. Not part of the profile: no
    /// prompt sees it and it is no need, until the research's documents show that it matters
    /// (a passage the need judge scores at its precision bar for a reader with it; see
    /// `research::steps::needs`). The 1.5B judge scores "Has ADHD" 0.17 for a technical
    /// interview, while the interview guide says long study sessions are hard "especially for
    /// people with ADHD".
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub considered: Vec<Statement>,
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

    /// The statements of one criterion (a name from [`CRITERIA`]; anything else is
    /// explanation style).
    pub fn criterion_mut(&mut self, criterion: &str) -> &mut Vec<Statement> {
        match criterion {
            "emphasize" => &mut self.need.emphasize,
            "avoid" => &mut self.need.avoid,
            "content depth" => &mut self.content_depth,
            "tone" => &mut self.tone,
            _ => &mut self.explanation_style,
        }
    }

    /// All cited entry ids, sorted and unique (those of [`Self::considered`] too: forgetting
    /// one drops the cached profile with it).
    pub fn cited(&self) -> Vec<i64> {
        let mut ids: Vec<i64> = self
            .statements()
            .iter()
            .map(|(_, s)| *s)
            .chain(&self.considered)
            .flat_map(|s| s.sessions.iter().copied())
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
                    if s.said {
                        out.push_str(SAID_PREFIX);
                    }
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

/// How [`QueryProfile::to_prompt_text`] marks a statement in the user's own words, so the
/// prompts, the persona and the report's needs can tell it from an inferred one.
pub const SAID_PREFIX: &str = "They said: ";

/// At most this many statements: the ones a small model's research prompts can use.
pub const MAX_STATEMENTS: usize = 6;

/// At most this many [`QueryProfile::considered`] statements: each is looked up in the
/// documents before the report (a search and two forward passes per sentence judged).
pub const MAX_CONSIDERED: usize = 4;

/// The [`QueryProfile::considered`] statements of `profile` from the phrases the judge did
/// not keep: best scored first, one per wording (the same text from several sessions cites
/// them all), none the profile states already, at most [`MAX_CONSIDERED`].
pub fn considered(dropped: &[Phrase], profile: &QueryProfile) -> Vec<Statement> {
    let mut ordered: Vec<&Phrase> = dropped.iter().collect();
    ordered.sort_by(|a, b| {
        b.probability
            .unwrap_or(f32::MIN)
            .total_cmp(&a.probability.unwrap_or(f32::MIN))
            .then(a.rank.cmp(&b.rank))
    });
    let stated: Vec<String> = profile
        .statements()
        .iter()
        .map(|(_, s)| s.text.to_lowercase())
        .collect();
    let mut out: Vec<Statement> = Vec::new();
    for phrase in ordered {
        let key = phrase.text.to_lowercase();
        if stated.contains(&key) {
            continue;
        }
        if let Some(same) = out.iter_mut().find(|s| s.text.to_lowercase() == key) {
            if !same.sessions.contains(&phrase.session) {
                same.sessions.push(phrase.session);
            }
            continue;
        }
        if out.len() < MAX_CONSIDERED {
            out.push(Statement {
                text: phrase.text.clone(),
                sessions: vec![phrase.session],
                said: false,
            });
        }
    }
    out
}
/// At most this many statements of how the user wants answers, beside [`MAX_STATEMENTS`]: they
/// shape the report's form, not the research, so they take no statement's place (with them
/// in the count, Lena's "Has experience cooking, likes Ottolenghi" left her holiday profile
/// for "Wants checklists to be copied into notes app").
pub const MAX_STYLE_STATEMENTS: usize = 2;

/// The domain reason when nothing was inferred: work or hobby is not judged from history (no
/// extra model call), so the reason cites no entry.
pub const DOMAIN_NOT_INFERRED: &str = "Not inferred; the statements are the user's own words";

/// Where a presentation phrase goes: format cues to explanation style, register to tone,
/// length and depth to content depth; anything else to explanation style.
fn presentation_criterion(text: &str) -> &'static str {
    presentation_cue(text).unwrap_or("explanation style")
}

/// The criterion a statement in the user's own words belongs to: a presentation cue decides
/// it, else a refusal is something to avoid, else something to emphasise.
pub fn criterion_of(text: &str) -> &'static str {
    if let Some(c) = presentation_cue(text) {
        c
    } else if is_avoidance(text) {
        "avoid"
    } else {
        "emphasize"
    }
}

/// The criteria a statement can belong to, as [`QueryProfile::statements`] names them.
pub const CRITERIA: [&str; 5] = [
    "emphasize",
    "avoid",
    "content depth",
    "tone",
    "explanation style",
];

/// The presentation criterion `text` has a cue for, if any.
pub(super) fn presentation_cue(text: &str) -> Option<&'static str> {
    let lower = text.to_lowercase();
    let has = |cues: &[&str]| {
        lower
            .split(|c: char| !c.is_alphanumeric())
            .any(|w| cues.iter().any(|c| w.starts_with(c)))
    };
    if has(&[
        "bullet",
        "checklist",
        "list",
        "step",
        "table",
        "code",
        "number",
        "example",
        "diagram",
        "template",
        "print",
    ]) {
        Some("explanation style")
    } else if has(&[
        "tone", "casual", "formal", "friendly", "honest", "blunt", "direct", "polite", "humo",
        "opinion", "jargon", "plain",
    ]) {
        Some("tone")
    } else if has(&[
        "short",
        "brief",
        "concise",
        "long",
        "detail",
        "depth",
        "deep",
        "technical",
        "advanced",
        "simple",
        "basic",
        "thorough",
        "length",
        "quick",
    ]) {
        Some("content depth")
    } else {
        None
    }
}

/// Whether a presentation phrase is about how the user wants answers ("wants short bullet points
/// from now on", "no jargon, plain words") rather than about a text they asked to have written
/// for someone else ("wants a shorter email", "a formal way to decline an invite"). How a
/// person likes answers holds for every question, so such a phrase is kept whatever the
/// question: the relevance judge's contrast (its P(yes) where nothing personal matters) takes
/// away exactly what makes it matter, and it scored 0.24 for Maya's running shoes against a bar
/// of 0.37. Its cues are narrower than `presentation_cue`'s on purpose: that list also matches
/// "simple" and the "step" of "step-by-step", and with it a replay of the planted set kept two
/// more lines that glue a topic onto a style in one foreign profile ("Has experience with prime
/// lenses, wants a step-by-step plan") and stated no more needs.
pub fn is_answer_style(text: &str) -> bool {
    const CUES: &[&str] = &[
        "bullet",
        "bullets",
        "bulleted",
        "checklist",
        "checklists",
        "short",
        "shorter",
        "brief",
        "concise",
        "step",
        "steps",
        "numbered",
        "plain",
        "jargon",
        "detailed",
        "thorough",
        "table",
        "tables",
        "citation",
        "citations",
        "cite",
        "references",
        "answers",
        "explanations",
    ];
    // Texts written for others: a request to shorten one is not how they want answers.
    const WRITTEN_FOR_OTHERS: &[&str] = &[
        "email",
        "e-mail",
        "mail",
        "message",
        "letter",
        "invite",
        "invitation",
        "speech",
        "toast",
        "post",
        "caption",
        "card",
        "essay",
        "resume",
        "cv",
        "bio",
        "poem",
        "story",
        "announcement",
        "review",
        "decline",
        "reply",
        "text",
    ];
    let lower = text.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !(c.is_alphanumeric() || c == '-'))
        .filter(|w| !w.is_empty())
        .collect();
    words.iter().any(|w| CUES.contains(w))
        && !words.iter().any(|w| WRITTEN_FOR_OTHERS.contains(w))
        && !scoped_to_a_topic(&words, CUES)
}

/// Whether a request about answers names the one topic it was for ("a detailed plan to handle
/// Philidor position with rook endgames", "a detailed guide on cargo workspace setup"): after
/// its first cue, a noun such as "plan" or "guide", then a preposition followed by two or more
/// words that are neither cues nor about using the answer ("to be copied into notes app", "for
/// clarity"). Such a request held for that chat, not for every question, and its "detailed"
/// would cancel the reader's "short".
fn scoped_to_a_topic(words: &[&str], cues: &[&str]) -> bool {
    const STYLE_NOUNS: &[&str] = &[
        "plan",
        "plans",
        "guide",
        "guides",
        "overview",
        "explanation",
        "list",
        "lists",
        "points",
        "breakdown",
        "summary",
        "walkthrough",
    ];
    const SCOPING: &[&str] = &["on", "about", "of", "to", "for", "with", "regarding"];
    const NEUTRAL: &[&str] = &[
        "a",
        "an",
        "the",
        "be",
        "each",
        "every",
        "me",
        "my",
        "it",
        "them",
        "into",
        "in",
        "and",
        "clarity",
        "notes",
        "note",
        "app",
        "copied",
        "copy",
        "paste",
        "pasted",
        "phone",
        "print",
        "printing",
        "reading",
        "read",
        "later",
        "reference",
        "easy",
        "follow",
        "understand",
        "everything",
        "now",
        "from",
        "can",
        "she",
        "he",
        "i",
    ];
    let Some(first_cue) = words.iter().position(|w| cues.contains(w)) else {
        return false;
    };
    let mut i = first_cue + 1;
    while i < words.len() && (cues.contains(&words[i]) || STYLE_NOUNS.contains(&words[i])) {
        i += 1;
    }
    // "a detailed plan to …", not "short answers with the numbers up front".
    if i >= words.len() || !SCOPING.contains(&words[i]) || !STYLE_NOUNS.contains(&words[i - 1]) {
        return false;
    }
    words[i + 1..]
        .iter()
        .filter(|w| !NEUTRAL.contains(w) && !cues.contains(w) && !SCOPING.contains(w))
        .count()
        >= 2
}

/// A constraint or preference said as a refusal ("dislikes crowds", "no subscription") is
/// something to avoid.
fn is_avoidance(text: &str) -> bool {
    let padded = format!(" {} ", text.to_lowercase().replace('’', "'"));
    // A sentence the person wrote ("My grandson keeps saying RAM and I have no idea what it
    // is") has a "no" or "not" in many a fact about them: only their own word for what they
    // shun makes it one.
    if [" i ", " i'm ", " my ", " me "]
        .iter()
        .any(|w| padded.contains(w))
    {
        return [
            " i hate ",
            " i dislike ",
            " i avoid ",
            " i don't like ",
            " i do not like ",
            " i don't want ",
            " i do not want ",
            " i don't eat ",
            " i do not eat ",
            " i don't drink ",
            " i don't use ",
            " i won't ",
            " i never ",
            " i can't stand ",
        ]
        .iter()
        .any(|cue| padded.contains(cue));
    }
    [
        " avoid",
        " dislike",
        " hate",
        " distrust",
        " no ",
        " not ",
        " never ",
        " doesn't ",
        " does not ",
        " don't ",
        " do not ",
        " without ",
    ]
    .iter()
    .any(|cue| padded.contains(cue))
}

/// One statement being assembled: its phrase (the best graded of those merged into it).
struct Group {
    phrase: Phrase,
    sessions: Vec<i64>,
    vector: Option<Vec<f32>>,
}

/// Assembles the profile for `query` from the kept `phrases`.
pub fn assemble(
    query: &str,
    phrases: &[Phrase],
    embedder: Option<&dyn Embedder>,
) -> Result<QueryProfile, ProfileError> {
    let mut ordered: Vec<&Phrase> = phrases.iter().collect();
    // What the person wrote about themselves first (a sentence memory kept as they wrote it and
    // the judge passed at its own bar: faithful by construction, where a note is the model's
    // reading of a search); then the most probably relevant (then the written grade, then
    // retrieval order): a merged statement keeps its best phrase's wording.
    ordered.sort_by(|a, b| {
        let pa = a.probability.unwrap_or(0.0);
        let pb = b.probability.unwrap_or(0.0);
        speaks_of_self(&b.text)
            .cmp(&speaks_of_self(&a.text))
            .then(pb.total_cmp(&pa))
            .then(b.relevance.cmp(&a.relevance))
            .then(a.rank.cmp(&b.rank))
    });
    let vectors: Vec<Option<Vec<f32>>> = match embedder {
        Some(e) if !ordered.is_empty() => {
            let texts: Vec<&str> = ordered.iter().map(|p| p.text.as_str()).collect();
            e.embed(&texts)
                .map_err(ProfileError::from)?
                .into_iter()
                .map(Some)
                .collect()
        }
        _ => vec![None; ordered.len()],
    };
    let mut groups: Vec<Group> = Vec::new();
    for (phrase, vector) in ordered.into_iter().zip(vectors) {
        let same = groups.iter_mut().find(|g| match (&g.vector, &vector) {
            (Some(a), Some(b)) => cosine(a, b) >= MERGE_THRESHOLD,
            _ => g.phrase.text.eq_ignore_ascii_case(&phrase.text),
        });
        match same {
            Some(g) => {
                if !g.sessions.contains(&phrase.session) {
                    g.sessions.push(phrase.session);
                }
            }
            None => groups.push(Group {
                phrase: phrase.clone(),
                sessions: vec![phrase.session],
                vector,
            }),
        }
    }
    // Statements of how the user wants answers have their own places.
    let is_style =
        |g: &Group| g.phrase.kind == PhraseKind::Presentation && is_answer_style(&g.phrase.text);
    let (mut styles, mut others) = (0, 0);
    groups.retain(|g| {
        let count = if is_style(g) {
            &mut styles
        } else {
            &mut others
        };
        *count += 1;
        *count
            <= if is_style(g) {
                MAX_STYLE_STATEMENTS
            } else {
                MAX_STATEMENTS
            }
    });
    let mut profile = QueryProfile {
        query: query.to_string(),
        domain: Domain {
            fit: DomainFit::Mixed,
            reason: Statement {
                text: DOMAIN_NOT_INFERRED.to_string(),
                sessions: Vec::new(),
                said: false,
            },
        },
        need: Need::default(),
        content_depth: Vec::new(),
        tone: Vec::new(),
        explanation_style: Vec::new(),
        considered: Vec::new(),
    };
    for g in groups {
        let statement = Statement {
            text: g.phrase.text.clone(),
            sessions: g.sessions,
            said: false,
        };
        // The extractor's "presentation" is a guess: a phrase with no word of form in it and
        // no answer style ("Has a two-year-old, wants to keep them busy on a plane") is a fact
        // about the person, and a report meets facts as needs, never as a style.
        let reads_as_style =
            is_answer_style(&statement.text) || presentation_cue(&statement.text).is_some();
        let list = match g.phrase.kind {
            PhraseKind::Presentation if reads_as_style => {
                match presentation_criterion(&statement.text) {
                    "tone" => &mut profile.tone,
                    "content depth" => &mut profile.content_depth,
                    _ => &mut profile.explanation_style,
                }
            }
            _ if is_avoidance(&statement.text) => &mut profile.need.avoid,
            _ => &mut profile.need.emphasize,
        };
        list.push(statement);
    }
    Ok(profile)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sentence_the_person_wrote_is_to_avoid_only_when_they_say_they_shun_it() {
        for yes in [
            "Dislikes jargon",
            "Does not eat meat",
            "I hate paying monthly for things.",
            "I don't eat meat",
            "I don't like the idea of my family pictures sitting on some company's computer.",
        ] {
            assert!(is_avoidance(yes), "{yes}");
        }
        for no in [
            "Has knee pain",
            "My grandson keeps saying RAM and SSD and I have no idea what they are.",
            "My shop lease says I can't alter the building, not even the roof.",
        ] {
            assert!(!is_avoidance(no), "{no}");
        }
    }

    #[test]
    fn answer_style_is_how_answers_should_look_not_a_text_written_for_someone_else() {
        for yes in [
            "Wants short bullet points from now on",
            "Prefers plain words, no jargon",
            "Wants references she can cite",
            "Wants to number each step for clarity",
            "Wants checklists to be copied into notes app",
            "Has experience with film photography, wants a shorter guide",
        ] {
            assert!(is_answer_style(yes), "{yes}");
        }
        for no in [
            "Wants a shorter email",
            "Wants a formal response, is looking for a more formal way to decline a meeting invite",
            "Has a dull chef knife",
            "Has a two-year-old, wants to keep them busy on a plane",
            // A request for the one chat it was made in, not for every answer.
            "Wants a detailed plan to handle Philidor position with rook endgames",
            "Wants a detailed guide on cargo workspace setup",
        ] {
            assert!(!is_answer_style(no), "{no}");
        }
    }

    fn phrase(session: i64, rank: usize, text: &str, kind: PhraseKind, relevance: u8) -> Phrase {
        Phrase {
            session,
            rank,
            text: text.to_string(),
            kind,
            relevance,
            probability: None,
        }
    }

    #[test]
    fn kinds_map_onto_criteria_and_each_statement_cites_its_session() {
        let phrases = [
            phrase(
                10,
                0,
                "Recovering from a knee injury",
                PhraseKind::Constraint,
                3,
            ),
            phrase(
                11,
                1,
                "Nurse on twelve-hour shifts",
                PhraseKind::Background,
                2,
            ),
            phrase(
                12,
                2,
                "Doesn't want a monthly subscription",
                PhraseKind::Preference,
                3,
            ),
            phrase(
                13,
                3,
                "Wants answers in bullet points",
                PhraseKind::Presentation,
                3,
            ),
            phrase(14, 4, "Keep it short", PhraseKind::Presentation, 2),
            phrase(
                15,
                5,
                "Honest opinions, not balanced lists of pros",
                PhraseKind::Presentation,
                2,
            ),
        ];
        let p = assemble("Which shoes?", &phrases, None).unwrap();
        let texts = |l: &[Statement]| l.iter().map(|s| s.text.clone()).collect::<Vec<_>>();
        assert_eq!(
            texts(&p.need.emphasize),
            [
                "Recovering from a knee injury",
                "Nurse on twelve-hour shifts"
            ]
        );
        assert_eq!(
            texts(&p.need.avoid),
            ["Doesn't want a monthly subscription"]
        );
        // "lists" is a format cue but "honest" and "opinions" say register: format wins.
        assert_eq!(
            texts(&p.explanation_style),
            [
                "Wants answers in bullet points",
                "Honest opinions, not balanced lists of pros"
            ]
        );
        assert_eq!(texts(&p.content_depth), ["Keep it short"]);
        assert!(
            p.domain.reason.sessions.is_empty(),
            "the domain rests on no session"
        );
        for (_, s) in p.statements().iter().skip(1) {
            assert_eq!(s.sessions.len(), 1, "{s:?}");
        }
        assert_eq!(p.cited(), vec![10, 11, 12, 13, 14, 15]);
    }

    #[test]
    fn a_presentation_phrase_with_no_word_of_form_is_a_need_not_a_style() {
        let phrases = vec![
            // A planted need the extractor called presentation (the family-holiday question).
            phrase(
                20,
                0,
                "Has a two-year-old, wants to keep them busy on a plane",
                PhraseKind::Presentation,
                3,
            ),
            phrase(
                21,
                1,
                "Has experience with Fujifilm X-T5",
                PhraseKind::Presentation,
                2,
            ),
            phrase(
                22,
                2,
                "Wants short bullet points",
                PhraseKind::Presentation,
                3,
            ),
            phrase(23, 3, "Prefers a formal tone", PhraseKind::Presentation, 2),
        ];
        let p = assemble("Where should we go on a family holiday?", &phrases, None).unwrap();
        let texts = |l: &[Statement]| l.iter().map(|s| s.text.clone()).collect::<Vec<_>>();
        assert_eq!(
            texts(&p.need.emphasize),
            [
                "Has a two-year-old, wants to keep them busy on a plane",
                "Has experience with Fujifilm X-T5"
            ]
        );
        assert_eq!(texts(&p.explanation_style), ["Wants short bullet points"]);
        assert_eq!(texts(&p.tone), ["Prefers a formal tone"]);
    }

    #[test]
    fn what_the_judge_left_out_is_considered_best_scored_first_and_never_twice() {
        let scored = |session, text: &str, score| Phrase {
            probability: Some(score),
            ..phrase(session, session as usize, text, PhraseKind::Constraint, 3)
        };
        let kept = [scored(1, "Has a one-car garage", 0.6)];
        let p = assemble("Which table saw?", &kept, None).unwrap();
        let dropped = [
            scored(2, "Has a dull chef knife", 0.1),
            scored(3, "Has headaches from solvent smells", 0.3),
            scored(4, "Has a one-car garage", 0.2),
            scored(5, "has headaches from solvent smells", 0.25),
            scored(6, "Plays chess online", 0.05),
            scored(7, "Sails on weekends", 0.02),
            scored(8, "Keeps bees", 0.01),
        ];
        let considered = considered(&dropped, &p);
        let texts: Vec<&str> = considered.iter().map(|s| s.text.as_str()).collect();
        // The garage is in the profile already; the headaches are one statement of two
        // sessions; four at most.
        assert_eq!(
            texts,
            [
                "Has headaches from solvent smells",
                "Has a dull chef knife",
                "Plays chess online",
                "Sails on weekends",
            ]
        );
        assert_eq!(considered[0].sessions, [3, 5]);
        let mut p = p;
        p.considered = considered;
        // Not in the profile's statements or its prompt, but cited: forgetting a session it
        // rests on drops the cached profile.
        assert!(!p.to_prompt_text().contains("headaches"));
        assert!(p
            .statements()
            .iter()
            .all(|(_, s)| !s.text.contains("headaches")));
        assert_eq!(p.cited(), [1, 2, 3, 5, 6, 7]);
    }

    #[test]
    fn duplicates_merge_citing_both_sessions_and_the_best_graded_come_first() {
        let phrases = [
            phrase(7, 3, "Budget under $300", PhraseKind::Constraint, 2),
            phrase(5, 1, "Has a toddler", PhraseKind::Constraint, 3),
            phrase(9, 0, "budget under $300", PhraseKind::Constraint, 3),
        ];
        let p = assemble("Which stroller?", &phrases, None).unwrap();
        let got: Vec<(&str, &[i64])> = p
            .need
            .emphasize
            .iter()
            .map(|s| (s.text.as_str(), s.sessions.as_slice()))
            .collect();
        assert_eq!(
            got,
            [
                ("budget under $300", &[9, 7][..]),
                ("Has a toddler", &[5][..])
            ]
        );
    }

    /// `n` constraint phrases, each from its own session, in rank order.
    fn constraints(n: i64) -> Vec<Phrase> {
        (0..n)
            .map(|i| {
                phrase(
                    i,
                    i as usize,
                    &format!("Constraint number {i}"),
                    PhraseKind::Constraint,
                    3,
                )
            })
            .collect()
    }

    #[test]
    fn at_most_six_statements() {
        let phrases = constraints(10);
        let p = assemble("q", &phrases, None).unwrap();
        assert_eq!(p.need.emphasize.len(), MAX_STATEMENTS);
        assert_eq!(p.cited(), vec![0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn what_the_person_wrote_comes_before_the_notes_whatever_their_scores() {
        // Six notes judged more probably relevant than the person's own sentence.
        let mut phrases: Vec<Phrase> = constraints(6)
            .into_iter()
            .map(|p| Phrase {
                probability: Some(0.9),
                ..p
            })
            .collect();
        phrases.push(Phrase {
            probability: Some(0.45),
            ..phrase(
                20,
                20,
                "After paying the flour supplier I have roughly 2000 euros spare.",
                PhraseKind::Constraint,
                2,
            )
        });
        let p = assemble("q", &phrases, None).unwrap();
        assert_eq!(p.need.emphasize.len(), MAX_STATEMENTS);
        assert!(
            p.need.emphasize[0]
                .text
                .starts_with("After paying the flour supplier"),
            "{:?}",
            p.need.emphasize
        );
        assert_eq!(p.need.emphasize[0].sessions, vec![20]);
    }

    #[test]
    fn how_the_user_wants_answers_takes_no_statements_place() {
        // Six situations, then three statements of style (ranked last), and one presentation
        // phrase that is no style of answers.
        let mut phrases = constraints(6);
        for (i, text) in [
            "Wants checklists to be copied into notes app",
            "Wants short bullet points from now on",
            "Prefers plain words, no jargon",
            "Wants a shorter email",
        ]
        .into_iter()
        .enumerate()
        {
            phrases.push(phrase(
                10 + i as i64,
                10 + i,
                text,
                PhraseKind::Presentation,
                1,
            ));
        }
        let p = assemble("q", &phrases, None).unwrap();
        assert_eq!(p.need.emphasize.len(), MAX_STATEMENTS);
        let styles: Vec<&str> = p
            .tone
            .iter()
            .chain(&p.explanation_style)
            .chain(&p.content_depth)
            .map(|s| s.text.as_str())
            .collect();
        assert_eq!(styles.len(), MAX_STYLE_STATEMENTS, "{styles:?}");
        assert!(styles.contains(&"Wants checklists to be copied into notes app"));
        assert!(!styles.contains(&"Wants a shorter email"), "{styles:?}");
    }
}
