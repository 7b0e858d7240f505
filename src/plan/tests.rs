//! Unit tests of `plan`: the default thread count, and how a request names itself in the results (its token hidden).

use super::*;
use crate::base::load::Arrival;

#[test]
fn an_open_loop_takes_a_thread_per_100k_requests_a_second_and_a_closed_loop_every_core() {
    let open = |rate| LoadModel::Open { rate, arrival: Arrival::Uniform };
    assert_eq!(default_threads(&open(20_000.0), 2), 1, "a low rate: one thread, however many cores");
    assert_eq!(default_threads(&open(100_000.0), 16), 1);
    assert_eq!(default_threads(&open(100_001.0), 16), 2);
    assert_eq!(default_threads(&open(250_000.0), 16), 3);
    assert_eq!(default_threads(&open(250_000.0), 2), 2, "never more than the cores");
    assert_eq!(default_threads(&open(0.5), 0), 1, "at least one");
    assert_eq!(default_threads(&LoadModel::Closed { think: Duration::ZERO }, 8), 8);
}

#[test]
fn a_request_says_what_it_is_from_its_request_line_or_its_label_and_hides_a_token() {
    let (mut arena, headers) = (crate::protocol::RequestArena::default(), vec![("X-A".to_string(), "b".to_string())]);
    let parts = RequestParts {
        method: "POST",
        target: "/d/select?q=a&token=abc",
        host: "h:81",
        headers: &headers,
        body: b"{}",
        close: false,
    };
    let spec = |prepared: Prepared, label: &str| RequestSpec {
        endpoints: Arc::new([0]),
        prepared,
        timeout: Duration::from_secs(1),
        group: 0,
        label: label.into(),
    };
    let one = arena.prepare("POST", |out| write_request(&parts, out));
    let http1 = spec(Prepared::One(one.clone()), "");
    assert_eq!(http1.label(), "POST /d/select?q=a&token=***");
    assert_eq!((&http1.prepared[0].bytes[..4], one.idempotent), (&b"POST"[..], false));
    // Requests cut from one block keep their own bytes.
    let two = arena.prepare("GET", |out| write_request(&RequestParts { method: "GET", ..parts }, out));
    assert!(two.bytes.starts_with(b"GET /d/select") && one.bytes.starts_with(b"POST /d/select"));
    assert!(two.idempotent);
    let many = spec([one, two].into_iter().collect(), "GET /h2");
    assert!(matches!(many.prepared, Prepared::Many(_)) && many.prepared.len() == 2);
    assert_eq!(many.label(), "GET /h2", "a label given is the label");
}
