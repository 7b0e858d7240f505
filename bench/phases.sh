#!/usr/bin/env bash
# Benchmark (run by hand, not a test): what the phases (issue 37) cost a keep-alive closed-loop request, counted in
# instructions by valgrind's callgrind (user space only: the kernel's share of a request, its syscalls, is not
# counted). Two builds of hakaru run the same load against `hakaru serve` (not under valgrind): A as given, B a
# build with the phases taken out (a throwaway patch, never committed: `times_phases` in src/engine/mod.rs
# returning false, so no phase is recorded and no clock read for one). Each runs -n N1 and -n N2 requests;
# (Ir(N2) - Ir(N1)) / (N2 - N1) is a request's instructions without the start and the end, and the calls of
# clock_gettime are counted the same way (the clock reads a request makes). A busy machine changes these (a slower
# server makes the runtime poll more), so there are ROUNDS of them; the phases' own code is counted exactly: the
# instructions inside ThreadCtx::record_phases and record_connect in A's N2 run, a request's share.
# Needs valgrind (apt-get install valgrind). Usage: bench/phases.sh HAKARU_A HAKARU_B [N1=2000] [N2=12000] [ROUNDS=3]
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: bench/phases.sh HAKARU_A HAKARU_B [N1] [N2] [ROUNDS]" >&2; exit 2; }
A=$1 B=$2 N1=${3:-2000} N2=${4:-12000} ROUNDS=${5:-3}
command -v valgrind >/dev/null || { echo "bench/phases.sh: needs valgrind (apt-get install valgrind)" >&2; exit 2; }
out=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$A" serve --listen "127.0.0.1:$port" --threads 1 >/dev/null 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true; rm -rf "$out"' EXIT
for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done

cat > "$out/read.py" <<'PY'
import json, re, sys
ir, calls, names, target = 0, 0, {}, None
for line in open(sys.argv[1]):
    if line.startswith("summary:") or line.startswith("totals:"):
        ir = int(line.split()[1])
    m = re.match(r"cfn=\((\d+)\)(?: (.*))?", line)
    if m:
        if m.group(2):
            names[m.group(1)] = m.group(2)
        target = names.get(m.group(1), "")
        continue
    if line.startswith("calls=") and target is not None:
        if re.search(r"\bclock_gettime\b", target):
            calls += int(line.split("=")[1].split()[0])
        target = None
phases = 0
for line in open(sys.argv[3]):
    # The functions' own lines (their file is src/engine/mod.rs, shown whole or relative to the directory), which
    # hold what was inlined into them from elsewhere.
    m = re.match(r"\s*([\d,]+) \(.*?\)\s+\S*src/engine/mod\.rs:hakaru::engine::ThreadCtx::record_(phases|connect)\b", line)
    if m:
        phases += int(m.group(1).replace(",", ""))
requests = json.load(open(sys.argv[2]))["steps"][0]["requests"]
print(ir, calls, phases, requests)
PY

# One run under callgrind: prints "instructions clock_gettime-calls phase-instructions requests".
one() { # binary, n
  local f=$out/cg.$RANDOM
  valgrind --tool=callgrind --callgrind-out-file="$f" "$1" run -q --no-history -t 1 -c 2 -n "$2" \
    --json "$f.json" "http://127.0.0.1:$port/" >/dev/null 2>"$f.err"
  callgrind_annotate --inclusive=yes --threshold=100 "$f" > "$f.inclusive" 2>/dev/null
  python3 "$out/read.py" "$f" "$f.json" "$f.inclusive"
}

for r in $(seq "$ROUNDS"); do
  for side in A B; do
    bin=$A; [ $side = B ] && bin=$B
    read -r ir1 ck1 ph1 n1 < <(one "$bin" "$N1")
    read -r ir2 ck2 ph2 n2 < <(one "$bin" "$N2")
    python3 -c "
import sys
side, (ir1, ck1, ph1, n1, ir2, ck2, ph2, n2) = sys.argv[1], map(int, sys.argv[2:])
print(f'{side} {(ir2 - ir1) / (n2 - n1):.0f} {(ck2 - ck1) / (n2 - n1):.3f} {(ph2 - ph1) / (n2 - n1):.1f}')
" $side "$ir1" "$ck1" "$ph1" "$n1" "$ir2" "$ck2" "$ph2" "$n2" | tee -a "$out/rounds"
  done
done
python3 - "$out/rounds" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
for side in "AB":
    mine = [r for r in rows if r[0] == side]
    ir = [float(r[1]) for r in mine]
    ck = [float(r[2]) for r in mine]
    ph = [float(r[3]) for r in mine]
    print(f"{side}: instructions a request {', '.join(f'{x:.0f}' for x in ir)} (median {statistics.median(ir):.0f}); "
          f"clock_gettime a request {', '.join(f'{x:.2f}' for x in ck)}; inside record_phases/record_connect "
          f"{statistics.median(ph):.1f} a request")
a = [float(r[1]) for r in rows if r[0] == "A"]
b = [float(r[1]) for r in rows if r[0] == "B"]
ph = statistics.median(float(r[3]) for r in rows if r[0] == "A")
print(f"A/B instructions a request, medians: {statistics.median(a) / statistics.median(b):.3f}; the phases' own code "
      f"{ph:.0f} a request = {100 * ph / statistics.median(b):.1f} % of B's median")
PY
