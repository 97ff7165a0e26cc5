//! The steerable research loop (STEER §2, DESIGN.md steps 2–7 and 10).
//!
//! From the root question the loop grows a tree level by level up to depth `D`. At each
//! frontier node it takes the planner's follow-ups ([`node`]), picks `K` diverse ones by MMR
//! ([`mmr`]), peeks at the evidence each would find (retrieval only), scores them
//! ([`align`], [`utility`]), and applies the pause rule ([`pause`]): ask the user only when
//! letting them prune is worth more than the interruption ([`interaction`], [`question`]).
//! Answers update the live persona ([`persona`]). Every child is researched over the sources
//! ([`crate::sources`]) into learnings tied to their evidence, and the learnings are written
//! into a cited report ([`report`], [`html`]). Everything that happens is an [`events::Event`].

pub mod align;
pub mod events;
pub mod html;
pub mod interaction;
pub mod mmr;
pub mod node;
pub mod pause;
pub mod persona;
pub mod question;
pub mod report;
pub mod tree;
pub mod utility;

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use serde::{Deserialize, Serialize};

pub use events::{Envelope, Event, EventSink, Stage};
pub use interaction::{Interaction, NeverAsk, PauseAnswer, PauseQuestion, Scripted, Terminal};
pub use pause::{PauseDecision, PauseSettings};
pub use persona::Persona;
pub use report::Report;
pub use tree::{FollowUp, Learning, Node, Origin, Tree};
pub use utility::{TagCounts, Utility, UtilityWeights};

use crate::embed::Embedder;
use crate::llm::{Completion, Llm, Usage};
use crate::sources::{Evidence, Sources};

/// Errors from a research run.
#[derive(Debug, thiserror::Error)]
pub enum ResearchError {
    #[error(transparent)]
    Llm(#[from] crate::llm::LlmError),
    #[error(transparent)]
    Embed(#[from] crate::embed::EmbedError),
    #[error(transparent)]
    Source(#[from] crate::sources::SourceError),
    #[error(transparent)]
    Engine(#[from] crate::Error),
    #[error("{}: {message}", path.display())]
    Input {
        path: std::path::PathBuf,
        message: String,
    },
    #[error("asking the user failed: {0}")]
    Interaction(String),
    #[error("no sources to research: add documents (`rudder docs add DIR`), import history, or enable web search")]
    NoSources,
}

/// One grammar-constrained call with greedy decoding: `prompt` in, a `T` valid under `schema`
/// out.
pub(crate) fn llm_call<T: serde::de::DeserializeOwned>(
    llm: &dyn Llm,
    prompt: String,
    schema: serde_json::Value,
    max_tokens: u32,
) -> Result<(T, Completion), ResearchError> {
    let request = crate::llm::Request {
        messages: vec![crate::llm::Message::user(prompt)],
        options: crate::llm::GenerationOptions {
            max_tokens,
            temperature: 0.0,
            ..crate::llm::GenerationOptions::default()
        },
        format: crate::llm::OutputFormat::JsonSchema(schema),
    };
    let completion = llm.complete_text(&request)?;
    let value = crate::llm::parse_json(&completion.text)?;
    Ok((value, completion))
}

/// The loop's knobs (DESIGN.md defaults).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ResearchSettings {
    /// Maximum depth `D` (the root is depth 0).
    pub depth: u32,
    /// Breadth `K`: directions chosen per frontier node.
    pub breadth: u32,
    pub pause: PauseSettings,
    pub weights: UtilityWeights,
    /// MMR's weight on confidence; 0 is STEER's Appendix C (pure dissimilarity after the first).
    pub mmr_lambda: f32,
    /// Passages retrieved per node (and per peek).
    pub evidence_per_node: usize,
}

impl Default for ResearchSettings {
    fn default() -> Self {
        Self {
            depth: 3,
            breadth: 3,
            pause: PauseSettings::default(),
            weights: UtilityWeights::default(),
            mmr_lambda: 0.0,
            evidence_per_node: 5,
        }
    }
}

/// What the research starts from.
#[derive(Debug, Clone, Default)]
pub struct Brief {
    pub query: String,
    /// What is known about the user up front (a sentence, or the profile's summary).
    pub persona_text: String,
    /// The query-aware profile as prompt text (need, depth, tone, style), or empty.
    pub profile: String,
    /// A checklist to start from; inferred from the persona and query when `None`.
    pub checklist: Option<Vec<String>>,
}

/// Tokens and time spent by one stage.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct StageCost {
    pub usage: Usage,
    pub seconds: f64,
}

/// Everything a finished run produced.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Outcome {
    pub tree: Tree,
    pub learnings: Vec<Learning>,
    pub evidence: BTreeMap<String, Evidence>,
    pub persona: Persona,
    pub report: Report,
    pub usage: Usage,
    pub by_stage: BTreeMap<Stage, StageCost>,
    pub pauses: u32,
    pub seconds: f64,
}

/// What the loop works with.
pub struct Researcher<'a> {
    pub llm: &'a dyn Llm,
    pub embedder: &'a dyn Embedder,
    pub sources: &'a mut Sources,
    pub interaction: &'a mut dyn Interaction,
    pub events: &'a mut dyn EventSink,
    pub settings: ResearchSettings,
    /// The embedding model's name (sources use it to find their stored vectors).
    pub embed_model: String,
}

