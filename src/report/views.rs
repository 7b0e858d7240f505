//! What the report draws of a document's steps besides their points: the percentile spectra (of the latency, of
//! the gaps between events), the per-second windows on one clock, and a ramp's target and knees over time.

use super::{Input, RampKnee, RampView, ms};
use crate::metrics::LatencyHistogram;
use crate::result::{ResultDocument, StepResult};

/// The percentile spectrum as HdrHistogram plots it: x = 1 / (1 - p) at 20 points per decade, up to the point
/// where fewer than one sample lies beyond (further points would all be the maximum).
pub fn spectrum(h: &LatencyHistogram) -> Vec<[f64; 2]> {
    if h.is_empty() {
        return Vec::new();
    }
    let limit = (h.count() as f64).clamp(1.0, 1e6);
    let mut out = Vec::new();
    for k in 0.. {
        let x = 10f64.powf(k as f64 / 20.0);
        if x > limit {
            break;
        }
        let p = 100.0 * (1.0 - 1.0 / x);
        out.push([(x * 1e4).round() / 1e4, ms(h.percentile(p) as f64)]);
    }
    out.push([limit.max(1.0), ms(h.max() as f64)]);
    out
}

/// A one-step document's ramp: its windows' targets (the windows `windows` keeps) and the analysis's knees placed
/// where the rising ramp's line reaches their load.
pub(super) fn ramp_view(doc: &ResultDocument) -> Option<RampView> {
    let ramp = doc.settings.ramp.as_ref()?;
    let [step] = doc.steps.as_slice() else { return None };
    let kept = |w: &&crate::metrics::WindowSummary| (step.duration_s - w.t).min(step.window_s) >= step.window_s / 2.0;
    let round = |x: f64| (x * 1000.0).round() / 1000.0;
    let target: Vec<[f64; 2]> =
        step.windows.iter().filter(kept).filter_map(|w| Some([round(w.t), w.target?])).collect();
    // On the target's line as drawn (each window's target at the window's start, as the throughput is), so the
    // knee's vertical line crosses it at the knee's load.
    let when = |value: f64| -> Option<f64> {
        let first = target.first()?;
        if value <= first[1] {
            return Some(first[0]);
        }
        let pair = target.windows(2).find(|p| p[0][1] < value && value <= p[1][1])?;
        let ([t0, v0], [t1, v1]) = (pair[0], pair[1]);
        Some(t0 + (t1 - t0) * (value - v0) / (v1 - v0))
    };
    let analysis = doc.analysis.as_ref();
    let knees = [("mean", analysis.and_then(|a| a.knee_mean)), ("p99", analysis.and_then(|a| a.knee_p99))]
        .into_iter()
        .filter_map(|(stat, v)| {
            let value = v?;
            Some(RampKnee { stat: stat.into(), value, t: round(when(value)?) })
        })
        .collect();
    Some(RampView { of: ramp.of.clone(), target, knees })
}

/// Every step's windows one after another, each with its instant on one clock from the first step's start and its
/// width: the last window of a step may be cut short by the step's end, and a rate over a sliver of a second says
/// little, so a window under half the width is left out.
fn each_window(steps: &[StepResult]) -> impl Iterator<Item = (f64, f64, &crate::metrics::WindowSummary)> {
    let mut offset = 0.0;
    steps.iter().flat_map(move |s| {
        let start = offset;
        offset += s.duration_s;
        s.windows.iter().filter_map(move |w| {
            let width = (s.duration_s - w.t).min(s.window_s);
            (width >= s.window_s / 2.0).then(|| (((start + w.t) * 1000.0).round() / 1000.0, width, w))
        })
    })
}

/// Where each step after the first begins, on the clock of [`windows`]: the sum of the durations before it.
pub(super) fn step_starts(steps: &[StepResult]) -> Vec<f64> {
    let mut at = 0.0;
    let mut starts = Vec::new();
    for s in steps.iter().take(steps.len().saturating_sub(1)) {
        at += s.duration_s;
        starts.push((at * 1000.0).round() / 1000.0);
    }
    starts
}

/// Every step's per-second windows one after another, on one clock from the first step's start.
pub(super) fn windows(steps: &[StepResult]) -> Vec<[f64; 5]> {
    each_window(steps)
        .map(|(t, width, w)| {
            let per_s = |n: u64| (n as f64 / width * 100.0).round() / 100.0;
            let has = w.requests > w.errors;
            [
                t,
                per_s(w.requests),
                if has { ms(w.p50_us as f64) } else { f64::NAN },
                if has { ms(w.p99_us as f64) } else { f64::NAN },
                per_s(w.errors),
            ]
        })
        .collect()
}

