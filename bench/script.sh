#!/usr/bin/env bash
# Benchmark (run by hand, not a test): scripts and templates. One nginx worker pinned to CPU 0 (bench/nginx-hello.conf),
# every generator pinned to CPU 1, one generator thread and C connections, rounds alternating the tools.
#  1. hakaru against wrk with the same script: none, path.lua (request() makes a new path each time), wrk's
#     counter.lua and post.lua (the fixtures of tests/scripts.rs): requests/s and requests per CPU-second (user + sys).
#  2. No slowdown without a script: alternating pairs (bench/pairs.sh, A/B pair by pair) of this build against
#     BASE, a release build of the commit before scripts (bench/script.sh builds it from git when BASE is not
#     given), a fixed number of requests each.
#  3. Templates: --data with a {{id}} path against the same fixed URL (alternating pairs, bench/pairs.sh).
#  4. kv templates: `SET {{key}} {{value}}` from --data rows against memtier's fixed `SET __key__ __data__` with keys
#     and values of the same lengths, redis-server pinned to CPU 0 (alternating pairs, bench/pairs.sh).
# Usage: bench/script.sh [seconds=5] [connections=64] [rounds=3] [requests a paired run=300000]
# BASE=/path/to/old/hakaru to give the baseline binary (default: built from commit bc5301b into /tmp/bench-script).
# PARTS="wrk base data kv" (the default) chooses the parts: 1, 2, 3, 4.
set -euo pipefail
cd "$(dirname "$0")/.."
D=${1:-5}; C=${2:-64}; ROUNDS=${3:-3}; N=${4:-300000}
PARTS=${PARTS:-wrk base data kv}
part() { [[ " $PARTS " == *" $1 "* ]]; }
need=()
for b in wrk:wrk taskset:util-linux redis-server:redis-server; do command -v "${b%%:*}" >/dev/null || need+=("${b#*:}"); done
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || need+=(nginx-light)
. scripts/lib.sh
apt_install bench/script.sh ${need[@]+"${need[@]}"}
nginx=$(command -v nginx || echo /usr/sbin/nginx)
out=/tmp/bench-script; mkdir -p $out /tmp/bench-nginx
if ! { [ -f /tmp/bench-nginx/nginx.pid ] && kill -0 "$(cat /tmp/bench-nginx/nginx.pid)" 2>/dev/null; }; then
  "$nginx" -c "$PWD/bench/nginx-hello.conf"
fi
cargo build --release -q
bin=$PWD/target/release/hakaru
if [ -z "${BASE:-}" ] && part base; then
  # The commit before scripts, built once (a full release build: minutes).
  if [ ! -x $out/base-src/target/release/hakaru ]; then
    rm -rf $out/base-src && mkdir -p $out/base-src && git archive bc5301b | tar -x -C $out/base-src
    (cd $out/base-src && cargo build --release -q)
  fi
  BASE=$out/base-src/target/release/hakaru
fi
URL=http://127.0.0.1:18080/
S=tests/fixtures/scripts
cat > $out/path.lua <<'EOF'
-- A new path for every request, nothing else changed.
local i = 0
function request()
  i = i + 1
  return wrk.format(nil, "/item/" .. i)
end
EOF
log=$out/rounds.txt; : > "$log"

row() { # name, command...
  local name=$1; shift
  sleep 1
  /usr/bin/time -f "%U %S" -o $out/$name.time taskset -c 1 "$@" > $out/$name.out 2>&1 || true
  local cpu rps
  cpu=$(awk '{print $1+$2}' $out/$name.time | tail -1)
  rps=$(grep -m1 -oE '(Requests/sec:|throughput)[[:space:]]+[0-9.]+' $out/$name.out | grep -oE '[0-9.]+$' || echo 0)
  awk -v n="$name" -v r="$rps" -v c="$cpu" -v d="$D" 'BEGIN{printf "%-16s %10.0f req/s  cpu %6.2fs  %10.0f req/cpu-s\n", n, r, c, (c>0? r*d/c : 0)}'
}

if part wrk; then
for r in $(seq 1 "$ROUNDS"); do
  echo "== round $r: $C connections, ${D}s, one thread"
  {
    row wrk-none wrk -t1 -c"$C" -d"${D}s" $URL
    row hakaru-none "$bin" run -q -t1 -c "$C" -d "${D}s" $URL
    for s in path counter post; do
      f=$S/$s.lua; [ "$s" = path ] && f=$out/path.lua
      row wrk-$s wrk -t1 -c"$C" -d"${D}s" -s "$f" $URL
      row hakaru-$s "$bin" run -q -t1 -c "$C" -d "${D}s" -s "$f" $URL
    done
  } | tee -a "$log"
done

echo "== medians over $ROUNDS rounds: req/s, req per CPU-second, and hakaru's ratio to wrk"
median() { grep -E "^$1 " "$log" | awk -v k="$2" '{print $k}' | sort -n | awk '{v[NR]=$1} END {print (NR ? v[int((NR+1)/2)] : 0)}'; }
for s in none path counter post; do
  wr=$(median wrk-$s 2); hr=$(median hakaru-$s 2); wc=$(median wrk-$s 6); hc=$(median hakaru-$s 6)
  awk -v s="$s" -v wr="$wr" -v hr="$hr" -v wc="$wc" -v hc="$hc" 'BEGIN{printf "%-8s wrk %9.0f req/s %9.0f req/cpu-s   hakaru %9.0f req/s %9.0f req/cpu-s   ratio %.2f / %.2f\n", s, wr, wc, hr, hc, (wr>0? hr/wr:0), (wc>0? hc/wc:0)}'
done
grep -h "building requests" $out/hakaru-*.out | sort | uniq -c || true
fi

if part base; then
echo "== no script: this build (A) against the baseline $BASE (B), $N requests"
bench/pairs.sh 7 1 "$BASE run -q -t1 -c $C -n $N $URL" "$bin" run -q -t1 -c "$C" -n "$N" $URL
fi

if part data; then
echo "== templates: --data with {{id}} in the path (A) against the fixed URL (B), $N requests"
{ echo id; seq 1 100000; } > $out/ids.csv
bench/pairs.sh 7 1 "$bin run -q -t1 -c $C -n $N ${URL}item/1" \
  "$bin" run -q -t1 -c "$C" -n "$N" --data $out/ids.csv "${URL}item/{{id}}"
fi

if part kv; then
echo "== kv templates: SET {{key}} {{value}} from --data (A) against SET __key__ __data__ (B), $N requests"
RP=16398
taskset -c 0 redis-server --port $RP --bind 127.0.0.1 --save '' --appendonly no > $out/redis.log 2>&1 &
rpid=$!
trap 'kill $rpid 2>/dev/null || true' EXIT
sleep 1
# The same keys (hakaru:0 ... hakaru:99999, hakaru's own prefix: an earlier run's keys are overwritten) and the same
# 8-byte values in both, so the difference is the filling.
seq 0 99999 | awk 'BEGIN { print "key,value" } { printf "hakaru:%d,%08d\n", $1, $1 }' > $out/kv.csv
K=redis://127.0.0.1:$RP
bench/pairs.sh 7 1 "$bin kv -q -t1 -c $C -n $N --keys 100000 --key-pattern S --value-size 8 --command 'SET __key__ __data__' $K" \
  "$bin" kv -q -t1 -c "$C" -n "$N" --data $out/kv.csv --command 'SET {{key}} {{value}}' $K
"$bin" kv -t1 -c "$C" -n "$N" --data $out/kv.csv --command 'SET {{key}} {{value}}' $K | grep -E 'throughput|building'
fi
