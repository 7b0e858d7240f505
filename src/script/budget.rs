//! How long a script's call may run: a hook every [`EVERY`] Lua instructions ends a call that is past its time
//! (the step's end during the load, `--timeout` before and after it) or, during the load, one that a stop signal
//! came during, so a loop that never returns holds neither a step nor the run.
//!
//! LuaJIT's compiled code never calls hooks (a compiled `while true do end` would run on unseen), so the JIT
//! compiler is off in every script's state: scripts run in LuaJIT's interpreter.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use mlua::{HookTriggers, Lua, VmState};

/// Instructions between two looks at the clock: about a millisecond of a busy interpreter, a cost too small to
/// measure (one hook call per 100,000 instructions).
const EVERY: u32 = 100_000;

/// The limit of one state's calls.
#[derive(Debug, Default)]
pub struct Budget {
    limit: Mutex<Limit>,
    /// The hook ended a call: the error that follows is the step's end or a signal, not the script's fault.
    cut: AtomicBool,
}

#[derive(Debug, Default)]
struct Limit {
    /// When a call must have returned, and what the error says past it.
    until: Option<(Instant, String)>,
    /// A stop signal ends a call (during the load; before it, the second Ctrl-C ends hakaru as always).
    signals: bool,
}

impl Budget {
    /// Calls from now on end at `until` (saying `why`) and, with `signals`, when a stop signal comes.
    pub fn limit(&self, until: Option<(Instant, String)>, signals: bool) {
        *self.limit.lock().unwrap_or_else(|p| p.into_inner()) = Limit { until, signals };
        self.cut.store(false, Ordering::Relaxed);
    }

    /// Whether the hook ended a call since the last [`Budget::limit`].
    pub fn cut(&self) -> bool {
        self.cut.load(Ordering::Relaxed)
    }

    fn check(&self) -> mlua::Result<VmState> {
        let limit = self.limit.lock().unwrap_or_else(|p| p.into_inner());
        let why = match (&limit.until, limit.signals.then(crate::base::stop::received).flatten()) {
            (_, Some(signal)) => format!("stopped by {}", crate::base::stop::name(signal)),
            (Some((at, why)), None) if Instant::now() >= *at => why.clone(),
            _ => return Ok(VmState::Continue),
        };
        self.cut.store(true, Ordering::Relaxed);
        Err(mlua::Error::runtime(why))
    }
}

/// Puts `lua`'s calls under `budget`: the JIT compiler off (and `jit.on` refused), the hook set.
pub fn watch(lua: &Lua, budget: std::sync::Arc<Budget>) -> mlua::Result<()> {
    lua.load(
        "jit.off() \
         jit.on = function() error('hakaru runs scripts without the JIT compiler, so that a call can be bounded', 2) end",
    )
    .set_name("=hakaru")
    .exec()?;
    lua.set_hook(HookTriggers::new().every_nth_instruction(EVERY), move |_, _| budget.check())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn a_loop_that_never_ends_is_cut_at_its_time_and_said_so() {
        let lua = Lua::new();
        let budget = Arc::new(Budget::default());
        watch(&lua, Arc::clone(&budget)).unwrap();
        let at = Instant::now() + Duration::from_millis(200);
        budget.limit(Some((at, "past its time".into())), true);
        let f: mlua::Function =
            lua.load("return function() local n = 0 while true do n = n + 1 end end").eval().unwrap();
        let err = f.call::<()>(()).unwrap_err().to_string();
        assert!(Instant::now() >= at && Instant::now() < at + Duration::from_secs(5));
        assert!(err.contains("past its time"), "{err}");
        assert!(budget.cut());
        // A new limit forgets the cut; a script cannot turn the compiler back on.
        budget.limit(None, false);
        assert!(!budget.cut());
        let on = lua.load("jit.on()").exec().unwrap_err().to_string();
        assert!(on.contains("without the JIT compiler"), "{on}");
    }
}
