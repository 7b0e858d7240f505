//! Open-loop pacing: the schedule of intended send times and a precise timer that hands due slots to clients.
//!
//! tokio's timers have 1 ms resolution, which at 2000 requests/s would make most requests "late" by the timer
//! alone. The pacer waits on a [`PreciseTimer`] instead. Only the next
//! unclaimed slot is kept, never a queue of slots, so a stalled server cannot make memory grow.

use std::cell::{Cell, RefCell};
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use rand::RngExt as _;
use rand_chacha::ChaCha8Rng;
use tokio::sync::Notify;

use crate::base::load::{Arrival, Ramp};
use crate::base::timer::PreciseTimer;

/// The instant every thread's schedule starts from: when each thread has its first client connected (or failed
/// to connect), so that no thread's first slots are late by a connection's setup and the threads' slots
/// interleave as planned.
pub struct StartGate {
    threads: usize,
    arrived: AtomicUsize,
    start: OnceLock<Instant>,
    open: Notify,
}

impl StartGate {
    pub fn new(threads: usize) -> Self {
        Self { threads: threads.max(1), arrived: AtomicUsize::new(0), start: OnceLock::new(), open: Notify::new() }
    }

    /// One thread is ready; the last one to arrive opens the gate.
    fn arrive(&self) {
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.threads {
            let _ = self.start.set(Instant::now());
            self.open.notify_waiters();
        }
    }

    /// When the gate opened, if it did.
    pub fn opened_at(&self) -> Option<Instant> {
        self.start.get().copied()
    }

    /// Waits until every thread arrived; returns the common start.
    async fn opened(&self) -> Instant {
        loop {
            if let Some(t) = self.start.get() {
                return *t;
            }
            let notified = self.open.notified();
            tokio::pin!(notified);
            // Registered before the second look, so an opening between the two cannot be missed.
            notified.as_mut().enable();
            if let Some(t) = self.start.get() {
                return *t;
            }
            notified.await;
        }
    }
}

/// How a thread's slots are spaced: a fixed rate, or a ramp (`--rate-stages`).
pub enum Pace {
    /// Mean seconds between slots.
    Fixed(f64),
    /// The thread's share of the ramp; slot k falls when the ramp's integral reaches k + `phase` (threads take
    /// turns), so the rate follows the ramp exactly, with no step at each second. The ramp counts from `origin`,
    /// the step's start (not from the gate's opening, a connection's setup later): its windows and its slots keep
    /// one clock, and no slot is pushed past the step's end.
    Ramp { ramp: Ramp, phase: f64, origin: Instant },
    /// A replay's recorded offsets: slot k at the schedule's offset k from the start (the gate's opening).
    Recorded(crate::plan::replay::ReplaySchedule),
}

/// Intended send times of one thread's share of an open-loop load.
pub struct Schedule {
    /// The next slot no client has claimed yet.
    next: Cell<Instant>,
    /// Slots up to this instant are released to the clients: the pacer moves it at each of its wake-ups (to half a
    /// window past it), so a
    /// client that is awake for another reason (an answer came) does not send a slot that fell due since, alone:
    /// the due slots go out together at the pacer's next wake-up, and the server gets them as one burst.
    released: Cell<Instant>,
    /// How slots are spaced.
    pace: Pace,
    /// A ramp: the count (in the ramp's integral) of the next slot, and the instant the ramp counts from.
    count: Cell<f64>,
    origin: Cell<Instant>,
    /// How gaps are drawn, and a gamma's distribution made once.
    arrival: Arrival,
    gamma: Option<rand_distr::Gamma<f64>>,
    /// Clients waiting for a slot.
    idle: Cell<usize>,
    /// Wakes an idle client when a slot is due.
    due: Notify,
    /// Tells the pacer that a slot was claimed.
    claimed: Notify,
    /// The common start of all threads' schedules.
    gate: Arc<StartGate>,
    /// This thread's first slot, after the common start: threads take turns.
    offset: Duration,
    /// Whether this thread told the gate it is ready.
    arrived: Cell<bool>,
    /// Whether the first slot has been set from the gate's start.
    started: Cell<bool>,
    /// Tells the pacer that the schedule has started (its first slot may still be ahead).
    begun: Notify,
    /// The pacer wakes at most once per window: the slots due within half a window of a wake-up share it.
    window: Duration,
    /// Times the pacer slept and was woken by its timer (the wake-ups the window saves are counted here).
    wakeups: Cell<u64>,
    /// A timed step's end: no slot at or past it is released before it (a client that took one would end early).
    end: Cell<Option<Instant>>,
    /// Sending is over (a timed step's end, its answers in flight finishing): a client asking for a slot is given
    /// the end, and ends.
    closed: Cell<bool>,
}

