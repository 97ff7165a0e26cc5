//! Planning a frontier node (STEER §2; the `plan` step of docs/architecture.md and its
//! formulas) as a pipeline: [`candidates`](Run::candidates) → [`select_mmr`] →
//! [`peek`](Run::peek) → [`score`](Run::score) → [`decide_pause`](Run::decide_pause) →
//! [`ask`](Run::ask) → [`add_children`](Run::add_children).

use super::REPEATED_QUESTION;
use crate::research::engine::Run;
use crate::research::events::{Event, ScoredCandidate, Stage};
use crate::research::pause::{self, CandidateValue, PauseDecision};
use crate::research::todo::{self, Provenance};
use crate::research::tree::{self, FollowUp, Origin};
use crate::research::utility::{self, Utility};
use crate::research::{align, mmr, node, persona, question, ResearchError};
use crate::sources::Evidence;

/// A node about to be added under the planned one.
struct Child {
    follow_up: FollowUp,
    origin: Origin,
    prefetched: Vec<Evidence>,
    provenance: Provenance,
    priority: u8,
}

impl Child {
    /// A direction the planner proposed, with the evidence its peek found.
    fn planned(follow_up: FollowUp, peek: Vec<Evidence>) -> Self {
        Self {
            origin: if follow_up.wild_card {
                Origin::WildCard
            } else {
                Origin::Planned
            },
            priority: todo::priority_from_confidence(follow_up.confidence),
            follow_up,
            prefetched: peek,
            provenance: Provenance::InitialQuery,
        }
    }

    /// A question the user wrote in answer to a pause.
    fn from_user(question: &str) -> Self {
        Self {
            follow_up: FollowUp {
                question: question.trim().to_string(),
                confidence: 1.0,
                tags: Vec::new(),
                wild_card: false,
            },
            origin: Origin::User,
            prefetched: Vec::new(),
            provenance: Provenance::UserPause,
            priority: todo::STEERING_PRIORITY,
        }
    }
}

/// The scored directions, as the pause rule and the event see them.
struct Scored {
    candidates: Vec<ScoredCandidate>,
    values: Vec<CandidateValue>,
    parent_alignment: f32,
}

/// Plan: a diverse `k` of the candidates by MMR on their questions' embeddings (indices into
/// `candidates`).
fn select_mmr(
    candidates: &[FollowUp],
    embeddings: &[Vec<f32>],
    k: usize,
    lambda: f32,
) -> Vec<usize> {
    let confidences: Vec<f32> = candidates.iter().map(|c| c.confidence).collect();
    mmr::select(&confidences, embeddings, k, lambda)
}

impl Run<'_, '_> {
    /// Plans, scores and decides at frontier node `n`, and adds the children it keeps as
    /// tasks.
    pub(in crate::research) fn plan(&mut self, n: usize) -> Result<(), ResearchError> {
        let (candidates, embeddings) = self.candidates(n)?;
        if candidates.is_empty() {
            self.emit(Event::CandidatesSelected {
                node: n,
                candidates,
                selected: Vec::new(),
            });
            return Ok(());
        }
        let settings = self.r.settings;
        let k = settings.breadth.max(1) as usize;
        let selected = select_mmr(&candidates, &embeddings, k, settings.mmr_lambda);
        self.emit(Event::CandidatesSelected {
            node: n,
            candidates: candidates.clone(),
            selected: selected.clone(),
        });
        let chosen: Vec<FollowUp> = selected.iter().map(|&i| candidates[i].clone()).collect();
        let peeks = self.peek(&chosen)?;
        let scored = self.score(n, &chosen, &peeks)?;
        let decision = self.decide_pause(n, &scored.values);
        let asked = decision.ask && self.r.interaction.can_ask();
        tracing::info!(node = n, "{}", decision.explain());
        self.emit(Event::PauseDecided {
            node: n,
            candidates: scored.candidates,
            parent_alignment: scored.parent_alignment,
            decision: decision.clone(),
            asked,
        });
        let children = if asked {
            self.ask(n, chosen, peeks, &decision)?
        } else {
            chosen
                .into_iter()
                .zip(peeks)
                .map(|(c, p)| Child::planned(c, p))
                .collect()
        };
        self.add_children(n, children);
        Ok(())
    }