/// The windows' p99 of the time to first byte (`events`: of the first event), at the instants `windows` gives
/// them; a window without the figure is left out. Empty when no window has it.
pub(super) fn first_per_window(steps: &[StepResult], events: bool) -> Vec<[f64; 2]> {
    each_window(steps)
        .filter_map(|(t, _, w)| {
            let us = if events { w.first_event_p99_us } else { w.ttfb_p99_us };
            Some([t, ms(us? as f64)])
        })
        .collect()
}

/// Per window, as [`windows`] keeps them: (seconds from the start, output tokens a second of the answers that
/// ended in it). Empty when the run read no token stream; a window of a token stream without an ended answer is 0.
pub(super) fn tokens_per_window(steps: &[StepResult], tokens: bool) -> Vec<[f64; 2]> {
    if !tokens {
        return Vec::new();
    }
    each_window(steps)
        .map(|(t, width, w)| [t, (w.tokens.unwrap_or(0) as f64 / width * 100.0).round() / 100.0])
        .collect()
}

/// Per window, as [`windows`] keeps them: (seconds from the start, connections open at the window's end).
pub(super) fn open_per_window(steps: &[StepResult]) -> Vec<[f64; 2]> {
    each_window(steps).map(|(t, _, w)| [t, w.open_connections as f64]).collect()
}

/// Every step's gaps between events pooled (empty without events); a histogram that does not decode is said in
/// the notes and left out.
pub(super) fn pooled_gaps(input: &Input, doc: &ResultDocument, notes: &mut Vec<String>) -> LatencyHistogram {
    let mut pooled = LatencyHistogram::new();
    let gaps = doc.steps.iter().filter_map(|s| s.events.as_ref()?.gaps.as_ref());
    let mut unreadable = 0;
    for g in gaps {
        match LatencyHistogram::from_base64(&g.histogram.data) {
            Ok(h) => pooled.merge(&h),
            Err(_) => unreadable += 1,
        }
    }
    if unreadable > 0 {
        notes.push(format!(
            "{}: {unreadable} step(s)' histogram of gaps between events could not be decoded; the gaps' chart \
             leaves them out",
            input.origin
        ));
    }
    pooled
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_run_on_one_clock_across_steps_and_leave_out_slivers() {
        use crate::metrics::{StepMetrics, WindowSummary};
        let w = |t: f64, requests: u64, errors: u64| WindowSummary {
            t,
            requests,
            errors,
            p50_us: 1000,
            p99_us: 2000,
            max_us: 3000,
            ..WindowSummary::default()
        };
        let step = |windows: Vec<WindowSummary>| {
            let load = crate::result::StepLoad { model: "closed".into(), connections: 1, threads: 1, rate: None };
            let d = std::time::Duration::from_secs_f64(2.01);
            StepResult::from_metrics("s", load, &StepMetrics::new(), windows, d)
        };
        // Two steps of 2.01 s: each has two whole windows and a 10 ms sliver at its end.
        let steps = [step(vec![w(0.0, 100, 0), w(1.0, 90, 10), w(2.0, 1, 0)]), step(vec![w(0.0, 50, 50)])];
        let out = windows(&steps);
        assert_eq!(out.len(), 3, "{out:?}");
        assert_eq!(out[0], [0.0, 100.0, 1.0, 2.0, 0.0]);
        assert_eq!(out[1], [1.0, 90.0, 1.0, 2.0, 10.0]);
        assert_eq!(out[2][0], 2.01, "the second step starts where the first ended");
        // Every request of that second failed: no latency to draw.
        assert!(out[2][2].is_nan() && out[2][3].is_nan());
    }

    #[test]
    fn the_spectrum_climbs_to_the_maximum() {
        let mut h = LatencyHistogram::new();
        for v in 1..=1000u64 {
            h.record(v * 10);
        }
        let s = spectrum(&h);
        assert_eq!(s[0], [1.0, 0.01]);
        assert!(s.windows(2).all(|w| w[0][1] <= w[1][1] && w[0][0] <= w[1][0]), "{s:?}");
        assert_eq!(s.last().unwrap()[1], ms(h.max() as f64));
    }
}
