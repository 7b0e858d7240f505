//! tests/grpc_server.py, a gRPC server on Python's grpcio (a gRPC implementation no one here wrote): started on a
//! loopback port its kernel picks, its counters read back through its stdin and stdout.

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
    server: super::python::Server,
    pub port: u16,
}

impl Greeter {
    pub fn start() -> Greeter {
        Greeter::start_with(&[])
    }

    /// The server with `options` (`--tls DIR`, `--reflect FILE`: see tests/grpc_server.py).
    pub fn start_with(options: &[&str]) -> Greeter {
        // grpcio's C core logs each refused TLS handshake: a test refusing one on purpose need not read them.
        let server =
            super::python::Server::start_with_env("grpc_server.py", options, "grpc", &[("GRPC_VERBOSITY", "NONE")]);
        Greeter { port: server.port, server }
    }

    /// The server's next line, within a generous bound (a busy machine): a server that hangs fails the test.
    pub fn line(&self) -> String {
        self.server.line()
    }

    pub fn url(&self) -> String {
        format!("grpc://127.0.0.1:{}", self.port)
    }

    /// Calls seen by the server, by method.
    pub fn count(&mut self, method: &str) -> u64 {
        self.server.ask("count")[method].as_u64().unwrap_or(0)
    }

    /// Every counter of the server, by name.
    pub fn counts(&mut self) -> serde_json::Map<String, serde_json::Value> {
        self.server.ask("count").as_object().cloned().unwrap_or_default()
    }
}
