//! `--grpc-compression gzip` against Python's grpcio (tests/grpc_server.py --compress, answering in gzip): the
//! server reads each compressed request message whole, hakaru each compressed answer; both ways the bytes on the
//! wire are the compressed ones.

use crate::common;

use common::grpc::{Greeter, PROTO};
use common::{hakaru, write_in};

#[test]
fn gzip_messages_go_compressed_and_compressed_answers_are_read() {
    let mut server = Greeter::start_with(&["--compress"]);
    let dir = tempfile::tempdir().unwrap();
    let proto = write_in(&dir, "hello.proto", PROTO);
    // 3000 equal characters: a few dozen bytes compressed, each way (the answer is "Hello " and the name).
    let name = "x".repeat(3000);
    let body = format!(r#"{{"name":"{name}"}}"#);
    let url = server.url();
    let run = |extra: &[&str]| {
        let mut args = vec!["run", "--no-monitor", "-n", "50", "-c", "1", "--streams", "4", &url];
        args.extend_from_slice(&["--call", "helloworld.Greeter/SayHello", "--proto", &proto, "-b", &body]);
        args.extend_from_slice(extra);
        hakaru(&args)
    };
    let out = run(&["--grpc-compression", "gzip"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let step = out.step();
    assert_eq!(step["ok"], 50, "{step}");
    assert_eq!(step["grpc"]["messages_received"], 50, "{step}");
    // The server inflated each message to its 3000-character name.
    assert_eq!(server.count(&format!("SayHello name={name} times=0")), 50);
    let bytes = |dir: &str| step["throughput"][dir].as_u64().unwrap();
    assert!(bytes("bytes_out") < 50 * 1000, "requests sent compressed: {step}");
    assert!(bytes("bytes_in") < 50 * 1000, "answers came compressed, and were taken: {step}");
}
