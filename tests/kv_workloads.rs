//! The key-value workloads against a real redis-server and memcached (started by each test on a free loopback
//! port): Kyoto's order and wicked (with --verify), pipelining, YCSB's proportions, and arbitrary commands and
//! scripts.

use crate::common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::{Server, ask, hakaru, kv_json, memcached, redis};
use serde_json::Value;

fn servers() -> Vec<(Server, String)> {
    let r = redis();
    let m = memcached();
    let ru = format!("redis://127.0.0.1:{}", r.port);
    let mu = format!("memcache://127.0.0.1:{}", m.port);
    vec![(r, ru), (m, mu)]
}

/// Keys in a Redis server's database 0, or items on a memcached.
fn held(port: u16, url: &str) -> u64 {
    if url.starts_with("redis") {
        ask(port, b"DBSIZE\r\n").trim().trim_start_matches(':').parse().unwrap_or(0)
    } else {
        let stats = ask(port, b"stats\r\n");
        stats.lines().find_map(|l| l.strip_prefix("STAT curr_items ")).and_then(|n| n.trim().parse().ok()).unwrap_or(0)
    }
}

fn row<'a>(step: &'a Value, name: &str) -> &'a Value {
    step["breakdown"].as_array().unwrap().iter().find(|r| r["name"] == name).unwrap_or_else(|| panic!("{name}: {step}"))
}

#[test]
fn order_sets_gets_and_removes_every_key_on_both_servers() {
    for (server, url) in servers() {
        let (code, out, doc) = kv_json(&["--workload", "order", "--rnum", "300", "-c", "3", "--etc", &url]);
        assert_eq!(code, 0, "{out}");
        let labels: Vec<&str> = doc["steps"].as_array().unwrap().iter().map(|s| s["label"].as_str().unwrap()).collect();
        let redis = url.starts_with("redis");
        let want: &[&str] = if redis {
            &["set", "add", "append", "get", "walk", "remove"]
        } else {
            &["set", "add", "append", "get", "remove"]
        };
        assert_eq!(labels, want, "memcached cannot walk: {out}");
        if !redis {
            assert!(out.contains("memcached cannot iterate"), "{out}");
        }
        for step in doc["steps"].as_array().unwrap() {
            assert_eq!(step["failed"], 0, "{}: {out}", step["label"]);
        }
        // Every get found its key, holding the key twice after append (checked by the workload); add refused
        // every key, as it exists.
        let get = &doc["steps"][3];
        assert_eq!(get["ok"], 900);
        assert_eq!(row(get, "get")["hits"], 900, "{get}");
        assert_eq!(row(&doc["steps"][1], "add")["expected"], 900);
        assert!(out.contains("time: "), "Kyoto's time lines: {out}");
        // After remove the server holds no key.
        if redis {
            assert_eq!(ask(server.port, b"DBSIZE\r\n"), ":0\r\n");
        } else {
            assert_eq!(ask(server.port, b"get hakaru:00000001 hakaru:00000900\r\n"), "END\r\n");
        }
    }
}

#[test]
fn wicked_verify_passes_on_both_servers() {
    for (_server, url) in servers() {
        let (code, out, doc) = kv_json(&[
            "--workload",
            "wicked",
            "--rnum",
            "400",
            "--it",
            "2",
            "-c",
            "3",
            "--verify",
            "--seed",
            "7",
            &url,
        ]);
        assert_eq!(code, 0, "{url}: {out}");
        // A check ran and found nothing wrong: said in words, not a lone `ok`.
        assert!(out.contains("\nchecked: every answer right\n"), "{out}");
        assert_eq!(doc["steps"].as_array().unwrap().len(), 2);
        for step in doc["steps"].as_array().unwrap() {
            assert_eq!(step["failed"], 0, "{out}");
            assert_eq!(step["requests"], 1200);
            // Every operation of the mix ran, and the random state made some answers expected refusals.
            let rows = step["breakdown"].as_array().unwrap();
            // Redis has the cursor step (a SCAN) and transactions too; memcached has neither.
            assert_eq!(rows.len(), if url.starts_with("redis") { 14 } else { 12 }, "{step}");
            // A transaction begins at one step in 250: too rare to be sure of in 1,200 (see the test below); the
            // clear at half way is left out under --verify.
            assert_eq!(row(step, "clear")["requests"], 0, "{step}");
            let steps = rows.iter().filter(|r| r["name"] != "transaction" && r["name"] != "clear");
            assert!(steps.clone().all(|r| r["requests"].as_u64().unwrap() > 0), "{step}");
            assert!(rows.iter().map(|r| r["expected"].as_u64().unwrap()).sum::<u64>() > 0, "{step}");
        }
    }
}

