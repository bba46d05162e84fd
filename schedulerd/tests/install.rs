//! `highlander-schedulerd install` and `uninstall` with the real `dpkg-divert`, in private
//! mount and PID namespaces: /var/lib/dpkg and /usr/lib/pacemaker get a throw-away overlay, so
//! the diversion is real but the host's package database and binaries are untouched (and the
//! scheduler restart can only see processes of the namespace).

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_highlander-schedulerd");

const SCRIPT: &str = r#"set -e
bin=$1
mount -t tmpfs tmpfs /mnt
for d in /var/lib/dpkg /usr/lib/pacemaker; do
    n=$(echo "$d" | tr / _)
    mkdir -p "/mnt/$n-u" "/mnt/$n-w"
    mount -t overlay overlay -o "lowerdir=$d,upperdir=/mnt/$n-u,workdir=/mnt/$n-w" "$d"
done
s=/usr/lib/pacemaker/pacemaker-schedulerd
before=$(sha256sum <"$s")
"$bin" install
cmp -s "$bin" "$s" && echo "ours-in-place"
[ "$(sha256sum <"$s.pacemaker")" = "$before" ] && echo "pacemaker-diverted"
dpkg-divert --list "$s" | grep -q "$s.pacemaker" && echo "diversion-listed"
"$bin" install >/dev/null && echo "install-again-ok"
"$bin" uninstall
[ "$(sha256sum <"$s")" = "$before" ] && echo "pacemaker-restored"
[ ! -e "$s.pacemaker" ] && echo "no-leftover"
[ -z "$(dpkg-divert --list "$s")" ] && echo "diversion-removed"
"#;

#[test]
fn install_diverts_pacemakers_scheduler_and_uninstall_restores_it() {
    let out = Command::new("unshare")
        .args([
            "-m",
            "-p",
            "-f",
            "--mount-proc",
            "--propagation",
            "private",
            "bash",
            "-c",
            SCRIPT,
            "install-test",
            BIN,
        ])
        .output()
        .expect("unshare");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    for step in [
        "ours-in-place",
        "pacemaker-diverted",
        "diversion-listed",
        "install-again-ok",
        "pacemaker-restored",
        "no-leftover",
        "diversion-removed",
    ] {
        assert!(
            stdout.lines().any(|l| l == step),
            "missing {step}:\n{stdout}\n{stderr}"
        );
    }
}
