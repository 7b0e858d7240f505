//! What users read: the text summary and the CSV of a fixed, hand-built result document, compared whole.
//!
//! The document does not depend on the machine or the clock: fixed provenance and settings, and latencies
//! recorded from known values. When an exporter changes on purpose, update the expected text here and read it.

use std::collections::BTreeMap;

use hakaru::export::Exporter;
use hakaru::export::csv::Csv;
use hakaru::export::text::Text;
use hakaru::metrics::{LatencyHistogram, WindowSummary};
use hakaru::result::provenance::Provenance;
use hakaru::result::{
    BreakdownRow, Connections, EncodedHistogram, ErrorCount, LatencySummary, ResultDocument, SCHEMA, Settings,
    SlowRequest, StepLoad, StepResult, Throughput,
};

const CSV_HEADER: &str = "maxRequests,concurrency,rps,meanLatencyMs,maxLatencyMs,minLatencyMs,\
p50LatencyMs,p75LatencyMs,p90LatencyMs,p95LatencyMs,p99LatencyMs,p999LatencyMs,p9999LatencyMs,\
errors,durationSeconds,ok,failed";

fn provenance() -> Provenance {
    Provenance {
        hakaru_version: "0.1.0".into(),
        hostname: "bench-01".into(),
        cpu_model: "Example CPU @ 3.00GHz".into(),
        cores: 8,
        kernel: "6.8.0-45-generic".into(),
        started_at: "2025-01-02T03:04:05Z".into(),
        command_line: ["hakaru", "run", "-c", "10", "-n", "1000", "http://127.0.0.1:8080/"].map(String::from).to_vec(),
        build: "release".into(),
        seed: 42,
    }
}

fn settings() -> Settings {
    Settings {
        command: "run".into(),
        targets: vec!["http://127.0.0.1:8080/".into()],
        method: "GET".into(),
        headers: vec![],
        body_bytes: 0,
        connections: 10,
        threads: 2,
        requests: Some(1000),
        duration_s: None,
        load_model: "closed".into(),
        rate: None,
        arrival: None,
        burstiness: None,
        pace_window_us: None,
        tls: None,
        connect_to: Vec::new(),
        max_requests_per_connection: None,
        connection_rate: None,
        proxy: None,
        sweep: None,
        ramp: None,
        events: None,
        events_until: None,
        keepalive: true,
        timeout_s: 5.0,
        connect_timeout_s: 5.0,
        graceful_stop_s: None,
        seed: 42,
        insecure: false,
        patterns: None,
        script: None,
        data: None,
        prompts: None,
        percentile_metrics: None,
        replay: None,
        ok_status: "200-399".into(),
        segment: None,
        whole_plan: None,
        start_at: None,
        source_address: None,
        unix_socket: None,
        http_version: None,
        streams: None,
        ws_mode: None,
        labels: Default::default(),
    }
}

/// A step whose latency figures and histogram come from `latencies_us`, as the engine would build them.
fn step(
    label: &str,
    connections: usize,
    latencies_us: &[u64],
    status: &[(&str, u64)],
    error_kinds: Vec<ErrorCount>,
    duration_s: f64,
) -> StepResult {
    let mut histogram = LatencyHistogram::new();
    for &us in latencies_us {
        histogram.record(us);
    }
    let errors: u64 = error_kinds.iter().map(|e| e.count).sum();
    let responses = latencies_us.len() as u64;
    let requests = responses + errors;
    // Statuses outside 200-399 are failures, as with the default --ok-status.
    let failed_statuses: BTreeMap<String, u64> = status
        .iter()
        .filter(|(code, _)| *code != "0" && !(200..400).contains(&code.parse::<u16>().unwrap()))
        .map(|&(code, n)| (code.to_string(), n))
        .collect();
    let failed = errors + failed_statuses.values().sum::<u64>();
    let ok = requests - failed;
    let bytes_in = responses * 180;
    let bytes_out = requests * 70;
    StepResult {
        label: label.into(),
        protocol: "http".into(),
        load: StepLoad { rate: None, model: "closed".into(), connections, threads: 2 },
        duration_s,
        requests,
        responses,
        errors,
        ok,
        failed,
        unfinished: 0,
        graceful_stop_s: None,
        throughput: Throughput {
            requests_per_s: requests as f64 / duration_s,
            ok_per_s: ok as f64 / duration_s,
            bytes_in,
            bytes_out,
            bytes_in_per_s: bytes_in as f64 / duration_s,
            bytes_out_per_s: bytes_out as f64 / duration_s,
        },
        latency: LatencySummary::from_histogram(&histogram),
        failed_latency: None,
        service: None,
        schedule: None,
        generator: Default::default(),
        server: None,
        probes: Vec::new(),
        warmup: None,
        breakdown: Vec::new(),
        slowest: Vec::new(),
        hit_rate: None,
        start_late_s: None,
        agents: Vec::new(),
        first_error_reply: None,
        http2: None,
        grpc: None,
        quic: None,
        websocket: None,
        phases: None,
        events: None,
        machine: None,
        status: status.iter().map(|&(code, n)| (code.to_string(), n)).collect::<BTreeMap<_, _>>(),
        failed_statuses,
        error_kinds,
        connections: Connections {
            asked: connections,
            max_open: connections as u64,
            opened: connections as u64,
            reconnects: 0,
            closed_by_hakaru: 0,
            closed_by_hakaru_why: Default::default(),
            max_handing_over: 0,
        },
        window_s: 1.0,
        windows: vec![WindowSummary {
            t: 0.0,
            requests,
            errors,
            p50_us: histogram.percentile(50.0),
            p99_us: histogram.percentile(99.0),
            max_us: histogram.max(),
            ..WindowSummary::default()
        }],
        histogram: EncodedHistogram {
            encoding: "hdrhistogram-v2+base64".into(),
            unit: "us".into(),
            data: histogram.to_base64(),
        },
    }
}

