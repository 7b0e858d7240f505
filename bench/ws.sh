#!/usr/bin/env bash
# Benchmark (run by hand, not a test): hakaru's WebSocket exchange (-t 1, one message in flight per connection)
# beside a floor client written on tokio-tungstenite (bench/ws-echo/src/bin/floor.rs: the same closed loop with
# nothing else), against an echo server on tokio-tungstenite (bench/ws-echo/src/bin/echo.rs, one thread) pinned to
# CPU 0, each generator pinned to CPU 1, at 1, 100 and 10,000 connections. bench/pairs.sh runs the two in turn
# (A B A B ...) and gives the median wall and CPU seconds of each for the same message count, the peak RSS, and
# the ratios pair by pair: messages/s is N / wall, messages per generator CPU-second N / cpu. The 10,000 row's peak
# RSS is hakaru's at 10,000 open connections. No registry peer: Artillery (npm) did not install here (a dependency
# downloads a browser at install time) and its ws engine's flow sends without waiting for answers; k6 is no npm
# package. The floor is the peer: what a plain async client on the same runtime costs.
# Usage: bench/ws.sh [messages at 1 and 100 connections=200000] [at 10,000=300000] [rounds=3]
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-200000}; N_WIDE=${2:-300000}; ROUNDS=${3:-3}
# 10,000 connections: a descriptor for each in the generator and in the echo server (each process its own limit).
ulimit -n "$(ulimit -Hn)"
[ "$(ulimit -n)" -ge 10100 ] || { echo "bench/ws.sh: ulimit -n $(ulimit -n): 10,000 connections need 10,100" >&2; exit 2; }
cargo build --release -q
cargo build --release -q --manifest-path bench/ws-echo/Cargo.toml --target-dir target/ws-echo
bin=${CARGO_TARGET_DIR:-$PWD/target}/release/hakaru
tools=$PWD/target/ws-echo/release
tmp=$(mktemp -d)
taskset -c 0 "$tools/echo" 0 > "$tmp/port" &
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$tmp"' EXIT
for _ in $(seq 100); do grep -q '^port ' "$tmp/port" && break; sleep 0.1; done
port=$(awk '/^port /{ print $2 }' "$tmp/port")
URL=ws://127.0.0.1:$port/
echo "echo server on CPU 0 (pid $server, $URL); generators on CPU 1; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
for c in 1 100 10000; do
  n=$N
  [ "$c" -lt 10000 ] || n=$N_WIDE
  echo "== $c connections, $n messages: A = hakaru, B = floor (tokio-tungstenite)"
  bench/pairs.sh "$ROUNDS" 1 "$tools/floor $URL $c $n" \
    "$bin" run -q --no-history -t 1 -c "$c" -n "$n" --connect-timeout 60s --timeout 60s --message '{"n":1}' "$URL"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
