//! Readers of results written earlier, one per format, for every command that reads them back (`compare`,
//! `report`, `history import`): each returns typed rows or a typed error, and the command words the error in its
//! own voice. So far drnbench's CSV ([`drnbench`]) and a study directory's manifest ([`study`]); result documents
//! and history references are still read by `compare/input.rs` and `report/mod.rs`.

pub mod drnbench;
pub mod study;
