//! What a load step measures: latency histograms, exact status and error counts, bytes, connections, windows.
//!
//! Each engine thread owns one [`StepMetrics`] (no locks on the hot path); they are merged when the step ends.

pub mod errors;
pub mod events;
pub mod histogram;
pub mod phases;
pub mod quic;
pub mod stats;
pub mod status;
pub mod timeline;
mod window;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

pub use errors::{ErrorKind, ErrorTally};
pub use events::EventMetrics;
pub use histogram::LatencyHistogram;
pub use phases::Phases;
pub use quic::QuicCounts;
pub use status::StatusSet;
pub use window::*;

/// Why hakaru (not the server) closed a connection: `connections.closed_by_hakaru_why`'s keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HakaruClose {
    /// It had carried `--max-requests-per-connection` requests.
    MaxRequests,
    /// An answer that ended at its end event (`--events`) went on past it: another chunk, more than 64 KiB, or a
    /// body that ends only when the server closes; or its body's end did not come within the request's timeout.
    PastEnd,
    /// A request on it timed out: what the server sends later would be read as the next request's answer.
    Timeout,
    /// Bytes came that no request asked for.
    Unsolicited,
}

impl HakaruClose {
    pub const ALL: [HakaruClose; 4] =
        [HakaruClose::MaxRequests, HakaruClose::PastEnd, HakaruClose::Timeout, HakaruClose::Unsolicited];

    pub fn key(self) -> &'static str {
        match self {
            HakaruClose::MaxRequests => "max_requests_per_connection",
            HakaruClose::PastEnd => "answer_past_end",
            HakaruClose::Timeout => "timeout",
            HakaruClose::Unsolicited => "unsolicited",
        }
    }

    /// The reason in words, for the text (`key` when unknown: a newer document read by an older hakaru).
    pub fn words(key: &str) -> &str {
        match key {
            "max_requests_per_connection" => "after --max-requests-per-connection",
            "answer_past_end" => "an answer went on past its end event",
            "timeout" => "a request timed out",
            "unsolicited" => "bytes no request asked for",
            other => other,
        }
    }
}

/// The figures of one request of the plan, or of one pattern group: a coarse histogram of its successes and
/// its counts (bounded memory: a histogram per row, never samples).
#[derive(Clone, Debug)]
pub struct Breakdown {
    pub latency: LatencyHistogram,
    pub ok: u64,
    pub failed: u64,
    /// Key-value answers: values (status 200) and misses (204) among the successes.
    pub hits: u64,
    pub misses: u64,
    /// Successes a workload expected from its random state (an add on a key that exists), counted apart.
    pub expected: u64,
}

impl Breakdown {
    pub fn new() -> Self {
        Self { latency: LatencyHistogram::coarse(), ok: 0, failed: 0, hits: 0, misses: 0, expected: 0 }
    }

    fn record(&mut self, ok: bool, us: u64, status: u16) {
        if ok {
            self.ok += 1;
            self.latency.record(us);
            match status {
                200 => self.hits += 1,
                204 => self.misses += 1,
                _ => {}
            }
        } else {
            self.failed += 1;
        }
    }

    fn merge(&mut self, other: &Breakdown) {
        self.latency.merge(&other.latency);
        self.ok += other.ok;
        self.failed += other.failed;
        self.hits += other.hits;
        self.misses += other.misses;
        self.expected += other.expected;
    }
}

impl Default for Breakdown {
    fn default() -> Self {
        Self::new()
    }
}

/// One of the slowest requests of a step: which request of the plan, how it ended, how long it took.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slow {
    /// Microseconds from the intended send time.
    pub latency_us: u64,
    /// Index into the plan's requests.
    pub spec: usize,
    /// The answer's status; 0 when it ended with an error.
    pub status: u16,
    /// The error's kind, when it ended with one.
    pub error: Option<ErrorKind>,
    /// A key-value request's command and key (`GET`, `hakaru:000123`): what an op was is in its bytes alone, so the
    /// engine reads them when it enters this list; none for HTTP, whose `spec` names it.
    pub key: Option<crate::protocol::CommandKey>,
}

/// How many of the slowest requests a step keeps.
pub const SLOWEST: usize = 10;

