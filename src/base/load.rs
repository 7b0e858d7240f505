//! The load vocabulary shared by the plan, the engine and the result document: when clients send and when a step
//! ends.

use std::time::Duration;

/// When clients send (the load model). One engine loop serves every model.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LoadModel {
    /// Each client sends, waits for the answer, waits `think`, sends again.
    Closed { think: Duration },
    /// Requests leave at a fixed rate in total (per second), whatever the answers take.
    Open { rate: f64, arrival: Arrival },
}

/// How open-loop requests are spaced. In a result document, its name (`uniform`, `poisson`, `gamma`); a gamma's
/// burstiness is the settings' `burstiness`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Arrival {
    /// Evenly spaced, 1/rate apart.
    Uniform,
    /// Exponential gaps with mean 1/rate, as independent users arrive.
    Poisson,
    /// Gamma-distributed gaps with mean 1/rate and shape `burstiness` (vLLM's `--burstiness`): 1 is Poisson, below 1
    /// burstier, above more even.
    Gamma { burstiness: f64 },
    /// At the recorded offsets of a replay (`run --replay`); the rate is the recording's mean.
    Recorded,
}

impl Arrival {
    pub fn name(self) -> &'static str {
        match self {
            Arrival::Uniform => "uniform",
            Arrival::Poisson => "poisson",
            Arrival::Gamma { .. } => "gamma",
            Arrival::Recorded => "recorded",
        }
    }

    /// A gamma's shape; None for the others.
    pub fn burstiness(self) -> Option<f64> {
        match self {
            Arrival::Gamma { burstiness } => Some(burstiness),
            _ => None,
        }
    }
}

impl serde::Serialize for Arrival {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for Arrival {
    /// A gamma read back without its shape is Poisson's (burstiness 1); the settings' `burstiness` holds the one used.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match String::deserialize(d)?.as_str() {
            "uniform" => Ok(Arrival::Uniform),
            "poisson" => Ok(Arrival::Poisson),
            "gamma" => Ok(Arrival::Gamma { burstiness: 1.0 }),
            "recorded" => Ok(Arrival::Recorded),
            other => Err(serde::de::Error::unknown_variant(other, &["uniform", "poisson", "gamma", "recorded"])),
        }
    }
}

impl LoadModel {
    /// A replay's open loop, its slots at the recorded offsets.
    pub fn is_recorded(&self) -> bool {
        matches!(self, LoadModel::Open { arrival: Arrival::Recorded, .. })
    }
}

/// When a step ends: after a number of requests, or a duration (the stop signals are `base/stop.rs`'s).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Until {
    Requests(u64),
    Duration(Duration),
}

/// A ramp inside one step (`--stages`, `--rate-stages`, k6's stages): the target (clients, or requests per second)
/// moves linearly from the previous stage's target (0 before the first) to each stage's over its duration.
/// Pure arithmetic on seconds from the step's start, so the engine asks it where the load stands.
#[derive(Clone, Debug, PartialEq)]
pub struct Ramp {
    /// Each stage: (its end, seconds from the start; its target at that end).
    points: Vec<(f64, f64)>,
}

impl Ramp {
    /// From (duration, target) stages; None when there is none, a duration is not positive or a target negative.
    pub fn new(stages: &[(Duration, f64)]) -> Option<Ramp> {
        let mut end = 0.0;
        let mut points = Vec::with_capacity(stages.len());
        for &(d, target) in stages {
            if d.is_zero() || !(target >= 0.0 && target.is_finite()) {
                return None;
            }
            end += d.as_secs_f64();
            points.push((end, target));
        }
        (!points.is_empty()).then_some(Ramp { points })
    }

    /// The stages as given: (duration, target).
    pub fn stages(&self) -> Vec<(f64, f64)> {
        let mut start = 0.0;
        self.points
            .iter()
            .map(|&(end, v)| {
                let d = end - start;
                start = end;
                (d, v)
            })
            .collect()
    }

    /// The ramp with every target times `share` (a segment's part of the whole).
    pub fn scaled(&self, share: f64) -> Ramp {
        Ramp { points: self.points.iter().map(|&(t, v)| (t, v * share)).collect() }
    }

    pub fn duration(&self) -> Duration {
        Duration::from_secs_f64(self.points.last().map_or(0.0, |p| p.0))
    }

    /// The highest target.
    pub fn peak(&self) -> f64 {
        self.points.iter().map(|p| p.1).fold(0.0, f64::max)
    }

