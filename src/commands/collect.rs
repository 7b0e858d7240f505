//! `hakaru collect DIR --agents N`: the orchestrators' collector. Waits until every agent has ended (its document
//! and `agent-I.done`, or `agent-I.failed`), says which failed and why, and merges the finished ones as `hakaru merge`
//! does (the others only with `--allow-partial`).

use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::cli::args::{CollectArgs, MergeArgs};
use crate::deploy::orchestrator::{MAX_AGENTS, document, done_file, failure_file};
use crate::error::CliError;

/// How often the directory is looked at: agents end within seconds of each other, and a look is a few `stat`s.
const LOOK_EVERY: Duration = Duration::from_secs(1);

/// How agent I ended.
enum Ended {
    Done,
    /// Its failure file's first line: the exit code and why.
    Failed(String),
}

pub fn collect(a: &CollectArgs, interrupt: &AtomicBool) -> Result<ExitCode, CliError> {
    let n = a.agents as usize;
    if n == 0 || a.agents > MAX_AGENTS {
        return Err(CliError::new(format!("--agents {n}: give 1 to {MAX_AGENTS} agents, as many as were started")));
    }
    let timeout = crate::base::units::parse_flag_duration(&a.timeout)
        .map_err(|e| CliError::new(format!("--timeout '{}': {e}", a.timeout)))?;
    if !a.dir.is_dir() {
        return Err(CliError::new(format!(
            "'{}': not a directory; give the results directory the agents write to",
            a.dir.display()
        )));
    }
    let ended = wait(&a.dir, n, timeout, interrupt)?;
    let failed: Vec<(usize, &str)> = ended
        .iter()
        .enumerate()
        .filter_map(|(i, e)| match e {
            Ended::Failed(why) => Some((i, why.as_str())),
            Ended::Done => None,
        })
        .collect();
    for (i, why) in &failed {
        eprintln!("hakaru collect: agent {i}/{n} failed: {}", crate::base::secrets::scrub_text(why));
    }
    if !failed.is_empty() && !a.allow_partial {
        return Err(CliError::runtime(format!(
            "{} of {n} agents failed; not merging: give --allow-partial to merge the others",
            failed.len()
        )));
    }
    if failed.len() == n {
        return Err(CliError::runtime(format!("all {n} agents failed; nothing to merge")));
    }
    // Only the finished agents' documents: a failed sweep may have left one with its first steps only.
    let files = (0..n).filter(|i| matches!(ended[*i], Ended::Done)).map(|i| document(&a.dir, i)).collect();
    eprintln!("hakaru collect: {} of {n} agents finished, merging", n - failed.len());
    super::merge::merge(&MergeArgs { files, output: a.output.clone(), allow_partial: !failed.is_empty() })
}

/// Looks at the directory until every agent has ended, `timeout` has passed (an error naming the agents still
/// running) or a stop signal came.
fn wait(dir: &Path, n: usize, timeout: Duration, interrupt: &AtomicBool) -> Result<Vec<Ended>, CliError> {
    let began = Instant::now();
    let mut ended: Vec<Option<Ended>> = (0..n).map(|_| None).collect();
    loop {
        for (i, e) in ended.iter_mut().enumerate().filter(|(_, e)| e.is_none()) {
            *e = look(dir, i);
        }
        let running: Vec<String> =
            ended.iter().enumerate().filter(|(_, e)| e.is_none()).map(|(i, _)| i.to_string()).collect();
        if running.is_empty() {
            return Ok(ended.into_iter().map(|e| e.expect("every agent has ended")).collect());
        }
        // An agent that could not learn its index (its slot variable unset or unexpanded) failed under the literal
        // name: said at once, rather than waiting out --timeout for an index that never ends.
        if let Ok(text) = crate::base::bounded::read_text(&unplaced_failure(dir), crate::base::bounded::SMALL) {
            return Err(CliError::runtime(format!(
                "an agent could not learn its index ({}: {}); agents {} of {n} have not ended",
                unplaced_failure(dir).display(),
                crate::base::secrets::scrub_text(text.lines().next().unwrap_or("")),
                running.join(", ")
            )));
        }
        let why = if interrupt.load(Ordering::Relaxed) {
            "stopped"
        } else if began.elapsed() >= timeout {
            "timed out"
        } else {
            std::thread::sleep(LOOK_EVERY);
            continue;
        };
        return Err(CliError::runtime(format!(
            "{why} waiting for agents {} of {n} (no agent-I.done or agent-I.failed in {}); an agent killed outright \
             writes neither: see its orchestrator's logs",
            running.join(", "),
            dir.display()
        )));
    }
}

/// The failure file of an agent whose `{index}` was never replaced.
fn unplaced_failure(dir: &Path) -> std::path::PathBuf {
    dir.join("agent-{index}.failed")
}

/// Whether agent `i` has ended, and how. A failure file is read bounded, its first line kept.
fn look(dir: &Path, i: usize) -> Option<Ended> {
    if let Ok(text) = crate::base::bounded::read_text(&failure_file(dir, i), crate::base::bounded::SMALL) {
        return Some(Ended::Failed(text.lines().next().unwrap_or("").to_string()));
    }
    done_file(dir, i).is_file().then_some(Ended::Done)
}
