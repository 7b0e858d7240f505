//! Redis `MONITOR` captures read for replay (`kv --replay FILE`): each line a command as the server received it,
//! `1339518083.107412 [0 127.0.0.1:60866] "SET" "k" "v"`, its arguments quoted as Redis writes them (`\"`, `\\`,
//! `\n`, `\xHH`). Commands run by a script (`[0 lua]`) are left out (the script's own EVAL is recorded); commands
//! that change a connection's state, administer the server or block are never replayed; those that write are left
//! out unless asked (`--replay-writes`).

use std::io::BufReader;
use std::path::Path;

use super::When;

/// One recorded command.
#[derive(Clone, Debug, PartialEq)]
pub struct Command {
    /// Microseconds since the Unix epoch.
    pub at_us: i64,
    /// The database it ran on.
    pub db: u32,
    /// Its name (upper case) and arguments, as sent.
    pub args: Vec<Vec<u8>>,
}

impl Command {
    pub fn name(&self) -> String {
        String::from_utf8_lossy(&self.args[0]).to_ascii_uppercase()
    }
}

/// What a command does to the server, for the replay's safety.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Reads,
    Writes,
    /// Changes the connection's state (AUTH, SELECT, MULTI, SUBSCRIBE ...), administers the server (CONFIG,
    /// FLUSHALL, SHUTDOWN ...) or blocks (BLPOP ...): never replayed.
    Never,
}

/// Commands that only read, from Redis's command table (flag `readonly`, and the connection-neutral ones): every
/// other command counts as a write, so an unknown one is never sent unasked. PFCOUNT may rewrite its key's
/// representation and TOUCH moves its keys' LRU clocks: writes here; MEMORY has PURGE: never.
const READS: &[&str] = &[
    "GET",
    "MGET",
    "GETRANGE",
    "SUBSTR",
    "STRLEN",
    "EXISTS",
    "TTL",
    "PTTL",
    "EXPIRETIME",
    "PEXPIRETIME",
    "TYPE",
    "HGET",
    "HMGET",
    "HGETALL",
    "HKEYS",
    "HVALS",
    "HLEN",
    "HEXISTS",
    "HSTRLEN",
    "HRANDFIELD",
    "HSCAN",
    "LRANGE",
    "LLEN",
    "LINDEX",
    "LPOS",
    "SMEMBERS",
    "SISMEMBER",
    "SMISMEMBER",
    "SCARD",
    "SRANDMEMBER",
    "SINTER",
    "SINTERCARD",
    "SUNION",
    "SDIFF",
    "SSCAN",
    "ZRANGE",
    "ZRANGEBYSCORE",
    "ZREVRANGE",
    "ZREVRANGEBYSCORE",
    "ZRANGEBYLEX",
    "ZREVRANGEBYLEX",
    "ZSCORE",
    "ZMSCORE",
    "ZCARD",
    "ZCOUNT",
    "ZLEXCOUNT",
    "ZRANK",
    "ZREVRANK",
    "ZRANDMEMBER",
    "ZUNION",
    "ZINTER",
    "ZINTERCARD",
    "ZDIFF",
    "ZSCAN",
    "SCAN",
    "KEYS",
    "RANDOMKEY",
    "DBSIZE",
    "PING",
    "ECHO",
    "TIME",
    "BITCOUNT",
    "BITPOS",
    "GETBIT",
    "BITFIELD_RO",
    "GEOPOS",
    "GEODIST",
    "GEOHASH",
    "GEORADIUS_RO",
    "GEORADIUSBYMEMBER_RO",
    "GEOSEARCH",
    "XRANGE",
    "XREVRANGE",
    "XLEN",
    "OBJECT",
    "LCS",
    "EVAL_RO",
    "EVALSHA_RO",
    "FCALL_RO",
    "SORT_RO",
    "JSON.GET",
    "JSON.MGET",
    "JSON.TYPE",
    "JSON.STRLEN",
];

