//! Watching both ends during load steps: the server's processes ([`process`]), hakaru's own CPU ([`SelfCheck`]),
//! the whole machine's cores and who may run on them ([`machine`]), and server-side figures read over HTTP before
//! and after each step ([`probe`]).
//!
//! A latency curve alone cannot tell a slow server from a saturated generator; these figures can.

mod machine;
mod probe;
mod process;
mod procfs;

use std::time::Duration;

pub use machine::{
    CoreBusy, MachineLimit, MachineReport, MachineSample, cpu_list, cpus_allowed, cpus_allowed_any, sample_cores,
};
pub use probe::{Probe, ProbeReading, apply_pointer, delta, http_exchange, probe_all, readings, unique_names};
pub use process::{BusiestThread, ProcessMonitor, ProcessReport, WatchSpec, is_saturated, server_saturated};

/// The processes holding a socket that listens on `port`.
pub fn pids_listening(port: u16) -> Vec<u32> {
    procfs::pids_listening(port)
}

/// The processes holding a Unix socket that listens at `path`.
pub fn pids_on_unix_socket(path: &std::path::Path) -> Vec<u32> {
    procfs::pids_on_unix_socket(path)
}

/// What watches the server during steps.
pub struct Watchers {
    pub monitor: Option<ProcessMonitor>,
    pub probes: Vec<Probe>,
    /// `--expect-hit-rate`, as a fraction.
    pub expected_hit_rate: Option<f64>,
}

impl Watchers {
    pub fn none() -> Watchers {
        Watchers { monitor: None, probes: Vec::new(), expected_hit_rate: None }
    }
}

/// A probe that reads a cache hit rate: its name mentions "hit" (cache_hit_rate, hitRatio).
pub fn is_hit_rate_probe(name: &str) -> bool {
    name.to_ascii_lowercase().contains("hit")
}

/// hakaru's own CPU use (getrusage RUSAGE_SELF: user + system, all threads), to compare before/after a step.
pub fn own_cpu_time() -> Duration {
    // SAFETY: rusage is plain data and getrusage only writes into it.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_SELF, &mut usage) != 0 {
            return Duration::ZERO;
        }
        usage
    };
    let tv =
        |t: libc::timeval| Duration::from_secs(t.tv_sec.max(0) as u64) + Duration::from_micros(t.tv_usec.max(0) as u64);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// CPU time (user + system) of the calling thread.
pub fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes into the timespec we own.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// How many cores this process may run on (sched_getaffinity; the machine's count if that fails).
pub fn own_cores() -> usize {
    procfs::affinity_cores(0).unwrap_or_else(available_cores)
}

/// The number of cores this process may run on, as the standard library sees it.
pub fn available_cores() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

/// Steps shorter than this are too short for CPU figures to mean anything, in seconds.
const MIN_MEASURED_WALL: f64 = 0.1;

/// hakaru's CPU during a step as a percentage of one core, and whether it was above 90 % of the cores it may
/// use: then the generator, not the server, may be what the numbers measure.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SelfCheck {
    pub cpu_percent: f64,
    pub cores: usize,
    pub saturated: bool,
}

impl SelfCheck {
    /// From [`own_cpu_time`] before and after a step that lasted `wall`, on the cores this process may use.
    pub fn measure(cpu_before: Duration, cpu_after: Duration, wall: Duration) -> SelfCheck {
        SelfCheck::with_cores(cpu_before, cpu_after, wall, own_cores())
    }

    /// As [`SelfCheck::measure`], with the core count given.
    pub fn with_cores(cpu_before: Duration, cpu_after: Duration, wall: Duration, cores: usize) -> SelfCheck {
        let cpu = cpu_after.saturating_sub(cpu_before).as_secs_f64();
        let wall = wall.as_secs_f64();
        let cores = cores.max(1);
        // CPU time is counted in clock ticks: over a very short step (-d 1ns) the ratio is noise. No process uses
        // more than its cores, and a step too short to measure is not called saturated.
        let cpu_percent = if wall > 0.0 { (cpu / wall * 100.0).min(cores as f64 * 100.0) } else { 0.0 };
        let saturated = wall >= MIN_MEASURED_WALL && is_saturated(cpu_percent, cores);
        SelfCheck { cpu_percent, cores, saturated }
    }

    /// The advice to print when hakaru was saturated.
    pub fn warning(&self) -> Option<String> {
        if !self.saturated {
            return None;
        }
        let share = self.cpu_percent / self.cores as f64;
        let s = if self.cores == 1 { "" } else { "s" };
        Some(format!(
            "hakaru used {:.0} % CPU of its {} core{s} ({share:.0} %): the generator itself may be the bottleneck; \
             use more --threads, fewer connections, or run hakaru on another machine",
            self.cpu_percent, self.cores
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn self_check_warns_above_ninety_percent_of_the_cores() {
        let ms = Duration::from_millis;
        let c = SelfCheck::with_cores(ms(1000), ms(2950), ms(1000), 2);
        assert!((c.cpu_percent - 195.0).abs() < 1e-9);
        assert!(c.saturated);
        assert_eq!(
            c.warning().unwrap(),
            "hakaru used 195 % CPU of its 2 cores (98 %): the generator itself may be the bottleneck; \
             use more --threads, fewer connections, or run hakaru on another machine"
        );
        let c = SelfCheck::with_cores(ms(0), ms(1700), ms(1000), 2);
        assert!(!c.saturated);
        assert_eq!(c.warning(), None);
        let c = SelfCheck::with_cores(ms(0), ms(950), ms(1000), 1);
        assert!(c.warning().unwrap().contains("of its 1 core ("));
        let c = SelfCheck::with_cores(ms(5), ms(1), Duration::ZERO, 4);
        assert_eq!((c.cpu_percent, c.saturated), (0.0, false));
        // A 1 µs step with 4 ms of CPU (one clock tick): at most the cores, never called saturated.
        let c = SelfCheck::with_cores(ms(0), ms(4), Duration::from_micros(1), 2);
        assert_eq!((c.cpu_percent, c.saturated), (200.0, false));
    }

    #[test]
    fn own_cores_is_at_least_one() {
        assert!(own_cores() >= 1);
        let _ = own_cpu_time();
    }
}
