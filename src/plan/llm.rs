//! `hakaru llm`'s flags made into a `run`'s: a POST of an OpenAI body per prompt, read as a token stream, with
//! vLLM's names for the load (`--request-rate`, `--max-concurrency`, `--num-prompts`) taken as hakaru's. The
//! plan, the engine and the session are `run`'s: only the requests differ.

use super::*;
use crate::cli::args::{DataOrderArg, DatasetArg, EndpointTypeArg, LlmArgs};
use crate::llm::body::{self, Api};
use crate::llm::dataset;
use crate::llm::tokenizer::{Counter, words_for};

/// A rate without `--max-concurrency`: the most connections it may open (vLLM's has no cap; the descriptors do).
const MOST_UNCAPPED: u64 = 10_000;

/// `hakaru llm`'s run, as `run` takes it: the flags and the dataset's rows.
pub struct Prepared {
    pub args: RunArgs,
    pub rows: Option<crate::template::data::Rows>,
    /// A trace's recorded schedule: each request at its offset (`Pace::Recorded`).
    pub schedule: Option<super::replay::ReplaySchedule>,
    /// What the prompts are, for the run's notes.
    pub note: String,
    /// `--percentile-metrics` and `--metric-percentiles`.
    pub percentile_metrics: Option<crate::result::PercentileMetrics>,
    /// `--request-rate 1,2,4`: a sweep of the rates, a step each (`-d` long), in place of one run.
    pub rates: Option<Vec<f64>>,
    /// `--slo`: a capacity search from the first rate (`--request-rate`, else 1) up to `--rate-max`.
    pub search: Option<(String, f64, f64)>,
}

/// vLLM's `--percentile-metrics ttft,tpot,itl` and `--metric-percentiles 99`: None when neither is given.
fn percentile_metrics(l: &crate::cli::args::LlmFlags) -> Result<Option<crate::result::PercentileMetrics>, CliError> {
    if l.percentile_metrics.is_none() && l.metric_percentiles.is_none() {
        return Ok(None);
    }
    let list = |t: &str| t.split(',').map(str::trim).filter(|w| !w.is_empty()).map(str::to_string).collect::<Vec<_>>();
    // vLLM's default list, less tpot for whole answers (they have none).
    let default = if l.no_stream { "ttft,itl,e2el" } else { "ttft,tpot,itl" };
    let metrics = list(l.percentile_metrics.as_deref().unwrap_or(default));
    for m in &metrics {
        let figure = crate::result::events::Figure::named(&m.to_ascii_lowercase());
        if figure.is_none() || (l.no_stream && m.eq_ignore_ascii_case("tpot")) {
            return Err(CliError::new(format!(
                "--percentile-metrics '{}': '{m}' is not a figure here; give ttft, tpot, itl or e2el (tpot needs a \
                 stream)",
                l.percentile_metrics.as_deref().unwrap_or_default().escape_debug()
            )));
        }
    }
    let mut percentiles = Vec::new();
    for p in list(l.metric_percentiles.as_deref().unwrap_or("99")) {
        match p.trim_start_matches(['p', 'P']).parse::<f64>() {
            Ok(x) if x > 0.0 && x <= 100.0 => percentiles.push(x),
            _ => {
                return Err(CliError::new(format!(
                    "--metric-percentiles '{}': '{p}' is not a percentile; give numbers above 0 to 100, e.g. 50,90,99",
                    l.metric_percentiles.as_deref().unwrap_or_default().escape_debug()
                )));
            }
        }
    }
    if metrics.is_empty() || percentiles.is_empty() {
        return Err(CliError::new(
            "--percentile-metrics, --metric-percentiles: give at least one of each, e.g. ttft and 99",
        ));
    }
    let metrics = metrics.into_iter().map(|m| m.to_ascii_lowercase()).collect();
    Ok(Some(crate::result::PercentileMetrics { metrics, percentiles }))
}

