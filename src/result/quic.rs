//! The result document's `quic` section: what an HTTP/3 step's QUIC layer did (datagrams, the sends that carried
//! them, packets lost), from quinn's connection statistics.

use serde::{Deserialize, Serialize};

use crate::metrics::QuicCounts;

/// QUIC's own figures for an HTTP/3 step; UDP bytes are the step's `bytes_in` and `bytes_out`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct QuicReport {
    pub datagrams_sent: u64,
    pub datagrams_received: u64,
    /// Sends handed to the UDP socket, one system call each: fewer than the datagrams when segmentation offload
    /// (GSO) put several in one.
    pub send_calls: u64,
    /// `datagrams_sent` per send call.
    pub datagrams_per_send: f64,
    /// Received datagrams in the batches the connections were given (receive offload, GRO, makes one batch of
    /// several).
    pub receive_batches: u64,
    /// QUIC packets sent, and those declared lost: QUIC sends a lost packet's frames again in new packets, so
    /// these are its retransmissions.
    pub packets_sent: u64,
    pub packets_lost: u64,
    pub bytes_lost: u64,
    /// Times a connection's congestion controller cut its window.
    pub congestion_events: u64,
    /// `--0rtt`: connections that sent their first requests as early data (a resumed session), and those whose
    /// early data the server accepted; 0 without the flag.
    #[serde(default)]
    pub zero_rtt_sent: u64,
    #[serde(default)]
    pub zero_rtt_accepted: u64,
}

impl QuicReport {
    pub fn new(c: &QuicCounts) -> QuicReport {
        let per_send = if c.send_calls == 0 { 0.0 } else { c.datagrams_out as f64 / c.send_calls as f64 };
        QuicReport {
            datagrams_sent: c.datagrams_out,
            datagrams_received: c.datagrams_in,
            send_calls: c.send_calls,
            datagrams_per_send: (per_send * 1000.0).round() / 1000.0,
            receive_batches: c.receive_batches,
            packets_sent: c.packets_sent,
            packets_lost: c.packets_lost,
            bytes_lost: c.bytes_lost,
            congestion_events: c.congestion_events,
            zero_rtt_sent: c.zero_rtt_sent,
            zero_rtt_accepted: c.zero_rtt_accepted,
        }
    }

    fn counts(&self) -> QuicCounts {
        QuicCounts {
            datagrams_out: self.datagrams_sent,
            datagrams_in: self.datagrams_received,
            send_calls: self.send_calls,
            receive_batches: self.receive_batches,
            packets_sent: self.packets_sent,
            packets_lost: self.packets_lost,
            bytes_lost: self.bytes_lost,
            congestion_events: self.congestion_events,
            zero_rtt_sent: self.zero_rtt_sent,
            zero_rtt_accepted: self.zero_rtt_accepted,
        }
    }

    /// Several agents' parts of one step as one: the counts added, the ratio of the sums. None when no part has
    /// them.
    pub fn merged(parts: &[&QuicReport]) -> Option<QuicReport> {
        let mut sum = parts.first()?.counts();
        for p in &parts[1..] {
            sum.merge(&p.counts());
        }
        Some(QuicReport::new(&sum))
    }

    /// The share of the packets sent that were lost, 0 when none was sent.
    pub fn loss(&self) -> f64 {
        if self.packets_sent == 0 { 0.0 } else { self.packets_lost as f64 / self.packets_sent as f64 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sends_ratio_is_of_the_sums_when_agents_merge() {
        let a =
            QuicReport::new(&QuicCounts { datagrams_out: 30, send_calls: 10, packets_sent: 30, ..Default::default() });
        let b = QuicReport::new(&QuicCounts {
            datagrams_out: 10,
            send_calls: 10,
            packets_sent: 10,
            packets_lost: 2,
            ..Default::default()
        });
        assert_eq!((a.datagrams_per_send, b.datagrams_per_send), (3.0, 1.0));
        let m = QuicReport::merged(&[&a, &b]).expect("two parts");
        assert_eq!((m.datagrams_sent, m.send_calls, m.datagrams_per_send, m.packets_lost), (40, 20, 2.0, 2));
        assert!((m.loss() - 0.05).abs() < 1e-12);
        assert_eq!(QuicReport::merged(&[]), None);
        assert_eq!(QuicReport::new(&QuicCounts::default()).datagrams_per_send, 0.0);
    }
}
