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
            indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} {rate} eta {eta}")
        {
            bar.set_style(style.with_key(
                "rate",
                |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                    let _ = write!(w, "{}", rate(state.per_sec()));
                },
            ));
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

/// Steps per second as a learner reads it: whole steps, with thousands
/// separated (`10,850 steps/s`), or one decimal below 10.
fn rate(per_sec: f64) -> String {
    if !per_sec.is_finite() {
        return "- steps/s".to_string();
    }
    if per_sec < 10.0 {
        return format!("{per_sec:.1} steps/s");
    }
    let digits = format!("{:.0}", per_sec);
    let mut grouped = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    format!("{grouped} steps/s")
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_rate_is_whole_steps_per_second_with_thousands_grouped() {
        assert_eq!(super::rate(10850.2809), "10,850 steps/s");
        assert_eq!(super::rate(999.6), "1,000 steps/s");
        assert_eq!(super::rate(42.0), "42 steps/s");
        assert_eq!(super::rate(2.25), "2.2 steps/s");
        assert_eq!(super::rate(1234567.0), "1,234,567 steps/s");
        assert_eq!(super::rate(f64::INFINITY), "- steps/s");
    }
}