/// Everything one thread measures during one step; merged across threads at the end.
#[derive(Clone, Debug)]
pub struct StepMetrics {
    /// Latency of successes (answers whose status is in `--ok-status`) from the intended send time to the end of
    /// the response (corrected for coordinated omission).
    pub latency: LatencyHistogram,
    /// Latency of failed requests (other statuses, and errors), from the intended send time to the failure.
    pub failed_latency: LatencyHistogram,
    /// Answers whose status is not in `--ok-status`.
    pub failed_status: u64,
    /// Those answers by status (a map: failures are few, and a status counted as a success here is not a
    /// failure, whatever `--ok-status` says: a workload may expect it).
    pub failed_by_status: BTreeMap<u16, u64>,
    /// Latency from the actual send (service time); recorded only when `track_service` (open loops report it).
    pub service: LatencyHistogram,
    /// Whether to record `service`: a closed loop never reports it, so its hot path skips the second histogram.
    pub track_service: bool,
    /// Whether the window's `service` is recorded too: only the HDR log reads it, so without `--hdr-log` an open
    /// loop's hot path skips that third histogram.
    pub window_service: bool,
    /// Requests that ended, with a response or with an error.
    pub requests: u64,
    /// Requests sent (or about to be); those not ended when the step stopped are `sent - requests`.
    pub sent: u64,
    /// Responses by status code; index 0 holds timeouts, as drnbench records them.
    pub status: Vec<u64>,
    pub errors: ErrorTally,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// TCP connections established.
    pub connects: u64,
    /// Connections the server closed between requests, reopened to go on.
    pub reconnects: u64,
    /// Connections hakaru closed (not the server), in all and by why ([`HakaruClose`]).
    pub closed_by_hakaru: u64,
    pub closed_by_hakaru_why: [u64; HakaruClose::ALL.len()],
    pub open_now: u64,
    /// Most connections open at once.
    pub max_open: u64,
    /// HTTP/2 connections a GOAWAY is ending, still finishing their streams beside the ones that replace them:
    /// not in `open_now`, so `max_open` keeps to `-c` while hand-overs overlap.
    pub handing_over_now: u64,
    pub max_handing_over: u64,
    /// Requests sent more than 1 ms after their intended time (open loop only).
    pub late: u64,
    /// The largest delay between intended and actual send, in microseconds.
    pub max_lag_us: u64,
    /// Every request's delay between its intended and its actual send, microseconds (an open loop's, a replay's).
    pub lag: LatencyHistogram,
    /// Open loop: requests sent more than 1 ms late because every connection `-c` allows was busy.
    pub starved: u64,
    /// Open loop: times the pacer's timer woke the thread (set once, when the thread's step ends).
    pub pacer_wakeups: u64,
    /// A fixed rate: how long the connections' setup took before the step began (every thread's first connection
    /// made; set by each thread as its step begins, the same for all of them).
    pub schedule_began_after: Duration,
    /// A timed step's graceful stop: how long the thread waited after the end for its answers in flight (None: it
    /// waited for none, or the step had no graceful stop).
    pub graceful_waited: Option<Duration>,
    /// The window under way; the engine's ticker swaps it out every window.
    pub window: WindowAccum,
    /// Per request of the plan (when it has 2 to 20) and per pattern group (with a pattern file); empty when
    /// there is nothing to break down, so a one-URL run pays nothing.
    pub by_request: Vec<Breakdown>,
    pub by_group: Vec<Breakdown>,
    /// The slowest requests, slowest first, at most [`SLOWEST`].
    pub slowest: Vec<Slow>,
    /// The text of the first failed answer (a Redis or memcached error reply, an HTTP status), secrets scrubbed:
    /// "500" says that the server refused, this says why.
    pub first_error_reply: Option<String>,
    /// The protocols' own counters (all zero but the run's protocol's).
    pub wire: WireCounts,
    /// HTTP's phases: connect, TLS handshake, time to first byte, receiving (empty for other protocols).
    pub phases: Phases,
    /// `--events`: what streamed answers held (empty otherwise).
    pub events: EventMetrics,
}

