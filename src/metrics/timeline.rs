//! What a step's windows say beyond its totals: the worst window, a drift (the last third unlike the first) and a
//! stall (a window in which nothing was answered while requests were out). The text summary prints them and the
//! step's warnings carry the drift and the stalls, so a 30 s step with a 2 s stall no longer reads like a smooth
//! one.

use super::WindowSummary;

/// A change between the first and the last third smaller than this is noise, not drift: completed rate.
const RATE_DRIFT: f64 = 0.10;
/// The same for p99: a ratio (the last third's over the first's, or the inverse). A window's p99 is its few
/// slowest requests, so the thirds' medians of them still move by half on a busy machine: twice is drift.
const P99_DRIFT: f64 = 2.0;
/// And an absolute floor, microseconds: at 100 us, twice is a scheduler's hiccup.
const P99_DRIFT_FLOOR_US: u64 = 1000;
/// Drift needs this many whole windows (three in each third at least).
const DRIFT_WINDOWS: usize = 9;

/// A step's windows with their width and the step's length: the last window may be cut short.
pub struct Timeline<'a> {
    pub windows: &'a [WindowSummary],
    /// Seconds.
    pub width: f64,
    pub duration: f64,
}

/// The window with the highest p99.
#[derive(Clone, Debug, PartialEq)]
pub struct Worst {
    pub t: f64,
    pub p99_us: u64,
    /// Per second, in that window.
    pub sent_per_s: f64,
    pub completed_per_s: f64,
}

/// Windows in a row in which nothing was answered while requests were out.
#[derive(Clone, Debug, PartialEq)]
pub struct Stall {
    /// Start of the first such window and end of the last, seconds from the step's start.
    pub from: f64,
    pub to: f64,
    /// Requests sent and not yet answered when the stall began, or sent during it.
    pub waiting: u64,
}

