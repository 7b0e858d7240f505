//! `hakaru sweep`: the load swept over client counts (drnbench-request-response) or rates, one step each, a table
//! line as each step ends, the files rewritten after every step, and an analysis at the end.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::analysis::analyse;
use crate::cli::{RequestArgs, StudyFlags, SweepArgs, WatchArgs};
use crate::engine;
use crate::export::{Exporter, drnbench::DrnbenchCsv, json::Json};
use crate::plan::{LoadModel, RequestSet, RunPlan, Stop, UsageError, check_threads, check_writable, parse_rate};
use crate::result::{StepResult, SweepSettings};
use crate::runner::{Study, Watchers, measure_step};
use crate::units::{format_micros, parse_duration};

/// What a sweep varies.
#[derive(Clone, Debug, PartialEq)]
pub enum Steps {
    Clients(Vec<usize>),
    Rates(Vec<f64>),
}

/// A duration flag that may be zero (`--warmup 0s`, `--wait 0s`, `--interval 0s`).
pub fn flag_duration_or_zero(flag: &str, value: &str) -> Result<Duration, UsageError> {
    parse_duration(value).map_err(|e| UsageError::new(format!("{flag} '{value}': {e}")))
}

fn parse_list<T: std::str::FromStr>(flag: &str, text: &str, example: &str) -> Result<Vec<T>, UsageError> {
    text.split(',')
        .map(|v| {
            v.trim().parse::<T>().map_err(|_| {
                UsageError::new(format!("{flag} '{text}': '{}' is not a number; write it like {example}", v.trim()))
            })
        })
        .collect()
}

/// The steps the flags ask for.
pub fn steps_from_args(a: &SweepArgs) -> Result<Steps, UsageError> {
    if let Some(list) = &a.clients {
        let clients: Vec<usize> = parse_list("--clients", list, "--clients 1,2,4,8")?;
        if clients.contains(&0) {
            return Err(UsageError::new(format!("--clients '{list}': a step needs at least 1 client")));
        }
        return Ok(Steps::Clients(clients));
    }
    if let Some(list) = &a.rates {
        let rates: Vec<f64> = parse_list("--rates", list, "--rates 1000,2000,4000")?;
        return rates.into_iter().map(|r| parse_rate("--rates", r)).collect::<Result<_, _>>().map(Steps::Rates);
    }
    if let (Some(start), Some(end)) = (a.rate_start, a.rate_end) {
        let start = parse_rate("--rate-start", start)?;
        let end = parse_rate("--rate-end", end)?;
        if end < start {
            return Err(UsageError::new(format!(
                "--rate-end {end} is below --rate-start {start}: give an end at least as high as the start"
            )));
        }
        let step = match a.rate_step {
            Some(s) => parse_rate("--rate-step", s)?,
            None => ((end - start) / 3.0).max(f64::MIN_POSITIVE),
        };
        let mut rates = Vec::new();
        let mut r = start;
        while r <= end * (1.0 + 1e-9) && rates.len() < 1000 {
            rates.push(r);
            r += step;
            if end == start {
                break;
            }
        }
        return Ok(Steps::Rates(rates));
    }
    // drnbench treats a start of 0 clients as 1.
    let start = a.start_clients.unwrap_or(1).max(1);
    let end = a.end_clients.unwrap_or(start);
    if end < start {
        return Err(UsageError::new(format!(
            "--end-clients {end} is below --start-clients {start}: give an end at least as high as the start"
        )));
    }
    if a.step == 0 {
        return Err(UsageError::new("--step 0: must be at least 1"));
    }
    Ok(Steps::Clients((start..=end).step_by(a.step).collect()))
}

/// Those flags checked: step timing, the requests, the watchers, and the output files (created now).
pub struct StudyParts {
    pub duration: Duration,
    pub interval: Duration,
    pub warmup: Duration,
    pub set: RequestSet,
    pub watchers: Watchers,
    pub outputs: Vec<(PathBuf, Box<dyn Exporter>)>,
}

