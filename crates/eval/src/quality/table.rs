//! `table.md` of `rudder eval quality`: one Markdown table per stage, means over the sample,
//! and the sample itself.

use std::fmt::Write as _;

use super::findings::{Consistency, FindingCoverage};
use super::{cost_by_stage, ProfileRecord, QualityRecords, ReportSystem};
use crate::matchers::Calibration;

fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    (n > 0).then(|| sum / n as f64)
}

fn fmt(v: Option<f64>) -> String {
    v.map_or("–".to_string(), |v| format!("{v:.2}"))
}

fn calibration_row(out: &mut String, name: &str, c: &Calibration) {
    let _ = writeln!(
        out,
        "| {name} | {:.3} | {:.2} | {:.2} | {:.2} | {} ({} positive) | {} |",
        c.threshold,
        c.held_out.precision,
        c.held_out.recall,
        c.held_out.f1,
        c.held_out.pairs,
        c.held_out.positives,
        c.calibration.pairs,
    );
}

/// The whole table.
pub fn markdown(r: &QualityRecords) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Output quality — model {}, embedder {}, planted-needs seed {}, depth {}, breadth {}\n",
        r.model, r.embed_model, r.seed, r.depth, r.breadth
    );

    out.push_str(
        "## Matchers (threshold calibrated on one half of the pairs, scored on the other)\n\n",
    );
    out.push_str("| matcher | threshold | held-out precision | held-out recall | held-out F1 | held-out pairs | calibration pairs |\n|---|---|---|---|---|---|---|\n");
    calibration_row(&mut out, "addresses the need", &r.calibration.need);
    calibration_row(&mut out, "supported by the passage", &r.calibration.support);
    if let Some(c) = &r.calibration.profile_need {
        calibration_row(&mut out, "a profile statement states the need", c);
    }

    out.push_str("\n## Retrieval of the planting sessions\n\n");
    if let Some(ret) = &r.retrieval {
        out.push_str("| expansion | nDCG@10 | recall@20 | questions |\n|---|---|---|---|\n");
        for m in &ret.modes {
            let _ = writeln!(
                out,
                "| {} | {:.3} | {:.3} | {} |",
                m.mode.as_str(),
                m.ndcg_at_10,
                m.recall_at_20,
                m.queries
            );
        }
    } else {
        out.push_str("not measured (see failures)\n");
    }

    if !r.memory.is_empty() {
        let sessions: usize = r.memory.iter().map(|m| m.read + m.skipped).sum();
        let seconds: f64 = r.memory.iter().map(|m| m.cost.seconds).sum();
        let _ = writeln!(
            out,
            "\n## Memory (read once per user after import)\n\n{} users: {} sessions ({} read by \
             the model, {} skipped by the cheap check), {} statements, {:.0} s: {:.2} sessions/s \
             ({:.1} min per 1,000 sessions).",
            r.memory.len(),
            sessions,
            r.memory.iter().map(|m| m.read).sum::<usize>(),
            r.memory.iter().map(|m| m.skipped).sum::<usize>(),
            r.memory.iter().map(|m| m.statements).sum::<usize>(),
            seconds,
            sessions as f64 / seconds.max(1e-9),
            seconds / 60.0 * 1000.0 / (sessions.max(1) as f64),
        );
    }

    out.push_str("\n## Query-aware profile\n\n");
    out.push_str("| questions | need recall | citation precision | statements per profile |\n|---|---|---|---|\n");
    let _ = writeln!(
        out,
        "| {} | {} | {} | {} |",
        r.profiles.len(),
        fmt(mean(r.profiles.iter().map(|p| p.need_recall))),
        fmt(mean(r.profiles.iter().filter_map(|p| p.citation_precision))),
        fmt(mean(r.profiles.iter().map(|p| p.statements.len() as f64))),
    );
    answer_style(&mut out, r);

    out.push_str("\n## Reports\n\n");
    out.push_str("| system | reports | need uptake | repetition | citation support | uncited | debris per report | words | tokens | seconds |\n|---|---|---|---|---|---|---|---|---|---|\n");
    for system in ReportSystem::ALL {
        let rs: Vec<_> = r.reports.iter().filter(|x| x.system == system).collect();
        if rs.is_empty() {
            continue;
        }
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            system.name(),
            rs.len(),
            fmt(mean(rs.iter().map(|x| x.need_uptake))),
            fmt(mean(rs.iter().map(|x| x.hygiene.repetition()))),
            fmt(mean(rs.iter().filter_map(|x| x.hygiene.citation_support()))),
            fmt(mean(rs.iter().map(|x| x.hygiene.uncited_share()))),
            fmt(mean(rs.iter().map(|x| x.hygiene.debris.len() as f64))),
            mean(rs.iter().map(|x| x.hygiene.words as f64))
                .map_or("–".into(), |w| format!("{w:.0}")),
            mean(rs.iter().map(|x| loop_tokens(&x.cost) as f64))
                .map_or("–".into(), |n| format!("{n:.0}")),
            mean(rs.iter().map(|x| x.seconds)).map_or("–".into(), |s| format!("{s:.0}")),
        );
    }
    if let Some(share) = r.profile_false_personalisation() {
        let dragged: Vec<String> = r
            .foreign_profiles
            .iter()
            .filter(|x| !x.needs_stated.is_empty())
            .map(|x| format!("{} ({})", x.question, list(&x.needs_stated)))
            .collect();
        let cited: usize = r.foreign_profiles.iter().map(|p| p.cited_sessions).sum();
        let planted: usize = r.foreign_profiles.iter().map(|p| p.cited_planted).sum();
        let _ = writeln!(
            out,
            "\n**False personalisation in profiles:** {share:.2} of {} profiles for another \
             user's question state a need of their own user's that belongs to another \
             question{}; {planted} of the {cited} sessions they cite plant such a need; {:.1} \
             statements per profile.",
            r.foreign_profiles.len(),
            if dragged.is_empty() {
                String::new()
            } else {
                format!(": {}", dragged.join("; "))
            },
            mean(r.foreign_profiles.iter().map(|p| p.statements.len() as f64)).unwrap_or(0.0),
        );
    }
    if let Some(share) = r.false_personalisation() {
        let dragged: Vec<String> = r
            .foreign
            .iter()
            .filter(|x| !x.needs_addressed.is_empty() || !x.needs_named_not_covered.is_empty())
            .map(|x| {
                let mut ids = x.needs_addressed.clone();
                ids.extend(x.needs_named_not_covered.iter().cloned());
                format!("{} ({})", x.question, list(&ids))
            })
            .collect();
        let _ = writeln!(
            out,
            "\n**False personalisation:** {share:.2} of {} history reports on another user's \
             question state a need of their own user's that belongs to another question, as \
             advice or as something the sources do not cover{}.",
            r.foreign.len(),
            if dragged.is_empty() {
                String::new()
            } else {
                format!(": {}", dragged.join("; "))
            }
        );
    }
    out.push_str(
        "\n*tokens*: prompt + generated tokens of the research run per report (every stage of \
         the loop; the history system's profile is counted under Cost, stage `profile`).\n",
    );

    out.push_str("\n## What the reports carry of the research\n\n");
    out.push_str("| system | reports | distinct findings | finding coverage | of those on the question | summary in body | \"not covered\" needs | of them false | words |\n|---|---|---|---|---|---|---|---|---|\n");
    let carried = ReportSystem::ALL
        .iter()
        .map(|&system| {
            let rs: Vec<_> = r.reports.iter().filter(|x| x.system == system).collect();
            let parts: Vec<(&FindingCoverage, &Consistency, usize)> = rs
                .iter()
                .map(|x| (&x.findings, &x.consistency, x.hygiene.words))
                .collect();
            (system.name().to_string(), parts)
        })
        .chain(["researchy", "grounded"].iter().map(|&set| {
            let parts = r
                .coverage
                .iter()
                .filter(|x| x.set == set)
                .map(|x| (&x.findings, &x.consistency, x.hygiene.words))
                .collect();
            (format!("no-history ({set} questions)"), parts)
        }));
    for (name, parts) in carried {
        if parts.is_empty() {
            continue;
        }
        let _ = writeln!(
            out,
            "| {name} | {} | {} | {} | {} | {} | {} | {} | {} |",
            parts.len(),
            mean(parts.iter().map(|p| p.0.distinct as f64))
                .map_or("–".into(), |n| format!("{n:.1}")),
            fmt(mean(parts.iter().filter_map(|p| p.0.share()))),
            fmt(mean(parts.iter().filter_map(|p| p.0.on_question_share()))),
            fmt(mean(parts.iter().filter_map(|p| p.1.summary_share()))),
            parts.iter().map(|p| p.1.not_covered).sum::<usize>(),
            parts
                .iter()
                .map(|p| p.1.false_not_covered.len())
                .sum::<usize>(),
            mean(parts.iter().map(|p| p.2 as f64)).map_or("–".into(), |w| format!("{w:.0}")),
        );
    }
    out.push_str(
        "\n*finding coverage*: the share of the run's distinct findings some report paragraph \
         states (support matcher); *of those on the question*: the same, leaving aside the \
         findings the report says it left out as not about the question (cosine cuts, finding \
         judge); *summary in body*: the share of the summary's sentences a \
         section paragraph supports; *false*: needs listed as not covered that a sentence of the \
         report answers.\n",
    );

    out.push_str("\n## Answer coverage (Wikipedia corpus)\n\n");
    if r.coverage.is_empty() {
        out.push_str("not run (no `--eval-dir` and no grounded question, or none sampled)\n");
    }
    for set in ["researchy", "grounded"] {
        let c: Vec<_> = r.coverage.iter().filter(|x| x.set == set).collect();
        if c.is_empty() {
            continue;
        }
        let _ = writeln!(
            out,
            "\n{}\n",
            if set == "grounded" {
                "Corpus-grounded questions (`data/grounded.jsonl`: the corpus states every key point):"
            } else {
                "Researchy questions (the corpus may not hold their key points):"
            }
        );
        out.push_str("| questions | key-point recall | repetition | citation support | uncited | debris per report | words |\n|---|---|---|---|---|---|---|\n");
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} |",
            c.len(),
            fmt(mean(c.iter().map(|x| x.recall))),
            fmt(mean(c.iter().map(|x| x.hygiene.repetition()))),
            fmt(mean(c.iter().filter_map(|x| x.hygiene.citation_support()))),
            fmt(mean(c.iter().map(|x| x.hygiene.uncited_share()))),
            fmt(mean(c.iter().map(|x| x.hygiene.debris.len() as f64))),
            mean(c.iter().map(|x| x.hygiene.words as f64))
                .map_or("–".into(), |w| format!("{w:.0}")),
        );
    }

    out.push_str("\n## Cost per stage (all runs above)\n\n");
    out.push_str(
        "| stage | calls | prompt tokens | of them cached | generated tokens | seconds |\n|---|---|---|---|---|---|\n",
    );
    for (stage, c) in cost_by_stage(r) {
        let _ = writeln!(
            out,
            "| {stage} | {} | {} | {} | {} | {:.0} |",
            c.calls, c.prompt_tokens, c.cached_tokens, c.generated_tokens, c.seconds
        );
    }

    let s = &r.sample;
    let _ = writeln!(
        out,
        "\n## Sample\n\n- users: {}\n- retrieval: {} questions\n- profile: {}\n- report: {}\n- answer coverage: {}\n- corpus-grounded answer coverage: {}\n- documents: {}\n- total: {:.0} s",
        s.users.join(", "),
        s.retrieval.len(),
        list(&s.profile),
        list(&s.report),
        list(&s.researchy),
        list(&s.grounded),
        if s.guides {
            "the Wikipedia corpus and the guides (`crates/eval/data/guides/`)"
        } else {
            "the Wikipedia corpus"
        },
        r.seconds
    );
    if !r.failures.is_empty() {
        let _ = writeln!(
            out,
            "\n{} run(s) failed and are left out of the means (records.json, `failures`):",
            r.failures.len()
        );
        for f in &r.failures {
            let _ = writeln!(out, "- {} {}: {}", f.stage, f.item, one_line(&f.error));
        }
    }
    out
}

