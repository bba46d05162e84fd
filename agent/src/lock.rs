//! Per-resource serialization and the agent's small state files in `$HA_RSCTMP`: an `flock` on
//! `VirtualDomain-<instance>.lock`, and the record of which domain this agent started here.
//! Files are opened without following symlinks (`O_NOFOLLOW`), created 0600, and checked to be
//! plain files with one link.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::clock::{Clock, Deadline};

const POLL_MS: u64 = 50;

/// Why the lock or a state file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("state directory {path}: {message}")]
    Dir { path: String, message: String },
    #[error("state file {path}: {message}")]
    File { path: String, message: String },
    #[error("another invocation for this resource still holds {path}")]
    Busy { path: String },
}

/// A file name component for a resource id: `[A-Za-z0-9._-]` kept, anything else `%XX`-escaped
/// (clone instances `vm:1` become `vm%3A1`), so two ids never share a file.
pub fn file_component(instance: &str) -> String {
    let mut out = String::new();
    for b in instance.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-') || (b == b'.' && !out.is_empty()) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn ensure_dir(dir: &Path) -> Result<(), StateError> {
    let err = |message: String| StateError::Dir {
        path: dir.display().to_string(),
        message,
    };
    if std::fs::symlink_metadata(dir).is_err() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .create(dir)
            .map_err(|e| err(e.to_string()))?;
    }
    let meta = std::fs::symlink_metadata(dir).map_err(|e| err(e.to_string()))?;
    if !meta.is_dir() {
        return Err(err("not a directory (symlinks are not followed)".into()));
    }
    Ok(())
}

fn open_private(path: &Path, create: bool, exclusive: bool) -> Result<File, StateError> {
    let err = |message: String| StateError::File {
        path: path.display().to_string(),
        message,
    };
    let mut opts = OpenOptions::new();
    opts.read(true)
        .write(create)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
    if exclusive {
        opts.create_new(true);
    } else if create {
        opts.create(true);
    }
    let file = opts.open(path).map_err(|e| err(e.to_string()))?;
    let meta = file.metadata().map_err(|e| err(e.to_string()))?;
    if !meta.is_file() || meta.nlink() != 1 {
        return Err(err("not a plain file with a single link".into()));
    }
    Ok(file)
}

/// Holds the resource's lock until dropped.
#[derive(Debug)]
pub struct ResourceLock {
    _file: File,
    pub path: PathBuf,
}

/// Waits (polling, never past `deadline`) for the resource's exclusive lock.
pub fn acquire(
    dir: &Path,
    instance: &str,
    deadline: Deadline,
    clock: &dyn Clock,
) -> Result<ResourceLock, StateError> {
    ensure_dir(dir)?;
    let path = dir.join(format!("VirtualDomain-{}.lock", file_component(instance)));
    let file = open_private(&path, true, false)?;
    loop {
        match try_flock(&file) {
            Ok(true) => return Ok(ResourceLock { _file: file, path }),
            Ok(false) => {
                // Real time must pass too (with a manual clock): a holder may be a forked child
                // that has not reached exec yet and still shares the descriptor.
                std::thread::sleep(std::time::Duration::from_millis(1));
                if !deadline.sleep_within(clock, POLL_MS) {
                    return Err(StateError::Busy {
                        path: path.display().to_string(),
                    });
                }
            }
            Err(e) => {
                return Err(StateError::File {
                    path: path.display().to_string(),
                    message: e.to_string(),
                });
            }
        }
    }
}

/// `flock(LOCK_EX | LOCK_NB)`: Ok(false) when another open file description holds it.
/// (`File::try_lock` would do, but needs Rust 1.89; the workspace's MSRV is 1.85.)
#[allow(unsafe_code)]
fn try_flock(file: &File) -> std::io::Result<bool> {
    use std::os::fd::AsRawFd;
    // SAFETY: the descriptor is valid for the lifetime of `file`, which outlives the call; flock
    // takes no pointers.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc == 0 {
        return Ok(true);
    }
    let e = std::io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Ok(false)
    } else {
        Err(e)
    }
}

/// Where the record of the domain started for `instance` lives.
pub fn record_path(dir: &Path, instance: &str) -> PathBuf {
    dir.join(format!("VirtualDomain-{}.domain", file_component(instance)))
}

