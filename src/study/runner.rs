//! Runs a study plan: targets started and stopped around their cases, each phase's `before` command, and every
//! case as a child process of this binary (`run`, `sweep` or `kv` with `--json DIR/cases/ID.json`), so a case
//! that crashes cannot take the study down and every finished case is on disk. The manifest and the merged CSV
//! are rewritten after each case; `resume` keeps the cases whose result is complete and runs the others (and names
//! those that ran apart from their kept partners: the targets' interleaving does not hold across the two runs).
//!
//! Children run in their own process groups (a Ctrl-C at the terminal reaches the study alone, which forwards
//! one SIGINT to the running case so it writes what it measured) and get SIGTERM when the study dies
//! (PR_SET_PDEATHSIG), so a killed study leaves no load running.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::error::CliError;
use crate::study::manifest::{CaseEntry, CaseStatus, Manifest};
use crate::study::summary::{self, StepRow};
use crate::study::{Case, StudyPlan, Target, with_started_pid};

/// How long a `before` or `stop` command may take.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(120);
/// How long a started target has to end after SIGTERM before it gets SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// Where and how a study runs.
pub struct RunOptions {
    /// The output directory (absolute): `study.json`, `study.csv`, `summary.txt`, `cases/`, `logs/`.
    pub dir: PathBuf,
    /// The hakaru binary the cases run.
    pub exe: PathBuf,
    /// Keep the cases whose result document is complete (and not recorded as failed) and run the others.
    pub resume: bool,
}

/// What a study left behind.
pub struct Outcome {
    pub manifest: Manifest,
    /// The rows of every ok case, by case id.
    pub rows: BTreeMap<String, Vec<StepRow>>,
    /// Cases kept from an earlier run (`--resume`).
    pub resumed: usize,
    /// Cases run now whose other targets' cases of the same repetition, workload and phase were kept from the
    /// earlier run (`--resume`): not interleaved with those, by ids.
    pub apart: Vec<String>,
    /// A stop signal ended the study early.
    pub interrupted: bool,
}

/// Hears of each case as it is recorded: its index in the plan, its manifest entry, its rows when it is ok.
pub type CaseListener<'a> = dyn FnMut(usize, &CaseEntry, Option<&[StepRow]>) + 'a;