impl StudyParts {
    pub fn from_args(request: &RequestArgs, watch: &WatchArgs, a: &StudyFlags) -> Result<StudyParts, UsageError> {
        let duration = crate::plan::flag_duration("--duration", &a.duration)?;
        let interval = flag_duration_or_zero("--interval", &a.interval)?;
        let warmup = flag_duration_or_zero("--warmup", &a.warmup)?;
        check_threads(a.threads)?;
        if a.connections == 0 {
            return Err(UsageError::new("--connections 0: must be at least 1"));
        }
        let set = RequestSet::from_args(request)?;
        let watchers = Watchers::from_args(watch)?;
        let mut outputs: Vec<(PathBuf, Box<dyn Exporter>)> = Vec::new();
        for (path, exporter) in [(&a.output, Box::new(DrnbenchCsv) as Box<dyn Exporter>), (&a.json, Box::new(Json))] {
            if let Some(p) = path {
                check_writable(p)?;
                outputs.push((p.clone(), exporter));
            }
        }
        Ok(StudyParts { duration, interval, warmup, set, watchers, outputs })
    }
}

/// Waits `d`, or less if Ctrl-C comes.
pub fn pause(d: Duration, interrupt: &AtomicBool) {
    let until = Instant::now() + d;
    while Instant::now() < until && !interrupt.load(Ordering::Relaxed) {
        std::thread::sleep((until - Instant::now()).min(Duration::from_millis(50)));
    }
}

pub fn sweep(a: &SweepArgs, interrupt: &AtomicBool) -> Result<ExitCode, UsageError> {
    let steps = steps_from_args(a)?;
    let wait = flag_duration_or_zero("--wait", &a.wait)?;
    let StudyParts { duration, interval, warmup, set, watchers, outputs } =
        StudyParts::from_args(&a.request, &a.watch, &a.study)?;
    let plans: Vec<(String, RunPlan)> = match &steps {
        Steps::Clients(list) => list
            .iter()
            .map(|&c| {
                let load = LoadModel::Closed { think: wait };
                (format!("c={c}"), RunPlan::new(&set, "sweep", c, a.study.threads, Stop::Duration(duration), load))
            })
            .collect(),
        Steps::Rates(list) => list
            .iter()
            .map(|&rate| {
                let load = LoadModel::Open { rate, arrival: a.study.arrival };
                let plan =
                    RunPlan::new(&set, "sweep", a.study.connections, a.study.threads, Stop::Duration(duration), load);
                (format!("rate={rate}"), plan)
            })
            .collect(),
    };
    let mut settings = plans[0].1.settings.clone();
    settings.sweep = Some(SweepSettings {
        kind: match steps {
            Steps::Clients(_) => "clients".into(),
            Steps::Rates(_) => "rates".into(),
        },
        values: match &steps {
            Steps::Clients(c) => c.iter().map(|&x| x as f64).collect(),
            Steps::Rates(r) => r.clone(),
        },
        step_duration_s: duration.as_secs_f64(),
        interval_s: interval.as_secs_f64(),
        warmup_s: warmup.as_secs_f64(),
        wait_s: wait.as_secs_f64(),
        slo: None,
        max_errors_percent: None,
    });
    engine::preflight(&plans[0].1)?;
    let mut study = Study::new(settings, set.keepalive, outputs);
    study.expected_hit_rate = watchers.expected_hit_rate;
    let rates = matches!(steps, Steps::Rates(_));
    println!("hakaru sweep  {}", set.targets.join(" "));
    println!("{}", table_header(rates, &watchers));
    for (i, (label, mut plan)) in plans.into_iter().enumerate() {
        if i > 0 {
            pause(interval, interrupt);
        }
        if interrupt.load(Ordering::Relaxed) {
            study.doc.interrupted = true;
            break;
        }
        plan.quiet = a.study.quiet;
        let (step, interrupted) = measure_step(&plan, &label, Some(warmup), &watchers, interrupt);
        if interrupted && step.requests == 0 {
            // Stopped before the step measured anything (during its warm-up): nothing to keep.
            study.doc.interrupted = true;
            break;
        }
        println!("{}", table_row(&step, rates));
        study.push(step, interrupted)?;
        if interrupted {
            break;
        }
    }
    finish(&mut study)?;
    Ok(if study.doc.interrupted { ExitCode::from(130) } else { ExitCode::SUCCESS })
}

/// Adds the analysis, writes the files a last time and prints the findings and warnings.
pub fn finish(study: &mut Study) -> Result<(), UsageError> {
    let capacity = study.doc.analysis.as_ref().and_then(|a| a.capacity.clone());
    study.doc.analysis = analyse(&study.doc.steps).map(|mut a| {
        a.capacity = capacity;
        a
    });
    study.refresh_warnings();
    study.write()?;
    if let Some(a) = &study.doc.analysis {
        println!();
        for s in &a.summary {
            println!("  {s}");
        }
    }
    if !study.doc.warnings.is_empty() {
        println!("\nwarnings");
        for w in &study.doc.warnings {
            println!("  ! {w}");
        }
    }
    Ok(())
}

