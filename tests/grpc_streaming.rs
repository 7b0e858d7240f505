//! gRPC streaming calls against Python's grpcio (tests/grpc_server.py): each message of a server-streaming answer
//! counted, client-streaming and bidirectional calls sending `--stream-messages` each, exact counts on both sides.

use crate::common;

use common::grpc::{Greeter, PROTO};
use common::{hakaru, write_in};

/// `hakaru run` calling `method` with `body` and `extra` flags, `-n calls`.
fn call(server: &Greeter, method: &str, body: &str, calls: &str, extra: &[&str]) -> common::Output {
    let dir = tempfile::tempdir().unwrap();
    let proto = write_in(&dir, "hello.proto", PROTO);
    let url = server.url();
    let mut args = vec!["run", "--no-monitor", "-n", calls, "-c", "2", "--streams", "4", &url];
    args.extend_from_slice(&["--call", method, "--proto", &proto, "-b", body]);
    args.extend_from_slice(extra);
    hakaru(&args)
}

#[test]
fn each_message_of_a_server_streaming_answer_is_counted() {
    let mut server = Greeter::start();
    let out = call(&server, "helloworld.Greeter/Lots", r#"{"name":"x","times":20}"#, "200", &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let step = out.step();
    assert_eq!(step["ok"], 200, "{step}");
    let g = &step["grpc"];
    assert_eq!(g["messages_received"], 4000, "{step}");
    assert_eq!(g["messages_received_per_call"], 20.0, "{step}");
    assert_eq!(g["messages_sent_per_call"], 1, "{step}");
    assert!(g["messages_received_per_s"].as_f64().unwrap() > 0.0, "{step}");
    assert!(out.stdout.contains("messages     4000 received (20 a call"), "{}", out.stdout);
    assert_eq!(server.count("Lots"), 200);
    assert_eq!(server.count("Lots messages"), 4000);
    let errors = common::schema_errors(out.doc());
    assert!(errors.is_empty(), "{errors:?}");
}

#[test]
fn a_streaming_calls_time_to_first_message_is_its_phases_waiting() {
    let server = Greeter::start();
    // The answer's headers at once, its first message 50 ms later, then 19 more 10 ms apart: the first message
    // comes 50 ms or more after the call's send, and 190 ms or more before its end.
    let out = call(&server, "helloworld.Greeter/Lots", r#"{"name":"slow","times":20}"#, "16", &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let step = out.step();
    assert_eq!(step["ok"], 16, "{step}");
    let first = step["phases"]["waiting"]["mean"].as_f64().unwrap();
    let whole = step["latency"]["mean"].as_f64().unwrap();
    assert!(first >= 50_000.0, "first message {first} us: not the headers' time: {step}");
    assert!(first + 150_000.0 < whole, "first message {first} us, whole call {whole} us: {step}");
}

#[test]
fn a_client_streaming_call_sends_stream_messages_then_ends() {
    let mut server = Greeter::start();
    // ghz's spelling: --stream-call-count; the array's messages taken in turn.
    let body = r#"[{"name":"a"},{"name":"b"}]"#;
    let out = call(&server, "helloworld.Greeter/Collect", body, "100", &["--stream-call-count", "5"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let step = out.step();
    assert_eq!(step["ok"], 100, "{step}");
    assert_eq!(step["grpc"]["messages_sent_per_call"], 5, "{step}");
    assert_eq!(step["grpc"]["messages_received"], 100, "{step}");
    assert_eq!(server.count("Collect"), 100);
    assert_eq!(server.count("Collect messages"), 500);
}

#[test]
fn a_bidirectional_call_sends_its_messages_and_counts_the_answers() {
    let mut server = Greeter::start();
    let out = call(&server, "helloworld.Greeter/Chat", r#"{"name":"a"}"#, "100", &["--stream-messages", "3"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let step = out.step();
    assert_eq!(step["ok"], 100, "{step}");
    assert_eq!(step["grpc"]["messages_received"], 300, "{step}");
    assert_eq!(step["grpc"]["messages_received_per_call"], 3.0, "{step}");
    assert_eq!(server.count("Chat"), 100);
    assert_eq!(server.count("Chat messages"), 300);
}

#[test]
fn stream_interval_spaces_a_calls_messages_as_the_server_sees_them() {
    let mut server = Greeter::start();
    // 4 messages 50 ms apart: the last goes 150 ms after the first, and the server answers after the last.
    let spaced = ["--stream-messages", "4", "--stream-interval", "50ms"];
    let out = call(&server, "helloworld.Greeter/Collect", r#"{"name":"a"}"#, "8", &spaced);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let step = out.step();
    assert_eq!(step["ok"], 8, "{step}");
    assert_eq!(step["grpc"]["messages_sent_per_call"], 4, "{step}");
    assert!(step["latency"]["min"].as_f64().unwrap() >= 150_000.0, "{step}");
    assert_eq!(server.count("Collect"), 8);
    assert_eq!(server.count("Collect messages"), 32);
    // The server saw them spaced too (a loose bound: its own threads may read the first message late on a busy
    // machine; all at once they come within a millisecond or two).
    let span = server.count("Collect shortest span ms");
    assert!(span >= 50, "the server saw a call's 4 messages within {span} ms");

    // Bidirectional (ghz's spelling, --stream-call-count): each message answered as it comes.
    let spaced = ["--stream-call-count", "3", "--stream-interval", "40ms"];
    let out = call(&server, "helloworld.Greeter/Chat", r#"[{"name":"a"},{"name":"b"}]"#, "8", &spaced);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let step = out.step();
    assert_eq!(step["ok"], 8, "{step}");
    assert_eq!(step["grpc"]["messages_received"], 24, "{step}");
    assert!(step["latency"]["min"].as_f64().unwrap() >= 80_000.0, "{step}");
    assert_eq!(server.count("Chat messages"), 24);
}

#[test]
fn what_streaming_cannot_do_is_refused_in_one_line() {
    let mut server = Greeter::start();
    let cases: [(&str, &[&str], &str); 3] = [
        ("helloworld.Greeter/SayHello", &["--stream-interval", "10ms"], "a unary method, which sends one"),
        ("helloworld.Greeter/Lots", &["--stream-messages", "2"], "a server-streaming method, which sends one"),
        ("helloworld.Greeter/Chat", &["--stream-interval", "soon"], "--stream-interval 'soon': "),
    ];
    for (method, extra, says) in cases {
        let out = call(&server, method, "{}", "5", extra);
        assert_eq!(out.code, 2, "{extra:?}: {}", out.stderr);
        assert!(out.stderr.contains(says), "{extra:?}: {}", out.stderr);
        assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
    }
    assert_eq!(server.count("Chat") + server.count("Lots") + server.count("SayHello"), 0);
}

#[test]
fn a_streaming_call_that_times_out_counts_the_messages_it_received() {
    let mut server = Greeter::start();
    // 50 ms to the first message, then one every 10 ms: about 45 have come when the 500 ms timeout ends the call.
    let slow = r#"{"name":"slow","times":100}"#;
    let out = call(&server, "helloworld.Greeter/Lots", slow, "4", &["--timeout", "500ms"]);
    let step = out.step();
    // grpcio ends a call at the deadline hakaru sends (grpc-timeout) with DEADLINE_EXCEEDED, or hakaru's own
    // timer ends it first: either way the messages that came are counted.
    assert_eq!(out.error_count("timeout") + out.error_count("grpc_deadline_exceeded"), 4, "{step}");
    let received = step["grpc"]["messages_received"].as_u64().unwrap();
    // At least 25 a call on a busy machine; never more than the server sent. Before, 0.
    let sent = server.count("Lots messages");
    assert!(received >= 100 && received <= sent, "{received} received, {sent} sent: {step}");
}
