//! YCSB's core workloads A-F (brianfrankcooper/YCSB CoreWorkload and workloads/workload[a-f]): a load phase that
//! inserts the records, then a run phase of the workload's mix, with YCSB's distributions (zipfian 0.99 scrambled
//! over the keys, latest, uniform scan lengths).
//!
//! A record is 10 fields of 100 bytes under `user<fnv64 of its number>` (`insertorder=hashed`). On Redis it is a
//! hash (YCSB's Redis binding: HSET, HGETALL), and workload E keeps the sorted set its scans read (YCSB's `_indices`, here
//! `--key-prefix` + `_indices`, so it lives with hakaru's keys and never in the user's),
//! through one script call per insert and per scan (YCSB's binding makes a round trip per record scanned). On
//! memcached a record is one value, and an update rewrites it whole; memcached cannot scan, so E is refused.
//! Read-modify-write is a read then an update, timed as one operation, as YCSB times it.

use std::collections::VecDeque;
use std::io::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rand::RngExt as _;
use rand_chacha::ChaCha8Rng;

use super::keys::{ZIPF_THETA, Zipfian, fnv64};
use super::{Expect, Op, Reply, Request, Verdict, judge};
use crate::protocol::{Protocol, memcache, resp};

/// YCSB's record: 10 fields of 100 bytes.
pub const FIELDS: usize = 10;
pub const FIELD_LENGTH: usize = 100;
/// Workload E's longest scan (maxscanlength in workloade).
const MAX_SCAN: u64 = 100;
/// The sorted set workload E's scans read: YCSB's Redis binding's name after the key prefix.
pub const INDEX: &str = "_indices";
/// The record's key, then the index's: both declared as keys, as Redis wants a script's keys.
const INSERT_SCRIPT: &[u8] =
    b"redis.call('HSET',KEYS[1],unpack(ARGV,2)) redis.call('ZADD',KEYS[2],ARGV[1],KEYS[1]) return 1";
const SCAN_SCRIPT: &[u8] = b"local ks=redis.call('ZRANGEBYSCORE',KEYS[1],ARGV[1],'+inf','LIMIT',0,tonumber(ARGV[2])) \
local r={} for i,k in ipairs(ks) do r[i]=redis.call('HGETALL',k) end return r";

/// The figures' names, in the order of the plan's specs.
pub const YCSB_OPS: [&str; 5] = ["INSERT", "READ", "UPDATE", "SCAN", "READ-MODIFY-WRITE"];
const INSERT: usize = 0;
const READ: usize = 1;
const UPDATE: usize = 2;
const SCAN: usize = 3;
const RMW: usize = 4;

/// The six core workloads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Letter {
    A,
    B,
    C,
    D,
    E,
    F,
}

impl Letter {
    pub fn parse(name: &str) -> Option<Letter> {
        Some(match name.to_ascii_lowercase().as_str() {
            "ycsb-a" => Letter::A,
            "ycsb-b" => Letter::B,
            "ycsb-c" => Letter::C,
            "ycsb-d" => Letter::D,
            "ycsb-e" => Letter::E,
            "ycsb-f" => Letter::F,
            _ => return None,
        })
    }

    /// The operation shares (of the specs in [`YCSB_OPS`] order), as the workload files give them.
    pub fn mix(self) -> [f64; 5] {
        match self {
            Letter::A => [0.0, 0.5, 0.5, 0.0, 0.0],
            Letter::B => [0.0, 0.95, 0.05, 0.0, 0.0],
            Letter::C => [0.0, 1.0, 0.0, 0.0, 0.0],
            Letter::D => [0.05, 0.95, 0.0, 0.0, 0.0],
            Letter::E => [0.05, 0.0, 0.0, 0.95, 0.0],
            Letter::F => [0.0, 0.5, 0.0, 0.0, 0.5],
        }
    }
}

/// Load (insert every record) or run (the mix).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum YcsbPhase {
    Load,
    Run,
}

/// A YCSB workload as planned; the insert counter is shared by every client, as YCSB's is.
#[derive(Debug)]
pub struct Ycsb {
    pub protocol: Protocol,
    pub letter: Letter,
    pub phase: YcsbPhase,
    pub records: u64,
    /// Workload D's latest: zipfian over the records, counted back from the newest.
    zipf: Zipfian,
    /// The other workloads' zipfian: over 10^10 items, hashed onto the records (YCSB's scrambled zipfian).
    scrambled: Zipfian,
    /// The next record number to insert (load: from 0; run: from `records`, for D and E's inserts), and the step
    /// between numbers: agents of a scaled-out run take every n-th number, so no two insert the same record.
    next_insert: AtomicU64,
    stride: u64,
    /// Workload E's index: `--key-prefix` + [`INDEX`].
    index: Vec<u8>,
    /// The run phase's first insert number (this segment's).
    run_first: u64,
    /// Which of the run phase's inserts have finished: workload D reads only below the first one that has not.
    acked: Acknowledged,
    field_value: Vec<u8>,
}

/// How many inserts may be under way at once past the first unfinished one (YCSB's window is 2^20; a client has
/// at most one batch out, so this is far above clients x pipeline).
const ACK_WINDOW: u64 = 1 << 16;

