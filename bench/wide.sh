#!/usr/bin/env bash
# The wide benchmark (run by hand, never by a test): hakaru beside wrk, h2load, oha and redis-benchmark with the
# server on some cores and each generator alone on others, rounds alternating: HTTP/1.1 keep-alive and close,
# HTTP/2 (16 x 32 streams), TLS, Redis GET, and the open loop's CPU per request at fixed rates (bench/wide.py says
# what each figure means). Runs from a clean clone: installs the peers (Debian's packages, oha from crates) and
# builds hakaru's release binary.
# Usage: bench/wide.sh SERVER_CORES GENERATOR_CORES [wide.py options ...]
#   e.g. bench/wide.sh 0 1 --seconds 5                 (a 2-core machine: nginx on CPU 0, generators on CPU 1)
#        bench/wide.sh 0-11 12-15 --rounds 3           (16 cores: the generator is the limit)
#        bench/wide.sh 0 1 --only rate --rates 20000,40000
# Results: the table on stdout, every run in target/wide/results.json.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
srv=$1 gen=$2
shift 2
need=()
for b in nginx:nginx-light wrk:wrk h2load:nghttp2-client redis-server:redis-server redis-benchmark:redis-tools \
         openssl:openssl python3:python3; do
  command -v "${b%%:*}" >/dev/null 2>&1 || [ -x "/usr/sbin/${b%%:*}" ] || need+=("${b#*:}")
done
. scripts/lib.sh
apt_install bench/wide.sh ${need[@]+"${need[@]}"}
peers=${HAKARU_PEERS_DIR:-$HOME/.cache/hakaru-peers}
if ! command -v oha >/dev/null 2>&1 && [ ! -x "$peers/bin/oha" ]; then
  echo "bench/wide.sh: installing oha from crates into $peers (a few minutes)" >&2
  cargo install oha --locked --root "$peers" >/dev/null 2>&1 || echo "bench/wide.sh: oha did not install: its rows are left out" >&2
fi
cargo build --release -q
dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
mkdir -p "$dir/wide"
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
PATH="$dir/release:$peers/bin:$PATH" exec python3 bench/wide.py "$dir/wide" --server-cores "$srv" --gen-cores "$gen" "$@"
