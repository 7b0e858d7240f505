//! `--connection-rate R` (h2load's `-r`): every new connection of a step, on any thread, takes the next turn of one
//! shared clock, turns 1/R apart, and opens no sooner; a turn not taken in time is not saved up for a burst.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The turns of a step's new connections.
pub(super) struct ConnectionRate {
    origin: Instant,
    /// Nanoseconds between two turns.
    gap: u64,
    /// The next free turn, in nanoseconds from `origin`.
    next: AtomicU64,
}

impl ConnectionRate {
    pub(super) fn new(per_second: f64, origin: Instant) -> ConnectionRate {
        // At least a nanosecond apart: the flag's parser bounds the rate at 1e9 a second.
        let gap = (1e9 / per_second).round().max(1.0) as u64;
        ConnectionRate { origin, gap, next: AtomicU64::new(0) }
    }

    /// Claims the next turn, at `now` or later: when the connection may open. One atomic update, however many
    /// threads claim at once; a claim made after a quiet spell starts from `now` (no burst of saved turns).
    pub(super) fn claim(&self, now: Instant) -> Instant {
        let now_ns = now.saturating_duration_since(self.origin).as_nanos() as u64;
        let mut next = self.next.load(Ordering::Relaxed);
        loop {
            let turn = next.max(now_ns);
            match self.next.compare_exchange_weak(next, turn + self.gap, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return self.origin + Duration::from_nanos(turn),
                Err(seen) => next = seen,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn turns_are_a_gap_apart_and_a_quiet_spell_saves_none() {
        let origin = Instant::now();
        let rate = ConnectionRate::new(10.0, origin);
        let at = |ms: u64| origin + Duration::from_millis(ms);
        // Five at once: 0, 100, 200, 300 and 400 ms.
        let turns: Vec<Instant> = (0..5).map(|_| rate.claim(at(0))).collect();
        assert_eq!(turns, (0..5).map(|k| at(100 * k)).collect::<Vec<_>>());
        // Two seconds later the next turn is then, not the 15 missed since.
        assert_eq!(rate.claim(at(2000)), at(2000));
        assert_eq!(rate.claim(at(2000)), at(2100));
    }

    #[test]
    fn threads_claiming_at_once_never_share_a_turn() {
        let origin = Instant::now();
        let rate = std::sync::Arc::new(ConnectionRate::new(1000.0, origin));
        let claims: Vec<Instant> = std::thread::scope(|s| {
            let handles: Vec<_> =
                (0..4).map(|_| s.spawn(|| (0..250).map(|_| rate.claim(origin)).collect::<Vec<_>>())).collect();
            handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
        });
        let mut ms: Vec<u128> = claims.iter().map(|t| t.duration_since(origin).as_millis()).collect();
        ms.sort();
        assert_eq!(ms, (0..1000).collect::<Vec<u128>>());
    }
}
