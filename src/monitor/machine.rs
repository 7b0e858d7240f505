//! The whole machine during a step: every core's busy share (/proc/stat, all programs') and the cores the server
//! and hakaru may run on (their affinity). A limit that is neither the server's nor hakaru's alone shows here: one
//! core that both share, full, or cores kept busy by other work.

use std::collections::{BTreeMap, BTreeSet};

use super::process::is_saturated;

/// One core's counters from a `/proc/stat` `cpuN` line, in clock ticks since boot.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct CoreTicks {
    /// Everything but idle and iowait (user, nice, system, irq, softirq, steal).
    pub busy: u64,
    pub total: u64,
}

/// Every `cpuN` line of `/proc/stat` by core number (the `cpu` line of the sum is left out). Of its fields
/// (user nice system idle iowait irq softirq steal guest guest_nice), guest time is already inside user and nice,
/// so the first eight are the total; idle and iowait are a core with nothing to run.
pub(crate) fn parse_proc_stat(text: &str) -> BTreeMap<usize, CoreTicks> {
    let mut cores = BTreeMap::new();
    for line in text.lines() {
        let mut words = line.split_whitespace();
        let Some(cpu) = words.next().and_then(|w| w.strip_prefix("cpu")).and_then(|n| n.parse::<usize>().ok()) else {
            continue;
        };
        let fields: Vec<u64> = words.take(8).filter_map(|w| w.parse().ok()).collect();
        if fields.len() < 5 {
            continue;
        }
        let total: u64 = fields.iter().sum();
        cores.insert(cpu, CoreTicks { busy: total - fields[3] - fields[4], total });
    }
    cores
}

/// The counters of every core now; empty where /proc/stat cannot be read.
pub fn sample_cores() -> MachineSample {
    MachineSample(std::fs::read_to_string("/proc/stat").map(|t| parse_proc_stat(&t)).unwrap_or_default())
}

/// One reading of every core's counters.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MachineSample(pub(crate) BTreeMap<usize, CoreTicks>);

impl MachineSample {
    /// Each core's busy share between this reading and `later` (100 = busy all the time); a core that counted
    /// no tick in between (a step shorter than a tick) is left out.
    pub fn busy_until(&self, later: &MachineSample) -> Vec<CoreBusy> {
        later
            .0
            .iter()
            .filter_map(|(cpu, after)| {
                let before = self.0.get(cpu)?;
                let total = after.total.checked_sub(before.total).filter(|t| *t > 0)?;
                let busy = after.busy.saturating_sub(before.busy).min(total);
                Some(CoreBusy { cpu: *cpu, busy_percent: (busy as f64 / total as f64 * 1000.0).round() / 10.0 })
            })
            .collect()
    }
}

/// The CPUs process `pid` (0 = this process) may run on, by number; None when the kernel does not say.
pub fn cpus_allowed(pid: u32) -> Option<Vec<usize>> {
    // SAFETY: cpu_set_t is plain data; zeroed is the empty set, and the kernel writes at most its size.
    let set = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(pid as libc::pid_t, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return None;
        }
        set
    };
    // SAFETY: CPU_ISSET reads the set above, for numbers below its size.
    let cpus: Vec<usize> = (0..libc::CPU_SETSIZE as usize).filter(|&c| unsafe { libc::CPU_ISSET(c, &set) }).collect();
    (!cpus.is_empty()).then_some(cpus)
}

/// The CPUs any of `pids` may run on, sorted; empty when none could be read.
pub fn cpus_allowed_any(pids: &[u32]) -> Vec<usize> {
    let all: BTreeSet<usize> = pids.iter().filter_map(|&p| cpus_allowed(p)).flatten().collect();
    all.into_iter().collect()
}

/// One core's busy share over a step.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CoreBusy {
    pub cpu: usize,
    /// 100 = busy the whole step, with any program's work.
    pub busy_percent: f64,
}

/// The machine during one step: what the server and hakaru ran on, how busy those cores were, and hakaru's
/// whole CPU (every thread, not only the load's) to tell its share from other programs'.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MachineReport {
    /// Every core's busy share over the step, from /proc/stat.
    pub cores: Vec<CoreBusy>,
    /// The CPUs hakaru may run on (its affinity).
    pub generator_cpus: Vec<usize>,
    /// The CPUs the watched server processes may run on (the union of their affinities); empty when none was
    /// watched or none could be read.
    pub server_cpus: Vec<usize>,
    /// hakaru's CPU over the step, all its threads (100 = one core).
    pub generator_percent: f64,
}

/// What the machine, not the server or hakaru alone, limited.
#[derive(Clone, Debug, PartialEq)]
pub enum MachineLimit {
    /// The server and hakaru may run on the same cores, and those were full: each took from the other.
    SharedCores { cpus: Vec<usize>, busy_percent: f64, server_percent: f64, generator_percent: f64 },
    /// The cores the server and hakaru may run on were full, a good share of them with other programs' work.
    OtherWork { cpus: Vec<usize>, busy_percent: f64, others_percent: f64 },
}

