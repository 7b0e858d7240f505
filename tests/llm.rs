//! `hakaru llm` (issue 53): prompts from a dataset (synthetic, JSON lines, ShareGPT) sent as OpenAI bodies to
//! `hakaru serve`'s `/v1/...` endpoints (exact token counts at known instants) and to an aiohttp server no one here
//! wrote (which keeps every prompt it was sent); gamma arrivals; bad datasets and flags in one line each.

use crate::common;

use common::python::Server;
use common::{hakaru, target};
use serde_json::Value;
use std::time::Duration;

fn fig(step: &Value, name: &str, key: &str) -> f64 {
    let p = &step["events"][name];
    let v = if key.starts_with('p') { &p["percentiles"][key] } else { &p[key] };
    v.as_f64().unwrap_or_else(|| panic!("events.{name}.{key} in {}", step["events"]))
}

#[test]
fn synthetic_prompts_against_the_built_in_endpoint_count_every_token_at_its_instant() {
    let t = target();
    let u = format!("http://{}/v1/chat/completions?first=20ms&gap=5ms", t.addr());
    let args = ["llm", "--model", "m", "--num-prompts", "30", "--max-concurrency", "5", "--random-input-len", "8"];
    let meter = common::StallMeter::start();
    let out = hakaru(&[&args[..], &["--random-output-len", "6", &u]].concat());
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (doc, step) = (out.doc(), out.step());
    assert_eq!((step["ok"].as_u64(), doc["settings"]["method"].as_str()), (Some(30), Some("POST")));
    let tokens = &step["events"]["tokens"];
    assert_eq!((tokens["tokens"].as_u64(), tokens["answers_with_usage"].as_u64()), (Some(180), Some(30)), "{tokens}");
    // Its usage says the prompt's words: 8 each.
    assert_eq!((tokens["input_tokens"].as_u64(), tokens["answers_with_input"].as_u64()), (Some(240), Some(30)));
    assert!(tokens["total_tokens_per_s"].as_f64().unwrap() > tokens["tokens_per_s"].as_f64().unwrap(), "{tokens}");
    assert!(out.stdout.contains("240 input tokens (8.0 an answer, from usage)"), "{}", out.stdout);
    assert!(step["events"].get("answers_in_one_read").is_none(), "{}", step["events"]);
    // The server sends the first token 20 ms after the request and one every 5 ms: lower bounds exact (the
    // histograms' 3 digits may put them 0.1 % low), upper ones left to a busy machine.
    assert!(fig(step, "first_event", "min") >= 19_900.0, "{}", step["events"]);
    assert!(fig(step, "answer_time", "min") >= 44_900.0, "20 ms + 5 x 5 ms: {}", step["events"]);
    // Time per output token: (the answer's time less the first token's) / 5. A first token read late makes it
    // shorter, so its bounds are a quiet machine's.
    let tpot = tokens["tpot"]["percentiles"]["p50"].as_f64().unwrap();
    let test = "synthetic_prompts_against_the_built_in_endpoint_count_every_token_at_its_instant";
    common::on_time(&meter, test, (4_500.0..6_000.0).contains(&tpot), &format!("TPOT p50 {tpot} us near 5 ms"));
    // Tokens a second one user saw: one over TPOT (its p50 the inverse of TPOT's, to the histogram's 3 digits).
    let per_user = &tokens["per_user_tokens_per_s"];
    let p50 = per_user["p50"].as_f64().unwrap();
    assert!((p50 * tpot / 1e6 - 1.0).abs() < 0.01, "{p50} tokens/s against TPOT {tpot} us: {tokens}");
    assert!(per_user["min"].as_f64() <= per_user["p1"].as_f64() && per_user["p1"].as_f64().unwrap() <= p50);
    assert!(out.stdout.contains("per user "), "{}", out.stdout);
    // vLLM's --percentile-metrics lines: each figure's mean, median and the percentiles asked.
    let asked = ["--percentile-metrics", "ttft,e2el", "--metric-percentiles", "50,90.5", "-q", "--num-prompts", "5"];
    let p = hakaru(&[&["llm", "--model", "m", "--random-output-len", "3"][..], &asked, &[&u]].concat());
    assert_eq!(p.code, 0, "{}", p.stderr);
    let pm = &p.doc()["settings"]["percentile_metrics"];
    assert_eq!((pm["metrics"][1].as_str(), pm["percentiles"][1].as_f64()), (Some("e2el"), Some(90.5)), "{pm}");
    let line = p.stdout.lines().find(|l| l.trim_start().starts_with("ttft ")).unwrap_or_else(|| panic!("{}", p.stdout));
    assert!(line.contains("mean ") && line.contains("median ") && line.contains("p90.5 "), "{line}");
    assert!(p.stdout.lines().any(|l| l.trim_start().starts_with("e2el ")), "{}", p.stdout);
    // Whole answers: vLLM's default list less tpot, which they have none of.
    let whole = ["llm", "--model", "m", "--no-stream", "--metric-percentiles", "99", "-q", "--num-prompts", "2", &u];
    let w = hakaru(&whole);
    assert_eq!(w.code, 0, "{}", w.stderr);
    assert_eq!(w.doc()["settings"]["percentile_metrics"]["metrics"], serde_json::json!(["ttft", "itl", "e2el"]));
    assert_eq!(doc["settings"]["command"], "llm");
    let prompts = doc["settings"]["prompts"].as_str().unwrap();
    assert!(prompts.contains("synthetic prompts, 8 words each") && prompts.contains("max_tokens 6"), "{prompts}");
    assert!(out.stdout.contains(prompts), "{}", out.stdout);
    assert!(common::schema_errors(doc).is_empty(), "{:?}", common::schema_errors(doc));
}

