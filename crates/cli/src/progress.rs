//! A terminal progress bar for the study crate's [`Progress`] sink (hidden when stderr is not a
//! terminal, so logs and pipes stay clean).

use indicatif::{ProgressBar, ProgressStyle};
use mantissa_study::Progress;
use std::sync::Mutex;

/// The progress bar `mantissa study` and `mantissa ops` draw on stderr: one bar per phase, cleared
/// when the phase finishes.
pub struct Bar {
    bar: Mutex<Option<ProgressBar>>,
}

impl Bar {
    /// A sink with no bar yet: the first phase that starts draws one.
    pub fn new() -> Self {
        Bar {
            bar: Mutex::new(None),
        }
    }
}

impl Progress for Bar {
    fn start(&self, label: &str, total: u64) {
        let bar = ProgressBar::new(total);
        let style = ProgressStyle::with_template("{prefix:>8} [{bar:40}] {pos}/{len} ({eta} left)")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
        bar.set_style(style);
        bar.set_prefix(label.to_string());
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

    fn finish(&self) {
        if let Ok(mut slot) = self.bar.lock() {
            if let Some(bar) = slot.take() {
                bar.finish_and_clear();
            }
        }
    }
}
