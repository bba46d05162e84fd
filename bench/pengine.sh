#!/usr/bin/env bash
# Benchmark: `pengine simulate -x F -S` against `crm_simulate -x F -S` on the same inputs, side by
# side in one run: generated clusters (gen-cib: nodes x primitives with location, colocation and
# ordering constraints, operation history, one node draining) and the largest corpus inputs.
# Prints a Markdown table: median wall and CPU time, the CPU ratio, peak memory (max RSS from
# /usr/bin/time), whether pengine printed what crm_simulate printed, and growth with size. Each
# row and a closing list say whether crm_simulate ran to completion there, was stopped at the cap
# (a lower bound) or was not run; no figure is extrapolated.
#
#   bench/pengine.sh                      # the default sizes, a few minutes
#   BENCH_SIZES="64x10000" BENCH_CAP_S=3600 bench/pengine.sh   # let crm_simulate finish
#
# Environment: BENCH_SIZES (NODESxRESOURCES list), BENCH_CAP_S (longest single run, seconds;
# slower runs are stopped and reported as such), BENCH_REPS (most runs per tool and input),
# BENCH_BUDGET_S (stop repeating once a tool spent this long on an input), BENCH_SEED,
# BENCH_DIR (where inputs and outputs go; a temporary directory by default), BENCH_PENGINE (a
# pengine binary to time instead of building this tree's; BENCH_PENGINE_REV names its commit).
# `bench/pengine.sh --report DIR` prints the table of an earlier run again.
set -euo pipefail
cd "$(dirname "$0")/.."

SIZES=${BENCH_SIZES:-"16x1000 32x1000 64x1000 64x2000 64x5000 64x10000"}
CAP_S=${BENCH_CAP_S:-90}
REPS=${BENCH_REPS:-5}
BUDGET_S=${BENCH_BUDGET_S:-10}
SEED=${BENCH_SEED:-1}
CORPUS=testdata/pacemaker-2.1.5

# run TOOL FILE OUT TIMES: one run, appending "wall cpu maxrss_kb status" to TIMES.
run() {
    local tool=$1 file=$2 out=$3 times=$4 t=$DIR/time.$$ status=ok rc=0
    local cmd
    if [ "$tool" = pengine ]; then cmd=("$PENGINE" simulate -x "$file" -S); else cmd=(crm_simulate -x "$file" -S); fi
    /usr/bin/time -f '%e %U %S %M' -o "$t" timeout -k 10 "$CAP_S" "${cmd[@]}" >"$out" 2>&1 || rc=$?
    if [ "$rc" -eq 137 ] || [ "$rc" -eq 124 ]; then status=stopped; elif [ "$rc" -ne 0 ]; then status="exit-$rc"; fi
    # /usr/bin/time prints "Command exited with non-zero status N" first when N != 0.
    tail -n 1 "$t" | awk -v s="$status" '{ printf "%.3f %.3f %d %s\n", $1, $2 + $3, $4, s }' >>"$times"
}

# measure TOOL FILE TAG: repeated runs within the budget; prints "wall cpu rss status runs".
measure() {
    local tool=$1 file=$2 tag=$3 times=$DIR/$3.$1.times spent=0 n=0
    : >"$times"
    while [ "$n" -lt "$REPS" ]; do
        run "$tool" "$file" "$DIR/$tag.$tool.out" "$times"
        n=$((n + 1))
        spent=$(awk '{ s += $1 } END { printf "%d", s }' "$times")
        grep -q ' ok$' "$times" || break
        [ "$spent" -lt "$BUDGET_S" ] || break
    done
    local m wall cpu rss status
    m=$(( ($(wc -l <"$times") + 1) / 2 ))
    wall=$(sort -n -k1,1 "$times" | sed -n "${m}p" | cut -d' ' -f1)
    cpu=$(sort -n -k2,2 "$times" | sed -n "${m}p" | cut -d' ' -f2)
    rss=$(sort -n -k3,3 "$times" | tail -n 1 | cut -d' ' -f3)
    status=$( (grep -v ' ok$' "$times" || echo "x x x ok") | head -n 1 | cut -d' ' -f4)
    echo "$wall $cpu $rss $status $n"
}

crm_run() { # STATUS RUNS: whether crm_simulate ran for real on this input
    case $1 in
        ok) echo "measured ($2 finished runs)" ;;
        stopped) echo "stopped at the cap: lower bound" ;;
        skipped) echo "not run" ;;
        *) echo "failed ($1)" ;;
    esac
}