impl Timeline<'_> {
    /// How long window `w` lasted (the last one ends with the step).
    fn length(&self, w: &WindowSummary) -> f64 {
        (self.duration - w.t).clamp(0.0, self.width)
    }

    /// Windows that lasted at least half the width: a rate over a sliver says little.
    fn whole(&self) -> impl Iterator<Item = &WindowSummary> {
        self.windows.iter().filter(|w| self.length(w) >= self.width / 2.0)
    }

    /// The window with the highest p99 of its successes; None when fewer than two windows (the step's own p99
    /// says it then).
    pub fn worst(&self) -> Option<Worst> {
        if self.windows.len() < 2 {
            return None;
        }
        let w = self.whole().filter(|w| w.requests > w.errors).max_by_key(|w| w.p99_us)?;
        let secs = self.length(w);
        Some(Worst {
            t: w.t,
            p99_us: w.p99_us,
            sent_per_s: w.sent as f64 / secs,
            completed_per_s: w.requests as f64 / secs,
        })
    }

    /// Stalls: runs of windows without one answer, and without a read of one under way (a stream's events),
    /// while requests were out (sent before and not answered, or sent in them). A server frozen for longer than a
    /// window shows as one. A request that timed out ended without an answer: a window of timeouts only is no
    /// answer from the server.
    pub fn stalls(&self) -> Vec<Stall> {
        let mut out: Vec<Stall> = Vec::new();
        let (mut sent, mut ended) = (0u64, 0u64);
        let mut last_end = f64::NAN;
        for w in self.windows {
            let waiting = sent.saturating_sub(ended) + w.sent;
            let end = w.t + self.length(w);
            let timeouts = w.failures.get(crate::metrics::ErrorKind::Timeout.key()).copied().unwrap_or(0);
            // Where answers stream, progress is a read of one under way: a window with it is no stall.
            if w.requests <= timeouts && w.progress == 0 && waiting > 0 && self.length(w) >= self.width / 2.0 {
                match out.last_mut() {
                    Some(s) if s.to == last_end => {
                        s.to = end;
                        s.waiting += w.sent;
                    }
                    _ => out.push(Stall { from: w.t, to: end, waiting }),
                }
            }
            sent += w.sent;
            ended += w.requests;
            last_end = end;
        }
        out
    }

    /// Drift: the completed rate or the p99 of the last third of the step unlike the first third's, in words
    /// (None when steady, when the step is too short to say, or for a ramp, whose load moves on purpose).
    pub fn drift(&self) -> Option<String> {
        if self.windows.iter().any(|w| w.target.is_some()) {
            return None;
        }
        let whole: Vec<&WindowSummary> = self.whole().collect();
        if whole.len() < DRIFT_WINDOWS {
            return None;
        }
        let third = whole.len() / 3;
        let (first, last) = (&whole[..third], &whole[whole.len() - third..]);
        let rate = |ws: &[&WindowSummary]| {
            ws.iter().map(|w| w.requests as f64).sum::<f64>() / ws.iter().map(|w| self.length(w)).sum::<f64>()
        };
        // The median of the windows' p99s: one bad window is the worst window's business, not a drift.
        let p99 = |ws: &[&WindowSummary]| {
            let mut v: Vec<u64> = ws.iter().filter(|w| w.requests > w.errors).map(|w| w.p99_us).collect();
            v.sort_unstable();
            v.get(v.len() / 2).copied()
        };
        let mut said = Vec::new();
        let (r0, r1) = (rate(first), rate(last));
        if r0 > 0.0 && ((r1 - r0) / r0).abs() >= RATE_DRIFT {
            said.push(format!(
                "the completed rate went from {r0:.1}/s to {r1:.1}/s ({:+.0} %)",
                (r1 - r0) / r0 * 100.0
            ));
        }
        if let (Some(p0), Some(p1)) = (p99(first), p99(last)) {
            let ratio = p1.max(1) as f64 / p0.max(1) as f64;
            if (ratio >= P99_DRIFT || ratio <= 1.0 / P99_DRIFT) && p0.abs_diff(p1) >= P99_DRIFT_FLOOR_US {
                said.push(format!(
                    "p99 went from {} to {} ({ratio:.1} times)",
                    crate::base::units::format_micros(p0 as f64),
                    crate::base::units::format_micros(p1 as f64)
                ));
            }
        }
        (!said.is_empty()).then(|| {
            format!(
                "the step drifted: between its first and last third ({} windows of {} each), {}; its totals \
                 average over a load that changed",
                third,
                crate::base::units::format_micros(self.width * 1e6),
                said.join(" and ")
            )
        })
    }

    /// The stalls as warnings.
    pub fn stall_warnings(&self) -> Vec<String> {
        self.stalls()
            .iter()
            .map(|s| {
                // A stall of the whole step is no stall but a step without an answer: said so, with its length.
                if s.from == 0.0 && s.to >= self.duration - self.width / 2.0 {
                    return format!(
                        "no answer at all in the whole step ({:.2} s): none of the {} requests sent got one (the \
                         server, or the network, stopped)",
                        self.duration, s.waiting
                    );
                }
                format!(
                    "the step stalled from {:.2} s to {:.2} s: no answer in that time while {} requests were out \
                     (the server, or the network, stopped)",
                    s.from, s.to, s.waiting
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn w(t: f64, sent: u64, requests: u64, p99_us: u64) -> WindowSummary {
        WindowSummary { t, sent, requests, p99_us, ..WindowSummary::default() }
    }

    #[test]
    fn a_window_without_answers_while_requests_were_out_is_a_stall() {
        let windows = vec![
            w(0.0, 100, 100, 900),
            w(1.0, 100, 40, 900),
            w(2.0, 100, 0, 0),
            w(3.0, 100, 0, 0),
            w(4.0, 100, 360, 2_100_000),
        ];
        let t = Timeline { windows: &windows, width: 1.0, duration: 5.0 };
        assert_eq!(t.stalls(), vec![Stall { from: 2.0, to: 4.0, waiting: 260 }]);
        let worst = t.worst().unwrap();
        assert_eq!((worst.t, worst.p99_us, worst.sent_per_s, worst.completed_per_s), (4.0, 2_100_000, 100.0, 360.0));
    }

    #[test]
    fn a_window_of_answers_still_streaming_is_no_stall_but_one_without_a_read_is() {
        // Answers of 2.5 s streaming their events: no answer ends in the first two windows, but reads come.
        let streaming = |t: f64, progress: u64| WindowSummary { t, sent: 10, progress, ..WindowSummary::default() };
        let windows = vec![streaming(0.0, 200), streaming(1.0, 200), w(2.0, 10, 10, 2_500_000)];
        let t = Timeline { windows: &windows, width: 1.0, duration: 3.0 };
        assert_eq!(t.stalls(), vec![]);
        // The same streams stopped sending in the second window: it is a stall.
        let windows = vec![streaming(0.0, 200), streaming(1.0, 0), w(2.0, 10, 10, 2_500_000)];
        let t = Timeline { windows: &windows, width: 1.0, duration: 3.0 };
        assert_eq!(t.stalls(), vec![Stall { from: 1.0, to: 2.0, waiting: 20 }]);
    }

    #[test]
    fn a_step_that_never_got_an_answer_says_so_for_its_whole_length() {
        // 1 s timeouts: nothing ends in the first second, then only timeouts.
        let timed_out = |t: f64| WindowSummary {
            errors: 2,
            failures: BTreeMap::from([("timeout".to_string(), 2)]),
            ..w(t, 2, 2, 0)
        };
        let windows = vec![w(0.0, 2, 0, 0), timed_out(1.0), timed_out(2.0)];
        let t = Timeline { windows: &windows, width: 1.0, duration: 3.0 };
        assert_eq!(t.stalls(), vec![Stall { from: 0.0, to: 3.0, waiting: 6 }]);
        assert_eq!(
            t.stall_warnings(),
            ["no answer at all in the whole step (3.00 s): none of the 6 requests sent got one (the server, or the \
              network, stopped)"]
        );
        // Timeouts beside answers are no stall.
        let answered = WindowSummary { requests: 5, ..timed_out(1.0) };
        let windows = vec![w(0.0, 2, 0, 0), answered, w(2.0, 2, 2, 900)];
        assert_eq!(Timeline { windows: &windows, width: 1.0, duration: 3.0 }.stalls()[0].to, 1.0);
    }

    #[test]
    fn an_idle_window_with_nothing_out_is_no_stall() {
        let windows = vec![w(0.0, 10, 10, 900), w(1.0, 0, 0, 0), w(2.0, 10, 10, 900)];
        assert!(Timeline { windows: &windows, width: 1.0, duration: 3.0 }.stalls().is_empty());
    }

    #[test]
    fn drift_is_said_with_both_thirds_and_steady_steps_say_nothing() {
        let steady: Vec<_> = (0..9).map(|i| w(i as f64, 1000, 1000, 2000)).collect();
        assert_eq!(Timeline { windows: &steady, width: 1.0, duration: 9.0 }.drift(), None);
        let losing: Vec<_> = (0..9).map(|i| w(i as f64, 1000, 1000 - i * 60, 2000 + i * 1000)).collect();
        let said = Timeline { windows: &losing, width: 1.0, duration: 9.0 }.drift().unwrap();
        assert!(said.contains("from 940.0/s to 580.0/s (-38 %)"), "{said}");
        assert!(said.contains("p99 went from 3.00ms to 9.00ms (3.0 times)"), "{said}");
    }

    #[test]
    fn a_ramp_does_not_drift() {
        let ramp: Vec<_> = (0..9)
            .map(|i| WindowSummary { target: Some(i as f64 * 100.0), ..w(i as f64, i * 100, i * 100, 900) })
            .collect();
        assert_eq!(Timeline { windows: &ramp, width: 1.0, duration: 9.0 }.drift(), None);
    }
}
