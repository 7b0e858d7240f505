//! What a key-value run may do to data it did not write: nothing without a flag. The plan says what the workload
//! needs (an empty database, keys it will write); the engine looks at every server before the load (its
//! `survey`, which this layer below it does not name); [`Guard::judge`] turns what it found into a refusal or notes.
//!
//! redis-benchmark, memtier_benchmark and YCSB never clear a server; Kyoto's order and wicked do, as their model of
//! the data starts from nothing. So: order and wicked refuse a target holding keys unless `--flush`; the mix and
//! YCSB's load phase refuse to overwrite keys that already exist unless `--overwrite`, except under hakaru's own
//! key prefix, whose keys are an earlier run's by name (memtier's `memtier-` plays the same part).

use std::sync::Arc;

use crate::error::CliError;
use crate::protocol::Protocol;

/// The default `--key-prefix`, and what marks a prefix as hakaru's own.
pub const OWN_PREFIX: &str = "hakaru:";

/// Keys the run writes, and whether existing ones are hakaru's by name.
#[derive(Clone)]
pub struct Written {
    /// The first key's number: keys are numbered first .. first + count.
    pub first: u64,
    /// How many keys.
    pub count: u64,
    /// The key of number n.
    pub key: Arc<dyn Fn(u64) -> Vec<u8> + Send + Sync>,
    /// For people: `hakaru:0 ... hakaru:999`.
    pub shown: String,
    /// Under hakaru's own prefix: keys found are an earlier run's, overwritten with a note.
    pub own: bool,
    /// Why the keys written cannot be looked up (a template writing a key other than one `__key__`): a server
    /// holding anything is then refused unless `--overwrite`.
    pub unknowable: Option<&'static str>,
    /// What else the user may do, said in a refusal (before `--overwrite`).
    pub instead: &'static str,
}

impl std::fmt::Debug for Written {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Written").field("count", &self.count).field("shown", &self.shown).finish()
    }
}

impl Written {
    /// One key, the same in every request (`SET mine x`, `RENAME __key__ mykey:8`).
    pub fn fixed(key: Vec<u8>, by: &str) -> Written {
        let own = key.starts_with(OWN_PREFIX.as_bytes());
        Written {
            first: 0,
            count: 1,
            shown: format!("{} (written by {by})", String::from_utf8_lossy(&key)),
            key: Arc::new(move |_| key.clone()),
            own,
            unknowable: None,
            instead: "write __key__ in its place, or a key of hakaru's own (hakaru:...)",
        }
    }

    /// Keys the run cannot name before it runs: they count as not hakaru's.
    pub fn unknown(shown: String, why: &'static str) -> Written {
        Written {
            first: 0,
            count: 0,
            key: Arc::new(|_| Vec::new()),
            shown,
            own: false,
            unknowable: Some(why),
            instead: "write its keys as __key__ or fixed keys",
        }
    }
}

/// A `--command` template that may write: which of its words are keys it writes or deletes is asked of the server
/// before the load (`COMMAND GETKEYSANDFLAGS` with `sample`), or read from [`written_words`]' table.
#[derive(Clone, Debug)]
pub struct Template {
    /// The template as shown (`--command 'RENAME __key__ mykey:8'`, a password hidden).
    pub shown: String,
    /// Its words filled with sample values (the verb first): distinct key, value and row values, so the keys the
    /// server names map back to the words that hold them.
    pub sample: Vec<Vec<u8>>,
    /// The keys word i names, were it a written key (word 0, the verb, is never one).
    pub words: Vec<Written>,
}

/// The rules of one run.
#[derive(Clone, Debug)]
pub struct Guard {
    pub workload: String,
    pub protocol: Protocol,
    /// order and wicked: their model starts from an empty database.
    pub needs_empty: bool,
    /// `--flush`: everything is deleted before the load (the setup sends it).
    pub flush: bool,
    /// `--overwrite`: existing keys the run writes may be overwritten.
    pub overwrite: bool,
    /// Keys the run writes that could hold someone else's data (none: it writes none, or needs an empty target).
    pub writes: Vec<Written>,
    /// `--command` templates that may write: their written keys are found out before the load.
    pub templates: Vec<Template>,
}