/// Runs the plan into `opts.dir`; `on_case` hears of each case as it is recorded (its index in the plan, its
/// entry, its rows when ok): the place to print progress, and to store results elsewhere.
pub fn run_study(
    plan: &StudyPlan,
    opts: &RunOptions,
    interrupt: &AtomicBool,
    on_case: &mut CaseListener<'_>,
) -> Result<Outcome, CliError> {
    let dir = &opts.dir;
    for sub in ["cases", "logs"] {
        std::fs::create_dir_all(dir.join(sub))
            .map_err(|e| CliError::new(format!("-o {}: cannot create {sub}/ there ({e})", dir.display())))?;
    }
    let previous = if opts.resume { Manifest::read(dir).ok() } else { None };
    let mut run = Run {
        plan,
        opts,
        interrupt,
        manifest: Manifest {
            study: plan.name.clone(),
            file: plan.file.display().to_string(),
            cases: plan.cases.iter().map(|c| entry(plan, opts, c)).collect(),
        },
        rows: BTreeMap::new(),
        resumed: 0,
        last_command: None,
    };
    if opts.resume {
        for (i, c) in plan.cases.iter().enumerate() {
            let failed_before = previous
                .as_ref()
                .and_then(|m| m.cases.iter().find(|e| e.id == c.id))
                .is_some_and(|e| e.status == CaseStatus::Failed);
            if failed_before {
                continue;
            }
            if let Some(doc) = summary::complete_document(&run.case_file(c), plan.load.steps()) {
                let e = &mut run.manifest.cases[i];
                e.status = CaseStatus::Ok;
                e.error = None;
                e.file = Some(relative_case_file(c));
                run.rows.insert(c.id.clone(), summary::rows(&doc));
                run.resumed += 1;
            }
        }
    }
    run.save();
    let kept: Vec<bool> = run.manifest.cases.iter().map(|e| e.status == CaseStatus::Ok).collect();
    let mut ran_one = false;
    'study: for repetition in 1..=plan.load.repeat {
        for (ti, target) in plan.targets.iter().enumerate() {
            let todo: Vec<usize> = (0..plan.cases.len())
                .filter(|&i| {
                    let c = &plan.cases[i];
                    c.repetition == repetition && c.target == ti && run.manifest.cases[i].status != CaseStatus::Ok
                })
                .collect();
            if todo.is_empty() {
                continue;
            }
            if interrupt.load(Ordering::Relaxed) {
                break 'study;
            }
            let env = Env::of(plan, opts, target, repetition);
            let mut server = TargetProcess { started: None, start_error: None, fresh: false };
            if target.start.is_some() {
                server.start(plan, target, &env, interrupt, dir);
            }
            for &i in &todo {
                if interrupt.load(Ordering::Relaxed) {
                    break;
                }
                if ran_one {
                    crate::base::stop::pause(plan.load.pause, interrupt);
                    if interrupt.load(Ordering::Relaxed) {
                        break;
                    }
                }
                ran_one = true;
                let case = &plan.cases[i];
                let (status, error, file) = run.case(case, target, &env, &mut server);
                if interrupt.load(Ordering::Relaxed) && status == CaseStatus::Skipped {
                    break;
                }
                let e = &mut run.manifest.cases[i];
                e.status = status;
                e.error = error;
                e.file = file;
                if let Some(args) = run.last_command.take() {
                    e.command =
                        std::iter::once("hakaru".to_string()).chain(crate::base::secrets::redact_line(&args)).collect();
                }
                let rows = run.rows.get(&case.id).map(Vec::as_slice);
                on_case(i, &run.manifest.cases[i], rows);
                run.save();
            }
            server.stop(plan, target, &env, dir);
        }
    }
    let interrupted = interrupt.load(Ordering::Relaxed);
    if interrupted {
        let why = format!("not run: {}", crate::base::stop::reason());
        for e in run.manifest.cases.iter_mut().filter(|e| e.status == CaseStatus::Skipped) {
            e.error = Some(why.clone());
        }
    }
    run.save_checked()?;
    let groups = summary::groups(&run.manifest, &run.rows);
    crate::export::write_atomically(&dir.join(summary::SUMMARY), &summary::table(&groups))
        .map_err(|e| CliError::runtime(format!("{}: cannot write the summary ({e})", dir.display())))?;
    let apart = apart_from_kept(plan, &kept, &run.manifest);
    Ok(Outcome { manifest: run.manifest, rows: run.rows, resumed: run.resumed, apart, interrupted })
}

/// The cases run now (not kept, and not skipped) beside which another target's case of the same repetition,
/// workload and phase was kept: the study's interleaving of targets does not hold between the two runs.
fn apart_from_kept(plan: &StudyPlan, kept: &[bool], manifest: &Manifest) -> Vec<String> {
    let same_place = |a: &Case, b: &Case| (a.repetition, a.workload, a.phase) == (b.repetition, b.workload, b.phase);
    plan.cases
        .iter()
        .enumerate()
        .filter(|&(i, c)| {
            !kept[i]
                && manifest.cases[i].status != CaseStatus::Skipped
                && plan.cases.iter().enumerate().any(|(j, o)| kept[j] && o.target != c.target && same_place(o, c))
        })
        .map(|(_, c)| c.id.clone())
        .collect()
}

/// Room a case needs at least in the results directory: its document, its log, the manifest rewritten.
const CASE_ROOM: u64 = 1 << 20;

