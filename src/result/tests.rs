//! Unit tests of the result document: a step's figures from its metrics, runs summed from merged histograms, the
//! limits named.

use super::*;
use std::time::{Duration, Instant};

#[test]
fn a_step_that_sent_nothing_blames_no_target() {
    let mut step = step_of(&[]);
    step.connections.opened = 2;
    let w = step.warnings(true);
    assert!(w.contains(&"no request was sent in this step; there are no figures".to_string()), "{w:?}");
    assert!(!w.iter().any(|w| w.contains("the target accepted")), "{w:?}");
    step.unfinished = 2;
    let w = step.warnings(true);
    assert!(w.iter().any(|w| w.contains("2 still waiting") && w.contains("accepted 2 connection(s)")), "{w:?}");
}

fn reading(name: &str, delta: f64) -> crate::monitor::ProbeReading {
    crate::monitor::ProbeReading {
        name: name.into(),
        spec: String::new(),
        before: None,
        after: None,
        delta: Some(delta),
        error: None,
    }
}

#[test]
fn a_slow_key_value_op_is_shown_with_its_key_and_the_command_when_its_name_is_another() {
    let slow = |request: &str, command: Option<&str>, key: Option<&str>| {
        SlowRequest {
            request: request.into(),
            status: 200,
            error: None,
            latency_us: 1,
            command: command.map(String::from),
            key: key.map(String::from),
        }
        .shown()
    };
    assert_eq!(slow("GET /path", None, None), "GET /path");
    assert_eq!(slow("GET", Some("get"), Some("hakaru:000123")), "GET hakaru:000123");
    assert_eq!(slow("SET __key__ __data__", Some("SET"), Some("k")), "SET k");
    assert_eq!(slow("READ", Some("HGETALL"), Some("user42")), "READ: HGETALL user42");
    assert_eq!(slow("PING", Some("PING"), None), "PING");
    assert_eq!(slow("AUTH __key__", Some("AUTH"), None), "AUTH");
}

#[test]
fn building_requests_is_named_the_limit_only_when_hakaru_was_saturated_and_it_took_half() {
    let load = StepLoad { rate: None, model: "closed".into(), connections: 1, threads: 1 };
    let mut s = StepResult::from_metrics("s", load, &StepMetrics::new(), vec![], Duration::from_secs(1));
    let limit = |s: &StepResult| s.warnings(true).iter().any(|w| w.contains("it limits the rate"));
    s.generator = GeneratorReport { cpu_percent: 99.0, cores: 1, saturated: true, script_percent: Some(62.0) };
    assert!(limit(&s), "{:?}", s.warnings(true));
    s.generator.script_percent = Some(40.0);
    assert!(!limit(&s));
    s.generator = GeneratorReport { cpu_percent: 30.0, cores: 1, saturated: false, script_percent: Some(90.0) };
    assert!(!limit(&s));
}

#[test]
fn a_steps_hit_rate_comes_from_the_changes_of_hits_and_misses_or_gets() {
    let load = StepLoad { rate: None, model: "closed".into(), connections: 1, threads: 1 };
    let mut s = StepResult::from_metrics("s", load, &StepMetrics::new(), vec![], Duration::from_secs(1));
    assert_eq!(s.hit_rate_from_probes(), None);
    // hakaru serve's /status: cache_hits and cache_misses; the cumulative rate probe is not used.
    s.probes = vec![reading("cache_hit_rate", 0.02), reading("cache_hits", 2034.0), reading("cache_misses", 2276.0)];
    let r = s.hit_rate_from_probes().unwrap();
    assert!((r - 2034.0 / 4310.0).abs() < 1e-12, "{r}");
    // droonga-http-server's /statistics/cache: nHits and nGets.
    s.probes = vec![reading("hitRatio", 1.0), reading("nHits", 30.0), reading("nGets", 120.0)];
    assert_eq!(s.hit_rate_from_probes(), Some(0.25));
    // Nothing asked of the cache during the step: no rate.
    s.probes = vec![reading("cache_hits", 0.0), reading("cache_misses", 0.0)];
    assert_eq!(s.hit_rate_from_probes(), None);
}

