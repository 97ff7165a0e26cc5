//! How the loop asks the user when the pause rule says so: in the terminal, from a file of
//! scripted answers (tests, evaluation), or never.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::clarify::{ClarifyAnswer, ClarifyQuestion};
use super::ResearchError;

/// A pause question: the candidate directions as numbered one-sentence summaries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct PauseQuestion {
    /// The frontier node the directions would grow from.
    pub node: usize,
    pub introduction: String,
    /// One-sentence summaries, shown numbered from 1.
    pub directions: Vec<String>,
    /// The underlying follow-up questions, in the same order.
    pub questions: Vec<String>,
    /// Why the system asked, with its numbers.
    pub why: String,
}

impl PauseQuestion {
    /// The question as the user reads it.
    pub fn render(&self) -> String {
        let mut out = format!("{}\n", self.introduction.trim());
        for (i, d) in self.directions.iter().enumerate() {
            out.push_str(&format!("  {}. {}\n", i + 1, d.trim()));
        }
        out.push_str(
            "To select directions, type their numbers (e.g. \"1, 3\"). To suggest new ones, \
             write \"New follow-up questions:\" and then one question per line.",
        );
        out
    }
}

/// The user's answer to a pause.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct PauseAnswer {
    /// Chosen directions, numbered from 1.
    #[serde(default)]
    pub chosen: Vec<usize>,
    /// New follow-up questions to research as well.
    #[serde(default)]
    pub new_questions: Vec<String>,
    /// Anything else the user said.
    #[serde(default)]
    pub text: String,
}

impl PauseAnswer {
    /// Parses a free-form reply: numbers anywhere on the lines before `New follow-up
    /// questions:` select directions; each non-empty line after it is a new question; other
    /// words are kept as free text.
    pub fn parse(reply: &str) -> Self {
        let mut answer = Self::default();
        let mut in_new = false;
        let mut text = Vec::new();
        for line in reply.lines() {
            let trimmed = line.trim();
            let lower = trimmed.to_lowercase();
            if let Some(pos) = lower.find("new follow-up questions:") {
                in_new = true;
                let rest = trimmed[pos + "new follow-up questions:".len()..].trim();
                if !rest.is_empty() {
                    answer.new_questions.push(rest.to_string());
                }
                continue;
            }
            if in_new {
                let q = trimmed.trim_start_matches(['-', '*', '•']).trim();
                if !q.is_empty() {
                    answer.new_questions.push(q.to_string());
                }
                continue;
            }
            let mut words = Vec::new();
            for token in trimmed.split([',', ' ', ';', '\t']) {
                let t = token.trim().trim_end_matches('.');
                if t.is_empty() {
                    continue;
                }
                match t.parse::<usize>() {
                    Ok(n) if n > 0 => {
                        if !answer.chosen.contains(&n) {
                            answer.chosen.push(n);
                        }
                    }
                    _ => words.push(token.trim()),
                }
            }
            if !words.is_empty() {
                text.push(words.join(" "));
            }
        }
        answer.text = text.join("\n");
        answer
    }

    /// Whether the user said nothing at all (then the loop goes on with every direction).
    pub fn is_empty(&self) -> bool {
        self.chosen.is_empty() && self.new_questions.is_empty() && self.text.trim().is_empty()
    }

    /// The answer in words, for the persona update: which directions were chosen (by their
    /// summaries), which were added, and what else was said.
    pub fn describe(&self, question: &PauseQuestion) -> String {
        let mut out = String::new();
        let chosen: Vec<&str> = self
            .chosen
            .iter()
            .filter_map(|&n| {
                question
                    .directions
                    .get(n.wrapping_sub(1))
                    .map(String::as_str)
            })
            .collect();
        if !chosen.is_empty() {
            out.push_str("Selected directions:\n");
            for c in &chosen {
                out.push_str(&format!("- {c}\n"));
            }
        }
        let skipped: Vec<&str> = question
            .directions
            .iter()
            .enumerate()
            .filter(|(i, _)| !self.chosen.contains(&(i + 1)))
            .map(|(_, d)| d.as_str())
            .collect();
        if !chosen.is_empty() && !skipped.is_empty() {
            out.push_str("Not selected:\n");
            for s in &skipped {
                out.push_str(&format!("- {s}\n"));
            }
        }
        if !self.new_questions.is_empty() {
            out.push_str("New follow-up questions:\n");
            for q in &self.new_questions {
                out.push_str(&format!("- {q}\n"));
            }
        }
        if !self.text.trim().is_empty() {
            out.push_str(&format!("Comment: {}\n", self.text.trim()));
        }
        out
    }
}

/// Something that can answer pause questions and, before research, clarifying ones.
pub trait Interaction {
    /// Whether asking is possible at all; when not, the rule is still evaluated and logged but
    /// the loop goes on.
    fn can_ask(&self) -> bool {
        true
    }
    fn ask(&mut self, question: &PauseQuestion) -> Result<PauseAnswer, ResearchError>;
    /// Whether clarifying questions can be asked before research.
    fn can_clarify(&self) -> bool {
        false
    }
    /// Asks a clarifying question; the default skips clarification.
    fn clarify(&mut self, _question: &ClarifyQuestion) -> Result<ClarifyAnswer, ResearchError> {
        Ok(ClarifyAnswer {
            skip: true,
            ..ClarifyAnswer::default()
        })
    }
    /// A resumed run tells how many pause and clarification answers its log already holds,
    /// so scripted answers continue where they were.
    fn resume(&mut self, _pauses: usize, _clarifications: usize) {}
}

