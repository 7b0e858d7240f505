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

// In the order a run flows through them (docs/architecture.md draws it): the crate's own words; what the user
// gives; the validated plan; the engine and its protocols; histograms, counters and the result document; the run
// and its judgement; the outputs; the run spread over machines; the commands.
pub mod base;
pub mod error;

pub mod cli;
pub mod inputs;
pub mod llm;
pub mod patterns;
pub mod replay;
pub mod script;
pub mod template;
pub mod workload;

pub mod plan;

pub mod engine;
pub mod monitor;
pub mod protocol;

pub mod metrics;
pub mod result;

pub mod compare;
pub mod judge;
pub mod run;
pub mod study;

pub mod export;
pub mod history;
pub mod live;
pub mod report;

pub mod deploy;
pub mod serve;

pub mod commands;
