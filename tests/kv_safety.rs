//! hakaru never deletes or overwrites a user's data without a flag: a real redis-server and memcached holding
//! someone else's keys, every workload run against them, and the keys still there afterwards (the trust issue's
//! first item).

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::{Server, ask, hakaru_with, memcached, redis};

/// Keys someone else wrote: `app:user:0` ... `app:user:{n-1}` on Redis, the same names as items on memcached.
fn plant(port: u16, n: usize, redis: bool) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut out = Vec::new();
    for i in 0..n {
        if redis {
            out.extend_from_slice(format!("SET app:user:{i} precious{i}\r\n").as_bytes());
        } else {
            let v = format!("precious{i}");
            out.extend_from_slice(format!("set app:user:{i} 0 0 {}\r\n{v}\r\n", v.len()).as_bytes());
        }
    }
    s.write_all(&out).unwrap();
    // One reply line each (+OK or STORED): read until all have come.
    let (mut got, mut buf) = (0, [0u8; 65536]);
    while got < n {
        let k = s.read(&mut buf).unwrap();
        assert!(k > 0, "the server closed while keys were planted");
        got += buf[..k].iter().filter(|&&b| b == b'\n').count();
    }
}

/// How many of the planted keys still hold their value.
fn intact(port: u16, n: usize, redis: bool) -> usize {
    (0..n)
        .filter(|i| {
            let reply = if redis {
                ask(port, format!("GET app:user:{i}\r\n").as_bytes())
            } else {
                ask(port, format!("get app:user:{i}\r\n").as_bytes())
            };
            reply.contains(&format!("precious{i}\r\n"))
        })
        .count()
}

/// How many times the server was asked to clear (Redis FLUSHDB and FLUSHALL, memcached flush_all).
fn flushes(port: u16, redis: bool) -> u64 {
    if redis {
        let stats = ask(port, b"INFO commandstats\r\n");
        stats
            .lines()
            .filter(|l| l.starts_with("cmdstat_flushdb:") || l.starts_with("cmdstat_flushall:"))
            .map(|l| l.split(['=', ',']).nth(1).unwrap().parse::<u64>().unwrap())
            .sum()
    } else {
        let stats = ask(port, b"stats\r\n");
        stats.lines().find_map(|l| l.strip_prefix("STAT cmd_flush ")).unwrap().trim().parse().unwrap()
    }
}

fn kv(args: &[&str]) -> common::Output {
    let mut all = vec!["kv", "-q"];
    all.extend_from_slice(args);
    hakaru_with(&all, Duration::from_secs(120), |_| {})
}

fn servers() -> Vec<(Server, String, bool)> {
    let r = redis();
    let m = memcached();
    let ru = format!("redis://127.0.0.1:{}", r.port);
    let mu = format!("memcache://127.0.0.1:{}", m.port);
    vec![(r, ru, true), (m, mu, false)]
}

const PLANTED: usize = 1000;

#[test]
fn workloads_that_clear_refuse_a_target_holding_keys_and_delete_nothing() {
    for (server, url, redis) in servers() {
        plant(server.port, PLANTED, redis);
        for workload in ["order", "wicked"] {
            let out = kv(&["--workload", workload, "--rnum", "50", "-c", "2", &url]);
            assert_eq!(out.code, 2, "{workload} on {url}: {}{}", out.stdout, out.stderr);
            let line = out.stderr.trim();
            assert_eq!(line.lines().count(), 1, "one line: {line}");
            let unit = if redis { "keys" } else { "items" };
            assert!(line.contains(&format!("holds {PLANTED} {unit}")), "{line}");
            assert!(
                line.contains(&format!("--workload {workload}")) && line.contains("--flush, which deletes"),
                "{line}"
            );
        }
        assert_eq!(intact(server.port, PLANTED, redis), PLANTED, "{url}: every planted key kept");
        assert_eq!(flushes(server.port, redis), 0, "{url}: never asked to clear");
    }
}

