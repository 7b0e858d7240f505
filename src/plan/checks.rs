//! The checks a plan makes of the machine and the outputs: the default thread count, writable output files,
//! the processes to watch, Unix-socket and proxied endpoints, a server on this machine, `serve`'s options.

use super::*;

/// The rate one load thread of an open loop is given by default. A thread's pacer sleeps until each slot it is
/// given, so more threads than the rate needs spend more wake-ups per request: on a 16-core machine at 200,000/s,
/// 2 threads spent 9.9 CPU microseconds a request and 4 threads 15.8, and 2 kept the rate (docs/performance.md).
pub const OPEN_RATE_PER_THREAD: f64 = 100_000.0;

/// Threads when `--threads` is not given: every core for a closed loop; for an open loop, one per
/// [`OPEN_RATE_PER_THREAD`] of its (peak) rate, at most every core.
pub fn default_threads(load: &LoadModel, cores: usize) -> usize {
    let cores = cores.max(1);
    match load {
        LoadModel::Closed { .. } => cores,
        // A gamma's shape holds in one schedule alone (threads' shares added together tend to Poisson).
        LoadModel::Open { arrival: Arrival::Gamma { .. }, .. } => 1,
        LoadModel::Open { rate, .. } => ((rate / OPEN_RATE_PER_THREAD).ceil() as usize).clamp(1, cores),
    }
}

/// `--threads 0` is refused; absent means every core (an open loop: as its rate needs, see [`default_threads`]).
pub fn check_threads(threads: Option<usize>) -> Result<(), CliError> {
    if threads == Some(0) {
        return Err(CliError::new("--threads 0: must be at least 1; leave it out to use every core"));
    }
    Ok(())
}

/// Checks an output file before the run, so a bad path fails now and not after the load; nothing is created,
/// so a run that ends early leaves no empty file behind.
pub fn check_writable(path: &std::path::Path) -> Result<(), CliError> {
    crate::export::check_output(path).map_err(|e| {
        CliError::new(format!("output file '{}': cannot write it ({e}); pick a writable path", path.display()))
    })
}

/// Checks every output (flag and path) and that no two lead to the same file: each would overwrite the other
/// after every step, and one format would be lost.
pub fn check_outputs(outputs: &[(&str, Option<&std::path::Path>)]) -> Result<(), CliError> {
    let mut seen: Vec<(&str, &std::path::Path, crate::export::OutputId)> = Vec::new();
    for &(flag, path) in outputs {
        let Some(path) = path else { continue };
        check_writable(path)?;
        let id = crate::export::output_id(path).map_err(|e| {
            CliError::new(format!("{flag} '{}': cannot write it ({e}); pick a writable path", path.display()))
        })?;
        if let Some((other, other_path, _)) = seen.iter().find(|(_, _, i)| *i == id) {
            return Err(CliError::new(format!(
                "{other} '{}' and {flag} '{}' are the same file: each output needs its own path",
                other_path.display(),
                path.display()
            )));
        }
        seen.push((flag, path, id));
    }
    Ok(())
}

/// What watches the server, checked now (a pid that does not exist, a probe without a pointer: bad input before
/// any load); the process monitor starts sampling here. Without a `--monitor-*` flag, the processes listening on
/// the ports of targets on this machine (loopback) are watched, so the analysis can name the bottleneck.
pub fn watchers(a: &WatchArgs, endpoints: &[Endpoint]) -> Result<Watchers, CliError> {
    let spec = WatchSpec { pids: a.monitor_pid.clone(), names: a.monitor_name.clone(), ports: a.monitor_port.clone() };
    let monitor = if !spec.is_empty() {
        Some(ProcessMonitor::start(&spec, Duration::from_secs(1))?)
    } else if a.no_monitor {
        None
    } else {
        local_server(endpoints).and_then(|pids| {
            ProcessMonitor::start(&WatchSpec { pids, ..WatchSpec::default() }, Duration::from_secs(1)).ok()
        })
    };
    let mut probes = a.probe.iter().map(|p| Probe::parse(p)).collect::<Result<Vec<_>, _>>()?;
    monitor::unique_names(&mut probes);
    let expected_hit_rate = a
        .expect_hit_rate
        .as_deref()
        .map(|r| {
            crate::patterns::tools::parse_hit_rate(r)
                .map_err(|_| CliError::new(format!("--expect-hit-rate '{r}': not a rate; write it like 0.5 or 50%")))
        })
        .transpose()?;
    if expected_hit_rate.is_some() && !probes.iter().any(|p| is_hit_rate_probe(&p.name)) {
        return Err(CliError::new(
            "--expect-hit-rate needs a probe of the hit rate, e.g. --probe 'http://HOST:10041/d/status#/1/cache_hit_rate'",
        ));
    }
    Ok(Watchers { monitor, probes, expected_hit_rate })
}

