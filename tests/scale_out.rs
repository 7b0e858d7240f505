//! Scale-out on loopback: a plan run as three segments (`--segment I/3`, one `--start-at`) against a real nginx
//! and merged with `hakaru merge`, `--agents 3`, key-value workloads split over agents, and the refusals.

use crate::common;

use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::{Nginx, ask, hakaru, hakaru_with, redis};
use hakaru::metrics::LatencyHistogram;
use serde_json::Value;

fn read(path: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Runs `args` as three agent processes at once, each `--segment i/3 --start-at` in 2 to 3 s (whole seconds: at
/// least 2 s for three processes to start and plan on a busy machine), with its JSON in `dir`.
fn three_agents(args: &[&str], dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let at = (SystemTime::now().duration_since(UNIX_EPOCH).unwrap() + Duration::from_secs(3)).as_secs().to_string();
    let children: Vec<_> = (0..3)
        .map(|i| {
            let json = dir.join(format!("agent-{i}.json"));
            let child = Command::new(env!("CARGO_BIN_EXE_hakaru"))
                .args(args)
                .args(["-q", "--segment", &format!("{i}/3"), "--start-at", &at, "--json"])
                .arg(&json)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            (json, child)
        })
        .collect();
    children
        .into_iter()
        .map(|(json, child)| {
            let out = child.wait_with_output().unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            json
        })
        .collect()
}

#[test]
fn three_segments_merge_into_exactly_the_whole_plan() {
    let nginx = Nginx::start();
    let dir = tempfile::tempdir().unwrap();
    let url = nginx.url("/");
    let files = three_agents(&["run", "-c", "7", "-n", "3001", &url], dir.path());
    let parts: Vec<Value> = files.iter().map(|f| read(f)).collect();
    // The shares add up: 7 connections as 3, 2, 2; 3001 requests as 1001, 1000, 1000.
    let conns: Vec<u64> = parts.iter().map(|d| d["settings"]["connections"].as_u64().unwrap()).collect();
    let reqs: Vec<u64> = parts.iter().map(|d| d["steps"][0]["requests"].as_u64().unwrap()).collect();
    assert_eq!((conns, reqs), (vec![3, 2, 2], vec![1001, 1000, 1000]));
    assert!(parts.iter().all(|d| d["steps"][0]["start_late_s"].as_f64().unwrap() < 0.5));

    let merged_path = dir.path().join("all.json");
    let mut args = vec!["merge".to_string()];
    args.extend(files.iter().map(|f| f.display().to_string()));
    args.extend(["-o".to_string(), merged_path.display().to_string()]);
    let out = hakaru(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("ok 3001, failed 0"), "{}", out.stdout);
    let merged = read(&merged_path);
    let step = &merged["steps"][0];
    assert_eq!(merged["settings"]["connections"], 7);
    assert_eq!(merged["settings"]["requests"], 3001);
    assert_eq!(merged["settings"]["segment"], Value::Null);
    assert_eq!(step["requests"], 3001);
    assert_eq!(step["status"]["200"], 3001);
    assert_eq!(step["agents"].as_array().unwrap().len(), 3);
    // The merged histogram is the sum of the agents' histograms, bucket for bucket (its encoding equal).
    let mut sum = LatencyHistogram::new();
    for d in &parts {
        sum.merge(&LatencyHistogram::from_base64(d["steps"][0]["histogram"]["data"].as_str().unwrap()).unwrap());
    }
    assert_eq!(step["histogram"]["data"].as_str().unwrap(), sum.to_base64());
    assert_eq!(step["latency"]["count"], 3001);
    assert_eq!(step["latency"]["percentiles"]["p99"], sum.percentile(99.0));
    // The phases' histograms are added too: every answer's time to first byte, every connection's connect.
    let mut waiting = LatencyHistogram::new();
    for d in &parts {
        let data = d["steps"][0]["phases"]["waiting"]["histogram"]["data"].as_str().unwrap();
        waiting.merge(&LatencyHistogram::from_base64(data).unwrap());
    }
    assert_eq!(step["phases"]["answers"], 3001);
    assert_eq!(step["phases"]["waiting"]["histogram"]["data"].as_str().unwrap(), waiting.to_base64());
    assert_eq!(step["phases"]["connections_opened"], step["connections"]["opened"]);
    // The merged document is an ordinary result: the schema holds.
    let schema: Value = serde_json::from_str(include_str!("../schema/result.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(&merged).map(|e| format!("{}: {e}", e.instance_path())).collect();
    assert!(errors.is_empty(), "{errors:?}");
}

#[test]
fn each_agent_opens_its_connections_from_its_own_source_address() {
    // 127.0.0.2-4 are this machine's loopback addresses too: nginx (on 127.0.0.1) logs each request's source.
    let nginx = Nginx::start();
    let out = hakaru_with(
        &[
            "run",
            "-q",
            "--agents",
            "3",
            "--agent-source",
            "127.0.0.2,127.0.0.3,127.0.0.4",
            "-c",
            "3",
            "-n",
            "300",
            &nginx.url("/who"),
        ],
        Duration::from_secs(60),
        |_| {},
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let doc = out.json.expect("the merged document");
    assert_eq!(doc["steps"][0]["ok"], 300, "{}", out.stdout);
    assert_eq!(doc["settings"]["source_address"], "127.0.0.2,127.0.0.3,127.0.0.4");
    let log = std::fs::read_to_string(nginx.dir.path().join("who.log")).unwrap();
    for source in ["127.0.0.2", "127.0.0.3", "127.0.0.4"] {
        assert_eq!(log.lines().filter(|l| *l == source).count(), 100, "{source}'s segment is a third: {log}");
    }
    assert_eq!(log.lines().count(), 300, "no request from any other address");
    // One process, one address; and the refusals.
    let one = hakaru(&["run", "-q", "-n", "20", "--source-address", "127.0.0.9", &nginx.url("/who")]);
    assert_eq!(one.code, 0, "{}", one.stderr);
    let log = std::fs::read_to_string(nginx.dir.path().join("who.log")).unwrap();
    assert_eq!(log.lines().filter(|l| *l == "127.0.0.9").count(), 20);
    for (args, says) in [
        (vec!["--source-address", "192.0.2.1"], "--source-address '192.0.2.1': cannot open connections from it"),
        (vec!["--source-address", "nope"], "--source-address 'nope': not an IP address"),
        (vec!["--source-address", "::1"], "--source-address ::1: 127.0.0.1"),
        (
            vec!["--agents", "2", "--agent-source", "127.0.0.2"],
            "--agent-source '127.0.0.2': 1 address(es) for 2 agents",
        ),
    ] {
        let mut all = vec!["run", "-n", "10"];
        all.extend(args);
        all.push("http://127.0.0.1:1/");
        let out = hakaru(&all);
        assert_eq!(out.code, 2, "{all:?}: {}", out.stderr);
        assert!(out.stderr.contains(says), "{all:?}: {}", out.stderr);
        assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
    }
}

/// Network namespaces this test creates and deletes (also when it fails): a server namespace with a bridge, and
/// one namespace per agent joined to it by a veth pair, addresses 10.77.0.1 (server) and 10.77.0.11.. (agents).
/// Nothing is added to the machine's own namespace.
struct Namespaces {
    server: String,
    agents: Vec<String>,
}

impl Namespaces {
    fn ip(args: &[&str]) {
        let out = Command::new("ip").args(args).output().expect("ip (iproute2) runs");
        assert!(out.status.success(), "ip {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }

    fn create(agents: usize) -> Namespaces {
        let tag = format!("hk{}", std::process::id() % 100_000);
        let ns = Namespaces { server: format!("{tag}s"), agents: (0..agents).map(|i| format!("{tag}a{i}")).collect() };
        let s = ns.server.as_str();
        Self::ip(&["netns", "add", s]);
        Self::ip(&["-n", s, "link", "set", "lo", "up"]);
        Self::ip(&["-n", s, "link", "add", "br0", "type", "bridge"]);
        Self::ip(&["-n", s, "addr", "add", "10.77.0.1/24", "dev", "br0"]);
        Self::ip(&["-n", s, "link", "set", "br0", "up"]);
        for (i, a) in ns.agents.iter().enumerate() {
            let (veth, peer, addr) = (format!("v{i}"), format!("e{i}"), format!("10.77.0.{}/24", 11 + i));
            Self::ip(&["netns", "add", a]);
            Self::ip(&["-n", a, "link", "set", "lo", "up"]);
            Self::ip(&["-n", s, "link", "add", &veth, "type", "veth", "peer", "name", &peer, "netns", a]);
            Self::ip(&["-n", s, "link", "set", &veth, "master", "br0", "up"]);
            Self::ip(&["-n", a, "addr", "add", &addr, "dev", &peer]);
            Self::ip(&["-n", a, "link", "set", &peer, "up"]);
        }
        ns
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        for ns in self.agents.iter().chain([&self.server]) {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}

#[test]
fn agents_in_network_namespaces_of_their_own_each_have_their_address() {
    // SAFETY: geteuid only reads this process's effective user id.
    if unsafe { libc::geteuid() } != 0 {
        let why = "creating network namespaces needs root (CI runs the tests as root)";
        common::skip("agents_in_network_namespaces_of_their_own_each_have_their_address", why);
        return;
    }
    let ns = Namespaces::create(3);
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().to_str().unwrap();
    let conf = format!(
        "worker_processes 1; daemon off; master_process off; pid {prefix}/nginx.pid; error_log {prefix}/error.log;\n\
         events {{ worker_connections 1024; }}\n\
         http {{ log_format source '$remote_addr'; access_log {prefix}/who.log source;\n\
         client_body_temp_path {prefix}/b; proxy_temp_path {prefix}/p; fastcgi_temp_path {prefix}/f;\n\
         uwsgi_temp_path {prefix}/u; scgi_temp_path {prefix}/s;\n\
         server {{ listen 10.77.0.1:8080; location / {{ return 200 \"hi\\n\"; }} }} }}\n"
    );
    std::fs::write(dir.path().join("nginx.conf"), conf).unwrap();
    let nginx = common::nginx_path().to_string_lossy().into_owned();
    let mut server = Command::new("ip")
        .args(["netns", "exec", &ns.server, &nginx, "-p", prefix, "-c"])
        .arg(dir.path().join("nginx.conf"))
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Listening: seen from the first agent's namespace (a connection with no request, which nginx does not log).
    let probe =
        "for i in $(seq 50); do (exec 3<>/dev/tcp/10.77.0.1/8080) 2>/dev/null && exit 0; sleep 0.1; done; exit 1";
    let up = Command::new("ip").args(["netns", "exec", &ns.agents[0], "bash", "-c", probe]).status().unwrap();
    assert!(up.success(), "nginx in the server namespace is not reachable from an agent's");
    let names = ns.agents.join(",");
    let out = hakaru_with(
        &["run", "-q", "--agents", "3", "--agent-netns", &names, "-c", "3", "-n", "300", "http://10.77.0.1:8080/"],
        Duration::from_secs(60),
        |_| {},
    );
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let doc = out.json.expect("the merged document");
    assert_eq!(doc["steps"][0]["ok"], 300, "{}", out.stdout);
    let log = std::fs::read_to_string(dir.path().join("who.log")).unwrap();
    for source in ["10.77.0.11", "10.77.0.12", "10.77.0.13"] {
        assert_eq!(log.lines().filter(|l| *l == source).count(), 100, "{source}'s segment is a third: {log}");
    }
    // A namespace that does not exist is named.
    let out = hakaru(&["run", "--agents", "2", "--agent-netns", "nosuchns1,nosuchns2", "http://127.0.0.1:1/"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("no network namespace 'nosuchns1'"), "{}", out.stderr);
}

#[test]
fn agents_on_one_machine_start_together_and_their_windows_line_up() {
    let nginx = Nginx::start();
    // The harness adds --json for run: the merged document is written there.
    let out = hakaru_with(
        &["run", "-q", "--agents", "3", "-c", "6", "-d", "2s", &nginx.url("/")],
        Duration::from_secs(60),
        |_| {},
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("3 agents, merged"), "{}", out.stdout);
    let doc = out.json.expect("the merged document");
    let step = &doc["steps"][0];
    let agents = step["agents"].as_array().unwrap();
    assert_eq!(agents.len(), 3);
    let by_agent: u64 = agents.iter().map(|a| a["requests"].as_u64().unwrap()).sum();
    assert_eq!(step["requests"].as_u64().unwrap(), by_agent);
    assert_eq!(doc["settings"]["connections"], 6);
    // One window per second, at whole seconds from the common start, each holding every agent's requests.
    let windows = step["windows"].as_array().unwrap();
    let ts: Vec<f64> = windows.iter().map(|w| w["t"].as_f64().unwrap()).collect();
    assert!(ts.iter().all(|t| t.fract() == 0.0), "{ts:?}");
    assert!(ts.windows(2).all(|w| w[1] > w[0]), "{ts:?}");
    let in_windows: u64 = windows.iter().map(|w| w["requests"].as_u64().unwrap()).sum();
    assert_eq!(in_windows, by_agent);
    assert!(windows[0]["requests"].as_u64().unwrap() > 0 && windows[1]["requests"].as_u64().unwrap() > 0);
}

#[test]
fn an_open_loop_rate_splits_over_the_agents_and_adds_up() {
    let nginx = Nginx::start();
    let dir = tempfile::tempdir().unwrap();
    let files = three_agents(&["run", "--rate", "300", "-c", "6", "-d", "2s", &nginx.url("/")], dir.path());
    let rates: Vec<f64> = files.iter().map(|f| read(f)["settings"]["rate"].as_f64().unwrap()).collect();
    assert_eq!(rates, [100.0, 100.0, 100.0]);
    let merged = dir.path().join("all.json");
    let mut args: Vec<String> = vec!["merge".into()];
    args.extend(files.iter().map(|f| f.display().to_string()));
    args.extend(["-o".into(), merged.display().to_string()]);
    let out = hakaru(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(out.code, 0, "{}", out.stderr);
    let doc = read(&merged);
    assert_eq!(doc["steps"][0]["schedule"]["target_rate"], 300.0);
    let sent = doc["steps"][0]["requests"].as_u64().unwrap();
    assert!((570..=630).contains(&sent), "300/s for 2 s: {sent}");
}

#[test]
fn key_value_agents_each_keep_their_clients_keys() {
    let r = redis();
    let url = format!("redis://127.0.0.1:{}", r.port);
    let dir = tempfile::tempdir().unwrap();
    // wicked --verify over three agents: each client owns its keys by its number across the agents.
    let files = three_agents(
        &["kv", "--workload", "wicked", "--rnum", "200", "-c", "3", "--verify", "--seed", "3", &url],
        dir.path(),
    );
    for f in &files {
        let d = read(f);
        assert_eq!(d["steps"][0]["failed"], 0, "{d}");
        assert_eq!(d["steps"][0]["requests"], 200, "one client per agent, rnum each");
    }
    // order over three agents writes every client's keys once and removes them all; in database 1, as wicked's
    // keys are in 0 (order refuses a database holding keys).
    let db1 = format!("{url}/1");
    let files = three_agents(&["kv", "--workload", "order", "--rnum", "100", "-c", "3", &db1], dir.path());
    let set: u64 = files.iter().map(|f| read(f)["steps"][0]["ok"].as_u64().unwrap()).sum();
    assert_eq!(set, 300);
    assert_eq!(ask(r.port, b"SELECT 1\r\nDBSIZE\r\n"), "+OK\r\n:0\r\n");
}

#[test]
fn plans_that_do_not_split_or_merge_are_refused_in_one_line() {
    let nginx = Nginx::start();
    let url = nginx.url("/");
    for (args, expect) in [
        (vec!["run", "--segment", "3/3", &url], "--segment '3/3'"),
        (vec!["run", "--segment", "2/3", "-c", "2", &url], "2 connection(s) cannot be split over 3 agents"),
        (vec!["run", "--start-at", "soon", &url], "--start-at 'soon'"),
        (vec!["sweep", "--segment", "0/2", "--clients", "1,2", "-d", "1s", &url], "cannot be split over 2 agents"),
        (vec!["capacity", "--segment", "0/2", "--slo", "p99<50ms", &url], "--segment and --start-at are for"),
        // Local agents: the split and a bound checked before any agent starts.
        (vec!["run", "--agents", "100000", "-n", "5", &url], "--agents 100000: at most 64 agents on one machine"),
        (vec!["run", "--agents", "3", "-c", "2", &url], "--agents 3: 2 connection(s) cannot be split over 3 agents"),
        (vec!["run", "--agents", "4", "-c", "8", "-n", "3", &url], "--agents 4: 3 request(s) cannot be split"),
        (vec!["sweep", "--agents", "2", "--clients", "1,4", &url], "--agents 2: 1 client(s) in a step cannot"),
    ] {
        let out = hakaru(&args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(expect), "{args:?}: {}", out.stderr);
        assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
    }
    // Two documents of different plans, and one segment twice.
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.json");
    let b = dir.path().join("b.json");
    for (path, n) in [(&a, "100"), (&b, "200")] {
        // Not through the harness, which adds its own --json to run.
        let status = Command::new(env!("CARGO_BIN_EXE_hakaru"))
            .args(["run", "-q", "-n", n, "-c", "2", "--segment", "0/2", "--json", path.to_str().unwrap(), &url])
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
    }
    let out = hakaru(&["merge", a.to_str().unwrap(), a.to_str().unwrap()]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("segment 0/2 is also in"), "{}", out.stderr);
    let out = hakaru(&["merge", a.to_str().unwrap()]);
    assert!(out.code == 2 && out.stderr.contains("1/2 missing"), "{}", out.stderr);
    std::fs::write(&b, "{ not json").unwrap();
    let out = hakaru(&["merge", a.to_str().unwrap(), b.to_str().unwrap()]);
    assert!(out.code == 2 && out.stderr.contains("b.json:1:"), "{}", out.stderr);
}

#[test]
fn segments_of_different_plans_are_refused_naming_the_field_in_one_line() {
    let nginx = Nginx::start();
    let url = nginx.url("/");
    let dir = tempfile::tempdir().unwrap();
    let segment = |name: &str, args: &[&str]| {
        let path = dir.path().join(name);
        let status = Command::new(env!("CARGO_BIN_EXE_hakaru"))
            .args(["run", "-q"])
            .args(args)
            .args(["--json", path.to_str().unwrap(), &url])
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
        path.to_str().unwrap().to_string()
    };
    let refused = |files: &[&str], expect: &str| {
        let mut args = vec!["merge"];
        args.extend(files);
        let out = hakaru(&args);
        assert_eq!(out.code, 2, "{files:?}: {}", out.stderr);
        assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
        assert!(out.stderr.contains(expect), "{expect} not in {}", out.stderr);
        // Values in words, never Rust's debug text.
        assert!(!out.stderr.contains("Some(") && !out.stderr.contains("None"), "{}", out.stderr);
    };
    // Issue 28: `-c 2 -n 200` and `-c 4 -n 400` had merged into "200 requests" over "ok 300".
    let a = segment("a.json", &["-c", "2", "-n", "200", "--segment", "0/2"]);
    let b = segment("b.json", &["-c", "4", "-n", "400", "--segment", "1/2"]);
    let doc = read(std::path::Path::new(&a));
    assert_eq!(doc["settings"]["whole_plan"], serde_json::json!({"connections": 2, "requests": 200, "rate": null}));
    assert_eq!((doc["settings"]["connections"].as_u64(), doc["settings"]["requests"].as_u64()), (Some(1), Some(100)));
    assert!(common::schema_errors(&doc).is_empty(), "{:?}", common::schema_errors(&doc));
    refused(&[&a, &b], "b.json: whole_plan.connections is 4, not 2 as in");
    // The same plan in all but its requests.
    let c = segment("c.json", &["-c", "2", "-n", "300", "--segment", "1/2"]);
    refused(&[&a, &c], "c.json: whole_plan.requests is 300, not 200 as in");
    // Documents written before the whole plan was recorded: it is derived from the segments' shares.
    for f in [&a, &b] {
        let mut doc = read(std::path::Path::new(f));
        doc["settings"].as_object_mut().unwrap().remove("whole_plan");
        std::fs::write(f, doc.to_string()).unwrap();
    }
    refused(&[&a, &b], "a.json: connections is 1, not 2, segment 0/2's share of the whole plan");
    // A setting that is absent in one plan and given in the other is named in words.
    let d = segment("d.json", &["-c", "2", "-d", "1s", "--segment", "1/2"]);
    refused(&[&c, &d], "d.json: duration_s is 1, not none as in");
    // The same plan merges, into the whole plan.
    let e = segment("e.json", &["-c", "2", "-n", "200", "--segment", "1/2"]);
    let a = segment("a.json", &["-c", "2", "-n", "200", "--segment", "0/2"]);
    let merged = dir.path().join("all.json");
    let out = hakaru(&["merge", &a, &e, "-o", merged.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let doc = read(&merged);
    assert_eq!(doc["settings"]["requests"], 200);
    assert!(doc["settings"].get("whole_plan").is_none(), "a complete merge is the whole plan: {}", doc["settings"]);
}

#[test]
fn local_agents_judge_thresholds_on_the_merged_run_and_keep_it_once_in_the_history() {
    let t = common::target();
    let url = format!("http://{}/?delay=2ms", t.addr());
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let agents = |threshold: &str| {
        hakaru_with(
            &["run", "-q", "--agents", "2", "-c", "2", "-n", "200", "--threshold", threshold, "--label", "who=agents"]
                .into_iter()
                .chain(["--db", db.to_str().unwrap(), &url])
                .collect::<Vec<_>>(),
            Duration::from_secs(60),
            |_| {},
        )
    };
    // Every answer takes at least 2 ms: a p50 under 1 us is broken on the merged run, exit 99.
    let broken = agents("p50<1us");
    assert_eq!(broken.code, 99, "{}{}", broken.stdout, broken.stderr);
    assert!(broken.stdout.contains("FAIL  p50<1us"), "{}", broken.stdout);
    let doc = broken.json.expect("the merged document");
    assert_eq!(doc["thresholds"][0]["pass"], false, "{doc}");
    assert_eq!(doc["steps"][0]["requests"], 200);
    let kept = agents("p50<10s");
    assert_eq!(kept.code, 0, "{}{}", kept.stdout, kept.stderr);
    // The merged runs, each once (not each agent's part), with the flags' label.
    let list = hakaru_with(&["history", "--db", db.to_str().unwrap()], Duration::from_secs(30), |_| {});
    assert_eq!(list.stdout.matches("who=agents").count(), 2, "{}", list.stdout);
    let db = hakaru::history::Db::open(&db).unwrap();
    let found = db.find(&hakaru::history::Filter::default()).unwrap();
    assert_eq!(found.len(), 2, "two merged runs kept, no agent's part");
}

#[test]
fn local_agents_of_a_checked_workload_fail_as_one_agent_would_on_a_wrong_answer() {
    let r = redis();
    let url = format!("redis://127.0.0.1:{}", r.port);
    // Another writer on the keys wicked's clients own (hakaru:00000010 ...), until the test ends.
    let mut other = Command::new(env!("CARGO_BIN_EXE_hakaru"))
        .args(["kv", "-q", "--mix", "set:1", "--keys", "100", "--key-prefix", "hakaru:000000", "-c", "2"])
        .args(["-d", "60s", "--no-history", &url])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    common::wait_for(Duration::from_secs(30), || ask(r.port, b"DBSIZE\r\n") != ":0\r\n");
    let out = hakaru_with(
        &["kv", "--workload", "wicked", "--verify", "--flush", "--rnum", "50", "--it", "200", "-c", "2"]
            .into_iter()
            .chain(["--agents", "2", "--seed", "9", "--no-history", &url])
            .collect::<Vec<_>>(),
        Duration::from_secs(120),
        |_| {},
    );
    let _ = other.kill();
    let _ = other.wait();
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.lines().any(|l| l.starts_with("FAILED: ")), "{}{}", out.stdout, out.stderr);
}
