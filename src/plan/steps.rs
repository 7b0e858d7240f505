//! The plan of a run of several steps (a sweep or a capacity search): which steps, and the flags they share.

use std::path::PathBuf;
use std::time::Duration;

use super::slo::parse_percent;
use super::{RequestSet, RunPlan, check_threads, flag_duration, parse_rate};
use crate::base::units::parse_flag_duration;
use crate::cli::args::{RequestArgs, StepFlags, SweepArgs, WatchArgs};
use crate::error::CliError;
use crate::monitor::Watchers;

/// What a sweep varies.
#[derive(Clone, Debug, PartialEq)]
pub enum Steps {
    Clients(Vec<usize>),
    Rates(Vec<f64>),
}

impl Steps {
    pub fn len(&self) -> usize {
        match self {
            Steps::Clients(c) => c.len(),
            Steps::Rates(r) => r.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A duration flag that may be zero (`--warmup 0s`, `--wait 0s`, `--interval 0s`).
pub fn flag_duration_or_zero(flag: &str, value: &str) -> Result<Duration, CliError> {
    parse_flag_duration(value).map_err(|e| CliError::new(format!("{flag} '{value}': {e}")))
}

pub(crate) fn parse_list<T: std::str::FromStr>(flag: &str, text: &str, example: &str) -> Result<Vec<T>, CliError> {
    text.split(',')
        .map(|v| {
            v.trim().parse::<T>().map_err(|_| {
                CliError::new(format!("{flag} '{text}': '{}' is not a number; write it like {example}", v.trim()))
            })
        })
        .collect()
}

/// A sweep given no range at all is refused rather than run as drnbench's default of one step of one client,
/// which can show neither a plateau nor a knee; nor is it run as the drnbench tutorial's range (0 to 20 by 2:
/// eleven 30 s steps and their pauses, about 7 minutes) that a bare command line gives no hint of. The message
/// gives both ranges to copy. Checked after every other flag, so a misspelt one is named first.
pub fn require_range(a: &SweepArgs) -> Result<(), CliError> {
    let (clients, rates) = (
        a.clients.is_some() || a.start_clients.is_some() || a.end_clients.is_some(),
        a.rates.is_some() || a.rate_start.is_some() || a.rate_end.is_some(),
    );
    if clients || rates {
        return Ok(());
    }
    Err(CliError::new(
        "sweep: no range given, and a sweep needs at least 3 steps to show where throughput levels off; give \
         --clients 1,2,4,8,16 (or drnbench's --start-clients 0 --end-clients 20 --step 2, or --rates 1000,2000,4000); \
         one step of N clients is `hakaru run -c N`",
    ))
}

/// The steps the flags ask for.
pub fn sweep_steps(a: &SweepArgs) -> Result<Steps, CliError> {
    let rate_sweep = a.rates.is_some() || a.rate_start.is_some() || a.rate_end.is_some();
    if rate_sweep && (a.start_clients.is_some() || a.end_clients.is_some()) {
        // Two kinds of sweep: one of them would be silently ignored.
        let clients = if a.start_clients.is_some() { "--start-clients" } else { "--end-clients" };
        return Err(CliError::new(format!(
            "{clients} with a rate sweep: a sweep steps client counts or rates, not both; \
             drop {clients}, or drop --rates/--rate-start/--rate-end (-c sets the connections of a rate sweep)"
        )));
    }
    match (a.rate_start, a.rate_end) {
        (Some(s), None) => {
            return Err(CliError::new(format!(
                "--rate-start {s} needs --rate-end: give both, e.g. --rate-start {s} --rate-end {}",
                s * 4.0
            )));
        }
        (None, Some(e)) => {
            return Err(CliError::new(format!(
                "--rate-end {e} needs --rate-start: give both, e.g. --rate-start {} --rate-end {e}",
                e / 4.0
            )));
        }
        _ => {}
    }
    if a.rate_step.is_some() && a.rate_start.is_none() {
        return Err(CliError::new("--rate-step needs --rate-start and --rate-end"));
    }
    if let Some(list) = &a.clients {
        let clients: Vec<usize> = parse_list("--clients", list, "--clients 1,2,4,8")?;
        if clients.contains(&0) {
            return Err(CliError::new(format!("--clients '{list}': a step needs at least 1 client")));
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
            return Err(CliError::new(format!(
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
    // drnbench's rule: start, start + step, ... up to the end (Ruby's Integer#step), each 0 run as 1; a count
    // met twice (0 and 1) runs once, as drnbench keeps one result per count.
    let start = a.start_clients.unwrap_or(0);
    let end = a.end_clients.unwrap_or(start.max(1));
    if end < start {
        return Err(CliError::new(format!(
            "--end-clients {end} is below --start-clients {start}: give an end at least as high as the start"
        )));
    }
    if a.step == 0 {
        return Err(CliError::new("--step 0: must be at least 1"));
    }
    let n = (end - start) / a.step + 1;
    if n > MAX_STEPS {
        return Err(CliError::new(format!(
            "--start-clients {start} --end-clients {end} --step {}: {n} steps, more than {MAX_STEPS}; use a larger \
             --step or --clients with the counts you want",
            a.step
        )));
    }
    let mut clients: Vec<usize> = (start..=end).step_by(a.step).map(|c| c.max(1)).collect();
    clients.dedup();
    Ok(Steps::Clients(clients))
}

/// The most steps one sweep may have: a plan of 10^8 steps is a typo, not a benchmark.
const MAX_STEPS: usize = 10_000;

/// The flags shared by sweeps and capacity searches, checked: step timing, the requests, the watchers, and the
/// output files (checked now, so a bad path fails before the load).
pub struct StepsPlan {
    pub duration: Duration,
    pub interval: Duration,
    pub warmup: Duration,
    pub set: RequestSet,
    pub watchers: Watchers,
    /// `--max-error-rate`: the most failed requests a step may have and still count, percent.
    pub max_error_percent: f64,
    /// `-o`: the CSV in drnbench's format.
    pub drnbench_csv: Option<PathBuf>,
    /// `--csv`: hakaru's wide sweep CSV.
    pub csv: Option<PathBuf>,
    /// `--json`: the result document.
    pub json: Option<PathBuf>,
    /// `--hdr-log`: every step's windows in one interval log, tagged by step.
    pub hdr_log: Option<PathBuf>,
    /// `--window`: the width of every step's windows.
    pub window: Duration,
    /// The dashboard and the remote-write push, for every step.
    pub live: super::live::LiveSettings,
}

impl StepsPlan {
    /// The files the steps are written to: drnbench's CSV, the wide CSV, the document.
    pub fn outputs(&self) -> super::Outputs {
        super::Outputs {
            json: self.json.clone(),
            csv: self.csv.clone(),
            wide: true,
            drnbench: self.drnbench_csv.clone(),
            hdr_log: self.hdr_log.clone(),
        }
    }

    /// A step's plan with the windows' width and the HDR log the steps share (its windows then keep 3-digit
    /// histograms).
    pub fn over_time(&self, plan: &mut RunPlan) {
        plan.window = self.window;
        plan.hdr_log = self.hdr_log.clone();
    }

    pub fn from_args(request: &RequestArgs, watch: &WatchArgs, a: &StepFlags) -> Result<StepsPlan, CliError> {
        let duration = flag_duration("--duration", &a.duration)?;
        let interval = flag_duration_or_zero("--interval", &a.interval)?;
        let warmup = flag_duration_or_zero("--warmup", &a.warmup)?;
        let max_error_percent = parse_percent("--max-error-rate", &a.max_error_rate)?;
        check_threads(a.threads)?;
        if a.connections == 0 {
            return Err(CliError::new("--connections 0: must be at least 1"));
        }
        let set = RequestSet::from_args(request, None)?;
        let watchers = super::watchers(watch, &set.endpoints)?;
        super::check_outputs(&[
            ("--output", a.output.as_deref()),
            ("--csv", a.csv.as_deref()),
            ("--json", a.json.as_deref()),
            ("--hdr-log", a.hdr_log.as_deref()),
        ])?;
        let window = super::flag_window(&a.window)?;
        Ok(StepsPlan {
            duration,
            interval,
            warmup,
            set,
            watchers,
            max_error_percent,
            drnbench_csv: a.output.clone(),
            csv: a.csv.clone(),
            json: a.json.clone(),
            hdr_log: a.hdr_log.clone(),
            window,
            live: super::live::LiveSettings::from_args(&a.live)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::args::{Cli, Command};
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
        // drnbench: 0.step(20, 2) runs 0 (as 1), 2, 4, ..., 20.
        let a = args(&["--start-clients", "0", "--end-clients", "20", "--step", "2"]);
        assert_eq!(sweep_steps(&a).unwrap(), Steps::Clients(vec![1, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20]));
        let a = args(&["--start-n-clients", "1", "--end-n-clients", "6", "--step", "2"]);
        assert_eq!(sweep_steps(&a).unwrap(), Steps::Clients(vec![1, 3, 5]));
        // 0 and 1 are both one client: run once.
        let a = args(&["--start-clients", "0", "--end-clients", "3"]);
        assert_eq!(sweep_steps(&a).unwrap(), Steps::Clients(vec![1, 2, 3]));
        // drnbench's defaults: start 0, end 1, step 1.
        assert_eq!(sweep_steps(&args(&[])).unwrap(), Steps::Clients(vec![1]));
        let a = args(&["--start-clients", "5", "--end-clients", "20", "--step", "5"]);
        assert_eq!(sweep_steps(&a).unwrap(), Steps::Clients(vec![5, 10, 15, 20]));
        let e = sweep_steps(&args(&["--end-clients", "100000000"])).unwrap_err().to_string();
        assert!(e.contains("100000001 steps, more than 10000"), "{e}");
        let a = args(&["--clients", "1,2,4,8"]);
        assert_eq!(sweep_steps(&a).unwrap(), Steps::Clients(vec![1, 2, 4, 8]));
    }

    #[test]
    fn rate_steps_come_from_a_list_or_a_range() {
        let a = args(&["--rates", "1000,2000"]);
        assert_eq!(sweep_steps(&a).unwrap(), Steps::Rates(vec![1000.0, 2000.0]));
        let a = args(&["--rate-start", "100", "--rate-end", "400", "--rate-step", "100"]);
        assert_eq!(sweep_steps(&a).unwrap(), Steps::Rates(vec![100.0, 200.0, 300.0, 400.0]));
    }

    #[test]
    fn bad_ranges_name_the_flags() {
        let e = sweep_steps(&args(&["--start-clients", "4", "--end-clients", "2"])).unwrap_err();
        assert!(e.to_string().contains("--end-clients 2 is below --start-clients 4"), "{e}");
        let e = sweep_steps(&args(&["--rates", "0,100"])).unwrap_err();
        assert!(e.to_string().starts_with("--rates 0"), "{e}");
        let e = sweep_steps(&args(&["--clients", "1,x"])).unwrap_err();
        assert!(e.to_string().contains("'x' is not a number"), "{e}");
        let e = sweep_steps(&args(&["--start-clients", "2", "--rate-start", "10", "--rate-end", "20"])).unwrap_err();
        assert!(e.to_string().starts_with("--start-clients with a rate sweep"), "{e}");
    }
}