/// What each protocol counts beside requests, one field a protocol: the step's section of that protocol is made of
/// its own (`run/step.rs`'s match on the plan's `Wire`).
#[derive(Clone, Debug, Default)]
pub struct WireCounts {
    /// HTTP/2's own figures (gRPC's messages among them).
    pub h2: H2Counts,
    /// HTTP/3: QUIC's datagrams, sends and losses.
    pub quic: QuicCounts,
    /// WebSocket: answers no message in flight took (`--in-flight`, `--match-field`).
    pub ws_unmatched: WsUnmatched,
    /// `--stamp-field`: pushed messages' fan-out delays (arrival less the send time they carry).
    pub ws_fan_out: WsFanOut,
}

impl WireCounts {
    pub fn merge(&mut self, other: &WireCounts) {
        self.h2.merge(&other.h2);
        self.quic.merge(&other.quic);
        self.ws_unmatched.no_id += other.ws_unmatched.no_id;
        self.ws_unmatched.not_in_flight += other.ws_unmatched.not_in_flight;
        self.ws_fan_out.delay.merge(&other.ws_fan_out.delay);
        self.ws_fan_out.missing += other.ws_fan_out.missing;
        self.ws_fan_out.ahead += other.ws_fan_out.ahead;
    }
}

/// WebSocket answers that answered no message, by why.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WsUnmatched {
    /// `--match-field`: the answer held no id at the pointer (not JSON, or nothing there).
    pub no_id: u64,
    /// An id no message in flight on the connection had (one timed out, or never sent), or, answers taken in
    /// order, a message while none was in flight.
    pub not_in_flight: u64,
}

/// `--stamp-field`: each pushed message's delay from the send time it carries to its arrival.
#[derive(Clone, Debug, Default)]
pub struct WsFanOut {
    pub delay: LatencyHistogram,
    /// Messages without a send time at the pointer (not JSON, nothing there, or not a number).
    pub missing: u64,
    /// Messages whose send time was after their arrival (the sender's clock ahead of this machine's): counted,
    /// not recorded.
    pub ahead: u64,
}

/// What an HTTP/2 step counts besides requests: header compression, GOAWAYs, retried streams, the stream limit.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct H2Counts {
    /// Bytes of header blocks (HEADERS and CONTINUATION payloads) written and read.
    pub header_bytes_out: u64,
    pub header_bytes_in: u64,
    /// What the header blocks read decode to: names and values, as h2load counts them.
    pub header_bytes_in_decoded: u64,
    /// What the header blocks written would be without HPACK (names and values).
    pub header_bytes_out_decoded: u64,
    /// GOAWAY frames received.
    pub goaways: u64,
    /// Streams the server left unprocessed (above a GOAWAY's last stream, or REFUSED_STREAM) sent again on
    /// another connection.
    pub retried: u64,
    /// The fewest concurrent streams a connection allowed: `--streams`, or the server's lower
    /// SETTINGS_MAX_CONCURRENT_STREAMS; 0 when no connection got the server's SETTINGS.
    pub streams_used: u64,
    /// gRPC: whole messages read in the answers of the calls that ended.
    pub grpc_messages: u64,
}

impl H2Counts {
    pub fn merge(&mut self, o: &H2Counts) {
        self.header_bytes_out += o.header_bytes_out;
        self.header_bytes_in += o.header_bytes_in;
        self.header_bytes_in_decoded += o.header_bytes_in_decoded;
        self.header_bytes_out_decoded += o.header_bytes_out_decoded;
        self.goaways += o.goaways;
        self.retried += o.retried;
        self.grpc_messages += o.grpc_messages;
        self.streams_used = match (self.streams_used, o.streams_used) {
            (0, x) | (x, 0) => x,
            (a, b) => a.min(b),
        };
    }

    /// A connection's stream limit, once its SETTINGS arrived.
    pub fn saw_limit(&mut self, limit: u64) {
        self.streams_used = if self.streams_used == 0 { limit } else { self.streams_used.min(limit) };
    }
}

/// Status codes above this are counted as this (no real server sends them).
const MAX_STATUS: usize = 999;

