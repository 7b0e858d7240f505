//! `hakaru demo`: the built-in target started in-process and a short run against it, for a first result with
//! nothing else installed.

use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

use crate::cli::args::{ArrivalArg, DemoArgs, RequestArgs, RunArgs};
use crate::error::UsageError;
use crate::monitor::{Watchers, available_cores};
use crate::plan::RunPlan;
use crate::serve::{self, ServeOptions};

pub fn demo(args: &DemoArgs, interrupt: &AtomicBool) -> Result<ExitCode, UsageError> {
    let server = serve::start(ServeOptions {
        listen: "127.0.0.1:0".parse().expect("static address"),
        threads: 1,
        workers: None,
        miss_cost: std::time::Duration::from_millis(5),
        cache_size: 100,
    })
    .map_err(|e| UsageError::runtime(format!("cannot start the built-in target: {e}")))?;
    let url = format!("http://{}/?size=1kb", server.addr());
    println!("hakaru demo: built-in target at http://{} (1 thread); the load uses the other cores\n", server.addr());
    let run = RunArgs {
        request: RequestArgs {
            urls: vec![url],
            timeout: "5s".into(),
            connect_timeout: "5s".into(),
            method: "GET".into(),
            ok_status: "200-399".into(),
            ..RequestArgs::default()
        },
        watch: Default::default(),
        connections: args.connections,
        rate: None,
        arrival: ArrivalArg::Uniform,
        requests: None,
        duration: Some(args.duration.clone()),
        threads: Some((available_cores().saturating_sub(1)).max(1)),
        json: args.json.clone(),
        csv: None,
        quiet: false,
    };
    let result = RunPlan::from_args(&run).and_then(|mut plan| {
        plan.settings.command = "demo".into();
        super::run::run_plan(&plan, &Watchers::none(), interrupt)
    });
    server.stop();
    result
}
