//! What `done(summary, latency, requests)` receives: wrk's summary table and two statistics objects (latency in
//! microseconds, requests per second), made from a step's merged figures.

use std::time::Duration;

use mlua::{Lua, MetaMethod, Table, UserData, UserDataFields, UserDataMethods};

use crate::metrics::{ErrorKind, LatencyHistogram, StepMetrics, WindowSummary};

/// A step's figures as wrk's `done` shows them.
pub struct Figures {
    pub duration: Duration,
    pub requests: u64,
    pub bytes: u64,
    /// wrk's five kinds: connect, read, write, status, timeout.
    pub errors: [u64; 5],
    pub latency: Stats,
    pub rates: Stats,
}

impl Figures {
    /// From a step: every request's latency (successes and failures, as wrk records both) and each window's
    /// request rate (wrk samples each thread's rate; hakaru's windows are the threads merged, one a second).
    pub fn of(m: &StepMetrics, windows: &[WindowSummary], elapsed: Duration) -> Figures {
        let mut all = m.latency.clone();
        all.merge(&m.failed_latency);
        let kinds = |ks: &[ErrorKind]| ks.iter().map(|k| m.errors.count(*k)).sum::<u64>();
        let connect =
            kinds(&[ErrorKind::ConnectRefused, ErrorKind::ConnectTimeout, ErrorKind::Connect, ErrorKind::FileLimit]);
        let read = kinds(&[
            ErrorKind::Reset,
            ErrorKind::Closed,
            ErrorKind::Malformed,
            ErrorKind::LineTooLong,
            ErrorKind::StreamCut,
            ErrorKind::StreamTooLong,
            ErrorKind::Unsolicited,
            ErrorKind::Tls,
            ErrorKind::Io,
        ]);
        let mut rates: Vec<(f64, u64)> = windows.iter().map(|w| (w.requests as f64, 1)).collect();
        rates.sort_by(|a, b| a.0.total_cmp(&b.0));
        Figures {
            duration: elapsed,
            requests: m.requests,
            bytes: m.bytes_in,
            errors: [connect, read, 0, m.failed_status, m.errors.count(ErrorKind::Timeout)],
            latency: Stats::of_histogram(&all),
            rates: Stats::of_values(rates),
        }
    }

    pub(super) fn to_lua(&self, lua: &Lua) -> mlua::Result<(Table, Stats, Stats)> {
        let summary = lua.create_table()?;
        summary.set("duration", self.duration.as_micros() as f64)?;
        summary.set("requests", self.requests)?;
        summary.set("bytes", self.bytes)?;
        let errors = lua.create_table()?;
        for (name, n) in ["connect", "read", "write", "status", "timeout"].iter().zip(self.errors) {
            errors.set(*name, n)?;
        }
        summary.set("errors", errors)?;
        Ok((summary, self.latency.clone(), self.rates.clone()))
    }
}

/// wrk's statistics object: `min`, `max`, `mean`, `stdev`, `:percentile(p)`, and `(i)` the i-th distinct value
/// with its count.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    /// Distinct values, ascending, with their counts.
    values: Vec<(f64, u64)>,
    min: f64,
    max: f64,
    mean: f64,
    stdev: f64,
}

impl Stats {
    fn of_histogram(h: &LatencyHistogram) -> Stats {
        let values = h.recorded().into_iter().map(|(v, n)| (v as f64, n)).collect();
        Stats { values, min: h.min() as f64, max: h.max() as f64, mean: h.mean(), stdev: h.stdev() }
    }

    fn of_values(values: Vec<(f64, u64)>) -> Stats {
        let n: u64 = values.iter().map(|v| v.1).sum();
        if n == 0 {
            return Stats::default();
        }
        let mean = values.iter().map(|(v, c)| v * *c as f64).sum::<f64>() / n as f64;
        let var = values.iter().map(|(v, c)| (v - mean).powi(2) * *c as f64).sum::<f64>() / n as f64;
        Stats { min: values[0].0, max: values[values.len() - 1].0, mean, stdev: var.sqrt(), values }
    }

    /// The smallest value with at least `p` % of the counts at or below it.
    pub fn percentile(&self, p: f64) -> f64 {
        let total: u64 = self.values.iter().map(|v| v.1).sum();
        let want = ((p.clamp(0.0, 100.0) / 100.0) * total as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (v, c) in &self.values {
            seen += c;
            if seen >= want {
                return *v;
            }
        }
        0.0
    }
}

impl UserData for Stats {
    fn add_fields<F: UserDataFields<Self>>(f: &mut F) {
        f.add_field_method_get("min", |_, s| Ok(s.min));
        f.add_field_method_get("max", |_, s| Ok(s.max));
        f.add_field_method_get("mean", |_, s| Ok(s.mean));
        f.add_field_method_get("stdev", |_, s| Ok(s.stdev));
    }

    fn add_methods<M: UserDataMethods<Self>>(m: &mut M) {
        m.add_method("percentile", |_, s, p: f64| Ok(s.percentile(p)));
        m.add_meta_method(MetaMethod::Call, |_, s, i: usize| {
            Ok(s.values.get(i.wrapping_sub(1)).copied().unwrap_or((0.0, 0)))
        });
        m.add_meta_method(MetaMethod::Len, |_, s, ()| Ok(s.values.len()));
    }
}

#[cfg(test)]
mod tests {
    use super::Stats;

    #[test]
    fn percentiles_and_moments_of_counted_values() {
        let s = Stats::of_values(vec![(1.0, 1), (2.0, 2), (10.0, 1)]);
        assert_eq!((s.min, s.max, s.mean), (1.0, 10.0, 3.75));
        assert_eq!(s.percentile(50.0), 2.0);
        assert_eq!(s.percentile(99.0), 10.0);
        assert_eq!(s.percentile(0.0), 1.0);
    }
}
