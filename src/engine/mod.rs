//! The engine: runs one load step of a plan on N threads, each a single-threaded event loop with its clients.
//!
//! Each thread owns its metrics (no locks on the hot path) and sends a window of figures every second to the
//! coordinating thread, which merges them for live progress; at the end the threads' metrics are merged.

mod client;
pub mod conn;
mod conn_rate;
mod events;
mod exchange;
mod failure;
mod fds;
mod grid;
mod h2;
mod h3;
mod h3_failures;
mod h3_guard;
mod pacer;
mod preflight;
mod proxy;
mod scripted;
pub mod survey;
pub mod tls;
mod ws;
mod ws_flight;

use pacer::{Pace, Schedule, StartGate};

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use tokio::sync::watch;

use crate::base::load::{LoadModel, Until};
use crate::base::target::Scheme;
use crate::engine::conn::Failure;
use crate::error::CliError;
use crate::metrics::{Breakdown, ErrorKind, StepMetrics, Window, WindowAccum, WindowMerger, WindowSummary};
use crate::plan::{RunPlan, Selection};
use crate::protocol::Answer;
use crate::workload::Verdict;
pub use fds::*;
pub use preflight::*;

/// Figures per request of the plan are kept when it has at most this many (beyond, per pattern group only).
pub const MAX_BREAKDOWN_REQUESTS: usize = 20;

/// Requests in a pattern group's urn, as drnbench's default of 1000 requests per client.
const URN_REQUESTS: usize = 1000;

/// The read buffer each thread shares among its connections.
const SCRATCH_BYTES: usize = 64 * 1024;

/// What one step measured.
pub struct StepOutcome {
    pub metrics: StepMetrics,
    pub windows: Vec<WindowSummary>,
    pub elapsed: Duration,
    pub interrupted: bool,
    /// CPU time of the load threads alone (not of a target running in the same process, as in `demo`).
    pub load_cpu: Duration,
    /// With `--start-at`: how long after that instant the load started (zero when on time).
    pub late_start: Option<Duration>,
    /// Time the load threads spent in a script's functions (`-s`), part of `load_cpu`.
    pub script_cpu: Duration,
}

/// Read-only state every thread shares.
struct Shared {
    plan: RunPlan,
    tls: Option<tls::Tls>,
    /// A workload found a wrong answer and `--verify` stops the run: every client ends.
    halt: std::sync::atomic::AtomicBool,
    /// A script failed during the load, in one line: the run stops (as with `halt`) and says where.
    script_failure: std::sync::Mutex<Option<String>>,
    /// `--connection-rate`: the turns every new connection of the step waits for.
    connection_rate: Option<conn_rate::ConnectionRate>,
}

/// The state of one engine thread, shared by its clients (one thread, so `Cell`/`RefCell` and no locks).
struct ThreadCtx {
    shared: Arc<Shared>,
    metrics: RefCell<StepMetrics>,
    scratch: RefCell<Box<[u8]>>,
    rng: RefCell<ChaCha8Rng>,
    /// Per pattern group: an urn of its patterns, shuffled, and the next to take. drnbench fills one urn with
    /// 1000 requests per client, the group's patterns in turn, shuffles it and takes from it: the order is random
    /// and every pattern is sent as often as the others. hakaru's urn holds each pattern ceil(1000 / n) times.
    decks: RefCell<Vec<(Vec<u32>, usize)>>,
    /// `Selection::InOrder`: the next spec, for whichever client sends next (a replay's records in their order: the
    /// thread's k-th slot claimed goes with its k-th record, as nothing awaits between the claim and the choice).
    in_order: Cell<usize>,
    /// Requests this thread may still start; None when the step is bounded by time.
    tickets: Option<Arc<AtomicI64>>,
    /// Index of the window under way, when it begins and ends, and the thread's CPU time when it began.
    window_index: Cell<u64>,
    window_start: Cell<Instant>,
    window_end: Cell<Instant>,
    window_cpu: Cell<Duration>,
    /// The headers and body of the HTTP/2 answer an exchange just returned, for a script's `response()`: set by
    /// `h2::exchange` as it returns and taken by the client loop before its next await.
    h2_kept: Cell<Option<Box<crate::protocol::http::Kept>>>,
    /// The windows' width (`--window`).
    window_width: Duration,
    /// Where finished windows go.
    windows: mpsc::Sender<(u64, WindowAccum)>,
    /// The step has ended: clients must not send again (a due slot in the last tick would reach the server and
    /// be counted nowhere).
    stopped: Cell<bool>,
    /// A timed step has reached its end: no client sends again, those awaiting answers finish them within the
    /// graceful stop (`--graceful-stop`), and their answers count.
    sending_over: Cell<bool>,
    /// Connections open when the first of the thread's clients found the step's time up: the last window's gauge.
    /// Clients end at the deadline on their own and close their connections, and on a busy machine they may all
    /// do so before the thread's own timer wakes, so a gauge read then would say 0 for a step that held them all.
    open_at_deadline: Cell<Option<u64>>,
    /// Open loop only.
    schedule: Option<Schedule>,
    /// Clients this thread may run, clients started so far, clients still running.
    max_clients: usize,
    started_clients: Cell<usize>,
    running_clients: Cell<usize>,
    /// Woken when the last client ends.
    clients_done: tokio::sync::Notify,
    /// Global client ids are `thread + k * threads`, so round-robin positions differ across threads.
    thread_index: usize,
    threads: usize,
    /// When a timed step ends: a slot due then or later belongs to no step (the step is `[start, deadline)`).
    /// A fixed rate's step begins at the gate, so both move there (see [`ThreadCtx::begin_at`]).
    deadline: Cell<Option<Instant>>,
    /// `-s`: the thread's script, which builds every request (see [`scripted`]).
    script: scripted::ThreadScript,
    /// HTTP/2 and HTTP/3: the shape of the thread's pool of connections, shared by its clients (each a stream slot).
    h2: Option<grid::Spec>,
    /// When the step starts: a ramp counts from here.
    start: Cell<Instant>,
}

