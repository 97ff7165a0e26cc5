//! Reflection (EDR §3.5, Figure 6 adapted): at the end of each level of the tree, and at any
//! step boundary where steering messages wait, one grammar-constrained call reviews what was
//! learned against the todo plan. It turns the queued messages — summarised together — into
//! tasks, cancellations, priority changes, exclusions, focus directives and persona updates,
//! and (at level ends) names the knowledge gaps that become new tasks.

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::persona::Persona;
use super::steering::Message;
use super::todo::{Task, MAX_PRIORITY, MIN_PRIORITY};
use super::ResearchError;
use crate::llm::{complete_schema, Completion, GenerationOptions, Llm};

/// Most learnings shown (the most recent ones), and characters each.
const FINDINGS_SHOWN: usize = 12;
const FINDING_CHARS: usize = 220;
/// Most tasks of each list shown.
const TASKS_SHOWN: usize = 12;
/// Most knowledge gaps per reflection: each costs a node.
pub const MAX_GAPS: usize = 2;

/// The cosine (all-MiniLM-L6-v2) between a pending task's text and a learning from which the
/// learning answers the task, so reflection may cancel it as already covered. Set on the
/// labelled pairs of `data/coverage_pairs.jsonl` by `tests/research_directions.rs` (26 pairs,
/// 13 covered; the negatives are learnings on the task's subject that answer another facet,
/// the highest at 0.56): the best F0.5 cut is 0.60, and the constant sits above it, as a
/// wrongly canceled direction is lost for good while a redundant one costs one node.
pub const COVERED: f32 = 0.7;

/// What reflection looks at.
pub struct ReflectInput<'a> {
    pub query: &'a str,
    pub persona: &'a Persona,
    pub directives: &'a str,
    pub current_date: &'a str,
    /// Learnings so far, oldest first.
    pub findings: &'a [String],
    pub pending: &'a [&'a Task],
    pub completed: &'a [&'a Task],
    pub messages: &'a [Message],
    /// Ask for knowledge gaps (level-end reflection).
    pub gaps: bool,
}

/// The plan changes reflection proposes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Reflection {
    #[serde(default)]
    pub steering_summary: String,
    #[serde(default)]
    pub add_tasks: Vec<String>,
    #[serde(default)]
    pub cancel_tasks: Vec<usize>,
    #[serde(default)]
    pub reprioritise: Vec<Reprioritise>,
    #[serde(default)]
    pub exclude: Vec<String>,
    #[serde(default)]
    pub focus: Vec<String>,
    #[serde(default)]
    pub persona_info: String,
    #[serde(default)]
    pub new_checklist_items: Vec<String>,
    #[serde(default)]
    pub knowledge_gaps: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reprioritise {
    pub task: usize,
    pub priority: u8,
}

/// The output schema: only the fields this reflection needs, task ids restricted to the
/// pending tasks shown, every string and list bounded.
pub fn schema(input: &ReflectInput<'_>) -> serde_json::Value {
    let steering = !input.messages.is_empty();
    let ids: Vec<usize> = input.pending.iter().map(|t| t.id).collect();
    let text = |max: usize| json!({"type": "string", "maxLength": max});
    let list = |max_len: usize, max_items: usize| json!({"type": "array", "items": {"type": "string", "minLength": 3, "maxLength": max_len}, "maxItems": max_items});
    let mut properties = serde_json::Map::new();
    if steering {
        properties.insert("steering_summary".into(), text(200));
        properties.insert("add_tasks".into(), list(150, 3));
        properties.insert("exclude".into(), list(50, 2));
        properties.insert("focus".into(), list(80, 2));
        properties.insert("persona_info".into(), text(200));
        properties.insert("new_checklist_items".into(), list(100, 2));
        if !ids.is_empty() {
            properties.insert(
                "reprioritise".into(),
                json!({
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "task": {"type": "integer", "enum": ids},
                            "priority": {"type": "integer", "enum": (MIN_PRIORITY..=MAX_PRIORITY).collect::<Vec<u8>>()},
                        },
                        "required": ["task", "priority"],
                    },
                    "maxItems": 3,
                }),
            );
        }
    }
    if !ids.is_empty() {
        // A small model that cancels everything would end the research: at most half the
        // pending tasks can go in one reflection (exclusions cancel matching tasks anyway).
        properties.insert(
            "cancel_tasks".into(),
            json!({"type": "array", "items": {"type": "integer", "enum": ids}, "maxItems": ids.len().div_ceil(2)}),
        );
    }
    if input.gaps {
        properties.insert("knowledge_gaps".into(), list(150, MAX_GAPS));
    }
    let required: Vec<String> = properties.keys().cloned().collect();
    json!({"type": "object", "properties": properties, "required": required})
}