/// Two steps: 10 connections, all answered; 50 connections, slower, with timeouts and resets.
fn document() -> ResultDocument {
    // 1000 answers from 0.2 ms to 2.2 ms, and a tail of 10 at 15 ms.
    let calm: Vec<u64> = (0..990u64).map(|i| 200 + i * 2).chain([15_000; 10]).collect();
    // 500 answers from 1 ms to 10.98 ms, and 5 at 120 ms.
    let busy: Vec<u64> = (0..495u64).map(|i| 1_000 + i * 20).chain([120_000; 5]).collect();
    let first = step("c=10", 10, &calm, &[("200", 1000)], vec![], 0.5);
    let second = step(
        "c=50",
        50,
        &busy,
        &[("0", 3), ("200", 490), ("503", 10)],
        vec![
            ErrorCount { kind: "reset".into(), count: 2, sample: "connection reset by peer".into() },
            ErrorCount { kind: "timeout".into(), count: 3, sample: "no complete answer within 5s".into() },
        ],
        1.25,
    );
    // Two requests of the plan, and the slowest three.
    let mut second = second;
    second.breakdown = vec![
        BreakdownRow {
            kind: "request".into(),
            name: "GET /fast".into(),
            requests: 250,
            ok: 250,
            failed: 0,
            ok_per_s: 200.0,
            mean_us: 1500.0,
            p50_us: 1400,
            p99_us: 2900,
            p999_us: None,
            hits: None,
            misses: None,
            expected: None,
        },
        BreakdownRow {
            kind: "request".into(),
            name: "GET /slow".into(),
            requests: 255,
            ok: 240,
            failed: 15,
            ok_per_s: 192.0,
            mean_us: 12_700.0,
            p50_us: 9_900,
            p99_us: 120_000,
            p999_us: None,
            hits: None,
            misses: None,
            expected: None,
        },
    ];
    let slow = |request: &str, status: u16, error: Option<&str>, latency_us: u64| SlowRequest {
        request: request.into(),
        status,
        error: error.map(String::from),
        latency_us,
        command: None,
        key: None,
    };
    second.slowest = vec![
        slow("GET /slow", 0, Some("timeout"), 5_000_000),
        slow("GET /slow", 200, None, 120_063),
        slow("GET /fast", 503, None, 3_100),
    ];
    let mut warnings = first.labelled_warnings(true);
    warnings.extend(second.labelled_warnings(true));
    ResultDocument {
        schema: SCHEMA.into(),
        provenance: provenance(),
        settings: settings(),
        interrupted: false,
        steps: vec![first, second],
        warnings,
        analysis: None,
        runs: None,
        thresholds: Vec::new(),
        missing_segments: Vec::new(),
    }
}

/// One step in which nothing answered, stopped by Ctrl-C.
fn document_without_answers() -> ResultDocument {
    let refused =
        ErrorCount { kind: "connect_refused".into(), count: 4, sample: "connection refused (127.0.0.1:9)".into() };
    let mut only = step("run", 4, &[], &[], vec![refused], 2.0);
    only.connections.max_open = 0;
    only.connections.opened = 0;
    let mut warnings = only.warnings(true);
    warnings.push("stopped by Ctrl-C (SIGINT): the figures cover only the time until then".into());
    let mut settings = settings();
    settings.connections = 4;
    settings.requests = None;
    settings.duration_s = Some(10.0);
    settings.targets = vec!["http://127.0.0.1:9/".into()];
    ResultDocument {
        schema: SCHEMA.into(),
        provenance: provenance(),
        settings,
        interrupted: true,
        steps: vec![only],
        warnings,
        analysis: None,
        runs: None,
        thresholds: Vec::new(),
        missing_segments: Vec::new(),
    }
}

