//! `hakaru serve`: the built-in HTTP/1.1 target whose answers are shaped by the request, for the quick start, calibration and tests.
//!
//! Each server thread runs its own current-thread runtime; one acceptor hands connections out round-robin,
//! so connections spread evenly and a connection's requests never cross threads.

mod cache;
mod conn;
mod openai;
mod request;
mod response;
mod stream;

use std::io::{self, Write};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use tokio::net::TcpSocket;
use tokio::runtime::{Builder, Handle, Runtime};
use tokio::sync::{Semaphore, watch};

pub struct ServeOptions {
    /// Port 0 picks a free one; `ServerHandle::addr` tells which.
    pub listen: SocketAddr,
    /// Worker threads of the server's runtime (0 counts as 1).
    pub threads: usize,
    /// At most this many requests answered at once, counting their delay and miss cost; `None` = unlimited.
    pub workers: Option<usize>,
    /// What a miss at `/cache` costs (slept asynchronously).
    pub miss_cost: Duration,
    /// LRU entries at `/cache`.
    pub cache_size: usize,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            workers: None,
            miss_cost: Duration::from_millis(5),
            cache_size: 100,
        }
    }
}

/// A running server. Dropping it also stops the server, without waiting for its threads.
pub struct ServerHandle {
    addr: SocketAddr,
    stop: watch::Sender<bool>,
    threads: Vec<JoinHandle<()>>,
}