impl ThreadCtx {
    /// Takes one request of the step's budget (`-n`). One budget for all threads, so that a thread with fewer
    /// clients does not keep working alone after the others finished their equal shares; it may go below zero
    /// by the number of clients, never more.
    fn take_ticket(&self) -> bool {
        match &self.tickets {
            None => true,
            Some(left) => left.fetch_sub(1, Ordering::Relaxed) > 0,
        }
    }

    /// A closed loop's ramp (`--stages`): waits until client `id` (counted from 0 in this segment) takes part,
    /// that is until the target exceeds its number. None when it never will again (the ramp has come down for
    /// good); Some(true) when it waited. Its connection stays open while it waits.
    async fn take_part(&self, id: usize) -> Option<bool> {
        let Some(ramp) = self.ramp_of_clients() else {
            return Some(false);
        };
        let mut waited = false;
        loop {
            let t = Instant::now().saturating_duration_since(self.start.get()).as_secs_f64();
            match ramp.first_above(id as f64, t)? {
                at if at <= t => return Some(waited),
                at => tokio::time::sleep_until((self.start.get() + Duration::from_secs_f64(at)).into()).await,
            }
            if self.stopped.get() {
                return None;
            }
            waited = true;
        }
    }

    /// A closed loop's ramp, if any: the client loop asks before awaiting [`take_part`](Self::take_part), so a
    /// run without one builds no future for it per request.
    fn ramp_of_clients(&self) -> Option<&crate::base::load::Ramp> {
        self.shared.plan.ramp.as_ref().filter(|_| self.schedule.is_none())
    }

    /// When the next request is meant to leave: when the client is ready (closed loop), or the next slot of
    /// the schedule (open loop), which may be in the past when every client was busy.
    async fn intended_send_time(&self, ready: Instant) -> Instant {
        match &self.schedule {
            None => ready,
            Some(s) => s.claim(&self.rng).await,
        }
    }

    /// Open loop: the next slot, if already due (see [`Schedule::try_claim`]); None in a closed loop.
    fn due_slot(&self) -> Option<Instant> {
        self.schedule.as_ref().and_then(|s| s.try_claim(&self.rng))
    }

    /// A script failed during the load: the first failure is kept and every client ends. A call cut at the step's
    /// end or by a stop signal is no failure: the thread's clients end, as the step does.
    fn script_failed(&self, why: String) {
        if self.script.cut() {
            self.stopped.set(true);
            return;
        }
        let mut f = self.shared.script_failure.lock().unwrap_or_else(|p| p.into_inner());
        f.get_or_insert(why);
        self.shared.halt.store(true, Ordering::Relaxed);
    }

    /// Where endpoint `i`'s connections go: a script's `setup` may give its thread another address.
    fn endpoint(&self, i: usize) -> &crate::base::target::Endpoint {
        self.script.endpoint().unwrap_or(&self.shared.plan.endpoints[i])
    }

    fn think_time(&self) -> Option<Duration> {
        match self.shared.plan.load {
            LoadModel::Closed { think } if !think.is_zero() => Some(think),
            _ => None,
        }
    }

    /// Starts one more client if the thread may; returns whether it did.
    fn start_client(self: &Rc<Self>) -> bool {
        let started = self.started_clients.get();
        if started >= self.max_clients {
            return false;
        }
        self.started_clients.set(started + 1);
        self.running_clients.set(self.running_clients.get() + 1);
        let id = self.thread_index + started * self.threads;
        let ctx = Rc::clone(self);
        match self.h2.as_ref() {
            Some(spec) if self.shared.plan.wire.protocol() == crate::protocol::Protocol::Http3 => {
                let events =
                    self.shared.plan.events.as_ref().map(|spec| {
                        crate::protocol::events::EventReader::new(Arc::clone(spec), self.shared.plan.max_line)
                    });
                let link = h3::H3Link::new(h3::pool(self, spec), id / self.threads, events)
                    .keeping(self.script.wants_message());
                tokio::task::spawn_local(ctx.run_client(id, link))
            }
            Some(spec) => tokio::task::spawn_local(ctx.run_client(id, client::Streams(h2::pool(self, spec)))),
            None if self.shared.plan.wire.websocket().is_some_and(|w| w.shared()) => {
                tokio::task::spawn_local(ctx.run_client(id, ws_flight::Slot::new(self, id)))
            }
            None if self.shared.plan.wire.websocket().is_some() => {
                tokio::task::spawn_local(ctx.run_client(id, ws::WsLink::new(self, id)))
            }
            None => tokio::task::spawn_local(ctx.run_client(id, client::Own::new(self))),
        };
        true
    }

