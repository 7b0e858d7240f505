//! The crate's own vocabulary, below every part of the flow: units, bounded input files, targets and their
//! TLS, the precise timer, the load's words, how a run is asked to stop, and what is never shown (secrets).

pub mod bounded;
pub mod load;
pub mod secrets;
pub mod stop;
pub mod target;
pub mod timer;
pub mod tls;
pub mod units;
