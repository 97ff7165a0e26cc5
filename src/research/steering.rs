//! Steering (EDR §3.4): messages the user sends while research runs. They are persisted the
//! moment they arrive (by whoever holds the session's [`Journal`]), and the loop applies
//! every message queued at a step boundary in one reflection, marking them applied in the same
//! commit as the events that apply them — so each is applied exactly once, and none is lost
//! even if the process dies. A message that arrives during reflection is not in that
//! reflection's snapshot and waits for the next boundary.
//!
//! Exclusions ("ignore X") and focus directives ("focus on Y") outlive the message: planning
//! drops follow-ups about excluded topics, retrieval drops excluded passages and ranks focused
//! ones first, and the report leaves excluded findings out.

use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::events::Envelope;
use super::ResearchError;
use crate::sources::Evidence;

/// A queued steering message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(rename = "SteeringMessage"))]
pub struct Message {
    pub id: i64,
    pub text: String,
    #[cfg_attr(feature = "ts", ts(type = "string"))]
    pub received_at: DateTime<Utc>,
}

/// Where a run's events are committed and its steering messages queue.
pub trait Journal {
    /// Commits one step's events, and marks the steering messages `applied` as applied by
    /// them, atomically.
    fn commit(&mut self, events: &[Envelope], applied: &[i64]) -> Result<(), ResearchError>;
    /// Messages queued and not yet applied, oldest first.
    fn pending_steering(&mut self) -> Result<Vec<Message>, ResearchError>;
    /// Commits the last events and closes the session, unless a steering message is pending:
    /// then nothing is written and the result is `false`.
    fn finish(&mut self, events: &[Envelope], applied: &[i64]) -> Result<bool, ResearchError>;
}

#[derive(Debug, Default)]
struct MemoryInner {
    events: Vec<Envelope>,
    queue: Vec<(Message, Option<u64>)>,
    finished: bool,
    next_id: i64,
}

/// A journal in memory: the session lives as long as the process. Clones share it, so one
/// clone can steer from another thread while the loop runs with another.
#[derive(Debug, Clone, Default)]
pub struct MemoryJournal(Arc<Mutex<MemoryInner>>);

impl MemoryJournal {
    pub fn new() -> Self {
        Self::default()
    }

    /// Queues a steering message; refused once the run has finished.
    pub fn steer(&self, text: &str) -> Result<Message, ResearchError> {
        let mut inner = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if inner.finished {
            return Err(ResearchError::Steering(
                "the research has already finished".into(),
            ));
        }
        if text.trim().is_empty() {
            return Err(ResearchError::Steering("the message is empty".into()));
        }
        inner.next_id += 1;
        let message = Message {
            id: inner.next_id,
            text: text.trim().to_string(),
            received_at: Utc::now(),
        };
        inner.queue.push((message.clone(), None));
        Ok(message)
    }

    /// Everything committed so far.
    pub fn events(&self) -> Vec<Envelope> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .events
            .clone()
    }

    /// Every message with the seq of the event that applied it.
    pub fn steering(&self) -> Vec<(Message, Option<u64>)> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .queue
            .clone()
    }

    fn write(
        &self,
        events: &[Envelope],
        applied: &[i64],
        finish: bool,
    ) -> Result<bool, ResearchError> {
        let mut inner = self.0.lock().unwrap_or_else(|e| e.into_inner());
        // Exactly once: a message already applied (or unknown) refuses the whole write.
        for id in applied {
            match inner.queue.iter().find(|(m, _)| m.id == *id) {
                Some((_, None)) => {}
                Some((_, Some(seq))) => {
                    return Err(ResearchError::Steering(format!(
                        "steering message {id} was already applied by event {seq}"
                    )))
                }
                None => return Err(ResearchError::Steering(format!("no steering message {id}"))),
            }
        }
        let waiting = inner
            .queue
            .iter()
            .any(|(m, s)| s.is_none() && !applied.contains(&m.id));
        if finish && waiting {
            return Ok(false);
        }
        // Applied messages always come with the events that apply them.
        let last = events.last().map(|e| e.seq).unwrap_or_default();
        for (m, seq) in inner.queue.iter_mut() {
            if applied.contains(&m.id) {
                *seq = Some(last);
            }
        }
        inner.events.extend_from_slice(events);
        inner.finished |= finish;
        Ok(true)
    }
}

impl Journal for MemoryJournal {
    fn commit(&mut self, events: &[Envelope], applied: &[i64]) -> Result<(), ResearchError> {
        self.write(events, applied, false).map(|_| ())
    }

    fn pending_steering(&mut self) -> Result<Vec<Message>, ResearchError> {
        Ok(self
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .queue
            .iter()
            .filter(|(_, s)| s.is_none())
            .map(|(m, _)| m.clone())
            .collect())
    }

