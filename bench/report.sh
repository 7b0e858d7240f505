#!/usr/bin/env bash
# Benchmark (run by hand, not a test): the size of `hakaru report` for a 100-step sweep with 30 s of per-second
# series per step, and how long headless Chromium takes to open it.
#
# A real 100-step sweep of 30 s steps takes 50 minutes, so the document is made from one real 30 s step
# (`hakaru sweep --clients 1 -d 30s` against `hakaru serve` on loopback): the step, with its 30 windows and its
# histogram, is repeated 100 times as client counts 1..100. The report's size depends on the number of steps and
# windows and the spectrum's points, not on the values, so the size is that of a real 100-step report.
# Reports: the HTML file's size for one and for three such documents (three targets), hakaru's time to write it,
# and, over ROUNDS openings in Chromium (fresh profile each), the page's own time from navigation start until every
# chart was drawn (`data-render-ms`, read from --dump-dom; `data-script-ms` is the report script's share of it) and
# the whole chromium process's wall time (browser start included). Installs chromium from Debian's packages when missing.
# Usage: bench/report.sh [rounds=5]
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-5}
. scripts/lib.sh
command -v chromium >/dev/null 2>&1 || apt_install bench/report.sh chromium
cargo build --release -q
bin=$PWD/target/release/hakaru
work=$(mktemp -d /tmp/bench-report.XXXXXX)
trap 'kill "$serve_pid" 2>/dev/null || true; rm -rf "$work"' EXIT

"$bin" serve --listen 127.0.0.1:0 --threads 1 >"$work/serve.log" 2>&1 &
serve_pid=$!
for _ in $(seq 50); do grep -q listening "$work/serve.log" && break; sleep 0.1; done
addr=$(grep -o '127.0.0.1:[0-9]*' "$work/serve.log" | head -1)
echo "one real 30 s step against hakaru serve at $addr ..." >&2
"$bin" sweep "http://$addr/?delay=2ms" --clients 1 -d 30s --interval 0s --monitor-port "${addr#*:}" \
  --json "$work/one.json" -q >/dev/null

python3 - "$work" <<'EOF'
import copy, json, sys
work = sys.argv[1]
doc = json.load(open(f"{work}/one.json"))
step = doc["steps"][0]
steps = []
for c in range(1, 101):
    s = copy.deepcopy(step)
    s["label"] = f"c={c}"
    s["load"]["connections"] = c
    s["connections"]["asked"] = c
    steps.append(s)
doc["steps"] = steps
doc["settings"]["sweep"]["values"] = [float(c) for c in range(1, 101)]
for name in ["a", "b", "c"]:
    d = copy.deepcopy(doc)
    d["settings"]["targets"] = [f"target-{name}"]
    json.dump(d, open(f"{work}/sweep-{name}.json", "w"))
print(f"windows per step: {len(step['windows'])}", file=sys.stderr)
EOF

t0=$(date +%s.%N)
"$bin" report "$work/sweep-a.json" -o "$work/one.html" 2>/dev/null
t1=$(date +%s.%N)
"$bin" report "$work/sweep-a.json" "$work/sweep-b.json" "$work/sweep-c.json" -o "$work/three.html" 2>/dev/null
t2=$(date +%s.%N)
printf 'input document: %s bytes each\n' "$(stat -c %s "$work/sweep-a.json")"
printf 'report, 1 target x 100 steps:  %s bytes, written in %.2f s\n' "$(stat -c %s "$work/one.html")" \
  "$(echo "$t1 - $t0" | bc)"
printf 'report, 3 targets x 100 steps: %s bytes, written in %.2f s\n' "$(stat -c %s "$work/three.html")" \
  "$(echo "$t2 - $t1" | bc)"

open_page() { # page -> "render_ms wall_s charts drawn script_ms"
  local profile; profile=$(mktemp -d "$work/profile.XXXXXX")
  local s e dom
  s=$(date +%s.%N)
  dom=$(chromium --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking \
    --disable-component-update --disable-sync --host-resolver-rules='MAP * ~NOTFOUND' \
    --proxy-server=127.0.0.1:9 --user-data-dir="$profile" --window-size=1200,900 --dump-dom "file://$1" 2>/dev/null)
  e=$(date +%s.%N)
  local body; body=$(grep -o '<body[^>]*>' <<<"$dom" | head -1)
  local attr; attr() { sed -n "s/.*data-$1=\"\([^\"]*\)\".*/\1/p" <<<"$body"; }
  echo "$(attr render-ms) $(echo "$e - $s" | bc) $(attr charts) $(attr charts-drawn) $(attr script-ms)"
}
for page in one three; do
  renders=(); walls=(); scripts=()
  for _ in $(seq "$ROUNDS"); do
    read -r ms wall charts drawn script < <(open_page "$work/$page.html")
    renders+=("$ms"); walls+=("$wall"); scripts+=("$script")
  done
  med() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
  printf '%-5s: page drawn %s ms after navigation start (median of %s; all: %s), chromium wall %s s median, ' \
    "$page" "$(med "${renders[@]}")" "$ROUNDS" "${renders[*]}" "$(med "${walls[@]}")"
  printf '%s charts, %s drawn; the script itself %s ms median\n' "$charts" "$drawn" "$(med "${scripts[@]}")"
done
