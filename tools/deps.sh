#!/usr/bin/env bash
# Installs the Debian packages Highlander's build, demo and tests need, only those that are missing.
# Idempotent; needs root (or sudo) only when something is missing. Packages only: the users and
# directories the private daemons need (libvirt-qemu, /var/lib/libvirt, ...) are made by the one
# host set-up the demo and the tests run themselves (test-cts/src/host.rs, `hl-preflight`).
set -euo pipefail

PACKAGES=(
    # build: the agent links libvirt through the virt crate
    pkg-config libvirt-dev
    # real libvirt with QEMU in software emulation (TCG), as the agent tests run it
    libvirt-daemon libvirt-daemon-driver-qemu libvirt-clients qemu-system-x86 tini
    # qemu-img: the agent's backingfile/stateless overlays
    qemu-utils
    # OCF tooling: ocf-tester, the DTD and metadata.rng, xmllint
    resource-agents libxml2-utils
    # Pacemaker's CLIs (crm_simulate is the scheduler's oracle) and a real cluster
    pacemaker-cli-utils pacemaker corosync
    # highlander-schedulerd links libqb (its IPC server) and libbz2 (message compression)
    libqb-dev libbz2-dev
    # namespaces for test nodes
    iproute2 util-linux procps
    # benchmarks (bench/agent.sh): medians of repeated runs
    hyperfine
    # /usr/bin/time: peak memory in bench/pengine.sh
    time
    # the Debian package (tools/deb.sh) and its test: lintian, man pages, Debian's pcs and crmsh
    dpkg-dev binutils lintian man-db pcs crmsh
)

missing=()
for p in "${PACKAGES[@]}"; do
    if [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != "install ok installed" ]; then
        missing+=("$p")
    fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
echo "deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q >&2
# qemu-system-x86 would pull a whole desktop stack through recommends; nothing here needs it.
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
