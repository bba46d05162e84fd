//! Preparing this machine for private daemons: the one set-up that the libvirt harness
//! (`libvirt`), the real cluster (`cluster`), the demo and the preflight (`hl-preflight`) share.
//!
//! Whatever state the machine starts in (Debian's packages installed or not by `tools/deps.sh`,
//! `libvirt-daemon-system` absent), `prepare` makes what the private daemons need and leaves what
//! is already there alone:
//! - the `libvirt-qemu` user and group: Debian's QEMU driver refuses to initialise without them
//!   (`libvirt-daemon-system` would create them; we do not install it, it starts system daemons);
//! - every system path a private daemon binds its own directory over (`MOUNTPOINTS`): a bind
//!   mount needs an existing mountpoint, and `libvirt-daemon` alone creates none of libvirt's.
//!
//! Mountpoints are created empty and left in place: removing them would race with the daemons of
//! other test processes. Nothing here removes anything.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::process;

/// The user (and group) Debian's QEMU driver runs guests as.
pub const QEMU_USER: &str = "libvirt-qemu";

/// Every system path that a private libvirtd (`libvirt::MOUNTS`) or a test cluster node
/// (`cluster::node::BINDS`) binds a directory of its own over; their tests check the lists agree.
pub const MOUNTPOINTS: &[&str] = &[
    "/etc/libvirt",
    "/run/libvirt",
    "/var/lib/libvirt",
    "/var/cache/libvirt",
    "/var/log/libvirt",
    "/etc/corosync",
    "/var/lib/corosync",
    "/var/log/corosync",
    "/var/lib/pacemaker",
    "/var/log/pacemaker",
];

/// Why the machine could not be prepared.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("cannot create the {name} user the Debian QEMU driver needs: {detail}")]
    User { name: String, detail: String },
    #[error("cannot create the mountpoint {path}: {source}")]
    Mountpoint {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// What `prepare` made (empty when the machine already had everything).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Prepared {
    /// One line per thing made, e.g. `user libvirt-qemu` or `directory /var/lib/libvirt`.
    pub made: Vec<String>,
}

/// Makes the users and mountpoints the private daemons need; idempotent, safe to race.
pub fn prepare() -> Result<Prepared, HostError> {
    let mut prepared = Prepared::default();
    if ensure_system_user(QEMU_USER, Path::new("/var/lib/libvirt"))? {
        prepared.made.push(format!("user {QEMU_USER}"));
    }
    for target in MOUNTPOINTS {
        let path = Path::new(target);
        if !path.is_dir() {
            std::fs::create_dir_all(path).map_err(|source| HostError::Mountpoint {
                path: path.to_path_buf(),
                source,
            })?;
            prepared.made.push(format!("directory {target}"));
        }
    }
    Ok(prepared)
}

/// Creates the system user `name` with a group of the same name when missing; true when it
/// created it. Another process may create it meanwhile: only the end result counts.
fn ensure_system_user(name: &str, home: &Path) -> Result<bool, HostError> {
    if entry_exists("passwd", name) {
        return Ok(false);
    }
    let mut detail = String::new();
    let mut run = |program: &str, args: &[&str]| match process::run_bounded(
        Command::new(program).args(args),
        Duration::from_secs(30),
    ) {
        Ok(o) => detail.push_str(&o.stderr),
        Err(e) => detail.push_str(&format!("{program}: {e}; ")),
    };
    if !entry_exists("group", name) {
        run("groupadd", &["--system", name]);
    }
    let home = home.to_string_lossy();
    run(
        "useradd",
        &[
            "--system",
            "--no-create-home",
            "--home-dir",
            &home,
            "--shell",
            "/usr/sbin/nologin",
            "-g",
            name,
            name,
        ],
    );
    if entry_exists("passwd", name) {
        Ok(true)
    } else {
        Err(HostError::User {
            name: name.to_string(),
            detail,
        })
    }
}

/// Whether `getent DB NAME` finds an entry (NSS, as the daemons themselves look it up).
fn entry_exists(db: &str, name: &str) -> bool {
    process::run_bounded(
        Command::new("getent").args([db, name]),
        Duration::from_secs(10),
    )
    .is_ok_and(|o| o.status.success())
}