/// Atomically writes `contents` to `path` (temporary file, fsync, rename, fsync of the directory).
pub fn write_atomic(path: &Path, contents: &str) -> Result<(), StateError> {
    let dir = path.parent().unwrap_or(Path::new("/"));
    ensure_dir(dir)?;
    let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let err = |p: &Path, e: std::io::Error| StateError::File {
        path: p.display().to_string(),
        message: e.to_string(),
    };
    let mut f = open_private(&tmp, true, true)?;
    f.write_all(contents.as_bytes()).map_err(|e| err(&tmp, e))?;
    f.sync_all().map_err(|e| err(&tmp, e))?;
    drop(f);
    std::fs::rename(&tmp, path).map_err(|e| err(path, e))?;
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Reads a small state file; `Ok(None)` when it does not exist.
pub fn read_small(path: &Path) -> Result<Option<String>, StateError> {
    if std::fs::symlink_metadata(path).is_err() {
        return Ok(None);
    }
    let mut f = open_private(path, false, false)?;
    let mut s = String::new();
    Read::by_ref(&mut f)
        .take(64 * 1024)
        .read_to_string(&mut s)
        .map_err(|e| StateError::File {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
    Ok(Some(s))
}

/// The domain name this agent last started for `instance` on this host, if recorded.
pub fn read_record(dir: &Path, instance: &str) -> Result<Option<String>, StateError> {
    Ok(read_small(&record_path(dir, instance))?
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty()))
}

pub fn write_record(dir: &Path, instance: &str, domain: &str) -> Result<(), StateError> {
    write_atomic(&record_path(dir, instance), &format!("{domain}\n"))
}

pub fn remove_record(dir: &Path, instance: &str) -> Result<(), StateError> {
    let path = record_path(dir, instance);
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(StateError::File {
            path: path.display().to_string(),
            message: e.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;

    #[test]
    fn instance_names_escape_without_collisions() {
        assert_eq!(file_component("vm1"), "vm1");
        assert_eq!(file_component("vm:1"), "vm%3A1");
        assert_ne!(file_component("vm:1"), file_component("vm_1"));
        assert_eq!(
            file_component("../x"),
            "%2E.%2Fx",
            "no leading dot, no slash"
        );
        assert_eq!(file_component("a/b"), "a%2Fb");
    }

    #[test]
    fn second_holder_waits_until_the_deadline() {
        let dir = tempfile::tempdir().unwrap();
        let clock = ManualClock::new(0);
        let held = acquire(dir.path(), "vm1", Deadline::after(&clock, 1_000), &clock).unwrap();
        let mode = std::fs::metadata(&held.path).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let err = acquire(dir.path(), "vm1", Deadline::after(&clock, 1_000), &clock).unwrap_err();
        assert!(matches!(err, StateError::Busy { .. }), "{err}");
        assert_eq!(clock.now_ms(), 1_000, "waited exactly its budget");
        // Another resource is independent.
        acquire(dir.path(), "vm2", Deadline::after(&clock, 10), &clock).unwrap();
        drop(held);
        acquire(dir.path(), "vm1", Deadline::after(&clock, 10), &clock).unwrap();
    }

    #[test]
    fn symlinks_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        std::os::unix::fs::symlink(&victim, dir.path().join("VirtualDomain-vm1.lock")).unwrap();
        let clock = ManualClock::new(0);
        let err = acquire(dir.path(), "vm1", Deadline::after(&clock, 10), &clock).unwrap_err();
        assert!(matches!(err, StateError::File { .. }), "{err}");
        std::os::unix::fs::symlink(&victim, record_path(dir.path(), "vm2")).unwrap();
        assert!(read_record(dir.path(), "vm2").is_err());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        let linked_dir = dir.path().join("linkdir");
        std::os::unix::fs::symlink(dir.path(), &linked_dir).unwrap();
        assert!(matches!(
            acquire(&linked_dir, "vm3", Deadline::after(&clock, 10), &clock),
            Err(StateError::Dir { .. })
        ));
    }

    #[test]
    fn records_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("rsc");
        assert_eq!(read_record(&sub, "vm:1").unwrap(), None);
        write_record(&sub, "vm:1", "guest1").unwrap();
        assert_eq!(
            read_record(&sub, "vm:1").unwrap().as_deref(),
            Some("guest1")
        );
        let mode = std::fs::metadata(record_path(&sub, "vm:1")).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o600);
        write_record(&sub, "vm:1", "guest2").unwrap();
        assert_eq!(
            read_record(&sub, "vm:1").unwrap().as_deref(),
            Some("guest2")
        );
        remove_record(&sub, "vm:1").unwrap();
        remove_record(&sub, "vm:1").unwrap();
        assert_eq!(read_record(&sub, "vm:1").unwrap(), None);
        assert_eq!(
            std::fs::read_dir(&sub).unwrap().count(),
            0,
            "no temp files left"
        );
    }
}
