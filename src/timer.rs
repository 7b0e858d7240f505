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
        let d = d.max(Duration::from_nanos(1)); // a zero it_value would disarm the timer
        let spec = libc::itimerspec {
            it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 },
            it_value: libc::timespec { tv_sec: d.as_secs() as libc::time_t, tv_nsec: d.subsec_nanos() as libc::c_long },
        };
        // SAFETY: fd is a valid timerfd; spec lives for the call.
        if unsafe { libc::timerfd_settime(self.fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) } < 0 {
            return Err(io::Error::last_os_error());
        }
        loop {
            let mut guard = self.fd.readable().await?;
            let mut expirations = [0u8; 8];
            // SAFETY: reading 8 bytes into an 8-byte buffer from a valid fd.
            let read = guard.try_io(|fd| {
                let n = unsafe { libc::read(fd.as_raw_fd(), expirations.as_mut_ptr().cast(), 8) };
                if n < 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
            });
            match read {
                Ok(result) => return result,
                Err(_would_block) => continue,
            }
        }
    }
}

/// Sleeps `d` precisely: tokio's timer for all but the last 2 ms, then a timerfd. The timerfd lives only for
/// those last 2 ms, so many concurrent sleepers do not hold many descriptors.
pub async fn precise_sleep(d: Duration) {
    let deadline = Instant::now() + d;
    const FINE: Duration = Duration::from_millis(2);
    if d > FINE {
        tokio::time::sleep_until((deadline - FINE).into()).await;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_precise_timer_wakes_within_a_fraction_of_a_millisecond() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let timer = PreciseTimer::new().unwrap();
            let mut late = Vec::new();
            for _ in 0..21 {
                let start = Instant::now();
                timer.sleep(Duration::from_micros(300)).await.unwrap();
                late.push(start.elapsed().saturating_sub(Duration::from_micros(300)));
            }
            late.sort();
            // tokio's own timer is 1 ms late on average; a correctness bound on the median, not a benchmark.
            assert!(late[10] < Duration::from_micros(700), "median lateness {:?}", late[10]);
        });
    }

    #[test]
    fn a_precise_sleep_of_10ms_takes_10ms_not_11() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let mut took: Vec<Duration> = Vec::new();
            for _ in 0..11 {
                let start = Instant::now();
                precise_sleep(Duration::from_millis(10)).await;
                took.push(start.elapsed());
            }
            took.sort();
            assert!(took[0] >= Duration::from_millis(10));
            assert!(took[5] < Duration::from_micros(10_800), "median {:?}", took[5]);
        });
    }
}