    /// The linear pieces: (start, end, target at start, target at end).
    fn pieces(&self) -> impl Iterator<Item = (f64, f64, f64, f64)> + '_ {
        let mut prev = (0.0, 0.0);
        self.points.iter().map(move |&(t, v)| {
            let piece = (prev.0, t, prev.1, v);
            prev = (t, v);
            piece
        })
    }

    /// The target's integral over the whole ramp: an open loop's requests in all.
    pub fn total(&self) -> f64 {
        self.pieces().map(|(t0, t1, v0, v1)| (v0 + v1) / 2.0 * (t1 - t0)).sum()
    }

    /// The target `t` seconds after the start (the last target after the end).
    pub fn at(&self, t: f64) -> f64 {
        for (t0, t1, v0, v1) in self.pieces() {
            if t < t1 {
                return v0 + (v1 - v0) * ((t - t0) / (t1 - t0)).clamp(0.0, 1.0);
            }
        }
        self.points.last().map_or(0.0, |p| p.1)
    }

    /// When the target's integral from the start reaches `n` (an open loop's n-th request, counting from 0);
    /// None when it never does within the ramp.
    pub fn time_of_count(&self, n: f64) -> Option<f64> {
        let mut left = n.max(0.0);
        for (t0, t1, v0, v1) in self.pieces() {
            let len = t1 - t0;
            let area = (v0 + v1) / 2.0 * len;
            if left <= area && area > 0.0 {
                // Solve v0 x + (v1 - v0) / (2 len) x^2 = left for x in [0, len], in the form that is stable for
                // both signs of the slope.
                let a = (v1 - v0) / (2.0 * len);
                let root = (v0 * v0 + 4.0 * a * left).max(0.0).sqrt();
                let x = if v0 + root > 0.0 { 2.0 * left / (v0 + root) } else { 0.0 };
                return Some(t0 + x.min(len));
            }
            left -= area;
        }
        None
    }

    /// The first instant at or after `from` at which the target exceeds `level` (when client number `level`,
    /// counting from 0, takes part); None when it never does again.
    pub fn first_above(&self, level: f64, from: f64) -> Option<f64> {
        if self.at(from) > level {
            return Some(from);
        }
        for (t0, t1, v0, v1) in self.pieces() {
            if t1 <= from || v1 <= level {
                continue;
            }
            // Rising through `level` inside this piece (at its start it was not above, or it would have been seen).
            let x = t0 + (level - v0) / (v1 - v0) * (t1 - t0);
            // Just past the crossing, so the target there is above the level.
            return Some(x.max(from) + 1e-6);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ramp(stages: &[(f64, f64)]) -> Ramp {
        Ramp::new(&stages.iter().map(|&(d, v)| (Duration::from_secs_f64(d), v)).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn targets_move_linearly_between_stages() {
        let r = ramp(&[(30.0, 10.0), (60.0, 100.0), (30.0, 0.0)]);
        assert_eq!(r.duration(), Duration::from_secs(120));
        assert_eq!((r.at(0.0), r.at(15.0), r.at(30.0), r.at(60.0), r.at(105.0)), (0.0, 5.0, 10.0, 55.0, 50.0));
        assert_eq!(r.peak(), 100.0);
        assert_eq!(r.stages(), vec![(30.0, 10.0), (60.0, 100.0), (30.0, 0.0)]);
    }

    #[test]
    fn the_count_of_requests_inverts_the_integral_of_the_rate() {
        // 0 -> 100/s over 2 s: 100 requests by 2 s (n(t) = 25 t^2); then 2000/s... from 100 over 2 s more.
        let r = ramp(&[(2.0, 100.0), (2.0, 2000.0)]);
        assert!((r.time_of_count(25.0).unwrap() - 1.0).abs() < 1e-9);
        assert!((r.time_of_count(100.0).unwrap() - 2.0).abs() < 1e-9);
        // The second piece holds (100 + 2000) / 2 * 2 = 2100 requests.
        assert!((r.time_of_count(2200.0).unwrap() - 4.0).abs() < 1e-9);
        assert_eq!(r.time_of_count(2201.0), None);
        assert_eq!(r.total(), 2200.0);
        // A falling piece: 100 -> 0 over 2 s holds 100, the first half 75.
        let down = ramp(&[(1.0, 100.0), (2.0, 0.0)]);
        assert!((down.time_of_count(50.0 + 75.0).unwrap() - 2.0).abs() < 1e-9);
    }

    #[test]
    fn a_client_takes_part_once_the_target_passes_its_number() {
        let r = ramp(&[(10.0, 10.0), (10.0, 0.0)]);
        assert!((r.first_above(0.0, 0.0).unwrap() - 0.0).abs() < 1e-3);
        assert!((r.first_above(4.0, 0.0).unwrap() - 4.0).abs() < 1e-3);
        assert_eq!(r.first_above(4.0, 7.0), Some(7.0));
        assert_eq!(r.first_above(4.0, 17.0), None);
        assert_eq!(r.first_above(10.0, 0.0), None);
    }
}
