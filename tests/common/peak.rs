//! hakaru run as a child with its peak resident memory read back (its own `ru_maxrss`, through GNU time: see
//! [`measured`]): what the tests of bounded inputs assert, without a timing.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub struct Peak {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    /// The child's peak resident memory, bytes.
    pub max_rss: u64,
}

/// Runs hakaru with `args` in `dir` (its history there too), killed after `limit`; its exit code, output and peak
/// resident memory.
pub fn hakaru_peak(dir: &Path, args: &[&str], limit: Duration) -> Peak {
    hakaru_peak_within(dir, args, limit, None)
}

/// [`hakaru_peak`] with at most `address_space` bytes of virtual memory (`ulimit -v`): a child that would take
/// gigabytes fails its allocation instead of taking them from a shared machine.
// The child is reaped by wait4, which std's Child does not know.
#[allow(clippy::zombie_processes)]
pub fn hakaru_peak_within(dir: &Path, args: &[&str], limit: Duration, address_space: Option<u64>) -> Peak {
    use std::os::unix::process::CommandExt as _;
    let (out, err) = (dir.join("peak.stdout"), dir.join("peak.stderr"));
    let peak = dir.join("peak.kib");
    let mut cmd = measured(&peak);
    if let Some(bytes) = address_space {
        let lim = libc::rlimit { rlim_cur: bytes, rlim_max: bytes };
        // Between fork and exec: only the async-signal-safe setrlimit (time and hakaru both inherit it).
        unsafe {
            cmd.pre_exec(move || {
                if libc::setrlimit(libc::RLIMIT_AS, &lim) == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) }
            });
        }
    }
    let child = cmd
        .args(args)
        .current_dir(dir)
        .env("HAKARU_DB", dir.join("history.db"))
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .expect("hakaru starts");
    let (code, max_rss) = reap(child.id() as libc::pid_t, limit, &peak);
    Peak {
        code,
        stdout: std::fs::read_to_string(out).unwrap_or_default(),
        stderr: std::fs::read_to_string(err).unwrap_or_default(),
        max_rss,
    }
}

/// hakaru under GNU time, which writes its peak resident memory (`%M`, KiB, from its own wait4 of hakaru) to
/// `peak`; in a process group of its own, so a timeout kills both. Not wait4 of hakaru by the test itself: std
/// spawns with vfork, and at exec Linux keeps the larger of the parent's high-water mark and the child's in the
/// child's `ru_maxrss`, so a test process that had grown (a panic's backtrace reads tens of MiB of debug
/// information; one test binary runs every file) made a bounded hakaru look 84 MiB. time's child starts from
/// time's own small memory.
pub fn measured(peak: &Path) -> Command {
    use std::os::unix::process::CommandExt as _;
    let mut cmd = Command::new("/usr/bin/time");
    cmd.args(["-f", "%M", "-o"]).arg(peak).arg(env!("CARGO_BIN_EXE_hakaru")).process_group(0);
    cmd
}

/// Waits for `pid` (a [`measured`] child spawned by std, never waited on by its `Child`), killed with its group
/// after `limit`: hakaru's exit code (-1 when a signal ended it) and its peak resident memory in bytes (the kernel
/// keeps it for the whole life of the process: polling VmHWM could miss a peak reached just before it exits).
pub fn reap(pid: libc::pid_t, limit: Duration, peak: &Path) -> (i32, u64) {
    let start = Instant::now();
    let mut status = 0;
    loop {
        // Reaped here, not by std's Child.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if r == pid {
            break;
        }
        assert!(r == 0, "waitpid: {}", std::io::Error::last_os_error());
        if start.elapsed() > limit {
            unsafe { libc::kill(-pid, libc::SIGKILL) };
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let said = std::fs::read_to_string(peak).unwrap_or_default();
    let kib: u64 = said.lines().last().and_then(|l| l.trim().parse().ok()).unwrap_or_else(|| {
        panic!("GNU time gave no peak ({said:?}; time is Debian's package `time`, installed by scripts/test.sh)")
    });
    let signalled = said.contains("terminated by signal") || !libc::WIFEXITED(status);
    let code = if signalled { -1 } else { libc::WEXITSTATUS(status) };
    (code, kib * 1024)
}
