//! The engine: runs one load step of a plan on N threads, each a single-threaded event loop with its clients.
//!
//! Each thread owns its metrics (no locks on the hot path) and sends a window of figures every second to the
//! coordinating thread, which merges them for live progress; at the end the threads' metrics are merged.

mod client;
pub mod conn;

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use tokio::sync::watch;
use tokio_rustls::TlsConnector;

use crate::metrics::{StepMetrics, WindowAccum, WindowMerger, WindowSummary};
use crate::plan::{LoadModel, RunPlan, Selection, Stop, UsageError};
use crate::target::Scheme;

/// Width of the time-series windows.
pub const WINDOW: Duration = Duration::from_secs(1);

/// The read buffer each thread shares among its connections.
const SCRATCH_BYTES: usize = 64 * 1024;

/// What one step measured.
pub struct StepOutcome {
    pub metrics: StepMetrics,
    pub windows: Vec<WindowSummary>,
    pub elapsed: Duration,
    pub interrupted: bool,
}

/// Read-only state every thread shares.
struct Shared {
    plan: RunPlan,
    tls: Option<TlsConnector>,
}

/// The state of one engine thread, shared by its clients (one thread, so `Cell`/`RefCell` and no locks).
struct ThreadCtx {
    shared: Arc<Shared>,
    metrics: RefCell<StepMetrics>,
    scratch: RefCell<Box<[u8]>>,
    rng: RefCell<ChaCha8Rng>,
    /// Requests this thread may still start; None when the step is bounded by time.
    tickets: Cell<Option<u64>>,
    /// Index of the window under way.
    window_index: Cell<u64>,
}

impl ThreadCtx {
    fn take_ticket(&self) -> bool {
        match self.tickets.get() {
            None => true,
            Some(0) => false,
            Some(n) => {
                self.tickets.set(Some(n - 1));
                true
            }
        }
    }

    /// When the next request is meant to leave, as the load model decides; `ready` is when the client is free.
    fn intended_send_time(&self, ready: Instant) -> Instant {
        match self.shared.plan.load {
            LoadModel::Closed { .. } => ready,
        }
    }

    fn think_time(&self) -> Option<Duration> {
        match self.shared.plan.load {
            LoadModel::Closed { think } if !think.is_zero() => Some(think),
            LoadModel::Closed { .. } => None,
        }
    }

    /// Picks the next request: returns (index into the plan's requests, index into its endpoints).
    fn choose(&self, turn: &mut usize) -> (usize, usize) {
        use rand::RngExt as _;
        let plan = &self.shared.plan;
        let n = plan.requests.len();
        let (spec, round) = match &plan.selection {
            Selection::RoundRobin => (*turn % n, *turn / n),
            Selection::Weighted { cumulative, groups } => {
                let mut rng = self.rng.borrow_mut();
                let total = cumulative.last().copied().unwrap_or(1.0);
                let r = rng.random::<f64>() * total;
                let g = cumulative
                    .partition_point(|c| *c <= r)
                    .min(groups.len() - 1);
                let range = &groups[g];
                (range.start + rng.random_range(0..range.len()), *turn)
            }
        };
        *turn = turn.wrapping_add(1);
        (spec, round % plan.requests[spec].endpoints.len())
    }
}

/// Checks that every endpoint accepts a connection before the load starts: a closed port is bad input.
pub fn preflight(plan: &RunPlan) -> Result<(), UsageError> {
    for ep in &plan.endpoints {
        if let Err(e) = std::net::TcpStream::connect_timeout(&ep.addr, plan.connect_timeout) {
            let why = match e.kind() {
                std::io::ErrorKind::ConnectionRefused => "connection refused".to_string(),
                std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => {
                    format!(
                        "no answer within {}",
                        humantime::format_duration(plan.connect_timeout)
                    )
                }
                _ => e.to_string(),
            };
            return Err(UsageError::new(format!(
                "target {ep}: cannot connect to {} ({why}); start the server or fix the host and port",
                ep.addr
            )));
        }
    }
    Ok(())
}