/// A `run`'s flag that `llm` sets itself: (the flag, given, why).
fn refused(a: &RequestArgs) -> Option<&'static str> {
    [
        ("-b/--body", a.body.is_some()),
        ("--body-file", a.body_file.is_some()),
        ("--data", a.data.is_some()),
        ("--script", a.script.is_some()),
        ("--patterns", a.patterns.is_some()),
        ("--hosts", a.hosts.is_some()),
        ("--call", a.call.is_some()),
    ]
    .into_iter()
    .find_map(|(flag, given)| given.then_some(flag))
}

pub fn prepare(a: &LlmArgs) -> Result<Prepared, CliError> {
    let (l, mut args) = (&a.llm, a.run.clone());
    if let Some(flag) = refused(&args.request) {
        return Err(CliError::new(format!(
            "{flag}: llm makes each request's body from --dataset-name's prompts; for a body of your own use \
             `hakaru run --events tokens -m POST -b ...`"
        )));
    }
    let [url] = &args.request.urls[..] else {
        return Err(CliError::new("llm takes one URL, the endpoint: e.g. http://127.0.0.1:8000/v1/chat/completions"));
    };
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(CliError::new(format!(
            "URL '{}': llm loads an http:// or https:// endpoint, e.g. http://127.0.0.1:8000/v1/chat/completions",
            crate::base::target::shown(url)
        )));
    }
    if let Some(kind) = args.request.events.as_deref().filter(|k| *k != "tokens") {
        return Err(CliError::new(format!(
            "--events {}: llm reads token streams (--events tokens); leave --events out",
            kind.escape_debug()
        )));
    }
    let Some(model) = l.model.as_deref().filter(|m| !m.trim().is_empty()) else {
        return Err(CliError::new(
            "--model: name the model each request asks for (vLLM's --served-model-name; hakaru serve takes any), \
             e.g. --model Qwen/Qwen3-0.6B",
        ));
    };
    if l.model.as_deref().is_some_and(|m| m.contains("{{")) {
        return Err(CliError::new("--model: a name without '{{' (it would read as a template's hole)"));
    }
    if args.replay.replay.is_some() || args.replay.dry_run {
        return Err(CliError::new(
            "--replay: llm does not replay traces yet; replay an access log with `hakaru run --replay FILE URL`",
        ));
    }
    if args.load.scale.agents.is_some() {
        return Err(CliError::new("--agents: llm runs in one process; start agents with `hakaru run` for now"));
    }
    let path = url.split_once("://").and_then(|(_, rest)| rest.find('/').map(|i| &rest[i..])).unwrap_or("/");
    let api = match l.endpoint_type {
        Some(EndpointTypeArg::Chat) => Api::Chat,
        Some(EndpointTypeArg::Completions) => Api::Completions,
        None => Api::of_path(path),
    };
    let search = capacity_search(l, &mut args)?;
    // vLLM's load flags taken as hakaru's.
    let mut rates = None;
    match (l.request_rate.as_deref().filter(|_| search.is_none()), args.load.rate) {
        (Some(_), Some(_)) => {
            return Err(CliError::new("--request-rate and --rate both given: they are one flag here; give one"));
        }
        (Some(r), None) if r.contains(',') => {
            rates = Some(rate_sweep(r, l, &args)?);
            args.load.arrival = crate::cli::args::ArrivalArg::Poisson;
        }
        (Some(r), None) => {
            args.load.rate = request_rate(r)?;
            // vLLM's rate is Poisson's unless a burstiness says otherwise; hakaru's --rate keeps its even spacing.
            args.load.arrival = crate::cli::args::ArrivalArg::Poisson;
        }
        _ => {}
    }
    if l.no_stream && args.request.goodput.as_deref().is_some_and(|g| g.contains("tpot")) {
        return Err(CliError::new(
            "--goodput tpot with --no-stream: whole answers have no time per output token; judge ttft or e2el",
        ));
    }
    if l.output_len == Some(0) {
        return Err(CliError::new("--output-len 0: give the tokens each answer asks for, 1 or more"));
    }
    if l.num_prompts == 0 {
        return Err(CliError::new("--num-prompts 0: give at least 1 (vLLM's default is 1000)"));
    }
    if args.load.requests.is_none() && args.load.duration.is_none() && args.load.stages.is_none() {
        args.load.requests = Some(l.num_prompts);
    }
    // The prompts read: one a request (vLLM's); a timed run cycles --num-prompts of them.
    let prompts = args.load.requests.unwrap_or(l.num_prompts);
    match l.max_concurrency {
        Some(c) => args.load.connections = c,
        // vLLM's rate has no cap on requests in flight unless --max-concurrency gives one: every request may have its
        // own connection (an open loop opens them as the schedule needs), up to MOST_UNCAPPED.
        None if args.load.rate.is_some() => {
            args.load.connections = args.load.connections.max(prompts.min(MOST_UNCAPPED) as usize);
        }
        // A sweep's steps are timed: as many connections as the highest rate may need, opened as it needs them.
        None if rates.is_some() || search.is_some() => {
            args.load.connections = args.load.connections.max(MOST_UNCAPPED as usize)
        }
        None => {}
    }
    let seed = args.request.seed.unwrap_or(0);
    let counter = match &l.tokenizer {
        Some(file) => {
            Counter::load(file).map_err(|why| CliError::new(format!("--tokenizer '{}': {why}", file.display())))?
        }
        None => Counter::Estimate,
    };
    let (rows, prompt, max_tokens, note, schedule) = prompts_of(l, &mut args, prompts, seed, &counter)?;
    drop(counter);
    let shape = body::Shape {
        api,
        model,
        prompt: &prompt,
        max_tokens: &max_tokens,
        ignore_eos: l.ignore_eos,
        stream: !l.no_stream,
    };
    let note = match l.no_stream {
        true => format!("{note}; whole answers (\"stream\": false): time to first token is the whole answer's"),
        false => note,
    };
    let r = &mut args.request;
    r.body = Some(body::template(&shape));
    if r.method.eq_ignore_ascii_case("GET") {
        r.method = "POST".into();
    }
    if !r.headers.iter().any(|h| h.split(':').next().is_some_and(|n| n.trim().eq_ignore_ascii_case("content-type"))) {
        r.headers.push("Content-Type: application/json".into());
    }
    r.events = Some("tokens".into());
    r.data_order = DataOrderArg::Sequential;
    if let Some(s) = &schedule {
        args.load.requests = Some(args.load.requests.unwrap_or(s.total).min(s.total));
    }
    let pm = percentile_metrics(l)?;
    if pm.is_some() && (rates.is_some() || search.is_some() || args.load.runs > 1) {
        return Err(CliError::new(
            "--percentile-metrics and --metric-percentiles print in one run's summary: leave them out of a sweep, \
             --slo and --runs (every figure's p50 ... p99.99 is in the document)",
        ));
    }
    if l.no_stream && args.load.thresholds.iter().any(|t| t.contains("tpot")) {
        return Err(CliError::new(
            "--threshold tpot with --no-stream: whole answers have no time per output token; judge ttft or e2el",
        ));
    }
    if (rates.is_some() || search.is_some()) && rows.is_some() {
        return Err(CliError::new(
            "--request-rate with a list, and --slo, step through synthetic prompts (--dataset-name random) for now; run \
             a file's prompts at one rate a run",
        ));
    }
    Ok(Prepared { args, rows, schedule, note, percentile_metrics: pm, rates, search })
}

