//! The step's sections of one protocol each: HTTP/2's (streams refused, resets, GOAWAYs), gRPC's (calls by status)
//! and WebSocket's (messages, upgrades, fan-out delay), with how agents' sections merge.

use super::*;

/// What an HTTP/2 step counts besides requests.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Http2Report {
    /// `--streams`: concurrent streams per connection asked for.
    pub streams_asked: usize,
    /// The fewest any connection allowed: `streams_asked`, or a server's lower SETTINGS_MAX_CONCURRENT_STREAMS
    /// (0 when no connection got the server's SETTINGS).
    pub streams_used: u64,
    /// GOAWAY frames received.
    pub goaways: u64,
    /// Streams the server left unprocessed (above a GOAWAY's last stream, REFUSED_STREAM), sent again on another
    /// connection.
    pub retried: u64,
    /// Header blocks (HPACK) written and read, in bytes.
    pub header_bytes_out: u64,
    pub header_bytes_in: u64,
    /// What the header blocks read decode to (names and values, as h2load counts them).
    pub header_bytes_in_decoded: u64,
    /// The share of the decoded response headers HPACK saved on the wire: 1 - in / decoded (h2load's "space
    /// savings"); 0 when nothing was read.
    pub header_savings: f64,
}

impl Http2Report {
    pub fn new(h2: &crate::metrics::H2Counts, streams_asked: usize) -> Http2Report {
        let decoded = h2.header_bytes_in_decoded;
        let savings = if decoded == 0 { 0.0 } else { 1.0 - h2.header_bytes_in as f64 / decoded as f64 };
        Http2Report {
            streams_asked,
            streams_used: h2.streams_used,
            goaways: h2.goaways,
            retried: h2.retried,
            header_bytes_out: h2.header_bytes_out,
            header_bytes_in: h2.header_bytes_in,
            header_bytes_in_decoded: decoded,
            header_savings: (savings * 10_000.0).round() / 10_000.0,
        }
    }

    /// The figures of several agents' parts of one step as one: counts added, the fewest streams any connection
    /// allowed, the header savings of the sums. None when no part has them.
    pub fn merged(parts: &[&Http2Report]) -> Option<Http2Report> {
        let first = parts.first()?;
        let mut h2 = crate::metrics::H2Counts::default();
        for p in parts {
            h2.merge(&crate::metrics::H2Counts {
                header_bytes_out: p.header_bytes_out,
                header_bytes_in: p.header_bytes_in,
                header_bytes_in_decoded: p.header_bytes_in_decoded,
                goaways: p.goaways,
                retried: p.retried,
                streams_used: p.streams_used,
                ..Default::default()
            });
        }
        Some(Http2Report::new(&h2, first.streams_asked))
    }
}

/// What a gRPC step counts besides calls: the messages of streaming calls (1 each way for a unary call).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GrpcReport {
    /// Messages each call sends: 1, or `--stream-messages` of a client-streaming or bidirectional method.
    pub messages_sent_per_call: u64,
    /// Whole messages read in the answers of the calls that ended (succeeded or failed).
    pub messages_received: u64,
    /// `messages_received` per call that ended.
    pub messages_received_per_call: f64,
    /// `messages_received` per second of the step.
    pub messages_received_per_s: f64,
}

/// WebSocket's figures with `--in-flight` or `--match-field`: the answers no message took, by why.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WsReport {
    /// `--in-flight`: messages awaiting their answers on one connection at once.
    pub in_flight: usize,
    /// `--match-field`: the JSON pointer answers were paired by; null when taken in order.
    pub match_field: Option<String>,
    /// Answers without an id at the pointer (not JSON, or nothing there).
    pub unmatched_no_id: u64,
    /// Answers whose id no message in flight had (late after a timeout, or never sent), or, taken in order, that
    /// came while none was in flight.
    pub unmatched_not_in_flight: u64,
    /// Listen mode: the messages each connection got a second (the step's answers a second over the connections
    /// open at once); absent in the other modes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages_per_connection_per_s: Option<f64>,
    /// `--stamp-field` (listen mode): the JSON pointer of the send time pushed messages carry; absent without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stamp_field: Option<String>,
    /// Pushed messages' fan-out delays, from the send time they carry to their arrival (microseconds); absent when
    /// no message carried one, or without `--stamp-field`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fan_out: Option<phases::Phase>,
    /// Messages without a send time at the pointer, and those whose send time was after their arrival (the
    /// sender's clock ahead of this one's): neither is in `fan_out`. Absent without `--stamp-field`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stamps_missing: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stamps_ahead: Option<u64>,
}

