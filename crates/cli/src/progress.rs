//! Progress of long work on stderr: indicatif bars at a terminal, and a plain line every few
//! seconds when stderr is not one (a log file, a pipe, CI), where indicatif draws nothing.

use indicatif::{HumanBytes, HumanCount, ProgressBar, ProgressStyle};
use rudder::models::FetchProgress;
use std::io::Write;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How often a plain progress line is printed when stderr is not a terminal.
const PLAIN_EVERY: Duration = Duration::from_secs(5);

/// What a bar counts, for its plain line.
#[derive(Clone, Copy)]
enum Unit {
    Bytes,
    Items,
}

/// The plain lines: at most one per `every`, to `out` (stderr outside tests).
struct PlainLines {
    every: Duration,
    last: Mutex<Option<Instant>>,
    out: Mutex<Box<dyn Write + Send>>,
}

impl Default for PlainLines {
    fn default() -> Self {
        Self::to(Box::new(std::io::stderr()), PLAIN_EVERY)
    }
}

impl PlainLines {
    fn to(out: Box<dyn Write + Send>, every: Duration) -> Self {
        Self {
            every,
            last: Mutex::new(None),
            out: Mutex::new(out),
        }
    }

    /// The work began: the clock for the first line starts now.
    fn start(&self) {
        if let Ok(mut last) = self.last.lock() {
            *last = Some(Instant::now());
        }
    }

    /// Prints the bar's state when the bar is not drawn and `every` has passed since the last
    /// line (or the start).
    fn tick(&self, bar: &ProgressBar, unit: Unit) {
        if !bar.is_hidden() {
            return;
        }
        let now = Instant::now();
        let Ok(mut last) = self.last.lock() else {
            return;
        };
        if last.is_some_and(|t| now.duration_since(t) < self.every) {
            return;
        }
        *last = Some(now);
        drop(last);
        let line = plain_line(
            &bar.message(),
            bar.position(),
            bar.length(),
            bar.elapsed(),
            unit,
        );
        if let Ok(mut out) = self.out.lock() {
            let _ = writeln!(out, "{line}");
        }
    }
}

/// `embedding: 1,200/10,033 (12 %), 40.0/s, 3m 40s left` (or `…, 1,200 so far, 40.0/s` without
/// a total; bytes as `12.3 MiB/45.6 MiB`).
fn plain_line(what: &str, done: u64, total: Option<u64>, elapsed: Duration, unit: Unit) -> String {
    let secs = elapsed.as_secs_f64().max(1e-3);
    let rate = done as f64 / secs;
    let amount = |n: u64| match unit {
        Unit::Bytes => HumanBytes(n).to_string(),
        Unit::Items => HumanCount(n).to_string(),
    };
    let rate = match unit {
        Unit::Bytes => format!("{}/s", HumanBytes(rate as u64)),
        Unit::Items => format!("{rate:.1}/s"),
    };
    match total {
        Some(total) if total > 0 => {
            let share = 100.0 * done as f64 / total as f64;
            let left = if done > 0 && done < total {
                let secs = (total - done) as f64 / (done as f64 / secs);
                format!(", {} left", human_duration(secs))
            } else {
                String::new()
            };
            format!(
                "{what}: {}/{} ({share:.0} %), {rate}{left}",
                amount(done),
                amount(total)
            )
        }
        _ => format!("{what}: {} so far, {rate}", amount(done)),
    }
}

fn human_duration(secs: f64) -> String {
    let secs = secs.round() as u64;
    match (secs / 3600, secs / 60 % 60, secs % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, s) => format!("{m}m {s}s"),
        (h, m, _) => format!("{h}h {m}m"),
    }
}

/// Draws one bar per fetch step on stderr (a line every few seconds when stderr is not a
/// terminal).
#[derive(Default)]
pub struct BarProgress {
    bar: Mutex<Option<ProgressBar>>,
    plain: PlainLines,
}