    /// Client `id` over `link`, then counted as done.
    /// (An `async move` block, not an `async fn`, for the reason given at [`client::run_client`].)
    #[allow(clippy::manual_async_fn)] // (see above: an async fn's future would keep its arguments twice)
    fn run_client(self: Rc<Self>, id: usize, link: impl client::Link) -> impl std::future::Future<Output = ()> {
        async move {
            client::run_client(Rc::clone(&self), id, link).await;
            let left = self.running_clients.get() - 1;
            self.running_clients.set(left);
            if left == 0 {
                self.clients_done.notify_one();
            }
        }
    }

    /// Sends every window that ended by `now`. Called before a request is recorded, so a request that ends just
    /// after a boundary falls in the next window even when the ticker (tokio's millisecond timer) wakes late.
    /// No window begins at or past a timed step's end: what ends after it, before the thread has seen the end,
    /// is the last window's (a window of its own would start where the step has ended).
    /// Returns false when the coordinator no longer listens.
    fn rotate_windows(&self, now: Instant) -> bool {
        while now >= self.window_end.get() && !self.last_window() {
            let w = self.take_window();
            let index = self.window_index.get();
            self.window_index.set(index + 1);
            self.window_start.set(self.window_end.get());
            self.window_end.set(self.window_end.get() + self.window_width);
            if self.windows.send((index, w)).is_err() {
                return false;
            }
        }
        true
    }

    /// Whether the window under way reaches a timed step's end: no other follows it.
    fn last_window(&self) -> bool {
        self.deadline.get().is_some_and(|d| self.window_end.get() >= d)
    }

    /// Counts `n` requests about to be sent, in the step and in the window of their intended send time: an open
    /// loop's request sent late (every client was busy, the machine was slow) still counts where the schedule
    /// put it, so a window's `sent` is what the pacer offered then. One whose window has gone to the coordinator
    /// is sent along with the window under way, as a correction.
    fn count_sent(&self, n: u64, intended: Instant) {
        // Brought up to the intended time, not to a fresh reading of the clock (one more per request, measured
        // 1.5 % more CPU in a closed loop): an open loop's intended time is its slot or, sent early, its send
        // (`client.rs`), and a closed loop's request is intended when its client became ready, so the intended time
        // is at or before now, and the window under way is then the request's own unless it was sent late.
        self.rotate_windows(intended);
        let mut m = self.metrics.borrow_mut();
        m.sent += n;
        if intended >= self.window_start.get() {
            m.window.sent += n;
            return;
        }
        let current = self.window_index.get();
        let index = (intended.saturating_duration_since(self.start.get()).as_secs_f64()
            / self.window_width.as_secs_f64()) as u64;
        if index >= current {
            m.window.sent += n;
        } else {
            *m.window.sent_earlier.entry(index).or_default() += n;
        }
    }

    /// A fixed rate's step begins at `at`, when every thread has its first connection (the gate): its time, first
    /// window and end count from there, so a connection's setup neither makes the first slots late nor takes their
    /// share of the step. Nothing has been sent or rotated yet (clients wait for the gate before their first slot,
    /// and the ticker starts after this).
    fn begin_at(&self, at: Instant) {
        let shift = at.saturating_duration_since(self.start.get());
        self.metrics.borrow_mut().schedule_began_after = shift;
        self.window_cpu.set(crate::monitor::thread_cpu_time());
        self.start.set(at);
        self.deadline.set(self.deadline.get().map(|d| d + shift));
        if self.window_index.get() == 0 {
            self.window_start.set(at);
            self.window_end.set(at + self.window_width);
        }
        if let Some(s) = &self.schedule {
            s.move_end(self.deadline.get());
        }
        self.script.move_deadline(self.deadline.get());
    }

    /// Whether a client must end rather than send a request intended at `intended`: the step was stopped, or the
    /// slot is at or past a timed step's end. The first client on the thread to find the time up keeps the open
    /// connections for the last window.
    fn past_the_end(&self, intended: Option<Instant>) -> bool {
        if self.stopped.get() {
            return true;
        }
        if self.sending_over.get() {
            self.keep_open_at_deadline();
            return true;
        }
        let time_up = intended.is_some_and(|i| self.deadline.get().is_some_and(|d| i >= d));
        if !time_up {
            return false;
        }
        self.keep_open_at_deadline();
        true
    }

    /// A request about to be written after a timed step's end (its connection took until then to open, or a free
    /// stream): it is not sent, and stays unfinished ([`NOT_SENT`]). In a graceful stop only the answers of
    /// requests already sent are awaited.
    fn check_not_over(&self) -> Result<(), Failure> {
        match self.sending_over.get() {
            true => Err(Failure::new(crate::metrics::ErrorKind::Closed, NOT_SENT)),
            false => Ok(()),
        }
    }

    /// The first time the step's end is found: the connections open then are the last window's gauge.
    fn keep_open_at_deadline(&self) {
        if self.open_at_deadline.get().is_none() {
            self.open_at_deadline.set(Some(self.metrics.borrow().open_now));
        }
    }

    /// The window under way, ended now: its gauges (open connections, CPU) read, a fresh one in its place.
    fn take_window(&self) -> WindowAccum {
        let mut m = self.metrics.borrow_mut();
        let fresh = m.window.fresh();
        let mut w = std::mem::replace(&mut m.window, fresh);
        w.open = m.open_now;
        let cpu = crate::monitor::thread_cpu_time();
        w.cpu = cpu.saturating_sub(self.window_cpu.replace(cpu));
        w
    }

