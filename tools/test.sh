#!/usr/bin/env bash
# Runs every Highlander test: installs what is missing, then the whole workspace's tests.
# Tests that need real daemons start their own (libvirtd, corosync, pacemakerd) and stop them.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/deps.sh
# --no-fail-fast: one failing test binary must not hide the results of the others.
cargo test --workspace --all-targets --release --no-fail-fast "$@"