impl Schedule {
    pub fn new(gate: Arc<StartGate>, offset: Duration, interval: f64, arrival: Arrival) -> Self {
        Self::paced(gate, offset, Pace::Fixed(interval), arrival)
    }

    /// A schedule of any pace; with a ramp, `offset` is the common start's delay (the ramp counts from there).
    pub fn paced(gate: Arc<StartGate>, offset: Duration, pace: Pace, arrival: Arrival) -> Self {
        let count = match &pace {
            Pace::Ramp { phase, .. } => *phase,
            Pace::Fixed(_) | Pace::Recorded(_) => 0.0,
        };
        Self {
            next: Cell::new(Instant::now()),
            released: Cell::new(Instant::now()),
            pace,
            count: Cell::new(count),
            origin: Cell::new(Instant::now()),
            arrival,
            // Shape k and scale 1/k: a mean of one gap, a variance of 1/k (the plan keeps k positive and finite).
            gamma: arrival.burstiness().and_then(|k| rand_distr::Gamma::new(k, 1.0 / k).ok()),
            idle: Cell::new(0),
            due: Notify::new(),
            claimed: Notify::new(),
            gate,
            offset,
            arrived: Cell::new(false),
            started: Cell::new(false),
            begun: Notify::new(),
            window: Duration::ZERO,
            wakeups: Cell::new(0),
            end: Cell::new(None),
            closed: Cell::new(false),
        }
    }

    /// Sets the pacer's wake-up window (`--pace-window`): zero wakes once per slot not yet due.
    pub fn with_window(mut self, window: Duration) -> Self {
        self.window = window;
        self
    }

    /// A timed step's end (`deadline`): slots at or past it are not released early, only once it has come.
    pub fn until(self, end: Option<Instant>) -> Self {
        self.end.set(end);
        self
    }

    /// The step's end moved (a fixed rate's step begins at the gate).
    pub fn move_end(&self, end: Option<Instant>) {
        self.end.set(end);
    }

    /// Sending is over: every client waiting for a slot, and every one that asks from now on, gets the step's end
    /// (past which a client ends), so only the clients awaiting answers run on.
    pub fn close(&self) {
        self.closed.set(true);
        self.due.notify_waiters();
    }

    /// Waits until every thread has its first connection; returns that instant.
    pub async fn gate_opened(&self) -> Instant {
        self.gate.opened().await
    }

    /// Times the pacer was woken by its timer so far.
    pub fn wakeups(&self) -> u64 {
        self.wakeups.get()
    }

    /// This thread is ready to send (its first client connected, or failed to): counted once per thread.
    pub fn ready(&self) {
        if !self.arrived.replace(true) {
            self.gate.arrive();
        }
    }

    /// Waits for a slot the pacer released (due, or due within half a window) and claims it: the request's intended
    /// send time (the client counts an early one from its send). A slot that fell due while every client was busy
    /// is claimed late, and its latency still counts from the slot.
    pub async fn claim(&self, rng: &RefCell<ChaCha8Rng>) -> Instant {
        if !self.started.get() {
            self.ready();
            let start = self.gate.opened().await;
            if !self.started.replace(true) {
                self.next.set(match &self.pace {
                    Pace::Fixed(_) => start + self.offset,
                    Pace::Recorded(s) => {
                        self.origin.set(start + self.offset);
                        start + self.offset + Duration::from_micros(s.offset(0))
                    }
                    Pace::Ramp { origin, .. } => {
                        self.origin.set(*origin);
                        self.ramp_slot(*origin)
                    }
                });
                self.begun.notify_one();
            }
        }
        loop {
            if self.closed.get() {
                return self.end.get().unwrap_or_else(Instant::now);
            }
            let slot = self.next.get();
            if slot <= self.released.get() {
                self.advance(rng);
                self.claimed.notify_one();
                return slot;
            }
            self.idle.set(self.idle.get() + 1);
            self.due.notified().await;
            self.idle.set(self.idle.get() - 1);
        }
    }

    /// Claims the next slot if it is already released, without waiting: a pipelined client adds the slots that fell
    /// due while it waited for its first to the same batch.
    pub fn try_claim(&self, rng: &RefCell<ChaCha8Rng>) -> Option<Instant> {
        let slot = self.next.get();
        if !self.started.get() || slot > self.released.get() {
            return None;
        }
        self.advance(rng);
        self.claimed.notify_one();
        Some(slot)
    }