    /// Keeps the text of the step's first failed answer while its decoder still holds it; after the first, a
    /// failure costs one check.
    /// `decoder`: the answer's, or None for HTTP/2's (read by their connection's task): the status and its
    /// reason then.
    fn keep_error_reply(&self, answer: &Answer, decoder: Option<&crate::protocol::AnyDecoder>) {
        if self.shared.plan.ok_status.contains(answer.status) {
            return;
        }
        let mut m = self.metrics.borrow_mut();
        if m.first_error_reply.is_none() {
            let text = match decoder {
                Some(d) => d.error_text(answer.status),
                None => Some(crate::protocol::status_text(answer.status)),
            };
            m.first_error_reply = text.map(|t| crate::protocol::printable_text(crate::base::secrets::scrub_text(&t)));
        }
    }

    /// Records how one request ended. `ready`: when its client was ready to send; a failed request's lag counts
    /// from there (it may have failed before sending), so failures are in the late counts too.
    /// `verdict`: how a workload judged the answer; a wrong answer counts as a failure of kind `wrong_value`, an
    /// expected one (a miss, a refused add) as a success counted apart.
    /// Returns where the request entered the step's slowest list, if it did: see [`name_slow`](Self::name_slow).
    fn record(
        &self,
        spec: usize,
        result: Result<(Answer, Instant), Failure>,
        intended: Instant,
        ready: Instant,
        end: Instant,
        verdict: Verdict,
    ) -> Option<usize> {
        let result = match (result, verdict) {
            (Ok(_), Verdict::Wrong(why)) => Err((Failure::new(ErrorKind::WrongValue, why), false)),
            (Ok(a), v) => Ok((a, v == Verdict::Expected)),
            (Err(f), _) => Err((f, false)),
        };
        self.rotate_windows(end);
        let mut m = self.metrics.borrow_mut();
        let latency_us = end.saturating_duration_since(intended).as_micros().min(u64::MAX as u128) as u64;
        let group = self.shared.plan.requests[spec].group;
        match result {
            Ok(((answer, sent), expected)) => {
                m.record_lag(sent.saturating_duration_since(intended), self.schedule.is_some());
                let ok = expected || self.shared.plan.ok_status.contains(answer.status);
                m.record_response(answer.status, ok, intended, sent, end);
                if expected {
                    m.record_expected(spec, group);
                }
                m.record_detail(spec, group, ok, latency_us, answer.status, None)
            }
            Err((f, _)) => {
                m.record_lag(ready.saturating_duration_since(intended), self.schedule.is_some());
                let kind = f.kind;
                m.record_failure(kind, || f.message, intended, end);
                m.record_detail(spec, group, false, latency_us, 0, Some(kind))
            }
        }
    }

    /// Whether requests' phases are timed: HTTP's, gRPC's over it too, WebSocket's (its connection phase holds the
    /// upgrade); a key-value op has no phases worth their clock reads.
    fn times_phases(&self) -> bool {
        let p = self.shared.plan.wire.protocol();
        use crate::protocol::Protocol;
        matches!(p, Protocol::Http | Protocol::Http3 | Protocol::WebSocket) || p.over_http2()
    }

    /// Waits for a new connection's turn under `--connection-rate`, and returns when it came (the connection's
    /// phases start there, not at the wait); None at once without the flag (no clock read).
    async fn connection_turn(&self) -> Option<Instant> {
        let rate = self.shared.connection_rate.as_ref()?;
        let now = Instant::now();
        let turn = rate.claim(now);
        if turn > now {
            tokio::time::sleep_until(turn.into()).await;
            return Some(Instant::now());
        }
        Some(now)
    }

    /// A connection opened from `start` to `done` (`tls`: the TLS handshake that followed TCP's).
    fn record_connect(&self, start: Instant, tls: Option<crate::metrics::phases::Handshake>, done: Instant) {
        if self.times_phases() {
            self.metrics.borrow_mut().phases.record_connect(start, tls, done);
        }
    }

    /// An answer's phases: sent at `sent`, its first byte at `first` (None: whole in its last read), ended at `end`.
    fn record_phases(&self, intended: Instant, sent: Instant, first: Option<Instant>, end: Instant) {
        if self.times_phases() {
            let open_loop = self.schedule.is_some();
            self.metrics.borrow_mut().record_phases(intended, sent, first, end, open_loop);
        }
    }

    /// Names the key-value op that entered the slowest list at `at` (what [`record`](Self::record) returned) by its
    /// command and key, read from its bytes: only then, so the ops that do not enter pay nothing.
    fn name_slow(&self, at: usize, request: &[u8]) {
        if let Some(slow) = self.metrics.borrow_mut().slowest.get_mut(at) {
            slow.key = self.shared.plan.wire.protocol().command_and_key(request);
        }
    }