/// Whether the results directory can take a case's files: the free space of its disk, then a probe written and
/// synced (a quota or a read-only mount say so only on a write). The error names the disk as the cause.
fn writable(dir: &Path) -> Result<(), String> {
    use std::io::Write as _;
    let shown = dir.display();
    let full = |free: u64| {
        format!(
            "not run: the disk holding the results directory {shown} is full ({free} bytes free, a case needs \
             {CASE_ROOM}); free space there or give -o a directory on another disk, then --resume"
        )
    };
    let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()).map_err(|e| e.to_string())?;
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } == 0 {
        let free = (st.f_bavail as u64).saturating_mul(st.f_frsize as u64);
        if free < CASE_ROOM {
            return Err(full(free));
        }
    }
    let probe = dir.join(format!(".hakaru-probe-{}", std::process::id()));
    let written = std::fs::File::create(&probe).and_then(|mut f| {
        f.write_all(&[0u8; 64 << 10])?;
        f.sync_data()
    });
    let _ = std::fs::remove_file(&probe);
    match written {
        Ok(()) => Ok(()),
        Err(e) if e.raw_os_error() == Some(libc::ENOSPC) || e.raw_os_error() == Some(libc::EDQUOT) => Err(full(0)),
        Err(e) => Err(format!(
            "not run: the results directory {shown} cannot be written ({e}); make it writable or give -o another, \
             then --resume"
        )),
    }
}

/// `flag` added to a case's arguments before the script's (after `--`), where it is still a flag.
fn with_flag(args: &mut Vec<String>, flag: [String; 2]) {
    let at = args.iter().position(|a| a == "--").unwrap_or(args.len());
    args.splice(at..at, flag);
}

/// A case's manifest entry before it runs.
fn entry(plan: &StudyPlan, opts: &RunOptions, c: &Case) -> CaseEntry {
    let mut args = c.args.clone();
    with_flag(&mut args, ["--json".to_string(), opts.dir.join(relative_case_file(c)).display().to_string()]);
    let mut command = vec!["hakaru".to_string()];
    command.extend(crate::base::secrets::redact_line(&args));
    CaseEntry {
        id: c.id.clone(),
        target: plan.targets[c.target].name.clone(),
        workload: plan.workloads[c.workload].name.clone(),
        phase: plan.phases[c.phase].name.clone(),
        repetition: c.repetition,
        status: CaseStatus::Skipped,
        file: None,
        error: Some("not run yet".into()),
        command,
    }
}

fn relative_case_file(c: &Case) -> String {
    format!("cases/{}.json", c.id)
}

struct Run<'a> {
    plan: &'a StudyPlan,
    opts: &'a RunOptions,
    interrupt: &'a AtomicBool,
    manifest: Manifest,
    rows: BTreeMap<String, Vec<StepRow>>,
    resumed: usize,
    /// The arguments the last case ran with (the started target's pid filled in), for its manifest entry.
    last_command: Option<Vec<String>>,
}

