#!/usr/bin/env bash
# Benchmark (run by hand, not a test): does the live dashboard cost requests/s? hakaru run against nginx (one worker
# pinned to CPU 0, bench/nginx-hello.conf), hakaru pinned to CPU 1 with one load thread and 50 connections, each run
# in a 120x40 terminal (tmux) so the dashboard draws: with the dashboard (A) and with the progress line (--no-tui,
# B), in rounds A B A B ... so drift hits both alike. Prints each run's requests/s (the result document's), the
# median of each and the median of the per-round ratios A/B.
# Installs nginx-light and tmux when missing. Usage: bench/dashboard.sh [rounds=7] [duration=5s]
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-7}; D=${2:-5s}
need=()
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need+=(nginx-light)
command -v tmux >/dev/null 2>&1 || need+=(tmux)
command -v taskset >/dev/null 2>&1 || need+=(util-linux)
. scripts/lib.sh
apt_install bench/dashboard.sh ${need[@]+"${need[@]}"}
cargo build --release -q
bin=$PWD/target/release/hakaru
out=/tmp/bench-dashboard; mkdir -p $out /tmp/bench-nginx
nginx=$(command -v nginx || echo /usr/sbin/nginx)
taskset -c 0 "$nginx" -p /tmp/bench-nginx -c "$PWD/bench/nginx-hello.conf"
sock=bench-dashboard-$$
trap 'kill "$(cat /tmp/bench-nginx/nginx.pid)" 2>/dev/null || true; tmux -L $sock kill-server 2>/dev/null || true' EXIT
sleep 1

# One run in a 120x40 terminal; prints its requests/s from the result document.
run() { # name, extra flags...
  local name=$1; shift
  local json=$out/$name.json
  rm -f "$json"
  tmux -L $sock -f /dev/null new-session -d -x 120 -y 40 \
    "HAKARU_DB=$out/h.db taskset -c 1 $bin run http://127.0.0.1:18080/ -t 1 -c 50 -d $D --no-history --json $json $*; tmux -L $sock wait-for -S done"
  tmux -L $sock wait-for done
  python3 -c "import json,sys; print(round(json.load(open(sys.argv[1]))['steps'][0]['throughput']['requests_per_s']))" "$json"
}

a=(); b=(); ratios=()
for r in $(seq 1 "$ROUNDS"); do
  x=$(run dashboard); y=$(run line --no-tui)
  a+=("$x"); b+=("$y")
  ratios+=("$(python3 -c "print($x / $y)")")
  echo "round $r: dashboard $x req/s, progress line $y req/s"
done
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo "median: dashboard $(median "${a[@]}") req/s, progress line $(median "${b[@]}") req/s, ratio of rounds $(median "${ratios[@]}")"