/// The mutable state of one run.
struct Run<'r, 'a> {
    r: &'r mut Researcher<'a>,
    query: String,
    profile: String,
    tree: Tree,
    learnings: Vec<Learning>,
    learning_vectors: Vec<Vec<f32>>,
    evidence: BTreeMap<String, Evidence>,
    tags: TagCounts,
    persona: Persona,
    /// Pauses per top-level direction (`None` is the root).
    pauses: HashMap<Option<usize>, u32>,
    total_pauses: u32,
    by_stage: BTreeMap<Stage, StageCost>,
    seq: u64,
    date: String,
}

impl<'a> Researcher<'a> {
    /// Runs the whole loop and writes the report.
    pub fn run(&mut self, brief: &Brief) -> Result<Outcome, ResearchError> {
        if self.sources.is_empty() {
            return Err(ResearchError::NoSources);
        }
        let started = Instant::now();
        let mut run = Run {
            query: brief.query.trim().to_string(),
            profile: brief.profile.clone(),
            tree: Tree::new(brief.query.trim()),
            learnings: Vec::new(),
            learning_vectors: Vec::new(),
            evidence: BTreeMap::new(),
            tags: TagCounts::default(),
            persona: Persona {
                text: brief.persona_text.trim().to_string(),
                checklist: Vec::new(),
            },
            pauses: HashMap::new(),
            total_pauses: 0,
            by_stage: BTreeMap::new(),
            seq: 0,
            date: chrono::Utc::now().format("%Y-%m-%d").to_string(),
            r: self,
        };
        run.start(brief)?;
        let report = run.grow_and_write()?;
        let usage = run.by_stage.values().fold(Usage::default(), |mut u, s| {
            u += s.usage;
            u
        });
        let seconds = started.elapsed().as_secs_f64();
        run.emit(Event::Finished {
            usage,
            seconds,
            pauses: run.total_pauses,
        });
        Ok(Outcome {
            tree: run.tree,
            learnings: run.learnings,
            evidence: run.evidence,
            persona: run.persona,
            report,
            usage,
            by_stage: run.by_stage,
            pauses: run.total_pauses,
            seconds,
        })
    }
}

impl Run<'_, '_> {
    fn emit(&mut self, event: Event) {
        let envelope = Envelope {
            seq: self.seq,
            at: chrono::Utc::now(),
            event,
        };
        self.seq += 1;
        self.r.events.emit(&envelope);
    }

    fn account(&mut self, stage: Stage, completion: &Completion) {
        let cost = self.by_stage.entry(stage).or_default();
        cost.usage += completion.usage;
        let seconds = completion.timing.total.as_secs_f64();
        cost.seconds += seconds;
        self.emit(Event::Usage {
            stage,
            usage: completion.usage,
            seconds,
        });
    }

