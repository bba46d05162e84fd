#!/bin/sh
# Behaviour-identity check for refactors: runs the built pengine over every CIB of a corpus folder
# (simulate -S, -s, -G FILE, -D FILE, each with the case's extra arguments from tests.tsv when the
# folder has one next to it), over pengine's oracle CIBs and scenario CIBs, and prints one digest
# per case and a total. Run it before and after a change: the totals must match.
# Usage: tools/plan-digests.sh CORPUS_XML_DIR [PENGINE_BINARY]
#   e.g. tools/plan-digests.sh testdata/pacemaker-2.1.5/xml > /tmp/before.txt
# The date is fixed (-t) where a CIB has no execution-date, so the output does not depend on the
# clock. The digests of -G and -D are of the files written. With cts-sim built next to pengine,
# a seed block of the cluster simulator is digested too.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
xml_dir=${1:?usage: tools/plan-digests.sh CORPUS_XML_DIR [PENGINE_BINARY]}
bin=${2:-$root/target/release/pengine}
[ -d "$xml_dir" ] || { echo "no such folder: $xml_dir" >&2; exit 2; }
[ -x "$bin" ] || { echo "no pengine binary at $bin (cargo build --release -p pengine)" >&2; exit 2; }
tsv="$xml_dir/../tests.tsv"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fixed_date="2026-01-01 00:00:00Z"

# One case: all four outputs (stdout, stderr and exit code of each run) into one digest.
digest_case() {
  cib=$1; shift
  date_args=""
  grep -q "execution-date" "$cib" || date_args="yes"
  case " $extra " in *" -t "*) date_args="" ;; esac
  for mode in S s G D; do
    case $mode in
      S) set -- -S ;;
      s) set -- -s ;;
      G) set -- -G "$tmp/graph" ;;
      D) set -- -D "$tmp/dot" ;;
    esac
    rm -f "$tmp/graph" "$tmp/dot"
    if [ -n "$date_args" ]; then
      # shellcheck disable=SC2086
      LC_ALL=C timeout 60 "$bin" simulate -x "$cib" -t "$fixed_date" "$@" $extra >"$tmp/out" 2>"$tmp/err"
    else
      # shellcheck disable=SC2086
      LC_ALL=C timeout 60 "$bin" simulate -x "$cib" "$@" $extra >"$tmp/out" 2>"$tmp/err"
    fi
    echo "rc=$? mode=$mode"
    cat "$tmp/out" "$tmp/err"
    [ -f "$tmp/graph" ] && cat "$tmp/graph"
    [ -f "$tmp/dot" ] && cat "$tmp/dot"
  done | sha256sum | cut -c1-16
}

extra_of() {
  extra=""
  [ -f "$tsv" ] && extra=$(awk -F'\t' -v n="$1" '$1 == n { print $3; exit }' "$tsv")
}

for cib in "$xml_dir"/*.xml; do
  name=$(basename "$cib" .xml)
  extra_of "$name"
  echo "corpus/$name $(digest_case "$cib")"
done > "$tmp/list"
extra=""
for cib in "$root"/pengine/tests/oracle-cibs/*.xml; do
  echo "oracle/$(basename "$cib" .xml) $(digest_case "$cib")"
done >> "$tmp/list"
for cib in "$root"/pengine/scenarios/*/*/cib.xml; do
  case_dir=$(dirname "$cib")
  echo "scenario/$(basename "$(dirname "$case_dir")")/$(basename "$case_dir") $(digest_case "$cib")"
done >> "$tmp/list"
# A seed block of the cluster simulator (cts-sim next to pengine), both VM models; the last
# line's wall-clock figures are dropped.
sim=$(dirname "$bin")/cts-sim
if [ -x "$sim" ]; then
  for profile in atomic full; do
    echo "sim/$profile-seeds-1..100 $("$sim" --seeds 1..100 --profile "$profile" --verbose | sed 's/ wall=.*//' | sha256sum | cut -c1-16)"
  done >> "$tmp/list"
  echo "sim/scenario-2013 $("$sim" --scenario 2013 --verbose | sed 's/ wall=.*//' | sha256sum | cut -c1-16)" >> "$tmp/list"
else
  echo "no cts-sim next to $bin: seed block skipped (cargo build --release -p test-cts --bin cts-sim)" >&2
fi
cat "$tmp/list"
echo "total $(wc -l < "$tmp/list") cases $(sha256sum < "$tmp/list" | cut -c1-16)"