impl StepMetrics {
    pub fn new() -> Self {
        Self {
            latency: LatencyHistogram::new(),
            failed_latency: LatencyHistogram::new(),
            failed_status: 0,
            failed_by_status: BTreeMap::new(),
            service: LatencyHistogram::new(),
            track_service: true,
            window_service: true,
            requests: 0,
            sent: 0,
            status: vec![0; MAX_STATUS + 1],
            errors: ErrorTally::default(),
            bytes_in: 0,
            bytes_out: 0,
            connects: 0,
            reconnects: 0,
            closed_by_hakaru: 0,
            closed_by_hakaru_why: [0; HakaruClose::ALL.len()],
            open_now: 0,
            handing_over_now: 0,
            max_handing_over: 0,
            max_open: 0,
            late: 0,
            max_lag_us: 0,
            lag: LatencyHistogram::new(),
            starved: 0,
            pacer_wakeups: 0,
            schedule_began_after: Duration::ZERO,
            graceful_waited: None,
            first_error_reply: None,
            wire: WireCounts::default(),
            phases: Phases::new(),
            events: EventMetrics::default(),
            window: WindowAccum::new(false),
            by_request: Vec::new(),
            by_group: Vec::new(),
            slowest: Vec::new(),
        }
    }

    /// Records a complete response; `ok` when its status is a success. A failed answer goes to the failures'
    /// histogram, so the headline percentiles are those of successes.
    pub fn record_response(&mut self, status: u16, ok: bool, intended: Instant, sent: Instant, end: Instant) {
        let corrected = micros(end.saturating_duration_since(intended));
        self.requests += 1;
        self.status[(status as usize).min(MAX_STATUS)] += 1;
        self.window.requests += 1;
        self.window.count_status(status, 1);
        if ok {
            self.latency.record(corrected);
            if self.track_service {
                self.service.record(micros(end.saturating_duration_since(sent)));
            }
            self.window.latency.record(corrected);
            if self.window_service {
                self.window.service.record(micros(end.saturating_duration_since(sent)));
            }
        } else {
            self.failed_latency.record(corrected);
            self.failed_status += 1;
            *self.failed_by_status.entry(status).or_default() += 1;
            self.window.errors += 1;
            *self.window.failed_statuses.entry(status).or_default() += 1;
        }
    }

    /// Records an HTTP answer's phases (see [`Phases::record_answer`]) and its time to first byte in the window.
    pub fn record_phases(
        &mut self,
        intended: Instant,
        sent: Instant,
        first: Option<Instant>,
        end: Instant,
        open: bool,
    ) {
        let waiting = self.phases.record_answer(intended, sent, first, end, open);
        self.window.waiting.record(waiting);
    }

    /// Records a streamed answer's figures (see [`EventMetrics::record`]), and in the window its time to first
    /// event and its tokens.
    pub fn record_events(
        &mut self,
        sent: Instant,
        end: Instant,
        f: &crate::protocol::events::StreamFigures,
        tokens: bool,
        gaps: impl Iterator<Item = (u64, u64)>,
        goodput: Option<&crate::protocol::events::Goodput>,
    ) {
        if let Some(first) = self.events.record(sent, end, f, tokens, gaps, goodput) {
            self.window.first_event.record(first);
        }
        if tokens {
            let tokens = self.window.tokens.get_or_insert(0);
            *tokens = tokens.saturating_add(f.tokens());
        }
    }

    /// Records a request that ended in an error; a timeout is also counted as status 0.
    pub fn record_error(&mut self, kind: ErrorKind, sample: impl FnOnce() -> String) {
        self.requests += 1;
        self.errors.add(kind, sample);
        if kind == ErrorKind::Timeout {
            self.status[0] += 1;
        }
        self.window.requests += 1;
        self.window.errors += 1;
        self.window.error_kinds[kind.index()] += 1;
    }

    /// Records an error with the time it took from the intended send time, among the failures' latencies.
    pub fn record_failure(
        &mut self,
        kind: ErrorKind,
        sample: impl FnOnce() -> String,
        intended: Instant,
        end: Instant,
    ) {
        self.failed_latency.record(micros(end.saturating_duration_since(intended)));
        self.record_error(kind, sample);
    }

