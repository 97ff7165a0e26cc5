//! What an evaluation run reports: one record per (case, system) run, a Markdown table shaped
//! like STEER's Table 1 (mean per system), SVG plots of alignment, focus and pauses against
//! the base pause cost C0, and the records themselves as JSON.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use plotters::prelude::*;
use serde::{Deserialize, Serialize};

use super::EvalError;

/// One report, judged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub case_id: String,
    /// `query-only`, `initial-persona`, `full-persona`, `rudder` (with pauses and history).
    pub system: String,
    /// The base pause cost, for runs that may pause.
    pub c0: Option<f32>,
    /// STEER alignment in [0, 1] (per-aspect 0/1/2, mean / 2).
    pub alignment: f32,
    /// Focus_kp in [0, 1].
    pub focus: f32,
    /// How well the system's inferred checklist covers the persona's aspects, in [0, 1].
    pub checklist: Option<f32>,
    /// BESPOKE's need alignment, content depth, tone and explanation style, 1–5 each.
    pub bespoke: Option<[f32; 4]>,
    pub pauses: u32,
    /// What the system spent on the report (profile and research; not the simulated user or
    /// the judges, which are in `stages`).
    pub llm_calls: u64,
    pub prompt_tokens: u64,
    pub generated_tokens: u64,
    /// Model time of the system's calls, in seconds.
    pub seconds: f64,
    /// The same per stage, with the simulated user and the judges.
    #[serde(default)]
    pub stages: StageCosts,
    /// Wall time of the whole run as measured, judging included; less than the stages' sum
    /// when completions were replayed from the cache.
    #[serde(default)]
    pub wall_seconds: f64,
}

/// Calls, tokens and model time of one stage of a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct StageCost {
    pub calls: u64,
    pub prompt_tokens: u64,
    pub generated_tokens: u64,
    pub seconds: f64,
}

impl StageCost {
    pub fn new(usage: rudder::llm::Usage, seconds: f64) -> Self {
        Self {
            calls: usage.calls,
            prompt_tokens: usage.prompt_tokens,
            generated_tokens: usage.generated_tokens,
            seconds,
        }
    }
}

/// A run's cost by stage: the query-aware profile over the history (`rudder` only), the
/// research loop with its clarifications and report, the simulated user's answers, and the
/// judges.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct StageCosts {
    pub profile: StageCost,
    pub research: StageCost,
    pub user: StageCost,
    pub judge: StageCost,
}

impl RunRecord {
    /// The label a row of the table carries: the system, with C0 when it pauses.
    pub fn label(&self) -> String {
        match self.c0 {
            Some(c0) => format!("{} (C0 = {c0:.1})", self.system),
            None => self.system.clone(),
        }
    }
}

/// Means over the runs of one row.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RowMean {
    pub label: String,
    pub runs: usize,
    pub alignment: f64,
    pub focus: f64,
    pub checklist: Option<f64>,
    pub bespoke: Option<[f64; 4]>,
    pub pauses: f64,
    pub tokens: f64,
    pub seconds: f64,
}

fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    (n > 0).then(|| sum / n as f64)
}

/// One row per label, in first-seen order (so the table follows the order systems were run).
pub fn row_means(records: &[RunRecord]) -> Vec<RowMean> {
    let mut order: Vec<String> = Vec::new();
    let mut groups: BTreeMap<String, Vec<&RunRecord>> = BTreeMap::new();
    for r in records {
        let label = r.label();
        if !order.contains(&label) {
            order.push(label.clone());
        }
        groups.entry(label).or_default().push(r);
    }
    order
        .into_iter()
        .map(|label| {
            let rows = &groups[&label];
            let bespoke = (0..4)
                .map(|i| {
                    mean(
                        rows.iter()
                            .filter_map(|r| r.bespoke.map(|b| f64::from(b[i]))),
                    )
                })
                .collect::<Option<Vec<f64>>>()
                .map(|v| [v[0], v[1], v[2], v[3]]);
            RowMean {
                runs: rows.len(),
                alignment: mean(rows.iter().map(|r| f64::from(r.alignment))).unwrap_or(0.0),
                focus: mean(rows.iter().map(|r| f64::from(r.focus))).unwrap_or(0.0),
                checklist: mean(rows.iter().filter_map(|r| r.checklist.map(f64::from))),
                bespoke,
                pauses: mean(rows.iter().map(|r| f64::from(r.pauses))).unwrap_or(0.0),
                tokens: mean(
                    rows.iter()
                        .map(|r| (r.prompt_tokens + r.generated_tokens) as f64),
                )
                .unwrap_or(0.0),
                seconds: mean(rows.iter().map(|r| r.seconds)).unwrap_or(0.0),
                label,
            }
        })
        .collect()
}