/// YCSB's two phases against Redis: a load phase of 1000 inserts and a run phase of 2000 operations.
fn kv_document() -> ResultDocument {
    let kv = |label: &str, n: u64, spread: u64| {
        let latencies: Vec<u64> = (0..n).map(|i| 20 + i % spread).collect();
        let mut s = step(label, 2, &latencies, &[("200", n)], vec![], 0.1);
        s.protocol = "redis".into();
        s
    };
    // The run phase's slowest: each op with the command it sent and its key.
    let slow = |request: &str, command: &str, key: &str, latency_us: u64| SlowRequest {
        request: request.into(),
        status: 200,
        error: None,
        latency_us,
        command: Some(command.into()),
        key: Some(key.into()),
    };
    let mut run = kv("run", 2000, 400);
    run.slowest = vec![
        slow("READ", "HGETALL", "user6284781860667377211", 419),
        slow("UPDATE", "HSET", "user1473284273796715866", 418),
    ];
    let mut settings = settings();
    settings.command = "kv".into();
    settings.method = "ycsb-a".into();
    settings.targets = vec!["redis://127.0.0.1:6379".into()];
    settings.connections = 2;
    settings.requests = Some(3000);
    ResultDocument {
        schema: SCHEMA.into(),
        provenance: provenance(),
        settings,
        interrupted: false,
        steps: vec![kv("load", 1000, 50), run],
        warnings: Vec::new(),
        analysis: None,
        runs: None,
        thresholds: Vec::new(),
        missing_segments: Vec::new(),
    }
}

/// Compares line by line so a failure shows where the output differs, then as a whole.
fn assert_text_eq(actual: &str, expected: &str) {
    for (i, (a, e)) in actual.lines().zip(expected.lines()).enumerate() {
        assert_eq!(a, e, "line {} differs; whole output:\n{actual}", i + 1);
    }
    assert_eq!(actual, expected, "whole output:\n{actual}");
}

#[test]
fn the_text_summary_of_two_steps_reads_as_expected() {
    let expected = "\
hakaru run  http://127.0.0.1:8080/
  HTTP/1.1, 10 connections, 2 threads, keep-alive on, 1000 requests, timeout 5s

step c=10
  throughput   2000.0 req/s   (1000 requests in 0.50 s)
  requests     ok 1000, failed 0 (0.00 %)
  transfer     in 360.0 kB/s   out 140.0 kB/s
  latency      min 200us   mean 1.33ms   stdev 1.49ms   max 15.01ms

  percentile   latency
  p50          1.20ms
  p75          1.70ms
  p90          2.00ms
  p95          2.10ms
  p99          2.18ms
  p99.9        15.01ms
  p99.99       15.01ms

  histogram (up to)
       309us  #######                                  55
       475us  ###########                              83
       731us  #################                        128
      1.12ms  ##########################               197
      1.73ms  ######################################## 304
      2.67ms  #############################            223
      4.11ms                                           0
      6.33ms                                           0
      9.74ms                                           0
     15.01ms  #                                        10

  status       200: 1000
  errors       none
  connections  10 of 10 open at once, 10 opened, 0 reconnects

step c=50
  throughput   392.0 req/s   (505 requests in 1.25 s; 404.0 req/s with the failures)
  requests     ok 490, failed 15 (2.97 %): status 503: 10, reset: 2, timeout: 3
  transfer     in 72.0 kB/s   out 28.3 kB/s
  latency      min 1.00ms   mean 7.08ms   stdev 11.70ms   max 120.06ms

  percentile   latency
  p50          5.98ms
  p75          8.49ms
  p90          9.98ms
  p95          10.49ms
  p99          10.89ms
  p99.9        120.06ms
  p99.99       120.06ms

  histogram (up to)
      1.61ms  ######                                   31
      2.61ms  ##########                               50
      4.21ms  ################                         80
      6.79ms  #########################                129
     10.96ms  ######################################## 205
     17.69ms                                           0
     28.55ms                                           0
     46.08ms                                           0
     74.38ms                                           0
    120.06ms  #                                        5

  status       0 (timeout): 3   200: 490   503: 10
  errors       reset (connection reset): 2   e.g. connection reset by peer
               timeout (no complete answer in time; status 0): 3   e.g. no complete answer within 5s
  connections  50 of 50 open at once, 50 opened, 0 reconnects

  group / request   requests       ok   failed       ok/s      mean       p50       p99
  GET /fast              250      250        0      200.0    1.50ms    1.40ms    2.90ms
  GET /slow              255      240       15      192.0   12.70ms    9.90ms  120.00ms

  slowest
         5.00s  timeout              GET /slow
      120.06ms  200                  GET /slow
        3.10ms  503                  GET /fast

warnings
  ! c=50: 15 of 505 requests failed (2.97 %: status 503: 10, reset: 2, timeout: 3); the latency figures are those of the 490 successes
";
    assert_text_eq(&Text.render(&document()), expected);
}

