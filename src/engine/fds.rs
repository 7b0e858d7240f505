//! File descriptors for a step's connections: the open-file limit raised within its hard limit, and a step that
//! cannot have the connections it asks for refused before the load.

use super::*;
use std::path::{Path, PathBuf};

/// File descriptors for a step's connections: the open-file limit (after [`fd_budget`] raised it) and how many
/// connections fit under it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FdBudget {
    /// Connections asked for.
    pub wanted: usize,
    /// Connections that can be open at once: the soft limit minus `reserve` (0 when the reserve takes it all).
    pub available: usize,
    /// The soft open-file limit (`ulimit -n`) before the call and after it.
    pub soft_before: u64,
    pub soft: u64,
    /// The hard limit, the most an unprivileged process may raise the soft one to (`u64::MAX`: unlimited).
    pub hard: u64,
    /// Descriptors kept back for what is not a connection: those open now, each load thread's event loop and
    /// timer, output files, probes, the monitor's /proc reads.
    pub reserve: u64,
}

impl FdBudget {
    /// Every connection asked for can be open at once.
    pub fn enough(&self) -> bool {
        self.available >= self.wanted
    }

    /// The soft limit was raised by the call.
    pub fn raised(&self) -> bool {
        self.soft > self.soft_before
    }

    /// What to tell the user before the load when not every connection fits.
    pub fn warning(&self) -> Option<String> {
        if self.enough() {
            return None;
        }
        let needed = (self.wanted as u64).saturating_add(self.reserve);
        let hard = if self.hard == u64::MAX { "unlimited".to_string() } else { self.hard.to_string() };
        Some(format!(
            "{} connections need about {needed} open files but the limit is {} (ulimit -n; hard limit {hard}): at \
             most {} can be open at once, the others fail as fd_limit; raise the limit (ulimit -n {needed}) or \
             lower -c",
            self.wanted, self.soft, self.available
        ))
    }
}

/// Descriptors each load thread uses besides its connections: epoll, the runtime's waker, the pacer's timerfd,
/// and one to spare.
pub(super) const FDS_PER_THREAD: u64 = 4;
/// Descriptors for output files, probes and /proc reads during a step.
pub(super) const FDS_SPARE: u64 = 16;

/// How many of `connections` (on `threads` load threads) can be open at once. When the soft `RLIMIT_NOFILE` is
/// too low for them, it is first raised to the hard limit (an unprivileged process may), so `-c 10000` works
/// where the hard limit allows it without the user's `ulimit -n`. Never fails: when the limit cannot be read,
/// the budget says every connection fits, and a shortage shows up as `fd_limit` errors.
pub fn fd_budget(connections: usize, threads: usize) -> FdBudget {
    let open_now = std::fs::read_dir("/proc/self/fd").map_or(16, |d| d.count() as u64);
    let reserve = open_now + FDS_PER_THREAD * threads.max(1) as u64 + FDS_SPARE;
    let needed = (connections as u64).saturating_add(reserve);
    let Some((soft_before, hard)) = nofile_limit() else {
        return FdBudget { wanted: connections, available: connections, soft_before: 0, soft: 0, hard: 0, reserve };
    };
    let mut soft = soft_before;
    if needed > soft && soft < hard {
        // Linux refuses an unlimited soft limit (above fs.nr_open); ask for what is needed then.
        let target = if hard == libc::RLIM_INFINITY { needed } else { hard };
        if set_nofile_soft(target, hard) || set_nofile_soft(needed.min(hard), hard) {
            soft = nofile_limit().map_or(soft, |(s, _)| s);
        }
    }
    // RLIM_INFINITY is u64::MAX on Linux, so an unlimited limit reads as the largest number without a case.
    let available = soft.saturating_sub(reserve).min(usize::MAX as u64) as usize;
    FdBudget { wanted: connections, available, soft_before, soft, hard, reserve }
}

/// An open-file limit that leaves no descriptor for a single connection beside the load threads' own (each
/// thread's event loop needs some before it can start) is bad input: the run could measure nothing.
pub(super) fn too_few_files(plan: &RunPlan) -> Result<(), CliError> {
    let b = fd_budget(plan.connections, plan.threads);
    if b.available > 0 {
        return Ok(());
    }
    let needed = (plan.connections as u64).saturating_add(b.reserve);
    Err(CliError::new(format!(
        "-c {}: the open-file limit is {} (ulimit -n), too low for even one connection beside hakaru's own {} \
         descriptors (its {} load threads' event loops, files); raise it (ulimit -n {needed}) or lower -t",
        plan.connections,
        b.soft,
        b.reserve,
        plan.threads.max(1)
    )))
}