    fn start(&mut self, brief: &Brief) -> Result<(), ResearchError> {
        self.emit(Event::Started {
            query: self.query.clone(),
            depth: self.r.settings.depth,
            breadth: self.r.settings.breadth,
            sources: self.r.sources.names(),
            model: self.r.llm.model_name().to_string(),
            remote_sources: self.r.sources.any_remote(),
        });
        // The persona starts from what the user said and what their history shows (the
        // query-aware profile), so planning and scoring see both from the first step.
        if !self.profile.trim().is_empty() {
            let from_history = tree::one_line(&self.profile.replace('\n', "; "), 400);
            self.persona
                .add_text(&format!("From their history: {from_history}"));
        }
        match &brief.checklist {
            Some(items) => {
                self.persona.add_items(items);
            }
            None => {
                let (items, completion) =
                    persona::infer_checklist(self.r.llm, &self.persona.text, &self.query)?;
                self.account(Stage::Persona, &completion);
                self.persona.add_items(&items);
            }
        }
        self.emit(Event::PersonaSeeded {
            persona: self.persona.clone(),
            from_profile: !self.profile.is_empty(),
        });
        self.emit(Event::NodeAdded {
            id: 0,
            parent: None,
            depth: 0,
            question: self.query.clone(),
            origin: Origin::Root,
        });
        Ok(())
    }

    fn grow_and_write(&mut self) -> Result<Report, ResearchError> {
        self.research_node(0, None)?;
        let mut queue = std::collections::VecDeque::from([0usize]);
        while let Some(n) = queue.pop_front() {
            if self.tree.nodes[n].depth >= self.r.settings.depth {
                continue;
            }
            for child in self.expand(n)? {
                queue.push_back(child);
            }
        }
        self.write_report()
    }

    fn search(&mut self, query: &str) -> Result<Vec<Evidence>, ResearchError> {
        let embedder = Some((self.r.embedder, self.r.embed_model.as_str()));
        Ok(self
            .r
            .sources
            .search(query, self.r.settings.evidence_per_node, embedder)?)
    }

    /// Researches node `id` over `evidence` (searched now when not given).
    fn research_node(
        &mut self,
        id: usize,
        evidence: Option<Vec<Evidence>>,
    ) -> Result<(), ResearchError> {
        self.tree.nodes[id].status = tree::Status::Researching;
        self.emit(Event::NodeStarted { id });
        let question = self.tree.nodes[id].question.clone();
        let evidence = match evidence {
            Some(e) => e,
            None => self.search(&question)?,
        };
        let leaf = self.tree.nodes[id].depth >= self.r.settings.depth;
        let seen = self.tags.seen();
        let ctx = node::NodeContext {
            query: &self.query,
            question: &question,
            persona: &self.persona,
            seen_tags: &seen,
            directives: "",
            current_date: &self.date,
            leaf,
        };
        let findings = match node::research(self.r.llm, &ctx, &evidence) {
            Ok((findings, completion)) => {
                self.account(Stage::Research, &completion);
                findings
            }
            // Output the grammar could not finish within its budget: the node yields nothing,
            // and the rest of the run goes on.
            Err(ResearchError::Llm(e @ crate::llm::LlmError::InvalidOutput { .. })) => {
                tracing::warn!(node = id, "research output unusable: {e}");
                node::Findings::default()
            }
            Err(e) => return Err(e),
        };

        let keys: Vec<String> = evidence.iter().map(|e| e.target.key()).collect();
        for e in &evidence {
            self.evidence
                .entry(e.target.key())
                .or_insert_with(|| e.clone());
        }
        let texts: Vec<&str> = findings.learnings.iter().map(|(t, _)| t.as_str()).collect();
        let vectors = if texts.is_empty() {
            Vec::new()
        } else {
            self.r.embedder.embed(&texts)?
        };
        for ((text, idx), vector) in findings.learnings.iter().zip(vectors) {
            let learning = Learning {
                id: self.learnings.len(),
                node: id,
                text: text.clone(),
                sources: idx.iter().map(|&i| keys[i].clone()).collect(),
            };
            self.tree.nodes[id].learnings.push(learning.id);
            self.learnings.push(learning.clone());
            self.learning_vectors.push(vector);
            self.emit(Event::Learning { learning });
        }
        let node = &mut self.tree.nodes[id];
        for t in findings.tags {
            if !node.tags.contains(&t) {
                node.tags.push(t);
            }
        }
        node.evidence = keys;
        node.follow_ups = if leaf {
            Vec::new()
        } else {
            findings.follow_ups
        };
        node.status = tree::Status::Done;
        let tags = node.tags.clone();
        self.tags.record(tags.iter().map(String::as_str));
        let event = Event::NodeResearched {
            id,
            evidence: self.tree.nodes[id].evidence.len(),
            learnings: self.tree.nodes[id].learnings.len(),
            tags,
            follow_ups: self.tree.nodes[id].follow_ups.clone(),
        };
        self.emit(event);
        Ok(())
    }

