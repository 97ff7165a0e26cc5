//! The report (the `report` step of docs/architecture.md): the learnings of the tree the user
//! kept, written up with citations.

use crate::checks::judge;
use crate::profile::{relevance, ProfileError};
use crate::research::engine::Run;
use crate::research::events::{Event, Stage};
use crate::research::report;
use crate::research::tree::{self, Tree};
use crate::research::ResearchError;

impl Run<'_, '_> {
    /// Writes the report, section by section, answering the needs of the profile and the
    /// persona checklist at the end.
    pub(in crate::research) fn write_report(&mut self) -> Result<(), ResearchError> {
        let ReadersNeeds {
            mut needs,
            mut unanticipated,
            aspects,
        } = self.readers_needs()?;
        let considered = self.brief.considered.clone();
        // A fact the documents show matters is a need; the report says it when a finding meets
        // it, and is silent otherwise (the judge alone did not tie it to the question).
        for need in self.look_up_needs(&needs, &considered)? {
            if !needs.contains(&need) {
                unanticipated.push(need.clone());
                needs.push(need);
            }
        }
        let tree = self.reported_tree();
        // How the reader wants answers: what the profile states of it and what they said.
        let told = crate::checks::text::split_sentences(&self.s.persona_text);
        let style = report::answer_style(&self.s.profile, &told);
        if !style.is_default() {
            tracing::info!(?style, "report: written in the reader's style");
        }
        let input = report::ReportInput {
            query: &self.s.query,
            asked: &self.s.asked,
            persona: &self.s.persona,
            profile: &self.s.profile,
            needs: &needs,
            unanticipated_needs: &unanticipated,
            aspects: &aspects,
            tree: &tree,
            learnings: &self.s.learnings,
            evidence: &self.s.evidence,
            current_date: &self.s.date,
            support_judge: self.support_judge(),
            finding_judge: self.finding_judge(),
            need_judge: self.need_judge(),
            style: &style,
        };
        let mut sections = Vec::new();
        let (report, completions) =
            report::write(self.r.llm, self.r.embedder, &input, &mut |i, h| {
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
            report: Some(Box::new(report)),
        });
        Ok(())
    }

    /// What *What this means for you* speaks to: the reader's needs and the topics they asked
    /// the report to cover. A reader Rudder knows nothing about (no profile, nothing they
    /// said) gets neither.
    ///
    /// The needs are facts about the reader that bear on this question: the profile's
    /// statements and the sentences the user wrote about themselves for this question. Every
    /// profile carries the user's own statements and custom instructions whatever the
    /// question, so each is put to the relevance judge ("I cook most evenings" is no need of a
    /// running-shoe question); one the profile inferred for this question was judged by the
    /// same prompt and passes again.
    ///
    /// The topics are the checklist the user gave with the question, in their own words: their
    /// findings stay in the body, and a topic no finding answers is named as not covered. The
    /// checklists the model writes (from clarification answers, the question or a profile)
    /// steer the research but are never named. A model's vague reading of an answer ("the
    /// impact of this technology on Europe") matched none of the findings that answer it, and
    /// named a false "not covered" in a report whose body was about exactly that; one guessed
    /// from a profile puts words in the user's mouth ("shoes that suit your cooking habits");
    /// and the answers themselves are not topics ("For myself" answers who the tea is for).
    ///
    /// A profile's need the question's facet lines do not anticipate (closest cosine below
    /// [`relevance::ANTICIPATED_FACET_SIMILARITY`]) is answered when a finding meets it, and
    /// otherwise left unsaid ([`report::ReportInput::unanticipated_needs`]); a need in the
    /// user's own words (a line they said, a sentence they wrote) is always named.
    fn readers_needs(&mut self) -> Result<ReadersNeeds, ResearchError> {
        let aspects: Vec<String> = self.brief.checklist.clone().unwrap_or_default();
        let knows_the_reader = !self.s.profile.trim().is_empty()
            || !self.s.persona_text.trim().is_empty()
            || !aspects.is_empty();
        if !knows_the_reader {
            return Ok(ReadersNeeds::default());
        }
        let told = crate::checks::text::split_sentences(&self.s.persona_text);
        let needs = report::needs_from(&self.s.profile, &told);
        let statements: Vec<&str> = needs.iter().map(|n| n.statement.as_str()).collect();
        if statements.is_empty() {
            return Ok(ReadersNeeds {
                aspects,
                ..ReadersNeeds::default()
            });
        }
        let started = std::time::Instant::now();
        let from_profile = |e: ProfileError| match e {
            ProfileError::Llm(e) => ResearchError::Llm(e),
            ProfileError::Prompt(e) => ResearchError::Prompt(e),
            ProfileError::Engine(e) => ResearchError::Engine(e),
            other => ResearchError::Session(other.to_string()),
        };
        let (mut judged, mut usage) =
            relevance::relevance(self.r.llm, &self.s.query, &statements).map_err(from_profile)?;
        // Judged as the profile judges: with the question's facet lines (the profile's prompt,
        // so the same lines), which keep a fact the judge alone scores low ("Has knee pain"
        // for running shoes).
        let facets = crate::profile::expand::expand(
            self.r.llm,
            &self.s.query,
            crate::profile::expand::Expansion::Facets,
        )
        .map_err(from_profile)?;
        usage += facets.usage;
        relevance::with_facets(&mut judged, self.r.embedder, &facets.facets(), &statements)
            .map_err(from_profile)?;
        self.emit(Event::Usage {
            stage: Stage::Report,
            usage,
            seconds: started.elapsed().as_secs_f64(),
        });
        let kept: Vec<(report::Need, relevance::Judged)> = needs
            .into_iter()
            .zip(judged)
            .filter(|(need, judged)| {
                let bears = judged.passes(relevance::RELEVANCE_THRESHOLD);
                tracing::debug!(
                    need = %need.text,
                    probability = judged.probability,
                    bias = judged.bias,
                    facet_similarity = judged.facet_similarity.unwrap_or(0.0),
                    bears,
                    "report: a statement judged for this question"
                );
                if !bears {
                    tracing::info!(
                        need = %need.text,
                        relevance = judged.score(),
                        "report: a statement that does not bear on this question is not a need"
                    );
                }
                bears
            })
            .collect();
        // What the user said in their own words is theirs to be told about.
        let unanticipated = kept
            .iter()
            .filter(|(need, judged)| !judged.anticipated() && !need.own_words)
            .map(|(need, _)| need.text.clone())
            .collect();
        Ok(ReadersNeeds {
            needs: kept.into_iter().map(|(need, _)| need.text).collect(),
            unanticipated,
            aspects,
        })
    }

