//! Kyoto Tycoon's test patterns on Redis and memcached: `order` (set, [add, append,] get, [walk,] remove: each
//! phase a step of its own) and `wicked` (a random mix of every operation on a hot key range), with `--verify`
//! a model of every key a client owns, so each answer is checked exactly.
//!
//! How Kyoto's operations map (`../shared/reference/kv-workloads.md`, section 3):
//!
//! | Kyoto | Redis | memcached |
//! |---|---|---|
//! | set / add / replace | SET, SET NX, SET XX | set / add / replace |
//! | append | APPEND (creates a missing key) | append (not stored on a missing key) |
//! | increment | INCRBY 0-99; half the time INCRBYFLOAT (Kyoto's double increment) | incr 0-99 (no doubles) |
//! | cas (old value = the key) | EVAL of a compare-and-set script, one round trip | gets, then cas: one figure |
//! | remove / get | DEL / GET | delete / get |
//! | set_bulk, remove_bulk, get_bulk (1-3 keys) | MSET, DEL k..., MGET | set, delete (no bulk forms), get k... |
//! | cursor walk (order `--etc`) | SCAN 0 MATCH prefix* COUNT 1000 until cursor 0 | cannot iterate: skipped, said so |
//! | cursor jump and read (wicked step 8) | SCAN 0 MATCH key COUNT 100, counted not checked | cannot iterate: a get |
//! | transaction (about 1 % of steps) | MULTI, 1-4 steps queued, EXEC (one in ten DISCARD): one figure | none |
//! | clear at step rnum / 2, p = 1 / (4 x clients), with `--flush` only | FLUSHDB | flush_all |
//! | expiry rand(600) s of each write | SET ... EX 1-600 (MSET, APPEND, INCR and cas keep theirs) | exptime 1-600 |
//! | raw keys (1 in 1,000: 1-64 bytes) | any bytes | folded into '!'..='~' (the text protocol's keys) |
//!
//! Under `--verify` a transaction's steps move the model as they are queued (EXEC runs them in that order, and
//! no other client touches the keys), each must answer +QUEUED, and EXEC's answer is checked against all of them;
//! a DISCARD, or a connection lost before EXEC, undoes them in the model. An INCRBYFLOAT's answer is checked to
//! be the sum to 1e-9, then its text becomes the model's value (Redis prints a long double, which Rust has not).
//!
//! Under `--verify` the clear (it would wipe other clients' keys), raw keys (no client owns them) and expiry times
//! (the model would have to know when each key goes) are left out. Left out always, and said so in docs/kv.md:
//! wicked's cursor steps and removals at the cursor, which Redis's stateless SCAN cannot hold.

mod order;

use std::collections::{HashMap, HashSet};
use std::io::Write as _;
use std::sync::{Arc, Mutex};

use rand::RngExt as _;
use rand_chacha::ChaCha8Rng;

use super::{ERROR, Expect, MISS, NOT_STORED, Op, Reply, Request, VALUE, Verdict, judge, shown};
use crate::protocol::{Protocol, memcache, resp};
pub use order::*;

/// The Redis script of wicked's cas: set ARGV[2] when the value is ARGV[1]; answers 1 when it did, else 0.
const CAS_SCRIPT: &[u8] =
    b"if redis.call('GET',KEYS[1])==ARGV[1] then redis.call('SET',KEYS[1],ARGV[2]) return 1 else return 0 end";

/// `wicked`, as planned: shared by the clients of every iteration, so that with `--verify` each client's model
/// of its keys lives from one iteration to the next.
#[derive(Debug)]
pub struct Wicked {
    pub protocol: Protocol,
    /// Steps per client per iteration; keys are drawn from 1..=rnum*clients/2 (Kyoto's hot range), or with
    /// `--verify` from the client's own rnum keys.
    pub rnum: u64,
    pub verify: bool,
    /// Kyoto's clear at half way: only with `--flush`, as it deletes what others wrote meanwhile too.
    pub clear: bool,
    pub key_prefix: String,
    /// Each client's state between iterations.
    saved: Mutex<HashMap<usize, Saved>>,
}

impl Wicked {
    /// get, get_bulk and the cursor read; the rest write.
    pub fn reads(spec: usize) -> bool {
        matches!(spec, 7 | 10 | CURSOR)
    }

    pub fn new(protocol: Protocol, rnum: u64, verify: bool, clear: bool, key_prefix: String) -> Wicked {
        Wicked { protocol, rnum, verify, clear, key_prefix, saved: Mutex::new(HashMap::new()) }
    }