#[test]
fn the_text_summary_of_a_step_without_answers_says_so() {
    let expected = "\
hakaru run  http://127.0.0.1:9/
  HTTP/1.1, 4 connections, 2 threads, keep-alive on, 10s, timeout 5s

  throughput   0.0 req/s   (4 requests in 2.00 s; 2.0 req/s with the failures)
  requests     ok 0, failed 4 (100.00 %): connect_refused: 4
  transfer     in 0 B/s   out 140 B/s
  latency      no answers

  status       none
  errors       connect_refused (connection refused): 4   e.g. connection refused (127.0.0.1:9)
  connections  0 of 4 open at once, 0 opened, 0 reconnects

warnings
  ! no request got an answer; there are no latency figures
  ! stopped by Ctrl-C (SIGINT): the figures cover only the time until then
";
    assert_text_eq(&Text.render(&document_without_answers()), expected);
}

#[test]
fn the_text_summary_of_kv_phases_names_each_phase_and_says_nothing_of_keep_alive() {
    // Every step named (the run phase too), the request count of both phases, no "keep-alive" (HTTP's word), and
    // the kv status legend under each step.
    let expected = "\
hakaru kv  redis://127.0.0.1:6379
  Redis, 2 connections, 2 threads, 3000 requests, timeout 5s

step load
  throughput   10000.0 req/s   (1000 requests in 0.10 s)
  requests     ok 1000, failed 0 (0.00 %)
  transfer     in 1.80 MB/s   out 700.0 kB/s
  latency      min 20us   mean 44us   stdev 14us   max 69us

  percentile   latency
  p50          44us
  p75          57us
  p90          64us
  p95          67us
  p99          69us
  p99.9        69us
  p99.99       69us

  histogram (up to)
        23us  ####################                     80
        26us  ###############                          60
        29us  ###############                          60
        33us  ####################                     80
        38us  #########################                100
        43us  #########################                100
        48us  #########################                100
        54us  ##############################           120
        61us  ###################################      140
        69us  ######################################## 160

  status       200: 1000
               (200 a value or done, 204 a miss, 409 not stored, 500 an error reply, 0 timeout)
  errors       none
  connections  2 of 2 open at once, 2 opened, 0 reconnects

step run
  throughput   20000.0 req/s   (2000 requests in 0.10 s)
  requests     ok 2000, failed 0 (0.00 %)
  transfer     in 3.60 MB/s   out 1.40 MB/s
  latency      min 20us   mean 220us   stdev 115us   max 419us

  percentile   latency
  p50          219us
  p75          319us
  p90          379us
  p95          399us
  p99          415us
  p99.9        419us
  p99.99       419us

  histogram (up to)
        28us  ###                                      45
        37us  ###                                      45
        50us  #####                                    65
        68us  #######                                  90
        92us  #########                                120
       125us  ############                             165
       169us  ################                         220
       229us  ######################                   300
       310us  ##############################           405
       419us  ######################################## 545

  status       200: 2000
               (200 a value or done, 204 a miss, 409 not stored, 500 an error reply, 0 timeout)
  errors       none
  connections  2 of 2 open at once, 2 opened, 0 reconnects

  slowest
         419us  200                  READ: HGETALL user6284781860667377211
         418us  200                  UPDATE: HSET user1473284273796715866
";
    assert_text_eq(&Text.render(&kv_document()), expected);
}

