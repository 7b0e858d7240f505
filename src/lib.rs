//! hakaru (測る, "to measure"): load generation and honest latency measurement for network services.
//!
//! The flow of a run, from the bottom layer up: [`cli`] (raw flags, clap types only) -> [`plan`] (a validated
//! plan) -> [`engine`] (threads, connections, the load model) -> [`metrics`] (mergeable histograms and counters)
//! -> [`result`] (one result document) -> [`export`] (text, JSON, CSV) and [`history`] (SQLite). [`step`] measures one step with its
//! monitors and rewrites the files after every step; [`commands`] holds one file per command, the only layer
//! above the library. [`protocol`] holds one module per wire protocol; [`serve`] is the built-in target.
//! `docs/architecture.md` has the layers and what each may import.

/// `eprintln!` that never panics. `eprintln!` panics when stderr cannot be written (a full disk under a study
/// case's log, a closed pipe), so a failure that meant exit code 1 or 2 became a panic's 101: the line is lost
/// instead, and the exit code stays the one that says what happened.
#[macro_export]
macro_rules! eprintln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// `print!` that never panics (see [`eprintln!`](crate::eprintln)).
#[macro_export]
macro_rules! print {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stdout(), $($arg)*);
    }};
}

/// `println!` that never panics (see [`eprintln!`](crate::eprintln)).
#[macro_export]
macro_rules! println {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

pub mod analysis;
pub mod bounded;
pub mod cli;
pub mod commands;
pub mod compare;
pub mod engine;
pub mod error;
pub mod export;
pub mod gates;
pub mod history;
pub mod inputs;
pub mod k8s;
pub mod live;
pub mod load;
pub mod merge;
pub mod metrics;
pub mod monitor;
pub mod orchestrator;
pub mod patterns;
pub mod plan;
pub mod progress;
pub mod protocol;
pub mod provenance;
pub mod report;
pub mod result;
pub mod script;
pub mod secrets;
pub mod serve;
pub mod session;
pub mod stats;
pub mod step;
pub mod stop;
pub mod study;
pub mod swarm;
pub mod target;
pub mod template;
pub mod timer;
pub mod tls;
pub mod units;
pub mod workload;
