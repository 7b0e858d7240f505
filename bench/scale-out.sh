#!/usr/bin/env bash
# Benchmark (run by hand, not a test): the same closed-loop plan against one nginx worker (bench/nginx-hello.conf,
# pinned to CPU 0) run by one hakaru process and by three local agents merged (--agents 3), rounds alternating.
# Prints each round's requests, p50 and p99 from both, and how far the merged p99 is from the single process's,
# in the histogram's own resolution (3 significant digits: a bucket is 0.1 % of the value).
# Usage: bench/scale-out.sh [requests=60000] [connections=6] [rounds=5]
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-60000}; C=${2:-6}; ROUNDS=${3:-5}
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || {
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends nginx-light >/dev/null
}
nginx=$(command -v nginx || echo /usr/sbin/nginx)
mkdir -p /tmp/bench-nginx /tmp/bench-scale
if ! { [ -f /tmp/bench-nginx/nginx.pid ] && kill -0 "$(cat /tmp/bench-nginx/nginx.pid)" 2>/dev/null; }; then
  "$nginx" -c "$PWD/bench/nginx-hello.conf"
fi
cargo build --release -q
bin=$PWD/target/release/hakaru
URL=http://127.0.0.1:18080/
p() { python3 -c "import json,sys; s=json.load(open(sys.argv[1]))['steps'][0]; print(s['requests'], s['latency']['percentiles']['p50'], s['latency']['percentiles']['p99'])" "$1"; }
for r in $(seq 1 "$ROUNDS"); do
  taskset -c 1 "$bin" run -q --no-history -c "$C" -n "$N" --json /tmp/bench-scale/one.json $URL > /dev/null
  taskset -c 1 "$bin" run -q --no-history -c "$C" -n "$N" --agents 3 --json /tmp/bench-scale/three.json $URL > /dev/null
  read -r n1 a1 b1 < <(p /tmp/bench-scale/one.json)
  read -r n3 a3 b3 < <(p /tmp/bench-scale/three.json)
  awk -v r="$r" -v n1="$n1" -v n3="$n3" -v a1="$a1" -v a3="$a3" -v b1="$b1" -v b3="$b3" 'BEGIN {
    printf "round %d: one process %d requests p50 %dus p99 %dus | 3 agents merged %d requests p50 %dus p99 %dus | p99 ratio %.3f (%+.1f buckets)\n",
      r, n1, a1, b1, n3, a3, b3, b3 / b1, (b3 - b1) / (b1 * 0.001) }'
done