/// The records to compare: systems are compared on the same cases only, so a case in `failed`
/// (a run of it failed) or without a record of every system seen (a sweep that stopped) is
/// left out. Returns the kept records and the incomplete cases (not counting failed ones).
pub fn comparable_records(
    records: &[RunRecord],
    failed: &BTreeSet<String>,
) -> (Vec<RunRecord>, Vec<String>) {
    let labels: BTreeSet<String> = records.iter().map(RunRecord::label).collect();
    let mut per_case: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for r in records {
        per_case.entry(&r.case_id).or_default().insert(r.label());
    }
    let incomplete: Vec<String> = per_case
        .into_iter()
        .filter(|(case, seen)| *seen != labels && !failed.contains(*case))
        .map(|(case, _)| case.to_string())
        .collect();
    let kept = records
        .iter()
        .filter(|r| !failed.contains(&r.case_id) && !incomplete.contains(&r.case_id))
        .cloned()
        .collect();
    (kept, incomplete)
}

/// The Markdown table: alignment and focus as percentages (as STEER reports them), BESPOKE's
/// criteria on its 0–100 scale (Likert × 20), then pauses, tokens and seconds per report.
pub fn markdown_table(records: &[RunRecord]) -> String {
    let mut out = String::from(
        "| System | n | Align | Focus_kp | Checklist | Need | Depth | Tone | Style | Pauses | Tokens | Seconds |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    let pct = |v: f64| format!("{:.1}", v * 100.0);
    for row in row_means(records) {
        let checklist = row.checklist.map(pct).unwrap_or_else(|| "–".into());
        let bespoke: Vec<String> = match row.bespoke {
            Some(b) => b.iter().map(|v| format!("{:.1}", v * 20.0)).collect(),
            None => vec!["–".into(); 4],
        };
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {:.2} | {:.0} | {:.0} |\n",
            row.label,
            row.runs,
            pct(row.alignment),
            pct(row.focus),
            checklist,
            bespoke.join(" | "),
            row.pauses,
            row.tokens,
            row.seconds,
        ));
    }
    out
}

/// One plot panel: title, (C0, mean) points, the y axis' top, the colour, and the baselines'
/// level on the same measure (name, mean).
type Panel<'a> = (
    &'a str,
    &'a Vec<(f64, f64)>,
    f64,
    RGBColor,
    Vec<(&'a str, f64)>,
);

/// Dash colours for the baselines, in the order they were run.
const BASELINE_COLOURS: [RGBColor; 3] = [
    RGBColor(107, 114, 128),
    RGBColor(217, 119, 6),
    RGBColor(147, 51, 234),
];

