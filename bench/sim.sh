#!/usr/bin/env bash
# bench/sim.sh: simulated events per second of the cluster simulator (test-cts's cts-sim), and how
# many seeds and events ran clean. Not a test: it prints numbers.
#
#   bench/sim.sh                 seeds 1..2000 per profile, 2 jobs
#   bench/sim.sh soak MINUTES    a timed soak of the default profile (issue 8's goal: >= 1e6
#                                events in 10 min, zero violations)
#
# Profiles: atomic (the default, the cluster as Highlander runs it: zero violations expected),
# no-migrate and full (pengine's two-phase model, Pacemaker's: violations that match a known gap are
# counted apart as known-gaps=N).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${JOBS:-2}"
cargo build --release -q -p test-cts --bin cts-sim
bin=target/release/cts-sim
run() {
    local profile="$1"; shift
    local out
    out="$(mktemp)"
    "$bin" "$@" --profile "$profile" --jobs "$jobs" >"$out" || true
    local last
    last="$(tail -n 1 "$out")"
    printf '%-11s %s\n' "$profile" "$last"
    rm -f "$out"
}
echo "cts-sim on $(nproc) cores, $jobs jobs, $(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD)"
if [ "${1:-}" = soak ]; then
    minutes="${2:-10}"
    run atomic --soak "$minutes"
else
    run atomic --seeds 1..2000
    run no-migrate --seeds 1..2000
    run full --seeds 1..2000
fi