    pub fn client(self: &Arc<Self>, client: usize, clients: usize, seed: u64, rng: ChaCha8Rng) -> WickedClient {
        let saved = self.saved.lock().map(|mut s| s.remove(&client)).unwrap_or(None);
        let (model, lost, rng, steps) = saved.unwrap_or((HashMap::new(), HashSet::new(), rng, 0));
        WickedClient {
            wicked: Arc::clone(self),
            client,
            clients: clients as u64,
            seed,
            rng,
            steps,
            model: Model { values: model, undo: None },
            lost,
            last_key: 0,
            cas_next: None,
            tran: None,
            float_next: None,
            made: 0,
            last: String::new(),
        }
    }
}

/// A client's model (values, and the keys whose value it cannot know), random stream and step count, kept from
/// one iteration to the next.
type Saved = (HashMap<u64, Vec<u8>>, HashSet<u64>, ChaCha8Rng, u64);

/// One client of `wicked`.
pub struct WickedClient {
    wicked: Arc<Wicked>,
    client: usize,
    clients: u64,
    seed: u64,
    rng: ChaCha8Rng,
    /// Ops made so far, for the message that replays a failure.
    steps: u64,
    /// With `--verify`: the value of every key of this client that exists.
    model: Model,
    /// Keys that exist but whose value the model cannot know: memcached pads a number an incr shortened when it
    /// rewrites the item in place, and not when it makes a new item (another reference held it), which a client
    /// cannot see. Their answers go unchecked until a read shows the value or a write sets it.
    lost: HashSet<u64>,
    /// The key of the last op, for settling a lost key from a read.
    last_key: u64,
    /// memcached's cas: after a gets, what to write and (once the gets hit) the token to write with.
    cas_next: Option<CasNext>,
    /// Redis: the transaction being queued (MULTI sent, EXEC or DISCARD not yet).
    tran: Option<Tran>,
    /// Steps begun in this iteration (a client lives one iteration; its model and random stream go on).
    made: u64,
    /// With `--verify`, after an INCRBYFLOAT: its key and the sum the model expects about (NaN: not known).
    float_next: Option<(u64, f64)>,
    /// What the last op was, for a message.
    last: String,
}

/// The second half of memcached's cas.
struct CasNext {
    n: u64,
    key: Vec<u8>,
    value: Vec<u8>,
    /// Seconds to live (0: for ever).
    exptime: u32,
    token: Option<u64>,
}

/// A Redis transaction on its way: MULTI sent, ops queued, EXEC (or DISCARD) to come.
struct Tran {
    /// Ops still to queue.
    left: u32,
    /// With `--verify`: the data EXEC must answer, the queued ops' expected values one after the other (what the
    /// decoder keeps of an array); None once an op's answer cannot be predicted (a cursor step).
    replies: Option<Vec<u8>>,
}

/// What a client knows of its keys: every value, and while a transaction is queued, how to undo it.
#[derive(Debug, Default)]
struct Model {
    values: HashMap<u64, Vec<u8>>,
    /// While a transaction is queued: each change's key and its value before, oldest first.
    undo: Option<Vec<(u64, Option<Vec<u8>>)>>,
}

impl Model {
    fn get(&self, n: &u64) -> Option<&Vec<u8>> {
        self.values.get(n)
    }

    fn insert(&mut self, n: u64, v: Vec<u8>) {
        let old = self.values.insert(n, v);
        if let Some(undo) = &mut self.undo {
            undo.push((n, old));
        }
    }

    /// Whether the key existed.
    fn remove(&mut self, n: u64) -> bool {
        let old = self.values.remove(&n);
        let existed = old.is_some();
        if let (Some(undo), Some(_)) = (&mut self.undo, &old) {
            undo.push((n, old));
        }
        existed
    }

    /// The changes from here on may be undone (a MULTI).
    fn begin(&mut self) {
        self.undo = Some(Vec::new());
    }

    /// The changes stand (an EXEC).
    fn commit(&mut self) {
        self.undo = None;
    }

    /// The changes since [`begin`](Self::begin) never happened (a DISCARD, or a connection lost before EXEC).
    fn rollback(&mut self) {
        for (n, old) in self.undo.take().unwrap_or_default().into_iter().rev() {
            match old {
                Some(v) => self.values.insert(n, v),
                None => self.values.remove(&n),
            };
        }
    }
}

