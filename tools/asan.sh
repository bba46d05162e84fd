#!/bin/sh
# tools/asan.sh: AddressSanitizer (and LeakSanitizer) run of the agent's tests that need no
# libvirtd (its unit tests, the in-memory dispatch tests, the hostile-input tests and the libvirt
# test driver, which runs libvirt in process) and of every ocf-metadata test, with nightly Rust and
# an instrumented std (-Zbuild-std). Needs the nightly toolchain with rust-src
# (`rustup component add rust-src --toolchain nightly`). Its own target directory (target/asan),
# so the release build is untouched. Not part of .ci/run (a cold run takes longer than 3 minutes).
#
#   tools/asan.sh            # the tests above
#   tools/asan.sh -- NAME    # arguments after -- go to the test binaries (a filter)
set -eu
cd "$(dirname "$0")/.."

target=x86_64-unknown-linux-gnu
if ! rustup component list --toolchain nightly 2>/dev/null | grep -q '^rust-src (installed)'; then
    echo "tools/asan.sh: needs nightly with rust-src: rustup component add rust-src --toolchain nightly" >&2
    exit 2
fi

export RUSTFLAGS="-Zsanitizer=address"
export RUSTDOCFLAGS="-Zsanitizer=address"
# Leaks are errors too; tools/asan.supp lists the few that are on purpose, each with its reason.
supp="$(pwd)/tools/asan.supp"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:halt_on_error=1"
export LSAN_OPTIONS="suppressions=$supp:print_suppressions=0"

start=$(date +%s)
run() {
    cargo +nightly test -Zbuild-std --target "$target" --target-dir target/asan "$@"
}
run -p ocf-metadata "$@"
run -p highlander-agent --lib --test actions_mem --test migrate_mem --test hostile_input \
    --test libvirt_test_driver "$@"
echo "tools/asan.sh: clean (AddressSanitizer + LeakSanitizer) in $(( $(date +%s) - start )) s"