/// The soft and hard RLIMIT_NOFILE.
pub(super) fn nofile_limit() -> Option<(u64, u64)> {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes into the struct it is given and nothing else.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) };
    (rc == 0).then_some((lim.rlim_cur, lim.rlim_max))
}

pub(super) fn set_nofile_soft(soft: u64, hard: u64) -> bool {
    let lim = libc::rlimit { rlim_cur: soft, rlim_max: hard };
    // SAFETY: setrlimit only reads the struct it is given.
    unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) == 0 }
}

/// The most clients a step runs at once (connections, or their stream slots or messages in flight): each is a task
/// with its state, and a step's setup makes them all before its first request.
pub const MOST_CLIENTS: usize = 1_000_000;
/// hakaru's own memory for a connection with its client (decoder, buffers, task), measured: HTTP/1.1 with 1,000
/// connections peaked at 33 MB and with 20,000 at 103 MB, 3.6 KiB each (the kernel's socket buffers are apart).
const CONNECTION_BYTES: u64 = 4 << 10;
/// A client that shares its connection (an HTTP/2 or HTTP/3 stream slot, a WebSocket message in flight).
const SLOT_BYTES: u64 = 1 << 10;

/// A step too large for this machine is bad input, before anything is allocated for it: more clients than
/// [`MOST_CLIENTS`], or an estimate of hakaru's memory for them past half of what the machine has free (`-c
/// 10000000` took 19 GB of 23 and ignored Ctrl-C while it set up).
pub fn too_many_clients(plan: &RunPlan) -> Result<(), CliError> {
    let per = clients_per_connection(plan);
    let flag = if plan.wire.websocket().is_some() { "--in-flight" } else { "--streams" };
    clients_fit(plan.connections, per, flag, free_memory()).map_err(CliError::new)
}

/// The memory hakaru may still take: the machine's free memory, or less when a cgroup (a container's limit) leaves
/// less.
fn free_memory() -> Option<u64> {
    let cgroups = crate::base::bounded::read_text_io(Path::new("/proc/self/cgroup"), 1 << 16).ok();
    let limited = cgroups.and_then(|c| cgroup_free(&c, Path::new("/sys/fs/cgroup")));
    match (mem_available(), limited) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// What the memory cgroups of `/proc/self/cgroup`'s `text` leave free under `root` (their limit less their usage,
/// the least of the cgroup's and its parents'), bytes: v2's `memory.max` and `memory.current`, v1's
/// `memory.limit_in_bytes` and `memory.usage_in_bytes`; None when no cgroup sets a limit.
fn cgroup_free(text: &str, root: &Path) -> Option<u64> {
    let number =
        |p: PathBuf| crate::base::bounded::read_text_io(&p, 1 << 10).ok().and_then(|t| t.trim().parse::<u64>().ok());
    let mut least: Option<u64> = None;
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next()) else { continue };
        let (base, limit, usage, inactive) = match controllers {
            "" => (root.to_path_buf(), "memory.max", "memory.current", "inactive_file"),
            c if c.split(',').any(|c| c == "memory") => {
                (root.join("memory"), "memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file")
            }
            _ => continue,
        };
        let mut dir = base.join(path.trim_start_matches('/'));
        loop {
            // "max" (v2) and v1's page-rounded 2^63 are no limit.
            if let (Some(l), Some(u)) = (number(dir.join(limit)), number(dir.join(usage)))
                && l < 1 << 60
            {
                // The usage counts the page cache, which the kernel gives back under pressure: its inactive part is
                // free to take (as the kubelet reckons a container's working set).
                let cache = stat(&dir.join("memory.stat"), inactive).unwrap_or(0);
                let free = l.saturating_sub(u.saturating_sub(cache));
                least = Some(least.map_or(free, |m| m.min(free)));
            }
            if dir == base || !dir.pop() {
                break;
            }
        }
    }
    // A reading of nothing free is no reading to refuse a run by (a cgroup at its limit still reclaims).
    least.filter(|free| *free > 0)
}

/// A `memory.stat` field's value.
fn stat(path: &Path, field: &str) -> Option<u64> {
    let text = crate::base::bounded::read_text_io(path, 1 << 16).ok()?;
    text.lines().find_map(|l| l.strip_prefix(field)?.strip_prefix(' ')?.trim().parse().ok())
}

