//! `hakaru run`: a validated plan through the engine into the result document and out through the exporters.

use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

use crate::engine;
use crate::export::{Exporter, csv::Csv, json::Json, text::Text, write_atomically};
use crate::plan::{RunPlan, UsageError};
use crate::progress::Progress;
use crate::provenance::Provenance;
use crate::result::{ResultDocument, SCHEMA, StepLoad, StepResult};

/// Runs the plan and prints and writes its result; Ctrl-C keeps what was measured (exit code 130).
pub fn run_plan(plan: &RunPlan, interrupt: &AtomicBool) -> Result<ExitCode, UsageError> {
    let doc = measure(plan, interrupt)?;
    print!("{}", Text.render(&doc));
    write_outputs(plan, &doc)?;
    Ok(if doc.interrupted { ExitCode::from(130) } else { ExitCode::SUCCESS })
}

/// Runs the plan's one step and builds the result document.
pub fn measure(plan: &RunPlan, interrupt: &AtomicBool) -> Result<ResultDocument, UsageError> {
    engine::preflight(plan)?;
    let started = std::time::SystemTime::now();
    let mut progress = Progress::new(plan.quiet);
    let outcome = engine::run_step(plan, interrupt, |w| progress.window(w));
    progress.finish();
    let load = StepLoad {
        rate: plan.settings.rate,
        model: plan.settings.load_model.clone(),
        connections: plan.connections,
        threads: plan.threads,
    };
    let step = StepResult::from_metrics("run", load, &outcome.metrics, outcome.windows, outcome.elapsed);
    let mut warnings = step.warnings(plan.keepalive);
    if !plan.keepalive {
        warnings.push(
            "keep-alive is off: every request opens a new connection, which usually costs more than the request".into(),
        );
    }
    if crate::provenance::is_debug_build() {
        warnings.push("this is a debug build of hakaru: build with --release before trusting the numbers".into());
    }
    if outcome.interrupted {
        warnings.push("interrupted by Ctrl-C: the figures cover only the time until then".into());
    }
    Ok(ResultDocument {
        schema: SCHEMA.into(),
        provenance: Provenance::collect(started),
        settings: plan.settings.clone(),
        interrupted: outcome.interrupted,
        steps: vec![step],
        warnings,
    })
}

fn write_outputs(plan: &RunPlan, doc: &ResultDocument) -> Result<(), UsageError> {
    let outputs: [(&Option<std::path::PathBuf>, &dyn Exporter); 2] = [(&plan.json, &Json), (&plan.csv, &Csv)];
    for (path, exporter) in outputs {
        if let Some(path) = path {
            write_atomically(path, &exporter.render(doc))
                .map_err(|e| UsageError::runtime(format!("writing '{}': {e}", path.display())))?;
        }
    }
    Ok(())
}
