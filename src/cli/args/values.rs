//! The flags' value words (`--ws-mode`, `--data-order`, `--tls-version`, `--arrival`, on/off) and the parsers of counts
//! and rates that refuse a negative or zero value in one line.

use super::*;

/// `--ws-mode`: what a WebSocket request is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum WsModeArg {
    /// A message sent, the next one received its answer.
    #[default]
    Exchange,
    /// Each message the server pushes, timed from the one before.
    Listen,
    /// A connection opened and upgraded, then closed.
    Connect,
}

/// `--data-order`: how a data file's rows are taken.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DataOrderArg {
    /// Row after row, all clients taking from one cursor, from the first again after the last.
    #[default]
    Sequential,
    /// A row at random for each request.
    Random,
    /// Each row once; the run ends when they run out.
    Unique,
}

impl DataOrderArg {
    /// As the flag takes it.
    pub fn name(self) -> &'static str {
        match self {
            DataOrderArg::Sequential => "sequential",
            DataOrderArg::Random => "random",
            DataOrderArg::Unique => "unique",
        }
    }
}

/// `--tls-version`: the one TLS version offered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize)]
pub enum TlsVersionArg {
    #[value(name = "1.2")]
    #[serde(rename = "1.2")]
    V1_2,
    #[value(name = "1.3")]
    #[serde(rename = "1.3")]
    V1_3,
}

/// A switch given as `on` or `off`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum OnOff {
    #[default]
    On,
    Off,
}

/// `--arrival`: how open-loop requests are spaced (the plan maps it to the engine's arrival model).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ArrivalArg {
    /// Evenly spaced, 1/rate apart.
    Uniform,
    /// Exponential gaps with mean 1/rate, as independent users arrive.
    Poisson,
}

/// Reads a count (a whole number, 0 or more). Count flags also take negative numbers as values, so that `-n -5`
/// is refused with the flag's name rather than as an unknown flag `-5`.
pub(super) fn count<T: std::str::FromStr>(text: &str) -> Result<T, String> {
    text.trim().parse::<T>().map_err(|_| "not a count; give a whole number, 0 or more".to_string())
}

/// Reads a rate: a number of times a second, more than 0 (a fraction such as 0.5 is one every 2 s).
pub(super) fn per_second(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(r) if r.is_finite() && r > 0.0 && r <= 1e9 => Ok(r),
        _ => Err("not a rate; give a number a second, more than 0, e.g. 100".to_string()),
    }
}
