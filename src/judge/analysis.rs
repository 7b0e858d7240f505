//! What a sweep shows, in figures and in words: peak throughput and where it plateaus, the knee where latency
//! starts to climb, and whether the server or hakaru was the bottleneck.

use crate::result::{Analysis, StepResult, SweepSettings};

/// Throughput within this share of the peak counts as the plateau.
const PLATEAU_SHARE: f64 = 0.9;
/// Latency more than this factor above the lowest step's counts as climbing.
const CLIMB_FACTOR: f64 = 1.25;

/// The x value of a step: its client count, or its rate in an open loop.
pub fn step_axis(step: &StepResult) -> f64 {
    step.load.rate.unwrap_or(step.load.connections as f64)
}

/// Fewer steps than this show no trend: no plateau, no knee, no "still grows".
const MIN_STEPS: usize = 3;

fn fmt_x(axis: &str, x: f64) -> String {
    if axis == "rate" { format!("{x:.0}/s") } else { crate::base::units::count_of(x.round() as u64, "client") }
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
///
/// `sweep` gives the share of failures that disqualifies a step (1 % without it) and whether a capacity search
/// chose the steps (then a short search is an answer, not a sweep lacking a range).
pub fn analyse(steps: &[StepResult], sweep: Option<&SweepSettings>) -> Option<Analysis> {
    let max_failed = sweep.and_then(|s| s.max_errors_percent).unwrap_or(1.0);
    analyse_steps(steps, max_failed, sweep.is_some_and(|s| s.kind == "capacity"))
}

fn analyse_steps(steps: &[StepResult], max_failed_percent: f64, search: bool) -> Option<Analysis> {
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
                "every step failed more than {max_failed_percent} % of its requests (at {}: {:.1} % failed, {}): \
                 there is no throughput to analyse; check the target, or --ok-status",
                fmt_x(&axis, step_axis(s)),
                s.failed_percent(),
                s.failure_mix()
            )],
        });
    };
    let peak = sorted.iter().max_by(|a, b| a.throughput.ok_per_s.total_cmp(&b.throughput.ok_per_s))?;
    if all.len() < MIN_STEPS && !search {
        return Some(too_few_steps(&axis, &all, peak, failing_from));
    }
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
        (Some(m), Some(p)) if m == p => summary.push(format!("average and p99 latency rise above {}", fmt_x(&axis, m))),
        // Each knee is said at its own step, as the document's knee_mean and knee_p99 and the report draw them.
        (Some(m), Some(p)) => summary.push(format!(
            "average latency rises above {}, p99 latency above {}",
            fmt_x(&axis, m),
            fmt_x(&axis, p)
        )),
        (Some(m), None) => summary.push(format!("average latency rises above {}", fmt_x(&axis, m))),
        (None, Some(p)) => summary.push(format!("p99 latency rises above {}", fmt_x(&axis, p))),
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
    let watched = sorted.iter().any(|s| s.server.is_some());
    let bottleneck = if let Some(found) = saturation(&axis, &loaded) {
        summary.push(found.1);
        found.0
    } else if let Some((s, limit)) = loaded.iter().find_map(|s| s.machine_limit().map(|l| (s, l))) {
        // Neither was CPU-bound alone, but the cores they run on were full: of the two's work, or of others'.
        summary.push(limit.sentence(&format!("from {}", fmt_x(&axis, step_axis(s)))));
        limit.name()
    } else if !reached {
        let most = loaded.iter().filter_map(|s| s.server.as_ref()).map(|r| r.cpu_percent_mean).fold(0.0, f64::max);
        let server = if watched { format!("the server was at most at {most:.0} % CPU; ") } else { String::new() };
        summary.push(format!("{server}no limit was reached yet: add clients (or rate) to find it"));
        "not_reached"
    } else if let Some((s, r)) = loaded
        .iter()
        .filter_map(|s| s.server.as_ref().map(|r| (s, r)))
        .find(|(_, r)| r.busiest_thread.is_none() && r.cores > 1 && (85.0..=115.0).contains(&r.cpu_percent_mean))
    {
        // Only a guess where threads could not be read; where they could, the busiest one said more above.
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

/// The most groups a ramp's windows are pooled into: levels enough for a knee, windows enough in each that one
/// slow window is not one.
const RAMP_GROUPS: usize = 12;

/// What a ramp (`--stages`, `--rate-stages`) shows, as a sweep's analysis: its rising windows pooled into up to
/// 12 groups of consecutive windows, each taken as a step at its mean target (throughput the group's, p50 the
/// median of its windows', p99 the highest, CPU the windows' mean), analysed by the rules a sweep's steps are.
/// The first sentence says it is a ramp's estimate and how wide the windows were. None for a step without a
/// ramp's windows, or with fewer than 3 groups (a ramp of under 3 windows).
pub fn analyse_ramp(step: &StepResult) -> Option<Analysis> {
    let width = step.window_s;
    let whole: Vec<_> = step
        .windows
        .iter()
        .filter(|w| w.target.is_some() && (step.duration_s - w.t).min(width) >= width / 2.0)
        .collect();
    // The rising part: up to the first window at the highest target (a ramp down says nothing of the knee).
    let peak_at = whole
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.target.unwrap_or(0.0).total_cmp(&b.1.target.unwrap_or(0.0)).then(b.0.cmp(&a.0)))?;
    let rising = &whole[..=peak_at.0];
    let per = rising.len().div_ceil(RAMP_GROUPS).max(1);
    let groups: Vec<_> = rising.chunks(per).collect();
    if groups.len() < MIN_STEPS {
        return None;
    }
    let rate = step.load.rate.is_some();
    let pseudo: Vec<StepResult> = groups.iter().map(|g| group_step(step, g, width, rate)).collect();
    let mut a = analyse_steps(&pseudo, 1.0, false)?;
    a.summary.insert(
        0,
        format!(
            "a ramp's estimate from its windows ({} groups of {} window(s) of {} s, the load moving within each; \
             \"average\" is the windows' median here; a sweep measures each level apart):",
            groups.len(),
            per,
            width
        ),
    );
    Some(a)
}

