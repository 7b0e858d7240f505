//! Watching server processes during a step: CPU and resident memory of the watched processes and their
//! descendants, sampled from /proc on a thread of its own.

use std::collections::HashMap;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::procfs::{self, Stat};
use crate::error::CliError;

/// Which server processes to watch: `--monitor-pid PID` (repeatable) and `--monitor-name NAME` (repeatable: every
/// process whose /proc/PID/comm equals NAME, or whose cmdline's first word's file name equals NAME).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WatchSpec {
    pub pids: Vec<u32>,
    pub names: Vec<String>,
    /// Every process holding a socket that listens on one of these ports (`--monitor-port`).
    pub ports: Vec<u16>,
}

impl WatchSpec {
    pub fn is_empty(&self) -> bool {
        self.pids.is_empty() && self.names.is_empty() && self.ports.is_empty()
    }
}

/// The figures of one step for the watched processes.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ProcessReport {
    /// The watched pids (as given and as resolved from names); descendants are counted but not listed.
    pub pids: Vec<u32>,
    /// 100 = one core fully busy; over the whole step (CPU time delta / wall time).
    pub cpu_percent_mean: f64,
    /// The highest one-interval sample (the step's mean when the step was shorter than an interval).
    pub cpu_percent_max: f64,
    /// The highest total resident memory seen.
    pub rss_max_bytes: u64,
    /// Cores the watched processes may use (affinity of the first pid, else the machine's).
    pub cores: usize,
    /// The server was CPU-bound: `cpu_percent_mean` reached 90 % of `cores * 100`, or its busiest thread 90 % of
    /// one core (an event loop such as Redis's cannot use a second core).
    pub saturated: bool,
    /// The busiest thread of the watched processes over the step; null when threads could not be read (or in a
    /// document written before hakaru read them).
    #[serde(default)]
    pub busiest_thread: Option<BusiestThread>,
}

/// One thread's share of a core over a step.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BusiestThread {
    /// Its name (/proc/PID/task/TID/comm: `redis-server`, `nginx`, `io_thd_1`).
    pub name: String,
    /// 100 = one core fully busy, over the whole step.
    pub cpu_percent: f64,
}

/// Whether a CPU figure (100 = one core) is at least 90 % of what `cores` cores can give.
pub fn is_saturated(cpu_percent: f64, cores: usize) -> bool {
    cpu_percent >= 0.9 * cores.max(1) as f64 * 100.0
}

/// The saturation rule for a server: its processes at 90 % of their cores, or one thread at 90 % of one core
/// (whatever the cores, a single thread's work cannot spread to the others).
pub fn server_saturated(cpu_percent: f64, cores: usize, busiest_thread: Option<f64>) -> bool {
    is_saturated(cpu_percent, cores) || busiest_thread.is_some_and(|t| is_saturated(t, 1))
}

/// Samples CPU and RSS of the watched processes (all their threads, and their descendant processes) every
/// `interval` on its own thread, from /proc. Dropping it stops the thread.
pub struct ProcessMonitor {
    state: Arc<Mutex<Sampler>>,
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
    pids: Vec<u32>,
    cores: usize,
}

impl ProcessMonitor {
    /// Resolves names to pids now; a name that matches nothing or a pid that does not exist is bad input:
    /// Err(CliError) naming the flag, the value, and the fix.
    pub fn start(spec: &WatchSpec, interval: Duration) -> Result<ProcessMonitor, CliError> {
        let pids = resolve(spec)?;
        let cores =
            pids.first().and_then(|&p| procfs::affinity_cores(p)).unwrap_or_else(crate::monitor::available_cores);
        let interval = interval.max(Duration::from_millis(10));
        let mut sampler = Sampler::new(pids.clone(), interval);
        sampler.sample(false);
        sampler.reset_step();
        let state = Arc::new(Mutex::new(sampler));
        let (stop, stopped) = mpsc::channel::<()>();
        let shared = Arc::clone(&state);
        let thread = std::thread::Builder::new()
            .name("hakaru-monitor".into())
            .spawn(move || {
                // A message or a dropped sender both mean stop; only a timeout means sample.
                while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(interval) {
                    lock(&shared).sample(true);
                }
            })
            .map_err(|e| CliError::runtime(format!("cannot start the process monitor: {e}")))?;
        Ok(ProcessMonitor { state, stop: Some(stop), thread: Some(thread), pids, cores })
    }

