//! Where a request's time went: connecting, the TLS handshake, waiting for the first byte, receiving the rest.
//!
//! k6's names are the vocabulary (`http_req_connecting`, `http_req_tls_handshaking`, `http_req_waiting`,
//! `http_req_receiving`). The engine reads the clock for these only where it had no timestamp already: the send
//! time and the end time are the loop's own, and the first byte's time is the clock read that an unfinished read
//! already makes (an answer that comes whole in one read has its first byte at its end).

use std::time::Instant;

use super::LatencyHistogram;

/// A TLS handshake that followed a TCP connect: when TCP was established, and whether the handshake resumed a
/// session (a ticket or session ID: no certificate sent, no key exchange signed).
#[derive(Clone, Copy, Debug)]
pub struct Handshake {
    pub tcp_done: Instant,
    pub resumed: bool,
}

/// One thread's phase histograms (microseconds), merged across threads, windows' threads and agents alike.
#[derive(Clone, Debug, Default)]
pub struct Phases {
    /// TCP connect of each connection opened (from when its client was ready to send, for HTTP/1.1).
    pub connect: LatencyHistogram,
    /// TLS handshake of each TLS connection opened.
    pub tls: LatencyHistogram,
    /// The full handshakes among them.
    pub tls_full: LatencyHistogram,
    /// The resumed handshakes among them.
    pub tls_resumed: LatencyHistogram,
    /// Time to first byte from the send time: the request written to the answer's first byte.
    pub waiting: LatencyHistogram,
    /// Open loop: time to first byte from the intended send time (what a user waits for when the server is late).
    pub waiting_intended: LatencyHistogram,
    /// The answer's first byte to its last, of the answers that took more than one read.
    pub receiving: LatencyHistogram,
    /// Answers that came whole in one read: their receiving is 0, counted here rather than recorded one by one
    /// (most answers of a keep-alive loop: a histogram record less each); [`receiving_all`](Self::receiving_all)
    /// adds them.
    pub received_in_one_read: u64,
}

fn micros(from: Instant, to: Instant) -> u64 {
    to.saturating_duration_since(from).as_micros().min(u64::MAX as u128) as u64
}

impl Phases {
    pub fn new() -> Self {
        Self::default()
    }

    /// A connection opened from `start` to `done`; `tls` when a TLS handshake followed TCP's.
    pub fn record_connect(&mut self, start: Instant, tls: Option<Handshake>, done: Instant) {
        match tls {
            Some(h) => {
                self.connect.record(micros(start, h.tcp_done));
                let took = micros(h.tcp_done, done);
                self.tls.record(took);
                if h.resumed { &mut self.tls_resumed } else { &mut self.tls_full }.record(took);
            }
            None => self.connect.record(micros(start, done)),
        }
    }

    /// An answer: sent at `sent` (intended at `intended`), its first byte at `first` (None: it came whole in the
    /// read that ended it), its last at `end`. `open_loop`: the intended time is a schedule's, so worth its own
    /// figure (in a closed loop it is the send time). Returns the time to first byte, microseconds.
    pub fn record_answer(
        &mut self,
        intended: Instant,
        sent: Instant,
        first: Option<Instant>,
        end: Instant,
        open_loop: bool,
    ) -> u64 {
        let whole = first.is_none();
        let first = first.unwrap_or(end).min(end).max(sent);
        let waiting = micros(sent, first);
        self.waiting.record(waiting);
        if open_loop {
            self.waiting_intended.record(micros(intended, first));
        }
        if whole {
            self.received_in_one_read += 1;
        } else {
            self.receiving.record(micros(first, end));
        }
        waiting
    }

    /// Every answer's receiving: those of one read at 0 (the histogram's floor, 1 µs) with the others.
    pub fn receiving_all(&self) -> LatencyHistogram {
        let mut all = self.receiving.clone();
        all.record_n(0, self.received_in_one_read);
        all
    }

    pub fn merge(&mut self, o: &Phases) {
        self.connect.merge(&o.connect);
        self.tls.merge(&o.tls);
        self.tls_full.merge(&o.tls_full);
        self.tls_resumed.merge(&o.tls_resumed);
        self.waiting.merge(&o.waiting);
        self.waiting_intended.merge(&o.waiting_intended);
        self.receiving.merge(&o.receiving);
        self.received_in_one_read += o.received_in_one_read;
    }

    /// Nothing recorded: a key-value run, or a step that opened nothing and got no answer.
    pub fn is_empty(&self) -> bool {
        self.connect.is_empty() && self.waiting.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn an_answer_split_at_its_first_byte_adds_up_and_one_read_answer_has_no_receiving() {
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        let mut p = Phases::new();
        p.record_answer(t0, ms(5), Some(ms(25)), ms(40), true);
        assert_eq!(p.waiting.max() / 1000, 20);
        assert_eq!(p.waiting_intended.max() / 1000, 25);
        assert_eq!(p.receiving.max() / 1000, 15);
        let mut q = Phases::new();
        q.record_answer(t0, t0, None, ms(7), false);
        assert_eq!(q.waiting.max() / 1000, 7);
        assert!(q.receiving.is_empty() && q.received_in_one_read == 1, "counted, not recorded");
        let all = q.receiving_all();
        assert!(all.count() == 1 && all.max() <= 1, "the least value the histogram holds");
        assert!(q.waiting_intended.is_empty());
        q.record_connect(t0, Some(Handshake { tcp_done: ms(2), resumed: false }), ms(9));
        q.record_connect(t0, None, ms(3));
        q.record_connect(t0, Some(Handshake { tcp_done: ms(1), resumed: true }), ms(3));
        assert_eq!((q.connect.count(), q.tls.count()), (3, 2));
        assert_eq!(q.tls.max() / 1000, 7);
        assert_eq!((q.tls_full.count(), q.tls_full.max() / 1000), (1, 7));
        assert_eq!((q.tls_resumed.count(), q.tls_resumed.max() / 1000), (1, 2));
        p.merge(&q);
        assert_eq!((p.waiting.count(), p.connect.count(), p.tls.count()), (2, 3, 2));
        assert_eq!((p.tls_full.count(), p.tls_resumed.count()), (1, 1));
        assert_eq!((p.receiving.count(), p.received_in_one_read, p.receiving_all().count()), (1, 1, 2));
    }
}
