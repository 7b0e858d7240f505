//! wrk's Lua scripting API (`-s FILE.lua`): one LuaJIT state per load thread and one for `setup` and `done`, as
//! wrk has them. The plan loads the script (its top level runs: a syntax error is bad input); before the load,
//! [`Script::prepare`] calls `setup(thread)` and `init(args)` for every thread; the engine takes each thread's
//! state for a step and gives it back; [`Script::done`] calls `done(summary, latency, requests)` after a step.

mod budget;
mod done;
mod lua;
mod thread;
mod wire;

pub use done::Figures;
pub use lua::Target;
pub use thread::ThreadScript;
pub use wire::Shape;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mlua::{Lua, Value};

use crate::error::CliError;
use budget::Budget;
use lua::{ThreadHandle, ThreadShared, new_state, one_line};

/// How a script runs besides its target.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// `--script-sandbox`: without what reaches beyond the load (`sandbox.lua`).
    pub sandbox: bool,
    /// How long a call outside the load (the top level, `setup`, `init`, the first `request()`, `done`) may run
    /// (`--timeout`): past it, a loop that never ends is bad input, not a hang.
    pub outside: Duration,
}

/// A script, loaded for a run.
pub struct Script {
    /// The file as the user named it (in messages).
    file: Arc<str>,
    source: String,
    /// The words after `--`, for `init(args)`.
    args: Vec<String>,
    target: Target,
    options: Options,
    /// The state of `setup` and `done`, and how long its calls may run.
    setup: Lua,
    setup_budget: Arc<Budget>,
    /// Each load thread's state, between steps (None while a step runs on it); grown when a step has more threads.
    threads: Mutex<Vec<Option<ThreadScript>>>,
}

impl std::fmt::Debug for Script {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Script").field("file", &self.file).field("args", &self.args).finish_non_exhaustive()
    }
}

impl Options {
    /// The limit of a call outside the load that starts now, naming what ran.
    fn outside_limit(&self, what: &str) -> Option<(Instant, String)> {
        let past = format!(
            "{what} ran past --timeout ({}) before or after the load: a loop that never ends?",
            humantime::format_duration(self.outside)
        );
        Some((Instant::now() + self.outside, past))
    }
}

impl Script {
    /// Reads the script and runs its top level in the setup state: a syntax or runtime error there is bad input.
    pub fn load(path: &Path, args: Vec<String>, target: Target, options: Options) -> Result<Script, CliError> {
        let file: Arc<str> = path.display().to_string().into();
        let source = crate::base::bounded::read_text(path, crate::base::bounded::SMALL)
            .map_err(|why| CliError::new(format!("--script '{file}': {why}")))?;
        if source.starts_with('\u{1b}') {
            return Err(CliError::new(format!(
                "--script '{file}': bytecode is refused: hakaru loads Lua source only (give the .lua file itself)"
            )));
        }
        let setup_budget = Arc::new(Budget::default());
        setup_budget.limit(options.outside_limit("the top level"), false);
        let setup = new_state(&target, &file, &source, options.sandbox, Arc::clone(&setup_budget))
            .map_err(|e| CliError::new(format!("--script {}", one_line(&file, &e))))?;
        Ok(Script { file, source, args, target, options, setup, setup_budget, threads: Mutex::new(Vec::new()) })
    }

    pub fn file(&self) -> &str {
        &self.file
    }

    /// Makes the states of `threads` load threads before the load, as wrk does: `setup(thread)` in the setup
    /// state, then `init(args)` in the thread's, then (thread 0) `request()` once to check what it returns. An
    /// error, or `delay()` under an open loop, is bad input.
    pub fn prepare(&self, threads: usize, open_loop: bool) -> Result<(), CliError> {
        for i in 0..threads {
            let t = self.thread(i).map_err(|e| CliError::new(format!("--script {e}")))?;
            if open_loop && t.has_delay() {
                return Err(CliError::new(format!(
                    "--script {}: delay() cannot pace an open loop (--rate sets when requests leave); drop --rate or \
                     the script's delay()",
                    self.file
                )));
            }
            self.give_back(i, t);
        }
        Ok(())
    }

    /// Thread `i`'s state: the one kept since the last step, or a new one (setup and init run now).
    pub fn thread(&self, i: usize) -> Result<ThreadScript, String> {
        if let Some(t) = self.threads.lock().expect("never poisoned").get_mut(i).and_then(Option::take) {
            return Ok(t);
        }
        // Everything below runs before the load, each state's calls within --timeout.
        let budget = Arc::new(Budget::default());
        budget.limit(self.options.outside_limit("the top level, init() or the first request()"), false);
        self.setup_budget.limit(self.options.outside_limit("setup()"), false);
        let lua = new_state(&self.target, &self.file, &self.source, self.options.sandbox, Arc::clone(&budget))
            .map_err(|e| one_line(&self.file, &e))?;
        let shared = Arc::new(ThreadShared { addr: Mutex::new(self.target.addr), stop: Default::default(), budget });
        let in_setup = |e: mlua::Error| format!("{} (in setup())", one_line(&self.file, &e));
        let handle = self.setup.create_userdata(ThreadHandle::of(&lua, Arc::clone(&shared))).map_err(in_setup)?;
        // done() reads threads through the handles setup() kept; wrk keeps them alive for it as well.
        let kept: mlua::Table = match self.setup.named_registry_value::<Value>("hakaru_threads") {
            Ok(Value::Table(t)) => t,
            _ => {
                let t = self.setup.create_table().map_err(in_setup)?;
                self.setup.set_named_registry_value("hakaru_threads", &t).map_err(in_setup)?;
                t
            }
        };
        kept.raw_set(i + 1, &handle).map_err(in_setup)?;
        if let Ok(Value::Function(setup)) = self.setup.globals().get::<Value>("setup") {
            setup.call::<()>(&handle).map_err(in_setup)?;
        }
        let in_init = |e: mlua::Error| format!("{} (in init())", one_line(&self.file, &e));
        let wrk: mlua::Table = lua.globals().get("wrk").map_err(in_init)?;
        wrk.set("thread", ThreadHandle::own(&lua, Arc::clone(&shared))).map_err(in_init)?;
        let init: mlua::Function = wrk.get("init").map_err(in_init)?;
        init.call::<()>(self.args.clone()).map_err(in_init)?;
        let http2 = self.target.http2.clone().map(|authority| (self.target.scheme == "https", authority));
        let messages = self.target.messages.clone();
        let mut t = ThreadScript::new(lua, Arc::clone(&self.file), shared, http2, messages)?;
        t.one_a_call = self.target.http3;
        if i == 0 {
            // wrk calls thread 0's request() once before the load, to learn what it returns.
            t.next_request(&mut Vec::new())?;
            t.busy = Default::default();
        }
        Ok(t)
    }

    /// Keeps thread `i`'s state for the next step (and for `done`).
    pub fn give_back(&self, i: usize, t: ThreadScript) {
        let mut kept = self.threads.lock().expect("never poisoned");
        if kept.len() <= i {
            kept.resize_with(i + 1, || None);
        }
        kept[i] = Some(t);
    }

    /// Calls `done(summary, latency, requests)` when the script defines it.
    pub fn done(&self, figures: &Figures) -> Result<(), String> {
        let Ok(Value::Function(done)) = self.setup.globals().get::<Value>("done") else { return Ok(()) };
        self.setup_budget.limit(self.options.outside_limit("done()"), false);
        let args = figures.to_lua(&self.setup).map_err(|e| one_line(&self.file, &e))?;
        done.call::<()>(args).map_err(|e| format!("{} (in done())", one_line(&self.file, &e)))
    }
}
