#!/usr/bin/env bash
# Benchmark: our VirtualDomain agent against ocf:heartbeat:VirtualDomain, side by side in one run,
# on one private libvirtd (QEMU/TCG, started by test-cts's hl-libvirtd) with one tiny guest:
# meta-data, probe monitor (guest stopped), recurring monitor (guest running), start+stop.
# Prints medians and the ratio heartbeat/ours. Uses hyperfine when installed, else a timing loop.
# Usage: bench/agent.sh [RUNS]   (root; RUNS defaults to 30, start+stop uses RUNS/5, at least 3)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-30}
CYCLES=$(( RUNS / 5 < 3 ? 3 : RUNS / 5 ))
OURS=$PWD/target/release/VirtualDomain
THEIRS=/usr/lib/ocf/resource.d/heartbeat/VirtualDomain

# shellcheck source=bench/lib.sh
. bench/lib.sh
bench_daemons 1 /tmp/hl-bench
GUEST=hlbench$$
bench_guest_xml "$GUEST" 32 >"$WORK/$GUEST.xml"
# $URI is URI[0], the one daemon.
mkdir -p "$WORK/rsctmp"

# The same resource for both agents. Utilization updates are off: heartbeat's would call
# crm_resource against a cluster that is not there.
export OCF_ROOT=/usr/lib/ocf OCF_RESOURCE_INSTANCE=$GUEST OCF_RESOURCE_TYPE=VirtualDomain
export OCF_RESKEY_config=$WORK/$GUEST.xml OCF_RESKEY_hypervisor=$URI OCF_RESKEY_force_stop=true
export OCF_RESKEY_autoset_utilization_cpu=false OCF_RESKEY_autoset_utilization_hv_memory=false
export OCF_RESKEY_autoset_utilization_host_memory=false
export OCF_RESKEY_CRM_meta_timeout=20000 HA_RSCTMP=$WORK/rsctmp

# rc AGENT ACTION: the agent's exit code
rc() { local r=0; "$1" "$2" >/dev/null 2>&1 || r=$?; echo "$r"; }

# median_ms RUNS COMMAND...: median wall time in ms (hyperfine, else a loop)
median_ms() {
    local runs=$1; shift
    if command -v hyperfine >/dev/null; then
        local shell=(-N)
        [ "$1" = sh ] && shell=()
        hyperfine "${shell[@]}" -i --style none --warmup 1 --runs "$runs" \
            --export-csv "$WORK/h.csv" -- "$(printf '%q ' "$@")" >/dev/null 2>&1
        awk -F, 'NR==2 { printf "%.2f", $4 * 1000 }' "$WORK/h.csv"
    else
        local i t0 t1
        for ((i = 0; i < runs; i++)); do
            t0=$(date +%s%N); "$@" >/dev/null 2>&1 || true; t1=$(date +%s%N)
            echo $(( (t1 - t0) / 1000 ))
        done | sort -n | awk '{ a[NR] = $1 } END { printf "%.2f", a[int((NR + 1) / 2)] / 1000 }'
    fi
}

ROWS=()
# row NAME EXPECTED_RC RUNS ACTION_OR_CMD...: times both agents, only when both give EXPECTED_RC.
row() {
    local name=$1 want=$2 runs=$3; shift 3
    local ours theirs got_ours got_theirs
    if [ "$1" = cycle ]; then
        got_ours=$(sh -c "'$OURS' start >/dev/null 2>&1 && '$OURS' stop >/dev/null 2>&1; echo \$?")
        got_theirs=$(sh -c "'$THEIRS' start >/dev/null 2>&1 && '$THEIRS' stop >/dev/null 2>&1; echo \$?")
    else
        got_ours=$(rc "$OURS" "$1"); got_theirs=$(rc "$THEIRS" "$1")
    fi
    if [ "$got_ours" != "$want" ] || [ "$got_theirs" != "$want" ]; then
        ROWS+=("$(printf '| %-34s | %12s | %12s | %8s |' "$name" "rc $got_ours" "rc $got_theirs" "n/a (want rc $want)")")
        return
    fi
    if [ "$1" = cycle ]; then
        ours=$(median_ms "$runs" sh -c "'$OURS' start && '$OURS' stop")
        theirs=$(median_ms "$runs" sh -c "'$THEIRS' start && '$THEIRS' stop")
    else
        ours=$(median_ms "$runs" "$OURS" "$1")
        theirs=$(median_ms "$runs" "$THEIRS" "$1")
    fi
    ROWS+=("$(printf '| %-34s | %9s ms | %9s ms | %7.1fx |' "$name" "$ours" "$theirs" "$(awk -v a="$theirs" -v b="$ours" 'BEGIN { print a / b }')")")
}

unset OCF_RESKEY_CRM_meta_interval
row "meta-data" 0 "$RUNS" meta-data
row "monitor, probe (guest stopped)" 7 "$RUNS" monitor
"$THEIRS" start >/dev/null 2>&1
export OCF_RESKEY_CRM_meta_interval=10000
row "monitor, recurring (guest running)" 0 "$RUNS" monitor
unset OCF_RESKEY_CRM_meta_interval
"$THEIRS" stop >/dev/null 2>&1
row "start + stop (force_stop=true)" 0 "$CYCLES" cycle

echo "VirtualDomain agents on one private libvirtd (QEMU TCG, 32 MiB diskless guest), medians:"
echo "runs: $RUNS per action, $CYCLES start+stop cycles; timer: $(command -v hyperfine >/dev/null && hyperfine --version || echo 'shell loop')"
printf '| %-34s | %12s | %12s | %8s |\n' "action" "highlander" "heartbeat" "ratio"
printf '|%s|%s|%s|%s|\n' "------------------------------------" "--------------" "--------------" "----------"
printf '%s\n' "${ROWS[@]}"
