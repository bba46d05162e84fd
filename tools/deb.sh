#!/usr/bin/env bash
# Builds the Debian package of Highlander for this machine's architecture:
#   tools/deb.sh [OUT_DIR]     (default target/debian; prints the .deb's path on its last line)
# Install it with `apt install ./highlander_<version>_<arch>.deb` on Debian 12. It holds the agent
# (ocf:highlander:VirtualDomain), the pengine CLI, highlander-schedulerd, their man pages (the
# CLIs' from their clap definitions, the agent's from its parameter table), shell completions, the
# docs, a changelog and a machine-readable copyright file. `lintian` runs on the result and must
# report no error.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=${1:-$root/target/debian}
package=highlander
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
revision=1
arch=$(dpkg --print-architecture)
# The commit's date, not the clock's: the same commit gives the same package.
date_rfc=$(git log -1 --format=%aD 2>/dev/null || date -R)
date_iso=$(git log -1 --format=%as 2>/dev/null || date +%F)
export SOURCE_DATE_EPOCH=$(git log -1 --format=%at 2>/dev/null || date +%s)

# What to build: by default only what the package holds. The package test passes the selection
# tools/test.sh builds (`--workspace --all-targets`), so that features unify as they did there and
# nothing is compiled twice.
read -r -a selection <<<"${HIGHLANDER_DEB_CARGO_ARGS:--p highlander-agent --bins --example man-page -p pengine -p highlander-schedulerd}"
cargo build --release --quiet "${selection[@]}"

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
pkg=$stage/$package
doc=$pkg/usr/share/doc/$package
ocf=$pkg/usr/lib/ocf/resource.d/highlander
mkdir -p "$pkg/DEBIAN" "$pkg/usr/bin" "$ocf" "$doc" "$pkg/usr/share/man/man1" \
    "$pkg/usr/share/man/man7" "$pkg/usr/share/bash-completion/completions" \
    "$pkg/usr/share/zsh/vendor-completions" "$pkg/usr/share/fish/vendor_completions.d"

# Binaries, stripped (Debian ships debug symbols apart).
install -m 0755 target/release/pengine "$pkg/usr/bin/pengine"
install -D -m 0755 target/release/highlander-schedulerd "$pkg/usr/sbin/highlander-schedulerd"
install -m 0755 target/release/VirtualDomain "$ocf/VirtualDomain"
install -m 0755 target/release/VirtualDomain-libvirt "$ocf/.VirtualDomain-libvirt"
strip --strip-unneeded --remove-section=.comment --remove-section=.note \
    "$pkg/usr/bin/pengine" "$pkg/usr/sbin/highlander-schedulerd" "$ocf/VirtualDomain" \
    "$ocf/.VirtualDomain-libvirt"

# Man pages and completions, generated from the code.
target/release/pengine generate man --out "$stage/man1"
target/release/pengine generate completions --out "$stage/completions"
target/release/examples/man-page "$version" "$date_iso" >"$stage/ocf_highlander_VirtualDomain.7"
target/release/highlander-schedulerd man --out "$stage/man8"
mkdir -p "$pkg/usr/share/man/man8"
gzip -9n <"$stage/man8/highlander-schedulerd.8" >"$pkg/usr/share/man/man8/highlander-schedulerd.8.gz"
for page in "$stage"/man1/*.1; do
    gzip -9n <"$page" >"$pkg/usr/share/man/man1/$(basename "$page").gz"
done
gzip -9n <"$stage/ocf_highlander_VirtualDomain.7" \
    >"$pkg/usr/share/man/man7/ocf_highlander_VirtualDomain.7.gz"
install -m 0644 "$stage/completions/pengine.bash" "$pkg/usr/share/bash-completion/completions/pengine"
install -m 0644 "$stage/completions/_pengine" "$pkg/usr/share/zsh/vendor-completions/_pengine"
install -m 0644 "$stage/completions/pengine.fish" "$pkg/usr/share/fish/vendor_completions.d/pengine.fish"

# Docs, changelogs, copyright.
for f in README.md ARCHITECTURE.md docs/*.md; do
    gzip -9n <"$f" >"$doc/$(basename "$f").gz"
done
gzip -9n <CHANGELOG.md >"$doc/changelog.gz"
{
    echo "$package ($version-$revision) unstable; urgency=medium"
    echo
    echo "  * Package of Highlander $version (see changelog.gz for what changed)."
    echo
    echo " -- Highlander developers <highlander@example.invalid>  $date_rfc"
} | gzip -9n >"$doc/changelog.Debian.gz"
cat >"$doc/copyright" <<'EOF'
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: highlander
Source: https://example.invalid/highlander

Files: *
Copyright: 2026 Highlander developers
License: LGPL-2.1+
 This library is free software; you can redistribute it and/or modify it under the terms of
 the GNU Lesser General Public License as published by the Free Software Foundation; either
 version 2.1 of the License, or (at your option) any later version.
 .
 On Debian systems, the complete text of the GNU Lesser General Public License version 2.1
 can be found in "/usr/share/common-licenses/LGPL-2.1".
EOF

# Depends: the shared libraries the binaries link, as dpkg-shlibdeps finds them.
mkdir -p "$stage/src/debian"
printf 'Source: %s\n\nPackage: %s\nArchitecture: any\n' "$package" "$package" >"$stage/src/debian/control"
shlibs=$(cd "$stage/src" && dpkg-shlibdeps -O "$pkg/usr/bin/pengine" \
    "$pkg/usr/sbin/highlander-schedulerd" "$ocf/VirtualDomain" \
    "$ocf/.VirtualDomain-libvirt" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
installed_kb=$(du -sk --exclude=DEBIAN "$pkg" | cut -f1)
cat >"$pkg/DEBIAN/control" <<EOF
Package: $package
Version: $version-$revision
Architecture: $arch
Maintainer: Highlander developers <highlander@example.invalid>
Installed-Size: $installed_kb
Depends: $shlibs
Recommends: pacemaker, resource-agents, libvirt-daemon-driver-qemu
Suggests: qemu-utils, csync2
Section: admin
Priority: optional
Homepage: https://example.invalid/highlander
Description: Pacemaker resource agent and planner for virtual machines
 Highlander is for people who run virtual machines under Pacemaker: a VM must
 never run on two nodes.
 .
 ocf:highlander:VirtualDomain is an OCF resource agent for libvirt domains and
 a drop-in for ocf:heartbeat:VirtualDomain (same parameters and defaults)
 whose migrate_to performs the whole live migration as one step.
 .
 pengine plans a Pacemaker transition from a CIB as Pacemaker 2.1.5's
 scheduler does (crm_simulate's summary, graph, DOT and scores), and explains
 why a resource goes where it goes.
 .
 highlander-schedulerd can stand in for pacemaker-schedulerd (installed with
 `highlander-schedulerd install`), guarded by Pacemaker's own plan.
EOF
(cd "$pkg" && find usr -type f -print0 | sort -z | xargs -0 md5sum) >"$pkg/DEBIAN/md5sums"
find "$pkg" -type d -exec chmod 0755 {} +
find "$pkg/usr" -type f ! -perm -u+x -exec chmod 0644 {} +
chmod 0644 "$pkg/DEBIAN/control" "$pkg/DEBIAN/md5sums"

mkdir -p "$out"
deb=$out/${package}_$version-${revision}_$arch.deb
dpkg-deb --root-owner-group -Zxz --build "$pkg" "$deb" >/dev/null
lintian --fail-on error "$deb" >&2
echo "$deb"
