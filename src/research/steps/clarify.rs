//! Clarification (the `clarify` step of docs/architecture.md, "The research loop as steps"):
//! one question per step, so every answer is committed before the next question is asked; then
//! the dialogue summarised into the refined brief.

use crate::research::clarify::{self, ClarifyContext, ClarifySettings};
use crate::research::engine::Run;
use crate::research::events::{Event, Stage};
use crate::research::ResearchError;

impl Run<'_, '_> {
    /// One clarification turn; once the dialogue is over (or off), its summary.
    pub(in crate::research) fn clarify(&mut self) -> Result<(), ResearchError> {
        let max = self.r.settings.clarify_turns as usize;
        let turns = self.s.clarify_turns.len();
        let over = max == 0
            || !self.r.interaction.can_clarify()
            || turns >= max
            || self.s.clarify_turns.last().is_some_and(|t| t.answer.skip);
        if !over {
            // A question asked before a restart is asked again, not proposed anew.
            let question = match self.s.clarify_pending.clone() {
                Some(q) => Some(q),
                None => self.propose_question()?,
            };
            if let Some(question) = question {
                let answer = self.r.interaction.clarify(&question)?;
                self.emit(Event::ClarifyAnswered {
                    turn: question.turn,
                    answer: answer.clone(),
                });
                if !answer.skip && self.s.clarify_turns.len() < max {
                    return Ok(());
                }
            }
        }
        self.summarise_clarification()
    }

    /// The next clarifying question, or `None` when no candidate was worth asking.
    fn propose_question(&mut self) -> Result<Option<clarify::ClarifyQuestion>, ResearchError> {
        let settings = ClarifySettings {
            max_turns: self.r.settings.clarify_turns,
            ..ClarifySettings::default()
        };
        let ctx = ClarifyContext {
            query: &self.s.query,
            profile: &self.s.profile,
            persona_text: &self.s.persona_text,
        };
        let proposal = clarify::propose(
            self.r.llm,
            self.r.embedder,
            &ctx,
            &self.s.clarify_turns,
            &settings,
        )?;
        for c in &proposal.completions {
            self.account(Stage::Clarify, c);
        }
        let mut proposal = proposal;
        if let Some(q) = proposal
            .question
            .as_mut()
            .filter(|_| !self.s.asked.is_empty())
        {
            self.in_the_users_language(q)?;
        }
        if let Some(q) = &proposal.question {
            self.emit(Event::ClarifyAsked {
                question: q.clone(),
                rejected: proposal.rejected.clone(),
            });
        }
        Ok(proposal.question)
    }

    /// A question researched in English is asked in the language the user asked it in: the
    /// clarifying question and its suggested answers are translated (checked; a text whose
    /// translation fails stays in English).
    fn in_the_users_language(
        &mut self,
        question: &mut clarify::ClarifyQuestion,
    ) -> Result<(), ResearchError> {
        let texts: Vec<String> = std::iter::once(question.question.clone())
            .chain(question.options.iter().cloned())
            .collect();
        let (translated, completions) =
            crate::research::report::language::into_language_of(self.r.llm, &self.s.asked, &texts)?;
        for c in &completions {
            self.account(Stage::Clarify, c);
        }
        if translated == texts {
            return Ok(());
        }
        question.in_english = Some(clarify::QuestionWording {
            question: question.question.clone(),
            options: question.options.clone(),
        });
        let mut translated = translated.into_iter();
        if let Some(q) = translated.next() {
            question.question = q;
        }
        question.options = translated.collect();
        Ok(())
    }

    /// The dialogue as the research reads it, for a question researched in English: each
    /// question with the English options the user's choices point at, and an answer the user
    /// wrote in another language put into English (one checked call; kept as written when
    /// its translation fails). The brief and checklist are read by English embeddings, and a
    /// checklist item copied from a French answer matches none of the English findings that
    /// cover it.
    fn turns_in_english(&mut self) -> Result<Vec<clarify::ClarifyTurn>, ResearchError> {
        let mut turns = Vec::with_capacity(self.s.clarify_turns.len());
        for t in self.s.clarify_turns.clone() {
            let mut answer = t.answer.clone();
            let written = answer.text.trim();
            let english = crate::research::report::language::looks_english(written);
            if !self.s.asked.is_empty() && !written.is_empty() && !english {
                let (english, completions) =
                    crate::research::report::language::question_in_english(self.r.llm, written)?;
                for c in &completions {
                    self.account(Stage::Clarify, c);
                }
                if let Some(english) = english {
                    answer.text = english;
                }
            }
            turns.push(clarify::ClarifyTurn {
                question: t.question.as_researched(),
                answer,
            });
        }
        Ok(turns)
    }

    /// Ends the dialogue with the refined brief and checklist (the query itself when nothing
    /// was answered).
    fn summarise_clarification(&mut self) -> Result<(), ResearchError> {
        let answered = self
            .s
            .clarify_turns
            .iter()
            .filter(|t| !t.answer.choices.is_empty() || !t.answer.text.trim().is_empty())
            .count();
        if answered == 0 {
            let brief = self.s.query.clone();
            self.emit(Event::BriefRefined {
                brief,
                checklist: Vec::new(),
                turns: self.s.clarify_turns.len(),
            });
            return Ok(());
        }
        let turns = self.turns_in_english()?;
        let ctx = ClarifyContext {
            query: &self.s.query,
            profile: &self.s.profile,
            persona_text: &self.s.persona_text,
        };
        let (brief, checklist) = match clarify::summarise(self.r.llm, &ctx, &turns) {
            Ok((refined, completion)) => {
                self.account(Stage::Clarify, &completion);
                (refined.brief, refined.checklist)
            }
            // The answers still count: they go into the brief as the user gave them.
            Err(ResearchError::Llm(e)) if e.is_unusable_output() => {
                tracing::warn!("clarification summary unusable: {e}");
                let answers: Vec<String> = turns
                    .iter()
                    .map(|t| t.answer.describe(&t.question))
                    .filter(|a| !a.trim().is_empty())
                    .collect();
                (
                    format!("{} ({})", self.s.query, answers.join("; ")),
                    Vec::new(),
                )
            }
            Err(e) => return Err(e),
        };
        self.emit(Event::BriefRefined {
            brief,
            checklist,
            turns: self.s.clarify_turns.len(),
        });
        Ok(())
    }
}
