//! What `-h` and `--help` say besides each flag's own text: the headings the flags are grouped under, and the
//! examples that end a command's help (for the measuring commands `-h` gives the three command lines and `--help`
//! says what each does; the others give the same three lines in both).
//! The common flags carry no heading: clap lists them first, under "Options".

/// The headings, in the words of the help; each command shows the ones its flags use, in the order of its fields.
pub mod heading {
    /// The steps of a sweep: client counts or rates.
    pub const STEPS: &str = "Steps";
    /// The search of a capacity run.
    pub const SEARCH: &str = "Search";
    /// What each request is and how it is sent.
    pub const REQUEST: &str = "Request";
    /// drnbench's way of addressing: hosts, a port and paths or a pattern file.
    pub const HOSTS: &str = "Hosts and patterns (drnbench)";
    /// kv's keys and values.
    pub const KEYS: &str = "Keys and values";
    /// kv's command templates.
    pub const COMMANDS: &str = "Commands instead of the mix";
    /// What kv may do to the data already on the server.
    pub const DATA: &str = "The server's data";
    /// Kyoto Tycoon's test patterns.
    pub const KYOTO: &str = "Workloads order and wicked (Kyoto Tycoon)";
    /// YCSB's core workloads.
    pub const YCSB: &str = "Workloads ycsb-a ... ycsb-f";
    /// kv's connections: timeouts and the longest line.
    pub const CONNECTION: &str = "Connection";
    /// The server's processes and probes, read while the load runs.
    pub const WATCH: &str = "Watching the server";
    /// How the load is offered, beyond the common flags.
    pub const LOAD: &str = "Load";
    /// Files written, progress, CI gates.
    pub const OUTPUT: &str = "Output";
    /// Several agents, one plan.
    pub const SCALE: &str = "Scale-out";
    /// Where the result is kept, and its labels.
    pub const HISTORY: &str = "History";
    /// Names whose values are never shown.
    pub const SECRETS: &str = "Secrets";
    /// `run --replay`: recorded traffic.
    pub const REPLAY: &str = "Replay";
    /// `hakaru llm`'s dataset and vLLM's names for the load.
    pub const LLM: &str = "LLM serving (vLLM's names)";
}

/// The end of `hakaru llm -h`.
pub const LLM_EXAMPLES: &str = "\
Examples:
  hakaru serve --listen 127.0.0.1:8080 &
  hakaru llm --model m --num-prompts 200 --max-concurrency 20 'http://127.0.0.1:8080/v1/chat/completions?first=50ms&gap=10ms'
  hakaru llm --model m --request-rate 5 --burstiness 0.5 --goodput ttft:200ms,tpot:50ms http://127.0.0.1:8000/v1/chat/completions
  hakaru llm --model m --dataset-name sharegpt --dataset-path ShareGPT_V3.json --num-prompts 500 http://127.0.0.1:8000/v1/chat/completions
  hakaru llm --model m --dataset-name jsonl --dataset-path prompts.jsonl --endpoint-type completions http://127.0.0.1:8000/v1/completions
";

/// The end of `hakaru run -h`.
pub const RUN_EXAMPLES: &str = "\
Examples:
  hakaru run -c 50 -d 30s http://127.0.0.1:8080/
  hakaru run --rate 2000 -d 1m --json result.json http://127.0.0.1:8080/
  hakaru run -n 10000 -c 8 -m POST -H 'Content-Type: application/json' -b '{\"q\":1}' http://127.0.0.1:8080/api

Every flag (scale-out, secrets, the history database), and what the examples do: hakaru run --help
Reference: docs/run.md in hakaru's repository";

/// The end of `hakaru run --help`.
pub const RUN_EXAMPLES_LONG: &str = "\
Examples:
  # 50 clients for 30 s, each sending its next request when its answer comes (a closed loop, as wrk and ab)
  hakaru run -c 50 -d 30s http://127.0.0.1:8080/

  # 2000 requests a second whatever the answers take (an open loop, as wrk2 and vegeta), the result kept as JSON
  hakaru run --rate 2000 -d 1m --json result.json http://127.0.0.1:8080/

  # 10,000 POST requests with a JSON body over 8 connections
  hakaru run -n 10000 -c 8 -m POST -H 'Content-Type: application/json' -b '{\"q\":1}' http://127.0.0.1:8080/api

Keep-alive is on by default (ab needs -k for it; hakaru's -k is curl's --insecure). drnbench's flag names are
accepted as aliases (--default-hosts, --request-patterns-file ...).
Reference: docs/run.md in hakaru's repository";

/// The end of `hakaru sweep -h`.
pub const SWEEP_EXAMPLES: &str = "\
Examples:
  hakaru sweep --clients 1,2,4,8,16,32 -d 10s http://127.0.0.1:8080/
  hakaru sweep --rates 1000,2000,4000,8000 -d 20s --json sweep.json http://127.0.0.1:8080/
  hakaru sweep --start-clients 10 --end-clients 50 --step 10 --hosts h1,h2 --patterns p.json -o d.csv

