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

/// How open-loop requests are spaced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Arrival {
    /// Evenly spaced, 1/rate apart.
    Uniform,
    /// Exponential gaps with mean 1/rate, as independent users arrive.
    Poisson,
}

/// When a step ends: after a number of requests, or a duration (the stop signals are `stop.rs`'s).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Until {
    Requests(u64),
    Duration(Duration),
}
