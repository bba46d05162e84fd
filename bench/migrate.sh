#!/usr/bin/env bash
# Benchmark: our agent's migrate_to against a plain `virsh migrate --live` of the same guest
# between the same two private libvirtds (QEMU/TCG, started by test-cts's hl-libvirtd 2), side by
# side in one run. Each round moves the guest there and back with each tool (the order of the two
# tools alternates per round); every single move is one sample. Prints the median wall time of
# each and the ratio ours/virsh (goal: <= 1.05).
# Usage: bench/migrate.sh [ROUNDS] [MEMORY_MIB]   (root; ROUNDS defaults to 10, memory to 64)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-10}
MEM=${2:-64}
OURS=$PWD/target/release/VirtualDomain

# shellcheck source=bench/lib.sh
. bench/lib.sh
bench_daemons 2 /tmp/hl-bench-mig
GUEST=hlbenchmig$$
bench_guest_xml "$GUEST" $MEM >"$WORK/$GUEST.xml"
mkdir -p "$WORK/rsctmp0" "$WORK/rsctmp1"
virsh -q -c "${URI[0]}" create "$WORK/$GUEST.xml" >/dev/null

export OCF_ROOT=/usr/lib/ocf OCF_RESOURCE_INSTANCE=$GUEST OCF_RESOURCE_TYPE=VirtualDomain
export OCF_RESKEY_config=$WORK/$GUEST.xml OCF_RESKEY_force_stop=true
export OCF_RESKEY_CRM_meta_timeout=60000

now_us() { echo $(( $(date +%s%N) / 1000 )); }

# ours FROM TO: one migrate_to as Pacemaker runs it on node FROM; prints its wall time in us
ours() {
    local t0 t1 r=0
    t0=$(now_us)
    OCF_RESKEY_hypervisor=${URI[$1]} OCF_RESKEY_remoteuri=${URI[$2]} HA_RSCTMP=$WORK/rsctmp$1 \
        OCF_RESKEY_CRM_meta_migrate_source=node$(( $1 + 1 )) \
        OCF_RESKEY_CRM_meta_migrate_target=node$(( $2 + 1 )) \
        "$OURS" migrate_to >"$WORK/last.out" 2>&1 || r=$?
    t1=$(now_us)
    [ "$r" = 0 ] || { echo "bench: migrate_to $1->$2 rc $r: $(cat "$WORK/last.out")" >&2; exit 1; }
    echo $(( t1 - t0 ))
}

# plain FROM TO: `virsh migrate --live` of the same guest; prints its wall time in us
plain() {
    local t0 t1
    t0=$(now_us)
    virsh -q -c "${URI[$1]}" migrate --live "$GUEST" "${URI[$2]}" >"$WORK/last.out" 2>&1 \
        || { echo "bench: virsh migrate $1->$2: $(cat "$WORK/last.out")" >&2; exit 1; }
    t1=$(now_us)
    echo $(( t1 - t0 ))
}

: >"$WORK/ours" ; : >"$WORK/plain"
# One untimed warm-up move each way with each tool.
ours 0 1 >/dev/null; ours 1 0 >/dev/null; plain 0 1 >/dev/null; plain 1 0 >/dev/null
for ((i = 0; i < ROUNDS; i++)); do
    if (( i % 2 == 0 )); then
        ours 0 1 >>"$WORK/ours"; ours 1 0 >>"$WORK/ours"
        plain 0 1 >>"$WORK/plain"; plain 1 0 >>"$WORK/plain"
    else
        plain 0 1 >>"$WORK/plain"; plain 1 0 >>"$WORK/plain"
        ours 0 1 >>"$WORK/ours"; ours 1 0 >>"$WORK/ours"
    fi
done

median_ms() { sort -n "$1" | awk '{ a[NR] = $1 } END { printf "%.1f", a[int((NR + 1) / 2)] / 1000 }'; }
O=$(median_ms "$WORK/ours")
P=$(median_ms "$WORK/plain")
N=$(wc -l <"$WORK/ours")
echo "guest: ${MEM} MiB TCG, idle; $N moves per tool ($ROUNDS rounds there and back); load: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '| %-34s | %12s |\n' "command" "median (ms)"
printf '|%s|%s|\n' "------------------------------------" "--------------"
printf '| %-34s | %12s |\n' "VirtualDomain migrate_to (ours)" "$O"
printf '| %-34s | %12s |\n' "virsh migrate --live" "$P"
awk -v o="$O" -v p="$P" 'BEGIN { printf "ratio ours/virsh: %.3f\n", o / p }'
