//! The progress bars: one per phase of a command, on stderr.

use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressState, ProgressStyle};
use pattern_core::adopt::Progress;

use crate::render::n;

/// One progress bar per phase on stderr (indicatif hides them when stderr is not a terminal).
pub(crate) struct Bars {
    pub enabled: bool,
    current: Mutex<Option<(String, u64, ProgressBar)>>,
}

impl Bars {
    pub(crate) fn new(enabled: bool) -> Self {
        Bars {
            enabled: enabled && std::io::stderr().is_terminal(),
            current: Mutex::new(None),
        }
    }

    pub(crate) fn update(&self, p: &Progress<'_>) {
        let Ok(mut current) = self.current.lock() else {
            return;
        };
        let same =
            matches!(&*current, Some((phase, done, _)) if phase == p.phase && *done <= p.done);
        if !same {
            if let Some((_, _, bar)) = current.take() {
                close(&bar);
            }
            let bar = match p.total {
                Some(total) => {
                    let bar = ProgressBar::new(total);
                    bar.set_style(style(
                        "{prefix:>14} [{elapsed_precise}] {wide_bar} {human_pos}/{human_len} {rate} ETA {eta}",
                    ));
                    bar
                }
                None => {
                    let bar = ProgressBar::new_spinner();
                    bar.set_style(style(
                        "{prefix:>14} {spinner} [{elapsed_precise}] {human_pos} {rate}",
                    ));
                    bar.enable_steady_tick(Duration::from_millis(120));
                    bar
                }
            };
            bar.set_prefix(p.phase.to_owned());
            *current = Some((p.phase.to_owned(), 0, bar));
        }
        if let Some((_, done, bar)) = current.as_mut() {
            if let Some(total) = p.total {
                bar.set_length(total.max(p.done));
            }
            bar.set_position(p.done);
            *done = p.done;
        }
    }

    pub(crate) fn finish(&self) {
        if let Ok(mut current) = self.current.lock() {
            if let Some((_, _, bar)) = current.take() {
                close(&bar);
            }
        }
    }
}

/// Leaves a phase's bar as it ended, on its own line (indicatif leaves the cursor after it).
fn close(bar: &ProgressBar) {
    bar.finish();
    if !bar.is_hidden() {
        eprintln!();
    }
}

/// A bar's style: `template` with `{rate}`, the items per second as a whole number.
fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template)
        .expect("a valid template")
        .with_key(
            "rate",
            |state: &ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = write!(w, "{}/s", n(state.per_sec().round() as u64));
            },
        )
}
