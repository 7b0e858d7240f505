//! tests/grpc_server.py, a gRPC server on Python's grpcio (a gRPC implementation no one here wrote): started on a
//! loopback port its kernel picks, its counters read back through its stdin and stdout.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::Duration;

/// The service tests/grpc_server.py serves.
pub const PROTO: &str = r#"syntax = "proto3";
package helloworld;
service Greeter {
  rpc SayHello (HelloRequest) returns (HelloReply);
  rpc Fail (HelloRequest) returns (HelloReply);
  rpc Nap (HelloRequest) returns (HelloReply);
  rpc Lots (HelloRequest) returns (stream HelloReply);
  rpc Collect (stream HelloRequest) returns (HelloReply);
  rpc Chat (stream HelloRequest) returns (stream HelloReply);
}
message HelloRequest { string name = 1; int32 times = 2; }
message HelloReply { string message = 1; }
"#;

/// The Python server: its port, and its counters read through its stdin and stdout.
pub struct Greeter {
    child: Child,
    stdin: Option<ChildStdin>,
    /// Its stdout's lines, read by a thread of their own so that a server that hangs fails the test on a bound.
    lines: Receiver<String>,
    pub port: u16,
}

/// A python3 that has grpcio: Debian's (scripts/test.sh installs python3-grpcio) when another python3 (pyenv's)
/// comes first in PATH.
fn python() -> &'static str {
    ["python3", "/usr/bin/python3"]
        .into_iter()
        .find(|p| Command::new(p).args(["-c", "import grpc"]).stderr(Stdio::null()).status().is_ok_and(|s| s.success()))
        .expect("a python3 with grpcio (scripts/test.sh installs python3-grpcio)")
}

impl Greeter {
    pub fn start() -> Greeter {
        Greeter::start_with(&[])
    }

    /// The server with `options` (`--tls DIR`, `--reflect FILE`: see tests/grpc_server.py).
    pub fn start_with(options: &[&str]) -> Greeter {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/grpc_server.py");
        let mut child = Command::new(python())
            .arg(script)
            .args(options)
            // grpcio's C core logs each refused TLS handshake: a test refusing one on purpose need not read them.
            .env("GRPC_VERBOSITY", "NONE")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the gRPC server starts");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let mut greeter = Greeter { child, stdin, lines, port: 0 };
        // The server says its port once it listens: the line is the event waited for.
        let line = greeter.line();
        greeter.port = line.trim().strip_prefix("port ").and_then(|p| p.parse().ok()).unwrap_or_else(|| {
            panic!("the gRPC server did not say its port: {line:?}");
        });
        greeter
    }

    /// The server's next line, within a generous bound (a busy machine): a server that hangs fails the test.
    pub fn line(&self) -> String {
        self.lines.recv_timeout(Duration::from_secs(120)).expect("the gRPC server answered within 120 s")
    }

    pub fn url(&self) -> String {
        format!("grpc://127.0.0.1:{}", self.port)
    }

    /// Calls seen by the server, by method.
    pub fn count(&mut self, method: &str) -> u64 {
        writeln!(self.stdin.as_mut().unwrap(), "count").unwrap();
        let line = self.line();
        let counts: serde_json::Value = serde_json::from_str(line.trim().strip_prefix("count ").unwrap()).unwrap();
        counts[method].as_u64().unwrap_or(0)
    }
}

impl Drop for Greeter {
    fn drop(&mut self) {
        // Closing its stdin stops it; killed besides, in case it is stuck.
        drop(self.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
