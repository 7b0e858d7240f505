//! A timer with microsecond precision on a tokio event loop: tokio's own timers round up to the next millisecond
//! (and the event loop's wait adds another), which is too coarse to pace requests or to serve a calibrated delay.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

use tokio::io::unix::AsyncFd;

/// A one-shot timerfd on the thread's event loop.
pub struct PreciseTimer {
    fd: AsyncFd<OwnedFd>,
}

impl PreciseTimer {
    pub fn new() -> io::Result<Self> {
        // SAFETY: plain syscalls; the returned descriptor is checked and owned by OwnedFd.
        let raw = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // Linux lets a sleeping thread wake up to 50 µs late by default; pacing wants 1 µs.
        unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1000 as libc::c_ulong) };
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: the OwnedFd stays open, owned by the AsyncFd, for the AsyncFd's whole life.
        let fd = unsafe { AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE)? };
        Ok(Self { fd })
    }

    pub async fn sleep(&self, d: Duration) -> io::Result<()> {
        let deadline = Instant::now() + d;
        let spec = one_shot(d);
        // SAFETY: fd is a valid timerfd; spec lives for the call.
        if unsafe { libc::timerfd_settime(self.fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) } < 0 {
            return Err(io::Error::last_os_error());
        }
        // Arming the timer resets its count of expirations, and each expiry is an event of its own on tokio's
        // edge-triggered loop: the expiry need not be read (a syscall per paced request saved). The clock says
        // whether this event is the expiry armed here and not one left over from an earlier sleep.
        loop {
            let mut guard = self.fd.readable().await?;
            guard.clear_ready();
            if Instant::now() >= deadline {
                return Ok(());
            }
        }
    }
}

/// The timerfd setting that fires once, `d` from now, to the nanosecond (never rounded to a millisecond).
fn one_shot(d: Duration) -> libc::itimerspec {
    let d = d.max(Duration::from_nanos(1)); // a zero it_value would disarm the timer
    libc::itimerspec {
        it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 },
        it_value: libc::timespec { tv_sec: d.as_secs() as libc::time_t, tv_nsec: d.subsec_nanos() as libc::c_long },
    }
}

/// The last stretch of a precise sleep, left to the timerfd: tokio's timer, up to 2 ms late, must end before the
/// deadline.
const FINE: Duration = Duration::from_millis(2);

/// Until when tokio's coarse timer may sleep on the way to `deadline` (none for a sleep of at most [`FINE`]).
fn coarse_until(start: Instant, deadline: Instant) -> Option<Instant> {
    (deadline.saturating_duration_since(start) > FINE).then(|| deadline - FINE)
}

/// Sleeps `d` precisely: tokio's timer for all but the last 2 ms, then a timerfd. The timerfd lives only for
/// those last 2 ms, so many concurrent sleepers do not hold many descriptors. (Its precision is measured by
/// `cargo bench --bench timer`, not by a test: a busy machine wakes any sleeper late.)
pub async fn precise_sleep(d: Duration) {
    let start = Instant::now();
    let deadline = start + d;
    if let Some(until) = coarse_until(start, deadline) {
        tokio::time::sleep_until(until.into()).await;
    }
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return;
    }
    match PreciseTimer::new() {
        Ok(timer) if timer.sleep(left).await.is_ok() => {}
        // Out of descriptors or no timerfd: a coarse sleep is better than none.
        _ => tokio::time::sleep_until(deadline.into()).await,
    }
}

// Only what holds on a busy machine is tested here: a sleep never ends early, tokio's millisecond timer never
// holds the last stretch, and the timerfd is armed to the nanosecond. How late the wake-ups come is measured by
// bench/timer.rs (`cargo bench --bench timer`), as a figure, not a pass or fail.
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_precise_timer_never_wakes_early() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let timer = PreciseTimer::new().unwrap();
            for _ in 0..5 {
                let start = Instant::now();
                timer.sleep(Duration::from_micros(300)).await.unwrap();
                assert!(start.elapsed() >= Duration::from_micros(300), "{:?}", start.elapsed());
            }
        });
    }

    #[test]
    fn the_timerfd_is_armed_to_the_nanosecond_once_and_never_disarmed_by_a_zero() {
        let spec = one_shot(Duration::from_micros(10_300));
        assert_eq!((spec.it_value.tv_sec, spec.it_value.tv_nsec), (0, 10_300_000), "not rounded to 11 ms");
        assert_eq!((spec.it_interval.tv_sec, spec.it_interval.tv_nsec), (0, 0), "fires once");
        let spec = one_shot(Duration::from_millis(2_500));
        assert_eq!((spec.it_value.tv_sec, spec.it_value.tv_nsec), (2, 500_000_000));
        let zero = one_shot(Duration::ZERO);
        assert_eq!((zero.it_value.tv_sec, zero.it_value.tv_nsec), (0, 1), "a zero would disarm the timer");
    }

    #[test]
    fn a_precise_sleep_of_10ms_leaves_its_last_2ms_to_the_timerfd_and_never_ends_early() {
        // tokio's timer rounds up to the next millisecond and its event loop adds another (10 ms would take 11):
        // it sleeps only until 2 ms before the deadline, the timerfd does the rest.
        let start = Instant::now();
        let deadline = start + Duration::from_millis(10);
        assert_eq!(coarse_until(start, deadline), Some(start + Duration::from_millis(8)));
        assert_eq!(coarse_until(start, start + Duration::from_millis(2)), None, "all of it on the timerfd");
        assert_eq!(coarse_until(deadline, deadline), None, "a deadline passed: no coarse sleep");
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            for _ in 0..3 {
                let start = Instant::now();
                precise_sleep(Duration::from_millis(10)).await;
                assert!(start.elapsed() >= Duration::from_millis(10), "{:?}", start.elapsed());
            }
        });
    }
}
