#!/usr/bin/env bash
# Benchmark (run by hand, not a test): the same plan against one nginx worker (bench/nginx-hello.conf, pinned to
# CPU 0) run by one hakaru process and by three local agents merged (--agents 3), rounds alternating.
# Closed loop by default; with a rate, open loop at that total rate (split by the agents' segments): the only
# fair "same total load", as three closed-loop agents on one core offer the server a different load than one.
# Prints each round's requests, p50 and p99 from both, then how far the merged p99 is from the single process's,
# in buckets of the histogram's own resolution (3 significant digits: below 2048 us a bucket is 1 us, above it
# 2^(k-10) us for values in [2^k, 2^(k+1))), beside how far the single process's p99 moves from one round to the
# next: the run-to-run noise any comparison of two runs carries.
# Usage: bench/scale-out.sh [requests=60000] [connections=6] [rounds=5] [rate per second, open loop]
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-60000}; C=${2:-6}; ROUNDS=${3:-5}; RATE=${4:-}
. scripts/lib.sh
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || apt_install bench/scale-out.sh nginx-light
nginx=$(command -v nginx || echo /usr/sbin/nginx)
mkdir -p /tmp/bench-nginx /tmp/bench-scale
if ! { [ -f /tmp/bench-nginx/nginx.pid ] && kill -0 "$(cat /tmp/bench-nginx/nginx.pid)" 2>/dev/null; }; then
  "$nginx" -c "$PWD/bench/nginx-hello.conf"
fi
cargo build --release -q
bin=$PWD/target/release/hakaru
# URL=... bench/scale-out.sh ...: another target (e.g. hakaru serve with ?delay=, whose latency is set).
URL=${URL:-http://127.0.0.1:18080/}
load=(-c "$C" -n "$N")
[ -n "$RATE" ] && load+=(--rate "$RATE")
out=/tmp/bench-scale; : > $out/rounds.txt
p() { python3 -c "import json,sys; s=json.load(open(sys.argv[1]))['steps'][0]; print(s['requests'], s['latency']['percentiles']['p50'], s['latency']['percentiles']['p99'])" "$1"; }
for r in $(seq 1 "$ROUNDS"); do
  taskset -c 1 "$bin" run -q --no-history "${load[@]}" --json $out/one.json $URL > /dev/null
  taskset -c 1 "$bin" run -q --no-history "${load[@]}" --agents 3 --json $out/three.json $URL > /dev/null
  read -r n1 a1 b1 < <(p $out/one.json)
  read -r n3 a3 b3 < <(p $out/three.json)
  echo "$r $n1 $a1 $b1 $n3 $a3 $b3" >> $out/rounds.txt
  printf 'round %d: one process %d requests p50 %dus p99 %dus | 3 agents merged %d requests p50 %dus p99 %dus\n' \
    "$r" "$n1" "$a1" "$b1" "$n3" "$a3" "$b3"
done
python3 - $out/rounds.txt <<'PY'
import sys, statistics
rows = [list(map(int, l.split())) for l in open(sys.argv[1]) if l.strip()]
def bucket(v):  # width of an HdrHistogram bucket at 3 significant digits, in us
    return 1 if v < 2048 else 2 ** (v.bit_length() - 1 - 10)
def buckets(a, b):
    return abs(a - b) / bucket(max(a, b))
merged = [buckets(r[3], r[6]) for r in rows]
noise = [buckets(rows[i][3], rows[i + 1][3]) for i in range(len(rows) - 1)]
print("merged p99 vs the same round's single process: median %.1f buckets (each: %s)"
      % (statistics.median(merged), ", ".join("%.0f" % m for m in merged)))
if noise:
    print("single process's p99, one round to the next:   median %.1f buckets (each: %s)"
          % (statistics.median(noise), ", ".join("%.0f" % m for m in noise)))
print("requests equal in every round:", all(r[1] == r[4] for r in rows))
PY