impl WsReport {
    /// A WebSocket step's report, when its settings ask for one (`--in-flight` sharing a connection,
    /// `--stamp-field`, listen mode): `ok` answers over `secs`.
    pub fn of(
        w: &crate::protocol::ws::Settings,
        m: &crate::metrics::StepMetrics,
        ok: u64,
        secs: f64,
    ) -> Option<WsReport> {
        let listening = w.mode == crate::protocol::ws::Mode::Listen;
        if !(w.shared() || w.stamp_field.is_some() || listening) {
            return None;
        }
        // Listening: the messages each connection got a second, over the connections open at once.
        let per_connection = listening.then(|| {
            let per_s = ok as f64 / secs.max(1e-9) / m.max_open.max(1) as f64;
            (per_s * 1000.0).round() / 1000.0
        });
        let report = WsReport {
            in_flight: w.in_flight,
            match_field: w.match_field.clone(),
            unmatched_no_id: m.wire.ws_unmatched.no_id,
            unmatched_not_in_flight: m.wire.ws_unmatched.not_in_flight,
            messages_per_connection_per_s: per_connection,
            ..Default::default()
        };
        Some(report.with_fan_out(w.stamp_field.as_deref(), &m.wire.ws_fan_out))
    }

    /// Several agents' parts of one step as one: the counts added.
    pub fn merged(parts: &[&WsReport]) -> Option<WsReport> {
        let first = parts.first()?;
        let stamped = first.stamp_field.is_some();
        let mut delays = crate::metrics::LatencyHistogram::new();
        for h in parts.iter().filter_map(|p| p.fan_out.as_ref()) {
            // A part's histogram that does not decode was refused when its document was read (`inputs`).
            if let Ok(h) = crate::metrics::LatencyHistogram::from_base64(&h.histogram.data) {
                delays.merge(&h);
            }
        }
        let sum = |f: fn(&WsReport) -> Option<u64>| stamped.then(|| parts.iter().filter_map(|p| f(p)).sum());
        Some(WsReport {
            unmatched_no_id: parts.iter().map(|p| p.unmatched_no_id).sum(),
            unmatched_not_in_flight: parts.iter().map(|p| p.unmatched_not_in_flight).sum(),
            fan_out: phases::Phase::of(&delays),
            stamps_missing: sum(|p| p.stamps_missing),
            stamps_ahead: sum(|p| p.stamps_ahead),
            ..(*first).clone()
        })
    }

    /// `--stamp-field`'s figures of a step: the delays' summary and histogram, the messages without or ahead.
    pub fn with_fan_out(mut self, stamp_field: Option<&str>, f: &crate::metrics::WsFanOut) -> WsReport {
        if let Some(pointer) = stamp_field {
            self.stamp_field = Some(pointer.to_string());
            self.fan_out = phases::Phase::of(&f.delay);
            (self.stamps_missing, self.stamps_ahead) = (Some(f.missing), Some(f.ahead));
        }
        self
    }

    /// The text summary's line of fan-out delays, with `--stamp-field`.
    pub fn fan_out_line(&self) -> Option<String> {
        let pointer = self.stamp_field.as_deref()?;
        let (missing, ahead) = (self.stamps_missing.unwrap_or(0), self.stamps_ahead.unwrap_or(0));
        let figures = match &self.fan_out {
            Some(p) => {
                let l = &p.latency;
                let us = |v: u64| crate::base::units::format_micros(v as f64);
                let at = |q: &str| l.percentiles.get(q).map_or("-".to_string(), |v| us(*v));
                format!("p50 {}  p99 {}  max {} ({} messages)", at("p50"), at("p99"), us(l.max), l.count)
            }
            None => "no message carried a send time".to_string(),
        };
        Some(format!(
            "fan-out      {figures}; from the send time at {pointer}; {missing} without one, {ahead} stamped ahead of \
             this clock"
        ))
    }
}

impl GrpcReport {
    pub fn new(sent_per_call: u64, received: u64, calls: u64, seconds: f64) -> GrpcReport {
        let round = |x: f64| (x * 1000.0).round() / 1000.0;
        GrpcReport {
            messages_sent_per_call: sent_per_call,
            messages_received: received,
            messages_received_per_call: round(if calls == 0 { 0.0 } else { received as f64 / calls as f64 }),
            messages_received_per_s: round(received as f64 / seconds.max(1e-9)),
        }
    }

    /// Several agents' parts of one step as one: messages added, over the merged step's calls and seconds.
    pub fn merged(parts: &[&GrpcReport], calls: u64, seconds: f64) -> Option<GrpcReport> {
        let first = parts.first()?;
        let received = parts.iter().map(|p| p.messages_received).sum();
        Some(GrpcReport::new(first.messages_sent_per_call, received, calls, seconds))
    }
}