    /// Picks the next request: returns (index into the plan's requests, index into its endpoints).
    fn choose(&self, turn: &mut usize) -> (usize, usize) {
        use rand::RngExt as _;
        let plan = &self.shared.plan;
        let n = plan.requests.len();
        let (spec, round) = match &plan.selection {
            Selection::RoundRobin => (*turn % n, *turn / n),
            Selection::InOrder => {
                let k = self.in_order.get();
                self.in_order.set(k.wrapping_add(1));
                (k % n, *turn)
            }
            Selection::Weighted { cumulative, groups } => {
                let mut rng = self.rng.borrow_mut();
                let total = cumulative.last().copied().unwrap_or(1.0);
                let r = rng.random::<f64>() * total;
                let g = cumulative.partition_point(|c| *c <= r).min(groups.len() - 1);
                let range = &groups[g];
                let mut decks = self.decks.borrow_mut();
                if decks.len() < groups.len() {
                    decks.resize_with(groups.len(), || (Vec::new(), 0));
                }
                let (deck, next) = &mut decks[g];
                if *next >= deck.len() {
                    // A new urn: each pattern of the group the same number of times, in a random order.
                    use rand::seq::SliceRandom as _;
                    let copies = URN_REQUESTS.div_ceil(range.len());
                    *deck = (0..copies).flat_map(|_| range.clone().map(|i| i as u32)).collect();
                    deck.shuffle(&mut *rng);
                    *next = 0;
                }
                *next += 1;
                (deck[*next - 1] as usize, *turn)
            }
        };
        *turn = turn.wrapping_add(1);
        (spec, round % plan.requests[spec].endpoints.len())
    }
}

