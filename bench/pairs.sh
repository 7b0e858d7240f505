#!/usr/bin/env bash
# Runs two commands in turn, A B A B ..., each pinned to one CPU, timed by /usr/bin/time (wall, user + system CPU,
# peak RSS of the whole process), and prints each side's medians and the medians of the pair-by-pair ratios A/B.
# Pairing keeps a ratio meaningful when a busy machine's speed drifts during the rounds; one warm-up round of each
# is not counted. Used by the other bench/ scripts; run by hand, never by a test.
# Usage: bench/pairs.sh ROUNDS CPU 'COMMAND B' COMMAND A [ARG ...]
#   (B is one string run by sh -c; A is the rest of the line, run as given; their output is thrown away)
set -euo pipefail
[ $# -ge 4 ] || { echo "usage: bench/pairs.sh ROUNDS CPU 'COMMAND B' COMMAND A [ARG ...]" >&2; exit 2; }
rounds=$1 cpu=$2 b=$3
shift 3
[ -x /usr/bin/time ] || { echo "bench/pairs.sh: needs /usr/bin/time (apt-get install time)" >&2; exit 2; }
command -v taskset >/dev/null || { echo "bench/pairs.sh: needs taskset (apt-get install util-linux)" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
one() { # one SIDE ROUND COMMAND...: appends "wall cpu peak_kib" to $out/SIDE (round 0 is the warm-up)
  local side=$1 round=$2 t=$out/t
  shift 2
  local code=0
  /usr/bin/time -f '%e %U %S %M' -o "$t" taskset -c "$cpu" "$@" >/dev/null 2>&1 || code=$?
  [ "$code" -eq 0 ] || echo "bench/pairs.sh: $(echo "$side" | tr ab AB) exited $code" >&2
  [ "$round" -gt 0 ] && tail -n 1 "$t" | awk '{ printf "%s %.2f %s\n", $1, $2 + $3, $4 }' >> "$out/$side"
  return 0
}
for r in $(seq 0 "$rounds"); do one a "$r" "$@"; one b "$r" sh -c "$b"; done
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
for side in a b; do
  printf '%s: wall %ss  cpu %ss  peak %.1f MiB   (medians of %s runs)\n' "$(echo "$side" | tr ab AB)" \
    "$(cut -d' ' -f1 "$out/$side" | median)" "$(cut -d' ' -f2 "$out/$side" | median)" \
    "$(cut -d' ' -f3 "$out/$side" | median | awk '{ print $1 / 1024 }')" "$rounds"
done
paste -d' ' "$out/a" "$out/b" > "$out/pairs"
for k in 1:wall 2:cpu 3:peak; do
  i=${k%%:*}
  awk -v i="$i" '{ if ($(i + 3) > 0) print $i / $(i + 3) }' "$out/pairs" > "$out/r"
  printf 'A/B %-4s median %.3f  (min %.3f, max %.3f)\n' "${k#*:}" "$(median < "$out/r")" \
    "$(sort -g "$out/r" | head -n 1)" "$(sort -g "$out/r" | tail -n 1)"
done
