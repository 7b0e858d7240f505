//! `hakaru patterns extract | generate`: drnbench's pattern tools, terms or the pattern file on stdout (or
//! `--output`), warnings on stderr.

use std::process::ExitCode;

use crate::cli::args::PatternsCommand;
use crate::error::CliError;
use crate::export::write_atomically;
use crate::patterns::tools::{ExtractOptions, GenerateOptions, extract, generate, parse_hit_rate};

/// `hakaru patterns extract|generate`: runs the command, terms or the pattern file on stdout (or `--output`),
/// warnings on stderr.
pub fn patterns(cmd: &PatternsCommand) -> Result<ExitCode, CliError> {
    let stdin = &mut std::io::stdin().lock();
    match cmd {
        PatternsCommand::Extract { column, pointer, escape, files } => {
            let opts =
                ExtractOptions { column: *column, pointer: pointer.clone(), escape: *escape, files: files.clone() };
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            extract(&opts, stdin, &mut out)?;
            std::io::Write::flush(&mut out).map_err(|e| CliError::runtime(format!("writing the terms: {e}")))?;
        }
        PatternsCommand::Generate { template, terms, hosts, hit_rate, cache_size, no_escape, method, output } => {
            let opts = GenerateOptions {
                template: template.clone(),
                terms: terms.clone(),
                hosts: hosts.clone(),
                hit_rate: hit_rate.as_deref().map(parse_hit_rate).transpose()?,
                cache_size: *cache_size,
                escape: !no_escape,
                method: method.clone(),
            };
            let generated = generate(&opts, stdin)?;
            for w in &generated.warnings {
                eprintln!("hakaru: warning: {w}");
            }
            match output {
                Some(path) => write_atomically(path, &generated.json).map_err(|e| {
                    CliError::new(format!("--output '{}': cannot write it ({e}); pick a writable path", path.display()))
                })?,
                None => {
                    use std::io::Write as _;
                    std::io::stdout()
                        .lock()
                        .write_all(generated.json.as_bytes())
                        .map_err(|e| CliError::runtime(format!("writing the pattern file: {e}")))?;
                }
            }
            eprintln!("hakaru: {} unique requests per group", generated.unique_requests);
        }
    }
    Ok(ExitCode::SUCCESS)
}