fn list(ids: &[String]) -> String {
    if ids.is_empty() {
        "none".into()
    } else {
        format!("{} ({})", ids.len(), ids.join(", "))
    }
}

fn one_line(s: &str) -> String {
    rudder::text::one_line(s, 200)
}

/// Prompt + generated tokens of a report's research run, the profile left out (it is built
/// once per question and shown in its own row of the cost table).
fn loop_tokens(cost: &std::collections::BTreeMap<String, super::Cost>) -> u64 {
    cost.iter()
        .filter(|(stage, _)| stage.as_str() != "profile")
        .map(|(_, c)| c.prompt_tokens + c.generated_tokens)
        .sum()
}

/// How the report would be written, per profile: a user's style holds for every question they
/// ask, so their own and their foreign questions' profiles count alike.
fn answer_style(out: &mut String, r: &QualityRecords) {
    let all: Vec<&ProfileRecord> = r.profiles.iter().chain(&r.foreign_profiles).collect();
    let wanting: Vec<&&ProfileRecord> = all.iter().filter(|p| !p.style_asked.is_empty()).collect();
    if all.is_empty() {
        return;
    }
    let given: Vec<String> = wanting
        .iter()
        .filter(|p| p.style_given)
        .map(|p| {
            format!(
                "{} by {} ({})",
                p.question,
                p.user,
                p.style_asked.join(", ")
            )
        })
        .collect();
    let unasked: Vec<String> = all
        .iter()
        .filter(|p| !p.style.is_default() && !p.style_given)
        .map(|p| {
            format!(
                "{} by {} (“{}”)",
                p.question,
                p.user,
                p.style.because.join("”, “")
            )
        })
        .collect();
    let _ = writeln!(
        out,
        "\n**Answer style:** {} of {} profiles of users whose tone need asks for a form \
         (bullet points, numbered steps, a checklist, short) give the report that form{}; {} \
         of {} profiles give a style other than the one the user asked for{}.",
        given.len(),
        wanting.len(),
        if given.is_empty() {
            String::new()
        } else {
            format!(": {}", given.join("; "))
        },
        unasked.len(),
        all.len(),
        if unasked.is_empty() {
            String::new()
        } else {
            format!(": {}", unasked.join("; "))
        },
    );
}
