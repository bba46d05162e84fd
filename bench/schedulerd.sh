#!/usr/bin/env bash
# Benchmark: time from a pe_calc request to its reply, as the controller sees it, for
# highlander-schedulerd (guard off: `trusted`; guard on: `guarded`, which also runs
# crm_simulate on the input) against Pacemaker 2.1.5's own pacemaker-schedulerd. The same
# client (`highlander-schedulerd request`, the controller's request over libqb IPC) asks each
# daemon BENCH_REPS times in a row; each daemon runs alone in private network and mount
# namespaces (its saved inputs go to a scratch directory, not /var/lib/pacemaker).
# Inputs: the sample cluster and generated 32-node CIBs (gen-cib) of 100 and 1,000 VMs.
# Prints a Markdown table: median round trip in ms and the ratio to Pacemaker's.
#
#   bench/schedulerd.sh                          # needs root (namespaces)
#   BENCH_SIZES="32x100 32x1000" BENCH_REPS=10 bench/schedulerd.sh
set -euo pipefail
cd "$(dirname "$0")/.."

SIZES=${BENCH_SIZES:-"32x100 32x1000"}
REPS=${BENCH_REPS:-10}
SEED=${BENCH_SEED:-1}
DIR=${BENCH_DIR:-$(mktemp -d)}
mkdir -p "$DIR"
# Generated CIBs of 1,000 VMs do not fit Pacemaker's default 128 KiB IPC buffer even
# compressed; clusters that size set PCMK_ipc_buffer, and so does this run (both daemons).
export PCMK_ipc_buffer=${PCMK_ipc_buffer:-4194304}

[ "$(id -u)" -eq 0 ] || { echo "schedulerd.sh: needs root (unshare, mount)" >&2; exit 1; }
cargo build --release -q -p highlander-schedulerd -p test-cts --bin gen-cib
BIN=$PWD/target/release/highlander-schedulerd
GEN=$PWD/target/release/gen-cib

# One daemon in its own namespaces: $1 = pacemaker|trusted|guarded, $2 = CIB, $3 = output.
cat >"$DIR/side.sh" <<'EOF'
set -e
kind=$1 cib=$2 out=$3 bin=$4 reps=$5 state=$6
mkdir -p "$state"
mount --bind "$state" /var/lib/pacemaker/pengine
chown hacluster:haclient "$state"
if [ "$kind" = pacemaker ]; then
    PCMK_logfile=/dev/null /usr/lib/pacemaker/pacemaker-schedulerd &
else
    "$bin" --mode "$kind" --logfile /dev/null &
fi
p=$!
trap 'kill $p' EXIT
for i in $(seq 200); do "$bin" ping >/dev/null 2>&1 && break; sleep 0.05; done
"$bin" request "$cib" --repeat "$reps" >"$out"
EOF

# median MS-FILE: the median of the "reply N: X ms" lines.
median() {
    grep -o 'reply [0-9]*: [0-9.]* ms' "$1" | awk '{ print $3 }' | sort -n |
        awk '{ v[NR] = $1 } END { if (NR == 0) print "n/a"; else print v[int((NR + 1) / 2)] }'
}

inputs=("sample:$PWD/examples/cibs/sample-cluster.xml")
for size in $SIZES; do
    nodes=${size%x*} vms=${size#*x}
    "$GEN" --nodes "$nodes" --resources "$vms" --seed "$SEED" >"$DIR/cib-$size.xml"
    inputs+=("$size:$DIR/cib-$size.xml")
done

echo "| input | CIB KiB | pacemaker-schedulerd ms | highlander trusted ms | ratio | highlander guarded ms | ratio |"
echo "|---|---|---|---|---|---|---|"
for entry in "${inputs[@]}"; do
    name=${entry%%:*} cib=${entry#*:}
    declare -A ms=()
    for kind in pacemaker trusted guarded; do
        out=$DIR/$name.$kind.txt
        unshare -m -n --propagation private bash "$DIR/side.sh" "$kind" "$cib" "$out" "$BIN" "$REPS" "$DIR/state-$name-$kind" 2>"$DIR/$name.$kind.err" ||
            { ms[$kind]=failed; continue; }
        ms[$kind]=$(median "$out")
    done
    ratio() { awk -v a="$1" -v b="${ms[pacemaker]}" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "n/a" }'; }
    kib=$(( $(wc -c <"$cib") / 1024 ))
    echo "| $name | $kib | ${ms[pacemaker]} | ${ms[trusted]} | $(ratio "${ms[trusted]}") | ${ms[guarded]} | $(ratio "${ms[guarded]}") |"
done
echo
echo "Median of $REPS requests per daemon (the first includes reading and saving a new input; the"
echo "others are repeats of the same input). Ratio: Highlander's time over Pacemaker's. Outputs in $DIR."
