//! The bottom layer: what the user typed, as clap parses it ([`args`]), before any check.

pub mod args;
pub mod help;
pub mod render;
