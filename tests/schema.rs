//! The result document against `schema/result.schema.json`: the schema is a valid draft 2020-12 schema, the
//! documents `hakaru run --json` writes (clean and with errors) conform to it, and broken documents do not.

use std::path::Path;
use std::time::Duration;

use assert_cmd::Command;
use hakaru::metrics::LatencyHistogram;
use hakaru::result::ResultDocument;
use hakaru::serve::{ServeOptions, ServerHandle, start};
use serde_json::{Value, json};

const DRAFT_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";

fn schema() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/result.schema.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

fn validator() -> jsonschema::Validator {
    jsonschema::validator_for(&schema()).expect("the schema compiles")
}

/// Every way `doc` breaks the schema, one line each (empty when it conforms).
fn violations(validator: &jsonschema::Validator, doc: &Value) -> Vec<String> {
    validator.iter_errors(doc).map(|e| format!("at '{}': {e}", e.instance_path())).collect()
}

fn assert_conforms(validator: &jsonschema::Validator, doc: &Value) {
    let errors = violations(validator, doc);
    assert!(
        errors.is_empty(),
        "the result document breaks the schema in {} place(s):\n  {}\ndocument:\n{}",
        errors.len(),
        errors.join("\n  "),
        serde_json::to_string_pretty(doc).unwrap()
    );
}

fn target() -> ServerHandle {
    start(ServeOptions {
        listen: "127.0.0.1:0".parse().unwrap(),
        threads: 2,
        workers: None,
        miss_cost: Duration::from_millis(1),
        cache_size: 100,
    })
    .expect("the built-in target starts on loopback")
}

/// Runs the real binary with `args`, then `--json FILE` and `urls`, and returns the document it wrote.
fn run_hakaru(args: &[&str], urls: &[String]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("result.json");
    let output = Command::cargo_bin("hakaru")
        .unwrap()
        .arg("run")
        .args(args)
        .arg("--json")
        .arg(&file)
        .args(urls)
        .env("HAKARU_DB", dir.path().join("history.db"))
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "hakaru run failed ({}):\nstdout:\n{}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let text = std::fs::read_to_string(&file).expect("hakaru wrote the --json file");
    serde_json::from_str(&text).expect("the --json file is JSON")
}

/// A clean run: 200 requests over 4 connections against the built-in target.
fn clean_run() -> Value {
    let server = target();
    let url = format!("http://{}/", server.addr());
    let doc = run_hakaru(&["-q", "-n", "200", "-c", "4"], &[url]);
    server.stop();
    doc
}

/// Walks every subschema of `node` (objects and arrays), calling `visit` with its JSON pointer.
fn walk<'a>(node: &'a Value, pointer: String, visit: &mut impl FnMut(&str, &'a Value)) {
    match node {
        Value::Object(map) => {
            visit(&pointer, node);
            for (key, child) in map {
                walk(child, format!("{pointer}/{key}"), visit);
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                walk(child, format!("{pointer}/{i}"), visit);
            }
        }
        _ => {}
    }
}

#[test]
fn the_schema_is_a_valid_draft_2020_12_schema() {
    let schema = schema();
    assert_eq!(schema["$schema"], DRAFT_2020_12);
    if let Err(e) = jsonschema::draft202012::meta::validate(&schema) {
        panic!("the schema breaks the draft 2020-12 meta-schema at '{}': {e}", e.instance_path());
    }
    let validator = validator();
    assert_eq!(validator.draft(), jsonschema::Draft::Draft202012);
}

#[test]
fn the_schema_pins_the_document_name_and_explains_how_versions_grow() {
    let schema = schema();
    assert_eq!(schema["properties"]["schema"]["const"], hakaru::result::SCHEMA);
    let top = schema["description"].as_str().unwrap();
    for word in ["steps", "sweeps", "redis", "memcached", "without breaking readers"] {
        assert!(top.contains(word), "the top description should mention {word:?}: {top}");
    }
}

