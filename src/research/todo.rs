//! The research plan as a todo list (EDR §2.2; docs/architecture.md, "Todo plan"). Every node the loop will
//! research is a task; steering adds tasks, reflection adds knowledge-gap tasks and cancels
//! obsolete ones. The plan only changes through events, so it is part of the session's fold,
//! and every change bumps `version` (the window redraws on a new version).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// Lowest and highest task priority.
pub const MIN_PRIORITY: u8 = 5;
pub const MAX_PRIORITY: u8 = 10;
/// Priority of tasks added by steering messages (EDR: highest).
pub const STEERING_PRIORITY: u8 = 10;
/// Priority of tasks for knowledge gaps found by reflection (EDR: 7).
pub const GAP_PRIORITY: u8 = 7;
/// Priority of the initial question.
pub const ROOT_PRIORITY: u8 = 9;

/// Where a task came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum Provenance {
    /// The query and the directions planned from it.
    InitialQuery,
    /// A gap that reflection found in what was learned.
    KnowledgeGap,
    /// A steering message.
    Steering,
    /// Chosen or written by the user when the loop paused.
    UserPause,
}

impl Provenance {
    pub fn as_str(self) -> &'static str {
        match self {
            Provenance::InitialQuery => "initial_query",
            Provenance::KnowledgeGap => "knowledge_gap",
            Provenance::Steering => "steering",
            Provenance::UserPause => "user_pause",
        }
    }
}

/// A task's life: pending → in-progress → completed | canceled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    Pending,
    InProgress,
    Completed,
    Canceled,
}

impl TaskStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Pending => "pending",
            TaskStatus::InProgress => "in-progress",
            TaskStatus::Completed => "completed",
            TaskStatus::Canceled => "canceled",
        }
    }

    /// Completed and canceled tasks never change again.
    pub fn is_final(self) -> bool {
        matches!(self, TaskStatus::Completed | TaskStatus::Canceled)
    }
}

/// One task of the plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Task {
    pub id: usize,
    pub text: String,
    /// 5–10; higher runs first.
    pub priority: u8,
    pub status: TaskStatus,
    pub provenance: Provenance,
    /// The tree node that researches it.
    pub node: usize,
    #[cfg_attr(feature = "ts", ts(type = "string"))]
    pub created_at: DateTime<Utc>,
    #[cfg_attr(feature = "ts", ts(type = "string"))]
    pub updated_at: DateTime<Utc>,
    /// Why it was last changed (e.g. the steering summary that canceled it).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
}

/// The plan.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TodoPlan {
    pub tasks: Vec<Task>,
    /// Bumped on every change.
    pub version: u64,
}

/// Clamps a priority into 5–10.
pub fn clamp_priority(p: u8) -> u8 {
    p.clamp(MIN_PRIORITY, MAX_PRIORITY)
}

/// A planned follow-up's priority from the planner's confidence in [0, 1]: 5–9, so that
/// steering (10) always goes first.
pub fn priority_from_confidence(confidence: f32) -> u8 {
    MIN_PRIORITY + (confidence.clamp(0.0, 1.0) * 4.0).round() as u8
}

impl TodoPlan {
    /// Adds a task (as [`super::Event::TaskAdded`] is folded); its id must be the next one.
    pub fn add(&mut self, task: Task) {
        debug_assert_eq!(task.id, self.tasks.len());
        self.tasks.push(task);
        self.version += 1;
    }

    /// The id the next task gets.
    pub fn next_id(&self) -> usize {
        self.tasks.len()
    }

    pub fn get(&self, id: usize) -> Option<&Task> {
        self.tasks.get(id)
    }

    /// The task that researches `node`.
    pub fn for_node(&self, node: usize) -> Option<&Task> {
        self.tasks.iter().find(|t| t.node == node)
    }

    /// Changes a task's status and/or priority. Final tasks do not change; returns whether
    /// anything did.
    pub fn update(
        &mut self,
        id: usize,
        status: Option<TaskStatus>,
        priority: Option<u8>,
        note: &str,
        at: DateTime<Utc>,
    ) -> bool {
        let Some(task) = self.tasks.get_mut(id) else {
            return false;
        };
        if task.status.is_final() {
            return false;
        }
        let mut changed = false;
        if let Some(s) = status {
            if s != task.status {
                task.status = s;
                changed = true;
            }
        }
        if let Some(p) = priority.map(clamp_priority) {
            if p != task.priority {
                task.priority = p;
                changed = true;
            }
        }
        if changed {
            task.updated_at = at;
            if !note.is_empty() {
                task.note = note.to_string();
            }
            self.version += 1;
        }
        changed
    }

    /// Pending tasks in the order they run: priority first, then age.
    pub fn pending(&self) -> Vec<&Task> {
        let mut out: Vec<&Task> = self
            .tasks
            .iter()
            .filter(|t| t.status == TaskStatus::Pending)
            .collect();
        out.sort_by(|a, b| b.priority.cmp(&a.priority).then(a.id.cmp(&b.id)));
        out
    }

    pub fn count(&self, status: TaskStatus) -> usize {
        self.tasks.iter().filter(|t| t.status == status).count()
    }

