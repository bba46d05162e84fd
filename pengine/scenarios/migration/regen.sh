#!/usr/bin/env bash
# Re-produces every scenario's pacemaker.summary with the installed crm_simulate (Pacemaker 2.1.5)
# and fails when one differs from the committed file, so the goldens are reproducible, not typed.
#   regen.sh            check every scenario (exit 1 on any difference or invalid CIB)
#   regen.sh --update   rewrite the pacemaker.summary files (review the diff like code)
# Each scenario dir holds cib.xml and optionally `inject` (extra crm_simulate arguments, one line).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
update=0
[[ ${1:-} == --update ]] && update=1

command -v crm_simulate >/dev/null || { echo "regen.sh: crm_simulate not installed" >&2; exit 2; }
version=$(crm_simulate --version 2>/dev/null | head -1)
[[ $version == *"Pacemaker 2.1.5"* ]] || echo "regen.sh: WARNING: expected Pacemaker 2.1.5, found: $version" >&2

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export LC_ALL=C CIB_shadow_dir="$work"

# crm_verify exits 78 for warnings. For a CIB that shows a lost node, the only acceptable warnings
# are the ones that announce its fencing (and, for a copy on the lost node, the scheduler's "might
# be active on 2 nodes", and the failed stop that fences a node with its INFINITY fail count);
# anything else is a mistake in the hand-written status.
fencing_warning='will be fenced|is unclean|is unrunnable \(node is offline\)|Scheduling node .* for fencing|might be active on 2 nodes|Unexpected result \(error[^)]*\) was recorded for stop of|due to reaching migration threshold'

failed=0
for dir in "$here"/*/; do
    name=$(basename "$dir")
    cib="$dir/cib.xml"
    [[ -f $cib ]] || continue
    [[ -f $dir/README.md ]] || { echo "FAIL $name: no README.md"; failed=1; }

    set +e
    verify=$(crm_verify -x "$cib" -VVV 2>&1)
    rc=$?
    set -e
    if [[ $rc -eq 78 ]]; then
        other=$(grep -E 'warning:|error:' <<<"$verify" | grep -Ev "$fencing_warning" || true)
        if [[ -n $other ]]; then
            echo "FAIL $name: crm_verify warnings not about fencing:"; echo "$other"; failed=1
        fi
    elif [[ $rc -ne 0 ]]; then
        echo "FAIL $name: crm_verify exit $rc"; grep -E 'error' <<<"$verify" | head -5; failed=1
        continue
    fi

    args=()
    if [[ -f $dir/inject ]]; then
        read -r -a args <"$dir/inject"
    fi
    set +e
    (cd "$dir" && crm_simulate -x cib.xml -S "${args[@]}") >"$work/out" 2>&1
    rc=$?
    set -e
    if [[ $rc -ne 0 ]]; then
        echo "FAIL $name: crm_simulate exit $rc"; tail -3 "$work/out"; failed=1
        continue
    fi
    golden="$dir/pacemaker.summary"
    if [[ $update -eq 1 || ! -f $golden ]]; then
        cp "$work/out" "$golden"
        echo "wrote $name/pacemaker.summary"
    elif ! diff -u "$golden" "$work/out" >"$work/diff"; then
        echo "FAIL $name: crm_simulate output differs from pacemaker.summary"; cat "$work/diff"; failed=1
    else
        echo "ok   $name"
    fi
done

# pacemaker.md 4.4(a): the corpus case migrate-partial-2 with its cli-prefer constraint deleted is the
# 2013 scenario. Check the claim on a temporary copy of the corpus case (testdata/).
corpus=$here/../../../testdata/pacemaker-2.1.5/xml/migrate-partial-2.xml
if [[ -f $corpus ]]; then
    cp "$corpus" "$work/mp2.xml"
    CIB_file="$work/mp2.xml" cibadmin --delete --xml-text '<rsc_location id="cli-prefer-test-vm"/>'
    crm_simulate -x "$work/mp2.xml" -S >"$work/mp2.out" 2>&1
    if grep -Eq '^  \* Move +test-vm +\( hex-13 -> hex-14 \)$' "$work/mp2.out"; then
        echo "ok   corpus migrate-partial-2 without cli-prefer: Move test-vm ( hex-13 -> hex-14 )"
    else
        echo "FAIL corpus migrate-partial-2 without cli-prefer:"; sed -n '/Transition Summary/,/^$/p' "$work/mp2.out"
        failed=1
    fi
else
    echo "FAIL corpus check: $corpus is missing (it is part of the repository)" >&2
    exit 1
fi

exit $failed
