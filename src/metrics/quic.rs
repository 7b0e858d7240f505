//! QUIC's own counts for an HTTP/3 step: datagrams and the system calls that carried them, packets lost.

/// What the HTTP/3 connections' QUIC layer reported during a step (quinn's connection statistics, taken as the
/// difference since the connection's last count, so each step gets its own share).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QuicCounts {
    /// UDP datagrams sent and received.
    pub datagrams_out: u64,
    pub datagrams_in: u64,
    /// Sends handed to the socket (one `sendmsg` each; with segmentation offload one carries several datagrams).
    pub send_calls: u64,
    /// Batches of received datagrams the connection was given (with receive offload one batch is several).
    pub receive_batches: u64,
    /// QUIC packets sent, and those QUIC declared lost (their frames go again in new packets: QUIC never sends a
    /// packet twice, so these are the retransmissions).
    pub packets_sent: u64,
    pub packets_lost: u64,
    pub bytes_lost: u64,
    /// Times the congestion controller cut its window.
    pub congestion_events: u64,
    /// `--0rtt`: connections that sent early data on a resumed session, and those whose early data the server
    /// accepted (counted by the engine as the handshakes end, not from quinn's statistics).
    pub zero_rtt_sent: u64,
    pub zero_rtt_accepted: u64,
}

impl QuicCounts {
    /// The counts a connection's statistics hold: cumulative since it opened (the 0-RTT counts are not among them).
    pub fn of(s: &quinn::ConnectionStats) -> QuicCounts {
        QuicCounts {
            datagrams_out: s.udp_tx.datagrams,
            datagrams_in: s.udp_rx.datagrams,
            send_calls: s.udp_tx.ios,
            receive_batches: s.udp_rx.ios,
            packets_sent: s.path.sent_packets,
            packets_lost: s.path.lost_packets,
            bytes_lost: s.path.lost_bytes,
            congestion_events: s.path.congestion_events,
            ..QuicCounts::default()
        }
    }

    /// What `self` (a later count of the same connection's statistics) adds to `before`.
    pub fn since(&self, before: &QuicCounts) -> QuicCounts {
        QuicCounts {
            datagrams_out: self.datagrams_out.saturating_sub(before.datagrams_out),
            datagrams_in: self.datagrams_in.saturating_sub(before.datagrams_in),
            send_calls: self.send_calls.saturating_sub(before.send_calls),
            receive_batches: self.receive_batches.saturating_sub(before.receive_batches),
            packets_sent: self.packets_sent.saturating_sub(before.packets_sent),
            packets_lost: self.packets_lost.saturating_sub(before.packets_lost),
            bytes_lost: self.bytes_lost.saturating_sub(before.bytes_lost),
            congestion_events: self.congestion_events.saturating_sub(before.congestion_events),
            ..QuicCounts::default()
        }
    }

    pub fn merge(&mut self, o: &QuicCounts) {
        self.datagrams_out += o.datagrams_out;
        self.datagrams_in += o.datagrams_in;
        self.send_calls += o.send_calls;
        self.receive_batches += o.receive_batches;
        self.packets_sent += o.packets_sent;
        self.packets_lost += o.packets_lost;
        self.bytes_lost += o.bytes_lost;
        self.congestion_events += o.congestion_events;
        self.zero_rtt_sent += o.zero_rtt_sent;
        self.zero_rtt_accepted += o.zero_rtt_accepted;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_later_count_less_an_earlier_one_is_what_happened_between_and_merges_add() {
        let before = QuicCounts { datagrams_out: 10, send_calls: 4, packets_lost: 1, ..Default::default() };
        let after = QuicCounts { datagrams_out: 25, send_calls: 6, packets_lost: 1, bytes_lost: 0, ..before };
        let between = after.since(&before);
        assert_eq!((between.datagrams_out, between.send_calls, between.packets_lost), (15, 2, 0));
        let mut total = between;
        total.merge(&before);
        assert_eq!(total.datagrams_out, 25);
        // A count taken from a newer connection than the last one seen never goes below zero.
        assert_eq!(before.since(&after).datagrams_out, 0);
    }
}
