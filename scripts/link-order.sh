#!/usr/bin/env bash
# Makes assets/link-order.txt: the functions of hakaru that typical runs execute, which build.rs asks the linker to
# put first so that a run's code sits in few pages (see build.rs for why). Run by hand after a compiler or
# dependency update (bench/kv.sh says when the list has gone stale), then rebuild and commit the file.
#
# How: the release binary runs kv (Redis GET, SET, pipelined GET, wicked, YCSB-A; a memcached 9:1 mix) and run
# (closed loop and --rate against `hakaru serve`) under valgrind's callgrind, on loopback ports, a few seconds
# each. Every function callgrind saw run, in the binary's own (mangled) names, goes into the list, in the order
# the runs first met them.
# Installs valgrind, redis-server and memcached when missing.
# Usage: scripts/link-order.sh
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
for b in valgrind:valgrind redis-server:redis-server memcached:memcached; do
  command -v "${b%%:*}" >/dev/null || need+=("${b#*:}")
done
. scripts/lib.sh
apt_install scripts/link-order.sh ${need[@]+"${need[@]}"}
cargo build --release -q
bin=$(cd "$(cargo_target_dir)" && pwd)/release/hakaru
work=$(mktemp -d /tmp/hakaru-link-order.XXXXXX)
RP=16431; MP=11431; HP=18431
redis-server --port $RP --bind 127.0.0.1 --save '' --appendonly no > "$work/redis.log" 2>&1 &
rpid=$!
memcached -l 127.0.0.1 -p $MP -U 0 -t 1 -u "$(id -un)" > "$work/memcached.log" 2>&1 &
mpid=$!
"$bin" serve --listen 127.0.0.1:$HP > "$work/serve.log" 2>&1 &
spid=$!
trap 'kill $rpid $mpid $spid 2>/dev/null || true; rm -rf "$work"' EXIT
sleep 1
R=redis://127.0.0.1:$RP; M=memcache://127.0.0.1:$MP; H=http://127.0.0.1:$HP/
i=0
profile() { # a hakaru command line, run under callgrind
  i=$((i + 1))
  HAKARU_DB="$work/history.db" valgrind --tool=callgrind --demangle=no --callgrind-out-file="$work/cg.$i" \
    "$bin" "$@" > "$work/out.$i" 2>&1 || { echo "scripts/link-order.sh: failed: hakaru $*" >&2; cat "$work/out.$i" >&2; exit 1; }
}
profile kv -t 1 -c 50 -n 20000 --mix get:1 --keys 1000 --key-prefix key: $R
profile kv -t 1 -c 50 -n 20000 --mix set:1 --keys 1000 --key-prefix key: $R
profile kv -t 1 -c 50 -n 50000 --pipeline 16 --mix get:1 --keys 1000 --key-prefix key: $R
profile kv -t 1 -c 50 -d 2s --mix get:90,set:10 --keys 10000 --value-size 1024 $M
profile kv -t 1 -c 4 --workload wicked --rnum 2000 --it 1 $R
profile kv -t 1 -c 8 -n 5000 --workload ycsb-a --records 1000 $R
profile run -c 10 -n 5000 $H
profile run -c 10 -d 2s --rate 1000 $H

nm --defined-only "$bin" | awk '$2 ~ /^[tTwW]$/ { print $3 }' > "$work/functions"
out=assets/link-order.txt
{
  echo "# The functions typical hakaru runs execute, put first by the linker (see build.rs)."
  echo "# Made by scripts/link-order.sh with $(rustc -V); do not edit by hand."
  # callgrind names a function in full the first time ("fn=(12) name"), then by its number alone.
  awk -v functions="$work/functions" '
    BEGIN { while ((getline f < functions) > 0) known[f] = 1 }
    FNR == 1 { delete names }
    /^c?fn=\(/ {
      match($0, /\([0-9]+\)/); id = substr($0, RSTART, RLENGTH); rest = substr($0, RSTART + RLENGTH + 1)
      if (rest != "") names[id] = rest
      name = names[id]
      if (name in known && !(name in seen)) { seen[name] = 1; print name }
    }' "$work"/cg.[0-9]*
} > "$out.new"
mv "$out.new" "$out"
echo "scripts/link-order.sh: $(grep -vc '^#' $out) functions in $out; rebuild (cargo build --release) to use it"