/// `--unix-socket PATH` beside an http:// URL: the socket checked now, the URL's host and port kept for the Host
/// header. TLS over a Unix socket is not offered yet.
pub(super) fn unix_endpoint(u: &ParsedUrl, path: &std::path::Path, shown: &str) -> Result<Endpoint, CliError> {
    if u.scheme == Scheme::Https {
        return Err(CliError::new(format!(
            "URL '{shown}': --unix-socket takes http:// URLs (TLS over a Unix socket is not supported); write http://"
        )));
    }
    Endpoint::on_socket(u.scheme, &u.host, u.port, path).map_err(|e| CliError::new(format!("--unix-socket {e}")))
}

/// The Unix sockets of the endpoints, comma-separated, for the document; None when they are all TCP.
/// The proxies of the endpoints, as the document records them (passwords hidden); None without one.
pub(super) fn proxies(endpoints: &[Endpoint]) -> Option<String> {
    let mut shown: Vec<&str> = endpoints.iter().filter_map(|e| e.proxy.as_deref()).map(|p| p.shown.as_str()).collect();
    shown.dedup();
    (!shown.is_empty()).then(|| shown.join(","))
}

pub(super) fn unix_sockets(endpoints: &[Endpoint]) -> Option<String> {
    let mut paths: Vec<String> =
        endpoints.iter().filter_map(|e| Some(e.unix.as_ref()?.display().to_string())).collect();
    paths.dedup();
    (!paths.is_empty()).then(|| paths.join(","))
}

/// The processes (not hakaru itself) listening on the ports of the loopback targets, or on their Unix sockets;
/// None when there are none.
pub(super) fn local_server(endpoints: &[Endpoint]) -> Option<Vec<u32>> {
    let mut ports: Vec<u16> = endpoints.iter().filter(|e| e.addr.ip().is_loopback()).map(|e| e.port).collect();
    ports.sort_unstable();
    ports.dedup();
    let me = std::process::id();
    let on_sockets = endpoints.iter().filter_map(|e| e.unix.as_deref()).flat_map(monitor::pids_on_unix_socket);
    let mut pids: Vec<u32> =
        ports.into_iter().flat_map(monitor::pids_listening).chain(on_sockets).filter(|&p| p != me).collect();
    pids.sort_unstable();
    pids.dedup();
    (!pids.is_empty()).then_some(pids)
}

pub fn serve_options(a: &ServeArgs) -> Result<crate::serve::ServeOptions, CliError> {
    let listen: SocketAddr = a
        .listen
        .parse()
        .map_err(|_| CliError::new(format!("--listen '{}': not an address; write it like 127.0.0.1:8080", a.listen)))?;
    if a.threads == Some(0) {
        return Err(CliError::new("--threads 0: must be at least 1"));
    }
    if a.workers == Some(0) {
        return Err(CliError::new("--workers 0: must be at least 1; leave it out for no limit"));
    }
    let miss_cost =
        parse_flag_duration(&a.miss_cost).map_err(|e| CliError::new(format!("--miss-cost '{}': {e}", a.miss_cost)))?;
    Ok(crate::serve::ServeOptions {
        listen,
        threads: a.threads.unwrap_or_else(available_cores),
        workers: a.workers,
        miss_cost,
        cache_size: a.cache_size.max(1),
    })
}
