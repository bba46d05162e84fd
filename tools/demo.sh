#!/usr/bin/env bash
# Highlander's main job on an embedded default, as root on this machine:
#  1. pengine plans the sample cluster (examples/cibs/sample-cluster.xml: node1 goes into standby,
#     so vm-web live-migrates), beside Pacemaker 2.1.5's crm_simulate on the same CIB;
#  2. a live two-node corosync + Pacemaker cluster (network and mount namespaces on this machine)
#     runs one tiny QEMU guest with our agent and live-migrates it back and forth, printing what
#     Pacemaker and the agent do; then everything is torn down;
#  3. the 2013 case (ban cleared while migrate_to runs) under Pacemaker's scheduler and under
#     highlander-schedulerd, side by side: the guest rebooted, or the same guest still running.
# Installs what is missing first.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/deps.sh
cargo build --release --workspace --bins --quiet
sample=examples/cibs/sample-cluster.xml
echo "== pengine simulate -x $sample -S"
LC_ALL=C target/release/pengine simulate -x "$sample" -S
echo
echo "== the same CIB through Pacemaker 2.1.5 (crm_simulate -S), for comparison"
LC_ALL=C crm_simulate -x "$sample" -S | sed -n '/Transition Summary/,/^Revised/p'
echo
echo "== the VirtualDomain agent's parameter table (from the one table meta-data is rendered from)"
target/release/demo | sed -n '/## VirtualDomain parameters/,$p' | head -12
echo "   ..."
echo
echo "== a live two-node cluster with our agent"
target/release/cluster-demo highlander "${DEMO_MOVES:-2}"
echo
echo "== the 2013 case under Pacemaker's scheduler, then under highlander-schedulerd"
target/release/cluster-demo 2013
