//! Terminal progress bars for long work.

use indicatif::{ProgressBar, ProgressStyle};
use rudder::models::FetchProgress;
use std::sync::Mutex;

/// Draws one bar per fetch step on stderr (hidden when stderr is not a terminal).
#[derive(Default)]
pub struct BarProgress {
    bar: Mutex<Option<ProgressBar>>,
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
        if let Ok(mut slot) = self.bar.lock() {
            *slot = Some(bar);
        }
    }

    fn position(&self, done: u64) {
        if let Ok(slot) = self.bar.lock() {
            if let Some(bar) = slot.as_ref() {
                bar.set_position(done);
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

/// Counts items (sessions imported, sessions embedded) with a rate, on stderr.
#[derive(Default)]
pub struct CountProgress {
    bar: Mutex<Option<ProgressBar>>,
}

impl rudder::history::Progress for CountProgress {
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
        if let Ok(mut slot) = self.bar.lock() {
            *slot = Some(bar);
        }
    }

    fn advance(&self, n: u64) {
        if let Ok(slot) = self.bar.lock() {
            if let Some(bar) = slot.as_ref() {
                bar.inc(n);
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
