#!/usr/bin/env bash
# Benchmark (run by hand, not a test): hakaru --http2 beside h2load against one nginx worker pinned to CPU 0
# (bench/nginx-h2.conf, h2c), every generator on CPU 1 with one thread, at -c 1 -m 100, -c 4 -m 16 and
# -c 64 -m 1 (h2load's -m is hakaru's --streams). bench/pairs.sh runs the two in turn (A B A B ...) and gives the
# median wall and CPU seconds of each for the same request count, and the ratio pair by pair: requests/s is
# N / wall, requests per generator CPU-second N / cpu. Then peak RSS: hakaru at -c 100 --streams 100 (HTTP/2)
# against hakaru at -c 1000 (HTTP/1.1). With oha on the PATH (cargo install oha --locked), hakaru beside
# `oha --http2 -p` too. Installs h2load (nghttp2-client) and nginx when missing.
# Usage: bench/h2.sh [requests=300000] [rounds=5]
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-300000}; ROUNDS=${2:-5}
need=()
for b in h2load:nghttp2-client taskset:util-linux; do
  command -v "${b%%:*}" >/dev/null || need+=("${b#*:}")
done
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || need+=(nginx-light)
. scripts/lib.sh
apt_install bench/h2.sh ${need[@]+"${need[@]}"}
nginx=$(command -v nginx || echo /usr/sbin/nginx)
mkdir -p /tmp/bench-nginx-h2
if ! { [ -f /tmp/bench-nginx-h2/nginx.pid ] && kill -0 "$(cat /tmp/bench-nginx-h2/nginx.pid)" 2>/dev/null; }; then
  "$nginx" -c "$PWD/bench/nginx-h2.conf"
fi
cargo build --release -q
bin=$PWD/target/release/hakaru
URL=http://127.0.0.1:18082/
for cm in "1 100" "4 16" "64 1"; do
  set -- $cm
  echo "== -c $1 -m $2, $N requests: A = hakaru --http2, B = h2load"
  bench/pairs.sh $ROUNDS 1 "h2load -c $1 -m $2 -t 1 -n $N $URL" \
    "$bin" run -q --no-history --http2 -t 1 -c "$1" --streams "$2" -n "$N" "$URL"
  if command -v oha >/dev/null; then
    # oha's -p is its streams per connection; pinned to one CPU, its runtime has one worker thread.
    echo "== -c $1 -m $2, $N requests: A = hakaru --http2, B = oha --http2 -p $2"
    bench/pairs.sh $ROUNDS 1 "oha --no-tui --http2 -c $1 -p $2 -n $N $URL" \
      "$bin" run -q --no-history --http2 -t 1 -c "$1" --streams "$2" -n "$N" "$URL"
  fi
done
echo "== peak RSS: A = hakaru --http2 -c 100 --streams 100, B = hakaru (HTTP/1.1) -c 1000"
bench/pairs.sh $ROUNDS 1 "$bin run -q --no-history -t 1 -c 1000 -n $N http://127.0.0.1:18083/" \
  "$bin" run -q --no-history --http2 -t 1 -c 100 --streams 100 -n "$N" "$URL"
