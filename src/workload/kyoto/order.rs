//! Kyoto Tycoon's `order` pattern: set, [add, append,] get, [walk,] remove over each client's own keys, each phase a
//! step of its own, every answer checked under `--verify`.

use super::*;

/// A phase of `order`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Set,
    Add,
    Append,
    Get,
    Walk,
    Remove,
}

impl Phase {
    pub fn name(self) -> &'static str {
        match self {
            Phase::Set => "set",
            Phase::Add => "add",
            Phase::Append => "append",
            Phase::Get => "get",
            Phase::Walk => "walk",
            Phase::Remove => "remove",
        }
    }

    /// Kyoto's phases: set, get, remove; with `--etc` add and append after set, and a walk after get.
    pub fn all(etc: bool) -> Vec<Phase> {
        if etc {
            vec![Phase::Set, Phase::Add, Phase::Append, Phase::Get, Phase::Walk, Phase::Remove]
        } else {
            vec![Phase::Set, Phase::Get, Phase::Remove]
        }
    }
}

/// One phase of `order`, as planned.
#[derive(Clone, Debug)]
pub struct Order {
    pub protocol: Protocol,
    pub phase: Phase,
    /// Operations per client in each phase (Kyoto's rnum is per thread).
    pub rnum: u64,
    /// Keys drawn at random from all clients' range (with repeats, so some reads miss) instead of each client's own.
    pub rnd: bool,
    /// Add and append ran: a value read is the key twice.
    pub etc: bool,
    /// The walk must see every key written: not when agents of a scaled-out run set their keys apart, each in its
    /// own time.
    pub check_walk: bool,
    pub key_prefix: String,
}

pub(super) fn key_of(prefix: &str, n: u64) -> Vec<u8> {
    let mut k = Vec::with_capacity(prefix.len() + 8);
    k.extend_from_slice(prefix.as_bytes());
    let _ = write!(k, "{n:08}");
    k
}

impl Order {
    pub fn client(&self, client: usize, clients: usize, rng: ChaCha8Rng) -> OrderClient {
        OrderClient {
            order: self.clone(),
            client: client as u64,
            clients: clients as u64,
            done: 0,
            rng,
            cursor: Some(b"0".to_vec()),
            seen: HashSet::new(),
        }
    }
}

/// One client's part of an `order` phase.
pub struct OrderClient {
    pub(super) order: Order,
    pub(super) client: u64,
    pub(super) clients: u64,
    pub(super) done: u64,
    pub(super) rng: ChaCha8Rng,
    /// The walk: the next SCAN cursor (None when the walk has ended), and the keys seen.
    pub(super) cursor: Option<Vec<u8>>,
    pub(super) seen: HashSet<Vec<u8>>,
}

impl OrderClient {
    pub fn exhausted(&self) -> bool {
        let o = &self.order;
        if o.phase == Phase::Walk {
            self.cursor.is_none() || self.client != 0 || o.protocol != Protocol::Resp
        } else {
            self.done >= o.rnum
        }
    }

    pub fn next_op(&mut self) -> Option<Op> {
        let o = &self.order;
        if o.phase == Phase::Walk {
            // One client walks; memcached cannot (the command refuses the phase before the run).
            let cursor = self.cursor.as_ref().filter(|_| self.client == 0 && o.protocol == Protocol::Resp)?;
            let pattern = format!("{}*", o.key_prefix);
            let bytes = resp::encode(&[b"SCAN", cursor, b"MATCH", pattern.as_bytes(), b"COUNT", b"1000"]);
            return Some(Op { spec: 0, request: Request::new(bytes, true), expect: Expect::Any { tolerated: &[] } });
        }
        if self.done >= o.rnum {
            return None;
        }
        let n = if o.rnd {
            self.rng.random_range(0..o.rnum * self.clients) + 1
        } else {
            self.client * o.rnum + self.done + 1
        };
        self.done += 1;
        let key = key_of(&o.key_prefix, n);
        let resp = o.protocol == Protocol::Resp;
        // A store of the key as its own value: the Redis command as given, or the memcached verb.
        let store = |redis: &[&[u8]], verb: &str| {
            if resp { resp::encode(redis) } else { memcache::encode_store(verb, &key, &key, None) }
        };
        let (bytes, idempotent, expect) = match o.phase {
            Phase::Set => (store(&[b"SET", &key, &key], "set"), true, Expect::Any { tolerated: &[] }),
            // The keys exist (without --rnd): add is refused, as Kyoto expects.
            Phase::Add => {
                (store(&[b"SET", &key, &key, b"NX"], "add"), false, Expect::Any { tolerated: &[MISS, NOT_STORED] })
            }
            Phase::Append => {
                (store(&[b"APPEND", &key, &key], "append"), false, Expect::Any { tolerated: &[NOT_STORED] })
            }
            Phase::Get => (
                if resp { resp::encode(&[b"GET", &key]) } else { memcache::encode_get(&key) },
                true,
                Expect::Prefix { prefix: key.clone(), miss_ok: o.rnd },
            ),
            Phase::Remove => (
                if resp { resp::encode(&[b"DEL", &key]) } else { memcache::encode_line(&[b"delete", &key]) },
                true,
                Expect::Any { tolerated: &[MISS] },
            ),
            Phase::Walk => unreachable!("the walk returned above"),
        };
        Some(Op { spec: 0, request: Request::new(bytes, idempotent), expect })
    }

    pub fn observe(&mut self, op: &Op, reply: Reply<'_>) -> Verdict {
        if self.order.phase != Phase::Walk {
            let verdict = judge(&op.expect, reply.answer, reply.value, || "order get".into());
            // A value read is the key, or the key twice after append, never anything else.
            if let (Verdict::Pass, Expect::Prefix { prefix, .. }) = (&verdict, &op.expect) {
                // With --rnd a key may be appended more than once: the key, repeated.
                let times = reply.value.len() / prefix.len().max(1);
                let repeated = reply.value.len().is_multiple_of(prefix.len().max(1))
                    && reply.value.chunks(prefix.len().max(1)).all(|c| c == prefix.as_slice());
                let ok = reply.value == prefix.as_slice()
                    || (self.order.etc && repeated && (times == 2 || (self.order.rnd && times >= 2)));
                if !ok {
                    return Verdict::Wrong(format!(
                        "order get: {} is not the key {}",
                        shown(reply.value),
                        shown(prefix)
                    ));
                }
            }
            return verdict;
        }
        // SCAN answers [cursor, [keys...]]: the kept values are the cursor, then each key.
        let mut start = 0;
        for (i, &end) in reply.ends.iter().enumerate() {
            let part = &reply.value[start..end];
            if i == 0 {
                self.cursor = (part != b"0").then(|| part.to_vec());
            } else {
                self.seen.insert(part.to_vec());
            }
            start = end;
        }
        if reply.ends.is_empty() {
            self.cursor = None;
            return Verdict::Wrong("order walk: SCAN answered no cursor".into());
        }
        if self.cursor.is_none() && !self.order.rnd && self.order.check_walk {
            let want = self.order.rnum * self.clients;
            if self.seen.len() as u64 != want {
                return Verdict::Wrong(format!(
                    "order walk: the walk saw {} keys, the set phase wrote {want}",
                    self.seen.len()
                ));
            }
        }
        Verdict::Pass
    }
}