#[test]
fn ycsb_and_the_mix_write_beside_the_users_keys_and_never_clear() {
    for (server, url, redis) in servers() {
        plant(server.port, PLANTED, redis);
        let out = kv(&["--workload", "ycsb-a", "--records", "300", "-n", "2000", "-c", "2", &url]);
        assert_eq!(out.code, 0, "{url}: {}{}", out.stdout, out.stderr);
        // The mix under hakaru's own prefix, twice: the second run finds the first's keys and says so.
        for _ in 0..2 {
            let out = kv(&["--mix", "get:50,set:50", "--keys", "200", "-n", "2000", "-c", "2", &url]);
            assert_eq!(out.code, 0, "{url}: {}{}", out.stdout, out.stderr);
        }
        let out = kv(&["--mix", "set:1", "--keys", "200", "-n", "500", &url]);
        assert!(out.stderr.contains("under hakaru's own prefix (an earlier run's)"), "{}", out.stderr);
        assert_eq!(intact(server.port, PLANTED, redis), PLANTED, "{url}: every planted key kept");
        assert_eq!(flushes(server.port, redis), 0, "{url}: never asked to clear");
        if redis {
            // The user's 1,000 keys, YCSB's 300 records, the mix's 200 keys.
            assert_eq!(ask(server.port, b"DBSIZE\r\n"), ":1500\r\n");
        }
    }
}

