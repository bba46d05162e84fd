#!/usr/bin/env bash
# Runs Pacemaker 2.1.5's crm_simulate on every recovery scenario's initial cib.xml and checks the
# output against the committed crm_simulate.expect (our planner's Transition Summary for the same
# CIB is compared with it by pengine/tests/recovery_scenarios.rs).
#   regen.sh            check (exit 1 on any difference, crm_verify error or crm_simulate failure)
#   regen.sh --update   rewrite crm_simulate.expect files (review the diff)
set -euo pipefail
root=$(cd "$(dirname "$0")" && pwd)
mode=check
[[ ${1:-} == --update ]] && mode=update
command -v crm_simulate >/dev/null || { echo "regen.sh: crm_simulate is not installed" >&2; exit 2; }
crm_simulate --version 2>/dev/null | head -1 | grep -q "Pacemaker 2.1.5" \
    || echo "regen.sh: WARNING: this is not Pacemaker 2.1.5" >&2
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
export LC_ALL=C CIB_shadow_dir="$scratch"
status=0
for dir in "$root"/*/; do
    name=$(basename "$dir")
    [[ -f $dir/cib.xml ]] || continue
    if ! crm_verify -x "$dir/cib.xml" >"$scratch/verify" 2>&1; then
        echo "FAIL $name: crm_verify"; cat "$scratch/verify"; status=1; continue
    fi
    if ! (cd "$dir" && crm_simulate -S -x cib.xml) >"$scratch/out" 2>&1; then
        echo "FAIL $name: crm_simulate"; tail -3 "$scratch/out"; status=1; continue
    fi
    if [[ $mode == update ]]; then
        cp "$scratch/out" "$dir/crm_simulate.expect"; echo "wrote $name/crm_simulate.expect"
    elif ! diff -u "$dir/crm_simulate.expect" "$scratch/out"; then
        echo "FAIL $name: crm_simulate output changed"; status=1
    else
        echo "ok   $name"
    fi
done
exit $status