/// What the prompts are: the rows (a file's), the body's prompt and max_tokens (holes or literals), the note, and a
/// trace's schedule; `args` takes what the dataset decides (a trace's connections).
type PromptsOf = (Option<crate::template::data::Rows>, String, String, String, Option<super::replay::ReplaySchedule>);

fn prompts_of(
    l: &crate::cli::args::LlmFlags,
    args: &mut RunArgs,
    prompts: u64,
    seed: u64,
    counter: &Counter,
) -> Result<PromptsOf, CliError> {
    let mut schedule = None;
    let tokenizer = tokenizer_error(l);
    let (rows, prompt, max_tokens, note) = match l.dataset_name {
        DatasetArg::Random => {
            let (prompt, out, note) = random(l, counter, seed)?;
            (None, prompt, out, note)
        }
        DatasetArg::Trace => {
            let Some(file) = &l.dataset_path else {
                return Err(CliError::new("--dataset-name trace: give the trace with --dataset-path FILE"));
            };
            if args.load.rate.is_some() || args.load.duration.is_some() || args.load.threads.is_some_and(|t| t > 1) {
                return Err(CliError::new(
                    "--dataset-name trace sends each request at its recorded time: leave out --request-rate, --rate, \
                     -d and -t",
                ));
            }
            let bad = |why: String| CliError::new(format!("--dataset-path '{}': {why}", file.display()));
            // No cap on requests in flight unless --max-concurrency gives one (aiperf's fixed schedule has none).
            if l.max_concurrency.is_none() {
                args.load.connections = args.load.connections.max(prompts.min(MOST_UNCAPPED) as usize);
            }
            let per_word = counter.tokens_a_word(seed).map_err(tokenizer)?;
            let (prompts, at) = dataset::trace(file, prompts, seed, per_word).map_err(bad)?;
            schedule = Some(trace_schedule(&at, &args.replay)?);
            (Some(prompts.rows), "{{prompt}}".to_string(), "{{max_tokens}}".to_string(), prompts.note)
        }
        name => {
            let Some(file) = &l.dataset_path else {
                return Err(CliError::new(format!(
                    "--dataset-name {}: give the file with --dataset-path FILE",
                    if name == DatasetArg::Jsonl { "jsonl" } else { "sharegpt" }
                )));
            };
            let bad = |why: String| CliError::new(format!("--dataset-path '{}': {why}", file.display()));
            if name == DatasetArg::Jsonl && l.tokenizer.is_some() {
                return Err(CliError::new(
                    "--tokenizer with --dataset-name jsonl: its prompts are sent as written and its output lengths \
                     are given; leave --tokenizer out",
                ));
            }
            let prompts = match name {
                DatasetArg::Jsonl => dataset::jsonl(file, prompts, l.output_len),
                DatasetArg::Random | DatasetArg::Trace => unreachable!("matched above"),
                _ => dataset::sharegpt(file, prompts, l.output_len, seed, counter),
            }
            .map_err(bad)?;
            (Some(prompts.rows), "{{prompt}}".to_string(), "{{max_tokens}}".to_string(), prompts.note)
        }
    };
    Ok((rows, prompt, max_tokens, note, schedule))
}

