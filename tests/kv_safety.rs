//! hakaru never deletes or overwrites a user's data without a flag: a real redis-server and memcached holding
//! someone else's keys, every workload run against them, and the keys still there afterwards (the trust issue's
//! first item).

mod common;

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
    // A fixed key, and a key built around __key__ that lands on the user's keys.
    refused(&["--command", "SET mine __data__", "-n", "10"], "a --command writes a key other than one __key__");
    refused(
        &["--command", "SET app:user:__key__ __data__", "--key-prefix", "", "--keys", "100", "-n", "10"],
        "100 of the 100 keys this run writes (app:user:0 ... app:user:99) already exist",
    );
    // More keys than are looked up one by one, under a prefix not hakaru's: a sample could miss one.
    refused(&["--mix", "set:1", "--key-prefix", "app:user:", "--keys", "10000000", "-n", "10"], "cannot be told");
    assert_eq!(intact(r.port, PLANTED, true), PLANTED, "nothing was written");
    assert_eq!(flushes(r.port, true), 0);
    // Allowed when told: the flush by --flush, the rest by --overwrite.
    let out = kv(&["--command", "SET mine __data__", "-n", "10", "--overwrite", &url]);
    assert_eq!(out.code, 0, "{}", out.stderr);
}