impl ServerHandle {
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting, drops every connection (stalled ones included), and returns once the threads are gone.
    pub fn stop(mut self) {
        self.stop.send_replace(true);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// Binds, spawns the server's own runtime thread(s), returns once it is listening.
pub fn start(opts: ServeOptions) -> io::Result<ServerHandle> {
    let threads = opts.threads.max(1);
    let shared = Arc::new(Shared::new(&opts, threads));
    let runtimes = (0..threads)
        .map(|_| Builder::new_current_thread().enable_all().build())
        .collect::<io::Result<Vec<Runtime>>>()?;
    let handles: Vec<Handle> = runtimes.iter().map(|rt| rt.handle().clone()).collect();
    let listener = {
        let _entered = runtimes[0].enter();
        let socket = match opts.listen {
            SocketAddr::V4(_) => TcpSocket::new_v4()?,
            SocketAddr::V6(_) => TcpSocket::new_v6()?,
        };
        socket.set_reuseaddr(true)?;
        socket.bind(opts.listen)?;
        // std's backlog of 128 drops SYNs when a client without keep-alive opens connections in bursts,
        // and each drop costs that client a 1 s retransmit: a latency spike the target must not invent.
        socket.listen(4096)?
    };
    let addr = listener.local_addr()?;
    runtimes[0].spawn(accept_loop(listener, handles, shared));
    let (stop, stopped) = watch::channel(false);
    let threads = runtimes
        .into_iter()
        .enumerate()
        .map(|(i, rt)| {
            let mut stopped = stopped.clone();
            std::thread::Builder::new()
                .name(format!("hakaru-serve-{i}"))
                // Returning from block_on drops the runtime, and with it every connection task.
                .spawn(move || rt.block_on(async move { drop(stopped.wait_for(|s| *s).await) }))
        })
        .collect::<io::Result<Vec<_>>>()?;
    Ok(ServerHandle { addr, stop, threads })
}

/// For the CLI: start, print the listening line, block until SIGINT/SIGTERM, then stop.
pub fn run_until_signal(opts: ServeOptions) -> anyhow::Result<()> {
    let listen = opts.listen;
    let signals = Builder::new_current_thread().enable_io().build()?;
    // Handlers go in before the line is printed: a test that signals as soon as it reads the line must not kill us.
    let (mut interrupt, mut terminate) = {
        let _entered = signals.enter();
        use tokio::signal::unix::{SignalKind, signal};
        (signal(SignalKind::interrupt())?, signal(SignalKind::terminate())?)
    };
    let server = start(opts).with_context(|| format!("cannot listen on {listen}"))?;
    let mut stdout = io::stdout().lock();
    writeln!(stdout, "hakaru serve: listening on http://{}", server.addr())?;
    stdout.flush()?;
    drop(stdout);
    signals.block_on(async {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
    });
    server.stop();
    Ok(())
}

async fn accept_loop(listener: tokio::net::TcpListener, handles: Vec<Handle>, shared: Arc<Shared>) {
    let mut next = 0;
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(_) => {
                // Out of descriptors or similar: back off instead of spinning, the condition is usually transient.
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let slot = next;
        next = (next + 1) % handles.len();
        shared.counters[slot].connections.fetch_add(1, Relaxed);
        let shared = Arc::clone(&shared);
        if slot == 0 {
            tokio::spawn(conn::serve(stream, shared, 0));
            continue;
        }
        // A socket belongs to the reactor that registered it, so move it over as a plain std socket.
        let Ok(stream) = stream.into_std() else {
            continue;
        };
        handles[slot].spawn(async move {
            if let Ok(stream) = tokio::net::TcpStream::from_std(stream) {
                conn::serve(stream, shared, slot).await;
            }
        });
    }
}

/// State every connection shares. Counters are per thread so the hot path never bounces a cache line.
struct Shared {
    workers: Option<Semaphore>,
    /// Nanoseconds after `started` until which no request is answered (`?freeze=`).
    frozen_until: AtomicU64,
    miss_cost: Duration,
    cache: cache::Cache,
    counters: Box<[Counters]>,
    started: Instant,
    started_unix: f64,
}

#[derive(Default)]
#[repr(align(128))]
struct Counters {
    requests: AtomicU64,
    queries: AtomicU64,
    hits: AtomicU64,
    misses: AtomicU64,
    connections: AtomicU64,
}

impl Shared {
    /// Freezes every answer until `d` from now (a longer freeze already under way is kept).
    fn freeze_for(&self, d: Duration) {
        let until = (self.started.elapsed() + d).as_nanos() as u64;
        self.frozen_until.fetch_max(until, Relaxed);
    }

    /// How long answers are still frozen.
    fn frozen_for(&self) -> Duration {
        let until = Duration::from_nanos(self.frozen_until.load(Relaxed));
        until.saturating_sub(self.started.elapsed())
    }

    fn new(opts: &ServeOptions, threads: usize) -> Shared {
        Shared {
            workers: opts.workers.map(|n| Semaphore::new(n.clamp(1, Semaphore::MAX_PERMITS))),
            miss_cost: opts.miss_cost,
            cache: cache::Cache::new(opts.cache_size),
            counters: (0..threads).map(|_| Counters::default()).collect(),
            started: Instant::now(),
            frozen_until: AtomicU64::new(0),
            started_unix: SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64()),
        }
    }

    /// Groonga's `status` shape, so tools that watch Groonga can watch this too.
    fn status_json(&self) -> String {
        let sum = |f: fn(&Counters) -> &AtomicU64| self.counters.iter().map(|c| f(c).load(Relaxed)).sum::<u64>();
        let (hits, misses) = (sum(|c| &c.hits), sum(|c| &c.misses));
        status_json(
            self.started_unix,
            self.started.elapsed().as_secs_f64(),
            [sum(|c| &c.queries), hits, misses, sum(|c| &c.connections), sum(|c| &c.requests)],
        )
    }
}

fn status_json(start: f64, elapsed: f64, [queries, hits, misses, connections, requests]: [u64; 5]) -> String {
    let rate = if hits + misses == 0 { 0.0 } else { hits as f64 / (hits + misses) as f64 };
    // Written by hand to keep Groonga's key order; serde_json's map would sort the keys.
    format!(
        "[[0,{start:?},{elapsed:?}],{{\"n_queries\":{queries},\"cache_hit_rate\":{rate:?},\"cache_hits\":{hits},\
         \"cache_misses\":{misses},\"n_connections\":{connections},\"n_requests\":{requests}}}]"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_json_has_groongas_shape_and_a_zero_rate_when_idle() {
        let v: serde_json::Value = serde_json::from_str(&status_json(1.5, 0.25, [0; 5])).unwrap();
        assert_eq!(v[0], serde_json::json!([0, 1.5, 0.25]));
        assert_eq!(v[1]["cache_hit_rate"], 0.0);
        let text = status_json(1.0, 2.0, [4, 3, 1, 2, 9]);
        assert!(text.find("n_queries").unwrap() < text.find("n_requests").unwrap());
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v[1]["cache_hit_rate"], 0.75);
        assert_eq!(v[1]["n_connections"], 2);
        assert_eq!(v[1]["n_requests"], 9);
    }
}
