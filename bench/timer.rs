//! Benchmark (a figure, not a test): how late hakaru's precise timer wakes, beside tokio's own timer, on this
//! machine as it is. `cargo bench --bench timer` measures (201 sleeps of each kind); under `cargo test` it runs a
//! few sleeps only, so the bench keeps building, and asserts nothing: a busy machine wakes every sleeper late, and a
//! timed assertion would fail for the machine's load, not for the code.

use std::time::{Duration, Instant};

use hakaru::base::timer::{PreciseTimer, precise_sleep};

/// The median and the 90th percentile of how late `rounds` sleeps of `d` woke, each slept by `sleep`.
async fn lateness<F: Future<Output = ()>>(
    rounds: usize,
    d: Duration,
    mut sleep: impl FnMut(Duration) -> F,
) -> [Duration; 2] {
    let mut late = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let start = Instant::now();
        sleep(d).await;
        late.push(start.elapsed().saturating_sub(d));
    }
    late.sort();
    [late[rounds / 2], late[rounds * 9 / 10]]
}

fn main() {
    // cargo bench passes --bench; cargo test runs the binary without it.
    let measuring = std::env::args().any(|a| a == "--bench");
    let rounds = if measuring { 201 } else { 3 };
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let timer = PreciseTimer::new().unwrap();
        let timer = &timer;
        let cases = [
            (
                "timerfd 300us",
                lateness(rounds, Duration::from_micros(300), |d| async move { timer.sleep(d).await.unwrap() }).await,
            ),
            ("precise_sleep 10ms", lateness(rounds, Duration::from_millis(10), precise_sleep).await),
            ("tokio sleep 10ms", lateness(rounds, Duration::from_millis(10), tokio::time::sleep).await),
        ];
        for (name, [median, p90]) in cases {
            println!("{name:<20} late by: median {median:>10.1?}, p90 {p90:>10.1?}");
        }
    });
    if !measuring {
        println!("(a smoke run of {rounds} sleeps each; `cargo bench --bench timer` measures)");
    }
}