pub fn table_header(rates: bool, watchers: &Watchers) -> String {
    let first = if rates { format!("{:>10} {:>9}", "rate", "achieved") } else { format!("{:>8}", "clients") };
    let mut h = format!(
        "{first} {:>10} {:>9} {:>9} {:>9} {:>9} {:>7} {:>7} {:>7}",
        "req/s", "mean", "p50", "p99", "max", "errors", "hakaru", "server"
    );
    for p in &watchers.probes {
        h.push_str(&format!("  {}", p.name));
    }
    h
}

pub fn table_row(step: &StepResult, rates: bool) -> String {
    let l = &step.latency;
    let first = match (&step.schedule, rates) {
        (Some(s), true) => format!("{:>10.0} {:>9.1}", s.target_rate, s.achieved_rate),
        _ => format!("{:>8}", step.load.connections),
    };
    let t = |us: f64| if l.count == 0 { "-".to_string() } else { format_micros(us) };
    let mut row = format!(
        "{first} {:>10.1} {:>9} {:>9} {:>9} {:>9} {:>7} {:>6.0}% {:>7}",
        step.throughput.requests_per_s,
        t(l.mean),
        t(l.percentile(50.0) as f64),
        t(l.percentile(99.0) as f64),
        t(l.max as f64),
        step.errors,
        step.generator.cpu_percent,
        step.server.as_ref().map(|s| format!("{:.0}%", s.cpu_percent_mean)).unwrap_or_else(|| "-".into()),
    );
    for p in &step.probes {
        let value = match (&p.after, p.delta) {
            (Some(v), Some(d)) => format!("{} ({})", short(v), short_delta(d)),
            (Some(v), None) => short(v),
            _ => "failed".into(),
        };
        row.push_str(&format!("  {value}"));
    }
    row
}

/// A probe value for a table cell: numbers to 4 significant decimals, other values as JSON.
fn short(v: &serde_json::Value) -> String {
    match v.as_f64() {
        Some(x) if x.fract() != 0.0 => format!("{x:.4}").trim_end_matches('0').to_string(),
        _ => v.to_string(),
    }
}

fn short_delta(d: f64) -> String {
    if d.fract() == 0.0 { format!("{d:+}") } else { format!("{d:+.4}") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn args(extra: &[&str]) -> SweepArgs {
        let mut argv = vec!["hakaru", "sweep"];
        argv.extend_from_slice(extra);
        argv.push("http://127.0.0.1:1/");
        match Cli::try_parse_from(argv).unwrap().command {
            Command::Sweep(a) => a,
            _ => unreachable!(),
        }
    }

    #[test]
    fn client_steps_follow_start_end_and_step_with_zero_taken_as_one() {
        let a = args(&["--start-clients", "0", "--end-clients", "6", "--step", "2"]);
        assert_eq!(steps_from_args(&a).unwrap(), Steps::Clients(vec![1, 3, 5]));
        let a = args(&["--clients", "1,2,4,8"]);
        assert_eq!(steps_from_args(&a).unwrap(), Steps::Clients(vec![1, 2, 4, 8]));
    }

    #[test]
    fn rate_steps_come_from_a_list_or_a_range() {
        let a = args(&["--rates", "1000,2000"]);
        assert_eq!(steps_from_args(&a).unwrap(), Steps::Rates(vec![1000.0, 2000.0]));
        let a = args(&["--rate-start", "100", "--rate-end", "400", "--rate-step", "100"]);
        assert_eq!(steps_from_args(&a).unwrap(), Steps::Rates(vec![100.0, 200.0, 300.0, 400.0]));
    }

    #[test]
    fn bad_ranges_name_the_flags() {
        let e = steps_from_args(&args(&["--start-clients", "4", "--end-clients", "2"])).unwrap_err();
        assert!(e.to_string().contains("--end-clients 2 is below --start-clients 4"), "{e}");
        let e = steps_from_args(&args(&["--rates", "0,100"])).unwrap_err();
        assert!(e.to_string().starts_with("--rates 0"), "{e}");
        let e = steps_from_args(&args(&["--clients", "1,x"])).unwrap_err();
        assert!(e.to_string().contains("'x' is not a number"), "{e}");
    }
}