/// What the engine found on one server.
#[derive(Clone, Debug)]
pub struct Holding {
    /// The server as the user wrote it, password hidden.
    pub target: String,
    /// Keys in the database (Redis `DBSIZE`) or items on the server (memcached `curr_items`).
    pub items: u64,
    /// Of each set of keys the run writes: how many were looked at and how many exist; `Unknown` when the server
    /// cannot say. Empty when not looked (an empty target, or nothing written).
    pub found: Vec<(Written, Found)>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Found {
    /// `existing` of `checked` keys exist; `checked` is below the run's key count when a sample was looked at.
    Counted { checked: u64, existing: u64 },
    /// The keys could not all be looked up: why (memcached without meta commands; more keys than are looked up one
    /// by one, under a prefix not hakaru's, where a sample could miss someone's key).
    Unknown(&'static str),
}

/// The most keys looked at on one server: beyond, an evenly spaced sample (100 round trips of 1,000 on Redis).
pub const MAX_CHECKED: u64 = 100_000;

impl Guard {
    /// What the run must look at before the load: the item count always, the keys it writes when there are any
    /// (with `--overwrite` too, to say how many it overwrote; not with `--flush`, which deletes them first).
    pub fn keys_to_check(&self) -> Option<(&[Written], &[Template])> {
        (!self.flush).then_some((&self.writes[..], &self.templates[..]))
    }

    fn unit(&self) -> &'static str {
        if self.protocol == Protocol::Resp { "keys" } else { "items" }
    }

    /// A refusal in one line, or the notes the run prints (what `--flush` deleted, which keys were overwritten).
    pub fn judge(&self, holdings: &[Holding]) -> Result<Vec<String>, CliError> {
        let unit = self.unit();
        let mut notes = Vec::new();
        for h in holdings {
            if self.flush {
                if h.items > 0 {
                    notes.push(format!("--flush deleted the {} {unit} {} held before the load", h.items, h.target));
                }
                continue;
            }
            if self.needs_empty && h.items > 0 {
                let empty = if self.protocol == Protocol::Resp {
                    "point it at an empty database (redis://HOST:PORT/15)"
                } else {
                    "point it at an empty memcached"
                };
                let scope = if self.protocol == Protocol::Resp {
                    "everything in that database"
                } else {
                    "every item on that server"
                };
                return Err(CliError::new(format!(
                    "target {}: holds {} {unit}, and --workload {} starts from an empty {} (it would delete them); {empty}, or add --flush, which deletes {scope}",
                    h.target,
                    h.items,
                    self.workload,
                    if self.protocol == Protocol::Resp { "database" } else { "server" },
                )));
            }
            for (w, found) in &h.found {
                if let Some(refusal) = self.judge_keys(h, w, *found, &mut notes) {
                    return Err(refusal);
                }
            }
        }
        Ok(notes)
    }
}

impl Guard {
    /// One set of written keys on one server: a refusal, or a note when some existed.
    fn judge_keys(&self, h: &Holding, w: &Written, found: Found, notes: &mut Vec<String>) -> Option<CliError> {
        let unit = self.unit();
        match found {
            Found::Counted { existing, checked } if existing > 0 => {
                let sampled =
                    if checked < w.count { format!(" (a sample of {checked} looked at)") } else { String::new() };
                let what = if w.count == 1 {
                    format!("the key {}", w.shown)
                } else {
                    format!("{existing} of the {} keys this run writes ({})", w.count, w.shown)
                };
                if w.own {
                    notes.push(format!(
                        "{what} {} on {} before it{sampled}, under hakaru's own prefix (an earlier run's): {} overwritten",
                        if existing == 1 { "was" } else { "were" },
                        h.target,
                        if existing == 1 { "it is" } else { "they are" },
                    ));
                } else if self.overwrite {
                    notes.push(format!(
                        "--overwrite: {what} existed on {}{sampled} and {} overwritten",
                        h.target,
                        if w.count == 1 { "is" } else { "are" }
                    ));
                } else {
                    let (exist, them) = if existing == 1 { ("exists", "it") } else { ("exist", "them") };
                    return Some(CliError::new(format!(
                        "target {}: {what} already {exist}{sampled}, and the run would overwrite or delete {them}; {}, or add --overwrite",
                        h.target, w.instead
                    )));
                }
            }
            Found::Unknown(why) if !w.own && !self.overwrite => {
                return Some(CliError::new(format!(
                    "target {}: holds {} {unit}, and whether the keys this run writes ({}) are among them cannot be told ({why}); {}, or add --overwrite",
                    h.target, h.items, w.shown, w.instead
                )));
            }
            _ => {}
        }
        None
    }
}

/// Which words of a command (its verb first) are keys it writes or deletes, from a table of the commands the
/// workloads and users send: for a server that cannot say (memcached; Redis before 7 without `COMMAND
/// GETKEYS`'s flags, or a proxy that answers no `COMMAND`). None: a command the table does not know, whose keys
/// count as unknown.
pub fn written_words(protocol: Protocol, words: &[Vec<u8>]) -> Option<Vec<usize>> {
    let verb = String::from_utf8_lossy(words.first()?).to_ascii_lowercase();
    let n = words.len();
    let word = |i: usize| words.get(i).map(|w| String::from_utf8_lossy(w).to_ascii_lowercase());
    let from = |i: usize| (i..n).collect::<Vec<_>>();
    if protocol != Protocol::Resp {
        return match verb.as_str() {
            "get" | "gets" | "mg" | "mn" | "version" | "stats" | "verbosity" => Some(vec![]),
            "set" | "add" | "replace" | "append" | "prepend" | "cas" | "incr" | "decr" | "delete" | "touch" | "ms"
            | "md" | "ma" => Some(vec![1]),
            "gat" | "gats" => Some(from(2)),
            _ => None,
        };
    }
    let reads = [
        "get",
        "mget",
        "exists",
        "type",
        "ttl",
        "pttl",
        "strlen",
        "getrange",
        "hget",
        "hgetall",
        "hmget",
        "hlen",
        "hkeys",
        "hvals",
        "hexists",
        "hstrlen",
        "lrange",
        "llen",
        "lindex",
        "lpos",
        "smembers",
        "scard",
        "sismember",
        "smismember",
        "srandmember",
        "sunion",
        "sinter",
        "sdiff",
        "zrange",
        "zrangebyscore",
        "zrevrange",
        "zscore",
        "zcard",
        "zrank",
        "zcount",
        "scan",
        "sscan",
        "hscan",
        "zscan",
        "ping",
        "echo",
        "info",
        "dbsize",
        "time",
        "keys",
        "randomkey",
        "bitcount",
        "getbit",
        "pfcount",
        "xrange",
        "xlen",
        "dump",
        "object",
        "memory",
        "evalsha_ro",
        "eval_ro",
        "fcall_ro",
        "select",
        "auth",
        "hello",
        "client",
        "config",
        "acl",
        "multi",
        "exec",
        "discard",
        "watch",
        "unwatch",
    ];
    if reads.contains(&verb.as_str()) {
        return Some(vec![]);
    }
    let first = [
        "set",
        "setnx",
        "setex",
        "psetex",
        "getset",
        "getdel",
        "getex",
        "append",
        "setrange",
        "setbit",
        "incr",
        "incrby",
        "incrbyfloat",
        "decr",
        "decrby",
        "expire",
        "pexpire",
        "expireat",
        "pexpireat",
        "persist",
        "hset",
        "hsetnx",
        "hmset",
        "hdel",
        "hincrby",
        "hincrbyfloat",
        "lpush",
        "rpush",
        "lpushx",
        "rpushx",
        "lpop",
        "rpop",
        "linsert",
        "lset",
        "lrem",
        "ltrim",
        "sadd",
        "srem",
        "spop",
        "zadd",
        "zrem",
        "zincrby",
        "zpopmin",
        "zpopmax",
        "zremrangebyscore",
        "zremrangebyrank",
        "pfadd",
        "xadd",
        "xdel",
        "xtrim",
        "geoadd",
        "move",
        "restore",
        "sunionstore",
        "sinterstore",
        "sdiffstore",
        "zunionstore",
        "zinterstore",
        "zdiffstore",
        "zrangestore",
        "pfmerge",
        "geosearchstore",
    ];
    if first.contains(&verb.as_str()) {
        return Some(vec![1]);
    }
    match verb.as_str() {
        "del" | "unlink" => Some(from(1)),
        "mset" | "msetnx" => Some((1..n).step_by(2).collect()),
        "rename" | "renamenx" | "copy" | "rpoplpush" | "brpoplpush" | "lmove" | "blmove" | "smove" => Some(vec![1, 2]),
        "bitop" => Some(vec![2]),
        "sort" => Some((2..n).filter(|&i| word(i - 1).as_deref() == Some("store")).collect()),
        "eval" | "evalsha" | "fcall" => {
            let keys: usize = word(2)?.parse().ok()?;
            (3 + keys <= n).then(|| (3..3 + keys).collect())
        }
        "migrate" => {
            let mut at: Vec<usize> = (n > 3 && !words[3].is_empty()).then_some(3).into_iter().collect();
            at.extend((1..n).skip_while(|&i| word(i).as_deref() != Some("keys")).skip(1));
            Some(at)
        }
        _ => None,
    }
}

/// `prefix0 ... prefix999`, as a user reads the keys of a numbered range.
pub fn shown_range(first: &[u8], last: &[u8]) -> String {
    format!("{} ... {}", String::from_utf8_lossy(first), String::from_utf8_lossy(last))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(needs_empty: bool, flush: bool, overwrite: bool) -> Guard {
        Guard {
            workload: if needs_empty { "order".into() } else { "mix".into() },
            protocol: Protocol::Resp,
            needs_empty,
            flush,
            overwrite,
            writes: Vec::new(),
            templates: Vec::new(),
        }
    }

    fn keys(own: bool) -> Written {
        Written {
            first: 0,
            count: 1000,
            key: Arc::new(|n| format!("k:{n}").into_bytes()),
            shown: "k:0 ... k:999".into(),
            own,
            unknowable: None,
            instead: "choose another --key-prefix",
        }
    }

    fn held(items: u64, found: Option<Found>) -> Vec<Holding> {
        held_as(items, found, keys(false))
    }

    fn held_as(items: u64, found: Option<Found>, w: Written) -> Vec<Holding> {
        vec![Holding {
            target: "redis://127.0.0.1:6379".into(),
            items,
            found: found.map(|f| (w, f)).into_iter().collect(),
        }]
    }

    #[test]
    fn the_flags_default_prefix_is_hakarus_own() {
        use clap::Parser as _;
        let cli = crate::cli::args::Cli::try_parse_from(["hakaru", "kv", "redis://127.0.0.1"]).unwrap();
        let crate::cli::args::Command::Kv(kv) = cli.command else { panic!("kv") };
        assert_eq!(kv.key_prefix, OWN_PREFIX);
    }

    #[test]
    fn a_workload_that_clears_refuses_a_target_holding_keys_unless_flush() {
        let e = guard(true, false, false).judge(&held(1000, None)).unwrap_err().to_string();
        assert!(e.starts_with("target redis://127.0.0.1:6379: holds 1000 keys"), "{e}");
        assert!(e.contains("--workload order") && e.contains("--flush, which deletes everything"), "{e}");
        assert_eq!(guard(true, false, false).judge(&held(0, None)).unwrap(), Vec::<String>::new());
        let notes = guard(true, true, false).judge(&held(1000, None)).unwrap();
        assert_eq!(notes, ["--flush deleted the 1000 keys redis://127.0.0.1:6379 held before the load"]);
    }

    #[test]
    fn existing_keys_are_refused_under_a_foreign_prefix_and_noted_under_hakarus() {
        let found = Some(Found::Counted { checked: 1000, existing: 7 });
        let e = guard(false, false, false).judge(&held(50, found)).unwrap_err().to_string();
        assert!(e.contains("7 of the 1000 keys this run writes (k:0 ... k:999) already exist"), "{e}");
        assert!(e.ends_with("choose another --key-prefix, or add --overwrite"), "{e}");
        let notes = guard(false, false, false).judge(&held_as(50, found, keys(true))).unwrap();
        assert!(notes[0].contains("hakaru's own prefix"), "{notes:?}");
        let notes = guard(false, false, true).judge(&held(50, found)).unwrap();
        assert!(notes[0].starts_with("--overwrite: 7 of the 1000"), "{notes:?}");
        // Keys elsewhere in the database are not the run's business.
        let none = Some(Found::Counted { checked: 1000, existing: 0 });
        assert!(guard(false, false, false).judge(&held(50, none)).unwrap().is_empty());
        let unknown = Some(Found::Unknown("no meta commands"));
        let e = guard(false, false, false).judge(&held(50, unknown)).unwrap_err().to_string();
        assert!(e.contains("cannot be told (no meta commands)"), "{e}");
    }

    #[test]
    fn a_fixed_key_is_named_with_the_template_and_overwrite() {
        let found = Some(Found::Counted { checked: 1, existing: 1 });
        let mine = Written::fixed(b"mine".to_vec(), "--command 'SET mine x'");
        let e = guard(false, false, false).judge(&held_as(3, found, mine.clone())).unwrap_err().to_string();
        assert!(e.contains("the key mine (written by --command 'SET mine x') already exists"), "{e}");
        assert!(e.ends_with("or add --overwrite") && !e.contains("--key-prefix'"), "{e}");
        let ours = Written::fixed(b"hakaru:x".to_vec(), "--command 'SET hakaru:x 1'");
        assert!(guard(false, false, false).judge(&held_as(3, found, ours)).is_ok());
        let notes = guard(false, false, true).judge(&held_as(3, found, mine)).unwrap();
        assert!(notes[0].starts_with("--overwrite: the key mine") && notes[0].ends_with("is overwritten"), "{notes:?}");
    }

    fn words(text: &str) -> Vec<Vec<u8>> {
        text.split(' ').map(|w| w.as_bytes().to_vec()).collect()
    }

    #[test]
    fn the_table_names_every_key_a_command_writes() {
        let r = |t: &str| written_words(Protocol::Resp, &words(t));
        assert_eq!(r("GET k"), Some(vec![]));
        assert_eq!(r("set k v"), Some(vec![1]));
        assert_eq!(r("RENAME a b"), Some(vec![1, 2]));
        assert_eq!(r("MSET a 1 b 2"), Some(vec![1, 3]));
        assert_eq!(r("SUNIONSTORE d a b"), Some(vec![1]));
        assert_eq!(r("BITOP AND d a b"), Some(vec![2]));
        assert_eq!(r("RPOPLPUSH a b"), Some(vec![1, 2]));
        assert_eq!(r("LMOVE a b LEFT LEFT"), Some(vec![1, 2]));
        assert_eq!(r("SORT a BY x STORE d"), Some(vec![5]));
        assert_eq!(r("EVAL s 2 a b c"), Some(vec![3, 4]));
        assert_eq!(r("MIGRATE h 1 k 0 10 AUTH pw"), Some(vec![3]));
        assert_eq!(r("MIGRATE h 1  0 10 KEYS a b"), Some(vec![7, 8]));
        assert_eq!(r("DEL a b"), Some(vec![1, 2]));
        assert_eq!(r("FROBNICATE a"), None);
        assert_eq!(written_words(Protocol::Memcache, &words("delete k")), Some(vec![1]));
        assert_eq!(written_words(Protocol::Memcache, &words("get k")), Some(vec![]));
    }
}
