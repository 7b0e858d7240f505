//! The result document's `phases` section: where an HTTP request's time went (connect, TLS handshake, waiting for
//! the first byte, receiving), each phase a latency summary with its histogram so agents' documents merge exactly.

use serde::{Deserialize, Serialize};

use super::{EncodedHistogram, LatencySummary};
use crate::metrics::{LatencyHistogram, Phases};

/// One phase: its summary (microseconds) and its histogram.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Phase {
    #[serde(flatten)]
    pub latency: LatencySummary,
    pub histogram: EncodedHistogram,
}

impl Phase {
    pub fn of(h: &LatencyHistogram) -> Option<Phase> {
        (!h.is_empty())
            .then(|| Phase { latency: LatencySummary::from_histogram(h), histogram: EncodedHistogram::of(h) })
    }
}

/// Where the time of a step's HTTP requests went (k6's `http_req_connecting`, `http_req_tls_handshaking`,
/// `http_req_waiting`, `http_req_receiving`). Connect and handshake are per connection opened, the others per
/// answer (any status); a phase with no sample is null.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PhasesReport {
    /// Connections opened (and timed) in the step: with keep-alive most requests open none.
    pub connections_opened: u64,
    /// Answers timed: every answer, whatever its status (errors have no phases).
    pub answers: u64,
    /// TCP connect, per connection opened (HTTP/1.1: from when the client was ready to send).
    pub connect: Option<Phase>,
    /// TLS handshake, per TLS connection opened.
    pub tls_handshake: Option<Phase>,
    /// Of the TLS handshakes, how many resumed a session (a ticket or session ID); absent without TLS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_resumed: Option<u64>,
    /// The full TLS handshakes' times (certificate and key exchange), absent when there was none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_full_handshake: Option<Phase>,
    /// The resumed TLS handshakes' times, absent when there was none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_resumed_handshake: Option<Phase>,
    /// Time to first byte from the send time (the request written, after any connect).
    pub waiting: Option<Phase>,
    /// Open loop: time to first byte from the intended send time.
    #[serde(default)]
    pub waiting_from_intended: Option<Phase>,
    /// First byte to last.
    pub receiving: Option<Phase>,
}

impl PhasesReport {
    /// The report of measured phases; None when nothing was timed (a key-value run).
    pub fn of(p: &Phases) -> Option<PhasesReport> {
        (!p.is_empty()).then(|| PhasesReport {
            connections_opened: p.connect.count(),
            answers: p.waiting.count(),
            connect: Phase::of(&p.connect),
            tls_handshake: Phase::of(&p.tls),
            tls_resumed: (!p.tls.is_empty()).then(|| p.tls_resumed.count()),
            tls_full_handshake: Phase::of(&p.tls_full),
            tls_resumed_handshake: Phase::of(&p.tls_resumed),
            waiting: Phase::of(&p.waiting),
            waiting_from_intended: Phase::of(&p.waiting_intended),
            receiving: Phase::of(&p.receiving_all()),
        })
    }

    /// The histograms back, to be added to others' (and to judge a document read back: see `inputs`).
    pub fn histograms(&self) -> Result<Phases, String> {
        let read = |p: &Option<Phase>, name: &str| match p {
            None => Ok(LatencyHistogram::new()),
            Some(p) => LatencyHistogram::from_base64(&p.histogram.data)
                .map_err(|e| format!("its {name} phase's histogram cannot be read: {e}")),
        };
        Ok(Phases {
            connect: read(&self.connect, "connect")?,
            tls: read(&self.tls_handshake, "tls_handshake")?,
            tls_full: read(&self.tls_full_handshake, "tls_full_handshake")?,
            tls_resumed: read(&self.tls_resumed_handshake, "tls_resumed_handshake")?,
            waiting: read(&self.waiting, "waiting")?,
            waiting_intended: read(&self.waiting_from_intended, "waiting_from_intended")?,
            receiving: read(&self.receiving, "receiving")?,
            received_in_one_read: 0,
        })
    }

    /// Several agents' phases of one step as one, their histograms added. None when no part has them.
    pub fn merged(parts: &[&PhasesReport]) -> Result<Option<PhasesReport>, String> {
        let mut all = Phases::new();
        for p in parts {
            all.merge(&p.histograms()?);
        }
        Ok(PhasesReport::of(&all))
    }