#[test]
fn a_list_of_request_rates_sweeps_them_a_step_each() {
    let t = target();
    let u = format!("http://{}/v1/chat/completions?first=5ms&gap=1ms", t.addr());
    let args = ["llm", "--model", "m", "--request-rate", "20,40", "-d", "1s", "--random-output-len", "4", &u];
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("sweep.json");
    let out = hakaru(&[&args[..], &["--json", json.to_str().unwrap()]].concat());
    assert_eq!(out.code, 0, "{}", out.stderr);
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let sweep = &doc["settings"]["sweep"];
    assert_eq!((sweep["kind"].as_str(), sweep["values"].as_array().map(Vec::len)), (Some("rates"), Some(2)), "{sweep}");
    assert!(doc["settings"]["prompts"].as_str().unwrap().starts_with("synthetic prompts"), "{}", doc["settings"]);
    for step in doc["steps"].as_array().unwrap() {
        // Every step a token stream of 4 tokens an answer, its arrivals Poisson's as vLLM's.
        let tokens = &step["events"]["tokens"];
        assert_eq!(tokens["tokens"].as_u64(), Some(4 * step["ok"].as_u64().unwrap()), "{tokens}");
    }
    assert_eq!(doc["settings"]["arrival"], "poisson");
    assert!(out.stdout.contains("ttft p99"), "the sweep's table has the stream's columns: {}", out.stdout);
}

#[test]
fn an_objective_searches_the_highest_rate_that_meets_it() {
    let t = target();
    let u = format!("http://{}/v1/chat/completions?first=5ms&gap=1ms", t.addr());
    // An objective every rate meets: the search climbs from 20/s to the highest rate allowed, 40/s.
    let args = ["llm", "--model", "m", "--slo", "ttft p99<10s", "--request-rate", "20", "--rate-max", "40", "-d", "1s"];
    let out = hakaru(&[&args[..], &["--random-output-len", "3", &u]].concat());
    assert_eq!(out.code, 0, "{}", out.stderr);
    let doc = out.doc();
    assert_eq!(doc["settings"]["command"], "capacity");
    assert_eq!(doc["analysis"]["capacity"]["rate"].as_f64(), Some(40.0), "{}", doc["analysis"]);
    assert!(doc["settings"]["prompts"].as_str().is_some_and(|p| p.contains("max_tokens 3")), "{}", doc["settings"]);
}

