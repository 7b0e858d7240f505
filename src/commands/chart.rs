//! `hakaru chart`: one chart of the inputs as an SVG or PNG image, for a slide or an issue comment.

use std::path::Path;
use std::process::ExitCode;

use super::report::{check_writable, load_all};
use crate::cli::args::ChartArgs;
use crate::error::CliError;
use crate::export::write_shareable_atomically;
use crate::report::Report;
use crate::report::chart::{Format, Metric, render};

pub fn chart(a: &ChartArgs) -> Result<ExitCode, CliError> {
    let metric = Metric::parse(&a.metric).ok_or_else(|| {
        CliError::new(format!(
            "--metric '{}': not a chart; use qps, p99, mean, spectrum, ttft, gaps or connections",
            a.metric
        ))
    })?;
    let output = Path::new(&a.output);
    let extension = output.extension().map(|e| e.to_string_lossy().to_ascii_lowercase());
    let format = match extension.as_deref() {
        Some("svg") => Format::Svg,
        Some("png") => Format::Png,
        _ => {
            return Err(CliError::new(format!(
                "-o {}: the image format comes from the extension; name the file .svg or .png",
                a.output
            )));
        }
    };
    check_writable("-o", output)?;
    let inputs = load_all(&a.from)?;
    let report = Report::build(a.title.as_deref().unwrap_or(""), &inputs);
    let image = render(&report, metric, format, a.over_time)
        .map_err(|why| CliError::new(format!("--metric {}: cannot draw it: {why}; choose another metric", a.metric)))?;
    write_shareable_atomically(output, &image)
        .map_err(|e| CliError::runtime(format!("-o {}: cannot write the chart: {e}", output.display())))?;
    eprintln!("hakaru: wrote {}", output.display());
    Ok(ExitCode::SUCCESS)
}