Every flag, and what the examples do: hakaru sweep --help
Reference: docs/sweep-capacity.md in hakaru's repository";

/// The end of `hakaru sweep --help`.
pub const SWEEP_EXAMPLES_LONG: &str = "\
Examples:
  # Six steps of 10 s from 1 to 32 clients, then the analysis: where throughput stops growing
  hakaru sweep --clients 1,2,4,8,16,32 -d 10s http://127.0.0.1:8080/

  # Four open-loop steps at fixed rates, the result document written after every step
  hakaru sweep --rates 1000,2000,4000,8000 -d 20s --json sweep.json http://127.0.0.1:8080/

  # drnbench-request-response's sweep: 10 to 50 clients over two hosts, requests from a pattern file,
  # drnbench's CSV written to d.csv
  hakaru sweep --start-clients 10 --end-clients 50 --step 10 --hosts h1,h2 --patterns p.json -o d.csv

drnbench's flag names are accepted as aliases (--start-n-clients, --default-hosts, --output-path ...).
Reference: docs/sweep-capacity.md in hakaru's repository";

/// The end of `hakaru capacity -h`.
pub const CAPACITY_EXAMPLES: &str = "\
Examples:
  hakaru capacity --slo 'p99<50ms' http://127.0.0.1:8080/
  hakaru capacity --slo 'p99<20ms,mean<5ms' --rate-start 1000 --rate-max 50000 -d 20s http://127.0.0.1:8080/
  hakaru capacity --slo 'p99.9<=200ms' --max-error-rate 0.1% --json capacity.json http://127.0.0.1:8080/

Every flag, and what the examples do: hakaru capacity --help
Reference: docs/sweep-capacity.md in hakaru's repository";

/// The end of `hakaru capacity --help`.
pub const CAPACITY_EXAMPLES_LONG: &str = "\
Examples:
  # The highest rate whose p99 stays under 50 ms: steps of 10 s from 100 requests a second, doubling, then bisecting
  hakaru capacity --slo 'p99<50ms' http://127.0.0.1:8080/

  # Two objectives at once, a search between 1000 and 50,000 requests a second, steps of 20 s
  hakaru capacity --slo 'p99<20ms,mean<5ms' --rate-start 1000 --rate-max 50000 -d 20s http://127.0.0.1:8080/

  # A step with more than 0.1 % failed requests fails the objective too; every step kept as JSON
  hakaru capacity --slo 'p99.9<=200ms' --max-error-rate 0.1% --json capacity.json http://127.0.0.1:8080/

Reference: docs/sweep-capacity.md in hakaru's repository";

/// The end of `hakaru kv -h`.
pub const KV_EXAMPLES: &str = "\
Examples:
  hakaru kv -c 50 -d 30s redis://127.0.0.1:6379
  hakaru kv --mix get:50,set:50 --keys 100000 --key-pattern Z --pipeline 16 -d 30s redis://127.0.0.1:6379
  hakaru kv --workload ycsb-b --records 100000 -n 100000 memcache://127.0.0.1:11211

Every flag (order and wicked, YCSB, scale-out, secrets), and what the examples do: hakaru kv --help
Reference: docs/kv.md in hakaru's repository";

/// The end of `hakaru kv --help`.
pub const KV_EXAMPLES_LONG: &str = "\
Examples:
  # 50 clients for 30 s, 90 % GET and 10 % SET over 1000 keys (the default mix)
  hakaru kv -c 50 -d 30s redis://127.0.0.1:6379

  # Half reads, half writes, 100,000 keys drawn zipfian, 16 requests written together on each connection
  hakaru kv --mix get:50,set:50 --keys 100000 --key-pattern Z --pipeline 16 -d 30s redis://127.0.0.1:6379

  # YCSB's workload B (95 % reads) on memcached: 100,000 records loaded, then 100,000 operations
  hakaru kv --workload ycsb-b --records 100000 -n 100000 memcache://127.0.0.1:11211

Nothing on the server is deleted unless --flush is given.
Reference: docs/kv.md in hakaru's repository";

/// The end of `hakaru compare`'s help.
pub const COMPARE_EXAMPLES: &str = "\
Examples:
  hakaru compare before.json after.json
  hakaru compare a1.json,a2.json,a3.json b1.json,b2.json,b3.json --fail-if 'p99 > 1.10 * baseline'
  hakaru compare label=main label=branch --markdown -

Reference: docs/compare-report-history.md in hakaru's repository";

