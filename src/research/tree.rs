//! The research tree: one node per sub-question, with what it found and where it came from.

use serde::{Deserialize, Serialize};

/// How a node came to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// The user's question.
    Root,
    /// Proposed by the planner and chosen by MMR (and by the user, if asked).
    Planned,
    /// The planner's wild-card outside the inferred persona.
    WildCard,
    /// Written by the user in a pause answer.
    User,
    /// Asked for in a steering message.
    Steering,
    /// A knowledge gap found by reflection.
    Gap,
    /// What the sources say for one of the reader's needs, looked up before the report
    /// ([`crate::research::Researcher`]'s report step): sentences of passages, not planned from.
    Need,
}

impl Origin {
    /// Steering, knowledge-gap and need nodes answer one specific need: they are researched
    /// but not expanded further, which keeps a steered run's length predictable.
    pub fn expands(self) -> bool {
        !matches!(self, Origin::Steering | Origin::Gap | Origin::Need)
    }
}

/// Where a node is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Pending,
    Researching,
    Done,
    /// Its task was canceled (by steering or reflection) before it was researched.
    Canceled,
}

/// A follow-up question the planner proposed at a node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct FollowUp {
    pub question: String,
    /// In [0, 1].
    pub confidence: f32,
    pub tags: Vec<String>,
    pub wild_card: bool,
}

/// One finding, tied to the evidence it rests on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Learning {
    pub id: usize,
    pub node: usize,
    pub text: String,
    /// Citation keys ([`crate::sources::CitationTarget::key`]) of its evidence.
    pub sources: Vec<String>,
}

/// One node of the tree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Node {
    pub id: usize,
    pub parent: Option<usize>,
    pub depth: u32,
    pub question: String,
    pub origin: Origin,
    pub confidence: f32,
    /// The node's top-level direction (its depth-1 ancestor, or itself at depth 1); `None` for
    /// the root.
    pub direction: Option<usize>,
    pub status: Status,
    /// Tags proposed with the question plus those assigned after research.
    pub tags: Vec<String>,
    pub learnings: Vec<usize>,
    /// Evidence keys it was shown.
    pub evidence: Vec<String>,
    /// Follow-ups proposed after researching it (empty for leaves).
    pub follow_ups: Vec<FollowUp>,
    pub children: Vec<usize>,
    /// Evidence found when the node was planned (the peek), reused when it is researched.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prefetched: Vec<crate::sources::Evidence>,
}

/// The whole tree, nodes indexed by id (the root is 0).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Tree {
    pub nodes: Vec<Node>,
}

impl Tree {
    pub fn new(query: &str) -> Self {
        Self {
            nodes: vec![Node {
                id: 0,
                parent: None,
                depth: 0,
                question: query.to_string(),
                origin: Origin::Root,
                confidence: 1.0,
                direction: None,
                status: Status::Pending,
                tags: Vec::new(),
                learnings: Vec::new(),
                evidence: Vec::new(),
                follow_ups: Vec::new(),
                children: Vec::new(),
                prefetched: Vec::new(),
            }],
        }
    }

    pub fn root(&self) -> &Node {
        &self.nodes[0]
    }

    /// Adds a child of `parent` and returns its id.
    pub fn add_child(&mut self, parent: usize, follow_up: &FollowUp, origin: Origin) -> usize {
        let id = self.nodes.len();
        let depth = self.nodes[parent].depth + 1;
        let direction = if depth == 1 {
            Some(id)
        } else {
            self.nodes[parent].direction
        };
        self.nodes.push(Node {
            id,
            parent: Some(parent),
            depth,
            question: follow_up.question.clone(),
            origin,
            confidence: follow_up.confidence,
            direction,
            status: Status::Pending,
            tags: follow_up.tags.clone(),
            learnings: Vec::new(),
            evidence: Vec::new(),
            follow_ups: Vec::new(),
            children: Vec::new(),
            prefetched: Vec::new(),
        });
        self.nodes[parent].children.push(id);
        id
    }

    /// The ids of `id` and everything below it, depth first.
    pub fn subtree(&self, id: usize) -> Vec<usize> {
        let mut out = vec![id];
        let mut i = 0;
        while i < out.len() {
            out.extend(self.nodes[out[i]].children.iter().copied());
            i += 1;
        }
        out
    }

    /// Top-level directions (the root's children).
    pub fn directions(&self) -> &[usize] {
        &self.nodes[0].children
    }

    /// The tree as indented text, for the terminal: `  ├ [done] question (3 learnings)`.
    pub fn render(&self) -> String {
        let mut out = String::new();
        self.render_node(0, 0, &mut out);
        out
    }

    fn render_node(&self, id: usize, indent: usize, out: &mut String) {
        let n = &self.nodes[id];
        let status = match n.status {
            Status::Pending => "…",
            Status::Researching => "→",
            Status::Done => "✓",
            Status::Canceled => "✗",
        };
        let origin = match n.origin {
            Origin::WildCard => " (wild card)",
            Origin::User => " (yours)",
            Origin::Steering => " (steering)",
            Origin::Gap => " (knowledge gap)",
            Origin::Need => " (your need)",
            _ => "",
        };
        out.push_str(&format!(
            "{}{status} {}{origin} [{} learnings]\n",
            "  ".repeat(indent),
            one_line(&n.question, 100),
            n.learnings.len()
        ));
        for &c in &n.children {
            self.render_node(c, indent + 1, out);
        }
    }
}

pub use crate::text::one_line;
