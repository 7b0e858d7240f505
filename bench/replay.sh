#!/usr/bin/env bash
# Benchmark (run by hand, not a test): `run --replay` holding a recorded schedule. A JSON-lines log of N records
# at R a second (evenly spaced, microsecond times) is replayed at its recorded pace to nginx (Debian's, returning a
# 5-byte body, its access log off), at --speed 1; then the same at --speed S. Prints, per run: records, the span
# recorded and taken, how late requests left (hakaru's lag histogram: p50, p99, p99.9, max, and how many more than
# 1 ms), the achieved rate, hakaru's CPU seconds and peak RSS (GNU time). nginx and hakaru share the machine's
# cores. GoReplay (Go, not on the registries this machine reaches) is not run beside it: its figures in
# docs/peers.md are its users' reports.
# Usage: bench/replay.sh [records=100000] [rate=20000] [speed=4] [connections=64]
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-100000}; RATE=${2:-20000}; SPEED=${3:-4}; C=${4:-64}
. scripts/lib.sh
install_missing bench/replay.sh /usr/bin/time:time nginx:nginx python3:python3
bin=${HAKARU_BIN:-}
if [ -z "$bin" ]; then
  cargo build --release -q
  bin=$(cargo_target_dir)/release/hakaru
fi
work=$(mktemp -d)
ngx=""
cleanup() { [ -n "$ngx" ] && kill "$ngx" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
ulimit -n 65536 2>/dev/null || true

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$work/ngx/logs"
cat > "$work/ngx/nginx.conf" <<EOF
worker_processes 1;
pid $work/ngx/nginx.pid;
error_log $work/ngx/logs/error.log;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $work/ngx;
  proxy_temp_path $work/ngx;
  fastcgi_temp_path $work/ngx;
  uwsgi_temp_path $work/ngx;
  scgi_temp_path $work/ngx;
  keepalive_requests 1000000;
  server { listen 127.0.0.1:$port; location / { default_type text/plain; return 200 "hello"; } }
}
EOF
nginx -p "$work/ngx" -c "$work/ngx/nginx.conf" -g 'daemon off;' &
ngx=$!
for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done

python3 - "$N" "$RATE" > "$work/log.jsonl" <<'PY'
import sys
n, rate = int(sys.argv[1]), float(sys.argv[2])
start = 1767225600.0
for i in range(n):
    print('{"time": %.6f, "method": "GET", "path": "/r/%d"}' % (start + i / rate, i % 1000))
PY

printf '%-8s %8s %9s %9s %9s %9s %9s %9s %8s %10s %8s %8s\n' speed records span_s taken_s lag_p50 lag_p99 lag_p99.9 lag_max "late>1ms" rate_per_s cpu_s rss_mb
for speed in 1 "$SPEED"; do
  /usr/bin/time -f '%e %U %S %M' -o "$work/time" \
    "$bin" run -q --replay "$work/log.jsonl" --speed "$speed" -c "$C" --json "$work/out.json" \
    "http://127.0.0.1:$port/" > /dev/null
  python3 - "$work" "$speed" "$N" "$RATE" <<'PY'
import base64, json, sys, zlib
d, speed, n, rate = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
wall, user, system, rss = open(d + "/time").read().split()[-4:]
doc = json.load(open(d + "/out.json"))
s = doc["steps"][0]
sched = s["schedule"]
lag = sched["lag"]
p = lag["percentiles"]
# Lag in milliseconds: how late each request left after its recorded instant (over --speed).
print("%-8s %8d %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %8d %10.0f %8.2f %8.1f" % (
    speed, s["requests"], (n - 1) / rate / speed, s["duration_s"], p["p50"] / 1000, p["p99"] / 1000,
    p["p99.9"] / 1000, sched["max_lag_us"] / 1000, sched["late"], sched["achieved_rate"],
    float(user) + float(system), int(rss) / 1024))
PY
done
