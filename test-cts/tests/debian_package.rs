//! The Debian package (`tools/deb.sh`) installs with `apt install ./x.deb`, and what it installs
//! works as a Pacemaker administrator uses it: the CLI, the agent's meta-data through Pacemaker
//! (`crm_resource`), the man pages, `pcs resource describe` and `pcs -f` (Debian's pcs), `crm ra
//! info` and a crmsh shadow CIB (Debian's crmsh); removing it removes its files.
//!
//! The package is installed in a private mount namespace with overlays over `/usr`, `/etc` and
//! `/var`, so the machine running the test is left as it was.

use std::path::{Path, PathBuf};
use std::process::Command;

use test_cts::libvirt::real_infra_or_skip;

/// Runs in the private mount namespace; `$1` the package, `$2` a scratch directory.
const INSTALLED: &str = r#"set -u
deb=$1 scratch=$2
for d in usr etc var; do
    mkdir -p "$scratch/$d-upper" "$scratch/$d-work"
    mount -t overlay overlay -o "lowerdir=/$d,upperdir=$scratch/$d-upper,workdir=$scratch/$d-work" "/$d" || exit 3
done
step() { echo; echo "== $1"; }
step "apt install"
DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$deb" 2>&1 | tail -n 2; echo "rc=${PIPESTATUS[0]}"
step "pengine --version"; pengine --version
step "highlander-schedulerd --version"; highlander-schedulerd --version
step "meta-data parameters"; /usr/lib/ocf/resource.d/highlander/VirtualDomain meta-data | grep -c '<parameter name='
step "crm_resource parameters"; crm_resource --show-metadata ocf:highlander:VirtualDomain | grep -c '<parameter name='
step "man -w"; man -w ocf_highlander_VirtualDomain pengine pengine-simulate pengine-explain pengine-node highlander-schedulerd
step "man page text"; MANWIDTH=200 man -P cat 7 ocf_highlander_VirtualDomain 2>/dev/null | grep -E '^ +(config|hypervisor) \('
step "completions"; ls /usr/share/bash-completion/completions/pengine /usr/share/zsh/vendor-completions/_pengine /usr/share/fish/vendor_completions.d/pengine.fish
step "pcs resource describe"; pcs resource describe ocf:highlander:VirtualDomain | grep -E '^  (config|migration_transport)'
cibadmin --empty >"$scratch/cib.xml"
step "pcs -f create"
pcs -f "$scratch/cib.xml" resource create vm1 ocf:highlander:VirtualDomain config=/etc/libvirt/qemu/vm1.xml migration_transport=ssh meta allow-migrate=true; echo "rc=$?"
grep -o '<primitive id="vm1"[^>]*>' "$scratch/cib.xml"
step "pcs -f create with an unknown parameter"
pcs -f "$scratch/cib.xml" resource create vm2 ocf:highlander:VirtualDomain config=/x.xml bogus=1 2>&1 | head -n 1; echo "rc=${PIPESTATUS[0]}"
step "crm ra info"; crm ra info ocf:highlander:VirtualDomain 2>/dev/null | grep -E '^(config|migration_transport)'
export CIB_shadow_dir=$scratch/shadow CIB_shadow=hltest
mkdir -p "$CIB_shadow_dir"
crm_shadow --create-empty hltest --batch --force >/dev/null 2>&1
crm configure property stonith-enabled=false >/dev/null 2>&1
step "crm shadow primitive"
crm configure primitive vm3 ocf:highlander:VirtualDomain params config=/etc/libvirt/qemu/vm3.xml migration_transport=ssh meta allow-migrate=true 2>&1; echo "rc=$?"
crm configure show vm3 2>&1 | head -n 3
step "crm shadow primitive with an unknown parameter"
crm configure primitive vm4 ocf:highlander:VirtualDomain params config=/x.xml bogus=1 2>&1 | grep -o 'parameter "bogus" is not known'
step "apt remove"
DEBIAN_FRONTEND=noninteractive apt-get remove -y -q highlander >/dev/null 2>&1; echo "rc=$?"
ls /usr/bin/pengine /usr/sbin/highlander-schedulerd /usr/lib/ocf/resource.d/highlander/VirtualDomain 2>&1 | grep -c 'No such file'
"#;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

