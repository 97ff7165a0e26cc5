//! Which step comes next: a pure function of the folded state, the settings and the steering
//! messages waiting, so a resumed run picks up exactly where the last committed step left it.
//!
//! The order: start, clarify (turn by turn until the brief is refined), seed; then, at every
//! boundary, queued steering first; then the tree breadth first — a level is investigated, then
//! planned, then reflected on, before the next level starts (within a level, higher priority
//! first); then the report; then finish.

use super::state::ResearchState;
use super::steering::Message;
use super::ResearchSettings;

/// One unit of work; the engine commits its events together at the end, so a crash loses at
/// most the step in flight.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Step {
    Start,
    /// One clarification turn, or the summary once the dialogue is over.
    Clarify,
    Seed,
    /// Apply queued steering messages.
    Steer(Vec<Message>),
    /// Reflect on a finished level.
    Reflect(u32),
    /// Research these nodes' questions over the sources: tasks of one level, researched
    /// together (their model calls are independent) and committed in this order.
    Investigate(Vec<usize>),
    /// Choose the node's children.
    Plan(usize),
    Report,
    Finish,
}

/// Whether the engine should read the steering queue before asking for the next step: only
/// once research has begun (clarification and seeding come first, whatever is queued).
pub(super) fn reads_steering(s: &ResearchState) -> bool {
    s.started && s.refined.is_some() && s.seeded
}

/// The next step. `pending` is the steering queue as the journal has it (messages already
/// applied are skipped); it is read only when [`reads_steering`] says so. `width` is how many
/// nodes of a level one step may research together (the model's parallelism); steering is
/// applied between such steps, so at the boundaries of a frontier's batches.
pub(super) fn next(
    s: &ResearchState,
    settings: &ResearchSettings,
    pending: Vec<Message>,
    width: usize,
) -> Step {
    if !s.started {
        return Step::Start;
    }
    if s.refined.is_none() {
        return Step::Clarify;
    }
    if !s.seeded {
        return Step::Seed;
    }
    let messages: Vec<Message> = pending
        .into_iter()
        .filter(|m| !s.applied_steering.contains(&m.id))
        .collect();
    if !messages.is_empty() {
        return Step::Steer(messages);
    }
    let limit = settings.depth;
    let depth_of = |node: usize| s.tree.nodes[node].depth;
    let investigate_depth = s.todo.pending().iter().map(|t| depth_of(t.node)).min();
    let plannable = s.plannable(limit);
    let plan_depth = plannable.first().map(|&n| depth_of(n));
    let done = done_through(investigate_depth, plan_depth, limit);
    // Level 0 is the root alone: planning its follow-ups is what looks for its gaps.
    if settings.reflect && done > 0 && !s.reflected.contains(&done) {
        return Step::Reflect(done);
    }
    if let Some(d) = investigate_depth {
        // A shallower level waiting to be planned goes first.
        if plan_depth.is_none_or(|p| d <= p) {
            let nodes: Vec<usize> = s
                .todo
                .pending()
                .into_iter()
                .filter(|t| depth_of(t.node) == d)
                .map(|t| t.node)
                .take(width.max(1))
                .collect();
            if !nodes.is_empty() {
                return Step::Investigate(nodes);
            }
        }
    }
    if let Some(&n) = plannable.first() {
        return Step::Plan(n);
    }
    if s.report.is_none() {
        return Step::Report;
    }
    Step::Finish
}

