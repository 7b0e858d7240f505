//! A measured run: its session (outputs, gates, history) and each step run with everything around it.

pub mod session;
pub mod step;
