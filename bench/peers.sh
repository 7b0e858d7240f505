#!/usr/bin/env bash
# Benchmark (run by hand, not a test): hakaru beside wrk, ab -k, h2load and hey (and oha when installed) against
# one nginx worker pinned to CPU 0 (bench/nginx-hello.conf), every generator pinned to CPU 1; then keep-alive off
# (hakaru vs wrk with "Connection: close" vs ab without -k) and RSS at 1000 connections. Runs from a clean clone:
# it installs the peers and nginx from Debian's packages when missing (apt-get, as root or with sudo).
# Then the connection cases (bench/nginx-conn.conf, the same pinned worker): over a Unix socket (hakaru
# --unix-socket beside oha --unix-socket) and TLS with a new connection a request (hakaru --no-keepalive with
# --tls-resume on and off beside wrk -H "Connection: close" and oha --disable-keepalive): the handshake rate.
# This machine is noisy (single runs vary by +-15 %), so every block runs ROUNDS times, tools alternating, and the
# summary gives each tool's median.
# Usage: bench/peers.sh [seconds=8] [connections=64] [rounds=3]
#   HAKARU=PATH: measure that hakaru binary instead of building a release one;
#   ONLY=keepalive|close|unix|tls: run only that block (all unless given; the RSS block runs with all only).
set -euo pipefail
cd "$(dirname "$0")/.."
D=${1:-8}; C=${2:-64}; ROUNDS=${3:-3}
need=()
for b in wrk:wrk ab:apache2-utils hey:hey h2load:nghttp2-client taskset:util-linux; do
  command -v "${b%%:*}" >/dev/null || need+=("${b#*:}")
done
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || need+=(nginx-light)
. scripts/lib.sh
apt_install bench/peers.sh ${need[@]+"${need[@]}"}
nginx=$(command -v nginx || echo /usr/sbin/nginx)
mkdir -p /tmp/bench-nginx /tmp/bench-peers
if ! { [ -f /tmp/bench-nginx/nginx.pid ] && kill -0 "$(cat /tmp/bench-nginx/nginx.pid)" 2>/dev/null; }; then
  "$nginx" -c "$PWD/bench/nginx-hello.conf"
fi
mkdir -p /tmp/bench-nginx-conn
[ -f /tmp/bench-nginx-conn/cert.pem ] || openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj /CN=localhost \
  -keyout /tmp/bench-nginx-conn/key.pem -out /tmp/bench-nginx-conn/cert.pem 2>/dev/null
if ! { [ -f /tmp/bench-nginx-conn/nginx.pid ] && kill -0 "$(cat /tmp/bench-nginx-conn/nginx.pid)" 2>/dev/null; }; then
  "$nginx" -c "$PWD/bench/nginx-conn.conf"
fi
bin=$(hakaru_release)
want() { [ -z "${ONLY:-}" ] || [ "$ONLY" = "$1" ]; }
SOCK=/tmp/bench-nginx-conn/hello.sock
TLS_URL=https://127.0.0.1:18443/
URL=http://127.0.0.1:18080/
log=/tmp/bench-peers/rounds.txt; : > "$log"

row() { # name, command...
  local name=$1; shift
  sleep 2
  /usr/bin/time -f "%U %S" -o /tmp/bench-peers/$name.time taskset -c 1 "$@" > /tmp/bench-peers/$name.out 2>&1 || true
  local cpu rps
  cpu=$(awk '{print $1+$2}' /tmp/bench-peers/$name.time | tail -1)
  case $name in
    h2load*) rps=$(awk '/^finished in/{print $4}' /tmp/bench-peers/$name.out | head -1);;
    # hey separates its figure with a tab, the others with spaces.
    *) rps=$(grep -m1 -oE '(Requests/sec:|Requests per second:|throughput)[[:space:]]+[0-9.]+' /tmp/bench-peers/$name.out | grep -oE '[0-9.]+$' || echo 0);;
  esac
  awk -v n="$name" -v r="$rps" -v c="$cpu" -v d="$D" 'BEGIN{printf "%-14s %10.0f req/s  cpu %6.2fs  %10.0f req/cpu-s\n", n, r, c, (c>0? r*d/c : 0)}'
}

