#!/usr/bin/env bash
# Runs Pacemaker 2.1.5's crm_simulate on every recovery scenario: crm_simulate.expect is
# `crm_simulate -S -x cib.xml` on the initial CIB (pengine/tests/recovery_scenarios.rs compares our
# Transition Summary with it); crm_simulate.log replays the cmdlist through crm_simulate (-i/-F/-f/
# -u/-t, crm_attribute and cibadmin on the saved CIB) in the shape of our log.expect, so the two can
# be read side by side.
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
# The scenarios' virtual start (pengine/tests/recovery_scenarios.rs START) and monitor interval.
start=1764500000
monitor_ms=10000
iso() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }

# Erases a node's history and transient attributes (a node that left cleanly, or rejoins).
forget_node() {
    CIB_file=$cur cibadmin -D -A "//node_state[@uname='$1']/lrm" >/dev/null 2>&1 || true
    CIB_file=$cur cibadmin -D -A "//node_state[@uname='$1']/transient_attributes" >/dev/null 2>&1 || true
}
node_down() {
    local id
    id=$(grep -o "<node id=\"[^\"]*\" uname=\"$1\"" "$cur" | sed 's/<node id="\([^"]*\)".*/\1/')
    CIB_file=$cur cibadmin -M -X "<node_state id=\"$id\" uname=\"$1\" in_ccm=\"false\" crmd=\"offline\" join=\"down\" expected=\"down\"/>"
    forget_node "$1"
}

# Plans and executes with crm_simulate until a transition does nothing (at most 10), printing
# each Transition Summary line and the actions that ran, in our log's shape.
settle() {
    local first=("$@") i args actions
    for ((i = 0; i < 10; i++)); do
        args=(-x "$cur" -S -t "$(iso "$now")" -O "$scratch/next.xml")
        ((i == 0)) && args+=("${first[@]}")
        for key in "${!armed[@]}"; do
            read -r r n t <<<"$key"
            args+=(-F "${r}_${t}_0@${n}=1")
        done
        crm_simulate "${args[@]}" >"$scratch/step" 2>&1 || { echo "crm_simulate failed"; cat "$scratch/step"; return 1; }
        actions=$(awk '/^Executing Cluster Transition:/{on=1;next} on&&/^$/{exit} on&&/^  \*/{print}' "$scratch/step")
        if [[ -z $actions && $i -gt 0 ]]; then break; fi
        tn=$((tn + 1))
        awk '/^Transition Summary:/{on=1;next} on&&/^$/{exit} on{print}' "$scratch/step" \
            | sed 's/^ *\* //; s/  */ /g' | while read -r l; do printf '%6ss  T%s plan: %s\n' $((now - start)) "$tn" "$l"; done
        printf '%6ss  T%s ran: %s\n' $((now - start)) "$tn" \
            "$(sed 's/^ *\* //; s/  */ /g; s/Resource action: //; s/Cluster action: //; s/Pseudo action: //' <<<"$actions" | paste -sd ';' | sed 's/;/; /g')"
        mv "$scratch/next.xml" "$cur"
        for node in $(grep -o 'do_shutdown on [^ ]*' <<<"$actions" | awk '{print $3}'); do node_down "$node"; done
        for key in "${!armed[@]}"; do
            read -r r n t <<<"$key"
            if grep -q "$r *$t on $n\$" <<<"$actions" && [[ ${armed[$key]} != always ]]; then
                armed[$key]=$((armed[$key] - 1)); ((armed[$key] > 0)) || unset "armed[$key]"
            fi
        done
        [[ -z $actions ]] && break
    done
    awk '/^Revised Cluster Status:/{on=1;next} on' "$scratch/step" | grep -E '^\s+\* (vm|Online|OFFLINE|Node [^L])' \
        | sed 's/^ *\* //; s/\t/ /g; s/  */ /g' | while read -r l; do printf '%6ss    %s\n' $((now - start)) "$l"; done
}

