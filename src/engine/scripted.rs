//! The engine's hook for a script (`-s`): a load thread's Lua state as a source of requests. Without a script
//! every method is one check of an empty cell, and the client loop sends the plan's prepared requests.

use std::cell::{Cell, RefCell};
use std::time::Duration;

use crate::plan::RunPlan;
use crate::protocol::{Answer, AnyDecoder};
use crate::script::{self, Shape};
use crate::target::Endpoint;

/// A load thread's script, if the plan has one.
#[derive(Default)]
pub(super) struct ThreadScript {
    inner: RefCell<Option<script::ThreadScript>>,
    /// The thread's server when `setup` gave it another address than the URL's (`thread.addr`).
    endpoint: Option<Endpoint>,
    /// Whether any script runs on this thread (read on every request without borrowing).
    active: Cell<bool>,
}

impl ThreadScript {
    /// Thread `i`'s state from the plan's script; none without a script. An error is the script's, in one line.
    pub(super) fn take(plan: &RunPlan, i: usize) -> Result<ThreadScript, String> {
        let Some(s) = &plan.script else { return Ok(ThreadScript::default()) };
        let t = s.thread(i)?;
        let addr = *t.shared.addr.lock().unwrap_or_else(|p| p.into_inner());
        let endpoint = plan.endpoints.first().filter(|e| e.addr != addr).map(|e| Endpoint { addr, ..e.clone() });
        Ok(ThreadScript { inner: RefCell::new(Some(t)), endpoint, active: Cell::new(true) })
    }

    /// The state, moved out when the thread ends (the clients may still hold the thread's context).
    pub(super) fn take_out(&self) -> ThreadScript {
        self.active.set(false);
        ThreadScript {
            inner: RefCell::new(self.inner.take()),
            endpoint: self.endpoint.clone(),
            active: Cell::new(true),
        }
    }

    /// Gives the state back to the plan's script for the next step and `done`; returns the time spent in it.
    pub(super) fn give_back(self, plan: &RunPlan, i: usize) -> Duration {
        match (self.inner.into_inner(), &plan.script) {
            (Some(mut t), Some(s)) => {
                let busy = std::mem::take(&mut t.busy);
                s.give_back(i, t);
                busy
            }
            _ => Duration::ZERO,
        }
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

    /// The next request's bytes into `wire` and what they hold into `shape`.
    pub(super) fn next(&self, wire: &mut Vec<u8>, shape: &mut Shape) -> Result<(), String> {
        let mut inner = self.inner.borrow_mut();
        let t = inner.as_mut().ok_or("the script's state is gone")?;
        shape.clone_from(t.next_request(wire)?);
        Ok(())
    }

    /// `response(status, headers, body)` with the answer just decoded.
    pub(super) fn response(&self, answer: &Answer, decoder: &AnyDecoder) -> Result<(), String> {
        let mut inner = self.inner.borrow_mut();
        let Some(t) = inner.as_mut().filter(|t| t.wants_response()) else { return Ok(()) };
        match decoder.kept() {
            Some(k) => t.response(answer.status, &k.headers, &k.body),
            None => t.response(answer.status, &[], &[]),
        }
    }
}