has_oha() { command -v oha >/dev/null; }
for r in $(seq 1 "$ROUNDS"); do
  want keepalive && echo "== round $r: keep-alive, $C connections, ${D}s" && { row wrk wrk -t1 -c"$C" -d"${D}s" $URL
    if command -v oha >/dev/null; then row oha oha -z "${D}s" -c "$C" --no-tui $URL; fi
    row hey env GOMAXPROCS=1 hey -z "${D}s" -c "$C" $URL
    row ab ab -k -c "$C" -t "$D" -n 100000000 $URL
    row h2load h2load --h1 -t1 -c "$C" -D "$D" $URL
    row hakaru "$bin" run -q -t1 -c "$C" -d "${D}s" $URL; } | tee -a "$log"
  want close && echo "== round $r: keep-alive off, $C connections, ${D}s" && { row wrk-close wrk -t1 -c"$C" -d"${D}s" -H "Connection: close" $URL
    row ab-close ab -c "$C" -t "$D" -n 100000000 $URL
    row hakaru-close "$bin" run -q -t1 -c "$C" -d "${D}s" --no-keepalive $URL; } | tee -a "$log"
  # The URL's host is the Host header only: the connections go to the socket.
  want unix && echo "== round $r: a Unix socket, keep-alive, $C connections, ${D}s" && {
    if has_oha; then row oha-unix oha -z "${D}s" -c "$C" --no-tui --unix-socket $SOCK http://localhost/; fi
    row hakaru-unix "$bin" run -q -t1 -c "$C" -d "${D}s" --unix-socket $SOCK http://localhost/; } | tee -a "$log"
  # A TLS handshake a request: hakaru resumes sessions by default (as browsers), and is measured without too.
  want tls && echo "== round $r: TLS, a connection a request, $C connections, ${D}s" && {
    row wrk-tls wrk -t1 -c"$C" -d"${D}s" -H "Connection: close" $TLS_URL
    if has_oha; then row oha-tls oha -z "${D}s" -c "$C" --no-tui --insecure --disable-keepalive $TLS_URL; fi
    row hakaru-tls-resume "$bin" run -q -t1 -c "$C" -d "${D}s" -k --no-keepalive --tls-resume on $TLS_URL
    row hakaru-tls-full "$bin" run -q -t1 -c "$C" -d "${D}s" -k --no-keepalive --tls-resume off $TLS_URL; } | tee -a "$log"
done

echo "== medians over $ROUNDS rounds (req/s), and the ratio to the block's reference (wrk's median; oha's over a socket)"
median() { grep -E "^$1 " "$log" | awk '{print $2}' | sort -n | awk '{v[NR]=$1} END {print (NR ? v[int((NR+1)/2)] : 0)}'; }
for t in $(awk '/req\/s/ {print $1}' "$log" | sort -u); do
  ref=wrk; case $t in *-close) ref=wrk-close;; *-unix) ref=oha-unix;; *-tls*) ref=wrk-tls;; esac
  base=$(median $ref); m=$(median "$t")
  awk -v t="$t" -v m="$m" -v b="$base" -v r="$ref" 'BEGIN{printf "%-18s %10.0f req/s  %5.2f x %s\n", t, m, (b>0 ? m/b : 0), r}'
done
[ -z "${ONLY:-}" ] || exit 0

echo "== RSS at 1000 connections (keep-alive, 5s)"
for tool in wrk hakaru; do
  case $tool in
    wrk) cmd=(wrk -t1 -c1000 -d5s $URL);;
    hakaru) cmd=("$bin" run -q -t1 -c 1000 -d 5s $URL);;
  esac
  /usr/bin/time -f "%M" -o /tmp/bench-peers/$tool.rss taskset -c 1 "${cmd[@]}" >/tmp/bench-peers/$tool.rss.out 2>&1 || true
  printf "%-14s %8.1f MB\n" "$tool" "$(awk '{print $1/1024}' /tmp/bench-peers/$tool.rss | tail -1)"
done