/// Never asks: the loop runs on its own.
#[derive(Debug, Default)]
pub struct NeverAsk;

impl Interaction for NeverAsk {
    fn can_ask(&self) -> bool {
        false
    }
    fn ask(&mut self, _question: &PauseQuestion) -> Result<PauseAnswer, ResearchError> {
        Ok(PauseAnswer::default())
    }
}

/// Answers from a list, in order. When the list runs out it answers with nothing (go on with
/// every direction) and counts it, so a script that is too short is visible but not fatal.
/// Clarifying questions are answered from their own list; without one, clarification is off.
#[derive(Debug, Default)]
pub struct Scripted {
    answers: std::collections::VecDeque<PauseAnswer>,
    clarifications: Option<std::collections::VecDeque<ScriptedClarification>>,
    pub asked: Vec<PauseQuestion>,
    pub clarify_asked: Vec<ClarifyQuestion>,
    pub exhausted: usize,
}

/// A scripted reply to a clarifying question: as typed, or structured.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum ScriptedClarification {
    Reply(String),
    Structured(ClarifyAnswer),
}

/// The answers file: a list of pause answers, or both lists.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum ScriptFile {
    Pauses(Vec<ScriptedAnswer>),
    Both {
        #[serde(default)]
        clarify: Vec<ScriptedClarification>,
        #[serde(default)]
        pauses: Vec<ScriptedAnswer>,
    },
}

/// One scripted answer in a file: either the structured form or a reply as a user would type it.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum ScriptedAnswer {
    Reply(String),
    Structured(PauseAnswer),
}

impl Scripted {
    pub fn new(answers: Vec<PauseAnswer>) -> Self {
        Self {
            answers: answers.into(),
            ..Self::default()
        }
    }

    /// Also answers clarifying questions, from `replies` in order ("skip" ends the dialogue).
    pub fn with_clarifications(mut self, replies: Vec<ScriptedClarification>) -> Self {
        self.clarifications = Some(replies.into());
        self
    }

    /// Reads a JSON array of answers: objects `{"chosen": [1, 3], "new_questions": [...],
    /// "text": "..."}` or strings typed as at the terminal (`"1, 3\nNew follow-up questions:
    /// ..."`).
    pub fn from_file(path: &Path) -> Result<Self, ResearchError> {
        let text = std::fs::read_to_string(path).map_err(|e| ResearchError::Input {
            path: PathBuf::from(path),
            message: e.to_string(),
        })?;
        let file: ScriptFile = serde_json::from_str(&text).map_err(|e| ResearchError::Input {
            path: PathBuf::from(path),
            message: format!(
                "line {}, column {}: expected a JSON array of answers, or an object with \
                 \"clarify\" and \"pauses\" arrays: {e}",
                e.line(),
                e.column()
            ),
        })?;
        let (clarify, raw) = match file {
            ScriptFile::Pauses(p) => (None, p),
            ScriptFile::Both { clarify, pauses } => (Some(clarify), pauses),
        };
        let mut scripted = Self::new(
            raw.into_iter()
                .map(|a| match a {
                    ScriptedAnswer::Reply(s) => PauseAnswer::parse(&s),
                    ScriptedAnswer::Structured(a) => a,
                })
                .collect(),
        );
        scripted.clarifications = clarify.map(Into::into);
        Ok(scripted)
    }
}

impl Interaction for Scripted {
    fn can_clarify(&self) -> bool {
        self.clarifications.is_some()
    }

    fn clarify(&mut self, question: &ClarifyQuestion) -> Result<ClarifyAnswer, ResearchError> {
        self.clarify_asked.push(question.clone());
        Ok(
            match self.clarifications.as_mut().and_then(|c| c.pop_front()) {
                Some(ScriptedClarification::Reply(r)) => ClarifyAnswer::parse(&r, question),
                Some(ScriptedClarification::Structured(a)) => a,
                None => ClarifyAnswer {
                    skip: true,
                    ..ClarifyAnswer::default()
                },
            },
        )
    }

    fn resume(&mut self, pauses: usize, clarifications: usize) {
        for _ in 0..pauses {
            self.answers.pop_front();
        }
        if let Some(c) = self.clarifications.as_mut() {
            for _ in 0..clarifications {
                c.pop_front();
            }
        }
    }

    fn ask(&mut self, question: &PauseQuestion) -> Result<PauseAnswer, ResearchError> {
        self.asked.push(question.clone());
        Ok(match self.answers.pop_front() {
            Some(a) => a,
            None => {
                self.exhausted += 1;
                tracing::warn!(
                    "scripted answers ran out at pause {}; going on with every direction",
                    self.asked.len()
                );
                PauseAnswer::default()
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_numbers_new_questions_and_text() {
        let a = PauseAnswer::parse(
            "1, 3 please\nNew follow-up questions:\n- What about cost?\nAnd safety?",
        );
        assert_eq!(a.chosen, vec![1, 3]);
        assert_eq!(a.new_questions, vec!["What about cost?", "And safety?"]);
        assert_eq!(a.text, "please");
        assert!(PauseAnswer::parse("  \n").is_empty());
    }
}
