//! The engine's hook for requests built as the load runs: a load thread's Lua state (`-s`) or its template
//! filler (`--data`, `{{...}}`). Without either, every method is one check of a flag, and the client loop sends
//! the plan's prepared requests.

use std::cell::{Cell, RefCell};
use std::time::{Duration, Instant};

use crate::base::target::Endpoint;
use crate::plan::RunPlan;
use crate::protocol::http::Kept;
use crate::protocol::{Answer, AnyDecoder};
use crate::script::{self, Shape};
use crate::template::ThreadTemplate;

/// A load thread's script or template, if the plan has one.
#[derive(Default)]
pub(super) struct ThreadScript {
    inner: RefCell<Option<script::ThreadScript>>,
    template: RefCell<Option<ThreadTemplate>>,
    /// The thread's server when `setup` gave it another address than the URL's (`thread.addr`).
    endpoint: Option<Endpoint>,
    /// Whether any script runs on this thread (read on every request without borrowing).
    active: Cell<bool>,
    /// Time a key-value workload's clients spent filling `{{...}}` holes (their sources are the clients' own).
    filled: Cell<Duration>,
}

impl ThreadScript {
    /// Thread `i`'s state from the plan's script; none without a script. An error is the script's, in one line.
    /// The state's calls end at the step's `deadline` or on a stop signal (a loop that never returns holds neither).
    pub(super) fn take(plan: &RunPlan, i: usize, deadline: Option<Instant>) -> Result<ThreadScript, String> {
        if let Some(t) = &plan.template {
            // Each thread draws its own random numbers, differently in each segment of a scaled-out run.
            let filler = t.thread(plan.seed.wrapping_add((plan.client_offset + i) as u64));
            return Ok(ThreadScript {
                template: RefCell::new(Some(filler)),
                active: Cell::new(true),
                ..Default::default()
            });
        }
        let Some(s) = &plan.script else { return Ok(ThreadScript::default()) };
        let t = s.thread(i)?;
        t.shared.budget.limit(deadline.map(|d| (d, "the step ended during the call".into())), true);
        let addr = *t.shared.addr.lock().unwrap_or_else(|p| p.into_inner());
        let endpoint = plan.endpoints.first().filter(|e| e.addr != addr).map(|e| Endpoint { addr, ..e.clone() });
        Ok(ThreadScript { inner: RefCell::new(Some(t)), endpoint, active: Cell::new(true), ..Default::default() })
    }

    /// The step's end moved (a fixed rate's step begins when every thread has a connection): the state's calls
    /// end there instead.
    pub(super) fn move_deadline(&self, deadline: Option<Instant>) {
        if let Some(t) = self.inner.borrow().as_ref() {
            t.shared.budget.limit(deadline.map(|d| (d, "the step ended during the call".into())), true);
        }
    }

    /// The state, moved out when the thread ends (the clients may still hold the thread's context).
    pub(super) fn take_out(&self) -> ThreadScript {
        self.active.set(false);
        ThreadScript {
            inner: RefCell::new(self.inner.take()),
            template: RefCell::new(self.template.take()),
            endpoint: self.endpoint.clone(),
            active: Cell::new(true),
            filled: Cell::new(self.filled.take()),
        }
    }

    /// Adds time a key-value client spent filling holes.
    pub(super) fn add_filled(&self, busy: Duration) {
        self.filled.set(self.filled.get() + busy);
    }

    /// Gives the state back to the plan's script for the next step and `done`; returns the time spent in it.
    pub(super) fn give_back(self, plan: &RunPlan, i: usize) -> Duration {
        let filled = self.filled.get();
        if let Some(t) = self.template.into_inner() {
            return t.busy + filled;
        }
        match (self.inner.into_inner(), &plan.script) {
            (Some(mut t), Some(s)) => {
                let busy = std::mem::take(&mut t.busy);
                s.give_back(i, t);
                busy
            }
            _ => filled,
        }
    }

    /// The last error of the script was its call cut at the step's end or by a stop signal: no fault of the script.
    pub(super) fn cut(&self) -> bool {
        self.inner.borrow().as_ref().is_some_and(|t| t.shared.budget.cut())
    }

    pub(super) fn active(&self) -> bool {
        self.active.get()
    }

    pub(super) fn endpoint(&self) -> Option<&Endpoint> {
        self.endpoint.as_ref()
    }

    /// Keeps answers' headers and body for `response()` when the script defines it.
    pub(super) fn prepare_decoder(&self, decoder: &mut AnyDecoder) {
        if let Some(t) = self.inner.borrow().as_ref() {
            decoder.keep_message(t.wants_response());
        }
    }

    /// `thread:stop()` was called: the thread's clients end.
    pub(super) fn stopped(&self) -> bool {
        self.active() && self.inner.borrow().as_ref().is_some_and(script::ThreadScript::stopped)
    }

    /// `delay()` before the next request.
    pub(super) fn delay(&self) -> Result<Option<Duration>, String> {
        if !self.active() {
            return Ok(None);
        }
        self.inner.borrow_mut().as_mut().map_or(Ok(None), script::ThreadScript::delay)
    }

    /// The next request's bytes into `wire` and what they hold into `shape`; false when a data file's unique rows
    /// have run out (the client ends).
    pub(super) fn next(&self, wire: &mut Vec<u8>, shape: &mut Shape) -> Result<bool, String> {
        if let Some(t) = self.template.borrow_mut().as_mut() {
            if shape.heads.is_empty() {
                *shape = Shape { heads: vec![t.expects_no_body()], idempotent: t.idempotent() };
            }
            return t.next(wire);
        }
        let mut inner = self.inner.borrow_mut();
        let t = inner.as_mut().ok_or("the script's state is gone")?;
        shape.clone_from(t.next_request(wire)?);
        Ok(true)
    }

    /// The upgrade headers of a WebSocket run whose `-H` values hold templates, as the message just made filled
    /// them; None without such templates.
    pub(super) fn filled_headers(&self) -> Option<Vec<(String, String)>> {
        self.template.borrow().as_ref().and_then(|t| t.filled_headers().map(<[_]>::to_vec))
    }

    /// Whether answers' headers and bodies must be kept for `response()` (HTTP/2's connections ask).
    pub(super) fn wants_message(&self) -> bool {
        self.inner.borrow().as_ref().is_some_and(script::ThreadScript::wants_response)
    }

    /// `response(status, headers, body)` with the answer just decoded and its message as kept.
    pub(super) fn response(&self, answer: &Answer, kept: Option<&Kept>) -> Result<(), String> {
        let mut inner = self.inner.borrow_mut();
        let Some(t) = inner.as_mut().filter(|t| t.wants_response()) else { return Ok(()) };
        match kept {
            Some(k) => t.response(answer.status, &k.headers, &k.body),
            None => t.response(answer.status, &[], &[]),
        }
    }
}