impl Run<'_> {
    fn case_file(&self, c: &Case) -> PathBuf {
        self.opts.dir.join(relative_case_file(c))
    }

    /// The manifest and the merged CSV, rewritten; a failure is said and the study goes on (the case files are
    /// on disk already).
    fn save(&self) {
        if let Err(e) = self.write() {
            eprintln!("hakaru: warning: {e}");
        }
    }

    fn save_checked(&self) -> Result<(), CliError> {
        self.write().map_err(CliError::runtime)
    }

    fn write(&self) -> Result<(), String> {
        let dir = &self.opts.dir;
        self.manifest.write(dir).map_err(|e| format!("{}: cannot write the manifest ({e})", dir.display()))?;
        crate::export::write_atomically(&dir.join(summary::CSV), &summary::merged_csv(&self.manifest, &self.rows))
            .map_err(|e| format!("{}: cannot write the merged CSV ({e})", dir.display()))
    }

    /// Runs one case (restart, `before`, warm-up, the load); its status, error and file. `Skipped` when a stop
    /// signal came before its load began.
    fn case(
        &mut self,
        case: &Case,
        target: &Target,
        env: &Env,
        server: &mut TargetProcess,
    ) -> (CaseStatus, Option<String>, Option<String>) {
        let plan = self.plan;
        let dir = &self.opts.dir;
        let phase = &plan.phases[case.phase];
        let env = env.with_case(&phase.name, &plan.workloads[case.workload].name);
        let log_path = dir.join("logs").join(format!("{}.log", case.id));
        let failed = |why: String| (CaseStatus::Failed, Some(why), None);
        if phase.restart && !(server.fresh && server.start_error.is_none()) {
            server.stop(plan, target, &env, dir);
            server.start(plan, target, &env, self.interrupt, dir);
        }
        server.fresh = false;
        if self.interrupt.load(Ordering::Relaxed) {
            return (CaseStatus::Skipped, None, None);
        }
        // A case whose result cannot be kept is not run: its whole load would be measured for nothing and said as
        // "exit code 1: no output" (its log cannot be written either).
        if let Err(e) = writable(dir) {
            return failed(e);
        }
        if let Some(e) = &server.start_error {
            return failed(format!("target '{}' did not start: {e}", target.name));
        }
        if let Some(cmd) = &phase.before
            && let Err(e) = shell(cmd, &plan.base_dir, &env, &log_path, COMMAND_TIMEOUT, self.interrupt)
        {
            if self.interrupt.load(Ordering::Relaxed) {
                return (CaseStatus::Skipped, None, None);
            }
            return failed(format!("phase '{}': its before command failed: {e}", phase.name));
        }
        let pid = server.started.as_ref().map(|c| c.id().to_string()).unwrap_or_default();
        let fill = |args: &[String]| with_started_pid(args, &pid);
        if let Some(w) = &case.warmup_args {
            let log = open_log(&log_path, true);
            match self.child(&fill(w), log, self.guard()) {
                Ok((status, _)) if status.success() => {}
                Ok((status, _)) if self.interrupt.load(Ordering::Relaxed) && !status.success() => {
                    return (CaseStatus::Skipped, None, None);
                }
                Ok((status, _)) => {
                    return failed(format!("its warm-up failed ({}): {}", describe(status), last_error(&log_path)));
                }
                Err(e) => return failed(e),
            }
        }
        let file = self.case_file(case);
        // A file left by an interrupted earlier run must not pass for this run's result.
        let _ = std::fs::remove_file(&file);
        let mut args = fill(&case.args);
        with_flag(&mut args, ["--json".to_string(), file.display().to_string()]);
        self.last_command = Some(args.clone());
        let log = open_log(&log_path, case.warmup_args.is_some() || phase.before.is_some());
        let (status, forwarded) = match self.child(&args, log, self.guard()) {
            Ok(x) => x,
            Err(e) => return failed(e),
        };
        let doc = summary::complete_document(&file, plan.load.steps());
        let kept = file.exists().then(|| relative_case_file(case));
        match (status.success(), doc) {
            (true, Some(doc)) => {
                self.rows.insert(case.id.clone(), summary::rows(&doc));
                (CaseStatus::Ok, None, kept)
            }
            _ if forwarded.is_some() => {
                let why = forwarded.unwrap_or_default();
                let what = if kept.is_some() { "; its file holds what was measured until then" } else { "" };
                (CaseStatus::Failed, Some(format!("{why}{what}")), kept)
            }
            (true, None) => (CaseStatus::Failed, Some("it ended without a complete result document".into()), kept),
            (false, _) => (CaseStatus::Failed, Some(format!("{}: {}", describe(status), last_error(&log_path))), kept),
        }
    }

    /// How long a case may take before it is stopped: twice its planned time and a minute (none when it stops
    /// after a number of requests: their timeouts bound it).
    fn guard(&self) -> Option<Duration> {
        self.plan.load.case_time().map(|t| t * 2 + Duration::from_secs(60))
    }

    /// Runs this binary with `args`, its output into `log`; on a stop signal (or past `guard`) it gets one
    /// SIGINT, so that it writes what it measured, and SIGKILL 30 s later. Returns its exit status and, when it
    /// was stopped, why.
    fn child(
        &self,
        args: &[String],
        log: Option<File>,
        guard: Option<Duration>,
    ) -> Result<(ExitStatus, Option<String>), String> {
        let mut cmd = Command::new(&self.opts.exe);
        // A secret (a header, a URL's password) reaches the case through its environment, never its command line.
        let (shown, hidden) = crate::cli::render::split_secrets(args, crate::base::secrets::holds_secret);
        cmd.args(shown).current_dir(&self.plan.base_dir).stdin(Stdio::null());
        if !hidden.is_empty() {
            cmd.env(crate::base::secrets::SECRET_ARGS_VAR, serde_json::to_string(&hidden).expect("strings"));
        }
        output_to(&mut cmd, log);
        own_group(&mut cmd);
        let mut child = cmd.spawn().map_err(|e| format!("cannot start {}: {e}", self.opts.exe.display()))?;
        let began = Instant::now();
        let mut stopped: Option<(Instant, String)> = None;
        loop {
            match child.try_wait() {
                Ok(Some(status)) => return Ok((status, stopped.map(|s| s.1))),
                Ok(None) => {}
                Err(e) => return Err(format!("lost the case's process: {e}")),
            }
            if stopped.is_none() {
                let why = if self.interrupt.load(Ordering::Relaxed) {
                    Some(format!("interrupted ({})", crate::base::stop::reason()))
                } else {
                    guard
                        .filter(|g| began.elapsed() > *g)
                        .map(|g| format!("stopped after {} s, twice its planned time and a minute", g.as_secs()))
                };
                if let Some(why) = why {
                    signal(child.id() as i32, libc::SIGINT);
                    stopped = Some((Instant::now(), why));
                }
            } else if stopped.as_ref().is_some_and(|(at, _)| at.elapsed() > Duration::from_secs(30)) {
                signal(child.id() as i32, libc::SIGKILL);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A target's started process (its `sh -c START`, leader of its own process group).
struct TargetProcess {
    started: Option<Child>,
    /// Why the last start failed; the target's cases fail with it until a start succeeds.
    start_error: Option<String>,
    /// Started and no case has run against it since: a restart would change nothing.
    fresh: bool,
}

impl TargetProcess {
    fn start(&mut self, plan: &StudyPlan, target: &Target, env: &Env, interrupt: &AtomicBool, dir: &Path) {
        let Some(start) = &target.start else { return };
        let log_path = dir.join("logs").join(format!("{}.log", target.name));
        let log = open_log(&log_path, true);
        let before = log.as_ref().and_then(|f| f.metadata().ok()).map_or(0, |m| m.len());
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(start).current_dir(&plan.base_dir).stdin(Stdio::null());
        env.apply(&mut cmd);
        output_to(&mut cmd, log);
        own_group(&mut cmd);
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                self.start_error = Some(format!("cannot run sh: {e}"));
                return;
            }
        };
        let tail = || tail_since(&log_path, before);
        let outcome = match &target.ready {
            Some(addr) => wait_ready(addr, target.ready_timeout, &mut child, interrupt),
            None => {
                // Nothing to wait for: give a command that fails at once the time to say so.
                std::thread::sleep(Duration::from_millis(200));
                Ok(())
            }
        };
        // A server that could not bind (an old one holds the port) exits just after the port answered.
        std::thread::sleep(Duration::from_millis(50));
        let exited = child.try_wait().ok().flatten().filter(|s| !s.success());
        let error = match (outcome, exited) {
            (_, Some(status)) => Some(format!("start command exited ({}): {}", describe(status), tail())),
            (Err(e), None) => Some(format!("{e} (its output: {})", tail())),
            (Ok(()), None) => None,
        };
        if error.is_some() {
            end_group(&mut child);
        } else {
            self.started = Some(child);
            self.fresh = true;
        }
        self.start_error = error;
    }

    /// The target's stop command, then the end of what its start command started.
    fn stop(&mut self, plan: &StudyPlan, target: &Target, env: &Env, dir: &Path) {
        let log_path = dir.join("logs").join(format!("{}.log", target.name));
        if let Some(stop) = &target.stop
            && (self.started.is_some() || target.start.is_none())
        {
            // The stop command runs even after a stop signal: nothing else would stop the target.
            let never = AtomicBool::new(false);
            if let Err(e) = shell(stop, &plan.base_dir, env, &log_path, COMMAND_TIMEOUT, &never) {
                eprintln!("hakaru: warning: target '{}': its stop command failed: {e}", target.name);
            }
        }
        if let Some(mut child) = self.started.take() {
            end_group(&mut child);
        }
    }
}

/// Waits until `addr` accepts a TCP connection, the start command fails, `timeout` passes, or a stop signal.
fn wait_ready(addr: &str, timeout: Duration, child: &mut Child, interrupt: &AtomicBool) -> Result<(), String> {
    let began = Instant::now();
    loop {
        if let Ok(addrs) = addr.to_socket_addrs() {
            for a in addrs {
                // A connection to itself is not the started server (see `target::connected_to_itself`).
                if TcpStream::connect_timeout(&a, Duration::from_millis(250))
                    .is_ok_and(|s| !crate::base::target::connected_to_itself(s.local_addr(), s.peer_addr()))
                {
                    return Ok(());
                }
            }
        }
        if let Ok(Some(status)) = child.try_wait()
            && !status.success()
        {
            return Err(format!("start command exited ({})", describe(status)));
        }
        if interrupt.load(Ordering::Relaxed) {
            return Err(format!("interrupted ({})", crate::base::stop::reason()));
        }
        if began.elapsed() > timeout {
            return Err(format!(
                "{addr} did not accept connections within {} s (ready_timeout)",
                timeout.as_secs_f64()
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The environment of the study's shell commands: `$HAKARU` (this binary), the target and where it listens, the
/// repetition, the phase and workload of the case, the output directory.
#[derive(Clone)]
struct Env(Vec<(String, String)>);

impl Env {
    fn of(plan: &StudyPlan, opts: &RunOptions, t: &Target, repetition: u32) -> Env {
        let url = t.urls.first().cloned().unwrap_or_default();
        let hp = t.ready.clone().unwrap_or_else(|| {
            let rest = url.split_once("://").map_or(url.as_str(), |(_, r)| r);
            let rest = rest.rsplit_once('@').map_or(rest, |(_, r)| r);
            rest.split(['/', '?']).next().unwrap_or("").to_string()
        });
        let (host, port) = crate::base::target::split_host_port(&hp).unwrap_or_default();
        Env(vec![
            ("HAKARU".into(), opts.exe.display().to_string()),
            ("HAKARU_STUDY".into(), plan.name.clone()),
            ("HAKARU_STUDY_DIR".into(), opts.dir.display().to_string()),
            ("HAKARU_TARGET".into(), t.name.clone()),
            ("HAKARU_URL".into(), url),
            ("HAKARU_HOST".into(), host),
            ("HAKARU_PORT".into(), port.map(|p| p.to_string()).unwrap_or_default()),
            ("HAKARU_REPETITION".into(), repetition.to_string()),
        ])
    }

    fn with_case(&self, phase: &str, workload: &str) -> Env {
        let mut e = self.clone();
        e.0.push(("HAKARU_PHASE".into(), phase.into()));
        e.0.push(("HAKARU_WORKLOAD".into(), workload.into()));
        e
    }

    fn apply(&self, cmd: &mut Command) {
        for (k, v) in &self.0 {
            cmd.env(k, v);
        }
    }
}

/// Runs `sh -c command` to its end (or `timeout`, or a stop signal), its output appended to `log`; the error says
/// how it ended and its last line of output.
fn shell(
    command: &str,
    dir: &Path,
    env: &Env,
    log: &Path,
    timeout: Duration,
    interrupt: &AtomicBool,
) -> Result<(), String> {
    let file = open_log(log, true);
    let before = file.as_ref().and_then(|f| f.metadata().ok()).map_or(0, |m| m.len());
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(command).current_dir(dir).stdin(Stdio::null());
    env.apply(&mut cmd);
    output_to(&mut cmd, file);
    own_group(&mut cmd);
    let mut child = cmd.spawn().map_err(|e| format!("cannot run sh: {e}"))?;
    let began = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(s)) if s.success() => return Ok(()),
            Ok(Some(s)) => return Err(format!("'{command}' {}: {}", describe(s), tail_since(log, before))),
            Ok(None) => {}
            Err(e) => return Err(e.to_string()),
        }
        if interrupt.load(Ordering::Relaxed) || began.elapsed() > timeout {
            end_group(&mut child);
            return Err(if began.elapsed() > timeout {
                format!("'{command}' did not end within {} s", timeout.as_secs())
            } else {
                format!("interrupted ({})", crate::base::stop::reason())
            });
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The child leads its own process group (a terminal's Ctrl-C reaches the study, not it) and gets SIGTERM when
/// the study dies.
fn own_group(cmd: &mut Command) {
    cmd.process_group(0);
    // SAFETY: between fork and exec only prctl runs, which is async-signal-safe and allocates nothing.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            Ok(())
        });
    }
}

/// SIGTERM to the child's process group, SIGKILL after the grace period, and the child reaped.
fn end_group(child: &mut Child) {
    let pgid = child.id() as i32;
    signal(-pgid, libc::SIGTERM);
    let began = Instant::now();
    while began.elapsed() < STOP_GRACE {
        // The leader gone, the rest of its group (a server the shell did not exec) has the same grace period.
        // SAFETY: signal 0 only asks whether the group still has a member.
        if matches!(child.try_wait(), Ok(Some(_))) && unsafe { libc::kill(-pgid, 0) } != 0 {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    signal(-pgid, libc::SIGKILL);
    let _ = child.wait();
}

fn signal(pid: i32, sig: i32) {
    // SAFETY: kill has no memory effects; a pid that is gone gives ESRCH, which is ignored.
    unsafe { libc::kill(pid, sig) };
}

fn output_to(cmd: &mut Command, log: Option<File>) {
    match log.and_then(|f| f.try_clone().ok().map(|g| (f, g))) {
        Some((out, err)) => {
            cmd.stdout(out).stderr(err);
        }
        None => {
            cmd.stdout(Stdio::null()).stderr(Stdio::null());
        }
    }
}

fn open_log(path: &Path, append: bool) -> Option<File> {
    std::fs::OpenOptions::new().create(true).write(true).append(append).truncate(!append).open(path).ok()
}

/// The last non-empty line written to `path` after byte `from`, or a note that there was none.
fn tail_since(path: &Path, from: u64) -> String {
    let mut text = String::new();
    if let Ok(mut f) = File::open(path) {
        let _ = f.seek(SeekFrom::Start(from));
        let _ = f.take(1 << 20).read_to_string(&mut text);
    }
    text.lines().map(str::trim).rfind(|l| !l.is_empty()).map_or_else(|| "no output".to_string(), str::to_string)
}

/// The case's own one-line error (`hakaru: error: ...`) from its log, else its last line.
fn last_error(log: &Path) -> String {
    // The log's end is enough (a case that printed without end must not be read whole).
    let text =
        crate::base::bounded::read_text_io(log, crate::base::bounded::RESULT).unwrap_or_else(|_| tail_since(log, 0));
    match text.lines().rev().find_map(|l| l.strip_prefix("hakaru: error: ")) {
        Some(e) => e.to_string(),
        None => tail_since(log, 0),
    }
}

fn describe(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exit code {c}"),
        (None, Some(s)) => format!("killed by signal {s}"),
        _ => "ended".into(),
    }
}