    /// The watched pids, sorted.
    pub fn pids(&self) -> &[u32] {
        &self.pids
    }

    /// The watched processes' CPU over the last sampling interval (100 = one core); None before two samples.
    pub fn latest_cpu_percent(&self) -> Option<f64> {
        lock(&self.state).last_percent
    }

    /// Marks the start of a step (figures are per step).
    pub fn begin_step(&self) {
        let mut s = lock(&self.state);
        s.sample(false);
        s.reset_step();
    }

    /// The watched processes' CPU seconds since the step began, sampled now: a window's share is the difference
    /// between two readings (to the kernel's tick, 10 ms).
    pub fn step_cpu_seconds(&self) -> f64 {
        let mut s = lock(&self.state);
        s.sample(true);
        s.step_ticks as f64 / s.ticks_per_second
    }

    /// Ends the step and returns its figures.
    pub fn end_step(&self) -> ProcessReport {
        let mut s = lock(&self.state);
        s.sample(true);
        let wall = s.prev_at.duration_since(s.step_start).as_secs_f64();
        let mean = if wall > 0.0 { s.step_ticks as f64 / s.ticks_per_second / wall * 100.0 } else { 0.0 };
        let max = s.step_max.unwrap_or(mean);
        // A thread cannot use more than one core: a tick counted late by the kernel is cut off there.
        let busiest_thread =
            s.step_threads.values().max_by_key(|(ticks, _)| *ticks).filter(|_| wall > 0.0).map(|(ticks, name)| {
                BusiestThread {
                    name: name.clone(),
                    cpu_percent: (*ticks as f64 / s.ticks_per_second / wall * 100.0).min(100.0),
                }
            });
        ProcessReport {
            pids: self.pids.clone(),
            cpu_percent_mean: mean,
            cpu_percent_max: max,
            rss_max_bytes: s.step_rss_max,
            cores: self.cores,
            saturated: server_saturated(mean, self.cores, busiest_thread.as_ref().map(|t| t.cpu_percent)),
            busiest_thread,
        }
    }
}

