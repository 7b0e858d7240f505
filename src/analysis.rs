//! What a sweep shows, in figures and in words: peak throughput and where it plateaus, the knee where latency
//! starts to climb, and whether the server or hakaru was the bottleneck.

use crate::result::{Analysis, StepResult};

/// Throughput within this share of the peak counts as the plateau.
const PLATEAU_SHARE: f64 = 0.9;
/// Latency more than this factor above the lowest step's counts as climbing.
const CLIMB_FACTOR: f64 = 1.25;

/// The x value of a step: its client count, or its rate in an open loop.
pub fn step_axis(step: &StepResult) -> f64 {
    step.load.rate.unwrap_or(step.load.connections as f64)
}

fn fmt_x(axis: &str, x: f64) -> String {
    if axis == "rate" { format!("{x:.0}/s") } else { format!("{x:.0} clients") }
}

/// Last x before the metric climbs above `CLIMB_FACTOR` x its lowest value; None when it never climbs.
/// Only a climb after the lowest step counts: a slow first step (a cold cache) is not a knee.
fn knee(steps: &[&StepResult], metric: impl Fn(&StepResult) -> f64) -> Option<f64> {
    let answered: Vec<&&StepResult> = steps.iter().filter(|s| s.latency.count > 0).collect();
    let (low_at, lowest) =
        answered.iter().enumerate().map(|(i, s)| (i, metric(s))).min_by(|a, b| a.1.total_cmp(&b.1))?;
    let climb = answered[low_at..].iter().position(|s| metric(s) > CLIMB_FACTOR * lowest)?;
    Some(step_axis(answered[low_at + climb - 1]))
}