impl Drop for WickedClient {
    fn drop(&mut self) {
        // A transaction cut off by the end of the step never ran: its connection closes with the client.
        if self.tran.take().is_some() {
            self.model.rollback();
        }
        let state =
            (std::mem::take(&mut self.model.values), std::mem::take(&mut self.lost), self.rng.clone(), self.steps);
        if let Ok(mut saved) = self.wicked.saved.lock() {
            saved.insert(self.client, state);
        }
    }
}

/// The spec (figure) each wicked operation counts under; the plan names them in this order.
pub const WICKED_OPS: [&str; 14] = [
    "set",
    "add",
    "replace",
    "append",
    "incr",
    "cas",
    "remove",
    "get",
    "set_bulk",
    "remove_bulk",
    "get_bulk",
    "clear",
    "cursor",
    "transaction",
];

/// The specs of the figures not every server has: memcached's are the first twelve (no cursor, no transactions).
const CLEAR: usize = 11;
const CURSOR: usize = 12;
const TRANSACTION: usize = 13;

/// One step in this many begins a transaction; with 1-4 ops in each, about 1 % of steps run in one, as in Kyoto.
const TRANSACTION_ONE_IN: u32 = 250;

impl WickedClient {
    fn key_number(&mut self) -> u64 {
        let w = &self.wicked;
        if w.verify {
            self.client as u64 * w.rnum + self.rng.random_range(0..w.rnum) + 1
        } else {
            self.rng.random_range(0..(w.rnum * self.clients / 2).max(1)) + 1
        }
    }

    fn value_for(&mut self, key: &[u8]) -> Vec<u8> {
        // Kyoto: the key, or one time in ten a run of '*' of rand(1024) / (rand(5) + 1) bytes.
        if self.rng.random_range(0..10) == 0 {
            let len = self.rng.random_range(0..1024) / (self.rng.random_range(0..5) + 1);
            vec![b'*'; len.max(1)]
        } else {
            key.to_vec()
        }
    }

    pub fn continues(&self) -> bool {
        self.cas_next.as_ref().is_some_and(|c| c.token.is_some()) || self.tran.is_some()
    }

    /// The chain broke (a failure, which closes the connection, or a wrong answer): a cas has no second half, and
    /// a transaction whose EXEC was never sent never ran.
    pub fn drop_second_half(&mut self) {
        self.cas_next = None;
        if self.tran.take().is_some() {
            self.model.rollback();
        }
    }

    pub fn keeps_values(&self) -> bool {
        self.wicked.verify || self.wicked.protocol == Protocol::Memcache
    }

    pub fn next_op(&mut self) -> Op {
        self.steps += 1;
        // An INCRBYFLOAT that failed was never answered: the model keeps the value before it.
        self.float_next = None;
        if let Some(CasNext { n, key, value, exptime, token: Some(token) }) = self.cas_next.take() {
            let verify = self.wicked.verify;
            let expect = if verify {
                self.model.insert(n, value.clone());
                self.lost.remove(&n);
                Expect::Exact { status: VALUE, value: None }
            } else {
                Expect::Any { tolerated: &[NOT_STORED, MISS] }
            };
            self.last = format!("cas of {}", shown(&key));
            return Op {
                spec: 5,
                request: Request::new(
                    memcache::encode_store_expiring("cas", &key, &value, exptime, Some(token)),
                    false,
                ),
                expect,
            };
        }
        let resp = self.wicked.protocol == Protocol::Resp;
        if self.tran.is_none() {
            // A new step. Kyoto: at step rnum / 2 each thread clears the database with p = 1 / (4 x threads); not
            // under --verify, where it would wipe the other clients' keys.
            self.made += 1;
            if self.wicked.clear
                && !self.wicked.verify
                && self.made == self.wicked.rnum / 2
                && self.rng.random_range(0..4 * self.clients.max(1)) == 0
            {
                self.last = "clear".into();
                let bytes = if resp { resp::encode(&[b"FLUSHDB"]) } else { memcache::encode_line(&[b"flush_all"]) };
                return Op { spec: CLEAR, request: Request::new(bytes, false), expect: Expect::Any { tolerated: &[] } };
            }
        }
        if resp && let Some(op) = self.transaction_op() {
            return op;
        }
        self.step_op()
    }