/// A trace's instants as the pacer's offsets: over `--speed`, gaps cut by `--replay-max-gap`.
fn trace_schedule(at: &[i64], r: &crate::cli::args::ReplayArgs) -> Result<super::replay::ReplaySchedule, CliError> {
    let max_gap = super::replay::pace(r)?;
    let offsets = crate::replay::offsets(at, r.speed, max_gap, false);
    let total = offsets.len() as u64;
    let period_us = offsets.last().copied().unwrap_or(0) + 1;
    Ok(super::replay::ReplaySchedule { offsets: offsets.into(), period_us, total })
}

/// `--slo`: the objectives, the first rate (`--request-rate`, 1 by default) and the last; the flags a search has no
/// place for refused.
fn capacity_search(l: &crate::cli::args::LlmFlags, a: &mut RunArgs) -> Result<Option<(String, f64, f64)>, CliError> {
    if l.no_stream && l.slo.as_deref().is_some_and(|s| s.contains("tpot")) {
        return Err(CliError::new(
            "--slo tpot with --no-stream: whole answers have no time per output token; judge ttft or e2el",
        ));
    }
    let Some(slo) = &l.slo else {
        if l.rate_max != 10_000.0 {
            return Err(CliError::new("--rate-max bounds --slo's search: give --slo too, or leave --rate-max out"));
        }
        return Ok(None);
    };
    let start = match l.request_rate.as_deref() {
        None => 1.0,
        Some(r) if r.contains(',') => {
            return Err(CliError::new(format!(
                "--slo with --request-rate {r}: the search starts from one rate and finds the rest; give one, e.g. 1"
            )));
        }
        Some(r) => request_rate(r)?.ok_or_else(|| {
            CliError::new(format!("--slo with --request-rate {r}: give the first rate the search tries, e.g. 1"))
        })?,
    };
    let own = [
        ("--rate", a.load.rate.is_some()),
        ("--threshold (the search judges --slo's objectives)", !a.load.thresholds.is_empty()),
    ];
    if let Some((flag, _)) = own.iter().chain(&not_stepped(l, a)).find(|(_, given)| *given) {
        return Err(CliError::new(format!("--slo searches the rate a step at a time; leave {flag} out")));
    }
    if a.load.duration.is_none() {
        return Err(CliError::new(
            "--slo searches the rate a step at a time: give each step's length with -d (e.g. -d 30s)",
        ));
    }
    if start > l.rate_max {
        return Err(CliError::new(format!(
            "--request-rate {start} with --slo: above --rate-max {}; the search climbs from --request-rate to \
             --rate-max",
            l.rate_max
        )));
    }
    a.load.arrival = crate::cli::args::ArrivalArg::Poisson;
    Ok(Some((slo.clone(), start, l.rate_max)))
}