/// The deepest level that is investigated and planned through: one above the shallowest level
/// with work left, or the depth limit when none has any.
fn done_through(investigate_depth: Option<u32>, plan_depth: Option<u32>, limit: u32) -> u32 {
    investigate_depth
        .map(|d| d.saturating_sub(1))
        .into_iter()
        .chain(plan_depth.map(|d| d.saturating_sub(1)))
        .chain([limit])
        .min()
        .unwrap_or(limit)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::research::events::{Envelope, Event};
    use crate::research::persona::Persona;
    use crate::research::report::{Paragraph, Report};
    use crate::research::todo::{Provenance, Task, TaskStatus};
    use crate::research::tree::Origin;

    /// Folds `events` (numbered in order) into a state.
    fn fold(events: Vec<Event>) -> ResearchState {
        let log: Vec<Envelope> = events
            .into_iter()
            .enumerate()
            .map(|(i, event)| Envelope {
                seq: i as u64,
                at: chrono::Utc::now(),
                event,
            })
            .collect();
        ResearchState::fold(&log)
    }

    fn started() -> Event {
        Event::Started {
            query: "tents".into(),
            depth: 2,
            breadth: 2,
            sources: Vec::new(),
            model: "m".into(),
            remote_sources: false,
            date: "2025-01-01".into(),
            persona_text: String::new(),
            profile: String::new(),
            asked: String::new(),
        }
    }

    fn refined() -> Event {
        Event::BriefRefined {
            brief: "tents".into(),
            checklist: Vec::new(),
            turns: 0,
        }
    }

    fn seeded() -> Event {
        Event::PersonaSeeded {
            persona: Persona::default(),
            from_profile: false,
            guessed: Vec::new(),
        }
    }

    fn node(id: usize, parent: Option<usize>, depth: u32) -> Event {
        Event::NodeAdded {
            id,
            parent,
            depth,
            question: format!("question {id}"),
            origin: if parent.is_none() {
                Origin::Root
            } else {
                Origin::Planned
            },
            confidence: 1.0,
            tags: Vec::new(),
            prefetched: Vec::new(),
        }
    }

    fn task(id: usize, node: usize) -> Event {
        let now = chrono::Utc::now();
        Event::TaskAdded {
            task: Task {
                id,
                text: format!("question {node}"),
                priority: 3,
                status: TaskStatus::Pending,
                provenance: Provenance::InitialQuery,
                node,
                created_at: now,
                updated_at: now,
                note: String::new(),
            },
        }
    }

    fn completed(task: usize) -> Event {
        Event::TaskUpdated {
            id: task,
            status: Some(TaskStatus::Completed),
            priority: None,
            note: String::new(),
        }
    }

    fn researched(id: usize) -> Event {
        Event::NodeResearched {
            id,
            evidence: 0,
            learnings: 0,
            tags: Vec::new(),
            follow_ups: Vec::new(),
            sources: Vec::new(),
        }
    }

    fn planned(node: usize) -> Event {
        Event::CandidatesSelected {
            node,
            candidates: Vec::new(),
            selected: Vec::new(),
        }
    }

    fn message(id: i64) -> Message {
        Message {
            id,
            text: "focus on weight".into(),
            // Fixed, so the same message compares equal.
            received_at: chrono::DateTime::from_timestamp(0, 0).unwrap_or_default(),
        }
    }

    fn settings() -> ResearchSettings {
        ResearchSettings {
            depth: 2,
            ..ResearchSettings::default()
        }
    }

    /// A seeded run with the root planted and its task pending.
    fn planted() -> Vec<Event> {
        vec![started(), refined(), seeded(), node(0, None, 0), task(0, 0)]
    }

    #[test]
    fn the_opening_steps_come_in_order_and_ignore_steering() {
        let s = ResearchState::default();
        assert!(!reads_steering(&s));
        assert_eq!(next(&s, &settings(), vec![message(1)], 1), Step::Start);
        let s = fold(vec![started()]);
        assert_eq!(next(&s, &settings(), vec![message(1)], 1), Step::Clarify);
        let s = fold(vec![started(), refined()]);
        assert!(!reads_steering(&s));
        assert_eq!(next(&s, &settings(), vec![message(1)], 1), Step::Seed);
        let s = fold(planted());
        assert!(reads_steering(&s));
        assert_eq!(
            next(&s, &settings(), Vec::new(), 1),
            Step::Investigate(vec![0])
        );
    }

    #[test]
    fn queued_steering_goes_first_unless_already_applied() {
        let mut events = planted();
        events.push(Event::SteeringApplied {
            messages: vec![message(1)],
            summary: String::new(),
        });
        let s = fold(events);
        assert_eq!(
            next(&s, &settings(), vec![message(1), message(2)], 1),
            Step::Steer(vec![message(2)])
        );
        assert_eq!(
            next(&s, &settings(), vec![message(1)], 1),
            Step::Investigate(vec![0])
        );
    }

    #[test]
    fn a_level_is_investigated_then_planned_then_reflected_on() {
        // The root researched: plan it (level 0 is never reflected on).
        let mut events = planted();
        events.extend([researched(0), completed(0)]);
        let s = fold(events.clone());
        assert_eq!(next(&s, &settings(), Vec::new(), 1), Step::Plan(0));

        // Two children planned: investigate them before anything else.
        events.extend([planned(0), node(1, Some(0), 1), task(1, 1)]);
        events.extend([node(2, Some(0), 1), task(2, 2)]);
        let s = fold(events.clone());
        assert_eq!(
            next(&s, &settings(), Vec::new(), 1),
            Step::Investigate(vec![1])
        );
        // A model that decodes several calls at once gets the whole level in one step, and no
        // more than it can take.
        assert_eq!(
            next(&s, &settings(), Vec::new(), 4),
            Step::Investigate(vec![1, 2])
        );
        assert_eq!(
            next(&s, &settings(), Vec::new(), 0),
            Step::Investigate(vec![1])
        );

        // One child done, the other pending: its level is not finished, so no reflection and
        // no planning below it yet.
        events.extend([researched(1), completed(1)]);
        let s = fold(events.clone());
        assert_eq!(
            next(&s, &settings(), Vec::new(), 1),
            Step::Investigate(vec![2])
        );

        // Level 1 investigated: plan its nodes, shallowest and lowest id first.
        events.extend([researched(2), completed(2)]);
        let s = fold(events.clone());
        assert_eq!(next(&s, &settings(), Vec::new(), 1), Step::Plan(1));

        // Planned through, with a child at level 2: reflect on level 1 before going deeper.
        events.extend([planned(1), node(3, Some(1), 2), task(3, 3), planned(2)]);
        let s = fold(events.clone());
        assert_eq!(next(&s, &settings(), Vec::new(), 1), Step::Reflect(1));

        // Without reflection, straight on to the next level.
        let off = ResearchSettings {
            reflect: false,
            ..settings()
        };
        assert_eq!(next(&s, &off, Vec::new(), 1), Step::Investigate(vec![3]));
    }

    #[test]
    fn a_shallower_level_is_planned_before_a_deeper_one_is_investigated() {
        // Node 1 (level 1) researched but not planned; gap node 2 at level 2 is pending.
        let mut events = planted();
        events.extend([researched(0), completed(0), planned(0)]);
        events.extend([node(1, Some(0), 1), task(1, 1), researched(1), completed(1)]);
        events.extend([node(2, Some(1), 2), task(2, 2)]);
        let s = fold(events);
        assert_eq!(next(&s, &settings(), Vec::new(), 1), Step::Plan(1));
    }

    #[test]
    fn the_final_reflection_is_keyed_by_the_depth_limit() {
        let mut events = planted();
        events.extend([researched(0), completed(0), planned(0)]);
        events.extend([node(1, Some(0), 1), task(1, 1), researched(1), completed(1)]);
        events.push(planned(1));
        // Level 1 planned with no children: nothing is left above the limit.
        let s = fold(events);
        assert_eq!(next(&s, &settings(), Vec::new(), 1), Step::Reflect(2));
    }

    #[test]
    fn the_deepest_level_is_reflected_on_before_the_report_and_finish() {
        let mut events = planted();
        events.extend([researched(0), completed(0), planned(0)]);
        events.extend([node(1, Some(0), 1), task(1, 1), researched(1), completed(1)]);
        events.extend([planned(1), node(2, Some(1), 2), task(2, 2)]);
        events.extend([researched(2), completed(2)]);
        events.push(Event::Reflected {
            level: Some(1),
            knowledge_gaps: Vec::new(),
            canceled: Vec::new(),
        });
        // Depth 2 is the limit: node 2 is a leaf, never planned; its level is reflected on.
        let s = fold(events.clone());
        assert_eq!(next(&s, &settings(), Vec::new(), 1), Step::Reflect(2));
        events.push(Event::Reflected {
            level: Some(2),
            knowledge_gaps: Vec::new(),
            canceled: Vec::new(),
        });
        let s = fold(events.clone());
        assert_eq!(next(&s, &settings(), Vec::new(), 1), Step::Report);
        events.push(Event::ReportWritten {
            title: "Tents".into(),
            words: 0,
            citations: 0,
            report: Some(Box::new(Report {
                title: "Tents".into(),
                query: "tents".into(),
                summary: Paragraph {
                    text: String::new(),
                    citations: Vec::new(),
                },
                sections: Vec::new(),
                closing: String::new(),
                references: Vec::new(),
                markdown: String::new(),
                language: String::new(),
                untranslated: 0,
                style: Default::default(),
                off_question: Vec::new(),
            })),
        });
        let s = fold(events);
        assert_eq!(next(&s, &settings(), Vec::new(), 1), Step::Finish);
        // Steering that arrives at the end reopens the run.
        assert_eq!(
            next(&s, &settings(), vec![message(7)], 1),
            Step::Steer(vec![message(7)])
        );
    }

    #[test]
    fn done_through_is_one_above_the_shallowest_open_level() {
        assert_eq!(done_through(None, None, 3), 3);
        assert_eq!(done_through(Some(2), None, 3), 1);
        assert_eq!(done_through(Some(2), Some(1), 3), 0);
        assert_eq!(done_through(Some(0), None, 3), 0);
    }
}
