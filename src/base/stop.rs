//! How a run is asked to stop: SIGINT (Ctrl-C), SIGTERM or SIGHUP stop the load and keep what was measured; the
//! signal is remembered so that the outputs name it and the exit code is the shell's (128 + its number).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// The signals that stop a run.
const STOP_SIGNALS: [i32; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// The last stop signal received (0: none). A process-wide fact, as signals are.
static RECEIVED: AtomicUsize = AtomicUsize::new(0);

/// Installs the handlers: the first signal sets `flag` (the load stops, results are written); a second one ends
/// the process at once with the shell's code for that signal.
pub fn install(flag: &Arc<AtomicBool>) {
    for signal in STOP_SIGNALS {
        let _ = signal_hook::flag::register_conditional_shutdown(signal, 128 + signal, Arc::clone(flag));
        let _ = signal_hook::flag::register(signal, Arc::clone(flag));
        let _ = signal_hook::flag::register_usize(signal, &RECEIVED, signal as usize);
    }
}

/// A stop that came from the run itself (a script's error during the load), in one line: it names the cause
/// instead of a signal, and the run exits 2 (bad input) with what it measured written.
static BECAUSE: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

/// Stops the run for `why` (the caller also sets the interrupt flag, so every step ends).
pub fn because(why: String) {
    let mut b = BECAUSE.lock().unwrap_or_else(|p| p.into_inner());
    b.get_or_insert(why);
}

fn cause() -> Option<String> {
    BECAUSE.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

/// The signal that stopped the run, if one did.
pub fn received() -> Option<i32> {
    match RECEIVED.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s as i32),
    }
}

/// The name users know: `Ctrl-C (SIGINT)`, `SIGTERM`, `SIGHUP`.
pub fn name(signal: i32) -> &'static str {
    match signal {
        libc::SIGINT => "Ctrl-C (SIGINT)",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        _ => "a signal",
    }
}

/// Why an interrupted run stopped, for its warning: `stopped by SIGTERM`.
pub fn reason() -> String {
    if let Some(why) = cause() {
        return format!("stopped by a script error: {why}");
    }
    format!("stopped by {}", received().map_or("Ctrl-C (SIGINT)", name))
}

/// The exit code of an interrupted run: 128 + the signal's number (130 for Ctrl-C, 143 for SIGTERM).
pub fn exit_code() -> u8 {
    if cause().is_some() && received().is_none() {
        return 2;
    }
    (128 + received().unwrap_or(libc::SIGINT)) as u8
}

/// Waits `d`, or less if a stop signal comes (the pause between steps).
pub fn pause(d: std::time::Duration, interrupt: &AtomicBool) {
    let until = std::time::Instant::now() + d;
    while std::time::Instant::now() < until && !interrupt.load(Ordering::Relaxed) {
        std::thread::sleep((until - std::time::Instant::now()).min(std::time::Duration::from_millis(50)));
    }
}
