//! hakaru run as a child with its peak resident memory read back (its own `ru_maxrss`, from `wait4`): what the
//! tests of bounded inputs assert, without a timing.

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
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hakaru"));
    if let Some(bytes) = address_space {
        let lim = libc::rlimit { rlim_cur: bytes, rlim_max: bytes };
        // Between fork and exec: only the async-signal-safe setrlimit.
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
    let (code, max_rss) = reap(child.id() as libc::pid_t, limit);
    Peak {
        code,
        stdout: std::fs::read_to_string(out).unwrap_or_default(),
        stderr: std::fs::read_to_string(err).unwrap_or_default(),
        max_rss,
    }
}

/// Waits for child `pid` (spawned by std, never waited on by its `Child`), killed after `limit`: its exit code (-1
/// when a signal ended it) and its own peak resident memory in bytes (wait4's rusage, which the kernel keeps for
/// its whole life: polling VmHWM could miss a peak reached just before it exits).
pub fn reap(pid: libc::pid_t, limit: Duration) -> (i32, u64) {
    let start = Instant::now();
    let (mut status, mut usage) = (0, unsafe { std::mem::zeroed::<libc::rusage>() });
    loop {
        // Reaped here, not by std's Child: wait4 alone gives this child's own rusage.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if r == pid {
            break;
        }
        assert!(r == 0, "wait4: {}", std::io::Error::last_os_error());
        if start.elapsed() > limit {
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let code = if libc::WIFEXITED(status) { libc::WEXITSTATUS(status) } else { -1 };
    // On Linux ru_maxrss is in KiB.
    (code, usage.ru_maxrss as u64 * 1024)
}