/// [`too_many_clients`] for `c` connections of `per` clients each (`flag` names `per`), with `free` bytes free.
fn clients_fit(c: usize, per: usize, flag: &str, free: Option<u64>) -> Result<(), String> {
    let clients = c.saturating_mul(per);
    let asked = match per {
        1 => format!("-c {c}"),
        _ => format!("-c {c} x {flag} {per}"),
    };
    if clients > MOST_CLIENTS {
        return Err(format!(
            "{asked}: {clients} clients, more than the {MOST_CLIENTS} hakaru runs at once; lower -c (or spread the \
             load over agents: --agents, docs/scale-out.md)"
        ));
    }
    let need = (c as u64) * CONNECTION_BYTES + (clients - c) as u64 * SLOT_BYTES;
    if let Some(free) = free.filter(|free| need > free / 2) {
        let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
        let most = (free / 2 / (CONNECTION_BYTES + (per as u64 - 1) * SLOT_BYTES)).max(1);
        return Err(format!(
            "{asked}: about {:.1} GiB for the clients, more than half of the {:.1} GiB free to it (the machine's, or its cgroup's limit); \
             lower -c to about {most} or fewer",
            gib(need),
            gib(free)
        ));
    }
    Ok(())
}

/// The memory this machine has free for new work (`MemAvailable` in /proc/meminfo), bytes; None when unknown.
fn mem_available() -> Option<u64> {
    let text = crate::base::bounded::read_text_io(std::path::Path::new("/proc/meminfo"), 1 << 16).ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

#[cfg(test)]
mod size_tests {
    use super::*;

    #[test]
    fn a_step_too_large_for_the_machine_is_refused_before_it_is_made() {
        let gib = 1u64 << 30;
        assert!(clients_fit(1000, 1, "--streams", Some(gib)).is_ok());
        let e = clients_fit(10_000_000, 1, "--streams", Some(100 * gib)).unwrap_err();
        assert!(e.starts_with("-c 10000000: 10000000 clients, more than the 1000000"), "{e}");
        let e = clients_fit(20_000, 100, "--streams", None).unwrap_err();
        assert!(e.starts_with("-c 20000 x --streams 100: 2000000 clients"), "{e}");
        // 500,000 connections need about 1.9 GiB: refused with 2 GiB free, not with 8.
        let e = clients_fit(500_000, 1, "--streams", Some(2 * gib)).unwrap_err();
        assert!(e.contains("about 1.9 GiB for the clients") && e.contains("lower -c to about 262144"), "{e}");
        assert!(clients_fit(500_000, 1, "--streams", Some(8 * gib)).is_ok());
        assert!(clients_fit(1000, 1000, "--in-flight", Some(gib / 4)).unwrap_err().contains("x --in-flight 1000"));
    }

    #[test]
    fn a_cgroups_limit_less_its_usage_bounds_the_memory_free() {
        let root = tempfile::tempdir().unwrap();
        let put = |dir: &str, file: &str, text: &str| {
            let d = root.path().join(dir);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join(file), text).unwrap();
        };
        // v2: the parent's limit is the tighter one.
        put("a", "memory.max", "3000\n");
        put("a", "memory.current", "1000\n");
        put("a/b", "memory.max", "max\n");
        put("a/b", "memory.current", "500\n");
        assert_eq!(cgroup_free("0::/a/b\n", root.path()), Some(2000));
        // v1: the memory controller's files; 2^63 rounded to a page is no limit.
        put("memory/c", "memory.limit_in_bytes", "9223372036854771712\n");
        put("memory/c", "memory.usage_in_bytes", "10\n");
        assert_eq!(cgroup_free("4:memory:/c\n1:cpu:/\n", root.path()), None);
        put("memory/c", "memory.limit_in_bytes", "100\n");
        assert_eq!(cgroup_free("4:cpuacct,memory:/c\n", root.path()), Some(90));
        // The inactive page cache counts as free; a cgroup full to its limit is no reading.
        put("memory/c", "memory.usage_in_bytes", "100\n");
        assert_eq!(cgroup_free("4:memory:/c\n", root.path()), None);
        put("memory/c", "memory.stat", "cache 80\ntotal_inactive_file 60\n");
        assert_eq!(cgroup_free("4:memory:/c\n", root.path()), Some(60));
        assert_eq!(cgroup_free("garbage", root.path()), None);
    }
}