#[test]
fn the_csv_has_one_row_per_step_in_milliseconds() {
    let expected = "\
maxRequests,concurrency,rps,meanLatencyMs,maxLatencyMs,minLatencyMs,p50LatencyMs,p75LatencyMs,p90LatencyMs,p95LatencyMs,p99LatencyMs,p999LatencyMs,p9999LatencyMs,errors,durationSeconds,ok,failed,request:GET /fast:requests,request:GET /fast:ok,request:GET /fast:failed,request:GET /fast:ok_per_s,request:GET /fast:mean_ms,request:GET /fast:p50_ms,request:GET /fast:p99_ms,request:GET /slow:requests,request:GET /slow:ok,request:GET /slow:failed,request:GET /slow:ok_per_s,request:GET /slow:mean_ms,request:GET /slow:p50_ms,request:GET /slow:p99_ms
1000,10,2000.0,1.327,15.007,0.200,1.198,1.698,1.998,2.099,2.179,15.007,15.007,0,0.500,1000,0,,,,,,,,,,,,,,
505,50,404.0,7.082,120.063,1.000,5.983,8.487,9.983,10.487,10.887,120.063,120.063,5,1.250,490,15,250,250,0,200.0,1.500,1.400,2.900,255,240,15,192.0,12.700,9.900,120.000
";
    assert_text_eq(&Csv.render(&document()), expected);
}

#[test]
fn the_csv_of_a_step_without_answers_has_empty_latencies_and_counts_the_errors() {
    let expected = "\
maxRequests,concurrency,rps,meanLatencyMs,maxLatencyMs,minLatencyMs,p50LatencyMs,p75LatencyMs,p90LatencyMs,p95LatencyMs,p99LatencyMs,p999LatencyMs,p9999LatencyMs,errors,durationSeconds,ok,failed
4,4,2.0,,,,,,,,,,,4,2.000,0,4
";
    assert_text_eq(&Csv.render(&document_without_answers()), expected);
}

#[test]
fn the_csv_header_has_loadtest_columns_then_percentiles() {
    for doc in [document(), document_without_answers()] {
        let csv = Csv.render(&doc);
        // loadtest's columns and hakaru's first; the columns of groups and requests follow when there are any.
        assert!(csv.lines().next().unwrap().starts_with(CSV_HEADER), "{csv}");
    }
}

#[test]
fn the_fixed_documents_conform_to_the_schema_and_survive_the_json_exporter() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/result.schema.json");
    let schema: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    for doc in [document(), document_without_answers(), kv_document()] {
        let json = hakaru::export::json::Json.render(&doc);
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        // A key-value op's command and key are there; an HTTP request has neither, not even as null.
        for slow in value["steps"].as_array().unwrap().iter().flat_map(|s| s["slowest"].as_array().unwrap()) {
            let kv = doc.settings.command == "kv";
            assert_eq!(slow.get("command").is_some() && slow.get("key").is_some(), kv, "{slow}");
        }
        let errors: Vec<String> =
            validator.iter_errors(&value).map(|e| format!("at '{}': {e}", e.instance_path())).collect();
        assert!(errors.is_empty(), "{}", errors.join("\n"));
        let back: ResultDocument = serde_json::from_str(&json).unwrap();
        assert_eq!(back, doc);
    }
}

#[test]
fn the_drnbench_csv_of_two_steps_matches_its_golden_file() {
    check_golden(&hakaru::export::drnbench::DrnbenchCsv.render(&document()), "sweep_drnbench.csv");
}

#[test]
fn the_drnbench_csv_has_drnbenchs_columns_and_number_formats_and_nothing_else() {
    // As drnbench 1.0.5 writes it (Ruby's CSV of Float#to_s): six columns, then one per status string, with the
    // percentage of the step's requests, an Integer 0 where the step had none.
    let csv = hakaru::export::drnbench::DrnbenchCsv.render(&document());
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some(
            "n_clients,total_n_requests,queries_per_second,min_elapsed_time,max_elapsed_time,average_elapsed_time,0,200,503"
        )
    );
    assert_eq!(lines.next(), Some("10,1000,2000.0,0.0002,0.015007,0.001327216,0,100.0,0"));
    let second: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(&second[..3], ["50", "505", "404.0"]);
    assert_eq!(&second[6..], ["0.594059405940594", "97.02970297029702", "1.9801980198019802"]);
}

#[test]
fn the_wide_sweep_csv_of_two_steps_matches_its_golden_file() {
    check_golden(&hakaru::export::sweep_csv::SweepCsv.render(&document()), "sweep_wide.csv");
}

/// Compares with `tests/golden/NAME`; `HAKARU_UPDATE_GOLDEN=1` rewrites the file (then read the diff).
fn check_golden(actual: &str, name: &str) {
    let golden = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(name);
    if std::env::var_os("HAKARU_UPDATE_GOLDEN").is_some() {
        std::fs::write(&golden, actual).unwrap();
    }
    assert_text_eq(actual, &std::fs::read_to_string(golden).unwrap());
    assert!(actual.starts_with(
        "n_clients,total_n_requests,queries_per_second,min_elapsed_time,max_elapsed_time,average_elapsed_time,"
    ));
}