/// The text of step `name`: the lines after `== name` up to the next step.
fn step<'a>(text: &'a str, name: &str) -> &'a str {
    let head = format!("== {name}\n");
    let start = text
        .find(&head)
        .map(|i| i + head.len())
        .unwrap_or_else(|| panic!("no step `{name}` in:\n{text}"));
    let end = text[start..]
        .find("\n== ")
        .map_or(text.len(), |i| start + i);
    &text[start..end]
}

#[test]
fn the_package_installs_and_serves_pacemaker_pcs_and_crmsh() {
    let tools = [
        "dpkg-deb", "lintian", "apt-get", "pcs", "crm", "man", "unshare",
    ];
    if !real_infra_or_skip("the_package_installs", &tools) {
        return;
    }
    let scratch = tempfile::tempdir().expect("scratch dir");
    let built = Command::new("bash")
        .arg(workspace().join("tools/deb.sh"))
        .arg(scratch.path().join("out"))
        .env("HIGHLANDER_DEB_CARGO_ARGS", "--workspace --all-targets")
        .output()
        .expect("tools/deb.sh runs");
    let log = String::from_utf8_lossy(&built.stderr);
    assert!(
        built.status.success(),
        "tools/deb.sh failed (lintian errors fail it too):\n{log}"
    );
    let deb = String::from_utf8_lossy(&built.stdout)
        .lines()
        .last()
        .expect("the .deb's path")
        .to_string();
    let run = Command::new("unshare")
        .args([
            "-m",
            "--propagation",
            "private",
            "--",
            "bash",
            "-c",
            INSTALLED,
            "bash",
        ])
        .arg(&deb)
        .arg(scratch.path())
        .output()
        .expect("unshare runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    let version = env!("CARGO_PKG_VERSION");
    assert!(step(&text, "apt install").contains("rc=0"), "{text}");
    assert!(
        step(&text, "pengine --version").starts_with(&format!("pengine {version} (")),
        "{text}"
    );
    assert_eq!(step(&text, "meta-data parameters").trim(), "27", "{text}");
    assert_eq!(
        step(&text, "crm_resource parameters").trim(),
        "27",
        "{text}"
    );
    assert!(
        step(&text, "highlander-schedulerd --version")
            .starts_with(&format!("highlander-schedulerd {version}")),
        "{text}"
    );
    assert_eq!(step(&text, "man -w").lines().count(), 6, "{text}");
    assert_eq!(step(&text, "man page text").lines().count(), 2, "{text}");
    assert_eq!(step(&text, "completions").lines().count(), 3, "{text}");
    assert_eq!(
        step(&text, "pcs resource describe").lines().count(),
        2,
        "{text}"
    );
    let create = step(&text, "pcs -f create");
    assert!(create.contains("rc=0"), "{text}");
    assert!(
        create.contains(r#"type="VirtualDomain" provider="highlander""#),
        "{text}"
    );
    let bogus = step(&text, "pcs -f create with an unknown parameter");
    assert!(
        bogus.contains("invalid resource option 'bogus'") && bogus.contains("rc=1"),
        "{text}"
    );
    assert_eq!(step(&text, "crm ra info").lines().count(), 2, "{text}");
    let shadow = step(&text, "crm shadow primitive");
    assert!(
        shadow.contains("rc=0") && shadow.contains("ocf:highlander:VirtualDomain"),
        "{text}"
    );
    assert!(
        step(&text, "crm shadow primitive with an unknown parameter").contains("bogus"),
        "{text}"
    );
    let removed = step(&text, "apt remove");
    assert!(
        removed.contains("rc=0") && removed.trim_end().ends_with('3'),
        "{text}"
    );
}