#[test]
fn overwriting_keys_not_hakarus_is_refused_unless_overwrite() {
    for (server, url, redis) in servers() {
        plant(server.port, PLANTED, redis);
        // A mix whose keys are the user's own: app:user:0 ... app:user:99.
        let out = kv(&["--mix", "set:1", "--key-prefix", "app:user:", "--keys", "100", "-n", "200", &url]);
        assert_eq!(out.code, 2, "{url}: {}{}", out.stdout, out.stderr);
        let line = out.stderr.trim();
        assert!(
            line.contains("100 of the 100 keys this run writes (app:user:0 ... app:user:99) already exist"),
            "{line}"
        );
        assert!(line.ends_with("choose another --key-prefix, or add --overwrite"), "{line}");
        // A mix that only reads them is fine.
        let out = kv(&["--mix", "get:1", "--key-prefix", "app:user:", "--keys", "100", "-n", "200", &url]);
        assert_eq!(out.code, 0, "{url}: {}{}", out.stdout, out.stderr);
        assert_eq!(intact(server.port, PLANTED, redis), PLANTED, "{url}: refused before writing anything");
        // Told to, it overwrites and says how many.
        let out =
            kv(&["--mix", "set:1", "--key-prefix", "app:user:", "--keys", "100", "-n", "200", "--overwrite", &url]);
        assert_eq!(out.code, 0, "{url}: {}{}", out.stdout, out.stderr);
        assert!(out.stderr.contains("--overwrite: 100 of the 100 keys"), "{}", out.stderr);
        let kept = intact(server.port, PLANTED, redis);
        assert!((PLANTED - 100..PLANTED).contains(&kept), "{url}: {kept} kept, after sets on 100 of them");
    }
    // YCSB's load over records already there (an earlier load's) points to the run phase.
    let r = redis();
    let url = format!("redis://127.0.0.1:{}", r.port);
    let out = kv(&["--workload", "ycsb-b", "--records", "100", "-n", "200", &url]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let out = kv(&["--workload", "ycsb-b", "--records", "100", "-n", "200", &url]);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("--ycsb-phase run uses records loaded before, or add --overwrite"), "{}", out.stderr);
    let out = kv(&["--workload", "ycsb-b", "--records", "100", "-n", "200", "--ycsb-phase", "run", &url]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
}

#[test]
fn flush_clears_first_and_says_what_it_deleted() {
    for (server, url, redis) in servers() {
        plant(server.port, PLANTED, redis);
        let out = kv(&["--workload", "order", "--flush", "--rnum", "50", "-c", "2", &url]);
        assert_eq!(out.code, 0, "{url}: {}{}", out.stdout, out.stderr);
        let unit = if redis { "keys" } else { "items" };
        assert!(out.stderr.contains(&format!("--flush deleted the {PLANTED} {unit}")), "{}", out.stderr);
        assert_eq!(intact(server.port, PLANTED, redis), 0);
        assert_eq!(flushes(server.port, redis), 1);
    }
}

#[test]
fn a_selected_redis_database_is_looked_at_alone() {
    // The user's keys in database 0; the run in database 3, which is empty: order runs and database 0 is kept.
    let r = redis();
    plant(r.port, PLANTED, true);
    let url = format!("redis://127.0.0.1:{}/3", r.port);
    let out = kv(&["--workload", "order", "--rnum", "50", "-c", "2", &url]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_eq!(intact(r.port, PLANTED, true), PLANTED);
    assert_eq!(flushes(r.port, true), 0);
}

#[test]
fn templates_and_large_key_ranges_cannot_slip_past_the_look() {
    let r = redis();
    let url = format!("redis://127.0.0.1:{}", r.port);
    plant(r.port, PLANTED, true);
    let refused = |args: &[&str], says: &str| {
        let mut all = args.to_vec();
        all.push(&url);
        let out = kv(&all);
        assert_eq!(out.code, 2, "{args:?}: {}{}", out.stdout, out.stderr);
        assert!(out.stderr.contains(says), "{args:?}: {}", out.stderr);
    };
    // A template that deletes everything.
    refused(&["--command", "FLUSHDB", "-n", "10"], "deletes everything in the database or server");
    // A key the run cannot know before it runs (it counts as not hakaru's), and a key built around __key__ that
    // lands on the user's keys. (A fixed key is looked up: see the tests below.)
    refused(&["--command", "SET __key__:{{seq}} __data__", "-n", "10"], "cannot be told");
    refused(
        &["--command", "SET app:user:__key__ __data__", "--key-prefix", "", "--keys", "100", "-n", "10"],
        "100 of the 100 keys this run writes (app:user:0 ... app:user:99) already exist",
    );
    // More keys than are looked up one by one, under a prefix not hakaru's: a sample could miss one.
    refused(&["--mix", "set:1", "--key-prefix", "app:user:", "--keys", "10000000", "-n", "10"], "cannot be told");
    assert_eq!(intact(r.port, PLANTED, true), PLANTED, "nothing was written");
    assert_eq!(flushes(r.port, true), 0);
    // Allowed when told: the flush by --flush, the rest by --overwrite.
    let out = kv(&["--command", "SET __key__:{{seq}} __data__", "-n", "10", "--overwrite", &url]);
    assert_eq!(out.code, 0, "{}", out.stderr);
}

/// The user's keys a template could write besides hakaru's: a string, a list, a set.
const THEIRS: [&str; 3] = ["SET mykey:8 precious", "RPUSH mylist a b", "SADD myset m"];

fn theirs_intact(port: u16) -> bool {
    ask(port, b"GET mykey:8\r\n") == "$8\r\nprecious\r\n"
        && ask(port, b"LRANGE mylist 0 -1\r\n") == "*2\r\n$1\r\na\r\n$1\r\nb\r\n"
        && ask(port, b"SMEMBERS myset\r\n") == "*1\r\n$1\r\nm\r\n"
}

/// Templates that hold `__key__` and also write (or delete) one of the user's keys: the key each must be refused
/// for (the trust issue's first item, and every command its list names).
const WRITES_THEIRS: [(&str, &str); 16] = [
    ("RENAME __key__ mykey:8", "mykey:8"),
    ("MSET __key__ a mykey:8 b", "mykey:8"),
    ("SUNIONSTORE myset __key__", "myset"),
    ("ZUNIONSTORE mykey:8 1 __key__", "mykey:8"),
    ("BITOP AND mykey:8 __key__ __key__", "mykey:8"),
    ("RPOPLPUSH mylist __key__", "mylist"),
    ("LMOVE mylist __key__ LEFT LEFT", "mylist"),
    ("SORT __key__ STORE mykey:8", "mykey:8"),
    ("COPY __key__ mykey:8 REPLACE", "mykey:8"),
    ("MOVE mykey:8 1", "mykey:8"),
    ("RESTORE mykey:8 0 x REPLACE", "mykey:8"),
    ("EVAL \"return 1\" 2 __key__ mykey:8", "mykey:8"),
    ("DEL __key__ mykey:8", "mykey:8"),
    ("SMOVE myset __key__ m", "myset"),
    ("MIGRATE 127.0.0.1 1 mykey:8 0 100", "mykey:8"),
    ("SET mykey:8 __data__", "mykey:8"),
];

#[test]
fn every_key_a_command_writes_is_judged_whether_the_server_or_the_table_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let rows = common::write_in(&dir, "rows.csv", "id\n8\n9\n");
    // Redis names the keys (COMMAND GETKEYSANDFLAGS); with COMMAND renamed away, hakaru's table does.
    for extra in [&[][..], &["--rename-command", "COMMAND", ""][..]] {
        let r = common::redis_with(extra);
        let url = format!("redis://127.0.0.1:{}", r.port);
        plant(r.port, 10, true);
        for c in THEIRS {
            ask(r.port, format!("{c}\r\n").as_bytes());
        }
        for (template, key) in WRITES_THEIRS {
            let out = kv(&["--command", template, "-n", "20", "-c", "2", &url]);
            assert_eq!(out.code, 2, "{extra:?} {template}: {}{}", out.stdout, out.stderr);
            let line = out.stderr.trim();
            assert_eq!(line.lines().count(), 1, "one line: {line}");
            assert!(line.contains(&format!("the key {key} (written by --command '")), "{extra:?} {template}: {line}");
            assert!(line.ends_with("or add --overwrite") && !line.contains("hakaru:0 ..."), "{line}");
        }
        // A data file's rows build the key the command writes (`RENAME hakaru:{{id}} mykey:{{id}}`).
        let out = kv(&["--data", &rows, "--command", "RENAME hakaru:{{id}} mykey:{{id}}", "-n", "4", &url]);
        assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
        assert!(
            out.stderr.contains("1 of the 2 keys this run writes (mykey:8 ... mykey:9) already exists"),
            "{}",
            out.stderr
        );
        assert!(theirs_intact(r.port), "{extra:?}: refused before anything was written");
        assert_eq!(intact(r.port, 10, true), 10);
        // Reads of the user's keys, and writes of hakaru's alone, are not refused.
        for template in ["LRANGE mylist 0 -1", "SUNION myset __key__", "SET hakaru:fixed __data__"] {
            let out = kv(&["--command", template, "-n", "10", &url]);
            assert_eq!(out.code, 0, "{extra:?} {template}: {}{}", out.stdout, out.stderr);
        }
        // Told to, it runs and says what it overwrote.
        let out = kv(&["--command", "SUNIONSTORE myset __key__", "-n", "5", "--overwrite", &url]);
        assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
        assert!(out.stderr.contains("--overwrite: the key myset (written by"), "{}", out.stderr);
    }
}

#[test]
fn a_fixed_key_is_named_in_the_refusal_with_overwrite_on_redis_and_memcached() {
    for (server, url, redis) in servers() {
        plant(server.port, 10, redis);
        let mine = if redis { &b"SET mine precious\r\n"[..] } else { &b"set mine 0 0 8\r\nprecious\r\n"[..] };
        ask(server.port, mine);
        let templates: &[&str] = if redis {
            &["SET mine x", "INCR mine", "DEL mine"]
        } else {
            &["set mine __data__", "delete mine", "incr mine 1", "append mine __data__", "touch mine 1"]
        };
        for template in templates {
            let out = kv(&["--command", template, "-n", "10", &url]);
            assert_eq!(out.code, 2, "{url} {template}: {}{}", out.stdout, out.stderr);
            let line = out.stderr.trim();
            assert!(
                line.contains(&format!("the key mine (written by --command '{template}') already exists")),
                "{line}"
            );
            // Not the numbered keys, nor --key-prefix, which a fixed key does not follow (the newcomer issue's 11th).
            assert!(line.ends_with(", or add --overwrite") && !line.contains("--key-prefix"), "{line}");
        }
        let get = if redis { &b"GET mine\r\n"[..] } else { &b"get mine\r\n"[..] };
        assert!(ask(server.port, get).contains("precious"), "{url}: mine kept");
        assert_eq!(intact(server.port, 10, redis), 10);
    }
}

#[test]
fn ycsb_e_keeps_its_scan_index_under_hakarus_prefix_and_looks_at_it_before_the_load() {
    let r = redis();
    let url = format!("redis://127.0.0.1:{}", r.port);
    // YCSB's own name for the index, held by someone; and an index under a prefix the user gives, someone's too.
    ask(r.port, b"ZADD _indices 1 theirs\r\n");
    ask(r.port, b"SET app:_indices precious\r\n");
    let out = kv(&["--workload", "ycsb-e", "--records", "100", "-n", "300", "-c", "2", &url]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_eq!(ask(r.port, b"ZCARD _indices\r\n"), ":1\r\n", "the user's sorted set is left alone");
    let ours = ask(r.port, b"ZCARD hakaru:_indices\r\n");
    let n: u64 = ours.trim().trim_start_matches(':').parse().unwrap();
    assert!(n >= 100, "the records are indexed under hakaru's prefix: {ours}");
    // A run whose index would be someone's key is refused before the load, naming it.
    let out = kv(&["--workload", "ycsb-e", "--key-prefix", "app:", "--ycsb-phase", "run", "-n", "50", &url]);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("the key app:_indices (written by --workload ycsb-e"), "{}", out.stderr);
    assert_eq!(ask(r.port, b"GET app:_indices\r\n"), "$8\r\nprecious\r\n");
}