/// The flags a sweep of rates or an `--slo` search (timed steps, Poisson arrivals, a step per rate) has no place
/// for, and whether each was given.
fn not_stepped(l: &crate::cli::args::LlmFlags, a: &RunArgs) -> [(&'static str, bool); 5] {
    [
        ("-n/--requests", a.load.requests.is_some()),
        ("--stages", a.load.stages.is_some() || a.load.rate_stages.is_some()),
        ("--burstiness", a.load.burstiness.is_some()),
        ("--runs", a.load.runs > 1),
        ("--dataset-name trace", l.dataset_name == DatasetArg::Trace),
    ]
}

/// `--request-rate 1,2,4`: the rates of a sweep, a step each, each `-d` long; the flags a sweep has no place for
/// refused.
fn rate_sweep(text: &str, l: &crate::cli::args::LlmFlags, a: &RunArgs) -> Result<Vec<f64>, CliError> {
    let mut rates = Vec::new();
    for word in text.split(',').map(str::trim) {
        if word.eq_ignore_ascii_case("inf") {
            return Err(CliError::new(format!(
                "--request-rate '{}': inf is no step of a sweep (it is a closed loop); give rates, e.g. 1,2,4,8",
                text.escape_debug()
            )));
        }
        match word.parse::<f64>() {
            Ok(r) => rates.push(parse_rate("--request-rate", r)?),
            Err(_) => {
                return Err(CliError::new(format!(
                    "--request-rate '{}': '{}' is no rate; give requests a second, e.g. 1,2,4,8",
                    text.escape_debug(),
                    word.escape_debug()
                )));
            }
        }
    }
    if let Some((flag, _)) = not_stepped(l, a).iter().find(|(_, given)| *given) {
        return Err(CliError::new(format!(
            "--request-rate {text}: a sweep of rates, a step each; leave {flag} out (each step lasts -d)"
        )));
    }
    if a.load.duration.is_none() {
        return Err(CliError::new(format!(
            "--request-rate {text}: a sweep of rates, a step each: give each step's length with -d (e.g. -d 30s)"
        )));
    }
    Ok(rates)
}

/// A tokenizer's failure as `--tokenizer 'FILE': why`.
fn tokenizer_error(l: &crate::cli::args::LlmFlags) -> impl Fn(String) -> CliError + Copy + '_ {
    |why: String| {
        let file = l.tokenizer.as_ref().map_or(String::new(), |f| format!(" '{}'", f.display()));
        CliError::new(format!("--tokenizer{file}: {why}"))
    }
}