    /// Moves the next slot one gap on: fixed, exponential (-ln(U) * mean, U in (0, 1]) for Poisson arrivals, or
    /// gamma-distributed with the same mean (vLLM's burstiness). A ramp's gaps are counted in its integral (1, or
    /// drawn: a process whose rate follows the ramp).
    fn advance(&self, rng: &RefCell<ChaCha8Rng>) {
        let unit = match (self.arrival, &self.gamma) {
            (Arrival::Poisson, _) => {
                let u: f64 = 1.0 - rng.borrow_mut().random::<f64>();
                -u.ln()
            }
            (Arrival::Gamma { .. }, Some(gamma)) => {
                use rand_distr::Distribution as _;
                gamma.sample(&mut *rng.borrow_mut())
            }
            _ => 1.0,
        };
        match &self.pace {
            Pace::Fixed(interval) => self.next.set(self.next.get() + Duration::from_secs_f64(unit * interval)),
            Pace::Ramp { .. } => {
                self.count.set(self.count.get() + unit);
                self.next.set(self.ramp_slot(self.origin.get()));
            }
            Pace::Recorded(s) => {
                self.count.set(self.count.get() + 1.0);
                self.next.set(self.origin.get() + Duration::from_micros(s.offset(self.count.get() as u64)));
            }
        }
    }