    /// The node's follow-ups that no directive excludes, that stay on the original query (the
    /// wild card aside: it is meant to look further) and that do not ask again what a node of
    /// the tree already asks, with their questions' embeddings.
    fn candidates(&self, n: usize) -> Result<(Vec<FollowUp>, Vec<Vec<f32>>), ResearchError> {
        let directives = &self.s.directives;
        let candidates: Vec<FollowUp> = self.s.tree.nodes[n]
            .follow_ups
            .iter()
            .filter(|c| !directives.excludes(&c.question))
            .cloned()
            .collect();
        if candidates.is_empty() {
            return Ok((candidates, Vec::new()));
        }
        let questions: Vec<&str> = candidates.iter().map(|c| c.question.as_str()).collect();
        let embeddings = self.r.embedder.embed(&questions)?;
        let asked: Vec<&str> = self
            .s
            .tree
            .nodes
            .iter()
            .filter(|n| n.status != tree::Status::Canceled)
            .map(|n| n.question.as_str())
            .collect();
        let asked_vectors = self.r.embedder.embed(&asked)?;
        let query = self.r.embedder.embed(&[self.s.query.as_str()])?.remove(0);
        let before = candidates.len();
        let (candidates, embeddings): (Vec<FollowUp>, Vec<Vec<f32>>) = candidates
            .into_iter()
            .zip(embeddings)
            .filter(|(c, e)| c.wild_card || node::on_topic(&query, e))
            .filter(|(_, e)| {
                asked_vectors
                    .iter()
                    .all(|a| crate::embed::cosine(e, a) < REPEATED_QUESTION)
            })
            .unzip();
        if candidates.len() < before {
            tracing::debug!(
                node = n,
                dropped = before - candidates.len(),
                "follow-ups off the query or repeating a node"
            );
        }
        Ok((candidates, embeddings))
    }

    /// Peek: retrieval only, no model — the evidence each chosen direction would start from,
    /// each taking fresh passages before ones its siblings took.
    fn peek(&mut self, chosen: &[FollowUp]) -> Result<Vec<Vec<Evidence>>, ResearchError> {
        let mut peeks = Vec::with_capacity(chosen.len());
        let mut batch = std::collections::BTreeSet::new();
        for c in chosen {
            let found = self.search_fresh(&c.question, &batch)?;
            batch.extend(found.iter().map(|e| e.target.key()));
            peeks.push(found);
        }
        Ok(peeks)
    }

    /// The utility of each chosen direction: its alignment with the persona (the model scores
    /// it against the checklist, as it scores the node's own findings), how new its tags are,
    /// the information its peeked evidence would add, and what researching it would cost.
    fn score(
        &mut self,
        n: usize,
        chosen: &[FollowUp],
        peeks: &[Vec<Evidence>],
    ) -> Result<Scored, ResearchError> {
        let settings = self.r.settings;
        let parent_findings: Vec<String> = self.s.tree.nodes[n]
            .learnings
            .iter()
            .map(|&l| self.s.learnings[l].text.clone())
            .collect();
        let views: Vec<align::CandidateView<'_>> = chosen
            .iter()
            .zip(peeks)
            .map(|(c, e)| align::CandidateView {
                question: &c.question,
                evidence: e,
            })
            .collect();
        let (scores, completion) =
            align::score(self.r.llm, &self.s.persona, &parent_findings, &views)?;
        self.account(Stage::Alignment, &completion);
        let parent_alignment = utility::alignment(&scores.current);
        let centroid = utility::mean_vector(&self.learning_vectors);
        let child_depth = self.s.tree.nodes[n].depth + 1;
        let mut scored = Scored {
            candidates: Vec::with_capacity(chosen.len()),
            values: Vec::with_capacity(chosen.len()),
            parent_alignment,
        };
        for (i, c) in chosen.iter().enumerate() {
            let evidence_mean = if peeks[i].is_empty() {
                None
            } else {
                let texts: Vec<String> = peeks[i]
                    .iter()
                    .map(|e| format!("{}\n{}", e.title, e.text))
                    .collect();
                let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
                utility::mean_vector(&self.r.embedder.embed(&refs)?)
            };
            let u = Utility::new(
                utility::alignment(&scores.candidates[i]),
                parent_alignment,
                utility::explore(&c.tags, &self.s.tags, settings.weights.explore_epsilon),
                utility::info_gain(evidence_mean.as_deref(), centroid.as_deref()),
                &settings.weights,
            );
            let cost = utility::execution_cost(settings.depth, settings.breadth, child_depth);
            scored.values.push(CandidateValue {
                utility: u.total,
                confidence: c.confidence,
                execution_cost: cost,
            });
            scored.candidates.push(ScoredCandidate {
                follow_up: c.clone(),
                expected_evidence: peeks[i].iter().map(|e| e.title.clone()).collect(),
                utility: u,
                execution_cost: cost,
            });
        }
        Ok(scored)
    }

