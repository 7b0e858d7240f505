#!/bin/sh
# Runs tests/fuzz.rs long: many cases per parser, with a new seed each run (printed, so a failure can be
# repeated with HAKARU_FUZZ_SEED=... HAKARU_FUZZ_CASES=... cargo test --test suite fuzz::). Among the targets: endless
# frames fed to the decoders (a tenth of the cases), and the slow-drip and endless-frame servers of
# tests/common/endless.rs run against the hakaru binary (one case per 20,000, a few seconds each).
#   scripts/fuzz.sh [cases] [seed]      defaults: 1000000 cases, a random seed
set -eu
cd "$(dirname "$0")/.."
cases="${1:-1000000}"
seed="${2:-$(od -An -N6 -tu8 /dev/urandom | tr -d ' ')}"
echo "fuzz: HAKARU_FUZZ_SEED=$seed HAKARU_FUZZ_CASES=$cases"
HAKARU_FUZZ_SEED="$seed" HAKARU_FUZZ_CASES="$cases" cargo test --test suite fuzz:: -- --test-threads=2
echo "fuzz: passed (seed $seed, $cases cases per parser)"
