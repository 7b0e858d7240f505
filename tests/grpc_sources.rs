//! gRPC over TLS (grpcs://) and the method's types from elsewhere than a .proto file: a compiled FileDescriptorSet
//! (--protoset) and server reflection, against Python's grpcio (tests/grpc_server.py) with exact call counts.

use crate::common;

use common::grpc::Greeter;
use common::{hakaru, write_in};
use prost_reflect::prost::Message;

/// The service split over two files, so that reflection has an import to ask for.
const GREETER: &str = r#"syntax = "proto3";
package helloworld;
import "reply.proto";
service Greeter {
  rpc SayHello (HelloRequest) returns (HelloReply);
}
message HelloRequest { string name = 1; int32 times = 2; }
"#;
const REPLY: &str = "syntax = \"proto3\";\npackage helloworld;\nmessage HelloReply { string message = 1; }\n";

/// greeter.proto and reply.proto compiled (by protox, as `protoc -o --include_imports` would) to a
/// FileDescriptorSet in `dir`: its path.
fn protoset(dir: &tempfile::TempDir) -> String {
    write_in(dir, "greeter.proto", GREETER);
    write_in(dir, "reply.proto", REPLY);
    let set = protox::compile(["greeter.proto"], [dir.path()]).expect("the test's .proto files compile");
    assert_eq!(set.file.len(), 2);
    let path = dir.path().join("greeter.protoset");
    std::fs::write(&path, set.encode_to_vec()).unwrap();
    path.to_str().unwrap().to_string()
}