fmt_time() { # SECONDS STATUS
    case $2 in
        ok) awk -v s="$1" 'BEGIN { if (s < 1) printf "%.0f ms", s * 1000; else printf "%.2f s", s }' ;;
        stopped) awk -v s="$1" 'BEGIN { printf "> %.0f s (stopped)", s }' ;;
        skipped) echo "not run (stopped on a smaller input)" ;;
        *) echo "fails ($2)" ;;
    esac
}

# report: the Markdown table and the growth lines from $DIR (rows, outputs, meta).
report() {
    # shellcheck source=/dev/null
    . "$DIR/meta"
    local ROWS=$DIR/rows
    echo "Measured $MEASURED on $CPUS CPUs ($CRM_VERSION, pengine $PENGINE_REV), load average $LOAD_BEFORE before and $LOAD_AFTER after:"
    echo "\`bench/pengine.sh\` with BENCH_SIZES=\"$SIZES\" BENCH_CAP_S=$CAP_S BENCH_REPS=$REPS BENCH_BUDGET_S=$BUDGET_S BENCH_SEED=$SEED."
    echo "Times are medians (runs in brackets; CPU = user + system, in 10 ms steps); a ratio is crm_simulate's time over pengine's."
    echo
    echo "| input | nodes | primitives | KiB | crm_simulate run | crm_simulate wall | crm_simulate CPU | pengine wall | pengine CPU | ratio wall | ratio CPU | crm_simulate max RSS | pengine max RSS | pengine prints what crm_simulate prints |"
    echo "|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"
    while IFS='|' read -r tag label nodes resources kb crm pe; do
        read -r cw cc cr cs cn <<<"$crm"
        read -r pw pc pr ps pn <<<"$pe"
        ratio() { # CRM PENGINE: crm_simulate's time over pengine's (times have 10 ms steps)
            awk -v c="$1" -v p="$2" -v cs="$cs" -v ps="$ps" 'BEGIN {
                if (ps != "ok") { print "n/a"; exit }
                if (p < 0.01) p = 0.01
                if (cs == "ok") printf "%.0fx", c / p; else if (cs == "stopped") printf "> %.0fx", c / p; else print "n/a" }'
        }
        same="n/a"
        if [ "$cs" = ok ] && [ "$ps" = ok ]; then
            if diff -q -w -B "$DIR/$tag.crm_simulate.out" "$DIR/$tag.pengine.out" >/dev/null; then
                same=yes
            else
                same="no ($( (diff -w -B "$DIR/$tag.crm_simulate.out" "$DIR/$tag.pengine.out" || true) | grep -c '^[<>]') lines differ)"
            fi
        elif [ "$ps" != ok ]; then
            same="pengine $(fmt_time "$pw" "$ps")"
        fi
        echo "| $label | $nodes | $resources | $kb | $(crm_run "$cs" "$cn") | $(fmt_time "$cw" "$cs") [$cn] | $(fmt_time "$cc" "$cs") | $(fmt_time "$pw" "$ps") [$pn] | $(fmt_time "$pc" "$ps") | $(ratio "$cw" "$pw") | $(ratio "$cc" "$pc") | $([ "$cs" = skipped ] && echo n/a || echo "$((cr / 1024)) MiB") | $((pr / 1024)) MiB | $same |"
    done <"$ROWS"
    echo
    # Say in words which crm_simulate figures are measurements: nothing here is extrapolated.
    awk -F'|' '{ split($6, c, " ")
        if (c[4] == "ok") done = done sprintf(" %s (%s)", $1, c[5])
        else if (c[4] == "stopped") stopped = stopped " " $1
        else if (c[4] == "skipped") skipped = skipped " " $1
        else failed = failed " " $1 }
        END {
            printf "crm_simulate ran to completion (runs) on:%s.\n", done == "" ? " none" : done
            if (stopped != "") printf "crm_simulate was stopped at the %s s cap (its times are lower bounds, not measurements of a finished run) on:%s.\n", cap, stopped
            if (skipped != "") printf "crm_simulate was not run (a smaller input with as many nodes was stopped) on:%s.\n", skipped
            if (failed != "") printf "crm_simulate failed on:%s.\n", failed
            print "No figure in this table is extrapolated."
        }' cap="$CAP_S" "$ROWS"
    echo
    # Growth: the exponent k in time ~ size^k between consecutive generated sizes with equal nodes.
    awk -F'|' '$1 ~ /^gen-/ {
        split($6, c, " "); split($7, p, " ")
        if ($3 == pn && pr > 0) {
            gp = (p[4] == "ok" && pp > 0) ? sprintf("%.2f", log(p[2] / pp) / log($4 / pr)) : "n/a"
            gc = "n/a"
            if (cps == "ok" && cp > 0 && c[4] == "ok") gc = sprintf("%.2f", log(c[2] / cp) / log($4 / pr))
            if (cps == "ok" && cp > 0 && c[4] == "stopped" && c[2] > cp) gc = sprintf("> %.2f", log(c[2] / cp) / log($4 / pr))
            printf "Growth %d -> %d primitives on %d nodes: CPU time ~ size^k with k = %s (crm_simulate), %s (pengine).\n", pr, $4, $3, gc, gp
        }
        pn = $3; pr = $4; cp = c[2]; cps = c[4]; pp = p[2]
    }' "$ROWS"
}

