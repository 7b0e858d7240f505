//! Live progress on stderr while a step runs: elapsed time, requests per second now, errors.
//! Shown only when stderr is a terminal and --quiet is not given, so logs and pipes stay clean.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

use crate::metrics::WindowSummary;

pub struct Progress {
    bar: Option<ProgressBar>,
    total_requests: u64,
    total_errors: u64,
}

impl Progress {
    pub fn new(quiet: bool) -> Self {
        let bar = (!quiet && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::new_spinner();
            bar.set_style(ProgressStyle::with_template("{spinner} {elapsed:>4} {msg}").expect("static template"));
            bar.enable_steady_tick(std::time::Duration::from_millis(200));
            bar
        });
        Self { bar, total_requests: 0, total_errors: 0 }
    }

    /// Called when a window completes.
    pub fn window(&mut self, w: &WindowSummary) {
        self.total_requests += w.requests;
        self.total_errors += w.errors;
        if let Some(bar) = &self.bar {
            bar.set_message(format!(
                "{} req/s now, p99 {}, {} requests, {} errors",
                w.requests,
                crate::base::units::format_micros(w.p99_us as f64),
                self.total_requests,
                self.total_errors
            ));
        }
    }

    /// A line above the progress line (or on stderr when there is none).
    pub fn println(&self, text: &str) {
        match &self.bar {
            Some(bar) => bar.println(text),
            None => eprintln!("{text}"),
        }
    }

    pub fn finish(self) {
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
    }
}