/// Analyses the steps of a sweep (in the order they ran, by increasing load). A step where more than
/// `max_failed_percent` of the requests failed does not count: its throughput is not a plateau, its latency
/// (of the few successes) not a knee.
pub fn analyse(steps: &[StepResult], max_failed_percent: f64) -> Option<Analysis> {
    let mut all: Vec<&StepResult> = steps.iter().collect();
    all.sort_by(|a, b| step_axis(a).total_cmp(&step_axis(b)));
    let axis = if all.first()?.load.rate.is_some() { "rate" } else { "clients" }.to_string();
    let first_failing = all.iter().find(|s| s.failed_percent() > max_failed_percent).copied();
    let failing_from = first_failing.map(step_axis);
    let sorted: Vec<&StepResult> = all.iter().filter(|s| s.failed_percent() <= max_failed_percent).copied().collect();
    let Some(&last) = sorted.last() else {
        let s = first_failing.expect("some step exists and none is healthy");
        return Some(Analysis {
            axis: axis.clone(),
            peak_rps: 0.0,
            peak_at: step_axis(s),
            plateau_from: None,
            knee_mean: None,
            knee_p99: None,
            failing_from,
            bottleneck: "failing".into(),
            capacity: None,
            summary: vec![format!(
                "every step failed more than {max_failed_percent} % of its requests (at {}: {:.1} % failed, {}):                  there is no throughput to analyse; check the target, or --ok-status",
                fmt_x(&axis, step_axis(s)),
                s.failed_percent(),
                s.failure_mix()
            )],
        });
    };
    let peak = sorted.iter().max_by(|a, b| a.throughput.ok_per_s.total_cmp(&b.throughput.ok_per_s))?;
    let peak_rps = peak.throughput.ok_per_s;
    let plateau_from = sorted
        .iter()
        .find(|s| s.throughput.ok_per_s >= PLATEAU_SHARE * peak_rps && peak_rps > 0.0)
        .map(|s| step_axis(s));
    let knee_mean = knee(&sorted, |s| s.latency.mean);
    let knee_p99 = knee(&sorted, |s| s.latency.percentile(99.0) as f64);

    let mut summary = Vec::new();
    // Failures beyond the healthy steps are a limit reached too: the server stopped answering well.
    let reached = matches!(plateau_from, Some(p) if p < step_axis(last)) || first_failing.is_some();
    match (plateau_from, first_failing) {
        (Some(p), _) if p < step_axis(last) => {
            summary.push(format!("throughput levels off at ~{peak_rps:.0} req/s from {}", fmt_x(&axis, p)))
        }
        (_, Some(_)) => summary
            .push(format!("throughput peaks at {peak_rps:.0} successful req/s at {}", fmt_x(&axis, step_axis(peak)))),
        _ => summary.push(format!(
            "throughput peaks at {peak_rps:.0} req/s at {} and still grows: load further to find the plateau",
            fmt_x(&axis, step_axis(peak))
        )),
    }
    match (knee_mean, knee_p99) {
        (None, None) => summary.push("latency stays flat over the steps".into()),
        (m, p) => {
            let x = m.or(p).unwrap_or_default();
            let which = match (m, p) {
                (Some(_), Some(_)) => "average and p99 latency rise",
                (Some(_), None) => "average latency rises",
                _ => "p99 latency rises",
            };
            summary.push(format!("{which} above {}", fmt_x(&axis, x)));
        }
    }

    if let Some(s) = first_failing {
        summary.push(format!(
            "from {} more than {max_failed_percent} % of requests failed ({:.1} %: {}): those steps count in no \
             peak, plateau or knee",
            fmt_x(&axis, step_axis(s)),
            s.failed_percent(),
            s.failure_mix()
        ));
    }

    // Look at the loaded steps: those from the plateau on (all steps when there is none).
    let from = plateau_from.unwrap_or(f64::NEG_INFINITY);
    let loaded: Vec<&&StepResult> = sorted.iter().filter(|s| step_axis(s) >= from).collect();
    let server_saturated = loaded.iter().find(|s| s.server.as_ref().is_some_and(|r| r.saturated));
    let generator_saturated = loaded.iter().find(|s| s.generator.saturated);
    let watched = sorted.iter().any(|s| s.server.is_some());
    let bottleneck = if let Some(s) = server_saturated {
        let r = s.server.as_ref().expect("checked above");
        summary.push(format!(
            "the server was at {:.0} % CPU on {} cores from {}: that is its limit",
            r.cpu_percent_mean,
            r.cores,
            fmt_x(&axis, step_axis(s))
        ));
        "server"
    } else if let Some(s) = generator_saturated {
        summary.push(format!(
            "hakaru itself was at {:.0} % CPU of its {} cores from {}: the generator may be the limit, not the server",
            s.generator.cpu_percent,
            s.generator.cores,
            fmt_x(&axis, step_axis(s))
        ));
        "generator"
    } else if !reached {
        let most = loaded.iter().filter_map(|s| s.server.as_ref()).map(|r| r.cpu_percent_mean).fold(0.0, f64::max);
        let server = if watched { format!("the server was at most at {most:.0} % CPU; ") } else { String::new() };
        summary.push(format!("{server}no limit was reached yet: add clients (or rate) to find it"));
        "not_reached"
    } else if let Some((s, r)) = loaded
        .iter()
        .filter_map(|s| s.server.as_ref().map(|r| (s, r)))
        .find(|(_, r)| r.cores > 1 && (85.0..=115.0).contains(&r.cpu_percent_mean))
    {
        summary.push(format!(
            "the server used about one core ({:.0} % CPU) from {}: if it runs one thread (Redis, a single event \
             loop), that is its limit",
            r.cpu_percent_mean,
            fmt_x(&axis, step_axis(s))
        ));
        "one_core"
    } else if watched {
        let most = loaded.iter().filter_map(|s| s.server.as_ref()).map(|r| r.cpu_percent_mean).fold(0.0, f64::max);
        summary.push(format!(
            "neither the server (at most {most:.0} % CPU) nor hakaru was CPU-bound: the limit is elsewhere \
             (a worker pool, a lock, I/O, the network)"
        ));
        "elsewhere"
    } else {
        summary.push(
            "the server was not watched: add --monitor-pid or --monitor-name to tell whether it was the bottleneck"
                .into(),
        );
        "unknown"
    };
    Some(Analysis {
        axis,
        peak_rps,
        peak_at: step_axis(peak),
        plateau_from,
        knee_mean,
        knee_p99,
        failing_from,
        bottleneck: bottleneck.into(),
        capacity: None,
        summary,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::StepMetrics;
    use crate::result::StepLoad;
    use std::time::{Duration, Instant};

    /// A step of `clients` clients at `rps` requests/s with every latency `ms`.
    fn step(clients: usize, rps: f64, ms: u64) -> StepResult {
        let mut m = StepMetrics::new();
        let t = Instant::now();
        let n = (rps * 10.0) as u64;
        for _ in 0..n {
            m.record_response(200, true, t, t, t + Duration::from_millis(ms));
        }
        let load = StepLoad { model: "closed".into(), connections: clients, threads: 1, rate: None };
        StepResult::from_metrics(&format!("c={clients}"), load, &m, vec![], Duration::from_secs(10))
    }

    #[test]
    fn a_two_worker_server_plateaus_at_two_clients_and_latency_climbs_after() {
        // workers=2, delay=10ms: 100, 200, 200, 200 req/s; latency 10, 10, 15, 20 ms.
        let steps = vec![step(1, 100.0, 10), step(2, 200.0, 10), step(3, 200.0, 15), step(4, 200.0, 20)];
        let a = analyse(&steps, 1.0).unwrap();
        assert_eq!(a.plateau_from, Some(2.0));
        assert_eq!(a.knee_mean, Some(2.0));
        assert_eq!(a.knee_p99, Some(2.0));
        assert_eq!(a.peak_rps, 200.0);
        assert_eq!(a.bottleneck, "unknown");
        assert_eq!(a.summary[0], "throughput levels off at ~200 req/s from 2 clients");
        assert_eq!(a.summary[1], "average and p99 latency rise above 2 clients");
    }

    #[test]
    fn a_server_at_full_cpu_is_named_as_the_bottleneck() {
        let mut steps = vec![step(1, 100.0, 1), step(2, 190.0, 1), step(4, 200.0, 2)];
        for (i, s) in steps.iter_mut().enumerate() {
            s.server = Some(crate::monitor::ProcessReport {
                pids: vec![1],
                cpu_percent_mean: [50.0, 95.0, 99.0][i],
                cpu_percent_max: 100.0,
                rss_max_bytes: 0,
                cores: 1,
                saturated: i > 0,
            });
        }
        let a = analyse(&steps, 1.0).unwrap();
        assert_eq!(a.bottleneck, "server");
        assert!(
            a.summary.iter().any(|s| s.contains("the server was at 95 % CPU on 1 cores from 2 clients")),
            "{:?}",
            a.summary
        );
    }

    #[test]
    fn a_slow_first_step_is_not_a_knee() {
        // A cold cache: 15 ms at 1 client, then 10 ms flat.
        let steps = vec![step(1, 66.0, 15), step(2, 200.0, 10), step(3, 300.0, 10), step(4, 400.0, 10)];
        let a = analyse(&steps, 1.0).unwrap();
        assert_eq!(a.knee_mean, None, "{:?}", a.summary);
        assert_eq!(a.summary[1], "latency stays flat over the steps");
    }

    #[test]
    fn growing_throughput_and_flat_latency_say_so() {
        let steps = vec![step(1, 100.0, 5), step(2, 200.0, 5), step(4, 400.0, 5)];
        let a = analyse(&steps, 1.0).unwrap();
        assert!(a.summary[0].contains("still grows"), "{:?}", a.summary);
        assert_eq!(a.summary[1], "latency stays flat over the steps");
        assert_eq!(a.knee_mean, None);
        assert_eq!(a.bottleneck, "not_reached");
        assert_eq!(a.summary[2], "no limit was reached yet: add clients (or rate) to find it");
    }
}