/// Commands never replayed, writes asked or not.
const NEVER: &[&str] = &[
    "AUTH",
    "HELLO",
    "SELECT",
    "SWAPDB",
    "MULTI",
    "EXEC",
    "DISCARD",
    "WATCH",
    "UNWATCH",
    "MONITOR",
    "SUBSCRIBE",
    "PSUBSCRIBE",
    "SSUBSCRIBE",
    "UNSUBSCRIBE",
    "PUNSUBSCRIBE",
    "SUNSUBSCRIBE",
    "QUIT",
    "RESET",
    "CLIENT",
    "CONFIG",
    "DEBUG",
    "SHUTDOWN",
    "FLUSHALL",
    "FLUSHDB",
    "MIGRATE",
    "REPLICAOF",
    "SLAVEOF",
    "SYNC",
    "PSYNC",
    "SAVE",
    "BGSAVE",
    "BGREWRITEAOF",
    "FAILOVER",
    "CLUSTER",
    "READONLY",
    "READWRITE",
    "ACL",
    "MODULE",
    "SCRIPT",
    "FUNCTION",
    "SLOWLOG",
    "LATENCY",
    "BLPOP",
    "BRPOP",
    "BLMOVE",
    "BRPOPLPUSH",
    "BLMPOP",
    "BZPOPMIN",
    "BZPOPMAX",
    "BZMPOP",
    "XREAD",
    "XREADGROUP",
    "WAIT",
    "WAITAOF",
    "INFO",
    "COMMAND",
    "LASTSAVE",
    "ROLE",
    "PUBLISH",
    "SPUBLISH",
    "MEMORY",
];

pub fn kind(name: &str) -> Kind {
    if NEVER.contains(&name) {
        Kind::Never
    } else if READS.contains(&name) {
        Kind::Reads
    } else {
        Kind::Writes
    }
}

/// What was read, and what of it is replayed.
#[derive(Debug, Default)]
pub struct Capture {
    /// In time order.
    pub commands: Vec<Command>,
    /// Lines that are no command (the `OK` MONITOR answers first, text), and the first one's number and reason.
    pub skipped: u64,
    pub first_skipped: Option<(u64, String)>,
    /// Commands a script ran (`[0 lua]`): its EVAL is the recorded one.
    pub from_scripts: u64,
    /// Commands never replayed (connection state, administration, blocking), by name with their counts.
    pub never: std::collections::BTreeMap<String, u64>,
    /// Commands that write, left out without `--replay-writes`.
    pub writes_left_out: u64,
    /// Commands outside `--replay-only command=`.
    pub filtered_out: u64,
    /// Commands outside the time window.
    pub outside_window: u64,
    /// The databases the commands ran on.
    pub dbs: std::collections::BTreeSet<u32>,
    /// The first command's instant in the file and the latest, of every command read.
    pub span: Option<(i64, i64)>,
}

/// Which commands are replayed.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    pub writes: bool,
    /// Command names (upper case); empty: all.
    pub commands: Vec<String>,
    pub from: Option<When>,
    pub until: Option<When>,
}

/// The longest line read (a command's arguments, quoted).
const MOST_LINE: u64 = 64 << 20;

