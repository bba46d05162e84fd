#!/bin/sh
# Quick local conformance loop: runs `pengine simulate -S` on corpus cases and diffs the summary
# whitespace-insensitively. Usage: tools/pengine-loop.sh [case-list-file]  (default: all tests.tsv)
# Prints one line per case (PASS/FAIL name) and a total.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
corpus=$root/testdata/pacemaker-2.1.5
bin=$root/target/release/pengine
list=${1:-}
if [ -z "$list" ]; then list=$(mktemp); tail -n +2 "$corpus/tests.tsv" | cut -f1 > "$list"; fi
pass=0; fail=0
while read -r name; do
  [ -f "$corpus/xml/$name.xml" ] || continue
  if LC_ALL=C timeout 10 "$bin" simulate -x "$corpus/xml/$name.xml" -S 2>&1 | \
     diff -q -N --ignore-all-space --ignore-blank-lines "$corpus/summary/$name.summary" - >/dev/null; then
    pass=$((pass+1)); echo "PASS $name"
  else
    fail=$((fail+1)); echo "FAIL $name"
  fi
done < "$list"
echo "$pass passed, $fail failed"