/// Other programs' share of the cores above which the machine counts as busy with other work (of what the cores
/// can give): a quarter, more than timer interrupts, a shell and a monitoring agent take together.
const OTHER_WORK_SHARE: f64 = 0.25;

impl MachineReport {
    /// Whether the machine was the limit during the step, given the watched server's CPU (100 = one core): the
    /// cores the server and hakaru may use at 90 % or more of what they can give, and either a quarter of that
    /// other programs' work, or the two sharing cores. None when the server's cores are not known, or when
    /// those cores had room left.
    pub fn limit(&self, server_percent: f64) -> Option<MachineLimit> {
        if self.server_cpus.is_empty() || self.generator_cpus.is_empty() {
            return None;
        }
        let union: BTreeSet<usize> = self.server_cpus.iter().chain(&self.generator_cpus).copied().collect();
        let seen: Vec<&CoreBusy> = self.cores.iter().filter(|c| union.contains(&c.cpu)).collect();
        if seen.len() != union.len() {
            return None;
        }
        let busy: f64 = seen.iter().map(|c| c.busy_percent).sum();
        if !is_saturated(busy, union.len()) {
            return None;
        }
        let cpus: Vec<usize> = union.into_iter().collect();
        let mean = busy / cpus.len() as f64;
        let others = (busy - server_percent - self.generator_percent).max(0.0);
        if others >= OTHER_WORK_SHARE * cpus.len() as f64 * 100.0 {
            return Some(MachineLimit::OtherWork { cpus, busy_percent: mean, others_percent: others });
        }
        let shared = self.server_cpus.iter().any(|c| self.generator_cpus.contains(c));
        shared.then_some(MachineLimit::SharedCores {
            cpus,
            busy_percent: mean,
            server_percent,
            generator_percent: self.generator_percent,
        })
    }
}

/// CPU numbers as a list the way taskset and /proc write them: `0`, `0-3`, `0,2,5-7`.
pub fn cpu_list(cpus: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        parts.push(if i == j { cpus[i].to_string() } else { format!("{}-{}", cpus[i], cpus[j]) });
        i = j + 1;
    }
    parts.join(",")
}