    /// Adds one ended request to the breakdowns and the slowest list: `spec` is its index in the plan, `group`
    /// its pattern group; `status` 0 with `error` for a request without an answer. Returns where it entered the
    /// slowest list, if it did, so the caller names a key-value op there ([`Slow::key`]) and no other pays for it.
    pub fn record_detail(
        &mut self,
        spec: usize,
        group: usize,
        ok: bool,
        latency_us: u64,
        status: u16,
        error: Option<ErrorKind>,
    ) -> Option<usize> {
        if let Some(b) = self.by_request.get_mut(spec) {
            b.record(ok, latency_us, status);
        }
        if let Some(b) = self.by_group.get_mut(group) {
            b.record(ok, latency_us, status);
        }
        // Most requests are not among the slowest: one comparison with the tenth decides.
        if self.slowest.len() < SLOWEST || self.slowest.last().is_some_and(|s| latency_us > s.latency_us) {
            let slow = Slow { latency_us, spec, status, error, key: None };
            let at = self.slowest.partition_point(|s| s.latency_us >= latency_us);
            self.slowest.insert(at, slow);
            self.slowest.truncate(SLOWEST);
            return Some(at);
        }
        None
    }

    /// Counts a success the workload expected from its random state, in its breakdown rows.
    pub fn record_expected(&mut self, spec: usize, group: usize) {
        if let Some(b) = self.by_request.get_mut(spec) {
            b.expected += 1;
        }
        if let Some(b) = self.by_group.get_mut(group) {
            b.expected += 1;
        }
    }

    /// Requests that failed: answers with a status outside `--ok-status`, and errors.
    pub fn failed(&self) -> u64 {
        self.failed_status + self.errors.total()
    }

    /// Records how late a request left compared with its intended send time; `open`: an open loop's request, whose
    /// lag the schedule section reports as a histogram (a closed loop's is never shown: not kept).
    pub fn record_lag(&mut self, lag: Duration, open: bool) {
        let us = micros(lag);
        if us > 1000 {
            self.late += 1;
            self.window.late += 1;
        }
        self.max_lag_us = self.max_lag_us.max(us);
        if open {
            self.lag.record(us);
        }
    }

    pub fn connection_opened(&mut self) {
        self.connects += 1;
        self.open_now += 1;
        self.max_open = self.max_open.max(self.open_now);
    }

    pub fn connection_closed(&mut self) {
        self.open_now = self.open_now.saturating_sub(1);
    }

    /// hakaru gave up a connection, for `why` (counted; the close itself is [`connection_closed`]'s).
    pub fn closed_by_hakaru(&mut self, why: HakaruClose) {
        self.closed_by_hakaru += 1;
        self.closed_by_hakaru_why[why as usize] += 1;
    }

    /// The reasons hakaru closed connections, with their counts (none when it closed none).
    pub fn closed_by_hakaru_reasons(&self) -> BTreeMap<String, u64> {
        HakaruClose::ALL
            .iter()
            .zip(self.closed_by_hakaru_why)
            .filter(|(_, n)| *n > 0)
            .map(|(why, n)| (why.key().to_string(), n))
            .collect()
    }

    /// An HTTP/2 connection got GOAWAY: from now on it is handing over (counted apart) until it closes.
    pub fn connection_handing_over(&mut self) {
        self.open_now = self.open_now.saturating_sub(1);
        self.handing_over_now += 1;
        self.max_handing_over = self.max_handing_over.max(self.handing_over_now);
    }

    /// A connection that was handing over closed.
    pub fn handed_over(&mut self) {
        self.handing_over_now = self.handing_over_now.saturating_sub(1);
    }

