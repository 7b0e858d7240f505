//! `hakaru run --rate`: a fixed rate kept, and latency measured from the intended send time.

use crate::common;

use std::io::{Read, Write};
use std::time::Duration;

use common::{hakaru, target, target_status};

#[test]
fn the_achieved_rate_at_2000_per_second_is_within_one_percent() {
    let t = target();
    let url = format!("http://{}/", t.addr());
    let out = hakaru(&["run", "-q", "--rate", "2000", "-d", "3s", &url]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let s = &out.step()["schedule"];
    let achieved = s["achieved_rate"].as_f64().unwrap();
    assert!((achieved - 2000.0).abs() / 2000.0 < 0.01, "achieved {achieved}/s");
    // The target's own count, the witness: 3 s at 2000/s is 6000 requests, within 1 %.
    let served = target_status(t.addr())["n_requests"].as_u64().unwrap();
    assert!((5940..=6060).contains(&served), "the target answered {served} requests in 3 s at 2000/s");
    assert_eq!(s["target_rate"], 2000.0);
    assert_eq!(out.doc()["settings"]["load_model"], "open");
    assert!(out.stdout.contains("asked 2000.0/s"), "{}", out.stdout);
}

#[test]
fn a_server_freeze_shows_in_the_corrected_p99_and_not_in_the_service_time_p99() {
    let t = target();
    let addr = t.addr();
    let url = format!("http://{addr}/");
    // Once the 4 s run at 500/s on one connection is under way (100 requests answered, not after a fixed time a
    // slow start on a busy machine outlasts), the whole target freezes for 1 s.
    let freezer = std::thread::spawn(move || {
        common::wait_served(addr, 100, Duration::from_secs(30));
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(b"GET /?freeze=1s HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").unwrap();
        let _ = s.read_to_end(&mut Vec::new());
    });
    let out = hakaru(&["run", "-q", "--rate", "500", "-c", "1", "-d", "4s", &url]);
    freezer.join().unwrap();
    let corrected = out.step()["latency"]["percentiles"]["p99"].as_u64().unwrap();
    let service = out.step()["service"]["percentiles"]["p99"].as_u64().unwrap();
    assert!(corrected >= 300_000, "corrected p99 {corrected} us should show the 1 s freeze");
    assert!(service < 100_000, "service p99 {service} us: one request waited, the rest were merely sent late");
    let late = out.step()["schedule"]["late"].as_u64().unwrap();
    assert!(late >= 300, "about 500 requests fell due during the freeze: {late} late");
    let warnings = out.doc()["warnings"].to_string();
    assert!(warnings.contains("the 1 connection was busy"), "{warnings}");
}

#[test]
fn a_request_sent_before_its_slot_counts_from_its_send_so_no_latency_is_below_its_service_time() {
    // 8,000/s with a 1 ms window: each wake-up sends the slots due within 0.5 ms of it, some up to 0.5 ms before
    // their time. Counted from their intended time, those would show less than the server took; counted from
    // their send, every request's latency is at least its service time, so the least, the mean and every
    // percentile are too (counted from the slot, the least was 1 us against a service time of 57).
    let t = target();
    let url = format!("http://{}/", t.addr());
    let out = hakaru(&["run", "-q", "--rate", "8000", "--pace-window", "1ms", "-d", "2s", &url]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let step = out.step();
    // The rate is not this test's point (a busy machine may keep less of it): the load ran.
    assert!(step["requests"].as_u64().unwrap() >= 1000, "{step}");
    for k in ["min", "mean"] {
        let (l, s) = (step["latency"][k].as_f64().unwrap(), step["service"][k].as_f64().unwrap());
        assert!(l >= s, "{k}: latency {l} us below the service time {s} us");
    }
    let service = step["service"]["percentiles"].as_object().unwrap();
    assert!(!service.is_empty());
    for (p, s) in service {
        let l = step["latency"]["percentiles"][p].as_u64().unwrap();
        assert!(l >= s.as_u64().unwrap(), "{p}: latency {l} us below the service time {s} us");
    }
    assert_eq!(out.doc()["settings"]["pace_window_us"], 1000);
}

#[test]
fn poisson_arrivals_keep_the_mean_rate() {
    let t = target();
    let url = format!("http://{}/", t.addr());
    let out = hakaru(&["run", "-q", "--rate", "1000", "--arrival", "poisson", "--seed", "3", "-d", "3s", &url]);
    let achieved = out.step()["schedule"]["achieved_rate"].as_f64().unwrap();
    assert!((achieved - 1000.0).abs() / 1000.0 < 0.05, "achieved {achieved}/s");
    assert_eq!(out.doc()["settings"]["arrival"], "poisson");
}

#[test]
fn an_open_loop_opens_only_the_connections_it_needs() {
    let t = target();
    let url = format!("http://{}/", t.addr());
    // 50/s: a due request finds every open connection busy only while a stall lasts, and on a busy machine stalls
    // of 100 ms happen (at 200/s one opened 29 connections); at 50/s even a 300 ms stall needs no more than 16.
    let out = hakaru(&["run", "-q", "--rate", "50", "-c", "50", "-d", "3s", &url]);
    let opened = out.step()["connections"]["opened"].as_u64().unwrap();
    assert!(opened <= 20, "a fast target at 50/s needs a few connections, not 50: {opened}");
    let warnings = out.doc()["warnings"].to_string();
    assert!(!warnings.contains("connections were open"), "fewer connections is not a fault here: {warnings}");
}

#[test]
fn a_request_count_at_a_rate_takes_the_time_the_rate_implies() {
    let t = target();
    let url = format!("http://{}/", t.addr());
    let meter = common::StallMeter::start();
    let out = hakaru(&["run", "-q", "--rate", "500", "-n", "500", &url]);
    assert_eq!(out.step()["requests"], 500);
    let d = out.step()["duration_s"].as_f64().unwrap();
    // Never faster than the schedule; slower only on a machine that was late.
    assert!(d >= 0.9, "500 requests at 500/s took {d} s");
    let what = format!("500 requests at 500/s took {d} s");
    common::on_time(&meter, "a_request_count_at_a_rate_takes_the_time_the_rate_implies", d < 1.3, &what);
}

#[test]
fn a_zero_or_negative_rate_is_bad_input() {
    for rate in ["0", "-5"] {
        let out = hakaru(&["run", "--rate", rate, "http://127.0.0.1:9/"]);
        assert_eq!(out.code, 2, "{}", out.stderr);
        assert!(out.stderr.contains("--rate"), "{}", out.stderr);
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    }
}

#[test]
fn a_slow_healthy_server_is_offered_the_full_rate_and_its_answers_still_due_are_counted_as_such() {
    // 400 ms per answer at 50/s: about 20 requests are always in flight. The rate offered is what was sent; those
    // in flight at the end are awaited (the graceful stop) and counted, or, with --graceful-stop 0, unfinished.
    let t = target();
    let url = format!("http://{}/?delay=400ms", t.addr());
    let out = hakaru(&["run", "-q", "--rate", "50", "-c", "100", "-d", "2s", &url]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let step = out.step();
    let s = &step["schedule"];
    let (sent, completed) = (s["achieved_rate"].as_f64().unwrap(), s["completed_rate"].as_f64().unwrap());
    assert!((sent - 50.0).abs() <= 2.5, "sent {sent}/s of 50/s");
    assert_eq!((completed, step["unfinished"].as_u64()), (sent, Some(0)), "every answer awaited: {step}");
    assert!(step["graceful_stop_s"].as_f64().is_some_and(|g| g >= 0.3), "{step}");
    assert_eq!(step["failed"], 0, "in flight is not lost: {step}");
    assert!(out.stdout.contains("sent 50.0/s"), "{}", out.stdout);
    let out = hakaru(&["run", "-q", "--rate", "50", "-c", "100", "-d", "2s", "--graceful-stop", "0", &url]);
    let step = out.step();
    let s = &step["schedule"];
    let (sent, completed) = (s["achieved_rate"].as_f64().unwrap(), s["completed_rate"].as_f64().unwrap());
    assert!(completed < sent - 5.0, "answers still due at the end: completed {completed}/s of {sent}/s");
    let unfinished = step["unfinished"].as_u64().unwrap();
    assert!((12..=25).contains(&unfinished), "about 20 in flight at the end: {unfinished}");
}

#[test]
fn the_rate_follows_each_threads_connections_so_a_thread_with_fewer_is_not_starved() {
    // -t 2 -c 3: one thread has two connections, the other one. At 24/s with 100 ms answers, an even split would
    // ask 12/s of the one-connection thread, which can carry only 10/s (its queue grows to a second over 5 s); a
    // split by connections asks 8/s. 100 ms, not 25: on a busy machine a sleeping worker wakes some ms late, which
    // must not be enough to saturate the connection of a correct split (8/s is still under capacity at 120 ms).
    let t = target();
    let url = format!("http://{}/?delay=100ms", t.addr());
    let out = hakaru(&["run", "-q", "--rate", "24", "-t", "2", "-c", "3", "-d", "5s", &url]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let p99 = out.step()["latency"]["percentiles"]["p99"].as_u64().unwrap();
    // An even split's queue grows to about a second over 5 s; a machine with a load of 10 once put a correct
    // split's p99 at 441 ms.
    assert!(p99 < 700_000, "no thread fell behind its schedule: p99 {p99} us");
    let sent = out.step()["schedule"]["achieved_rate"].as_f64().unwrap();
    assert!((sent - 24.0).abs() <= 1.2, "sent {sent}/s of 24/s");
}

#[test]
fn two_threads_at_a_uniform_rate_send_evenly_spaced_requests() {
    // A server of this test's own notes when each request arrives; at 100/s over two threads the gaps must be
    // 10 ms, not alternating short and long ones (each thread used to start at its own first connection).
    use std::net::TcpListener;
    use std::sync::{Arc, Mutex};
    use std::time::Instant;
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let arrivals: Arc<Mutex<Vec<Instant>>> = Arc::default();
    let seen = Arc::clone(&arrivals);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let seen = Arc::clone(&seen);
            std::thread::spawn(move || {
                let mut stream = stream;
                let mut buf = [0u8; 4096];
                let mut pending = Vec::new();
                while let Ok(n) = stream.read(&mut buf) {
                    if n == 0 {
                        return;
                    }
                    pending.extend_from_slice(&buf[..n]);
                    while let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
                        seen.lock().unwrap().push(Instant::now());
                        pending.drain(..end + 4);
                        if stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n").is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    let url = format!("http://{addr}/");
    let out = hakaru(&["run", "-q", "--rate", "100", "-t", "2", "-c", "2", "-n", "200", &url]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let mut times = arrivals.lock().unwrap().clone();
    times.sort();
    // The first arrival is the preflight check's connection, not a request: only requests carry a head here.
    let gaps: Vec<f64> = times.windows(2).map(|w| (w[1] - w[0]).as_secs_f64() * 1000.0).collect();
    let mut off: Vec<f64> = gaps.iter().map(|g| (g - 10.0).abs()).collect();
    off.sort_by(f64::total_cmp);
    let median_off = off[off.len() / 2];
    // Threads that did not interleave would send in pairs (gaps of 0 and 20 ms, 10 ms off); a machine with a load
    // of 10 wakes sender and server late enough to put the median 2.1 ms off.
    assert!(median_off < 4.0, "gaps should be 10 ms; median distance {median_off:.2} ms; gaps {gaps:?}");
}

#[test]
fn requests_cut_off_by_the_end_of_a_step_are_unfinished_and_in_no_byte_count() {
    // Every answer takes 3 s, the step 1 s and its graceful stop 500 ms: nothing ends, so nothing is counted but
    // the unfinished.
    let t = target();
    let url = format!("http://{}/?delay=3s", t.addr());
    let out = hakaru(&["run", "-q", "--rate", "20", "-c", "50", "-d", "1s", "--graceful-stop", "500ms", &url]);
    let step = out.step();
    assert_eq!(step["requests"], 0, "{step}");
    assert_eq!(step["throughput"]["bytes_out"], 0, "bytes of requests that never ended: {step}");
    let unfinished = step["unfinished"].as_u64().unwrap();
    assert!((15..=22).contains(&unfinished), "about 20 sent, none ended: {unfinished}");
}

#[test]
fn starved_counts_each_request_made_late_by_the_connection_limit() {
    // One connection, 20 ms answers, 100/s asked: each request waits for the one before; about four in five
    // slots find the connection busy.
    let t = target();
    let url = format!("http://{}/?delay=20ms", t.addr());
    let out = hakaru(&["run", "-q", "--rate", "100", "-c", "1", "-n", "50", &url]);
    let s = &out.step()["schedule"];
    let (late, starved) = (s["late"].as_u64().unwrap(), s["starved"].as_u64().unwrap());
    assert!(starved >= 40, "each late request counted, not each pacer pass: starved {starved}, late {late}");
    assert!(starved <= late, "starved {starved} late {late}");
}

#[test]
fn the_server_sees_exactly_the_requests_hakaru_counts_when_an_open_loop_step_ends() {
    // Nothing may be sent after the step's end: every request the target received is in `requests` or
    // `unfinished`. (The preflight check connects without sending a request.)
    let t = target();
    let url = format!("http://{}/", t.addr());
    let out = hakaru(&["run", "-q", "--rate", "400", "-t", "2", "-c", "4", "-d", "2s", &url]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let step = out.step();
    let counted = step["requests"].as_u64().unwrap() + step["unfinished"].as_u64().unwrap();
    // The target counts a request when it reads it, which may come a little after hakaru has ended: wait until
    // it has seen as many, then check that it saw no more.
    let served = || target_status(t.addr())["n_requests"].as_u64().unwrap();
    let began = std::time::Instant::now();
    while served() < counted && began.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(served(), counted, "{step}");
    // Per-second windows hold the requests of their second: 400 each, give or take the requests that end across
    // a window's edge (a window counts a request when it ends, which a busy machine can delay by tens of ms).
    let windows = step["windows"].as_array().unwrap();
    for w in &windows[..windows.len().min(2)] {
        let n = w["requests"].as_u64().unwrap();
        assert!((360..=440).contains(&n), "window {w}");
    }
}

#[test]
fn the_starved_requests_are_among_the_late_ones_when_the_step_ends_with_one_in_flight() {
    // One connection, 300 ms answers, 20/s asked for 1 s: every request after the first falls due with the
    // connection busy, and the last one sent is still waiting when the step ends (no graceful stop). It is in no
    // figure, so it is neither late nor starved.
    let t = target();
    let url = format!("http://{}/?delay=300ms", t.addr());
    let out = hakaru(&["run", "-q", "--rate", "20", "-c", "1", "-d", "1s", "--graceful-stop", "0", &url]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let step = out.step();
    let s = &step["schedule"];
    let (late, starved) = (s["late"].as_u64().unwrap(), s["starved"].as_u64().unwrap());
    assert!(step["unfinished"].as_u64().unwrap() >= 1, "{step}");
    assert!(starved >= 1 && starved <= late, "starved {starved} late {late}");
    let said = out.stdout.lines().find(|l| l.contains("left more than 1 ms")).unwrap_or_default();
    assert!(
        said.contains(&format!("{late} of the {} requests that ended", step["requests"]))
            && said.contains(&format!("{starved} of those {late} because the 1 connection was busy")),
        "{}",
        out.stdout
    );
}

#[test]
fn a_fixed_rate_step_begins_once_every_thread_has_a_connection_so_a_late_one_costs_no_slot() {
    // Two threads, connections opened 500 ms apart (--connection-rate 2): the step begins once both threads have
    // one, so its 2 s at 100/s send 200 requests, none late for the setup, and the step says how long that took.
    // Begun at the start, a quarter of the slots would be late or lost.
    let t = target();
    let url = format!("http://{}/", t.addr());
    let args = ["run", "--rate", "100", "--threads", "2", "-c", "2", "--connection-rate", "2", "-d", "2s", &url];
    let out = hakaru(&args);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let step = out.step();
    let s = &step["schedule"];
    let began = s["began_after_us"].as_u64().unwrap_or_else(|| panic!("{s}"));
    assert!((500_000..2_000_000).contains(&began), "{s}");
    assert_eq!(step["duration_s"], 2.0, "{step}");
    let achieved = s["achieved_rate"].as_f64().unwrap();
    assert!((achieved - 100.0).abs() <= 3.0, "{s}");
    let sent = step["requests"].as_u64().unwrap() + step["unfinished"].as_u64().unwrap();
    assert!(sent.abs_diff(200) <= 6, "{sent} sent: {s}");
    // The windows count from the step's beginning: the first holds its share of the slots.
    let first = step["windows"][0]["sent"].as_u64().unwrap();
    assert!(first >= 90, "{}", step["windows"]);
    assert!(out.stdout.contains("once every thread had a connection"), "{}", out.stdout);
    assert!(common::schema_errors(out.doc()).is_empty(), "{:?}", common::schema_errors(out.doc()));
}

/// Issue 49: answers that last a second are not dropped because the step ended while they were on their way. The
/// step stops sending at its end; the answers in flight get its graceful stop (the timeout) and count.
#[test]
fn answers_in_flight_at_a_timed_steps_end_are_awaited_and_counted() {
    let t = target();
    let url = format!("http://{}/?delay=1s", t.addr());
    let out = hakaru(&["run", "-q", "--rate", "50", "-c", "100", "-d", "2s", &url]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let step = out.step();
    // The server's own count: every request sent was answered (it counts an answer once it is written).
    assert_eq!(target_status(t.addr())["n_requests"], 100, "{step}");
    assert_eq!((step["ok"].as_u64(), step["unfinished"].as_u64()), (Some(100), Some(0)), "{step}");
    let ok_per_s = step["throughput"]["ok_per_s"].as_f64().unwrap();
    assert!((ok_per_s - 50.0).abs() <= 0.5, "ok/s {ok_per_s} over the 2 s the requests were sent in");
    assert!(step["duration_s"].as_f64().unwrap() < 2.1, "{step}");
    // The wait after the end was for the last answers: about the 1 s they take, never the whole timeout.
    let waited = step["graceful_stop_s"].as_f64().unwrap();
    assert!((0.5..5.0).contains(&waited), "{waited}");
    let warnings = out.doc()["warnings"].to_string();
    assert!(!warnings.contains("still waiting") && !warnings.contains("overloaded"), "{warnings}");
}

#[test]
fn a_rate_the_server_cannot_keep_up_with_still_warns_of_the_answers_left_after_the_graceful_stop() {
    // Two workers of 100 ms each serve 20 requests a second; 100 a second are asked for.
    let t = common::target_with(hakaru::serve::ServeOptions {
        listen: "127.0.0.1:0".parse().unwrap(),
        threads: 1,
        workers: Some(2),
        ..Default::default()
    });
    let url = format!("http://{}/?delay=100ms", t.addr());
    let out = hakaru(&["run", "-q", "--rate", "100", "-c", "200", "-d", "2s", "--graceful-stop", "300ms", &url]);
    let step = out.step();
    let unfinished = step["unfinished"].as_u64().unwrap();
    assert!(unfinished > 100, "{step}");
    assert!(step["graceful_stop_s"].as_f64().unwrap() >= 0.3, "{step}");
    let warnings = out.doc()["warnings"].to_string();
    assert!(warnings.contains(&format!("{unfinished} requests were still waiting")), "{warnings}");
    assert!(warnings.contains("after the step's end (its graceful stop)"), "{warnings}");
    // --graceful-stop 0: dropped at the end, as wrk does, and said so.
    let out = hakaru(&["run", "-q", "--rate", "100", "-c", "200", "-d", "1s", "--graceful-stop", "0", &url]);
    assert!(out.step()["graceful_stop_s"].is_null(), "{}", out.step());
    assert!(out.doc()["warnings"].to_string().contains("still waiting for an answer when the step ended"));
}
