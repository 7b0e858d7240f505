//! `hakaru demo`: what hakaru is for, in half a minute with nothing else installed. It starts the built-in target
//! as a child process with a known capacity (4 workers, 20 ms a request: 200 requests a second), sweeps the
//! client count over it while watching the target's CPU, and prints the table and the analysis, which names the
//! plateau, the knee and the bottleneck.

use std::io::{BufRead, BufReader, Write as _};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::atomic::AtomicBool;

use crate::cli::args::{DemoArgs, SweepArgs};
use crate::error::CliError;

/// The target's capacity: 4 requests served at once, 20 ms each. Not 5 ms: on a busy machine each request's
/// turnaround (a late wake-up of the client and of the worker) costs a millisecond or two, a third of a 5 ms
/// answer at 4 clients, which hid the knee (4 clients at 596/s, 16 at 728/s); against 20 ms it is a small share.
const WORKERS: usize = 4;
const DELAY_MS: usize = 20;

pub fn demo(args: &DemoArgs, interrupt: &AtomicBool) -> Result<ExitCode, CliError> {
    let mut target = Target::start()?;
    let _ = writeln!(
        std::io::stdout().lock(),
        "hakaru demo: the built-in target (pid {}) at http://{} serves {WORKERS} requests at once, {DELAY_MS} ms each: \
         at most {} requests a second. A sweep over 1 to 16 clients finds that limit.\n",
        target.child.id(),
        target.addr,
        WORKERS * 1000 / DELAY_MS
    );
    let url = format!("http://{}/?delay={DELAY_MS}ms", target.addr);
    let mut sweep: SweepArgs = crate::cli::render::defaults();
    sweep.request.urls = vec![url];
    sweep.clients = Some("1,2,4,8,16".into());
    sweep.steps.quiet = true;
    sweep.steps.duration = args.duration.clone();
    sweep.steps.interval = "0.5s".into();
    sweep.steps.json = args.json.clone();
    sweep.watch.monitor_pid = vec![target.child.id()];
    let outcome = super::sweep::sweep(&sweep, interrupt);
    target.stop();
    outcome
}

/// `hakaru serve` as a child process, stopped when the demo ends (or when hakaru dies: PR_SET_PDEATHSIG).
struct Target {
    child: Child,
    addr: String,
}

impl Target {
    fn start() -> Result<Target, CliError> {
        let exe = std::env::current_exe()
            .map_err(|e| CliError::runtime(format!("demo: cannot find the hakaru binary to start the target: {e}")))?;
        let mut cmd = Command::new(exe);
        cmd.args(["serve", "--listen", "127.0.0.1:0", "--threads", "1", "--workers", &WORKERS.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        // SAFETY: between fork and exec only prctl runs, which is async-signal-safe and allocates nothing.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
                Ok(())
            });
        }
        let mut child =
            cmd.spawn().map_err(|e| CliError::runtime(format!("demo: cannot start the built-in target: {e}")))?;
        let mut line = String::new();
        let stdout = child.stdout.take().expect("stdout is piped");
        let read = BufReader::new(stdout).read_line(&mut line);
        let addr = line.trim().strip_prefix("hakaru serve: listening on http://").map(str::to_string);
        match (read, addr) {
            (Ok(_), Some(addr)) => Ok(Target { child, addr }),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                Err(CliError::runtime(format!("demo: the built-in target did not start (it said '{}')", line.trim())))
            }
        }
    }

    fn stop(&mut self) {
        // SIGTERM lets it close its sockets; it exits at once.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let _ = self.child.wait();
    }
}