    /// The support judge's threshold for this run's chat model (None: off): the setting, else
    /// the model's calibrated one. The research nodes and the report check with the same.
    pub(in crate::research) fn support_judge(&self) -> Option<f32> {
        self.judge_threshold(self.r.settings.support_judge, judge::threshold_for)
    }

    /// The finding judge's threshold for this run's chat model (None: off), chosen the same way.
    fn finding_judge(&self) -> Option<f32> {
        self.judge_threshold(self.r.settings.finding_judge, judge::finding_threshold_for)
    }

    /// The need judge's threshold for this run's chat model (None: off).
    fn need_judge(&self) -> Option<f32> {
        self.judge_threshold(None, judge::need_threshold_for)
    }

    /// The need lookup's threshold for this run's chat model (None: no lookup).
    pub(in crate::research) fn need_lookup(&self) -> Option<f32> {
        self.judge_threshold(
            self.r.settings.need_lookup,
            judge::need_lookup_threshold_for,
        )
    }

    /// A judge's threshold: the setting, else the one calibrated for the chat model; 0 is off.
    fn judge_threshold(&self, setting: Option<f32>, calibrated: fn(&str) -> f32) -> Option<f32> {
        Some(setting.unwrap_or_else(|| calibrated(self.r.llm.model_name()))).filter(|&t| t > 0.0)
    }

    /// The tree as the report sees it: canceled directions and what the user excluded left
    /// out.
    fn reported_tree(&self) -> Tree {
        let mut tree = self.s.tree.clone();
        let statuses: Vec<tree::Status> = tree.nodes.iter().map(|n| n.status).collect();
        tree.nodes[0]
            .children
            .retain(|&c| statuses[c] != tree::Status::Canceled);
        for node in &mut tree.nodes {
            node.learnings
                .retain(|&l| !self.s.directives.excludes(&self.s.learnings[l].text));
        }
        tree
    }
}

/// What *What this means for you* speaks to ([`Run::readers_needs`]).
#[derive(Debug, Default)]
struct ReadersNeeds {
    /// Facts about the reader that bear on the question.
    needs: Vec<String>,
    /// Of them, those the question's facet lines do not anticipate: never named as uncovered.
    unanticipated: Vec<String>,
    /// The topics the user asked the report to cover.
    aspects: Vec<String>,
}