#[test]
fn runs_are_summed_from_merged_histograms_never_averaged_percentiles() {
    // The reference example: run 1 has 1000 answers at 1 ms (p99 1 ms), run 2 has 980 at 1 ms and 20 at
    // 200 ms (p99 200 ms). The mean of the p99s is 100.5 ms; the p99 of all 2000 answers is 1 ms.
    let steps = [step_of(&[(1000, 1000)]), step_of(&[(980, 1000), (20, 200_000)])];
    let r = RunsSummary::of(&steps, 2, None).unwrap();
    let p99s = [&steps[0], &steps[1]].map(|s| s.latency.percentile(99.0) as f64);
    assert_eq!(r.p99_us.values, p99s);
    assert!((p99s[0] - 1000.0).abs() < 2.0 && (p99s[1] - 200_000.0).abs() < 200.0, "{p99s:?}");
    assert!((r.p99_us.mean - 100_500.0).abs() < 100.0, "{}", r.p99_us.mean);
    assert_eq!(r.latency.count, 2000);
    assert_eq!(r.latency.percentile(99.0), steps[0].latency.percentile(99.0), "the pooled p99 is 1 ms");
    assert_eq!(r.requests, 2000);
    assert_eq!(r.ok_per_s.values, [1000.0, 1000.0]);
    assert_eq!(r.ok_per_s.sd, Some(0.0));
    // A run cut short is kept as a step but left out of the figures.
    let r = RunsSummary::of(&steps, 3, Some(2)).unwrap();
    assert_eq!((r.completed, r.requests, r.latency.max), (1, 1000, steps[0].latency.max));
    assert_eq!(r.ok_per_s.ci95, None);
}

#[test]
fn a_step_reports_rates_percentiles_and_status_keys() {
    let mut m = StepMetrics::new();
    let t = Instant::now();
    for i in 1..=100u64 {
        m.record_response(200, true, t, t, t + Duration::from_micros(i * 100));
    }
    m.record_error(crate::metrics::ErrorKind::Timeout, || "timed out".into());
    let load = StepLoad { rate: None, model: "closed".into(), connections: 10, threads: 1 };
    let s = StepResult::from_metrics("run", load, &m, vec![], Duration::from_secs(2));
    assert_eq!(s.requests, 101);
    assert_eq!(s.responses, 100);
    assert_eq!(s.throughput.requests_per_s, 50.5);
    assert_eq!(s.status.get("0"), Some(&1));
    assert_eq!(s.status.get("200"), Some(&100));
    assert!((s.latency.percentile(50.0) as i64 - 5000).abs() < 10);
    assert_eq!(s.error_kinds[0].kind, "timeout");
    let w = s.warnings(true);
    assert!(w.iter().any(|w| w.contains("1 of 101 requests failed (0.99 %: timeout: 1)")), "{w:?}");
    assert!(w.iter().any(|w| w.contains("only 0 of 10 connections")), "{w:?}");
}

#[test]
fn late_requests_in_seconds_of_a_saturated_cpu_are_blamed_on_hakaru() {
    let mut m = StepMetrics::new();
    let t = Instant::now();
    // 100 answers, 30 of them sent 5 ms late, 10 of those with every connection busy.
    for i in 0..100u64 {
        let late = if i < 30 { Duration::from_millis(5) } else { Duration::ZERO };
        m.record_lag(late, true);
        m.record_response(200, true, t, t + late, t + late + Duration::from_micros(100));
    }
    m.starved = 10;
    // Two seconds, two load threads: the first at 190 % (saturated) with 12 late answers, the second at 60 % with 18.
    let window = |t: f64, cpu: f64, late: u64| crate::metrics::WindowSummary {
        t,
        cpu_percent: Some(cpu),
        late,
        ..Default::default()
    };
    let windows = vec![window(0.0, 190.0, 12), window(1.0, 60.0, 18)];
    let load = StepLoad { rate: Some(50.0), model: "open".into(), connections: 4, threads: 2 };
    let s = StepResult::from_metrics("run", load, &m, windows, Duration::from_secs(2));
    let sched = s.schedule.as_ref().unwrap();
    assert_eq!((sched.late, sched.starved, sched.late_cpu), (30, 10, 12));
    let w = s.warnings(true);
    let late = w.iter().find(|w| w.contains("left more than 1 ms after")).unwrap();
    assert!(late.contains("; 12 in seconds when hakaru's 2 load threads used 90 % or more"), "{late}");
    // The starved of a saturated second are -c's, not the CPU's.
    let mut busy = window(0.0, 199.0, 30);
    busy.starved = 10;
    let load = StepLoad { rate: Some(50.0), model: "open".into(), connections: 4, threads: 2 };
    let s = StepResult::from_metrics("run", load, &m, vec![busy], Duration::from_secs(2));
    assert_eq!(s.schedule.unwrap().late_cpu, 20);
}
