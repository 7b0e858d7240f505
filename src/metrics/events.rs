//! What streamed answers held (`--events`): time to first event, the gaps between events, events and tokens per
//! answer, the answer's whole time; events, bytes and tokens over the step.
//!
//! Only answers that ended (their body's end, or their end event) are counted: a stream cut or timed out is counted
//! by its failure kind, and its events are not figures of a stream.

use std::time::Instant;

use super::LatencyHistogram;
use crate::protocol::events::{Goodput, StreamFigures};

/// One thread's figures of streamed answers, merged across threads and agents alike.
#[derive(Clone, Debug, Default)]
pub struct EventMetrics {
    /// Answers read for events (2xx answers that ended).
    pub answers: u64,
    /// Of those, answers without any event.
    pub empty: u64,
    /// Events in all.
    pub events: u64,
    /// Body bytes of those answers.
    pub bytes: u64,
    /// Time to first event (a token stream: first token) from the request's send, microseconds.
    pub first: LatencyHistogram,
    /// Every gap between two events of one answer, microseconds (events of one read are 0 apart: they came
    /// together).
    pub gaps: LatencyHistogram,
    /// Events per answer (a count, in the one histogram type), answers with at least one.
    pub per_answer: LatencyHistogram,
    /// The answer's whole time from its send to its end, microseconds.
    pub whole: LatencyHistogram,
    /// A token stream: output tokens in all, and per answer (a count).
    pub tokens: u64,
    pub tokens_per_answer: LatencyHistogram,
    /// A token stream: answers whose count came from the server's `usage` object (the others: one a text chunk).
    pub usage_answers: u64,
    /// A token stream: answers whose `usage` claimed an implausible count (their chunks counted instead).
    pub usage_implausible: u64,
    /// A token stream: time per output token (vLLM's TPOT), each answer's time after its first token over its
    /// tokens minus one, microseconds; answers of two tokens or more.
    pub tpot: LatencyHistogram,
    /// `--goodput`: its objectives and the answers that met them all (None without it).
    pub good: Option<Good>,
    /// A token stream: input tokens in all, as the servers' `usage.prompt_tokens` said them, and the answers that
    /// said them.
    pub input_tokens: u64,
    pub input_answers: u64,
    /// Answers of two events or more whose events all came in one read: a server (or a proxy) that buffers its
    /// stream, so the time to the first event is the whole answer's.
    pub one_read: u64,
    /// A token stream: answers that ended before their `max_tokens` (a `finish_reason` other than `length`).
    pub short: u64,
}

/// The answers that met goodput's objectives.
#[derive(Clone, Debug, PartialEq)]
pub struct Good {
    pub objectives: std::sync::Arc<str>,
    pub answers: u64,
}

fn micros(from: Instant, to: Instant) -> u64 {
    to.saturating_duration_since(from).as_micros().min(u64::MAX as u128) as u64
}

impl EventMetrics {
    /// An answer sent at `sent` that ended at `end`, with what its stream held and its gaps (microseconds, count).
    /// Returns its time to first event, microseconds (None: it held no event).
    pub fn record(
        &mut self,
        sent: Instant,
        end: Instant,
        f: &StreamFigures,
        tokens: bool,
        gaps: impl Iterator<Item = (u64, u64)>,
        goodput: Option<&Goodput>,
    ) -> Option<u64> {
        self.answers += 1;
        self.events += f.events;
        self.bytes += f.bytes;
        let whole = micros(sent, end);
        self.whole.record(whole);
        let mut apart = false;
        for (gap, n) in gaps {
            apart |= gap > 0 && n > 0;
            for _ in 0..n {
                self.gaps.record(gap);
            }
        }
        self.one_read += u64::from(f.events >= 2 && !apart);
        let first = match f.first {
            Some(first) if f.events > 0 => {
                let us = micros(sent, first);
                self.first.record(us);
                self.per_answer.record(f.events);
                Some(us)
            }
            _ => {
                self.empty += 1;
                None
            }
        };
        let mut tpot = None;
        if tokens {
            self.tokens = self.tokens.saturating_add(f.tokens());
            self.tokens_per_answer.record(f.tokens());
            // The first token's own time is TTFT's: the rest of the answer over the tokens after it.
            // A whole answer has no time between its tokens: no TPOT (it would be about 0).
            if let (Some(at), 2.., false) = (f.first.filter(|_| f.events > 0), f.tokens(), f.whole) {
                let us = micros(at, end) / (f.tokens() - 1);
                self.tpot.record(us);
                tpot = Some(us);
            }
            self.usage_answers += u64::from(f.usage_tokens.is_some());
            self.usage_implausible += u64::from(f.usage_implausible);
            if let Some(n) = f.input_tokens {
                self.input_tokens = self.input_tokens.saturating_add(n);
                self.input_answers += 1;
            }
            self.short += u64::from(f.short);
        }
        if let Some(g) = goodput {
            let good = self.good.get_or_insert_with(|| Good { objectives: g.text.as_str().into(), answers: 0 });
            good.answers += u64::from(g.met(first, tpot, whole));
        }
        first
    }

