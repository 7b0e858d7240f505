#!/usr/bin/env bash
# Benchmark (run by hand, not a test): hakaru kv beside redis-benchmark (GET and SET, 50 connections, unpipelined
# and -P 16) and memcaslap (memaslap: 9:1 get/set, 50 connections), each server pinned to CPU 0 and every
# generator to CPU 1, one generator thread each, rounds alternating the tools (A B A B) so drift hits all alike.
# Prints each run's ops/s, peak RSS and peak private (anonymous) memory, then per case the median of each tool,
# the ratio of the medians, and the median of each round's ratio (hakaru against the peer run just before it)
# with the number of rounds hakaru was ahead.
# A Unix-socket case too: redis-server also listens on a socket, redis-benchmark -s beside hakaru kv unix:PATH.
# Runs from a clean clone: installs redis-server, redis-tools, memcached and libmemcached-tools when missing.
# Usage: bench/kv.sh [operations=300000 (ten times that pipelined)] [rounds=5] [seconds for memcaslap=8]
#   HAKARU=PATH: measure that hakaru binary instead of building a release one;
#   ONLY=tcp|unix|memcached: run only those cases (all unless given).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-300000}; ROUNDS=${2:-5}; D=${3:-8}
need=()
for b in redis-server:redis-server redis-benchmark:redis-tools memcached:memcached memcaslap:libmemcached-tools taskset:util-linux; do
  command -v "${b%%:*}" >/dev/null || need+=("${b#*:}")
done
. scripts/lib.sh
apt_install bench/kv.sh ${need[@]+"${need[@]}"}
bin=$(hakaru_release)
want() { [ -z "${ONLY:-}" ] || [ "$ONLY" = "$1" ]; }
# The code layout (build.rs) keeps a run's code in few pages, which is most of the peak RSS below; a list whose
# names the binary no longer has (after a compiler or dependency update) lays out nothing. Say so before measuring.
if command -v nm >/dev/null && [ -f assets/link-order.txt ]; then
  listed=$(grep -vc '^#' assets/link-order.txt || true)
  found=$(nm "$bin" | awk 'NR==FNR { if ($0 !~ /^#/) want[$0] = 1; next } ($3 in want) { n++ } END { print n + 0 }' assets/link-order.txt -)
  echo "code layout: $found of $listed functions in assets/link-order.txt are in the binary" >&2
  [ "$found" -lt $((listed * 9 / 10)) ] && echo "bench/kv.sh: the code layout is stale: run scripts/link-order.sh, then this again" >&2
fi
out=/tmp/bench-kv; mkdir -p $out; log=$out/rounds.txt; : > "$log"
RP=16399; MP=11399
SOCK=$out/redis.sock
taskset -c 0 redis-server --port $RP --bind 127.0.0.1 --unixsocket $SOCK --unixsocketperm 700 --save '' \
  --appendonly no > $out/redis.log 2>&1 &
rpid=$!
taskset -c 0 memcached -l 127.0.0.1 -p $MP -U 0 -t 1 -m 256 -u "$(id -un)" > $out/memcached.log 2>&1 &
mpid=$!
trap 'kill $rpid $mpid 2>/dev/null || true' EXIT
sleep 1
R=redis://127.0.0.1:$RP; M=memcache://127.0.0.1:$MP
# memaslap's keys are 64 bytes and its values 1024: hakaru's prefix makes its keys 64 bytes too.
PREFIX=$(printf 'k%.0s' $(seq 1 59))
# Every key exists before the gets, for both tools: the same hit rate (100 %).
redis-benchmark -p $RP -t set -n 100000 -r 1000 -d 32 -q > /dev/null
"$bin" kv -q -t 1 -c 10 -n 1000 --mix set:1 --keys 1000 --key-pattern P --key-prefix "key:" $R > /dev/null
"$bin" kv -q -t 1 -c 10 -n 10000 --mix set:1 --keys 10000 --key-pattern P --value-size 1024 --key-prefix "$PREFIX" $M > /dev/null

# The largest private (anonymous) memory of process $1 while it runs, in kB, sampled every 10 ms from
# /proc/PID/status without forking (bash builtins only, so the sampling costs the measured run next to nothing).
anon_peak() {
  local pid=$1 peak=0 k v _ tick
  exec {tick}<> <(:) # a pipe nobody writes to: reading it with a timeout sleeps without a fork
  while [ -r /proc/$pid/status ]; do
    while read -r k v _; do [ "$k" = RssAnon: ] && [ "$v" -gt "$peak" ] && peak=$v; done < /proc/$pid/status 2>/dev/null || true
    read -r -t 0.01 -u "$tick" _ || true
  done
  exec {tick}>&-
  echo "$peak"
}