# Replays a scenario's cmdlist through Pacemaker: same CIB, same events, Pacemaker's plans. Our
# own attributes (recovery-*, shutdown-policy, origin-*, evacuate) mean nothing to it.
replay() {
    local dir=$1 line w
    cur=$scratch/cur.xml
    cp "$dir/cib.xml" "$cur"
    now=$start tn=0
    declare -gA armed=()
    settle
    while IFS= read -r line; do
        line=${line%%#*}
        read -r -a w <<<"$line"
        ((${#w[@]})) || continue
        printf '%6ss  > %s\n' $((now - start)) "${w[*]}"
        case ${w[0]} in
            fail) if [[ ${w[3]} == monitor ]]; then settle -i "${w[1]}_monitor_${monitor_ms}@${w[2]}=7"; continue
                  else t=${w[3]}; [[ $t == migrate ]] && t=migrate_to; armed["${w[1]} ${w[2]} $t"]=${w[4]:-1}; fi ;;
            repair) for t in start stop migrate_to; do unset "armed[${w[1]} ${w[2]} $t]"; done ;;
            fail-fence) printf '%6ss    (not replayed: crm_simulate cannot fail a fencing action)\n' $((now - start)) ;;
            shutdown) CIB_file=$cur crm_attribute -N "${w[1]}" -n shutdown -v "$now" -l reboot >/dev/null ;;
            crash) settle -f "${w[1]}"; continue ;;
            fence) node_down "${w[1]}" ;;
            join) forget_node "${w[1]}"; settle -u "${w[1]}"; continue ;;
            advance) now=$((now + $(sed 's/s$//; s/\([0-9]*\)m$/\1*60/; s/\([0-9]*\)h$/\1*3600/' <<<"${w[1]}"))) ;;
            evacuate) CIB_file=$cur crm_attribute -N "${w[1]}" -n evacuate -v true >/dev/null ;;
            restore) CIB_file=$cur crm_attribute -N "${w[1]}" -n evacuate -D >/dev/null ;;
            cleanup) # cibadmin -D deletes one match per call (and succeeds when none is left)
                     for _ in $(seq 20); do
                         CIB_file=$cur cibadmin -D -A "//nvpair[starts-with(@name,'fail-count-${w[1]}#') or starts-with(@name,'last-failure-${w[1]}#')]" >/dev/null 2>&1 || true
                         CIB_file=$cur cibadmin -D -A "//lrm_resource[@id='${w[1]}']" >/dev/null 2>&1 || true
                     done ;;
            *) echo "regen.sh: unknown event: $line" >&2; return 1 ;;
        esac
        settle
    done <"$dir/cmdlist"
}

status=0
for dir in "$root"/*/; do
    name=$(basename "$dir")
    [[ -f $dir/cib.xml ]] || continue
    # crm_verify exits 78 on warnings; the only ones allowed are those of scenario 21, which
    # disables fencing on purpose and sets requires=fencing.
    rc=0
    crm_verify -x "$dir/cib.xml" -VVV >"$scratch/verify" 2>&1 || rc=$?
    others=$(grep -E 'warning:|error:' "$scratch/verify" \
        | grep -Ev 'requires fencing but fencing is disabled|Blind faith: not fencing unseen nodes' || true)
    if [[ $rc -ne 0 && ( $rc -ne 78 || -n $others ) ]]; then
        echo "FAIL $name: crm_verify exit $rc"; echo "$others"; status=1; continue
    fi
    if ! (cd "$dir" && crm_simulate -S -x cib.xml) >"$scratch/out" 2>&1; then
        echo "FAIL $name: crm_simulate"; tail -3 "$scratch/out"; status=1; continue
    fi
    if ! replay "${dir%/}" >"$scratch/replay" 2>&1; then
        echo "FAIL $name: replay"; tail -5 "$scratch/replay"; status=1; continue
    fi
    if [[ $mode == update ]]; then
        cp "$scratch/out" "$dir/crm_simulate.expect"
        cp "$scratch/replay" "$dir/crm_simulate.log"
        echo "wrote $name/crm_simulate.expect, crm_simulate.log"
    elif ! diff -u "$dir/crm_simulate.expect" "$scratch/out" || ! diff -u "$dir/crm_simulate.log" "$scratch/replay"; then
        echo "FAIL $name: crm_simulate output changed"; status=1
    else
        echo "ok   $name"
    fi
done
exit $status