#[test]
fn a_tokenizer_sizes_synthetic_prompts_to_the_tokens_asked() {
    // The fixture (a small byte-level BPE trained on docs/) makes more than a token of many words: the prompts of
    // 64 tokens are fewer words, which the built-in endpoint's usage counts (a word a token).
    let t = target();
    let u = format!("http://{}/v1/completions?first=1ms&gap=1ms", t.addr());
    let tokenizer = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tokenizer.json");
    let args = ["llm", "--model", "m", "--num-prompts", "6", "-c", "2", "--random-input-len", "64"];
    let out = hakaru(&[&args[..], &["--random-output-len", "2", "--tokenizer", tokenizer, &u]].concat());
    assert_eq!(out.code, 0, "{}", out.stderr);
    let prompts = out.doc()["settings"]["prompts"].as_str().unwrap().to_string();
    assert!(prompts.contains("64 tokens each (") && prompts.contains("counted by the tokenizer"), "{prompts}");
    let words: u64 = prompts.split("tokens each (").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    let tokens = &out.step()["events"]["tokens"];
    assert!(words < 64, "{prompts}");
    assert_eq!(tokens["input_tokens"].as_u64(), Some(6 * words), "{prompts}: {tokens}");
}

#[test]
fn a_prompt_of_forty_thousand_words_reaches_the_built_in_endpoint_whole() {
    // About 200 kB of body in many reads: the server reads it all before it answers (a cut body is a 400).
    let t = target();
    let u = format!("http://{}/v1/completions?first=1ms&gap=1ms", t.addr());
    let out = hakaru(&["llm", "--model", "m", "--num-prompts", "4", "-c", "2", "--random-input-len", "40000", &u]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!((out.status_count("200"), out.step()["events"]["tokens"]["tokens"].as_u64()), (4, Some(512)));
}

fn jsonl(dir: &std::path::Path, rows: &[Value]) -> std::path::PathBuf {
    let path = dir.join("prompts.jsonl");
    let text: Vec<String> = rows.iter().map(Value::to_string).collect();
    std::fs::write(&path, text.join("\n") + "\n").unwrap();
    path
}

#[test]
fn json_lines_prompts_reach_an_aiohttp_server_in_order_with_their_lengths() {
    let dir = tempfile::tempdir().unwrap();
    let rows = [
        serde_json::json!({"prompt": "say \"hi\"\nthen stop", "output_tokens": 4}),
        serde_json::json!({"text": "二つ目 the second"}),
        serde_json::json!({"prompt": "third one here", "max_tokens": 2}),
    ];
    let path = jsonl(dir.path(), &rows);
    let mut server = Server::start("sse_server.py", &[], "aiohttp");
    let u = format!("http://127.0.0.1:{}/v1/completions", server.port);
    let p = path.to_str().unwrap();
    let args = ["llm", "--model", "org/model-1", "--dataset-name", "jsonl", "--dataset-path", p, "--num-prompts", "6"];
    let out = hakaru(&[&args[..], &["-c", "1", &u]].concat());
    assert_eq!(out.code, 0, "{}", out.stderr);
    let seen = server.ask("count");
    // One connection: the rows in order, cycled; a row without a length takes 256 (vLLM's custom default).
    let prompts: Vec<&str> = seen["prompts"].as_array().unwrap().iter().map(|p| p.as_str().unwrap()).collect();
    let firsts = ["say \"hi\"\nthen stop", "二つ目 the second", "third one here"];
    assert_eq!(prompts, [firsts, firsts].concat(), "{seen}");
    let max: Vec<u64> = seen["max_tokens"].as_array().unwrap().iter().map(|m| m.as_u64().unwrap()).collect();
    assert_eq!(max, [4, 256, 2, 4, 256, 2]);
    assert!(seen["models"].as_array().unwrap().iter().all(|m| m == "org/model-1"), "{seen}");
    let tokens = &out.step()["events"]["tokens"];
    assert_eq!((tokens["tokens"].as_u64(), tokens["answers_with_usage"].as_u64()), (Some(524), Some(6)), "{tokens}");
    // The prompts are in no output: not the summary, not the document.
    for p in firsts {
        assert!(!out.stdout.contains(p) && !out.doc().to_string().contains(p), "{p}");
    }
}

#[test]
fn sharegpt_prompts_are_first_turns_sampled_by_the_seed() {
    let dir = tempfile::tempdir().unwrap();
    let conversations: Vec<Value> = (0..20)
        .map(|i| {
            serde_json::json!({"id": i, "conversations": [
                {"from": "human", "value": format!("question number {i} about things")},
                {"from": "gpt", "value": "x".repeat(40 + i)},
                {"from": "human", "value": "a later turn"},
            ]})
        })
        .collect();
    let path = dir.path().join("sharegpt.json");
    std::fs::write(&path, Value::Array(conversations).to_string()).unwrap();
    let mut server = Server::start("sse_server.py", &[], "aiohttp");
    let u = format!("http://127.0.0.1:{}/v1/chat/completions", server.port);
    let p = path.to_str().unwrap();
    let args = ["llm", "--model", "m", "--dataset-name", "sharegpt", "--dataset-path", p, "--num-prompts", "5"];
    let out = hakaru(&[&args[..], &["--seed", "3", "-c", "1", &u]].concat());
    assert_eq!(out.code, 0, "{}", out.stderr);
    let seen = server.ask("count");
    let prompts: Vec<String> =
        seen["prompts"].as_array().unwrap().iter().map(|p| p.as_str().unwrap().to_string()).collect();
    assert_eq!(prompts.len(), 5, "{seen}");
    let mut distinct = prompts.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), 5, "five different conversations: {prompts:?}");
    for (p, max) in prompts.iter().zip(seen["max_tokens"].as_array().unwrap()) {
        let i: u64 = p.split(' ').nth(2).unwrap().parse().unwrap();
        // The reply's length estimated at 4 characters a token.
        assert_eq!(max.as_u64(), Some((40 + i).div_ceil(4)), "{p}");
    }
    let note = out.doc()["settings"]["prompts"].as_str().unwrap();
    assert!(note.contains("5 prompts sampled (seed 3) from 20 of the 20 conversations"), "{note}");
}

