//! One connection: reads requests (pipelined or split across reads), answers them in order, injects faults.

use std::cell::Cell;
use std::io;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::{sleep, timeout};

use super::Shared;
use super::request::{Fault, Head, Plan, Route, parse_head};
use super::response::{self, Conn};
use super::stream::StreamPlan;

/// Bodies up to this size go out with their head in one write; larger ones stream from the static pattern.
const INLINE_BODY: u64 = 16 * 1024;
/// How long a closing connection waits for the client's FIN, so unread input does not turn our close into a RST.
const LINGER: Duration = Duration::from_secs(1);
const SLOW_BODY_SPREAD: Duration = Duration::from_secs(1);
const SLOW_BODY_PIECES: u64 = 10;

/// What the connection does once a request has been handled.
enum After {
    KeepAlive,
    Close,
    Reset,
    Stall,
}

pub async fn serve(stream: TcpStream, shared: Arc<Shared>, slot: usize) {
    let _ = stream.set_nodelay(true);
    let mut conn = Connection {
        stream,
        shared: &shared,
        slot,
        input: Vec::with_capacity(4096),
        pos: 0,
        out: Vec::with_capacity(4096),
        key: String::new(),
    };
    // An I/O error means the client is gone; there is no one left to tell.
    let _ = conn.run().await;
}

struct Connection<'a> {
    stream: TcpStream,
    shared: &'a Shared,
    /// This runtime thread's counters.
    slot: usize,
    input: Vec<u8>,
    /// Start of the unparsed input.
    pos: usize,
    /// Answers not yet written: pipelined answers leave in one write.
    out: Vec<u8>,
    key: String,
}