    /// Redis: the next op of a transaction, or a MULTI that begins one (Kyoto runs about 1 % of wicked's steps in
    /// transactions). MULTI, each queued op and the EXEC (or one time in ten a DISCARD) are chained into one
    /// figure, `transaction`, from MULTI's intended send to EXEC's answer. None: an op outside any transaction.
    fn transaction_op(&mut self) -> Option<Op> {
        let verify = self.wicked.verify;
        let checked = |status: u16, value: Option<Vec<u8>>| {
            if verify { Expect::Exact { status, value } } else { Expect::Any { tolerated: &[] } }
        };
        // Sent again on a new connection, a queued op would run outside the transaction: never retried.
        let op = |bytes: Vec<u8>, expect: Expect| Op { spec: TRANSACTION, request: Request::new(bytes, false), expect };
        let Some(tran) = self.tran.as_mut() else {
            if self.rng.random_range(0..TRANSACTION_ONE_IN) != 0 {
                return None;
            }
            let left = self.rng.random_range(1..=4);
            self.tran = Some(Tran { left, replies: Some(Vec::new()) });
            self.model.begin();
            self.last = "MULTI".into();
            return Some(op(resp::encode(&[b"MULTI"]), checked(VALUE, None)));
        };
        if tran.left > 0 {
            tran.left -= 1;
            let queued = self.step_op();
            let Some(tran) = self.tran.as_mut() else { unreachable!("the transaction is open") };
            tran.replies = match (tran.replies.take(), &queued.expect) {
                (Some(mut replies), Expect::Exact { value, .. }) => {
                    // The decoder keeps an array's bulk strings and integers, one after the other; +OK, a nil and
                    // an error add nothing.
                    replies.extend_from_slice(value.as_deref().unwrap_or_default());
                    Some(replies)
                }
                _ => None,
            };
            self.last = format!("queued {}", self.last);
            return Some(op(queued.request.bytes, checked(VALUE, None)));
        }
        let Some(tran) = self.tran.take() else { unreachable!("the transaction is open") };
        if self.rng.random_range(0..10) == 0 {
            self.model.rollback();
            self.last = "DISCARD".into();
            return Some(op(resp::encode(&[b"DISCARD"]), checked(VALUE, None)));
        }
        self.model.commit();
        self.last = "EXEC".into();
        Some(op(resp::encode(&[b"EXEC"]), checked(VALUE, tran.replies)))
    }

