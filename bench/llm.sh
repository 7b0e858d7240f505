#!/usr/bin/env bash
# Benchmark (run by hand, not a test): `hakaru llm` beside aiperf (PyPI, NVIDIA's successor of GenAI-Perf) against
# one OpenAI-style server whose delays are known: `hakaru serve`'s /v1/chat/completions (a Rust server: Python's
# aiohttp cannot keep 1,000 streams on time on 2 cores), 50 ms to the first token, then one every 10 ms, 20 tokens
# an answer (max_tokens 20). Same server, same shape of prompts (100 words or tokens), the tools in turn (hakaru,
# aiperf, hakaru, aiperf ...), at each number of concurrent streams. Prints each run's time to first token p50/p99,
# inter-token latency p50 and time per output token p50 beside the truth (50, 10 and 10 ms), answers a second, CPU
# seconds and peak RSS (GNU time, the tool's whole process tree's largest process for RSS, every process's CPU).
# Nothing is pinned: the server and the tool share the machine's cores, as they would on one host.
# aiperf runs offline with a tokenizer made here (the `tokenizers` package trains a small BPE, saved as
# transformers' PreTrainedTokenizerFast) and --use-server-token-count, so it counts tokens as hakaru does (from
# the server's usage); its inter_token_latency is per answer (vLLM's TPOT), its inter_chunk_latency every gap (ITL).
# Usage: bench/llm.sh [streams="100 1000"] [rounds=2] [requests a stream=10]
set -euo pipefail
cd "$(dirname "$0")/.."
STREAMS=${1:-"100 1000"}; ROUNDS=${2:-2}; PER=${3:-10}
. scripts/lib.sh
install_missing bench/llm.sh /usr/bin/time:time python3:python3
python3 -c 'import ensurepip' 2>/dev/null || apt_install bench/llm.sh python3-venv
VENV=${AIPERF_VENV:-$HOME/.cache/hakaru-bench/aiperf-venv}
if [ ! -x "$VENV/bin/aiperf" ]; then
  echo "bench/llm.sh: installing aiperf into $VENV" >&2
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q aiperf tokenizers
fi
cargo build --release -q
bin=$(cargo_target_dir)/release/hakaru
work=$(mktemp -d)
srv=""
cleanup() { [ -n "$srv" ] && kill "$srv" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
# 1,000 streams are 1,000 sockets on each side.
ulimit -n 65536 2>/dev/null || ulimit -n 8192 2>/dev/null || true

"$VENV/bin/python" - "$work/tok" 2>/dev/null <<'PY'
import sys
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast
words = ("the of and to in is that for it as was with be by on not this are or from at which but have an they you "
         "were one all we can has there been if more when will would who so no time people year day way world life "
         "hand part place case week work point home water room book word side kind head house tok").split()
tok = Tokenizer(models.BPE(unk_token="[UNK]"))
tok.pre_tokenizer = pre_tokenizers.Whitespace()
tok.train_from_iterator([" ".join(words)] * 50, trainers.BpeTrainer(vocab_size=300, special_tokens=["[UNK]", "<s>", "</s>"]))
PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", bos_token="<s>", eos_token="</s>").save_pretrained(sys.argv[1])
PY

"$bin" serve --listen 127.0.0.1:0 > "$work/serve.out" &
srv=$!
for _ in $(seq 100); do grep -q 'listening on' "$work/serve.out" 2>/dev/null && break; sleep 0.1; done
base=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$work/serve.out" | head -n 1)
[ -n "$base" ] || { echo "bench/llm.sh: hakaru serve did not start" >&2; exit 1; }

# figures TOOL STREAMS ROUND DIR: one row of the table from a run's files.
figures() {
  python3 - "$@" <<'PY'
import json, glob, sys
tool, streams, rnd, d = sys.argv[1:5]
wall, user, system, rss = open(d + "/time").read().split()[-4:]
if tool == "hakaru":
    doc = json.load(open(d + "/result.json")); s = doc["steps"][0]; e = s["events"]
    p = lambda x, q: x["percentiles"][q] / 1000
    row = (p(e["first_event"], "p50"), p(e["first_event"], "p99"), p(e["gaps"], "p50"), p(e["tokens"]["tpot"], "p50"),
           s["ok"], s["ok"] / s["duration_s"])
else:
    doc = json.load(open(glob.glob(d + "/**/profile_export_aiperf.json", recursive=True)[0]))
    t, itl, tpot = doc["time_to_first_token"], doc["inter_chunk_latency"], doc["inter_token_latency"]
    ok = doc["request_count"]["avg"] - (doc.get("error_request_count") or {}).get("avg", 0)
    row = (t["p50"], t["p99"], itl["p50"], tpot["p50"], ok, doc["request_throughput"]["avg"])
cpu = float(user) + float(system)
print(f"{tool:7} {streams:>7} {rnd:>5} {row[0]:9.1f} {row[1]:9.1f} {row[2]:8.2f} {row[3]:8.2f} {int(row[4]):7d} "
      f"{row[5]:9.1f} {cpu:8.2f} {cpu / max(row[4], 1) * 1e6:9.0f} {int(rss) / 1024:8.1f}")
PY
}

echo "truth: TTFT 50 ms, ITL 10 ms, TPOT 10 ms; $PER requests a stream; server: $base (hakaru serve, 2 threads)"
printf '%-7s %7s %5s %9s %9s %8s %8s %7s %9s %8s %9s %8s\n' tool streams round 'ttft p50' 'ttft p99' 'itl p50' \
  'tpot p50' answers 'answers/s' 'cpu s' 'cpu us/a' 'rss MiB'
for c in $STREAMS; do
  n=$((c * PER))
  for r in $(seq "$ROUNDS"); do
    d="$work/hakaru-$c-$r"; mkdir -p "$d"
    /usr/bin/time -f '%e %U %S %M' -o "$d/time" "$bin" llm -q --no-history --model m --num-prompts "$n" \
      --max-concurrency "$c" --random-input-len 100 --random-output-len 20 --timeout 60s --json "$d/result.json" \
      "$base/v1/chat/completions" > "$d/out" 2>&1 || echo "bench/llm.sh: hakaru exited $? ($d/out)" >&2
    figures hakaru "$c" "$r" "$d" || true
    d="$work/aiperf-$c-$r"; mkdir -p "$d"
    /usr/bin/time -f '%e %U %S %M' -o "$d/time" "$VENV/bin/aiperf" profile --model m --url "$base" \
      --endpoint-type chat --streaming --concurrency "$c" --request-count "$n" --tokenizer "$work/tok" \
      --synthetic-input-tokens-mean 100 --synthetic-input-tokens-stddev 0 --output-tokens-mean 20 \
      --output-tokens-stddev 0 --extra-inputs max_tokens:20 --use-server-token-count --artifact-dir "$d/art" \
      --ui-type none > "$d/out" 2>&1 || echo "bench/llm.sh: aiperf exited $? ($d/out)" >&2
    figures aiperf "$c" "$r" "$d" || echo "aiperf  $(printf '%7s %5s' "$c" "$r") no result (see its output)"
  done
done
