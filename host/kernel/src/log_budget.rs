//! At most so many log lines of one kind in each window of time, and a count
//! of the rest: what a pack or a client can make the host log cannot flood
//! the log. Each caller writes its own lines; this only counts.

use std::time::{Duration, Instant};

/// A budget of `lines` log lines per `window`.
#[derive(Debug, Clone, Copy)]
pub struct LogBudget {
    /// The most lines written in one window.
    pub lines: usize,
    /// How long one window lasts.
    pub window: Duration,
}

/// What has been logged in the current window of one budget.
#[derive(Debug)]
pub struct LogWindow {
    started: Instant,
    logged: usize,
    dropped: usize,
}

/// Whether a line may be written.
#[derive(Debug, PartialEq, Eq)]
pub enum Admission {
    /// Write it.
    Log,
    /// Do not: it is the first line over the budget in this window (say so,
    /// once).
    FirstDropped,
    /// Do not: it is counted.
    Dropped,
}

impl Default for LogWindow {
    fn default() -> Self {
        LogWindow { started: Instant::now(), logged: 0, dropped: 0 }
    }
}

impl LogWindow {
    /// Starts a new window if the current one has ended, and returns how many
    /// lines the ended one dropped (none if it dropped none).
    pub fn roll(&mut self, budget: LogBudget) -> Option<usize> {
        if self.started.elapsed() < budget.window {
            return None;
        }
        let dropped = std::mem::take(self).dropped;
        (dropped > 0).then_some(dropped)
    }

    /// Counts one more line against `budget` in this window.
    pub fn admit(&mut self, budget: LogBudget) -> Admission {
        if self.logged < budget.lines {
            self.logged += 1;
            return Admission::Log;
        }
        self.dropped += 1;
        if self.dropped == 1 { Admission::FirstDropped } else { Admission::Dropped }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_past_the_budget_are_counted_and_reported_when_the_window_ends() {
        let budget = LogBudget { lines: 2, window: Duration::from_millis(50) };
        let mut window = LogWindow::default();
        assert_eq!(window.roll(budget), None);
        let admitted: Vec<Admission> = (0..5).map(|_| window.admit(budget)).collect();
        assert_eq!(admitted, [Admission::Log, Admission::Log, Admission::FirstDropped, Admission::Dropped, Admission::Dropped]);
        assert_eq!(window.roll(budget), None, "the window has not ended");
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(window.roll(budget), Some(3));
        assert_eq!(window.admit(budget), Admission::Log);
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(window.roll(budget), None, "a window that dropped nothing reports nothing");
    }
}
