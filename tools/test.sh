#!/usr/bin/env bash
# Runs every Highlander test: installs what is missing, then the whole workspace's tests.
# Tests that need real daemons start their own (libvirtd, corosync, pacemakerd) and stop them.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/deps.sh
cargo test --workspace --all-targets --release "$@"