#[test]
fn wicked_transactions_on_redis_are_executed_or_discarded_and_checked() {
    // 40,000 steps: about 160 transactions (one step in 250 begins one), about 16 of them discarded; the chance
    // that none is discarded is below 1e-7. With --verify, EXEC's answer is checked against every queued op.
    let r = redis();
    let url = format!("redis://127.0.0.1:{}", r.port);
    let (code, out, doc) =
        kv_json(&["--workload", "wicked", "--rnum", "400", "--it", "50", "-c", "2", "--verify", "--seed", "3", &url]);
    assert_eq!(code, 0, "{out}");
    let mut transactions = 0;
    for step in doc["steps"].as_array().unwrap() {
        assert_eq!(step["failed"], 0, "{out}");
        transactions += row(step, "transaction")["requests"].as_u64().unwrap();
    }
    let stats = ask(r.port, b"INFO commandstats\r\n");
    let calls = |command: &str| -> u64 {
        let line = stats.lines().find(|l| l.starts_with(&format!("cmdstat_{command}:"))).unwrap_or_else(|| {
            panic!("no {command} in {stats}");
        });
        line.split(['=', ',']).nth(1).unwrap().parse().unwrap()
    };
    // Each transaction is one figure: a MULTI, then an EXEC or a DISCARD.
    assert!(transactions > 50, "{transactions} transactions: {out}");
    assert_eq!(calls("multi"), transactions, "{stats}");
    assert_eq!(calls("exec") + calls("discard"), transactions, "{stats}");
    assert!(calls("discard") > 0, "{stats}");
    // Half the increments are doubles, each answer checked against the model's sum.
    assert!(calls("incrbyfloat") > 100, "{stats}");
}

#[test]
fn wicked_without_verify_clears_at_half_way_and_its_writes_expire_on_both_servers() {
    // Without --verify wicked is Kyoto's whole mix: raw keys, an expiry on every write, and at step rnum / 2 a
    // clear with p = 1 / (4 x clients) (with --flush only: it deletes what others write). One client, so the seed
    // decides every step.
    for (server, url) in servers() {
        let (code, out, doc) = kv_json(&[
            "--workload",
            "wicked",
            "--flush",
            "--rnum",
            "200",
            "--it",
            "40",
            "-c",
            "1",
            "--seed",
            "9",
            &url,
        ]);
        assert_eq!(code, 0, "{out}");
        let mut clears = 0;
        for step in doc["steps"].as_array().unwrap() {
            assert_eq!(step["failed"], 0, "{step}");
            clears += row(step, "clear")["requests"].as_u64().unwrap();
        }
        assert!((1..40).contains(&clears), "{clears} clears in 40 iterations: {out}");
        if url.starts_with("redis") {
            let keyspace = ask(server.port, b"INFO keyspace\r\n");
            let expires = keyspace.split("expires=").nth(1).and_then(|t| t.split(',').next());
            assert!(expires.is_some_and(|e| e.parse::<u64>().unwrap() > 0), "{keyspace}");
        }
    }
}

#[test]
fn wicked_verify_passes_with_numeric_values_on_both_servers() {
    // Keys without a prefix are numbers ("00000012"). memcached's incr reads them and pads a shortened number with
    // spaces only when it rewrites the item in place (found in review: these seeds failed when the model always
    // padded); Redis's INCRBYFLOAT reads them, and its INCRBY does not (a leading zero).
    for (_server, url) in servers() {
        for seed in ["15", "26", "53", "1", "2"] {
            let (code, out, _) = kv_json(&[
                "--workload",
                "wicked",
                // Five runs on one server: each starts from an empty one.
                "--flush",
                "--key-prefix",
                "",
                "--rnum",
                "10",
                "--it",
                "20",
                "-c",
                "2",
                "--verify",
                "--seed",
                seed,
                &url,
            ]);
            assert_eq!(code, 0, "{url} seed {seed}: {out}");
        }
    }
}