    /// One of wicked's steps outside a transaction (or queued in one).
    fn step_op(&mut self) -> Op {
        let resp = self.wicked.protocol == Protocol::Resp;
        let verify = self.wicked.verify;
        let prefix = self.wicked.key_prefix.clone();
        let op = self.rng.random_range(0..16u32);
        // Kyoto: one key in 1,000 is 1-64 raw bytes (not under --verify: no client owns it; key number 0 stands
        // for it), and every write expires after rand(600) s (1-600 here: Redis refuses 0 and memcached reads it
        // as never; not under --verify, whose model would have to know when each key goes).
        let raw = !verify && self.rng.random_range(0..1000) == 0;
        let ttl = if verify { 0 } else { self.rng.random_range(1..=600u32) };
        let ttl_text = ttl.to_string();
        let expiring: Vec<&[u8]> = if verify { vec![] } else { vec![b"EX", ttl_text.as_bytes()] };
        // Kyoto: with p = 1 % another op follows on the same key.
        let n = if raw {
            0
        } else if self.last_key != 0 && self.rng.random_range(0..100) == 0 {
            self.last_key
        } else {
            self.key_number()
        };
        let key = if raw { raw_key(&mut self.rng, resp) } else { key_of(&prefix, n) };
        let present = self.model.get(&n).cloned();
        let lost = self.lost.contains(&n);
        self.last_key = n;
        let tolerate = |t: &'static [u16]| Expect::Any { tolerated: t };
        let exact = |status: u16, value: Option<Vec<u8>>| Expect::Exact { status, value };
        let refused = if resp { MISS } else { NOT_STORED };
        let (spec, bytes, expect) = match op {
            0 | 9 if op == 0 || !resp => {
                let v = self.value_for(&key);
                self.model.insert(n, v.clone());
                self.lost.remove(&n);
                let bytes = if resp {
                    let mut args: Vec<&[u8]> = vec![b"SET", &key, &v];
                    args.extend_from_slice(&expiring);
                    resp::encode(&args)
                } else {
                    memcache::encode_store_expiring("set", &key, &v, ttl, None)
                };
                (if op == 0 { 0 } else { 8 }, bytes, if verify { exact(VALUE, None) } else { tolerate(&[]) })
            }
            9 => {
                // MSET of 1-3 keys.
                let mut args: Vec<Vec<u8>> = vec![b"MSET".to_vec()];
                for i in 0..self.rng.random_range(1..=3) {
                    let m = if i == 0 { n } else { self.key_number() };
                    let k = key_of(&prefix, m);
                    let v = self.value_for(&k);
                    self.model.insert(m, v.clone());
                    args.extend([k, v]);
                }
                let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
                (8, resp::encode(&refs), if verify { exact(VALUE, None) } else { tolerate(&[]) })
            }
            1 | 2 => {
                // add stores on a missing key, replace on an existing one; each is refused otherwise.
                let add = op == 1;
                let v = self.value_for(&key);
                let stores = present.is_some() != add;
                if stores {
                    self.model.insert(n, v.clone());
                    self.lost.remove(&n);
                }
                let (flag, verb) = if add { (&b"NX"[..], "add") } else { (&b"XX"[..], "replace") };
                let bytes = if resp {
                    let mut args: Vec<&[u8]> = vec![b"SET", &key, &v, flag];
                    args.extend_from_slice(&expiring);
                    resp::encode(&args)
                } else {
                    memcache::encode_store_expiring(verb, &key, &v, ttl, None)
                };
                let status = if stores { VALUE } else { refused };
                (op as usize, bytes, if verify { exact(status, None) } else { tolerate(&[MISS, NOT_STORED]) })
            }
            3 => {
                let v = self.value_for(&key);
                let expect = match (&present, resp) {
                    (Some(old), _) => {
                        let new = [old.as_slice(), &v].concat();
                        let len = new.len();
                        self.model.insert(n, new);
                        exact(VALUE, resp.then(|| len.to_string().into_bytes()))
                    }
                    (None, true) => {
                        self.model.insert(n, v.clone());
                        exact(VALUE, Some(v.len().to_string().into_bytes()))
                    }
                    (None, false) => exact(NOT_STORED, None),
                };
                let bytes = if resp {
                    resp::encode(&[b"APPEND", &key, &v])
                } else {
                    memcache::encode_store("append", &key, &v, None)
                };
                (3, bytes, if verify { expect } else { tolerate(&[NOT_STORED]) })
            }
            4 if resp && self.tran.is_none() && self.rng.random_range(0..2) == 0 => {
                // Kyoto increments a double half the time: INCRBYFLOAT. Never queued in a transaction, where its
                // answer, which the model learns the new value from, would come inside EXEC's.
                let (bytes, expect) = self.float_increment(n, &key, present.as_deref());
                (4, bytes, if verify { expect } else { tolerate(&[ERROR]) })
            }
            4 => {
                let d = self.rng.random_range(0..100u64);
                let ds = d.to_string();
                let expect = if resp {
                    match present.as_deref().map(redis_int) {
                        None => {
                            self.model.insert(n, ds.clone().into_bytes());
                            exact(VALUE, Some(ds.clone().into_bytes()))
                        }
                        Some(Some(old)) if old.checked_add(d as i64).is_some() => {
                            let new = (old + d as i64).to_string().into_bytes();
                            self.model.insert(n, new.clone());
                            exact(VALUE, Some(new))
                        }
                        Some(_) => exact(ERROR, None),
                    }
                } else {
                    match present.as_deref().map(memcached_uint) {
                        None => exact(MISS, None),
                        // Its value unknown, so is whether it reads as a number.
                        Some(_) if lost => tolerate(&[ERROR]),
                        Some(Some(old)) => {
                            let new = old.wrapping_add(d).to_string().into_bytes();
                            // Shorter than before: padded with spaces or not, as memcached rewrote it in place or
                            // not (see `lost`).
                            if new.len() < present.as_ref().map_or(0, Vec::len) {
                                self.lost.insert(n);
                            }
                            self.model.insert(n, new.clone());
                            exact(VALUE, Some(new))
                        }
                        Some(None) => exact(ERROR, None),
                    }
                };
                let bytes = if resp {
                    resp::encode(&[b"INCRBY", &key, ds.as_bytes()])
                } else {
                    memcache::encode_line(&[b"incr", &key, ds.as_bytes()])
                };
                (4, bytes, if verify { expect } else { tolerate(&[ERROR, MISS]) })
            }
            5 if resp => {
                let v = self.value_for(&key);
                let hit = present.as_deref() == Some(key.as_slice());
                if hit {
                    self.model.insert(n, v.clone());
                }
                let bytes = resp::encode(&[b"EVAL", CAS_SCRIPT, b"1", &key, &key, &v]);
                (
                    5,
                    bytes,
                    if verify {
                        exact(VALUE, Some(if hit { b"1".to_vec() } else { b"0".to_vec() }))
                    } else {
                        tolerate(&[])
                    },
                )
            }
            5 => {
                // gets now; the cas follows with the token it answers (see observe), counted as one cas.
                let v = self.value_for(&key);
                self.cas_next = Some(CasNext { n, key: key.clone(), value: v, exptime: ttl, token: None });
                let expect = match &present {
                    Some(_) if lost => exact(VALUE, None),
                    Some(old) => exact(VALUE, Some(old.clone())),
                    None => exact(MISS, None),
                };
                (5, memcache::encode_line(&[b"gets", &key]), if verify { expect } else { tolerate(&[MISS]) })
            }
            6 | 10 if op == 6 || !resp => {
                let gone = self.model.remove(n);
                self.lost.remove(&n);
                let expect = if resp {
                    exact(VALUE, Some(if gone { b"1".to_vec() } else { b"0".to_vec() }))
                } else {
                    exact(if gone { VALUE } else { MISS }, None)
                };
                let bytes =
                    if resp { resp::encode(&[b"DEL", &key]) } else { memcache::encode_line(&[b"delete", &key]) };
                (if op == 6 { 6 } else { 9 }, bytes, if verify { expect } else { tolerate(&[MISS]) })
            }
            10 => {
                let mut args: Vec<Vec<u8>> = vec![b"DEL".to_vec()];
                let mut gone = 0;
                for i in 0..self.rng.random_range(1..=3) {
                    let m = if i == 0 { n } else { self.key_number() };
                    gone += u32::from(self.model.remove(m));
                    args.push(key_of(&prefix, m));
                }
                let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
                (
                    9,
                    resp::encode(&refs),
                    if verify { exact(VALUE, Some(gone.to_string().into_bytes())) } else { tolerate(&[]) },
                )
            }
            11 => {
                let mut keys = vec![key.clone()];
                let mut want = present.clone().unwrap_or_default();
                let mut any = present.is_some();
                let mut unknown = lost;
                for _ in 0..self.rng.random_range(0..=2) {
                    let m = self.key_number();
                    if let Some(v) = self.model.get(&m) {
                        want.extend_from_slice(v);
                        any = true;
                    }
                    unknown |= self.lost.contains(&m);
                    keys.push(key_of(&prefix, m));
                }
                let mut words: Vec<&[u8]> = vec![if resp { b"MGET" } else { b"get" }];
                words.extend(keys.iter().map(Vec::as_slice));
                let bytes = if resp { resp::encode(&words) } else { memcache::encode_line(&words) };
                let status = if resp || any { VALUE } else { MISS };
                let want = (!unknown).then_some(want);
                (10, bytes, if verify { exact(status, want) } else { tolerate(&[MISS]) })
            }
            8 if resp => {
                // Kyoto's cursor step: a jump to the key and a read there. Redis has no cursor to keep, so it is a
                // SCAN from the start matching the key, one round trip; where the key falls in the table decides
                // whether one call finds it, so the answer is counted, not checked.
                let bytes = resp::encode(&[b"SCAN", b"0", b"MATCH", &key, b"COUNT", b"100"]);
                (CURSOR, bytes, tolerate(&[]))
            }
            _ => {
                let expect = match &present {
                    Some(_) if lost => exact(VALUE, None),
                    Some(v) => exact(VALUE, Some(v.clone())),
                    None => exact(MISS, None),
                };
                let bytes = if resp { resp::encode(&[b"GET", &key]) } else { memcache::encode_get(&key) };
                (7, bytes, if verify { expect } else { tolerate(&[MISS]) })
            }
        };
        self.last = format!("{} of {}", WICKED_OPS[spec], shown(&key));
        let idempotent = Wicked::reads(spec);
        Op { spec, request: Request::new(bytes, idempotent), expect }
    }