    /// Adds another thread's figures. Maxima of open connections add up because threads run side by side.
    pub fn merge(&mut self, other: &StepMetrics) {
        self.latency.merge(&other.latency);
        self.failed_latency.merge(&other.failed_latency);
        self.failed_status += other.failed_status;
        for (s, n) in &other.failed_by_status {
            *self.failed_by_status.entry(*s).or_default() += n;
        }
        self.service.merge(&other.service);
        self.requests += other.requests;
        self.sent += other.sent;
        for (a, b) in self.status.iter_mut().zip(&other.status) {
            *a += b;
        }
        self.errors.merge(&other.errors);
        self.bytes_in += other.bytes_in;
        self.bytes_out += other.bytes_out;
        self.connects += other.connects;
        self.reconnects += other.reconnects;
        self.closed_by_hakaru += other.closed_by_hakaru;
        for (a, b) in self.closed_by_hakaru_why.iter_mut().zip(other.closed_by_hakaru_why) {
            *a += b;
        }
        self.open_now += other.open_now;
        self.max_open += other.max_open;
        self.max_handing_over += other.max_handing_over;
        self.late += other.late;
        self.max_lag_us = self.max_lag_us.max(other.max_lag_us);
        self.lag.merge(&other.lag);
        self.starved += other.starved;
        self.pacer_wakeups += other.pacer_wakeups;
        self.schedule_began_after = self.schedule_began_after.max(other.schedule_began_after);
        self.graceful_waited = self.graceful_waited.max(other.graceful_waited);
        self.wire.merge(&other.wire);
        self.phases.merge(&other.phases);
        self.events.merge(&other.events);
        if self.first_error_reply.is_none() {
            self.first_error_reply.clone_from(&other.first_error_reply);
        }
        self.window.merge(&other.window);
        if self.by_request.len() < other.by_request.len() {
            self.by_request.resize_with(other.by_request.len(), Breakdown::new);
        }
        for (a, b) in self.by_request.iter_mut().zip(&other.by_request) {
            a.merge(b);
        }
        if self.by_group.len() < other.by_group.len() {
            self.by_group.resize_with(other.by_group.len(), Breakdown::new);
        }
        for (a, b) in self.by_group.iter_mut().zip(&other.by_group) {
            a.merge(b);
        }
        for s in &other.slowest {
            let at = self.slowest.partition_point(|x| x.latency_us >= s.latency_us);
            self.slowest.insert(at, s.clone());
        }
        self.slowest.truncate(SLOWEST);
    }

    /// Status codes seen, with counts, in ascending order.
    pub fn status_counts(&self) -> BTreeMap<u16, u64> {
        self.status.iter().enumerate().filter(|(_, c)| **c > 0).map(|(s, c)| (s as u16, *c)).collect()
    }
}

impl Default for StepMetrics {
    fn default() -> Self {
        Self::new()
    }
}

