//! Open-loop pacing: the schedule of intended send times and a precise timer that hands due slots to clients.
//!
//! tokio's timers have 1 ms resolution, which at 2000 requests/s would make most requests "late" by the timer
//! alone. The pacer waits on a [`PreciseTimer`] instead. Only the next
//! unclaimed slot is kept, never a queue of slots, so a stalled server cannot make memory grow.

use std::cell::{Cell, RefCell};
use std::io;
use std::time::{Duration, Instant};

use rand::RngExt as _;
use rand_chacha::ChaCha8Rng;
use tokio::sync::Notify;

use crate::timer::PreciseTimer;

/// Intended send times of one thread's share of an open-loop load.
pub struct Schedule {
    /// The next slot no client has claimed yet.
    next: Cell<Instant>,
    /// Mean seconds between slots on this thread.
    interval: f64,
    poisson: bool,
    /// Clients waiting for a slot.
    idle: Cell<usize>,
    /// Wakes an idle client when a slot is due.
    due: Notify,
    /// Tells the pacer that a slot was claimed.
    claimed: Notify,
    /// The schedule starts when the first client is connected and asks for a slot, so that the first requests
    /// are not late by a connection's setup.
    started: Cell<bool>,
    /// Tells the pacer that the schedule has started (its first slot may still be ahead).
    begun: Notify,
}

impl Schedule {
    pub fn new(first: Instant, interval: f64, poisson: bool) -> Self {
        Self {
            next: Cell::new(first),
            interval,
            poisson,
            idle: Cell::new(0),
            due: Notify::new(),
            claimed: Notify::new(),
            started: Cell::new(false),
            begun: Notify::new(),
        }
    }

    /// Waits for a due slot and claims it: the request's intended send time. A slot that fell due while every
    /// client was busy is claimed late, and its latency still counts from the slot.
    pub async fn claim(&self, rng: &RefCell<ChaCha8Rng>) -> Instant {
        if !self.started.replace(true) {
            self.next.set(self.next.get().max(Instant::now()));
            self.begun.notify_one();
        }
        loop {
            let slot = self.next.get();
            if slot <= Instant::now() {
                self.advance(rng);
                self.claimed.notify_one();
                return slot;
            }
            self.idle.set(self.idle.get() + 1);
            self.due.notified().await;
            self.idle.set(self.idle.get() - 1);
        }
    }

    /// Moves the next slot one gap on: fixed, or exponential (-ln(U) * mean, U in (0, 1]) for Poisson arrivals.
    fn advance(&self, rng: &RefCell<ChaCha8Rng>) {
        let gap = if self.poisson {
            let u: f64 = 1.0 - rng.borrow_mut().random::<f64>();
            -u.ln() * self.interval
        } else {
            self.interval
        };
        self.next.set(self.next.get() + Duration::from_secs_f64(gap));
    }

    /// Clients waiting for a slot right now.
    pub fn idle(&self) -> usize {
        self.idle.get()
    }

    /// Runs until cancelled: at each slot, wakes an idle client, or asks `more_clients` for one when none is
    /// idle (it returns false once the connection limit is reached; the slot then waits for a busy client).
    pub async fn pace(&self, mut more_clients: impl FnMut() -> bool) -> io::Result<()> {
        let timer = PreciseTimer::new()?;
        // Until the first client is connected and claims a slot, a due slot needs no new client.
        while !self.started.get() {
            self.begun.notified().await;
        }
        loop {
            let slot = self.next.get();
            let now = Instant::now();
            if slot > now {
                timer.sleep(slot - now).await?;
            }
            if self.idle.get() == 0 {
                more_clients();
            }
            self.due.notify_one();
            self.claimed.notified().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn poisson_gaps_average_to_the_interval() {
        let s = Schedule::new(Instant::now(), 0.001, true);
        let rng = RefCell::new(ChaCha8Rng::seed_from_u64(1));
        let first = s.next.get();
        for _ in 0..10_000 {
            s.advance(&rng);
        }
        let mean = (s.next.get() - first).as_secs_f64() / 10_000.0;
        assert!((mean - 0.001).abs() < 0.00005, "mean gap {mean}");
    }

    #[test]
    fn a_schedule_whose_first_slot_lies_ahead_still_gets_paced() {
        // The first client claims before its first slot: the pacer must start anyway and wake it at the slot.
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let local = tokio::task::LocalSet::new();
        local.block_on(&rt, async {
            let s = std::rc::Rc::new(Schedule::new(Instant::now() + Duration::from_millis(20), 0.001, false));
            let pacer = {
                let s = std::rc::Rc::clone(&s);
                tokio::task::spawn_local(async move { s.pace(|| false).await })
            };
            let rng = RefCell::new(ChaCha8Rng::seed_from_u64(1));
            let claims = async {
                for _ in 0..5 {
                    s.claim(&rng).await;
                }
            };
            tokio::time::timeout(Duration::from_secs(2), claims).await.expect("five slots within 2 s");
            pacer.abort();
        });
    }

    #[test]
    fn uniform_gaps_are_exactly_the_interval() {
        let s = Schedule::new(Instant::now(), 0.0005, false);
        let rng = RefCell::new(ChaCha8Rng::seed_from_u64(1));
        let first = s.next.get();
        s.advance(&rng);
        assert_eq!(s.next.get() - first, Duration::from_micros(500));
    }
}
