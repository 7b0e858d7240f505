//! The `hakaru` binary: a thin shell around the library so tests can call everything in-process.

fn main() -> std::process::ExitCode {
    hakaru::cli::main()
}