fn run(url: &str, extra: &[&str]) -> common::Output {
    let mut args = vec!["run", "--no-monitor", "-n", "300", "-c", "2", "--streams", "4", url];
    args.extend_from_slice(&["--call", "helloworld.Greeter/SayHello", "-b", r#"{"name":"x"}"#]);
    args.extend_from_slice(extra);
    hakaru(&args)
}

#[test]
fn grpcs_calls_a_tls_server_with_k_and_counts_an_untrusted_certificate_without() {
    let dir = tempfile::tempdir().unwrap();
    common::self_signed_certificate(dir.path());
    let mut server = Greeter::start_with(&["--tls", dir.path().to_str().unwrap()]);
    let proto = write_in(&dir, "hello.proto", common::grpc::PROTO);
    let url = format!("grpcs://localhost:{}", server.port);
    let out = run(&url, &["--proto", &proto, "-k"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.step()["ok"], 300, "{}", out.step());
    assert_eq!(server.count("SayHello"), 300);
    assert_eq!(out.step()["protocol"], "grpc");

    // Without -k the self-signed certificate is refused: every call fails as tls, none reaches the server.
    let out = hakaru(
        &["run", "--no-monitor", "-n", "4", "-c", "1", &url, "--call", "helloworld.Greeter/SayHello"]
            .into_iter()
            .chain(["--proto", &proto])
            .collect::<Vec<_>>(),
    );
    assert_eq!(out.step()["ok"], 0, "{}", out.step());
    assert!(out.error_count("tls") > 0, "{}", out.step());
    assert_eq!(server.count("SayHello"), 300, "no call without -k");
}

#[test]
fn a_protoset_gives_the_methods_types() {
    let dir = tempfile::tempdir().unwrap();
    let set = protoset(&dir);
    let mut server = Greeter::start();
    let out = run(&server.url(), &["--protoset", &set]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.step()["ok"], 300, "{}", out.step());
    assert_eq!(server.count("SayHello"), 300);

    // A file that is no FileDescriptorSet, and a method it does not have: one line each, exit 2, no call.
    let junk = write_in(&dir, "junk.protoset", "not a descriptor set");
    let out = run(&server.url(), &["--protoset", &junk]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("--protoset '") && out.stderr.contains("FileDescriptorSet"), "{}", out.stderr);
    let out = hakaru(&["run", "-n", "5", &server.url(), "--call", "helloworld.Greeter/Nope", "--protoset", &set]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("no method 'Nope'"), "{}", out.stderr);
    assert_eq!(server.count("SayHello"), 300);
}

#[test]
fn without_proto_or_protoset_the_server_is_asked_by_reflection() {
    let dir = tempfile::tempdir().unwrap();
    let set = protoset(&dir);
    let mut server = Greeter::start_with(&["--reflect", &set]);
    // grpcio-reflection answers grpc.reflection.v1alpha only: hakaru asks v1 first, then v1alpha; reply.proto
    // comes from a second question on the same stream.
    let out = run(&server.url(), &["-H", "x-hakaru: 1"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.step()["ok"], 300, "{}", out.step());
    assert_eq!(server.count("SayHello"), 300, "the reflection call is no call of the method");
    assert_eq!(server.count("reflection grpc.reflection.v1alpha.ServerReflection"), 1, "one reflection call");
    assert_eq!(server.count("reflection with metadata"), 1, "-H goes with the reflection call too (as grpcurl)");

    // A field the reflected message does not have is refused before the load, as with --proto.
    let out =
        hakaru(&["run", "-n", "5", &server.url(), "--call", "helloworld.Greeter/SayHello", "-b", r#"{"nmae":"x"}"#]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("nmae"), "{}", out.stderr);
    assert_eq!(server.count("SayHello"), 300);
}

#[test]
fn reflection_v1_is_asked_first() {
    let dir = tempfile::tempdir().unwrap();
    let set = protoset(&dir);
    let mut server = Greeter::start_with(&["--reflect", &set, "--reflect-as", "v1,v1alpha"]);
    let out = run(&server.url(), &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.step()["ok"], 300, "{}", out.step());
    assert_eq!(server.count("reflection grpc.reflection.v1.ServerReflection"), 1);
    assert_eq!(server.count("reflection grpc.reflection.v1alpha.ServerReflection"), 0, "v1 answered");
    assert_eq!(server.count("SayHello"), 300);
}

#[test]
fn reflection_over_tls_takes_k_as_the_run_does() {
    let dir = tempfile::tempdir().unwrap();
    common::self_signed_certificate(dir.path());
    let set = protoset(&dir);
    let mut server = Greeter::start_with(&["--tls", dir.path().to_str().unwrap(), "--reflect", &set]);
    let url = format!("grpcs://localhost:{}", server.port);
    let out = run(&url, &["-k"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.step()["ok"], 300, "{}", out.step());
    assert_eq!(server.count("SayHello"), 300);
    // Without -k the reflection call's handshake refuses the certificate: one line, exit 2, before any load.
    let out = run(&url, &[]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
    assert!(out.stderr.contains("TLS handshake") && out.stderr.contains("-k"), "{}", out.stderr);
    assert_eq!(server.count("SayHello"), 300);
}

#[test]
fn a_reflection_answer_that_never_comes_is_bounded_by_timeout() {
    use std::io::{Read, Write};
    // An HTTP/2 peer that takes the connection, says its SETTINGS, and never answers a stream.
    let peer = common::hostile::Hostile::start(|mut s| {
        let mut preface = [0u8; 24];
        if s.read_exact(&mut preface).is_err() {
            return;
        }
        let _ = s.write_all(&[0, 0, 0, 4, 0, 0, 0, 0, 0]);
        let mut sink = [0u8; 4096];
        while matches!(s.read(&mut sink), Ok(n) if n > 0) {}
    });
    let url = format!("grpc://{}", peer.addr);
    let started = std::time::Instant::now();
    let out = hakaru(&["run", "-n", "5", &url, "--call", "helloworld.Greeter/SayHello", "--timeout", "1s"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
    assert!(out.stderr.contains("no complete server reflection answer within 1s (--timeout)"), "{}", out.stderr);
    assert!(started.elapsed() < std::time::Duration::from_secs(60), "bounded, not a hang");
}

#[test]
fn a_server_without_reflection_is_one_line_saying_what_to_give() {
    let mut server = Greeter::start();
    let out = hakaru(&["run", "-n", "5", &server.url(), "--call", "helloworld.Greeter/SayHello"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
    assert!(out.stderr.contains("does not offer server reflection"), "{}", out.stderr);
    assert!(out.stderr.contains("--proto FILE or --protoset FILE"), "{}", out.stderr);
    assert_eq!(server.count("SayHello"), 0);
}