impl Connection<'_> {
    async fn run(&mut self) -> io::Result<()> {
        loop {
            let (mut plan, mut body) = loop {
                match parse_head(&self.input[self.pos..], &mut self.key) {
                    Head::Complete { len, plan, body } => {
                        self.pos += len;
                        break (plan, body);
                    }
                    Head::Partial => {
                        if !self.fill().await? {
                            return Ok(());
                        }
                    }
                    Head::Invalid(status) => return self.refuse(status).await,
                }
            };
            // An LLM request refused by its head (a body too large, or of unknown length) is answered and the
            // connection closed, its body unread: reading it would be what the refusal avoids.
            if matches!(plan.route, Route::Llm(_)) && plan.error.is_some() && !body.done() {
                plan.keep_alive = false;
                self.answer(plan).await?;
                return self.close().await;
            }
            if plan.expect_continue && !body.done() {
                self.out.extend_from_slice(response::CONTINUE);
            }
            // An LLM request's body is kept (at most openai::MOST_BODY, checked with its head) to shape its answer.
            let keep_body = matches!(plan.route, Route::Llm(_)) && plan.error.is_none();
            let mut kept = Vec::new();
            while !body.done() {
                match body.skip(&self.input[self.pos..]) {
                    Ok(n) => {
                        if keep_body {
                            kept.extend_from_slice(&self.input[self.pos..self.pos + n]);
                        }
                        self.pos += n;
                    }
                    Err(()) => return self.refuse(400).await,
                }
                if !body.done() && !self.fill().await? {
                    return Ok(());
                }
            }
            if let (true, Some(stream)) = (keep_body, plan.stream.as_deref_mut()) {
                plan.error = super::openai::shape(stream, &kept).err();
            }
            match self.answer(plan).await? {
                After::KeepAlive => {}
                After::Close => return self.close().await,
                After::Reset => {
                    self.flush().await?;
                    // SO_LINGER 0 makes the close below send a RST instead of a FIN.
                    self.stream.set_zero_linger()?;
                    return Ok(());
                }
                After::Stall => {
                    self.flush().await?;
                    return self.discard_until_eof().await;
                }
            }
        }
    }

    async fn answer(&mut self, plan: Plan) -> io::Result<After> {
        let shared = self.shared;
        let counters = &shared.counters[self.slot];
        let conn = Conn::new(plan.keep_alive, plan.http10);
        let after = if plan.keep_alive { After::KeepAlive } else { After::Close };
        if plan.route == Route::Status {
            let json = shared.status_json();
            response::write_text(&mut self.out, 200, "application/json", &json, plan.head_only, conn);
            return Ok(after);
        }
        counters.requests.fetch_add(1, Relaxed);
        if let Some(error) = &plan.error {
            match plan.route {
                Route::Llm(_) => {
                    let body = super::openai::error_json(error);
                    response::write_text(&mut self.out, 400, "application/json", &body, plan.head_only, conn);
                }
                _ => {
                    let body = format!("{error}\n");
                    response::write_text(&mut self.out, 400, "text/plain", &body, plan.head_only, conn);
                }
            }
            return Ok(after);
        }
        match plan.fault {
            Some(Fault::Reset) => return Ok(After::Reset),
            Some(Fault::Close) => return Ok(After::Close),
            Some(Fault::Stall) => return Ok(After::Stall),
            Some(Fault::Garbage) => {
                self.out.extend_from_slice(response::GARBAGE);
                return Ok(After::Close);
            }
            Some(Fault::SlowBody) | None => {}
        }
        if let Some(d) = plan.freeze {
            shared.freeze_for(d);
        }
        // A server-wide freeze holds every answer, as a stop-the-world pause in a real server would.
        self.wait(shared.frozen_for()).await?;
        // Faults above answer nothing, so they hold no worker: a stalled request must not block the others.
        let _permit = match &shared.workers {
            Some(s) => s.acquire().await.ok(),
            None => None,
        };
        if let Some(s) = &plan.stream {
            return self.stream(s, conn).await;
        }
        let slow = plan.fault == Some(Fault::SlowBody);
        let delay = if slow { Duration::ZERO } else { plan.delay.unwrap_or_default() };
        self.wait(delay + random_below(plan.jitter)).await?;
        let mut x_cache = None;
        if plan.route == Route::Cache {
            counters.queries.fetch_add(1, Relaxed);
            let hit = shared.cache.lookup(&self.key);
            if hit {
                counters.hits.fetch_add(1, Relaxed);
            } else {
                counters.misses.fetch_add(1, Relaxed);
                self.wait(shared.miss_cost).await?;
                shared.cache.insert(&self.key);
            }
            x_cache = Some(hit);
        }
        if x_cache.is_none() && plan.size.is_none() && plan.status == 200 && !plan.head_only && !slow {
            self.out.extend_from_slice(response::default_response(conn));
            return Ok(after);
        }
        let len = match response::allows_body(plan.status) {
            true => plan.size.unwrap_or(response::DEFAULT_BODY.len() as u64),
            false => 0,
        };
        response::write_head(&mut self.out, plan.status, "text/plain", len, x_cache, conn);
        if plan.head_only || len == 0 {
            return Ok(after);
        }
        if slow {
            self.flush().await?;
            let spread = plan.delay.unwrap_or(SLOW_BODY_SPREAD);
            let pieces = len.min(SLOW_BODY_PIECES);
            for i in 0..pieces {
                sleep(spread / pieces as u32).await;
                let (from, to) = (len * i / pieces, len * (i + 1) / pieces);
                self.write_body(from, to - from).await?;
            }
        } else if len <= INLINE_BODY {
            response::append_body(&mut self.out, len);
        } else {
            self.flush().await?;
            self.write_body(0, len).await?;
        }
        Ok(after)
    }

    /// A streamed answer (`?events=N`): the head at once, each event at its instant from the request, the last
    /// with the body's end in one write (a client that ends its answer at `[DONE]` finds the body's end with it).
    async fn stream(&mut self, s: &StreamPlan, conn: Conn) -> io::Result<After> {
        let start = Instant::now();
        let keep_alive = conn.keep_alive();
        if s.whole {
            // A whole answer leaves when its last token would have: the same timing, read as one.
            let last = s.first + s.gap * s.events.saturating_sub(1).min(u32::MAX as u64) as u32;
            self.wait(last).await?;
            let body = super::openai::whole_answer(s);
            response::write_text(&mut self.out, 200, "application/json", &body, false, conn);
            return Ok(if keep_alive { After::KeepAlive } else { After::Close });
        }
        s.head(&mut self.out, keep_alive);
        s.opening(&mut self.out);
        self.flush().await?;
        for i in 0..s.events {
            if s.cut == Some(i) {
                return Ok(After::Close);
            }
            let at = start + s.first + s.gap * i.min(u32::MAX as u64) as u32;
            crate::base::timer::precise_sleep(at.saturating_duration_since(Instant::now())).await;
            s.event(&mut self.out, i);
            if i + 1 == s.events {
                s.end(&mut self.out);
            }
            self.flush().await?;
        }
        if s.events == 0 {
            s.end(&mut self.out);
        }
        if let Some(tail) = s.tail {
            self.flush().await?;
            crate::base::timer::precise_sleep(tail).await;
            s.last_chunk(&mut self.out);
            self.flush().await?;
        }
        Ok(if keep_alive && !s.close_delimited && s.cut.is_none() { After::KeepAlive } else { After::Close })
    }

    /// Sleeps, but first sends the answers already made: they should not wait for this one.
    async fn wait(&mut self, d: Duration) -> io::Result<()> {
        if !d.is_zero() {
            self.flush().await?;
            // A calibration target must wait what it was asked: tokio's sleep would add up to ~1.5 ms.
            crate::base::timer::precise_sleep(d).await;
        }
        Ok(())
    }

    async fn write_body(&mut self, mut offset: u64, len: u64) -> io::Result<()> {
        let end = offset + len;
        while offset < end {
            let slice = response::body_slice(offset, end - offset);
            self.stream.write_all(slice).await?;
            offset += slice.len() as u64;
        }
        Ok(())
    }

    async fn flush(&mut self) -> io::Result<()> {
        if !self.out.is_empty() {
            self.stream.write_all(&self.out).await?;
            self.out.clear();
        }
        Ok(())
    }

    /// Reads more input, after sending what is pending since the client may wait for it. False at EOF.
    async fn fill(&mut self) -> io::Result<bool> {
        self.flush().await?;
        self.input.drain(..self.pos);
        self.pos = 0;
        if self.input.capacity() - self.input.len() < 1024 {
            self.input.reserve(4096);
        }
        Ok(self.stream.read_buf(&mut self.input).await? > 0)
    }

    /// Answers a request that cannot be framed, then closes: nothing after it can be trusted.
    async fn refuse(&mut self, status: u16) -> io::Result<()> {
        let body = format!("{}\n", response::reason(status));
        response::write_text(&mut self.out, status, "text/plain", &body, false, Conn::Close);
        self.close().await
    }

    /// Closes cleanly: FIN first, then reads until the client closes too (bounded), as closing with unread input sends a RST.
    async fn close(&mut self) -> io::Result<()> {
        self.flush().await?;
        self.stream.shutdown().await?;
        let _ = timeout(LINGER, self.discard_until_eof()).await;
        Ok(())
    }

    async fn discard_until_eof(&mut self) -> io::Result<()> {
        loop {
            self.input.clear();
            if self.stream.read_buf(&mut self.input).await? == 0 {
                return Ok(());
            }
        }
    }
}

thread_local! {
    static RNG: Cell<u64> = Cell::new(seed());
}

fn seed() -> u64 {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    // Threads seeded in the same nanosecond must still differ: mix in an address unique to this thread.
    let local = 0u8;
    (nanos ^ (&local as *const u8 as u64).rotate_left(32)) | 1
}

/// Uniform in 0..=max, from a per-thread xorshift64*: jitter needs speed, not quality.
fn random_below(max: Duration) -> Duration {
    let bound = max.as_nanos().min(u64::MAX as u128) as u64;
    if bound == 0 {
        return Duration::ZERO;
    }
    let r = RNG.with(|s| {
        let mut x = s.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        s.set(x);
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    });
    Duration::from_nanos(bound.checked_add(1).map_or(r, |m| r % m))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_stays_within_its_bound_and_varies() {
        let max = Duration::from_millis(2);
        let draws: Vec<_> = (0..1000).map(|_| random_below(max)).collect();
        assert!(draws.iter().all(|d| *d <= max));
        assert!(draws.iter().any(|d| *d != draws[0]));
        assert_eq!(random_below(Duration::ZERO), Duration::ZERO);
        assert!(random_below(Duration::MAX) <= Duration::MAX);
    }
}
