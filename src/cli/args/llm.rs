//! `hakaru llm`'s own flags: the dataset of prompts, the body's shape, and vLLM's names for the load (`run`'s flags
//! are all taken beside them).

use super::*;

/// `hakaru llm`: `run` with its body made from a dataset of prompts for an OpenAI-compatible endpoint.
#[derive(Args, Debug, Clone)]
pub struct LlmArgs {
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub llm: LlmFlags,
}

/// Where prompts come from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DatasetArg {
    /// Prompts of --random-input-len words drawn from a vocabulary (about a token each).
    #[default]
    Random,
    /// A JSON-lines file: {"prompt": "...", "output_tokens": 128} per line (also "text"; "max_tokens").
    #[value(alias = "custom")]
    Jsonl,
    /// A ShareGPT JSON file: each conversation's first turn the prompt, its reply's length the answer's.
    Sharegpt,
    /// An LLM trace (aiperf's fixed schedule): {"timestamp": MS, "input_length": N, "output_length": M} a line,
    /// each request sent at its recorded time (over --speed).
    #[value(alias = "mooncake_trace")]
    Trace,
}

/// The OpenAI API an endpoint serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EndpointTypeArg {
    /// /v1/chat/completions: {"messages": [{"role": "user", "content": PROMPT}]}.
    Chat,
    /// /v1/completions: {"prompt": PROMPT}.
    Completions,
}

#[derive(Args, Debug, Clone, Serialize)]
pub struct LlmFlags {
    /// The model named in each request (vLLM's --served-model-name; hakaru serve takes any).
    #[arg(long, value_name = "NAME", help_heading = heading::LLM)]
    pub model: Option<String>,
    /// The request's shape (default: completions when the URL's path ends in /completions but not
    /// /chat/completions, else chat).
    #[arg(long, value_enum, value_name = "TYPE", help_heading = heading::LLM)]
    pub endpoint_type: Option<EndpointTypeArg>,
    /// Where prompts come from.
    #[arg(long, value_enum, default_value = "random", value_name = "NAME", help_heading = heading::LLM)]
    pub dataset_name: DatasetArg,
    /// The dataset file (jsonl, sharegpt).
    #[arg(long, value_name = "FILE", help_heading = heading::LLM)]
    pub dataset_path: Option<PathBuf>,
    /// Requests in all, each a prompt from the dataset (cycled when it has fewer); vLLM's default. -d runs for a time
    /// instead.
    #[arg(long, value_name = "N", default_value_t = 1000, allow_negative_numbers = true, value_parser = count::<u64>, help_heading = heading::LLM)]
    pub num_prompts: u64,
    /// Requests a second (an open loop, --rate's value in vLLM's name; --burstiness shapes the gaps); inf or
    /// absent: a closed loop of --max-concurrency clients.
    #[arg(long, value_name = "PER_SECOND", help_heading = heading::LLM)]
    pub request_rate: Option<String>,
    /// The most requests in flight (the connections: -c's value in vLLM's name).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = count::<usize>, help_heading = heading::LLM)]
    pub max_concurrency: Option<usize>,
    /// random: the prompt's length in words (about a token each; in tokens with --tokenizer).
    #[arg(long, value_name = "N", default_value_t = 1024, allow_negative_numbers = true, value_parser = count::<u64>, help_heading = heading::LLM)]
    pub random_input_len: u64,
    /// random: the tokens asked for in each answer (max_tokens).
    #[arg(long, value_name = "N", default_value_t = 128, allow_negative_numbers = true, value_parser = count::<u64>, help_heading = heading::LLM)]
    pub random_output_len: u64,
    /// random: lengths drawn from [len x (1 - r), len x (1 + r)], r from 0 (all equal) to below 1.
    #[arg(long, value_name = "R", default_value_t = 0.0, help_heading = heading::LLM)]
    pub random_range_ratio: f64,
    /// Every answer's max_tokens (jsonl rows without one take 256, vLLM's --custom-output-len; sharegpt takes the
    /// reply's length).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = count::<u64>, help_heading = heading::LLM)]
    pub output_len: Option<u64>,
    /// The model's HuggingFace tokenizer.json (read offline): synthetic prompts and trace inputs sized to the
    /// tokens asked, ShareGPT lengths counted exactly (without: about a token a word, 4 characters a token).
    #[arg(long, value_name = "FILE", help_heading = heading::LLM)]
    pub tokenizer: Option<PathBuf>,
    /// Ask the server to ignore the end-of-sequence token ("ignore_eos": true, vLLM's and SGLang's), so each
    /// answer is as long as asked.
    #[arg(long, help_heading = heading::LLM)]
    pub ignore_eos: bool,
    /// Find the highest request rate that meets these objectives (`capacity`'s search, -d a step): 'ttft p99 <
    /// 200ms, tpot p99 < 40ms', 'goodput >= 99%'; --request-rate is the first rate tried (1 by default).
    #[arg(long, value_name = "OBJECTIVES", help_heading = heading::LLM)]
    pub slo: Option<String>,
    /// With --slo: the highest rate tried.
    #[arg(long, value_name = "R", default_value_t = 10_000.0, help_heading = heading::LLM, hide_short_help = true)]
    pub rate_max: f64,
    /// The figures whose mean, median and percentiles the summary prints, vLLM's names: ttft, tpot, itl, e2el
    /// (default with --metric-percentiles: ttft,tpot,itl).
    #[arg(long, value_name = "LIST", help_heading = heading::LLM, hide_short_help = true)]
    pub percentile_metrics: Option<String>,
    /// The percentiles of --percentile-metrics' figures printed: 25,50,90,99 (default with --percentile-metrics:
    /// 99, vLLM's).
    #[arg(long, value_name = "LIST", help_heading = heading::LLM, hide_short_help = true)]
    pub metric_percentiles: Option<String>,
    /// Ask for whole answers ("stream": false): each answer's time and its tokens from its usage; its time to first
    /// token is then the whole answer's (time per output token near 0, as vLLM's non-streaming backends give).
    #[arg(long, help_heading = heading::LLM, hide_short_help = true)]
    pub no_stream: bool,
}