    /// The instant of the ramp's slot at the current count; a day past the ramp's end when it never comes (the
    /// step's deadline ends the wait first).
    fn ramp_slot(&self, origin: Instant) -> Instant {
        let Pace::Ramp { ramp, .. } = &self.pace else { return origin };
        match ramp.time_of_count(self.count.get()) {
            Some(t) => origin + Duration::from_secs_f64(t),
            None => origin + ramp.duration() + Duration::from_secs(86_400),
        }
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
        // A wake-up costs more than a request (a thread that sleeps and is woken by a timer: tens of µs of system
        // time on a VM against ~7 µs for a keep-alive request), so the pacer sleeps at least `window` between
        // wake-ups and hands every slot due within half a window to the clients at once. A slot's intended time
        // does not move: a request leaves at most half the window after it (its latency counting from that time)
        // or before it (counting from its actual send, see `client.rs`).
        let lead = self.window / 2;
        // As if woken a window ago: the first slot is woken for at its time, not held for a window.
        let mut last_wake = Instant::now().checked_sub(self.window).unwrap_or_else(Instant::now);
        loop {
            let slot = self.next.get();
            if slot > self.released.get() {
                let now = Instant::now();
                if slot > now {
                    // At its time, or at the window's end: released half a window ahead, so no slot waits
                    // more than half a window for it.
                    let wake = slot.max(last_wake + self.window);
                    timer.sleep(wake - now).await?;
                    last_wake = Instant::now();
                    self.wakeups.set(self.wakeups.get() + 1);
                }
                // Every slot due within half a window goes: those that fell due while the clients were busy too
                // (late ones), and those due before the next wake-up could come (early ones, whose latency counts
                // from their actual send).
                let now = Instant::now();
                let released = match self.end.get() {
                    // Up to just before the step's end while it has not come.
                    Some(end) if now < end => (now + lead).min(end - Duration::from_nanos(1)),
                    _ => now + lead,
                };
                self.released.set(released);
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
    use std::rc::Rc;

    /// Runs `test` on a runtime of one thread, as the engine runs each thread's clients and pacer.
    fn on_one_thread(test: impl std::future::Future<Output = ()>) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        tokio::task::LocalSet::new().block_on(&rt, test);
    }

    /// Starts the pacer of `s` beside its clients.
    fn spawn_pacer(s: &Rc<Schedule>) -> tokio::task::JoinHandle<io::Result<()>> {
        let s = Rc::clone(s);
        tokio::task::spawn_local(async move { s.pace(|| false).await })
    }

    #[test]
    fn poisson_gaps_average_to_the_interval() {
        let s = Schedule::new(Arc::new(StartGate::new(1)), Duration::ZERO, 0.001, Arrival::Poisson);
        let rng = RefCell::new(ChaCha8Rng::seed_from_u64(1));
        let first = s.next.get();
        for _ in 0..10_000 {
            s.advance(&rng);
        }
        let mean = (s.next.get() - first).as_secs_f64() / 10_000.0;
        assert!((mean - 0.001).abs() < 0.00005, "mean gap {mean}");
    }

    #[test]
    fn gamma_gaps_keep_the_mean_and_spread_as_the_burstiness_says() {
        // Shape k: a mean of one interval, a squared coefficient of variation of 1/k.
        for k in [0.25, 1.0, 4.0] {
            let s = Schedule::new(Arc::new(StartGate::new(1)), Duration::ZERO, 0.001, Arrival::Gamma { burstiness: k });
            let rng = RefCell::new(ChaCha8Rng::seed_from_u64(3));
            let mut gaps = Vec::with_capacity(20_000);
            for _ in 0..20_000 {
                let before = s.next.get();
                s.advance(&rng);
                gaps.push((s.next.get() - before).as_secs_f64());
            }
            let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
            let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
            assert!((mean - 0.001).abs() < 0.00005, "k {k}: mean gap {mean}");
            let cv2 = var / (mean * mean);
            assert!((cv2 - 1.0 / k).abs() < 0.1 / k, "k {k}: squared coefficient of variation {cv2}");
        }
    }

    #[test]
    fn a_schedule_whose_first_slot_lies_ahead_still_gets_paced() {
        // The first client claims before its first slot: the pacer must start anyway and wake it at the slot.
        on_one_thread(async {
            let gate = Arc::new(StartGate::new(1));
            let s = Rc::new(Schedule::new(gate, Duration::from_millis(20), 0.001, Arrival::Uniform));
            let pacer = spawn_pacer(&s);
            let rng = RefCell::new(ChaCha8Rng::seed_from_u64(1));
            let claims = async {
                for _ in 0..5 {
                    s.claim(&rng).await;
                }
            };
            tokio::time::timeout(Duration::from_secs(20), claims).await.expect("five slots within 20 s");
            pacer.abort();
        });
    }

    #[test]
    fn threads_start_together_and_take_turns() {
        // Two threads (here two schedules on one loop, each with its pacer): the second is ready 30 ms after the
        // first, and still their slots interleave from one common start, 5 ms apart.
        on_one_thread(async {
            let gate = Arc::new(StartGate::new(2));
            let a = Rc::new(Schedule::new(Arc::clone(&gate), Duration::ZERO, 0.010, Arrival::Uniform));
            let b = Rc::new(Schedule::new(Arc::clone(&gate), Duration::from_millis(5), 0.010, Arrival::Uniform));
            let pacers = [spawn_pacer(&a), spawn_pacer(&b)];
            let rng = RefCell::new(ChaCha8Rng::seed_from_u64(1));
            a.ready();
            tokio::time::sleep(Duration::from_millis(30)).await;
            b.ready();
            let claims = async {
                let (sa, sb) = (a.claim(&rng).await, b.claim(&rng).await);
                assert_eq!(sb - sa, Duration::from_millis(5));
                assert_eq!(a.claim(&rng).await - sa, Duration::from_millis(10));
            };
            tokio::time::timeout(Duration::from_secs(20), claims).await.expect("three slots within 20 s");
            for p in pacers {
                p.abort();
            }
        });
    }

    #[test]
    fn a_pace_window_wakes_at_most_once_per_window_and_moves_no_slot() {
        // 2,000 slots 10 µs apart (20 ms) with a 2 ms window: at most one wake-up per window (a busy machine only
        // wakes later, so fewer), no slot claimed more than half the window (1 ms) before its time and the slots
        // still exactly 10 µs apart.
        on_one_thread(async {
            let gate = Arc::new(StartGate::new(1));
            let s = Rc::new(
                Schedule::new(gate, Duration::ZERO, 0.000_010, Arrival::Uniform).with_window(Duration::from_millis(2)),
            );
            let pacer = spawn_pacer(&s);
            let rng = RefCell::new(ChaCha8Rng::seed_from_u64(1));
            let claims = async {
                let first = s.claim(&rng).await;
                let start = Instant::now();
                let mut last = first;
                for k in 1..2_000u32 {
                    let slot = s.claim(&rng).await;
                    assert!(Instant::now() + Duration::from_millis(1) >= slot, "slot {k} claimed over 1 ms early");
                    assert_eq!(slot - last, Duration::from_micros(10), "slot {k} moved");
                    last = slot;
                }
                let windows = start.elapsed().as_secs_f64() / 0.002;
                let wakeups = s.wakeups();
                assert!(wakeups as f64 <= windows.ceil() + 1.0, "{wakeups} wake-ups in {windows:.1} windows");
            };
            tokio::time::timeout(Duration::from_secs(60), claims).await.expect("2,000 slots within 60 s");
            pacer.abort();
        });
    }

    #[test]
    fn slots_further_apart_than_the_window_are_released_at_their_time_not_early() {
        // Slots 10 ms apart with a 2 ms window: the window holds none back, so the pacer wakes at each slot's time
        // and none goes early for it. A wake-up 9 ms late (a very busy machine) may release the next slot with it,
        // up to half a window early, which the window allows; so: never more than 1 ms early, and most not early
        // at all (waking a half window before each slot, as a wrong pacer would, makes every one early).
        on_one_thread(async {
            let gate = Arc::new(StartGate::new(1));
            let s = Rc::new(
                Schedule::new(gate, Duration::ZERO, 0.010, Arrival::Uniform).with_window(Duration::from_millis(2)),
            );
            let pacer = spawn_pacer(&s);
            let rng = RefCell::new(ChaCha8Rng::seed_from_u64(1));
            let claims = async {
                let mut early = 0;
                for k in 0..20 {
                    let slot = s.claim(&rng).await;
                    let now = Instant::now();
                    assert!(now + Duration::from_millis(1) >= slot, "slot {k} claimed over half a window early");
                    early += usize::from(now < slot);
                }
                assert!(early < 10, "{early} of 20 slots claimed before their time");
            };
            tokio::time::timeout(Duration::from_secs(20), claims).await.expect("20 slots within 20 s");
            pacer.abort();
        });
    }

    #[test]
    fn no_slot_at_or_past_the_steps_end_is_released_before_the_end() {
        // Slots 1 ms apart with a 20 ms window and the step ending 35 ms in: the pacer wakes about 11 and 31 ms in
        // (the second a window after the first), which would release the slots up to 41 ms; the one at or past the
        // end goes only once the end has come. (A machine that wakes the pacer late can only make the test easier.)
        on_one_thread(async {
            let gate = Arc::new(StartGate::new(1));
            let end = Instant::now() + Duration::from_millis(35);
            let s = Rc::new(
                Schedule::new(gate, Duration::ZERO, 0.001, Arrival::Uniform)
                    .with_window(Duration::from_millis(20))
                    .until(Some(end)),
            );
            let pacer = spawn_pacer(&s);
            let rng = RefCell::new(ChaCha8Rng::seed_from_u64(1));
            let claims = async {
                loop {
                    let slot = s.claim(&rng).await;
                    if slot >= end {
                        assert!(Instant::now() >= end, "a slot past the end was released before it");
                        return;
                    }
                }
            };
            tokio::time::timeout(Duration::from_secs(20), claims).await.expect("the end within 20 s");
            pacer.abort();
        });
    }

    #[test]
    fn a_slot_due_between_the_pacers_wake_ups_waits_for_the_next_one_and_keeps_its_time() {
        // A client awake for another reason (an answer came) must not send a slot that fell due since the pacer's
        // last wake-up: the pacer releases due slots together, so the server gets them as one burst.
        on_one_thread(async {
            let gate = Arc::new(StartGate::new(1));
            let s = Rc::new(
                Schedule::new(gate, Duration::ZERO, 0.000_100, Arrival::Uniform).with_window(Duration::from_millis(1)),
            );
            let pacer = spawn_pacer(&s);
            let rng = RefCell::new(ChaCha8Rng::seed_from_u64(1));
            let claims = async {
                s.claim(&rng).await;
                while s.try_claim(&rng).is_some() {}
                let next = s.next.get();
                // Past the next slot's time without an await: the pacer cannot run, so nothing is released.
                while Instant::now() < next + Duration::from_micros(50) {
                    std::hint::spin_loop();
                }
                assert!(s.try_claim(&rng).is_none(), "a slot the pacer had not released was taken");
                // A client that asks for it waits too (its first look finds nothing released), and gets it as it was.
                let mut claim = std::pin::pin!(s.claim(&rng));
                let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
                assert!(claim.as_mut().poll(&mut cx).is_pending(), "claimed before the pacer released it");
                assert_eq!(claim.await, next, "the slot keeps its time");
            };
            tokio::time::timeout(Duration::from_secs(20), claims).await.expect("the slots within 20 s");
            pacer.abort();
        });
    }

    #[test]
    fn uniform_gaps_are_exactly_the_interval() {
        let s = Schedule::new(Arc::new(StartGate::new(1)), Duration::ZERO, 0.0005, Arrival::Uniform);
        let rng = RefCell::new(ChaCha8Rng::seed_from_u64(1));
        let first = s.next.get();
        s.advance(&rng);
        assert_eq!(s.next.get() - first, Duration::from_micros(500));
    }
}