#[test]
fn every_object_of_the_schema_is_closed_and_every_property_described_and_required() {
    let schema = schema();
    let mut problems = Vec::new();
    walk(&schema, String::new(), &mut |pointer, node| {
        let Some(properties) = node.get("properties").and_then(Value::as_object) else {
            return;
        };
        // `properties` of a schema, not a property that happens to be named "properties".
        if pointer.ends_with("/properties") {
            return;
        }
        if node.get("additionalProperties") != Some(&Value::Bool(false)) {
            problems.push(format!("{pointer}: additionalProperties is not false"));
        }
        let required: Vec<&str> = node
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        for (name, property) in properties {
            let described = property.get("description").and_then(Value::as_str).is_some_and(|d| !d.trim().is_empty());
            if !described {
                problems.push(format!("{pointer}/properties/{name}: no description"));
            }
            // Every field of the Rust types is always written (Options as null), so all are required; but for
            // fields left out when absent, so that documents (and the history's workload identity, a hash of the
            // settings) stay as they were before the field existed: a slow HTTP request has no command or key.
            let left_out_when_absent = [
                "/$defs/settings/properties/whole_plan",
                "/$defs/settings/properties/ramp",
                "/$defs/settings/properties/script",
                "/$defs/settings/properties/data",
                "/$defs/settings/properties/prompts",
                "/$defs/settings/properties/percentile_metrics",
                "/$defs/settings/properties/replay",
                "/$defs/settings/properties/burstiness",
                "/$defs/generator/properties/script_percent",
                "/$defs/slow_request/properties/command",
                "/$defs/slow_request/properties/key",
                "/$defs/settings/properties/http_version",
                "/$defs/settings/properties/streams",
                "/$defs/settings/properties/ws_mode",
                "/$defs/settings/properties/unix_socket",
                "/$defs/settings/properties/tls",
                "/$defs/settings/properties/tls/properties/zero_rtt",
                "/$defs/settings/properties/proxy",
                "/$defs/settings/properties/connect_to",
                "/$defs/settings/properties/max_requests_per_connection",
                "/$defs/settings/properties/connection_rate",
                "/$defs/step/properties/websocket/properties/messages_per_connection_per_s",
                "/$defs/step/properties/websocket/properties/stamp_field",
                "/$defs/step/properties/websocket/properties/fan_out",
                "/$defs/step/properties/websocket/properties/stamps_missing",
                "/$defs/step/properties/websocket/properties/stamps_ahead",
                "/$defs/settings/properties/pace_window_us",
                "/$defs/schedule/properties/wakeups",
                "/$defs/schedule/properties/lag",
                "/$defs/schedule/properties/began_after_us",
                "/$defs/connections/properties/closed_by_hakaru",
                "/$defs/connections/properties/closed_by_hakaru_why",
                "/$defs/step/properties/graceful_stop_s",
                "/$defs/window/properties/progress",
                "/$defs/window/properties/late",
                "/$defs/window/properties/starved",
                "/$defs/schedule/properties/late_cpu",
                "/$defs/step/properties/events/properties/tokens/properties/usage_implausible",
                "/$defs/step/properties/events/properties/tokens/properties/tpot",
                "/$defs/step/properties/events/properties/tokens/properties/input_tokens",
                "/$defs/step/properties/events/properties/tokens/properties/answers_with_input",
                "/$defs/step/properties/events/properties/tokens/properties/total_tokens_per_s",
                "/$defs/step/properties/events/properties/tokens/properties/answers_short",
                "/$defs/step/properties/events/properties/tokens/properties/per_user_tokens_per_s",
                "/$defs/step/properties/events/properties/answers_in_one_read",
                "/$defs/step/properties/events/properties/goodput",
                "/$defs/settings/properties/graceful_stop_s",
                "/$defs/step/properties/phases/properties/tls_resumed",
                "/$defs/step/properties/phases/properties/tls_full_handshake",
                "/$defs/step/properties/phases/properties/tls_resumed_handshake",
                "/$defs/step/properties/http2",
                "/$defs/step/properties/grpc",
                "/$defs/step/properties/quic",
                "/$defs/step/properties/websocket",
                "/$defs/connections/properties/max_handing_over",
                "/$defs/step/properties/phases",
                "/$defs/window/properties/ttfb_p99_us",
                "/$defs/window/properties/first_event_p99_us",
                "/$defs/window/properties/tokens",
                "/$defs/step/properties/machine",
                "/$defs/settings/properties/events",
                "/$defs/settings/properties/events_until",
                "/$defs/step/properties/events",
                "/$defs/step/properties/events/properties/tokens",
            ]
            .contains(&format!("{pointer}/properties/{name}").as_str());
            if !required.contains(&name.as_str()) && !left_out_when_absent {
                problems.push(format!("{pointer}/properties/{name}: not required"));
            }
        }
        for name in &required {
            if !properties.contains_key(*name) {
                problems.push(format!("{pointer}: requires unknown property {name}"));
            }
        }
    });
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn a_clean_run_writes_a_document_that_conforms_to_the_schema() {
    let doc = clean_run();
    assert_conforms(&validator(), &doc);

    let step = &doc["steps"][0];
    assert_eq!(step["requests"], 200);
    assert_eq!(step["errors"], 0);
    assert_eq!(step["status"]["200"], 200);
    assert_eq!(step["error_kinds"], json!([]));
    assert_eq!(doc["settings"]["requests"], 200);
    assert_eq!(doc["settings"]["duration_s"], Value::Null);
    assert_eq!(doc["settings"]["connections"], 4);

    // And it reads back into the Rust type that wrote it.
    let typed: ResultDocument = serde_json::from_value(doc.clone()).expect("the document reads back");
    assert_eq!(typed.steps.len(), 1);
}

#[test]
fn the_histogram_of_a_step_decodes_to_as_many_latencies_as_the_summary_counts() {
    let doc = clean_run();
    let step = &doc["steps"][0];
    let data = step["histogram"]["data"].as_str().expect("histogram data is a string");
    let histogram = LatencyHistogram::from_base64(data).expect("the histogram decodes");
    assert_eq!(histogram.count(), step["latency"]["count"].as_u64().unwrap());
    assert_eq!(histogram.count(), 200);
    assert_eq!(histogram.max(), step["latency"]["max"].as_u64().unwrap());
    assert_eq!(histogram.min(), step["latency"]["min"].as_u64().unwrap());
}

#[test]
fn a_run_with_errors_and_timeouts_conforms_to_the_schema_and_lists_its_error_kinds() {
    let server = target();
    let base = format!("http://{}/", server.addr());
    // Round-robin over an answer, a closed connection, a stall (a timeout, status 0) and a 503.
    let urls = ["", "?fault=close", "?fault=stall", "?status=503"].map(|q| format!("{base}{q}"));
    let doc = run_hakaru(&["-q", "-n", "8", "-c", "2", "--timeout", "1s"], &urls);
    server.stop();
    assert_conforms(&validator(), &doc);

    let step = &doc["steps"][0];
    let kinds: Vec<&str> =
        step["error_kinds"].as_array().unwrap().iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert!(!kinds.is_empty(), "no error kinds in {step:#}");
    assert!(kinds.contains(&"closed"), "{kinds:?}");
    assert!(kinds.contains(&"timeout"), "{kinds:?}");
    assert!(step["errors"].as_u64().unwrap() > 0);
    assert!(step["status"]["0"].as_u64().unwrap() > 0, "timeouts count as status 0");
    assert!(!doc["warnings"].as_array().unwrap().is_empty(), "failed requests deserve a warning");
    let counted: u64 = step["error_kinds"].as_array().unwrap().iter().map(|e| e["count"].as_u64().unwrap()).sum();
    assert_eq!(counted, step["errors"].as_u64().unwrap());
}

#[test]
fn nullable_settings_accept_a_value_as_well_as_null() {
    let validator = validator();
    let mut doc = clean_run();
    let settings = &mut doc["settings"];
    settings["requests"] = Value::Null;
    settings["duration_s"] = json!(2.5);
    settings["patterns"] = json!("patterns.txt");
    settings["labels"] = json!({"branch": "main", "label": "nightly"});
    doc["interrupted"] = json!(true);
    doc["warnings"] = json!(["stopped by Ctrl-C (SIGINT): the figures cover only the time until then"]);
    assert_conforms(&validator, &doc);
}

#[test]
fn documents_that_break_the_format_are_rejected() {
    let validator = validator();
    let valid = clean_run();
    assert_conforms(&validator, &valid);

    type Mutation = fn(&mut Value);
    let mutations: [(&str, Mutation); 15] = [
        ("a newer schema name", |d| d["schema"] = json!("hakaru.result/2")),
        ("an unknown top-level field", |d| d["extra"] = json!(1)),
        ("an unknown field in a step", |d| d["steps"][0]["service_latency"] = json!({})),
        ("an unknown field in the settings", |d| d["settings"]["rate_limit"] = json!(100)),
        ("a status key that is not a code", |d| d["steps"][0]["status"]["abc"] = json!(1)),
        ("a status code of four digits", |d| d["steps"][0]["status"]["1000"] = json!(1)),
        ("a percentile key that is not pNN", |d| d["steps"][0]["latency"]["percentiles"]["median"] = json!(1)),
        ("a missing percentile", |d| {
            d["steps"][0]["latency"]["percentiles"].as_object_mut().unwrap().remove("p99.9");
        }),
        ("a missing required field", |d| {
            d["steps"][0]["latency"].as_object_mut().unwrap().remove("count");
        }),
        ("null where the field is not optional", |d| d["settings"]["timeout_s"] = Value::Null),
        ("a count as a string", |d| d["steps"][0]["requests"] = json!("200")),
        ("a label that is not text", |d| d["settings"]["labels"] = json!({"n": 1})),
        ("a label key with a space", |d| d["settings"]["labels"] = json!({"a b": "c"})),
        ("a negative count", |d| d["steps"][0]["errors"] = json!(-1)),
        ("an unknown histogram encoding", |d| {
            d["steps"][0]["histogram"]["encoding"] = json!("hdrhistogram-v2+deflate+base64")
        }),
    ];
    for (what, mutate) in mutations {
        let mut doc = valid.clone();
        mutate(&mut doc);
        assert!(!validator.is_valid(&doc), "a document with {what} should be rejected, but it validates");
    }
}