/// Reads the capture in `path` (a regular file of at most `cap` bytes).
pub fn read(path: &Path, cap: u64, filter: &Filter) -> Result<Capture, String> {
    let file = crate::base::bounded::open(path, cap)?;
    let mut reader = BufReader::new(file);
    let (mut line, mut number) = (Vec::new(), 0u64);
    let mut c = Capture::default();
    while crate::base::bounded::next_line(&mut reader, &mut line, MOST_LINE)? {
        number += 1;
        if line.len() as u64 > MOST_LINE {
            return Err(format!("line {number}: longer than {} MiB; no MONITOR line is", MOST_LINE >> 20));
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        let (cmd, by_script) = match parse(text) {
            Ok(parsed) => parsed,
            Err(why) => {
                c.skipped += 1;
                c.first_skipped.get_or_insert((number, why));
                continue;
            }
        };
        let inside = super::within(&mut c.span, filter.from, filter.until, cmd.at_us);
        let name = cmd.name();
        if by_script {
            c.from_scripts += 1;
        } else if !inside {
            c.outside_window += 1;
        } else if kind(&name) == Kind::Never {
            *c.never.entry(name).or_default() += 1;
        } else if !filter.commands.is_empty() && !filter.commands.contains(&name) {
            c.filtered_out += 1;
        } else if kind(&name) == Kind::Writes && !filter.writes {
            c.writes_left_out += 1;
        } else {
            if c.commands.len() == super::MOST_RECORDS {
                return Err(format!(
                    "more than {} commands to replay; cut the capture (--replay-from, --replay-until, --replay-only) \
                     or replay it in parts",
                    super::MOST_RECORDS
                ));
            }
            c.dbs.insert(cmd.db);
            c.commands.push(cmd);
        }
    }
    // Stable: commands of one instant keep the file's order.
    c.commands.sort_by_key(|r| r.at_us);
    Ok(c)
}

/// One MONITOR line: the command, and whether a script ran it.
fn parse(line: &str) -> Result<(Command, bool), String> {
    let (time, rest) = line.split_once(' ').ok_or("no time and [db client]: not a MONITOR line")?;
    let secs: f64 = time.parse().map_err(|_| "its time is not seconds since the epoch: not a MONITOR line")?;
    if !(secs.is_finite() && (0.0..9e9).contains(&secs)) {
        return Err("its time is not seconds since the epoch: not a MONITOR line".into());
    }
    let rest = rest.strip_prefix('[').ok_or("no [db client] after the time: not a MONITOR line")?;
    let (db, rest) = rest.split_once(' ').ok_or("no client after the db")?;
    // The client ends at the `]` before the first argument's quote: an IPv6 client is `[::1]:55788` itself.
    let (client, args) = match rest.find("] \"").or_else(|| rest.find("] ")) {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest.strip_suffix(']').ok_or("no ']' after the db and client")?, ""),
    };
    let db: u32 = db.parse().map_err(|_| format!("db '{}' is not a number", crate::base::secrets::excerpt(db)))?;
    let args = arguments(args.trim_start())?;
    if args.is_empty() {
        return Err("no command".into());
    }
    // Seconds and microseconds as written, without a float's rounding.
    let at_us = match time.split_once('.') {
        Some((s, us)) if us.len() <= 6 => {
            s.parse::<i64>().map_err(|_| "bad time")? * 1_000_000 + format!("{us:0<6}").parse::<i64>().unwrap_or(0)
        }
        _ => (secs * 1e6) as i64,
    };
    Ok((Command { at_us, db, args }, client.trim() == "lua"))
}