fn micros(d: Duration) -> u64 {
    d.as_micros().min(u64::MAX as u128) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grpc_status_is_counted_under_its_own_name_and_other_faults_apart() {
        use crate::protocol::grpc::{Fault, STATUS_NAMES};
        for code in 1..=16u32 {
            let kind = ErrorKind::grpc(&Fault::Status(code, None));
            assert_eq!(kind.key(), format!("grpc_{}", STATUS_NAMES[code as usize].to_ascii_lowercase()));
        }
        assert_eq!(ErrorKind::grpc(&Fault::Status(17, None)), ErrorKind::GrpcOther);
        assert_eq!(ErrorKind::grpc(&Fault::NoStatus), ErrorKind::GrpcNoStatus);
        assert_eq!(ErrorKind::grpc(&Fault::HttpStatus(503)), ErrorKind::GrpcHttpStatus);
        assert_eq!(ErrorKind::grpc(&Fault::BadMessage(String::new())), ErrorKind::GrpcBadMessage);
        assert_eq!(
            ErrorKind::grpc(&Fault::TooLarge { len: 9, max: 8, inflated: false }),
            ErrorKind::GrpcMessageTooLarge
        );
    }

    #[test]
    fn all_lists_every_kind_in_enum_order_with_distinct_keys() {
        for (i, k) in ErrorKind::ALL.into_iter().enumerate() {
            assert_eq!(k.index(), i, "{k:?}");
            assert_eq!(ErrorKind::from_key(k.key()), Some(k));
        }
    }

    #[test]
    fn a_request_says_where_it_entered_the_slowest_list_and_only_then() {
        let mut m = StepMetrics::new();
        // Latencies 100, 99, ... 1: the first ten enter, each at the end; none after them does.
        let entered: Vec<_> = (1..=100).rev().map(|us| m.record_detail(0, 0, true, us, 200, None)).collect();
        assert_eq!(entered[..10], (0..10).map(Some).collect::<Vec<_>>());
        assert!(entered[10..].iter().all(Option::is_none));
        // A slower one enters first, and the tenth leaves.
        assert_eq!(m.record_detail(0, 0, false, 500, 0, Some(ErrorKind::Timeout)), Some(0));
        assert_eq!((m.slowest[0].latency_us, m.slowest[0].error), (500, Some(ErrorKind::Timeout)));
        assert_eq!(m.slowest.len(), SLOWEST);
        assert_eq!(m.slowest.last().map(|s| s.latency_us), Some(92));
        // A tie goes after those already there.
        assert_eq!(m.record_detail(0, 0, true, 95, 200, None), Some(7));
    }

    #[test]
    fn a_timeout_counts_as_an_error_and_as_status_zero() {
        let mut m = StepMetrics::new();
        m.record_error(ErrorKind::Timeout, || "no answer in 5s".into());
        m.record_error(ErrorKind::Timeout, || "second sample is not kept".into());
        assert_eq!(m.requests, 2);
        assert_eq!(m.status_counts().get(&0), Some(&2));
        let seen: Vec<_> = m.errors.seen().collect();
        assert_eq!(seen, vec![(ErrorKind::Timeout, 2, "no answer in 5s")]);
    }

    #[test]
    fn latency_is_measured_from_the_intended_time_and_service_time_from_the_send() {
        let mut m = StepMetrics::new();
        let intended = Instant::now();
        let sent = intended + Duration::from_millis(100);
        let end = sent + Duration::from_millis(10);
        m.record_response(200, true, intended, sent, end);
        assert!((m.latency.max() as i64 - 110_000).abs() < 200);
        assert!((m.service.max() as i64 - 10_000).abs() < 50);
    }

    #[test]
    fn merging_threads_adds_counts_and_keeps_the_first_sample() {
        let mut a = StepMetrics::new();
        let mut b = StepMetrics::new();
        let t = Instant::now();
        a.record_response(200, true, t, t, t + Duration::from_millis(1));
        b.record_response(503, false, t, t, t + Duration::from_millis(2));
        b.record_error(ErrorKind::Reset, || "reset by peer".into());
        a.connection_opened();
        b.connection_opened();
        a.merge(&b);
        assert_eq!(a.requests, 3);
        assert_eq!(a.status_counts(), BTreeMap::from([(200, 1), (503, 1)]));
        assert_eq!(a.errors.count(ErrorKind::Reset), 1);
        assert_eq!(a.max_open, 2);
        // The 503 is a failure: out of the successes' histogram, in the failures'.
        assert_eq!((a.latency.count(), a.failed_latency.count(), a.failed_status, a.failed()), (1, 1, 1, 2));
    }

    #[test]
    fn windows_complete_when_every_thread_reported() {
        let mut merger = WindowMerger::new(Duration::from_secs(1), 2, false, std::time::SystemTime::now());
        let mut w = WindowAccum::new(false);
        w.requests = 5;
        w.sent = 6;
        w.latency.record(1000);
        assert!(merger.add(0, &w).is_none());
        let done = merger.add(0, &w).unwrap();
        assert_eq!((done.summary.requests, done.summary.sent), (10, 12));
        merger.keep(done);
        assert!(merger.add(1, &w).is_none());
        // The second thread never reports window 1: it is handed over at the end, cut at the step's end.
        let mut last = None;
        let all = merger.finish(1.25, |w| last = Some(w.length));
        assert_eq!(all.len(), 2);
        assert_eq!(all[1].t, 1.0);
        assert_eq!(last, Some(Duration::from_millis(250)));
    }

    #[test]
    fn a_request_sent_late_counts_in_the_window_it_was_intended_in() {
        let mut merger = WindowMerger::new(Duration::from_secs(1), 1, false, std::time::SystemTime::now());
        let mut w0 = WindowAccum::new(false);
        w0.sent = 10;
        let first = merger.add(0, &w0).unwrap();
        merger.keep(first);
        let mut w1 = WindowAccum::new(false);
        w1.sent = 7;
        w1.sent_earlier.insert(0, 3);
        let second = merger.add(1, &w1).unwrap();
        merger.keep(second);
        let all = merger.finish(2.0, |_| {});
        assert_eq!((all[0].sent, all[1].sent), (13, 7));
    }

    #[test]
    fn a_window_counts_failures_by_kind_and_status() {
        let mut m = StepMetrics::new();
        let t = Instant::now();
        m.record_response(503, false, t, t, t);
        m.record_response(200, true, t, t, t + Duration::from_millis(3));
        m.record_error(ErrorKind::Timeout, || "late".into());
        let w = WindowSummary::from_accum(0.0, Duration::from_secs(1), &m.window);
        assert_eq!((w.requests, w.errors), (3, 2));
        assert_eq!(w.failures, BTreeMap::from([("status_503".into(), 1), ("timeout".into(), 1)]));
        assert!(w.p90_us >= 2900 && w.p90_us <= w.max_us, "{w:?}");
    }
}