    fn finish(&mut self, events: &[Envelope], applied: &[i64]) -> Result<bool, ResearchError> {
        self.write(events, applied, true)
    }
}

/// Standing instructions from steering.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Directives {
    /// Topics to leave out ("ignore X").
    pub exclusions: Vec<String>,
    /// Topics to emphasise ("focus on Y").
    pub focus: Vec<String>,
}

impl Directives {
    pub fn is_empty(&self) -> bool {
        self.exclusions.is_empty() && self.focus.is_empty()
    }

    /// Adds new directives (case-insensitively deduplicated); returns those that were new.
    pub fn extend(&mut self, exclusions: &[String], focus: &[String]) -> Directives {
        let mut added = Directives::default();
        for (list, new, out) in [
            (&mut self.exclusions, exclusions, &mut added.exclusions),
            (&mut self.focus, focus, &mut added.focus),
        ] {
            for item in new {
                let item = super::tree::one_line(item, 100);
                let lower = item.to_lowercase();
                // "religion" adds nothing to "the Reformation and religion" (and vice versa
                // the longer one would only repeat the shorter).
                if item.is_empty()
                    || list.iter().any(|x| {
                        let x = x.to_lowercase();
                        x.contains(&lower) || lower.contains(&x)
                    })
                {
                    continue;
                }
                list.push(item.clone());
                out.push(item);
            }
        }
        added
    }

    /// The directives as prompt text ("" when there are none).
    pub fn prompt_text(&self) -> String {
        let mut out = String::new();
        if !self.focus.is_empty() {
            out.push_str(&format!("Focus on: {}.\n", self.focus.join("; ")));
        }
        if !self.exclusions.is_empty() {
            out.push_str(&format!(
                "Leave out entirely (do not research or mention): {}.\n",
                self.exclusions.join("; ")
            ));
        }
        out
    }

    /// Whether `text` is about an excluded topic: it contains every significant word of
    /// some exclusion.
    pub fn excludes(&self, text: &str) -> bool {
        let words = words(text);
        self.exclusions.iter().any(|x| {
            let need = words_of(x);
            !need.is_empty() && need.iter().all(|w| words.iter().any(|t| stem_eq(t, w)))
        })
    }

    /// How many focus words `text` contains.
    pub fn focus_score(&self, text: &str) -> usize {
        let words = words(text);
        self.focus
            .iter()
            .flat_map(|f| words_of(f))
            .filter(|w| words.iter().any(|t| stem_eq(t, w)))
            .count()
    }

    /// Retrieval under the directives: excluded passages dropped, focused ones first (stable,
    /// so the sources' ranking decides among equals), at most `limit`.
    pub fn filter_evidence(&self, evidence: Vec<Evidence>, limit: usize) -> Vec<Evidence> {
        let mut kept: Vec<(usize, Evidence)> = evidence
            .into_iter()
            .filter(|e| !self.excludes(&format!("{} {}", e.title, e.text)))
            .map(|e| (self.focus_score(&format!("{} {}", e.title, e.text)), e))
            .collect();
        kept.sort_by_key(|k| std::cmp::Reverse(k.0));
        kept.into_iter().take(limit).map(|(_, e)| e).collect()
    }
}

/// Whether a directive the model proposed is grounded in what the user wrote: every
/// significant word of an exclusion (`all`) or some word of a focus directive appears in the
/// messages. A small model that invents "exclude tea" must not wipe out the research.
pub fn grounded(directive: &str, messages: &str, all: bool) -> bool {
    let said = words(messages);
    let need = words_of(directive);
    let found = |w: &String| said.iter().any(|t| stem_eq(t, w));
    !need.is_empty()
        && if all {
            need.iter().all(found)
        } else {
            need.iter().any(found)
        }
}

const STOP_WORDS: &[&str] = &[
    "the", "and", "for", "with", "about", "any", "all", "its", "their", "this", "that", "from",
    "into", "more", "less", "only", "please", "also", "stuff", "things", "anything", "topic",
    "topics",
];

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// The words that carry meaning in a directive.
fn words_of(directive: &str) -> Vec<String> {
    words(directive)
        .into_iter()
        .filter(|w| w.chars().count() > 2 && !STOP_WORDS.contains(&w.as_str()))
        .collect()
}

/// Equal up to an ending: a plural `s` ("prices", "price"), or a shared stem of at least six
/// letters that leaves the shorter word at most one more ("economy", "economics"; "history",
/// "historical") — but not "community" and "communication".
fn stem_eq(a: &str, b: &str) -> bool {
    if a == b || a.strip_suffix('s') == Some(b) || b.strip_suffix('s') == Some(a) {
        return true;
    }
    let common = a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
    let shorter = a.chars().count().min(b.chars().count());
    common >= 6 && shorter - common <= 1
}

