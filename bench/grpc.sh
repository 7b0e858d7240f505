#!/usr/bin/env bash
# Benchmark (run by hand, not a test): hakaru's unary gRPC call beside h2load sending the same bytes, against a
# tonic server (bench/grpc-server, one thread) pinned to CPU 0, every generator on CPU 1 with one thread, at
# -c 1 -m 100, -c 4 -m 16 and -c 64 -m 1 (h2load's -m is hakaru's --streams). h2load posts the framed message hakaru
# sends (body.bin: helloworld.HelloRequest {name: "x"}, its 5-byte prefix first) with gRPC's headers and the
# grpc-timeout hakaru sends (so the server does the same work for both: a deadline timer a call). bench/pairs.sh
# runs the two in turn (A B A B ...): calls/s is N / wall, calls per generator CPU-second N / cpu, ratios pair by
# pair. Before the rounds, one run of each checks that every call succeeded (hakaru: grpc-status 0; h2load: HTTP
# 200, as it cannot read trailers). Installs h2load (nghttp2-client) when missing; builds the server (crates.io).
# Usage: bench/grpc.sh [calls=200000] [rounds=5]
#   HAKARU=PATH: measure that hakaru binary (a release build) instead of building one;
#   GRPC_SERVER_TARGET=DIR: where the server is built (bench/grpc-server/target unless given).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-200000}; ROUNDS=${2:-5}
. scripts/lib.sh
install_missing bench/grpc.sh h2load:nghttp2-client taskset:util-linux /usr/bin/time:time python3:python3
bin=$(hakaru_release)
server_target=${GRPC_SERVER_TARGET:-$PWD/bench/grpc-server/target}
(cd bench/grpc-server && CARGO_TARGET_DIR=$server_target cargo build --release -q)
PORT=${PORT:-50061}
taskset -c 0 "$server_target/release/bench-grpc-server" "$PORT" 2>/dev/null &
server=$!
work=$(mktemp -d)
trap 'kill $server 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break; sleep 0.1; done
# HelloRequest {name: "x"}: field 1, length 1, "x"; after the uncompressed flag and the length 3.
printf '\x00\x00\x00\x00\x03\x0a\x01x' > "$work/body.bin"
proto=bench/grpc-server/hello.proto
call=(--call helloworld.Greeter/SayHello --proto "$proto" -b '{"name":"x"}')
url=http://127.0.0.1:$PORT/helloworld.Greeter/SayHello
h2load_args=(-d "$work/body.bin" -H 'content-type: application/grpc' -H 'te: trailers' -H 'grpc-timeout: 5000m')
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
for cm in "1 100" "4 16" "64 1"; do
  set -- $cm
  hakaru=("$bin" run -q --no-history --no-monitor -t 1 -c "$1" --streams "$2" -n "$N" "grpc://127.0.0.1:$PORT" "${call[@]}")
  # Every call a success, once, before the rounds: hakaru's exact count, h2load's 2xx count.
  "${hakaru[@]}" --json "$work/check.json" >/dev/null
  ok=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["steps"][0]["ok"])' "$work/check.json")
  [ "$ok" = "$N" ] || { echo "bench/grpc.sh: hakaru -c $1 -m $2: $ok of $N calls succeeded" >&2; exit 1; }
  h2=$(taskset -c 1 h2load "${h2load_args[@]}" -c "$1" -m "$2" -t 1 -n "$N" "$url")
  echo "$h2" | grep -q "status codes: $N 2xx" || { echo "bench/grpc.sh: h2load -c $1 -m $2: $h2" >&2; exit 1; }
  echo "== -c $1 -m $2, $N calls: A = hakaru, B = h2load"
  bench/pairs.sh "$ROUNDS" 1 "h2load $(printf '%q ' "${h2load_args[@]}") -c $1 -m $2 -t 1 -n $N $url" "${hakaru[@]}"
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