/// Alignment, focus and pauses of the pausing runs against C0 (means per C0), one SVG. The
/// systems that never pause (`query-only`, the persona baselines) are drawn as dashed levels
/// on the alignment and focus panels, as STEER's plots compare against them.
pub fn plot_against_c0(records: &[RunRecord], path: &Path) -> Result<(), EvalError> {
    let mut by_c0: BTreeMap<i64, Vec<&RunRecord>> = BTreeMap::new();
    for r in records {
        if let Some(c0) = r.c0 {
            // Keyed in thousandths so equal settings group exactly.
            by_c0
                .entry((c0 * 1000.0).round() as i64)
                .or_default()
                .push(r);
        }
    }
    let points = |f: &dyn Fn(&RunRecord) -> f64| -> Vec<(f64, f64)> {
        by_c0
            .iter()
            .filter_map(|(k, rs)| mean(rs.iter().map(|r| f(r))).map(|m| (*k as f64 / 1000.0, m)))
            .collect()
    };
    let alignment = points(&|r| f64::from(r.alignment));
    let focus = points(&|r| f64::from(r.focus));
    let pauses = points(&|r| f64::from(r.pauses));
    let max_pauses = pauses.iter().map(|p| p.1).fold(1.0_f64, f64::max).ceil();
    let baseline_rows: Vec<RowMean> = row_means(
        &records
            .iter()
            .filter(|r| r.c0.is_none())
            .cloned()
            .collect::<Vec<_>>(),
    );
    let levels = |f: &dyn Fn(&RowMean) -> f64| -> Vec<(&str, f64)> {
        baseline_rows
            .iter()
            .map(|row| (row.label.as_str(), f(row)))
            .collect()
    };
    let draw = || -> Result<(), Box<dyn std::error::Error>> {
        let root = SVGBackend::new(path, (900, 360)).into_drawing_area();
        root.fill(&WHITE)?;
        let panels = root.split_evenly((1, 3));
        let series: [Panel; 3] = [
            (
                "Alignment",
                &alignment,
                1.0,
                RGBColor(37, 99, 235),
                levels(&|row| row.alignment),
            ),
            (
                "Focus_kp",
                &focus,
                1.0,
                RGBColor(22, 163, 74),
                levels(&|row| row.focus),
            ),
            (
                "Pauses per run",
                &pauses,
                max_pauses,
                RGBColor(220, 38, 38),
                Vec::new(),
            ),
        ];
        for (panel, (title, data, y_max, color, baselines)) in panels.iter().zip(series) {
            let mut chart = ChartBuilder::on(panel)
                .caption(title, ("sans-serif", 18))
                .margin(12)
                .x_label_area_size(32)
                .y_label_area_size(40)
                .build_cartesian_2d(0.0..1.05, 0.0..y_max)?;
            chart.configure_mesh().x_desc("C0").draw()?;
            chart.draw_series(LineSeries::new(data.iter().copied(), color))?;
            chart.draw_series(data.iter().map(|p| Circle::new(*p, 4, color.filled())))?;
            for (i, (name, level)) in baselines.iter().enumerate() {
                let dash = BASELINE_COLOURS[i % BASELINE_COLOURS.len()];
                chart
                    .draw_series(DashedLineSeries::new(
                        [(0.0, *level), (1.05, *level)],
                        6,
                        4,
                        dash.stroke_width(1),
                    ))?
                    .label(*name)
                    .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], dash));
            }
            if !baselines.is_empty() {
                chart
                    .configure_series_labels()
                    .position(SeriesLabelPosition::LowerRight)
                    .background_style(WHITE.mix(0.8))
                    .border_style(BLACK.mix(0.3))
                    .label_font(("sans-serif", 11))
                    .draw()?;
            }
        }
        root.present()?;
        Ok(())
    };
    draw().map_err(|e| EvalError::Io {
        path: path.to_path_buf(),
        source: std::io::Error::other(e.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(system: &str, c0: Option<f32>, alignment: f32, focus: f32, pauses: u32) -> RunRecord {
        RunRecord {
            case_id: "c".into(),
            system: system.into(),
            c0,
            alignment,
            focus,
            checklist: None,
            bespoke: Some([3.0, 4.0, 5.0, 2.0]),
            pauses,
            llm_calls: 10,
            prompt_tokens: 900,
            generated_tokens: 100,
            seconds: 12.0,
            stages: StageCosts::default(),
            wall_seconds: 20.0,
        }
    }

    #[test]
    fn rows_average_per_system_and_c0_in_run_order() {
        let records = [
            record("query-only", None, 0.5, 0.4, 0),
            record("rudder", Some(0.1), 0.8, 0.6, 3),
            record("query-only", None, 0.7, 0.6, 0),
            record("rudder", Some(0.1), 0.6, 0.8, 1),
        ];
        let rows = row_means(&records);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].label, "query-only");
        assert_eq!(rows[0].runs, 2);
        assert!((rows[0].alignment - 0.6).abs() < 1e-6);
        assert_eq!(rows[1].label, "rudder (C0 = 0.1)");
        assert!((rows[1].pauses - 2.0).abs() < 1e-9);
        let table = markdown_table(&records);
        assert!(table.contains("| query-only | 2 | 60.0 | 50.0 | – | 60.0 | 80.0 | 100.0 | 40.0 | 0.00 | 1000 | 12 |"), "{table}");
    }

    #[test]
    fn only_cases_with_every_system_and_no_failure_are_compared() {
        let mut c2 = record("query-only", None, 0.1, 0.1, 0);
        c2.case_id = "c2".into();
        let mut c3 = record("query-only", None, 0.9, 0.9, 0);
        c3.case_id = "c3".into();
        let records = [
            record("query-only", None, 0.5, 0.4, 0),
            record("rudder", Some(0.4), 0.8, 0.6, 1),
            c2,
            c3,
        ];
        let failed = BTreeSet::from(["c3".to_string()]);
        let (kept, incomplete) = comparable_records(&records, &failed);
        assert_eq!(
            incomplete,
            ["c2"],
            "c3 failed, so it is not also incomplete"
        );
        assert_eq!(kept.len(), 2);
        assert!(kept.iter().all(|r| r.case_id == "c"));
    }

    #[test]
    fn the_plot_is_an_svg_with_one_point_per_c0() {
        let records = [
            record("rudder", Some(0.1), 0.8, 0.6, 3),
            record("rudder", Some(0.4), 0.7, 0.6, 2),
            record("rudder", Some(1.0), 0.5, 0.5, 0),
            record("query-only", None, 0.5, 0.4, 0),
        ];
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c0.svg");
        plot_against_c0(&records, &path).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.starts_with("<svg"));
        // Three panels, three points each.
        assert_eq!(svg.matches("<circle").count(), 9, "{svg}");
        assert!(svg.contains("Alignment") && svg.contains("Pauses per run"));
        // The baseline's level is labelled on the alignment and focus panels, not on pauses.
        assert_eq!(svg.matches("query-only").count(), 2, "{svg}");

        // Without baselines there is no legend.
        plot_against_c0(&records[..3], &path).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(!svg.contains("query-only"));
    }
}