    /// The plan as `todo.md`: open tasks by priority, then completed and canceled ones, each
    /// with its id, priority, provenance and timestamps.
    pub fn render_markdown(&self, query: &str) -> String {
        let mut out = format!(
            "# Research plan\n\n{}\n\nVersion {} · {} pending · {} in progress · {} completed · {} canceled\n",
            super::tree::one_line(query, 300),
            self.version,
            self.count(TaskStatus::Pending),
            self.count(TaskStatus::InProgress),
            self.count(TaskStatus::Completed),
            self.count(TaskStatus::Canceled),
        );
        let line = |t: &Task| {
            let mark = match t.status {
                TaskStatus::Pending => "[ ]",
                TaskStatus::InProgress => "[~]",
                TaskStatus::Completed => "[x]",
                TaskStatus::Canceled => "[-]",
            };
            let mut s = format!(
                "- {mark} **#{}** (p{}, {}) {} — added {}",
                t.id,
                t.priority,
                t.provenance.as_str(),
                escape_line(&t.text),
                t.created_at.format("%Y-%m-%d %H:%M:%S"),
            );
            if t.updated_at != t.created_at {
                s.push_str(&format!(
                    ", {} {}",
                    t.status.as_str(),
                    t.updated_at.format("%H:%M:%S")
                ));
            }
            if !t.note.is_empty() {
                s.push_str(&format!(" — {}", escape_line(&t.note)));
            }
            s.push('\n');
            s
        };
        let mut open: Vec<&Task> = self.tasks.iter().filter(|t| !t.status.is_final()).collect();
        open.sort_by(|a, b| {
            (b.status == TaskStatus::InProgress)
                .cmp(&(a.status == TaskStatus::InProgress))
                .then(b.priority.cmp(&a.priority))
                .then(a.id.cmp(&b.id))
        });
        for (title, tasks) in [
            ("Open", open),
            (
                "Completed",
                self.tasks
                    .iter()
                    .filter(|t| t.status == TaskStatus::Completed)
                    .collect(),
            ),
            (
                "Canceled",
                self.tasks
                    .iter()
                    .filter(|t| t.status == TaskStatus::Canceled)
                    .collect(),
            ),
        ] {
            if tasks.is_empty() {
                continue;
            }
            out.push_str(&format!("\n## {title}\n\n"));
            for t in tasks {
                out.push_str(&line(t));
            }
        }
        out
    }
}

/// Task text is model output: one line, with Markdown's active characters escaped so it cannot
/// inject links, HTML or structure into `todo.md`.
fn escape_line(s: &str) -> String {
    let flat = super::tree::one_line(s, 400);
    let mut out = String::with_capacity(flat.len());
    for c in flat.chars() {
        if matches!(
            c,
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '#' | '|' | '!'
        ) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: usize, priority: u8) -> Task {
        let at = DateTime::from_timestamp(1_700_000_000 + id as i64, 0).unwrap();
        Task {
            id,
            text: format!("task {id}"),
            priority,
            status: TaskStatus::Pending,
            provenance: Provenance::InitialQuery,
            node: id,
            created_at: at,
            updated_at: at,
            note: String::new(),
        }
    }

    #[test]
    fn pending_runs_by_priority_then_age_and_versions_count_changes() {
        let mut plan = TodoPlan::default();
        plan.add(task(0, 7));
        plan.add(task(1, 10));
        plan.add(task(2, 7));
        assert_eq!(plan.version, 3);
        let order: Vec<usize> = plan.pending().iter().map(|t| t.id).collect();
        assert_eq!(order, [1, 0, 2]);
        let now = Utc::now();
        assert!(plan.update(2, None, Some(9), "", now));
        assert_eq!(plan.version, 4);
        // No change, no new version.
        assert!(!plan.update(2, None, Some(9), "", now));
        assert_eq!(plan.version, 4);
        assert!(plan.update(1, Some(TaskStatus::Completed), None, "", now));
        // Final tasks never change again.
        assert!(!plan.update(1, Some(TaskStatus::Pending), None, "", now));
        assert_eq!(plan.tasks[1].status, TaskStatus::Completed);
        // Priorities are clamped into 5–10.
        plan.update(0, None, Some(200), "", now);
        assert_eq!(plan.tasks[0].priority, 10);
        let order: Vec<usize> = plan.pending().iter().map(|t| t.id).collect();
        assert_eq!(order, [0, 2]);
    }

    #[test]
    fn markdown_lists_every_task_and_escapes_text() {
        let mut plan = TodoPlan::default();
        plan.add(task(0, 9));
        let mut t = task(1, 10);
        t.text = "look at <script>alert(1)</script> and [links](http://x)".into();
        t.provenance = Provenance::Steering;
        plan.add(t);
        plan.update(
            0,
            Some(TaskStatus::Canceled),
            None,
            "user: ignore it",
            Utc::now(),
        );
        let md = plan.render_markdown("Q?");
        assert!(md.contains("**#1** (p10, steering)"), "{md}");
        assert!(md.contains("## Canceled"), "{md}");
        assert!(md.contains("user: ignore it"), "{md}");
        assert!(!md.contains("<script>"), "{md}");
        assert!(md.contains("\\[links\\]"), "{md}");
        assert!(md.contains("Version 3"), "{md}");
    }

    #[test]
    fn confidence_maps_below_steering_priority() {
        assert_eq!(priority_from_confidence(0.0), 5);
        assert_eq!(priority_from_confidence(1.0), 9);
        assert!(priority_from_confidence(0.5) < STEERING_PRIORITY);
    }
}