    /// Kyoto's double increment on Redis: INCRBYFLOAT by rand(rnum x 10) / (rand(rnum) + 1), as Kyoto draws it.
    /// Redis adds in a long double and prints 17 decimals without trailing zeros; rather than copy that, the model
    /// checks that the answer is the sum to 1e-9 of its size and then keeps Redis's text (see `observe`).
    fn float_increment(&mut self, n: u64, key: &[u8], present: Option<&[u8]>) -> (Vec<u8>, Expect) {
        let rnum = self.wicked.rnum.max(1);
        let d = self.rng.random_range(0..rnum.saturating_mul(10)) as f64 / (self.rng.random_range(0..rnum) + 1) as f64;
        let ds = d.to_string();
        let bytes = resp::encode(&[b"INCRBYFLOAT", key, ds.as_bytes()]);
        let (sum, expect) = match present.map(redis_float) {
            None => (Some(d), Expect::Exact { status: VALUE, value: None }),
            Some(FloatRead::Number(old)) => (Some(old + d), Expect::Exact { status: VALUE, value: None }),
            Some(FloatRead::NotANumber) => (None, Expect::Exact { status: ERROR, value: None }),
            // A form the model does not read (say "12.5" appended to "3"): the answer is learned, not checked.
            Some(FloatRead::Unsure) => (Some(f64::NAN), Expect::Any { tolerated: &[ERROR] }),
        };
        if self.wicked.verify {
            self.float_next = sum.map(|sum| (n, sum));
        }
        (bytes, expect)
    }

