//! How the loop asks the user when the pause rule says so: in the terminal, from a file of
//! scripted answers (tests, evaluation), or never.

use std::io::{BufRead, Write};
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

/// A reply from a user interface to the question the loop is waiting on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Reply {
    Pause(PauseAnswer),
    Clarify(ClarifyAnswer),
}

/// Asks through a channel, for a window: the question reaches the user as an event
/// ([`super::Event::Question`], [`super::Event::ClarifyAsked`]) just before the loop waits,
/// and the user's reply comes back on `replies`. When the sending side is gone (the window
/// closed), asking fails and the run stops after its last committed step, ready to resume.
pub struct ChannelInteraction {
    replies: std::sync::mpsc::Receiver<Reply>,
}

impl ChannelInteraction {
    /// The interaction and the sender a user interface answers with.
    pub fn new() -> (Self, std::sync::mpsc::Sender<Reply>) {
        let (tx, rx) = std::sync::mpsc::channel();
        (Self { replies: rx }, tx)
    }

    fn next(&mut self) -> Result<Reply, ResearchError> {
        self.replies.recv().map_err(|_| {
            ResearchError::Interaction("nobody is left to answer (the window closed)".into())
        })
    }
}

impl Interaction for ChannelInteraction {
    fn can_clarify(&self) -> bool {
        true
    }

    fn clarify(&mut self, question: &ClarifyQuestion) -> Result<ClarifyAnswer, ResearchError> {
        loop {
            match self.next()? {
                Reply::Clarify(mut a) => {
                    a.choices.retain(|&c| c >= 1 && c <= question.options.len());
                    return Ok(a);
                }
                // An answer to a pause that is not being asked: stale, ignore it.
                Reply::Pause(_) => continue,
            }
        }
    }

    fn ask(&mut self, _question: &PauseQuestion) -> Result<PauseAnswer, ResearchError> {
        loop {
            match self.next()? {
                Reply::Pause(a) => return Ok(a),
                Reply::Clarify(_) => continue,
            }
        }
    }
}

/// Asks at the terminal: prints the question and reads lines until an empty line.
pub struct Terminal<R: BufRead, W: Write> {
    input: R,
    output: W,
}

impl Terminal<std::io::StdinLock<'static>, std::io::Stderr> {
    pub fn stdio() -> Self {
        Self {
            input: std::io::stdin().lock(),
            output: std::io::stderr(),
        }
    }
}

impl<R: BufRead, W: Write> Terminal<R, W> {
    pub fn new(input: R, output: W) -> Self {
        Self { input, output }
    }
}

impl<R: BufRead, W: Write> Interaction for Terminal<R, W> {
    fn can_clarify(&self) -> bool {
        true
    }

    fn clarify(&mut self, question: &ClarifyQuestion) -> Result<ClarifyAnswer, ResearchError> {
        let io = |e: std::io::Error| ResearchError::Interaction(e.to_string());
        writeln!(self.output, "\n{}", question.render()).map_err(io)?;
        let mut line = String::new();
        self.input.read_line(&mut line).map_err(io)?;
        Ok(ClarifyAnswer::parse(&line, question))
    }

    fn ask(&mut self, question: &PauseQuestion) -> Result<PauseAnswer, ResearchError> {
        let io = |e: std::io::Error| ResearchError::Interaction(e.to_string());
        writeln!(self.output, "\n{}\n({})", question.render(), question.why).map_err(io)?;
        writeln!(
            self.output,
            "Your answer (an empty line ends it; just Enter goes on with all):"
        )
        .map_err(io)?;
        let mut reply = String::new();
        loop {
            let mut line = String::new();
            if self.input.read_line(&mut line).map_err(io)? == 0 || line.trim().is_empty() {
                break;
            }
            reply.push_str(&line);
        }
        Ok(PauseAnswer::parse(&reply))
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

    #[test]
    fn a_closed_window_stops_asking_and_stale_replies_are_skipped() {
        let q = PauseQuestion {
            node: 0,
            introduction: "Which way?".into(),
            directions: vec!["A".into(), "B".into()],
            questions: vec!["a?".into(), "b?".into()],
            why: "ask".into(),
        };
        let (mut interaction, tx) = ChannelInteraction::new();
        tx.send(Reply::Clarify(ClarifyAnswer::default())).unwrap();
        tx.send(Reply::Pause(PauseAnswer::parse("2"))).unwrap();
        assert_eq!(interaction.ask(&q).unwrap().chosen, vec![2]);
        drop(tx);
        assert!(matches!(
            interaction.ask(&q),
            Err(ResearchError::Interaction(m)) if m.contains("window closed")
        ));
    }

    #[test]
    fn terminal_reads_until_blank_line() {
        let input = b"2\n\nignored\n".as_slice();
        let mut out = Vec::new();
        let q = PauseQuestion {
            node: 0,
            introduction: "Which way?".into(),
            directions: vec!["A".into(), "B".into()],
            questions: vec!["a?".into(), "b?".into()],
            why: "ask".into(),
        };
        let a = Terminal::new(input, &mut out).ask(&q).unwrap();
        assert_eq!(a.chosen, vec![2]);
        let shown = String::from_utf8(out).unwrap();
        assert!(shown.contains("2. B"), "{shown}");
    }
}
