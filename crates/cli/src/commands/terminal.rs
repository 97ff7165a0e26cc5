//! How `rudder research` asks at the terminal: the question on stderr, the answer from stdin.

use std::io::{BufRead, Write};

use rudder::clarify::{ClarifyAnswer, ClarifyQuestion};
use rudder::research::{Interaction, PauseAnswer, PauseQuestion, ResearchError};

/// Asks at the terminal: prints the question and reads lines until an empty line.
pub struct Terminal<R: BufRead, W: Write> {
    input: R,
    output: W,
}

impl Terminal<std::io::StdinLock<'static>, std::io::Stderr> {
    pub fn stdio() -> Self {
        Self::new(std::io::stdin().lock(), std::io::stderr())
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