/// Runs one step to its end (requests done, deadline, or `interrupt`), calling `on_window` as windows complete.
pub fn run_step(
    plan: &RunPlan,
    interrupt: &AtomicBool,
    mut on_window: impl FnMut(&WindowSummary),
) -> StepOutcome {
    let tls = plan
        .endpoints
        .iter()
        .any(|e| e.scheme == Scheme::Https)
        .then(|| conn::tls_connector(plan.insecure));
    let shared = Arc::new(Shared {
        plan: plan.clone(),
        tls,
    });
    let threads = plan.threads.max(1);
    let (stop_tx, stop_rx) = watch::channel(false);
    let (window_tx, window_rx) = mpsc::channel::<(u64, WindowAccum)>();
    let start = Instant::now();
    let deadline = match plan.stop {
        Stop::Duration(d) => Some(start + d),
        Stop::Requests(_) => None,
    };

    let handles: Vec<_> = (0..threads)
        .map(|i| {
            let clients = share(plan.connections, threads, i);
            let tickets = match plan.stop {
                Stop::Requests(n) => Some(share(n as usize, threads, i) as u64),
                Stop::Duration(_) => None,
            };
            let ctx = ThreadCtx {
                shared: Arc::clone(&shared),
                metrics: RefCell::new(StepMetrics::new()),
                scratch: RefCell::new(vec![0u8; SCRATCH_BYTES].into_boxed_slice()),
                rng: RefCell::new(ChaCha8Rng::seed_from_u64(plan.seed.wrapping_add(i as u64))),
                tickets: Cell::new(tickets),
                window_index: Cell::new(0),
            };
            let (stop_rx, window_tx) = (stop_rx.clone(), window_tx.clone());
            std::thread::Builder::new()
                .name(format!("hakaru-load-{i}"))
                .spawn(move || {
                    let rt = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .expect("a tokio runtime starts on a live system");
                    let local = tokio::task::LocalSet::new();
                    let first_client = i;
                    // The LocalSet polls its main future on every wake-up, so that future is only a oneshot;
                    // the select over deadline, stop and clients lives in a task that is polled when it is woken.
                    let (done_tx, done_rx) = tokio::sync::oneshot::channel();
                    let ctx = Rc::new(ctx);
                    local.spawn_local(async move {
                        let out = thread_main(
                            ctx,
                            clients,
                            threads,
                            first_client,
                            start,
                            deadline,
                            stop_rx,
                            window_tx,
                        )
                        .await;
                        let _ = done_tx.send(out);
                    });
                    local
                        .block_on(&rt, done_rx)
                        .unwrap_or_else(|_| (StepMetrics::new(), Instant::now()))
                })
                .expect("spawning a thread")
        })
        .collect();
    drop(window_tx);

    let mut merger = WindowMerger::new(WINDOW, threads);
    let mut interrupted = false;
    loop {
        match window_rx.recv_timeout(Duration::from_millis(50)) {
            Ok((index, w)) => {
                if let Some(summary) = merger.add(index, &w) {
                    on_window(&summary);
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
    for h in handles {
        // A thread that panicked loses its own figures only; the others are kept.
        if let Ok((m, end)) = h.join() {
            metrics.merge(&m);
            finished = finished.max(end);
        }
    }
    let mut elapsed = finished.saturating_duration_since(start);
    if let Some(d) = deadline {
        elapsed = elapsed.min(d - start);
    }
    StepOutcome {
        metrics,
        windows: merger.finish(),
        elapsed,
        interrupted,
    }
}

/// The part of `total` that worker `i` of `n` takes (the first ones take the remainder).
fn share(total: usize, n: usize, i: usize) -> usize {
    total / n + usize::from(i < total % n)
}

#[allow(clippy::too_many_arguments)]
async fn thread_main(
    ctx: Rc<ThreadCtx>,
    clients: usize,
    stride: usize,
    first_client: usize,
    start: Instant,
    deadline: Option<Instant>,
    mut stop: watch::Receiver<bool>,
    windows: mpsc::Sender<(u64, WindowAccum)>,
) -> (StepMetrics, Instant) {
    let handles: Vec<_> = (0..clients)
        .map(|c| {
            tokio::task::spawn_local(client::run_client(
                Rc::clone(&ctx),
                first_client + c * stride,
            ))
        })
        .collect();
    let ticker = tokio::task::spawn_local(tick_windows(Rc::clone(&ctx), start, windows.clone()));
    let all_done = async {
        for h in handles {
            let _ = h.await;
        }
    };
    let until_deadline = async {
        match deadline {
            Some(d) => tokio::time::sleep_until(d.into()).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = all_done => {}
        _ = until_deadline => {}
        _ = stop.wait_for(|stopped| *stopped) => {}
    }
    let end = Instant::now();
    ticker.abort();
    let mut metrics = ctx.metrics.replace(StepMetrics::new());
    let last = std::mem::take(&mut metrics.window);
    if last.requests > 0 {
        let _ = windows.send((ctx.window_index.get(), last));
    }
    (metrics, end)
}

/// Sends the thread's window to the coordinator at every window boundary.
async fn tick_windows(
    ctx: Rc<ThreadCtx>,
    start: Instant,
    windows: mpsc::Sender<(u64, WindowAccum)>,
) {
    loop {
        let index = ctx.window_index.get();
        tokio::time::sleep_until((start + WINDOW * (index as u32 + 1)).into()).await;
        let w = std::mem::take(&mut ctx.metrics.borrow_mut().window);
        ctx.window_index.set(index + 1);
        if windows.send((index, w)).is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::share;

    #[test]
    fn shares_add_up_to_the_total() {
        for (total, n) in [(1000, 3), (50, 2), (1, 4), (7, 7)] {
            assert_eq!((0..n).map(|i| share(total, n, i)).sum::<usize>(), total);
        }
        assert_eq!(share(10, 3, 0), 4);
    }
}
