//! Finds the QEMU process of a domain by reading `/proc/<pid>/cmdline` (no forks, no daemon):
//! the source of truth for stop and monitor when libvirtd is down or hung.
//!
//! libvirt starts QEMU with `-name guest=<name>,...` (a literal comma in the name doubled); older
//! versions pass `-name <name>`. Zombies have an empty command line and hold nothing, so they do
//! not count.

use std::path::Path;

/// The domain name a QEMU command line carries, if it is one.
pub fn qemu_guest_name(args: &[&[u8]]) -> Option<String> {
    let argv0 = args.first()?;
    let base = argv0.rsplit(|b| *b == b'/').next()?;
    if !base.windows(4).any(|w| w == b"qemu") {
        return None;
    }
    let pos = args.iter().position(|a| *a == b"-name")?;
    let value = String::from_utf8_lossy(args.get(pos + 1)?).into_owned();
    let value = value.strip_prefix("guest=").unwrap_or(&value);
    // Up to the first single comma; ",," is an escaped comma.
    let mut name = String::new();
    let mut chars = value.chars().peekable();
    while let Some(c) = chars.next() {
        if c == ',' {
            if chars.peek() == Some(&',') {
                chars.next();
                name.push(',');
            } else {
                break;
            }
        } else {
            name.push(c);
        }
    }
    Some(name)
}

/// Process ids under `proc_root` (normally `/proc`) whose QEMU command line names `domain`.
pub fn qemu_pids(proc_root: &Path, domain: &str) -> std::io::Result<Vec<u32>> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir(proc_root)? {
        let Ok(entry) = entry else { continue };
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        // A process can exit between read_dir and read: not an error.
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<&[u8]> = cmdline
            .split(|b| *b == 0)
            .filter(|a| !a.is_empty())
            .collect();
        if qemu_guest_name(&args).as_deref() == Some(domain) {
            pids.push(pid);
        }
    }
    pids.sort_unstable();
    Ok(pids)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<&[u8]> {
        s.split(' ').map(str::as_bytes).collect()
    }

    #[test]
    fn libvirt_command_lines_are_recognised() {
        assert_eq!(
            qemu_guest_name(&args(
                "/usr/bin/qemu-system-x86_64 -name guest=tiny1,debug-threads=on -S"
            )),
            Some("tiny1".into())
        );
        assert_eq!(
            qemu_guest_name(&args(
                "/usr/libexec/qemu-kvm -name guest=a,,b,debug-threads=on"
            )),
            Some("a,b".into())
        );
        assert_eq!(
            qemu_guest_name(&args("qemu-system-aarch64 -name vm2")),
            Some("vm2".into())
        );
        assert_eq!(
            qemu_guest_name(&args("/usr/bin/vim -name guest=tiny1")),
            None
        );
        assert_eq!(qemu_guest_name(&args("/usr/bin/qemu-img info x")), None);
    }

    #[test]
    fn scans_a_proc_tree() {
        let root = tempfile::tempdir().unwrap();
        let mk = |pid: &str, cmd: &str| {
            let d = root.path().join(pid);
            std::fs::create_dir(&d).unwrap();
            std::fs::write(d.join("cmdline"), cmd.replace(' ', "\0") + "\0").unwrap();
        };
        mk(
            "100",
            "/usr/bin/qemu-system-x86_64 -name guest=vm1,debug-threads=on",
        );
        mk(
            "200",
            "/usr/bin/qemu-system-x86_64 -name guest=vm10,debug-threads=on",
        );
        mk("300", "/bin/sh -c qemu -name guest=vm1");
        mk("50", "/usr/bin/qemu-system-x86_64 -name guest=vm1");
        std::fs::create_dir(root.path().join("400")).unwrap(); // vanished process
        std::fs::create_dir(root.path().join("self")).unwrap();
        assert_eq!(qemu_pids(root.path(), "vm1").unwrap(), vec![50, 100]);
        assert_eq!(qemu_pids(root.path(), "vm2").unwrap(), Vec::<u32>::new());
        assert!(qemu_pids(&root.path().join("nope"), "vm1").is_err());
    }
}