run() { # case, tool, command...
  local c=$1 tool=$2; shift 2
  sleep 1
  /usr/bin/time -f "%M" -o $out/time taskset -c 1 "$@" > $out/out 2>&1 &
  local tpid=$! child=""
  for _ in 1 2 3 4 5 6 7 8 9 10; do child=$(pgrep -P $tpid || true); [ -n "$child" ] && break; sleep 0.01; done
  local anon=0
  [ -n "$child" ] && anon=$(anon_peak "$child")
  wait $tpid || true
  local ops rss
  case $tool in
    redis-benchmark) ops=$(grep -oE '[0-9.]+ requests per second' $out/out | grep -oE '^[0-9.]+' | head -1);;
    memcaslap) ops=$(grep -oE 'TPS: [0-9]+' $out/out | grep -oE '[0-9]+$' | tail -1);;
    hakaru) ops=$(grep -m1 -oE 'throughput +[0-9.]+' $out/out | grep -oE '[0-9.]+$');;
  esac
  rss=$(tail -1 $out/time)
  printf '%-12s %-16s %10.0f ops/s  %7.1f MB  %7.1f MB\n' "$c" "$tool" "${ops:-0}" "$(echo "${rss:-0} / 1024" | bc -l)" "$(echo "${anon:-0} / 1024" | bc -l)" | tee -a "$log"
}

for r in $(seq 1 "$ROUNDS"); do
  echo "== round $r"
  want tcp && for P in 1 16; do
    # Pipelined runs are about ten times faster: ten times the operations, so that each lasts seconds, not tenths.
    n=$N; [ "$P" -gt 1 ] && n=$((N * 10))
    run get-P$P redis-benchmark redis-benchmark -p $RP -c 50 -n "$n" -r 1000 -d 32 -P $P -t get -q
    run get-P$P hakaru "$bin" kv -q -t 1 -c 50 -n "$n" --pipeline $P --mix get:1 --keys 1000 --key-prefix "key:" $R
    run set-P$P redis-benchmark redis-benchmark -p $RP -c 50 -n "$n" -r 1000 -d 32 -P $P -t set -q
    run set-P$P hakaru "$bin" kv -q -t 1 -c 50 -n "$n" --pipeline $P --mix set:1 --keys 1000 --key-prefix "key:" $R
  done
  if want unix; then
    # The same GETs over the Unix socket: no TCP stack on either side.
    run get-unix redis-benchmark redis-benchmark -s $SOCK -c 50 -n "$N" -r 1000 -d 32 -t get -q
    run get-unix hakaru "$bin" kv -q -t 1 -c 50 -n "$N" --mix get:1 --keys 1000 --key-prefix "key:" "unix:$SOCK"
  fi
  if want memcached; then
    run mc-9:1 memcaslap memcaslap -s 127.0.0.1:$MP -T 1 -c 50 -t "${D}s"
    run mc-9:1 hakaru "$bin" kv -q -t 1 -c 50 -d "${D}s" --mix get:90,set:10 --keys 10000 --value-size 1024 --key-prefix "$PREFIX" $M
  fi
done

echo "== medians over $ROUNDS rounds (ops/s, peak RSS MB, peak private MB) and hakaru / peer"
awk '
  { key=$1" "$2; ops[key]=ops[key]" "$3; rss[key]=rss[key]" "$5; anon[key]=anon[key]" "$7; cases[$1]=1
    # Each round runs the peer, then hakaru, one right after the other: their ratio is the paired figure.
    if ($2!="hakaru") { peer[$1]=$2; last[$1]=$3 } else if (last[$1]>0) { ratios[$1]=ratios[$1]" "($3/last[$1]); rounds[$1]++; if ($3>=last[$1]) wins[$1]++ } }
  function median(list,   a, n, i, j, t) { n=split(list, a, " "); for (i=1;i<=n;i++) for (j=i+1;j<=n;j++) if (a[j]+0<a[i]+0) {t=a[i];a[i]=a[j];a[j]=t}; return (n%2)? a[(n+1)/2] : (a[n/2]+a[n/2+1])/2 }
  END { for (c in cases) { p=peer[c]; h=median(ops[c" hakaru"]); q=median(ops[c" "p]);
          printf "%-10s hakaru %9.0f (%5.1f / %4.1f MB)  %-15s %9.0f (%5.1f / %4.1f MB)  ratio %.2f  paired %.2f, ahead in %d of %d\n", c, h, median(rss[c" hakaru"]), median(anon[c" hakaru"]), p, q, median(rss[c" "p]), median(anon[c" "p]), (q>0? h/q : 0), median(ratios[c]), wins[c], rounds[c] } }
' "$log" | sort