#[test]
fn burstiness_gives_gamma_arrivals_at_the_rate_asked() {
    let t = target();
    let u = format!("http://{}/", t.addr());
    let out = hakaru(&["run", "--rate", "200", "--burstiness", "0.5", "-n", "100", "-c", "20", &u]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let s = &out.doc()["settings"];
    assert_eq!((s["arrival"].as_str(), s["burstiness"].as_f64()), (Some("gamma"), Some(0.5)), "{s}");
    assert_eq!(out.step()["ok"], 100);
    assert!(common::schema_errors(out.doc()).is_empty(), "{:?}", common::schema_errors(out.doc()));
    // vLLM's --request-rate is Poisson's, as vLLM's is.
    let u = format!("http://{}/v1/chat/completions?first=1ms&gap=1ms", t.addr());
    let out =
        hakaru(&["llm", "--model", "m", "--request-rate", "100", "--num-prompts", "20", "--random-input-len", "4", &u]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let s = &out.doc()["settings"];
    assert_eq!(
        (s["arrival"].as_str(), s["rate"].as_f64(), s["requests"].as_u64()),
        (Some("poisson"), Some(100.0), Some(20))
    );
}

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tokenizer.json");

#[test]
fn bad_datasets_and_flags_get_one_line_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    let bad_line = dir.path().join("bad.jsonl");
    std::fs::write(&bad_line, "{\"prompt\":\"a\"}\n{\"prompt\": 1,}\n").unwrap();
    let not_array = dir.path().join("obj.json");
    std::fs::write(&not_array, "{\"conversations\": []}").unwrap();
    let (bad, obj) = (bad_line.to_str().unwrap(), not_array.to_str().unwrap());
    let tok = ["llm", "--model", "m", "--tokenizer"];
    let u = "http://127.0.0.1:9/v1/chat/completions";
    let cases: &[(&[&str], &str)] = &[
        (&["llm", u], "--model: name the model"),
        (&["llm", "--model", "m", "--dataset-name", "jsonl", "--dataset-path", bad, u], "line 2, column "),
        (
            &["llm", "--model", "m", "--dataset-name", "sharegpt", "--dataset-path", obj, u],
            "a ShareGPT file is a JSON array",
        ),
        (&["llm", "--model", "m", "--dataset-name", "jsonl", "--dataset-path", "/dev/zero", u], "not a regular file"),
        (&["llm", "--model", "m", "--dataset-name", "jsonl", u], "give the file with --dataset-path"),
        (&["llm", "--model", "m", "-b", "{}", u], "-b/--body: llm makes each request's body"),
        (&["llm", "--model", "m", "--request-rate", "fast", u], "--request-rate 'fast'"),
        (&["llm", "--model", "m", "--request-rate", "5", "--rate", "5", u], "both given"),
        (&["llm", "--model", "m", "--burstiness", "0.5", u], "--burstiness shapes the gaps of an open loop"),
        (&["llm", "--model", "m", "--request-rate", "5", "--burstiness", "0", u], "--burstiness 0: give a shape"),
        (&["llm", "--model", "m", "--random-range-ratio", "1.5", u], "--random-range-ratio 1.5"),
        (&["llm", "--model", "m", "--events", "sse", u], "--events sse: llm reads token streams"),
        (&["run", "--goodput", "ttft:1s", u], "--goodput reads a stream's events: give --events too"),
        (&["run", "--agents", "2", "--goodput", "ttft:1s", u], "--goodput reads a stream's events: give --events too"),
        (&["run", "--rate", "9", "--burstiness", "0.5", "-t", "2", u], "--burstiness keeps its shape in one schedule"),
        (&["llm", "--model", "m", "--num-prompts", "0", u], "--num-prompts 0: give at least 1"),
        (&[&tok[..], &[bad, u]].concat(), "not a HuggingFace tokenizer.json"),
        (&["llm", "--model", "m", "--percentile-metrics", "ttft,speed", u], "'speed' is not a figure here"),
        (&["llm", "--model", "m", "--metric-percentiles", "0", u], "'0' is not a percentile"),
        (&["llm", "--model", "m", "--request-rate", "1,2", u], "give each step's length with -d"),
        (&["llm", "--model", "m", "--request-rate", "1,x", "-d", "1s", u], "'x' is no rate"),
        (&["llm", "--model", "m", "--request-rate", "1,2", "-d", "1s", "-n", "5", u], "leave -n/--requests out"),
        (&["llm", "--model", "m", "--slo", "ttft p99<1s", u], "--slo searches the rate a step at a time: give"),
        (&["llm", "--model", "m", "--rate-max", "9", u], "--rate-max bounds --slo's search"),
        (&["llm", "--model", "m", "--request-rate", "inf,2", "-d", "1s", u], "inf is no step of a sweep"),
        (&["llm", "--model", "m", "--slo", "ttft<1s", "--request-rate", "1,2", "-d", "1s", u], "starts from one rate"),
        (&["llm", "--model", "m", "--no-stream", "--slo", "tpot p99<1s", "-d", "1s", u], "--slo tpot with --no-stream"),
        (
            &["llm", "--model", "m", "--percentile-metrics", "ttft", "--request-rate", "1,2", "-d", "1s", u],
            "print in one run's summary",
        ),
        (&["llm", "--model", "m", "--slo", "speed>9", "-d", "1s", u], "--slo"),
        (&[&tok[..], &["/dev/zero", u]].concat(), "--tokenizer '/dev/zero': not a regular file"),
        (&[&tok[..], &[FIXTURE, "--random-input-len", "100000000000", u]].concat(), "--random-input-len 100000000000"),
        (
            &[&tok[..], &[FIXTURE, "--dataset-name", "jsonl", "--dataset-path", bad, u]].concat(),
            "with --dataset-name jsonl",
        ),
        (&["llm", "--model", "m", "--output-len", "0", u], "--output-len 0"),
        (
            &["llm", "--model", "m", "--no-stream", "--goodput", "tpot:50ms", u],
            "whole answers have no time per output token",
        ),
    ];
    common::refused_in_one_line(cases);
}

#[test]
fn a_stream_sent_at_once_is_named_in_a_warning() {
    // aiohttp writing each answer's tokens in one write when the last is due, as a server or a proxy that buffers
    // its stream sends them: time to first token is then the whole answer's, and the warning says so.
    let server = Server::start("sse_server.py", &[], "aiohttp");
    let u = format!("http://127.0.0.1:{}/v1/chat/completions?gap=2&buffered=1", server.port);
    let args = ["llm", "--model", "m", "--num-prompts", "20", "-c", "2", "--random-input-len", "4"];
    let out = hakaru(&[&args[..], &["--output-len", "8", &u]].concat());
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.step()["events"]["answers_in_one_read"].as_u64(), Some(20), "{}", out.step()["events"]);
    let warnings = out.doc()["warnings"].to_string();
    assert!(warnings.contains("20 of 20 answers came whole in one read"), "{warnings}");
}