/// The end of `hakaru study`'s help.
pub const STUDY_EXAMPLES: &str = "\
Examples:
  hakaru study examples/lua-vs-luajit-builds.toml --dry-run
  hakaru study examples/lua-vs-luajit-builds.toml -o study-lua
  hakaru study examples/lua-vs-luajit-builds.toml --resume study-lua

Reference: docs/study.md in hakaru's repository";

/// The end of `hakaru serve`'s help.
pub const SERVE_EXAMPLES: &str = "\
Examples:
  hakaru serve
  hakaru serve --listen 127.0.0.1:0 --workers 4
  hakaru serve --workers 2 --miss-cost 10ms --cache-size 1000

Reference: docs/patterns-serve-demo.md in hakaru's repository";

/// The end of `hakaru demo`'s help.
pub const DEMO_EXAMPLES: &str = "\
Examples:
  hakaru demo
  hakaru demo -d 1s
  hakaru demo --json demo.json

Reference: docs/patterns-serve-demo.md in hakaru's repository";

/// The end of `hakaru history`'s help.
pub const HISTORY_EXAMPLES: &str = "\
Examples:
  hakaru history
  hakaru history --label branch=main --since 7d --limit 5
  hakaru history --command sweep --target 127.0.0.1

Reference: docs/compare-report-history.md in hakaru's repository";

/// An example command line split as a shell splits the simple ones examples use: words between spaces, and
/// 'single-quoted' words kept whole (no double quotes, no escapes). The help's examples and the README's table
/// are checked by parsing these words. None for a quote left open.
pub fn example_words(line: &str) -> Option<Vec<String>> {
    let (mut words, mut word, mut quoted, mut started) = (Vec::new(), String::new(), false, false);
    for c in line.chars() {
        match c {
            '\'' => (quoted, started) = (!quoted, true),
            ' ' if !quoted => {
                if started {
                    words.push(std::mem::take(&mut word));
                }
                started = false;
            }
            c => (word, started) = (word + &c.to_string(), true),
        }
    }
    if started {
        words.push(word);
    }
    (!quoted).then_some(words)
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use super::super::args::Cli;
    use super::*;

    /// The command lines of an examples text, split as a shell would split these simple ones.
    fn command_lines(text: &str) -> Vec<Vec<String>> {
        text.lines()
            .map(str::trim)
            .filter(|l| l.starts_with("hakaru "))
            .map(|l| example_words(l).unwrap_or_else(|| panic!("an unclosed quote in {l}")))
            .collect()
    }

    #[test]
    fn every_example_parses_and_each_text_has_three() {
        for (short, long) in [
            (RUN_EXAMPLES, RUN_EXAMPLES_LONG),
            (SWEEP_EXAMPLES, SWEEP_EXAMPLES_LONG),
            (CAPACITY_EXAMPLES, CAPACITY_EXAMPLES_LONG),
            (KV_EXAMPLES, KV_EXAMPLES_LONG),
            (COMPARE_EXAMPLES, COMPARE_EXAMPLES),
            (STUDY_EXAMPLES, STUDY_EXAMPLES),
            (SERVE_EXAMPLES, SERVE_EXAMPLES),
            (DEMO_EXAMPLES, DEMO_EXAMPLES),
            (HISTORY_EXAMPLES, HISTORY_EXAMPLES),
        ] {
            let (a, b) = (command_lines(short), command_lines(long));
            assert_eq!(a.len(), 3, "{short}");
            assert_eq!(a, b, "-h and --help give the same examples");
            for words in a {
                if let Err(e) = Cli::try_parse_from(&words) {
                    panic!("{words:?}: {e}");
                }
            }
        }
    }

    #[test]
    fn the_splitter_keeps_quoted_spaces() {
        assert_eq!(
            command_lines("  hakaru run -H 'A: b' -b '{}' x")[0],
            ["hakaru", "run", "-H", "A: b", "-b", "{}", "x"]
        );
    }

    #[test]
    fn the_commands_end_their_help_with_their_examples() {
        let cli = Cli::command();
        for (name, short) in
            [("run", RUN_EXAMPLES), ("sweep", SWEEP_EXAMPLES), ("capacity", CAPACITY_EXAMPLES), ("kv", KV_EXAMPLES)]
        {
            let sub = cli.find_subcommand(name).unwrap();
            assert_eq!(sub.get_after_help().map(|s| s.to_string()), Some(short.to_string()), "{name}");
            assert!(sub.get_after_long_help().is_some(), "{name}");
        }
        for (name, text) in [
            ("compare", COMPARE_EXAMPLES),
            ("study", STUDY_EXAMPLES),
            ("serve", SERVE_EXAMPLES),
            ("demo", DEMO_EXAMPLES),
            ("history", HISTORY_EXAMPLES),
        ] {
            let sub = cli.find_subcommand(name).unwrap();
            assert_eq!(sub.get_after_help().map(|s| s.to_string()), Some(text.to_string()), "{name}");
        }
    }
}