impl MachineLimit {
    /// The bottleneck's name in a sweep's analysis.
    pub fn name(&self) -> &'static str {
        match self {
            MachineLimit::SharedCores { .. } => "shared_cpu",
            MachineLimit::OtherWork { .. } => "busy_machine",
        }
    }

    /// The verdict's sentence, `at` saying from which step (e.g. "from 2 clients").
    pub fn sentence(&self, at: &str) -> String {
        match self {
            MachineLimit::SharedCores { cpus, busy_percent, server_percent, generator_percent } => format!(
                "the server and hakaru share {} (CPU {}), {busy_percent:.0} % busy {at} (the server {server_percent:.0} \
                 % CPU, hakaru {generator_percent:.0} %): that is the limit, and the figures measure the two \
                 sharing it; give each cores of its own (taskset -c) or run hakaru on another machine",
                crate::base::units::count_of(cpus.len() as u64, "core"),
                cpu_list(cpus)
            ),
            MachineLimit::OtherWork { cpus, busy_percent, others_percent } => format!(
                "the machine was busy with other work: the server's and hakaru's {} (CPU {}) were {busy_percent:.0} \
                 % busy {at}, {others_percent:.0} % CPU of it other programs': that may be the limit, and the \
                 figures measure the sharing with that work; run on a quiet machine",
                crate::base::units::count_of(cpus.len() as u64, "core"),
                cpu_list(cpus)
            ),
        }
    }

    /// The step's warning: what the figures measure.
    pub fn warning(&self) -> String {
        match self {
            MachineLimit::SharedCores { cpus, busy_percent, server_percent, generator_percent } => format!(
                "the server and hakaru shared CPU {} ({busy_percent:.0} % busy; the server {server_percent:.0} % CPU, \
                 hakaru {generator_percent:.0} %): the figures measure the two sharing it, not the server alone; \
                 give each cores of its own (taskset -c) or run hakaru on another machine",
                cpu_list(cpus)
            ),
            MachineLimit::OtherWork { cpus, busy_percent, others_percent } => format!(
                "other programs used {others_percent:.0} % CPU of CPU {} ({busy_percent:.0} % busy), where the \
                 server and hakaru run: the figures measure the sharing with that work; run on a quiet machine",
                cpu_list(cpus)
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(cores: &[f64], server: &[usize], generator: &[usize], generator_percent: f64) -> MachineReport {
        MachineReport {
            cores: cores.iter().enumerate().map(|(cpu, &b)| CoreBusy { cpu, busy_percent: b }).collect(),
            generator_cpus: generator.to_vec(),
            server_cpus: server.to_vec(),
            generator_percent,
        }
    }

    #[test]
    fn proc_stat_lines_give_each_cores_busy_and_total_ticks() {
        let text = "cpu  400 0 200 1000 100 0 0 0 0 0\n\
                    cpu0 300 0 100 400 50 10 5 0 0 0\n\
                    cpu1 100 0 100 600 50 0 0 0 0 0\n\
                    intr 12345\nctxt 99\n";
        let cores = parse_proc_stat(text);
        assert_eq!(cores.len(), 2, "the summed cpu line is not a core");
        assert_eq!(cores[&0], CoreTicks { busy: 415, total: 865 });
        assert_eq!(cores[&1], CoreTicks { busy: 200, total: 850 });
        assert!(parse_proc_stat("cpu0 1 2\ncpux 1 2 3 4 5\n").is_empty());
    }

    #[test]
    fn busy_shares_come_from_the_difference_of_two_readings() {
        let at = |busy0, total0, busy1, total1| {
            MachineSample(
                [(0, CoreTicks { busy: busy0, total: total0 }), (1, CoreTicks { busy: busy1, total: total1 })].into(),
            )
        };
        let shares = at(100, 1000, 50, 1000).busy_until(&at(190, 1100, 50, 1000));
        // Core 1 counted no tick: too short to say anything of it.
        assert_eq!(shares, [CoreBusy { cpu: 0, busy_percent: 90.0 }]);
        assert!(!sample_cores().0.is_empty(), "this machine's /proc/stat has a core");
    }

    #[test]
    fn a_full_core_shared_by_the_server_and_hakaru_is_the_limit() {
        // Both pinned to CPU 0, each near half of it: neither is saturated alone, the core is full.
        let m = report(&[99.0, 3.0], &[0], &[0], 48.0);
        let limit = m.limit(49.0).expect("the shared core");
        assert_eq!(limit.name(), "shared_cpu");
        assert_eq!(
            limit,
            MachineLimit::SharedCores {
                cpus: vec![0],
                busy_percent: 99.0,
                server_percent: 49.0,
                generator_percent: 48.0
            }
        );
        let s = limit.sentence("from 2 clients");
        assert!(s.starts_with("the server and hakaru share 1 core (CPU 0), 99 % busy from 2 clients"), "{s}");
        assert!(limit.warning().contains("the figures measure the two sharing it"), "{}", limit.warning());
        // The same core with room left is not a limit; nor are cores of their own, full of the two's work.
        assert_eq!(report(&[70.0, 3.0], &[0], &[0], 35.0).limit(35.0), None);
        assert_eq!(report(&[99.0, 98.0], &[0], &[1], 96.0).limit(97.0), None);
    }

    #[test]
    fn cores_full_of_other_programs_work_are_a_busy_machine() {
        // Two cores, both unpinned, nearly full; the server and hakaru took 90 of the 196.
        let m = report(&[98.0, 98.0], &[0, 1], &[0, 1], 50.0);
        let limit = m.limit(40.0).expect("a busy machine");
        assert_eq!(limit.name(), "busy_machine");
        let MachineLimit::OtherWork { others_percent, busy_percent, ref cpus } = limit else { panic!("{limit:?}") };
        assert_eq!((others_percent, busy_percent, cpus.as_slice()), (106.0, 98.0, &[0, 1][..]));
        assert!(limit.sentence("from 4 clients").contains("CPU 0-1) were 98 % busy from 4 clients, 106 % CPU"));
        // Full, but with the two's own work (others under a quarter): sharing, not other work.
        assert_eq!(m.limit(120.0).map(|l| l.name()), Some("shared_cpu"));
        // A server whose cores are unknown (not watched) says nothing of the machine.
        assert_eq!(report(&[98.0, 98.0], &[], &[0, 1], 50.0).limit(0.0), None);
        // Cores the report did not measure: no verdict on a guess.
        assert_eq!(report(&[98.0], &[0, 1], &[0, 1], 50.0).limit(40.0), None);
    }

    #[test]
    fn cpu_lists_read_as_taskset_writes_them() {
        assert_eq!(cpu_list(&[0]), "0");
        assert_eq!(cpu_list(&[0, 1, 2, 3]), "0-3");
        assert_eq!(cpu_list(&[0, 2, 5, 6, 7]), "0,2,5-7");
        assert_eq!(cpu_list(&[]), "");
    }

    #[test]
    fn this_process_may_run_on_the_cpus_it_counts() {
        let cpus = cpus_allowed(0).expect("the kernel says");
        assert_eq!(cpus.len(), super::super::own_cores());
        assert_eq!(cpus_allowed_any(&[std::process::id()]), cpus);
    }
}
