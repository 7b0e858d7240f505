//! `--data` rows in a gRPC message (`-b '{"name":"{{name}}"}' --data rows.csv`) against Python's grpcio server
//! (tests/grpc_server.py, which counts each name and times it is called with): exact calls per row on the server,
//! a row whose value does not fit the message refused before any call, naming its row and column.

mod common;

use common::grpc::{Greeter, PROTO};
use common::{hakaru, write_in};

const ROWS: &str = "name,times\nann,1\nbob,2\n\"c, \"\"the\"\" third\",3\nann,1\n";

fn run(server: &Greeter, rows: &str, body: &str, load: &[&str]) -> common::Output {
    let dir = tempfile::tempdir().unwrap();
    let proto = write_in(&dir, "hello.proto", PROTO);
    let data = write_in(&dir, "rows.csv", rows);
    let url = server.url();
    let mut args = vec!["run", "--no-monitor", &url, "--call", "helloworld.Greeter/SayHello"];
    args.extend(["--proto", &proto, "-b", body, "--data", &data]);
    args.extend_from_slice(load);
    hakaru(&args)
}

#[test]
fn each_call_sends_its_rows_message_and_the_server_sees_each_row_exactly() {
    let mut server = Greeter::start();
    // Rows taken in turn by every client from one cursor: 400 calls are 100 of each of the 4 rows.
    let body = r#"{"name": "{{name}}", "times": {{times}}}"#;
    let out = run(&server, ROWS, body, &["-n", "400", "-c", "2", "--streams", "4", "-H", "x-hakaru: 1"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.step()["ok"], 400, "{}", out.step());
    assert_eq!(server.count("SayHello"), 400);
    assert_eq!(server.count("SayHello name=ann times=1"), 200, "rows 1 and 4 are the same message");
    assert_eq!(server.count("SayHello name=bob times=2"), 100);
    // A value with a comma and quotes goes in the JSON string as it is in the row.
    assert_eq!(server.count("SayHello name=c, \"the\" third times=3"), 100);
    assert_eq!(server.count("SayHello with metadata"), 400, "-H and gRPC's headers go with each row's message");
    assert_eq!(server.count("SayHello with a deadline"), 400);
}

#[test]
fn a_unique_order_sends_each_row_once_then_the_run_ends() {
    let mut server = Greeter::start();
    let out = run(&server, ROWS, r#"{"name": "{{name}}"}"#, &["-d", "60s", "-c", "2", "--data-order", "unique"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.step()["ok"], 4, "{}", out.step());
    assert_eq!(server.count("SayHello name=ann times=0"), 2);
    assert_eq!(server.count("SayHello name=bob times=0"), 1);
    assert_eq!(server.count("SayHello"), 4);
}

#[test]
fn a_row_that_does_not_fit_the_message_is_refused_before_any_call() {
    let mut server = Greeter::start();
    let rows = "name,times\nann,1\nbob,many\n";
    let body = r#"{"name": "{{name}}", "times": "{{times}}"}"#;
    let out = run(&server, rows, body, &["-n", "10"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    let line = out.stderr.trim();
    assert_eq!(line.lines().count(), 1, "{line}");
    assert!(line.contains("rows.csv' row 2 column 'times': "), "{line}");
    // A built-in would make a message per call: refused, saying what to do instead.
    let out = run(&server, rows, r#"{"name": "{{seq}}"}"#, &["-n", "10"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("{{seq}} in a gRPC message: not supported"), "{}", out.stderr);
    assert_eq!(server.count("SayHello"), 0, "no call was made");
}