fn task_lines(tasks: &[&Task], with_ids: bool) -> String {
    if tasks.is_empty() {
        return "(none)".into();
    }
    let mut lines: Vec<String> = tasks
        .iter()
        .take(TASKS_SHOWN)
        .map(|t| {
            let text = super::tree::one_line(&t.text, 150);
            if with_ids {
                format!("- id {} (priority {}): {text}", t.id, t.priority)
            } else {
                format!("- {text}")
            }
        })
        .collect();
    if tasks.len() > TASKS_SHOWN {
        lines.push(format!("- … and {} more", tasks.len() - TASKS_SHOWN));
    }
    lines.join("\n")
}

/// Runs one reflection. Proposals are returned as the model made them (ids already limited to
/// pending tasks by the grammar); the caller applies them as events.
pub fn reflect(
    llm: &dyn Llm,
    input: &ReflectInput<'_>,
) -> Result<(Reflection, Completion), ResearchError> {
    let findings = if input.findings.is_empty() {
        "(nothing yet)".to_string()
    } else {
        let start = input.findings.len().saturating_sub(FINDINGS_SHOWN);
        input.findings[start..]
            .iter()
            .map(|f| format!("- {}", super::tree::one_line(f, FINDING_CHARS)))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let messages = input
        .messages
        .iter()
        .enumerate()
        .map(|(i, m)| format!("{}. {}", i + 1, super::tree::one_line(&m.text, 400)))
        .collect::<Vec<_>>()
        .join("\n");
    let prompt = crate::prompts::render(
        "research_reflect",
        minijinja::context! {
            query => input.query,
            current_date => input.current_date,
            persona => input.persona.text,
            checklist => input.persona.numbered_checklist(),
            directives => input.directives,
            findings => findings,
            pending => task_lines(input.pending, true),
            pending_count => input.pending.len(),
            completed => task_lines(input.completed, false),
            messages => messages,
            gaps => input.gaps,
        },
    )?;
    // Worst case one token per character of the bounded fields, plus JSON punctuation.
    let (mut r, completion): (Reflection, Completion) = complete_schema(
        llm,
        vec![crate::llm::Message::user(prompt)],
        GenerationOptions::greedy(1900),
        schema(input),
    )?
    .into_pair()?;
    let pending: Vec<usize> = input.pending.iter().map(|t| t.id).collect();
    r.cancel_tasks.retain(|id| pending.contains(id));
    r.cancel_tasks.dedup();
    r.reprioritise.retain(|p| pending.contains(&p.task));
    r.knowledge_gaps.truncate(MAX_GAPS);
    Ok((r, completion))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::research::todo::{Provenance, TaskStatus};

    fn task(id: usize) -> Task {
        let now = chrono::Utc::now();
        Task {
            id,
            text: format!("task {id}"),
            priority: 7,
            status: TaskStatus::Pending,
            provenance: Provenance::InitialQuery,
            node: id,
            created_at: now,
            updated_at: now,
            note: String::new(),
        }
    }

    #[test]
    fn schema_has_only_what_this_reflection_needs() {
        let persona = Persona::default();
        let (a, b) = (task(3), task(5));
        let pending = [&a, &b];
        let input = ReflectInput {
            query: "q",
            persona: &persona,
            directives: "",
            current_date: "2026-11-22",
            findings: &[],
            pending: &pending,
            completed: &[],
            messages: &[],
            gaps: true,
        };
        let s = schema(&input);
        let props = s["properties"].as_object().unwrap();
        assert!(props.contains_key("knowledge_gaps"));
        assert!(props.contains_key("cancel_tasks"));
        assert!(!props.contains_key("add_tasks"));
        assert_eq!(
            s["properties"]["cancel_tasks"]["items"]["enum"],
            json!([3, 5])
        );
        assert_eq!(s["properties"]["cancel_tasks"]["maxItems"], json!(1));
        let messages = [Message {
            id: 1,
            text: "focus on cost".into(),
            received_at: chrono::Utc::now(),
        }];
        let input = ReflectInput {
            messages: &messages,
            gaps: false,
            pending: &[],
            ..input
        };
        let s = schema(&input);
        let props = s["properties"].as_object().unwrap();
        assert!(props.contains_key("add_tasks") && props.contains_key("steering_summary"));
        assert!(!props.contains_key("knowledge_gaps") && !props.contains_key("cancel_tasks"));
    }
}