    /// The pause rule: whether asking the user at node `n` is worth the interruption. The
    /// root counts as its own direction; below it, the tolerance is shared by the active
    /// top-level directions that grow (steering and gap nodes do not).
    fn decide_pause(&self, n: usize, values: &[CandidateValue]) -> PauseDecision {
        let direction = self.s.tree.nodes[n].direction;
        let active = if direction.is_none() {
            1
        } else {
            self.s
                .tree
                .directions()
                .iter()
                .filter(|&&d| {
                    let node = &self.s.tree.nodes[d];
                    node.origin.expands() && node.status != tree::Status::Canceled
                })
                .count()
                .max(1) as u32
        };
        let pauses_here = self.s.pauses.get(&direction).copied().unwrap_or(0);
        pause::decide(values, &self.r.settings.pause, pauses_here, active)
    }

    /// Puts the chosen directions to the user and returns the children their answer keeps;
    /// what the answer says about the user updates the persona.
    fn ask(
        &mut self,
        n: usize,
        chosen: Vec<FollowUp>,
        mut peeks: Vec<Vec<Evidence>>,
        decision: &PauseDecision,
    ) -> Result<Vec<Child>, ResearchError> {
        let questions: Vec<String> = chosen.iter().map(|c| c.question.clone()).collect();
        let (question, completion) = question::generate(
            self.r.llm,
            &self.s.query,
            &self.s.persona,
            n,
            &questions,
            decision.explain(),
        )?;
        self.account(Stage::Question, &completion);
        self.emit(Event::Question {
            question: question.clone(),
        });
        let mut answer = self.r.interaction.ask(&question)?;
        answer.chosen.retain(|&c| c >= 1 && c <= chosen.len());
        answer.new_questions.retain(|q| !q.trim().is_empty());
        self.emit(Event::Answer {
            node: n,
            answer: answer.clone(),
        });
        let children = if answer.chosen.is_empty() && answer.new_questions.is_empty() {
            // Nothing picked: the user let the system go on with every direction.
            chosen
                .into_iter()
                .zip(peeks)
                .map(|(c, p)| Child::planned(c, p))
                .collect()
        } else {
            let mut children = Vec::new();
            for &i in &answer.chosen {
                let peek = std::mem::take(&mut peeks[i - 1]);
                let mut child = Child::planned(chosen[i - 1].clone(), peek);
                child.provenance = Provenance::UserPause;
                child.priority = todo::ROOT_PRIORITY;
                children.push(child);
            }
            children.extend(answer.new_questions.iter().map(|q| Child::from_user(q)));
            children
        };
        if !answer.is_empty() {
            let mut persona = self.s.persona.clone();
            let before = persona.clone();
            let (update, completion) =
                persona::update(self.r.llm, &mut persona, &answer.describe(&question))?;
            self.account(Stage::Persona, &completion);
            self.emit_persona_update(before, persona, update.additional_persona_info.trim());
        }
        Ok(children)
    }

    /// Adds the kept children under `n`, each with its task.
    fn add_children(&mut self, n: usize, children: Vec<Child>) {
        for c in children {
            self.add_node(
                n,
                &c.follow_up,
                c.origin,
                c.prefetched,
                c.provenance,
                c.priority,
            );
        }
    }
}
