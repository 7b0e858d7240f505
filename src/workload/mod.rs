//! Key-value workloads that make each request as they go: the key and value of every operation, what its answer
//! must be, and (with `--verify`) a model of every key a client owns, so a wrong answer is caught where it happens.
//!
//! The engine asks a client's [`Source`] for the next [`Op`], sends it like any prepared request, and hands the
//! answer back to [`Source::observe`], which says whether it was right. The workloads: memtier-style mixes and
//! arbitrary commands ([`command`]), Kyoto Tycoon's `order` and `wicked` ([`kyoto`]) and YCSB A-F ([`ycsb`]).

pub mod command;
pub mod keys;
pub mod kyoto;
pub mod ycsb;

use std::time::Duration;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::protocol::Answer;

/// One request a workload made.
#[derive(Debug)]
pub struct Op {
    /// The plan's request spec it counts under (one per operation name: `GET`, `SET`, `READ`...).
    pub spec: usize,
    pub request: Request,
    pub expect: Expect,
}

/// The bytes of one op. Made for that op alone and sent once, so they are owned: a plan's prepared requests are
/// shared (`Arc`), but sharing an op's bytes would cost a second allocation and copy per op (perf showed it).
#[derive(Debug)]
pub struct Request {
    pub bytes: Vec<u8>,
    /// Sending it twice does no harm (a read), so it may be retried on a new connection.
    pub idempotent: bool,
}

impl Request {
    pub fn new(bytes: Vec<u8>, idempotent: bool) -> Request {
        Request { bytes, idempotent }
    }
}

/// An answer as a workload reads it: kept data only when [`Source::keeps_values`].
#[derive(Clone, Copy, Debug)]
pub struct Reply<'a> {
    pub answer: Answer,
    /// The data of the reply's values, one after the other.
    pub value: &'a [u8],
    /// Where each value ends in `value` (RESP arrays: a SCAN's cursor, then its keys).
    pub ends: &'a [usize],
    /// memcached's cas token of a `gets`.
    pub cas: Option<u64>,
}

/// What the answer to an op must be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expect {
    /// Any answer; it counts by its status. These statuses follow from the random state of a workload that keeps no
    /// model (an add on a key that exists: not stored) and are counted as expected, apart from real failures.
    Any { tolerated: &'static [u16] },
    /// A model predicts the status, and the value when given (compared without trailing spaces: memcached pads a
    /// number an incr shortened).
    Exact { status: u16, value: Option<Vec<u8>> },
    /// Kyoto's check of a read: a value that starts with this (a miss is fine where misses are expected).
    Prefix { prefix: Vec<u8>, miss_ok: bool },
}

/// How an answer compared with what was expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// As expected (or nothing was expected).
    Pass,
    /// An answer the random state explains (not stored, a miss, a non-numeric incr): counted apart.
    Expected,
    /// Not what the workload knows it must be.
    Wrong(String),
}

/// Reply statuses of the key-value decoders (see `protocol::resp` and `protocol::memcache`).
pub const VALUE: u16 = 200;
pub const MISS: u16 = 204;
pub const NOT_STORED: u16 = 409;
pub const ERROR: u16 = 500;

/// Compares an answer with what was expected; `what` describes the op for a message.
pub fn judge(expect: &Expect, answer: Answer, value: &[u8], what: impl FnOnce() -> String) -> Verdict {
    let trim = |v: &[u8]| v.len() - v.iter().rev().take_while(|&&b| b == b' ').count();
    // The op, what it answered, and what was expected instead; the op's words are made only for a wrong answer.
    let wrong = |expected: String| {
        Verdict::Wrong(format!("{}: answered {} {}, {expected}", what(), status_name(answer.status), shown(value)))
    };
    match expect {
        Expect::Any { tolerated } => {
            if tolerated.contains(&answer.status) {
                Verdict::Expected
            } else {
                Verdict::Pass
            }
        }
        Expect::Exact { status, value: want } => {
            let status_ok = answer.status == *status;
            let value_ok = match want {
                Some(w) => value[..trim(value)] == w[..trim(w)],
                None => true,
            };
            if status_ok && value_ok {
                if *status == NOT_STORED || *status == MISS || *status == ERROR {
                    Verdict::Expected
                } else {
                    Verdict::Pass
                }
            } else {
                wrong(format!(
                    "the model expects {} {}",
                    status_name(*status),
                    want.as_deref().map(shown).unwrap_or_default()
                ))
            }
        }
        Expect::Prefix { prefix, miss_ok } => {
            if answer.status == MISS && *miss_ok {
                Verdict::Expected
            } else if answer.status == VALUE && value.starts_with(prefix) {
                Verdict::Pass
            } else {
                wrong(format!("expected a value starting with {}", shown(prefix)))
            }
        }
    }
}

fn status_name(status: u16) -> &'static str {
    match status {
        VALUE => "a value",
        MISS => "a miss",
        NOT_STORED => "not stored",
        ERROR => "an error",
        _ => "nothing",
    }
}

/// A value as a message shows it: quoted, at most 40 bytes.
pub fn shown(v: &[u8]) -> String {
    let cut = &v[..v.len().min(40)];
    let more = if v.len() > 40 { format!("... ({} bytes)", v.len()) } else { String::new() };
    format!("'{}'{more}", String::from_utf8_lossy(cut).escape_debug())
}

/// A workload as planned, shared read-only by every engine thread.
#[derive(Debug)]
pub enum Workload {
    Commands(std::sync::Arc<command::Mix>),
    Order(kyoto::Order),
    Wicked(std::sync::Arc<kyoto::Wicked>),
    Ycsb(std::sync::Arc<ycsb::Ycsb>),
}