    pub fn observe(&mut self, op: &Op, reply: Reply<'_>) -> Verdict {
        let what = || {
            format!(
                "wicked --verify: client {} op {} ({}); replay with --seed {}",
                self.client, self.steps, self.last, self.seed
            )
        };
        let mut verdict = judge(&op.expect, reply.answer, reply.value, what);
        // An INCRBYFLOAT's answer is the key's new value (only `--verify` keeps answers).
        if let Some((n, sum)) = self.float_next.take()
            && reply.answer.status == VALUE
        {
            let got = std::str::from_utf8(reply.value).ok().and_then(|t| t.parse::<f64>().ok());
            let off = |g: f64| (g - sum).abs() > 1e-9 * sum.abs().max(1.0);
            if verdict == Verdict::Pass && !sum.is_nan() && got.is_none_or(off) {
                verdict = Verdict::Wrong(format!(
                    "{}: answered {}, the model expects about {sum}",
                    what(),
                    shown(reply.value)
                ));
            }
            self.model.insert(n, reply.value.to_vec());
        }
        // A read of a key whose value the model lost shows it again.
        if matches!(op.spec, 5 | 7) && reply.answer.status == VALUE && self.lost.remove(&self.last_key) {
            self.model.insert(self.last_key, reply.value.to_vec());
        }
        // The gets of a cas: the cas follows only after a hit, with the token the hit carries.
        if let Some(mut cas) = self.cas_next.take()
            && cas.token.is_none()
            && reply.answer.status == VALUE
            && let Some(token) = reply.cas
        {
            cas.token = Some(token);
            self.cas_next = Some(cas);
        }
        verdict
    }
}

/// The number Redis's INCRBY reads in a value: a canonical 64-bit integer (no sign but '-', no leading zero, no
/// space), as its string2ll does.
fn redis_int(v: &[u8]) -> Option<i64> {
    let digits = v.strip_prefix(b"-").unwrap_or(v);
    if v.is_empty() || v.len() > 20 || digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    if digits[0] == b'0' && (digits.len() > 1 || v[0] == b'-') {
        return None;
    }
    std::str::from_utf8(v).ok()?.parse().ok()
}

/// How Redis's INCRBYFLOAT reads a value (its string2ld: strtold over the whole value, no leading space).
#[derive(Debug, PartialEq)]
enum FloatRead {
    /// A plain decimal (`12`, `-3.25`): surely read, as about this.
    Number(f64),
    /// Surely refused: empty, or a byte no number has (`key:1`, `***`).
    NotANumber,
    /// Some other form strtold may or may not read (`1e5`, `0x1p3`, `inf`, `1.51.5`).
    Unsure,
}

fn redis_float(v: &[u8]) -> FloatRead {
    let allowed = |b: &u8| b.is_ascii_alphanumeric() || b"+-.()_".contains(b);
    if v.is_empty() || !v.iter().all(allowed) {
        return FloatRead::NotANumber;
    }
    let digits = v.strip_prefix(b"-").unwrap_or(v);
    let (whole, fraction) = match digits.iter().position(|&b| b == b'.') {
        Some(dot) => (&digits[..dot], Some(&digits[dot + 1..])),
        None => (digits, None),
    };
    let plain = v.len() <= 30
        && !whole.is_empty()
        && whole.iter().all(u8::is_ascii_digit)
        && fraction.is_none_or(|f| !f.is_empty() && f.iter().all(u8::is_ascii_digit));
    match std::str::from_utf8(v).ok().and_then(|t| t.parse::<f64>().ok()) {
        Some(x) if plain => FloatRead::Number(x),
        _ => FloatRead::Unsure,
    }
}