/// A group of a ramp's windows as a step at their mean target.
fn group_step(step: &StepResult, g: &[&crate::metrics::WindowSummary], width: f64, rate: bool) -> StepResult {
    let mean = |f: &dyn Fn(&crate::metrics::WindowSummary) -> Option<f64>| {
        let v: Vec<f64> = g.iter().filter_map(|w| f(w)).collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    };
    let target = mean(&|w| w.target).unwrap_or(0.0);
    let secs = width * g.len() as f64;
    let requests: u64 = g.iter().map(|w| w.requests).sum();
    let failed: u64 = g.iter().map(|w| w.errors).sum();
    let mut p50s: Vec<u64> = g.iter().filter(|w| w.requests > w.errors).map(|w| w.p50_us).collect();
    p50s.sort_unstable();
    let p99 = g.iter().map(|w| w.p99_us).max().unwrap_or(0);
    let mut s = step.clone();
    s.windows = Vec::new();
    s.load.rate = rate.then_some(target);
    s.load.connections = if rate { step.load.connections } else { target.round() as usize };
    (s.requests, s.failed, s.ok, s.duration_s) = (requests, failed, requests - failed, secs);
    s.throughput.ok_per_s = (requests - failed) as f64 / secs;
    s.latency.count = requests - failed;
    s.latency.mean = p50s.get(p50s.len() / 2).copied().unwrap_or(0) as f64;
    s.latency.percentiles = [("p50".to_string(), s.latency.mean as u64), ("p99".to_string(), p99)].into();
    let cpu = mean(&|w| w.cpu_percent).unwrap_or(0.0);
    s.generator.cpu_percent = cpu;
    s.generator.saturated = crate::monitor::is_saturated(cpu, s.generator.cores);
    if let (Some(server), Some(cpu)) = (s.server.as_mut(), mean(&|w| w.server_cpu_percent)) {
        server.cpu_percent_mean = cpu;
        server.cpu_percent_max = g.iter().filter_map(|w| w.server_cpu_percent).fold(0.0, f64::max);
        server.busiest_thread = None;
        server.saturated = crate::monitor::is_saturated(cpu, server.cores);
    }
    s
}