    /// A line for the text summary when the phases tell what the latency does not: opening connections takes a
    /// tenth of the requests' time or more (`--no-keepalive`, TLS), or receiving takes a quarter or more (large or
    /// slow bodies). None when the time is all waiting for the server, which the latency already says.
    pub fn summary_line(&self) -> Option<String> {
        let answers = self.answers.max(1) as f64;
        let total = |p: &Option<Phase>| p.as_ref().map_or(0.0, |p| p.latency.mean * p.latency.count as f64);
        let opening = total(&self.connect) + total(&self.tls_handshake);
        let all = opening + total(&self.waiting) + total(&self.receiving);
        if all <= 0.0 || (opening < 0.1 * all && total(&self.receiving) < 0.25 * all) {
            return None;
        }
        let ms = |p: &Option<Phase>| total(p) / answers / 1000.0;
        let tls = match &self.tls_handshake {
            Some(h) => format!(
                " + TLS {:.3} ms ({} of {} handshakes resumed)",
                ms(&self.tls_handshake),
                self.tls_resumed.unwrap_or(0),
                h.latency.count
            ),
            None => String::new(),
        };
        // The share that made the line worth saying: opening connections, or (a stream, a large body) receiving.
        let share = match opening >= 0.1 * all {
            true => format!("opening connections is {:.0} % of the time", opening / all * 100.0),
            false => format!("receiving is {:.0} % of the time", total(&self.receiving) / all * 100.0),
        };
        Some(format!(
            "per answer: connect {:.3} ms{tls} ({} for {}), waiting {:.3} ms, receiving {:.3} ms: {share}",
            ms(&self.connect),
            crate::base::units::count_of(self.connections_opened, "connection"),
            crate::base::units::count_of(self.answers, "answer"),
            ms(&self.waiting),
            ms(&self.receiving),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn phases(connects: u64, answers: u64, connect_ms: u64, wait_ms: u64) -> Phases {
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        let mut p = Phases::new();
        for _ in 0..connects {
            p.record_connect(t0, None, ms(connect_ms));
        }
        for _ in 0..answers {
            p.record_answer(t0, t0, None, ms(wait_ms), false);
        }
        p
    }

    #[test]
    fn merged_reports_add_their_histograms_and_the_line_shows_only_when_connecting_counts() {
        let a = PhasesReport::of(&phases(10, 10, 8, 2)).expect("timed");
        let b = PhasesReport::of(&phases(1, 30, 8, 2)).expect("timed");
        let m = PhasesReport::merged(&[&a, &b]).expect("readable").expect("timed");
        assert_eq!((m.connections_opened, m.answers), (11, 40));
        assert_eq!(m.waiting.as_ref().map(|p| p.latency.count), Some(40));
        assert!(m.tls_handshake.is_none());
        let line = a.summary_line().expect("connecting is 80 % of the time");
        assert!(line.contains("10 connections for 10 answers") && line.contains("80 %"), "{line}");
        let kept_alive = PhasesReport::of(&phases(1, 1000, 8, 2)).expect("timed");
        assert_eq!(kept_alive.summary_line(), None);
        assert_eq!(PhasesReport::of(&Phases::new()), None);
    }

    #[test]
    fn resumed_and_full_handshakes_are_counted_apart_and_merge() {
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        let mut p = phases(0, 4, 1, 1);
        let full = crate::metrics::phases::Handshake { tcp_done: ms(1), resumed: false };
        p.record_connect(t0, Some(full), ms(9));
        p.record_connect(t0, Some(crate::metrics::phases::Handshake { resumed: true, ..full }), ms(3));
        let a = PhasesReport::of(&p).expect("timed");
        assert_eq!(a.tls_resumed, Some(1));
        assert_eq!(a.tls_full_handshake.as_ref().map(|h| h.latency.count), Some(1));
        let m = PhasesReport::merged(&[&a, &a]).expect("readable").expect("timed");
        assert_eq!((m.tls_resumed, m.tls_handshake.as_ref().map(|h| h.latency.count)), (Some(2), Some(4)));
        assert!(m.summary_line().expect("opening is most of it").contains("(2 of 4 handshakes resumed)"));
        let plain = PhasesReport::of(&phases(1, 1, 1, 1)).expect("timed");
        assert_eq!(plain.tls_resumed, None, "no TLS, no count");
    }
}