/// Kyoto's raw key: 1-64 bytes, counting up from 0 or random. memcached's text protocol cannot carry control
/// bytes or spaces in a key, so there each byte is folded into '!'..='~'.
fn raw_key(rng: &mut ChaCha8Rng, resp: bool) -> Vec<u8> {
    let len = rng.random_range(1..=64usize);
    let counting = rng.random_range(0..2) == 0;
    let bytes = (0..len).map(|j| if counting { j as u8 } else { rng.random_range(0..=255u8) });
    if resp { bytes.collect() } else { bytes.map(|b| b'!' + b % 94).collect() }
}

/// The number memcached's incr reads in a value: leading spaces, digits, then the end or a space (its
/// safe_strtoull); at most 2^64 - 1.
fn memcached_uint(v: &[u8]) -> Option<u64> {
    let v = &v[v.iter().take_while(|b| b.is_ascii_whitespace()).count()..];
    let digits = v.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || v.get(digits).is_some_and(|b| !b.is_ascii_whitespace()) {
        return None;
    }
    std::str::from_utf8(&v[..digits]).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_as_redis_and_memcached_read_them() {
        assert_eq!(redis_int(b"12"), Some(12));
        assert_eq!(redis_int(b"-3"), Some(-3));
        assert_eq!(redis_int(b"0"), Some(0));
        for bad in [&b"00000012"[..], b"", b"-", b"1 ", b"-0", b"99999999999999999999", b"*"] {
            assert_eq!(redis_int(bad), None, "{}", String::from_utf8_lossy(bad));
        }
        assert_eq!(memcached_uint(b"00000012"), Some(12));
        assert_eq!(memcached_uint(b"12   "), Some(12));
        assert_eq!(memcached_uint(b"18446744073709551615"), Some(u64::MAX));
        for bad in [&b"18446744073709551616"[..], b"", b"*12", b"12*", b"-1"] {
            assert_eq!(memcached_uint(bad), None, "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn values_read_as_redis_reads_a_float() {
        assert_eq!(redis_float(b"12"), FloatRead::Number(12.0));
        assert_eq!(redis_float(b"-3.25"), FloatRead::Number(-3.25));
        assert_eq!(redis_float(b"00000012"), FloatRead::Number(12.0));
        for bad in [&b""[..], b"key:00000012", b"***", b" 12", b"12 "] {
            assert_eq!(redis_float(bad), FloatRead::NotANumber, "{}", String::from_utf8_lossy(bad));
        }
        for unsure in [&b"1e5"[..], b"inf", b"1.51.5", b"12.", b"0x1p3", b"abc"] {
            assert_eq!(redis_float(unsure), FloatRead::Unsure, "{}", String::from_utf8_lossy(unsure));
        }
    }

    #[test]
    fn raw_keys_are_any_bytes_on_redis_and_printable_on_memcached() {
        let mut rng = <ChaCha8Rng as rand::SeedableRng>::seed_from_u64(5);
        let redis: Vec<Vec<u8>> = (0..200).map(|_| raw_key(&mut rng, true)).collect();
        let memcached: Vec<Vec<u8>> = (0..200).map(|_| raw_key(&mut rng, false)).collect();
        for keys in [&redis, &memcached] {
            assert!(keys.iter().all(|k| (1..=64).contains(&k.len())));
        }
        assert!(redis.iter().flatten().any(|b| b.is_ascii_control() || *b == b' ' || *b >= 0x80));
        assert!(memcached.iter().flatten().all(|b| b.is_ascii_graphic()));
        // Half of them count up from 0, as Kyoto's do.
        assert!(redis.iter().any(|k| k.iter().enumerate().all(|(j, &b)| b == j as u8) && k.len() > 3));
    }

    #[test]
    fn a_discarded_transaction_leaves_the_model_as_it_was() {
        let mut model = Model::default();
        model.insert(1, b"one".to_vec());
        model.insert(2, b"two".to_vec());
        let before = model.values.clone();
        model.begin();
        model.insert(1, b"uno".to_vec());
        model.insert(1, b"eins".to_vec());
        assert!(model.remove(2));
        assert!(!model.remove(4));
        model.insert(3, b"three".to_vec());
        model.rollback();
        assert_eq!(model.values, before);
        assert!(model.undo.is_none());
        model.begin();
        model.insert(3, b"three".to_vec());
        model.commit();
        model.rollback();
        assert_eq!(model.get(&3).map(Vec::as_slice), Some(&b"three"[..]));
    }
}