/// The server or the generator CPU-bound at one of `loaded`'s steps: the bottleneck's name and the sentence
/// saying so. A server counts as CPU-bound when the process used 90 % of its cores, or when its busiest thread
/// used 90 % of one core: an event loop (Redis, a one-worker nginx, node) is at its limit then, however many
/// cores sit idle.
fn saturation(axis: &str, loaded: &[&&StepResult]) -> Option<(&'static str, String)> {
    if let Some((s, r)) = loaded.iter().find_map(|s| s.server.as_ref().filter(|r| r.saturated).map(|r| (s, r))) {
        let at = fmt_x(axis, step_axis(s));
        let cores = crate::base::units::count_of(r.cores as u64, "core");
        let sentence =
            match r.busiest_thread.as_ref().filter(|_| !crate::monitor::is_saturated(r.cpu_percent_mean, r.cores)) {
                Some(t) => format!(
                    "the server's busiest thread ({}) was at {:.0} % of one core from {at} (the process at {:.0} % of \
                 {cores}): one thread is its limit, as in an event-loop server",
                    t.name, t.cpu_percent, r.cpu_percent_mean
                ),
                None => {
                    format!("the server was at {:.0} % CPU on {cores} from {at}: that is its limit", r.cpu_percent_mean)
                }
            };
        return Some(("server", sentence));
    }
    let s = loaded.iter().find(|s| s.generator.saturated)?;
    Some((
        "generator",
        format!(
            "hakaru itself was at {:.0} % CPU of its {} from {}: the generator may be the limit, not the server",
            s.generator.cpu_percent,
            crate::base::units::count_of(s.generator.cores as u64, "core"),
            fmt_x(axis, step_axis(s))
        ),
    ))
}

