//! Readers of results written earlier, for every command that reads them back (`compare`, `report`, `chart`,
//! `history import`, `merge`, a study's summary): what a command-line input names ([`argument`]), result files of
//! either kind ([`result`]: result documents and drnbench's CSV, whose rows [`drnbench`] parses) and a study
//! directory's manifest ([`study`]), and the labels `--name` gives inputs ([`names`]). Each returns typed values or a typed error, and the command words the error
//! in its own voice; history references are looked up by the commands, which alone open the history.

pub mod argument;
pub mod drnbench;
pub mod names;
pub mod result;
pub mod study;

/// serde_json's message without its trailing " at line L column C" (callers say the line and column first).
pub fn json_reason(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let cut = format!(" at line {} column {}", e.line(), e.column());
    text.strip_suffix(&cut).unwrap_or(&text).to_string()
}
