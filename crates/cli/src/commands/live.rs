//! The terminal view of a research run: the tree and the todo plan printed as they change, a
//! spinner on the current step, and the session's `todo.md` kept up to date.

use std::path::PathBuf;

use indicatif::{ProgressBar, ProgressStyle};
use rudder::research::{Envelope, Event, ResearchState, TaskStatus};

use super::one_line;

pub fn spinner(message: &str) -> ProgressBar {
    let bar = ProgressBar::new_spinner().with_style(
        ProgressStyle::with_template("{spinner} {msg} {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar.set_message(message.to_string());
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    bar
}

/// Prints the tree and the todo plan as they change, keeps a spinner on the current step, and
/// keeps the session's `todo.md` up to date.
pub struct Live {
    pub bar: ProgressBar,
    quiet: bool,
    /// The run's state, folded from the events shown (for the todo plan).
    state: ResearchState,
    todo_path: PathBuf,
    todo_version: u64,
}

impl Live {
    pub fn new(quiet: bool, todo_path: PathBuf, log: &[Envelope]) -> Self {
        let bar = if quiet {
            ProgressBar::hidden()
        } else {
            spinner("starting")
        };
        let state = ResearchState::fold(log);
        Self {
            bar,
            quiet,
            todo_version: state.todo.version,
            state,
            todo_path,
        }
    }

    /// Where the session's `todo.md` lives, once the session is stored.
    pub fn set_todo_path(&mut self, path: PathBuf) {
        self.todo_path = path;
    }

    fn line(&self, text: String) {
        if self.quiet {
            return;
        }
        // A hidden bar (stderr is not a terminal) swallows println: write the line directly.
        if self.bar.is_hidden() {
            eprintln!("{text}");
        } else {
            self.bar.println(text);
        }
    }

    pub fn show(&mut self, envelope: &Envelope) {
        self.state.apply(envelope);
        let event = &envelope.event;
        match event {
            Event::Started {
                sources,
                model,
                remote_sources,
                ..
            } => {
                self.line(format!(
                    "researching over {} with {model}{}",
                    sources.join(" + "),
                    if *remote_sources {
                        " (web search on)"
                    } else {
                        ""
                    }
                ));
                self.bar.set_message("thinking of a clarifying question");
            }
            Event::ClarifyAsked { .. } => self.bar.set_message("waiting for your answer"),
            Event::BriefRefined { brief, turns, .. } => {
                if *turns > 0 {
                    self.line(format!("brief: {}", one_line(brief, 200)));
                }
                self.bar
                    .set_message("inferring what you expect the report to cover");
            }
            Event::PersonaSeeded {
                persona, guessed, ..
            } => {
                // Guessed items steer the research; the report does not call them the user's.
                self.line(
                    if !guessed.is_empty() && guessed.len() == persona.checklist.len() {
                        "checklist (guessed from the question):".into()
                    } else {
                        "checklist:".into()
                    },
                );
                for item in &persona.checklist {
                    self.line(format!("  - {}", one_line(item, 110)));
                }
            }
            Event::NodeStarted { id } => {
                self.bar.set_message(format!("researching [{id}]"));
            }
            Event::NodeAdded {
                id,
                depth,
                question,
                ..
            } => {
                self.line(format!(
                    "{}[{id}] {}",
                    "  ".repeat(*depth as usize),
                    one_line(question, 110)
                ));
            }
            Event::NodeResearched {
                id,
                learnings,
                evidence,
                tags,
                ..
            } => {
                self.line(format!(
                    "    ✓ [{id}] {learnings} learnings from {evidence} passages; tags: {}",
                    tags.join(", ")
                ));
                self.bar.set_message("planning the next step");
            }
            Event::PauseDecided {
                node,
                decision,
                asked,
                ..
            } => {
                self.line(format!(
                    "    ? at [{node}] {}{}",
                    decision.explain(),
                    if decision.ask && !asked {
                        " — not asking (asking is off)"
                    } else {
                        ""
                    }
                ));
            }
            Event::Question { .. } => self.bar.set_message("waiting for your answer"),
            Event::PersonaUpdated {
                added_text,
                added_items,
                ..
            } => {
                if !added_text.is_empty() {
                    self.line(format!("    persona: + {}", one_line(added_text, 110)));
                }
                for item in added_items {
                    self.line(format!("    checklist: + {}", one_line(item, 110)));
                }
            }
            Event::TaskAdded { task } => {
                self.line(format!(
                    "    todo + #{} (p{}, {}) {}",
                    task.id,
                    task.priority,
                    task.provenance.as_str(),
                    one_line(&task.text, 100)
                ));
            }
            Event::TaskUpdated {
                id,
                status,
                priority,
                note,
            } => {
                // Start and completion show as the node's own lines; the rest is news.
                let shown = match (status, priority) {
                    (Some(TaskStatus::Canceled), _) => Some("canceled".to_string()),
                    (_, Some(p)) => Some(format!("priority {p}")),
                    _ => None,
                };
                if let Some(what) = shown {
                    self.line(format!(
                        "    todo #{id} {what}{}",
                        if note.is_empty() {
                            String::new()
                        } else {
                            format!(" ({})", one_line(note, 100))
                        }
                    ));
                }
            }
            Event::SteeringApplied { messages, summary } => {
                self.line(format!(
                    "steering: applied {} message{}: {}",
                    messages.len(),
                    if messages.len() == 1 { "" } else { "s" },
                    one_line(summary, 160)
                ));
            }
            Event::DirectivesAdded { exclusions, focus } => {
                for x in exclusions {
                    self.line(format!("    leaving out: {}", one_line(x, 100)));
                }
                for f in focus {
                    self.line(format!("    focusing on: {}", one_line(f, 100)));
                }
            }
            Event::Reflected {
                level,
                knowledge_gaps,
                ..
            } => {
                if let Some(l) = level {
                    self.line(format!(
                        "reflected on level {l}: {} knowledge gap{}",
                        knowledge_gaps.len(),
                        if knowledge_gaps.len() == 1 { "" } else { "s" }
                    ));
                }
                let todo = &self.state.todo;
                self.line(format!(
                    "todo (version {}): {} pending, {} completed, {} canceled — {}",
                    todo.version,
                    todo.count(TaskStatus::Pending),
                    todo.count(TaskStatus::Completed),
                    todo.count(TaskStatus::Canceled),
                    self.todo_path.display()
                ));
                self.bar.set_message("planning the next step");
            }
            Event::ReportSection { heading, .. } => {
                self.line(format!("report: section “{}”", one_line(heading, 90)));
                self.bar.set_message("writing the report");
            }
            _ => {}
        }
        if self.state.todo.version != self.todo_version && !self.todo_path.as_os_str().is_empty() {
            self.todo_version = self.state.todo.version;
            // todo.md follows the plan; a write error only loses the live copy.
            let _ = std::fs::write(
                &self.todo_path,
                self.state.todo.render_markdown(&self.state.query),
            );
        }
        if matches!(
            event,
            Event::NodeResearched { .. } | Event::PauseDecided { .. }
        ) {
            self.bar.tick();
        }
    }
}