/// Runs one step to its end (requests done, deadline, or `interrupt`), calling `on_window` as windows complete.
///
/// `on_window` sees each window once every thread has reported it (the last ones when the step ends), with its
/// merged histograms; what it adds to the summary (the server's CPU) is kept in the step's windows.
pub fn run_step(plan: &RunPlan, interrupt: &AtomicBool, mut on_window: impl FnMut(&mut Window)) -> StepOutcome {
    // Raises the open-file limit when the connections need it; what still does not fit is counted as fd_limit.
    fd_budget(plan.connections, plan.threads);
    let http2 = plan.wire.protocol().over_http2();
    // HTTP/3's connections are its link's (engine/h3.rs), with TLS settings of their own; its streams are slots as
    // HTTP/2's are.
    let http3 = plan.wire.protocol() == crate::protocol::Protocol::Http3;
    let tls = plan
        .endpoints
        .iter()
        .any(|e| e.scheme == Scheme::Https && !http3)
        .then(|| tls::Tls::new(&plan.tls, plan.insecure, http2));
    let connection_rate = plan.connection_rate.map(|r| conn_rate::ConnectionRate::new(r, Instant::now()));
    let shared = Arc::new(Shared {
        plan: plan.clone(),
        tls,
        halt: Default::default(),
        script_failure: Default::default(),
        connection_rate,
    });
    let threads = plan.threads.max(1);
    let (stop_tx, stop_rx) = watch::channel(false);
    let (window_tx, window_rx) = mpsc::channel::<(u64, WindowAccum)>();
    let (start, late_start) = scheduled_start(plan.start_at);
    // The wall-clock instant of `start`, for readers that line windows up with other clocks (the HDR log).
    let now = (Instant::now(), std::time::SystemTime::now());
    let wall = |at: Instant| match at.checked_duration_since(now.0) {
        Some(ahead) => now.1 + ahead,
        None => now.1 - now.0.saturating_duration_since(at),
    };
    let started_at = wall(start);
    let full_windows = plan.hdr_log.is_some();
    let deadline = match plan.stop {
        Until::Duration(d) => Some(start + d),
        Until::Requests(_) => None,
    };

    let budget = match (plan.stop, plan.most_requests) {
        (Until::Requests(n), _) | (Until::Duration(_), Some(n)) => {
            Some(Arc::new(AtomicI64::new(n.min(i64::MAX as u64) as i64)))
        }
        (Until::Duration(_), None) => None,
    };
    let gate = Arc::new(StartGate::new(threads));
    // Where the windows' wall-clock times count from (the HDR log): the gate, if it opened before the step's end.
    let begun_at = || gate.opened_at().filter(|at| begins_at_gate(plan) && deadline.is_none_or(|d| *at < d));
    let handles: Vec<_> = (0..threads)
        .map(|i| {
            let tickets = budget.clone();
            let connections = share(plan.connections, threads, i);
            let clients = connections * clients_per_connection(plan);
            let schedule = match plan.load {
                LoadModel::Closed { .. } => None,
                LoadModel::Open { arrival, .. } if plan.replay.is_some() => {
                    // A replay runs on one thread (the plan sees to it): its slots are the recorded offsets.
                    let schedule = plan.replay.clone().expect("matched");
                    Some(
                        Schedule::paced(Arc::clone(&gate), plan.slot_offset, Pace::Recorded(schedule), arrival)
                            .with_window(plan.pace_window)
                            .until(deadline),
                    )
                }
                LoadModel::Open { arrival, .. } if plan.ramp.is_some() => {
                    // The thread's share of the ramp, its slots between the other threads' (phase i / threads).
                    let share = clients as f64 / plan.connections.max(1) as f64;
                    let ramp = plan.ramp.as_ref().expect("matched").scaled(share);
                    let pace = Pace::Ramp { ramp, phase: i as f64 / threads as f64, origin: start };
                    Some(
                        Schedule::paced(Arc::clone(&gate), Duration::ZERO, pace, arrival)
                            .with_window(plan.pace_window)
                            .until(deadline),
                    )
                }
                LoadModel::Open { rate, arrival } => {
                    // Each thread sends its connections' share of the rate (a thread with one connection of three
                    // takes a third), so no thread is asked more than its connections can carry.
                    let thread_rate = rate * connections as f64 / plan.connections.max(1) as f64;
                    // One common start; thread i's first slot i / rate after it, so the threads take turns.
                    let offset = plan.slot_offset + Duration::from_secs_f64(i as f64 / rate);
                    Some(
                        Schedule::new(Arc::clone(&gate), offset, 1.0 / thread_rate, arrival)
                            .with_window(plan.pace_window)
                            .until(deadline),
                    )
                }
            };
            let script = scripted::ThreadScript::take(plan, i, deadline).unwrap_or_else(|why| {
                *shared.script_failure.lock().unwrap_or_else(|p| p.into_inner()) = Some(why);
                shared.halt.store(true, Ordering::Relaxed);
                scripted::ThreadScript::default()
            });
            let ctx = ThreadCtx {
                script,
                shared: Arc::clone(&shared),
                metrics: RefCell::new(StepMetrics {
                    track_service: matches!(plan.load, LoadModel::Open { .. }),
                    window_service: full_windows && matches!(plan.load, LoadModel::Open { .. }),
                    by_request: if plan.workload.is_none()
                        && (2..=MAX_BREAKDOWN_REQUESTS).contains(&plan.requests.len())
                    {
                        vec![Breakdown::new(); plan.requests.len()]
                    } else {
                        Vec::new()
                    },
                    by_group: vec![Breakdown::new(); plan.group_names.len()],
                    window: WindowAccum::new(full_windows),
                    ..StepMetrics::new()
                }),
                scratch: RefCell::new(vec![0u8; SCRATCH_BYTES].into_boxed_slice()),
                // Offset by the segment's first client, so the agents of a scaled-out run draw differently.
                rng: RefCell::new(ChaCha8Rng::seed_from_u64(plan.seed.wrapping_add((plan.client_offset + i) as u64))),
                decks: RefCell::new(Vec::new()),
                in_order: Cell::new(0),
                tickets,
                window_index: Cell::new(0),
                window_start: Cell::new(start),
                window_end: Cell::new(start + plan.window),
                window_cpu: Cell::new(Duration::ZERO),
                h2_kept: Cell::new(None),
                window_width: plan.window,
                windows: window_tx.clone(),
                stopped: Cell::new(false),
                sending_over: Cell::new(false),
                open_at_deadline: Cell::new(None),
                schedule,
                max_clients: clients,
                started_clients: Cell::new(0),
                running_clients: Cell::new(0),
                clients_done: tokio::sync::Notify::new(),
                thread_index: i,
                threads,
                deadline: Cell::new(deadline),
                h2: (http2 || http3).then_some(grid::Spec {
                    connections,
                    endpoints: plan.endpoints.len(),
                    streams: plan.wire.streams(),
                    spread: matches!(plan.load, LoadModel::Open { .. }),
                }),
                start: Cell::new(start),
            };
            let (stop_rx, window_tx) = (stop_rx.clone(), window_tx.clone());
            std::thread::Builder::new()
                .name(format!("hakaru-load-{i}"))
                .spawn(move || {
                    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                        Ok(rt) => rt,
                        // No descriptor left for the thread's event loop (other threads' connections took them):
                        // the run stops in one line, as a script's failure does, with what was measured.
                        Err(e) => {
                            let why = format!(
                                "a load thread could not start its event loop ({e}); raise the open-file limit \
                                 (ulimit -n) or lower -c"
                            );
                            let mut failure = ctx.shared.script_failure.lock().unwrap_or_else(|p| p.into_inner());
                            failure.get_or_insert(why);
                            ctx.shared.halt.store(true, Ordering::Relaxed);
                            return (StepMetrics::new(), Instant::now(), Duration::ZERO, Default::default());
                        }
                    };
                    let local = tokio::task::LocalSet::new();
                    // The LocalSet polls its main future on every wake-up, so that future is only a oneshot;
                    // the select over deadline, stop and clients lives in a task that is polled when it is woken.
                    let (done_tx, done_rx) = tokio::sync::oneshot::channel();
                    local.spawn_local(async move {
                        // The common instant of --start-at (no wait without it).
                        tokio::time::sleep_until(start.into()).await;
                        let out = thread_main(Rc::new(ctx), stop_rx, window_tx).await;
                        let _ = done_tx.send(out);
                    });
                    let cpu_start = crate::monitor::thread_cpu_time();
                    let (m, end, script) = local
                        .block_on(&rt, done_rx)
                        .unwrap_or_else(|_| (StepMetrics::new(), Instant::now(), Default::default()));
                    let cpu = crate::monitor::thread_cpu_time().saturating_sub(cpu_start);
                    if http3 {
                        // The clients gone first (with the LocalSet), so no request ends, or is counted, after
                        // the step's figures were taken.
                        drop(local);
                        rt.block_on(h3::close_all());
                    }
                    (m, end, cpu, script)
                })
                .expect("spawning a thread")
        })
        .collect();
    drop(window_tx);

    let mut merger = WindowMerger::new(plan.window, threads, full_windows, started_at);
    let mut interrupted = false;
    loop {
        match window_rx.recv_timeout(Duration::from_millis(50)) {
            Ok((index, w)) => {
                // A thread sends its first window after the step began (its ticker starts then).
                if let Some(at) = begun_at() {
                    merger.started_at = wall(at);
                }
                if let Some(mut window) = merger.add(index, &w) {
                    ramp_target(plan, &mut window);
                    on_window(&mut window);
                    merger.keep(window);
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        if !interrupted && interrupt.load(Ordering::Relaxed) {
            interrupted = true;
            let _ = stop_tx.send(true);
        }
    }

    let mut metrics = StepMetrics::new();
    let mut finished = start;
    let mut load_cpu = Duration::ZERO;
    let mut script_cpu = Duration::ZERO;
    for (i, h) in handles.into_iter().enumerate() {
        // A thread that panicked loses its own figures only; the others are kept.
        if let Ok((m, end, cpu, script)) = h.join() {
            metrics.merge(&m);
            finished = finished.max(end);
            load_cpu += cpu;
            script_cpu += script.give_back(plan, i);
        }
    }
    if let Some(why) = shared.script_failure.lock().unwrap_or_else(|p| p.into_inner()).take() {
        // The run ends here, with what was measured: the next steps of a sweep are not run.
        crate::base::stop::because(why);
        interrupt.store(true, Ordering::Relaxed);
        interrupted = true;
    }
    // The threads that began say when (`ThreadCtx::begin_at`); none did in a closed loop, a ramp, or a step that
    // ended before its gate opened.
    let begun = start + metrics.schedule_began_after;
    let mut elapsed = finished.saturating_duration_since(begun);
    if let Some(d) = deadline {
        elapsed = elapsed.min(d - start);
    }
    let windows = merger.finish(elapsed.as_secs_f64(), |w| {
        ramp_target(plan, w);
        on_window(w)
    });
    StepOutcome { metrics, windows, elapsed, interrupted, load_cpu, late_start, script_cpu }
}

/// A ramp's target at the middle of the window, in its summary.
fn ramp_target(plan: &RunPlan, w: &mut Window) {
    if let Some(r) = &plan.ramp {
        let mid = w.summary.t + w.length.as_secs_f64() / 2.0;
        w.summary.target = Some((r.at(mid) * 1000.0).round() / 1000.0);
    }
}

/// Sleeps until `at` (or a stop signal).
pub fn wait_until(at: std::time::SystemTime, interrupt: &AtomicBool) {
    while let Ok(wait) = at.duration_since(std::time::SystemTime::now()) {
        if wait.is_zero() || interrupt.load(Ordering::Relaxed) {
            return;
        }
        // Short sleeps: a stop signal is heard within 50 ms, and the last one ends at the instant.
        std::thread::sleep(wait.min(Duration::from_millis(50)));
    }
}

/// When the step starts: now, or at `--start-at` (the threads wait for it), with how late that is. A late
/// agent's step counts from the common instant, so its windows line up with the other agents' and it ends when
/// they do.
fn scheduled_start(at: Option<std::time::SystemTime>) -> (Instant, Option<Duration>) {
    let now = Instant::now();
    let Some(at) = at else { return (now, None) };
    match at.duration_since(std::time::SystemTime::now()) {
        Ok(ahead) => (now + ahead, Some(Duration::ZERO)),
        Err(e) => (now.checked_sub(e.duration()).unwrap_or(now), Some(e.duration())),
    }
}

/// Whether a step begins when every thread has its first connection (the gate: see `ThreadCtx::begin_at`): a fixed
/// rate's does, but with --start-at (agents' steps keep the common instant, so their windows line up and they stop
/// together); a ramp counts from the start (its windows and slots keep one clock), a closed loop has no gate.
fn begins_at_gate(plan: &RunPlan) -> bool {
    matches!(plan.load, LoadModel::Open { .. }) && plan.ramp.is_none() && plan.start_at.is_none()
}

/// Why a request was never sent: a timed step ended before it could be (see `ThreadCtx::check_not_over`). The
/// client loop counts it in no figure but `unfinished`.
pub(super) const NOT_SENT: &str = "the step ended before the request was sent";

/// Clients a connection serves: HTTP/2 and HTTP/3's stream slots (`--streams`), WebSocket's messages in flight
/// (`--in-flight`), else one.
fn clients_per_connection(plan: &RunPlan) -> usize {
    let streams = plan.wire.protocol().over_http2() || plan.wire.protocol() == crate::protocol::Protocol::Http3;
    match plan.wire.websocket() {
        _ if streams => plan.wire.streams(),
        Some(w) => w.in_flight.max(1),
        None => 1,
    }
}

/// The part of `total` that worker `i` of `n` takes (the first ones take the remainder).
fn share(total: usize, n: usize, i: usize) -> usize {
    total / n + usize::from(i < total % n)
}

async fn thread_main(
    ctx: Rc<ThreadCtx>,
    mut stop: watch::Receiver<bool>,
    windows: mpsc::Sender<(u64, WindowAccum)>,
) -> (StepMetrics, Instant, scripted::ThreadScript) {
    ctx.window_cpu.set(crate::monitor::thread_cpu_time());
    // A closed loop starts every client now; an open loop starts one and adds clients when a request is late.
    let initial = if ctx.schedule.is_some() { 1 } else { ctx.max_clients };
    for _ in 0..initial {
        ctx.start_client();
    }
    let until_deadline = |deadline: Option<Instant>| async move {
        match deadline {
            Some(d) => tokio::time::sleep_until(d.into()).await,
            None => std::future::pending().await,
        }
    };
    // A fixed rate's step begins once every thread has its first connection ([`begins_at_gate`]); it ends without
    // beginning when that has not come by its end as first set, on a stop signal, or when every client ended first
    // (a thread that could not start its event loop never comes to the gate; the run is halted).
    let all_done = || async {
        if ctx.running_clients.get() > 0 {
            ctx.clients_done.notified().await;
        }
    };
    let begun = match ctx.schedule.as_ref().filter(|_| begins_at_gate(&ctx.shared.plan)) {
        None => true,
        Some(schedule) => tokio::select! {
            // The gate first: one open as the first end comes is the step's beginning.
            biased;
            at = schedule.gate_opened() => {
                ctx.begin_at(at);
                true
            }
            _ = until_deadline(ctx.deadline.get()) => false,
            _ = stop.wait_for(|stopped| *stopped) => false,
            _ = all_done() => false,
        },
    };
    let mut ticker = None;
    let mut pacer = None;
    if begun {
        ticker = Some(tokio::task::spawn_local(tick_windows(Rc::clone(&ctx))));
        pacer = ctx.schedule.is_some().then(|| {
            let ctx = Rc::clone(&ctx);
            tokio::task::spawn_local(async move {
                if let Some(schedule) = &ctx.schedule {
                    let more = Rc::clone(&ctx);
                    let more_clients = move || more.start_client();
                    if let Err(e) = schedule.pace(more_clients).await {
                        ctx.metrics
                            .borrow_mut()
                            .errors
                            .add(crate::metrics::ErrorKind::Io, || format!("pacer timer: {e}"));
                    }
                }
            })
        });
        let time_up = tokio::select! {
            _ = all_done() => false,
            _ = until_deadline(ctx.deadline.get()) => true,
            _ = stop.wait_for(|stopped| *stopped) => false,
        };
        if let (true, Some(grace)) = (time_up, ctx.shared.plan.graceful_stop()) {
            // The step's end: sending stops (the pacer too, its waiting clients given the end), and the answers in
            // flight get `grace` to finish (k6's gracefulStop): they count as any other, over the time they were
            // sent in, so an answer of a second is not dropped because the step ended while it was on its way.
            let end = Instant::now();
            ctx.keep_open_at_deadline();
            ctx.sending_over.set(true);
            if let Some(task) = pacer.take() {
                task.abort();
            }
            if let Some(s) = &ctx.schedule {
                s.close();
            }
            if ctx.running_clients.get() > 0 {
                tokio::select! {
                    _ = all_done() => {}
                    _ = tokio::time::sleep(grace) => {}
                    _ = stop.wait_for(|stopped| *stopped) => {}
                }
                ctx.metrics.borrow_mut().graceful_waited = Some(end.elapsed());
            }
            return finish(&ctx, end, [ticker, pacer], &windows);
        }
    }
    finish(&ctx, Instant::now(), [ticker, pacer], &windows)
}

/// The thread's step has ended at `end` (what ends after it, in a graceful stop, is the last window's): its tasks
/// stopped, its last window sent, its figures returned.
fn finish(
    ctx: &ThreadCtx,
    end: Instant,
    tasks: [Option<tokio::task::JoinHandle<()>>; 2],
    windows: &mpsc::Sender<(u64, WindowAccum)>,
) -> (StepMetrics, Instant, scripted::ThreadScript) {
    ctx.stopped.set(true);
    for task in tasks.into_iter().flatten() {
        task.abort();
    }
    // The last window (cut short by the end) is sent even when empty, so it completes when every thread's is in.
    let mut last = ctx.take_window();
    if let Some(open) = ctx.open_at_deadline.get() {
        last.open = open;
    }
    let _ = windows.send((ctx.window_index.get(), last));
    let mut metrics = ctx.metrics.replace(StepMetrics::new());
    metrics.window = WindowAccum::default();
    metrics.pacer_wakeups = ctx.schedule.as_ref().map_or(0, |s| s.wakeups());
    (metrics, end, ctx.script.take_out())
}

/// A thread-local slot holding one value per step, keyed by the step's shared state (engine threads run one step
/// each): the connection pools of HTTP/2, HTTP/3 and WebSocket's `--in-flight`.
type StepLocal<T> = std::thread::LocalKey<RefCell<Option<(usize, Rc<T>)>>>;

/// The thread's value in `slot` for the step `ctx` runs, made by `make` at its first use in this step (a value left
/// from an earlier step is replaced).
fn step_local<T>(slot: &'static StepLocal<T>, ctx: &ThreadCtx, make: impl FnOnce() -> T) -> Rc<T> {
    let key = Arc::as_ptr(&ctx.shared) as usize;
    slot.with_borrow_mut(|kept| match kept {
        Some((k, value)) if *k == key => Rc::clone(value),
        _ => {
            let value = Rc::new(make());
            *kept = Some((key, Rc::clone(&value)));
            value
        }
    })
}

/// Sends the thread's window to the coordinator at every window boundary, also when no request ends.
async fn tick_windows(ctx: Rc<ThreadCtx>) {
    // The last window is sent by the thread at the step's end.
    while !ctx.last_window() {
        tokio::time::sleep_until(ctx.window_end.get().into()).await;
        if !ctx.rotate_windows(Instant::now()) {
            return;
        }
    }
}

#[cfg(test)]
mod tests;