    /// Plans, scores and decides at frontier node `n`, then researches the children it keeps.
    fn expand(&mut self, n: usize) -> Result<Vec<usize>, ResearchError> {
        let candidates = self.tree.nodes[n].follow_ups.clone();
        if candidates.is_empty() {
            return Ok(Vec::new());
        }
        let settings = self.r.settings;
        let k = settings.breadth.max(1) as usize;

        // Plan: a diverse K by MMR on the questions' embeddings.
        let questions: Vec<&str> = candidates.iter().map(|c| c.question.as_str()).collect();
        let embeddings = self.r.embedder.embed(&questions)?;
        let confidences: Vec<f32> = candidates.iter().map(|c| c.confidence).collect();
        let selected = mmr::select(&confidences, &embeddings, k, settings.mmr_lambda);
        self.emit(Event::CandidatesSelected {
            node: n,
            candidates: candidates.clone(),
            selected: selected.clone(),
        });
        let chosen: Vec<FollowUp> = selected.iter().map(|&i| candidates[i].clone()).collect();

        // Peek: retrieval only, no model.
        let mut peeks = Vec::with_capacity(chosen.len());
        for c in &chosen {
            peeks.push(self.search(&c.question)?);
        }

        // Utility of each candidate.
        let parent_findings: Vec<String> = self.tree.nodes[n]
            .learnings
            .iter()
            .map(|&l| self.learnings[l].text.clone())
            .collect();
        let views: Vec<align::CandidateView<'_>> = chosen
            .iter()
            .zip(&peeks)
            .map(|(c, e)| align::CandidateView {
                question: &c.question,
                evidence: e,
            })
            .collect();
        let (scores, completion) =
            align::score(self.r.llm, &self.persona, &parent_findings, &views)?;
        self.account(Stage::Alignment, &completion);
        let parent_alignment = utility::alignment(&scores.current);
        let centroid = utility::mean_vector(&self.learning_vectors);
        let child_depth = self.tree.nodes[n].depth + 1;
        let mut scored = Vec::with_capacity(chosen.len());
        let mut values = Vec::with_capacity(chosen.len());
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
                utility::explore(&c.tags, &self.tags, settings.weights.explore_epsilon),
                utility::info_gain(evidence_mean.as_deref(), centroid.as_deref()),
                &settings.weights,
            );
            let cost = utility::execution_cost(settings.depth, settings.breadth, child_depth);
            values.push(pause::CandidateValue {
                utility: u.total,
                confidence: c.confidence,
                execution_cost: cost,
            });
            scored.push(events::ScoredCandidate {
                follow_up: c.clone(),
                expected_evidence: peeks[i].iter().map(|e| e.title.clone()).collect(),
                utility: u,
                execution_cost: cost,
            });
        }

        // Pause rule: the root counts as its own direction; below it, the tolerance is shared
        // by the active top-level directions.
        let direction = self.tree.nodes[n].direction;
        let active = if direction.is_none() {
            1
        } else {
            self.tree.directions().len().max(1) as u32
        };
        let pauses_here = self.pauses.get(&direction).copied().unwrap_or(0);
        let decision = pause::decide(&values, &settings.pause, pauses_here, active);
        let asked = decision.ask && self.r.interaction.can_ask();
        tracing::info!(node = n, "{}", decision.explain());
        self.emit(Event::PauseDecided {
            node: n,
            candidates: scored,
            parent_alignment,
            decision: decision.clone(),
            asked,
        });

        let mut expand: Vec<(FollowUp, Origin, Option<Vec<Evidence>>)> = Vec::new();
        let origin_of = |c: &FollowUp| {
            if c.wild_card {
                Origin::WildCard
            } else {
                Origin::Planned
            }
        };
        if asked {
            let questions: Vec<String> = chosen.iter().map(|c| c.question.clone()).collect();
            let (question, completion) = question::generate(
                self.r.llm,
                &self.query,
                &self.persona,
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
            *self.pauses.entry(direction).or_insert(0) += 1;
            self.total_pauses += 1;
            self.emit(Event::Answer {
                node: n,
                answer: answer.clone(),
            });
            if answer.chosen.is_empty() && answer.new_questions.is_empty() {
                // Nothing picked: the user let the system go on with every direction.
                for (c, p) in chosen.into_iter().zip(peeks) {
                    let o = origin_of(&c);
                    expand.push((c, o, Some(p)));
                }
            } else {
                let mut peeks: Vec<Option<Vec<Evidence>>> = peeks.into_iter().map(Some).collect();
                for &i in &answer.chosen {
                    let c = chosen[i - 1].clone();
                    let o = origin_of(&c);
                    expand.push((c, o, peeks[i - 1].take()));
                }
                for q in &answer.new_questions {
                    expand.push((
                        FollowUp {
                            question: q.trim().to_string(),
                            confidence: 1.0,
                            tags: Vec::new(),
                            wild_card: false,
                        },
                        Origin::User,
                        None,
                    ));
                }
            }
            if !answer.is_empty() {
                let before = self.persona.clone();
                let (update, completion) =
                    persona::update(self.r.llm, &mut self.persona, &answer.describe(&question))?;
                self.account(Stage::Persona, &completion);
                let added_items: Vec<String> = self
                    .persona
                    .checklist
                    .iter()
                    .filter(|c| !before.checklist.contains(c))
                    .cloned()
                    .collect();
                let added_text = if self.persona.text != before.text {
                    update.additional_persona_info.trim().to_string()
                } else {
                    String::new()
                };
                self.emit(Event::PersonaUpdated {
                    persona: self.persona.clone(),
                    added_text,
                    added_items,
                });
            }
        } else {
            for (c, p) in chosen.into_iter().zip(peeks) {
                let o = origin_of(&c);
                expand.push((c, o, Some(p)));
            }
        }

        let mut children = Vec::with_capacity(expand.len());
        for (follow_up, origin, evidence) in expand {
            let id = self.tree.add_child(n, &follow_up, origin);
            self.emit(Event::NodeAdded {
                id,
                parent: Some(n),
                depth: self.tree.nodes[id].depth,
                question: follow_up.question.clone(),
                origin,
            });
            self.research_node(id, evidence)?;
            children.push(id);
        }
        Ok(children)
    }

    fn write_report(&mut self) -> Result<Report, ResearchError> {
        let input = report::ReportInput {
            query: &self.query,
            persona: &self.persona,
            profile: &self.profile,
            tree: &self.tree,
            learnings: &self.learnings,
            evidence: &self.evidence,
            current_date: &self.date,
        };
        let mut sections = Vec::new();
        let (report, completions) = report::write(self.r.llm, &input, &mut |i, h| {
            sections.push((i, h.to_string()))
        })?;
        for (index, heading) in sections {
            self.emit(Event::ReportSection { index, heading });
        }
        for c in &completions {
            self.account(Stage::Report, c);
        }
        self.emit(Event::ReportWritten {
            title: report.title.clone(),
            words: report.words(),
            citations: report.references.len(),
        });
        Ok(report)
    }
}