/// The quoted arguments of a MONITOR line, unescaped as Redis's `sdscatrepr` escapes them.
fn arguments(text: &str) -> Result<Vec<Vec<u8>>, String> {
    let b = text.as_bytes();
    let (mut out, mut i) = (Vec::new(), 0);
    while i < b.len() {
        if b[i] == b' ' {
            i += 1;
            continue;
        }
        if b[i] != b'"' {
            return Err(format!("argument {} is not quoted", out.len() + 1));
        }
        i += 1;
        let mut arg = Vec::new();
        loop {
            match b.get(i) {
                None => return Err(format!("argument {} has no closing quote", out.len() + 1)),
                Some(b'"') => {
                    i += 1;
                    break;
                }
                Some(b'\\') => {
                    let (byte, used) = match b.get(i + 1) {
                        Some(b'n') => (b'\n', 2),
                        Some(b'r') => (b'\r', 2),
                        Some(b't') => (b'\t', 2),
                        Some(b'a') => (7, 2),
                        Some(b'b') => (8, 2),
                        Some(b'x') => {
                            let hex = text.get(i + 2..i + 4).ok_or("a \\x escape without two hex digits")?;
                            (u8::from_str_radix(hex, 16).map_err(|_| "a \\x escape without two hex digits")?, 4)
                        }
                        Some(&c) => (c, 2),
                        None => return Err("a line that ends in a backslash".into()),
                    };
                    arg.push(byte);
                    i += used;
                }
                Some(&c) => {
                    arg.push(c);
                    i += 1;
                }
            }
        }
        out.push(arg);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_monitor_line_gives_its_time_db_and_arguments_unescaped() {
        let (c, lua) = parse(r#"1339518083.107412 [0 127.0.0.1:60866] "SET" "k:1" "a \"b\"\\\n\xff""#).unwrap();
        assert!(!lua);
        assert_eq!((c.at_us, c.db, c.name()), (1_339_518_083_107_412, 0, "SET".to_string()));
        assert_eq!(c.args[2], b"a \"b\"\\\n\xff");
        let (c, lua) = parse(r#"1339518083.5 [3 lua] "get" "k""#).unwrap();
        assert!(lua && c.db == 3 && c.at_us == 1_339_518_083_500_000);
        let (c, _) = parse(r#"1339518083.000001 [0 unix:/tmp/redis.sock] "PING""#).unwrap();
        assert_eq!(c.args, [b"PING".to_vec()]);
        let (c, lua) = parse(r#"1339518083.000001 [0 [::1]:55788] "GET" "k""#).unwrap();
        assert_eq!((c.name(), lua), ("GET".to_string(), false), "an IPv6 client");
        for (bad, says) in [
            ("OK", "not a MONITOR line"),
            ("1339518083.1 [x 1.2.3.4:5] \"GET\"", "db 'x'"),
            ("1339518083.1 [0 1.2.3.4:5] \"GET", "no closing quote"),
            ("1339518083.1 [0 1.2.3.4:5] GET", "not quoted"),
            ("1339518083.1 [0 1.2.3.4:5] \"\\x4\"", "two hex digits"),
            ("1339518083.1 [0 1.2.3.4:5]", "no command"),
        ] {
            assert!(parse(bad).unwrap_err().contains(says), "{bad}: {:?}", parse(bad));
        }
    }

    #[test]
    fn reads_are_replayed_writes_when_asked_and_connection_state_never() {
        assert_eq!((kind("GET"), kind("HGETALL"), kind("SET")), (Kind::Reads, Kind::Reads, Kind::Writes));
        assert_eq!((kind("SELECT"), kind("FLUSHALL"), kind("BLPOP")), (Kind::Never, Kind::Never, Kind::Never));
        assert_eq!(kind("SOMENEWCOMMAND"), Kind::Writes, "unknown: taken for a write");
        assert_eq!((kind("PFCOUNT"), kind("TOUCH"), kind("MEMORY")), (Kind::Writes, Kind::Writes, Kind::Never));
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m.txt");
        let lines = [
            "OK",
            r#"1700000000.000000 [0 127.0.0.1:1] "AUTH" "(redacted)""#,
            r#"1700000000.100000 [0 127.0.0.1:1] "SET" "a" "1""#,
            r#"1700000000.300000 [0 127.0.0.1:1] "GET" "a""#,
            r#"1700000000.200000 [0 127.0.0.1:1] "GET" "b""#,
            r#"1700000000.250000 [0 lua] "GET" "c""#,
            r#"1700000009.000000 [1 127.0.0.1:1] "GET" "late""#,
        ];
        std::fs::write(&p, lines.join("\n")).unwrap();
        let f = Filter { until: Some(When::After(5_000_000)), ..Filter::default() };
        let c = read(&p, 1 << 20, &f).unwrap();
        let keys: Vec<&[u8]> = c.commands.iter().map(|c| &c.args[1][..]).collect();
        assert_eq!(keys, [&b"b"[..], b"a"], "in time order");
        assert_eq!((c.skipped, c.from_scripts, c.writes_left_out, c.outside_window), (1, 1, 1, 1));
        assert_eq!(c.never.get("AUTH"), Some(&1));
        let all = read(&p, 1 << 20, &Filter { writes: true, ..Filter::default() }).unwrap();
        assert_eq!((all.commands.len(), all.dbs.len()), (4, 2));
        let gets = Filter { writes: true, commands: vec!["SET".into()], ..Filter::default() };
        assert_eq!(read(&p, 1 << 20, &gets).unwrap().commands.len(), 1);
    }
}