#[test]
fn order_with_random_keys_and_every_phase_passes_on_both_servers() {
    // With --rnd a key may be appended twice: its value is the key three times.
    for (_server, url) in servers() {
        let (code, out, _) = kv_json(&["--workload", "order", "--rnd", "--etc", "--rnum", "200", "-c", "2", &url]);
        assert_eq!(code, 0, "{url}: {out}");
    }
}

#[test]
fn wicked_verify_stops_with_the_seed_when_another_client_writes_the_same_keys() {
    for (server, url) in servers() {
        // Another writer on hakaru:00000010 ... hakaru:00000099, which wicked's clients own.
        let mut other = Command::new(env!("CARGO_BIN_EXE_hakaru"))
            .args(["kv", "-q", "--mix", "set:1", "--keys", "100", "--key-prefix", "hakaru:000000", "-c", "2"])
            .args(["-d", "60s"])
            .arg(&url)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // It is writing once the server holds a key (waited for, not timed).
        common::wait_for(Duration::from_secs(30), || held(server.port, &url) > 0);
        let (code, out, doc) = kv_json(&[
            "--workload",
            "wicked",
            // The other writer's keys are there: wicked starts from an empty server only when told to clear it.
            "--flush",
            "--rnum",
            "50",
            "--it",
            "200",
            "-c",
            "2",
            "--verify",
            "--seed",
            "9",
            &url,
        ]);
        let _ = other.kill();
        let _ = other.wait();
        assert_eq!(code, 1, "{url}: {out}");
        let failed = out.lines().find(|l| l.starts_with("FAILED: ")).unwrap_or_else(|| panic!("{out}"));
        assert!(failed.contains("replay with --seed 9") && failed.contains("client "), "{failed}");
        // The run stopped at the mismatch: not every iteration ran.
        assert!(doc["steps"].as_array().unwrap().len() < 200, "{out}");
        let last = doc["steps"].as_array().unwrap().last().unwrap();
        let kinds: Vec<&str> =
            last["error_kinds"].as_array().unwrap().iter().map(|e| e["kind"].as_str().unwrap()).collect();
        assert!(kinds.contains(&"wrong_value"), "{kinds:?}");
    }
}

#[test]
fn pipelined_replies_each_reach_their_own_request() {
    for (_server, url) in servers() {
        // order's get phase checks each value against its own key: a reply credited to another request of the
        // batch would be a wrong value.
        let (code, out, doc) = kv_json(&["--workload", "order", "--rnum", "400", "-c", "2", "--pipeline", "16", &url]);
        assert_eq!(code, 0, "{out}");
        for step in doc["steps"].as_array().unwrap() {
            assert_eq!(step["failed"], 0, "{}: {out}", step["label"]);
            assert_eq!(step["requests"], 800);
        }
        assert_eq!(row(&doc["steps"][1], "get")["hits"], 800);
        // A mix, pipelined: every reply counted once.
        let (code, out, doc) = kv_json(&["-n", "4000", "-c", "2", "--pipeline", "16", "--keys", "50", &url]);
        assert_eq!(code, 0, "{out}");
        assert_eq!(doc["steps"][0]["ok"], 4000, "{out}");
    }
}

#[test]
fn pipelined_open_loop_keeps_the_rate_and_answers_every_op() {
    for (_server, url) in servers() {
        // 3000 ops at 6000/s: the slots are half a second long whatever the machine's speed, and every op of every
        // batch is answered and counted once.
        let (code, out, doc) =
            kv_json(&["-n", "3000", "--rate", "6000", "-c", "2", "--pipeline", "8", "--keys", "50", &url]);
        assert_eq!(code, 0, "{out}");
        let step = &doc["steps"][0];
        assert_eq!(step["ok"], 3000, "{out}");
        assert_eq!(step["failed"], 0, "{out}");
        assert!(step["duration_s"].as_f64().unwrap() >= 0.45, "paced at 6000/s: {out}");
        assert_eq!(step["load"]["rate"], 6000.0, "{out}");
        assert!(step["service"].is_object(), "an open loop reports the service time: {out}");
    }
}

