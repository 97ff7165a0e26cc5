//! How a run asks the person at the window: through a channel. The question reaches the
//! window as an event, and the reply comes back from the `research_reply` command.

use crate::research::clarify::{ClarifyAnswer, ClarifyQuestion};
use crate::research::{Interaction, PauseAnswer, PauseQuestion, ResearchError};
use serde::{Deserialize, Serialize};

/// A reply from a user interface to the question the loop is waiting on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Reply {
    Pause(PauseAnswer),
    Clarify(ClarifyAnswer),
}

/// Asks through a channel, for a window: the question reaches the user as an event
/// ([`crate::research::Event::Question`], [`crate::research::Event::ClarifyAsked`]) just before the loop waits,
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
