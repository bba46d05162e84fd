//! The one host set-up (`test_cts::host`, run by `hl-preflight`, the libvirt harness, the real
//! cluster and the demo) works from a bare machine: without the `libvirt-qemu` user and without
//! any of the directories private daemons bind over, as on a Debian 12 machine that has
//! `libvirt-daemon` but not `libvirt-daemon-system`.
//!
//! The bare state is made in a private mount namespace, so the machine itself is not changed: a
//! copy of `/etc` without the user, its group and `/etc/libvirt` and `/etc/corosync` is bound
//! over `/etc`, and empty file systems over `/run`, `/var/lib`, `/var/cache` and `/var/log`. The
//! preflight runs there, then a private libvirtd is started there by the harness (the first thing
//! the tests do), and its guest list is read.

use std::process::Command;

use test_cts::libvirt::real_infra_or_skip;

/// Runs in the private mount namespace; `$1` the preflight, `$2` hl-libvirtd, `$3` scratch dir.
const BARE_STATE: &str = r#"set -eu
preflight=$1 libvirtd_bin=$2 scratch=$3
cp -a /etc "$scratch/etc"
for f in passwd group shadow gshadow; do
    [ -f "$scratch/etc/$f" ] && sed -i '/^libvirt-qemu:/d' "$scratch/etc/$f"
done
rm -rf "$scratch/etc/libvirt" "$scratch/etc/corosync"
mount --bind "$scratch/etc" /etc
for d in /run /var/lib /var/cache /var/log; do mount -t tmpfs -o mode=755 tmpfs "$d"; done
echo "before:"
if getent passwd libvirt-qemu; then echo "BARE STATE FAILED: the user is still there"; exit 3; fi
for d in /etc/libvirt /run/libvirt /var/lib/libvirt /var/cache/libvirt /var/log/libvirt \
         /etc/corosync /var/lib/pacemaker; do
    if [ -e "$d" ]; then echo "BARE STATE FAILED: $d is still there"; exit 3; fi
done
echo "first preflight:"
"$preflight"
echo "after:"
getent passwd libvirt-qemu
for d in /etc/libvirt /run/libvirt /var/lib/libvirt /var/cache/libvirt /var/log/libvirt \
         /etc/corosync /var/lib/pacemaker; do
    [ -d "$d" ] && echo "dir $d"
done
echo "second preflight:"
"$preflight"
echo "a private libvirtd from the bare state:"
echo | "$libvirtd_bin" 1
"#;

#[test]
fn preflight_prepares_a_bare_machine_and_a_daemon_starts_there() {
    if !real_infra_or_skip("preflight_prepares_a_bare_machine", &["unshare", "getent"]) {
        return;
    }
    let scratch = tempfile::tempdir().expect("scratch dir");
    let out = Command::new("unshare")
        .args([
            "-m",
            "--propagation",
            "private",
            "--",
            "sh",
            "-c",
            BARE_STATE,
            "sh",
        ])
        .arg(env!("CARGO_BIN_EXE_hl-preflight"))
        .arg(env!("CARGO_BIN_EXE_hl-libvirtd"))
        .arg(scratch.path())
        .output()
        .expect("unshare runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "the bare-state run failed:\n{text}");
    let section = |from: &str, to: &str| -> String {
        let start = text.find(from).map(|i| i + from.len()).unwrap_or(0);
        let end = text[start..]
            .find(to)
            .map(|i| start + i)
            .unwrap_or(text.len());
        text[start..end].to_string()
    };
    let first = section("first preflight:", "after:");
    for made in [
        "made user libvirt-qemu",
        "made directory /var/lib/libvirt",
        "made directory /var/cache/libvirt",
        "made directory /var/log/libvirt",
        "made directory /etc/libvirt",
        "made directory /run/libvirt",
        "made directory /etc/corosync",
        "made directory /var/lib/pacemaker",
    ] {
        assert!(
            first.contains(made),
            "the first preflight did not say `{made}`:\n{text}"
        );
    }
    let after = section("after:", "second preflight:");
    assert!(
        after.starts_with("\nlibvirt-qemu:"),
        "no user after the preflight:\n{text}"
    );
    assert_eq!(
        after.matches("dir /").count(),
        7,
        "directories after:\n{text}"
    );
    let second = section("second preflight:", "a private libvirtd");
    assert!(
        second.contains("nothing to make"),
        "the second preflight made something again:\n{text}"
    );
    let daemon = section("a private libvirtd from the bare state:", "\u{0}");
    assert!(
        daemon.contains("URI0=") && daemon.contains("READY"),
        "the harness could not start libvirtd from the bare state:\n{text}"
    );
}
