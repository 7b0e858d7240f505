#!/usr/bin/env bash
# Benchmark (run by hand, not a test): hakaru beside wrk, ab -k, h2load, hey (and oha when installed) against one
# nginx worker pinned to CPU 0, every generator pinned to CPU 1, in one run, via ../shared/bench/peers.sh.
# Then keep-alive off (hakaru vs wrk with "Connection: close" vs ab without -k) and RSS at 1000 connections.
# Usage: bench/peers.sh [seconds=8] [connections=64]
set -euo pipefail
cd "$(dirname "$0")/.."
D=${1:-8}; C=${2:-64}
peers=../shared/bench/peers.sh
[ -f "$peers" ] || { echo "bench/peers.sh: $peers not found (the shared/ folder beside the repo)" >&2; exit 2; }
cargo build --release -q
bin=$PWD/target/release/hakaru
URL=http://127.0.0.1:18080/

echo "== keep-alive, $C connections, ${D}s"
bash "$peers" "$D" "$C" "hakaru|$bin run -q -t1 -c {C} -d {D}s {URL}"

echo "== keep-alive off, $C connections, ${D}s"
row() { # name, command...
  local name=$1; shift
  sleep 2
  /usr/bin/time -f "%U %S" -o /tmp/bench-peers/$name.time taskset -c 1 "$@" > /tmp/bench-peers/$name.out 2>&1 || true
  local cpu rps
  cpu=$(awk '{print $1+$2}' /tmp/bench-peers/$name.time | tail -1)
  rps=$(grep -m1 -oE '(Requests/sec:|Requests per second:|throughput) +[0-9.]+' /tmp/bench-peers/$name.out | grep -oE '[0-9.]+$' || echo 0)
  awk -v n="$name" -v r="$rps" -v c="$cpu" -v d="$D" 'BEGIN{printf "%-14s %10.0f req/s  cpu %6.2fs  %10.0f req/cpu-s\n", n, r, c, (c>0? r*d/c : 0)}'
}
row wrk-close wrk -t1 -c"$C" -d"${D}s" -H "Connection: close" $URL
row ab-close ab -c "$C" -t "$D" -n 100000000 $URL
row hakaru-close "$bin" run -q -t1 -c "$C" -d "${D}s" --no-keepalive $URL

echo "== RSS at 1000 connections (keep-alive, 5s)"
for tool in wrk hakaru; do
  case $tool in
    wrk) cmd=(wrk -t1 -c1000 -d5s $URL);;
    hakaru) cmd=("$bin" run -q -t1 -c 1000 -d 5s $URL);;
  esac
  /usr/bin/time -f "%M" -o /tmp/bench-peers/$tool.rss taskset -c 1 "${cmd[@]}" >/tmp/bench-peers/$tool.rss.out 2>&1 || true
  printf "%-14s %8.1f MB\n" "$tool" "$(awk '{print $1/1024}' /tmp/bench-peers/$tool.rss | tail -1)"
done