/// What a message says in the common phrasings, read without a model so that simple steering
/// works even when a small model's reflection misses it: "ignore/skip/exclude/no X",
/// "focus on/prioritise/emphasise X", "also/add/research/look into X".
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ParsedMessage {
    pub exclusions: Vec<String>,
    pub focus: Vec<String>,
    pub tasks: Vec<String>,
}

pub fn parse_message(text: &str) -> ParsedMessage {
    let mut out = ParsedMessage::default();
    for clause in text.split(['.', ';', '\n']) {
        let clause = clause.trim();
        let lower = clause.to_lowercase();
        let strip = |prefixes: &[&str]| {
            prefixes.iter().find_map(|p| {
                lower
                    .strip_prefix(p)
                    .map(|_| clause[p.len()..].trim().trim_end_matches(['!', '?']).trim())
                    .filter(|rest| !rest.is_empty())
                    .map(str::to_string)
            })
        };
        if let Some(x) = strip(&[
            "ignore ",
            "skip ",
            "exclude ",
            "leave out ",
            "drop ",
            "don't research ",
            "do not research ",
            "no more ",
            "stop researching ",
            "forget about ",
        ]) {
            out.exclusions.push(x);
        } else if let Some(x) = strip(&[
            "focus on ",
            "focus more on ",
            "prioritise ",
            "prioritize ",
            "emphasise ",
            "emphasize ",
            "concentrate on ",
        ]) {
            out.focus.push(x);
        } else if let Some(x) = strip(&[
            "also look into ",
            "also look at ",
            "also research ",
            "look into ",
            "research ",
            "add ",
            "add: ",
            "also cover ",
            "cover ",
            "find out ",
            "what about ",
        ]) {
            out.tasks.push(x);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::CitationTarget;

    fn ev(title: &str, text: &str) -> Evidence {
        Evidence {
            target: CitationTarget::Web {
                url: format!("https://x/{title}"),
            },
            title: title.into(),
            text: text.into(),
            score: 1.0,
        }
    }

    #[test]
    fn parses_common_phrasings() {
        let p = parse_message(
            "Ignore the price. Focus on safety for children; also look into green tea",
        );
        assert_eq!(p.exclusions, ["the price"]);
        assert_eq!(p.focus, ["safety for children"]);
        assert_eq!(p.tasks, ["green tea"]);
        assert_eq!(
            parse_message("thanks, looks good"),
            ParsedMessage::default()
        );
    }

    #[test]
    fn model_directives_must_come_from_the_messages() {
        let said = "Please ignore anything about caffeine; focus on water quality";
        assert!(grounded("caffeine", said, true));
        assert!(grounded("Caffeine content", said, false));
        assert!(!grounded("tea", said, true));
        assert!(!grounded("new_checklist_items", said, true));
        assert!(grounded("hard water", said, false));
    }

    #[test]
    fn exclusions_and_focus_shape_retrieval() {
        let mut d = Directives::default();
        let added = d.extend(&["prices".into()], &["brewing temperature".into()]);
        assert_eq!(added.exclusions, ["prices"]);
        // Already there: nothing new.
        assert!(d.extend(&["Prices".into()], &[]).exclusions.is_empty());
        assert!(d.excludes("The price of tea"));
        let mut e = Directives::default();
        e.extend(&["economics".into()], &[]);
        assert!(e.excludes("The effects of the printing press on the economy"));
        assert!(!e.excludes("Ecology of forests"));
        assert!(stem_eq("history", "historical"));
        assert!(!stem_eq("community", "communication"));
        assert!(!d.excludes("Tea culture"));
        let kept = d.filter_evidence(
            vec![
                ev("a", "Tea markets and their price."),
                ev("b", "Tea culture in China."),
                ev("c", "Brewing at the right temperature."),
            ],
            5,
        );
        let titles: Vec<&str> = kept.iter().map(|e| e.title.as_str()).collect();
        assert_eq!(titles, ["c", "b"]);
        assert!(d.prompt_text().contains("Leave out entirely"));
    }

    #[test]
    fn memory_journal_applies_each_message_once_and_refuses_to_finish_with_a_queue() {
        let mut j = MemoryJournal::new();
        let m = j.steer("focus on cost").unwrap();
        assert_eq!(j.pending_steering().unwrap().len(), 1);
        assert!(!j.finish(&[], &[]).unwrap());
        let applied = Envelope {
            seq: 0,
            at: Utc::now(),
            event: super::super::Event::NodeStarted { id: 0 },
        };
        assert!(j.finish(std::slice::from_ref(&applied), &[m.id]).unwrap());
        assert_eq!(j.steering()[0].1, Some(0));
        // Applying it again is refused, not silently repeated.
        assert!(j.commit(&[applied], &[m.id]).is_err());
        assert!(j.pending_steering().unwrap().is_empty());
        assert!(j.steer("too late").is_err());
    }
}
