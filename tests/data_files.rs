//! `--data FILE` and `{{...}}` templates: requests filled per request from a data file's rows and the built-ins,
//! checked in the log of a real nginx (method, target, headers, body length).

use crate::common;

use std::net::SocketAddr;
use std::time::Duration;

use common::{LoggedNginx, hakaru, wait_listening, write_in};

#[test]
fn ten_thousand_unique_rows_are_each_sent_exactly_once_then_the_run_ends() {
    let s = LoggedNginx::start();
    let dir = tempfile::tempdir().unwrap();
    let rows = common::id_name_rows(10_000);
    let data = write_in(&dir, "rows.csv", &rows);
    let url = s.nginx.url("/u/{{id}}");
    // Bounded by time, but the rows run out long before.
    let out = hakaru(&["run", "-c", "8", "-t", "2", "-d", "60s", "--data", &data, "--data-order", "unique", &url]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.step()["requests"], 10_000);
    assert_eq!(out.doc()["interrupted"], false);
    assert!(out.doc()["settings"]["data"].as_str().unwrap().ends_with("rows.csv (unique)"));
    assert_eq!(common::schema_errors(out.doc()), Vec::<String>::new());
    let mut ids: Vec<u32> = s
        .wait_lines(10_000)
        .iter()
        .map(|l| l.split_whitespace().nth(1).unwrap().strip_prefix("/u/").unwrap().parse().unwrap())
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..10_000).collect::<Vec<u32>>(), "each row once");
}