    pub fn merge(&mut self, o: &EventMetrics) {
        self.answers += o.answers;
        self.empty += o.empty;
        self.events += o.events;
        self.bytes += o.bytes;
        self.first.merge(&o.first);
        self.gaps.merge(&o.gaps);
        self.per_answer.merge(&o.per_answer);
        self.whole.merge(&o.whole);
        self.tokens = self.tokens.saturating_add(o.tokens);
        self.tokens_per_answer.merge(&o.tokens_per_answer);
        self.usage_answers += o.usage_answers;
        self.usage_implausible += o.usage_implausible;
        self.tpot.merge(&o.tpot);
        self.input_tokens = self.input_tokens.saturating_add(o.input_tokens);
        self.input_answers += o.input_answers;
        self.one_read += o.one_read;
        self.short += o.short;
        match (&mut self.good, &o.good) {
            (Some(a), Some(b)) => a.answers += b.answers,
            (None, Some(b)) => self.good = Some(b.clone()),
            _ => {}
        }
    }

    pub fn is_empty(&self) -> bool {
        self.answers == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn token_counts_saturate_and_implausible_usages_are_counted() {
        let t0 = Instant::now();
        let f = StreamFigures { usage_tokens: Some(u64::MAX), usage_implausible: true, ..StreamFigures::default() };
        let mut m = EventMetrics::default();
        for _ in 0..2 {
            m.record(t0, t0, &f, true, std::iter::empty(), None);
        }
        assert_eq!((m.tokens, m.usage_implausible), (u64::MAX, 2), "saturated, never wrapped");
        let mut both = m.clone();
        both.merge(&m);
        assert_eq!((both.tokens, both.usage_implausible), (u64::MAX, 4));
    }

    #[test]
    fn an_answer_gives_its_first_event_gaps_and_counts_and_merges_add_up() {
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        let f = StreamFigures {
            first: Some(ms(50)),
            events: 3,
            bytes: 30,
            chunk_tokens: 3,
            usage_tokens: Some(5),
            ended: true,
            ..StreamFigures::default()
        };
        let mut m = EventMetrics::default();
        m.record(t0, ms(70), &f, true, [(10_000, 2)].into_iter(), None);
        assert_eq!((m.answers, m.events, m.bytes, m.tokens, m.usage_answers), (1, 3, 30, 5, 1));
        assert_eq!((m.input_tokens, m.input_answers, m.one_read), (0, 0, 0));
        // The same answer's three events in one read (its gaps all 0), its usage naming 7 prompt tokens.
        let mut once = EventMetrics::default();
        once.record(t0, ms(70), &StreamFigures { input_tokens: Some(7), ..f }, true, [(0, 2)].into_iter(), None);
        assert_eq!((once.input_tokens, once.input_answers, once.one_read), (7, 1, 1));
        once.merge(&once.clone());
        assert_eq!((once.input_tokens, once.input_answers, once.one_read), (14, 2, 2));
        assert_eq!((m.first.max() / 1000, m.whole.max() / 1000, m.gaps.count()), (50, 70, 2));
        let mut n = EventMetrics::default();
        n.record(t0, ms(5), &StreamFigures::default(), false, std::iter::empty(), None);
        m.merge(&n);
        assert_eq!((m.answers, m.empty, m.first.count(), m.tokens), (2, 1, 1, 5));
    }
}