/// YCSB's acknowledged counter (AcknowledgedCounterGenerator): inserts are handed out in order but finish in any
/// order, across clients and threads; `limit` is how many of them, counted from the first, have all finished.
/// A finished insert sets its flag in a ring; whoever holds the lock moves the limit over the flags set. Another
/// thread's flag set just after is moved over by the next insert that finishes (YCSB's `tryLock`), so the limit
/// may lag by a few inserts, never run ahead.
#[derive(Debug)]
struct Acknowledged {
    window: Box<[AtomicBool]>,
    limit: AtomicU64,
    advancing: Mutex<()>,
}

impl Acknowledged {
    fn new() -> Acknowledged {
        Acknowledged {
            window: (0..ACK_WINDOW).map(|_| AtomicBool::new(false)).collect(),
            limit: AtomicU64::new(0),
            advancing: Mutex::new(()),
        }
    }

    /// How many inserts, from the first, have all finished.
    fn limit(&self) -> u64 {
        self.limit.load(Ordering::Acquire)
    }

    /// Insert `ordinal` (0 = the phase's first) has finished, answered or failed (YCSB acknowledges both).
    fn acknowledge(&self, ordinal: u64) {
        self.window[(ordinal % ACK_WINDOW) as usize].store(true, Ordering::Release);
        if let Ok(_moving) = self.advancing.try_lock() {
            let mut limit = self.limit.load(Ordering::Relaxed);
            while self.window[(limit % ACK_WINDOW) as usize].swap(false, Ordering::AcqRel) {
                limit += 1;
            }
            self.limit.store(limit, Ordering::Release);
        }
    }
}

impl Ycsb {
    /// READ, SCAN and READ-MODIFY-WRITE read (the last reads, then writes).
    pub fn reads(spec: usize) -> bool {
        matches!(spec, READ | SCAN | RMW)
    }

    /// `segment`: (index, count) of a scaled-out run: the load phase inserts this segment's part of the records,
    /// the run phase's inserts every count-th number from `records + index`.
    pub fn new(
        protocol: Protocol,
        letter: Letter,
        phase: YcsbPhase,
        records: u64,
        segment: Option<(u64, u64)>,
        key_prefix: &str,
    ) -> Ycsb {
        let (index, count) = segment.unwrap_or((0, 1));
        let (first, stride) = match phase {
            YcsbPhase::Load => (index * (records / count) + index.min(records % count), 1),
            YcsbPhase::Run => (records + index, count),
        };
        Ycsb {
            protocol,
            letter,
            phase,
            records,
            zipf: Zipfian::new(records, ZIPF_THETA),
            scrambled: Zipfian::scrambled(),
            next_insert: AtomicU64::new(first),
            stride,
            run_first: records + index,
            acked: Acknowledged::new(),
            field_value: (0..FIELD_LENGTH).map(|i| b'a' + (i % 26) as u8).collect(),
            index: format!("{key_prefix}{INDEX}").into_bytes(),
        }
    }

    pub fn client(self: &Arc<Self>, _client: usize, _clients: usize, rng: ChaCha8Rng) -> Client {
        Client { ycsb: Arc::clone(self), rng, rmw_update: None, inserting: VecDeque::new() }
    }

    /// The key of record n.
    pub fn key(n: u64) -> Vec<u8> {
        let mut k = b"user".to_vec();
        // YCSB's Utils.hash: FNV-64 as a Java long, made positive with Math.abs.
        let _ = write!(k, "{}", (fnv64(n) as i64).wrapping_abs());
        k
    }

    /// The score of a record in `_indices`: its hash cut to 53 bits, so a double holds it exactly.
    fn score(n: u64) -> String {
        (fnv64(n) >> 11).to_string()
    }

    fn record(&self) -> Vec<(Vec<u8>, &[u8])> {
        (0..FIELDS).map(|f| (format!("field{f}").into_bytes(), self.field_value.as_slice())).collect()
    }

    fn insert(&self, n: u64) -> Vec<u8> {
        let key = Self::key(n);
        match self.protocol {
            Protocol::Resp if self.letter == Letter::E => {
                let score = Self::score(n);
                let mut args: Vec<&[u8]> = vec![b"EVAL", INSERT_SCRIPT, b"2", &key, &self.index, score.as_bytes()];
                let record = self.record();
                for (f, v) in &record {
                    args.push(f);
                    args.push(v);
                }
                resp::encode(&args)
            }
            Protocol::Resp => {
                let record = self.record();
                let mut args: Vec<&[u8]> = vec![b"HSET", &key];
                for (f, v) in &record {
                    args.push(f);
                    args.push(v);
                }
                resp::encode(&args)
            }
            _ => memcache::encode_store("set", &key, &self.whole_record(), None),
        }
    }

    /// memcached's record: the fields one after the other, `field0=...&field1=...`.
    fn whole_record(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(FIELDS * (FIELD_LENGTH + 8));
        for (i, (f, v)) in self.record().iter().enumerate() {
            if i > 0 {
                out.push(b'&');
            }
            out.extend_from_slice(f);
            out.push(b'=');
            out.extend_from_slice(v);
        }
        out
    }
}

