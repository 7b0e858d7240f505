//! File descriptors for a step's connections: the open-file limit raised within its hard limit, and a step that
//! cannot have the connections it asks for refused before the load.

use super::*;

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
pub(super) fn too_few_files(plan: &RunPlan) -> Result<(), UsageError> {
    let b = fd_budget(plan.connections, plan.threads);
    if b.available > 0 {
        return Ok(());
    }
    let needed = (plan.connections as u64).saturating_add(b.reserve);
    Err(UsageError::new(format!(
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
