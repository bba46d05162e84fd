#!/usr/bin/env bash
# Highlander's main job on an embedded default: builds the project and shows it working on the
# sample cluster in examples/. Installs what is missing first.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/deps.sh
cargo build --release --workspace --quiet
cargo run --release --quiet -p highlander-examples --bin demo