impl Drop for ProcessMonitor {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A poisoned lock only means a sample panicked; the figures are still usable.
fn lock(m: &Mutex<Sampler>) -> MutexGuard<'_, Sampler> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Checks pids and turns names into pids: sorted, without duplicates.
fn resolve(spec: &WatchSpec) -> Result<Vec<u32>, CliError> {
    if spec.is_empty() {
        return Err(CliError::new(
            "nothing to watch: use --monitor-pid PID, --monitor-name NAME or --monitor-port PORT",
        ));
    }
    if procfs::list_pids().is_err() {
        let flag = if spec.pids.is_empty() { "--monitor-name" } else { "--monitor-pid" };
        return Err(CliError::new(format!(
            "{flag}: /proc cannot be read; watching processes needs Linux with /proc mounted"
        )));
    }
    let mut pids = Vec::new();
    for &pid in &spec.pids {
        if !procfs::exists(pid) {
            return Err(CliError::new(format!(
                "--monitor-pid {pid}: no such process; give the pid of the running server \
                 (see `pgrep NAME`) or use --monitor-name NAME"
            )));
        }
        pids.push(pid);
    }
    for name in &spec.names {
        let found = procfs::pids_named(name).unwrap_or_default();
        if found.is_empty() {
            return Err(CliError::new(format!(
                "--monitor-name '{name}': no running process has that name; check it with \
                 `ps -e -o pid,comm,args` or use --monitor-pid PID"
            )));
        }
        pids.extend(found);
    }
    for &port in &spec.ports {
        let found = procfs::pids_listening(port);
        if found.is_empty() {
            return Err(CliError::new(format!(
                "--monitor-port {port}: no process this user can see listens on port {port}; check it with \
                 `ss -ltnp` or use --monitor-pid PID"
            )));
        }
        pids.extend(found);
    }
    pids.sort_unstable();
    pids.dedup();
    Ok(pids)
}

/// The sampling state, shared by the sampling thread and the step calls.
struct Sampler {
    roots: Vec<u32>,
    interval: Duration,
    ticks_per_second: f64,
    /// Each process counted at the previous sample: pid -> (start time, CPU ticks).
    prev: HashMap<u32, (u64, u64)>,
    prev_at: Instant,
    prev_boot_ticks: u64,
    step_start: Instant,
    step_ticks: u64,
    step_max: Option<f64>,
    step_rss_max: u64,
    /// Each thread of the family at the previous sample: thread id -> (start time, CPU ticks).
    prev_threads: HashMap<u32, (u64, u64)>,
    /// The CPU ticks of each thread during the step, and its name.
    step_threads: HashMap<u32, (u64, String)>,
    /// The CPU of the last sampling interval, percent of one core (for the live dashboard).
    last_percent: Option<f64>,
}

impl Sampler {
    fn new(roots: Vec<u32>, interval: Duration) -> Sampler {
        let now = Instant::now();
        Sampler {
            roots,
            interval,
            ticks_per_second: procfs::clock_ticks_per_second() as f64,
            prev: HashMap::new(),
            prev_at: now,
            prev_boot_ticks: procfs::boot_ticks(),
            step_start: now,
            step_ticks: 0,
            step_max: None,
            step_rss_max: 0,
            prev_threads: HashMap::new(),
            step_threads: HashMap::new(),
            last_percent: None,
        }
    }

    /// Starts the step's figures at the last sample.
    fn reset_step(&mut self) {
        self.step_start = self.prev_at;
        self.step_ticks = 0;
        self.step_max = None;
        self.step_rss_max = self.last_rss();
        self.step_threads.clear();
    }

    fn last_rss(&self) -> u64 {
        self.prev.keys().filter_map(|&p| procfs::read_rss(p)).sum()
    }

