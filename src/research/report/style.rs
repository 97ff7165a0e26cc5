//! How the reader wants answers, read in code from what the profile states about them and
//! what they said: the form of the body (paragraphs, bullet points, numbered steps, a
//! checklist), short sentences, plain words.
//!
//! A style is not a need a finding can meet (see `needs`): it shapes the whole report. The
//! profile keeps such a statement for every question ([`is_answer_style`]); this module
//! turns it into a form the writer applies in code (the Markdown) and two switches of the
//! paragraph prompts (`short`, `plain`), so the research and its checks are the same for
//! every reader. The report says which statements it followed, so the reader can correct
//! them on the *You* screen.

use serde::{Deserialize, Serialize};

use crate::profile::query_profile::{is_answer_style, SAID_PREFIX};

/// The form of the report's body.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(rename = "ReportForm"))]
#[serde(rename_all = "snake_case")]
pub enum Form {
    #[default]
    Paragraphs,
    /// One bullet point per sentence.
    Bullets,
    /// Numbered items, numbered within each section.
    Steps,
    /// Items to tick off.
    Checklist,
}

/// How the reader wants answers, and the statements that say so.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(rename = "AnswerStyle"))]
pub struct AnswerStyle {
    pub form: Form,
    /// One short sentence per finding, no detail added around it.
    pub short: bool,
    /// Everyday words; a technical term said in a few words.
    pub plain: bool,
    /// The statements it follows, as the profile or the user has them.
    pub because: Vec<String>,
}

impl AnswerStyle {
    /// The style of a reader Rudder knows nothing about: paragraphs.
    pub fn is_default(&self) -> bool {
        self.form == Form::Paragraphs && !self.short && !self.plain
    }
}

/// The profile criteria that say how answers should look (the headers
/// [`crate::profile::QueryProfile::to_prompt_text`] writes). *Emphasize* is left out: "prefers
/// short timed blocks" there is about the user's study sessions, not about answers.
const STYLE_CRITERIA: &[&str] = &["tone", "explanation style", "content depth"];

/// Words that undo a cue a few words after them ("no bullet points", "not short").
const NEGATIONS: &[&str] = &[
    "no", "not", "don't", "dont", "doesn't", "doesnt", "without", "never", "instead", "rather",
    "dislikes", "hates", "avoid", "avoids",
];
/// How far back (words) a negation reaches.
const NEGATION_REACH: usize = 3;

/// A length cue counts only with one of these in the statement: "short answers", "brief
/// explanations", "short bullet points"; never "short timed blocks" or "a short commute".
const ANSWER_WORDS: &[&str] = &[
    "answer",
    "answers",
    "explanation",
    "explanations",
    "summary",
    "summaries",
    "response",
    "responses",
    "points",
    "bullet",
    "bullets",
    "report",
    "reports",
    "overview",
    "overviews",
];

/// The reader's style from the profile text (its *Tone*, *Explanation style* and *Content
/// depth* statements) and the sentences they wrote about themselves (`told`). Each statement
/// must read as how they want answers ([`is_answer_style`]); when two statements disagree on
/// the form, a checklist wins over steps and steps over bullets (each is also a list), and
/// "detailed" or "thorough" cancels "short".
pub fn answer_style(profile: &str, told: &[String]) -> AnswerStyle {
    let mut statements: Vec<String> = Vec::new();
    let mut taking = false;
    for line in profile.lines() {
        let line = line.trim();
        if let Some(item) = line.strip_prefix("- ") {
            if taking {
                statements.push(item.strip_prefix(SAID_PREFIX).unwrap_or(item).trim().into());
            }
        } else if !line.is_empty() {
            let header = line.strip_suffix(':').unwrap_or("").trim().to_lowercase();
            taking = STYLE_CRITERIA.contains(&header.as_str());
        }
    }
    statements.extend(told.iter().map(|t| t.trim().to_string()));

    let mut style = AnswerStyle::default();
    let mut detailed = false;
    for statement in statements {
        if statement.is_empty() || !is_answer_style(&statement) {
            continue;
        }
        let cues = Cues::of(&statement);
        let form = if cues.checklist {
            Form::Checklist
        } else if cues.steps {
            Form::Steps
        } else if cues.bullets {
            Form::Bullets
        } else {
            Form::Paragraphs
        };
        if !(cues.short || cues.plain || cues.detailed || form != Form::Paragraphs) {
            continue;
        }
        if rank(form) > rank(style.form) {
            style.form = form;
        }
        style.short |= cues.short;
        style.plain |= cues.plain;
        detailed |= cues.detailed;
        if !style.because.contains(&statement) {
            style.because.push(statement);
        }
    }
    if detailed {
        style.short = false;
    }
    if style.is_default() {
        style.because.clear();
    }
    style
}