#[test]
fn columns_fill_the_path_headers_and_body_and_sequential_rows_wrap() {
    let s = LoggedNginx::start();
    let dir = tempfile::tempdir().unwrap();
    let data = write_in(&dir, "rows.jsonl", "{\"id\": 1, \"name\": \"ab\"}\n{\"id\": 2, \"name\": \"cde f\"}\n");
    let url = s.nginx.url("/p/{{id}}?n={{name}}&s={{seq}}");
    let out = hakaru(&[
        "run",
        "-c",
        "1",
        "-t",
        "1",
        "-n",
        "5",
        "--data",
        &data,
        "-m",
        "POST",
        "-H",
        "X-Token: t-{{name}}",
        "-H",
        "Content-Type: text/plain",
        "-b",
        "{{name}}!",
        &url,
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines = s.wait_lines(5);
    let want = [
        "POST /p/1?n=ab&s=1 host=127.0.0.1:PORT counter=- token=t-ab type=text/plain length=3",
        "POST /p/2?n=cde%20f&s=2 host=127.0.0.1:PORT counter=- token=t-cde f type=text/plain length=6",
        "POST /p/1?n=ab&s=3 host=127.0.0.1:PORT counter=- token=t-ab type=text/plain length=3",
        "POST /p/2?n=cde%20f&s=4 host=127.0.0.1:PORT counter=- token=t-cde f type=text/plain length=6",
        "POST /p/1?n=ab&s=5 host=127.0.0.1:PORT counter=- token=t-ab type=text/plain length=3",
    ]
    .map(|l| l.replace("PORT", &s.nginx.port.to_string()));
    assert_eq!(lines, want);
    // The figures are labelled with the template.
    assert!(out.stdout.contains("POST /p/{{id}}?n={{name}}&s={{seq}}"), "{}", out.stdout);
    assert!(out.step()["generator"]["script_percent"].as_f64().is_some());
}

#[test]
fn over_http2_every_stream_carries_its_own_row_in_its_path_headers_and_body() {
    let s = LoggedNginx::start();
    wait_listening(SocketAddr::from(([127, 0, 0, 1], s.nginx.h2_port)), Duration::from_secs(10));
    let dir = tempfile::tempdir().unwrap();
    let rows = common::id_name_rows(2_000);
    let data = write_in(&dir, "rows.csv", &rows);
    // nginx 1.22's `listen ... http2` on a plain port speaks HTTP/2 only (prior knowledge): a request that reaches
    // its log came as HTTP/2 frames.
    let url = format!("http://127.0.0.1:{}/u/{{{{id}}}}", s.nginx.h2_port);
    let args = ["run", "--http2", "-c", "2", "--streams", "8", "-t", "2", "-d", "60s", "--data", &data];
    let more = ["--data-order", "unique", "-m", "POST", "-H", "X-Token: t-{{name}}", "-b", "{{name}}!", &url];
    let out = hakaru(&[&args[..], &more[..]].concat());
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.step()["requests"], 2_000);
    assert_eq!(out.step()["ok"], 2_000);
    assert_eq!(out.doc()["settings"]["http_version"], "2");
    let mut lines = s.wait_lines(2_000);
    lines.sort_unstable();
    let mut want: Vec<String> = (0..2_000)
        .map(|i| {
            let body = format!("n{i}!");
            format!(
                "POST /u/{i} host=127.0.0.1:{} counter=- token=t-n{i} type=- length={}",
                s.nginx.h2_port,
                body.len()
            )
        })
        .collect();
    want.sort_unstable();
    assert_eq!(lines, want, "each row once, each in its own stream's path, header and body");
}

#[test]
fn builtins_work_without_a_data_file() {
    let s = LoggedNginx::start();
    let url = s.nginx.url("/b/{{uuid}}/{{rand 3 4}}/{{now_ms}}");
    let out = hakaru(&["run", "-c", "2", "-n", "20", &url]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines = s.wait_lines(20);
    let mut uuids = std::collections::HashSet::new();
    for l in &lines {
        let parts: Vec<&str> = l.split_whitespace().nth(1).unwrap().split('/').collect();
        assert_eq!(parts[2].len(), 36, "{l}");
        uuids.insert(parts[2].to_string());
        assert!(["3", "4"].contains(&parts[3]), "{l}");
        assert!(parts[4].parse::<u64>().unwrap() > 1_700_000_000_000, "{l}");
    }
    assert_eq!(uuids.len(), 20);
}

#[test]
fn bad_data_and_templates_are_refused_in_one_line_before_the_load() {
    let s = LoggedNginx::start();
    let dir = tempfile::tempdir().unwrap();
    let data = write_in(&dir, "rows.csv", "id,name\n1,a\n2\n");
    let good = write_in(&dir, "good.csv", "id\n1\n");
    let url = |p: &str| s.nginx.url(p);
    let cases: [(Vec<String>, &str); 4] = [
        (vec!["--data".into(), data.clone(), url("/{{id}}")], "rows.csv': line 3:"),
        (vec!["--data".into(), good.clone(), url("/{{nope}}")], "'{{nope}}' is neither a column of the data file (id)"),
        (vec!["--data".into(), good.clone(), url("/{{rand 5 1}}")], "{{rand LOW HIGH}}"),
        (vec!["--data".into(), good, url("/a"), url("/b")], "give one URL"),
    ];
    for (args, said) in cases {
        let mut all = vec!["run", "-n", "5"];
        all.extend(args.iter().map(String::as_str));
        let out = hakaru(&all);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
        assert!(out.stderr.contains(said), "{said}: {}", out.stderr);
    }
    assert!(std::fs::read_to_string(&s.log).unwrap_or_default().is_empty(), "nothing was sent");
}

/// Everything a raw command gets back on a new connection, read until the reply ends with `end`.
fn ask_until(port: u16, command: &[u8], end: &str) -> String {
    use std::io::{Read as _, Write as _};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
    s.write_all(command).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 65536];
    while !got.ends_with(end.as_bytes()) {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "the server closed after {}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..n]);
    }
    String::from_utf8(got).unwrap()
}

fn kv_rows(n: usize) -> String {
    std::iter::once("key,value\n".to_string()).chain((0..n).map(|i| format!("u:{i},\"v{i} x\"\n"))).collect()
}

/// `hakaru kv` sending `command` once for each row of `data`: bounded by time, but the rows run out long before.
fn kv_every_row_once(url: &str, load: &[&str], command: &str, data: &str) -> (i32, String, serde_json::Value) {
    let mut args = load.to_vec();
    args.extend_from_slice(&["-d", "60s", "--command", command, "--data", data, "--data-order", "unique", url]);
    common::kv_json(&args)
}

#[test]
fn kv_unique_rows_set_exactly_those_keys_with_those_values_on_redis() {
    let redis = common::redis();
    let dir = tempfile::tempdir().unwrap();
    let data = write_in(&dir, "rows.csv", &kv_rows(1000));
    let url = format!("redis://127.0.0.1:{}", redis.port);
    let (code, out, doc) = kv_every_row_once(&url, &["-c", "4", "-t", "2"], "SET {{key}} {{value}}", &data);
    assert_eq!(code, 0, "{out}");
    let step = &doc["steps"][0];
    assert_eq!(step["requests"], 1000, "{out}");
    assert_eq!(step["errors"], 0, "{out}");
    assert_eq!(doc["interrupted"], false);
    // The run ended for want of rows, and says so (a rate or a duration not reached is explained).
    let said =
        doc["warnings"].as_array().unwrap().iter().any(|w| w.as_str().unwrap().contains("every row of the data"));
    assert!(said, "{}", doc["warnings"]);
    assert!(doc["settings"]["data"].as_str().unwrap().ends_with("rows.csv (unique)"), "{}", doc["settings"]);
    assert!(step["generator"]["script_percent"].as_f64().is_some(), "{}", step["generator"]);
    assert_eq!(common::schema_errors(&doc), Vec::<String>::new());
    assert_eq!(common::ask(redis.port, b"DBSIZE\r\n"), ":1000\r\n");
    let mut mget = format!("*{}\r\n$4\r\nMGET\r\n", 1001);
    for i in 0..1000 {
        let k = format!("u:{i}");
        mget.push_str(&format!("${}\r\n{k}\r\n", k.len()));
    }
    // The last value's reply ends the read.
    let got = ask_until(redis.port, mget.as_bytes(), "v999 x\r\n");
    let want: String = std::iter::once("*1000\r\n".to_string())
        .chain((0..1000).map(|i| {
            let v = format!("v{i} x");
            format!("${}\r\n{v}\r\n", v.len())
        }))
        .collect();
    assert_eq!(got, want);
}

#[test]
fn kv_unique_rows_set_exactly_those_keys_on_memcached_and_builtins_fill_redis_keys() {
    let mc = common::memcached();
    let dir = tempfile::tempdir().unwrap();
    let data = write_in(&dir, "rows.csv", &kv_rows(300));
    let url = format!("memcache://127.0.0.1:{}", mc.port);
    let (code, out, doc) = kv_every_row_once(&url, &["-c", "3"], "set {{key}} {{value}}", &data);
    assert_eq!(code, 0, "{out}");
    assert_eq!(doc["steps"][0]["requests"], 300, "{out}");
    let stats = common::ask(mc.port, b"stats\r\n");
    assert!(stats.contains("STAT curr_items 300\r\n"), "{stats}");
    let keys: Vec<String> = (0..300).map(|i| format!("u:{i}")).collect();
    let got = ask_until(mc.port, format!("get {}\r\n", keys.join(" ")).as_bytes(), "END\r\n");
    let want: String = (0..300)
        .map(|i| format!("VALUE u:{i} 0 {}\r\nv{i} x\r\n", format!("v{i} x").len()))
        .chain(std::iter::once("END\r\n".to_string()))
        .collect();
    assert_eq!(got, want);

    // Scaled out: each agent (--segment I/N) takes its share of the rows, so together they set each key once.
    let redis = common::redis();
    let url = format!("redis://127.0.0.1:{}", redis.port);
    for segment in ["0/2", "1/2"] {
        let (code, out, doc) =
            kv_every_row_once(&url, &["-c", "2", "--segment", segment], "SET {{key}} {{value}}", &data);
        assert_eq!(code, 0, "{out}");
        assert_eq!(doc["steps"][0]["requests"], 150, "{segment}: {out}");
    }
    assert_eq!(common::ask(redis.port, b"DBSIZE\r\n"), ":300\r\n");
    drop(redis);

    // Without a data file: the built-ins, beside memtier's __key__ (one key, so every op's key is hakaru:0).
    let redis = common::redis();
    let url = format!("redis://127.0.0.1:{}", redis.port);
    let (code, out, _) = common::kv_json(&[
        "-c",
        "1",
        "-n",
        "50",
        "--keys",
        "1",
        "--command",
        "SET __key__:{{seq}} \"{{rand 5 5}} {{uuid}}\"",
        &url,
    ]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(common::ask(redis.port, b"DBSIZE\r\n"), ":50\r\n");
    for n in [1, 50] {
        let v = common::ask(redis.port, format!("GET hakaru:0:{n}\r\n").as_bytes());
        assert!(v.starts_with("$38\r\n5 ") && v.as_bytes()[5 + 2 + 14] == b'4', "key {n}: {v:?}");
    }
}

#[test]
fn kv_data_files_that_cannot_fit_are_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let data = write_in(&dir, "rows.csv", &kv_rows(3));
    let url = "memcache://127.0.0.1:1";
    let refused = |args: &[&str], want: &str| {
        let out = hakaru(args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
        assert!(out.stderr.contains(want), "{args:?}: {}", out.stderr);
    };
    // A value with a space cannot be a word of memcached's command line.
    refused(&["kv", "--command", "get {{value}}", "--data", &data, url], "row 1, column 'value': 'v0 x'");
    refused(&["kv", "--command", "get {{nope}}", "--data", &data, url], "'{{nope}}' is neither a column");
    refused(&["kv", "--data", &data, url], "its rows fill --command templates");
    refused(&["kv", "--command", "get x", "--data", &data, url], "no --command uses its columns (key, value)");
    refused(
        &["kv", "--command", "get {{key}}", "--data", &data, "--data-order", "unique", "--warmup", "1s", url],
        "--warmup",
    );
}
