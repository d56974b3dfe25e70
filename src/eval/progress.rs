//! `Progress`'s bar on stderr, drawn only on a terminal (indicatif).

pub struct ProgressBar {
    bar: indicatif::ProgressBar,
    total: u64,
}

impl ProgressBar {
    pub fn new(total: u64) -> ProgressBar {
        let bar = indicatif::ProgressBar::with_draw_target(
            Some(total),
            indicatif::ProgressDrawTarget::stderr(),
        );
        if let Ok(style) =
            indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} {per_sec} eta {eta}")
        {
            bar.set_style(style);
        }
        ProgressBar { bar, total }
    }

    /// Runs `f` (a write to the terminal) with the bar cleared first and
    /// drawn again after, so a printed line never tears it.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        self.bar.suspend(f)
    }

    pub fn total(&self) -> u64 {
        self.total
    }

    /// Moves the bar to `step`; at the last step it is cleared, and the
    /// answer is true: the bar is done.
    pub fn at(&self, step: u64) -> bool {
        self.bar.set_position(step);
        let done = step >= self.total;
        if done {
            self.bar.finish_and_clear();
        }
        done
    }
}