    /// Takes one sample. `counts_for_max`: the time since the previous sample may give the step's highest
    /// interval figure (if it is at least half an interval: a sliver of a few ms would be all noise).
    fn sample(&mut self, counts_for_max: bool) {
        let boot = procfs::boot_ticks();
        let now = Instant::now();
        let stats = procfs::all_stats();
        let family = procfs::family(&self.roots, &stats);
        let (delta, next) = cpu_delta(&self.prev, self.prev_boot_ticks, &family);
        // The same accounting per thread, for the busiest one: a thread's ticks are its own.
        let threads: Vec<Stat> = family.iter().flat_map(|s| procfs::thread_stats(s.pid)).collect();
        let thread_refs: Vec<&Stat> = threads.iter().collect();
        let (_, next_threads) = cpu_delta(&self.prev_threads, self.prev_boot_ticks, &thread_refs);
        for t in &threads {
            let entry = self.step_threads.entry(t.pid).or_insert_with(|| (0, t.comm.clone()));
            entry.0 += grown(&self.prev_threads, self.prev_boot_ticks, t);
        }
        self.prev_threads = next_threads;
        let rss: u64 = family.iter().filter_map(|s| procfs::read_rss(s.pid)).sum();
        let dt = now.duration_since(self.prev_at);
        if counts_for_max && dt >= self.interval / 2 {
            let pct = delta as f64 / self.ticks_per_second / dt.as_secs_f64() * 100.0;
            self.step_max = Some(self.step_max.map_or(pct, |m| m.max(pct)));
            self.last_percent = Some(pct);
        }
        self.step_ticks += delta;
        self.step_rss_max = self.step_rss_max.max(rss);
        self.prev = next;
        self.prev_at = now;
        self.prev_boot_ticks = boot;
    }
}

/// CPU ticks spent since the previous sample by the processes in `family`, and the new per-process table.
///
/// A process seen before counts its growth; a process born since the previous sample (per its start time)
/// counts all its ticks; one that already existed but was not counted (the very first sample) counts nothing.
/// A process that exited is simply absent: its last ticks are lost, never subtracted.
fn cpu_delta(
    prev: &HashMap<u32, (u64, u64)>,
    prev_boot_ticks: u64,
    family: &[&Stat],
) -> (u64, HashMap<u32, (u64, u64)>) {
    let mut delta = 0;
    let mut next = HashMap::with_capacity(family.len());
    for s in family {
        delta += grown(prev, prev_boot_ticks, s);
        next.insert(s.pid, (s.starttime, s.ticks));
    }
    (delta, next)
}

/// The ticks one process (or thread) spent since the previous sample, by [`cpu_delta`]'s rules.
fn grown(prev: &HashMap<u32, (u64, u64)>, prev_boot_ticks: u64, s: &Stat) -> u64 {
    match prev.get(&s.pid) {
        Some(&(start, ticks)) if start == s.starttime => s.ticks.saturating_sub(ticks),
        _ if !prev.is_empty() && s.starttime >= prev_boot_ticks => s.ticks,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(pid: u32, ticks: u64, starttime: u64) -> Stat {
        Stat { pid, comm: "x".into(), ppid: 1, ticks, starttime }
    }

    #[test]
    fn cpu_delta_counts_growth_newborns_and_forgets_the_dead() {
        let first = [st(10, 500, 100), st(11, 40, 200)];
        let refs: Vec<&Stat> = first.iter().collect();
        let (d, prev) = cpu_delta(&HashMap::new(), 1000, &refs);
        assert_eq!(d, 0, "the first sample only sets the baseline");
        // 10 grew by 30; 11 exited; 12 was born after the previous sample; 13's pid was reused by a newborn.
        let second = [st(10, 530, 100), st(12, 7, 1005), st(13, 9, 1010)];
        let mut prev = prev;
        prev.insert(13, (50, 400));
        let refs: Vec<&Stat> = second.iter().collect();
        let (d, next) = cpu_delta(&prev, 1000, &refs);
        assert_eq!(d, 30 + 7 + 9);
        assert_eq!(next.len(), 3);
        assert_eq!(next[&12], (1005, 7));
    }

    #[test]
    fn saturation_is_ninety_percent_of_the_cores() {
        assert!(is_saturated(90.0, 1));
        assert!(!is_saturated(89.9, 1));
        assert!(!is_saturated(150.0, 2));
        assert!(is_saturated(180.0, 2));
        assert!(is_saturated(95.0, 0), "zero cores counts as one");
    }

    #[test]
    fn watching_nothing_is_bad_input() {
        let e = ProcessMonitor::start(&WatchSpec::default(), Duration::from_millis(50)).err().unwrap();
        assert!(e.to_string().contains("--monitor-pid"));
        assert_eq!(e.exit_code(), crate::error::EXIT_USAGE);
    }

    #[test]
    fn watching_this_process_reports_its_memory_and_pid() {
        let spec = WatchSpec { pids: vec![std::process::id(), std::process::id()], ..Default::default() };
        let m = ProcessMonitor::start(&spec, Duration::from_millis(20)).unwrap();
        m.begin_step();
        std::thread::sleep(Duration::from_millis(60));
        let r = m.end_step();
        assert_eq!(r.pids, vec![std::process::id()]);
        assert!(r.rss_max_bytes > 0);
        assert!(r.cores >= 1);
        assert!(r.cpu_percent_mean >= 0.0 && r.cpu_percent_max >= 0.0);
    }
}