impl FetchProgress for BarProgress {
    fn begin(&self, label: &str, total: Option<u64>) {
        let bar = match total {
            Some(total) => ProgressBar::new(total).with_style(
                ProgressStyle::with_template(
                    "{msg:40!} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
            ),
            None => ProgressBar::new_spinner().with_style(
                ProgressStyle::with_template("{spinner} {msg} {elapsed}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            ),
        };
        bar.set_message(label.to_string());
        if total.is_none() {
            bar.enable_steady_tick(std::time::Duration::from_millis(120));
        }
        self.plain.start();
        if let Ok(mut slot) = self.bar.lock() {
            *slot = Some(bar);
        }
    }

    fn position(&self, done: u64) {
        if let Ok(slot) = self.bar.lock() {
            if let Some(bar) = slot.as_ref() {
                bar.set_position(done);
                self.plain.tick(bar, Unit::Bytes);
            }
        }
    }

    fn end(&self) {
        if let Ok(mut slot) = self.bar.lock() {
            if let Some(bar) = slot.take() {
                bar.finish_and_clear();
            }
        }
    }
}

/// Counts items (sessions imported, sessions embedded) with a rate, on stderr (a line every
/// few seconds when stderr is not a terminal).
#[derive(Default)]
pub struct CountProgress {
    bar: Mutex<Option<ProgressBar>>,
    plain: PlainLines,
}

impl rudder::progress::Progress for CountProgress {
    fn begin(&self, what: &str, total: Option<u64>) {
        let bar = match total {
            Some(total) => ProgressBar::new(total).with_style(
                ProgressStyle::with_template(
                    "{msg:14} [{bar:30}] {human_pos}/{human_len} {per_sec} eta {eta}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
            ),
            None => ProgressBar::new_spinner().with_style(
                ProgressStyle::with_template(
                    "{spinner} {msg} {human_pos} records {per_sec} {elapsed}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            ),
        };
        bar.set_message(what.to_string());
        bar.enable_steady_tick(std::time::Duration::from_millis(120));
        self.plain.start();
        if let Ok(mut slot) = self.bar.lock() {
            *slot = Some(bar);
        }
    }

    fn advance(&self, n: u64) {
        if let Ok(slot) = self.bar.lock() {
            if let Some(bar) = slot.as_ref() {
                bar.inc(n);
                self.plain.tick(bar, Unit::Items);
            }
        }
    }

    fn note(&self, line: &str) {
        if let Ok(slot) = self.bar.lock() {
            match slot.as_ref() {
                Some(bar) => bar.println(line),
                None => eprintln!("{line}"),
            }
        }
    }

    fn end(&self) {
        if let Ok(mut slot) = self.bar.lock() {
            if let Some(bar) = slot.take() {
                bar.finish_and_clear();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rudder::progress::Progress;
    use std::sync::Arc;

    /// A writer the test can read back.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Captured {
        fn lines(&self) -> Vec<String> {
            String::from_utf8(self.0.lock().unwrap().clone())
                .unwrap()
                .lines()
                .map(str::to_owned)
                .collect()
        }
    }

    #[test]
    fn a_plain_line_says_how_far_how_fast_and_how_long_is_left() {
        let line = plain_line(
            "embedding",
            1200,
            Some(10_033),
            Duration::from_secs(30),
            Unit::Items,
        );
        assert_eq!(line, "embedding: 1,200/10,033 (12 %), 40.0/s, 3m 41s left");
        let line = plain_line("importing", 50, None, Duration::from_secs(10), Unit::Items);
        assert_eq!(line, "importing: 50 so far, 5.0/s");
        let line = plain_line(
            "model.gguf",
            1 << 20,
            Some(4 << 20),
            Duration::from_secs(1),
            Unit::Bytes,
        );
        assert!(
            line.starts_with("model.gguf: 1.00 MiB/4.00 MiB (25 %), 1.00 MiB/s"),
            "{line}"
        );
    }

    /// Under `cargo test` stderr is not a terminal, so indicatif hides the bar; the work still
    /// shows, at most once per interval.
    #[test]
    fn without_a_terminal_long_work_prints_a_line_per_interval() {
        let captured = Captured::default();
        let progress = CountProgress {
            bar: Mutex::default(),
            plain: PlainLines::to(Box::new(captured.clone()), Duration::from_millis(40)),
        };
        progress.begin("embedding", Some(100));
        assert!(progress.bar.lock().unwrap().as_ref().unwrap().is_hidden());
        progress.advance(1);
        assert!(
            captured.lines().is_empty(),
            "a line before the interval passed"
        );
        std::thread::sleep(Duration::from_millis(60));
        progress.advance(1);
        progress.advance(1);
        let lines = captured.lines();
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].starts_with("embedding: 2/100 (2 %)"), "{lines:?}");
        std::thread::sleep(Duration::from_millis(60));
        progress.advance(7);
        assert_eq!(captured.lines().len(), 2);
        assert!(captured.lines()[1].starts_with("embedding: 10/100 (10 %)"));
        progress.end();
    }
}
