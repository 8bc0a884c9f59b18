//! The progress bar of long commands: on stderr, and only when stderr is a terminal, so piped
//! output and tests stay clean.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A bar of `steps` steps showing the current step's name (`set_message`); hidden when stderr
/// is not a terminal.
pub fn bar(steps: usize) -> ProgressBar {
    let target =
        if std::io::stderr().is_terminal() { ProgressDrawTarget::stderr() } else { ProgressDrawTarget::hidden() };
    let bar = ProgressBar::with_draw_target(Some(steps as u64), target);
    // The template is a constant; a parse error would be a bug caught by the first run.
    if let Ok(style) = ProgressStyle::with_template("{elapsed:>4} [{bar:30}] {pos}/{len} {msg}") {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.enable_steady_tick(std::time::Duration::from_millis(200));
    bar
}