if [ "${1:-}" = --report ]; then # re-render the table of an earlier run: --report DIR
    DIR=$2
    report
    exit 0
fi

DIR=${BENCH_DIR:-$(mktemp -d /tmp/pengine-bench.XXXXXX)}
mkdir -p "$DIR"
bash tools/deps.sh # crm_simulate, crm_verify, /usr/bin/time
if [ -n "${BENCH_PENGINE:-}" ]; then
    # A given pengine binary (e.g. a baseline build) and the built gen-cib: nothing is rebuilt.
    PENGINE=$BENCH_PENGINE
    PENGINE_REV=${BENCH_PENGINE_REV:-"$BENCH_PENGINE (unknown commit)"}
else
    cargo build --release -q -p pengine --bin pengine -p test-cts --bin gen-cib
    PENGINE=$PWD/target/release/pengine
    PENGINE_REV="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- pengine || echo ' with uncommitted changes')"
fi
GEN=$PWD/target/release/gen-cib
export LC_ALL=C

ROWS=$DIR/rows
: >"$ROWS"
LOAD_BEFORE=$(cut -d' ' -f1 /proc/loadavg)
STOPPED=" " # node counts at which crm_simulate was stopped: larger inputs there are not run
bench_one() { # TAG LABEL NODES RESOURCES FILE
    local tag=$1 label=$2 nodes=$3 resources=$4 file=$5
    local kb crm pe
    kb=$(($(stat -c %s "$file") / 1024))
    echo "bench: $label, $nodes nodes, $resources primitives ($kb KiB)" >&2
    pe=$(measure pengine "$file" "$tag")
    if [[ $tag == gen-* && $STOPPED == *" $nodes "* ]]; then
        crm="0 0 0 skipped 0"
    else
        crm=$(measure crm_simulate "$file" "$tag")
        [[ $crm != *" stopped "* || $tag != gen-* ]] || STOPPED="$STOPPED$nodes "
    fi
    echo "$tag|$label|$nodes|$resources|$kb|$crm|$pe" >>"$ROWS"
}

for size in $SIZES; do
    nodes=${size%x*}
    resources=${size#*x}
    file=$DIR/gen-$size.xml
    "$GEN" --nodes "$nodes" --resources "$resources" --seed "$SEED" >"$file"
    crm_verify -x "$file" || { echo "bench: crm_verify rejects $file" >&2; exit 1; }
    bench_one "gen-$size" "generated, seed $SEED" "$nodes" "$resources" "$file"
done
if [ -d "$CORPUS/xml" ]; then
    # The three largest corpus inputs and the slowest one for crm_simulate.
    for name in $( (ls -S "$CORPUS/xml" | head -n 3 | sed 's/\.xml$//'; echo one-or-more-unrunnable-instances) | awk '!seen[$0]++'); do
        file=$CORPUS/xml/$name.xml
        nodes=$(grep -c '<node ' "$file" || true)
        resources=$(grep -c '<primitive ' "$file" || true)
        bench_one "corpus-$name" "corpus \`$name\`" "$nodes" "$resources" "$file"
    done
else
    echo "bench: $CORPUS is missing: the corpus is part of the repository" >&2
    exit 1
fi

cat >"$DIR/meta" <<META
MEASURED="$(date -u +%Y-%m-%d)"
CPUS="$(nproc)"
CRM_VERSION="$(crm_simulate --version | head -n 1)"
PENGINE_REV="$PENGINE_REV"
LOAD_BEFORE="$LOAD_BEFORE"
LOAD_AFTER="$(cut -d' ' -f1 /proc/loadavg)"
SIZES="$SIZES"
CAP_S="$CAP_S"
REPS="$REPS"
BUDGET_S="$BUDGET_S"
SEED="$SEED"
META
report | tee "$DIR/bench.md"
echo "bench: inputs, outputs and bench.md are in $DIR" >&2
