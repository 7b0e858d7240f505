#!/usr/bin/env bash
# Benchmark (run by hand, not a test): hakaru --http3 beside hakaru --http2 against one Caddy (Debian's caddy: HTTP/2
# over TCP and HTTP/3 over QUIC on the same port, a static 200 answer, no access log) pinned to CPU 0, every
# generator on CPU 1 with one thread, at -c 1 --streams 100, -c 4 --streams 16 and -c 64 --streams 1.
# bench/pairs.sh runs the two in turn (A B A B ...) and gives the median wall and CPU seconds of each for the same
# request count, and the ratio pair by pair: requests/s is N / wall, requests per generator CPU-second N / cpu.
# Then peak RSS at -c 100 --streams 100, HTTP/3 against HTTP/2. With an oha built with its http3 feature on the
# PATH (cargo install oha --features http3), hakaru --http3 beside oha's HTTP/3 (`--http3` or `--http-version 3`,
# with `-p`) too.
# Caddy is the limit here (one core, Go's QUIC): requests/s compares the protocols' round trips through it; the
# CPU-seconds column is what the generator spends. Installs caddy when missing.
# NO_OHA=1 leaves oha out (its HTTP/3 takes about 15 times hakaru's time for the same request count).
# Usage: [PROFILE=release] [NO_OHA=1] bench/h3.sh [requests=100000] [rounds=5]   (PROFILE=quick: a build without fat LTO,
# for a ratio of hakaru against itself when a release build takes too long)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-100000}; ROUNDS=${2:-5}
need=()
for b in caddy:caddy taskset:util-linux openssl:openssl; do
  command -v "${b%%:*}" >/dev/null || need+=("${b#*:}")
done
. scripts/lib.sh
apt_install bench/h3.sh ${need[@]+"${need[@]}"}
dir=$(mktemp -d)
port=18443
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost \
  -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" -keyout "$dir/key.pem" -out "$dir/cert.pem" 2>/dev/null
cat > "$dir/caddy.json" <<EOF
{"admin": {"disabled": true},
 "logging": {"logs": {"default": {"level": "ERROR"}}},
 "apps": {"http": {"http_port": 18080, "servers": {"s": {
    "listen": ["127.0.0.1:$port"], "protocols": ["h1", "h2", "h3"], "automatic_https": {"disable": true},
    "tls_connection_policies": [{"default_sni": "localhost"}],
    "routes": [{"handle": [{"handler": "static_response", "status_code": 200, "body": "hello world"}]}]}}},
  "tls": {"certificates": {"load_files": [{"certificate": "$dir/cert.pem", "key": "$dir/key.pem"}]}}}}
EOF
HOME=$dir XDG_DATA_HOME=$dir/data XDG_CONFIG_HOME=$dir/config taskset -c 0 caddy run --config "$dir/caddy.json" \
  > "$dir/caddy.log" 2>&1 &
caddy_pid=$!
trap 'kill $caddy_pid 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 100); do grep -q "serving initial configuration" "$dir/caddy.log" && break; sleep 0.1; done
PROFILE=${PROFILE:-release}
cargo build --profile "$PROFILE" -q
bin=${CARGO_TARGET_DIR:-$PWD/target}/$PROFILE/hakaru
URL=https://127.0.0.1:$port/
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
# oha's HTTP/3 flag: --http3 in its first releases with the feature, --http-version 3 since.
oha_h3=""
if [ "${NO_OHA:-}" != 1 ] && command -v oha >/dev/null; then
  if oha --help | grep -q -- '--http3'; then oha_h3="--http3"
  elif oha --help | grep -q 'Available values 0.9, 1.0, 1.1, 2, 3'; then oha_h3="--http-version 3"; fi
fi
for cm in "1 100" "4 16" "64 1"; do
  set -- $cm
  echo "== -c $1 --streams $2, $N requests: A = hakaru --http3, B = hakaru --http2"
  bench/pairs.sh "$ROUNDS" 1 "$bin run -q --no-history -k --http2 -t 1 -c $1 --streams $2 -n $N $URL" \
    "$bin" run -q --no-history -k --http3 -t 1 -c "$1" --streams "$2" -n "$N" "$URL"
  if [ -n "$oha_h3" ]; then
    echo "== -c $1 --streams $2, $N requests: A = hakaru --http3, B = oha $oha_h3 -p $2"
    bench/pairs.sh "$ROUNDS" 1 "oha --no-tui --insecure $oha_h3 -c $1 -p $2 -n $N $URL" \
      "$bin" run -q --no-history -k --http3 -t 1 -c "$1" --streams "$2" -n "$N" "$URL"
  fi
done
echo "== peak RSS: A = hakaru --http3 -c 100 --streams 100, B = hakaru --http2 -c 100 --streams 100"
bench/pairs.sh "$ROUNDS" 1 "$bin run -q --no-history -k --http2 -t 1 -c 100 --streams 100 -n $N $URL" \
  "$bin" run -q --no-history -k --http3 -t 1 -c 100 --streams 100 -n "$N" "$URL"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