/// `--request-rate`: a number of requests a second, or `inf` (vLLM's default: no rate, a closed loop).
fn request_rate(text: &str) -> Result<Option<f64>, CliError> {
    let t = text.trim();
    if t.eq_ignore_ascii_case("inf") {
        return Ok(None);
    }
    match t.parse::<f64>() {
        Ok(r) => parse_rate("--request-rate", r).map(Some),
        Err(_) => Err(CliError::new(format!(
            "--request-rate '{}': give requests a second (e.g. 10) or inf (a closed loop of --max-concurrency)",
            text.escape_debug()
        ))),
    }
}

/// Synthetic prompts: `{{words}}` and `{{rand}}` holes, made per request (none held), lengths as vLLM's random
/// dataset draws them (uniform within the range ratio).
fn random(l: &crate::cli::args::LlmFlags, counter: &Counter, seed: u64) -> Result<(String, String, String), CliError> {
    let r = l.random_range_ratio;
    if !(0.0..1.0).contains(&r) {
        return Err(CliError::new(format!(
            "--random-range-ratio {r}: give a ratio from 0 (every length the same) to below 1, e.g. 0.1"
        )));
    }
    let range = |n: u64| ((n as f64 * (1.0 - r)).floor() as u64, (n as f64 * (1.0 + r)).ceil() as u64);
    let (tlo, thi) = range(l.random_input_len);
    // With a tokenizer, the words that make the tokens asked (checked on sample prompts); without, a word a token.
    let tokenizer = tokenizer_error(l);
    if let Some(per_word) = counter.tokens_a_word(seed).map_err(tokenizer)?
        && words_for(thi, per_word) > crate::template::text::MOST_WORDS
    {
        return Err(CliError::new(format!(
            "--random-input-len {}: {} words of the vocabulary with the range by this tokenizer, more than the {} a \
             prompt may hold",
            l.random_input_len,
            words_for(thi, per_word),
            crate::template::text::MOST_WORDS
        )));
    }
    let sized = counter.size(l.random_input_len, seed).map_err(tokenizer)?;
    let (ilo, ihi) = match sized {
        Some(s) => {
            let per_word = s.mean / s.words as f64;
            (words_for(tlo, per_word), words_for(thi, per_word))
        }
        None => (tlo, thi),
    };
    if ihi > crate::template::text::MOST_WORDS {
        return Err(CliError::new(format!(
            "--random-input-len {}: at most {} words with the range",
            l.random_input_len,
            crate::template::text::MOST_WORDS
        )));
    }
    let (olo, ohi) = match l.output_len {
        Some(n) => (n, n),
        None => range(l.random_output_len),
    };
    if olo == 0 || ohi > i64::MAX as u64 {
        return Err(CliError::new(format!(
            "--random-output-len {}: give 1 to {} tokens (with the range ratio)",
            l.random_output_len,
            i64::MAX
        )));
    }
    let prompt = if ilo == ihi { format!("{{{{words {ilo} {ilo}}}}}") } else { format!("{{{{words {ilo} {ihi}}}}}") };
    let out = if olo == ohi { olo.to_string() } else { format!("{{{{rand {olo} {ohi}}}}}") };
    let span = |lo: u64, hi: u64| if lo == hi { lo.to_string() } else { format!("{lo} to {hi}") };
    let words = match sized {
        None => format!("{} words each (about a token a word)", span(ilo, ihi)),
        Some(s) if s.checked == s.words => format!(
            "{} tokens each ({} words; {} prompts of {} words measured {:.1} tokens on average, {} to {}, {})",
            span(tlo, thi),
            span(ilo, ihi),
            crate::llm::tokenizer::SAMPLES,
            s.checked,
            s.mean,
            s.min,
            s.max,
            counter.describe()
        ),
        Some(s) => format!(
            "{} tokens each ({} words; {} prompts of {} words measured {:.3} tokens a word: about {:.0}, {} to {}, \
             {})",
            span(tlo, thi),
            span(ilo, ihi),
            crate::llm::tokenizer::SAMPLES,
            s.checked,
            s.mean / s.words as f64,
            s.mean,
            s.min,
            s.max,
            counter.describe()
        ),
    };
    let note = format!("synthetic prompts, {words}, made per request; max_tokens {}", span(olo, ohi));
    Ok((prompt, out, note))
}