/// A sweep of one or two steps: what was measured, and the range to give, instead of a trend two points cannot
/// show. A CPU-bound server or generator is still said: that was seen, not guessed.
fn too_few_steps(axis: &str, all: &[&StepResult], peak: &StepResult, failing_from: Option<f64>) -> Analysis {
    let n = all.len();
    let range = if axis == "rate" {
        let top = all.iter().map(|s| step_axis(s)).fold(1.0, f64::max);
        format!("--rates {:.0},{:.0},{:.0},{:.0}", top / 4.0, top / 2.0, top, top * 2.0)
    } else {
        "--clients 1,2,4,8,16".to_string()
    };
    let mut summary = vec![format!(
        "{} successful req/s at {}; a sweep of {} shows no plateau or knee: give a range of at least {MIN_STEPS} \
         steps, e.g. {range}",
        peak.throughput.ok_per_s.round(),
        fmt_x(axis, step_axis(peak)),
        crate::base::units::count_of(n as u64, "step"),
    )];
    let loaded: Vec<&&StepResult> = all.iter().collect();
    let machine = || loaded.iter().find_map(|s| s.machine_limit().map(|l| (s, l)));
    let bottleneck = match saturation(axis, &loaded) {
        Some((name, sentence)) => {
            summary.push(sentence);
            name
        }
        None => match machine() {
            Some((s, limit)) => {
                summary.push(limit.sentence(&format!("at {}", fmt_x(axis, step_axis(s)))));
                limit.name()
            }
            None => "unknown",
        },
    };
    Analysis {
        axis: axis.to_string(),
        peak_rps: peak.throughput.ok_per_s,
        peak_at: step_axis(peak),
        plateau_from: None,
        knee_mean: None,
        knee_p99: None,
        failing_from,
        bottleneck: bottleneck.into(),
        capacity: None,
        summary,
    }
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
        let a = analyse_steps(&steps, 1.0, false).unwrap();
        assert_eq!(a.plateau_from, Some(2.0));
        assert_eq!(a.knee_mean, Some(2.0));
        assert_eq!(a.knee_p99, Some(2.0));
        assert_eq!(a.peak_rps, 200.0);
        assert_eq!(a.bottleneck, "unknown");
        assert_eq!(a.summary[0], "throughput levels off at ~200 req/s from 2 clients");
        assert_eq!(a.summary[1], "average and p99 latency rise above 2 clients");
    }

    /// A step of `clients` clients at `rps` requests/s: `slow` of every 100 requests take `slow_ms`, the rest `ms`.
    fn mixed_step(clients: usize, rps: f64, ms: u64, slow: u64, slow_ms: u64) -> StepResult {
        let mut m = StepMetrics::new();
        let t = Instant::now();
        for i in 0..(rps * 10.0) as u64 {
            let took = if i % 100 < slow { slow_ms } else { ms };
            m.record_response(200, true, t, t, t + Duration::from_millis(took));
        }
        let load = StepLoad { model: "closed".into(), connections: clients, threads: 1, rate: None };
        StepResult::from_metrics(&format!("c={clients}"), load, &m, vec![], Duration::from_secs(10))
    }

    #[test]
    fn the_summary_names_each_knee_at_its_own_step() {
        // p99 climbs from 2 clients (2 % of requests at 100 ms), the average only at 8 (every request 20 ms).
        let steps = vec![
            mixed_step(1, 100.0, 10, 0, 10),
            mixed_step(2, 200.0, 10, 2, 100),
            mixed_step(4, 300.0, 10, 2, 100),
            mixed_step(8, 300.0, 20, 2, 100),
        ];
        let a = analyse_steps(&steps, 1.0, false).unwrap();
        assert_eq!((a.knee_mean, a.knee_p99), (Some(4.0), Some(1.0)), "{:?}", a.summary);
        assert_eq!(a.summary[1], "average latency rises above 4 clients, p99 latency above 1 client");
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
                busiest_thread: None,
            });
        }
        let a = analyse_steps(&steps, 1.0, false).unwrap();
        assert_eq!(a.bottleneck, "server");
        assert!(
            a.summary.iter().any(|s| s.contains("the server was at 95 % CPU on 1 core from 2 clients")),
            "{:?}",
            a.summary
        );
    }

    #[test]
    fn an_event_loop_at_one_full_core_of_two_is_the_limit() {
        let mut steps = vec![step(1, 100.0, 1), step(2, 150.0, 1), step(4, 155.0, 3)];
        for (i, s) in steps.iter_mut().enumerate() {
            let thread = [60.0, 94.0, 96.0][i];
            s.server = Some(crate::monitor::ProcessReport {
                pids: vec![1],
                cpu_percent_mean: thread + 3.0,
                cpu_percent_max: thread + 5.0,
                rss_max_bytes: 0,
                cores: 2,
                saturated: crate::monitor::server_saturated(thread + 3.0, 2, Some(thread)),
                busiest_thread: Some(crate::monitor::BusiestThread {
                    name: "redis-server".into(),
                    cpu_percent: thread,
                }),
            });
        }
        let a = analyse_steps(&steps, 1.0, false).unwrap();
        assert_eq!(a.bottleneck, "server", "{:?}", a.summary);
        assert_eq!(
            a.summary[2],
            "the server's busiest thread (redis-server) was at 94 % of one core from 2 clients (the process at 97 % \
             of 2 cores): one thread is its limit, as in an event-loop server"
        );
    }

    #[test]
    fn a_sweep_of_fewer_than_three_steps_asks_for_a_range_and_claims_no_trend() {
        for steps in [vec![step(1, 100.0, 5)], vec![step(1, 100.0, 5), step(2, 200.0, 5)]] {
            let a = analyse_steps(&steps, 1.0, false).unwrap();
            let text = a.summary.join("\n");
            assert!(text.contains("give a range of at least 3 steps, e.g. --clients 1,2,4,8,16"), "{text}");
            assert!(!text.contains("still grows") && !text.contains("flat") && !text.contains("no limit"), "{text}");
            assert_eq!((a.plateau_from, a.knee_mean, a.bottleneck.as_str()), (None, None, "unknown"));
        }
        let one = analyse_steps(&[step(1, 100.0, 5)], 1.0, false).unwrap();
        assert!(
            one.summary[0].starts_with("100 successful req/s at 1 client; a sweep of 1 step "),
            "{:?}",
            one.summary
        );
        // A capacity search chose its own steps: two of them are its answer, not a sweep lacking a range.
        let searched = analyse_steps(&[step(1, 100.0, 5), step(2, 200.0, 5)], 1.0, true).unwrap();
        assert!(!searched.summary.join(" ").contains("give a range"), "{:?}", searched.summary);
    }

    #[test]
    fn a_slow_first_step_is_not_a_knee() {
        // A cold cache: 15 ms at 1 client, then 10 ms flat.
        let steps = vec![step(1, 66.0, 15), step(2, 200.0, 10), step(3, 300.0, 10), step(4, 400.0, 10)];
        let a = analyse_steps(&steps, 1.0, false).unwrap();
        assert_eq!(a.knee_mean, None, "{:?}", a.summary);
        assert_eq!(a.summary[1], "latency stays flat over the steps");
    }

    #[test]
    fn growing_throughput_and_flat_latency_say_so() {
        let steps = vec![step(1, 100.0, 5), step(2, 200.0, 5), step(4, 400.0, 5)];
        let a = analyse_steps(&steps, 1.0, false).unwrap();
        assert!(a.summary[0].contains("still grows"), "{:?}", a.summary);
        assert_eq!(a.summary[1], "latency stays flat over the steps");
        assert_eq!(a.knee_mean, None);
        assert_eq!(a.bottleneck, "not_reached");
        assert_eq!(a.summary[2], "no limit was reached yet: add clients (or rate) to find it");
    }

    /// `s` watched, the server at `server` % CPU on `cores` (CPU numbers) beside hakaru at `generator` % on its
    /// own, the machine's cores as busy as `busy`.
    fn on_machine(s: &mut StepResult, server: f64, cpus: (&[usize], &[usize]), busy: &[f64], generator: f64) {
        s.server = Some(crate::monitor::ProcessReport {
            pids: vec![1],
            cpu_percent_mean: server,
            cpu_percent_max: server,
            rss_max_bytes: 0,
            cores: cpus.0.len(),
            saturated: false,
            busiest_thread: None,
        });
        s.machine = Some(crate::monitor::MachineReport {
            cores: busy.iter().enumerate().map(|(cpu, &b)| crate::monitor::CoreBusy { cpu, busy_percent: b }).collect(),
            server_cpus: cpus.0.to_vec(),
            generator_cpus: cpus.1.to_vec(),
            generator_percent: generator,
        });
    }

    #[test]
    fn a_full_core_shared_by_the_server_and_hakaru_is_named_not_no_limit() {
        // Both pinned to CPU 0 (taskset -c 0), each about half of it: throughput still grows a little, neither is
        // CPU-bound alone; the core is full.
        let mut steps = vec![step(1, 100.0, 5), step(2, 200.0, 5), step(4, 400.0, 5)];
        for (s, half) in steps.iter_mut().zip([30.0, 45.0, 49.0]) {
            on_machine(s, half, (&[0], &[0]), &[2.0 * half + 1.0, 4.0], half);
        }
        let a = analyse_steps(&steps, 1.0, false).unwrap();
        assert_eq!(a.bottleneck, "shared_cpu", "{:?}", a.summary);
        assert!(
            a.summary[2].starts_with(
                "the server and hakaru share 1 core (CPU 0), 99 % busy from 4 clients (the server 49 % CPU, hakaru 49 %)"
            ),
            "{:?}",
            a.summary
        );
        assert!(steps[1].warnings(true).iter().any(|w| w.contains("the figures measure the two sharing it")));
        // Without the machine's figures it was "no limit was reached yet".
        let bare: Vec<StepResult> = steps.iter().cloned().map(|mut s| (s.machine = None, s).1).collect();
        assert_eq!(analyse_steps(&bare, 1.0, false).unwrap().bottleneck, "not_reached");
    }

    #[test]
    fn cores_held_by_other_programs_are_named_not_a_worker_pool() {
        // A plateau with neither CPU-bound: on a quiet machine the limit is elsewhere (a pool, a lock, I/O).
        let mut steps = vec![step(1, 100.0, 10), step(2, 200.0, 10), step(3, 200.0, 15), step(4, 200.0, 20)];
        for s in steps.iter_mut() {
            on_machine(s, 40.0, (&[0, 1], &[0, 1]), &[40.0, 45.0], 35.0);
        }
        assert_eq!(analyse_steps(&steps, 1.0, false).unwrap().bottleneck, "elsewhere");
        // The same figures with both cores full of other programs' work: the machine is the limit.
        for s in steps.iter_mut() {
            on_machine(s, 40.0, (&[0, 1], &[0, 1]), &[97.0, 99.0], 35.0);
        }
        let a = analyse_steps(&steps, 1.0, false).unwrap();
        assert_eq!(a.bottleneck, "busy_machine", "{:?}", a.summary);
        let last = a.summary.last().unwrap();
        assert!(last.starts_with("the machine was busy with other work"), "{last}");
        assert!(last.contains("(CPU 0-1) were 98 % busy from 2 clients, 121 % CPU of it other programs'"), "{last}");
        assert!(steps[0].warnings(true).iter().any(|w| w.starts_with("other programs used 121 % CPU of CPU 0-1")));
        // A sweep of two steps says it too, instead of "unknown".
        let two = analyse_steps(&steps[..2], 1.0, false).unwrap();
        assert_eq!(two.bottleneck, "busy_machine", "{:?}", two.summary);
    }
}