impl Workload {
    /// The source of client `client` of `clients` (ids are dense from 0), its randomness from `seed`.
    /// Whether operation `spec` reads: only a read's value (status 200) is a hit, and a miss its absence; a
    /// write's "done" is neither.
    pub fn reads(&self, spec: usize) -> bool {
        match self {
            Workload::Commands(mix) => mix.commands.get(spec).is_some_and(|c| !c.writes()),
            Workload::Order(o) => matches!(o.phase, kyoto::Phase::Get | kyoto::Phase::Walk),
            Workload::Wicked(_) => kyoto::Wicked::reads(spec),
            Workload::Ycsb(_) => ycsb::Ycsb::reads(spec),
        }
    }

    pub fn client(&self, client: usize, clients: usize, seed: u64) -> Source {
        // Each client its own stream, so one client's ops do not depend on how the others are scheduled:
        // a seed and a client number replay a client's ops exactly.
        let rng = ChaCha8Rng::seed_from_u64(seed ^ (client as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        match self {
            Workload::Commands(m) => Source::Commands(m.client(client, clients, rng)),
            Workload::Order(o) => Source::Order(o.client(client, clients, rng)),
            Workload::Wicked(w) => Source::Wicked(w.client(client, clients, seed, rng)),
            Workload::Ycsb(y) => Source::Ycsb(y.client(client, clients, rng)),
        }
    }

    /// Requests are filled from templates as the run goes: the summary gives that work's share of hakaru's CPU.
    pub fn builds(&self) -> bool {
        matches!(self, Workload::Commands(m) if m.feed.is_some())
    }

    /// `--data-order unique` has used every row.
    pub fn rows_ran_out(&self) -> bool {
        matches!(self, Workload::Commands(m) if m.feed.as_ref().is_some_and(crate::template::Feed::exhausted))
    }

    /// A wrong answer stops the run (`--verify`).
    pub fn halts_on_wrong(&self) -> bool {
        matches!(self, Workload::Wicked(w) if w.verify) || matches!(self, Workload::Order(_))
    }
}

/// One client's stream of ops.
pub enum Source {
    Commands(command::Client),
    Order(kyoto::OrderClient),
    Wicked(kyoto::WickedClient),
    Ycsb(ycsb::Client),
}

impl Source {
    /// The next op, or None when this client's part of the workload is done.
    pub fn next_op(&mut self) -> Option<Op> {
        match self {
            Source::Commands(c) => c.next_op(),
            Source::Order(c) => c.next_op(),
            Source::Wicked(c) => Some(c.next_op()),
            Source::Ycsb(c) => Some(c.next_op()),
        }
    }

    /// The next op, its bytes appended to `wire` instead of kept in the op: a client's (or a pipelined batch's)
    /// one buffer, so the mixes made for speed allocate nothing per op.
    pub fn next_op_into(&mut self, wire: &mut Vec<u8>) -> Option<Op> {
        match self {
            Source::Commands(c) => c.next_op_into(wire),
            _ => {
                let mut op = self.next_op()?;
                wire.append(&mut op.request.bytes);
                Some(op)
            }
        }
    }

    /// This client's part is done ([`next_op`](Self::next_op) would answer None): asked before a request of the
    /// step's budget is taken for it, so that a finished client leaves the budget to the others.
    pub fn exhausted(&self) -> bool {
        match self {
            Source::Order(c) => c.exhausted(),
            Source::Commands(c) => c.exhausted(),
            _ => false,
        }
    }

    /// The time spent filling templates' holes since the last call (`--data`, `{{...}}` in `--command`); None
    /// when the workload fills none.
    pub fn take_busy(&mut self) -> Option<Duration> {
        match self {
            Source::Commands(c) => c.take_busy(),
            _ => None,
        }
    }

    /// The answer to `op`, judged.
    pub fn observe(&mut self, op: &Op, reply: Reply<'_>) -> Verdict {
        match self {
            Source::Commands(_) => judge(&op.expect, reply.answer, reply.value, String::new),
            Source::Ycsb(c) => c.observe(op, reply),
            Source::Order(c) => c.observe(op, reply),
            Source::Wicked(c) => c.observe(op, reply),
        }
    }

    /// `op` has ended, answered or failed (every op the engine sent, once): YCSB acknowledges its inserts here.
    pub fn finished(&mut self, op: &Op) {
        if let Source::Ycsb(c) = self {
            c.finished(op);
        }
    }

    /// The first half of a two-part op failed: its second half is not sent.
    pub fn drop_second_half(&mut self) {
        match self {
            Source::Wicked(c) => c.drop_second_half(),
            Source::Ycsb(c) => c.drop_second_half(),
            Source::Commands(_) | Source::Order(_) => {}
        }
    }

    /// The next op is part of the last one (YCSB's read-modify-write, memcached's gets then cas): one figure for
    /// both, from the first one's intended send time to the second one's answer.
    pub fn continues(&self) -> bool {
        match self {
            Source::Commands(_) | Source::Order(_) => false,
            Source::Wicked(c) => c.continues(),
            Source::Ycsb(c) => c.continues(),
        }
    }

    /// Answers must be read back: values checked, cursors and cas tokens taken.
    pub fn keeps_values(&self) -> bool {
        match self {
            Source::Commands(_) | Source::Ycsb(_) => false,
            Source::Order(_) => true,
            Source::Wicked(c) => c.keeps_values(),
        }
    }
}