fn rank(form: Form) -> u8 {
    match form {
        Form::Paragraphs => 0,
        Form::Bullets => 1,
        Form::Steps => 2,
        Form::Checklist => 3,
    }
}

/// The cues one statement gives, negations applied.
#[derive(Default)]
struct Cues {
    checklist: bool,
    steps: bool,
    bullets: bool,
    short: bool,
    plain: bool,
    detailed: bool,
}

impl Cues {
    fn of(statement: &str) -> Cues {
        let lower = statement.to_lowercase();
        let words: Vec<&str> = lower
            .split(|c: char| !(c.is_alphanumeric() || c == '\''))
            .filter(|w| !w.is_empty())
            .collect();
        let negated = |i: usize| {
            words[i.saturating_sub(NEGATION_REACH)..i]
                .iter()
                .any(|w| NEGATIONS.contains(w))
        };
        let answers = words.iter().any(|w| ANSWER_WORDS.contains(w));
        let mut cues = Cues::default();
        for (i, w) in words.iter().enumerate() {
            let yes = !negated(i);
            match *w {
                "checklist" | "checklists" | "tick" => cues.checklist |= yes,
                "step" | "steps" | "numbered" => cues.steps |= yes,
                "bullet" | "bullets" | "bulleted" => cues.bullets |= yes,
                "short" | "shorter" | "brief" | "concise" => cues.short |= yes && answers,
                "plain" => cues.plain |= yes,
                // "no jargon" is a wish for plain words; "jargon is fine" is not.
                "jargon" => cues.plain |= !yes,
                "detailed" | "thorough" | "in-depth" => cues.detailed |= yes,
                _ => {}
            }
        }
        cues
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(lines: &[(&str, &[&str])]) -> String {
        let mut out = String::from("Domain: hobby — running\n");
        for (header, items) in lines {
            out.push_str(&format!("{header}:\n"));
            for i in *items {
                out.push_str(&format!("- {i}\n"));
            }
        }
        out
    }

    #[test]
    fn a_profile_that_says_short_bullet_points_gives_short_bullets() {
        let p = profile(&[
            ("Emphasize", &["Has knee pain, wants to jog"]),
            (
                "Explanation style",
                &["Wants short bullet points from now on"],
            ),
        ]);
        let style = answer_style(&p, &[]);
        assert_eq!(style.form, Form::Bullets);
        assert!(style.short);
        assert!(!style.plain);
        assert_eq!(style.because, vec!["Wants short bullet points from now on"]);
    }

    #[test]
    fn steps_checklists_and_plain_words_come_from_what_the_user_said() {
        let told = vec![
            "He wants step-by-step numbered instructions he can print and follow.".to_string(),
        ];
        let style = answer_style("", &told);
        assert_eq!(style.form, Form::Steps);
        assert!(!style.short);

        let told = vec![
            "She wants a checklist she can tick off.".to_string(),
            "Please explain it without jargon.".to_string(),
        ];
        let style = answer_style("", &told);
        assert_eq!(style.form, Form::Checklist);
        assert!(style.plain);
        assert_eq!(style.because.len(), 2);
    }

    #[test]
    fn negations_texts_for_others_and_other_criteria_give_no_style() {
        // A negated cue.
        let told = vec!["I want full paragraphs, not bullet points.".to_string()];
        assert!(answer_style("", &told).is_default());
        // Shortening an email is not how they want answers.
        let told = vec!["Wants a shorter email with bullet points".to_string()];
        assert!(answer_style("", &told).is_default());
        // "short timed blocks" under Emphasize is about study sessions.
        let p = profile(&[(
            "Emphasize",
            &["Has ADHD, prefers short timed blocks, body doubling and a visible timer"],
        )]);
        assert!(answer_style(&p, &[]).is_default());
        // A length cue needs something answered: "short" alone is not enough.
        let told = vec!["She likes short runs before her shift.".to_string()];
        assert!(answer_style("", &told).is_default());
        // Jargon welcome is not a wish for plain words.
        let p = profile(&[("Tone", &["Is comfortable with technical jargon in answers"])]);
        assert!(!answer_style(&p, &[]).plain);
    }

    #[test]
    fn detailed_cancels_short_and_the_richer_form_wins() {
        let told = vec![
            "Wants short answers in bullet points.".to_string(),
            "Wants detailed explanations as numbered steps.".to_string(),
        ];
        let style = answer_style("", &told);
        assert_eq!(style.form, Form::Steps);
        assert!(!style.short);
    }
}
