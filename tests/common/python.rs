//! A test server written in Python on a library no one here wrote (grpcio, websockets): started from a file under
//! tests/, it says "port N" once it listens on a loopback port its kernel picked, and answers each line written to
//! its stdin with one line. Closing its stdin stops it; it is killed besides when dropped.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::Duration;

pub struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    /// Its stdout's lines, read by a thread of their own so that a server that hangs fails the test on a bound.
    lines: Receiver<String>,
    pub port: u16,
}

/// A python3 that has `module`: Debian's (scripts/test.sh installs the python3-* package) when another python3
/// (pyenv's) comes first in PATH.
fn python(module: &str) -> &'static str {
    ["python3", "/usr/bin/python3"]
        .into_iter()
        .find(|p| {
            let import = format!("import {module}");
            Command::new(p).args(["-c", &import]).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
        })
        .unwrap_or_else(|| panic!("a python3 with {module} (scripts/test.sh installs it)"))
}

impl Server {
    /// tests/`script` with `args`, run by a python3 that can import `module`.
    pub fn start(script: &str, args: &[&str], module: &str) -> Server {
        Server::start_with_env(script, args, module, &[])
    }

    /// As [`Server::start`], with `env` set for the server.
    pub fn start_with_env(script: &str, args: &[&str], module: &str, env: &[(&str, &str)]) -> Server {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join(script);
        let mut child = Command::new(python(module))
            .arg(path)
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{script} starts: {e}"));
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
        let mut server = Server { child, stdin, lines, port: 0 };
        // The server says its port once it listens: the line is the event waited for.
        let line = server.line();
        server.port = line.trim().strip_prefix("port ").and_then(|p| p.parse().ok()).unwrap_or_else(|| {
            panic!("{script} did not say its port: {line:?}");
        });
        server
    }

    /// The server's next line, within a generous bound (a busy machine): a server that hangs fails the test.
    pub fn line(&self) -> String {
        self.lines.recv_timeout(Duration::from_secs(120)).expect("the Python server answered within 120 s")
    }

    /// Writes `command` as a line and returns the answer's JSON after its `command ` prefix.
    pub fn ask(&mut self, command: &str) -> serde_json::Value {
        writeln!(self.stdin.as_mut().unwrap(), "{command}").unwrap();
        let line = self.line();
        let json = line.trim().strip_prefix(command).unwrap_or_else(|| panic!("{command}: {line:?}"));
        serde_json::from_str(json.trim()).unwrap_or_else(|e| panic!("{command}: {line:?}: {e}"))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