#[test]
fn the_built_in_endpoint_frames_what_follows_an_llm_body_and_closes_on_a_refused_one() {
    use std::io::{Read, Write};
    let t = target();
    let read_all = |s: &mut std::net::TcpStream| {
        let mut text = Vec::new();
        s.set_read_timeout(Some(std::time::Duration::from_secs(20))).unwrap();
        let _ = s.read_to_end(&mut text);
        String::from_utf8_lossy(&text).into_owned()
    };
    // Two requests in one write: the LLM body is read whole, then the GET after it is answered (then close).
    let body = r#"{"messages":[{"role":"user","content":"a b c"}],"max_tokens":2}"#;
    let mut s = std::net::TcpStream::connect(t.addr()).unwrap();
    let two = format!(
        "POST /v1/chat/completions?first=1ms&gap=1ms HTTP/1.1\r\nHost: h\r\nContent-Length: {}\r\n\r\n{body}\
         GET /?size=3 HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(two.as_bytes()).unwrap();
    let text = read_all(&mut s);
    assert_eq!(text.matches("HTTP/1.1 200 OK").count(), 2, "{text}");
    assert!(text.contains(r#""content":"tok tok ""#) && text.contains(r#""prompt_tokens":3"#), "{text}");
    // HTTP/1.0 with keep-alive: the whole answer says it keeps the connection (a client waits for its length).
    let mut s = std::net::TcpStream::connect(t.addr()).unwrap();
    let json = r#"{"prompt":"x","max_tokens":1}"#;
    let one = format!(
        "POST /v1/completions?first=1ms HTTP/1.0\r\nConnection: keep-alive\r\nContent-Length: {}\r\n\r\n{json}",
        json.len()
    );
    s.write_all(one.as_bytes()).unwrap();
    let mut head = [0u8; 512];
    s.set_read_timeout(Some(std::time::Duration::from_secs(20))).unwrap();
    let n = s.read(&mut head).unwrap();
    let head = String::from_utf8_lossy(&head[..n]);
    assert!(head.starts_with("HTTP/1.1 200") && head.to_ascii_lowercase().contains("connection: keep-alive"), "{head}");
    // A body past 1 MiB is refused by its head, and the connection closed without reading it.
    let mut s = std::net::TcpStream::connect(t.addr()).unwrap();
    s.write_all(b"POST /v1/chat/completions HTTP/1.1\r\nHost: h\r\nContent-Length: 5000000\r\n\r\n{").unwrap();
    let text = read_all(&mut s);
    assert!(text.starts_with("HTTP/1.1 400") && text.contains("at most 1048576 are read"), "{text}");
}

#[test]
fn a_trace_sends_each_request_at_its_time_with_prompts_of_its_lengths() {
    let t = target();
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.jsonl");
    let rows: Vec<String> = (0..5)
        .map(|i| {
            format!(
                r#"{{"timestamp": {}, "input_length": {}, "output_length": {}, "hash_ids": [{i}]}}"#,
                100 * i,
                10 + i,
                2 + i
            )
        })
        .collect();
    std::fs::write(&trace, rows.join("\n")).unwrap();
    let u = format!("http://{}/v1/completions?first=1ms&gap=1ms", t.addr());
    let args = ["llm", "--model", "m", "--dataset-name", "trace", "--dataset-path", trace.to_str().unwrap()];
    let out = hakaru(&[&args[..], &[&u[..]]].concat());
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (doc, step) = (out.doc(), out.step());
    assert_eq!((step["ok"].as_u64(), doc["settings"]["arrival"].as_str()), (Some(5), Some("recorded")));
    // The server's usage counts the prompt's words: each row's input_length, and its output_length in tokens.
    let tokens = &step["events"]["tokens"];
    assert_eq!((tokens["input_tokens"].as_u64(), tokens["tokens"].as_u64()), (Some(10 + 11 + 12 + 13 + 14), Some(20)));
    // 0.4 s from the first request to the last one's send: never sooner.
    assert!(step["duration_s"].as_f64().unwrap() >= 0.4, "{}", step["duration_s"]);
    assert_eq!(step["schedule"]["lag"]["count"].as_u64(), Some(5));
    let bad = hakaru(&[&args[..], &["--request-rate", "5", &u[..]]].concat());
    assert!(bad.code == 2 && bad.stderr.contains("sends each request at its recorded time"), "{}", bad.stderr);
}

#[test]
fn history_lists_a_streamed_results_time_to_first_token_tokens_a_second_tpot_and_goodput() {
    let t = target();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let db = db.to_str().unwrap();
    let u = format!("http://{}/v1/chat/completions?first=20ms&gap=1ms", t.addr());
    let args = ["llm", "--model", "m", "--num-prompts", "20", "-c", "4", "--random-input-len", "4", "--db", db];
    let out =
        common::hakaru_with(&[&args[..], &["--goodput", "ttft:10s", &u]].concat(), Duration::from_secs(60), |_| {});
    assert_eq!(out.code, 0, "{}", out.stderr);
    let plain = common::hakaru_with(
        &["run", "-n", "10", "-c", "1", "--db", db, &format!("http://{}/", t.addr())],
        Duration::from_secs(60),
        |_| {},
    );
    assert_eq!(plain.code, 0, "{}", plain.stderr);
    let list = hakaru(&["history", "--db", db]);
    assert_eq!(list.code, 0, "{}", list.stderr);
    let lines: Vec<&str> = list.stdout.lines().collect();
    let head = lines[0].trim_end();
    assert!(head.contains("ttft p99") && head.contains("tok/s  tpot p99") && head.ends_with("goodput"), "{head}");
    let llm = lines.iter().find(|l| l.contains(" llm ")).unwrap_or_else(|| panic!("{}", list.stdout));
    let cells: Vec<&str> = llm.split_whitespace().rev().collect();
    // From the end: goodput (every answer met a 10 s objective), TPOT's p99, output tokens a second, and the time
    // to first token's p99 (20 ms and more).
    assert_eq!((cells[0], cells[1]), ("%", "100.0"), "{llm}");
    let ms = |c: &str| match c.strip_suffix("ms") {
        Some(n) => n.parse::<f64>().unwrap(),
        None => c.strip_suffix("us").unwrap_or_else(|| panic!("{llm}")).parse::<f64>().unwrap() / 1000.0,
    };
    assert!(ms(cells[2]) > 0.0 && cells[3].parse::<f64>().unwrap() > 0.0 && ms(cells[4]) >= 19.9, "{llm}");
    let run = lines.iter().find(|l| l.contains(" run ")).unwrap();
    assert!(run.split_whitespace().rev().take(4).all(|c| c == "-"), "no stream: no figures: {run}");
}

#[test]
fn whole_answers_are_timed_whole_and_counted_from_their_usage() {
    let t = target();
    let u = format!("http://{}/v1/chat/completions?first=20ms&gap=5ms", t.addr());
    let args = ["llm", "--model", "m", "--no-stream", "--num-prompts", "10", "-c", "2", "--random-input-len", "6"];
    let out = hakaru(&[&args[..], &["--random-output-len", "5", &u]].concat());
    assert_eq!(out.code, 0, "{}", out.stderr);
    let step = out.step();
    assert_eq!(step["ok"], 10);
    let tokens = &step["events"]["tokens"];
    assert_eq!((tokens["tokens"].as_u64(), tokens["answers_with_usage"].as_u64()), (Some(50), Some(10)), "{tokens}");
    assert_eq!(tokens["input_tokens"].as_u64(), Some(60));
    // The whole answer leaves when its last token would have: 20 ms + 4 x 5 ms, and so does its "first token".
    assert!(fig(step, "first_event", "min") >= 39_900.0, "{}", step["events"]);
    assert!(out.doc()["settings"]["prompts"].as_str().unwrap().contains("whole answers"), "{}", out.doc()["settings"]);
}

#[test]
fn answers_that_end_before_their_max_tokens_are_counted_as_short() {
    let mut server = Server::start("sse_server.py", &[], "aiohttp");
    let stop = format!("http://127.0.0.1:{}/v1/chat/completions?finish=stop", server.port);
    let args = ["llm", "--model", "m", "--num-prompts", "6", "-c", "2", "--random-input-len", "3", "--output-len", "4"];
    let out = hakaru(&[&args[..], &[&stop[..]]].concat());
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.step()["events"]["tokens"]["answers_short"].as_u64(), Some(6), "{}", out.step()["events"]);
    assert!(out.stdout.contains("6 of 6 answers ended before their max_tokens"), "{}", out.stdout);
    let length = format!("http://127.0.0.1:{}/v1/chat/completions?finish=length", server.port);
    let out = hakaru(&[&args[..], &[&length[..]]].concat());
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.step()["events"]["tokens"].get("answers_short").is_none(), "{}", out.step()["events"]);
    assert_eq!(server.ask("count")["requests"].as_u64(), Some(12));
}
