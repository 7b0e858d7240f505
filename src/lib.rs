//! hakaru (測る, "to measure"): load generation and honest latency measurement for network services.
//!
//! The flow of a run: [`cli`] (raw flags) -> [`plan`] (a validated plan) -> [`engine`] (threads, connections,
//! the load model) -> [`metrics`] (mergeable histograms and counters) -> [`result`] (one result document) ->
//! [`export`] (text, JSON, CSV). [`protocol`] holds one module per wire protocol; [`serve`] is the built-in target.

pub mod analysis;
pub mod capacity;
pub mod cli;
pub mod demo;
pub mod engine;
pub mod export;
pub mod metrics;
pub mod monitor;
pub mod pattern_tools;
pub mod patterns;
pub mod plan;
pub mod progress;
pub mod protocol;
pub mod provenance;
pub mod result;
pub mod run;
pub mod runner;
pub mod serve;
pub mod sweep;
pub mod target;
pub mod timer;
pub mod units;