#[test]
fn ycsb_d_reads_only_records_whose_insert_has_finished() {
    // Latest reads the newest records most: without YCSB's acknowledged counter, 16 clients on 2 threads read
    // records still being inserted (hundreds of misses in 20,000 ops before the fix).
    for (_server, url) in servers() {
        for pipeline in ["1", "8"] {
            let (code, out, doc) = kv_json(&[
                "--workload",
                "ycsb-d",
                // The second load finds the first's records.
                "--flush",
                "--records",
                "200",
                "-n",
                "20000",
                "-c",
                "16",
                "-t",
                "2",
                "--pipeline",
                pipeline,
                &url,
            ]);
            assert_eq!(code, 0, "{out}");
            let run = &doc["steps"][1];
            assert!(row(run, "INSERT")["requests"].as_u64().unwrap() > 500, "{out}");
            assert_eq!(row(run, "READ")["misses"], 0, "{url} pipeline {pipeline}: {out}");
            assert_eq!(run["failed"], 0, "{out}");
        }
    }
}

#[test]
fn ycsb_a_reads_and_updates_half_and_half() {
    let r = redis();
    let url = format!("redis://127.0.0.1:{}", r.port);
    let (code, out, doc) = kv_json(&["--workload", "ycsb-a", "--records", "1000", "-n", "10000", "-c", "4", &url]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(doc["steps"][0]["label"], "load");
    assert_eq!(doc["steps"][0]["ok"], 1000);
    assert_eq!(ask(r.port, b"DBSIZE\r\n"), ":1000\r\n", "the load phase inserted every record");
    let run = &doc["steps"][1];
    assert_eq!(run["ok"], 10000, "{out}");
    let reads = row(run, "READ")["requests"].as_f64().unwrap();
    let updates = row(run, "UPDATE")["requests"].as_f64().unwrap();
    assert_eq!(reads + updates, 10000.0);
    assert!((0.48..=0.52).contains(&(reads / 10000.0)), "reads {reads} of 10000");
    // The summary counts both phases' requests, names the run phase too, and has no check to report.
    assert!(out.contains(" threads, 11000 requests, timeout"), "both phases, no keep-alive: {out}");
    assert!(!out.contains("keep-alive"), "{out}");
    assert!(out.contains("\nstep load\n") && out.contains("\nstep run\n"), "{out}");
    assert!(!out.contains("checked:") && !out.trim_end().ends_with("ok"), "{out}");
    // Each record is a hash of 10 fields of 100 bytes under user<number>.
    let key = ask(r.port, b"RANDOMKEY\r\n");
    let key = key.lines().nth(1).unwrap_or_default().to_string();
    assert!(key.starts_with("user"), "{key}");
    assert_eq!(ask(r.port, format!("HLEN {key}\r\n").as_bytes()), ":10\r\n");
    assert_eq!(ask(r.port, format!("HSTRLEN {key} field3\r\n").as_bytes()), ":100\r\n");
}

#[test]
fn ycsb_f_and_e_run_on_redis_and_e_is_refused_on_memcached() {
    let r = redis();
    let url = format!("redis://127.0.0.1:{}", r.port);
    for w in ["ycsb-e", "ycsb-f"] {
        let (code, out, doc) =
            kv_json(&["--workload", w, "--flush", "--records", "500", "-n", "2000", "-c", "2", &url]);
        assert_eq!(code, 0, "{w}: {out}");
        assert_eq!(doc["steps"][1]["failed"], 0, "{w}: {out}");
    }
    let out = hakaru(&["kv", "--workload", "ycsb-e", "memcache://127.0.0.1:1"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("--workload ycsb-e") && out.stderr.contains("memcached cannot scan"), "{}", out.stderr);
}

#[test]
fn commands_and_a_loaded_script_run_with_figures_per_command() {
    let r = redis();
    let url = format!("redis://127.0.0.1:{}", r.port);
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("set.lua");
    std::fs::write(&script, "return redis.call('SET', KEYS[1], ARGV[1])").unwrap();
    let (code, out, doc) = kv_json(&[
        "--script",
        script.to_str().unwrap(),
        "--command",
        "EVALSHA __sha__ 1 __key__ __data__",
        "--command",
        "GET __key__",
        "--command-ratio",
        "1",
        "--command-ratio",
        "3",
        "--keys",
        "20",
        "-n",
        "2000",
        "-c",
        "2",
        &url,
    ]);
    assert_eq!(code, 0, "{out}");
    let step = &doc["steps"][0];
    assert_eq!(step["ok"], 2000, "{out}");
    let evals = row(step, "EVALSHA __sha__ 1 __key__ __data__")["requests"].as_f64().unwrap();
    assert!((0.2..0.3).contains(&(evals / 2000.0)), "{evals}");
    assert!(row(step, "GET __key__")["hits"].as_u64().unwrap() > 0);
    assert!(ask(r.port, b"DBSIZE\r\n").starts_with(":"), "the script wrote keys");

    let m = memcached();
    let murl = format!("memcache://127.0.0.1:{}", m.port);
    let (code, out, doc) = kv_json(&[
        "--command",
        "set __key__ __data__",
        "--command",
        "get __key__",
        "--keys",
        "10",
        "--value-size-range",
        "5-50",
        "-n",
        "1000",
        &murl,
    ]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(doc["steps"][0]["ok"], 1000, "{out}");
    let value = ask(m.port, b"get hakaru:1\r\n");
    let size: usize = value.split_whitespace().nth(3).unwrap_or("0").parse().unwrap();
    assert!((5..=50).contains(&size), "{value}");
}

#[test]
fn a_mix_sweeps_over_client_counts_into_a_sweep_document() {
    let r = redis();
    let url = format!("redis://127.0.0.1:{}", r.port);
    let (code, out, doc) = kv_json(&["--clients", "1,3", "-n", "600", "--keys", "50", &url]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(doc["settings"]["sweep"]["kind"], "clients");
    let steps = doc["steps"].as_array().unwrap();
    assert_eq!(steps.iter().map(|s| s["label"].as_str().unwrap()).collect::<Vec<_>>(), ["c=1", "c=3"]);
    assert_eq!(steps[1]["load"]["connections"], 3);
    assert!(steps.iter().all(|s| s["ok"] == 600), "{out}");
    assert!(doc["analysis"].is_object(), "a sweep is analysed as hakaru sweep's are: {out}");
    // And printed as `hakaru sweep` prints one: its table with hakaru's and the server's CPU, a row per step.
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], format!("hakaru kv  {url}"), "{out}");
    let header: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(header, ["clients", "ok/s", "mean", "p50", "p99", "max", "failed", "hakaru", "server"], "{out}");
    for (line, clients) in lines[2..4].iter().zip(["1", "3"]) {
        assert_eq!(line.split_whitespace().next(), Some(clients), "{out}");
        assert!(line.trim_end().ends_with('%'), "the server's CPU (found by its port): {out}");
    }
    assert!(!out.contains("count: "), "no phase lines: {out}");
}

#[test]
fn a_redis_busy_on_its_one_thread_is_found_by_its_busiest_thread() {
    // Each call loops in Lua on Redis's one main thread: the work is the server's, hakaru's is a few bytes.
    let r = redis();
    let url = format!("redis://127.0.0.1:{}", r.port);
    let port = r.port.to_string();
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("busy.lua");
    std::fs::write(&script, "local x = 0 for i = 1, 200000 do x = x + i end return x").unwrap();
    let (code, out, doc) = kv_json(&[
        "--script",
        script.to_str().unwrap(),
        "--command",
        "EVALSHA __sha__ 0",
        "--clients",
        "1,2,4",
        "-d",
        "1s",
        "--monitor-port",
        &port,
        &url,
    ]);
    assert_eq!(code, 0, "{out}");
    let mut busiest = 0.0_f64;
    for step in doc["steps"].as_array().unwrap() {
        let server = &step["server"];
        let thread = &server["busiest_thread"];
        assert_eq!(thread["name"], "redis-server", "{server}");
        let (t, process) = (thread["cpu_percent"].as_f64().unwrap(), server["cpu_percent_mean"].as_f64().unwrap());
        // The main thread does nearly all of the process's work.
        assert!(t <= process + 5.0 && t >= process * 0.7, "{server}");
        let cores = server["cores"].as_f64().unwrap();
        assert_eq!(server["saturated"], t >= 90.0 || process >= 90.0 * cores, "{server}");
        busiest = busiest.max(t);
    }
    let analysis = &doc["analysis"];
    eprintln!("busiest thread at most {busiest:.0} %: {analysis}");
    // On a machine kept busy by others Redis may not get a whole core; when it got 90 % of one, that is the limit.
    if busiest >= 90.0 {
        assert_eq!(analysis["bottleneck"], "server", "{analysis}");
        assert!(analysis["summary"].to_string().contains("busiest thread (redis-server)"), "{analysis}");
        assert!(!analysis["summary"].to_string().contains("no limit was reached"), "{analysis}");
    }
}

#[test]
fn hakaru_sweep_over_key_value_servers_runs_the_kv_sweep_with_its_own_flags_and_files() {
    for (_server, url) in servers() {
        let dir = tempfile::tempdir().unwrap();
        let file = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
        let (json, drnbench, wide) = (file("s.json"), file("s-drnbench.csv"), file("s-wide.csv"));
        let out = hakaru(&[
            "sweep",
            "-q",
            "--rates",
            "200,400",
            "-d",
            "500ms",
            "--interval",
            "0s",
            "--max-error-rate",
            "5%",
            "--json",
            &json,
            "-o",
            &drnbench,
            "--csv",
            &wide,
            &url,
        ]);
        assert_eq!(out.code, 0, "{url}: {}{}", out.stdout, out.stderr);
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let sweep = &doc["settings"]["sweep"];
        assert_eq!(sweep["kind"], "rates", "{sweep}");
        assert_eq!(sweep["interval_s"], 0.0, "{sweep}");
        assert_eq!(sweep["max_errors_percent"], 5.0, "{sweep}");
        let steps = doc["steps"].as_array().unwrap();
        assert_eq!(steps.iter().map(|s| s["label"].as_str().unwrap()).collect::<Vec<_>>(), ["rate=200", "rate=400"]);
        // The default mix ran, its gets and sets counted apart, with no failure.
        for step in steps {
            assert_eq!(step["failed"], 0, "{step}");
            assert!(row(step, "GET")["requests"].as_u64().unwrap() > row(step, "SET")["requests"].as_u64().unwrap());
        }
        assert!(common::schema_errors(&doc).is_empty(), "{:?}", common::schema_errors(&doc));
        // drnbench's CSV and the wide one: a header, then a row per step.
        for csv in [&drnbench, &wide] {
            let text = std::fs::read_to_string(csv).unwrap();
            assert_eq!(text.lines().count(), 3, "{text}");
            assert!(text.starts_with("n_clients,total_n_requests,queries_per_second"), "{text}");
        }
    }
    // A flag only HTTP has, or HTTP and key-value URLs together: one line, exit code 2.
    let r = redis();
    let url = format!("redis://127.0.0.1:{}", r.port);
    for (args, want) in [
        (vec!["sweep", "--clients", "1", "-H", "X: y", &url], "--header: an HTTP flag"),
        (vec!["sweep", "--clients", "1", &url, "http://127.0.0.1:1/"], "not both"),
    ] {
        let out = hakaru(&args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
        assert!(out.stderr.contains(want), "{}", out.stderr);
    }
}

#[test]
fn bad_workload_input_is_one_line() {
    for (args, expect) in [
        (vec!["kv", "--workload", "nope", "redis://127.0.0.1:1"], "--workload 'nope'"),
        (vec!["kv", "--key-pattern", "Q", "redis://127.0.0.1:1"], "--key-pattern 'Q'"),
        (vec!["kv", "--value-size-range", "9-3", "redis://127.0.0.1:1"], "--value-size-range '9-3'"),
        (vec!["kv", "--command", "GET __sha__", "redis://127.0.0.1:1"], "--script"),
        (vec!["kv", "--script", "/nonexistent.lua", "--command", "GET k", "redis://127.0.0.1:1"], "--script"),
        (vec!["kv", "--workload", "wicked", "--pipeline", "4", "redis://127.0.0.1:1"], "--pipeline 4"),
        (vec!["kv", "--workload", "order", "--clients", "1,2", "redis://127.0.0.1:1"], "--workload order"),
        (vec!["kv", "--clients", "1,0", "redis://127.0.0.1:1"], "--clients '1,0'"),
        (vec!["kv", "--workload", "order", "--warmup", "1s", "redis://127.0.0.1:1"], "--warmup with --workload order"),
    ] {
        let out = hakaru(&args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(expect), "{args:?}: {}", out.stderr);
        assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
    }
}