/// One YCSB client.
pub struct Client {
    ycsb: Arc<Ycsb>,
    rng: ChaCha8Rng,
    /// Read-modify-write: the update that follows the read.
    rmw_update: Option<u64>,
    /// The run-phase inserts this client has sent and not seen finish, oldest first (a client's ops finish in
    /// the order it sent them).
    inserting: VecDeque<u64>,
}

impl Client {
    /// A record number the workload's distribution picks among those inserted.
    fn existing(&mut self) -> u64 {
        let y = &self.ycsb;
        if y.letter == Letter::D {
            // latest: the newest records most often (SkewedLatestGenerator), counted back from the newest insert
            // that has finished with every one before it: a read never asks for a record still on its way. The
            // newest are this segment's own inserts (every stride-th number), then the loaded records.
            let back = y.zipf.sample(&mut self.rng);
            let finished = y.acked.limit();
            if back < finished {
                y.run_first + (finished - 1 - back) * y.stride
            } else {
                y.records.saturating_sub(1).saturating_sub(back - finished)
            }
        } else {
            // zipfian, scrambled over the records so popular keys are spread (ScrambledZipfianGenerator).
            fnv64(y.scrambled.sample(&mut self.rng)) % y.records.max(1)
        }
    }

    fn update(&mut self, n: u64) -> Vec<u8> {
        let y = &self.ycsb;
        let key = Ycsb::key(n);
        match y.protocol {
            Protocol::Resp => {
                let field = format!("field{}", self.rng.random_range(0..FIELDS));
                resp::encode(&[b"HSET", &key, field.as_bytes(), &y.field_value])
            }
            _ => memcache::encode_store("set", &key, &y.whole_record(), None),
        }
    }

    pub fn next_op(&mut self) -> Op {
        let any = Expect::Any { tolerated: &[] };
        if let Some(n) = self.rmw_update.take() {
            let bytes = self.update(n);
            return Op { spec: RMW, request: Request::new(bytes, false), expect: any };
        }
        let y = Arc::clone(&self.ycsb);
        if y.phase == YcsbPhase::Load {
            let n = y.next_insert.fetch_add(y.stride, Ordering::Relaxed);
            return Op { spec: INSERT, request: Request::new(y.insert(n), false), expect: any };
        }
        let shares = y.letter.mix();
        let mut r: f64 = self.rng.random();
        let mut spec = READ;
        for (i, s) in shares.iter().enumerate() {
            if r < *s {
                spec = i;
                break;
            }
            r -= s;
        }
        let read = |n: u64| {
            let key = Ycsb::key(n);
            if y.protocol == Protocol::Resp { resp::encode(&[b"HGETALL", &key]) } else { memcache::encode_get(&key) }
        };
        let (bytes, idempotent) = match spec {
            INSERT => {
                let n = y.next_insert.fetch_add(y.stride, Ordering::Relaxed);
                self.inserting.push_back((n - y.run_first) / y.stride);
                (y.insert(n), false)
            }
            UPDATE => {
                let n = self.existing();
                (self.update(n), false)
            }
            SCAN => {
                let n = self.existing();
                let len = self.rng.random_range(1..=MAX_SCAN).to_string();
                let score = Ycsb::score(n);
                (resp::encode(&[b"EVAL", SCAN_SCRIPT, b"1", &y.index, score.as_bytes(), len.as_bytes()]), true)
            }
            RMW => {
                let n = self.existing();
                self.rmw_update = Some(n);
                (read(n), true)
            }
            _ => (read(self.existing()), true),
        };
        Op { spec, request: Request::new(bytes, idempotent), expect: any }
    }

    /// `op` has ended, answered or failed: a run-phase insert is acknowledged.
    pub fn finished(&mut self, op: &Op) {
        if op.spec == INSERT
            && self.ycsb.phase == YcsbPhase::Run
            && let Some(ordinal) = self.inserting.pop_front()
        {
            self.ycsb.acked.acknowledge(ordinal);
        }
    }

    pub fn observe(&mut self, op: &Op, reply: Reply<'_>) -> Verdict {
        judge(&op.expect, reply.answer, reply.value, String::new)
    }

    pub fn continues(&self) -> bool {
        self.rmw_update.is_some()
    }

    pub fn drop_second_half(&mut self) {
        self.rmw_update = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_acknowledged_limit_waits_for_the_first_unfinished_insert() {
        let a = Acknowledged::new();
        for ordinal in [1, 2, 4] {
            a.acknowledge(ordinal);
        }
        assert_eq!(a.limit(), 0, "0 has not finished: nothing is readable past the loaded records");
        a.acknowledge(0);
        assert_eq!(a.limit(), 3, "0, 1 and 2 have finished; 3 has not");
        a.acknowledge(3);
        assert_eq!(a.limit(), 5);
        // Round the ring: flags are cleared as the limit passes them.
        for ordinal in 5..(ACK_WINDOW * 2 + 7) {
            a.acknowledge(ordinal);
        }
        assert_eq!(a.limit(), ACK_WINDOW * 2 + 7);
    }
}
