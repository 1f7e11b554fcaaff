//! Progress bars on standard error (never on standard output, which a `--json` run
//! keeps for its one document), or nothing.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A progress bar on stderr, or nothing.
pub struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    pub fn new(show: bool) -> Progress {
        let bar = show.then(|| {
            let b = ProgressBar::with_draw_target(Some(1), ProgressDrawTarget::stderr());
            b.set_style(
                ProgressStyle::with_template("{prefix:>24} {msg:>8} [{bar:30}] {percent:>3}% {elapsed}")
                    .expect("valid template")
                    .progress_chars("=> "),
            );
            b
        });
        Progress { bar }
    }

    pub fn set_prefix(&self, p: &str) {
        if let Some(b) = &self.bar {
            b.set_prefix(p.to_string());
        }
    }

    pub fn update(&self, phase: &str, done: u64, total: u64) {
        if let Some(b) = &self.bar {
            if b.message() != phase {
                b.set_message(phase.to_string());
            }
            b.set_length(total.max(1));
            b.set_position(done.min(total));
        }
    }

    /// Prints a line above the bar, or to stderr where no bar is drawn (none asked for,
    /// or stderr is not a terminal).
    pub fn println(&self, line: &str) {
        match &self.bar {
            Some(b) if !b.is_hidden() => b.println(line),
            _ => eprintln!("{line}"),
        }
    }

    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}
